"""Benchmark evaluation decoding: the decoder before continuous batching against today's, in one run.

Both answer the same math prompts (SVAMP, ASDiv, MAWPS: the math recipe's tasks) with the same
model, dtype and decoding settings (the harness's ``decode_config``: greedy, the answer's 24-token
budget, the call budget, stop at a line break). Before: the recipe's batches of 8 prompts, each a
static left-padded batch (``benchmarks/legacy_decode.py``). After: ``--rows`` prompts decoding
together, a finished row's slot refilled at once, and the harness's chunks of prompts per call.
The sides alternate per setting, so drifting machine load hits both alike.

Settings: ``disabled`` and ``k10`` (the paper's), and ``k100``: a stress column in which " ["
opens a call whenever it is among the top 100 tokens, so the base model opens calls on most
prompts as the tool-trained model does (92-96 %), and the call machinery is timed too.

    python benchmarks/bench_eval.py --model qwen2.5-coder-0.5b --per-task 32 --rows 32
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from legacy_decode import ToolAwareDecoder as LegacyDecoder  # noqa: E402

from toolformer_kit.decode.hf import ToolAwareDecoder  # noqa: E402
from toolformer_kit.eval.harness import CHUNK, Setting, decode_config  # noqa: E402
from toolformer_kit.eval.tasks import get_task, subset  # noqa: E402
from toolformer_kit.lm.base import load_lm, matmul_rates, set_threads  # noqa: E402
from toolformer_kit.tools import get_tool  # noqa: E402

TASKS = ("svamp", "asdiv", "mawps")


def answer(decoder, prompts: list[str], cfg, per_call: int) -> tuple[float, list]:
    """Wall seconds and results of answering ``prompts`` in generate calls of ``per_call``."""
    start = time.perf_counter()
    out = []
    for s in range(0, len(prompts), per_call):
        out += decoder.generate(prompts[s: s + per_call], cfg)
    return time.perf_counter() - start, out


def same(a, b) -> bool:
    return a.text == b.text and [(c.tool, c.input, c.result) for c in a.calls] == \
        [(c.tool, c.input, c.result) for c in b.calls]


def body_params(model) -> int:
    """Parameters a token passes through (the output head counted once: one row is kept)."""
    return sum(p.numel() for n, p in model.named_parameters() if "embed_tokens" not in n)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen2.5-coder-0.5b")
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--per-task", type=int, default=32)
    ap.add_argument("--rows", type=int, default=32, help="rows decoding together after the change")
    ap.add_argument("--before-batch", type=int, default=8, help="the recipe's eval_batch before the change")
    ap.add_argument("--settings", default="disabled,k10,k100")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared/data/benchmarks"))
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--json", default=None, help="also write the figures here")
    args = ap.parse_args(argv)
    set_threads(args.threads)
    lm = load_lm(args.model, dtype=args.dtype)
    tools = {"Calculator": get_tool("Calculator")}
    before = LegacyDecoder(lm, tools=tools, batch_size=args.before_batch)
    after = ToolAwareDecoder(lm, tools=tools, batch_size=args.rows)
    rates = matmul_rates(repeats=3)
    flops_per_token = 2 * body_params(lm.model)
    warm = decode_config(get_task("svamp"), Setting.parse("k10"))
    before.generate(["Warm-up: 2 + 2 is"], warm), after.generate(["Warm-up: 2 + 2 is"], warm)
    rows, totals = [], {"before": 0.0, "after": 0.0, "n": 0, "same": 0, "tokens": 0}
    print(f"model {args.model} ({lm.model.dtype}), {args.per_task} prompts per task, before: batches of "
          f"{args.before_batch}; after: {args.rows} rows, {CHUNK * args.rows} prompts per call; "
          f"roofline fp32 {rates['fp32']:.0f} / bf16 {rates['bf16']:.0f} GFLOP/s")
    for name in args.settings.split(","):
        setting = Setting.parse(name)
        for task_name in args.tasks.split(","):
            task = get_task(task_name)
            prompts = [e.prompt for e in subset(task.load(args.data_dir), args.per_task)]
            cfg = decode_config(task, setting)
            t_before, r_before = answer(before, prompts, cfg, args.before_batch)
            t_after, r_after = answer(after, prompts, cfg, CHUNK * args.rows)
            agree = sum(same(a, b) for a, b in zip(r_before, r_after))
            tokens = sum(len(r.token_ids) for r in r_after)
            fed = tokens + sum(len(lm.encode(p)) for p in prompts)  # every token the model runs once
            calls = sum(bool(r.calls) for r in r_after)
            row = {"setting": setting.name, "task": task_name, "n": len(prompts), "before_s": round(t_before, 2),
                   "after_s": round(t_after, 2), "speedup": round(t_before / t_after, 2), "identical": agree,
                   "new_tokens": tokens, "calls": calls,
                   "after_bf16_roofline_pct": round(100 * fed * flops_per_token / t_after / 1e9 / rates["bf16"], 1)}
            rows.append(row)
            for k, v in (("before", t_before), ("after", t_after), ("n", len(prompts)), ("same", agree),
                         ("tokens", tokens)):
                totals[k] += v
            print(f"{setting.name:9s} {task_name:6s}: before {t_before:6.1f} s ({len(prompts) / t_before:5.2f} ans/s), "
                  f"after {t_after:6.1f} s ({len(prompts) / t_after:5.2f} ans/s) = {t_before / t_after:4.2f}x; "
                  f"identical {agree}/{len(prompts)}; {calls} with a call; {tokens} new tokens "
                  f"({row['after_bf16_roofline_pct']} % of the bf16 roofline, prompt and new tokens)", flush=True)
    speed = totals["before"] / totals["after"]
    print(f"all: {totals['n']} answers, before {totals['before']:.1f} s ({totals['n'] / totals['before']:.2f} ans/s), "
          f"after {totals['after']:.1f} s ({totals['n'] / totals['after']:.2f} ans/s) = {speed:.2f}x; "
          f"identical outputs {totals['same']}/{totals['n']}")
    result = {"model": args.model, "dtype": str(lm.model.dtype), "rows": args.rows, "before_batch": args.before_batch,
              "chunk": CHUNK, "rooflines_gflops": rates, "torch_threads": torch.get_num_threads(),
              "per_setting": rows, "total": {**totals, "speedup": round(speed, 2)}}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
