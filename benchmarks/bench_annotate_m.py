"""Annotation with one model M (issue 26, item 2): Qwen 0.5B positions, samples and scores the
Calculator at the paper's k 20 × m 10, on the Calculator campaign's own windows, before and after
this issue's changes, alternating window by window in one process.

* **before**: prefills through the unfused slot attention, every loss scored
  (``hf_slots.FUSED_PREFILL = False``, ``score_floor`` None);
* **after**: fused SDPA prefills and a score floor of 0 (the campaign's: its bank keeps scores ≥ 0),
  so L(e(c, ε)) is scored only where L(ε) − L⁺ ≥ 0.

Decisions: the after-side scorer (floor 0) re-scores the before-side's candidates; every kept /
rejected decision at τf 0.5, 1 and 2 is compared with the before-side's, and |ΔL| of the exact
scores is reported (bf16 numerics depend on what shares a batch). Both sides' samples are compared
too (same seed; a fused prefill may move a logit by a bf16 ulp and so a draw).

    python benchmarks/bench_annotate_m.py --windows 8 --json results/throughput/annotate_m.json
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_annotate import flop_model, rooflines  # noqa: E402

from toolformer_kit.annotate.config import AnnotateConfig  # noqa: E402
from toolformer_kit.annotate.scoring import BatchedScorer, score_candidates  # noqa: E402
from toolformer_kit.annotate.positions import LEAD  # noqa: E402
from toolformer_kit.annotate.stages import ShardAnnotator, ShardStats  # noqa: E402
from toolformer_kit.files import write_atomic  # noqa: E402
from toolformer_kit.campaign.run import CampaignConfig, annotate_config, campaign_windows  # noqa: E402
from toolformer_kit.lm import hf_slots  # noqa: E402
from toolformer_kit.lm.base import load_lm, set_threads  # noqa: E402
from toolformer_kit.tools import get_tool  # noqa: E402

SIDES = {"before": (False, None), "after": (True, 0.0)}  # (fused prefill, score floor)
TAUS = (0.5, 1.0, 2.0)


def run_side(annot: ShardAnnotator, side: str, doc) -> tuple[list, ShardStats, float]:
    hf_slots.FUSED_PREFILL, annot.cfg.score_floor = SIDES[side]
    t0 = time.perf_counter()
    cands, stats = annot.run([doc])
    return cands, stats, time.perf_counter() - t0


def decisions(lm, docs, ref: list) -> dict:
    """The after-scorer (floor 0) on the before-side's scored candidates: decision flips, |ΔL|."""
    again = [copy.copy(c) for c in ref if c.score is not None]
    ids = {d.doc_id: n for n, d in enumerate(docs)}
    tokens = [lm.encode(LEAD + d.text) for d in docs]
    score_candidates(BatchedScorer(lm), tokens, [ids[c.doc_id] for c in again], again,
                     {c.tool: 0.0 for c in again}, floor=0.0)
    old = [c for c in ref if c.score is not None]
    flips = {str(t): sum((a.score >= t) != (b.score >= t) for a, b in zip(old, again)) for t in TAUS}
    exact = [(a, b) for a, b in zip(old, again) if b.L_call_noresult is not None]
    deltas = sorted(abs(x - y) for a, b in exact for x, y in ((a.L_eps, b.L_eps), (a.L_plus, b.L_plus),
                                                            (a.L_call_noresult, b.L_call_noresult)))
    q = lambda p: round(deltas[min(len(deltas) - 1, int(p * len(deltas)))], 4) if deltas else None  # noqa: E731
    return {"candidates": len(old), "flips": flips, "bare_skipped": len(old) - len(exact),
            "abs_dL": {"median": q(0.5), "p90": q(0.9), "p99": q(0.99), "max": deltas[-1] if deltas else None}}


def stage_rows(stats: ShardStats, lm, roof: float) -> dict:
    per_tok, per_row = flop_model(lm)
    out = {}
    for stage, sec in stats.seconds.items():
        toks = {"positions": stats.tokens["positions"], "scoring": stats.tokens["scoring"],
                "sampling": stats.tokens["sampling_prefix"] + stats.tokens["sampling_new"]}.get(stage)
        row = {"seconds": round(sec, 1)}
        if toks and sec > 0:
            row.update(tokens=toks, tokens_per_s=round(toks / sec), bf16_roofline_share=round(toks * per_tok / sec / 1e9 / roof, 3))
        out[stage] = row
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=int, default=8)
    ap.add_argument("--skip", type=int, default=0, help="start after this many of the campaign's windows")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    set_threads(args.threads)
    ccfg = CampaignConfig(progress=False)
    acfg: AnnotateConfig = annotate_config(ccfg)
    lm = load_lm(ccfg.model, dtype=ccfg.dtype)
    docs, _ = campaign_windows(ccfg, lambda s: len(lm.encode(s)))
    docs = docs[args.skip: args.skip + args.windows]
    roof = rooflines()["bf16"]
    annot = ShardAnnotator(acfg, lm, [get_tool("Calculator")], lm)
    wall, stats, cands = Counter(), {s: ShardStats() for s in SIDES}, {s: [] for s in SIDES}
    for n, doc in enumerate(docs):
        for side in (list(SIDES) if n % 2 == 0 else list(SIDES)[::-1]):
            found, st, sec = run_side(annot, side, doc)
            wall[side] += sec
            stats[side].seconds.update(st.seconds)
            stats[side].tokens.update(st.tokens)
            cands[side] += found
            print(f"window {n + 1}/{len(docs)} {side}: {sec:.1f} s", file=sys.stderr)
    hf_slots.FUSED_PREFILL = True
    same = sum((a.input, a.position) == (b.input, b.position) for a, b in zip(cands["before"], cands["after"]))
    out = {"model": ccfg.model, "tool": "Calculator", "k": ccfg.k, "m": ccfg.m, "windows": len(docs),
           "bf16_roofline_gflops": round(roof, 1),
           "sides": {s: {"seconds": round(wall[s], 1), "windows_per_hour": round(3600 * len(docs) / wall[s], 1),
                         "stages": stage_rows(stats[s], lm, roof)} for s in SIDES},
           "speedup": round(wall["before"] / wall["after"], 2),
           "same_samples": f"{same}/{len(cands['before'])}",
           "decisions_after_scorer_on_before_candidates": decisions(lm, docs, cands["before"])}
    print(json.dumps(out, indent=1))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(args.json, json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
