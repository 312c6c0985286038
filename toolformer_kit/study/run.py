"""Studies: the experiment recipes run over one more axis, each a single resumable command.

* **scale** — the recipe once per model (each model samples, scores, is fine-tuned and evaluated as
  M), to set tool gain against parameters beside the paper's Figure 4.
* **tau** — one annotation run, then C* re-filtered at each τf from its stored scores, each
  fine-tuned and evaluated: what τf does to the trained model, which the paper never reports.
* **cost** — the same over the call cost λ (kept iff L⁻ − L⁺ ≥ τf + λ): how call rate, accuracy and
  tool latency move when a call has a price (the latency measured by a step of its own,
  :mod:`.latency`, and stored).

Why the sweeps share everything they can: annotation is the expensive stage, and the scores it
stores decide every τf and λ, so it runs once; the base model and +CC do not depend on the value,
so they are trained and evaluated once. Each step reuses the experiment's stage functions
(:mod:`.run`) and its :class:`~.run.Ledger`, so a re-run skips what is finished and refuses a
finished step whose settings changed.
"""

from __future__ import annotations

import difflib
import json
import logging
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from ..annotate.settings import resolve_run
from ..config import ConfigError, Layer, config_field as _f, file_layer, layered, stage_field, to_dict
from ..eval.setting import DISABLED, Setting
from ..files import write_atomic
from ..pipeline.driver import Watch, run_stages
from ..tools import get_tool
from toolformer_kit.experiment import run as X
from toolformer_kit.experiment.cost import EVAL_RUNS, Progress, clock, estimate
from . import report as report_study
from . import results as study_results
from .latency import LATENCY_FILE, store_latency
from .layout import recipe_config, sweep_configs, value_label
from toolformer_kit.experiment.recipe import ExperimentConfig
from toolformer_kit.measures.results import LABEL

log = logging.getLogger(__name__)

STUDIES = ("scale", "tau", "cost")
STUDIES_ENV = "TOOLFORMER_STUDIES"


RECIPES = "every recipe; default: the recipe's"


@dataclass
class StudyConfig:
    """A sweep of experiments: the axis is the study's own; a size it sets for every recipe is the
    recipe's field (:func:`~toolformer_kit.config.stage_field`), unset (None) to keep each recipe's."""

    name: str = _f("", "the study: scale, tau or cost (the positional argument)", cli=False)
    description: str = _f("", "one line: what the study shows", cli=False)
    out: str = _f("", "run folder (default: runs/study-NAME); one sub-folder per recipe, model and value")
    results: str = _f("", "where the committed evidence goes (default: results/study-NAME)")
    recipes: list[str] = _f(["search"], "recipes the study runs (configs/experiments/NAME.yaml)")
    # ------------------------------------------------------------ the axis
    models: list[str] = _f(["smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b"],
                           "scale: the models, each annotating, fine-tuned and evaluated as M")
    model: Optional[str] = stage_field(ExperimentConfig, "model", None, note="tau, cost; default: the recipe's")
    tau_f_values: list[float] = _f([0.0, 0.5, 1.0, 2.0], "tau: the thresholds τf C* is filtered at", min=-100)
    call_costs: list[float] = _f([0.0, 0.5, 1.0, 2.0], "cost: the call costs λ in nats C* is filtered at")
    tau_f: Optional[float] = stage_field(ExperimentConfig, "tau_f", None, min=-100,
                                         note="cost: τf under every λ; default: the recipe's, else per tool")
    from_run: Optional[str] = _f(None, "tau, cost: reuse this finished experiment run's corpus and annotation "
                                       "(read only; e.g. runs/search) instead of annotating; one recipe only")
    # ------------------------------------------------------------ sizes (default: each recipe's own)
    docs: Optional[int] = stage_field(ExperimentConfig, "docs", None, note=RECIPES)
    k: Optional[int] = stage_field(ExperimentConfig, "k", None, note=RECIPES)
    m: Optional[int] = stage_field(ExperimentConfig, "m", None, note=RECIPES)
    train_steps: Optional[int] = stage_field(ExperimentConfig, "train_steps", None, note=RECIPES)
    eval_limit: Optional[int] = stage_field(ExperimentConfig, "eval_limit", None, note=RECIPES)
    eval_batch: Optional[int] = stage_field(ExperimentConfig, "eval_batch", None, note=RECIPES)
    tasks: Optional[list[str]] = stage_field(ExperimentConfig, "tasks", None, note=RECIPES)
    dtype: Optional[str] = stage_field(ExperimentConfig, "dtype", None, note=RECIPES, added=True)
    call_cost: Optional[float] = stage_field(ExperimentConfig, "call_cost", None, added=True,
                                             note="scale, tau; every recipe's; the cost study sweeps call_costs instead")
    per_recipe: list[str] = _f([], "overrides for one recipe, RECIPE.SETTING=VALUE (any recipe setting), "
                                   "e.g. search.docs=60,math.eval_limit=50, added to the study's own (later wins); "
                                   "a size above, when set, wins for every recipe")
    # ------------------------------------------------------------ report and machine
    latency_calls: int = _f(200, "cost: stored tool calls re-run uncached to measure the tool's mean latency", min=1)
    bootstrap: int = stage_field(ExperimentConfig, "bootstrap")
    seed: int = stage_field(ExperimentConfig, "seed")
    threads: Optional[int] = stage_field(ExperimentConfig, "threads")
    data_dir: Optional[str] = stage_field(ExperimentConfig, "data_dir", note="default: the recipes'")

    def __post_init__(self) -> None:
        if self.name not in STUDIES:
            close = difflib.get_close_matches(self.name, STUDIES, n=1)
            raise ConfigError(f"unknown study {self.name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                              + f"; available: {', '.join(STUDIES)}")
        if self.call_cost is not None and self.name == "cost":
            raise ConfigError("the cost study sweeps the call cost (--call-costs); drop --call-cost")
        if self.from_run and self.name == "scale":
            raise ConfigError("--from-run reuses one annotation, but scale annotates with every model; drop it")
        if self.from_run and len(self.recipes) != 1:
            raise ConfigError(f"--from-run reuses one recipe's annotation; name that one recipe (--recipes, now "
                              f"{','.join(self.recipes)})")
        if self.name == "scale" and len(set(self.models)) != len(self.models):
            raise ConfigError(f"models must differ, got {','.join(self.models)}")
        for name in ("tau_f_values", "call_costs"):
            values = getattr(self, name)
            if len(set(values)) != len(values):
                raise ConfigError(f"{name} must not repeat a value, got {values}")
        self.out = self.out or f"runs/study-{self.name}"
        self.results = self.results or f"results/study-{self.name}"

    @property
    def values(self) -> list[float]:
        """The swept values, ascending (scale has none)."""
        return sorted(self.tau_f_values if self.name == "tau" else self.call_costs if self.name == "cost" else [])


# ---------------------------------------------------------------- loading
def studies_dir() -> Path:
    """``$TOOLFORMER_STUDIES``, else ``configs/studies`` in the repository."""
    if os.environ.get(STUDIES_ENV):
        folder = Path(os.environ[STUDIES_ENV]).expanduser()
        if not folder.is_dir():  # else every study would silently run at the built-in defaults
            raise ConfigError(f"${STUDIES_ENV}={os.environ[STUDIES_ENV]} is not a folder; point it at a folder of "
                              "study YAML files, or unset it to use configs/studies")
        return folder
    return Path(__file__).resolve().parents[2] / "configs" / "studies"


def study_layers(name: str, folder: Path | None = None) -> list[Layer]:
    """The study's own settings as the bottom layers (``configs/studies/NAME.yaml`` where there is
    one, then its name, which the file cannot change), for :func:`~toolformer_kit.config.layered` and ``build_config(...,
    base=...)``."""
    path = (folder or studies_dir()) / f"{name}.yaml"
    return [*([file_layer(path)] if path.is_file() else []), ("the study's name", {"name": name})]


EXTENDED = ("per_recipe",)  # a later layer adds entries (the later entry wins), so that
# ``--per-recipe search.eval_limit=200`` keeps the study's other per-recipe sizes


def load_study(name: str, overrides: dict[str, Any] | None = None, folder: Path | None = None) -> StudyConfig:
    """The study's settings with ``overrides`` (already typed values; None = not set) on top; a
    ``per_recipe`` override extends the study's list (:data:`EXTENDED`)."""
    typed = {k: v for k, v in (overrides or {}).items() if v is not None}
    return layered(StudyConfig, *study_layers(name, folder), ("overrides", typed), extend=EXTENDED)


# ---------------------------------------------------------------- steps
@dataclass
class Step:
    """One resumable unit: skipped when ``done()`` and the ledger holds the same ``settings``.

    ``strict`` steps refuse to run over a finished output made with other settings (the ledger's
    error); the others run again and extend or refuse by themselves (evaluation, a whole recipe)."""

    name: str
    settings: Optional[dict]
    done: Callable[[], bool]
    run: Callable[[], Any]
    seconds: float = 0.0
    strict: bool = True
    detail: dict = field(default_factory=dict)  # a sub-run's own estimate per stage, for --estimate


def _never() -> bool:
    return False


def _file(path: Path) -> Callable[[], bool]:
    return lambda: path.is_file()


def thresholds(study: StudyConfig, cfg: ExperimentConfig, value: float) -> tuple[dict, dict]:
    """(τf, λ) per tool for one swept value: the value, and the cost study's ``--tau-f``, are
    explicit; every other parameter is what the annotation of ``cfg`` resolved
    (:func:`~toolformer_kit.annotate.settings.resolve_run`: per-tool overrides, the recipe's
    values, each tool's paper setting).

    >>> cfg = ExperimentConfig(name="t", tools=["Calculator", "QA"])
    >>> thresholds(StudyConfig(name="cost"), cfg, 0.5)
    ({'Calculator': 0.5, 'QA': 1.0}, {'Calculator': 0.5, 'QA': 0.5})
    >>> thresholds(StudyConfig(name="tau"), cfg, 2.0)
    ({'Calculator': 2.0, 'QA': 2.0}, {'Calculator': 0.0, 'QA': 0.0})
    """
    explicit = {"tau_f": value, "call_cost": 0.0} if study.name == "tau" else {"tau_f": study.tau_f, "call_cost": value}
    settings = {t: resolve_run(get_tool(t), to_dict(cfg), explicit) for t in cfg.tools}
    return {t: s.tau_f for t, s in settings.items()}, {t: s.call_cost for t, s in settings.items()}


def scale_steps(study: StudyConfig, command: str = "") -> list[Step]:
    """One whole recipe run per (recipe, model), smallest model first."""
    out = Path(study.out)
    steps = []
    for model in sorted(study.models, key=lambda m: study_results.params_of(m) or float("inf")):
        for recipe in study.recipes:
            sub = out / f"{recipe}-{model}"
            cfg = recipe_config(study, recipe, sub, model)
            est = estimate(cfg)
            settings = {k: v for k, v in to_dict(cfg).items() if k not in ("out", "results", "threads")}
            steps.append(Step(f"{recipe} / {model}", settings, _file(sub / "report.md"),
                              lambda cfg=cfg: X.run_experiment(cfg, command), sum(est.values()), strict=False,
                              detail=est))
    return steps + [Step("report", None, _never, lambda: report_study.write_study(study, command), 10.0)]


def check_tasks(cfg: ExperimentConfig) -> None:
    """Fail before annotating, not after, when a task is unknown or its data cannot be read."""
    from ..eval.config import EvalConfig, check_tasks as check_eval_tasks

    check_eval_tasks(EvalConfig(tasks=list(cfg.tasks), data_dir=cfg.data_dir))


def sweep_steps(study: StudyConfig, command: str = "", latency=None) -> list[Step]:
    """Per recipe: corpus and annotation once (unless reused), +CC trained once, base and +CC
    evaluated once; then per value: re-filter → C* → train → evaluate the tool-trained model."""
    steps: list[Step] = []
    for recipe, base, cfg in sweep_configs(study):
        est = estimate(cfg)
        per_eval = (est["evaluate"]) / EVAL_RUNS
        steps.append(Step(f"{recipe}: models", None, _never, lambda cfg=cfg, b=base: begin(cfg, b, command), 5.0))
        if study.from_run:
            steps.append(Step(f"{recipe}: reuse {study.from_run}", None, _never,
                              lambda b=base: link_source(Path(study.from_run), b), 0.0))
        else:
            steps.append(Step(f"{recipe}: corpus", X.stage_settings(cfg, "corpus"), _file(base / "corpus/train.jsonl"),
                              lambda cfg=cfg, b=base: X.stage_corpus(cfg, b), est["corpus"]))
            steps.append(Step(f"{recipe}: annotate", X.stage_settings(cfg, "annotate"),
                              _file(base / "annotate/manifest.json"),
                              lambda cfg=cfg, b=base: X.stage_annotate(cfg, b), est["annotate"]))
        train = X.stage_settings(cfg, "train")
        steps.append(Step(f"{recipe}: train (+CC)", train, _file(base / "train-cc/train_summary.json"),
                          lambda cfg=cfg, b=base: X.stage_train(cfg, b, plain=True), est["train (+CC)"]))
        steps.append(Step(f"{recipe}: evaluate base, +CC", None, _never,
                          lambda cfg=cfg, b=base: X.stage_eval(cfg, b, [("base", cfg.model, [DISABLED]),
                                                                        ("cc", str(b / "train-cc"), [DISABLED])]),
                          2 * per_eval, strict=False))
        for value in study.values:
            v = base / value_label(study, value)
            tau, lam = thresholds(study, cfg, value)
            label = f"{recipe} {'τf' if study.name == 'tau' else 'λ'} {value:g}"
            picked = {"tau_f": tau, "call_cost": lam}
            steps.append(Step(f"{label}: re-filter", X.stage_settings(cfg, "annotate") | picked,
                              _file(v / "annotate" / "refilter.json"),
                              lambda b=base, v=v, tau=tau, lam=lam: refilter_value(b, v, tau, lam), 2.0))
            steps.append(Step(f"{label}: train", train | picked, trained(v),
                              lambda cfg=cfg, v=v: train_value(cfg, v), est["train (tools)"]))
            steps.append(Step(f"{label}: evaluate", None, _never, lambda cfg=cfg, v=v: evaluate_value(cfg, v),
                              2 * per_eval, strict=False))
        if study.name == "cost":  # measured once and stored, so the report renders the same every time
            steps.append(Step(f"{recipe}: tool latency", {"tool": cfg.tools[0], "calls": study.latency_calls},
                              _file(base / LATENCY_FILE),
                              lambda cfg=cfg, b=base: store_latency(study, b, cfg, latency), 30.0, strict=False))
    steps.append(Step("report", None, _never, lambda: report_study.write_study(study, command), 10.0))
    return steps


def begin(cfg: ExperimentConfig, base: Path, command: str) -> None:
    """The models in place, and ``experiment.json`` as an experiment writes it, so that another
    study can reuse this recipe folder's annotation with ``--from-run``."""
    base.mkdir(parents=True, exist_ok=True)
    (base / "experiment.json").write_text(json.dumps({"command": command, "settings": to_dict(cfg)}, indent=1))
    X.stage_models(cfg, base)


def link_source(source: Path, base: Path) -> None:
    """The study's recipe folder reads the source run's corpus and annotation through links, so the
    experiment's stages find them where they look; nothing is written into the source."""
    base.mkdir(parents=True, exist_ok=True)
    for name in ("corpus", "annotate"):
        link = base / name
        if link.is_symlink() and link.resolve() == (source / name).resolve():
            continue
        if link.exists() or link.is_symlink():
            raise ConfigError(f"{link} exists and is not a link to {source / name}; use another --out")
        link.symlink_to((source / name).resolve(), target_is_directory=True)


def refilter_value(base: Path, folder: Path, tau_f: dict, call_cost: dict) -> None:
    """C* for one value, and the held-out documents the trainer picks its checkpoint on."""
    from ..annotate.refilter import refilter_run

    (folder / "corpus").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(base / "corpus" / "dev.jsonl", folder / "corpus" / "dev.jsonl")
    refilter_run(base / "annotate", folder / "annotate", tau_f, call_cost)


EMPTY = "empty.json"


def trained(folder: Path) -> Callable[[], bool]:
    """Done when the tool-trained run is saved, or when its C* was empty (nothing to train)."""
    run = folder / "train-tools"
    return lambda: (run / "train_summary.json").is_file() or (run / EMPTY).is_file()


def train_value(cfg: ExperimentConfig, folder: Path) -> None:
    """Fine-tune on one value's C*. A value that keeps no call is a finding, not a failure: it is
    marked and the study goes on (its point shows an empty C* and no accuracy)."""
    data = folder / "annotate" / "corpus.jsonl"
    if not data.read_text(encoding="utf-8").strip():
        log.warning("%s keeps no call: nothing to fine-tune at this value", data)
        (folder / "train-tools").mkdir(parents=True, exist_ok=True)
        write_atomic(folder / "train-tools" / EMPTY, json.dumps({"reason": "C* is empty at this value"}))
        return
    X.stage_train(cfg, folder, plain=False)


def evaluate_value(cfg: ExperimentConfig, folder: Path) -> None:
    if (folder / "train-tools" / EMPTY).is_file():
        return
    X.stage_eval(cfg, folder, [(LABEL, str(folder / "train-tools"), [Setting(cfg.k_eval), DISABLED])])


def plan(study: StudyConfig, command: str = "", latency=None) -> list[Step]:
    return scale_steps(study, command) if study.name == "scale" else sweep_steps(study, command, latency)


def pending(steps: list[Step], ledger: X.Ledger) -> list[str]:
    """The steps a run would do now (the others are finished with these settings)."""
    return [s.name for s in steps if not _finished(s, ledger)]


def _finished(step: Step, ledger: X.Ledger) -> bool:
    if step.settings is None:
        return False
    if step.strict:
        return ledger.check(step.name, step.settings, step.done())
    return step.done() and ledger.data.get(step.name, {}).get("settings") == step.settings


def _preflight(out: Path, steps, ledger) -> None:
    """Refusals decided before anything is written: an --out no study wrote, a finished strict step
    made with other settings."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; pass a folder (it is created if missing)")
    if out.is_dir() and any(out.iterdir()) and not ((out / X.STAGES_FILE).is_file() or (out / "study.json").is_file()):
        raise ConfigError(f"--out {out} holds files that no study wrote (no {X.STAGES_FILE}, no study.json); "
                          "refusing to write into it: pass a new folder for --out")
    for step in steps:
        if step.settings is not None and step.strict:
            ledger.check(step.name, step.settings, step.done())


def run_study(study: StudyConfig, command: str = "", latency=None) -> Path:
    """Every step in order, skipping finished ones; returns the results folder."""
    out = Path(study.out)
    steps = plan(study, command, latency)
    if study.name != "scale":  # a scale run is recipe runs, which check their own
        for _, _, cfg in sweep_configs(study):
            check_tasks(cfg)
    ledger = X.Ledger(out)
    _preflight(out, steps, ledger)
    if Path(study.results).exists() and not Path(study.results).is_dir():
        raise ConfigError(f"--results {study.results} is a file; pass a folder for the report (it is created if missing)")
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "study.json", json.dumps({"command": command, "settings": to_dict(study)}, indent=1))
    if study.threads:
        import torch

        torch.set_num_threads(study.threads)
    run_stages(steps, StudyWatch(ledger, Progress({s.name: s.seconds for s in steps}, [s.name for s in steps])))
    return Path(study.results)


class StudyWatch(Watch):
    """What a study adds around each step of :func:`~toolformer_kit.pipeline.driver.run_stages`:
    a step finished with these settings is skipped, a finished one recorded in the ledger, the ETA
    line printed."""

    def __init__(self, ledger: X.Ledger, progress: Progress):
        super().__init__()
        self.ledger, self.progress = ledger, progress

    def finished(self, step: Step) -> bool:
        if _finished(step, self.ledger):
            self.progress.skip(step.name)
            return True
        return False

    def start(self, step: Step) -> None:
        self.progress.start(step.name)

    def finish(self, step: Step, seconds: float) -> None:
        super().finish(step, seconds)
        self.ledger.record(step.name, step.settings, seconds)
        self.progress.finish(step.name, seconds)


def estimate_lines(study: StudyConfig) -> list[str]:
    """What ``--estimate`` prints: each step's cost on this kind of machine, then the total."""
    steps = plan(study)
    width = max(len(s.name) for s in steps) + 2
    lines = []
    for s in steps:
        inner = ", ".join(f"{k} {clock(v)}" for k, v in s.detail.items() if v >= 30)
        lines.append(f"{s.name:<{width}} {clock(s.seconds)}" + (f"  ({inner})" if inner else ""))
    lines.append(f"{'total':<{width}} {clock(sum(s.seconds for s in steps))}")
    return lines
