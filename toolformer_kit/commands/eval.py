"""Zero-shot evaluation as in the paper's §4: math, LAMA, QA, DATESET/TempLAMA, MLQA and perplexity.

Each model in ``--model`` runs under every ``--settings`` entry (``tools`` = calls on top-k with
``--k``, ``disabled`` = the call token masked, ``k1,k3,k10`` = explicit k; ``--k-sweep`` adds the
paper's 1, 3, 10); models in ``--baselines`` run with calls disabled only. So the paper's four
columns are one command:
``toolformer eval --baselines gptj=BASE,gptj+cc=CC --model toolformer=TRAINED --tasks svamp,dateset``.

Results go to ``--out`` (per-example JSONL, summary.json, table.md, PNG plots); re-running the
same command resumes where it stopped.
"""

from __future__ import annotations

import argparse
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..cli import standalone
from ..config import ConfigError, add_dataclass_args, build_config

HELP = "zero-shot evaluation with and without tools (tables, intervals, plots)"
log = logging.getLogger(__name__)

PAPER_TASKS = ["lama-squad", "lama-google-re", "lama-trex", "svamp", "asdiv", "mawps", "webquestions",
               "nq", "triviaqa", "dateset", "wikitext2"]
ALL_TOOLS = ["Calculator", "Calendar", "WikiSearch", "QA", "MT"]
NO_DATA_TASKS = {"dateset"}


@dataclass
class EvalConfig:
    model: list[str] = field(default_factory=list, metadata={
        "help": "models evaluated under every --settings entry: embedded name, HF folder or LABEL=MODEL"})
    baselines: list[str] = field(default_factory=list, metadata={
        "help": "models evaluated with calls disabled only (the paper's GPT-J and GPT-J + CC columns)"})
    tasks: list[str] = field(default_factory=lambda: list(PAPER_TASKS), metadata={"help": "comma-separated task names"})
    settings: list[str] = field(default_factory=lambda: ["tools", "disabled"], metadata={
        "help": "tools (calls on top-k), disabled, or kN"})
    k: int = field(default=10, metadata={"help": "a call opens when ' [' is among the top k tokens"})
    k_sweep: bool = field(default=False, metadata={"help": "also run k = 1, 3, 10 (the paper's Table 9)"})
    tools: list[str] = field(default_factory=lambda: list(ALL_TOOLS), metadata={
        "help": "tools the models may call (each task still removes the ones the paper removes)"})
    data_dir: Optional[str] = field(default=None, metadata={
        "help": "benchmark folder laid out like shared/data/benchmarks (default: ../shared/data/benchmarks)"})
    out: str = field(default="eval-out", metadata={"help": "output folder (re-running resumes)"})
    limit: Optional[int] = field(default=None, metadata={"help": "at most N examples (documents) per task"})
    batch_size: int = field(default=8, metadata={"help": "prompts decoded together"})
    seed: int = field(default=0, metadata={"help": "seed for decoding and bootstrap"})
    bootstrap: int = field(default=1000, metadata={"help": "bootstrap resamples for the 95%% intervals"})
    heldout: Optional[str] = field(default=None, metadata={
        "help": "held-out corpus (.jsonl with 'text' or blank-line separated .txt) for perplexity"})
    ppl_window: int = field(default=1024, metadata={"help": "perplexity window (tokens)"})
    ppl_stride: int = field(default=512, metadata={"help": "tokens scored per perplexity window"})
    device: Optional[str] = field(default=None, metadata={"help": "torch device (default: cuda if available)"})
    backend: str = field(default="hf", metadata={"help": "LM backend: hf (transformers) or vllm"})
    dtype: str = field(default="auto", metadata={
        "help": "compute dtype: auto (bf16 on a GPU or a CPU with hardware bf16, else fp32), fp32 or bf16"})
    threads: Optional[int] = field(default=None, metadata={
        "help": "torch CPU threads (default: torch's choice; 1 is far faster when other jobs share the cores)"})
    plots: bool = field(default=True, metadata={"help": "write PNG plots (needs matplotlib)"})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..eval.tasks import task_list

    add_dataclass_args(parser, EvalConfig)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter  # keep the task table's columns
    parser.epilog = "tasks (name, tool it exercises, description):\n" + task_list()


DATA_ENV = "TOOLFORMER_DATA_DIR"


def default_data_dir() -> Path:
    """``$TOOLFORMER_DATA_DIR``, else ``../shared/data/benchmarks`` next to the repository root
    (where the project keeps its copies of the published dev sets)."""
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV]).expanduser()
    return Path(__file__).resolve().parents[2].parent / "shared" / "data" / "benchmarks"


def resolve_data_dir(cfg: EvalConfig) -> Path:
    if cfg.data_dir:
        path = Path(cfg.data_dir).expanduser()
        if not path.is_dir():
            raise ConfigError(f"--data-dir {path} is not a folder; point it at your benchmark copies")
        return path
    path = default_data_dir()
    if not path.is_dir() and set(cfg.tasks) - NO_DATA_TASKS:
        raise ConfigError(f"no benchmark folder at the default {path}; pass --data-dir DIR or set "
                          f"{DATA_ENV} (laid out like shared/data/benchmarks, see its README)")
    return path


def parse_model(spec: str) -> tuple[str, str]:
    """``LABEL=MODEL`` or ``MODEL`` → (label, model); a folder's label is its name.

    >>> parse_model("base=qwen2.5-coder-0.5b"), parse_model("/runs/tf-qwen/")
    (('base', 'qwen2.5-coder-0.5b'), ('tf-qwen', '/runs/tf-qwen/'))
    """
    if "=" in spec:
        label, _, model = spec.partition("=")
        return label.strip(), model.strip()
    return Path(spec.rstrip("/")).name or spec, spec


def settings_for(cfg: EvalConfig):
    from ..eval.harness import Setting

    names = list(cfg.settings) + (["k1", "k3", "k10"] if cfg.k_sweep else [])
    try:
        settings = [Setting.parse(n, cfg.k) for n in names]
    except ValueError as exc:
        raise ConfigError(f"--settings: {exc}") from None
    return list({s.name: s for s in settings}.values())


def load_tools(names: list[str]) -> dict:
    from ..registry import UnknownNameError
    from ..tools import get_tool

    try:
        return {name: get_tool(name) for name in names}
    except UnknownNameError as exc:
        raise ConfigError(f"--tools: {exc}") from None


def run(args: argparse.Namespace) -> int:
    from ..eval.harness import Setting
    from ..eval.report import comparison_table, write_report

    cfg = build_config(EvalConfig, args)
    if not cfg.model and not cfg.baselines:
        raise ConfigError("nothing to evaluate: pass --model MODEL (and/or --baselines LABEL=MODEL,...)")
    from ..lm import BACKENDS

    BACKENDS.get(cfg.backend)  # an unknown backend fails before any work
    from ..eval.tasks import get_task

    tasks = [get_task(t) for t in cfg.tasks]
    data_dir = resolve_data_dir(cfg)
    runs = [(*parse_model(m), settings_for(cfg)) for m in cfg.model]
    runs += [(*parse_model(m), [Setting.parse("disabled")]) for m in cfg.baselines]
    needs_tools = any(not s.disabled for _, _, settings in runs for s in settings)
    tools = load_tools(cfg.tools) if needs_tools else {}
    for label, model, settings in runs:
        evaluate_model(cfg, label, model, settings, tasks, data_dir, tools)
    summaries = write_report(cfg.out, cfg.bootstrap, cfg.seed, plots=cfg.plots)
    print(comparison_table(summaries))
    print(f"per-example records, summary.json and table.md in {cfg.out}")
    return 0


def evaluate_model(cfg: EvalConfig, label: str, model: str, settings, tasks, data_dir: Path, tools: dict) -> None:
    """Load one model and run its generation tasks and perplexity texts."""
    from ..eval.harness import decoder_generate, evaluate
    from ..eval.perplexity import run_perplexity
    from ..eval.tasks import subset
    from ..eval.tasks.text import load_corpus
    from ..lm import load_lm

    log.info("evaluating %s (%s) under %s", label, model, ", ".join(s.name for s in settings))
    if cfg.threads:
        import torch

        torch.set_num_threads(cfg.threads)
    lm = load_lm(model, backend=cfg.backend, device=cfg.device, dtype=cfg.dtype)
    # Recorded only off the default, so folders written before the flag existed still resume.
    info = {"model": model} | ({"backend": cfg.backend} if cfg.backend != "hf" else {}) \
        | ({"dtype": cfg.dtype} if cfg.dtype != "auto" else {})
    evaluate(label, decoder_generate(lm, cfg.batch_size), tasks, settings, data_dir, cfg.out, tools=tools,
             limit=cfg.limit, batch_size=cfg.batch_size, seed=cfg.seed, n_resamples=cfg.bootstrap, info=info)
    texts = [(t.name, subset(t.load(data_dir), cfg.limit)) for t in tasks if t.kind == "perplexity"]
    if cfg.heldout:
        texts.append(("heldout", subset(load_corpus(cfg.heldout), cfg.limit)))
    for name, docs in texts:
        run_perplexity(lm, label, name, docs, cfg.out, cfg.ppl_window, cfg.ppl_stride, cfg.bootstrap, cfg.seed)


main = standalone("toolformer eval", __doc__, add_arguments, run)
