"""What a study measured, read back from its run folder: per family, tools vs calls disabled with
intervals, the C* each point trained on, the calls that ran, and the findings those numbers
support. :mod:`.report_study` only renders what this returns; the tool latency the cost study
reports is measured by the study's own step (:mod:`.latency`) and read from where it stored it.

Accuracies are averaged over the tasks of a family (math, LAMA, QA) the way the paper's Figure 4
averages its benchmarks (:func:`~toolformer_kit.eval.verdict.task_averaged_paired`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from ..config import to_dict
from ..eval.setting import Setting
from ..eval.verdict import task_averaged_paired
from ..files import read_json
from . import paper
from .layout import recipe_config, sweep_configs, value_label
from toolformer_kit.measures.results import LABEL, load_records, pct, tools_setting

LATENCY_FILE = "latency.json"  # written by the cost study's latency step (.latency), read here

FAMILIES = {"svamp": "math", "asdiv": "math", "mawps": "math", "webquestions": "QA", "nq": "QA", "triviaqa": "QA"}


RAN = {"", "no_result", "tool_error"}  # a call's reason when the tool was actually run


def family(task: str) -> str:
    """
    >>> family("lama-trex"), family("nq"), family("svamp"), family("dateset")
    ('LAMA', 'QA', 'math', 'dateset')
    """
    return "LAMA" if task.startswith("lama-") else FAMILIES.get(task, task)


def params_of(model: str) -> float | None:
    """Parameters of an embedded model (its registry entry); None for a folder we cannot tell."""
    from ..lm.embedded import EMBEDDED

    try:
        return paper.parse_params(EMBEDDED.get(model).parameters)
    except Exception:  # noqa: BLE001 - an unknown name or a path: the report says "?"
        return None


def families_of(eval_folder: Path, tasks: Sequence[str], label: str, on: str | None, off: str | None,
                n_resamples: int, seed: int) -> dict[str, dict]:
    """Per family: ``label`` under setting ``on`` vs ``off`` (None: ``on`` alone) from an eval folder."""
    grouped: dict[str, dict] = {}
    for task in tasks:
        recs_on = load_records(eval_folder, label, on, task) if on else []
        recs_off = load_records(eval_folder, label, off, task) if off else []
        if recs_on:
            grouped.setdefault(family(task), {})[task] = (recs_on, recs_off)
    return {fam: f for fam, per in grouped.items() if (f := task_averaged_paired(per, n_resamples, seed))}


def changed_outputs(eval_folder: Path, tasks: Sequence[str], a: str, b: str, label: str = LABEL) -> dict:
    """How many answers differ between two settings of one model (same example ids): where the
    forced arrow changed nothing, its row equals the paper-decoding row to the last digit, and this
    says why (no call reached a closed input without writing '->' itself)."""
    n = differ = 0
    for task in tasks:
        other = {r["id"]: r for r in load_records(eval_folder, label, b, task)}
        for r in load_records(eval_folder, label, a, task):
            if r["id"] in other:
                n += 1
                differ += r.get("output") != other[r["id"]].get("output")
    return {"answers": n, "differ": differ}


def ran_calls(record: Mapping) -> list[Mapping]:
    """The calls of an answer that a tool actually ran, in order."""
    return [c for c in record.get("calls", []) if c.get("reason", "") in RAN]


def calls_ran(records: Sequence[Mapping]) -> int:
    """Tool calls that were actually run while answering (the ones that cost time).

    >>> calls_ran([{"calls": [{"reason": ""}, {"reason": "closed_without_arrow"}]}, {"calls": []}])
    1
    """
    return sum(len(ran_calls(r)) for r in records)


def helps(stats: Mapping | None) -> bool:
    return bool(stats and stats.get("diff_ci95") and stats["diff_ci95"][0] > 0)


RARE_CALLS = 0.2  # below this share of inputs with a call at every size, "no gain" says little


def emergence_text(fam: str, points: Sequence[tuple[float, Mapping | None]]) -> str:
    """From which size tools help here (paired interval above 0), beside the paper; with a caveat
    when no size calls on more than :data:`RARE_CALLS` of its inputs, since a model that hardly
    calls cannot show a gain whatever its size.

    >>> s = {"diff": 0.1, "diff_ci95": [0.02, 0.2]}; n = {"diff": 0.0, "diff_ci95": [-0.05, 0.05]}
    >>> emergence_text("math", [(135e6, n), (630e6, s)])
    'math: tools help from 630M on (paired interval above 0); the paper saw the gap open at ~775M — here earlier.'
    >>> emergence_text("QA", [(135e6, n), (630e6, n)])[:60]
    'QA: tools help at none of the sizes here (135M–630M); the pa'
    >>> emergence_text("QA", [(135e6, n | {"call_rate": 0.03}), (630e6, n | {"call_rate": 0.1})])[-99:]
    'But calls open on at most 10.0% of inputs at any size here: too little tool use to place the point.'
    """
    measured = [(p, s) for p, s in points if p is not None and s is not None]
    if not measured:
        return f"{fam}: no size has evaluated examples yet."
    rates = [s["call_rate"] for _, s in measured if s.get("call_rate") is not None]
    if rates and max(rates) < RARE_CALLS:
        return (_emergence_sentence(fam, measured) + f" But calls open on at most {pct(max(rates))}% of inputs at "
                "any size here: too little tool use to place the point.")
    return _emergence_sentence(fam, measured)


def _emergence_sentence(fam: str, measured: Sequence[tuple[float, Mapping]]) -> str:
    sizes = [p for p, _ in measured]
    found = paper.emergence(sizes, [helps(s) for _, s in measured])
    theirs = paper.paper_emergence(fam) if fam in paper.FIGURE_4 else None
    span = f"{paper.size_name(min(sizes))}–{paper.size_name(max(sizes))}"
    ref = f"the paper saw the gap open at ~{paper.size_name(theirs)}" if theirs else "the paper has no curve for it"
    if found is None:
        some = [paper.size_name(p) for p, s in measured if helps(s)]
        if some:
            return (f"{fam}: tools help at {', '.join(some)} but not at every larger size ({span}); no steady "
                    f"emergence here; {ref}.")
        where = ("consistent with that, as it lies above our largest model" if theirs and theirs > max(sizes)
                 else "so here it does not show" if theirs else "")
        return f"{fam}: tools help at none of the sizes here ({span}); {ref}" + (f", {where}." if where else ".")
    when = "" if not theirs else (" — here earlier." if found < theirs * 0.9 else
                                  " — here later." if found > theirs * 1.1 else " — the same point.")
    return f"{fam}: tools help from {paper.size_name(found)} on (paired interval above 0); {ref}{when}"


def stage_seconds(out: Path) -> dict:
    """Wall seconds per finished step of a study run (its stages.json)."""
    path = out / "stages.json"
    return {k: v.get("seconds") for k, v in read_json(path).items()} if path.is_file() else {}


def c_star_size(run: Path) -> dict:
    """Calls and texts in the C* a recipe run fine-tuned on (from its results), to read call rates by."""
    path = run / "results" / "results.json"
    ann = read_json(path).get("annotation", {}) if path.is_file() else {}
    return {"c_star_calls": ann.get("c_star_calls"), "c_star_texts": ann.get("c_star_texts")}


def collect_scale(study, n: int, seed: int) -> dict:
    """Per (recipe, model, family): tools vs disabled under the paper's decoding (``rows``) and, for
    recipes that also evaluated it, with '->' forced (``forced_rows``, a deviation shown beside)."""
    rows, forced_rows = [], []
    for model in study.models:
        for recipe in study.recipes:
            sub = Path(study.out) / f"{recipe}-{model}"
            cfg = recipe_config(study, recipe, sub, model)
            found = tools_setting(sub / "eval", prefer=Setting(cfg.k_eval))
            if found is None:
                continue
            on, c_star = found.name, c_star_size(sub)
            for setting, into in ((on, rows), (found.arrow().name, forced_rows)):
                if not (sub / "eval" / LABEL / setting).is_dir():
                    continue
                for fam, stats in families_of(sub / "eval", cfg.tasks, LABEL, setting, "disabled", n, seed).items():
                    extra = {} if setting == on else {"changed_by_arrow": changed_outputs(
                        sub / "eval", [t for t in cfg.tasks if family(t) == fam], on, setting)}
                    into.append({"recipe": recipe, "model": model, "params": params_of(model), "family": fam,
                                 "setting": setting, **c_star, **stats, **extra})
    findings = [emergence_text(f, [(r["params"], r) for r in rows if r["family"] == f])
                for f in sorted({r["family"] for r in rows})]
    findings += ["With '->' forced (a deviation): " + emergence_text(f, [(r["params"], r) for r in forced_rows
                                                                         if r["family"] == f])
                 for f in sorted({r["family"] for r in forced_rows})]
    return {"rows": rows, "forced_rows": forced_rows, "findings": findings,
            "paper": {"sizes": paper.SIZES, "names": paper.SIZE_NAMES,
                      "figure_4": {f: {"tools": t, "disabled": d} for f, (t, d) in paper.FIGURE_4.items()},
                      "emergence": {f: paper.paper_emergence(f) for f in paper.FIGURE_4},
                      "note": "read off the paper's Figure 4 (midpoints of the ranges read); approximate"}}


def decode_seconds(records: Sequence[Mapping]) -> float | None:
    """Wall seconds the model spent answering these records (each carries its batch's time shared
    among the batch's examples).

    >>> decode_seconds([{"seconds": 0.25}, {"seconds": 0.5}, {}]), decode_seconds([])
    (0.75, None)
    """
    return sum(float(r.get("seconds") or 0.0) for r in records) if records else None


def read_latency(base: Path, tool: str) -> dict:
    """What :func:`store_latency` stored, or an empty measurement saying which step makes it."""
    path = base / LATENCY_FILE
    if path.is_file():
        return read_json(path)
    return {"tool": tool, "calls": 0, "mean_seconds": None,
            "how": "not measured yet: the study's 'tool latency' step stores it"}


def value_records(folder: Path, cfg) -> tuple[str | None, list[dict]]:
    """The tool-trained model's setting in one swept value's folder and its records on every task."""
    found = tools_setting(folder / "eval", prefer=Setting(cfg.k_eval))
    on = found.name if found else None
    return on, [r for t in cfg.tasks for r in (load_records(folder / "eval", LABEL, on, t) if on else [])]


def collect_sweep(study, n: int, seed: int) -> dict:
    """Per recipe: each swept value's C*, calls, call rate, answering time and per-family accuracy,
    the references (base, +CC), and for the cost study the latency its step stored."""
    out = {"recipes": {}}
    for recipe, base, cfg in sweep_configs(study):
        ref = {label: families_of(base / "eval", cfg.tasks, label, "disabled", None, n, seed)
               for label in ("base", "cc")}
        points = []
        for value in study.values:
            v = base / value_label(study, value)
            marker = v / "annotate" / "refilter.json"
            info = read_json(marker) if marker.is_file() else {}
            on, recs = value_records(v, cfg)
            train = v / "train-tools" / "train_summary.json"
            points.append({"value": value, "c_star_texts": info.get("c_star_texts"),
                           "c_star_calls": info.get("c_star_calls"), "candidates": info.get("candidates"),
                           "tau_f": info.get("tau_f"), "call_cost": info.get("call_cost"),
                           "answered": len(recs), "calls_ran": calls_ran(recs),
                           "call_rate": (sum(bool(r.get("called")) for r in recs) / len(recs)) if recs else None,
                           "decode_seconds": {"tools": decode_seconds(recs), "disabled": decode_seconds(
                               [r for t in cfg.tasks for r in load_records(v / "eval", LABEL, "disabled", t)])},
                           "families": families_of(v / "eval", cfg.tasks, LABEL, on, "disabled", n, seed) if on else {},
                           "best_step": read_json(train).get("best_step") if train.is_file() else None})
        entry = {"model": cfg.model, "tools": cfg.tools, "tasks": cfg.tasks, "reference": ref, "points": points,
                 "settings": to_dict(cfg)}
        if study.name == "cost" and points:
            entry["latency"] = read_latency(base, cfg.tools[0])
            mean_s = entry["latency"]["mean_seconds"]
            for p in points:
                saved = points[0]["calls_ran"] - p["calls_ran"]
                p["calls_saved"] = saved
                p["latency_saved_s"] = saved * mean_s if mean_s is not None else None
        entry["findings"] = sweep_findings(study.name, points)
        out["recipes"][recipe] = entry
    return out


def sweep_findings(kind: str, points: Sequence[Mapping]) -> list[str]:
    """Per family: how tools accuracy and the call rate move from the first value to the last, and
    whether the best value's interval clears the worst's."""
    sym = "τf" if kind == "tau" else "λ"
    done = [p for p in points if p["families"]]
    empty = [f"{p['value']:g}" for p in points if p["c_star_calls"] == 0]
    lines = [f"At {sym} {', '.join(empty)} C* keeps no call: nothing to fine-tune there."] if empty else []
    if len(done) < 2:
        return lines + [f"Fewer than two {sym} values are evaluated yet; nothing to compare."]
    for fam in sorted({f for p in done for f in p["families"]}):
        have = [(p, p["families"][fam]) for p in done if fam in p["families"]]
        best = max(have, key=lambda x: x[1]["tools"]["accuracy"])
        worst = min(have, key=lambda x: x[1]["tools"]["accuracy"])
        apart = best[1]["tools"]["ci95"][0] > worst[1]["tools"]["ci95"][1]
        first, last = have[0], have[-1]
        lines.append(
            f"{fam}: with tools {pct(first[1]['tools']['accuracy'])}% at {sym} {first[0]['value']:g} → "
            f"{pct(last[1]['tools']['accuracy'])}% at {sym} {last[0]['value']:g} (calls on "
            f"{pct(first[1]['call_rate'])}% → {pct(last[1]['call_rate'])}% of inputs; C* "
            f"{first[0]['c_star_calls']} → {last[0]['c_star_calls']} calls). Best at {sym} {best[0]['value']:g}, "
            + (_apart_text(best[1], worst[1]) if apart
               else "but the intervals of best and worst overlap: no value is distinguishable at this size."))
    if kind == "cost":
        first, last = done[0], done[-1]
        if last.get("latency_saved_s") is not None:
            lines.append(f"At λ {last['value']:g}, {last['calls_saved']} fewer tool calls ran than at λ "
                         f"{first['value']:g} over {last['answered']} answers ({first['calls_ran']} → "
                         f"{last['calls_ran']}): {signed_seconds(last['latency_saved_s'])} of tool time saved.")
        overheads = [(p["value"], o) for p in done if (o := tool_overhead(p)) is not None]
        if overheads:
            lines.append("Answering with tools took " + ", ".join(f"{signed_seconds(o)} at λ {v:g}"
                                                                  for v, o in overheads)
                         + " against calls disabled (the same examples, back to back; wall time, so noisy on a "
                         "shared machine).")
    return lines


def _apart_text(best: Mapping, worst: Mapping) -> str:
    """Why the best value beats the worst: the same two models with calls disabled say whether it is the calls."""
    return (f"its interval clear of the worst's; with calls disabled the same two models score "
            f"{pct(best['disabled']['accuracy'])}% and {pct(worst['disabled']['accuracy'])}%, so "
            + ("the difference is not the calls'." if best["diff_ci95"][0] <= 0 else "the calls add to it."))


def tool_overhead(point: Mapping) -> float | None:
    """Seconds answering with tools took beyond answering with calls disabled."""
    secs = point.get("decode_seconds") or {}
    if secs.get("tools") is None or secs.get("disabled") is None:
        return None
    return secs["tools"] - secs["disabled"]


def signed_seconds(x: float) -> str:
    """
    >>> signed_seconds(0.00068), signed_seconds(-2.5), signed_seconds(75.0)
    ('+0.68 ms', '−2.50 s', '+75.0 s')
    """
    sign = "+" if x >= 0 else "−"
    a = abs(x)
    return f"{sign}{1000 * a:.2f} ms" if a < 0.1 else f"{sign}{a:.2f} s" if a < 10 else f"{sign}{a:.1f} s"
