"""Settings of the fine-tuning stage: one dataclass drives ``toolformer train`` flags and YAML files.

The defaults are the paper's (§4.1): sequences of up to 1,024 tokens, an effective batch of 128
reached by gradient accumulation, learning rate 1e-5 with linear warm-up over the first 10% of
the steps, at most 2,000 steps, dev perplexity every 500 steps and the best checkpoint kept.
Hardware defaults are chosen at run time (:meth:`TrainConfig.resolved_bf16`): bf16 autocast (fp32
master weights) on a GPU or a CPU where a bf16 matmul is measured faster than fp32, fp32 elsewhere —
a CPU without hardware bf16 emulates it, and one Xeon with avx512_bf16 but no AMX ran it at half the
fp32 rate (lm.base.bf16_pays).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..config import ConfigError
from ..lm.base import resolve_dtype


def _h(text: str, **extra) -> dict:
    return {"help": text, **extra}


@dataclass
class TrainConfig:
    """Everything ``toolformer train`` needs; each field is also a ``--flag`` and a config key."""

    # ------------------------------------------------------------ what and where
    model: str = field(default="smollm2-135m", metadata=_h("embedded model name, HF folder or hub id"))
    data: str = field(default="", metadata=_h("C* JSONL: one {\"text\": ...} object per line, calls written in"))
    out: str = field(default="", metadata=_h("output folder: the trained model, its card and plot"))
    plain_baseline: bool = field(default=False, metadata=_h(
        "the '+CC' baseline: train on the same texts with every call removed (also --cc)"))
    dev_data: Optional[str] = field(default=None, metadata=_h(
        "plain dev texts (JSONL with 'text', or a JSON list/dict of texts), ideally held-out documents "
        "of the corpus that was annotated, as in the paper; default: carve --dev-fraction out of --data "
        "(flagged in the log, summary and card as not the paper's dev set)"))
    dev_docs: int = field(default=1000, metadata=_h("dev documents for perplexity (the paper used 1,000)"))
    dev_with_calls: bool = field(default=False, metadata=_h(
        "dev texts keep their calls (held-out C* texts), so the perplexity that picks the checkpoint does "
        "not penalise writing calls; default: calls removed, the paper's plain dev text"))
    keep: str = field(default="best", metadata=_h(
        "the final model: 'best' (lowest dev perplexity, the paper's) or 'last' (the last step; dev "
        "perplexity is still reported)"))
    dev_fraction: float = field(default=0.1, metadata=_h(
        "when --dev-data is not given, hold out at most this share of --data as dev texts (calls removed)"))
    # ------------------------------------------------------------ sequences
    max_length: int = field(default=1024, metadata=_h("tokens per training sequence"))
    overflow: str = field(default="split", metadata=_h(
        "texts longer than --max-length: 'split' into consecutive pieces or 'truncate' to the first"))
    # ------------------------------------------------------------ optimisation
    effective_batch: int = field(default=128, metadata=_h("sequences per optimiser step, over all devices"))
    batch_size: int = field(default=4, metadata=_h("sequences per forward pass and device (lower it on OOM)"))
    learning_rate: float = field(default=1e-5, metadata=_h("peak learning rate"))
    warmup_ratio: float = field(default=0.1, metadata=_h("share of the steps with linear warm-up"))
    max_steps: int = field(default=2000, metadata=_h("optimiser steps"))
    weight_decay: float = field(default=0.0, metadata=_h("AdamW weight decay"))
    seed: int = field(default=0, metadata=_h("seed for data order, dev split and initialisation"))
    # ------------------------------------------------------------ evaluation and saving
    eval_steps: int = field(default=500, metadata=_h("dev perplexity (and a checkpoint) every N steps"))
    eval_batch_size: int = field(default=8, metadata=_h("dev sequences per forward pass"))
    logging_steps: int = field(default=10, metadata=_h("log the training loss every N steps"))
    save_total_limit: int = field(default=2, metadata=_h("checkpoints kept on disk (the best is always kept)"))
    resume: bool = field(default=True, metadata=_h("continue from the last checkpoint in --out if there is one"))
    save_minutes: float = field(default=0.0, metadata=_h(
        "also save a checkpoint every N minutes of training (0: only at the evaluation steps), so a run "
        "stopped between them loses at most that much; an experiment's bank keeps the newest"))
    keep_checkpoints: bool = field(default=False, metadata=_h(
        "keep --out/checkpoints after a finished run (they exist to resume an interrupted one)"))
    # ------------------------------------------------------------ hardware
    device: Optional[str] = field(default=None, metadata=_h("'cpu' or 'cuda' (default: cuda if available)"))
    dtype: str = field(default="auto", metadata=_h(
        "compute dtype: bf16 (autocast, fp32 master weights), fp32, or auto = bf16 on a GPU or a CPU where "
        "bf16 is measured faster, else fp32"))
    bf16: Optional[bool] = field(default=None, metadata=_h("bfloat16 mixed precision; overrides --dtype (older flag)"))
    gradient_checkpointing: bool = field(default=False, metadata=_h(
        "recompute activations to save memory (slow on CPU; useful for long sequences on GPU)"))
    deepspeed: Optional[str] = field(default=None, metadata=_h(
        "DeepSpeed JSON config (e.g. configs/deepspeed_zero3.json); run under 'accelerate launch'"))
    # ------------------------------------------------------------ LoRA
    lora: bool = field(default=False, metadata=_h("train LoRA adapters (PEFT) instead of all weights"))
    lora_r: int = field(default=16, metadata=_h("LoRA rank"))
    lora_alpha: int = field(default=32, metadata=_h("LoRA scaling alpha"))
    lora_dropout: float = field(default=0.05, metadata=_h("LoRA dropout"))
    lora_targets: list[str] = field(default_factory=list, metadata=_h(
        "module names to adapt, comma-separated (default: every linear layer but the output head)"))

    def __post_init__(self) -> None:
        problems = []
        if self.overflow not in ("split", "truncate"):
            problems.append(f"--overflow must be 'split' or 'truncate', not {self.overflow!r}")
        if self.keep not in ("best", "last"):
            problems.append(f"--keep must be 'best' or 'last', not {self.keep!r}")
        for name in ("max_length", "effective_batch", "batch_size", "max_steps", "eval_steps",
                     "eval_batch_size", "logging_steps", "dev_docs", "lora_r"):
            if getattr(self, name) < 1:
                problems.append(f"--{name.replace('_', '-')} must be at least 1")
        if self.save_minutes < 0:
            problems.append("--save-minutes must be 0 (off) or more")
        if not 0.0 <= self.warmup_ratio < 1.0:
            problems.append("--warmup-ratio must be in [0, 1)")
        if not 0.0 <= self.dev_fraction < 1.0:
            problems.append("--dev-fraction must be in [0, 1)")
        if str(self.dtype).lower() not in ("auto", "fp32", "bf16", "float32", "bfloat16"):
            problems.append(f"--dtype must be auto, fp32 or bf16, not {self.dtype!r}")
        if problems:
            raise ConfigError("; ".join(problems))

    def require_paths(self) -> None:
        """``data`` and ``out`` have no sensible default; say so before anything heavy loads."""
        missing = [f"--{n}" for n in ("data", "out") if not getattr(self, n)]
        if missing:
            raise ConfigError(f"{' and '.join(missing)} must be given (e.g. --data cstar.jsonl --out runs/toolformer)")

    def resolved_bf16(self, on_gpu: bool, bf16_cpu: Optional[bool] = None) -> bool:
        """Whether to train under bf16 autocast; ``bf16_cpu`` overrides the CPU probe (tests).

        >>> TrainConfig(dtype="auto").resolved_bf16(False, bf16_cpu=True), TrainConfig(dtype="fp32").resolved_bf16(True)
        (True, False)
        """

        if self.bf16 is not None:
            return bool(self.bf16)
        return resolve_dtype(self.dtype, "cuda" if on_gpu else "cpu", bf16_cpu) == "bfloat16"
