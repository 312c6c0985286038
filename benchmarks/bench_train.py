"""Benchmark fine-tuning: tokens per second and the loss curve of LoRA and full fine-tuning, fp32
and bf16, on one fixed sample of the Calculator C* (datasets/cstar-math), in one run.

Each variant trains the same texts in the same order from the same seed for ``--steps`` optimiser
steps through ``toolformer train``'s own code (``run_training``: the Trainer, its collation and
its precision), with no dev set, so the figures are the training loop's: ``train_runtime`` from
the Trainer's log, real (unpadded) tokens over it, and the loss at each step. Also printed: the
share of padding in the batches, which packing would remove (not implemented: see the report).

    python benchmarks/bench_train.py --model qwen2.5-coder-0.5b --steps 6 --texts 48
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolformer_kit.lm.base import matmul_rates, set_threads  # noqa: E402
from toolformer_kit.train import run_training  # noqa: E402
from toolformer_kit.train.config import TrainConfig  # noqa: E402

VARIANTS = {"lora-fp32": (True, "fp32"), "lora-bf16": (True, "bf16"), "full-fp32": (False, "fp32"),
            "full-bf16": (False, "bf16")}


def sample(path: Path, n: int) -> list[str]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r["text"] for r in rows[:n]]


def padding_share(texts: list[str], model: str, max_length: int, batch: int) -> float:
    """Pad tokens over all token slots when batches of ``batch`` texts are padded to their longest."""
    from transformers import AutoTokenizer

    from toolformer_kit.lm.embedded import resolve_model

    tok = AutoTokenizer.from_pretrained(resolve_model(model))
    lengths = [min(len(tok(t)["input_ids"]), max_length) for t in texts]
    slots = sum(max(lengths[i:i + batch]) * len(lengths[i:i + batch]) for i in range(0, len(lengths), batch))
    return 1 - sum(lengths) / slots


def run(variant: str, data: Path, out: Path, args) -> dict:
    lora, dtype = VARIANTS[variant]
    cfg = TrainConfig(model=args.model, data=str(data), out=str(out), lora=lora, dtype=dtype, max_steps=args.steps,
                      effective_batch=args.batch, batch_size=args.micro, max_length=args.max_length,
                      learning_rate=3e-4 if lora else 2e-5, dev_fraction=0.0, logging_steps=1, seed=0,
                      eval_steps=10 ** 6, device="cpu")
    start = time.perf_counter()
    summary = run_training(cfg)
    wall = time.perf_counter() - start
    logs = summary["log_history"]
    runtime = next(e["train_runtime"] for e in logs if "train_runtime" in e)
    losses = [round(e["loss"], 4) for e in logs if "loss" in e]
    tokens = summary["counts"]["training tokens"]
    seen = tokens * args.steps * args.batch / max(1, summary["counts"]["training sequences"])
    return {"variant": variant, "train_runtime_s": round(runtime, 1), "wall_s": round(wall, 1),
            "tokens_per_s": round(seen / runtime, 1), "losses": losses, "precision": dtype, "lora": lora}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen2.5-coder-0.5b")
    ap.add_argument("--data", default=str(ROOT / "datasets/cstar-math/data/cstar.jsonl"))
    ap.add_argument("--texts", type=int, default=48)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--batch", type=int, default=8, help="sequences per optimiser step")
    ap.add_argument("--micro", type=int, default=4, help="sequences per forward pass")
    ap.add_argument("--max-length", type=int, default=160)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    set_threads(args.threads)
    texts = sample(Path(args.data), args.texts)
    rates = matmul_rates(repeats=3)
    pad = padding_share(texts, args.model, args.max_length, args.micro)
    print(f"{len(texts)} C* texts, {args.steps} steps of {args.batch} sequences (micro-batch {args.micro}, "
          f"≤ {args.max_length} tokens); padding {100 * pad:.1f} % of token slots; roofline fp32 "
          f"{rates['fp32']:.0f} / bf16 {rates['bf16']:.0f} GFLOP/s", flush=True)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "cstar.jsonl"
        data.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
        for variant in args.variants.split(","):
            r = run(variant, data, Path(tmp) / variant, args)
            out.append(r)
            print(f"{variant:10s}: {r['tokens_per_s']:7.1f} tokens/s (train_runtime {r['train_runtime_s']} s, wall "
                  f"{r['wall_s']} s); loss {' '.join(f'{x:.3f}' for x in r['losses'])}", flush=True)
    base = next((r for r in out if r["variant"] == "lora-fp32"), out[0])
    for r in out:
        print(f"{r['variant']:10s}: {r['tokens_per_s'] / base['tokens_per_s']:.2f}x {base['variant']}")
    result = {"model": args.model, "steps": args.steps, "batch": args.batch, "micro": args.micro,
              "max_length": args.max_length, "texts": len(texts), "padding_share": round(pad, 4),
              "rooflines_gflops": rates, "variants": out}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
