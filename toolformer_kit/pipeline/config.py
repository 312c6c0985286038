"""Every setting of ``toolformer pipeline``: one dataclass drives the flags and the run.

Its own module, light to import, because the CLI imports every command's config to build its parser.
The defaults are sized for a 2-core CPU; the knobs that scale the run up are its fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..config import ConfigError

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
