"""Ceilings of the Calendar and MT (issue 47, items 1 and 3): what a perfect call could give.

The WikiSearch ceiling (:mod:`.oracle`) asks whether a model, handed the right passage, answers
better. The same question for the other two tools the evaluation measures:

* **Calendar** on DATESET (and ``dateset-days``): closed-book against the Calendar's own sentence
  for the example's date ("Today is Monday, November 30, 2026."), written as a call's result where
  the answer starts (``call``) or before the question (``context``); per template family and per
  granularity (:func:`granularity`), since a family that no model can answer even with the date
  bounds what any Calendar-trained model can gain on it.
* **MT** on MLQA: first each candidate translator translates every question of every language
  (:func:`translate_questions`), scored by chrF against the English question of the same id
  (:func:`translator_rows`); then a reader answers with each candidate's translation where the
  question stood (:func:`mlqa_columns`), against the question as given (closed) and the English
  question itself (``reference``, the upper bound of any translator).

Pure pieces take records and return rows; the runs take a ``generate`` or a translator, so tests
drive them with fakes and ``benchmarks/tool_ceilings.py`` / ``benchmarks/mt_translators.py`` with
the real models.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections import Counter
from pathlib import Path
from typing import Callable, Mapping, Sequence

from ..eval.harness import GenerateFn
from ..eval.tasks import Example, Task, subset
from ..eval.tasks.qa import MLQA_LANGUAGES
from ..files import write_atomic
from ..tools.calendar import calendar_text
from ..tools.mt import Translator, is_worked_example, translate_all
from .oracle import CLOSED, PilotItem, pilot_row

REFERENCE = "reference"  # the English question of the same id: what a perfect translator gives


# ---------------------------------------------------------------- Calendar
def granularity(question: str) -> str:
    """What a DATESET question asks for, read off its wording.

    >>> granularity("What day of the week was it yesterday?"), granularity("How many days ago was May 1, 2020?")
    ('weekday', 'days')
    >>> granularity("What day of the month will it be in 3 days?"), granularity("What year was it 40 days ago?")
    ('day of month', 'year')
    """
    q = question.lower()
    if "how many days" in q:
        return "days"
    if "day of the week" in q:
        return "weekday"
    if "day of the month" in q:
        return "day of month"
    if "month" in q:
        return "month"
    if "year" in q:
        return "year"
    if "what date" in q or "which date" in q:
        return "date"
    return "other"


def calendar_items(examples: Sequence[Example], limit: int | None = None) -> list[PilotItem]:
    """The first ``limit`` examples in the evaluation's order, each with the Calendar's sentence
    for its own date as the oracle result (the Calendar takes no input)."""
    out = []
    for ex in subset(examples, limit):
        today = dt.date.fromisoformat(ex.meta["today"])
        out.append(PilotItem(ex, "", calendar_text(today), tool="Calendar"))
    return out


def question_line(prompt: str) -> str:
    """The question of a QA-style prompt (its ``Question:`` line).

    >>> question_line("Answer the following question: x?\\nQuestion: What day is it?\\nAnswer:")
    'What day is it?'
    """
    lines = [ln for ln in prompt.splitlines() if ln.startswith("Question:")]
    return lines[-1][len("Question:"):].strip() if lines else prompt.strip()


def grouped_rows(model: str, task: str, records: Sequence[Mapping], forms: Sequence[str],
                 key: Callable[[Mapping], str]) -> list[dict]:
    """One :func:`~.oracle.pilot_row` per group (``key(record)``, in order of first appearance),
    with its share of the records, then the whole task as a pooled row."""
    groups: dict[str, list[Mapping]] = {}
    for r in records:
        groups.setdefault(key(r), []).append(r)
    rows = [{**pilot_row(model, f"{task} · {name}", recs, forms), "share": len(recs) / len(records)}
            for name, recs in groups.items()]
    return rows + [{**pilot_row(model, task, records, forms), "pooled": True, "share": 1.0}]


# ---------------------------------------------------------------- MT: translating the questions
def mlqa_questions(data_dir: str | Path, lang: str) -> list[tuple[str, str]]:
    """(id, question) of one MLQA file, in file order; ``lang`` ``en`` gives the references."""
    from ..eval.tasks.qa import mlqa_path, mlqa_rows

    return [(qa["id"], qa["question"].strip()) for qa, _ in mlqa_rows(mlqa_path(data_dir, lang))]


def translate_questions(questions: Sequence[tuple[str, str]], lang: str, translator: Translator,
                        references: Mapping[str, str], batch: int = 16) -> list[dict]:
    """One record per question: the MT tool's screening, the translator's raw line, the result the
    tool returns (None where it returns none, with ``why``), and the English reference."""
    rows = translate_all([q for _, q in questions], translator, batch)
    return [{"id": qid, "given_lang": lang, "reference": references.get(qid, ""), **row}
            for (qid, _), row in zip(questions, rows)]


def chrf(hyps: Sequence[str], refs: Sequence[str]) -> float:
    """Corpus chrF (sacrebleu's defaults: character 6-grams, β = 2), 0–100; no result counts as ""."""
    from sacrebleu.metrics import CHRF  # lazy: only the MT benchmark needs it

    return CHRF().corpus_score(list(hyps), [list(refs)]).score


def chrf_interval(hyps: Sequence[str], refs: Sequence[str], resamples: int = 300, seed: int = 0) -> list[float]:
    """A 95 % bootstrap interval of :func:`chrf` over the questions (percentile, seeded)."""
    rng = random.Random(seed)
    n = len(hyps)
    scores = []
    for _ in range(resamples):
        idx = [rng.randrange(n) for _ in range(n)]
        scores.append(chrf([hyps[i] for i in idx], [refs[i] for i in idx]))
    scores.sort()
    return [scores[int(0.025 * resamples)], scores[min(resamples - 1, int(0.975 * resamples))]]


def translator_row(candidate: str, lang: str, records: Sequence[Mapping], resamples: int = 300) -> dict:
    """chrF with its interval, and what the tool did: results returned, none by reason, worked
    examples the translator wrote (``raw``) and the tool returned (``returned``: must be 0)."""
    hyps = [r["result"] or "" for r in records]
    refs = [r["reference"] for r in records]
    results = [r["result"] for r in records if r["result"]]
    return {"candidate": candidate, "lang": lang, "n": len(records),
            "chrf": chrf(hyps, refs) if records else None,
            "chrf_ci95": chrf_interval(hyps, refs, resamples) if len(records) > 1 else None,
            "returned": len(results), "distinct": len(set(results)),
            "no_result": dict(Counter(r["why"] for r in records if not r["result"])),
            "examples_raw": sum(is_worked_example(r["raw"]) for r in records),
            "examples_returned": sum(is_worked_example(r["result"]) for r in records)}


def translator_rows(records: Mapping[tuple[str, str], Sequence[Mapping]], resamples: int = 300) -> list[dict]:
    """One row per (candidate, language), then a pooled row per candidate (every language)."""
    rows, pooled = [], {}
    for (cand, lang), recs in records.items():
        rows.append(translator_row(cand, lang, recs, resamples))
        pooled.setdefault(cand, []).extend(recs)
    rows += [{**translator_row(c, "pooled", recs, resamples), "pooled": True} for c, recs in pooled.items()]
    return rows


def translator_table(rows: Sequence[Mapping]) -> str:
    """Markdown: candidate × language, chrF [95 %], results, distinct, worked examples raw/returned."""
    lines = ["| translator | language | n | chrF [95% CI] | results | distinct | worked example written / returned | no result (why) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lo, hi = r["chrf_ci95"] or (None, None)
        ci = f"{r['chrf']:.1f} [{lo:.1f}, {hi:.1f}]" if lo is not None else f"{r['chrf']:.1f}"
        why = ", ".join(f"{k} {v}" for k, v in sorted(r["no_result"].items())) or "–"
        lang = f"**{r['lang']}**" if r.get("pooled") else r["lang"]
        lines.append(f"| {r['candidate']} | {lang} | {r['n']} | {ci} | {r['returned']} | {r['distinct']} | "
                     f"{r['examples_raw']} / {r['examples_returned']} | {why} |")
    return "\n".join(lines)


# ---------------------------------------------------------------- MT: answering with the translations
def mlqa_columns(task: Task, examples: Sequence[Example], translations: Mapping[str, Mapping[str, str | None]],
                 generate: GenerateFn, seed: int = 0) -> list[dict]:
    """One record per example: the closed-book answer (the question as given) and one answer per
    translation set in ``translations`` (name → id → English or None), each written where the
    question stood (the ``context`` form of :func:`~.oracle.oracle_prompt`; None keeps the
    question, as a call with no result would)."""
    from .oracle import answer_columns, oracle_prompt

    columns = {CLOSED: [ex.prompt for ex in examples]}
    for name, by_id in translations.items():
        columns[name] = [oracle_prompt(PilotItem(ex, question_line(ex.prompt), by_id.get(ex.id) or "", tool="MT"),
                                       "context") for ex in examples]
    return answer_columns(task, examples, columns, generate, seed)


def write_jsonl(path: Path, rows: Sequence[Mapping]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


LANGUAGES = MLQA_LANGUAGES
