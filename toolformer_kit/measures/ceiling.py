"""The retrieval ceiling: on how many questions could WikiSearch have found the answer at all?

The index holds 10,033 Wikipedia lead summaries, so most benchmark answers are in none of them,
and a perfectly trained search user still cannot answer those. An example is **retrievable**
when a gold answer appears (whole words, normalised as the metric does) in one of the top 3
passages that the project's own BM25 index returns for the *question itself*: the query a
model would most plausibly write. Accuracies on the retrievable subset, beside the full-set
ones, separate "the model does not use search well" from "search had nothing to give".

Top 3 passages, not the tool's 1-snippet result: the ceiling is an upper bound on what any
query could bring, so it is deliberately generous.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from ..eval.metrics import contains_answer
from ..files import write_atomic
from ..tools.wikisearch import BM25Index, default_index

TOP = 3
_QA_HEAD = "Answer the following question:"


def question_of(prompt: str) -> str:
    """The question (or LAMA statement) inside a task prompt, without the instruction around it.

    >>> question_of("Answer the following question: who wrote hamlet\\nAnswer:")
    'who wrote hamlet'
    >>> question_of("Finish the sentence with the correct fact.\\nAllan Peiper was born in")
    'Allan Peiper was born in'
    """
    text = prompt.strip()
    if text.startswith(_QA_HEAD):
        text = text[len(_QA_HEAD):]
    if text.endswith("Answer:"):
        text = text[: -len("Answer:")]
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if len(lines) > 1 and lines[0].startswith("Finish the sentence"):
        lines = lines[1:]
    return " ".join(ln.strip() for ln in lines)


def retrievable(answers: Iterable[str], passages: Sequence[str]) -> bool:
    """Whether some gold answer occurs in some passage.

    >>> retrievable(["Lauren Bacall"], ["Humphrey Bogart married Lauren Bacall in 1945.", "x"])
    True
    >>> retrievable(["York"], ["Yorkshire is a county."])
    False
    """
    answers = list(answers)
    return any(contains_answer(p, answers) for p in passages)


def ceiling_flags(examples: Iterable, search: Callable[[str, int], Sequence[str]], top: int = TOP) -> dict[str, bool]:
    """example id → retrievable; ``search(query, k)`` returns passage texts, best first.

    >>> from toolformer_kit.eval.tasks import Example
    >>> docs = {"hamlet": ["Hamlet is a tragedy by William Shakespeare."]}
    >>> search = lambda q, k: [t for w, ts in docs.items() if w in q for t in ts][:k]
    >>> ceiling_flags([Example("1", "Answer the following question: who wrote hamlet\\nAnswer:", ("Shakespeare",)),
    ...                Example("2", "Answer the following question: who wrote ulysses\\nAnswer:", ("Joyce",))], search)
    {'1': True, '2': False}
    """
    return {ex.id: retrievable(ex.answers, search(question_of(ex.prompt), top)) for ex in examples}


def bm25_search(corpus: str | None = None) -> Callable[[str, int], list[str]]:
    """The project's WikiSearch index (the one the tool reads) as ``search(query, k)``."""

    index = BM25Index(corpus) if corpus else default_index()
    return lambda query, k: [h.text for h in index.search(query, k)]


def write_flags(path: Path, flags: Mapping[str, bool]) -> None:
    write_atomic(path, "".join(json.dumps({"id": i, "retrievable": v}) + "\n" for i, v in flags.items()))


def read_flags(path: Path) -> dict[str, bool]:
    if not path.is_file():
        return {}
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {r["id"]: bool(r["retrievable"]) for r in rows}
