"""Fine-tune a model on an augmented corpus C* (the paper's §2, "Model Finetuning").

The model continues training with its ordinary next-token loss on the C* texts, calls and
results included. ``--cc`` (or ``--plain-baseline``) trains the paper's "+CC" baseline: the same
texts with every call removed. Defaults are the paper's (max length 1,024, effective batch 128,
lr 1e-5 with 10% warm-up, 2,000 steps, dev perplexity every 500 steps, best checkpoint kept).

On CPU, use --lora and short runs; on GPUs, bf16 is on by default and
configs/accelerate_deepspeed_zero3.yaml runs the paper's multi-GPU setup (see docs/training.md).
An interrupted run resumes from its last checkpoint when started again with the same --out.
"""

from __future__ import annotations

import argparse

from .cli import standalone

HELP = "fine-tune a model on C* (or the '+CC' baseline)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..config import add_dataclass_args
    from ..train.config import TrainConfig

    add_dataclass_args(parser, TrainConfig)
    parser.add_argument("--cc", dest="plain_baseline", action="store_const", const=True, default=None,
                        help="same as --plain-baseline: train on the texts with calls removed")
    parser.add_argument("--merge-adapter", default=None, metavar="ADAPTER_DIR",
                        help="do not train: merge a saved LoRA adapter into a plain model folder at --out")
    parser.add_argument("--publish-adapter", default=None, metavar="ADAPTER_DIR",
                        help="do not train: write a LoRA run's adapter to --out in bf16, its base named by --model "
                             "(an embedded name), so that 'toolformer generate --model OUT' loads it on any machine")


def run(args: argparse.Namespace) -> int:
    from ..config import ConfigError, build_config
    from ..train.config import TrainConfig

    cfg = build_config(TrainConfig, args)
    if args.merge_adapter:
        from ..train.lora import merge_adapter_folder

        if not cfg.out:
            raise ConfigError("--merge-adapter needs --out, the folder to write the merged model to")
        path = merge_adapter_folder(args.merge_adapter, cfg.out,
                                    base_model=cfg.model if args.model else None)
        print(f"merged model written to {path}")
        return 0
    if args.publish_adapter:
        from ..train.lora import adapter_mb, publish_adapter

        if not (cfg.out and args.model):
            raise ConfigError("--publish-adapter needs --out (e.g. models/NAME) and --model, the embedded base "
                              "it was trained from (e.g. qwen2.5-coder-0.5b)")
        path = publish_adapter(args.publish_adapter, cfg.out, cfg.model)
        print(f"adapter written to {path} ({adapter_mb(path):.1f} MB)")
        return 0
    from ..train.trainer import run_training

    summary = run_training(cfg)
    if not summary:  # a non-zero rank of a multi-process run
        return 0
    evals = summary.get("evaluations") or []
    print(f"model written to {cfg.out} (step {summary['best_step']} kept, {summary['wall_time_s']:.0f} s)")
    for step, ppl in evals:
        print(f"  dev perplexity at step {step}: {ppl:.3f}")
    return 0


main = standalone("toolformer train", __doc__, add_arguments, run)
