"""Prompts that show an untuned model how calls look: a tool's instruction and worked examples,
with each example *executed* (``[Tool(input) -> result]``).

Why executed: the annotation demonstrations show calls without results, and a model that copies
them closes its call with "]" before any "->", so nothing runs (Qwen 0.5B on 40 WebQS questions:
35 calls opened, 0 executed). Executed examples show the form of C*, which is what decoding
expects. Used by ``toolformer generate --demos`` and the decoding benchmark.
"""

from __future__ import annotations

from typing import Callable, Optional

from ..calls import ToolCall, find_calls, format_call
from ..tools.engine import ToolEngine


def executed(text: str, run: Callable[[ToolCall], Optional[str]]) -> str:
    """``text`` with each call that has no result shown with ``run``'s result, as in C*; a call
    ``run`` gives nothing for keeps its call-only form.

    >>> executed("Big [Echo(hi)] HI, and [Echo(yo) -> YO] YO.", lambda c: c.input.upper())
    'Big [Echo(hi) -> HI] HI, and [Echo(yo) -> YO] YO.'
    >>> executed("Big [Echo(hi)] HI.", lambda c: None)
    'Big [Echo(hi)] HI.'
    """
    out, last = [], 0
    for parsed in find_calls(text):
        result = run(parsed.call) if parsed.call.result is None else None
        if result:
            out += [text[last:parsed.start], format_call(parsed.call.with_result(result), leading_space=False)]
            last = parsed.end
    return "".join(out + [text[last:]])


def tool_runner(tool, timeout: float = 10.0, cache_path: Optional[str] = None) -> Callable[[ToolCall], Optional[str]]:
    """Run ``tool`` through the execution engine (its timeout, cache and error handling)."""
    engine = ToolEngine({tool.name: tool}, timeout=timeout, cache_path=cache_path)
    return lambda call: engine.run([call])[0].result


def demo_prompt(tool, text: str, rewrite: bool = False, run: Optional[Callable[[ToolCall], Optional[str]]] = None) -> str:
    """``text`` behind ``tool``'s instruction and worked examples.

    Continuing (the default) shows the examples' outputs as plain paragraphs, executed with
    ``run`` when given, and lets the model go on from ``text``; rewriting is the annotation prompt
    P(x) itself (call-only examples: that prompt asks for calls, not results).

    >>> from toolformer_kit.tools import Tool
    >>> echo = Tool("Echo", str.upper, "Repeat words loudly.", [("I say hi.", "I say [Echo(hi) -> HI] hi.")])
    >>> print(demo_prompt(echo, "You say"))
    Repeat words loudly.
    <BLANKLINE>
    I say [Echo(hi) -> HI] hi.
    <BLANKLINE>
    You say

    Executed, an example whose call ``run`` gives nothing for is left out (unless all are): its
    call-only form would teach the model to close a call without "->", so no tool would run (the
    QA reader abstains on 4 of its 5 demonstration questions).

    >>> two = Tool("Echo", str.upper, "Shout.", [("a", "a [Echo(a)] A."), ("b", "b [Echo(b)] B.")])
    >>> print(demo_prompt(two, "c", run=lambda c: c.input.upper() if c.input == "b" else None))
    Shout.
    <BLANKLINE>
    b [Echo(b) -> B] B.
    <BLANKLINE>
    c
    """
    if rewrite:
        return tool.prompt_prefix() + tool.prompt_context(text.strip())
    demos = [out if run is None else executed(out, run) for _, out in tool.demonstrations]
    if run is not None:  # an example whose call gave nothing teaches the call-only form: leave it out
        demos = [d for d in demos if all(c.call.result is not None for c in find_calls(d))] or demos
    return "\n\n".join([tool.instruction.strip()] + demos + [text])
