"""One shard through every stage, for every tool: the glue between the pure stage functions.

Kept apart from :mod:`.runner` (files, resumption, progress) so that it can be driven in tests by
fake models and tools, and so that what a shard computes depends on nothing but its documents and
the settings — the property that makes a resumed run write exactly what an uninterrupted one does.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

from ..lm.base import SamplingConfig
from ..tools.wikisearch import excluding_document
from . import records as R
from .config import AnnotateConfig, tool_settings
from .document import Document
from .execute import Executor
from .scoring import BatchedScorer, score_candidates
from .positions import LEAD, token_at
from .hooks import hooks
from .sample import SampleStats, document_positions, sample_calls

log = logging.getLogger(__name__)


@dataclass
class ShardStats:
    """Counts and timings of one shard; summed over shards for the run summary."""

    counts: dict = field(default_factory=dict)  # tool → Counter of events
    seconds: Counter = field(default_factory=Counter)  # stage → seconds
    tokens: Counter = field(default_factory=Counter)  # stage → tokens through a model

    def add(self, tool: str, key: str, n: int = 1) -> None:
        self.counts.setdefault(tool, Counter())[key] += n

    def to_dict(self) -> dict:
        return {"counts": {t: dict(c) for t, c in self.counts.items()},
                "seconds": dict(self.seconds), "tokens": dict(self.tokens)}


def doc_tool(tool, doc: Document, exclude_self: bool = True):
    """The tool object that executes calls in ``doc``, or None if the tool cannot serve it.

    A tool with a ``bind`` hook is bound by it (the Calendar to the document's own date,
    :mod:`.hooks`). Any other tool never returns the document itself (``exclude_self``): annotating
    Wikipedia text with an index of the same articles would otherwise reward copying the text back
    (see :class:`~toolformer_kit.tools.wikisearch.NotTheDocument`).
    """
    bind = hooks(tool.name).bind
    if bind is not None:
        return bind(tool, doc)
    if exclude_self:
        return excluding_document(tool, doc.text, str(doc.meta.get("title") or ""))
    return tool


def eligible(tool, docs: Sequence[Document], cfg: AnnotateConfig, stats: ShardStats) -> list[tuple[Document, object]]:
    """(document, executing tool) pairs that pass the tool's pre-filter."""
    out = []
    for d in docs:
        runner = doc_tool(tool, d, cfg.wiki_exclude_self)
        if runner is None:
            stats.add(tool.name, "skipped_no_date")
            continue
        keep = hooks(tool.name).keep
        if cfg.prefilter and keep is not None and not keep(d, cfg):
            stats.add(tool.name, "skipped_prefilter")
            continue
        out.append((d, runner))
    stats.add(tool.name, "documents", len(out))
    return out


class ShardAnnotator:
    """Holds the models, scorer and executor for a run; :meth:`run` annotates one shard.
    ``settings`` (tool name → :class:`~toolformer_kit.tools.base.AnnotationSettings`) is resolved
    from ``cfg`` when not given."""

    def __init__(self, cfg: AnnotateConfig, lm, tools: Sequence, sampler=None, executor: Executor | None = None,
                 settings: dict | None = None):
        self.cfg, self.lm, self.tools = cfg, lm, list(tools)
        self.settings = settings if settings is not None else {t.name: tool_settings(cfg, t) for t in self.tools}
        self.sampler = sampler if sampler is not None else lm
        self.scorer = BatchedScorer(lm)
        self.executor = executor or Executor(cfg.tool_timeout, cfg.tool_cache or None)
        self.sampling = SamplingConfig(max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature,
                                       top_k=cfg.top_k, top_p=cfg.top_p, seed=cfg.seed)

    def run(self, docs: Sequence[Document]) -> tuple[list[R.Candidate], ShardStats]:
        """Positions, sampling and execution tool by tool; then one scoring pass for all tools, so
        that a document's no-call pass L_i(ε) is computed once and shared by every tool."""
        stats = ShardStats()
        out: list[R.Candidate] = []
        tokens: dict[str, list[int]] = {}
        for tool in self.tools:
            out += self._tool(tool, docs, stats, tokens)
        self._score(out, docs, tokens, stats)
        for c in out:
            stats.add(c.tool, f"status_{c.status}")
            stats.add(c.tool, "scored", int(c.score is not None))
            stats.add(c.tool, "kept", int(c.kept))
        return out, stats

    def _tool(self, tool, docs, stats: ShardStats, tokens: dict) -> list[R.Candidate]:
        pairs = eligible(tool, docs, self.cfg, stats)
        if not pairs:
            return []
        s = self.settings[tool.name]
        texts = [d.text for d, _ in pairs]
        t0 = time.perf_counter()
        positions = document_positions(self.sampler, tool, texts)
        stats.seconds["positions"] += time.perf_counter() - t0
        # Tokens run per document: "Input: x / Output:" and x itself (the prompt's cache is shared).
        stats.tokens["positions"] += sum(len(p.token_ids) + len(self.sampler.encode(tool.prompt_context(t)))
                                         for p, t in zip(positions, texts))
        sstats = SampleStats()
        cands = sample_calls(self.sampler, tool, [d.doc_id for d, _ in pairs], texts, positions,
                             s.tau_s, s.k, s.m, self.sampling, sstats, [d.context_chars for d, _ in pairs],
                             self.cfg.keep_calls)
        stats.seconds["sampling"] += sstats.seconds
        stats.tokens["sampling_prefix"] += sstats.prompt_tokens
        stats.tokens["sampling_new"] += sstats.new_tokens
        by_id = {d.doc_id: (d, runner) for d, runner in pairs}
        leaks = hooks(tool.name).leaks
        if leaks is not None:
            for c in cands:
                if c.status == R.OK and leaks(by_id[c.doc_id][0].text, c.char_offset, c.input or ""):
                    c.status = R.LEAK
        before = self.executor.stats.seconds
        self.executor.run(cands, lambda c: by_id[c.doc_id][1])
        stats.seconds["execution"] += self.executor.stats.seconds - before
        if self.sampler is self.lm:  # the scorer reads the very tokens positions were taken in
            for (d, _), p in zip(pairs, positions):
                tokens[d.doc_id] = list(p.token_ids)
        stats.add(tool.name, "positions", len({(c.doc_id, c.position) for c in cands}))
        stats.add(tool.name, "samples", len(cands))
        return cands

    def _score(self, cands, docs, tokens: dict, stats: ShardStats) -> None:
        """Score in the scoring model's own tokenization of the same ``LEAD + text``, each tool's
        calls against its resolved settings (τf, λ)."""
        t0 = time.perf_counter()
        ids = sorted({c.doc_id for c in cands}, key=[d.doc_id for d in docs].index)
        index = {doc_id: n for n, doc_id in enumerate(ids)}
        if self.sampler is self.lm:
            seqs = [tokens[i] for i in ids]
            for c in cands:
                c.score_position = c.position
        else:
            text = {d.doc_id: d.text for d in docs}
            encoded = [self.lm.encode_with_offsets(LEAD + text[i]) for i in ids]
            seqs = [e[0] for e in encoded]
            for c in cands:
                c.score_position = token_at(encoded[index[c.doc_id]][1], c.char_offset)
                if c.score_position is None and c.status == R.OK:
                    c.status, c.error = R.UNPARSABLE, "the call site is not a token start for the scorer"
        before = self.scorer.stats.body_tokens
        score_candidates(self.scorer, seqs, [index[c.doc_id] for c in cands], cands, self.settings,
                         floor=self.cfg.score_floor)
        stats.tokens["scoring"] += self.scorer.stats.body_tokens - before
        stats.seconds["scoring"] += time.perf_counter() - t0
