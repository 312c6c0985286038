"""Step 1 of annotation: where might a call go?

p_i = P(" [" | P(x), x_1…x_{i−1}) comes from one forward pass per document
(:meth:`~toolformer_kit.lm.LanguageModel.call_start_logprobs`, which shares the tool prompt's KV
cache across documents). The text the model re-writes after ``Output:`` is the document with one
leading space, so its first token is the natural mid-sentence token (" The", not "The") and every
position i — including the very first — is "just before a word". Token offsets therefore count
that space, and :func:`char_offset` maps them back to the document.
"""

from __future__ import annotations

import numpy as np

LEAD = " "  # prepended to a document wherever the model reads it as the text to annotate


def select_positions(probs, tau_s: float, k: int) -> list[int]:
    """I = {i | p_i > τs}, at most the k most probable, returned in text order.

    Ties in probability go to the earlier position, so the choice is deterministic.

    >>> select_positions([0.01, 0.5, 0.2, 0.5, 0.04], tau_s=0.05, k=2)
    [1, 3]
    >>> select_positions([0.01, 0.5, 0.2], tau_s=0.0, k=5)
    [0, 1, 2]
    >>> select_positions([0.01, 0.02], tau_s=0.05, k=5)
    []
    """
    p = np.asarray(probs, dtype=np.float64)
    if k <= 0 or p.size == 0:
        return []
    above = np.flatnonzero(p > tau_s)
    order = above[np.lexsort((above, -p[above]))]  # by p descending, then index ascending
    return sorted(int(i) for i in order[:k])


def char_offset(token_start: int) -> int:
    """Where a call before a token goes in the document, given the token's start in LEAD + doc.

    The token " 5" of " It costs 5" starts at the space (index 9 of the led text, 8 of the
    document), and :func:`toolformer_kit.calls.insert_call` expects exactly that space.

    >>> char_offset(9), char_offset(0)
    (8, 0)
    """
    return max(token_start - len(LEAD), 0)


def token_at(offsets: list[int], doc_offset: int) -> int | None:
    """The index of the first token starting at or after ``doc_offset`` (a document offset).

    Used to carry a position from the sampler's tokenization to the scorer's; None if the offset
    lies past the last token.

    >>> token_at([0, 3, 6, 9], 5), token_at([0, 3, 6, 9], 0), token_at([0, 3], 9)
    (2, 0, None)
    """
    for i, start in enumerate(offsets):
        if char_offset(start) >= doc_offset:
            return i
    return None
