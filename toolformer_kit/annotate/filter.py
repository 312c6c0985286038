"""Step 4 of annotation: keep a call only if its result makes the next tokens easier to predict.

The paper's loss at position i for a prefix z (nothing, the call without its result, or the call
with its result) is L_i(z) = −Σ_{j≥i} w_{j−i} · log p(x_j | z, x_1…x_{j−1}) with
w̃_t = max(0, 1 − 0.2t) and w = w̃ / Σw̃. Σw̃ = 3 over the five non-zero weights, so only x_i…x_{i+4}
count. **Near the end of a text** the window is cut and the missing terms are simply absent: the
weights keep their full-window normalisation (1/3, 0.8/3, 0.6/3 with three tokens left), exactly as
the paper's formula reads and as its worked example computes. Renormalising over what exists would
instead scale both losses, and so the score, up near the end and favour calls placed there.

**The call is a prefix, not an insertion.** z is placed before the whole document:
``<start> [Tool(input) -> result] x_1 x_2 …`` where ``<start>`` is the model's BOS token, or its
end-of-text token for models without one (SmolLM2, Qwen), so x_1 is scored after a document
boundary as in pre-training. The separator between the call and x_1 is one space: the document's
tokens are those of ``" " + doc`` (see :mod:`.positions`), the same ids whatever z is, so position i
means the same token in all three conditions.

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
from typing import Sequence

import numpy as np

from ..calls import ToolCall, format_call
from .records import Candidate

log = logging.getLogger(__name__)

WINDOW = 5
_RAW = np.array([max(0.0, 1.0 - 0.2 * t) for t in range(WINDOW)])


def weights(n: int) -> np.ndarray:
    """w_0 … w_{min(n, 5)−1} for a window with ``n`` tokens left in the text.

    >>> [round(float(w), 4) for w in weights(3)]
    [0.3333, 0.2667, 0.2]
    >>> len(weights(9)), round(float(weights(9).sum()), 6)
    (5, 1.0)
    """
    return _RAW[: max(0, min(n, WINDOW))] / _RAW.sum()


def weighted_loss(logprobs: Sequence[float], w: np.ndarray) -> float:
    """−Σ w_t · log p_t over the tokens both ``logprobs`` and ``w`` cover.

    >>> round(weighted_loss(np.log([0.02, 0.30, 0.50]), weights(3)), 3)
    1.764
    """
    n = min(len(logprobs), len(w))
    return float(-np.dot(np.asarray(logprobs[:n], dtype=np.float64), w[:n]))


def is_kept(score: float | None, tau_f: float, call_cost: float = 0.0) -> bool:
    """The one "kept" rule: a scored call whose loss reduction L⁻ − L⁺ reaches τf plus its cost λ
    (nats; 0 is the paper's rule). The filter decides with it, and the summary's, the inspector's
    and the studies' counts at other τf or λ use it too.

    Why a cost: the loss gain alone ignores that a call takes time (a search, a model), so a call
    that helps by a hair is kept as readily as one that helps a lot.

    >>> is_kept(1.0, 1.0), is_kept(0.99, 1.0), is_kept(None, 0.0), is_kept(1.2, 1.0, call_cost=0.5)
    (True, False, False, False)
    """
    return score is not None and bool(score >= tau_f + call_cost)


def filter_scores(l_eps: float, l_call_noresult: float, l_plus: float, tau_f: float,
                  call_cost: float = 0.0) -> tuple[float, float, bool]:
    """(L⁻, L⁻ − L⁺, kept) with L⁻ = min(L_i(ε), L_i(e(c, ε))) and kept iff L⁻ − L⁺ ≥ τf + λ.

    >>> tuple(round(x, 3) for x in filter_scores(1.764, 1.629, 0.291, 1.0)[:2]), filter_scores(1.764, 1.629, 0.291, 1.0)[2]
    ((1.629, 1.338), True)
    >>> filter_scores(1.764, 1.629, 0.291, 1.0, call_cost=0.5)[2]  # a call worth 1.34 nats, priced at 0.5
    False
    """
    l_minus = min(l_eps, l_call_noresult)
    score = l_minus - l_plus
    return l_minus, score, is_kept(score, tau_f, call_cost)


def decision_flips(ref_scores: Sequence[float], new_scores: Sequence[float], tau_f: float,
                   margin: float) -> tuple[int, int]:
    """(kept/rejected decisions that differ, those of them outside the margin) between two scorings
    of the same candidates, e.g. fp32 and bf16. A flip counts as *inside* the margin when the
    reference score lies within ``margin`` of τf: round-off of that size may decide either way.

    >>> decision_flips([0.95, 1.2, 3.0, 0.1], [1.05, 0.9, 3.1, 0.2], tau_f=1.0, margin=0.1)
    (2, 1)
    """
    flips = outside = 0
    for a, b in zip(ref_scores, new_scores, strict=True):
        if (a >= tau_f) != (b >= tau_f):
            flips += 1
            outside += abs(a - tau_f) > margin
    return flips, outside


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


def _losses(scorer: BatchedScorer, docs, pairs, kinds: Sequence[str]) -> dict:
    """{(doc, kind, key, position): L} for the (candidate, doc) ``pairs`` and prefix ``kinds``
    (eps: no call, bare: e(c, ε), plus: e(c, r)), each distinct prefix scored once."""
    plan, lm, wanted = _Plan(), scorer.lm, []
    for c, d in pairs:
        i = c.score_position
        for kind in kinds:
            key, prefix = {"eps": (None, ()),
                           "bare": ((c.tool, c.input), lambda: call_prefix(lm, ToolCall(c.tool, c.input or "", ""))),
                           "plus": ((c.tool, c.input, c.result), lambda: call_prefix(lm, c.call))}[kind]
            plan.add(d, kind, key, prefix() if callable(prefix) else prefix, i)
            wanted.append((d, kind, key, i))
    found = scorer.losses(docs, plan.requests)
    return {(d, kind, key, i): found[plan.index[(d, kind, key)]][i] for d, kind, key, i in wanted}


def score_candidates(scorer: BatchedScorer, docs: Sequence[Sequence[int]], doc_of: Sequence[int],
                     candidates: Sequence[Candidate], tau_f: dict[str, float],
                     call_cost: dict[str, float] | None = None, floor: float | None = None) -> None:
    """Fill L_eps, L_call_noresult, L_plus, L_minus, score and kept of every scorable candidate
    (kept iff score ≥ τf + λ of its tool; λ absent = 0).

    ``doc_of[n]`` is the index in ``docs`` of candidate n's document; its ``score_position`` must
    be set. Candidates that are not scorable (no parse, no result) are left untouched. ``floor``:
    see the module's "score floor" (None: every loss is computed).
    """
    pairs = [(c, d) for c, d in zip(candidates, doc_of) if c.scorable]
    cost = call_cost or {}
    if floor is None:
        found = _losses(scorer, docs, pairs, ("eps", "bare", "plus"))
        above = pairs
    else:
        found = _losses(scorer, docs, pairs, ("eps", "plus"))
        above = [(c, d) for c, d in pairs if _bound(found, c, d) >= floor]
        found.update(_losses(scorer, docs, above, ("bare",)))
    for c, d in pairs:
        i = c.score_position
        c.L_eps = found[(d, "eps", None, i)]
        c.L_plus = found[(d, "plus", (c.tool, c.input, c.result), i)]
        c.L_call_noresult = found.get((d, "bare", (c.tool, c.input), i))
        bare = c.L_eps if c.L_call_noresult is None else c.L_call_noresult  # the bound, below the floor
        c.L_minus, c.score, c.kept = filter_scores(c.L_eps, bare, c.L_plus, tau_f[c.tool], cost.get(c.tool, 0.0))


def _bound(found: dict, c: Candidate, d: int) -> float:
    """L_i(ε) − L⁺: the most the score can be, whatever L_i(e(c, ε)) is."""
    i = c.score_position
    return found[(d, "eps", None, i)] - found[(d, "plus", (c.tool, c.input, c.result), i)]


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
