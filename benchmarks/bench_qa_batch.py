"""The QA tool call by call against the same calls as one batch (issue 26, item 2 on the search
campaign, where executing QA calls took ~80 % of a shard's time).

Inputs: the QA calls the search campaign banked (``datasets/cstar-search/bank``, questions the model
asked itself) plus NQ dev questions, which the reader often abstains on. Both sides use one loaded
reader, one after the other on the same questions, in the order given; the script prints seconds,
calls per second, the ratio and how many answers agree (greedy bf16 can flip a token when rows share
a matmul; ``--dtype fp32`` checks the batch path gives exactly the same answers).

    python benchmarks/bench_qa_batch.py --n 96 --json results/throughput/qa_batch.json

``--compare-dtype`` instead runs the batched tool with the reader loaded in fp32 and in bf16, one
after the other on the same questions (the campaign's reader was fp32 until 2026-12-03 while its
model ran bf16), and prints seconds, the ratio and how many answers agree:

    python benchmarks/bench_qa_batch.py --compare-dtype --n 96 --json results/throughput/qa_dtype.json

``--compare-skip`` replays a search campaign's QA execution as the campaign runs it: the questions
the model asked of each banked window, one batch per window over the index without that window
(issue 40's self-exclusion), with the reader skipping the questions whose sentences cannot support
an answer (``best_support``) and reading them all, one after the other on one loaded reader; it
prints seconds, the ratio, the reader prompts each side ran and how many answers agree:

    python benchmarks/bench_qa_batch.py --compare-skip --windows 24 --json results/throughput/qa_skip.json
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
    ap.add_argument("--compare-dtype", action="store_true", help="fp32 reader vs bf16 reader, both batched")
    ap.add_argument("--compare-skip", action="store_true",
                    help="a campaign's QA execution with the reader skipping weak sentences vs reading them all")
    ap.add_argument("--windows", type=int, default=24, help="--compare-skip: banked windows to replay")
    ap.add_argument("--documents", default="datasets/cstar-search-v2/data/documents.jsonl",
                    help="--compare-skip: the banked windows' texts")
    ap.add_argument("--corpus", default="runs/cstar-search/search.jsonl",
                    help="--compare-skip: the campaign's search index (written by its first run)")
    args = ap.parse_args(argv)
    set_threads(args.threads)
    if args.compare_skip:
        return compare_skip(args)
    qs = questions(args.n, args.bank, args.data_dir or default_data_dir())
    if args.compare_dtype:
        return compare_dtype(args, qs)
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
    return report(out, f"{len(qs)} QA calls, {args.model} {out['dtype']}: one by one {out['single_s']} s "
                       f"({len(qs) / (t1 - t0):.2f}/s), batches of {args.batch} {out['batched_s']} s "
                       f"({len(qs) / (t2 - t1):.2f}/s): {out['speedup']}x; identical answers {same}/{len(qs)}; "
                       f"answered {out['answered_single']} vs {out['answered_batched']}", ("single", "batched"), args.json)


def report(out: dict, line: str, sides: tuple[str, str], path: str | None) -> int:
    """Print a comparison's line and its first ten differing answers; write ``out`` to ``path``."""
    print(line)
    for d in out["differ"][:10]:
        print(f"  differs: {d['q']!r}: {d[sides[0]]!r} vs {d[sides[1]]!r}" + (f" ({d['why']})" if "why" in d else ""))
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(out, indent=1) + "\n")
    return 0


def timed_batches(model: str, dtype: str, qs: list[str], batch: int) -> tuple[float, list, str]:
    """Seconds for the batched QA tool on ``qs`` with the reader in ``dtype`` (loaded and warmed first)."""
    lm = load_lm(model, dtype=dtype)
    tool = qa_tool(lm=lm)
    tool.batch_size = batch
    tool.prepare()
    tool.run_many(qs[:2])
    t0 = time.perf_counter()
    answers = []
    for i in range(0, len(qs), batch):
        answers += tool.run_many(qs[i:i + batch])
    return time.perf_counter() - t0, answers, str(getattr(lm, "dtype", dtype))


def compare_dtype(args, qs: list[str]) -> int:
    fp32_s, fp32, _ = timed_batches(args.model, "fp32", qs, args.batch)
    bf16_s, bf16, _ = timed_batches(args.model, "bf16", qs, args.batch)
    same = sum(a == b for a, b in zip(fp32, bf16))
    out = {"questions": len(qs), "model": args.model, "batch": args.batch, "fp32_s": round(fp32_s, 2),
           "bf16_s": round(bf16_s, 2), "speedup": round(fp32_s / bf16_s, 2), "identical": same,
           "answered_fp32": sum(a is not None for a in fp32), "answered_bf16": sum(b is not None for b in bf16),
           "differ": [{"q": q, "fp32": a, "bf16": b} for q, a, b in zip(qs, fp32, bf16) if a != b]}
    return report(out, f"{len(qs)} QA calls in batches of {args.batch}, {args.model}: reader fp32 {out['fp32_s']} s, "
                       f"bf16 {out['bf16_s']} s: {out['speedup']}x; identical answers {same}/{len(qs)}; "
                       f"answered {out['answered_fp32']} vs {out['answered_bf16']}", ("fp32", "bf16"), args.json)


def window_questions(bank: str, documents: str, n: int) -> list[tuple[dict, list[str]]]:
    """The last ``n`` banked windows with QA calls whose text ``documents`` holds, each with its
    distinct QA inputs in bank order: what one window's QA batch asks in the campaign."""
    docs = {}
    for line in open(documents, encoding="utf-8"):
        d = json.loads(line)
        docs[d["id"]] = d
    asked: dict[str, list[str]] = {}
    for f in sorted(glob.glob(f"{bank}/shard-*.jsonl")):
        for line in open(f, encoding="utf-8"):
            r = json.loads(line)
            if r.get("tool") == "QA" and r["doc_id"] in docs:
                asked.setdefault(r["doc_id"], [])
                if r["input"] not in asked[r["doc_id"]]:
                    asked[r["doc_id"]].append(r["input"])
    return [(docs[i], qs) for i, qs in list(asked.items())[-n:]]


def compare_skip(args) -> int:
    from toolformer_kit.tools.qa import QAReader, read_many

    windows = window_questions(args.bank, args.documents, args.windows)
    lm = load_lm(args.model, dtype=args.dtype)
    qa = QAReader(lm=lm, corpus=args.corpus)
    qa.prepare()
    views = [qa.excluding(d["text"], str(d.get("title") or "")) for d, _ in windows]
    read_many(windows[0][1][:2], qa.reader, views[0].index())  # warm the kernels and the index
    sides = {}
    for skip in (True, False):
        t0 = time.perf_counter()
        rows = [read_many(qs, qa.reader, v.index(), qa.k, qa.top, skip_weak=skip) for v, (_, qs) in zip(views, windows)]
        sides[skip] = (time.perf_counter() - t0, [r for batch in rows for r in batch])
    (skip_s, skipped), (all_s, read) = sides[True], sides[False]
    same = sum(a.answer == b.answer for a, b in zip(skipped, read))
    out = {"windows": len(windows), "questions": len(read), "model": args.model,
           "dtype": str(getattr(lm, "dtype", args.dtype)), "skip_s": round(skip_s, 2), "read_all_s": round(all_s, 2),
           "speedup": round(all_s / skip_s, 2), "identical": same,
           "read_skipping": sum(r.raw is not None for r in skipped), "read_all": sum(r.raw is not None for r in read),
           "answered_skipping": sum(r.answer is not None for r in skipped),
           "answered_all": sum(r.answer is not None for r in read),
           "differ": [{"q": a.question, "skipping": a.answer, "all": b.answer, "why": [a.why, b.why]}
                      for a, b in zip(skipped, read) if a.answer != b.answer],
           "command": "python " + " ".join(sys.argv)}
    return report(out, f"{len(read)} QA calls of {len(windows)} banked windows, {args.model} {out['dtype']}: "
                       f"skipping weak sentences {out['skip_s']} s ({out['read_skipping']} read), reading all "
                       f"{out['read_all_s']} s ({out['read_all']} read): {out['speedup']}x; identical answers "
                       f"{same}/{len(read)}; answered {out['answered_skipping']} vs {out['answered_all']}",
                  ("skipping", "all"), args.json)


if __name__ == "__main__":
    sys.exit(main())
