"""Write ``results/NAME/``: report.md (verdict first), results.json (every number with its interval,
the command, seed, commit and the machine's roofline) and small PNG plots. Never weights: only
numbers, text and pictures leave ``runs/NAME``.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Mapping, Sequence

from .. import blocks as R
from ..calls import find_calls
from ..annotate.summary import kept_at, kept_table_of
from ..config import recorded, to_dict
from ..eval.perplexity import load_summary
from ..eval.report import _bars
from ..eval.setting import Setting
from ..files import read_json, write_atomic
from ..pipeline.report import deviations
from ..plots import pyplot, save
from toolformer_kit.measures import endpoints, results, specialists, which_tool
from toolformer_kit.measures.ceiling import read_flags
from .cost import clock, estimate
from toolformer_kit.measures.funnel import funnel_rows
from toolformer_kit.measures.oracle import pilot_cells
from toolformer_kit.measures.qa_check import qa_cells
from .recipe import eval_tasks
from toolformer_kit.measures.results import (COLUMNS, LABEL, columns, diff_ci, goal_check, git_commit, headline_rows,
                                             pct, pooled_row, task_funnels, tools_setting, verdict_blocks,
                                             verdict_text, with_ci)

log = logging.getLogger(__name__)


def tool_of(cfg) -> dict[str, str | tuple[str, ...]]:
    """The tools a task's funnel counts as right: the recipe's own; with several, those the task's
    policy lets it call (the paper's rules: QA on LAMA, WikiSearch on the QA sets, both on held-out
    facts), so a call to any tool the task allows is not counted as the wrong tool."""
    def allowed(task) -> str | tuple[str, ...]:
        tools = tuple(name for name in cfg.tools if name not in task.policy.excluded)
        return tools[0] if len(tools) == 1 else tools or task.exercises
    return {t.name: (cfg.tools[0] if len(cfg.tools) == 1 else allowed(t)) for t in eval_tasks(cfg)}


def collect(cfg, out: Path) -> dict:
    """Everything results.json holds, recomputed from the run folder."""
    folder = out / "eval"
    setting = tools_setting(folder, prefer=Setting(cfg.k_eval)) or Setting(cfg.k_eval)
    on, forced = setting.name, setting.arrow().name
    flags = {t: {i for i, v in read_flags(out / "ceiling" / f"{t}.jsonl").items() if v} for t in cfg.tasks} \
        if cfg.ceiling else None
    main = _verdict_of(cfg, folder, on, flags)
    rows, funnels, goal = main["headline"], main["funnel"], main["goal"]
    endpoint = None
    if cfg.endpoint_gain or cfg.endpoint_well_formed:
        recs = [r for t in cfg.tasks for r in results.load_records(folder, LABEL, on, t)]
        endpoint = results.endpoint_check(rows, recs, cfg.endpoint_gain, cfg.endpoint_well_formed)
    extra = {"endpoints": endpoints.evaluate(cfg.endpoints, folder, on, {t.name: t.exercises for t in eval_tasks(cfg)},
                                             flags, cfg.bootstrap, cfg.seed)} if cfg.endpoints else {}
    cols = columns(folder, cfg.tasks, on, cfg.bootstrap, cfg.seed, flags)
    if cfg.which_tool:
        tasks = eval_tasks(cfg)
        extra["which_tool"] = which_tool.tool_use_rows(
            {t.name: results.load_records(folder, LABEL, on, t.name) for t in tasks if t.kind != "perplexity"},
            {t.name: t.exercises for t in tasks}, cfg.tools)
        extra["beside_paper"] = which_tool.beside_paper(_ours(folder, cols, tasks))
    if cfg.specialists:
        extra["specialists"] = specialists.beside_specialists(main["headline"], recorded(cfg), cfg.specialists)
    arrow = _verdict_of(cfg, folder, forced, flags) if (folder / LABEL / forced).is_dir() else {}
    if (folder / LABEL / (dropping := setting.dropping().name)).is_dir():
        extra["empty_dropped"] = {**_verdict_of(cfg, folder, dropping, flags), "against_papers": pooled_row(
            folder, cfg.tasks, dropping, LABEL, cfg.bootstrap, cfg.seed, off=(LABEL, on))["all"]}
    stages = read_json(out / "stages.json") if (out / "stages.json").is_file() else {}
    return {"recipe": cfg.name, "description": cfg.description, "verdict": main["verdict"],
            "goal": goal, "endpoint": endpoint, "probe": read_json(out / "probe.json") if (out / "probe.json").is_file()
            else None, "headline": rows, "columns": cols,
            "against_base": results.against_base(folder, cfg.tasks, on),
            "tools_setting": on, "funnel": funnels, "arrow_forced": arrow, "annotation": _annotation(out),
            "training": _training(out),
            "wall_seconds": {k: v.get("seconds") for k, v in stages.items()}, "estimated_seconds": estimate(cfg),
            "settings": recorded(cfg), "seed": cfg.seed, "commit": git_commit(),
            "tries": earlier_tries(cfg.earlier_tries),
            "pilot": _side_result(cfg.pilot_results), "qa_tool": _side_result(cfg.qa_check_results),
            "machine": results.machine(),  # looked up at call time, so tests can replace it
            "deviations": deviations(to_dict(cfg)), "interval": "accuracies: 95% Wilson score interval; tools − disabled: Newcombe's "
            "paired 95% interval (method 10, Wilson-based, 1998)", **extra}


def _ours(folder: Path, cols: Sequence[Mapping], tasks) -> dict[str, dict]:
    """Our four columns per task as the paper writes them: accuracy in %, perplexity for a
    perplexity task (base, +CC and the tool-trained model, all with calls disabled)."""
    names = {"base": "base", "cc": "+CC", "disabled": "tool-trained, disabled", "tools": "tool-trained, tools"}
    by_task = {c["task"]: c for c in cols}
    out = {}
    for t in tasks:
        if t.kind == "perplexity":
            ppl = {k: load_summary(folder, label, t.name) for k, label in
                   (("base", "base"), ("cc", "cc"), ("disabled", LABEL))}
            out[t.name] = {k: round(s["perplexity"], 2) if s else None for k, s in ppl.items()}
            out[t.name]["tools"] = None
        else:
            row = by_task.get(t.name, {})
            out[t.name] = {k: round(100 * row[n]["accuracy"], 1) if row.get(n) else None for k, n in names.items()}
    return out


def earlier_tries(folders: Sequence[str]) -> list[dict]:
    """Each earlier try's endpoint, command and commit, read from its committed results.json.

    Why: an endpoint tried more than once is only honest with every try beside the last one.
    A folder without results.json is listed as missing rather than dropped.
    """
    tries = []
    for folder in folders:
        path = Path(folder) / "results.json"
        if not path.is_file():
            log.warning("earlier try %s has no results.json: listed as missing", folder)
            tries.append({"results": folder, "missing": True})
            continue
        r = read_json(path)
        tries.append({"results": folder, "endpoint": r.get("endpoint"), "command": r.get("command", ""),
                      "commit": r.get("commit", "")})
    return tries


def _verdict_of(cfg, folder: Path, setting: str, flags) -> dict:
    """Tools (under ``setting``) vs disabled: headline rows, funnels, the goal and its verdict."""
    rows = headline_rows(folder, cfg.tasks, setting, cfg.bootstrap, cfg.seed, flags)
    funnels = task_funnels(folder, cfg.tasks, setting, tool_of(cfg))
    goal = goal_check(rows, cfg.goal_gain, cfg.goal_subset, cfg.goal_call_rate)
    return {"setting": setting, "headline": rows, "funnel": funnels, "goal": goal,
            "verdict": verdict_text(rows, goal, funnels)}


def _annotation(out: Path) -> dict:
    path = out / "annotate" / "summary.json"
    manifest = out / "annotate" / "manifest.json"
    if not path.is_file() and manifest.is_file() and "from_dataset" in (m := read_json(manifest)):
        return {"documents": m["texts"], "c_star_texts": m["c_star_texts"], "c_star_calls": m["calls"],
                "from_dataset": m["from_dataset"], "kept": {}, "tau_f": {}, "top_calls": [],
                "card": _card_summary(Path(m["from_dataset"]))}
    if not path.is_file():
        return {}
    s = read_json(path)
    return {"documents": s["corpus"]["documents"], "c_star_texts": s["c_star_texts"], "kept": kept_table_of(s),
            "c_star_calls": _c_star_calls(out / "annotate" / "corpus.jsonl"), "tau_f": s.get("tau_f", {}),
            "top_calls": s.get("top_calls", [])[:8]}


def _card_summary(dataset: Path) -> dict | None:
    """The published dataset's own figures (its data/summary.json, what its card is written from):
    calls and texts at each τf, by tool, and what annotating it cost."""
    path = dataset / "data" / "summary.json"
    if not path.is_file():
        return None
    s = read_json(path)
    keys = ("windows_annotated", "windows_selected", "annotation_seconds", "windows_per_hour", "scored",
            "candidates_score_ge_0", "target_calls")
    return {**{k: s.get(k) for k in keys},
            "by_tau_f": [{k: row.get(k) for k in ("tau_f", "calls", "texts", "by_tool")} for row in s.get("kept", [])]}


def _c_star_calls(path: Path) -> int | None:
    """Calls in the C* the tool-trained model was fine-tuned on (at the run's own τf)."""
    if not path.is_file():
        return None
    lines = path.read_text(encoding="utf-8").splitlines()
    return sum(len(find_calls(json.loads(line)["text"])) for line in lines if line.strip())


def _training(out: Path) -> dict:
    runs = {}
    for label, name in (("tool-trained", "train-tools"), ("+CC", "train-cc")):
        path = out / name / "train_summary.json"
        if path.is_file():
            s = read_json(path)
            runs[label] = {k: s.get(k) for k in ("best_step", "evaluations", "wall_time_s", "counts", "tools")}
    return runs


# ---------------------------------------------------------------- report.md
def _side_result(folder: str) -> dict | None:
    """A side measurement's results.json (the ceiling pilot, the QA tool check), with where it lies;
    ``{"missing": ...}`` when the recipe names a folder that holds none yet; None when it names none."""
    if not folder:
        return None
    path = Path(folder) / "results.json"
    return {**read_json(path), "folder": folder} if path.is_file() else {"missing": folder}


def _pilot_blocks(p: Mapping | None) -> list[R.Block]:
    """The ceiling pilot (issue 28): what each model does with the right passage in its prompt."""
    if not p:
        return []
    head = [R.Block("h2", "Ceiling pilot: closed-book vs the right passage in the prompt")]
    if p.get("missing"):
        return head + [R.Block("p", f"Not run yet (no results.json in {p['missing']}); run "
                                    f"python benchmarks/ceiling_pilot.py --out {p['missing']}.")]
    header, rows = pilot_cells(p["rows"], p["forms"])
    return head + [R.Block("p", f"Before annotation, each model answered the retrievable examples ({p['retrievable']}; "
                                f"at most {p['limit']} per task) closed-book and with that passage in the prompt "
                                f"({', '.join(p['forms'])}), with the evaluation's decoding; accuracy % with 95 % "
                                f"Wilson intervals, the difference paired (Newcombe). Wall seconds per model: "
                                f"{p['seconds']}. From {p['folder']}."),
                   R.Block("table", header=header, rows=rows)]


def _qa_tool_blocks(q: Mapping | None) -> list[R.Block]:
    """The QA tool's own accuracy: right, wrong, abstained where it can know and where it cannot."""
    if not q:
        return []
    head = [R.Block("h2", "The QA tool's own accuracy")]
    if q.get("missing"):
        return head + [R.Block("p", f"Not run yet (no results.json in {q['missing']}); run "
                                    f"python benchmarks/qa_tool_check.py --out {q['missing']}.")]
    out = list(head)
    for name, a in q["answerers"].items():
        g = a["goal"]
        header, rows = qa_cells(a["rows"])
        out += [R.Block("p", f"Retrieval {name} ({a['seconds_per_question']} s per question): pooled right on "
                             f"retrievable questions {pct(g['right'])} % (goal ≥ 50: {'met' if g['right_met'] else 'not met'}), "
                             f"wrong where abstaining is right {pct(g['wrong'])} % (goal ≤ 10: "
                             f"{'met' if g['wrong_met'] else 'not met'}). From {q['folder']}."),
                R.Block("table", header=header, rows=rows)]
    return out


def _endpoint_blocks(e: Mapping | None) -> list[R.Block]:
    """The endpoint the recipe fixed before the run, and whether it was met: the report's first words."""
    if not e:
        return []
    ci = e["pooled_ci95"]
    diff = "–" if e["pooled_diff"] is None else f"{100 * e['pooled_diff']:+.1f} points" + (
        f" [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]" if ci else "")
    wf = e["well_formed"]
    rate = "no call opened" if wf["rate"] is None else f"{100 * wf['rate']:.0f} % ({wf['well_formed']} of {wf['opened']})"
    verdict = "**met**" if e["met"] else "**not met**"
    required = e["well_formed_required"]
    condition = (f", and ≥ {100 * required:.0f} % of opened calls well-formed (Tool(input) ->)" if required
                 else " (no condition on well-formed calls)")
    return [R.Block("h2", "Pre-registered endpoint"),
            R.Block("p", f"Fixed in the recipe before the run: pooled tools − disabled ≥ +{e['gain']:g} points with "
                         f"its 95 % interval above 0{condition}, with the paper's decoding. Result: {verdict}. Pooled "
                         f"difference {diff} ({'met' if e['gain_met'] else 'not met'}); well-formed {rate}"
                         + (f" ({'met' if e['well_formed_met'] else 'not met'})." if required else "."))]


def _endpoints_blocks(rows: Sequence[Mapping] | None) -> list[R.Block]:
    """The recipe's pre-registered endpoints (:mod:`~toolformer_kit.measures.endpoints`), each met
    or not: the report's first table."""
    if not rows:
        return []

    def observed(r: Mapping) -> str:
        if r["observed"] is None:
            return r.get("note") or "not measured"
        if endpoints.parse_endpoint(r["endpoint"]).paired:
            ci = r["ci95"]
            return f"{r['observed']:+.1f} points" + (f" [{ci[0]:+.1f}, {ci[1]:+.1f}]" if ci else "")
        if r["measure"] == "right_tool":
            return f"{r['observed']:.1f} % ({r['right']} of {r['calls']} calls)"
        return f"{r['observed']:.3f}"

    met = sum(1 for r in rows if r["met"])
    return [R.Block("h2", "Pre-registered endpoints"),
            R.Block("p", f"Fixed in the recipe before the run (measures.endpoints: a gain also needs its 95 % "
                         f"interval above 0, or above the lower bound it states). **{met} of {len(rows)} met.**"),
            R.Block("table", header=("endpoint", "observed [95% CI]", "met"),
                    rows=[(r["endpoint"], observed(r), "**met**" if r["met"] else "not met") for r in rows])]


def _try_cells(t: Mapping) -> tuple:
    e = t.get("endpoint")
    if t.get("missing") or not e:
        return (t["results"], "missing" if t.get("missing") else "no endpoint", "–", "–", t.get("command", ""))
    diff = diff_ci({"diff": e["pooled_diff"], "diff_ci95": e["pooled_ci95"]})
    wf = e["well_formed"]["rate"]
    return (t["results"], "met" if e["met"] else "not met", diff, "–" if wf is None else f"{100 * wf:.0f} %",
            t.get("command", ""))


def _tries_blocks(res: Mapping, here: str) -> list[R.Block]:
    """Every try at the endpoint, oldest first, this run last."""
    tries = res.get("tries") or []
    if not tries:
        return []
    now = {"results": here + " (this run)", "endpoint": res.get("endpoint"), "command": res.get("command", "")}
    return [R.Block("h2", "Every try at this endpoint"),
            R.Block("table", header=("try", "endpoint", "pooled tools − disabled [95% CI]", "well-formed", "command"),
                    rows=[_try_cells(t) for t in [*tries, now]])]


def _probe_blocks(p: Mapping | None) -> list[R.Block]:
    """Whether the tool-trained model calls where C* has a call, and writes the call well-formed."""
    if not p or not p.get("points"):
        return []
    wf = "–" if p["well_formed_rate"] is None else f"{100 * p['well_formed_rate']:.0f} %"
    return [R.Block("h2", "Call probe"),
            R.Block("p", f"On {p['points']} {p['texts']} cut just before their first call, the tool-trained model "
                         f"opened a call right there on {p['opened']} ({100 * p['open_rate']:.0f} %) with the paper's "
                         f"decoding (k {p.get('k', 10)}); {p['well_formed']} of those were well-formed "
                         f"(Tool(input) ->: {wf}) and {p['same_tool']} named the text's own tool.")]


def _which_tool_blocks(rows: Sequence[Mapping] | None, paper: Sequence[Mapping] | None) -> list[R.Block]:
    """Which tool the one model calls on each task, and the paper's GPT-J numbers beside ours."""
    if not rows:
        return []

    def p(v):
        return "–" if v is None else f"{100 * v:.1f}"

    tools = list(rows[0]["called"])
    body = [(r["task"], r["tool"] or "–", r["n"], *(p(r["called"][t]) for t in tools), p(r["none"]),
             p(r["right_tool_rate"]), p(r["accuracy_right_tool"]), p(r["accuracy_other_tool"]), p(r["accuracy_no_call"]))
            for r in rows]
    blocks = [R.Block("h2", "Which tool, where"),
              R.Block("p", "Per task, the share of inputs (%) on which the tool-trained model, with tools, calls each "
                           "tool (an input may call two) or none; of its calls, the share naming the task's own tool; "
                           "and its accuracy (%) on the inputs that called the right tool, only other tools, or none."),
              R.Block("table", header=("task", "its tool", "n", *tools, "no call", "right tool (of calls)",
                                       "accuracy: right tool", "other tool", "no call"), rows=body)]
    if paper:
        def cell(v, mine):
            return "–" if v is None else (f"**{v:g}**" if mine else f"{v:g}")

        prow = [(r["task"], *(f"{cell(r['ours'][c], c in r['ours_higher'])} / {cell(r['paper'][c], False)}"
                              for c in ("base", "cc", "disabled", "tools")),
                 "–" if r["paper_tool_rate"] is None else f"{r['paper_tool_rate']:g}") for r in paper]
        blocks += [R.Block("h2", "Beside the paper (GPT-J 6.7B)"),
                   R.Block("p", "Ours / the paper's, accuracy % (WikiText-2: perplexity, lower is better); bold where "
                                "ours is better. The paper's call rate of the task's tool in the last column."),
                   R.Block("table", header=("task", "base", "+CC", "disabled", "tools", "paper: calls its tool %"),
                           rows=prow)]
    return blocks


def _specialist_blocks(rows: Sequence[Mapping] | None) -> list[R.Block]:
    """This run's tools − disabled beside each committed specialist's (measures.specialists): the one model
    against the specialists, or a variant (LoRA) against the run it varies."""
    if not rows:
        return []

    def gain(v, ci, n):
        return "–" if v is None else f"{v:+.1f}" + (f" [{ci[0]:+.1f}, {ci[1]:+.1f}]" if ci else "") + f" (n {n})"

    body = [(r["specialist"], "not committed", "", "", "", "") if r.get("missing") else
            (r["specialist"], r["task"] + (" (retrievable)" if r["subset"] == "retrievable" else ""),
             gain(r["specialist_gain"], r["specialist_ci95"], r["specialist_n"]),
             gain(r["ours_gain"], r["ours_ci95"], r["ours_n"]),
             "–" if r["difference"] is None else f"{r['difference']:+.1f}" + (
                 " [{:+.1f}, {:+.1f}]".format(*r["difference_ci95"]) if r["difference_ci95"] else ""),
             "yes" if r["same_examples"] else "no") for r in rows]
    return [R.Block("h2", "Against the specialists"),
            R.Block("p", "Tools − disabled in points [95 % CI] of each committed run this one is set against (a "
                         "model fine-tuned on one tool family, as results/math) and of this run's model, per task; "
                         "the difference's interval adds the two half-widths in quadrature (their records are not "
                         "committed, so nothing is paired). Below 0: this run's model gains less (for the one model "
                         "over all tools: sharing one model cost that specialist's gain)."),
            R.Block("table", header=("specialist", "task", "specialist", "this run", "this − specialist",
                                     "same examples"), rows=body)]


def report_blocks(res: Mapping, plots: Sequence[tuple[str, str]]) -> list[R.Block]:
    blocks = _pilot_blocks(res.get("pilot"))
    blocks += _endpoints_blocks(res.get("endpoints")) + _endpoint_blocks(res.get("endpoint")) + _tries_blocks(res, res["settings"].get("results") or "")
    blocks += verdict_blocks(res["headline"], res["verdict"])
    blocks += _probe_blocks(res.get("probe")) + _arrow_blocks(res) + _dropped_blocks(res)
    blocks += [R.Block("img", title, path=name) for title, name in plots]
    blocks += _columns_blocks(res) + _which_tool_blocks(res.get("which_tool"), res.get("beside_paper"))
    blocks += _specialist_blocks(res.get("specialists"))
    blocks += _base_blocks(res.get("against_base")) + _funnel_blocks(res) + _qa_tool_blocks(res.get("qa_tool"))
    blocks += _annotation_blocks(res) + _training_blocks(res) + _cost_blocks(res)
    blocks += [R.Block("h2", "Deviations from the paper")] + [R.Block("p", "⚠ " + d) for d in res["deviations"]]
    m = res["machine"]
    blocks += [R.Block("h2", "Settings"), R.Block("code", res["command"]),
               R.Block("p", f"Seed {res['seed']}; commit {res['commit']}; {m['cpu']}, {m['cores']} cores, torch "
                            f"{m['torch']} on {m['torch_threads']} threads; fp32 roofline {m['fp32_matmul_gflops']} "
                            f"GFLOP/s ({m['roofline_note']}). Intervals: {res['interval']}."),
               R.Block("table", header=("setting", "value"), rows=[(k, v) for k, v in res["settings"].items()])]
    return blocks


def _arrow_blocks(res: Mapping) -> list[R.Block]:
    arrow = res.get("arrow_forced") or {}
    if not arrow:
        return []
    header, rows = funnel_rows(arrow["funnel"].items()) if arrow["funnel"] else ((), [])
    return [R.Block("h2", f"The same model with '->' forced ({arrow['setting']}, a deviation)"),
            R.Block("p", "Decoding as above, except that once a call's input is closed by its ')' the decoder "
                         "writes ' ->' itself, so the tool runs: this constrains the call's syntax, never which "
                         "tool, where, or with what input. " + arrow["verdict"]),
            *verdict_blocks(arrow["headline"])[1:]] + (
        [R.Block("table", header=header, rows=rows)] if rows else [])


def _dropped_blocks(res: Mapping) -> list[R.Block]:
    dropped = res.get("empty_dropped") or {}
    if not dropped:
        return []
    p = dropped["against_papers"]
    return [R.Block("h2", f"The same model with empty calls taken out ({dropped['setting']}, a deviation)"),
            R.Block("p", "Decoding as above, except that a call whose tool returned nothing is removed from the text "
                         "before the model goes on, as if it had not been opened (the paper writes 'Tool(input) ->]' "
                         "and continues after it). Against the paper's decoding on the same examples, pooled: "
                         f"{pct(p['tools']['accuracy'])} vs {pct(p['disabled']['accuracy'])}, "
                         f"{diff_ci(p)} (n {p['n']}). " + dropped["verdict"]),
            *verdict_blocks(dropped["headline"])[1:]]


def _columns_blocks(res: Mapping) -> list[R.Block]:
    names = [c[2] for c in COLUMNS] + ["tool-trained, tools"]
    sub = any(k.endswith("(retrievable)") for row in res["columns"] for k in row)
    header = ["task", *names] + ([n + " (retrievable)" for n in names] if sub else [])
    rows = [[row["task"], *(with_ci(row.get(n)) for n in names)]
            + ([with_ci(row.get(n + " (retrievable)")) for n in names] if sub else []) for row in res["columns"]]
    return [R.Block("h2", "All four columns"),
            R.Block("p", "Base model, +CC (fine-tuned on the same texts without calls), and the tool-trained model "
                         "with calls disabled and with tools (the paper's Tables 3–7); accuracy % [95% CI]."),
            R.Block("table", header=header, rows=rows)]


def _base_blocks(rows: Sequence[Mapping] | None) -> list[R.Block]:
    if not rows:
        return []
    body = [(r["task"], r["n"], with_ci(r["tools"]), with_ci(r["disabled"]), diff_ci(r)) for r in rows]
    return [R.Block("h2", "Against the base model"),
            R.Block("p", "The tool-trained model with tools vs the model it was fine-tuned from, calls disabled, on the "
                         "same examples (not pre-registered; it says whether the gain over calls disabled is also a "
                         "gain over the untrained model); accuracy % [95% CI], paired difference in points."),
            R.Block("table", header=("task", "n", "tool-trained, tools % [95% CI]", "base % [95% CI]",
                                     "tools − base, paired [95% CI]"), rows=body)]


def _funnel_blocks(res: Mapping) -> list[R.Block]:
    if not res["funnel"]:
        return []
    header, rows = funnel_rows(res["funnel"].items())
    return [R.Block("h2", "Tool-use funnel (tool-trained, with tools)"),
            R.Block("p", "% of all inputs (count) that reach each step, each step within the one before: a call "
                         "opened → well-formed (reached '->' as Tool(input)) → the task's tool → a useful result "
                         "(maths: the gold answer or an intermediate of its gold equation; search: contains a gold "
                         "answer) → correct answer. Inputs without a call, and how many of them were right, beside."),
            R.Block("table", header=header, rows=rows)]


def _card_blocks(card: Mapping | None) -> list[R.Block]:
    """The dataset card's headline: what was kept at each τf, and what annotating it cost."""
    if not card or not card.get("by_tau_f"):
        return []
    rows = [(f"{r['tau_f']:g}", r["calls"], r["texts"], ", ".join(f"{t}: {n}" for t, n in (r.get("by_tool") or {}).items()))
            for r in card["by_tau_f"]]
    hours = (card.get("annotation_seconds") or 0) / 3600
    return [R.Block("p", f"From the dataset's card: {card.get('windows_annotated')} of {card.get('windows_selected')} "
                         f"selected windows annotated ({hours:.1f} h of compute, {card.get('windows_per_hour')} windows "
                         f"per hour); {card.get('scored')} candidates scored, {card.get('candidates_score_ge_0')} with "
                         f"score ≥ 0; target {card.get('target_calls')} calls after merging at the recipe's τf."),
            R.Block("table", header=("τf", "calls after merging", "texts", "by tool"), rows=rows)]


def _annotation_blocks(res: Mapping) -> list[R.Block]:
    a = res["annotation"]
    if not a:
        return []
    if a.get("from_dataset"):
        return [R.Block("h2", "Annotation (C*)"),
                R.Block("p", f"From the published dataset {a['from_dataset']} (its card gives how it was made): "
                             f"{a['documents']} annotated texts, {a['c_star_texts']} with a kept call, "
                             f"{a['c_star_calls']} calls after merging; this is the C* the tool-trained model "
                             "learned from.")] + _card_blocks(a.get("card"))
    taus = (0.5, 1.0, 2.0)
    kept = lambda k, t: f"{kept_at(k, t)['calls']} / {kept_at(k, t)['texts']}"  # noqa: E731
    rows = [(tool, k.get("scored", 0), *(kept(k, t) for t in taus)) for tool, k in a["kept"].items()]
    blocks = [R.Block("h2", "Annotation (C*)"),
              R.Block("p", f"{a['documents']} texts annotated; {a['c_star_texts']} kept at least one call"
                           + (f", {a['c_star_calls']} calls in all after merging (the best call per position)"
                              if a.get("c_star_calls") is not None else "")
                           + (f" (the run's τf: {', '.join(f'{t} {v:g}' for t, v in a['tau_f'].items())}); this is "
                              "the C* the tool-trained model learned from" if a.get("tau_f") else "") + "."),
              R.Block("table", header=("tool", "scored", "kept candidates / texts at τf 0.5 (before merging)", "at τf 1.0",
                                                  "at τf 2.0"),
                      rows=rows)]
    return blocks + [R.Block("p", f"[{t['tool']}, score {t['score']}] {t['in_context']}") for t in a["top_calls"]]


def _training_blocks(res: Mapping) -> list[R.Block]:
    """Each fine-tuning run's kept step and dev perplexity curve: why that checkpoint was kept."""
    runs = res.get("training") or {}
    rows = []
    for label, t in runs.items():
        counts = t.get("counts") or {}
        curve = ", ".join(f"{step}: {ppl:.2f}" for step, ppl in t.get("evaluations") or [])
        rows.append((label, counts.get("training sequences", "–"), t.get("best_step", "–"), curve or "–",
                     counts.get("dev source", "–")))
    if not rows:
        return []
    return [R.Block("h2", "Fine-tuning"),
            R.Block("p", "The checkpoint kept by each run (lowest dev perplexity, or the last step with "
                         "train_keep last), and the dev perplexity at each evaluation."),
            R.Block("table", header=("run", "training sequences", "kept step", "dev perplexity by step",
                                     "dev texts"), rows=rows)]


def _cost_blocks(res: Mapping) -> list[R.Block]:
    est = res["estimated_seconds"]
    wall = res["wall_seconds"]
    rows = [(s, clock(wall[s]) if wall.get(s) is not None else "–", clock(est.get(s, 0))) for s in est if est.get(s)]
    total = sum(v for v in wall.values() if v)
    return [R.Block("h2", "Time per stage"),
            R.Block("p", f"Wall time on this machine: {clock(total)} in all (the estimate is the recipe's sizing)."),
            R.Block("table", header=("stage", "wall time", "estimated"), rows=rows)]


# ---------------------------------------------------------------- plots and files
def plot(res: Mapping, folder: Path) -> list[tuple[str, str]]:
    """Small PNGs: the four columns per task, and the funnel per task; none without matplotlib."""
    plt = pyplot()
    if plt is None:
        return []

    made = []
    names = [c[2] for c in COLUMNS] + ["tool-trained, tools"]
    tasks = [r["task"] for r in res["columns"]]
    series = {n: [((r.get(n) or {}).get("accuracy"), (r.get(n) or {}).get("ci95")) for r in res["columns"]]
              for n in names}
    arrow = {r["task"]: r["all"]["tools"] for r in (res.get("arrow_forced") or {}).get("headline", [])}
    if arrow:  # the forced-arrow decoding as a fifth bar, beside (never instead of) the paper's
        series["tool-trained, tools, '->' forced"] = [((arrow.get(t) or {}).get("accuracy"),
                                                       (arrow.get(t) or {}).get("ci95")) for t in tasks]
    series = {n: v for n, v in series.items() if any(acc is not None for acc, _ in v)}  # a column not run: no bar
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(tasks) + 2), 3.6))
    _bars(ax, tasks, series)
    ax.set_title(f"{res['recipe']}: accuracy with 95% intervals")
    save(fig, folder / "accuracy.png")
    made.append(("accuracy per task and column", "accuracy.png"))
    if res["funnel"]:
        fig, ax = plt.subplots(figsize=(6, 3.4))
        forced = (res.get("arrow_forced") or {}).get("funnel", {})
        for (task, f), style in [*((x, "-") for x in res["funnel"].items()), *((x, "--") for x in forced.items())]:
            ax.plot([s["step"] for s in f["steps"]], [100 * (s["share"] or 0) for s in f["steps"]], marker="o",
                    linestyle=style, label=task + (", '->' forced" if style == "--" else ""))
        ax.set_ylabel("% of inputs")
        ax.set_title("tool-use funnel (tool-trained, with tools)")
        ax.legend(fontsize="small")
        save(fig, folder / "funnel.png")
        made.append(("tool-use funnel", "funnel.png"))
    return made


def write_results(cfg, out: Path, command: str) -> Path:
    """Recompute everything from ``out`` and (re)write ``cfg.results``; returns that folder."""
    folder = Path(cfg.results)
    folder.mkdir(parents=True, exist_ok=True)
    res = collect(cfg, out) | {"command": command}
    plots = plot(res, folder)
    write_atomic(folder / "results.json", json.dumps(res, indent=1, ensure_ascii=False))
    title = f"Evidence: {cfg.name}" + (f" — {cfg.description}" if cfg.description else "")
    (folder / "report.md").write_text(R.to_markdown([R.Block("h1", title), *report_blocks(res, plots)]),
                                      encoding="utf-8")
    shutil.copyfile(folder / "report.md", out / "report.md")
    log.info("results in %s: %s", folder, res["verdict"])
    return folder


__all__ = ["write_results", "collect", "pct", "LABEL"]
