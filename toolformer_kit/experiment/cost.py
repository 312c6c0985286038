"""What a recipe costs on this kind of machine, before it runs, and how long is left while it runs.

Each stage's cost is a rate measured here (2-core AMD EPYC, AVX2 only, fp32, torch 2.13 CPU) times
the stage's size knob: windows × sampled calls for annotation, steps × sequences × tokens for
training, examples × runs for evaluation; where ``--dtype auto`` runs bf16 (a CPU where bf16 is
measured faster), each stage takes the share of that measured on such a CPU (:data:`BF16_SHARE`).
The estimate is the sizing rationale of the recipes' defaults (each ≤ 90 minutes) and the starting
point of the ETA, which then rescales itself by how fast the finished stages actually ran (on a
shared machine everything runs slower alike).
"""

from __future__ import annotations

import logging
import time
from typing import Mapping, Sequence

from ..annotate.settings import resolve
from ..lm.base import bf16_pays
from ..tools import get_tool

log = logging.getLogger(__name__)

# Seconds on this kind of machine (2 threads, fp32) with nothing else running. Qwen's come from the
# math smoke run (2 documents → 4 windows, k 3, m 2, 2 training steps, 8 SVAMP problems; load
# average ~2, i.e. this job alone): positions 9.9 s / 4 windows, sampling 31.7 s / 24 calls,
# scoring 15.1 s / 15 candidates, a training step of 8 sequences ~35 s (~0.03 s per token), the
# fixed part of a run (load, 3 dev passes, merge, save) ~35 s + the dev passes, evaluation 1.7 s
# per example and setting at batch 8 (measured again at batch 32: 1.7× faster per example).
# SmolLM2's come from the search smoke run and the default pipeline's timed run (LoRA ~0.0045 s
# per token, evaluation ~0.2 s per maths example and setting); see results/README.md ("Sizing").
#   positions:    one annotation window's p_i pass (≤ 128 tokens, the instruction prompt's KV cached)
#   sample:       one sampled call (≤ 32 new tokens, batched)
#   score:        one scored candidate (the filter's L⁻/L⁺ passes; WikiSearch results make it longer)
#   train_token:  one training token, forward + backward with LoRA, in steps of 8 sequences
#   train_fixed:  per run: loading, the dev-perplexity passes, merging and saving
#   eval:         one example in one setting at batch 8, greedy (maths: 24-token answers; QA: 40 + a result)
#   load:         loading one model for evaluation
RATES = {
    "smollm2-135m": {"positions": 0.7, "sample": 0.36, "score": 0.3, "train_token": 0.0045, "train_fixed": 40.0,
                     "eval": {"math": 0.25, "qa": 0.8}, "load": 3.0},
    # Gemma 3 270M: not timed end to end; placed between the two by its forward throughput here (213
    # tokens/s vs SmolLM2's 465 and Qwen's 130: 46 % of the way from SmolLM2's cost to Qwen's).
    "gemma3-270m": {"positions": 1.5, "sample": 0.8, "score": 0.6, "train_token": 0.016, "train_fixed": 77.0,
                    "eval": {"math": 0.9, "qa": 1.8}, "load": 5.0},
    "qwen2.5-coder-0.5b": {"positions": 2.5, "sample": 1.3, "score": 1.0, "train_token": 0.03, "train_fixed": 120.0,
                           "eval": {"math": 1.7, "qa": 3.0}, "load": 8.0},
}
# The rates above are fp32. Where ``--dtype auto`` runs bf16 (lm.base.bf16_pays), each stage
# takes this share of its fp32 estimate: actual / estimated seconds of the two recipes at their
# default sizes on such a machine (2-core AMD EPYC with avx512_bf16, 2026-12-02, alone;
# results/math and results/search). Annotation 152 / 944 s (Qwen), 275 / 1,919 s (SmolLM2): bf16
# and the continuous-batching sampler. LoRA 567 / 1,392 s and 388 / 633 s. Evaluation 2,262 / 3,024 s
# (Qwen, maths) and 600 / 2,315 s (SmolLM2, QA); Gemma's is placed between them, not measured.
BF16_SHARE = {"annotate": 0.15, "train": 0.5,
              "evaluate": {"smollm2-135m": 0.26, "gemma3-270m": 0.5, "qwen2.5-coder-0.5b": 0.75}}
# Windows of ≤ 128 tokens per document, measured on the corpora (SmolLM2's tokenizer): a GSM8K
# problem with its solution is ~2 windows, a Wikipedia lead summary ~1.33.
WINDOWS_PER_DOC = {"gsm8k": 2.0, "wiki": 1.33}
SCORED_SHARE = 0.63  # sampled calls that parse and run, and so are scored (15 of 24 in the math smoke run)
MATH_TASKS = {"svamp", "asdiv", "mawps"}
SMALL_TASKS = {"lama-google-re": 114, "lama-squad": 59,  # examples that pass the LAMA filter on the shared copies
               "wiki-cloze": 252}
# Examples whose gold is in the top 3 passages for the question (the ceiling's flag), on the shared
# copies: what ``eval_subset: retrievable`` evaluates at most (an unlisted task: eval_limit).
RETRIEVABLE = {"lama-trex": 94, "lama-google-re": 5, "lama-squad": 4, "webquestions": 100, "nq": 79,
               "triviaqa": 198, "wiki-cloze": 252, "lama-trex-templates": 635}
EVAL_RUNS = 4  # base, +CC, tool-trained with tools, tool-trained disabled
REFERENCE_RUNS = 2  # of those, base and +CC (skipped without ``references``)
MODEL_LOADS = 3


def eval_speedup(batch: int) -> float:
    """Per-example speed-up of decoding with ``batch`` rows over static batches of 8: a decoding
    step reads every weight once for all its rows, and a finished row's slot takes the next prompt
    (benchmarks/bench_eval.py, Qwen bf16: 1.9× at 32 rows on 32 prompts a task, 2.5× at 128 rows
    on 100; 16 interpolated).

    >>> eval_speedup(8), eval_speedup(16), eval_speedup(32), eval_speedup(128)
    (1.0, 1.35, 1.9, 2.5)
    """
    return 2.5 if batch >= 128 else 1.9 if batch >= 32 else 1.35 if batch >= 16 else 1.0


def _rates(model: str) -> dict:
    """A model's rates; an unmeasured one is priced like the larger embedded model (a guess, logged)."""
    if model not in RATES:
        log.info("no measured rates for %s; estimating with qwen2.5-coder-0.5b's", model)
    return RATES.get(model, RATES["qwen2.5-coder-0.5b"])


def annotate_seconds(cfg, r: Mapping) -> float:
    """Documents × windows × (positions + k·m samples and their scoring), per tool, at the k and m
    annotation will use (:func:`~toolformer_kit.annotate.settings.resolve`)."""
    windows = cfg.docs * WINDOWS_PER_DOC.get(cfg.corpus, 1.5)
    total = 0.0
    for tool in cfg.tools:
        s = resolve(get_tool(tool).settings, every={"k": cfg.k or None, "m": cfg.m or None})
        samples = s.k * s.m
        total += windows * (r["positions"] + samples * (r["sample"] + SCORED_SHARE * r["score"]))
    return total


def estimate(cfg, bf16: bool | None = None) -> dict[str, float]:
    """Seconds per stage for a recipe (an :class:`~.recipe.ExperimentConfig`) on an idle machine;
    ``bf16`` (default: whether ``--dtype auto`` runs bf16 on this CPU) applies
    :data:`BF16_SHARE`.

    >>> from toolformer_kit.experiment.recipe import ExperimentConfig
    >>> cfg = ExperimentConfig(name="t", model="smollm2-135m", docs=10, k=5, m=5, train_steps=10,
    ...                        max_length=100, tasks=["svamp"], eval_limit=100)
    >>> e, b = estimate(cfg, bf16=False), estimate(cfg, bf16=True)
    >>> round(e["annotate"]), round(e["train (tools)"]), round(e["evaluate"])
    (288, 76, 62)
    >>> round(b["annotate"]), round(b["train (tools)"]), round(b["evaluate"])
    (43, 38, 16)
    >>> few = dict(name="t", tasks=["nq"], ceiling=True, eval_subset="retrievable")  # NQ: 79 retrievable
    >>> estimate(ExperimentConfig(eval_limit=500, **few), False)["evaluate"] == estimate(ExperimentConfig(eval_limit=79, **few), False)["evaluate"]
    True
    """
    r = _rates(cfg.model)
    train = cfg.train_steps * cfg.train_batch * cfg.max_length * r["train_token"] + r["train_fixed"]
    sizes = RETRIEVABLE if getattr(cfg, "eval_subset", "all") == "retrievable" else SMALL_TASKS
    examples = [min(cfg.eval_limit, sizes.get(t, cfg.eval_limit)) for t in cfg.tasks]
    per = [r["eval"]["math" if t in MATH_TASKS else "qa"] for t in cfg.tasks]
    runs = EVAL_RUNS + cfg.eval_force_arrow - (0 if cfg.references else REFERENCE_RUNS - getattr(cfg, "base_reference", False))
    evaluate = runs * sum(n * s for n, s in zip(examples, per)) / eval_speedup(cfg.eval_batch) + MODEL_LOADS * r["load"]
    annotate = 0.0 if getattr(cfg, "cstar_dataset", "") else annotate_seconds(cfg, r)  # a dataset is copied
    if bf16_pays() if bf16 is None else bf16:
        annotate *= BF16_SHARE["annotate"]
        train *= BF16_SHARE["train"]
        evaluate *= BF16_SHARE["evaluate"].get(cfg.model, max(BF16_SHARE["evaluate"].values()))
    return {"models": 5.0, "corpus": 5.0, "annotate": annotate, "train (tools)": train,
            "train (+CC)": train if cfg.references else 0.0, "ceiling": 10.0 * cfg.ceiling, "evaluate": evaluate,
            "report": 5.0, **({"publish": 5.0} if getattr(cfg, "publish_model", "") else {})}


def remaining(estimates: Mapping[str, float], done: Mapping[str, float], todo: Sequence[str]) -> float:
    """Seconds left: the estimates of the stages to go, scaled by actual/estimated so far. Only
    stages estimated at a minute or more set the scale: a few seconds of start-up say nothing.

    >>> remaining({"a": 100, "b": 200, "c": 300}, {"a": 200}, ["b", "c"])  # twice as slow as estimated
    1000.0
    >>> remaining({"a": 5, "b": 200}, {"a": 0.1}, ["b"]), remaining({"a": 10, "b": 20}, {}, ["a", "b"])
    (200.0, 30.0)
    """
    counted = [s for s in done if estimates.get(s, 0.0) >= 60]
    spent = sum(done[s] for s in counted)
    planned = sum(estimates.get(s, 0.0) for s in counted)
    scale = spent / planned if planned > 0 and spent > 0 else 1.0
    return scale * sum(estimates.get(s, 0.0) for s in todo)


def clock(seconds: float) -> str:
    """
    >>> clock(59), clock(3725)
    ('59 s', '1 h 02 min')
    """
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class Progress:
    """One log line per stage with the run's ETA; the stages report their own bars inside."""

    def __init__(self, estimates: Mapping[str, float], stages: Sequence[str]):
        self.estimates, self.stages = dict(estimates), list(stages)
        self.done: dict[str, float] = {}
        self.todo = list(stages)
        self.started = time.time()
        log.info("experiment: %d stages, estimated %s on this kind of machine (%s)", len(stages),
                 clock(sum(self.estimates.get(s, 0) for s in stages)),
                 ", ".join(f"{s} {clock(self.estimates.get(s, 0))}" for s in stages))

    def skip(self, stage: str) -> None:
        self.todo.remove(stage)
        log.info("[%d/%d] %s: already done, skipped", self._index(stage), len(self.stages), stage)

    def start(self, stage: str) -> None:
        left = remaining(self.estimates, self.done, self.todo)
        log.info("[%d/%d] %s: about %s; the run ends in about %s (at %s)", self._index(stage), len(self.stages),
                 stage, clock(self.estimates.get(stage, 0)), clock(left),
                 time.strftime("%H:%M", time.localtime(time.time() + left)))

    def finish(self, stage: str, seconds: float) -> None:
        self.todo.remove(stage)
        self.done[stage] = seconds
        log.info("[%d/%d] %s: done in %s", self._index(stage), len(self.stages), stage, clock(seconds))

    def _index(self, stage: str) -> int:
        return self.stages.index(stage) + 1
