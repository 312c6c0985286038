"""The ceiling pilot (issue 28, item 1): could a model use a retrieved passage at all, if it called?

A search recipe can show an effect only if the model M, handed the right passage, answers better
than without it. This measures that bound before any annotation: for each model and each QA/LAMA
task, on the **retrievable** examples only — a gold answer occurs in the *top* BM25 passage for the
question itself (:func:`~.ceiling.retrievable` with one passage, stricter than the recipe's top-3
flag, because here that very passage is what the model is given) — it answers

* **closed-book**: the task's own prompt, as the evaluation's "disabled" column does;
* **oracle**: the same prompt with that passage in it, in one of two :data:`FORMS`:
  ``call`` — the passage as the result of a WikiSearch call written where the answer starts
  (``… Answer: [WikiSearch(question) -> passage]``): what a tool-trained model sees after a perfect
  call, so the gain a trained model could reach; ``context`` — the passage before the prompt, the
  plain reading-comprehension form, which an untrained model knows better.

Both are decoded with the evaluation's own settings for the task (greedy, calls masked, the task's
answer budget) and scored with its metric, so the closed-book column is comparable to the
recipe's. The oracle − closed-book difference is paired (same examples): Newcombe's interval.

The pieces are pure (:func:`pilot_items`, :func:`oracle_prompt`, :func:`pilot_rows`,
:func:`pilot_table`); :func:`run_pilot` takes any ``generate(prompts, config, tools)`` with the
decoder's result shape, so tests drive it with a fake and ``benchmarks/ceiling_pilot.py`` with the
real models.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..calls import ToolCall, format_call, strip_calls
from ..config import ConfigError
from ..eval.harness import GenerateFn, decode_config
from ..eval.metrics import newcombe_paired_diff, wilson_ci
from ..eval.setting import DISABLED
from ..eval.tasks import Example, Task, get_task, subset
from ..files import finished_rows, write_atomic
from .ceiling import question_of, retrievable
from .results import pct

log = logging.getLogger(__name__)

FORMS = ("call", "context")
CLOSED = "closed"
ORACLE_TOOL = "WikiSearch"
DEFAULT_MODELS = ("smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b")
DEFAULT_TASKS = ("lama-trex", "lama-google-re", "lama-squad", "webquestions", "nq", "triviaqa", "wiki-cloze")

Search = Callable[[str, int], Sequence[str]]


@dataclass(frozen=True)
class PilotItem:
    """A retrievable example and the top passage for its question (which holds a gold answer)."""

    example: Example
    question: str
    passage: str
    tool: str = ORACLE_TOOL  # the tool whose result ``passage`` is (Calendar and MT: tool_ceiling)


def decoder_generate_for(dtype: str, batch: int) -> Callable[[str], GenerateFn]:
    """``generate_for(model)``: the model loaded as the evaluation loads it, behind the real decoder
    (the ceiling benchmarks' one way to answer; tests pass a fake instead)."""

    def generate_for(model: str) -> GenerateFn:
        from ..eval.harness import decoder_generate
        from ..lm.base import load_lm

        return decoder_generate(load_lm(model, dtype=dtype), batch)

    return generate_for


def pilot_items(examples: Sequence[Example], search: Search, limit: int | None = None) -> list[PilotItem]:
    """The first ``limit`` retrievable examples, in the evaluation's fixed hash order (so a larger
    limit extends the same sample); the search runs only until ``limit`` are found.

    >>> docs = {"hamlet": "Hamlet is a tragedy by William Shakespeare."}
    >>> search = lambda q, k: [t for w, t in docs.items() if w in q][:k]
    >>> exs = [Example("1", "Answer the following question: who wrote hamlet\\nAnswer:", ("Shakespeare",)),
    ...        Example("2", "Answer the following question: who wrote ulysses\\nAnswer:", ("Joyce",))]
    >>> [(i.example.id, i.question) for i in pilot_items(exs, search)]
    [('1', 'who wrote hamlet')]
    """
    out: list[PilotItem] = []
    for ex in subset(examples, None):
        if limit is not None and len(out) >= limit:
            break
        question = question_of(ex.prompt)
        top = list(search(question, 1))[:1]
        if top and retrievable(ex.answers, top):
            out.append(PilotItem(ex, question, top[0]))
    return out


def oracle_prompt(item: PilotItem, form: str) -> str:
    """The task prompt with the item's passage in it (see :data:`FORMS`).

    >>> item = PilotItem(Example("1", "Answer the following question: who wrote hamlet\\nAnswer:", ("x",)),
    ...                  "who wrote hamlet", "Hamlet is a tragedy by William Shakespeare.")
    >>> print(oracle_prompt(item, "call"))
    Answer the following question: who wrote hamlet
    Answer: [WikiSearch(who wrote hamlet) -> Hamlet is a tragedy by William Shakespeare.]
    >>> print(oracle_prompt(item, "context"))
    Hamlet is a tragedy by William Shakespeare.
    <BLANKLINE>
    Answer the following question: who wrote hamlet
    Answer:
    """
    if form == "call":
        query = item.question.replace("(", " ").replace(")", " ")  # a call input keeps its parentheses balanced
        return item.example.prompt + format_call(ToolCall(item.tool, query, item.passage))
    if form == "context" and item.tool == "MT":  # the translation stands where the question stood
        line = f"Question: {item.question.strip()}\n"
        return item.example.prompt.replace(line, f"Question: {' '.join(item.passage.split())}\n", 1) \
            if item.passage else item.example.prompt
    if form == "context":
        return f"{' '.join(item.passage.split())}\n\n{item.example.prompt}"
    raise ConfigError(f"unknown oracle form {form!r}; use one of {', '.join(FORMS)}")


def check_forms(forms: Sequence[str]) -> list[str]:
    """The forms asked for, each known and named once; one error line otherwise.

    >>> check_forms(["call", "context"])
    ['call', 'context']
    >>> check_forms(["cal"])
    Traceback (most recent call last):
    ...
    toolformer_kit.config.ConfigError: unknown oracle form 'cal'; use one of call, context
    """
    for form in forms:
        if form not in FORMS:
            raise ConfigError(f"unknown oracle form {form!r}; use one of {', '.join(FORMS)}")
    if not forms or len(set(forms)) != len(forms):
        raise ConfigError(f"give each oracle form once (--forms), got {','.join(forms) or 'none'}")
    return list(forms)


# ---------------------------------------------------------------- answering
def answer_items(task: Task, items: Sequence[PilotItem], generate: GenerateFn, forms: Sequence[str],
                 seed: int = 0) -> list[dict]:
    """One record per item: the closed-book and each oracle form's prediction and whether it is right.
    Calls are masked in every column (the oracle's call is already written in the prompt)."""
    columns = {CLOSED: [i.example.prompt for i in items]}
    columns.update({form: [oracle_prompt(i, form) for i in items] for form in forms})
    records = answer_columns(task, [i.example for i in items], columns, generate, seed)
    for rec, item in zip(records, items):
        rec.update(question=item.question, passage=item.passage)
    return records


def answer_columns(task: Task, examples: Sequence[Example], columns: Mapping[str, Sequence[str]],
                   generate: GenerateFn, seed: int = 0) -> list[dict]:
    """One record per example, with each column's prediction for it (``columns``: name → one
    prompt per example) and whether it is right; the evaluation's decoding, calls masked."""
    config = decode_config(task, DISABLED, seed)
    predictions = {name: [strip_calls(r.text).strip() for r in generate(list(prompts), config, {})] if prompts else []
                   for name, prompts in columns.items()}
    records = []
    for j, ex in enumerate(examples):
        rec: dict[str, Any] = {"id": ex.id, "task": task.name, "answers": list(ex.answers)}
        for name in columns:
            pred = predictions[name][j]
            rec[name] = {"prediction": pred, "correct": bool(task.score(pred, ex))}
        records.append(rec)
    return records


# ---------------------------------------------------------------- numbers
def _acc(values: Sequence[bool]) -> dict:
    ci = wilson_ci(values)
    return {"n": len(values), "accuracy": sum(values) / len(values) if values else None,
            "ci95": list(ci) if ci else None}


def pilot_row(model: str, task: str, records: Sequence[Mapping], forms: Sequence[str]) -> dict:
    """n, closed-book and oracle accuracies (Wilson), oracle − closed-book (Newcombe, paired).

    >>> recs = [{"closed": {"correct": i < 2}, "call": {"correct": i < 6}} for i in range(10)]
    >>> r = pilot_row("m", "nq", recs, ["call"])
    >>> r["n"], r["closed"]["accuracy"], r["call"]["accuracy"], round(r["call"]["diff"], 2), r["call"]["diff_ci95"][0] > 0
    (10, 0.2, 0.6, 0.4, True)
    """
    closed = [bool(r[CLOSED]["correct"]) for r in records]
    row: dict[str, Any] = {"model": model, "task": task, "n": len(records), CLOSED: _acc(closed)}
    for form in forms:
        oracle = [bool(r[form]["correct"]) for r in records]
        d = newcombe_paired_diff(oracle, closed)
        row[form] = {**_acc(oracle), "diff": d[0] if d else None, "diff_ci95": list(d[1]) if d else None}
    return row


def pilot_rows(records: Mapping[tuple[str, str], Sequence[Mapping]], forms: Sequence[str]) -> list[dict]:
    """One row per (model, task) in the order given, then a ``pooled`` row per model (every task's
    items together: the number that bounds a pooled endpoint)."""
    rows, pooled = [], {}
    for (model, task), recs in records.items():
        rows.append(pilot_row(model, task, recs, forms))
        pooled.setdefault(model, []).extend(recs)
    for model, recs in pooled.items():
        rows.append({**pilot_row(model, "pooled", recs, forms), "pooled": True})
    return rows


def _cell(acc: Mapping) -> str:
    if acc.get("accuracy") is None:
        return "–"
    lo, hi = acc["ci95"]
    return f"{pct(acc['accuracy'])} [{pct(lo)}, {pct(hi)}]"


def _diff(acc: Mapping) -> str:
    if acc.get("diff") is None:
        return "–"
    lo, hi = acc["diff_ci95"]
    return f"{pct(acc['diff'], True)} [{pct(lo, True)}, {pct(hi, True)}]"


def pilot_table(rows: Sequence[Mapping], forms: Sequence[str]) -> str:
    """Markdown: model × task, n, closed-book %, each oracle form % and its difference, 95% intervals.

    >>> recs = [{"closed": {"correct": i < 1}, "call": {"correct": i < 3}} for i in range(4)]
    >>> print(pilot_table([pilot_row("m", "nq", recs, ["call"])], ["call"]))
    | model | task | n | closed-book % [95% CI] | oracle (call) % [95% CI] | oracle (call) − closed-book, paired [95% CI] |
    |---|---|---|---|---|---|
    | m | nq | 4 | 25.0 [4.6, 69.9] | 75.0 [30.1, 95.4] | +50.0 [-13.5, +78.9] |
    """
    head, cells = pilot_cells(rows, forms)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in cells]
    return "\n".join(lines)


def pilot_cells(rows: Sequence[Mapping], forms: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """(header, rows of cells) of the pilot's table, for markdown here and the report's blocks."""
    head = ["model", "task", "n", "closed-book % [95% CI]"]
    for form in forms:
        head += [f"oracle ({form}) % [95% CI]", f"oracle ({form}) − closed-book, paired [95% CI]"]
    out = []
    for r in rows:
        task = f"**{r['task']}**" if r.get("pooled") else r["task"]
        cells = [r["model"], task, str(r["n"]), _cell(r[CLOSED])]
        for form in forms:
            cells += [_cell(r[form]), _diff(r[form])]
        out.append(cells)
    return head, out


# ---------------------------------------------------------------- the run
def run_pilot(models: Sequence[str], tasks: Sequence[Task], data_dir: str | Path, search: Search,
              generate_for: Callable[[str], GenerateFn], out: str | Path, *, limit: int | None = 30,
              forms: Sequence[str] = ("call",), seed: int = 0) -> dict:
    """Answer every task's retrievable items with every model; write ``<out>/<model>/<task>.jsonl``
    (one record per item), ``results.json`` and ``table.md``; return the results.

    A finished (model, task) file with the same items and forms is reused, so a killed run resumes
    at the task it was on; ``generate_for(model)`` is called only for a model with work left.
    """
    forms = check_forms(list(forms))
    out = Path(out)
    items = {t.name: pilot_items(t.load(data_dir), search, limit) for t in tasks}
    for t in tasks:
        log.info("%s: %d retrievable items (limit %s)", t.name, len(items[t.name]), limit)
    records: dict[tuple[str, str], list[dict]] = {}
    seconds: dict[str, float] = {}
    for model in models:
        generate = None
        start = time.perf_counter()
        for task in tasks:
            path = out / model.replace("/", "_") / f"{task.name}.jsonl"
            want = [i.example.id for i in items[task.name]]
            old = finished_rows(path, want, forms)
            if old is not None:
                records[(model, task.name)] = old
                continue
            generate = generate or generate_for(model)
            recs = answer_items(task, items[task.name], generate, forms, seed)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs))
            records[(model, task.name)] = recs
        seconds[model] = round(time.perf_counter() - start, 1)
        log.info("%s: %.0f s", model, seconds[model])
    rows = pilot_rows(records, forms)
    result = {"models": list(models), "tasks": [t.name for t in tasks], "limit": limit, "forms": forms,
              "retrievable": "a gold answer in the top BM25 passage for the question", "seed": seed,
              "items": {name: len(v) for name, v in items.items()}, "seconds": seconds, "rows": rows}
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "results.json", json.dumps(result, indent=1))
    write_atomic(out / "table.md", pilot_table(rows, forms) + "\n")
    return result


def available_tasks(names: Iterable[str], data_dir: str | Path) -> list[Task]:
    """The named tasks whose files are in ``data_dir``, skipping (and logging) the others, so the
    default list runs on whatever a user has; no task at all is an error."""
    names, tasks = list(names), []
    for name in names:
        task = get_task(name)
        try:
            task.load(data_dir)
        except FileNotFoundError as exc:
            log.warning("skipping %s: %s", name, exc)
            continue
        tasks.append(task)
    if not tasks:
        raise ConfigError(f"none of the tasks {', '.join(names)} has its files under {data_dir}; "
                          "pass --data-dir pointing at shared/data/benchmarks")
    return tasks
