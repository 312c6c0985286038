"""Benchmark of annotation: per-stage throughput and the batched filter against a naive reference.

Run: ``python benchmarks/bench_annotate.py [--docs 6 --tool Calculator]`` (k, m, τs default to the
tool's own settings, the paper's: 20, 10, 0 for the Calculator), or
``--from-run OUT`` to compare the filter on the candidates an annotate run wrote to ``OUT``, or
``--dtypes fp32,bf16`` for documents/hour/tool in each dtype side by side in one run (documents
alternate between the dtypes) and the bf16 scorer's |ΔL| and decision flips on fp32's candidates.

What it reports, on the same documents in the same process:

* the machine's fp32 and bf16 matmul rates (median of 2048×2048 products through torch), the
  rooflines (bf16 is the one to reach on a CPU with hardware bf16; without it bf16 is emulated);
* per stage (positions, sampling, execution, scoring): seconds, tokens/s, candidates/s, and the
  share of the roofline spent on *useful* FLOPs — 2 × (non-embedding parameters) per token run
  through the transformer body plus 2 × vocabulary × hidden per output-head row actually needed
  (attention-score FLOPs and padding are not counted as useful);
* the filter: :func:`~toolformer_kit.annotate.filter.score_candidates` against
  :func:`~toolformer_kit.annotate.filter.naive_losses` (one candidate at a time, three unbatched
  passes over the full document each) on the same candidates — the largest difference of any
  loss and the speed ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from toolformer_kit.lm.base import matmul_rates as rooflines  # the model benchmark's roofline measure


def flop_model(lm) -> tuple[float, float]:
    """(FLOPs per body token, FLOPs per output-head row) of a transformers model."""
    emb = lm.model.get_input_embeddings().weight
    head = lm.model.get_output_embeddings().weight
    total = sum(p.numel() for p in lm.model.parameters())
    tied = head.data_ptr() == emb.data_ptr()
    body = total - emb.numel() - (0 if tied else head.numel())
    return 2.0 * body, 2.0 * head.numel()


def _bench_config(args):
    from toolformer_kit.annotate.config import AnnotateConfig

    return AnnotateConfig(k=args.k, m=args.m, tau_s=args.tau_s, max_new_tokens=args.max_new_tokens,
                          seed=args.seed, prefilter=False)


def run_stages(args, lm, sampler, tool, docs):
    from toolformer_kit.annotate.stages import ShardAnnotator

    annot = ShardAnnotator(_bench_config(args), lm, [tool], sampler)
    t0 = time.perf_counter()
    cands, stats = annot.run(docs)
    return annot, cands, stats, time.perf_counter() - t0


def stage_table(args, lm, sampler, tool, docs, annot, cands, stats, roof) -> dict:
    per_tok_s, per_row_s = flop_model(sampler)
    per_tok, per_row = flop_model(lm)
    prompt = len(sampler.encode(tool.prompt_prefix()))  # computed once and cached for the run
    per_doc = stats.tokens["positions"]  # "Input: x / Output:" + x, per document
    text = sum(len(sampler.encode(" " + d.text)) for d in docs)  # rows through the output head
    samp_in, samp_new = stats.tokens["sampling_prefix"], stats.tokens["sampling_new"]
    sc = annot.scorer.stats
    useful = {
        "positions": ((prompt + per_doc) * per_tok_s + text * per_row_s, prompt + per_doc),
        "sampling": ((samp_in + samp_new) * per_tok_s + samp_new * per_row_s, samp_in + samp_new),
        "scoring": (sc.body_tokens * per_tok + sc.head_rows * per_row, sc.body_tokens),
    }
    scored = sum(c.score is not None for c in cands)
    out = {}
    for stage, sec in stats.seconds.items():
        row = {"seconds": round(sec, 2)}
        if stage in useful and sec > 0:
            flops, toks = useful[stage]
            row.update(tokens=int(toks), tokens_per_s=round(toks / sec, 1),
                       useful_gflops=round(flops / sec / 1e9, 2), roofline_share=round(flops / sec / 1e9 / roof, 3))
        if stage == "scoring" and sec > 0:
            row["candidates_per_s"] = round(scored / sec, 2)
            row["padded_tokens"] = sc.padded_tokens
        if stage == "sampling" and sec > 0:
            row["samples_per_s"] = round(len(cands) / sec, 2)
        out[stage] = row
    return out


def load_run(path: str, lm):
    """The documents and scored candidates of a finished ``toolformer annotate`` run."""
    from pathlib import Path

    from toolformer_kit.annotate.config import AnnotateConfig
    from toolformer_kit.annotate.corpus import ReadReport
    from toolformer_kit.annotate.records import read_jsonl
    from toolformer_kit.annotate.runner import Runner
    from toolformer_kit.config import from_dict

    manifest = json.loads((Path(path) / "manifest.json").read_text(encoding="utf-8"))
    cfg = from_dict(AnnotateConfig, manifest["settings"])
    docs, _ = Runner(cfg, lm=lm)._documents(lm, ReadReport())
    cands = [c for c in read_jsonl(Path(path) / "candidates.jsonl") if c.score is not None]
    return docs, cands, cfg


def whole_documents(cands, limit: int):
    """Candidates of whole documents (so sharing is as in a real run), about ``limit`` of them."""
    pool, seen = [], []
    for c in cands:
        if c.doc_id not in seen:
            if len(pool) >= limit:
                break
            seen.append(c.doc_id)
        pool.append(c)
    return pool


def compare_filter(lm, docs, cands, limit: int) -> dict:
    """Batched scorer vs naive reference on the scorable candidates of the first documents.

    The two alternate document by document, so that both see the same machine load (this machine
    is shared and noisy; timing one whole method after the other let load changes pose as speed).
    """
    from toolformer_kit.annotate.scoring import BatchedScorer, naive_losses, score_candidates
    from toolformer_kit.annotate.positions import LEAD
    from toolformer_kit.tools.base import AnnotationSettings

    pool = whole_documents([c for c in cands if c.scorable], limit)
    ids = {d.doc_id: n for n, d in enumerate(docs)}
    tokens = [lm.encode(LEAD + d.text) for d in docs]
    scorer = BatchedScorer(lm)
    batched = naive = 0.0
    diff = 0.0
    naive_tokens = 0
    for doc_id in dict.fromkeys(c.doc_id for c in pool):
        group = [c for c in pool if c.doc_id == doc_id]
        for c in group:
            c.L_eps = c.L_call_noresult = c.L_plus = None
        t0 = time.perf_counter()
        score_candidates(scorer, tokens, [ids[doc_id]] * len(group), group,
                         {c.tool: AnnotationSettings(tau_f=1.0) for c in group})
        batched += time.perf_counter() - t0
        t0 = time.perf_counter()
        ref = [naive_losses(lm, tokens[ids[doc_id]], c.call, c.score_position) for c in group]
        naive += time.perf_counter() - t0
        diff = max([diff] + [abs(a - b) for c, r in zip(group, ref)
                             for a, b in zip((c.L_eps, c.L_call_noresult, c.L_plus), r)])
        naive_tokens += sum(_naive_tokens(lm, tokens[ids[doc_id]], c) for c in group)
    return {"candidates": len(pool), "tools": sorted({c.tool for c in pool}),
            "distinct_calls": len({(c.doc_id, c.input, c.result) for c in pool}),
            "documents": len({c.doc_id for c in pool}), "max_abs_diff": diff, "agree_1e-4": diff <= 1e-4,
            "batched_seconds": round(batched, 3), "naive_seconds": round(naive, 3),
            "speedup": round(naive / batched, 2) if batched else None,
            "batched_body_tokens": scorer.stats.body_tokens, "naive_body_tokens": naive_tokens,
            "token_ratio": round(naive_tokens / max(1, scorer.stats.body_tokens), 2)}


def _naive_tokens(lm, doc, cand) -> int:
    """Tokens the naive reference runs for one candidate: three full passes."""
    from toolformer_kit.annotate.scoring import call_prefix, document_start

    start = len(getattr(lm, "bos_ids", ())) + len(document_start(lm)) + len(doc)
    return 3 * start + len(call_prefix(lm, cand.call.with_result(""))) + len(call_prefix(lm, cand.call))


def available(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def engine_table(args, docs, tool) -> dict:
    """``toolformer annotate`` on the same corpus with each engine/backend installed here.

    Local runs get their model loaded beforehand, so their seconds are annotation only; Ray runs
    include starting the actors and loading a model copy in each (that is what a user waits for).
    Ray actors run one thread each, so their losses differ from a 2-thread local run in float
    round-off (reported); vLLM samples with its own random generator, so its candidates differ
    from the transformers backend's — decisions on the *same* candidates are compared by the
    opt-in vLLM test (tests/test_vllm_backend.py).
    """
    import tempfile
    from pathlib import Path

    from toolformer_kit.annotate.config import AnnotateConfig
    from toolformer_kit.annotate.records import read_jsonl
    from toolformer_kit.annotate.runner import Runner
    from toolformer_kit.lm.base import load_lm

    combos = [("local", "hf")] + ([("ray", "hf")] if available("ray") else []) + \
             ([("local", "vllm")] if available("vllm") else [])
    work = Path(tempfile.mkdtemp(prefix="bench-engines-"))
    corpus = work / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d.record(), ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    rows, first = [], None
    for engine, backend in combos:
        cfg = AnnotateConfig(model=args.model, tools=[tool.name], corpus=str(corpus), out=str(work / f"{engine}-{backend}"),
                             k=args.k, m=args.m, tau_s=args.tau_s, max_new_tokens=args.max_new_tokens,
                             seed=args.seed, prefilter=False, progress=False, backend=backend, engine=engine,
                             actors=2, cpus_per_actor=1.0, shard_size=max(1, len(docs) // 4))
        t0 = time.perf_counter()
        lm = load_lm(args.model, backend=backend, device="cpu") if engine == "local" else None
        load = time.perf_counter() - t0
        t0 = time.perf_counter()
        Runner(cfg, lm=lm).run()
        sec = time.perf_counter() - t0
        cands = read_jsonl(Path(cfg.out) / "candidates.jsonl")
        first = first or cands
        rows.append({"engine": engine, "backend": backend, "model_load_s": round(load, 1) if lm else "in actors",
                     "seconds": round(sec, 1), "documents_per_s": round(len(docs) / sec, 3),
                     "candidates_per_s": round(sum(c.score is not None for c in cands) / sec, 2),
                     "candidates": len(cands), "kept": sum(c.kept for c in cands),
                     **agreement(first, cands)})
        del lm
    return {"corpus_documents": len(docs), "tool": tool.name, "rows": rows}


def dtype_table(args, docs, tool) -> dict:
    """Annotate the same documents once per dtype, alternating document by document (first dtype
    first on even documents, last on odd ones) so that load on this shared machine hits all alike;
    then re-score the first dtype's candidates with every other dtype's scorer: |ΔL| and flips."""
    from collections import Counter

    from toolformer_kit.annotate.stages import ShardAnnotator
    from toolformer_kit.lm.base import load_lm

    dtypes = args.dtypes.split(",")
    lms = {d: load_lm(args.model, device="cpu", dtype=d) for d in dtypes}
    samplers = {d: load_lm(args.sampler_model, device="cpu", dtype=d) if args.sampler_model else lms[d]
                for d in dtypes}
    annots = {d: ShardAnnotator(_bench_config(args), lms[d], [tool], samplers[d]) for d in dtypes}
    wall, stages, cands = Counter(), {d: Counter() for d in dtypes}, {d: [] for d in dtypes}
    for n, doc in enumerate(docs):
        for d in (dtypes if n % 2 == 0 else dtypes[::-1]):
            t0 = time.perf_counter()
            found, stats = annots[d].run([doc])
            wall[d] += time.perf_counter() - t0
            stages[d].update(stats.seconds)
            cands[d] += found
    rows = [{"dtype": d, "seconds": round(wall[d], 1), "docs_per_hour_per_tool": round(3600 * len(docs) / wall[d], 1),
             "vs_first": round(wall[dtypes[0]] / wall[d], 2), "candidates": len(cands[d]),
             "scored": sum(c.score is not None for c in cands[d]), "kept": sum(bool(c.kept) for c in cands[d]),
             **{f"{k}_s": round(v, 1) for k, v in stages[d].items()}} for d in dtypes]
    agree = {d: rescored_agreement(lms[d], docs, cands[dtypes[0]], args.margin) for d in dtypes[1:]}
    return {"rows": rows, "scorer_agreement_vs_" + dtypes[0]: agree}


def pipeline_annotate_config(tool: str, sampler: str | None = None):
    """The annotation settings of ``toolformer pipeline``'s smoke preset (the pipeline's default
    when these measurements began; issue 43 made the maths run the default), for one tool
    (``sampler``: another sampling model than the preset's)."""
    from toolformer_kit.annotate.config import AnnotateConfig
    from toolformer_kit.pipeline.config import preset

    p = preset("smoke")
    return AnnotateConfig(model=p.model, sampler_model=p.sampler_model if sampler is None else sampler, tools=[tool],
                          corpus="default", default_docs=p.docs_per_source, window_tokens=p.window_tokens, seed=p.seed)


def before_after_table(args, tool, roofs: dict) -> dict:
    """Annotation at the pipeline's defaults, before this issue's work (fp32 models, the sampler it
    replaced: ``legacy_sample``) and after it (``--dtype auto`` models, the continuous-batching
    sampler), on the same windows, alternating window by window so load hits both alike.

    Gives each side's per-stage table (tokens/s, share of both rooflines), documents/hour/tool and
    the ratio; then the after-scorer's |ΔL| and decision flips on the before-side's candidates.
    """
    from collections import Counter
    from functools import partial

    from legacy_sample import legacy_sample
    from toolformer_kit.annotate.corpus import ReadReport
    from toolformer_kit.annotate.runner import Runner
    from toolformer_kit.annotate.stages import ShardAnnotator, ShardStats, eligible
    from toolformer_kit.lm.base import load_lm, resolve_dtype

    after = resolve_dtype(args.after_dtype, "cpu")
    cfg = pipeline_annotate_config(tool.name)
    sides = {"before": "fp32", "after": args.after_dtype}
    lms = {s: load_lm(cfg.model, device="cpu", dtype=d) for s, d in sides.items()}
    samplers = {s: load_lm(cfg.sampler_model, device="cpu", dtype=d) for s, d in sides.items()}
    samplers["before"].sample = partial(legacy_sample, samplers["before"])
    annots = {s: ShardAnnotator(cfg, lms[s], [tool], samplers[s]) for s in sides}
    windows, _ = Runner(cfg)._documents(lms["before"], ReadReport())
    docs = [d for d, _ in eligible(tool, windows, cfg, ShardStats())][: args.docs]
    stats = {s: ShardStats() for s in sides}
    cands = {s: [] for s in sides}
    wall = Counter()
    for n, doc in enumerate(docs):
        for s in (list(sides) if n % 2 == 0 else list(sides)[::-1]):
            t0 = time.perf_counter()
            found, st = annots[s].run([doc])
            wall[s] += time.perf_counter() - t0
            stats[s].seconds.update(st.seconds)
            stats[s].tokens.update(st.tokens)
            cands[s] += found
            print(f"window {n + 1}/{len(docs)} {s}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    out = {"settings": {"model": cfg.model, "sampler": cfg.sampler_model, "tool": tool.name,
                        "windows": len(docs), "before": "fp32, legacy sampler", "after": f"{after}, continuous"}}
    for s in sides:
        table = stage_table(args, lms[s], samplers[s], tool, docs, annots[s], cands[s], stats[s], roofs["fp32"])
        out[s] = {"seconds": round(wall[s], 1), "docs_per_hour_per_tool": round(3600 * len(docs) / wall[s], 1),
                  "candidates": len(cands[s]), "scored": sum(c.score is not None for c in cands[s]),
                  "kept": sum(bool(c.kept) for c in cands[s]), "stages": _both_roofs(table, roofs)}
    out["speedup"] = round(wall["before"] / wall["after"], 2)
    out["stage_speedup"] = {k: round(stats["before"].seconds[k] / v, 2)
                            for k, v in stats["after"].seconds.items() if v > 0}
    out["scorer_agreement_after_vs_before"] = rescored_agreement(lms["after"], docs, cands["before"], args.margin)
    return out


def rescored_agreement(lm, docs, ref_cands, margin: float) -> dict:
    """Score ``ref_cands`` (already scored) again with ``lm``: |ΔL| quantiles over the three losses
    and kept/rejected flips at τf 0.5/1/2, counting those whose first score is > margin from τf."""
    import copy

    import numpy as np

    from toolformer_kit.annotate.filter import decision_flips
    from toolformer_kit.annotate.scoring import BatchedScorer, score_candidates
    from toolformer_kit.annotate.positions import LEAD
    from toolformer_kit.tools.base import AnnotationSettings

    ref = [c for c in ref_cands if c.score is not None]
    new = copy.deepcopy(ref)
    ids = {d.doc_id: n for n, d in enumerate(docs)}
    tokens = [lm.encode(LEAD + d.text) for d in docs]
    score_candidates(BatchedScorer(lm), tokens, [ids[c.doc_id] for c in new], new,
                     {c.tool: AnnotationSettings(tau_f=1.0) for c in new})
    delta = np.abs([x - y for a, b in zip(ref, new) for x, y in zip((a.L_eps, a.L_call_noresult, a.L_plus),
                                                                    (b.L_eps, b.L_call_noresult, b.L_plus))])
    flips = {str(t): decision_flips([c.score for c in ref], [c.score for c in new], t, margin) for t in (0.5, 1.0, 2.0)}
    q = (lambda x: round(float(np.quantile(delta, x)), 4)) if len(delta) else (lambda x: None)
    return {"candidates": len(ref), "abs_dL_median": q(0.5), "abs_dL_p90": q(0.9), "abs_dL_p99": q(0.99),
            "abs_dL_max": q(1.0), "margin": margin,
            "flips_and_outside_margin_at_tau_f": flips}


def agreement(ref, cands) -> dict:
    """Whether a run proposed the same calls and made the same decisions as the first one, and
    how far its losses are (engines with other thread counts differ in float round-off only)."""
    key = lambda c: (c.doc_id, c.tool, c.position, c.sample_index, c.sample, c.status, c.kept)  # noqa: E731
    same = len(ref) == len(cands) and all(key(a) == key(b) for a, b in zip(ref, cands))
    diff = max((abs(x - y) for a, b in zip(ref, cands) for x, y in zip((a.L_eps, a.L_call_noresult, a.L_plus),
                                                                      (b.L_eps, b.L_call_noresult, b.L_plus))
                if x is not None and y is not None), default=0.0) if same else None
    return {"same_calls_and_decisions": same, "max_abs_loss_diff": diff}


def print_table(rows: list[dict]) -> None:
    cols = list(rows[0])
    print("  ".join(f"{c:>20}" for c in cols), file=sys.stderr)
    for r in rows:
        print("  ".join(f"{str(r[c]):>20}" for c in cols), file=sys.stderr)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--sampler-model", default="")
    p.add_argument("--tool", default="Calculator")
    p.add_argument("--docs", type=int, default=6, help="documents (GSM8K for the Calculator, else wiki)")
    p.add_argument("--k", type=int, default=None, help="positions per document (default: the tool's own)")
    p.add_argument("--m", type=int, default=None, help="samples per position (default: the tool's own)")
    p.add_argument("--tau-s", type=float, default=None, help="position threshold (default: the tool's own)")
    p.add_argument("--max-new-tokens", type=int, default=24)
    p.add_argument("--naive-limit", type=int, default=400, help="candidates compared against the naive reference")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--matmul-n", type=int, default=2048, help="roofline matmul size (smaller where bf16 is emulated)")
    p.add_argument("--json", default="", help="also write the report here")
    p.add_argument("--engines", action="store_true", help="instead: run `annotate` with every engine/backend "
                                                            "installed (local, ray, vllm) on the same corpus")
    p.add_argument("--from-run", default="", help="compare the filter on the candidates of this annotate output "
                                                   "folder instead of running the stages")
    p.add_argument("--dtypes", default="", help="instead: annotate in each of these dtypes (e.g. fp32,bf16), "
                                                 "side by side, documents/hour/tool and scorer agreement")
    p.add_argument("--margin", type=float, default=0.15, help="--dtypes: a decision may flip within this of τf")
    p.add_argument("--before-after", action="store_true", help="instead: the pipeline's default annotation of "
                                                                 "--docs windows before this project's speed work "
                                                                 "(fp32, old sampler) and after it, side by side")
    p.add_argument("--after-dtype", default="auto", help="--before-after: the after side's --dtype")
    args = p.parse_args(argv)

    import torch

    from toolformer_kit.annotate.sources import SOURCES
    from toolformer_kit.annotate.config import tool_settings
    from toolformer_kit.lm.base import load_lm, native_bf16
    from toolformer_kit.tools import get_tool
    import random

    roofs = rooflines(args.matmul_n)
    roof = roofs["fp32"]
    machine = {"torch_threads": torch.get_num_threads(), "fp32_matmul_gflops": round(roof, 1),
               "bf16_matmul_gflops": round(roofs["bf16"], 1), "hardware_bf16": native_bf16(),
               "load_average": os.getloadavg()}
    if args.before_after:
        report = {"machine": machine, "before_after": before_after_table(args, get_tool(args.tool), roofs)}
        return _emit(report, args.json)
    if args.dtypes:
        tool = get_tool(args.tool)
        docs = SOURCES[_source(args.tool)](args.docs, random.Random(f"bench:{args.seed}"))
        report = {"machine": machine, "by_dtype": dtype_table(args, docs, tool)}
        print_table(report["by_dtype"]["rows"])
        return _emit(report, args.json)
    lm = load_lm(args.model, device="cpu")
    if args.from_run:
        docs, cands, cfg = load_run(args.from_run, lm)
        report = {"machine": machine, "run": args.from_run, "model": cfg.model, "sampler": cfg.sampler_model,
                  "filter_vs_naive": compare_filter(lm, docs, cands, args.naive_limit)}
        return _emit(report, args.json)
    sampler = load_lm(args.sampler_model, device="cpu") if args.sampler_model else lm
    tool = get_tool(args.tool)
    docs = SOURCES[_source(args.tool)](args.docs, random.Random(f"bench:{args.seed}"))
    if args.engines:
        report = {"machine": machine, "throughput": engine_table(args, docs, tool)}
        print_table(report["throughput"]["rows"])
        return _emit(report, args.json)
    annot, cands, stats, wall = run_stages(args, lm, sampler, tool, docs)
    report = {
        "machine": machine,
        "setup": {"model": args.model, "sampler": args.sampler_model or args.model, "tool": args.tool,
                  "documents": len(docs), **vars(tool_settings(annot.cfg, tool))},
        "stages": _both_roofs(stage_table(args, lm, sampler, tool, docs, annot, cands, stats, roof), roofs),
        "candidates": len(cands), "scored": sum(c.score is not None for c in cands),
        "pipeline_seconds": round(wall, 2),
        "filter_vs_naive": compare_filter(lm, docs, cands, args.naive_limit),
    }
    return _emit(report, args.json)


def _both_roofs(stages: dict, roofs: dict) -> dict:
    """Add each stage's share of the bf16 roofline next to the fp32 one."""
    for row in stages.values():
        if "useful_gflops" in row:
            row["roofline_share_bf16"] = round(row["useful_gflops"] / roofs["bf16"], 3)
    return stages


def _source(tool: str) -> str:
    return "gsm8k" if tool == "Calculator" else ("changelog" if tool == "Calendar" else "wiki")


def _emit(report: dict, path: str) -> int:
    text = json.dumps(report, indent=1)
    print(text)
    if path:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
