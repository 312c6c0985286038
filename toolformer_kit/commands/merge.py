"""Join published C* datasets into the one corpus a single model is fine-tuned on (the paper's
merged C*, issue 42): ``toolformer merge --datasets A,B --out datasets/cstar-all``."""

from __future__ import annotations

import argparse
import sys

from .cli import standalone

HELP = "join published C* datasets into one (every tool's calls, the paper's per-tool cap)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--datasets", required=True, help="comma-separated dataset folders (each with data/cstar.jsonl)")
    parser.add_argument("--out", default="datasets/cstar-all", help="folder to write data/ and the card into")
    parser.add_argument("--cap", type=int, default=25_000, help="each tool's calls in at most this many texts")
    parser.add_argument("--seed", type=int, default=0, help="seed of the order and of the cap's choice")


def run(args: argparse.Namespace) -> int:
    from ..campaign.merged import build_merged

    folders = [f for f in args.datasets.split(",") if f]
    command = "toolformer merge " + " ".join(sys.argv[2:]) if sys.argv[1:2] == ["merge"] else ""
    s = build_merged(folders, args.out, args.cap, args.seed, command)
    print(f"{s['calls']} calls in {s['texts']} texts ({', '.join(f'{t} {n}' for t, n in s['calls_by_tool'].items())}) "
          f"written to {args.out}")
    return 0


main = standalone("toolformer merge", __doc__, add_arguments, run)
