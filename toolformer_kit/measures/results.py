"""The evidence a reader sees without running anything: ``results/NAME/`` (report.md, results.json,
small PNG plots; never weights).

The report opens with its **verdict**: per task, the tool-trained model with tools vs the same
model with calls disabled, each with a 95 % Wilson interval, and the paired difference with
its own interval (the two settings answer the same examples: Newcombe's paired interval,
:func:`~toolformer_kit.eval.metrics.newcombe_paired_diff`, which keeps its width at 0 or 100 %
and when no pair is discordant, where a bootstrap collapses to a point). Settings and details come
after. Every number here is recomputed from the per-example records, so the report cannot
disagree with them.
"""

from __future__ import annotations

import logging
import os
import platform
import subprocess
from pathlib import Path
from typing import Mapping, Sequence

from ..eval.probe import WELL_FORMED
from ..eval.verdict import (LABEL, accuracy, diff_ci, headline_rows, headline_table, load_records, paired,  # noqa: F401
                            pct, pooled_row, tools_setting, verdict_blocks, with_ci)
from ..lm.base import matmul_gflops
from .funnel import funnel, weakest_step

log = logging.getLogger(__name__)

# The paired verdict's numbers and table are :mod:`toolformer_kit.eval.verdict`'s (imported above,
# for the report writers here); this module adds the goals, endpoints, funnels and the machine.
COLUMNS = (("base", "disabled", "base"), ("cc", "disabled", "+CC"), (LABEL, "disabled", "tool-trained, disabled"))


# ---------------------------------------------------------------- pure numbers


def goal_check(rows: Sequence[Mapping], gain: float, subset: str = "all", call_rate: float = 0.0) -> dict:
    """Whether some task meets the goal: tools ≥ ``gain`` points over disabled, the paired interval
    above 0, and calls on at least ``call_rate`` of the inputs; plus the best task either way.

    >>> rows = [{"task": "svamp", "all": {"diff": 0.25, "diff_ci95": [0.1, 0.4], "call_rate": 0.9}},
    ...         {"task": "asdiv", "all": {"diff": 0.05, "diff_ci95": [-0.02, 0.1], "call_rate": 0.9}}]
    >>> goal_check(rows, 20, call_rate=0.8)["met_on"], goal_check(rows, 30)["met_on"], goal_check(rows, 30)["best"]
    (['svamp'], [], 'svamp')
    """
    met, best, best_diff = [], None, float("-inf")
    for row in rows:
        if row.get("pooled"):  # the goal is per task; the pooled row is reported beside
            continue
        p = row.get(subset)
        if not p or p.get("diff") is None:
            continue
        if p["diff"] > best_diff:
            best, best_diff = row["task"], p["diff"]
        if 100 * p["diff"] >= gain and p["diff_ci95"][0] > 0 and (p.get("call_rate") or 0) >= call_rate:
            met.append(row["task"])
    return {"gain_points": gain, "subset": subset, "call_rate": call_rate, "met": bool(met), "met_on": met,
            "best": best}


def verdict_text(rows: Sequence[Mapping], goal: Mapping, funnels: Mapping[str, Mapping]) -> str:
    """One paragraph: whether the goal was met, and where the chain breaks when it was not."""
    subset = "" if goal["subset"] == "all" else " on the retrievable subset"
    want = (f"+{goal['gain_points']:g} points{subset} with the paired interval above 0"
            + (f" and calls on ≥ {100 * goal['call_rate']:.0f}% of inputs" if goal["call_rate"] else ""))
    if goal["met"]:
        row = next(r for r in rows if r["task"] == goal["met_on"][0])[goal["subset"]]
        return (f"Goal met on {', '.join(goal['met_on'])} (goal: {want}). On {goal['met_on'][0]} the tool-trained "
                f"model scores {diff_ci(row)} points more with tools than with calls disabled, calling on "
                f"{pct(row['call_rate'])}% of inputs.")
    if goal["best"] is None:
        what = "no task was evaluated" if not rows else f"no task has examples in the {goal['subset']} subset"
        return f"The goal cannot be judged: {what} (goal: {want})."
    row = next(r for r in rows if r["task"] == goal["best"])
    where = weakest_step(funnels[goal["best"]]) if goal["best"] in funnels else ""
    return (f"Goal not met (goal: {want}). The largest paired difference is {diff_ci(row[goal['subset']])} "
            f"points on {goal['best']}, with calls on {pct(row['all']['call_rate'])}% of inputs"
            + (f"; its funnel loses the most inputs at {where}." if where else "."))


# ---------------------------------------------------------------- reading a run


def columns(eval_folder: Path, tasks: Sequence[str], on: str, n_resamples: int, seed: int,
            retrievable: Mapping[str, set[str]] | None = None) -> list[dict]:
    """The paper's four columns per task, each with its interval (and on the retrievable subset)."""
    cols = [*COLUMNS, (LABEL, on, "tool-trained, tools")]
    out = []
    for task in tasks:
        row: dict = {"task": task}
        for label, setting, name in cols:
            recs = load_records(eval_folder, label, setting, task)
            row[name] = accuracy(recs, n_resamples, seed) if recs else None
            if retrievable is not None and task in retrievable and recs:
                row[name + " (retrievable)"] = accuracy([r for r in recs if r["id"] in retrievable[task]],
                                                        n_resamples, seed)
        out.append(row)
    return out


def against_base(eval_folder: Path, tasks: Sequence[str], on: str) -> list[dict]:
    """The tool-trained model with tools vs the base model with calls disabled, paired per task and
    pooled: whether the gain over the model's own disabled column is also a gain over the model it
    started from (a tool-trained model could merely lose without its calls). Empty without a base
    column. ``tools``/``disabled`` in each row are the tool-trained model and the base model."""
    rows = []
    for task in tasks:
        a, b = load_records(eval_folder, LABEL, on, task), load_records(eval_folder, "base", "disabled", task)
        if a and b:
            rows.append({"task": task, **paired(a, b)})
    if len(rows) > 1:
        pooled = pooled_row(eval_folder, [r["task"] for r in rows], on, off=("base", "disabled"))
        rows.append({"task": "pooled", **pooled["all"]})
    return rows


def task_funnels(eval_folder: Path, tasks: Sequence[str], on: str,
                 tool_of: Mapping[str, str | tuple[str, ...]]) -> dict[str, dict]:
    out = {}
    for task in tasks:
        recs = load_records(eval_folder, LABEL, on, task)
        if recs:
            out[task] = funnel(recs, tool_of.get(task, ""))  # funnel picks the usefulness test for the tool(s)
    return out


# ---------------------------------------------------------------- the machine and the code
def git_commit(repo: Path | None = None) -> str:
    """HEAD of the repository this package runs from, with ``-dirty`` when files are changed."""
    repo = repo or Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head + ("-dirty" if dirty else "")) if head else "unknown"


def machine() -> dict:
    """The fp32 roofline (a 2048² matmul through torch, as benchmarks/bench_models.py measures it)
    and what the machine is, so a reader can scale every time to another machine."""

    import torch  # lazy: heavy

    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "torch": torch.__version__, "fp32_matmul_gflops": round(matmul_gflops(), 1),
            "roofline_note": "median of 7 fp32 2048x2048 matmuls through torch on these threads"}


# ---------------------------------------------------------------- the endpoint
def well_formed_rate(records: Sequence[Mapping]) -> dict:
    """Of the calls the model opened, how many it wrote as ``Tool(input) ->``.

    >>> recs = [{"calls": [{"reason": ""}]}, {"calls": [{"reason": "too_long"}]}, {"calls": []}]
    >>> well_formed_rate(recs)
    {'opened': 2, 'well_formed': 1, 'rate': 0.5}
    """
    calls = [c for r in records for c in r.get("calls") or []]
    good = sum(1 for c in calls if c.get("reason", "") in WELL_FORMED)
    return {"opened": len(calls), "well_formed": good, "rate": good / len(calls) if calls else None}


def endpoint_check(rows: Sequence[Mapping], records: Sequence[Mapping], gain: float, well_formed: float) -> dict:
    """The recipe's pre-registered endpoint: the pooled paired difference reaches ``gain`` points
    with its interval above 0, and at least ``well_formed`` of the opened calls are well-formed.

    >>> rows = [{"task": "pooled", "pooled": True, "all": {"diff": 0.06, "diff_ci95": [0.01, 0.11]}}]
    >>> recs = [{"calls": [{"reason": ""}]}] * 9 + [{"calls": [{"reason": "too_long"}]}]
    >>> e = endpoint_check(rows, recs, 5, 0.8)
    >>> e["met"], e["gain_met"], e["well_formed_met"], e["well_formed"]["rate"]
    (True, True, True, 0.9)
    >>> endpoint_check(rows, recs, 10, 0.8)["met"]
    False
    """
    pooled = next((r["all"] for r in rows if r.get("pooled")), None)
    if pooled is None and len(rows) == 1:
        pooled = rows[0]["all"]
    diff, ci = (pooled or {}).get("diff"), (pooled or {}).get("diff_ci95")
    gain_met = diff is not None and ci is not None and 100 * diff >= gain and ci[0] > 0
    wf = well_formed_rate(records)
    wf_met = wf["rate"] is not None and wf["rate"] >= well_formed
    return {"gain": gain, "well_formed_required": well_formed, "pooled_diff": diff, "pooled_ci95": ci,
            "gain_met": gain_met, "well_formed": wf, "well_formed_met": wf_met, "met": gain_met and wf_met}

