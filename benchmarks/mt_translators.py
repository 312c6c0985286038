"""MT candidates (issue 47, item 3): every packaged translator on every MLQA question, chrF against English.

Each candidate (an embedded model behind the MT tool's worked-example prompt) translates the dev
questions of every non-English MLQA language through the MT tool's own screening and vetting
(:func:`toolformer_kit.tools.mt.translate_all`), so "no result" and "worked example written /
returned" are what the tool does. Scored by corpus chrF (sacrebleu) against the English question
with the same id; a 95 % bootstrap interval over questions.

Writes ``<out>/translations/<candidate>/<lang>.jsonl`` (one record per question; a finished file
is reused, so a killed run resumes), ``<out>/translators.json`` and ``<out>/translators.md``.

    python benchmarks/mt_translators.py --out results/ceilings/mt
    python benchmarks/mt_translators.py --candidates gemma3-270m --langs hi --limit 40
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
from toolformer_kit.measures.tool_ceiling import (LANGUAGES, mlqa_questions, translate_questions, translator_rows,
                                                  translator_table, write_jsonl)
from toolformer_kit.files import finished_rows, read_jsonl, write_atomic

DEFAULT_CANDIDATES = ("qwen2.5-coder-0.5b", "gemma3-270m", "smollm2-135m")


def run(candidates, langs, data_dir, out: Path, limit, batch, translator_for, resamples=300) -> dict:
    refs = dict(mlqa_questions(data_dir, "en"))
    records, seconds = {}, {}
    for cand in candidates:
        translator, start = None, time.perf_counter()
        for lang in langs:
            questions = mlqa_questions(data_dir, lang)[: limit or None]
            path = out / "translations" / cand.replace("/", "_") / f"{lang}.jsonl"
            old = finished_rows(path, [q for q, _ in questions])
            if old is not None:
                records[(cand, lang)] = old
                continue
            translator = translator or translator_for(cand)
            t0 = time.perf_counter()
            recs = translate_questions(questions, lang, translator, refs, batch)
            write_jsonl(path, recs)
            records[(cand, lang)] = recs
            logging.info("%s %s: %d questions in %.0f s", cand, lang, len(recs), time.perf_counter() - t0)
        seconds[cand] = round(time.perf_counter() - start, 1)
    rows = translator_rows(records, resamples)
    result = {"candidates": list(candidates), "languages": list(langs), "limit": limit, "batch": batch,
              "metric": "corpus chrF (sacrebleu CHRF defaults) against the English question of the same id",
              "seconds": seconds, "rows": rows}
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "translators.json", json.dumps(result, indent=1))
    write_atomic(out / "translators.md", translator_table(rows) + "\n")
    return result


def real_translator_for(model: str):
    from toolformer_kit.tools.mt import LMTranslator

    return LMTranslator(model)


def main(argv=None, translator_for=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--candidates", default=",".join(DEFAULT_CANDIDATES), help="comma-separated embedded models")
    ap.add_argument("--langs", default=",".join(LANGUAGES), help="comma-separated MLQA languages")
    ap.add_argument("--limit", type=int, default=0, help="questions per language, in file order (0 = all 353)")
    ap.add_argument("--batch", type=int, default=16, help="questions translated together")
    ap.add_argument("--resamples", type=int, default=300, help="bootstrap resamples for chrF's interval")
    ap.add_argument("--data-dir", default=None, help="benchmark folder (default: ../shared/data/benchmarks)")
    ap.add_argument("--out", default="runs/mt-translators")
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    try:
        data_dir = Path(args.data_dir).expanduser() if args.data_dir else default_data_dir()
        langs = [l for l in args.langs.split(",") if l]
        unknown = [l for l in langs if l not in LANGUAGES]
        if unknown:
            raise ConfigError(f"unknown MLQA language(s) {', '.join(unknown)}; use some of {', '.join(LANGUAGES)}")
        if translator_for is None:
            from toolformer_kit.lm.base import set_threads

            set_threads(args.threads)
            translator_for = real_translator_for
        result = run([c for c in args.candidates.split(",") if c], langs, data_dir, Path(args.out),
                     args.limit, args.batch, translator_for, args.resamples)
    except (ConfigError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(translator_table(result["rows"]))
    print(f"\nseconds per candidate: {result['seconds']}; written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
