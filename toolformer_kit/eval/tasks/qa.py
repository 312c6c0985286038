"""Open-domain QA (WebQuestions, Natural Questions, TriviaQA) and MLQA; the QA tool is disabled.

Why QA is disabled here: the paper's QA tool is a model trained on Natural Questions, so letting
it answer these benchmarks would measure that model, not the LM. Correct means an answer (any
alias) occurs in the first 20 predicted words (10 for MLQA).

MLQA follows the paper's cross-lingual setting: an English context paragraph and a question in
another language, with the instruction to answer in English. Files are read in MLQA's published
SQuAD-style layout, ``mlqa/<split>/<split>-context-en-question-<lang>.json``.

>>> qa_prompt("who wrote hamlet")
'Answer the following question: who wrote hamlet\\nAnswer:'
"""

from __future__ import annotations

import ast
import csv
import json
from pathlib import Path
from typing import Iterator

from .base import Example, Task, ToolPolicy, register, require

MLQA_LANGUAGES = ("ar", "de", "es", "hi", "vi", "zh")


def qa_prompt(question: str) -> str:
    return f"Answer the following question: {question.strip()}\nAnswer:"


def _jsonl_qa(path: Path, prefix: str) -> list[Example]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(l for l in fh if l.strip()):
            row = json.loads(line)
            out.append(Example(f"{prefix}-{i}", qa_prompt(row["question"]), tuple(row["answer"])))
    return out


def load_webquestions(data_dir: Path) -> list[Example]:
    return _jsonl_qa(require(data_dir / "qa" / "webquestions.test.jsonl", "WebQuestions"), "webq")


def load_nq(data_dir: Path) -> list[Example]:
    return _jsonl_qa(require(data_dir / "qa" / "NQ-open.dev.jsonl", "NQ-open"), "nq")


def parse_aliases(field: str) -> tuple[str, ...]:
    """TriviaQA's answer column is a Python list literal of aliases.

    >>> parse_aliases("['Bacall', 'Lauren Bacall']")
    ('Bacall', 'Lauren Bacall')
    """
    value = ast.literal_eval(field)
    return tuple(str(v) for v in (value if isinstance(value, (list, tuple)) else [value]))


def load_triviaqa(data_dir: Path) -> list[Example]:
    path = require(data_dir / "qa" / "triviaqa.test.tsv", "TriviaQA")
    with open(path, newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.reader(fh, delimiter="\t") if r]
    return [Example(f"trivia-{i}", qa_prompt(q), parse_aliases(a)) for i, (q, a) in enumerate(rows)]


def mlqa_prompt(context: str, question: str) -> str:
    return (f"{context.strip()}\n\nUsing the text above, answer the question in English.\n"
            f"Question: {question.strip()}\nAnswer:")


def mlqa_path(data_dir: str | Path, lang: str, split: str = "test") -> Path:
    """One MLQA file: English contexts, questions in ``lang`` (``en``: the English questions)."""
    return Path(data_dir) / "mlqa" / split / f"{split}-context-en-question-{lang}.json"


def mlqa_rows(path: Path) -> Iterator[tuple[dict, str]]:
    """(question record, its context) of one MLQA (SQuAD v1.1-format) file, in file order: the one
    reader of the format, for the tasks and for the MT benchmarks."""
    data = json.loads(require(path, "MLQA file").read_text(encoding="utf-8"))
    for article in data["data"]:
        for para in article["paragraphs"]:
            for qa in para["qas"]:
                yield qa, para["context"]


def load_mlqa_file(path: Path) -> list[Example]:
    """Examples from one MLQA file."""
    return [Example(qa["id"], mlqa_prompt(context, qa["question"]),
                    tuple(dict.fromkeys(a["text"] for a in qa["answers"]))) for qa, context in mlqa_rows(path)]


def mlqa_loader(lang: str, split: str = "test"):
    def load(data_dir: Path) -> list[Example]:
        return load_mlqa_file(mlqa_path(data_dir, lang, split))

    return load


NO_QA = ToolPolicy(excluded=("QA",))
register(Task("webquestions", "WebQuestions test", load_webquestions, metric="first20", policy=NO_QA,
              max_new_tokens=40, exercises="WikiSearch"))
register(Task("nq", "Natural Questions (open) dev", load_nq, metric="first20", policy=NO_QA, max_new_tokens=40,
                  exercises="WikiSearch"))
register(Task("triviaqa", "TriviaQA (DPR test)", load_triviaqa, metric="first20", policy=NO_QA, max_new_tokens=40,
                  exercises="WikiSearch"))
for _lang in MLQA_LANGUAGES:
    register(Task(f"mlqa-{_lang}", f"MLQA, English context, {_lang} question", mlqa_loader(_lang),
                  metric="first10", max_new_tokens=24, exercises="MT"))
# The control (issue 42): the same questions in English, the paper's English-only upper bound for
# what translating the question can recover. Grouped with MT, which it has nothing to translate for.
register(Task("mlqa-en", "MLQA control, English context, the same questions in English", mlqa_loader("en"),
              metric="first10", max_new_tokens=24, exercises="MT"))
