"""Show where a model would open a call: p_i = P(" [" | P(x), x_1..x_{i-1}) at every token of a text.

This is the first step of annotation (the paper's §2, "Sampling API Calls"), exposed on its own so
a user can see what a model and a tool's demonstration prompt do before annotating a corpus.
"""

from __future__ import annotations

import argparse

from .cli import standalone

HELP = "print call-start probabilities p_i over a text"

SAMPLE_TEXT = ("The train left with 412 passengers and picked up 37 more at the next stop, "
               "so 449 people arrived in Lyon.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", nargs="?", default=SAMPLE_TEXT, help="text to score (default: a sample)")
    parser.add_argument("--model", default="smollm2-135m", help="embedded name, HF folder or hub id")
    parser.add_argument("--tool", default="Calculator", help="tool whose demonstrations form the prompt")
    parser.add_argument("--tau-s", type=float, default=None, help="mark positions above this (default: the tool's)")
    parser.add_argument("--top", type=int, default=5, help="how many top positions to list")


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from ..annotate.settings import resolve
    from ..lm.base import load_lm
    from ..tools import get_tool

    tool = get_tool(args.tool)
    lm = load_lm(args.model)
    text = " " + args.text.strip()
    (res,) = lm.call_start_logprobs(tool.prompt_prefix(), [text], contexts=[tool.prompt_context(args.text.strip())])
    tau = resolve(tool.settings, explicit={"tau_s": args.tau_s}).tau_s
    pieces = []
    for i, tid in enumerate(res.token_ids):
        tok = lm.decode([tid])
        pieces.append(f"{tok}⟨{res.probs[i]:.2f}⟩" if res.probs[i] > max(tau, 0.01) else tok)
    print("".join(pieces).strip())
    print(f"\ntop positions (p_i > {tau} marks a candidate):")
    for i in np.argsort(-res.probs)[: args.top]:
        print(f"  before token {i:3d} {lm.decode([res.token_ids[i]])!r:>12}: p = {res.probs[i]:.4f}"
              f"  | ...{text[max(0, res.offsets[i] - 30):res.offsets[i]]}")
    return 0


main = standalone("toolformer positions", __doc__, add_arguments, run)
