"""Recall@k of WikiSearch's passages by retrieval (issue 40, item 3): BM25, dense, hybrid.

For the first ``--limit`` examples of each task in the evaluation's hash order, the task's
question (or LAMA statement, as the model would write it) is the query; an example counts at k
when a gold answer (whole words, normalised as the metrics do) is in one of the top k passages of
the evaluation's index (the 10,033 summaries). "retrievable" is the ceiling's rule (BM25 top 3),
so BM25's recall@3 on it is 100 % by definition; the full rows are what tells the retrievals
apart. Prints a table and writes ``<out>/retrieval.json`` (shares with Wilson intervals).

    python benchmarks/retrieval_recall.py --limit 200 --out results/search/retrieval
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

from toolformer_kit.eval.config import default_data_dir
from toolformer_kit.eval.metrics import wilson_ci
from toolformer_kit.eval.tasks import subset
from toolformer_kit.measures.ceiling import TOP, question_of, retrievable
from toolformer_kit.measures.oracle import DEFAULT_TASKS, available_tasks
from toolformer_kit.files import write_atomic
from toolformer_kit.tools.dense import RETRIEVALS, Retriever
from toolformer_kit.tools.wikisearch import default_index

KS = (1, 3, 5, 10)


def recall_rows(items: list[dict], retrievals, ks=KS) -> list[dict]:
    """Per task (and pooled over the public tasks), per subset and retrieval: recall@k with its interval."""
    rows = []
    groups: dict[tuple[str, str], list[dict]] = {}
    for it in items:
        for sub in ("full", "retrievable") if it["retrievable"] else ("full",):
            groups.setdefault((it["task"], sub), []).append(it)
            if it["task"] != "wiki-cloze":
                groups.setdefault(("public (pooled)", sub), []).append(it)
    for (task, sub), group in groups.items():
        for how in retrievals:
            row = {"task": task, "subset": sub, "retrieval": how, "n": len(group)}
            for k in ks:
                hits = [it["first"][how] is not None and it["first"][how] < k for it in group]
                row[f"r@{k}"] = {"share": sum(hits) / len(hits), "ci95": list(wilson_ci(hits))}
            rows.append(row)
    return rows


def paired_rows(items: list[dict], retrievals, ks=KS, base: str = "bm25") -> list[dict]:
    """Each retrieval against ``base`` on the same public-task examples: found by it only, by
    ``base`` only, and the difference in recall@k with a paired 95 % interval (Wald, on the
    discordant pairs)."""
    pub = [it for it in items if it["task"] != "wiki-cloze"]
    n, rows = len(pub), []

    def hit(it, how, k):
        return it["first"][how] is not None and it["first"][how] < k

    for how in (h for h in retrievals if h != base):
        for k in ks:
            b = sum(hit(it, how, k) and not hit(it, base, k) for it in pub)
            c = sum(hit(it, base, k) and not hit(it, how, k) for it in pub)
            d = (b - c) / n
            se = math.sqrt(max(0.0, (b + c) / n - d * d) / n)
            rows.append({"retrieval": how, "against": base, "k": k, "n": n, "only_it": b, "only_base": c,
                         "difference": d, "ci95": [d - 1.96 * se, d + 1.96 * se]})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default=",".join(DEFAULT_TASKS))
    ap.add_argument("--limit", type=int, default=200, help="examples per task, in the evaluation's hash order")
    ap.add_argument("--retrievals", default=",".join(RETRIEVALS))
    ap.add_argument("--out", default="runs/retrieval")
    args = ap.parse_args(argv)
    data_dir = default_data_dir()
    bm25 = default_index()
    hows = [h for h in args.retrievals.split(",") if h]
    dense = None
    searchers = {}
    for how in hows:
        searchers[how] = Retriever(bm25, how, dense=dense)
        dense = dense or searchers[how].dense
    depth = max(KS)
    items, seconds = [], {h: 0.0 for h in hows}
    for task in available_tasks(args.tasks.split(","), data_dir):
        for ex in subset(task.load(data_dir), args.limit or None):
            q = question_of(ex.prompt)
            item = {"task": task.name, "id": ex.id, "query": q,
                    "retrievable": retrievable(ex.answers, [h.text for h in bm25.search(q, TOP)]), "first": {}}
            for how, s in searchers.items():
                t0 = time.perf_counter()
                hits = s.search(q, depth)
                seconds[how] += time.perf_counter() - t0
                item["first"][how] = next((i for i, h in enumerate(hits) if retrievable(ex.answers, [h.text])), None)
            items.append(item)
    rows = recall_rows(items, hows)
    print("| task | subset | retrieval | n | " + " | ".join(f"recall@{k}" for k in KS) + " |")
    print("|---|---|---|---|" + "---|" * len(KS))
    for r in rows:
        print(f"| {r['task']} | {r['subset']} | {r['retrieval']} | {r['n']} | "
              + " | ".join(f"{100 * r[f'r@{k}']['share']:.1f} %" for k in KS) + " |")
    paired = paired_rows(items, hows) if "bm25" in hows else []
    for r in paired:
        print(f"{r['retrieval']} - bm25, recall@{r['k']}, public tasks: {100 * r['difference']:+.1f} points "
              f"[{100 * r['ci95'][0]:+.1f}, {100 * r['ci95'][1]:+.1f}] ({r['only_it']} found by it only, "
              f"{r['only_base']} by bm25 only, n {r['n']})")
    per_query = {h: round(seconds[h] / max(1, len(items)) * 1000, 2) for h in hows}
    print(f"ms per query (search only, first query of dense includes embedding the corpus): {per_query}")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "retrieval.json", json.dumps({
        "command": "python " + " ".join(["benchmarks/retrieval_recall.py", *(argv or sys.argv[1:])]),
        "commit": commit, "limit": args.limit, "ks": list(KS), "ms_per_query": per_query, "rows": rows,
        "paired": paired}, indent=1))
    write_atomic(out / "retrieval-items.jsonl", "".join(json.dumps(i) + "\n" for i in items))
    return 0


if __name__ == "__main__":
    sys.exit(main())
