"""Run a recipe end to end: corpus → annotate → fine-tune (tools, +CC) → ceiling → evaluate → results.

Each stage writes its own folder under ``runs/NAME`` and a line in ``stages.json`` with the
settings it was made with. A re-run skips every stage whose output is complete and whose settings
match; annotation and training resume inside their stage, evaluation skips the examples already
answered. A finished stage whose settings no longer match is refused (one error naming the fix)
rather than silently mixed with a new one; evaluation, the ceiling and the report are recomputed
instead, since they extend and never contradict what is on disk.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Callable

from ..annotate.config import AnnotateConfig
from ..annotate.merge import every_text
from ..annotate.runner import semantic_settings, settings_differ
from ..annotate.sources import _load_wiki
from ..campaign.merged import PAPER_CAP, merge_documents, merge_rows, mix, read_dataset
from ..config import ConfigError, from_dict, stage_config, to_dict
from ..decode import make_decoder
from ..eval.config import EvalConfig, check_tasks, resolve_data_dir
from ..eval.probe import call_probe, probe_points
from ..eval.report import write_report
from ..eval.setting import DISABLED, Setting
from ..eval.tasks import subset
from ..files import read_json, read_jsonl, write_atomic
from ..lm.base import load_lm, set_threads
from ..pipeline import stages
from ..pipeline.driver import Stage, Watch, run_stages
from ..pipeline.config import fine_tuning
from ..tools import get_tool
from ..train.config import TrainConfig
from ..train.data import read_texts, split_dev
from ..train.lora import ADAPTER_DIR
from ..train.trainer import resume_differs, weights_problem
from toolformer_kit.measures.ceiling import bm25_search, ceiling_flags, read_flags, write_flags
from toolformer_kit.corpora.sources import asked_about, evaluated_text, gsm8k_corpus, heldout_for, wiki_corpus, write_search_corpus
from . import bank as banked, publish
from .bank import Stopped, answer_count as eval_records
from .cost import Progress, estimate
from .ledger import STAGES_FILE, Ledger, _mode, stage_settings
from .recipe import ExperimentConfig, eval_tasks
from .report import write_results

log = logging.getLogger(__name__)

SEARCH_CORPUS = "search.jsonl"  # what WikiSearch and QA search while annotating, when summaries are held out


def _rows(path: Path) -> list[dict]:
    """A JSONL file a stage or a published dataset holds, or one error naming it and the fix."""
    fix = (f"restore it (git checkout -- {path}) if it is a published dataset's, or delete the stage's folder "
           f"({path.parent}) to redo it")
    return read_jsonl(path, fix, _object)


def _object(line: str) -> dict:
    row = json.loads(line)
    if not isinstance(row, dict):
        raise ValueError(f"a row is a JSON object, not {type(row).__name__}")
    return row


def _jsonl(path: Path, rows) -> None:
    write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


# ---------------------------------------------------------------- stages
def stage_models(cfg: ExperimentConfig, out: Path) -> None:
    stages.pull_models([cfg.model, cfg.sampler_model])
    stages.prepare_index(cfg.tools, search=cfg.ceiling)  # the ceiling searches the index too


def stage_corpus(cfg: ExperimentConfig, out: Path) -> Path:
    folder = out / "corpus"
    folder.mkdir(parents=True, exist_ok=True)
    if cfg.cstar_dataset:  # the dataset's annotated windows are the corpus; dev texts come from each run
        _jsonl(folder / "train.jsonl", _dataset_rows(cfg, "documents.jsonl"))
        return folder
    excluded: set[str] = set()
    if cfg.corpus.startswith("gsm8k"):
        docs, dev = gsm8k_corpus(cfg.docs, cfg.dev_docs, cfg.seed, prose=cfg.corpus == "gsm8k-prose")
    else:
        answers, questions = evaluated_text(cfg.tasks, data_dir(cfg))
        excluded = asked_about(_load_wiki("en-us"), answers, questions)
        heldout = heldout_for(cfg.tasks)
        if heldout:  # the held-out facts: never annotated, and not in the index annotation searches
            excluded |= heldout
            write_search_corpus(folder / SEARCH_CORPUS, heldout)
            (folder / "heldout_titles.json").write_text(json.dumps(sorted(heldout), ensure_ascii=False, indent=0))
        else:
            (folder / SEARCH_CORPUS).unlink(missing_ok=True)  # a rerun without wiki-cloze searches everything
        docs, dev = wiki_corpus(cfg.docs, cfg.dev_docs, cfg.seed, excluded)
    if len(docs) < cfg.docs:
        log.warning("the %s corpus gave %d documents, not %d", cfg.corpus, len(docs), cfg.docs)
    _jsonl(folder / "dev.jsonl", ({"id": d.doc_id, "text": d.text} for d in dev))
    (folder / "excluded_titles.json").write_text(json.dumps(sorted(excluded), ensure_ascii=False, indent=0))
    _jsonl(folder / "train.jsonl", (d.record() for d in docs))
    return folder


def dataset_folders(cfg: ExperimentConfig) -> list[str]:
    """The published C* folders of ``cstar_dataset`` (one, or several joined by commas)."""
    return [f.strip() for f in cfg.cstar_dataset.split(",") if f.strip()]


def _dataset_rows(cfg: ExperimentConfig, name: str) -> list[dict]:
    """``name`` (cstar.jsonl or documents.jsonl) of the recipe's dataset; of several datasets, their
    merged C* (:mod:`~toolformer_kit.campaign.merged`: one text with all its calls, the paper's cap
    per tool, a seeded order), built here on the fly from the published folders alone."""
    folders = dataset_folders(cfg)
    for folder in folders:
        path = Path(folder) / "data" / name
        if not path.is_file():
            raise ConfigError(f"--cstar-dataset {folder} has no data/{name}; give a folder published by "
                              "'toolformer campaign' (datasets/cstar-math), or rerun the campaign to publish it")
    if len(folders) == 1:
        return _rows(Path(folders[0]) / "data" / name)
    datasets = [(f, *read_dataset(f)) for f in folders]
    if name == "cstar.jsonl":
        return merge_rows([(n, c) for n, c, _ in datasets], PAPER_CAP, cfg.seed)
    return merge_documents([(n, d) for n, _, d in datasets])


def _annotation_from_dataset(cfg: ExperimentConfig, folder: Path) -> None:
    """The dataset's C* and its annotated windows as this run's annotation; the manifest (written
    last, the stage's marker) says where they came from. The windows are the corpus stage's, which
    wrote them from the same datasets (read, or merged, once)."""
    folder.mkdir(parents=True, exist_ok=True)
    cstar, docs = _dataset_rows(cfg, "cstar.jsonl"), _rows(folder.parent / "corpus" / "train.jsonl")
    _jsonl(folder / "corpus.jsonl", cstar)
    _jsonl(folder / "documents.jsonl", docs)
    made = {}
    for f in dataset_folders(cfg):
        summary = Path(f) / "data" / "summary.json"
        s = json.loads(summary.read_text(encoding="utf-8")) if summary.is_file() else {}
        made[f] = {k: s.get(k) for k in ("tau_f", "windows_annotated", "complete", "kept")}
    one = len(made) == 1
    write_atomic(folder / "manifest.json", json.dumps(
        {"from_dataset": str(cfg.cstar_dataset), "texts": len(docs), "c_star_texts": len(cstar),
         "calls": sum(len(r.get("calls") or []) for r in cstar),
         **({"dataset": next(iter(made.values()))} if one else {"datasets": made, "mix": mix(cstar)})}, indent=1))


def annotate_config(cfg: ExperimentConfig, out: Path) -> AnnotateConfig:
    """The annotation run the experiment makes in ``out/annotate``."""
    search = out / "corpus" / SEARCH_CORPUS
    return stage_config(AnnotateConfig, cfg, corpus=str(out / "corpus" / "train.jsonl"), out=str(out / "annotate"),
                        shard_size=4, wiki_corpus=str(search) if search.is_file() else "")


def stage_annotate(cfg: ExperimentConfig, out: Path) -> Path:
    folder = out / "annotate"
    if cfg.cstar_dataset:  # the dataset's annotation, copied once (its manifest is the marker)
        if not (folder / "manifest.json").is_file():
            _annotation_from_dataset(cfg, folder)
        return folder
    return stages.annotate(annotate_config(cfg, out))  # resumed, or rebuilt where a kill or an edit cut it


def train_folder(out: Path, plain: bool) -> Path:
    return out / ("train-cc" if plain else "train-tools")


def train_config(cfg: ExperimentConfig, out: Path, plain: bool, data: Path) -> TrainConfig:
    """The fine-tuning run the experiment makes on ``data``: tool-trained, or +CC (``plain``)."""
    cstar_dev = cfg.train_dev == "cstar" and not plain  # carved out of C*, calls kept
    carved = cstar_dev or bool(cfg.cstar_dataset)  # a dataset brings no held-out documents of its own
    return fine_tuning(cfg, data=str(data), out=str(train_folder(out, plain)), plain_baseline=plain,
                       dev_data=None if carved else str(out / "corpus" / "dev.jsonl"),
                       dev_with_calls=cstar_dev, keep="best" if plain else cfg.train_keep,
                       save_minutes=banked.BANK_EVERY_S / 60 if cfg.bank else 0.0)  # a sitting may end mid-run


def stage_train(cfg: ExperimentConfig, out: Path, plain: bool) -> Path:
    """LoRA on C* (``plain`` False) or, for +CC, on every annotated text without calls (the paper's C)."""

    data = train_data(cfg, out, plain)
    if not data.read_text(encoding="utf-8").strip():
        raise ConfigError(f"annotation kept no call ({data} is empty), so there is nothing to fine-tune on; "
                          f"annotate more documents (--docs, now {cfg.docs}) or lower --tau-f, in a new --out")
    return stages.train(train_config(cfg, out, plain, data))


def train_data(cfg: ExperimentConfig, out: Path, plain: bool, write: bool = True) -> Path:
    """The file a fine-tuning run reads: +CC every annotated text, the tool run C* (or, with
    cstar_texts all, every text with its calls where kept, written beside the annotation unless
    ``write`` is False)."""
    data = out / "annotate" / ("documents.jsonl" if plain else "corpus.jsonl")
    if not plain and cfg.cstar_texts == "all" and data.read_text(encoding="utf-8").strip():
        data = _every_text(out) if write else out / CSTAR_ALL
    return data


PROBE = "probe.json"
# The trainer's own carve-out when train_dev is cstar (TrainConfig's dev_docs and the 10 % above).
PROBE_DEV_DOCS, PROBE_DEV_FRACTION = 1000, 0.1


def probe_texts(cfg: ExperimentConfig, out: Path) -> tuple[list[str], str]:
    """The C* texts the probe cuts, and what they are: held out from training (train_dev cstar,
    the same split the trainer made) or, without a held-out part, the training texts themselves."""
    texts = read_texts(train_data(cfg, out, plain=False))
    if cfg.train_dev == "cstar":
        return split_dev(texts, PROBE_DEV_DOCS, PROBE_DEV_FRACTION, cfg.seed)[1], "held-out C* texts"
    return texts, "C* training texts (seen in training; train_dev cstar holds some out)"


def stage_probe(cfg: ExperimentConfig, out: Path) -> Path:
    """The call probe on the tool-trained model (:mod:`~toolformer_kit.eval.probe`): does it open a
    call where C* has one, with the paper's decoding, and write it well-formed?"""
    path = out / PROBE
    if path.is_file():
        return path
    texts, which = probe_texts(cfg, out)
    points = probe_points(texts)
    lm = load_lm(str(out / "train-tools"), backend=cfg.backend, dtype=eval_dtype(cfg))
    decoder = make_decoder(lm, tools={name: get_tool(name) for name in cfg.tools}, batch_size=cfg.eval_batch)
    result = call_probe(decoder.generate, points, cfg.k_eval)
    write_atomic(path, json.dumps({**result, "texts": which, "k": cfg.k_eval}, indent=1))
    return path


CSTAR_ALL = "cstar-all.jsonl"


def _every_text(out: Path) -> Path:
    """The paper's C* beside the annotation: every annotated text, calls written in where kept."""
    path = out / CSTAR_ALL
    _jsonl(path, every_text(_rows(out / "annotate" / "documents.jsonl"), _rows(out / "annotate" / "corpus.jsonl")))
    return path


def data_dir(cfg: ExperimentConfig) -> Path:
    return resolve_data_dir(EvalConfig(tasks=list(cfg.tasks), data_dir=cfg.data_dir))


def stage_ceiling(cfg: ExperimentConfig, out: Path) -> Path:
    folder = out / "ceiling"
    folder.mkdir(parents=True, exist_ok=True)
    search = bm25_search()
    limit = None if cfg.eval_subset == "retrievable" else cfg.eval_limit  # the evaluation then picks among them
    for task in eval_tasks(cfg):
        write_flags(folder / f"{task.name}.jsonl", ceiling_flags(subset(task.load(data_dir(cfg)), limit), search))
    return folder


def retrievable_only(task, flags: dict[str, bool]):
    """``task`` whose loader keeps only the examples flagged retrievable (``eval_subset: retrievable``):
    the evaluation's hash-ordered ``eval_limit`` sample is then drawn from them."""
    loader = task.loader
    return dataclasses.replace(task, loader=lambda d: [e for e in loader(d) if flags.get(e.id)])


def model_runs(cfg: ExperimentConfig, out: Path) -> list[tuple[str, str, list[Setting]]]:
    """(label, model, settings): the paper's four columns (the tool-trained model's alone without
    ``references``; with ``base_reference``, the base model's beside them)."""
    on = Setting(cfg.k_eval)
    tools = [on, DISABLED] + ([on.arrow()] if cfg.eval_force_arrow else []) + (
        [on.dropping()] if cfg.eval_drop_empty else [])
    base = [("base", cfg.model, [DISABLED])]
    refs = base + [("cc", str(out / "train-cc"), [DISABLED])] if cfg.references else base if cfg.base_reference else []
    return refs + [("toolformer", str(out / "train-tools"), tools)]


def eval_dtype(cfg: ExperimentConfig) -> str:
    """The dtype the recipe's models are evaluated (and probed) in: ``dtype`` when it names one;
    under ``auto``, the library's default (fp32 on a CPU, bf16 on a GPU), which every recipe was
    evaluated in before ``dtype`` reached it, so a run folder keeps one precision when resumed."""
    return "" if cfg.dtype == "auto" else cfg.dtype


def eval_config(cfg: ExperimentConfig, out: Path) -> EvalConfig:
    """The evaluation the recipe makes in ``out/eval`` (its runs and tasks are given apart)."""
    return stage_config(EvalConfig, cfg, out=str(out / "eval"), dtype=eval_dtype(cfg))


def stage_eval(cfg: ExperimentConfig, out: Path, runs: list[tuple[str, str, list[Setting]]] | None = None) -> Path:
    """Evaluate ``runs`` (default: the paper's four columns, :func:`model_runs`) into ``out/eval``."""
    ecfg = eval_config(cfg, out)
    tasks = eval_tasks(cfg)
    if cfg.eval_subset == "retrievable":
        tasks = [retrievable_only(t, read_flags(out / "ceiling" / f"{t.name}.jsonl")) for t in tasks]
    tools = {name: get_tool(name) for name in cfg.tools}
    stages.evaluate(ecfg, model_runs(cfg, out) if runs is None else runs, tasks, data_dir(cfg), tools,
                    info={"lama_search": cfg.lama_search})
    write_report(ecfg.out, cfg.bootstrap, cfg.seed)
    return Path(ecfg.out)


# ---------------------------------------------------------------- driver
def _complete(cfg: ExperimentConfig, out: Path) -> dict[str, Callable[[], bool]]:
    """What on disk says each stage is finished (the stage's own marker, written last)."""
    return {"corpus": lambda: (out / "corpus" / "train.jsonl").is_file(),
            "annotate": lambda: _annotated(cfg, out),
            "train (tools)": lambda: stages.trained(train_folder(out, False)),
            "train (+CC)": lambda: stages.trained(train_folder(out, True))}


def _annotated(cfg: ExperimentConfig, out: Path) -> bool:
    """The annotation is finished and its outputs are what its manifest recorded. One whose C*,
    summary or candidates were cut off or edited counts as unfinished, so the stage runs again and
    the runner rebuilds them from the shards (a traceback or a C* cut short otherwise)."""
    if cfg.cstar_dataset:
        return (out / "annotate" / "manifest.json").is_file()
    return stages.annotation_done(annotate_config(cfg, out))


def plan(cfg: ExperimentConfig, out: Path, command: str) -> list[Stage]:
    """The recipe's stages in order, each with the ledger.KEYS entry that guards it (or None), for
    :func:`~toolformer_kit.pipeline.driver.run_stages`."""
    steps = [Stage("models", None, lambda: stage_models(cfg, out)),
             Stage("corpus", "corpus", lambda: stage_corpus(cfg, out)),
             Stage("annotate", "annotate", lambda: stage_annotate(cfg, out)),
             Stage("train (tools)", "train", lambda: stage_train(cfg, out, plain=False))]
    if cfg.references:
        steps.append(Stage("train (+CC)", "train", lambda: stage_train(cfg, out, plain=True)))
    if cfg.ceiling:
        steps.append(Stage("ceiling", None, lambda: stage_ceiling(cfg, out)))
    steps += [Stage("probe", None, lambda: stage_probe(cfg, out)),
              Stage("evaluate", None, lambda: stage_eval(cfg, out)),
              Stage("report", None, lambda: write_results(cfg, out, command))]
    if cfg.publish_model:
        adapter = train_folder(out, plain=False) / ADAPTER_DIR
        steps.append(Stage("publish", None, lambda: publish.stage_publish(adapter, Path(cfg.results), cfg.publish_model,
                                                                          cfg.model)))
    return steps


# Settings that do not change what the evidence says: results written with other values of these
# are this configuration's.
NOT_EVIDENCE = ("out", "results", "threads", "data_dir", "replace_results", "publish_model", "bank", "max_minutes")


def _evidence_settings(settings: dict) -> dict:
    return {k: v for k, v in settings.items() if k not in NOT_EVIDENCE}


def _rebuild_ledger(out: Path, steps, ledger: Ledger, complete) -> None:
    """stages.json lost or damaged beside finished stages: their settings are those of
    experiment.json, which is written only once a run's settings have passed every check. Without it
    nothing says what made the stages, and changed settings must not be recorded as if they had."""
    made = out / "experiment.json"
    try:
        old = from_dict(ExperimentConfig, json.loads(made.read_text("utf-8"))["settings"], str(made))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{out} has finished stages but {ledger.path} is missing or damaged and {made} cannot "
                          f"say which settings made them ({type(exc).__name__}); use another --out, or delete {out} "
                          "to start over") from None
    for name, guard, _ in steps:
        if guard and complete[name]():
            ledger.data[name] = {"settings": stage_settings(old, guard)}
    log.warning("rebuilt %s from %s for the finished stages", ledger.path, made)


def check_unfinished(cfg: ExperimentConfig, out: Path, complete) -> None:
    """A stage a kill cut short resumes only under the settings it began with, and the annotation
    runner and the trainer refuse others; decided here too, from their own records, so that a
    refused re-run has not already rewritten experiment.json (item 6 of issue 29)."""
    begun = out / "annotate" / "run.json"
    if not complete["annotate"]() and begun.is_file() and not cfg.cstar_dataset:
        have = read_json(begun, f"delete {begun.parent} to annotate anew").get("settings", {})
        diff = settings_differ(have, semantic_settings(annotate_config(cfg, out)))
        if diff:
            raise ConfigError(f"{begun.parent} holds an unfinished annotation made with other settings "
                              f"({', '.join(f'{k}: {have.get(k)!r}' for k in diff)}); re-run with those to resume it, "
                              f"or use another --out, or delete {begun.parent} to annotate anew")
    for stage, plain in (("train (tools)", False), ("train (+CC)", True)):
        folder = train_folder(out, plain)
        if complete.get(stage, lambda: True)() or not (out / "annotate" / "manifest.json").is_file():
            continue
        diff = resume_differs(train_config(cfg, out, plain, train_data(cfg, out, plain, write=False)), folder)
        if diff:
            raise ConfigError(f"{folder} holds checkpoints of an unfinished fine-tuning run with other "
                              f"{', '.join(diff)}; re-run with its settings to resume it, or use another --out, "
                              f"or delete {folder} to train anew")


def check_finished(cfg: ExperimentConfig, out: Path, complete) -> None:
    """A finished fine-tuning run whose summary or weights were cut off or edited would be skipped
    and then fail the probe, the evaluation or the report: one error naming the file and the fix,
    before anything runs. (A damaged annotation output is rebuilt from its shards instead: see
    ``_complete``.)"""
    for stage, plain in (("train (tools)", False), ("train (+CC)", True)):
        folder = train_folder(out, plain)
        if not complete[stage]():
            continue
        fix = f"delete {folder} to fine-tune it again (the rest of the run is kept)"
        read_json(folder / "train_summary.json", fix)
        cut = any((folder / n).is_file() for n in ("model.safetensors", "adapter_model.safetensors"))
        problem = weights_problem(folder) if cut else None  # none at all: the loader's own error says so
        if problem:
            raise ConfigError(f"{folder} is damaged: {problem} (cut off or edited?); {fix}")


def check_out(out: Path) -> None:
    """``--out`` is a folder an experiment wrote, or new: nothing is written into another one."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; pass a folder (it is created if missing)")
    if out.is_dir() and any(out.iterdir()) and not ((out / STAGES_FILE).is_file() or (out / "experiment.json").is_file()):
        raise ConfigError(f"--out {out} holds files that no experiment wrote (no {STAGES_FILE}, no experiment.json); "
                          "refusing to write into it: pass a new folder for --out")


def preflight(cfg: ExperimentConfig, out: Path, steps, ledger: Ledger, complete) -> None:
    """Every refusal that can be decided from disk, before anything is written: an --out that no
    experiment wrote, a finished stage made with other settings (or with a deleted stages.json,
    nothing to say which), an unfinished one begun with other settings, and --results that another
    configuration wrote."""
    check_out(out)
    if not ledger.data and any(guard and complete[name]() for name, guard, _ in steps):
        _rebuild_ledger(out, steps, ledger, complete)
    for name, guard, _ in steps:
        if guard:
            ledger.check(name, stage_settings(cfg, guard), complete[name]())
    check_unfinished(cfg, out, complete)
    check_finished(cfg, out, complete)
    if cfg.results and Path(cfg.results).exists() and not Path(cfg.results).is_dir():
        raise ConfigError(f"--results {cfg.results} is a file; pass a folder for the report (it is created if missing)")
    made = Path(cfg.results) / "results.json"
    if made.is_file() and not cfg.replace_results:
        try:
            theirs = _evidence_settings(json.loads(made.read_text("utf-8")).get("settings", {}))
        except ValueError:
            theirs = None
        ours = _evidence_settings(to_dict(cfg))
        # Keys the results lack are settings added since they were made (at their defaults then).
        if theirs is None or any(ours.get(k) != v for k, v in theirs.items()):
            raise ConfigError(f"--results {cfg.results} holds evidence from another configuration ({made}); "
                              "pass --results DIR to write elsewhere, or --replace-results to replace it")


def check_tools(names) -> None:
    """Every tool named exists, before the corpus stage runs (it used to be found out at annotation)."""
    from ..tools import get_tool

    for name in names:
        get_tool(name)


def run_experiment(cfg: ExperimentConfig, command: str = "") -> Path:
    """Every stage of the recipe in order; returns the results folder. With ``bank``, the run
    starts from the bank's finished parts and banks its own after each stage and when it stops;
    ``max_minutes`` (or SIGTERM, or Ctrl-C) stops it with :class:`Stopped`."""
    check_tasks(EvalConfig(tasks=list(cfg.tasks), data_dir=cfg.data_dir))
    check_tools(cfg.tools)
    out = Path(cfg.out)
    check_out(out)
    if cfg.bank:
        banked.restore(out, Path(cfg.bank), cfg.model)
    ledger, complete = Ledger(out), _complete(cfg, out)
    steps = plan(cfg, out, command)
    preflight(cfg, out, steps, ledger, complete)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "experiment.json", json.dumps({"command": command, "settings": to_dict(cfg)}, indent=1))
    set_threads(cfg.threads)
    watch = RecipeWatch(cfg, out, ledger, complete, Progress(estimate(cfg), [s.name for s in steps]))
    with banked.Deadline(cfg.max_minutes) as deadline, banked.Refresh(out, Path(cfg.bank) if cfg.bank else None):
        try:
            run_stages(steps, watch)
        except KeyboardInterrupt:
            _bank(cfg, out)
            why = f"{cfg.max_minutes:g} minutes passed" if deadline.fired else "interrupted"
            kept = f"banked {banked.describe(Path(cfg.bank))}; commit it, then" if cfg.bank else "the run folder keeps it;"
            raise Stopped(f"stopped in stage {watch.current} ({why}): {kept} run the same command to go on",
                          deadline.fired) from None
    return Path(cfg.results)


def _bank(cfg: ExperimentConfig, out: Path) -> None:
    if cfg.bank:
        banked.save_locked(out, Path(cfg.bank))


class RecipeWatch(Watch):
    """What a recipe adds around each stage of :func:`~toolformer_kit.pipeline.driver.run_stages`:
    a stage finished with these settings is skipped, a finished one is recorded in the ledger with
    its seconds (an evaluation's added to the earlier runs', see :func:`_mode`), the ETA line is
    printed, and the run's finished parts are banked."""

    def __init__(self, cfg: ExperimentConfig, out: Path, ledger: Ledger, complete, progress: Progress):
        super().__init__()
        self.cfg, self.out, self.ledger, self.complete, self.progress = cfg, out, ledger, complete, progress
        self.current, self.answered = "", 0

    def finished(self, step: Stage) -> bool:
        self.current = step.name
        done = step.guard and self.ledger.check(step.name, stage_settings(self.cfg, step.guard),
                                                self.complete[step.name]())
        if done:
            self.progress.skip(step.name)
            _bank(self.cfg, self.out)  # a stage finished by an earlier run without the bank is banked too
            return True
        return False

    def start(self, step: Stage) -> None:
        self.progress.start(step.name)
        self.answered = eval_records(self.out) if step.name == "evaluate" else 0  # reads every examples.jsonl

    def finish(self, step: Stage, seconds: float) -> None:
        super().finish(step, seconds)
        after = eval_records(self.out) if step.name == "evaluate" else 0
        settings = stage_settings(self.cfg, step.guard) if step.guard else None
        self.ledger.record(step.name, settings, seconds, _mode(step.name, step.guard, self.answered, after))
        self.progress.finish(step.name, seconds)
        _bank(self.cfg, self.out)
