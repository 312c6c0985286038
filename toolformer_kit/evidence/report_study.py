"""``results/study-NAME/``: report.md (the finding first), results.json, small PNG plots.

Every number is recomputed from the per-example eval records of the study's run folder, with a
95 % bootstrap interval. Accuracies are averaged over the tasks of a family (math, LAMA, QA) the
way the paper's Figure 4 averages its benchmarks: each task weighs the same, and the bootstrap
resamples examples within each task (stratified), paired between tools and disabled.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from .. import blocks as R
from ..config import to_dict
from ..eval.setting import Setting
from ..files import read_json, write_atomic
from . import paper, results
from .cost import clock
from .layout import recipe_config, sweep_configs, value_label
from .results import LABEL, git_commit, load_records, pct, tools_setting

log = logging.getLogger(__name__)

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


# ---------------------------------------------------------------- pure numbers
def _ci(samples: np.ndarray) -> list[float]:
    lo, hi = np.quantile(samples, [0.025, 0.975])
    return [float(lo), float(hi)]


def family_paired(per_task: Mapping[str, tuple[Sequence[Mapping], Sequence[Mapping]]], n_resamples: int = 1000,
                  seed: int = 0) -> dict | None:
    """Tools vs disabled averaged over tasks (each task weighs the same), with stratified paired
    bootstrap intervals; ``off`` may be empty for a single arm. None when no task has examples.

    >>> on = {"a": ([{"id": str(i), "correct": i < 5, "called": True} for i in range(10)],
    ...             [{"id": str(i), "correct": i < 1} for i in range(10)]),
    ...       "b": ([{"id": "0", "correct": True, "called": False}], [{"id": "0", "correct": True}])}
    >>> f = family_paired(on, 300)
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


def families_of(eval_folder: Path, tasks: Sequence[str], label: str, on: str | None, off: str | None,
                n_resamples: int, seed: int) -> dict[str, dict]:
    """Per family: ``label`` under setting ``on`` vs ``off`` (None: ``on`` alone) from an eval folder."""
    grouped: dict[str, dict] = {}
    for task in tasks:
        recs_on = load_records(eval_folder, label, on, task) if on else []
        recs_off = load_records(eval_folder, label, off, task) if off else []
        if recs_on:
            grouped.setdefault(family(task), {})[task] = (recs_on, recs_off)
    return {fam: f for fam, per in grouped.items() if (f := family_paired(per, n_resamples, seed))}


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


def calls_ran(records: Sequence[Mapping]) -> int:
    """Tool calls that were actually run while answering (the ones that cost time).

    >>> calls_ran([{"calls": [{"reason": ""}, {"reason": "closed_without_arrow"}]}, {"calls": []}])
    1
    """
    return sum(1 for r in records for c in r.get("calls", []) if c.get("reason", "") in RAN)


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


def measure_latency(tool: str, inputs: Sequence[str], n: int) -> dict:
    """Mean seconds of the tool itself over up to ``n`` stored inputs, run uncached here (the eval
    records keep no per-call timing)."""
    import time

    from ..tools import get_tool

    runner = get_tool(tool)
    picked = list(dict.fromkeys(inputs))[:n]
    if not picked:
        return {"tool": tool, "calls": 0, "mean_seconds": None, "how": "no stored call to time"}
    runner(picked[0])  # the first call builds indexes and loads what the tool needs
    t0 = time.perf_counter()
    for text in picked:
        runner(text)
    return {"tool": tool, "calls": len(picked), "mean_seconds": (time.perf_counter() - t0) / len(picked),
            "how": f"measured here: {len(picked)} distinct inputs (calls that ran while answering, then the "
                   "annotation's executed candidates) re-run uncached after one warm-up call"}


# ---------------------------------------------------------------- collecting a study
def _stages(out: Path) -> dict:
    path = out / "stages.json"
    return {k: v.get("seconds") for k, v in read_json(path).items()} if path.is_file() else {}


def _settings(folder: Path) -> dict:
    path = folder / "experiment.json"
    return read_json(path)["settings"] if path.is_file() else {}


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


def tool_inputs(records: Sequence[Mapping], candidates: Path, tools: Sequence[str]) -> list[str]:
    """Inputs to time a tool on: the calls that ran while answering, then the annotation's executed
    candidates (there are hundreds of those, and only a handful of calls at eval time)."""
    inputs = [c.get("input", "") for r in records for c in r.get("calls", [])
              if c.get("reason", "") in RAN and c.get("tool") in tools]
    if candidates.is_file():
        with candidates.open(encoding="utf-8") as fh:
            for line in fh:
                c = json.loads(line)
                if c.get("tool") in tools and c.get("input") and c.get("result") is not None:
                    inputs.append(c["input"])
    return inputs


def decode_seconds(records: Sequence[Mapping]) -> float | None:
    """Wall seconds the model spent answering these records (each carries its batch's time shared
    among the batch's examples).

    >>> decode_seconds([{"seconds": 0.25}, {"seconds": 0.5}, {}]), decode_seconds([])
    (0.75, None)
    """
    return sum(float(r.get("seconds") or 0.0) for r in records) if records else None


def collect_sweep(study, n: int, seed: int, latency: Callable | None = None) -> dict:
    out = {"recipes": {}}
    for recipe, base, cfg in sweep_configs(study):
        ref = {label: families_of(base / "eval", cfg.tasks, label, "disabled", None, n, seed)
               for label in ("base", "cc")}
        points, ran = [], []
        for value in study.values:
            v = base / value_label(study, value)
            marker = v / "annotate" / "refilter.json"
            info = read_json(marker) if marker.is_file() else {}
            found = tools_setting(v / "eval", prefer=Setting(cfg.k_eval))
            on = found.name if found else None
            recs = [r for t in cfg.tasks for r in (load_records(v / "eval", LABEL, on, t) if on else [])]
            ran += recs
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
            inputs = tool_inputs(ran, base / "annotate" / "candidates.jsonl", cfg.tools)
            entry["latency"] = (latency or measure_latency)(cfg.tools[0], inputs, study.latency_calls)
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


# ---------------------------------------------------------------- report.md and plots
def _acc(stats: Mapping | None, key: str) -> str:
    return results.with_ci(stats and stats[key])


def _sweep_blocks(kind: str, res: Mapping, plots: dict) -> list[R.Block]:
    sym = "τf" if kind == "tau" else "λ"
    blocks = []
    for recipe, e in res["recipes"].items():
        blocks += [R.Block("h2", f"{recipe} ({', '.join(e['tools'])}; M = {e['model']})")]
        blocks += [R.Block("p", f) for f in e["findings"]]
        if recipe in plots:
            blocks.append(R.Block("img", f"{recipe}: accuracy, call rate and C* against {sym}", path=plots[recipe]))
        header = [sym, "C* texts", "C* calls", "family", "n", "tools % [95% CI]", "disabled % [95% CI]",
                  "tools − disabled [95% CI]", "calls %"]
        if kind == "cost":
            header += ["calls run", "tool time saved", "answering: tools − disabled"]
        rows = []
        for p in e["points"]:
            for fam, s in (p["families"] or {"–": None}).items():
                row = [f"{p['value']:g}", p["c_star_texts"], p["c_star_calls"], fam, s["n"] if s else 0,
                       _acc(s, "tools"), _acc(s, "disabled"), results.diff_ci(s), pct(s and s["call_rate"])]
                if kind == "cost":
                    saved, over = p.get("latency_saved_s"), tool_overhead(p)
                    row += [p["calls_ran"], "–" if saved is None else signed_seconds(saved),
                            "–" if over is None else signed_seconds(over)]
                rows.append(row)
        blocks.append(R.Block("table", header=header, rows=rows))
        ref_rows = [[name, fam, s["n"], _acc(s, "tools")] for label, name in (("base", "base"), ("cc", "+CC"))
                    for fam, s in e["reference"][label].items()]
        if ref_rows:
            blocks += [R.Block("p", "The references, trained and evaluated once (calls disabled):"),
                       R.Block("table", header=["run", "family", "n", "accuracy % [95% CI]"], rows=ref_rows)]
        if kind == "cost" and e.get("latency"):
            lat = e["latency"]
            mean = "–" if lat["mean_seconds"] is None else f"{1000 * lat['mean_seconds']:.2f} ms"
            blocks.append(R.Block("p", f"Tool latency: {lat['tool']} {mean} per call ({lat['how']}); tool time "
                                       "saved = (calls run at the smallest λ − calls run at λ) × that mean. "
                                       "'Answering: tools − disabled' is the model's whole extra wall time with "
                                       "tools on (writing the call, running it, reading its result), summed over "
                                       "the answers; a call's cost is mostly there, not in the tool."))
    return blocks


def _scale_table(rows: Sequence[Mapping]) -> R.Block:
    return R.Block("table", header=["family", "model", "parameters", "C* calls / texts", "n", "tools % [95% CI]",
                                    "disabled % [95% CI]", "tools − disabled, paired [95% CI]", "calls %"],
                   rows=[[r["family"], r["model"], paper.size_name(r["params"]),
                          "–" if r.get("c_star_calls") is None else f"{r['c_star_calls']} / {r['c_star_texts']}",
                          r["n"], _acc(r, "tools"), _acc(r, "disabled"), results.diff_ci(r), pct(r["call_rate"])]
                         for r in sorted(rows, key=lambda r: (r["family"], r["params"] or 0))])


def _arrow_changes(rows: Sequence[Mapping]) -> str:
    """Which answers forcing the arrow changed: a row equal to its k10 row is explained by zero.

    >>> _arrow_changes([{"model": "m", "family": "math", "changed_by_arrow": {"answers": 120, "differ": 0}}])
    'Answers the forced arrow changed: m (math) 0 of 120.'
    """
    parts = [f"{r['model']} ({r['family']}) {r['changed_by_arrow']['differ']} of {r['changed_by_arrow']['answers']}"
             for r in rows if r.get("changed_by_arrow")]
    return f"Answers the forced arrow changed: {', '.join(parts)}." if parts else ""


def _scale_blocks(res: Mapping, plot_name: str | None) -> list[R.Block]:
    blocks = [R.Block("h2", "Ours: the tool-trained model with tools vs calls disabled"), _scale_table(res["rows"])]
    if res.get("forced_rows"):
        blocks += [R.Block("h2", "The same models with '->' forced (a deviation, beside the paper's decoding)"),
                   R.Block("p", "Once a call's input is closed the decoder writes ' ->', so the call runs; the model "
                                "still chooses whether to call, which tool and with what input. "
                                + _arrow_changes(res["forced_rows"])),
                   _scale_table(res["forced_rows"])]
    if plot_name:
        blocks.append(R.Block("img", "accuracy against parameters, ours and the paper's", path=plot_name))
    p = res["paper"]
    prow = [[name] + [f"{t:g} / {d:g}" for fam in p["figure_4"] for t, d in
                      [(p["figure_4"][fam]["tools"][i], p["figure_4"][fam]["disabled"][i])]]
            for i, name in enumerate(p["names"])]
    blocks += [R.Block("h2", "The paper's Figure 4 (tools / disabled, %)"),
               R.Block("p", f"Averaged over each family's benchmarks, {p['note']}. The gap opens (≥ 1 point from "
                            "there on) at: " + ", ".join(f"{f} {paper.size_name(s)}" for f, s in p["emergence"].items())
                       + "."),
               R.Block("table", header=["model"] + list(p["figure_4"]), rows=prow)]
    return blocks


def plot_scale(res: Mapping, folder: Path) -> str | None:
    plt = _pyplot()
    fams = sorted({r["family"] for r in res["rows"]})
    if plt is None or not fams:
        return None
    fig, axes = plt.subplots(1, len(fams), figsize=(3.6 * len(fams), 3.2), squeeze=False)
    for ax, fam in zip(axes[0], fams):
        rows = sorted((r for r in res["rows"] if r["family"] == fam and r["params"]), key=lambda r: r["params"])
        for key, style in (("tools", "-o"), ("disabled", "--s")):
            xs = [r["params"] for r in rows]
            ys = [100 * r[key]["accuracy"] for r in rows]
            err = [[100 * (r[key]["accuracy"] - r[key]["ci95"][0]) for r in rows],
                   [100 * (r[key]["ci95"][1] - r[key]["accuracy"]) for r in rows]]
            ax.errorbar(xs, ys, yerr=err, fmt=style, capsize=2, label=f"ours, {key}")
        forced = sorted((r for r in res.get("forced_rows", []) if r["family"] == fam and r["params"]),
                        key=lambda r: r["params"])
        if forced:
            ax.plot([r["params"] for r in forced], [100 * r["tools"]["accuracy"] for r in forced], ":^",
                    label="ours, tools, '->' forced")
            ax.legend(fontsize="x-small")
        if fam in res["paper"]["figure_4"]:
            ref = res["paper"]["figure_4"][fam]
            ax.plot(res["paper"]["sizes"], ref["tools"], "-o", color="grey", mfc="none", label="paper, tools")
            ax.plot(res["paper"]["sizes"], ref["disabled"], "--s", color="grey", mfc="none", label="paper, disabled")
        ax.set_xscale("log")
        ax.set_xticks([1e8, 3e8, 1e9, 3e9, 1e10], ["100M", "300M", "1B", "3B", "10B"])
        ax.minorticks_off()
        ax.set_title(fam)
        ax.set_xlabel("parameters")
        ax.set_ylabel("accuracy (%)")
    axes[0][0].legend(fontsize="x-small")
    return _save(plt, fig, folder / "scaling.png")


def plot_sweep(kind: str, recipe: str, entry: Mapping, folder: Path) -> str | None:
    plt = _pyplot()
    pts = [p for p in entry["points"] if p["families"]]
    if plt is None or not pts:
        return None
    sym = "τf" if kind == "tau" else "λ (nats)"
    fig, axes = plt.subplots(1, 3, figsize=(10.5, 3.2))
    for fam in sorted({f for p in pts for f in p["families"]}):
        have = [(p["value"], p["families"][fam]) for p in pts if fam in p["families"]]
        for key, style in (("tools", "-o"), ("disabled", "--s")):
            axes[0].errorbar([v for v, _ in have], [100 * s[key]["accuracy"] for _, s in have],
                             yerr=[[100 * (s[key]["accuracy"] - s[key]["ci95"][0]) for _, s in have],
                                   [100 * (s[key]["ci95"][1] - s[key]["accuracy"]) for _, s in have]],
                             fmt=style, capsize=2, label=f"{fam}, {key}")
        axes[1].plot([v for v, _ in have], [100 * s["call_rate"] for _, s in have], "-o", label=fam)
    axes[2].plot([p["value"] for p in entry["points"]], [p["c_star_calls"] or 0 for p in entry["points"]], "-o")
    for ax, title in zip(axes, ("accuracy (%)", "calls on % of inputs", "calls in C*")):
        ax.set_xlabel(sym)
        ax.set_title(title)
    axes[0].legend(fontsize="x-small")
    axes[1].legend(fontsize="x-small")
    return _save(plt, fig, folder / f"{kind}-{recipe}.png")


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log.warning("matplotlib is not installed; results have no plots (pip install matplotlib)")
        return None
    return plt


def _save(plt, fig, path: Path) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path.name


TITLES = {"scale": "Scaling: does tool use emerge with model size here?",
          "tau": "τf on downstream accuracy: what the filter threshold does to the trained model",
          "cost": "Cost-aware filtering: a price λ on each call"}


def write_study(study, command: str, latency: Callable | None = None) -> Path:
    """Recompute everything from the study's run folder and (re)write ``study.results``."""
    folder = Path(study.results)
    folder.mkdir(parents=True, exist_ok=True)
    n, seed = study.bootstrap, study.seed
    if study.name == "scale":
        res = collect_scale(study, n, seed)
        plot_name = plot_scale(res, folder)
        findings = res["findings"]
        body = _scale_blocks(res, plot_name)
    else:
        res = collect_sweep(study, n, seed, latency)
        plots = {r: p for r, e in res["recipes"].items() if (p := plot_sweep(study.name, r, e, folder))}
        findings = [f"[{r} recipe] {f}" for r, e in res["recipes"].items() for f in e["findings"]]
        body = _sweep_blocks(study.name, res, plots)
    m = results.machine()
    res |= {"study": study.name, "command": command, "seed": seed, "commit": git_commit(), "machine": m,
            "settings": to_dict(study), "wall_seconds": _stages(Path(study.out)),
            "interval": f"95% percentile bootstrap, {n} resamples, examples resampled within each task and "
                        "paired between tools and disabled; a family's accuracy is the mean of its tasks'"}
    write_atomic(folder / "results.json", json.dumps(res, indent=1, ensure_ascii=False))
    wall = res["wall_seconds"]
    blocks = [R.Block("h1", f"Study: {study.name} — {TITLES[study.name]}"), R.Block("h2", "Finding")]
    blocks += [R.Block("p", f) for f in findings] or [R.Block("p", "Nothing is evaluated yet.")]
    blocks += body
    blocks += [R.Block("h2", "Time per step"),
               R.Block("table", header=("step", "wall time"), rows=[(k, clock(v or 0)) for k, v in wall.items()]),
               R.Block("h2", "Settings"), R.Block("code", command),
               R.Block("p", f"Seed {seed}; commit {res['commit']}; {m['cpu']}, {m['cores']} cores, torch {m['torch']} "
                            f"on {m['torch_threads']} threads; fp32 roofline {m['fp32_matmul_gflops']} GFLOP/s. "
                            f"Intervals: {res['interval']}. Fine-tuning is LoRA on a CPU at the recipes' sizes, "
                            "not the paper's full fine-tuning of GPT-J."),
               R.Block("table", header=("setting", "value"), rows=[(k, v) for k, v in res["settings"].items()])]
    (folder / "report.md").write_text(R.to_markdown(blocks), encoding="utf-8")
    log.info("study results in %s", folder)
    return folder
