"""One evaluation run as a library call: :func:`run_eval` does what ``toolformer eval`` does,
minus the printing, so the pipeline and the experiment recipes call it with an
:class:`~.config.EvalConfig` instead of building a command line."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

from ..config import ConfigError
from ..lm.base import BACKENDS, load_lm, set_threads
from .config import EvalConfig, check_tasks, load_tools, parse_model
from .harness import decoder_generate, evaluate
from .records import RECORDS
from .perplexity import run_perplexity
from .report import write_report
from .setting import DISABLED, Setting
from .tasks import get_task, subset
from .tasks.text import load_corpus

log = logging.getLogger(__name__)


def settings_for(cfg: EvalConfig) -> list[Setting]:
    try:
        settings = [Setting.parse(n, cfg.k) for n in cfg.settings]
    except ValueError as exc:
        raise ConfigError(f"--settings: {exc}") from None
    settings += [Setting(k) for k in (1, 3, 10)] if cfg.k_sweep else []
    if cfg.max_calls < 1:
        raise ConfigError(f"--max-calls must be >= 1 (the 'disabled' setting opens none), got {cfg.max_calls}")
    if cfg.max_calls != 1:  # every setting with calls on, unless its name says its own (k10+calls3)
        settings = [dataclasses.replace(s, max_calls=cfg.max_calls) if not s.disabled and s.max_calls == 1 else s
                    for s in settings]
    return list({s.name: s for s in settings}.values())


REPORT_FILES = ("summary.json", "table.md", "accuracy.png", "breakdown.png")


def check_out(out: str | Path) -> None:
    """Refuse an --out whose report files no evaluation wrote: the report is rewritten from the
    records under ``out`` at the end of every run, so a foreign ``summary.json`` or ``table.md``
    there would be replaced. A folder holding evaluation records (``MODEL/SETTING/TASK/…``, or
    ``MODEL/perplexity/…``) is an earlier evaluation's, and is resumed."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; pass a folder (it is created if missing)")
    theirs = [n for n in REPORT_FILES if (out / n).exists()]
    ours = next(out.glob(f"*/*/*/{RECORDS}"), None) or next(out.glob("*/perplexity/*.json*"), None)
    if theirs and ours is None:
        raise ConfigError(f"--out {out} holds {', '.join(theirs)} that no evaluation wrote there (no records under "
                          "it); refusing to replace them: pass a new folder for --out")


def run_eval(cfg: EvalConfig) -> list[dict]:
    """Evaluate every model of ``cfg`` and write the report; returns the summaries. Every input
    is checked (models given, backend, tasks, data folder, tools) before a model loads."""
    if not cfg.model and not cfg.baselines:
        raise ConfigError("nothing to evaluate: pass --model MODEL (and/or --baselines LABEL=MODEL,...)")
    BACKENDS.get(cfg.backend)  # an unknown backend fails before any work
    check_out(cfg.out)
    tasks = [get_task(t) for t in cfg.tasks]
    runs = [(*parse_model(m), settings_for(cfg)) for m in cfg.model]
    runs += [(*parse_model(m), [DISABLED]) for m in cfg.baselines]
    data_dir = check_tasks(cfg)  # an empty or unreadable benchmark file: before a model loads, not a traceback after
    needs_tools = any(not s.disabled for _, _, settings in runs for s in settings)
    tools = load_tools(cfg.tools) if needs_tools else {}
    for label, model, settings in runs:
        evaluate_model(cfg, label, model, settings, tasks, data_dir, tools)
    return write_report(cfg.out, cfg.bootstrap, cfg.seed, plots=cfg.plots)


def model_identity(model: str) -> str:
    """What a model is, not where it lies: a local folder is its name plus a hash of its config and
    its weight files' names and sizes (so a run folder copied elsewhere, or named by a relative
    path, resumes its evaluation); an embedded name or hub id is itself."""
    import hashlib

    folder = Path(model).expanduser()
    if not folder.is_dir():
        return model
    h = hashlib.sha256()
    config = folder / "config.json"
    h.update(config.read_bytes() if config.is_file() else b"")
    for f in sorted(folder.iterdir()):
        if f.suffix in (".safetensors", ".bin", ".gguf") and f.is_file():
            h.update(f"{f.name}:{f.stat().st_size}".encode())
    return f"{folder.resolve().name}:{h.hexdigest()[:16]}"


def run_info(cfg: EvalConfig, model: str, extra: dict | None = None) -> dict:
    """What a run folder records about the model, checked on resume. Backend and dtype are recorded
    only off their defaults (``""``, the library default a recipe evaluates with, included), so
    folders written before the flags existed still resume. ``extra``: the caller's own keys.

    >>> run_info(EvalConfig(dtype=""), "m", {"lama_search": False})
    {'model': 'm', 'model_id': 'm', 'lama_search': False}
    >>> run_info(EvalConfig(backend="vllm", dtype="bf16"), "m")["dtype"]
    'bf16'
    """
    return {"model": model, "model_id": model_identity(model)} | ({"backend": cfg.backend} if cfg.backend != "hf" else {}) \
        | ({"dtype": cfg.dtype} if cfg.dtype not in ("auto", "") else {}) | dict(extra or {})


def evaluate_model(cfg: EvalConfig, label: str, model: str, settings, tasks, data_dir: Path, tools: dict,
                   info: dict | None = None) -> None:
    """Load one model and run its generation tasks and perplexity texts (``info``: more keys its run
    folders record, see :func:`run_info`)."""
    log.info("evaluating %s (%s) under %s", label, model, ", ".join(s.name for s in settings))
    set_threads(cfg.threads)
    lm = load_lm(model, backend=cfg.backend, device=cfg.device, dtype=cfg.dtype)
    info = run_info(cfg, model, info)
    evaluate(label, decoder_generate(lm, cfg.batch_size), tasks, settings, data_dir, cfg.out, tools=tools,
             limit=cfg.limit, batch_size=cfg.batch_size, seed=cfg.seed, n_resamples=cfg.bootstrap, info=info)
    texts = [(t.name, subset(t.load(data_dir), cfg.limit)) for t in tasks if t.kind == "perplexity"]
    if cfg.heldout:
        texts.append(("heldout", subset(load_corpus(cfg.heldout), cfg.limit)))
    for name, docs in texts:
        run_perplexity(lm, label, name, docs, cfg.out, cfg.ppl_window, cfg.ppl_stride, cfg.bootstrap, cfg.seed)
