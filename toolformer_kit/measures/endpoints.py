"""Pre-registered endpoints, several per recipe: one line each, written into the recipe (and so into
git) before the run that tests it, and checked by the report from the evaluation's records.

One line is ``NAME: MEASURE TASKS OP VALUE``, e.g. ``math: gain svamp,asdiv,mawps >= 20``:

- ``gain``: tools − disabled of the tool-trained model, in points, pooled over the tasks' pairs
  (Newcombe's paired interval); met when it reaches VALUE *and* the interval lies above 0, as the
  single-endpoint recipes ask (:func:`~toolformer_kit.measures.results.endpoint_check`).
  ``gain@retrievable`` pools only the examples whose gold answer the retrieval ceiling found.
- ``vs_base`` (and ``vs_base@retrievable``): tools of the tool-trained model − the base model with
  calls disabled, pooled the same way: did fine-tuning with tools beat not fine-tuning at all?
- A gain's interval condition may be stated instead of "above 0": ``, low > -3`` after the value
  asks that its lower bound lie above -3 points, a non-inferiority endpoint (``lama: vs_base
  lama-trex,lama-google-re,lama-squad >= 0, low > -3``: LAMA no worse than the base model).
- ``right_tool``: of the calls the model opened on the tasks (with tools), the share in % that name
  the tool each task exercises (:attr:`~toolformer_kit.eval.tasks.base.Task.exercises`), the
  paper's "which tool, where".
- ``ppl_ratio``: perplexity of the tool-trained model (calls disabled) over +CC's on the tasks'
  texts, e.g. ``perplexity: ppl_ratio wikitext2 <= 1.05`` (the paper's §4.3: calls cost no LM
  ability).

Why a grammar and not more fields: the one-model recipe (issue 42, item 7) fixes six endpoints over
four task families, and a field per endpoint would be copied into every recipe.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from ..config import ConfigError
from .which_tool import right_tool_calls

MEASURES = ("gain", "gain@retrievable", "vs_base", "vs_base@retrievable", "right_tool", "ppl_ratio")
GAINS = ("gain", "vs_base")  # measures read as a paired difference in points (with @retrievable)
OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}
LINE = re.compile(r"^\s*(?P<name>[^:]+?)\s*:\s*(?P<measure>\S+)\s+(?P<tasks>\S+)\s+(?P<op>>=|<=|>|<)\s*"
                  r"(?P<value>[-+]?\d+(?:\.\d+)?)\s*"
                  r"(?:,\s*low\s*(?P<low_op>>=|>)\s*(?P<low>[-+]?\d+(?:\.\d+)?)\s*)?$")


@dataclass(frozen=True)
class Endpoint:
    """One pre-registered endpoint (see the module docstring)."""

    name: str
    measure: str
    tasks: tuple[str, ...]
    op: str
    value: float
    low_op: str | None = None  # the interval's lower bound, where stated instead of "above 0"
    low: float | None = None

    def text(self) -> str:
        bound = f", low {self.low_op} {self.low:g}" if self.low is not None else ""
        return f"{self.name}: {self.measure} {','.join(self.tasks)} {self.op} {self.value:g}{bound}"

    @property
    def paired(self) -> bool:
        """Whether the measure is a paired difference (its interval decides with its value)."""
        return self.measure.split("@")[0] in GAINS


def parse_endpoint(line: str, known_tasks: Sequence[str] | None = None) -> Endpoint:
    """One endpoint line, or one error naming what is wrong and the form it should take.

    >>> parse_endpoint("math: gain svamp,asdiv >= 20")
    Endpoint(name='math', measure='gain', tasks=('svamp', 'asdiv'), op='>=', value=20.0, low_op=None, low=None)
    >>> parse_endpoint("lama: vs_base lama-trex >= 0, low > -3").text()
    'lama: vs_base lama-trex >= 0, low > -3'
    >>> parse_endpoint("math: gains svamp >= 20")
    Traceback (most recent call last):
    ...
    toolformer_kit.config.ConfigError: endpoint 'math: gains svamp >= 20': measure 'gains' is not one of gain, gain@retrievable, vs_base, vs_base@retrievable, right_tool, ppl_ratio
    """
    m = LINE.match(line)
    if not m:
        raise ConfigError(f"endpoint {line!r} is not of the form 'NAME: MEASURE TASK,TASK OP VALUE' "
                          "(e.g. 'math: gain svamp,asdiv,mawps >= 20')")
    if m["measure"] not in MEASURES:
        raise ConfigError(f"endpoint {line!r}: measure {m['measure']!r} is not one of {', '.join(MEASURES)}")
    tasks = tuple(t for t in m["tasks"].split(",") if t)
    missing = [t for t in tasks if known_tasks is not None and t not in known_tasks]
    if missing:
        raise ConfigError(f"endpoint {line!r}: {', '.join(missing)} not among the recipe's tasks; add "
                          f"{'it' if len(missing) == 1 else 'them'} to tasks or fix the endpoint")
    e = Endpoint(m["name"], m["measure"], tasks, m["op"], float(m["value"]), m["low_op"],
                 None if m["low"] is None else float(m["low"]))
    if e.low is not None and not e.paired:
        raise ConfigError(f"endpoint {line!r}: only a paired measure ({', '.join(GAINS)}) has an interval to bound")
    return e


def check(e: Endpoint, observed: float | None, ci: Sequence[float] | None = None) -> bool:
    """Met: the observed value passes ``op value``; a paired difference also needs its interval
    above 0, or above the stated lower bound.

    >>> e = parse_endpoint("mlqa: gain mlqa-de > 0")
    >>> check(e, 1.5, [-0.5, 3.5]), check(e, 1.5, [0.2, 3.0])
    (False, True)
    >>> lama = parse_endpoint("lama: vs_base lama-trex >= 0, low > -3")
    >>> check(lama, 0.5, [-2.5, 3.5]), check(lama, 0.5, [-3.5, 4.5]), check(lama, -0.5, [-2.0, 1.0])
    (True, False, False)
    """
    if observed is None:
        return False
    ok = OPS[e.op](observed, e.value)
    if not e.paired:
        return ok
    bound = OPS[e.low_op or ">"], 0.0 if e.low is None else e.low
    return ok and ci is not None and bound[0](ci[0], bound[1])


# ---------------------------------------------------------------- measures from an eval folder
def pooled_gain(eval_folder: Path, tasks: Sequence[str], on: str, keep: Mapping[str, set] | None = None,
                n_resamples: int = 1000, seed: int = 0, off_label: str = "") -> dict:
    """Tools (setting ``on``) of the tool-trained model − calls disabled (of the same model, or of
    ``off_label``'s: the base model's) over every task's pairs, only the ids in ``keep[task]`` where
    given."""
    from ..eval.verdict import LABEL, load_records, paired

    on_all, off_all = [], []
    for task in tasks:
        off = {r["id"]: r for r in load_records(eval_folder, off_label or LABEL, "disabled", task)}
        for r in load_records(eval_folder, LABEL, on, task):
            if r["id"] in off and (keep is None or r["id"] in keep.get(task, set())):
                on_all.append({**r, "id": f"{task}/{r['id']}"})
                off_all.append({**off[r["id"]], "id": f"{task}/{r['id']}"})
    return paired(on_all, off_all, n_resamples, seed)


def right_tool_rate(records_by_task: Mapping[str, Sequence[Mapping]], tool_of: Mapping[str, str]) -> dict:
    """Of the calls opened on each task's inputs, how many name the task's own tool.

    >>> recs = {"svamp": [{"calls": [{"tool": "Calculator"}]}, {"calls": [{"tool": "QA"}]}, {"calls": []}]}
    >>> right_tool_rate(recs, {"svamp": "Calculator"})
    {'calls': 2, 'right': 1, 'rate': 0.5}
    """
    counts = [right_tool_calls(recs, tool_of.get(task, "")) for task, recs in records_by_task.items()]
    right, calls = sum(r for r, _ in counts), sum(n for _, n in counts)
    return {"calls": calls, "right": right, "rate": right / calls if calls else None}


def ppl_ratio(eval_folder: Path, tasks: Sequence[str], label: str = "toolformer", against: str = "cc") -> dict:
    """Perplexity of ``label`` over ``against``'s, per task and as their token-weighted geometric mean
    (None where either side was not measured)."""
    import math

    from ..eval.perplexity import load_summary

    per, num, den, tokens = {}, 0.0, 0.0, 0
    for task in tasks:
        pa, pb = (load_summary(eval_folder, x, task) for x in (label, against))
        if pa is None or pb is None:
            per[task] = None
            continue
        per[task] = pa["perplexity"] / pb["perplexity"]
        num += math.log(pa["perplexity"]) * pa["n_tokens"]
        den += math.log(pb["perplexity"]) * pa["n_tokens"]
        tokens += pa["n_tokens"]
    ratio = math.exp((num - den) / tokens) if tokens and all(v is not None for v in per.values()) else None
    return {"per_task": per, "ratio": ratio}


def evaluate(lines: Sequence[str], eval_folder: Path, on: str, tool_of: Mapping[str, str],
             keep: Mapping[str, set] | None = None, n_resamples: int = 1000, seed: int = 0) -> list[dict]:
    """Every endpoint line checked against the evaluation in ``eval_folder``: one row each, with the
    observed value (points for a gain, % for right_tool, a ratio for ppl_ratio), its interval where
    there is one, and whether it was met."""
    from ..eval.verdict import LABEL, load_records

    rows = []
    for line in lines:
        e = parse_endpoint(line)
        row = {"endpoint": e.text(), "name": e.name, "measure": e.measure, "tasks": list(e.tasks), "op": e.op,
               "value": e.value, "observed": None, "ci95": None}
        if e.paired:
            subset = e.measure.endswith("@retrievable")
            if subset and keep is None:
                row["note"] = "no retrieval ceiling in this run: the retrievable subset is unknown"
            else:
                p = pooled_gain(eval_folder, e.tasks, on, keep if subset else None, n_resamples, seed,
                                off_label="base" if e.measure.startswith("vs_base") else "")
                row["pairs"] = p.get("n")
                if p.get("diff") is not None:
                    row["observed"] = 100 * p["diff"]
                    row["ci95"] = [100 * x for x in p["diff_ci95"]] if p.get("diff_ci95") else None
        elif e.measure == "right_tool":
            r = right_tool_rate({t: load_records(eval_folder, LABEL, on, t) for t in e.tasks}, tool_of)
            row.update(calls=r["calls"], right=r["right"])
            row["observed"] = None if r["rate"] is None else 100 * r["rate"]
        else:
            r = ppl_ratio(eval_folder, e.tasks)
            # rounded: a ratio of exp(log a − log b) at the threshold must not miss it by 3e-16
            row.update(per_task=r["per_task"], observed=None if r["ratio"] is None else round(r["ratio"], 6))
        row["met"] = check(e, row["observed"], row["ci95"])
        rows.append(row)
    return rows
