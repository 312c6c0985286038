"""Fine-tune on C* with the stock Hugging Face Trainer; a thin layer of setup and bookkeeping.

Nothing here changes how the Trainer learns: the objective is the model's own next-token loss on
every token (calls included). What this module adds is what a Toolformer run needs around it:
the paper's settings, token-level dev perplexity with the best checkpoint kept, a progress bar
that shows the loss, resuming, a clear message on out-of-memory, and a finished folder that
loads like any other model, with its card and plot.

Layout of ``--out``::

    config.json, model.safetensors, tokenizer files   the trained (best) model, LoRA merged in
    README.md, training_curve.png                     model card and plot
    adapter/                                          the unmerged LoRA adapter (LoRA runs only)
    checkpoints/checkpoint-N/                         Trainer checkpoints, removed once finished
    train_summary.json                                written last: its presence means "done"
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import time
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from .shadow import without_namespace

with without_namespace("datasets"):  # the repository's datasets/ folder is not the HF library (.shadow)
    from transformers import (AutoModelForCausalLM, AutoTokenizer, Trainer, TrainerCallback, TrainingArguments,
                              set_seed)
    from transformers.trainer_callback import ProgressCallback

from ..config import ConfigError, to_dict
from ..files import write_atomic
from ..lm.embedded import resolve_model
from . import card, data, lora, metrics
from .config import TrainConfig

log = logging.getLogger(__name__)

SUMMARY = "train_summary.json"
CHECKPOINTS = "checkpoints"


class ResourceError(ConfigError):
    """The run does not fit the machine; the message names the settings to lower."""


# ---------------------------------------------------------------- pure helpers
def accumulation_steps(effective_batch: int, batch_size: int, world_size: int = 1) -> int:
    """Forward passes per optimiser step so that ``batch_size x world x steps`` ≈ the effective batch.

    >>> accumulation_steps(128, 4), accumulation_steps(128, 4, world_size=8), accumulation_steps(8, 16)
    (32, 4, 1)
    """
    return max(1, math.ceil(effective_batch / (batch_size * world_size)))


def is_oom(exc: BaseException) -> bool:
    """CUDA's OutOfMemoryError, or the CPU allocator giving up (a plain RuntimeError).

    >>> is_oom(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 9 GB"))
    True
    """
    if isinstance(exc, getattr(torch, "OutOfMemoryError", ())):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def oom_message(cfg: TrainConfig) -> str:
    """What to lower, in order of least harm to the result."""
    tips = [f"--batch-size (now {cfg.batch_size}; gradient accumulation keeps the effective batch of "
            f"{cfg.effective_batch})", f"--eval-batch-size (now {cfg.eval_batch_size})",
            f"--max-length (now {cfg.max_length})"]
    if not cfg.gradient_checkpointing:
        tips.append("turn on --gradient-checkpointing")
    if not cfg.lora:
        tips.append("use --lora")
    if not cfg.deepspeed:
        tips.append("on several GPUs, shard with --deepspeed configs/deepspeed_zero3.json")
    return "out of memory while training; lower " + ", ".join(tips)


def hyperparameters(cfg: TrainConfig, grad_accum: int, world_size: int, bf16: bool) -> dict[str, Any]:
    """The settings that shape the result, for the model card."""
    keep = ("max_length", "overflow", "batch_size", "learning_rate", "warmup_ratio", "max_steps",
            "weight_decay", "eval_steps", "seed", "gradient_checkpointing", "lora")
    values = {k: v for k, v in to_dict(cfg).items() if k in keep}
    values.update(gradient_accumulation_steps=grad_accum, devices=world_size,
                  effective_batch=cfg.batch_size * grad_accum * world_size,
                  precision="bf16 mixed" if bf16 else "fp32", schedule="linear warm-up, linear decay")
    if cfg.lora:
        values.update(lora_r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout)
    return values


# ---------------------------------------------------------------- callbacks
class LossBar(TrainerCallback):
    """One tqdm bar over optimiser steps with the latest loss and dev perplexity as its postfix."""

    def __init__(self):
        self.bar = None
        self.postfix: dict[str, str] = {}

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            self.bar = tqdm(total=state.max_steps, initial=state.global_step, desc="training", unit="step")

    def on_step_end(self, args, state, control, **kwargs):
        if self.bar is not None:
            self.bar.update(state.global_step - self.bar.n)

    def on_log(self, args, state, control, logs=None, **kwargs):
        logs = logs or {}
        if "loss" in logs:
            self.postfix["loss"] = f"{logs['loss']:.3f}"
        if "eval_perplexity" in logs:
            self.postfix["dev_ppl"] = f"{logs['eval_perplexity']:.2f}"
            log.info("step %d: dev perplexity %.3f", state.global_step, logs["eval_perplexity"])
        if self.bar is not None and self.postfix:
            self.bar.set_postfix(self.postfix)

    def on_train_end(self, args, state, control, **kwargs):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class EvaluateAtEnd(TrainerCallback):
    """Evaluate and save at the last step too, so the steps after the last multiple of
    ``eval_steps`` can still win "best checkpoint"."""

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step >= state.max_steps and args.eval_strategy != "no":
            control.should_evaluate = True
            control.should_save = True
        return control


class SaveOnTime(TrainerCallback):
    """A checkpoint every ``minutes`` of training besides those at the evaluation steps. Why: a
    run of hours is stopped where a sitting ends, not where it last evaluated; with this it loses
    at most ``minutes`` (an experiment's bank carries the newest checkpoint to the next machine).
    A save changes nothing the run learns, and the run's last step is saved anyway."""

    def __init__(self, minutes: float):
        self.every, self.last = 60.0 * minutes, time.monotonic()

    def on_train_begin(self, args, state, control, **kwargs):
        self.last = time.monotonic()

    def on_step_end(self, args, state, control, **kwargs):
        due = state.global_step < state.max_steps and time.monotonic() - self.last >= self.every
        if _on_every_rank(due, args.device):
            control.should_save = True
        return control

    def on_save(self, args, state, control, **kwargs):
        self.last = time.monotonic()


def _on_every_rank(flag: bool, device) -> bool:
    """Rank 0's ``flag`` on every process: a save is collective under DeepSpeed, so ranks whose
    clocks disagree by a step must not decide apart (they would wait on each other for ever)."""
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return flag
    t = torch.tensor([int(flag)], device=device)
    torch.distributed.broadcast(t, src=0)
    return bool(t.item())


# ---------------------------------------------------------------- setup
def _device(cfg: TrainConfig) -> str:
    return cfg.device or ("cuda" if torch.cuda.is_available() else "cpu")


def _checkpointing(enabled: bool) -> dict:
    """Only name the option when used: transformers renamed it (gradient_ → activation_) in v5."""
    if not enabled:
        return {}
    name = "activation_checkpointing" if "activation_checkpointing" in TrainingArguments.__dataclass_fields__ \
        else "gradient_checkpointing"
    return {name: True, f"{name}_kwargs": {"use_reentrant": False}}


def warmup_steps(ratio: float, max_steps: int) -> int:
    """Warm-up steps, rounded down: a ratio rounded up made a 1-step run train at learning rate 0
    (its only step was all warm-up), i.e. not at all.

    >>> warmup_steps(0.1, 1), warmup_steps(0.1, 15), warmup_steps(0.1, 2000)
    (0, 1, 200)
    """
    return int(ratio * max_steps)


def build_arguments(cfg: TrainConfig, out: Path, grad_accum: int, bf16: bool, has_dev: bool, resuming: bool):
    """The TrainingArguments for a run (made before the model, as DeepSpeed ZeRO-3 requires)."""
    on_cpu = _device(cfg) == "cpu"
    eval_steps = min(cfg.eval_steps, cfg.max_steps)
    return TrainingArguments(
        output_dir=str(out / CHECKPOINTS), max_steps=cfg.max_steps, per_device_train_batch_size=cfg.batch_size,
        per_device_eval_batch_size=cfg.eval_batch_size, gradient_accumulation_steps=grad_accum,
        learning_rate=cfg.learning_rate, lr_scheduler_type="linear", warmup_steps=warmup_steps(cfg.warmup_ratio, cfg.max_steps),
        weight_decay=cfg.weight_decay, bf16=bf16, use_cpu=on_cpu, dataloader_pin_memory=not on_cpu,
        **_checkpointing(cfg.gradient_checkpointing),
        eval_strategy="steps" if has_dev else "no", eval_steps=eval_steps, eval_on_start=has_dev and not resuming,
        save_strategy="steps", save_steps=eval_steps, save_total_limit=cfg.save_total_limit,
        load_best_model_at_end=has_dev and cfg.keep == "best", metric_for_best_model="perplexity",
        greater_is_better=False,
        logging_steps=min(cfg.logging_steps, cfg.max_steps), logging_first_step=True, report_to="none",
        label_names=["labels"], remove_unused_columns=False, seed=cfg.seed, data_seed=cfg.seed,
        deepspeed=cfg.deepspeed, disable_tqdm=False,
    )


def load_model(cfg: TrainConfig, path: str):
    """The model in fp32 (master weights; bf16 comes from autocast), LoRA attached if asked. Seeded
    first: LoRA's A matrices are drawn when they are attached, before the Trainer seeds anything,
    so two LoRA runs with one seed used to start from different adapters."""
    set_seed(cfg.seed)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    model.config.use_cache = False  # no KV cache while training; it only costs memory
    if cfg.lora:
        model = lora.wrap(model, cfg.lora_r, cfg.lora_alpha, cfg.lora_dropout, cfg.lora_targets)
        if cfg.gradient_checkpointing:
            model.enable_input_require_grads()
    return model


def prepare_data(cfg: TrainConfig, tokenizer) -> dict[str, Any]:
    """Read C*, hold out dev texts, apply the +CC baseline if asked, tokenise; plus counts."""
    texts = data.read_texts(cfg.data)
    tools = data.tool_counts(texts)
    if not tools and not cfg.plain_baseline:
        log.warning("%s contains no tool calls: this run is the '+CC' baseline (plain text only), "
                    "not a Toolformer run", cfg.data)
    if cfg.dev_data:
        train_texts, dev_texts = texts, data.sample_texts(data.read_texts(cfg.dev_data), cfg.dev_docs, cfg.seed)
        dev_source = f"held-out file {Path(cfg.dev_data).name}"
    else:
        train_texts, dev_texts = data.split_dev(texts, cfg.dev_docs, cfg.dev_fraction, cfg.seed)
        dev_source = data.carved_dev(cfg.dev_with_calls and not cfg.plain_baseline)
        if dev_texts:
            log.warning("dev texts: %d texts %s; give --dev-data FILE for those", len(dev_texts),
                        dev_source.replace("--data", str(cfg.data)))
    if not dev_texts:
        log.warning("no dev texts (give --dev-data or a larger --dev-fraction): no perplexity, last step kept")
    train_tools = data.tool_counts(train_texts)
    with_calls = sum(bool(data.find_calls(t)) for t in train_texts)
    if cfg.plain_baseline:
        log.info("'+CC' baseline: removing %d calls from the training texts", sum(train_tools.values()))
    train_texts = data.training_texts(train_texts, cfg.plain_baseline)
    # plain by default (the paper's dev set); with dev_with_calls a held-out C* keeps what it teaches
    dev_texts = data.training_texts(dev_texts, plain_baseline=cfg.plain_baseline or not cfg.dev_with_calls)
    train = data.TokenDataset(data.tokenize(tokenizer, train_texts, cfg.max_length, cfg.overflow))
    dev = data.TokenDataset(data.tokenize(tokenizer, dev_texts, cfg.max_length, cfg.overflow))
    counts = {"C* documents": len(texts), "training documents": len(train_texts),
              "training documents with calls": 0 if cfg.plain_baseline else with_calls,
              "training sequences": len(train), "training tokens": train.n_tokens,
              "dev documents": len(dev_texts), "dev tokens": dev.n_tokens, "dev source": dev_source}
    return {"train": train, "dev": dev, "counts": counts,
            "tools": {} if cfg.plain_baseline else dict(train_tools), "removed_calls": dict(train_tools)}


STAGING = ".saving"  # the final model is written here, then moved into --out file by file
MODEL_FILES = ("model.safetensors", "adapter_model.safetensors", "pytorch_model.bin", "config.json")


def _check_out(out: Path, base: str | None = None) -> None:
    """Refuse an --out whose files this run would overwrite without having written them: the
    base model's own folder (an embedded model's cache folder too), or a folder holding a model
    that no training run left there (no checkpoints, no summary). Checked before anything loads."""
    if (out / SUMMARY).is_file():
        raise ConfigError(f"{out} already holds a finished run ({SUMMARY}); choose another --out or delete it")
    where = out.resolve()
    if base is not None and Path(base).exists():
        home = Path(base).resolve()
        if where == home or home in where.parents:
            raise ConfigError(f"--out {out} is the folder of the base model {base}: training would overwrite the "
                              "model it starts from; pass a new folder for --out")
    found = [n for n in MODEL_FILES if (out / n).exists()]
    if found and not (out / CHECKPOINTS).is_dir() and not (out / RUN_FILE).is_file():
        raise ConfigError(f"--out {out} holds {', '.join(found)} that no training run wrote there; refusing to "
                          "replace them: pass a new folder for --out")


RUN_FILE = "train_run.json"
# Settings a resumed run may change: where it runs and what it keeps, not what it learns.
NOT_LEARNED = {"out", "resume", "keep_checkpoints", "save_minutes", "device", "save_total_limit", "logging_steps",
               "eval_batch_size", "batch_size", "deepspeed", "gradient_checkpointing"}


def _sha(path: str | None) -> str | None:
    import hashlib

    if not path or not Path(path).is_file():
        return None
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def run_identity(cfg: TrainConfig) -> dict[str, Any]:
    """What a run learns from: its settings and the content of its data files (not their paths)."""
    settings = {k: v for k, v in to_dict(cfg).items() if k not in NOT_LEARNED | {"data", "dev_data"}}
    return {"settings": settings, "data": _sha(cfg.data), "dev_data": _sha(cfg.dev_data)}


def check_resume(cfg: TrainConfig, out: Path) -> None:
    """A checkpoint is continued only by the run that made it: other data, learning rate or step
    count would train on from a state those settings never made (and the card would state them).
    Refused with the settings that differ; the identity is written the first time."""
    keys = resume_differs(cfg, out)
    if keys:
        raise ConfigError(f"{out} holds checkpoints of a run with other {', '.join(keys)}; resuming would continue "
                          "it under these settings: pass another --out, or --no-resume to start over there")
    write_atomic(out / RUN_FILE, json.dumps(run_identity(cfg), indent=1))


def resume_differs(cfg: TrainConfig, out: Path) -> list[str]:
    """What differs between ``cfg`` and the run whose checkpoints ``out`` holds (none: [], and
    nothing to resume: []). Reads only, so a caller can refuse before it writes anything."""
    path = out / RUN_FILE
    if not (path.is_file() and (out / CHECKPOINTS).is_dir()):
        return []
    mine = run_identity(cfg)
    old = json.loads(path.read_text(encoding="utf-8"))
    return sorted({k for k in set(old["settings"]) | set(mine["settings"])
                   if old["settings"].get(k) != mine["settings"].get(k)}
                  | {k for k in ("data", "dev_data") if old.get(k) != mine[k]})


def _last_checkpoint(out: Path, resume: bool, max_steps: int) -> str | None:
    """The newest checkpoint that is whole: one cut off by a kill (its trainer_state.json or
    weights unreadable) is skipped with a warning naming it, so a re-run resumes from the one
    before instead of failing on every try. The run's last step is skipped too (a kill after it,
    before the summary): the Trainer resumed there runs a step 'max_steps + 1' that trains nothing
    but logs an extra evaluation and loss, so the summary and report differed from an
    uninterrupted run's (the kill -9 campaign found it); the steps since the one before are redone."""
    if not resume:
        return None
    for ckpt in checkpoints(out / CHECKPOINTS):
        if checkpoint_step(ckpt) >= max_steps:
            log.info("not resuming from %s: it is the run's last step; redoing the steps since the one before", ckpt)
            continue
        problem = checkpoint_problem(ckpt)
        if problem is None:
            log.info("resuming from %s", ckpt)
            return str(ckpt)
        log.warning("skipping %s: %s (cut off by a kill?); resuming from the checkpoint before it", ckpt, problem)
    return None


def checkpoint_step(ckpt: Path) -> int:
    """The step of a Trainer checkpoint folder, from its name (``checkpoint-N``)."""
    return int(ckpt.name.removeprefix("checkpoint-"))


def checkpoints(folder: Path) -> list[Path]:
    """The Trainer's checkpoint folders in ``folder``, newest first (none: [])."""
    if not folder.is_dir():
        return []
    found = (p for p in folder.glob("checkpoint-*") if p.is_dir() and p.name.removeprefix("checkpoint-").isdigit())
    return sorted(found, key=checkpoint_step, reverse=True)


def checkpoint_problem(ckpt: Path) -> str | None:
    """Why a checkpoint folder cannot be resumed from, or None when it is whole."""
    state = ckpt / "trainer_state.json"
    try:
        json.loads(state.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"{state.name} is unreadable ({exc.__class__.__name__})"
    return weights_problem(ckpt)


def weights_problem(folder: Path) -> str | None:
    """Why the weights in ``folder`` (a checkpoint or a finished run) cannot be loaded: none there,
    or a safetensors file cut short; None when they read."""
    weights = [folder / n for n in ("model.safetensors", "adapter_model.safetensors") if (folder / n).is_file()]
    if not weights and not (folder / "pytorch_model.bin").is_file():
        return "it holds no weights"
    for w in weights:
        try:
            from safetensors import safe_open  # lazy: with transformers

            with safe_open(str(w), framework="pt") as fh:
                names = list(fh.keys())
                if names:
                    fh.get_slice(names[-1])  # the header's last tensor lies within the file
        except Exception as exc:  # noqa: BLE001 - any failure to read means: not whole
            return f"{w.name} is unreadable ({exc.__class__.__name__})"
    return None


# ---------------------------------------------------------------- the run
def _save_final(trainer, tokenizer, out: Path, is_lora: bool) -> None:
    """The best model as a plain folder; a LoRA run also keeps its adapter under ``adapter/``."""
    if trainer.is_deepspeed_enabled:  # ZeRO-3 shards the weights; only the Trainer can gather them
        trainer.save_model(str(out))
        if is_lora:
            log.warning("LoRA under DeepSpeed: %s holds the adapter; merge it with "
                        "'toolformer train --merge-adapter %s --out DIR'", out, out)
        return
    if not trainer.is_world_process_zero():
        return
    model = trainer.model
    if is_lora:
        model.save_pretrained(out / lora.ADAPTER_DIR)
        tokenizer.save_pretrained(out / lora.ADAPTER_DIR)
        model = lora.merge(model)
    model.config.use_cache = True  # generation wants its KV cache back
    staging = out / STAGING
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    for f in sorted(staging.iterdir()):  # whole files only: a kill mid-save leaves them in staging
        os.replace(f, out / f.name)
    staging.rmdir()


def _make_trainer(args, model, tokenizer, prepared: dict, save_minutes: float = 0.0):
    has_dev = len(prepared["dev"]) > 0
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    trainer = Trainer(
        model=model, args=args, train_dataset=prepared["train"], eval_dataset=prepared["dev"] if has_dev else None,
        data_collator=data.Collator(pad_id if pad_id is not None else 0), processing_class=tokenizer,
        compute_metrics=metrics.perplexity_metrics if has_dev else None,
        preprocess_logits_for_metrics=metrics.token_nll if has_dev else None,
    )
    trainer.remove_callback(ProgressCallback)
    trainer.add_callback(LossBar())
    trainer.add_callback(EvaluateAtEnd())
    if save_minutes:
        trainer.add_callback(SaveOnTime(save_minutes))
    return trainer


def run_training(cfg: TrainConfig) -> dict[str, Any]:
    """Train, keep the best checkpoint, write the final folder; returns the run summary."""
    cfg.require_paths()
    out = Path(cfg.out)
    _check_out(out)  # a finished run: refused before the base model is resolved (which may pull it)
    base_path = resolve_model(cfg.model)
    _check_out(out, base_path)
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out / STAGING, ignore_errors=True)  # a save a kill cut off (the full model's size)
    if cfg.resume:
        check_resume(cfg, out)
    else:
        write_atomic(out / RUN_FILE, json.dumps(run_identity(cfg), indent=1))
    started = time.time()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    grad_accum = accumulation_steps(cfg.effective_batch, cfg.batch_size, world)
    bf16 = cfg.resolved_bf16(on_gpu=_device(cfg) != "cpu")
    resume_from = _last_checkpoint(out, cfg.resume, cfg.max_steps)
    tokenizer = AutoTokenizer.from_pretrained(base_path)
    prepared = prepare_data(cfg, tokenizer)
    if len(prepared["train"]) == 0:
        raise data.DataError(f"{cfg.data} gives no training sequences of two or more tokens")
    args = build_arguments(cfg, out, grad_accum, bf16, len(prepared["dev"]) > 0, resume_from is not None)
    trainer = _make_trainer(args, load_model(cfg, base_path), tokenizer, prepared, cfg.save_minutes)
    log.info("training %s on %d sequences (%d tokens) for %d steps of %d x %d x %d sequences%s",
             cfg.model, len(prepared["train"]), prepared["train"].n_tokens, cfg.max_steps, cfg.batch_size,
             grad_accum, world, " ('+CC' baseline)" if cfg.plain_baseline else "")
    try:
        trainer.train(resume_from_checkpoint=resume_from)
    except (RuntimeError, MemoryError) as exc:
        if isinstance(exc, MemoryError) or is_oom(exc):
            raise ResourceError(oom_message(cfg)) from exc
        raise
    _save_final(trainer, tokenizer, out, cfg.lora)
    if not trainer.is_world_process_zero():
        return {}
    summary = {
        "name": out.name, "base_model": cfg.model, "base_model_path": base_path,
        "plain_baseline": cfg.plain_baseline, "tools": prepared["tools"], "counts": prepared["counts"],
        "hyperparameters": hyperparameters(cfg, grad_accum, world, bf16),
        "best_step": _best_step(trainer.state, cfg.keep), "kept": cfg.keep, "wall_time_s": round(time.time() - started, 1),
        "config": to_dict(cfg),
    }
    card.write_card(out, summary, trainer.state.log_history)
    summary["evaluations"] = card.curves(trainer.state.log_history)[1]
    summary["log_history"] = trainer.state.log_history
    if not cfg.keep_checkpoints:
        shutil.rmtree(out / CHECKPOINTS, ignore_errors=True)
    write_atomic(out / SUMMARY, json.dumps(summary, indent=2, default=str))  # the "trained" marker: whole or absent
    return summary


def _best_step(state, keep: str = "best") -> int:
    """The step of the kept model (the last step when nothing was evaluated, or with keep last)."""
    best = getattr(state, "best_model_checkpoint", None) if keep == "best" else None
    return int(best.rsplit("-", 1)[-1]) if best else state.global_step
