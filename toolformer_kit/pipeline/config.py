"""Every setting of ``toolformer pipeline``: one dataclass drives the flags and the run.

Its own module, light to import, because the CLI imports every command's config to build its parser.
The defaults are sized for a 2-core CPU; the knobs that scale the run up are its fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..annotate.config import AnnotateConfig
from ..config import ConfigError, config_field as _f, stage_config, stage_field
from ..eval.config import EvalConfig
from ..train.config import TrainConfig

DEV_SOURCES = ("cstar", "corpus", "wiki")
CC_DATA = ("annotated", "cstar")
CORPORA = ("math", "default")


@dataclass
class PipelineConfig:
    """The pipeline's settings: a stage's setting is that stage config's field (one help text, see
    :func:`~toolformer_kit.config.stage_field`) at the pipeline's CPU-sized default.

    The default is the laptop-sized demonstration of issue 43: Qwen 0.5B annotates a few fresh
    windows of the maths corpus with the Calculator, learns from those calls joined with the
    published ``datasets/cstar-math``, and is evaluated on 100 problems of each maths set. The
    older smoke run (SmolLM2, four tools, LoRA, +CC) is ``--config configs/pipeline/smoke.yaml``."""

    out: str = _f("runs/default", "output folder; every stage writes a subfolder and is skipped once done")
    model: str = stage_field(AnnotateConfig, "model", "qwen2.5-coder-0.5b", also=(TrainConfig,),
                             note="M: it samples, scores and is fine-tuned, as in the paper")
    sampler_model: str = stage_field(AnnotateConfig, "sampler_model", "", note="'' = --model")
    tools: list[str] = stage_field(AnnotateConfig, "tools", ["Calculator"], also=(EvalConfig,),
                                   note="QA runs an LM reader per sampled call: add it when you have the time")
    corpus: str = _f("math", "what is annotated: 'math' = the next --fresh-windows windows of the maths campaign's "
                             "corpus (GSM8K prose solutions, arithmetic Wikipedia summaries) that no dataset of "
                             "--cstar-datasets annotated; 'default' = the embedded mixed corpus (--docs-per-source)")
    fresh_windows: int = _f(8, "corpus math: windows annotated by this run (~26 s each on a 2-core CPU)", min=1)
    cstar_datasets: list[str] = _f(["datasets/cstar-math"], "published C* folders (datasets/NAME) whose texts join "
                                                          "this run's kept calls for fine-tuning ('' = none)",
                                  empty_ok=True)
    docs_per_source: int = stage_field(AnnotateConfig, "default_docs", 2, note="corpus default: wiki, mt, gsm8k, changelog")
    window_tokens: int = stage_field(AnnotateConfig, "window_tokens", 96,
                                     note="corpus default; corpus math keeps its campaign's windows")
    call_cost: float = stage_field(AnnotateConfig, "call_cost", added=True)
    train_steps: int = stage_field(TrainConfig, "max_steps", 24, note="per fine-tuning run")
    train_batch: int = stage_field(TrainConfig, "effective_batch", 8)
    micro_batch: int = stage_field(TrainConfig, "batch_size", 4)
    lora: bool = stage_field(TrainConfig, "lora", False)
    learning_rate: float = stage_field(TrainConfig, "learning_rate", 3e-5, note="full fine-tuning")
    max_length: int = stage_field(TrainConfig, "max_length", 160)
    train_cc: bool = _f(False, "also fine-tune the paper's +CC baseline (same texts without calls) and evaluate it")
    dev_source: str = _f("cstar", "dev texts that choose each run's checkpoint: 'cstar' = 10 %% of the training C* "
                                  "held out with its calls; 'corpus' = documents of the embedded corpus's own sources "
                                  "that were never annotated (the paper's held-out documents); 'wiki' = Wikipedia "
                                  "summaries only")
    dev_docs: int = _f(60, "dev-source corpus or wiki: held-out documents for dev perplexity")
    cc_data: str = _f("annotated", "+CC trains on: 'annotated' = every annotated text, calls or not (the "
                                   "paper's subset C); 'cstar' = only the texts of C*, calls removed")
    tasks: list[str] = stage_field(EvalConfig, "tasks", ["svamp", "asdiv", "mawps"],
                                   note="the Calculator's three: the default annotates the Calculator only")
    eval_limit: int = stage_field(EvalConfig, "limit", 100,
                                  note="per task: 300 pooled problems put ±5 points around a +20-point effect")
    base_baseline: bool = _f(True, "also evaluate the base model with calls disabled (the paper's first column)")
    examples: int = _f(3, "worked examples of the tool-trained model printed at the end and put in the report", min=0)
    data_dir: Optional[str] = stage_field(EvalConfig, "data_dir", note="$TOOLFORMER_DATA_DIR when set")
    seed: int = _f(0, "seed for every stage", feeds=(AnnotateConfig, TrainConfig, EvalConfig))
    threads: Optional[int] = stage_field(EvalConfig, "threads")
    dtype: str = stage_field(AnnotateConfig, "dtype", note="annotation, fine-tuning and evaluation", added=True,
                             also=(TrainConfig, EvalConfig))

    def __post_init__(self) -> None:
        for name, allowed in (("dev_source", DEV_SOURCES), ("cc_data", CC_DATA), ("corpus", CORPORA)):
            if getattr(self, name) not in allowed:
                raise ConfigError(f"--{name.replace('_', '-')} must be one of {', '.join(allowed)}, "
                                  f"not {getattr(self, name)!r}")
        self.cstar_datasets = [d for d in self.cstar_datasets if d]


def preset(name: str, **overrides) -> PipelineConfig:
    """A named pipeline configuration from ``configs/pipeline/NAME.yaml`` (``smoke``: the old CPU
    smoke run that CI and the tests use), with ``overrides`` on top, as ``--config`` reads it."""
    from ..config import file_layer, layered

    path = Path(__file__).resolve().parents[2] / "configs" / "pipeline" / f"{name}.yaml"
    return layered(PipelineConfig, file_layer(path), ("overrides", overrides))


def fine_tuning(cfg, **run) -> TrainConfig:
    """A composite config's fine-tuning run (the pipeline's and an experiment's): its declared
    training settings (:func:`~toolformer_kit.config.stage_config`), the micro-batch never above the
    effective batch, the checkpoint evaluated twice (half-way and at the end) and 10 % of the data
    carved out where no dev file is given. ``run``: what differs per run (data, out, dev files,
    plain, keep)."""
    return stage_config(TrainConfig, cfg, batch_size=min(cfg.micro_batch, cfg.train_batch),
                        eval_steps=max(1, cfg.train_steps // 2), dev_fraction=0.1, **run)
