"""DATESET (generated, Calendar says the example's date) and TempLAMA (published jsonl format).

TempLAMA's published file (``templama/test.json``, one JSON object a line) holds cloze queries
such as ``"Cristiano Ronaldo plays for _X_."`` with the year the fact holds in ``date`` and the
answers as ``[{"name": ...}]``. As for LAMA, a query is kept only when ``_X_`` ends it. The
Calendar's "today" for a TempLAMA example is 1 July of its year (the data gives only the year).

>>> templama_example({"query": "Ann works for _X_.", "answer": [{"name": "ACME"}], "date": "2019",
...                   "id": "q1"}).meta["today"]
'2019-07-01'
"""

from __future__ import annotations

import json
from pathlib import Path

from ..dateset import generate_dateset, generate_paper_dateset
from .base import Example, Task, ToolPolicy, register, require
from .lama import PROMPT as LAMA_PROMPT
from .lama import statement_prefix
from .qa import qa_prompt

DATESET_SIZE = 500
DATESET_SEED = 0


def _examples(questions) -> list[Example]:
    return [Example(q.id, qa_prompt(q.question), q.answers,
                    {"today": q.today.isoformat(), "template": q.template}) for q in questions]


def load_dateset(data_dir: Path, n: int = DATESET_SIZE, seed: int = DATESET_SEED) -> list[Example]:
    """DATESET as the paper built it (its template families); generated, so ``data_dir`` is ignored."""
    return _examples(generate_paper_dateset(n, seed))


def load_dateset_days(data_dir: Path, n: int = DATESET_SIZE, seed: int = DATESET_SEED) -> list[Example]:
    """Day arithmetic across up to four years (beyond the paper; ``dateset`` until December 2026)."""
    return _examples(generate_dateset(n, seed))


def templama_example(row: dict) -> Example | None:
    prefix = statement_prefix(row["query"].replace("_X_", "[MASK]"))
    if prefix is None:
        return None
    answers = tuple(dict.fromkeys(a["name"] for a in row["answer"]))
    year = int(str(row["date"])[:4])
    return Example(str(row.get("id", row["query"])), LAMA_PROMPT.format(statement=prefix), answers,
                   {"today": f"{year:04d}-07-01", "relation": row.get("relation", "")})


def load_templama(data_dir: Path) -> list[Example]:
    path = require(data_dir / "templama" / "test.json", "TempLAMA")
    with open(path, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [e for e in map(templama_example, rows) if e is not None]


CALENDAR_TODAY = ToolPolicy(calendar_from_example=True)
register(Task("dateset", "DATESET (the paper's template families, generated, 500 questions, seed 0)",
              load_dateset, metric="first5", policy=CALENDAR_TODAY, max_new_tokens=16, exercises="Calendar"))
register(Task("dateset-days", "DATESET-days (day arithmetic over four years, 500 questions, seed 0)",
              load_dateset_days, metric="first5", policy=CALENDAR_TODAY, max_new_tokens=16,
              exercises="Calendar"))
register(Task("templama", "TempLAMA, sentence-final masks", load_templama, metric="first5",
              policy=CALENDAR_TODAY, max_new_tokens=16, exercises="Calendar"))
