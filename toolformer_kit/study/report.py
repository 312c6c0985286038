"""``results/study-NAME/``: report.md (the finding first), results.json, small PNG plots.

Rendering only: every number comes from :mod:`.study_results`, recomputed from the per-example
eval records of the study's run folder with 95 % bootstrap intervals, and the cost study's tool
latency from what its step stored (:mod:`.latency`); nothing is measured here.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Mapping, Sequence

from .. import blocks as R
from ..config import recorded
from ..files import write_atomic
from ..plots import pyplot, save
from . import paper
from toolformer_kit.measures import results
from toolformer_kit.experiment.cost import clock
from toolformer_kit.measures.results import git_commit, pct
from .results import collect_scale, collect_sweep, signed_seconds, stage_seconds, tool_overhead

log = logging.getLogger(__name__)


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
    plt = pyplot()
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
    return save(fig, folder / "scaling.png").name


def plot_sweep(kind: str, recipe: str, entry: Mapping, folder: Path) -> str | None:
    plt = pyplot()
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
    return save(fig, folder / f"{kind}-{recipe}.png").name


TITLES = {"scale": "Scaling: does tool use emerge with model size here?",
          "tau": "τf on downstream accuracy: what the filter threshold does to the trained model",
          "cost": "Cost-aware filtering: a price λ on each call"}


def report_blocks(res: Mapping, plots: Mapping[str, str]) -> list[R.Block]:
    """The study's report from its results.json alone (``plots``: recipe → PNG name, or ``scale`` →
    the scaling plot), so a committed report re-renders from what was committed."""
    name, seed, m, wall = res["study"], res["seed"], res["machine"], res["wall_seconds"]
    if name == "scale":
        findings, body = res["findings"], _scale_blocks(res, plots.get("scale"))
    else:
        findings = [f"[{r} recipe] {f}" for r, e in res["recipes"].items() for f in e["findings"]]
        body = _sweep_blocks(name, res, dict(plots))
    blocks = [R.Block("h1", f"Study: {name} — {TITLES[name]}"), R.Block("h2", "Finding")]
    blocks += [R.Block("p", f) for f in findings] or [R.Block("p", "Nothing is evaluated yet.")]
    blocks += body
    return blocks + [
        R.Block("h2", "Time per step"),
        R.Block("table", header=("step", "wall time"), rows=[(k, clock(v or 0)) for k, v in wall.items()]),
        R.Block("h2", "Settings"), R.Block("code", res["command"]),
        R.Block("p", f"Seed {seed}; commit {res['commit']}; {m['cpu']}, {m['cores']} cores, torch {m['torch']} "
                     f"on {m['torch_threads']} threads; fp32 roofline {m['fp32_matmul_gflops']} GFLOP/s. "
                     f"Intervals: {res['interval']}. Fine-tuning is LoRA on a CPU at the recipes' sizes, "
                     "not the paper's full fine-tuning of GPT-J."),
        R.Block("table", header=("setting", "value"), rows=[(k, v) for k, v in res["settings"].items()])]


def write_study(study, command: str) -> Path:
    """Recompute everything from the study's run folder and (re)write ``study.results``."""
    folder = Path(study.results)
    folder.mkdir(parents=True, exist_ok=True)
    n, seed = study.bootstrap, study.seed
    if study.name == "scale":
        res = collect_scale(study, n, seed)
        plots = {"scale": p} if (p := plot_scale(res, folder)) else {}
    else:
        res = collect_sweep(study, n, seed)
        plots = {r: p for r, e in res["recipes"].items() if (p := plot_sweep(study.name, r, e, folder))}
    m = results.machine()
    res |= {"study": study.name, "command": command, "seed": seed, "commit": git_commit(), "machine": m,
            "settings": recorded(study), "wall_seconds": stage_seconds(Path(study.out)),
            "interval": f"95% percentile bootstrap, {n} resamples, examples resampled within each task and "
                        "paired between tools and disabled; a family's accuracy is the mean of its tasks'"}
    write_atomic(folder / "results.json", json.dumps(res, indent=1, ensure_ascii=False))
    (folder / "report.md").write_text(R.to_markdown(report_blocks(res, plots)), encoding="utf-8")
    log.info("study results in %s", folder)
    return folder
