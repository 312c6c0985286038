"""Summaries, tables and plots from the harness's per-example records.

Everything here is recomputed from ``examples.jsonl`` files, so a report never disagrees with the
records it claims to describe, and a resumed or extended run simply re-reports.

* :func:`summarize_run` — accuracy with a Wilson 95% interval, the call rate, and accuracy on
  examples with a call (AC) and without (NC), as in the paper's Table 9;
* :func:`results_table` — one row per (model, setting, task);
* :func:`comparison_table` — tasks × runs, the shape of the paper's Tables 3–7;
* :func:`breakdown_table` — the Table 9 view (All / AC / NC / % calls per setting);
* :func:`plot_accuracy`, :func:`plot_breakdown` — the same as PNG bar charts (matplotlib).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path
from typing import Sequence

from ..plots import pyplot, save
from .metrics import mean, wilson_ci
from .records import RECORDS, read_records
from .tasks import TASKS

log = logging.getLogger(__name__)


def task_info(task: str) -> tuple[str, str, str]:
    """(tool exercised, description, note) of a registered task; blanks for one that is not.

    >>> task_info("svamp")[0], task_info("no-such-task")
    ('Calculator', ('', '', ''))
    """
    from .tasks import get_task  # dateset@SEED is no registered name, yet a task

    try:
        t = get_task(task)
    except Exception:
        return "", "", ""
    return t.exercises, t.description, t.note


def _acc(values: Sequence[bool], n_resamples: int, seed: int) -> dict:
    return {"n": len(values), "accuracy": mean(values), "ci95": wilson_ci(values)}


def summarize_run(records: Sequence[dict], model: str, setting: str, task: str,
                  n_resamples: int = 1000, seed: int = 0) -> dict:
    """One run's numbers.

    >>> recs = [{"correct": c, "called": k, "tool": "Calculator" if k else None, "seconds": 1.0}
    ...         for c, k in [(1, 1), (1, 1), (0, 1), (1, 0)]]
    >>> s = summarize_run(recs, "m", "k10", "svamp")
    >>> s["accuracy"], s["call_rate"], s["ac"]["n"], s["nc"]["accuracy"], s["tools"], s["exercises"]
    (0.75, 0.75, 3, 1.0, {'Calculator': 3}, 'Calculator')
    """
    correct = [bool(r["correct"]) for r in records]
    called = [bool(r["called"]) for r in records]
    base = _acc(correct, n_resamples, seed)
    return {
        "model": model, "setting": setting, "task": task, "exercises": task_info(task)[0], "kind": "generate",
        **base,
        "call_rate": mean(called) or 0.0,
        "call_ok_rate": mean([bool(r.get("call_ok")) for r in records if r["called"]]),
        "ac": _acc([c for c, k in zip(correct, called) if k], n_resamples, seed),
        "nc": _acc([c for c, k in zip(correct, called) if not k], n_resamples, seed),
        "tools": dict(Counter(r["tool"] for r in records if r["called"] and r.get("tool"))),
        "seconds_per_example": mean([r.get("seconds", 0.0) for r in records]),
    }


def collect(out: str | Path, n_resamples: int = 1000, seed: int = 0) -> list[dict]:
    """Summaries of every run under ``out`` (generation records and perplexity results)."""
    out = Path(out)
    summaries = []
    for path in sorted(out.glob(f"*/*/*/{RECORDS}")):
        task, setting, model = path.parent.name, path.parent.parent.name, path.parent.parent.parent.name
        records = read_records(path)
        if records:
            summaries.append(summarize_run(records, model, setting, task, n_resamples, seed))
    for path in sorted(out.glob("*/perplexity/*.json")):
        summaries.append(json.loads(path.read_text()))
    return summaries


def pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def with_ci(acc: dict) -> str:
    """``12.0 [6.0, 20.0]`` (percentages), or ``–`` for an empty subset.

    >>> with_ci({"accuracy": 0.12, "ci95": (0.06, 0.2)}), with_ci({"accuracy": None, "ci95": None})
    ('12.0 [6.0, 20.0]', '–')
    """
    if acc["accuracy"] is None:
        return "–"
    lo, hi = acc["ci95"]
    return f"{pct(acc['accuracy'])} [{pct(lo)}, {pct(hi)}]"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def results_table(summaries: Sequence[dict]) -> str:
    """Every generation run: accuracy with interval, call rate, AC and NC."""
    rows = [(s["model"], s["setting"], s["task"], _exercises(s), s["n"], with_ci(s), pct(s["call_rate"]),
             f"{with_ci(s['ac'])} (n={s['ac']['n']})", f"{with_ci(s['nc'])} (n={s['nc']['n']})")
            for s in summaries if s.get("kind") == "generate"]
    header = ("model", "setting", "task", "exercises", "n", "accuracy % [95% CI]", "calls %", "AC %", "NC %")
    return _table(header, rows)


def _exercises(s: dict) -> str:
    """The tool a summary's task exercises; summaries written before the field are looked up."""
    return s.get("exercises") or task_info(s["task"])[0] or "–"


def tasks_table(summaries: Sequence[dict]) -> str:
    """What each reported task is and which tool it exercises, with the choices behind it
    (e.g. the T-REx form), so a reader needs no other document to read the numbers."""
    tasks = list(dict.fromkeys(s["task"] for s in summaries))
    rows = [(t, _exercises({"task": t}), " ".join(x for x in task_info(t)[1:] if x) or "–") for t in tasks]
    return _table(("task", "exercises", "what it is"), rows)


def perplexity_table(summaries: Sequence[dict]) -> str:
    rows = [(s["model"], s["task"], s["n_docs"], s["n_tokens"],
             f"{s['perplexity']:.2f} [{s['ci95'][0]:.2f}, {s['ci95'][1]:.2f}]")
            for s in summaries if s.get("kind") == "perplexity"]
    return _table(("model", "text", "documents", "tokens", "perplexity [95% CI]"), rows) if rows else ""


def run_label(s: dict) -> str:
    """A run's column name; perplexity (always calls disabled) shares the model's disabled column."""
    return f"{s['model']} ({s['setting']})"


def comparison_table(summaries: Sequence[dict]) -> str:
    """Tasks × runs; each cell is accuracy % [95% CI] (perplexity rows for LM texts).

    >>> s = [{"kind": "generate", "model": "a", "setting": "k10", "task": "svamp", "accuracy": 0.5,
    ...       "ci95": (0.4, 0.6)}]
    >>> print(comparison_table(s), end="")
    | task | exercises | a (k10) |
    |---|---|---|
    | svamp | Calculator | 50.0 [40.0, 60.0] |
    """
    runs = list(dict.fromkeys(run_label(s) for s in summaries))
    tasks = list(dict.fromkeys(s["task"] for s in summaries))
    cell = {(s["task"], run_label(s)): s for s in summaries}

    def show(s: dict | None) -> str:
        if s is None:
            return ""
        if s.get("kind") == "perplexity":
            return f"ppl {s['perplexity']:.2f}"
        return with_ci(s)

    rows = [(t, _exercises({"task": t}), *(show(cell.get((t, r))) for r in runs)) for t in tasks]
    return _table(("task", "exercises", *runs), rows)


def breakdown_table(summaries: Sequence[dict]) -> str:
    """The paper's Table 9: per task and setting, All / AC / NC accuracy and % of examples with a call."""
    rows = [(s["task"], _exercises(s), s["model"], s["setting"], with_ci(s), with_ci(s["ac"]), with_ci(s["nc"]),
             pct(s["call_rate"])) for s in summaries if s.get("kind") == "generate"]
    return _table(("task", "exercises", "model", "setting", "All", "AC", "NC", "calls %"), rows)


def write_report(out: str | Path, n_resamples: int = 1000, seed: int = 0, plots: bool = True) -> list[dict]:
    """``summary.json``, ``table.md`` and (if matplotlib is there) PNG plots for everything under ``out``."""
    out = Path(out)
    summaries = collect(out, n_resamples, seed)
    (out / "summary.json").write_text(json.dumps(summaries, indent=2))
    parts = ["# Results\n", "Accuracy in %, with Wilson 95% intervals. "
             "AC: examples where the model made a call; NC: the rest.\n",
             "## Comparison\n", comparison_table(summaries), "\n## All runs\n", results_table(summaries),
             "\n## Tasks\n", "The tool each task exercises (the paper groups its results so) and how it "
             "is built.\n", tasks_table(summaries)]
    if any(s.get("kind") == "perplexity" for s in summaries):
        parts += ["\n## Perplexity (calls disabled)\n", perplexity_table(summaries)]
    (out / "table.md").write_text("\n".join(parts))
    if plots and any(s.get("kind") == "generate" for s in summaries):
        plot_accuracy(summaries, out / "accuracy.png")
        plot_breakdown(summaries, out / "breakdown.png")
    return summaries


def _bars(ax, groups: list[str], series: dict[str, list[tuple[float | None, tuple | None]]]) -> None:
    """Grouped bars with 95% error bars; a missing value is drawn as nothing."""
    width = 0.8 / max(len(series), 1)
    for j, (name, values) in enumerate(series.items()):
        xs, ys, errs = [], [], [[], []]
        for i, (acc, ci) in enumerate(values):
            if acc is None:
                continue
            xs.append(i + (j - (len(series) - 1) / 2) * width)
            ys.append(100 * acc)
            lo, hi = ci or (acc, acc)
            errs[0].append(max(0.0, 100 * (acc - lo)))
            errs[1].append(max(0.0, 100 * (hi - acc)))
        ax.bar(xs, ys, width, yerr=errs, capsize=2, label=name)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=30, ha="right")
    ax.set_ylabel("accuracy (%)")
    ax.legend(fontsize="small")


def plot_accuracy(summaries: Sequence[dict], path: str | Path) -> Path | None:
    """Accuracy per task (groups) and run (bars), with 95% intervals."""
    plt = pyplot()
    if plt is None:
        return None
    gen = [s for s in summaries if s.get("kind") == "generate"]
    tasks = list(dict.fromkeys(s["task"] for s in gen))
    runs = list(dict.fromkeys(run_label(s) for s in gen))
    cell = {(s["task"], run_label(s)): s for s in gen}
    series = {r: [(cell[t, r]["accuracy"], cell[t, r]["ci95"]) if (t, r) in cell else (None, None)
                  for t in tasks] for r in runs}
    fig, ax = plt.subplots(figsize=(max(6, 1.5 * len(tasks) + 2), 4))
    _bars(ax, tasks, series)
    ax.set_title("Zero-shot accuracy")
    return save(fig, path, dpi=120)


def plot_breakdown(summaries: Sequence[dict], path: str | Path) -> Path | None:
    """Table 9 as bars: All / AC / NC per (task, run), with the call rate in the group label."""
    plt = pyplot()
    if plt is None:
        return None
    gen = [s for s in summaries if s.get("kind") == "generate"]
    gen = sorted([s for s in gen if s["setting"] != "disabled"] or gen, key=lambda s: s["task"])  # AC needs calls
    groups = [f"{s['task']}\n{run_label(s)}\ncalls {pct(s['call_rate'])}%" for s in gen]
    series = {"All": [(s["accuracy"], s["ci95"]) for s in gen],
              "AC (with call)": [(s["ac"]["accuracy"], s["ac"]["ci95"]) for s in gen],
              "NC (no call)": [(s["nc"]["accuracy"], s["nc"]["ci95"]) for s in gen]}
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(gen) + 2), 4.5))
    _bars(ax, groups, series)
    ax.set_title("Accuracy with and without a call (Table 9 breakdown)")
    return save(fig, path, dpi=120)
