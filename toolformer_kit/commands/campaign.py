"""Run (or resume) an annotation campaign: C* at the paper's settings, banked shard by shard into a
dataset folder that is committed as it grows. The default is the Calculator's (datasets/cstar-math);
``--config configs/campaigns/search.yaml`` is WikiSearch and QA's (datasets/cstar-search, issue 28).

The same command resumes from the folder's bank/ on any machine, and rewrites data/ and the card
README.md from the bank every time it stops (after --max-minutes, at --target-calls, at the
corpus's end, or on Ctrl-C or SIGTERM, which drop only the shard under way). --max-windows 20 is the pilot: the campaign's own first shards.
"""

from __future__ import annotations

import argparse
import json
import signal
from contextlib import contextmanager

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
    with _term_as_interrupt():
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
    return 130 if s["stopped"] == "interrupt" else 0


@contextmanager
def _term_as_interrupt():
    """SIGTERM stops a campaign as Ctrl-C does: the shard under way is dropped and data/ and the card
    are rewritten from the bank (a campaign started in the background of a script ignores SIGINT)."""
    def stop(signum, frame):
        raise KeyboardInterrupt
    old = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


main = standalone("toolformer campaign", __doc__, add_arguments, run)
