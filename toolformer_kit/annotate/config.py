"""Every setting of ``toolformer annotate``: one dataclass drives the flags and the config file.

Per-tool thresholds default to each tool's own :class:`~toolformer_kit.tools.base.AnnotationSettings`
(the paper's: τs = 0.05, k = 5, m = 5, τf = 1.0; Calculator and MT: 0, 20, 10, 0.5); setting
``tau_s``/``k``/``m``/``tau_f`` here overrides them for every tool, and ``per_tool`` for one tool
(it wins over both). ``call_cost`` (λ, nats) is not the paper's: 0 for every tool unless set.
:mod:`.settings` resolves them, for annotation and for every later reader of a run alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..config import ConfigError, config_field as _f
from ..tools import BUILTIN
from ..tools.base import AnnotationSettings
from .sequential import check_merge
from .settings import parse_per_tool, resolve_run


# Why a separate --sampler-model is reported as a deviation from the paper.
PAPER_MODEL_NOTE = "the paper samples, scores and fine-tunes with one model M (§2)"


@dataclass
class AnnotateConfig:
    model: str = _f("smollm2-135m", "model that scores calls (and is later fine-tuned): embedded name or HF folder")
    sampler_model: str = _f("", "separate model that proposes positions and calls (default: --model)")
    tools: list[str] = _f(list(BUILTIN), "tools to annotate, comma-separated")
    corpus: str = _f("default", "a .jsonl/.txt/.parquet file, a folder of them, or 'default' (embedded corpus)")
    out: str = _f("annotated", "output folder (shards, corpus.jsonl, candidates.jsonl, manifest.json)")
    default_docs: int = _f(16, "embedded corpus: documents per source")
    default_sources: list[str] = _f(["wiki", "mt", "gsm8k", "changelog"], "embedded corpus: sources to mix")
    keep_calls: bool = _f(False, "round r + 1: --corpus is an earlier round's corpus.jsonl, read with its calls kept "
                                 "in the text (new calls only outside them, each marked 'chain' when its input uses "
                                 "an earlier result; texts are not windowed again); not the paper's, which samples "
                                 "every call independently")
    max_docs: int = _f(0, "annotate only the first N documents (0 = all)")
    window_tokens: int = _f(128, "split documents longer than this many tokens into windows")
    window_context: int = _f(32, "tokens of left context before each window after the first (read, never annotated)")
    wiki_exclude_self: bool = _f(True, "WikiSearch never returns the annotated document itself (same title, or "
                                       "a passage sharing 8 consecutive words with it)")
    wiki_corpus: str = _f("", "the corpus WikiSearch and QA search while annotating, JSONL (title, text) or KILT "
                              "(default: the tools' own); a recipe that evaluates held-out facts (wiki-cloze) "
                              "writes the summaries without them here")
    tau_s: Optional[float] = _f(None, "position threshold τs for every tool (default: per tool)")
    k: Optional[int] = _f(None, "at most k positions per document (default: per tool)")
    m: Optional[int] = _f(None, "calls sampled per position (default: per tool)")
    tau_f: Optional[float] = _f(None, "filter threshold τf for every tool (default: per tool)")
    call_cost: float = _f(0.0, "cost λ of a call in nats: keep a call iff L⁻ − L⁺ ≥ τf + λ (0 = the paper's rule)")
    per_tool: list[str] = _f([], "per-tool overrides TOOL.SETTING=VALUE (SETTING: tau_s, k, m, tau_f, call_cost), "
                                 "e.g. Calendar.tau_s=0,WikiSearch.call_cost=0.5")
    score_floor: Optional[float] = _f(None, "skip scoring the call without its result where L(ε) − L⁺ already "
                                             "puts the score below this (decisions at τf ≥ it unchanged; "
                                             "the scores below it are then upper bounds); default: score all")
    report_tau_f: list[float] = _f([0.5, 1.0, 2.0], "thresholds for the kept-counts table in the summary")
    merge: str = _f("independent", "how kept calls join a text: independent (the paper's: each call scored alone) or "
                                   "sequential (a later call is kept only if it still passes the filter with the "
                                   "calls kept before it written in: no repeated calls; not the paper's)")
    max_new_tokens: int = _f(32, "token budget for one sampled call")
    temperature: float = _f(1.0, "sampling temperature (0 = greedy)")
    top_k: int = _f(0, "sample from the top k tokens only (0 = all)")
    top_p: float = _f(1.0, "nucleus sampling mass")
    seed: int = _f(0, "seed for sampling, the Calculator 1%% pre-filter and the per-tool cap")
    prefilter: bool = _f(True, "apply Appendix A's Calculator and MT pre-filters")
    calculator_rate: float = _f(0.01, "share of texts with merely >= 3 numbers kept for the Calculator")
    mt_confidence: float = _f(0.8, "language-ID confidence for a chunk to count (MT pre-filter)")
    cap_per_tool: int = _f(25000, "at most this many texts of C* per tool (seeded subset; 0 = no cap)")
    shard_size: int = _f(8, "documents per output shard (the unit of resumption)")
    tool_timeout: Optional[float] = _f(None, "seconds before a tool call counts as failed, for every tool (default: each tool's own — 60 for MT and QA — else 10)")
    tool_cache: str = _f("", "tool result cache file (default: <out>/tool-cache.sqlite)")
    device: str = _f("", "torch device (default: cuda if available, else cpu)")
    dtype: str = _f("auto", "compute dtype of both models: auto (bf16 on a GPU or a CPU where bf16 is measured faster, "
                    "else fp32), fp32 or bf16")
    parquet: bool = _f(False, "also write C* as corpus.parquet (needs pyarrow)")
    overwrite: bool = _f(False, "discard an existing run in --out instead of resuming it")
    progress: bool = _f(True, "show progress bars")
    backend: str = _f("hf", "LM backend: hf (transformers) or vllm")
    engine: str = _f("local", "local (this process) or ray (Ray Data actors, same output)")
    actors: int = _f(2, "ray engine: actors, each holding its own copy of the models")
    num_gpus_per_actor: float = _f(0.0, "ray engine: GPUs per actor (0 on a CPU machine)")
    cpus_per_actor: float = _f(1.0, "ray engine: CPUs per actor (also its torch threads)")
    ray_address: str = _f("", "ray engine: address of an existing cluster ('auto' on a node of it; empty = local)")

    def __post_init__(self) -> None:
        parse_per_tool(self.per_tool)  # a bad entry fails now, not after the models have loaded
        check_merge(self.merge)
        if self.call_cost < 0:
            raise ConfigError(f"call_cost must be >= 0 nats, got {self.call_cost}; 0 is the paper's rule")


def tool_settings(cfg: AnnotateConfig, tool) -> AnnotationSettings:
    """The tool's settings in this run (:func:`~.settings.resolve_run`: its ``per_tool`` entry, the
    run-wide fields, its own): resolved once per run (:func:`~.build.resolve_tools`), before any
    model loads.

    >>> from toolformer_kit.tools.base import Tool
    >>> t = Tool("Calendar", str, "", [("a", "b")])
    >>> tool_settings(AnnotateConfig(k=3, per_tool=["Calendar.tau_s=0", "QA.k=9"]), t)
    AnnotationSettings(tau_s=0.0, k=3, m=5, tau_f=1.0, call_cost=0.0)
    >>> tool_settings(AnnotateConfig(call_cost=0.5, per_tool=["Calendar.call_cost=2"]), t).call_cost
    2.0
    """
    return resolve_run(tool, vars(cfg))


# Settings added after runs were made, left out of a run's identity at their default so those runs
# still resume (a run made without call_cost was made at λ = 0).
ADDED_AT_DEFAULT = {"call_cost": 0.0, "wiki_corpus": "", "score_floor": None, "keep_calls": False,
                    "merge": "independent"}

# Settings that do not change what a run writes: a resumed run may differ in these.
NON_SEMANTIC = {"out", "overwrite", "progress", "device", "tool_cache", "tool_timeout", "parquet",
                "engine", "actors", "num_gpus_per_actor", "cpus_per_actor", "ray_address"}
