"""Step 1 of annotation: where might a call go?

p_i = P(" [" | P(x), x_1…x_{i−1}) comes from one forward pass per document
(:meth:`~toolformer_kit.lm.base.LanguageModel.call_start_logprobs`, which shares the tool prompt's KV
cache across documents). The text the model re-writes after ``Output:`` is the document with one
leading space, so its first token is the natural mid-sentence token (" The", not "The"). Token
offsets therefore count that space, and :func:`char_offset` maps them back to the document.

**Call sites.** Not every token may hold a call. The embedded tokenizers split " 1050" into " ",
"1", "0", "5", "0", so an unrestricted top-k lands calls inside numbers (``1 [Calculator(…)] 050``)
and stacks two calls at one spot (" " and "1" map to the same place). A call goes only *between
words*: at a token that begins with whitespace and carries the start of the next word, or at a
whitespace-only token directly followed by a word (the " " before "1050"); see
:func:`call_sites`. Two more positions are never sites: the document's first word (a call there
has nothing to condition on), and any word inside a window's left context (``context_chars``,
text kept only so that the window's first calls have real text before them). The top k is taken
over the sites only.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

LEAD = " "  # prepended to a document wherever the model reads it as the text to annotate


def select_positions(probs, tau_s: float, k: int, allowed=None) -> list[int]:
    """I = {i | p_i > τs}, at most the k most probable, returned in text order.

    Ties in probability go to the earlier position, so the choice is deterministic. ``allowed``
    (a boolean mask, e.g. :func:`call_sites`) restricts I before the top k is taken.

    >>> select_positions([0.01, 0.5, 0.2, 0.5, 0.04], tau_s=0.05, k=2)
    [1, 3]
    >>> select_positions([0.01, 0.5, 0.2], tau_s=0.0, k=5)
    [0, 1, 2]
    >>> select_positions([0.01, 0.02], tau_s=0.05, k=5)
    []
    >>> select_positions([0.01, 0.5, 0.2, 0.5], tau_s=0.0, k=2, allowed=[True, False, True, True])
    [2, 3]
    """
    p = np.asarray(probs, dtype=np.float64)
    if k <= 0 or p.size == 0:
        return []
    ok = p > tau_s
    if allowed is not None:
        ok &= np.asarray(allowed, dtype=bool)
    above = np.flatnonzero(ok)
    order = above[np.lexsort((above, -p[above]))]  # by p descending, then index ascending
    return sorted(int(i) for i in order[:k])


def call_sites(offsets: Sequence[int], led: str, context_chars: int = 0) -> np.ndarray:
    """Boolean mask over tokens: may a call go before token i? (see the module docstring)

    ``offsets`` are token starts in ``led`` (``LEAD + document``), tiling it. A site is a token
    whose first character is whitespace and that either holds the next word's first character
    or is all whitespace and followed by a token that starts a word. Its document offset must be
    past the document start and not inside the first ``context_chars`` characters.

    >>> led = " The club has 1050 members."
    >>> toks = [" The", " club", " has", " ", "1", "0", "5", "0", " members", "."]
    >>> offs = [sum(map(len, toks[:i])) for i in range(len(toks))]
    >>> [t for t, ok in zip(toks, call_sites(offs, led)) if ok]
    [' club', ' has', ' ', ' members']
    >>> [t for t, ok in zip(toks, call_sites(offs, led, context_chars=9)) if ok]
    [' ', ' members']
    """
    n = len(offsets)
    out = np.zeros(n, dtype=bool)
    for i, start in enumerate(offsets):
        end = offsets[i + 1] if i + 1 < n else len(led)
        piece = led[start:end]
        if not piece or not piece[0].isspace():
            continue
        if piece.strip():
            starts_word = True
        else:  # whitespace only: a site if the next token begins the word
            starts_word = end < len(led) and not led[end].isspace() and i + 1 < n
        doc_offset = char_offset(start)
        out[i] = starts_word and doc_offset > 0 and doc_offset >= context_chars
    return out


def char_offset(token_start: int) -> int:
    """Where a call before a token goes in the document, given the token's start in LEAD + doc.

    The token " 5" of " It costs 5" starts at the space (index 9 of the led text, 8 of the
    document), and :func:`toolformer_kit.calls.insert_call` expects exactly that space.

    >>> char_offset(9), char_offset(0)
    (8, 0)
    """
    return max(token_start - len(LEAD), 0)


def token_at(offsets: list[int], doc_offset: int) -> int | None:
    """The index of the token that starts exactly at ``doc_offset`` (a document offset).

    Used to carry a position from the sampler's tokenization to the scorer's. None if no scorer
    token starts there: the call site is then not a token boundary for the scorer, and taking the
    next token instead would score a call inside a word.

    >>> token_at([0, 3, 6, 9], 5), token_at([0, 3, 6, 9], 4), token_at([0, 3], 9)
    (2, None, None)
    """
    for i, start in enumerate(offsets):
        if char_offset(start) == doc_offset and (start > 0 or doc_offset == 0):
            return i
        if char_offset(start) > doc_offset:
            return None
    return None
