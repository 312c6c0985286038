"""The QA tool's own accuracy (issue 28, item 3): right / wrong / abstained on retrievable questions and
on the others, per task and pooled, for each retrieval (sentences: the new reader that abstains
unless its answer is a span of the sentences it read; passages: the reader before it).

See :mod:`toolformer_kit.measures.qa_check` for the definitions; this file only builds the tools.
Goal: pooled ≥ 50 % right on retrievable questions, ≤ 10 % wrong on the others. Writes
``<out>/table.md``, ``<out>/results.json`` (with seconds per question) and one JSONL per retrieval.

    python benchmarks/qa_tool_check.py
    python benchmarks/qa_tool_check.py --retrievals sentences,passages --limit 40 --limit-other 20
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from toolformer_kit.config import ConfigError
from toolformer_kit.eval.config import default_data_dir
from toolformer_kit.measures.oracle import available_tasks
from toolformer_kit.measures.qa_check import qa_table, run_qa_check

TASKS = ("webquestions", "nq", "triviaqa", "lama-trex", "wiki-cloze")


def answerers(args, lm, reader_class) -> dict:
    """One QA reader per retrieval, and per sentence count for sentence retrieval (named
    "sentences" when there is one count, else "sentences-5" etc.)."""
    tops = [int(n) for n in (args.sentences or "").split(",") if n] or [0]
    searches = [s for s in getattr(args, "search", "bm25").split(",") if s]
    out = {}
    for r in (r for r in args.retrievals.split(",") if r):
        for top in tops if r == "sentences" else [0]:
            for search in searches:
                name = f"{r}-{top}" if r == "sentences" and len(tops) > 1 else r
                name += "" if search == "bm25" else f"+{search}"
                extra = {"top": top} if top else {}  # else the tool's own SENTENCES
                out[name] = reader_class(model=args.model, lm=lm, corpus=args.corpus, retrieval=r,
                                         search=search, **extra)
    return out


def main(argv=None, lm=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="the reader (default: the QA tool's, $TOOLFORMER_QA_MODEL or Qwen 0.5B)")
    ap.add_argument("--retrievals", default="sentences", help="sentences, passages, or both (sentences,passages)")
    ap.add_argument("--search", default="bm25",
                    help="which passages the reader reads: bm25, dense, hybrid, or several (bm25,dense) to compare")
    ap.add_argument("--tasks", default=",".join(TASKS), help="comma-separated tasks; missing files are skipped")
    ap.add_argument("--limit", type=int, default=30, help="retrievable questions per task")
    ap.add_argument("--limit-other", type=int, default=15, help="not-retrievable questions per task")
    ap.add_argument("--sentences", default=None,
                    help="sentences the reader reads (default: the tool's, 5); several (4,5) compare them")
    ap.add_argument("--offset", type=int, default=0,
                    help="skip the first N retrievable questions per task (tune on them, report on the next)")
    ap.add_argument("--offset-other", type=int, default=0, help="skip the first N not-retrievable questions per task")
    ap.add_argument("--data-dir", default=None, help="benchmark folder (default: ../shared/data/benchmarks)")
    ap.add_argument("--corpus", default=None, help="search corpus (default: WikiSearch's, the 10,033 summaries)")
    ap.add_argument("--out", default="runs/qa-tool-check")
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    if args.limit < 1 or args.limit_other < 0 or args.offset < 0 or args.offset_other < 0:
        print(f"error: --limit must be ≥ 1, --limit-other and the offsets ≥ 0, got {args.limit}, "
              f"{args.limit_other}, {args.offset} and {args.offset_other}",
              file=sys.stderr)
        return 2
    try:
        from toolformer_kit.tools.qa import QAReader

        data_dir = Path(args.data_dir).expanduser() if args.data_dir else default_data_dir()
        tasks = available_tasks([t for t in args.tasks.split(",") if t], data_dir)
        readers = answerers(args, lm, QAReader)
        from toolformer_kit.measures.ceiling import bm25_search

        search = bm25_search(args.corpus)
        if lm is None:
            from toolformer_kit.lm.base import set_threads

            set_threads(args.threads)
        result = run_qa_check(tasks, data_dir, search, readers, args.out, limit=args.limit,
                              limit_other=args.limit_other, offset=args.offset, offset_other=args.offset_other)
    except (ConfigError, KeyError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for name, res in result["answerers"].items():
        goal = res["goal"]
        print(f"\n### {name} ({res['seconds_per_question']} s per question)\n\n{qa_table(res['rows'])}")
        print(f"\ngoal: right {goal['right']} (≥ 0.5: {goal['right_met']}), wrong where abstaining is right "
              f"{goal['wrong']} (≤ 0.1: {goal['wrong_met']})")
    print(f"\nwritten to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
