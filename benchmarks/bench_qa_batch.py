"""The QA tool call by call against the same calls as one batch (issue 26, item 2 on the search
campaign, where executing QA calls took ~80 % of a shard's time).

Inputs: the QA calls the search campaign banked (``datasets/cstar-search/bank``, questions the model
asked itself) plus NQ dev questions, which the reader often abstains on. Both sides use one loaded
reader, one after the other on the same questions, in the order given; the script prints seconds,
calls per second, the ratio and how many answers agree (greedy bf16 can flip a token when rows share
a matmul; ``--dtype fp32`` checks the batch path gives exactly the same answers).

    python benchmarks/bench_qa_batch.py --n 96 --json results/throughput/qa_batch.json
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
import time
from pathlib import Path

from toolformer_kit.eval.config import default_data_dir
from toolformer_kit.files import write_atomic
from toolformer_kit.lm.base import load_lm, set_threads
from toolformer_kit.tools.qa import qa_tool


def questions(n: int, bank: str, data_dir: str) -> list[str]:
    """Half banked QA inputs, half NQ questions, distinct, in a fixed order."""
    banked = [json.loads(line)["input"] for f in sorted(glob.glob(f"{bank}/shard-*.jsonl"))
              for line in open(f, encoding="utf-8") if json.loads(line).get("tool") == "QA"]
    nq_path = Path(data_dir) / "qa" / "NQ-open.dev.jsonl"
    nq = [json.loads(line)["question"] for line in open(nq_path, encoding="utf-8")] if nq_path.exists() else []
    banked = list(dict.fromkeys(banked))[: n // 2]
    return list(dict.fromkeys(banked + nq[: n - len(banked)]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=96, help="questions")
    ap.add_argument("--model", default="qwen2.5-coder-0.5b")
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--batch", type=int, default=32, help="the tool's batch size")
    ap.add_argument("--bank", default="datasets/cstar-search/bank")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    set_threads(args.threads)
    qs = questions(args.n, args.bank, args.data_dir or default_data_dir())
    lm = load_lm(args.model, dtype=args.dtype)
    tool = qa_tool(lm=lm)
    tool.batch_size = args.batch
    tool.prepare()
    tool.run_many(qs[:2])  # warm the kernels and the index for both paths
    t0 = time.perf_counter()
    single = [tool(q) for q in qs]
    t1 = time.perf_counter()
    batched = []
    for i in range(0, len(qs), args.batch):
        batched += tool.run_many(qs[i:i + args.batch])
    t2 = time.perf_counter()
    same = sum(a == b for a, b in zip(single, batched))
    out = {"questions": len(qs), "model": args.model, "dtype": str(getattr(lm, "dtype", args.dtype)),
           "batch": args.batch, "single_s": round(t1 - t0, 2), "batched_s": round(t2 - t1, 2),
           "speedup": round((t1 - t0) / (t2 - t1), 2), "identical": same,
           "answered_single": sum(a is not None for a in single),
           "answered_batched": sum(b is not None for b in batched),
           "differ": [{"q": q, "single": a, "batched": b} for q, a, b in zip(qs, single, batched) if a != b]}
    print(f"{len(qs)} QA calls, {args.model} {out['dtype']}: one by one {out['single_s']} s "
          f"({len(qs) / (t1 - t0):.2f}/s), batches of {args.batch} {out['batched_s']} s "
          f"({len(qs) / (t2 - t1):.2f}/s): {out['speedup']}x; identical answers {same}/{len(qs)}; "
          f"answered {out['answered_single']} vs {out['answered_batched']}")
    for d in out["differ"][:10]:
        print(f"  differs: {d['q']!r}: {d['single']!r} vs {d['batched']!r}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(args.json, json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
