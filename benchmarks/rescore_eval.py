"""Re-score stored evaluation records with the current answer extraction (``strip_calls`` and
each task's metric), without decoding again: for runs made before a scoring fix.

    python benchmarks/rescore_eval.py runs/study-tau/math/tau-0/eval/toolformer --tools k10

Prints, per task and setting, the stored and the re-scored accuracy, then the paired difference
tools − disabled over all tasks with a 95 % percentile bootstrap (examples paired by id).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from toolformer_kit.calls import strip_calls
from toolformer_kit.eval.tasks import get_task
from toolformer_kit.eval.tasks.base import Example


def rescored(path: Path) -> dict[str, tuple[bool, bool]]:
    """id → (stored correct, re-scored correct)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    out = {}
    for r in rows:
        task = get_task(r["task"])
        example = Example(r["id"], r.get("prompt", ""), tuple(r["answers"]), r.get("meta", {}))
        out[f'{r["task"]}/{r["id"]}'] = (bool(r["correct"]), bool(task.score(strip_calls(r["output"]).strip(), example)))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", help="one model's eval folder: SETTING/TASK/examples.jsonl below it")
    ap.add_argument("--tools", default="k10", help="the setting with tools on")
    ap.add_argument("--disabled", default="disabled")
    ap.add_argument("--resamples", type=int, default=1000)
    args = ap.parse_args(argv)
    root = Path(args.folder)
    merged = {}
    for setting in (args.tools, args.disabled):
        merged[setting] = {}
        for f in sorted(root.glob(f"{setting}/*/examples.jsonl")):
            got = rescored(f)
            merged[setting] |= got
            old = 100 * np.mean([a for a, _ in got.values()])
            new = 100 * np.mean([b for _, b in got.values()])
            print(f"{setting:10s} {f.parent.name:10s} n={len(got):4d} stored {old:5.1f} %  re-scored {new:5.1f} %")
    ids = sorted(set(merged[args.tools]) & set(merged[args.disabled]))
    on = np.array([merged[args.tools][i][1] for i in ids], dtype=float)
    off = np.array([merged[args.disabled][i][1] for i in ids], dtype=float)
    rng = np.random.default_rng(0)
    idx = rng.integers(0, len(ids), size=(args.resamples, len(ids)))
    diffs = 100 * (on[idx].mean(1) - off[idx].mean(1))
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    print(f"re-scored, all tasks, n={len(ids)}: tools {100 * on.mean():.1f} %, disabled {100 * off.mean():.1f} %, "
          f"tools - disabled {100 * (on.mean() - off.mean()):+.1f} [{lo:+.1f}, {hi:+.1f}] points (paired bootstrap)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
