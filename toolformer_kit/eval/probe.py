"""The call probe: does a fine-tuned model call where its training data did, and write the call well?

Why. Accuracy with tools mixes three things: whether the model opens a call, whether it writes
one the tool can run, and whether the result helps. On held-out C* texts the first two can be
read directly: cut each text just before its first call, let the model go on with the paper's
decoding (" [" among the top k opens a call), and record whether a call opened right there and
whether it reached ``Tool(input) ->``. A model that has learnt the syntax opens and completes
calls here; one that copies the corpus's ``= 528]`` opens them and leaves them unrun.

:func:`probe_points` is pure (texts in, prefixes out); :func:`call_probe` runs any generator with
the decoder's result shape, so tests drive it with a fake.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..calls import find_calls
from ..decode.config import DecodeConfig

# Outcomes in which the model wrote ``Tool(input) ->``: the tool ran (or failed on its own).
WELL_FORMED = ("", "no_result", "tool_error")


@dataclass(frozen=True)
class ProbePoint:
    """A held-out text cut before its first call: the model continues ``prefix``; the text's call
    there was ``tool``."""

    prefix: str
    tool: str


def probe_points(texts: Sequence[str]) -> list[ProbePoint]:
    """One point per text that holds a call, cut just before the call's " [" (the space stays out,
    as the call-open token is " [").

    >>> [(p.prefix, p.tool) for p in probe_points(["It costs [Calculator(2 + 3) -> 5] 5.", "No call."])]
    [('It costs', 'Calculator')]
    """
    out = []
    for text in texts:
        calls = find_calls(text)
        if calls and calls[0].start > 0:
            out.append(ProbePoint(text[: calls[0].start].rstrip(" "), calls[0].call.tool))
    return out


def probe_config(k: int = 10) -> DecodeConfig:
    """The paper's decoding, stopped one answer token after the point (a call's own tokens and its
    result do not count), so a row costs little more than the call it writes."""
    return DecodeConfig(k=k, max_calls=1, max_new_tokens=96, max_answer_tokens=1, temperature=0.0)


def call_probe(generate: Callable[[list[str], DecodeConfig], list[Any]], points: Sequence[ProbePoint],
               k: int = 10) -> dict:
    """Share of points where a call opened at once, and of those, how many were well-formed and
    named the text's own tool."""
    results = generate([p.prefix for p in points], probe_config(k)) if points else []
    opened = well = same = 0
    for point, res in zip(points, results):
        first = res.calls[0] if res.calls else None
        if first is None or first.token_position != 0:
            continue
        opened += 1
        well += first.reason in WELL_FORMED
        same += first.tool == point.tool
    n = len(points)
    return {"points": n, "opened": opened, "open_rate": opened / n if n else None,
            "well_formed": well, "well_formed_rate": well / opened if opened else None,
            "same_tool": same}
