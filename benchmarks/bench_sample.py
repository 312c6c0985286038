"""Sampling throughput: the continuous-batching sampler against the one it replaced, in one run.

    python benchmarks/bench_sample.py [--models qwen2.5-coder-0.5b,smollm2-135m] [--tool Calculator]
        [--heads 16] [--rows 128] [--threads 1] [--repeats 1] [--annotate 1] [--json out.json]

The workload is the sampling call annotation makes for one tool on one shard of the pipeline's
default corpus (``toolformer pipeline`` defaults: 2 documents per source, 96-token windows, shards
of 8, the tool's own k, m and τs, 32 new tokens at most, the tool prompt as shared prefix, stopping
at "]" or the arrow): the shard with the most chosen positions, its first ``--heads`` positions
(0 = all). Both samplers get the same rows; with ``--repeats 2`` they run old-new then new-old, so
load from other jobs on a shared machine hits both alike. Quote ratios; absolute figures move with
the load.

Reported per model: seconds, sampled tokens/s, the new/old speed ratio, the share of the fp32
roofline (a 2048² matmul measured in the same process, same threads) spent on the work sampling
needs — 2 × body parameters per distinct prefix token and per sampled token, plus 2 × vocabulary ×
hidden per sampled token (attention, padding and re-run prefixes not counted, the same figure
for both samplers) — documents/hour/tool of the sampling stage on this shard, and the fraction of
samples that are token-identical between the two samplers (same seed; float round-off in logits
may rarely change a draw). ``--annotate`` also runs the whole annotation of the shard for the tool
(positions, sampling, execution, scoring with the pipeline's scorer) of the shard's first documents
once with each sampler: documents/hour/tool for the default pipeline settings.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from functools import partial
from pathlib import Path

import torch

from toolformer_kit.lm.base import matmul_gflops

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_annotate import flop_model, pipeline_annotate_config  # noqa: E402
from legacy_sample import legacy_sample  # noqa: E402


def workload(lm, tool, cfg):
    """(documents, suffixes, m) of the shard whose sampling call has the most positions."""
    from toolformer_kit.annotate.corpus import ReadReport
    from toolformer_kit.annotate.runner import Runner
    from toolformer_kit.annotate.sample import chosen_suffixes, document_positions
    from toolformer_kit.annotate.config import tool_settings
    from toolformer_kit.annotate.stages import ShardStats, eligible

    docs, _ = Runner(cfg)._documents(lm, ReadReport())
    s = tool_settings(cfg, tool)
    best = ([], [])
    for start in range(0, len(docs), cfg.shard_size):
        pairs = eligible(tool, docs[start: start + cfg.shard_size], cfg, ShardStats())
        if not pairs:
            continue
        texts = [d.text for d, _ in pairs]
        positions = document_positions(lm, tool, texts)
        _, suffixes = chosen_suffixes(lm, tool, [d.doc_id for d, _ in pairs], texts, positions, s.tau_s, s.k,
                                      [d.context_chars for d, _ in pairs])
        if len(suffixes) > len(best[1]):
            best = ([d for d, _ in pairs], suffixes)
    return best[0], best[1], s.m


def run_sampler(fn, lm, suffixes, m, prompt, cfg):
    from toolformer_kit.annotate.sample import input_complete

    t0 = time.perf_counter()
    out = fn(suffixes, m, config=cfg, shared_prefix=prompt, stop_when=input_complete)
    return out, time.perf_counter() - t0


def compare(lm, tool, docs, suffixes, m, args) -> dict:
    from toolformer_kit.annotate.sample import prompt_ids
    from toolformer_kit.lm.base import SamplingConfig

    prompt = prompt_ids(lm, tool)[len(lm.bos_ids):]
    heads = suffixes[: args.heads or None]
    cfg = SamplingConfig(max_new_tokens=args.max_new_tokens, seed=args.seed)
    lm.sample_rows = args.rows
    samplers = {"old": partial(legacy_sample, lm), "new": lm.sample}
    for fn in samplers.values():  # warm-up: prompt cache, allocator, kernels
        fn(heads[:1], 1, config=SamplingConfig(max_new_tokens=2), shared_prefix=prompt)
    seconds = {k: [] for k in samplers}
    outs = {}
    for r in range(args.repeats):
        for name in (["old", "new"] if r % 2 == 0 else ["new", "old"]):
            outs[name], sec = run_sampler(samplers[name], lm, heads, m, prompt, cfg)
            seconds[name].append(sec)
            if name == "new":
                stats = dict(lm.sample_stats)
    body, head_row = flop_model(lm)
    new_tokens = sum(len(s.token_ids) for row in outs["new"] for s in row)
    useful = (stats["prefill_tokens"] + new_tokens) * body + new_tokens * head_row
    same = [a.token_ids == b.token_ids for ra, rb in zip(outs["new"], outs["old"]) for a, b in zip(ra, rb)]
    rows = {}
    for name in samplers:
        sec = statistics.median(seconds[name])
        toks = sum(len(s.token_ids) for row in outs[name] for s in row)
        rows[name] = {"seconds": round(sec, 1), "sampled_tokens": toks, "tokens_per_s": round(toks / sec, 2),
                      "useful_gflops": round(useful / sec / 1e9, 2),
                      "docs_per_hour_per_tool": round(3600 / (sec / len(heads) * len(suffixes) / len(docs)), 1)}
    return {"documents": len(docs), "positions_in_shard": len(suffixes), "positions_run": len(heads), "m": m,
            "rows": len(heads) * m, "new_sampler": stats, "by_sampler": rows,
            "speedup": round(rows["old"]["seconds"] / rows["new"]["seconds"], 2),
            "identical_samples": f"{sum(same)}/{len(same)}", "identical_fraction": round(sum(same) / len(same), 4)}


def annotate_both(lm, sampler, tool, docs, cfg) -> dict:
    """The whole annotation of ``docs`` for ``tool``, once with each sampler."""
    from toolformer_kit.annotate.stages import ShardAnnotator

    out = {}
    for name in ("old", "new"):
        if name == "old":
            sampler.sample = partial(legacy_sample, sampler)
        else:
            del sampler.sample  # back to the class's method
        t0 = time.perf_counter()
        cands, stats = ShardAnnotator(cfg, lm, [tool], sampler).run(docs)
        sec = time.perf_counter() - t0
        out[name] = {"seconds": round(sec, 1), "docs_per_hour_per_tool": round(3600 * len(docs) / sec, 1),
                     "candidates": len(cands), **{f"{k}_s": round(v, 1) for k, v in stats.seconds.items()}}
    out["speedup"] = round(out["old"]["seconds"] / out["new"]["seconds"], 2)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="qwen2.5-coder-0.5b,smollm2-135m", help="samplers to measure")
    p.add_argument("--tool", default="Calculator")
    p.add_argument("--heads", type=int, default=16, help="positions of the shard to sample (0 = all)")
    p.add_argument("--rows", type=int, default=128, help="rows the new sampler decodes together")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    p.add_argument("--repeats", type=int, default=1, help="runs per sampler, alternating which goes first")
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--annotate", type=int, default=0, metavar="DOCS",
                   help="also annotate the shard's first DOCS documents with each sampler (0 = no)")
    p.add_argument("--json", default="")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    from toolformer_kit.lm.base import load_lm
    from toolformer_kit.tools import get_tool

    report = {"threads": torch.get_num_threads(), "load_average": os.getloadavg(),
              "fp32_matmul_gflops": [round(matmul_gflops(), 1)], "models": {}}
    tool = get_tool(args.tool)
    for name in args.models.split(","):
        lm = load_lm(name, device="cpu", dtype="fp32")
        cfg = pipeline_annotate_config(args.tool, name)
        docs, suffixes, m = workload(lm, tool, cfg)
        row = compare(lm, tool, docs, suffixes, m, args)
        if args.annotate:
            scorer = lm if cfg.model == name else load_lm(cfg.model, device="cpu", dtype="fp32")
            row["annotate"] = annotate_both(scorer, lm, tool, docs[: args.annotate], cfg)
        report["models"][name] = row
        print(json.dumps({name: row}), file=sys.stderr)
    report["fp32_matmul_gflops"].append(round(matmul_gflops(), 1))
    roof = statistics.mean(report["fp32_matmul_gflops"])
    for row in report["models"].values():
        for r in row["by_sampler"].values():
            r["fp32_roofline_share"] = round(r["useful_gflops"] / roof, 3)
    text = json.dumps(report, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
