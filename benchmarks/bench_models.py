"""Forward throughput of each pulled embedded model in fp32 and bf16 next to both matmul rooflines.

Prints tokens/s for a no-grad forward pass over a batch, the useful FLOP rate that implies
(2 FLOPs per weight of every linear layer, the output head included, plus causal attention), and
that rate as a fraction of a plain 2048×2048 matmul through torch on the same threads, in fp32 and
in bf16 — the rooflines a dense transformer forward can approach on a CPU. Whether the CPU has
hardware bf16 decides which one ``--dtype auto`` runs at. The two dtypes alternate repeat by
repeat, so load from other jobs on a shared machine hits both alike: quote their ratio.

    python benchmarks/bench_models.py [--batch 8] [--seq 256] [--models smollm2-135m,qwen2.5-coder-0.5b]
        [--greedy 100 --task svamp]   # also: greedy decoding agreement between the dtypes
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import torch

from toolformer_kit.lm.base import matmul_rates as rooflines  # the one roofline measure


def forward_flops_per_token(model, seq: int) -> float:
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    cfg = model.config
    layers = cfg.num_hidden_layers
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    attn = 2 * 2 * layers * cfg.num_attention_heads * head_dim * (seq + 1) / 2  # QK^T and AV, causal mean
    return 2 * linear + attn


def bench(name: str, dtypes: list[str], batch: int, seq: int, repeats: int) -> list[dict]:
    from toolformer_kit.lm.base import load_lm

    lms = {d: load_lm(name, device="cpu", dtype=d) for d in dtypes}
    ids = torch.randint(100, 1000, (batch, seq))
    times: dict[str, list[float]] = {d: [] for d in dtypes}
    with torch.no_grad():
        for lm in lms.values():
            lm.model(input_ids=ids[:, :32])  # warm-up
        for _ in range(repeats):
            for d, lm in lms.items():
                t = time.perf_counter()
                lm.model(input_ids=ids)
                times[d].append(time.perf_counter() - t)
    rows = []
    for d, lm in lms.items():
        tok_s = batch * seq / statistics.median(times[d])
        rows.append({"model": name, "dtype": d, "tok_s": tok_s,
                     "gflops": tok_s * forward_flops_per_token(lm.model, seq) / 1e9})
    return rows


def greedy_agreement(name: str, dtypes: list[str], task: str, n: int, new_tokens: int, data_dir: str) -> dict:
    """Tool-aware greedy decoding (Calculator, k 10 as in eval) of a benchmark's first ``n`` prompts
    in each dtype, alternating batch by batch: identical outputs vs the first dtype, and tokens/s."""
    from toolformer_kit.decode.config import DecodeConfig
    from toolformer_kit.decode.hf import ToolAwareDecoder
    from toolformer_kit.eval.tasks import get_task
    from toolformer_kit.lm.base import load_lm
    from toolformer_kit.tools import get_tool
    from toolformer_kit.tools.engine import ToolEngine

    prompts = [e.prompt for e in get_task(task).load(data_dir)[:n]]
    engine = ToolEngine({"Calculator": get_tool("Calculator")})
    decoders = {d: ToolAwareDecoder(load_lm(name, device="cpu", dtype=d), tools=engine.tools, engine=engine)
                for d in dtypes}
    cfg = DecodeConfig(max_new_tokens=new_tokens, k=10)
    texts: dict[str, list[str]] = {d: [] for d in dtypes}
    secs = {d: 0.0 for d in dtypes}
    tokens = {d: 0 for d in dtypes}
    for s in range(0, len(prompts), 8):
        for d, dec in decoders.items():
            t = time.perf_counter()
            results = dec.generate(prompts[s: s + 8], cfg)
            secs[d] += time.perf_counter() - t
            texts[d] += [r.text for r in results]
            tokens[d] += sum(len(r.token_ids) for r in results)
    ref = texts[dtypes[0]]
    return {d: {"identical": sum(a == b for a, b in zip(ref, texts[d])), "prompts": len(ref),
                "tok_s": tokens[d] / secs[d]} for d in dtypes}


def main(argv=None) -> None:
    from toolformer_kit.lm.base import native_bf16, resolve_dtype

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--models", default="smollm2-135m,qwen2.5-coder-0.5b")
    parser.add_argument("--dtypes", default="fp32,bf16", help="dtypes to run each model in, alternating")
    parser.add_argument("--matmul-n", type=int, default=2048, help="roofline matmul size (smaller where bf16 is "
                                                                  "emulated: it can run 50× slower than fp32)")
    parser.add_argument("--greedy", type=int, default=0, metavar="N",
                        help="also decode the first N prompts of --task greedily in each dtype and compare")
    parser.add_argument("--task", default="svamp")
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--data-dir", default=os.environ.get("TOOLFORMER_DATA_DIR", str(
        Path(__file__).resolve().parents[2] / "shared" / "data" / "benchmarks")))
    args = parser.parse_args(argv)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, load average {os.getloadavg()[0]:.1f}; "
          f"hardware bf16: {'yes' if native_bf16() else 'no'} (--dtype auto = {resolve_dtype('auto')})")
    before = rooflines(args.matmul_n)
    rows = [r for m in args.models.split(",") for r in bench(m, args.dtypes.split(","), args.batch, args.seq,
                                                             args.repeats)]
    after = rooflines(args.matmul_n)
    roof = {k: max(before[k], after[k]) for k in before}  # measured before and after; the higher is the ceiling
    for k in roof:
        print(f"{k} matmul {args.matmul_n}²: {roof[k]:.1f} GFLOP/s (before models: {before[k]:.1f}, after: {after[k]:.1f})")
    print(f"bf16 / fp32 matmul: {roof['bf16'] / roof['fp32']:.2f}×")
    print(f"{'model':<22}{'dtype':>6}{'tokens/s':>10}{'GFLOP/s':>10}{'of fp32':>9}{'of bf16':>9}"
          f"   ({args.batch}×{args.seq} tokens, no grad)")
    for r in rows:
        print(f"{r['model']:<22}{r['dtype']:>6}{r['tok_s']:>10.0f}{r['gflops']:>10.1f}"
              f"{r['gflops'] / roof['fp32']:>9.0%}{r['gflops'] / roof['bf16']:>9.0%}")
    for m in args.models.split(","):
        by = {r["dtype"]: r["tok_s"] for r in rows if r["model"] == m}
        if {"fp32", "bf16"} <= set(by):
            print(f"{m}: bf16 / fp32 tokens/s {by['bf16'] / by['fp32']:.2f}×")
    if args.greedy:
        dtypes = args.dtypes.split(",")
        for m in args.models.split(","):
            res = greedy_agreement(m, dtypes, args.task, args.greedy, args.new_tokens, args.data_dir)
            for d, r in res.items():
                print(f"greedy {m} {args.task} first {r['prompts']} prompts, {d}: {r['tok_s']:.1f} new tokens/s, "
                      f"{r['identical']}/{r['prompts']} outputs identical to {dtypes[0]}")


if __name__ == "__main__":
    main()
