"""Ceiling pilot (issue 28, item 1): closed-book vs oracle passage, per model and task, retrievable items only.

For each model and each QA/LAMA task whose files are present, on the examples whose gold answer is
in the top BM25 passage for the question, the model answers the task prompt as it is (closed-book)
and with that passage in it (oracle; ``--forms call``: as a WikiSearch call's result where the
answer starts, ``context``: before the prompt). Decoding and scoring are the evaluation's own. See
:mod:`toolformer_kit.measures.oracle` for the definitions; this file only loads the models.

Writes ``<out>/table.md``, ``<out>/results.json`` and one JSONL of answers per model and task; a
re-run reuses the finished (model, task) files. Sized for ~10 minutes on a 2-core CPU at the
defaults (three models, ``--limit 30`` items per task, the call form); the per-model wall time is
in results.json.

    python benchmarks/ceiling_pilot.py
    python benchmarks/ceiling_pilot.py --models qwen2.5-coder-0.5b --forms call,context --limit 60
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from toolformer_kit.config import ConfigError
from toolformer_kit.eval.config import default_data_dir
from toolformer_kit.measures.oracle import (DEFAULT_MODELS, DEFAULT_TASKS, available_tasks, decoder_generate_for,
                                           pilot_table, run_pilot)


def main(argv=None, generate_for=None, search=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS), help="comma-separated models (embedded names or folders)")
    ap.add_argument("--tasks", default=",".join(DEFAULT_TASKS), help="comma-separated tasks; missing files are skipped")
    ap.add_argument("--limit", type=int, default=30, help="retrievable items per task (0 = all)")
    ap.add_argument("--forms", default="call", help="oracle forms: call, context or both (call,context)")
    ap.add_argument("--data-dir", default=None, help="benchmark folder (default: ../shared/data/benchmarks)")
    ap.add_argument("--corpus", default=None, help="search corpus (default: WikiSearch's, the 10,033 summaries)")
    ap.add_argument("--out", default="runs/ceiling-pilot")
    ap.add_argument("--dtype", default="auto", help="auto, fp32 or bf16, as the evaluation's --dtype")
    ap.add_argument("--batch", type=int, default=32, help="prompts decoded together")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    if args.limit < 0:
        print(f"error: --limit must be 0 (all) or more, got {args.limit}", file=sys.stderr)
        return 2
    try:
        data_dir = Path(args.data_dir).expanduser() if args.data_dir else default_data_dir()
        tasks = available_tasks([t for t in args.tasks.split(",") if t], data_dir)
        if search is None:
            from toolformer_kit.measures.ceiling import bm25_search

            search = bm25_search(args.corpus)
        if generate_for is None:
            from toolformer_kit.lm.base import set_threads

            set_threads(args.threads)
            generate_for = decoder_generate_for(args.dtype, args.batch)
        forms = [f for f in args.forms.split(",") if f]
        models = [m for m in args.models.split(",") if m]
        result = run_pilot(models, tasks, data_dir, search, generate_for, args.out,
                           limit=args.limit or None, forms=forms, seed=args.seed)
    except (ConfigError, KeyError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(pilot_table(result["rows"], result["forms"]))
    print(f"\nitems per task: {result['items']}; seconds per model: {result['seconds']}; written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
