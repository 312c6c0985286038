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

The batched computation of these losses (one pass per document for L_i(ε), each distinct prefix
once, the score floor) is :mod:`.scoring`; this module holds the paper's equations only, so they
can be read against the paper line by line.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

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
                   margin: float, call_cost: float = 0.0) -> tuple[int, int]:
    """(kept/rejected decisions that differ, those of them outside the margin) between two scorings
    of the same candidates, e.g. fp32 and bf16, decided by :func:`is_kept` at ``tau_f`` and price
    ``call_cost`` (λ). A flip counts as *inside* the margin when the reference score lies within
    ``margin`` of the threshold τf + λ: round-off of that size may decide either way.

    >>> decision_flips([0.95, 1.2, 3.0, 0.1], [1.05, 0.9, 3.1, 0.2], tau_f=1.0, margin=0.1)
    (2, 1)
    >>> decision_flips([0.95, 1.2, 3.0, 0.1], [1.05, 0.9, 3.1, 0.2], tau_f=1.0, margin=0.1, call_cost=0.15)
    (1, 0)
    """
    flips = outside = 0
    for a, b in zip(ref_scores, new_scores, strict=True):
        if is_kept(a, tau_f, call_cost) != is_kept(b, tau_f, call_cost):
            flips += 1
            outside += abs(a - (tau_f + call_cost)) > margin
    return flips, outside
