"""The batched scorer behind the filter (:mod:`.filter`): the three losses of every candidate,
computed with as few model passes as the method allows.

**What is computed.** One no-call pass per document gives L_i(ε) for all its positions (and all
tools); each
distinct z (e(c, ε) per distinct call, e(c, r) per distinct call and result) is scored once for all
positions where it was sampled; a sequence is cut after the last token a weight needs
(max i + 4); the output head runs only on the rows a weight needs; and all prefixes of a batch of
documents go through the model together, grouped by similar length (:func:`length_groups`) under
the LM's token budget.

**A score floor** (optional, ``floor``): score = min(L_i(ε), L_i(e(c, ε))) − L⁺ ≤ L_i(ε) − L⁺, so a
call with L_i(ε) − L⁺ below the floor cannot reach it whatever L_i(e(c, ε)) is. Where every
decision that will ever be taken is at τf ≥ floor (a bank that keeps only scores ≥ 0 and rebuilds
C* at τf ≥ 0), e(c, ε) is scored only for the calls above the bound: L_call_noresult stays None on
the others and ``score`` holds the bound (still below the floor). Every decision at τf ≥ floor is
the one the full computation takes; only the values of scores below the floor change.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from ..calls import ToolCall, format_call
from ..tools.base import AnnotationSettings
from .filter import WINDOW, filter_scores, weighted_loss, weights
from .records import Candidate

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Request:
    """Score prefix ``prefix`` (token ids of z) before document ``doc`` at ``positions``."""

    doc: int
    prefix: tuple[int, ...]
    positions: tuple[int, ...]


@dataclass
class ScoreStats:
    """What the scorer computed, for throughput and useful-FLOP accounting."""

    sequences: int = 0
    body_tokens: int = 0  # real (unpadded) tokens through the transformer body
    padded_tokens: int = 0  # batch width × rows, what was actually run
    head_rows: int = 0  # rows through the output head
    seconds: float = 0.0


def length_groups(lengths: Sequence[int], budget: int, max_rows: int, slack: float = 0.8) -> list[list[int]]:
    """Indices in batches of similar length, longest first.

    Cut sequences vary a lot in length (a call near the start of a text needs a few tokens, one
    near the end all of them), so a batch also ends where the next sequence is shorter than
    ``slack`` times the batch's longest: padding stays under ~20 % instead of doubling the work.

    >>> length_groups([100, 10, 95, 12, 50], budget=1000, max_rows=8)
    [[0, 2], [4], [3, 1]]
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    groups: list[list[int]] = []
    for i in order:
        cur = groups[-1] if groups else None
        if (cur is None or len(cur) >= max_rows or lengths[cur[0]] * (len(cur) + 1) > budget
                or lengths[i] < slack * lengths[cur[0]]):
            groups.append([i])
        else:
            cur.append(i)
    return groups


def document_start(lm) -> list[int]:
    """Token(s) that mark a document start, beyond what the LM adds itself (its BOS).

    Models without a BOS get their end-of-text token, the boundary they saw in pre-training.
    """
    if getattr(lm, "bos_ids", None):
        return []
    tok = getattr(lm, "tokenizer", None)
    eos = getattr(tok, "eos_token_id", None)
    return [int(eos)] if eos is not None else lm.encode("\n")


class BatchedScorer:
    """L_i(z) for many (document, prefix, positions) requests in few batched passes."""

    def __init__(self, lm):
        self.lm = lm
        self.start = document_start(lm)
        self.stats = ScoreStats()
        self._fast = all(hasattr(lm, a) for a in ("_hidden", "_logprob_rows", "batch_tokens", "max_batch", "bos_ids"))

    def losses(self, docs: Sequence[Sequence[int]], requests: Sequence[Request]) -> list[dict[int, float]]:
        """For each request, {i: L_i(prefix)}; ``docs`` holds the document token ids."""

        t0 = time.perf_counter()
        rows = [self._rows(docs[r.doc], r.positions) for r in requests]
        heads = [list(self.start) + list(r.prefix) for r in requests]
        conts = [list(docs[r.doc][: (max(rs) + 1 if rs else 0)]) for r, rs in zip(requests, rows)]
        lps = self._fast_logprobs(heads, conts, rows) if self._fast else self._slow_logprobs(heads, conts, rows)
        out = []
        for r, lp in zip(requests, lps):
            n = len(docs[r.doc])
            out.append({i: weighted_loss([lp[j] for j in range(i, min(i + WINDOW, n))], weights(n - i))
                        for i in r.positions})
        self.stats.seconds += time.perf_counter() - t0
        return out

    @staticmethod
    def _rows(doc: Sequence[int], positions: Sequence[int]) -> list[int]:
        """Document token indices whose log-probability some weight needs."""
        need = set()
        for i in positions:
            if not 0 <= i < len(doc):
                raise ValueError(f"position {i} is outside a document of {len(doc)} tokens")
            need.update(range(i, min(i + WINDOW, len(doc))))
        return sorted(need)

    def _fast_logprobs(self, heads, conts, rows) -> list[dict[int, float]]:
        """Through the HF backend's body + row-wise head: the head runs only on needed rows."""
        import torch  # lazy: heavy

        lm = self.lm
        seqs = [list(lm.bos_ids) + h + c for h, c in zip(heads, conts)]
        cuts = [len(lm.bos_ids) + len(h) for h in heads]
        out: list[dict[int, float]] = [{} for _ in seqs]
        for group in length_groups([len(s) for s in seqs], lm.batch_tokens, lm.max_batch):
            width = max(len(seqs[i]) for i in group)
            for i in group:
                lm._check_length(len(seqs[i]))
            with torch.no_grad():
                hidden = lm._hidden([seqs[i] for i in group])
                picked, targets, spans = [], [], []
                for b, i in enumerate(group):
                    idx = torch.tensor([cuts[i] + j - 1 for j in rows[i]], device=hidden.device)
                    picked.append(hidden[b].index_select(0, idx))
                    targets += [conts[i][j] for j in rows[i]]
                    spans.append(len(rows[i]))
                lp = lm._logprob_rows(torch.cat(picked), torch.tensor(targets, device=hidden.device))
            for i, chunk in zip(group, torch.split(lp, spans)):
                out[i] = dict(zip(rows[i], chunk.cpu().double().tolist()))
            self.stats.sequences += len(group)
            self.stats.body_tokens += sum(len(seqs[i]) for i in group)
            self.stats.padded_tokens += width * len(group)
            self.stats.head_rows += sum(spans)
        return out

    def _slow_logprobs(self, heads, conts, rows) -> list[dict[int, float]]:
        """Any :class:`~toolformer_kit.lm.base.LanguageModel`: through ``token_logprobs``."""
        lps = self.lm.token_logprobs(heads, conts)
        self.stats.sequences += len(heads)
        self.stats.body_tokens += sum(len(h) + len(c) for h, c in zip(heads, conts))
        self.stats.padded_tokens = self.stats.body_tokens
        self.stats.head_rows += sum(len(c) for c in conts)
        return [{j: float(lp[j]) for j in rs} for lp, rs in zip(lps, rows)]


def call_prefix(lm, call: ToolCall) -> tuple[int, ...]:
    """Token ids of z = e(c) / e(c, ε) / e(c, r) as a document prefix (no leading space)."""
    return tuple(lm.encode(format_call(call, leading_space=False)))


@dataclass
class _Plan:
    requests: list[Request] = field(default_factory=list)
    index: dict = field(default_factory=dict)  # (doc, kind, key) → request number

    def add(self, doc: int, kind: str, key, prefix: tuple[int, ...], position: int) -> None:
        slot = (doc, kind, key)
        if slot not in self.index:
            self.index[slot] = len(self.requests)
            self.requests.append(Request(doc, prefix, ()))
        n = self.index[slot]
        req = self.requests[n]
        if position not in req.positions:
            self.requests[n] = Request(req.doc, req.prefix, req.positions + (position,))


KINDS = ("eps", "bare", "plus")  # the three prefixes z: nothing, e(c, ε), e(c, r)


def _key(c: Candidate, kind: str):
    """What makes two candidates' prefixes of ``kind`` the same z."""
    return None if kind == "eps" else (c.tool, c.input) if kind == "bare" else (c.tool, c.input, c.result)


def _prefix(lm, c: Candidate, kind: str) -> tuple[int, ...]:
    if kind == "eps":
        return ()
    return call_prefix(lm, ToolCall(c.tool, c.input or "", "") if kind == "bare" else c.call)


def _losses(scorer: BatchedScorer, docs, pairs, kinds: Sequence[str]) -> dict:
    """{(doc, kind, key, position): L} for the (candidate, doc) ``pairs`` and prefix ``kinds``,
    each distinct prefix tokenised once and scored once per document."""
    plan, prefixes, wanted = _Plan(), {}, []
    for c, d in pairs:
        i = c.score_position
        for kind in kinds:
            key = _key(c, kind)
            if (kind, key) not in prefixes:
                prefixes[(kind, key)] = _prefix(scorer.lm, c, kind)
            plan.add(d, kind, key, prefixes[(kind, key)], i)
            wanted.append((d, kind, key, i))
    found = scorer.losses(docs, plan.requests)
    return {(d, kind, key, i): found[plan.index[(d, kind, key)]][i] for d, kind, key, i in wanted}


def score_candidates(scorer: BatchedScorer, docs: Sequence[Sequence[int]], doc_of: Sequence[int],
                     candidates: Sequence[Candidate], settings: Mapping[str, AnnotationSettings],
                     floor: float | None = None) -> None:
    """Fill L_eps, L_call_noresult, L_plus, L_minus, score and kept of every scorable candidate
    (kept iff score ≥ τf + λ of its tool's ``settings``: the record the resolver made, one per
    tool, :mod:`~toolformer_kit.annotate.settings`).

    ``doc_of[n]`` is the index in ``docs`` of candidate n's document; its ``score_position`` must
    be set. Candidates that are not scorable (no parse, no result) are left untouched. ``floor``:
    see the module's "score floor" (None: every loss is computed).
    """
    pairs = [(c, d) for c, d in zip(candidates, doc_of) if c.scorable]
    if floor is None:
        found = _losses(scorer, docs, pairs, KINDS)
        above = pairs
    else:
        found = _losses(scorer, docs, pairs, ("eps", "plus"))
        above = [(c, d) for c, d in pairs if _bound(found, c, d) >= floor]
        found.update(_losses(scorer, docs, above, ("bare",)))
    for c, d in pairs:
        i = c.score_position
        c.L_eps = found[(d, "eps", None, i)]
        c.L_plus = found[(d, "plus", _key(c, "plus"), i)]
        c.L_call_noresult = found.get((d, "bare", _key(c, "bare"), i))
        bare = c.L_eps if c.L_call_noresult is None else c.L_call_noresult  # the bound, below the floor
        s = settings[c.tool]
        c.L_minus, c.score, c.kept = filter_scores(c.L_eps, bare, c.L_plus, s.tau_f, s.call_cost)


def _bound(found: dict, c: Candidate, d: int) -> float:
    """L_i(ε) − L⁺: the most the score can be, whatever L_i(e(c, ε)) is."""
    i = c.score_position
    return found[(d, "eps", None, i)] - found[(d, "plus", _key(c, "plus"), i)]


def naive_losses(lm, doc: Sequence[int], call: ToolCall, position: int) -> tuple[float, float, float]:
    """Reference: (L_i(ε), L_i(e(c, ε)), L_i(e(c, r))) for one candidate, each from its own
    unbatched pass over the full document. Slow on purpose; tests and the benchmark compare the
    batched scorer against it."""
    start = document_start(lm)
    w = weights(len(doc) - position)
    out = []
    for prefix in ((), call_prefix(lm, call.with_result("")), call_prefix(lm, call)):
        (lp,) = lm.token_logprobs([start + list(prefix)], [list(doc)])
        out.append(weighted_loss(lp[position: position + WINDOW], w))
    return out[0], out[1], out[2]
