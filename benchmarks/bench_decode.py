"""Benchmark tool-aware decoding: what a call costs beyond the tool, and what batching buys.

1. Call overhead: the same prompt decoded for exactly N tokens (EOS ignored) once with one
   Calculator call (opened on top-k) and once with calls disabled. Both runs make the same number
   of forward passes; the difference minus the tool's own time is the decoder's overhead
   (parsing, the pause, feeding the result). Target: at most 10%.
2. Batching: P prompts decoded together vs one at a time, in new tokens per second.

    python benchmarks/bench_decode.py --model smollm2-135m --tokens 128 --prompts 8
"""

from __future__ import annotations

import argparse
import statistics
import time

from toolformer_kit.decode.demos import demo_prompt
from toolformer_kit.decode.config import DecodeConfig
from toolformer_kit.decode.hf import ToolAwareDecoder
from toolformer_kit.lm.base import load_lm
from toolformer_kit.tools import get_tool
from toolformer_kit.tools.engine import ToolEngine

TEXTS = ["The school has 23 classes of 28 pupils, so it has", "I had 250 euros and spent 85, which left me",
         "A box holds 12 eggs, so 7 boxes hold", "The train carried 412 people and 37 got off, leaving",
         "Each of the 6 teams has 11 players, so the league has", "We drove 540 km in 6 hours, an average of",
         "The farm has 48 cows and 19 goats, in all", "She read 15 pages a day for 12 days, a total of"]


def timed(decoder: ToolAwareDecoder, prompts: list[str], cfg: DecodeConfig) -> tuple[dict, list]:
    """Wall seconds, the tools' own seconds and the engine's wall seconds of one generate call."""
    tool_before = decoder.engine.stats.total().seconds
    engine_before = decoder.counters.get("tool_seconds", 0.0)
    start = time.perf_counter()
    results = decoder.generate(prompts, cfg)
    secs = time.perf_counter() - start
    return {"wall": secs, "tool": decoder.engine.stats.total().seconds - tool_before,
            "engine": decoder.counters.get("tool_seconds", 0.0) - engine_before}, results


def call_overhead(decoder: ToolAwareDecoder, prompt: str, n: int, repeats: int) -> None:
    with_call = DecodeConfig(max_new_tokens=n, k=10, max_calls=1)
    without = DecodeConfig(max_new_tokens=n, disabled=True)
    timed(decoder, [prompt], without)  # warm-up
    calls, plains = [], []
    for _ in range(repeats):  # interleaved, so drifting machine load hits both alike
        t, (res,) = timed(decoder, [prompt], with_call)
        assert len(res.token_ids) == n and [c.ok for c in res.calls] == [True], res
        calls.append(t)
        t, (plain,) = timed(decoder, [prompt], without)
        assert len(plain.token_ids) == n and not plain.calls
        plains.append(t)
    med = {key: statistics.median(t[key] for t in calls) for key in ("wall", "tool", "engine")}
    plain = statistics.median(t["wall"] for t in plains)
    pairs = ", ".join(f"{100 * (c['wall'] - c['tool'] - p['wall']) / p['wall']:+.1f}%" for c, p in zip(calls, plains))
    print(f"text with the call: {res.text[:120]!r}")
    print(f"{n} tokens with one call:  {med['wall']:.3f} s (median of {repeats}; tool's own time "
          f"{med['tool'] * 1e3:.2f} ms, engine wall {med['engine'] * 1e3:.2f} ms, {sum(res.forced)} forced tokens)")
    print(f"{n} tokens without calls:  {plain:.3f} s")
    print(f"overhead beyond the tool's own time: {100 * (med['wall'] - med['tool'] - plain) / plain:+.1f}% "
          f"(run pairs: {pairs})")


def batching(lm, engine: ToolEngine, prompts: list[str], n: int) -> None:
    cfg = DecodeConfig(max_new_tokens=n, k=10, max_calls=1)
    out = {}
    for size in (len(prompts), 1):
        decoder = ToolAwareDecoder(lm, tools=engine.tools, engine=engine, batch_size=size)
        t, results = timed(decoder, prompts, cfg)
        secs = t["wall"]
        tokens = sum(len(r.token_ids) for r in results)
        out[size] = (tokens / secs, results)
        print(f"batch size {size:2d}: {tokens} tokens in {secs:.2f} s = {tokens / secs:.1f} tok/s "
              f"({sum(len(r.calls) for r in results)} calls)")
    same = [a.token_ids == b.token_ids for a, b in zip(out[len(prompts)][1], out[1][1])]
    print(f"batched vs one at a time: {out[len(prompts)][0] / out[1][0]:.2f}x throughput; "
          f"identical tokens for {sum(same)}/{len(same)} prompts")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--device", default=None)
    parser.add_argument("--tokens", type=int, default=128, help="tokens per run in the overhead test")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--prompts", type=int, default=8, help="prompts in the batching test")
    parser.add_argument("--batch-tokens", type=int, default=48, help="tokens per prompt in the batching test")
    args = parser.parse_args()

    lm = load_lm(args.model, device=args.device)
    lm.eos_ids = set()  # decode exactly N tokens in every run
    calculator = get_tool("Calculator")
    engine = ToolEngine({"Calculator": calculator})
    decoder = ToolAwareDecoder(lm, tools=engine.tools, engine=engine)
    prompts = [demo_prompt(calculator, t) for t in TEXTS[: args.prompts]]
    print(f"model {args.model} on {lm.device}; prompt {len(lm.encode(prompts[0]))} tokens")
    call_overhead(decoder, prompts[0], args.tokens, args.repeats)
    batching(lm, engine, prompts, args.batch_tokens)


if __name__ == "__main__":
    main()
