"""The QA tool's own accuracy (issue 28, item 3): right, wrong or abstained, where it can know and
where it cannot.

A tool-trained model gains from QA only if the tool's answers are mostly right when the index
holds the answer, and mostly silent when it does not (a wrong answer inserted into the text is
worse than none). So each question of a task is asked to the tool as it is (a QA question, or a
LAMA/cloze statement), split by the retrieval ceiling's rule (:mod:`.ceiling`: a gold answer in the
top 3 passages for the question) into

* **retrievable** — the passages say it: *right* (a gold answer occurs in the tool's answer, whole
  words, normalised as the metrics do), *wrong* (another answer) or *abstained* (no result);
* **not retrievable** — the passages do not say it, so abstaining is right and an answer is
  *wrong* unless it happens to hold the gold.

The goal (:data:`GOAL_RIGHT`, :data:`GOAL_WRONG`): ≥ 50 % right on the retrievable questions and
≤ 10 % wrong on the others, pooled over the tasks. The pieces are pure; :func:`run_qa_check`
takes any ``answer(question) -> str | None``, so tests drive it with a scripted reader and
``benchmarks/qa_tool_check.py`` with the real QA tool.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

from ..eval.metrics import contains_answer, wilson_ci
from ..eval.tasks import Task, subset
from ..files import write_atomic
from .ceiling import TOP, question_of, retrievable
from .results import pct

OUTCOMES = ("right", "wrong", "abstained")
SUBSETS = ("retrievable", "not retrievable")
GOAL_RIGHT = 0.5  # share right on retrievable questions, at least
GOAL_WRONG = 0.1  # share wrong where abstaining is right, at most

Answer = Callable[[str], Optional[str]]
Search = Callable[[str, int], Sequence[str]]


def outcome(answer: Optional[str], gold: Sequence[str]) -> str:
    """right, wrong or abstained.

    >>> outcome("William Shakespeare", ["Shakespeare"]), outcome("Marlowe", ["Shakespeare"]), outcome(None, ["x"])
    ('right', 'wrong', 'abstained')
    """
    if answer is None or not answer.strip():
        return "abstained"
    return "right" if contains_answer(answer, gold) else "wrong"


def split_questions(task: Task, data_dir: str | Path, search: Search, limit: int | None,
                    limit_other: int | None, offset: int = 0,
                    offset_other: int = 0) -> dict[str, list[tuple[str, str, tuple[str, ...]]]]:
    """(id, question, gold) per subset: ``limit`` retrievable and ``limit_other`` other examples in
    the evaluation's hash order, after skipping the first ``offset`` and ``offset_other`` of them.
    Why skip: tune the tool on the first ones and report on the next, never-seen ones (a
    held-out split that stays fixed as the limits grow)."""
    out: dict[str, list] = {s: [] for s in SUBSETS}
    skip = {"retrievable": offset, "not retrievable": offset_other}
    caps = {"retrievable": limit, "not retrievable": limit_other}
    for ex in subset(task.load(data_dir), None):
        if all(caps[s] is not None and len(out[s]) >= caps[s] for s in SUBSETS):
            break
        question = question_of(ex.prompt)
        where = SUBSETS[0] if retrievable(ex.answers, search(question, TOP)) else SUBSETS[1]
        if skip[where] > 0:
            skip[where] -= 1
        elif caps[where] is None or len(out[where]) < caps[where]:
            out[where].append((ex.id, question, ex.answers))
    return out


def ask_all(answerer, questions: Sequence[str]) -> list[dict]:
    """``{"answer": ..., ...}`` per question from ``answerer``: its ``trace_many`` (the answer and
    how it was reached), else its ``answer_many`` (one batched pass), else one call per question.

    >>> ask_all(str.upper, ["a", "b"])
    [{'answer': 'A'}, {'answer': 'B'}]
    """
    if hasattr(answerer, "trace_many"):
        return [dict(t) for t in answerer.trace_many(list(questions))]
    if hasattr(answerer, "answer_many"):
        return [{"answer": a} for a in answerer.answer_many(list(questions))]
    return [{"answer": answerer(q)} for q in questions]


def qa_rows(records: Sequence[Mapping]) -> list[dict]:
    """Per (task, subset), then pooled per subset: n and each outcome's share with its Wilson interval.

    >>> recs = [{"task": "nq", "subset": "retrievable", "outcome": o} for o in ["right"] * 3 + ["abstained"]]
    >>> r = qa_rows(recs)[0]
    >>> r["task"], r["n"], r["right"]["share"], r["wrong"]["share"], r["abstained"]["share"]
    ('nq', 4, 0.75, 0.0, 0.25)
    """
    groups: dict[tuple[str, str], list[str]] = {}
    for r in records:
        groups.setdefault((r["task"], r["subset"]), []).append(r["outcome"])
    for sub in SUBSETS:
        pooled = [r["outcome"] for r in records if r["subset"] == sub]
        if pooled:
            groups[("pooled", sub)] = pooled
    rows = []
    for (task, sub), outs in groups.items():
        row = {"task": task, "subset": sub, "n": len(outs)}
        for o in OUTCOMES:
            hits = [x == o for x in outs]
            ci = wilson_ci(hits)
            row[o] = {"count": sum(hits), "share": sum(hits) / len(hits), "ci95": list(ci)}
        rows.append(row)
    return rows


def qa_goal(rows: Sequence[Mapping]) -> dict:
    """Whether the pooled rows meet the goal (right ≥ 50 % where retrievable, wrong ≤ 10 % elsewhere).

    >>> rows = [{"task": "pooled", "subset": "retrievable", "right": {"share": 0.6}},
    ...         {"task": "pooled", "subset": "not retrievable", "wrong": {"share": 0.15}}]
    >>> qa_goal(rows)
    {'right': 0.6, 'wrong': 0.15, 'right_met': True, 'wrong_met': False, 'met': False}
    """
    pooled = {r["subset"]: r for r in rows if r["task"] == "pooled"}
    right = pooled.get("retrievable", {}).get("right", {}).get("share")
    wrong = pooled.get("not retrievable", {}).get("wrong", {}).get("share")
    right_met = right is not None and right >= GOAL_RIGHT
    wrong_met = wrong is not None and wrong <= GOAL_WRONG
    return {"right": right, "wrong": wrong, "right_met": right_met, "wrong_met": wrong_met,
            "met": right_met and wrong_met}


def qa_table(rows: Sequence[Mapping]) -> str:
    """Markdown: task, subset, n, right / wrong / abstained % with 95% Wilson intervals.

    >>> print(qa_table(qa_rows([{"task": "nq", "subset": "retrievable", "outcome": "right"}])).splitlines()[2])
    | nq | retrievable | 1 | 100.0 [20.7, 100.0] | 0.0 [0.0, 79.3] | 0.0 [0.0, 79.3] |
    """
    head, cells = qa_cells(rows)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in cells]
    return "\n".join(lines)


def qa_cells(rows: Sequence[Mapping]) -> tuple[list[str], list[list[str]]]:
    """(header, rows of cells) of :func:`qa_table`, for markdown here and the report's blocks."""
    head = ["task", "questions", "n", "right % [95% CI]", "wrong % [95% CI]", "abstained % [95% CI]"]
    out = []
    for r in rows:
        cells = [f"**{r['task']}**" if r["task"] == "pooled" else r["task"], r["subset"], str(r["n"])]
        for o in OUTCOMES:
            lo, hi = r[o]["ci95"]
            cells.append(f"{pct(r[o]['share'])} [{pct(lo)}, {pct(hi)}]")
        out.append(cells)
    return head, out


def run_qa_check(tasks: Sequence[Task], data_dir: str | Path, search: Search, answerers: Mapping[str, Answer],
                 out: str | Path, *, limit: int | None = 30, limit_other: int | None = 15, offset: int = 0,
                 offset_other: int = 0) -> dict:
    """Ask every chosen question to each answerer (e.g. one per retrieval; a plain
    ``answer(question)`` or an object with ``answer_many``/``trace_many``, see :func:`ask_all`), all
    questions in one batch; write ``<out>/<name>.jsonl`` (one record per question), ``results.json``
    and ``table.md``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    questions = {t.name: split_questions(t, data_dir, search, limit, limit_other, offset, offset_other) for t in tasks}
    items = [(task, sub, *item) for task, by_subset in questions.items() for sub, its in by_subset.items() for item in its]
    result: dict = {"tasks": [t.name for t in tasks], "limit": limit, "limit_other": limit_other, "offset": offset,
                    "offset_other": offset_other,
                    "retrievable": f"a gold answer in the top {TOP} BM25 passages for the question",
                    "goal": {"right_at_least": GOAL_RIGHT, "wrong_at_most": GOAL_WRONG}, "answerers": {}}
    tables = []
    for name, answerer in answerers.items():
        start = time.perf_counter()
        got = ask_all(answerer, [question for _, _, _, question, _ in items])
        seconds = time.perf_counter() - start
        records = [{"task": task, "subset": sub, "id": ex_id, "question": question, "answers": list(gold),
                    "answer": g.get("answer"), "outcome": outcome(g.get("answer"), gold),
                    **{k: v for k, v in g.items() if k != "answer"}}
                   for (task, sub, ex_id, question, gold), g in zip(items, got)]
        write_atomic(out / f"{name}.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
        rows = qa_rows(records)
        result["answerers"][name] = {"rows": rows, "goal": qa_goal(rows), "seconds": round(seconds, 1),
                                     "seconds_per_question": round(seconds / max(1, len(records)), 2)}
        tables.append(f"### {name}\n\n{qa_table(rows)}")
    write_atomic(out / "results.json", json.dumps(result, indent=1))
    write_atomic(out / "table.md", "\n\n".join(tables) + "\n")
    return result
