"""The whole method end to end on one machine: models → index → annotate → fine-tune → evaluate → report.

Each stage is a call into the same function its own subcommand runs, with its own output folder
under ``--out``; a stage whose completion marker exists is skipped, so re-running the command
after an interruption continues where it stopped (annotation and training also resume inside
their stage). The defaults are sized for a 2-core CPU; the knobs that scale the run up are the
fields of :class:`PipelineConfig`.
"""

from __future__ import annotations

import json
import logging
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from .config import ConfigError

log = logging.getLogger(__name__)

DEV_SOURCES = ("corpus", "wiki")
CC_DATA = ("annotated", "cstar")


def _f(default, help_text: str):
    if isinstance(default, list):
        return field(default_factory=lambda d=default: list(d), metadata={"help": help_text})
    return field(default=default, metadata={"help": help_text})


@dataclass
class PipelineConfig:
    out: str = _f("runs/default", "output folder; every stage writes a subfolder and is skipped once done")
    model: str = _f("smollm2-135m", "model that scores calls and is fine-tuned")
    sampler_model: str = _f("qwen2.5-coder-0.5b", "model that proposes calls ('' = the same model)")
    tools: list[str] = _f(["Calculator", "WikiSearch", "Calendar", "MT"],
                          "tools to annotate (QA runs an LM reader per sampled call: add it when you have the time)")
    docs_per_source: int = _f(2, "embedded corpus: documents per source (wiki, mt, gsm8k, changelog)")
    window_tokens: int = _f(96, "annotation window length in tokens")
    train_steps: int = _f(30, "optimiser steps per fine-tuning run")
    train_batch: int = _f(8, "effective batch (sequences per step)")
    learning_rate: float = _f(3e-4, "LoRA learning rate")
    max_length: int = _f(192, "training sequence length")
    dev_docs: int = _f(60, "held-out documents for dev perplexity, which chooses each run's checkpoint")
    dev_source: str = _f("corpus", "dev texts: 'corpus' = documents of the embedded corpus's own sources "
                                   "that were never annotated (the paper's held-out documents); 'wiki' = "
                                   "Wikipedia summaries only (the old default)")
    cc_data: str = _f("annotated", "+CC trains on: 'annotated' = every annotated text, calls or not (the "
                                   "paper's subset C); 'cstar' = only the texts of C*, calls removed (the "
                                   "old default)")
    tasks: list[str] = _f(["svamp", "asdiv", "mawps", "dateset", "webquestions"],
                          "evaluation tasks (the default has one or more per annotated tool; MT has no "
                          "task here because MLQA is not available offline)")
    eval_limit: int = _f(30, "examples per task")
    data_dir: Optional[str] = _f(None, "benchmark folder (default: $TOOLFORMER_DATA_DIR, else "
                                         "../shared/data/benchmarks next to the repository)")
    seed: int = _f(0, "seed for every stage")
    threads: Optional[int] = _f(None, "torch CPU threads (default: torch's choice)")

    def __post_init__(self) -> None:
        for name, allowed in (("dev_source", DEV_SOURCES), ("cc_data", CC_DATA)):
            if getattr(self, name) not in allowed:
                raise ConfigError(f"--{name.replace('_', '-')} must be one of {', '.join(allowed)}, "
                                  f"not {getattr(self, name)!r}")


def _done(path: Path) -> bool:
    return path.exists()


def stage_models(cfg: PipelineConfig) -> None:
    from .models import EMBEDDED, pull

    for name in {cfg.model, cfg.sampler_model} - {""}:
        if name in EMBEDDED:
            pull(name)


def stage_index(cfg: PipelineConfig) -> None:
    from .tools import get_tool

    if "WikiSearch" in cfg.tools or "QA" in cfg.tools:
        tool = get_tool("WikiSearch")
        if tool.prepare:
            tool.prepare()


def stage_annotate(cfg: PipelineConfig, out: Path) -> Path:
    from .annotate.config import AnnotateConfig
    from .annotate.runner import Runner

    folder = out / "annotate"
    if not _done(folder / "manifest.json"):
        Runner(AnnotateConfig(model=cfg.model, sampler_model=cfg.sampler_model, tools=list(cfg.tools),
                              corpus="default", default_docs=cfg.docs_per_source, out=str(folder),
                              window_tokens=cfg.window_tokens, seed=cfg.seed)).run()
    return folder


def heldout_texts(exclude: set[str], n: int, seed: int) -> list[str]:
    """Wikipedia summaries that training did not see (``--dev-source wiki``). ``exclude`` holds the
    texts trained on, which are *windows* of long summaries, so a summary containing one is out."""
    from .annotate.sources import _load_wiki

    texts = sorted(v["extract"] for v in _load_wiki("en-us").values() if v.get("extract"))
    seen = [w for w in exclude if w]
    pool = [t for t in texts if len(t) > 200 and not any(w in t for w in seen)]
    return random.Random(seed + 7919).sample(pool, min(n, len(pool)))


def subject(doc_id: str) -> str:
    """What a default-corpus document is about: its article title for ``wiki`` and ``mt`` (an ``mt``
    document reuses the English summary's sentences), else its id; a window suffix is dropped.

    >>> subject("wiki:Asterix#1"), subject("mt:fr:Asterix"), subject("gsm8k:715")
    ('title:Asterix', 'title:Asterix', 'gsm8k:715')
    """
    head, _, tail = doc_id.rpartition("#")
    base = head if head and tail.isdigit() else doc_id
    source, _, rest = base.partition(":")
    if source == "wiki":
        return "title:" + rest
    if source == "mt":
        return "title:" + rest.partition(":")[2]
    return base


def _long_sentences(text: str) -> set[str]:
    from .annotate.sources import _sentences

    return {s for s in _sentences(text) if len(s) >= 40}


def heldout_documents(seen_ids: Iterable[str], seen_texts: Iterable[str], n: int,
                      seed: int) -> list[tuple[str, str]]:
    """(id, text) of ``n`` documents drawn from the default corpus's own sources, in turn, that the
    annotation never saw: the paper's dev set is held-out documents of the training distribution,
    so checkpoint choice must not favour one source or reward memorising the training texts.
    A document is seen when its :func:`subject` was annotated or one of its long sentences occurs
    in an annotated text (windows and ids of another form are caught this way too)."""
    from .annotate.sources import SOURCES

    seen = {subject(i) for i in seen_ids}
    sentences = set().union(*map(_long_sentences, seen_texts))
    per = -(-n // len(SOURCES))
    groups = []
    for name, make in SOURCES.items():
        pool = make(3 * per + len(seen), random.Random(f"{seed}:heldout:{name}"))
        groups.append([(d.doc_id, d.text) for d in pool
                       if subject(d.doc_id) not in seen and not sentences & _long_sentences(d.text)][:per])
    mixed = [d for turn in zip(*[g + [None] * (per - len(g)) for g in groups]) for d in turn if d]
    return mixed[:n]


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]


def stage_dev(cfg: PipelineConfig, out: Path, annotated: Path) -> Path:
    path = out / "dev.jsonl"
    if not _done(path):
        docs = _read_jsonl(annotated / "documents.jsonl")
        if cfg.dev_source == "wiki":
            texts = heldout_texts({d["text"] for d in docs}, cfg.dev_docs, cfg.seed)
            rows = [{"id": f"dev-{i}", "text": t} for i, t in enumerate(texts)]
        else:
            picked = heldout_documents([d["id"] for d in docs], [d["text"] for d in docs], cfg.dev_docs,
                                       cfg.seed)
            rows = [{"id": i, "text": t} for i, t in picked]
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        tmp.replace(path)
    return path


def training_data(cfg: PipelineConfig, annotated: Path) -> dict[str, Path]:
    """The file each run trains on: C* for the tool run; for +CC, by default every annotated text,
    because the paper's +CC baseline is the model fine-tuned on the same subset C that was
    annotated, not only on the texts that kept a call."""
    cc = annotated / ("documents.jsonl" if cfg.cc_data == "annotated" else "corpus.jsonl")
    return {"tool-trained": annotated / "corpus.jsonl", "+CC": cc}


def stage_train(cfg: PipelineConfig, out: Path, data: Path, dev: Path, plain: bool) -> Path:
    from .train import run_training
    from .train.config import TrainConfig

    folder = out / ("train-cc" if plain else "train-tools")
    if not _done(folder / "train_summary.json"):
        run_training(TrainConfig(model=cfg.model, data=str(data), out=str(folder), plain_baseline=plain,
                                 dev_data=str(dev), lora=True, max_steps=cfg.train_steps,
                                 effective_batch=cfg.train_batch, batch_size=min(4, cfg.train_batch),
                                 learning_rate=cfg.learning_rate, max_length=cfg.max_length,
                                 eval_steps=max(1, cfg.train_steps // 2), seed=cfg.seed))
    return folder


def stage_eval(cfg: PipelineConfig, out: Path, tools_model: Path, cc_model: Path, dev: Path) -> Path:
    from .commands.eval import main as eval_main

    folder = out / "eval"
    argv = ["--model", f"toolformer={tools_model}", "--baselines", f"base={cfg.model},cc={cc_model}",
            "--tasks", ",".join(cfg.tasks), "--limit", str(cfg.eval_limit), "--out", str(folder),
            "--heldout", str(dev), "--seed", str(cfg.seed)]
    argv += ["--data-dir", cfg.data_dir] if cfg.data_dir else []
    argv += ["--threads", str(cfg.threads)] if cfg.threads else []
    if eval_main(argv) != 0:
        raise RuntimeError("evaluation failed; see the messages above")
    return folder


def stage_report(cfg: PipelineConfig, out: Path, annotated: Path, trained: dict, evaluated: Path,
                 timings: dict) -> tuple[Path, Path]:
    from . import report
    from .config import to_dict

    from .evidence.results import pipeline_verdict

    settings = to_dict(cfg)
    blocks = pipeline_verdict(evaluated, cfg.tasks, seed=cfg.seed)  # the verdict first, then the details
    blocks += report.deviation_blocks(settings) + [report.Block("h2", "Settings"),
              report.Block("table", header=("setting", "value"),
                           rows=[(k, v) for k, v in settings.items()]),
              report.Block("table", header=("stage", "seconds"), rows=[(k, f"{v:.0f}") for k, v in timings.items()])]
    blocks += report.annotation_blocks(annotated)
    blocks += report.training_blocks(trained)
    blocks += report.task_tool_blocks(cfg.tasks, cfg.tools)
    blocks += report.eval_blocks(evaluated)
    return report.write(out / "report", blocks)


def check_inputs(cfg: PipelineConfig) -> None:
    """Fail before the long stages, not after them, when a task is unknown or its data cannot be
    read: each task's examples are loaded once here (seconds), so a missing file is found now."""
    from .commands.eval import EvalConfig, resolve_data_dir
    from .eval.tasks import get_task

    data_dir = resolve_data_dir(EvalConfig(tasks=list(cfg.tasks), data_dir=cfg.data_dir))
    for name in cfg.tasks:
        try:
            get_task(name).load(data_dir)
        except KeyError as exc:
            raise ConfigError(f"--tasks: {exc}") from None
        except FileNotFoundError as exc:
            raise ConfigError(f"task {name}: {exc}") from None


def run_pipeline(cfg: PipelineConfig) -> tuple[Path, Path]:
    check_inputs(cfg)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    if cfg.threads:
        import torch

        torch.set_num_threads(cfg.threads)
    timings: dict[str, float] = {}

    def timed(name, fn, *args):
        t0 = time.perf_counter()
        log.info("stage %s", name)
        result = fn(*args)
        timings[name] = time.perf_counter() - t0
        return result

    timed("models", stage_models, cfg)
    timed("index", stage_index, cfg)
    annotated = timed("annotate", stage_annotate, cfg, out)
    dev = timed("dev texts", stage_dev, cfg, out, annotated)
    data = training_data(cfg, annotated)
    trained = {"tool-trained": timed("train (tools)", stage_train, cfg, out, data["tool-trained"], dev, False),
               "+CC": timed("train (+CC)", stage_train, cfg, out, data["+CC"], dev, True)}
    evaluated = timed("evaluate", stage_eval, cfg, out, trained["tool-trained"], trained["+CC"], dev)
    paths = timed("report", stage_report, cfg, out, annotated, trained, evaluated, timings)
    (out / "timings.json").write_text(json.dumps(timings, indent=1))
    return paths
