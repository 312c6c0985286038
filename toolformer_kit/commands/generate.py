"""Generate text with tools: a call opens when " [" is among the top k next tokens, the tool runs
when the model writes "->", and its result is inserted before decoding goes on.

A fine-tuned Toolformer model needs only the prompt. To see the mechanism with a model that was
never fine-tuned, ``--demos TOOL`` puts TOOL's instruction and worked examples before the prompt,
so the model continues the prompt in the same style (``--rewrite`` instead asks it to re-write the
prompt with calls, exactly the annotation prompt).

The worked examples are shown **executed**, ``[Tool(input) -> result]``, each result computed by
running the tool on the example's input (the call-only form stays where the tool gives nothing).
Why: the annotation demonstrations show calls without results, and a model that copies them closes
its call with "]" before any "->", so nothing runs (Qwen 0.5B on 40 WebQS questions: 35 calls
opened, 0 executed). Executed examples show the form of C*, which is what decoding expects.

    toolformer generate --model qwen2.5-coder-0.5b --demos Calculator \\
        "The school has 23 classes of 28 pupils, so it has"
"""

from __future__ import annotations

import argparse
import codecs
import json
import logging
import os
import sys
from dataclasses import asdict, replace

from ..calls import find_calls
from ..config import ConfigError, add_dataclass_args, build_config
from ..decode.demos import demo_prompt, tool_runner
from .cli import standalone

HELP = "decode with tools: calls open on top-k, run at '->', results inserted"
log = logging.getLogger(__name__)

_CALL_STYLE, _RESET = "\033[1;36m", "\033[0m"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..decode.config import DecodeConfig

    parser.add_argument("prompts", nargs="+", metavar="PROMPT", help="one or more prompts (decoded as a batch)")
    parser.add_argument("--model", default="smollm2-135m", help="embedded name, HF folder (e.g. a fine-tuned DIR)")
    parser.add_argument("--device", default=None, help="torch device (default: cuda if available)")
    parser.add_argument("--dtype", default="auto", choices=["auto", "fp32", "bf16"],
                        help="compute dtype: auto = bf16 on a GPU or a CPU where bf16 is measured faster, else fp32")
    parser.add_argument("--backend", default="hf", choices=["hf", "vllm"],
                        help="LM backend: hf (transformers) or vllm (default: hf)")
    parser.add_argument("--tools", default=None,
                        help="comma-separated tools the decoder can run (default: every registered tool)")
    parser.add_argument("--demos", metavar="TOOL", default=None,
                        help="put TOOL's instruction and demonstrations before each prompt (for untuned models)")
    parser.add_argument("--rewrite", action="store_true",
                        help="with --demos: ask for the prompt re-written with calls (Input:/Output:)")
    parser.add_argument("--tool-timeout", type=float, default=10.0, help="seconds per tool call")
    parser.add_argument("--tool-cache", default=None, help="SQLite file caching tool results")
    parser.add_argument("--json", action="store_true", help="one JSON object per prompt instead of text")
    parser.add_argument("--batch-size", type=int, default=16, help="prompts decoded together")
    add_dataclass_args(parser, DecodeConfig)


def highlight(text: str, colour: bool) -> str:
    """Calls set off in colour on a terminal; elsewhere the text as it is (calls are bracketed).

    >>> highlight("so [Calculator(2 + 3) -> 5] 5 left", True) == "so " + _CALL_STYLE + "[Calculator(2 + 3) -> 5]" + _RESET + " 5 left"
    True
    """
    if not colour:
        return text
    out, last = [], 0
    for call in find_calls(text):
        out += [text[last:call.start], _CALL_STYLE, text[call.start:call.end], _RESET]
        last = call.end
    return "".join(out + [text[last:]])


def _stop_strings(args: argparse.Namespace) -> list[str] | None:
    """Typed stop strings with escapes (``\\n``) decoded; demonstration prompts stop at a line end."""
    if args.stop is not None:
        return [codecs.decode(s, "unicode_escape") for s in args.stop]
    return ["\n"] if args.demos else None


def run(args: argparse.Namespace) -> int:
    from ..decode.config import DecodeConfig
    from ..lm.base import load_lm
    from ..tools import get_tool
    from ..tools.engine import ToolEngine
    from ..decode import make_decoder

    args.stop = _stop_strings(args)
    cfg = build_config(DecodeConfig, args)
    tools = {name: get_tool(name) for name in args.tools.split(",") if name.strip()} if args.tools else None
    prompts = list(args.prompts)
    if args.demos:
        demo = get_tool(args.demos)
        run_demo = None if args.rewrite else tool_runner(demo, args.tool_timeout, args.tool_cache)
        shown = demo_prompt(demo, "", args.rewrite, run_demo)  # the tool runs once per example, not per prompt
        prompts = [shown + p if not args.rewrite else demo_prompt(demo, p, True) for p in prompts]
    lm = load_lm(args.model, backend=args.backend, device=args.device, dtype=args.dtype)
    engine = ToolEngine(tools, timeout=args.tool_timeout, cache_path=args.tool_cache)
    decoder = make_decoder(lm, tools=tools, engine=engine, batch_size=args.batch_size)
    colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    for label, setting in side_by_side(cfg):
        try:
            results = decoder.generate(prompts, setting)
        except ValueError as exc:  # a prompt the model cannot take (empty, longer than its context): the user's to fix
            raise ConfigError(str(exc)) from None
        _show(args, results, label, colour)
    log.info("decoding: %s", ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                                        for k, v in sorted(decoder.counters.items())))
    return 0


def side_by_side(cfg) -> list[tuple[str, object]]:
    """The decodings to show: ``cfg`` alone, or with ``constrain_inputs`` the unconstrained one
    first and the typed one beside it (the option is shown beside, never instead of, the model's
    own calls).

    >>> from toolformer_kit.decode.config import DecodeConfig
    >>> [(label, c.constrain_inputs) for label, c in side_by_side(DecodeConfig(constrain_inputs=True))]
    [('unconstrained', False), ('typed inputs', True)]
    >>> [label for label, _ in side_by_side(DecodeConfig())]
    ['']
    """
    if not cfg.constrain_inputs:
        return [("", cfg)]
    return [("unconstrained", replace(cfg, constrain_inputs=False)), ("typed inputs", cfg)]


def _show(args: argparse.Namespace, results, label: str, colour: bool) -> None:
    for typed, res in zip(args.prompts, results):
        if args.json:
            print(json.dumps(asdict(res) | {"prompt": typed} | ({"setting": label} if label else {}),
                             ensure_ascii=False))
            continue
        shown = res.text.strip() if args.rewrite else typed + res.text
        print((f"[{label}] " if label else "") + highlight(shown, colour))
        for i, call in enumerate(res.calls, 1):
            status = "ok" if call.ok else call.reason
            print(f"  call {i} at token {call.token_position}: {call.tool}({call.input}) -> {call.result}  [{status}]")


main = standalone("toolformer generate", __doc__, add_arguments, run)
