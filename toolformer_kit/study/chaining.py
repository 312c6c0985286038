"""``results/chaining``: does a model answer better with up to 1, 2 or 3 calls per input, and does a
second annotation round teach it chains that help (issue 31, item 3; beyond the paper)?

Each annotation round's fine-tuned model (round 1: C* as the paper builds it; round 2: C* of
round 1 annotated again with its calls kept, ``annotate --keep-calls``) answers the maths tasks
with the paper's decoding under a call budget of 1 (the paper), 2 and 3 calls per input
(``--max-calls``; an identical call is never run twice). What is measured, per round and budget,
on every problem and on those whose gold equation has two or more operations
(:func:`~toolformer_kit.measures.funnel.operations`):

* accuracy with a Wilson interval, and the paired difference to the same model at budget 1
  (Newcombe's interval: the same problems, answered twice);
* the later rounds against the first, paired at each budget (the same problems);
* how many calls ran per input, and the **chain rate**: the share of inputs where a later call's
  input holds an earlier call's result (:func:`~toolformer_kit.annotate.chain.uses_result`, the
  definition C* uses), and how often such a chained answer is right.

Beside them, what each round's model was fine-tuned on (read from its ``train_summary.json``):
how many of its training texts hold a chain, with examples. The verdict says whether round 2 adds
chains that help, or only more calls. Every number is recomputed from the per-example eval records
in ``out/eval``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

from .. import blocks as R
from ..annotate.chain import text_chains, uses_result
from ..calls import find_calls, strip_calls
from ..config import ConfigError, config_field as _f, stage_field, to_dict
from ..eval.config import EvalConfig, default_data_dir
from ..eval.metrics import mean, wilson_ci
from ..eval.setting import Setting
from ..eval.verdict import diff_ci, load_records, paired, pct, with_ci
from ..files import read_json, write_atomic
from ..plots import pyplot, save
from toolformer_kit.measures.funnel import operations
from toolformer_kit.measures.results import git_commit
from .results import ran_calls

log = logging.getLogger(__name__)

SUBSETS = ("all", "2+ operations")
MAX_BUDGET = 10  # calls per input: each adds CALL_TOKEN_BUDGET tokens to the decoding budget
# Settings that change no number of the results (where records go, speed, what is listed beside).
NOT_EVIDENCE = ("out", "results", "threads", "data_dir", "eval_batch", "other_tries", "replace_results")


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
    typed: bool = _f(False, "also decode at the largest budget with each call's input held to its tool's grammar "
                            "(--constrain-inputs), reported beside the unconstrained decoding, never instead of it")
    eval_batch: int = stage_field(EvalConfig, "batch_size", 64, min=1)
    other_tries: list[str] = _f([], "results folders of other tries at this measurement (another decoder, other "
                                    "models), listed beside this one: their verdict, command and commit")
    out: str = _f("runs/chaining", "run folder (the eval records)")
    results: str = _f("results/chaining", "where the committed evidence goes")
    bootstrap: int = stage_field(EvalConfig, "bootstrap")
    seed: int = stage_field(EvalConfig, "seed")
    dtype: str = stage_field(EvalConfig, "dtype")
    threads: Optional[int] = stage_field(EvalConfig, "threads")
    data_dir: Optional[str] = stage_field(EvalConfig, "data_dir")
    replace_results: bool = _f(False, "replace a --results folder whose results.json another configuration wrote")

    def __post_init__(self) -> None:
        if max(self.budgets, default=1) > MAX_BUDGET:
            from ..eval.harness import CALL_TOKEN_BUDGET

            raise ConfigError(f"budgets {self.budgets}: at most {MAX_BUDGET} calls per input (each call takes up to "
                              f"{CALL_TOKEN_BUDGET} tokens of the model's context); lower --budgets")
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
            if name.strip() in out:
                raise ConfigError(f"--rounds names {name.strip()!r} twice; give each round its own name")
            out[name.strip()] = model.strip()
        return out

    def settings(self) -> list[Setting]:
        """Every budget with the paper's decoding; with ``typed``, the largest budget again with
        each call's input held to its tool's grammar.

        >>> [s.name for s in ChainingConfig(rounds=["r=m"], budgets=[1, 3], typed=True).settings()]
        ['k10', 'k10+calls3', 'k10+calls3+typed']
        """
        free = [Setting(self.k, max_calls=b) for b in self.budgets]
        return free + ([Setting(self.k, max_calls=max(self.budgets), typed=True)] if self.typed else [])


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
    return {"n": len(records), "accuracy": mean(values), "ci95": list(ci) if ci else None,
            "vs_one_call": paired_diff(records, base),
            "call_rate": mean([bool(ran_calls(r)) for r in records]),
            "calls_per_input": mean([len(ran_calls(r)) for r in records]),
            "chain_rate": mean([bool(chains(r)) for r in records]),
            "repeat_rate": mean([any(c.get("reason") == "repeated" for c in r.get("calls", [])) for r in records]),
            "chained": len(chained), "chained_right": sum(bool(r["correct"]) for r in chained)}


def paired_diff(records: Sequence[Mapping], other: Sequence[Mapping]) -> dict:
    """``records`` against ``other`` (one call, the first round, the unconstrained run), paired on
    the problems both answered."""
    p = paired(records, other)
    return {k: p[k] for k in ("n", "diff", "diff_ci95")}


def collect(cfg: ChainingConfig) -> dict:
    """Per round, budget and subset: the cell, from the eval records in ``cfg.out/eval``; each
    later round also against the first."""
    folder = Path(cfg.out) / "eval"
    out: dict = {"rounds": {}, "examples": [], "training": {}, "typed": {}}
    first: dict | None = None
    seen: set = set()  # chains in the training data of the rounds so far
    for name, model in cfg.model_of().items():
        read = {s: [r for t in cfg.tasks for r in load_records(folder, name, s.name, t)] for s in cfg.settings()}
        per_budget = {s.max_calls: recs for s, recs in read.items() if not s.typed}
        for s in (s for s in read if s.typed and read[s]):
            out["typed"].setdefault(name, {})[str(s.max_calls)] = typed_cells(read[s], per_budget[s.max_calls])
        out["rounds"][name] = {str(b): _cells(recs, per_budget[1], None if first is None else first.get(b, []))
                               for b, recs in per_budget.items() if recs}
        first = per_budget if first is None else first
        out["examples"] += [{"round": name, "budget": b, "id": r["id"], "output": r.get("output", ""),
                             "correct": bool(r["correct"])} for b, recs in per_budget.items() for r in recs
                            if chains(r)][:3]
        out["training"][name] = training_of(model, seen)
    out["verdict"] = verdict(out["rounds"])
    return out


def _cells(recs: Sequence[Mapping], base: Sequence[Mapping], first: Sequence[Mapping] | None) -> dict:
    """Each subset's cell; ``first`` (the first round at this budget) adds ``vs_first_round``."""
    out = {}
    for sub in SUBSETS:
        mine = [r for r in recs if in_subset(r, sub)]
        out[sub] = cell(mine, [r for r in base if in_subset(r, sub)])
        if first is not None:
            out[sub]["vs_first_round"] = paired_diff(mine, [r for r in first if in_subset(r, sub)])
    return out


def typed_cells(typed: Sequence[Mapping], free: Sequence[Mapping]) -> dict:
    """Inputs held to the tool's grammar against the same budget unconstrained, per subset."""
    out = _cells(typed, free, None)
    for c in out.values():
        c["vs_unconstrained"] = c.pop("vs_one_call")
    return out


def training_of(model: str, seen: set | None = None) -> dict:
    """What a round's model was fine-tuned on, from its ``train_summary.json``: the data file and
    the chains written in its texts (:func:`data_chains`; ``seen``, the chains of the rounds
    before, tells the new ones), the kept step and the dev curve. Empty where the folder has no
    summary (an embedded model, or a model trained elsewhere)."""
    path = Path(model) / "train_summary.json"
    if not path.is_file():
        return {}
    summary = json.loads(path.read_text(encoding="utf-8"))
    config = summary.get("config") or {}
    data = Path(config.get("data") or "")
    out = {"data": str(data), "best_step": summary.get("best_step"), "steps": config.get("max_steps"),
           "evaluations": summary.get("evaluations"), "wall_time_s": summary.get("wall_time_s"),
           "hyperparameters": summary.get("hyperparameters")}
    if data.is_file():
        texts = [json.loads(line)["text"] for line in data.read_text(encoding="utf-8").splitlines() if line.strip()]
        out |= data_chains(texts, seen if seen is not None else set())
    return out


def data_chains(texts: Sequence[str], seen: set, n_examples: int = 3) -> dict:
    """Chains written in training texts: how many texts hold one, how many pairs, how many are new
    (not in ``seen``, which gains them), and the first ``n_examples`` new ones as the stretch of
    text from the earlier call to the later.

    >>> t = "Of 25, 5 left: [Calculator(25 - 5) -> 20] 20 in 4 groups, [Calculator(20 / 4) -> 5] 5 each."
    >>> seen = set()
    >>> d = data_chains([t, "No call."], seen)
    >>> d["texts"], d["texts_with_chain"], d["chain_pairs"], d["new_chain_pairs"], d["calls"]
    (2, 1, 1, 1, 2)
    >>> d["examples"][0]
    '[Calculator(25 - 5) -> 20] 20 in 4 groups, [Calculator(20 / 4) -> 5]'
    >>> data_chains([t], seen)["new_chain_pairs"]  # the next round wrote no other chain
    0
    """
    found = [(t, pair, (strip_calls(t), pair[0].call, pair[1].call)) for t in texts for pair in text_chains(t)]
    new = [(t, (a, b)) for t, (a, b), key in found if key not in seen]
    seen.update(key for *_, key in found)
    return {"texts": len(texts), "calls": sum(len(find_calls(t)) for t in texts),
            "texts_with_chain": len({t for t, *_ in found}), "chain_pairs": len(found), "new_chain_pairs": len(new),
            "examples": [t[a.start: b.end] for t, (a, b) in new[:n_examples]]}


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
    first = next(iter(rounds))
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
    return " ".join(parts + [s for name, budgets in rounds.items() if (s := against_first(name, budgets, first))])


def against_first(name: str, budgets: Mapping[str, Mapping], first: str) -> str:
    """A later round against the first on the 2+ operation problems, one clause per budget.

    >>> c = lambda d: {"2+ operations": {"vs_first_round": {"n": 9, "diff": d, "diff_ci95": [d - 0.1, d + 0.1]}}}
    >>> against_first("round2", {"1": c(0.05), "3": c(0.2)}, "round1")
    'round2 against round1 on problems of 2+ operations: +5.0 [-5.0, +15.0] points with one call, +20.0 [+10.0, +30.0] with up to 3.'
    >>> against_first("round1", {"1": {"2+ operations": {}}}, "round1")
    ''
    """
    clauses = [(int(b), c["2+ operations"]["vs_first_round"]) for b, c in budgets.items()
               if (c["2+ operations"].get("vs_first_round") or {}).get("diff") is not None]
    if not clauses:
        return ""
    said = [f"{diff_ci(d)}" + (" points with one call" if b == 1 else f" with up to {b}") for b, d in sorted(clauses)]
    return f"{name} against {first} on problems of 2+ operations: " + ", ".join(said) + "."


# ---------------------------------------------------------------- running and writing
def run_chaining(cfg: ChainingConfig, command: str = "") -> Path:
    """Evaluate every round's model under every budget (resumable: the harness skips answered
    problems), then write the results folder."""
    from ..pipeline import stages
    from ..tools import get_tool
    from ..eval.tasks import get_task

    if not cfg.rounds:
        raise ConfigError("--rounds names no model; give NAME=FOLDER for each round's fine-tuned model")
    check_results(cfg)
    ecfg = EvalConfig(tasks=list(cfg.tasks), tools=["Calculator"], data_dir=cfg.data_dir, out=str(Path(cfg.out) / "eval"),
                      limit=cfg.eval_limit, batch_size=cfg.eval_batch, seed=cfg.seed, bootstrap=cfg.bootstrap,
                      dtype=cfg.dtype, threads=cfg.threads)
    data_dir = Path(cfg.data_dir).expanduser() if cfg.data_dir else default_data_dir()
    runs = [(name, model, cfg.settings()) for name, model in cfg.model_of().items()]
    stages.evaluate(ecfg, runs, [get_task(t) for t in cfg.tasks], data_dir, {"Calculator": get_tool("Calculator")})
    return write_chaining(cfg, command)


def check_results(cfg: ChainingConfig) -> None:
    """Refuse to replace results another configuration wrote (``--report-only`` with other rounds
    would rewrite a committed results/chaining as "nothing evaluated"), as ``experiment`` does."""
    made = Path(cfg.results) / "results.json"
    if cfg.replace_results or not made.is_file():
        return
    try:
        theirs = read_json(made).get("settings", {})
    except (ConfigError, AttributeError):
        theirs = None
    ours = to_dict(cfg)
    if not isinstance(theirs, dict) or any(ours.get(k) != v for k, v in theirs.items() if k not in NOT_EVIDENCE):
        raise ConfigError(f"--results {cfg.results} holds evidence from another configuration ({made}); "
                          "pass --results DIR to write elsewhere, or --replace-results to replace it")


def write_chaining(cfg: ChainingConfig, command: str) -> Path:
    check_results(cfg)
    folder = Path(cfg.results)
    folder.mkdir(parents=True, exist_ok=True)
    res = collect(cfg) | {"command": command, "seed": cfg.seed, "commit": git_commit(), "settings": to_dict(cfg),
                          "tries": [other_try(f) for f in cfg.other_tries],
                          "interval": "accuracy: Wilson 95 %; against one call: Newcombe's paired 95 % interval"}
    plot = plot_budgets(res["rounds"], folder)
    write_atomic(folder / "results.json", json.dumps(res, indent=1, ensure_ascii=False))
    (folder / "report.md").write_text(R.to_markdown(report_blocks(res, plot)), encoding="utf-8")
    log.info("chaining results in %s: %s", folder, res["verdict"])
    return folder


def other_try(folder: str) -> dict:
    """Another try's verdict, command and commit, from its results.json (missing: said so)."""
    path = Path(folder) / "results.json"
    if not path.is_file():
        return {"results": folder, "missing": True}
    r = read_json(path)
    return {"results": folder, "verdict": r.get("verdict"), "command": r.get("command"), "commit": r.get("commit"),
            "rounds": {name: {b: {k: c.get(k) for k in ("n", "accuracy", "ci95", "repeat_rate")}
                              for b, subs in budgets.items() for c in [subs.get("all") or {}]}
                       for name, budgets in (r.get("rounds") or {}).items()}}


def beside_rows(res: Mapping) -> list[list]:
    """Each round of this run and of the other tries, on every problem, per budget: accuracy and
    the repeat rate, each with its Wilson interval (two runs on the same problems; unpaired, as the
    other tries' eval records are not here)."""
    runs = [("this run", res["rounds"])] + [(t["results"], t.get("rounds") or {}) for t in res.get("tries") or []]
    rows = []
    for source, rounds in runs:
        for name, budgets in rounds.items():
            for b, c in budgets.items():
                c = c.get("all", c)
                if not c.get("n") or c.get("repeat_rate") is None:
                    continue
                hits = round(c["repeat_rate"] * c["n"])
                lo, hi = wilson_ci([True] * hits + [False] * (c["n"] - hits))
                rows.append([source, name, b, c["n"], with_ci(c), f"{100 * c['repeat_rate']:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"])
    return rows


def beside_blocks(res: Mapping) -> list[R.Block]:
    if not res.get("tries"):
        return []
    return [R.Block("h2", "Beside the other tries: accuracy and repeats, on every problem"),
            R.Block("table", header=["results", "round", "calls allowed", "n", "accuracy % [95% CI]",
                                     "repeat stopped % [Wilson 95% CI]"], rows=beside_rows(res)),
            R.Block("p", "Two intervals apart are a difference; overlapping ones are not shown to differ.")]


def tries_blocks(tries: Sequence[Mapping]) -> list[R.Block]:
    if not tries:
        return []
    rows = [[t["results"], "missing" if t.get("missing") else t["verdict"], t.get("command") or "–",
             (t.get("commit") or "–")[:12]] for t in tries]
    return [R.Block("h2", "Other tries at this measurement"),
            R.Block("table", header=["results", "verdict", "command", "commit"], rows=rows)]


def report_blocks(res: Mapping, plot: str | None) -> list[R.Block]:
    rows = [[name, b, sub, c["n"], with_ci(c), diff_ci(c["vs_one_call"]) if int(b) > 1 else "–",
             diff_ci(c.get("vs_first_round")), pct(c["call_rate"]),
             f"{c['calls_per_input']:.2f}" if c["calls_per_input"] is not None else "–",
             pct(c["chain_rate"]), f"{c['chained_right']} / {c['chained']}", pct(c.get("repeat_rate"))]
            for name, budgets in res["rounds"].items() for b, subs in budgets.items() for sub, c in subs.items()]
    first = next(iter(res["rounds"]), "the first round")
    blocks = [R.Block("h1", "Chained calls: accuracy against the call budget, per annotation round"),
              R.Block("h2", "Verdict"), R.Block("p", res["verdict"]),
              R.Block("table", header=["round", "calls allowed", "problems", "n", "accuracy % [95% CI]",
                                       "vs one call [95% CI]", f"vs {first} [95% CI]", "calls %", "calls per input",
                                       "chains %", "chained answers right", "repeat stopped %"], rows=rows),
              R.Block("p", "Chains %: inputs where a later call's input holds an earlier call's result. Repeat "
                           "stopped %: inputs where the model wrote a call it had already run, which the loop "
                           "guard closed empty (never run twice).")]
    if plot:
        blocks.append(R.Block("img", "accuracy against the call budget, per round", path=plot))
    blocks += tries_blocks(res.get("tries") or [])
    blocks += beside_blocks(res)
    blocks += typed_blocks(res.get("typed") or {})
    blocks += training_blocks(res.get("training") or {})
    if res["examples"]:
        blocks += [R.Block("h2", "Example chains from evaluation")]
        blocks += [R.Block("code", f"[{e['round']}, up to {e['budget']} calls, {e['id']}, "
                                   f"{'right' if e['correct'] else 'wrong'}] {e['output']}") for e in res["examples"]]
    blocks += [R.Block("h2", "Settings"), R.Block("code", res["command"]),
               R.Block("p", f"Seed {res['seed']}; commit {res['commit']}. Intervals: {res['interval']}.")]
    return blocks


def typed_blocks(typed: Mapping[str, Mapping]) -> list[R.Block]:
    """Typed inputs beside the unconstrained decoding (issue 31, item 4)."""
    rows = [[name, b, sub, c["n"], with_ci(c), diff_ci(c["vs_unconstrained"]), pct(c["call_rate"]), pct(c["chain_rate"])]
            for name, budgets in typed.items() for b, subs in budgets.items() for sub, c in subs.items()]
    if not rows:
        return []
    return [R.Block("h2", "Typed inputs, beside the unconstrained decoding"),
            R.Block("p", "The same model and budget with each call's input held to its tool's grammar while it is "
                         "written (--constrain-inputs; beyond the paper), paired against the unconstrained run."),
            R.Block("table", header=["round", "calls allowed", "problems", "n", "accuracy % [95% CI]",
                                     "vs unconstrained [95% CI]", "calls %", "chains %"], rows=rows)]


def training_blocks(training: Mapping[str, Mapping]) -> list[R.Block]:
    """What each round's model learned from: its data, the chains written in it, the kept step."""
    known = {name: t for name, t in training.items() if t}
    if not known:
        return []
    rows = [[name, t["data"], t.get("texts", "–"), t.get("calls", "–"), t.get("texts_with_chain", "–"),
             t.get("chain_pairs", "–"), t.get("new_chain_pairs", "–"), f"{t.get('best_step')} of {t.get('steps')}"]
            for name, t in known.items()]
    blocks = [R.Block("h2", "What each round's model was fine-tuned on"),
              R.Block("p", "A chain here is a call written in the text whose input holds the result of a call "
                           "written before it (the same test as in evaluation); new: not in an earlier round's "
                           "data. Examples: the first new chains of each round's data, from the earlier call "
                           "to the later."),
              R.Block("table", header=["round", "training data", "texts", "calls", "texts with a chain",
                                       "chained pairs", "new pairs", "kept step"], rows=rows)]
    for name, t in known.items():
        blocks += [R.Block("code", f"[{name} training text] {e}") for e in t.get("examples", [])]
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
        ax.set_xticks(sorted({int(b) for budgets in rounds.values() for b in budgets}))  # budgets are whole calls
        ax.set_xlabel("calls allowed per input")
        ax.set_ylabel("accuracy (%)")
        ax.legend(fontsize="small")
    return save(fig, folder / "budget.png").name
