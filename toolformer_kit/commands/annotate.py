"""Annotate a corpus with the tool calls the model itself finds useful (the paper's §2), writing C*.

For each tool and document: p_i at every position, m calls sampled at the likeliest positions,
the calls run, and a call kept only if its result lowers the model's loss on the next tokens by at
least τf. Output goes to --out in resumable shards; re-running the same command after a crash or
Ctrl-C continues where it stopped. Every setting below can also come from --config (YAML/TOML/JSON).
"""

from __future__ import annotations

import argparse

from ..annotate.summary import kept_at, kept_table_of
from .cli import standalone

HELP = "annotate a corpus with useful tool calls (build C*)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..annotate.config import AnnotateConfig
    from ..config import add_dataclass_args

    add_dataclass_args(parser, AnnotateConfig)


def format_summary(summary: dict) -> str:
    """Kept counts per tool and τf (calls / texts), then the best calls with their scores."""
    table = kept_table_of(summary)
    taus = [r["tau_f"] for r in next(iter(table.values()), {}).get("kept", [])]
    lines = ["tool          texts  samples  scored  " + "  ".join(f"{f'tau_f={t}':>14}" for t in taus)]
    for tool, row in table.items():
        info = summary["tools"].get(tool, {})
        cells = "  ".join(f"{kept_at(row, t)['calls']:>6} / {kept_at(row, t)['texts']:<5}" for t in taus)
        lines.append(f"{tool:<12} {info.get('documents', 0):>6} {info.get('samples', 0):>8} {row['scored']:>7}  {cells}")
    lines.append(f"C*: {summary['c_star_texts']} texts with at least one kept call")
    for tool, row in summary.get("chains", {}).items():  # a later round (--keep-calls)
        lines.append(f"  {tool}: {row['chain']} of {row['kept']} new calls use an earlier call's result (chains)")
    for call in summary["top_calls"][:8]:
        lines.append(f"  {call['score']:>6.2f}  {call['tool']:<10} {call['in_context']}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from ..annotate.config import AnnotateConfig
    from ..annotate.runner import Runner
    from ..config import build_config

    cfg = build_config(AnnotateConfig, args)
    summary = Runner(cfg).run()
    print(format_summary(summary))
    print(f"written to {cfg.out} (corpus.jsonl, candidates.jsonl, summary.json)")
    return 0


main = standalone("toolformer annotate", __doc__, add_arguments, run)
