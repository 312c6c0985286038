"""Forward throughput of each pulled embedded model next to this machine's fp32 matmul rate.

Prints tokens/s for a no-grad forward pass over a batch, the useful FLOP rate that implies
(2 FLOPs per weight of every linear layer, the output head included, plus causal attention), and
that rate as a fraction of a plain 2048×2048 fp32 matmul through torch on the same threads — the
roofline a dense transformer forward can approach on a CPU. Both are measured in the same run.

    python benchmarks/bench_models.py [--batch 8] [--seq 256] [--models smollm2-135m,qwen2.5-coder-0.5b]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch


def matmul_gflops(n: int = 2048, repeats: int = 7) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t)
    return 2 * n**3 / statistics.median(times) / 1e9


def forward_flops_per_token(model, seq: int) -> float:
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    cfg = model.config
    layers = cfg.num_hidden_layers
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    attn = 2 * 2 * layers * cfg.num_attention_heads * head_dim * (seq + 1) / 2  # QK^T and AV, causal mean
    return 2 * linear + attn


def bench(name: str, batch: int, seq: int, repeats: int) -> dict:
    from toolformer_kit.lm import load_lm

    lm = load_lm(name, device="cpu")
    ids = torch.randint(100, 1000, (batch, seq))
    with torch.no_grad():
        lm.model(input_ids=ids[:, :32])  # warm-up
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            lm.model(input_ids=ids)
            times.append(time.perf_counter() - t)
    tok_s = batch * seq / statistics.median(times)
    return {"model": name, "tok_s": tok_s, "gflops": tok_s * forward_flops_per_token(lm.model, seq) / 1e9}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--models", default="smollm2-135m,qwen2.5-coder-0.5b")
    args = parser.parse_args(argv)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    roof_before = matmul_gflops()
    rows = [bench(m, args.batch, args.seq, args.repeats) for m in args.models.split(",")]
    roof = max(roof_before, matmul_gflops())  # measured before and after; the higher is the ceiling
    print(f"fp32 matmul 2048²: {roof:.1f} GFLOP/s (before models: {roof_before:.1f})")
    print(f"{'model':<22}{'tokens/s':>10}{'GFLOP/s':>10}{'of matmul':>11}   ({args.batch}×{args.seq} tokens, no grad)")
    for r in rows:
        print(f"{r['model']:<22}{r['tok_s']:>10.0f}{r['gflops']:>10.1f}{r['gflops'] / roof:>10.0%}")


if __name__ == "__main__":
    main()
