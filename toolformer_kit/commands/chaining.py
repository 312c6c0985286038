"""Evaluate each annotation round's fine-tuned model with up to 1, 2 and 3 calls per input on the
maths tasks, and write results/chaining (issue 31, item 3; beyond the paper): accuracy against the
call budget on every problem and on those whose gold equation has 2+ operations, paired against
one call, the chain rate, and whether round 2's chains help.

    toolformer chaining --rounds round1=runs/math/train-tools,round2=runs/math-r2/train-tools

Re-running the same command skips the problems already answered; ``--report-only`` rewrites the
results folder from the eval records without evaluating.
"""

from __future__ import annotations

import argparse

from .cli import standalone

HELP = "accuracy against the call budget per annotation round: results/chaining (beyond the paper)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..config import add_dataclass_args
    from ..study.chaining import ChainingConfig

    add_dataclass_args(parser, ChainingConfig)
    parser.add_argument("--report-only", action="store_true", help="rewrite the results from the eval records")


def run(args: argparse.Namespace) -> int:
    from ..config import build_config, command_line, typed_flags
    from ..study.chaining import ChainingConfig, run_chaining, write_chaining

    cfg = build_config(ChainingConfig, args)
    words = ["toolformer", "chaining", *(["--config", args.config] if args.config else [])]
    command = command_line(words, typed_flags(ChainingConfig, args))
    folder = write_chaining(cfg, command) if args.report_only else run_chaining(cfg, command)
    print(f"written to {folder}")
    return 0


main = standalone("toolformer chaining", __doc__, add_arguments, run)
