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

from .. import blocks as R
from ..eval.probe import WELL_FORMED
from ..eval.metrics import mean, newcombe_paired_diff, stratified_paired_bootstrap, wilson_ci
from ..eval.records import RECORDS, read_records
from ..eval.setting import Setting
from ..lm.base import matmul_gflops
from .funnel import USEFUL, funnel, search_useful, weakest_step

log = logging.getLogger(__name__)

LABEL = "toolformer"
COLUMNS = (("base", "disabled", "base"), ("cc", "disabled", "+CC"), (LABEL, "disabled", "tool-trained, disabled"))


# ---------------------------------------------------------------- pure numbers
def accuracy(records: Sequence[Mapping], n_resamples: int = 1000, seed: int = 0) -> dict:
    """``{"n", "accuracy", "ci95"}`` of a list of records (accuracy None when empty).

    >>> accuracy([{"correct": True}, {"correct": False}], 200)["accuracy"]
    0.5
    """
    values = [bool(r["correct"]) for r in records]
    ci = wilson_ci(values)
    return {"n": len(values), "accuracy": mean(values), "ci95": list(ci) if ci else None}


def paired(on: Sequence[Mapping], off: Sequence[Mapping], n_resamples: int = 1000, seed: int = 0,
           keep: set[str] | None = None) -> dict:
    """Tools vs disabled on the examples both answered (and, with ``keep``, only those ids).

    >>> on = [{"id": str(i), "correct": i < 6, "called": True} for i in range(10)]
    >>> off = [{"id": str(i), "correct": i < 1, "called": False} for i in range(10)]
    >>> p = paired(on, off, 500)
    >>> p["n"], p["tools"]["accuracy"], p["disabled"]["accuracy"], round(p["diff"], 2), p["diff_ci95"][0] > 0
    (10, 0.6, 0.1, 0.5, True)
    >>> paired(on, off, 500, keep={"0", "9"})["n"]
    2
    """
    by_id = {r["id"]: r for r in off}
    pairs = [(r, by_id[r["id"]]) for r in on if r["id"] in by_id and (keep is None or r["id"] in keep)]
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    d = newcombe_paired_diff([bool(r["correct"]) for r in a], [bool(r["correct"]) for r in b])
    return {"n": len(pairs), "tools": accuracy(a, n_resamples, seed), "disabled": accuracy(b, n_resamples, seed),
            "diff": d[0] if d else None, "diff_ci95": list(d[1]) if d else None,
            "call_rate": mean([bool(r.get("called")) for r in a])}


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


def pct(v: float | None, signed: bool = False) -> str:
    """
    >>> pct(0.125), pct(0.05, signed=True), pct(None)
    ('12.5', '+5.0', '–')
    """
    if v is None:
        return "–"
    return f"{100 * v:+.1f}" if signed else f"{100 * v:.1f}"


def with_ci(acc: Mapping | None) -> str:
    if not acc or acc.get("accuracy") is None:
        return "–"
    lo, hi = acc["ci95"]
    return f"{pct(acc['accuracy'])} [{pct(lo)}, {pct(hi)}]"


def diff_ci(p: Mapping | None) -> str:
    if not p or p.get("diff") is None:
        return "–"
    lo, hi = p["diff_ci95"]
    return f"{pct(p['diff'], True)} [{pct(lo, True)}, {pct(hi, True)}]"


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
def load_records(eval_folder: Path, label: str, setting: str, task: str) -> list[dict]:
    return read_records(eval_folder / label / setting / task / RECORDS)


def _setting_of(folder: Path) -> Setting | None:
    """The setting a run folder holds, from its name (None for a folder no evaluation named)."""
    try:
        return Setting.parse(folder.name) if folder.is_dir() else None
    except ValueError:
        return None


def tools_setting(eval_folder: Path, label: str = LABEL, prefer: Setting = Setting(10)) -> Setting | None:
    """The setting with calls on and the paper's decoding (``kN``, not ``kN+arrow``) that ``label``
    was evaluated under: ``prefer`` when it was, else the first by name. The run folders are the
    one place a report reads setting names back."""
    found = sorted((s for s in map(_setting_of, (eval_folder / label).glob("k*")) if s and not s.force_arrow),
                   key=lambda s: s.name)
    return prefer if prefer in found else (found[0] if found else None)


def headline_rows(eval_folder: Path, tasks: Sequence[str], on: str, n_resamples: int = 1000, seed: int = 0,
                  retrievable: Mapping[str, set[str]] | None = None, label: str = LABEL) -> list[dict]:
    """Per task: tools vs disabled on all examples (and on the retrievable ones, when given)."""
    rows = []
    for task in tasks:
        on_recs = load_records(eval_folder, label, on, task)
        off_recs = load_records(eval_folder, label, "disabled", task)
        if not on_recs or not off_recs:
            continue
        row = {"task": task, "all": paired(on_recs, off_recs, n_resamples, seed)}
        if retrievable is not None and task in retrievable:
            ids = {r["id"] for r in on_recs}
            row["retrievable_share"] = len(retrievable[task] & ids) / len(ids) if ids else None
            row["retrievable"] = paired(on_recs, off_recs, n_resamples, seed, keep=retrievable[task])
        rows.append(row)
    if len(rows) > 1:
        rows.append(pooled_row(eval_folder, [r["task"] for r in rows], on, label, n_resamples, seed))
    return rows


def pooled_row(eval_folder: Path, tasks: Sequence[str], on: str, label: str = LABEL, n_resamples: int = 1000,
               seed: int = 0) -> dict:
    """Every task's pairs together: Newcombe's interval over all pairs, and beside it the paired
    bootstrap resampled within each task (so each keeps its size)."""
    on_all, off_all, strata = [], [], []
    for task in tasks:
        on_recs, off_recs = load_records(eval_folder, label, on, task), load_records(eval_folder, label, "disabled", task)
        by_id = {r["id"]: r for r in off_recs}
        pairs = [(r, by_id[r["id"]]) for r in on_recs if r["id"] in by_id]
        strata.append(([bool(a["correct"]) for a, _ in pairs], [bool(b["correct"]) for _, b in pairs]))
        on_all += [{**a, "id": f"{task}/{a['id']}"} for a, _ in pairs]
        off_all += [{**b, "id": f"{task}/{b['id']}"} for _, b in pairs]
    row = {"task": "pooled", "pooled": True, "all": paired(on_all, off_all, n_resamples, seed)}
    boot = stratified_paired_bootstrap(strata, n_resamples, seed=seed)
    row["all"]["diff_ci95_stratified_bootstrap"] = list(boot[1]) if boot else None
    return row


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


def task_funnels(eval_folder: Path, tasks: Sequence[str], on: str, tool_of: Mapping[str, str]) -> dict[str, dict]:
    out = {}
    for task in tasks:
        recs = load_records(eval_folder, LABEL, on, task)
        if recs:
            tool = tool_of.get(task, "")
            out[task] = funnel(recs, tool, USEFUL.get(tool, search_useful))
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


# ---------------------------------------------------------------- the report
def headline_table(rows: Sequence[Mapping]) -> R.Block:
    """The verdict's table: tools vs disabled per task (and on the retrievable subset, when measured)."""
    sub = any("retrievable" in r for r in rows)
    header = ["task", "n", "tools % [95% CI]", "disabled % [95% CI]", "tools − disabled, paired [95% CI]", "calls %"]
    if sub:
        header += ["retrievable %", "retrievable: tools", "retrievable: disabled", "retrievable: paired diff"]
    body = []
    for r in rows:
        a = r["all"]
        cells = [r["task"], a["n"], with_ci(a["tools"]), with_ci(a["disabled"]), diff_ci(a), pct(a["call_rate"])]
        if sub:
            s = r.get("retrievable")
            cells += [f"{pct(r.get('retrievable_share'))} (n={s['n'] if s else 0})", with_ci(s and s["tools"]),
                      with_ci(s and s["disabled"]), diff_ci(s)]
        body.append(cells)
    return R.Block("table", header=header, rows=body)


def verdict_blocks(rows: Sequence[Mapping], text: str = "") -> list[R.Block]:
    """What every report opens with (the pipeline's too): the headline table, then its reading."""
    intro = ("The tool-trained model with tools vs the same model with calls disabled, on the same examples; "
             "accuracy in % with Wilson 95% intervals, and the paired difference in points with Newcombe's "
             "paired 95% interval.")
    blocks = [R.Block("h2", "Verdict")]
    blocks += [R.Block("p", text)] if text else []
    if not rows:
        return blocks + [R.Block("p", "No tool-trained runs with both settings were found.")]
    return blocks + [R.Block("p", intro), headline_table(rows)]


# A C* smaller than this is a smoke test of the method, not evidence about its effect.
SMOKE_CALLS = 100


def scale_note(calls: int | None, texts: int | None) -> str:
    """What a run's C* size lets its verdict say, with where the evidence-sized runs are.

    >>> scale_note(7, 5).startswith("This run is smoke-sized: its C* holds 7 calls in 5 texts")
    True
    >>> scale_note(400, 300)
    ''
    """
    if calls is None or calls >= SMOKE_CALLS:
        return ""
    return (f"This run is smoke-sized: its C* holds {calls} calls in {texts} texts, too few for the effect of "
            "tool use to show (the paper's C* per tool holds thousands); it checks that every stage runs. "
            "The evidence about the effect is in results/math (the Calculator, learned from datasets/cstar-math, "
            "the Calculator C* at the paper's settings) and, for search, results/search-try0 (null) until the "
            "search-v2 recipe has run.")


def pipeline_verdict(eval_folder: Path, tasks: Sequence[str], n_resamples: int = 1000, seed: int = 0,
                     cstar: tuple[int | None, int | None] = (None, None)) -> list[R.Block]:
    """The pipeline report's opening: the same verdict table over its eval folder, and what the
    run's C* size (calls, texts) lets it say."""
    on = tools_setting(eval_folder)
    rows = headline_rows(eval_folder, tasks, on.name, n_resamples, seed) if on else []
    helped = [r["task"] for r in rows if not r.get("pooled") and r["all"]["diff_ci95"] and r["all"]["diff_ci95"][0] > 0]
    text = (f"Tools help, with the paired interval above 0, on: {', '.join(helped)}." if helped else
            "On no task is the paired difference (tools − disabled) clearly above 0.") if rows else ""
    note = scale_note(*cstar)
    return verdict_blocks(rows, f"{note} {text}".strip())


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

