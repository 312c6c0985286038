"""Calendar and MT ceilings (issue 47, item 1): closed-book against a perfect call, paired.

``calendar``: on DATESET (the paper's families) and DATESET-days, the reader answers each question
closed-book and with the Calendar's sentence for the example's date (``--forms call,context``: as a
call's result where the answer starts, or before the question); rows per template family, per
granularity and pooled (:mod:`toolformer_kit.measures.tool_ceiling`).

``mlqa``: on each MLQA language, the reader answers with the question as given (closed), with the
English question (``reference``) and with each candidate's translation (read from
``benchmarks/mt_translators.py``'s records) where the question stood.

Both decode and score with the evaluation's own settings (greedy, calls masked, the task's budget
and metric); differences are paired (Newcombe). A finished (task, model) file is reused.

    python benchmarks/tool_ceilings.py calendar --out results/ceilings/calendar
    python benchmarks/tool_ceilings.py mlqa --translations results/ceilings/mt --limit 50 --out results/ceilings/mlqa
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from toolformer_kit.config import ConfigError
from toolformer_kit.eval.config import default_data_dir
from toolformer_kit.eval.tasks import get_task, subset
from toolformer_kit.measures.oracle import answer_items, check_forms, decoder_generate_for, pilot_row, pilot_table
from toolformer_kit.measures.tool_ceiling import (LANGUAGES, REFERENCE, calendar_items, granularity, grouped_rows,
                                                  mlqa_columns, mlqa_questions, question_line, write_jsonl)
from toolformer_kit.files import finished_rows, read_jsonl, write_atomic

READER = "qwen2.5-coder-0.5b"


def run_calendar(args, generate_for, data_dir) -> dict:
    forms = check_forms([f for f in args.forms.split(",") if f])
    out, rows, generate, seconds = Path(args.out), [], None, {}
    for name in [t for t in args.tasks.split(",") if t]:
        task = get_task(name)
        items = calendar_items(task.load(data_dir), args.limit or None)
        path = out / args.model.replace("/", "_") / f"{name}.jsonl"
        recs = finished_rows(path, [i.example.id for i in items], forms)
        if recs is None:
            generate = generate or generate_for(args.model)
            t0 = time.perf_counter()
            recs = answer_items(task, items, generate, forms, args.seed)
            for r, item in zip(recs, items):
                r["template"], r["granularity"] = item.example.meta["template"], granularity(question_line(item.example.prompt))
            write_jsonl(path, recs)
            seconds[name] = round(time.perf_counter() - t0, 1)
        rows += grouped_rows(args.model, name, recs, forms, lambda r: r["template"])
        rows += [r for r in grouped_rows(args.model, name, recs, forms, lambda r: r["granularity"]) if not r.get("pooled")]
    return {"kind": "calendar", "model": args.model, "forms": forms, "limit": args.limit, "seed": args.seed,
            "oracle": "the Calendar's sentence for the example's date", "seconds": seconds, "rows": rows}


def run_mlqa(args, generate_for, data_dir) -> dict:
    cands = [c for c in args.candidates.split(",") if c]
    trans_dir = Path(args.translations)
    out, rows, generate, seconds = Path(args.out), [], None, {}
    refs = dict(mlqa_questions(data_dir, "en"))
    columns = [REFERENCE] + cands
    langs = [l for l in args.langs.split(",") if l]
    pooled: list[dict] = []
    for lang in langs:
        task = get_task(f"mlqa-{lang}")
        examples = subset(task.load(data_dir), args.limit or None)
        translations = {REFERENCE: {ex.id: refs.get(ex.id) for ex in examples}}
        for cand in cands:
            path = trans_dir / "translations" / cand.replace("/", "_") / f"{lang}.jsonl"
            if not path.is_file():
                raise ConfigError(f"no translations of {cand} for {lang} at {path}; run benchmarks/mt_translators.py first")
            translations[cand] = {r["id"]: r["result"] for r in read_jsonl(path)}
        path = out / args.model.replace("/", "_") / f"mlqa-{lang}.jsonl"
        recs = finished_rows(path, [ex.id for ex in examples], columns)
        if recs is None:
            generate = generate or generate_for(args.model)
            t0 = time.perf_counter()
            recs = mlqa_columns(task, examples, translations, generate, args.seed)
            write_jsonl(path, recs)
            seconds[lang] = round(time.perf_counter() - t0, 1)
        rows.append(pilot_row(args.model, task.name, recs, columns))
        pooled += recs
    rows.append({**pilot_row(args.model, "mlqa pooled", pooled, columns), "pooled": True})
    return {"kind": "mlqa", "model": args.model, "forms": columns, "limit": args.limit, "seed": args.seed,
            "oracle": "the question replaced by the English question (reference) or a candidate's translation",
            "seconds": seconds, "rows": rows}


def main(argv=None, generate_for=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=("calendar", "mlqa"))
    ap.add_argument("--model", default=READER, help="the reader (an embedded name or a trained folder)")
    ap.add_argument("--tasks", default="dateset,dateset-days", help="calendar: comma-separated tasks")
    ap.add_argument("--forms", default="call,context", help="calendar: oracle forms, call and/or context")
    ap.add_argument("--langs", default=",".join(LANGUAGES), help="mlqa: comma-separated languages")
    ap.add_argument("--candidates", default="qwen2.5-coder-0.5b,gemma3-270m", help="mlqa: translators to read")
    ap.add_argument("--translations", default="results/ceilings/mt", help="mlqa: mt_translators.py's --out")
    ap.add_argument("--limit", type=int, default=0, help="examples per task, in the evaluation's order (0 = all)")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--out", default=None, help="default: runs/ceilings/<kind>")
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    args.out = args.out or f"runs/ceilings/{args.kind}"
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    try:
        data_dir = Path(args.data_dir).expanduser() if args.data_dir else default_data_dir()
        if generate_for is None:
            from toolformer_kit.lm.base import set_threads

            set_threads(args.threads)
            generate_for = decoder_generate_for(args.dtype, args.batch)
        result = (run_calendar if args.kind == "calendar" else run_mlqa)(args, generate_for, data_dir)
    except (ConfigError, KeyError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table = pilot_table(result["rows"], result["forms"])
    write_atomic(out / "results.json", json.dumps(result, indent=1))
    write_atomic(out / "table.md", table + "\n")
    print(table)
    print(f"\nseconds: {result['seconds']}; written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
