"""A character-level fake LM and a fake tool engine: the annotation pipeline without weights.

The fake LM "understands" just enough to exercise every branch: it opens calls before digits, it
writes a correct Calculator call, an unclosed one and a call to another tool, and it predicts
digits much better when a call result in the prefix contains them — so a correct call is kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from toolformer_kit.lm.base import PositionLogprobs, Sample
from toolformer_kit.tools.base import Tool
from toolformer_kit.tools.calculator import calculate


def _text(x) -> str:
    return x if isinstance(x, str) else "".join(map(chr, x))


class FakeLM:
    name = "fake"
    bos_ids: list[int] = []

    def __init__(self):
        self.calls = {"positions": 0, "sample": 0, "token_logprobs": 0}

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, ids) -> str:
        return "".join(map(chr, ids))

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[int]]:
        return self.encode(text), list(range(len(text)))

    def call_start_logprobs(self, prompt, texts, contexts=None):
        self.calls["positions"] += 1
        out = []
        for t in texts:
            p = [0.6 if (c == " " and t[i + 1: i + 2].isdigit()) else 0.01 for i, c in enumerate(t)]
            out.append(PositionLogprobs([ord(c) for c in t], list(range(len(t))), np.log(np.array(p))))
        return out

    def sample(self, prefixes, n, stop="]", config=None):
        self.calls["sample"] += 1
        out = []
        for p in prefixes:
            text = _text(p)
            doc = text.rsplit("Input: ", 1)[-1].split("\nOutput:")[0]
            nums = re.findall(r"\d+", doc)
            a, b = (nums + ["1", "1"])[:2]
            pool = [Sample(f"Calculator({a} + {b})]", True), Sample(f"Calculator({a} +", False),
                    Sample(f"QA(what is {a}?)]", True), Sample(f"Calculator({a} * {b})]", True)]
            out.append([pool[j % len(pool)] for j in range(n)])
        return out

    def token_logprobs(self, prefixes, continuations):
        self.calls["token_logprobs"] += 1
        out = []
        for p, c in zip(prefixes, continuations):
            head = _text(p)
            m = re.search(r"->\s*([^\]]*)\]", head)
            result = m.group(1) if m else ""
            lps = []
            for ch in _text(c):
                if ch.isdigit():
                    lps.append(np.log(0.9) if ch in result else np.log(0.1))
                else:
                    lps.append(np.log(0.5))
            out.append(np.array(lps))
        return out


@dataclass
class FakeResult:
    result: str | None
    error: str | None = None
    cached: bool = False
    seconds: float = 0.0


class FakeEngine:
    """Runs tools directly; records every call it was asked to run."""

    log: list = []

    def __init__(self, tools, timeout=10.0, cache_path=None):
        self.tools = dict(tools)

    def run(self, calls):
        FakeEngine.log.extend(calls)
        out = []
        for c in calls:
            r = self.tools[c.tool](c.input)
            out.append(FakeResult(r, None if r is not None else "no result"))
        return out


def calculator_tool() -> Tool:
    return Tool("Calculator", calculate, "Add calculator calls.",
                [("It is 3 plus 4, so 7.", "It is 3 plus 4, so [Calculator(3 + 4) -> 7] 7.")])
