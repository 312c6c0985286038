"""``results/chaining``: does a model answer better with up to 1, 2 or 3 calls per input, and does a
second annotation round teach it chains that help (issue 31, item 3; beyond the paper)?

Each annotation round's fine-tuned model (round 1: C* as the paper builds it; round 2: C* of
round 1 annotated again with its calls kept, ``annotate --keep-calls``) answers the maths tasks
with the paper's decoding under a call budget of 1 (the paper), 2 and 3 calls per input
(``--max-calls``; an identical call is never run twice). What is measured, per round and budget,
on every problem and on those whose gold equation has two or more operations
(:func:`~toolformer_kit.evidence.funnel.operations`):

* accuracy with a Wilson interval, and the paired difference to the same model at budget 1
  (Newcombe's interval: the same problems, answered twice);
* how many calls ran per input, and the **chain rate**: the share of inputs where a later call's
  input holds an earlier call's result (:func:`~toolformer_kit.annotate.chain.uses_result`, the
  definition C* uses), and how often such a chained answer is right.

The verdict says whether round 2 adds chains that help, or only more calls. Every number is
recomputed from the per-example eval records in ``out/eval``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

from .. import blocks as R
from ..annotate.chain import uses_result
from ..config import ConfigError, config_field as _f, stage_field, to_dict
from ..eval.config import EvalConfig, default_data_dir
from ..eval.metrics import mean, wilson_ci
from ..eval.setting import Setting
from ..eval.verdict import diff_ci, load_records, paired, pct, with_ci
from ..files import write_atomic
from ..plots import pyplot, save
from .funnel import operations
from .results import git_commit
from .study_results import ran_calls

log = logging.getLogger(__name__)

SUBSETS = ("all", "2+ operations")


@dataclass
class ChainingConfig:
    """Which fine-tuned models to compare, under which call budgets, on which tasks."""

    rounds: list[str] = _f([], "the fine-tuned models, NAME=FOLDER each, in round order (e.g. "
                               "round1=runs/math/train-tools,round2=runs/math-r2/train-tools)")
    budgets: list[int] = _f([1, 2, 3], "calls allowed per input; 1 is the paper's", min=1)
    tasks: list[str] = _f(["svamp", "asdiv", "mawps"], "maths tasks (their gold equations give the operations)")
    k: int = stage_field(EvalConfig, "k", note="the paper's k = 10", min=1)
    eval_limit: Optional[int] = stage_field(EvalConfig, "limit", note="default: every problem (~420 of the "
                                                                       "1,473 have 2+ operations)")
    eval_batch: int = stage_field(EvalConfig, "batch_size", 64, min=1)
    out: str = _f("runs/chaining", "run folder (the eval records)")
    results: str = _f("results/chaining", "where the committed evidence goes")
    bootstrap: int = stage_field(EvalConfig, "bootstrap")
    seed: int = stage_field(EvalConfig, "seed")
    dtype: str = stage_field(EvalConfig, "dtype")
    threads: Optional[int] = stage_field(EvalConfig, "threads")
    data_dir: Optional[str] = stage_field(EvalConfig, "data_dir")

    def __post_init__(self) -> None:
        if 1 not in self.budgets:
            raise ConfigError(f"budgets {self.budgets} must include 1 (the paper's budget, what the others are "
                              "compared with)")
        self.budgets = sorted(set(self.budgets))
        self.model_of()  # a malformed entry fails here, before any model loads

    def model_of(self) -> dict[str, str]:
        """``rounds`` as {name: model folder}, in order.

        >>> ChainingConfig(rounds=["round1=runs/a", "round2=runs/b"]).model_of()
        {'round1': 'runs/a', 'round2': 'runs/b'}
        """
        out = {}
        for item in self.rounds:
            name, eq, model = item.partition("=")
            if not eq or not name.strip() or not model.strip():
                raise ConfigError(f"--rounds entry {item!r} must look like NAME=FOLDER, e.g. round1=runs/math/train-tools")
            out[name.strip()] = model.strip()
        return out

    def settings(self) -> list[Setting]:
        return [Setting(self.k, max_calls=b) for b in self.budgets]


# ---------------------------------------------------------------- one record
def chains(record: Mapping) -> list[tuple[Mapping, Mapping]]:
    """(earlier, later) call pairs where the later call's input holds the earlier one's result.

    >>> rec = {"calls": [{"input": "25 - 5", "result": "20", "reason": ""},
    ...                  {"input": "20 / 4", "result": "5", "reason": ""}]}
    >>> [(a["input"], b["input"]) for a, b in chains(rec)]
    [('25 - 5', '20 / 4')]
    """
    calls = ran_calls(record)
    return [(a, b) for j, b in enumerate(calls) for a in calls[:j]
            if uses_result(b.get("input") or "", a.get("result"))]


def in_subset(record: Mapping, subset: str) -> bool:
    """Whether a problem belongs to a subset: every problem, or those whose gold equation has two
    or more operations (an unreadable equation belongs to "all" only)."""
    if subset == "all":
        return True
    return (operations((record.get("meta") or {}).get("equation", "")) or 0) >= 2


# ---------------------------------------------------------------- one cell
def cell(records: Sequence[Mapping], base: Sequence[Mapping]) -> dict:
    """A round's answers at one budget against the same round at budget 1 (``base``), on the
    problems both answered."""
    values = [bool(r["correct"]) for r in records]
    ci = wilson_ci(values)
    chained = [r for r in records if chains(r)]
    p = paired(records, base, keep={r["id"] for r in records})
    return {"n": len(records), "accuracy": mean(values), "ci95": list(ci) if ci else None,
            "vs_one_call": {k: p[k] for k in ("n", "diff", "diff_ci95")},
            "call_rate": mean([bool(ran_calls(r)) for r in records]),
            "calls_per_input": mean([len(ran_calls(r)) for r in records]),
            "chain_rate": mean([bool(chains(r)) for r in records]),
            "chained": len(chained), "chained_right": sum(bool(r["correct"]) for r in chained)}


def collect(cfg: ChainingConfig) -> dict:
    """Per round, budget and subset: the cell, from the eval records in ``cfg.out/eval``."""
    folder = Path(cfg.out) / "eval"
    out: dict = {"rounds": {}, "examples": []}
    for name in cfg.model_of():
        per_budget = {s.max_calls: [r for t in cfg.tasks for r in load_records(folder, name, s.name, t)]
                      for s in cfg.settings()}
        base = per_budget[1]
        out["rounds"][name] = {
            str(b): {sub: cell([r for r in recs if in_subset(r, sub)], [r for r in base if in_subset(r, sub)])
                     for sub in SUBSETS} for b, recs in per_budget.items() if recs}
        out["examples"] += [{"round": name, "budget": b, "id": r["id"], "output": r.get("output", ""),
                             "correct": bool(r["correct"])} for b, recs in per_budget.items() for r in recs
                            if chains(r)][:3]
    out["verdict"] = verdict(out["rounds"])
    return out


def verdict(rounds: Mapping[str, Mapping]) -> str:
    """Whether more calls help each round (on the 2+ operation problems), and whether the last
    round's chains are what helps.

    >>> c = lambda acc, d, lo, chain: {"2+ operations": {"accuracy": acc, "vs_one_call": {"diff": d, "diff_ci95": [lo, 0.3]},
    ...                                                  "chain_rate": chain, "n": 50}}
    >>> print(verdict({"round1": {"1": c(0.2, 0, 0, 0), "3": c(0.21, 0.01, -0.05, 0.0)},
    ...                "round2": {"1": c(0.2, 0, 0, 0), "3": c(0.3, 0.1, 0.02, 0.2)}}))
    round2: up to 3 calls beat one call on problems of 2+ operations (+10.0 points, interval above 0), with chains on 20.0 % of them. round1: no budget beats one call (best +1.0 points).
    """
    if not rounds:
        return "Nothing is evaluated yet."
    parts = []
    for name, budgets in reversed(list(rounds.items())):
        more = [(int(b), c["2+ operations"]) for b, c in budgets.items() if int(b) > 1 and c["2+ operations"]["n"]]
        if not budgets:
            parts.append(f"{name}: nothing is evaluated yet.")
            continue
        if not more:
            parts.append(f"{name}: only the one-call budget is evaluated.")
            continue
        b, best = max(more, key=lambda x: x[1]["vs_one_call"]["diff"] or 0)
        d = best["vs_one_call"]
        if d["diff_ci95"] and d["diff_ci95"][0] > 0:
            parts.append(f"{name}: up to {b} calls beat one call on problems of 2+ operations "
                         f"({pct(d['diff'], signed=True)} points, interval above 0), with chains on "
                         f"{pct(best['chain_rate'])} % of them.")
        else:
            parts.append(f"{name}: no budget beats one call (best {pct(d['diff'] or 0, signed=True)} points).")
    return " ".join(parts)


# ---------------------------------------------------------------- running and writing
def run_chaining(cfg: ChainingConfig, command: str = "") -> Path:
    """Evaluate every round's model under every budget (resumable: the harness skips answered
    problems), then write the results folder."""
    from ..pipeline import stages
    from ..tools import get_tool
    from ..eval.tasks import get_task

    if not cfg.rounds:
        raise ConfigError("--rounds names no model; give NAME=FOLDER for each round's fine-tuned model")
    ecfg = EvalConfig(tasks=list(cfg.tasks), tools=["Calculator"], data_dir=cfg.data_dir, out=str(Path(cfg.out) / "eval"),
                      limit=cfg.eval_limit, batch_size=cfg.eval_batch, seed=cfg.seed, bootstrap=cfg.bootstrap,
                      dtype=cfg.dtype, threads=cfg.threads)
    data_dir = Path(cfg.data_dir).expanduser() if cfg.data_dir else default_data_dir()
    runs = [(name, model, cfg.settings()) for name, model in cfg.model_of().items()]
    stages.evaluate(ecfg, runs, [get_task(t) for t in cfg.tasks], data_dir, {"Calculator": get_tool("Calculator")})
    return write_chaining(cfg, command)


def write_chaining(cfg: ChainingConfig, command: str) -> Path:
    folder = Path(cfg.results)
    folder.mkdir(parents=True, exist_ok=True)
    res = collect(cfg) | {"command": command, "seed": cfg.seed, "commit": git_commit(), "settings": to_dict(cfg),
                          "interval": "accuracy: Wilson 95 %; against one call: Newcombe's paired 95 % interval"}
    plot = plot_budgets(res["rounds"], folder)
    write_atomic(folder / "results.json", json.dumps(res, indent=1, ensure_ascii=False))
    (folder / "report.md").write_text(R.to_markdown(report_blocks(res, plot)), encoding="utf-8")
    log.info("chaining results in %s: %s", folder, res["verdict"])
    return folder


def report_blocks(res: Mapping, plot: str | None) -> list[R.Block]:
    rows = [[name, b, sub, c["n"], with_ci(c), diff_ci(c["vs_one_call"]) if int(b) > 1 else "–",
             pct(c["call_rate"]), f"{c['calls_per_input']:.2f}" if c["calls_per_input"] is not None else "–",
             pct(c["chain_rate"]), f"{c['chained_right']} / {c['chained']}"]
            for name, budgets in res["rounds"].items() for b, subs in budgets.items() for sub, c in subs.items()]
    blocks = [R.Block("h1", "Chained calls: accuracy against the call budget, per annotation round"),
              R.Block("h2", "Verdict"), R.Block("p", res["verdict"]),
              R.Block("table", header=["round", "calls allowed", "problems", "n", "accuracy % [95% CI]",
                                       "vs one call [95% CI]", "calls %", "calls per input", "chains %",
                                       "chained answers right"], rows=rows)]
    if plot:
        blocks.append(R.Block("img", "accuracy against the call budget, per round", path=plot))
    if res["examples"]:
        blocks += [R.Block("h2", "Example chains from evaluation")]
        blocks += [R.Block("code", f"[{e['round']}, up to {e['budget']} calls, {e['id']}, "
                                   f"{'right' if e['correct'] else 'wrong'}] {e['output']}") for e in res["examples"]]
    blocks += [R.Block("h2", "Settings"), R.Block("code", res["command"]),
               R.Block("p", f"Seed {res['seed']}; commit {res['commit']}. Intervals: {res['interval']}.")]
    return blocks


def plot_budgets(rounds: Mapping[str, Mapping], folder: Path) -> str | None:
    plt = pyplot()
    if plt is None or not rounds:
        return None
    fig, axes = plt.subplots(1, len(SUBSETS), figsize=(4 * len(SUBSETS), 3.2), squeeze=False)
    for ax, sub in zip(axes[0], SUBSETS):
        for name, budgets in rounds.items():
            pts = sorted((int(b), c[sub]) for b, c in budgets.items() if c[sub]["n"])
            ax.errorbar([b for b, _ in pts], [100 * c["accuracy"] for _, c in pts],
                        yerr=[[100 * (c["accuracy"] - c["ci95"][0]) for _, c in pts],
                              [100 * (c["ci95"][1] - c["accuracy"]) for _, c in pts]], fmt="-o", capsize=2, label=name)
        ax.set_title(sub)
        ax.set_xlabel("calls allowed per input")
        ax.set_ylabel("accuracy (%)")
        ax.legend(fontsize="small")
    return save(fig, folder / "budget.png").name
