"""TrainConfig, its CLI flags and YAML, and the trainer's pure helpers (no model)."""

from __future__ import annotations

import argparse

import pytest

from toolformer_kit.commands import train as train_cmd
from toolformer_kit.config import ConfigError, build_config
from toolformer_kit.train.config import TrainConfig
from toolformer_kit.train.trainer import accumulation_steps, build_arguments, hyperparameters, is_oom, oom_message


def _parse(argv):
    parser = argparse.ArgumentParser()
    train_cmd.add_arguments(parser)
    return build_config(TrainConfig, parser.parse_args(argv))


def test_defaults_are_the_papers():
    cfg = TrainConfig()
    assert (cfg.max_length, cfg.effective_batch, cfg.learning_rate, cfg.warmup_ratio, cfg.max_steps,
            cfg.eval_steps, cfg.dev_docs) == (1024, 128, 1e-5, 0.1, 2000, 500, 1000)
    assert not cfg.plain_baseline and not cfg.lora and not cfg.gradient_checkpointing


def test_cc_and_plain_baseline_flags_are_the_same_switch():
    assert _parse(["--cc"]).plain_baseline is True
    assert _parse(["--plain-baseline"]).plain_baseline is True
    assert _parse([]).plain_baseline is False


def test_yaml_file_then_flags(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("model: smollm2-135m\nlora: true\nlora-r: 4\nlearning_rate: 0.001\nmax_steps: 50\n")
    cfg = _parse(["--config", str(path), "--max-steps", "7", "--lora-targets", "q_proj,v_proj"])
    assert (cfg.lora, cfg.lora_r, cfg.learning_rate, cfg.max_steps) == (True, 4, 1e-3, 7)
    assert cfg.lora_targets == ["q_proj", "v_proj"]


@pytest.mark.parametrize("kwargs, flag", [
    ({"overflow": "drop"}, "--overflow"), ({"batch_size": 0}, "--batch-size"),
    ({"warmup_ratio": 1.5}, "--warmup-ratio"), ({"dev_fraction": -0.1}, "--dev-fraction"),
])
def test_bad_settings_name_the_flag(kwargs, flag):
    with pytest.raises(ConfigError, match=flag):
        TrainConfig(**kwargs)


def test_missing_data_and_out_are_named():
    with pytest.raises(ConfigError, match="--data and --out"):
        TrainConfig().require_paths()


def test_bf16_only_by_default_on_gpu():
    # auto: bf16 on a GPU, fp32 on a CPU without hardware bf16 (emulated bf16 is slower there)
    assert TrainConfig().resolved_bf16(on_gpu=False, bf16_cpu=False) is False
    assert TrainConfig().resolved_bf16(on_gpu=False, bf16_cpu=True) is True
    assert TrainConfig().resolved_bf16(on_gpu=True) is True
    assert TrainConfig(bf16=False).resolved_bf16(on_gpu=True) is False


@pytest.mark.parametrize("effective, micro, world", [(128, 4, 1), (128, 3, 1), (128, 4, 8), (1, 4, 1), (100, 7, 3)])
def test_accumulation_reaches_at_least_the_effective_batch(effective, micro, world):
    steps = accumulation_steps(effective, micro, world)
    assert steps * micro * world >= effective
    assert steps == 1 or (steps - 1) * micro * world < effective


def test_oom_is_recognised_and_the_message_names_what_to_lower():
    assert is_oom(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert not is_oom(RuntimeError("shape mismatch"))
    assert not is_oom(ValueError("out of memory"))
    msg = oom_message(TrainConfig(batch_size=16, max_length=1024))
    for hint in ("--batch-size (now 16", "--max-length (now 1024)", "--gradient-checkpointing", "--lora"):
        assert hint in msg
    assert "--lora" not in oom_message(TrainConfig(lora=True))


def test_training_arguments_follow_the_config(tmp_path):
    cfg = TrainConfig(max_steps=30, eval_steps=500, batch_size=2, effective_batch=8, device="cpu")
    args = build_arguments(cfg, tmp_path, grad_accum=4, bf16=False, has_dev=True, resuming=False)
    assert (args.max_steps, args.gradient_accumulation_steps, args.per_device_train_batch_size) == (30, 4, 2)
    assert args.eval_steps == args.save_steps == 30  # never more than the run itself
    assert args.load_best_model_at_end and args.metric_for_best_model == "perplexity" and not args.greater_is_better
    assert args.eval_on_start and not args.bf16 and args.use_cpu and args.learning_rate == 1e-5
    assert args.lr_scheduler_type == "linear" and args.warmup_steps == 3  # 10 % of 30, whole steps
    resumed = build_arguments(cfg, tmp_path, 4, False, has_dev=False, resuming=True)
    assert not resumed.eval_on_start and not resumed.load_best_model_at_end


def test_hyperparameters_for_the_card_report_the_real_effective_batch():
    hp = hyperparameters(TrainConfig(batch_size=3, effective_batch=128), grad_accum=43, world_size=1, bf16=False)
    assert hp["effective_batch"] == 129 and hp["precision"] == "fp32" and "lora_r" not in hp


def test_keep_last_turns_off_the_best_checkpoint_and_bad_values_are_refused(tmp_path):
    """issue 27, item 1: a call-free dev set penalises learning the call syntax; keep the last step."""
    last = build_arguments(TrainConfig(max_steps=30, keep="last", device="cpu"), tmp_path, 1, False, True, False)
    assert not last.load_best_model_at_end and last.eval_strategy == "steps"  # perplexity still reported
    with pytest.raises(ConfigError, match="--keep must be 'best' or 'last'"):
        TrainConfig(keep="newest")
