"""Against the specialists (issue 42, item 6): does sharing one model between five tools cost the
gains of the models fine-tuned on one tool family?

A specialist is a committed ``results/NAME`` (``results/math``: the Calculator only;
``results/search``: WikiSearch and QA). Its per-example records went with the machine that made
them, so the comparison reads the two ``results.json`` headlines: per task, the specialist's
tools − disabled and the one model's, and their difference. The two gains are then independent
estimates, so the difference's interval is the two intervals' half-widths added in quadrature
(an approximation, wider than a paired one would be where the examples are the same). Where the
specialist was judged on the retrievable subset only (``eval_subset: retrievable``), the one
model's retrievable row is the one set beside it. A pooled row is set beside the other's only
where both pool the same tasks (the maths recipe's three against a LoRA run of the same recipe). ``same_examples`` says whether both evaluated
the same hash-ordered sample (the same limit and subset: the sample is a function of both).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping, Sequence

from ..files import read_json


def _gain(cell: Mapping | None) -> tuple[float | None, list[float] | None, int | None]:
    if not cell or cell.get("diff") is None:
        return None, None, (cell or {}).get("n")
    return 100 * cell["diff"], [100 * x for x in cell["diff_ci95"]] if cell.get("diff_ci95") else None, cell.get("n")


def difference(ours: tuple, theirs: tuple) -> tuple[float | None, list[float] | None]:
    """Ours − theirs, in points, with the quadrature interval.

    >>> difference((20.0, [14.0, 26.0], 300), (26.0, [21.0, 31.0], 300))
    (-6.0, [-13.81, 1.81])
    """
    (a, ca, _), (b, cb, _) = ours, theirs
    if a is None or b is None:
        return None, None
    d = a - b
    if not ca or not cb:
        return round(d, 2), None
    half = math.hypot((ca[1] - ca[0]) / 2, (cb[1] - cb[0]) / 2)
    return round(d, 2), [round(d - half, 2), round(d + half, 2)]


def beside_specialists(rows: Sequence[Mapping], settings: Mapping, folders: Sequence[str]) -> list[dict]:
    """One row per task that a specialist and the one model both evaluated: each one's tools −
    disabled (points, 95 % interval, pairs) and the difference. ``rows``: the one model's headline
    rows; ``settings``: its recorded settings; ``folders``: the specialists' results folders."""
    ours = {r["task"]: r for r in rows}
    our_tasks = set(settings.get("tasks") or ())
    out = []
    for folder in folders:
        path = Path(folder) / "results.json"
        if not path.is_file():
            out.append({"specialist": folder, "missing": True})
            continue
        res = read_json(path)
        subset = res["settings"].get("eval_subset") or "all"
        same = all(res["settings"].get(k) == settings.get(k) for k in ("eval_limit", "eval_subset"))
        for row in res["headline"]:
            mine = ours.get(row["task"])
            if mine is None or (row.get("pooled") and (not our_tasks
                                                        or set(res["settings"].get("tasks") or ()) != our_tasks)):
                continue  # a pool of another task set says nothing about these
            cell = mine.get("retrievable") if subset == "retrievable" else mine["all"]
            a, b = _gain(cell), _gain(row["all"])
            d, ci = difference(a, b)
            out.append({"specialist": folder, "task": row["task"], "subset": subset, "same_examples": same,
                        "specialist_gain": b[0], "specialist_ci95": b[1], "specialist_n": b[2],
                        "ours_gain": a[0], "ours_ci95": a[1], "ours_n": a[2], "difference": d,
                        "difference_ci95": ci})
    return out
