"""Run (or resume) an annotation campaign: C* at the paper's settings, banked shard by shard into a
dataset folder that is committed as it grows. The default is the Calculator's (datasets/cstar-math);
``--config configs/campaigns/search.yaml`` is WikiSearch and QA's (datasets/cstar-search, issue 28).

The same command resumes from the folder's bank/ on any machine, and rewrites data/ and the card
README.md from the bank every time it stops (after --max-minutes, at --target-calls, or at the
corpus's end). --max-windows 20 is the pilot: the campaign's own first shards.
"""

from __future__ import annotations

import argparse
import json

from .cli import standalone

HELP = "run or resume a C* campaign: Calculator (default) or search (banked, resumable)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..config import add_dataclass_args
    from ..campaign.run import CampaignConfig

    add_dataclass_args(parser, CampaignConfig)


def run(args: argparse.Namespace) -> int:
    from ..config import build_config
    from ..campaign.run import CampaignConfig, run_campaign

    cfg = build_config(CampaignConfig, args)
    s = run_campaign(cfg)
    for k in s["kept"]:
        print(f"tau_f {k['tau_f']:<5} {k['calls']:>5} calls in {k['texts']:>4} texts   by rank: "
              + json.dumps(k["by_position_rank"]))
    m = s.get("merge", {})
    if m.get("merge") == "sequential":
        print(f"sequential merge: {m['before']['calls']} → {m['after']['calls']} calls; texts with the same call twice "
              f"{m['before']['texts_with_a_repeat']} → {m['after']['texts_with_a_repeat']}; dropped "
              + json.dumps(m["dropped_by_reason"]))
    print(f"{s['windows_annotated']} of {s['windows_selected']} windows annotated, {s['windows_per_hour']} per hour; "
          f"stopped by {s['stopped']}{'' if s['complete'] else ' (rerun the same command to go on)'}")
    print(f"written to {cfg.out} (README.md, data/, bank/)")
    return 0


main = standalone("toolformer campaign", __doc__, add_arguments, run)
