"""Tools vs calls disabled, read back from an evaluation folder: the paired comparison every
report opens with (the pipeline's and each recipe's), its numbers and its table.

Statistics live with evaluation, below the pipeline and the recipes, so that both read the same
verdict without one importing the other. The two settings answer the same examples, so the
difference gets Newcombe's paired interval (:func:`~.metrics.newcombe_paired_diff`), which keeps
its width at 0 or 100 % and when no pair is discordant, where a bootstrap collapses to a point;
each accuracy gets a Wilson interval. Every number is recomputed from the per-example records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from .. import blocks as R
from .metrics import mean, newcombe_paired_diff, stratified_paired_bootstrap, wilson_ci
from .records import RECORDS, read_records
from .setting import Setting

LABEL = "toolformer"  # the tool-trained model's folder under the evaluation's --out


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


def _ci(samples: np.ndarray) -> list[float]:
    lo, hi = np.quantile(samples, [0.025, 0.975])
    return [float(lo), float(hi)]


def task_averaged_paired(per_task: Mapping[str, tuple[Sequence[Mapping], Sequence[Mapping]]],
                         n_resamples: int = 1000, seed: int = 0) -> dict | None:
    """Tools vs disabled averaged over tasks (each task weighs the same, as the paper's Figure 4
    averages its benchmarks), with bootstrap intervals that resample examples within each task,
    paired between the arms; ``off`` may be empty for a single arm. None when no task has examples.

    >>> on = {"a": ([{"id": str(i), "correct": i < 5, "called": True} for i in range(10)],
    ...             [{"id": str(i), "correct": i < 1} for i in range(10)]),
    ...       "b": ([{"id": "0", "correct": True, "called": False}], [{"id": "0", "correct": True}])}
    >>> f = task_averaged_paired(on, 300)
    >>> f["tools"]["accuracy"], f["disabled"]["accuracy"], round(f["diff"], 2), f["n"], f["call_rate"]
    (0.75, 0.55, 0.2, 11, 0.5)
    """
    arrays = []
    for task, (on, off) in sorted(per_task.items()):
        if off:
            by_id = {r["id"]: r for r in off}
            pairs = [(r, by_id[r["id"]]) for r in on if r["id"] in by_id]
        else:
            pairs = [(r, r) for r in on]
        if pairs:
            arrays.append((task, np.array([[bool(a["correct"]), bool(b["correct"]), bool(a.get("called"))]
                                           for a, b in pairs], dtype=float)))
    if not arrays:
        return None
    rng = np.random.default_rng(seed)
    boot = np.zeros((n_resamples, 2))
    for _, arr in arrays:
        idx = rng.integers(0, len(arr), size=(n_resamples, len(arr)))
        boot += arr[idx][:, :, :2].mean(axis=1)
    boot /= len(arrays)
    point = np.mean([arr.mean(axis=0) for _, arr in arrays], axis=0)
    out = {"tasks": [t for t, _ in arrays], "n": int(sum(len(a) for _, a in arrays)),
           "tools": {"accuracy": float(point[0]), "ci95": _ci(boot[:, 0])},
           "disabled": {"accuracy": float(point[1]), "ci95": _ci(boot[:, 1])},
           "diff": float(point[0] - point[1]), "diff_ci95": _ci(boot[:, 0] - boot[:, 1]),
           "call_rate": float(point[2])}
    return out


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
    found = sorted((s for s in map(_setting_of, (eval_folder / label).glob("k*")) if s and s.papers),
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
               seed: int = 0, off: tuple[str, str] | None = None) -> dict:
    """Every task's pairs together: Newcombe's interval over all pairs, and beside it the paired
    bootstrap resampled within each task (so each keeps its size). The other arm is the same
    model with calls disabled, or ``off`` = (model label, setting), e.g. the base model's."""
    off_label, off_setting = off or (label, "disabled")
    on_all, off_all, strata = [], [], []
    for task in tasks:
        on_recs = load_records(eval_folder, label, on, task)
        off_recs = load_records(eval_folder, off_label, off_setting, task)
        by_id = {r["id"]: r for r in off_recs}
        pairs = [(r, by_id[r["id"]]) for r in on_recs if r["id"] in by_id]
        strata.append(([bool(a["correct"]) for a, _ in pairs], [bool(b["correct"]) for _, b in pairs]))
        on_all += [{**a, "id": f"{task}/{a['id']}"} for a, _ in pairs]
        off_all += [{**b, "id": f"{task}/{b['id']}"} for _, b in pairs]
    row = {"task": "pooled", "pooled": True, "all": paired(on_all, off_all, n_resamples, seed)}
    boot = stratified_paired_bootstrap(strata, n_resamples, seed=seed)
    row["all"]["diff_ci95_stratified_bootstrap"] = list(boot[1]) if boot else None
    return row


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
