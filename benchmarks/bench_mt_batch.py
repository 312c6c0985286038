"""The MT tool call by call against the same calls as one batch (issue 42: executing MT calls took
about a third of a cstar-mt shard's time, 155 of 445 s on a 2-core CPU without native bf16).

Inputs: distinct MT call inputs banked by the MT campaign (``datasets/cstar-mt/bank``: the quotes
and phrases the model asked to translate), in bank order. Both sides use one loaded translator (the
default, Gemma 3 270M), one after the other on the same inputs; the script prints seconds, calls
per second, the ratio and how many results agree (greedy decoding in a batch can flip a token
where rows share a matmul).

    python benchmarks/bench_mt_batch.py --n 32 --json results/throughput/mt_batch.json
"""

from __future__ import annotations

import argparse
import glob
import json
import time
from pathlib import Path

from toolformer_kit.files import write_atomic
from toolformer_kit.tools.mt import mt_tool

ROOT = Path(__file__).resolve().parents[1]


def banked_inputs(n: int) -> list[str]:
    seen: dict[str, None] = {}
    for path in sorted(glob.glob(str(ROOT / "datasets/cstar-mt/bank/shard-*.jsonl"))):
        for line in open(path, encoding="utf-8"):
            text = json.loads(line).get("input") or ""
            if text and len(seen) < n:
                seen.setdefault(text)
    return list(seen)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=32, help="distinct banked inputs")
    ap.add_argument("--batch", type=int, default=32, help="inputs per batch (the engine's default batch size)")
    ap.add_argument("--json", default="", help="also write the figures here")
    args = ap.parse_args()
    texts = banked_inputs(args.n)
    tool = mt_tool()
    tool.prepare()
    tool("Guten Morgen.")  # warm: the first call builds the worked examples' cache and the language model
    t0 = time.perf_counter()
    single = [tool(t) for t in texts]
    one = time.perf_counter() - t0
    t0 = time.perf_counter()
    batched = [r for s in range(0, len(texts), args.batch) for r in tool.run_many(texts[s:s + args.batch])]
    many = time.perf_counter() - t0
    agree = sum(a == b for a, b in zip(single, batched))
    out = {"inputs": len(texts), "translated": sum(r is not None for r in single), "batch": args.batch,
           "seconds_one_at_a_time": round(one, 1), "seconds_batched": round(many, 1),
           "ratio": round(one / many, 2) if many else None, "agree": agree, "version": tool.version,
           "differ": [{"input": t, "one": a, "batched": b} for t, a, b in zip(texts, single, batched) if a != b]}
    print(f"{len(texts)} inputs ({out['translated']} translated): one at a time {one:.1f} s "
          f"({len(texts) / one:.2f}/s), batched {many:.1f} s ({len(texts) / many:.2f}/s): "
          f"{out['ratio']}x; {agree}/{len(texts)} results agree")
    if args.json:
        write_atomic(Path(args.json), json.dumps(out, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
