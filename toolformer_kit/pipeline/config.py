"""Every setting of ``toolformer pipeline``: one dataclass drives the flags and the run.

Its own module, light to import, because the CLI imports every command's config to build its parser.
The defaults are sized for a 2-core CPU; the knobs that scale the run up are its fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..annotate.config import AnnotateConfig
from ..config import ConfigError, config_field as _f, stage_field
from ..eval.config import EvalConfig
from ..train.config import TrainConfig

DEV_SOURCES = ("corpus", "wiki")
CC_DATA = ("annotated", "cstar")


@dataclass
class PipelineConfig:
    """The pipeline's settings: a stage's setting is that stage config's field (one help text, see
    :func:`~toolformer_kit.config.stage_field`) at the pipeline's CPU-sized default."""

    out: str = _f("runs/default", "output folder; every stage writes a subfolder and is skipped once done")
    model: str = stage_field(AnnotateConfig, "model")
    sampler_model: str = stage_field(AnnotateConfig, "sampler_model", "qwen2.5-coder-0.5b", note="'' = --model")
    tools: list[str] = stage_field(AnnotateConfig, "tools", ["Calculator", "WikiSearch", "Calendar", "MT"],
                                   note="QA runs an LM reader per sampled call: add it when you have the time")
    docs_per_source: int = stage_field(AnnotateConfig, "default_docs", 2, note="wiki, mt, gsm8k, changelog")
    window_tokens: int = stage_field(AnnotateConfig, "window_tokens", 96)
    call_cost: float = stage_field(AnnotateConfig, "call_cost", added=True)
    train_steps: int = stage_field(TrainConfig, "max_steps", 30, note="per fine-tuning run")
    train_batch: int = stage_field(TrainConfig, "effective_batch", 8)
    learning_rate: float = stage_field(TrainConfig, "learning_rate", 3e-4, note="LoRA")
    max_length: int = stage_field(TrainConfig, "max_length", 192)
    dev_docs: int = _f(60, "held-out documents for dev perplexity, which chooses each run's checkpoint")
    dev_source: str = _f("corpus", "dev texts: 'corpus' = documents of the embedded corpus's own sources "
                                   "that were never annotated (the paper's held-out documents); 'wiki' = "
                                   "Wikipedia summaries only (the old default)")
    cc_data: str = _f("annotated", "+CC trains on: 'annotated' = every annotated text, calls or not (the "
                                   "paper's subset C); 'cstar' = only the texts of C*, calls removed (the "
                                   "old default)")
    tasks: list[str] = stage_field(EvalConfig, "tasks", ["svamp", "asdiv", "mawps", "dateset", "webquestions"],
                                   note="the default has one or more per annotated tool; MT has no task here "
                                        "because MLQA is not available offline")
    eval_limit: int = stage_field(EvalConfig, "limit", 30)
    data_dir: Optional[str] = stage_field(EvalConfig, "data_dir", note="$TOOLFORMER_DATA_DIR when set")
    seed: int = _f(0, "seed for every stage")
    threads: Optional[int] = stage_field(EvalConfig, "threads")
    dtype: str = stage_field(AnnotateConfig, "dtype", note="annotation, fine-tuning and evaluation", added=True)

    def __post_init__(self) -> None:
        for name, allowed in (("dev_source", DEV_SOURCES), ("cc_data", CC_DATA)):
            if getattr(self, name) not in allowed:
                raise ConfigError(f"--{name.replace('_', '-')} must be one of {', '.join(allowed)}, "
                                  f"not {getattr(self, name)!r}")
