"""Appendix A's heuristics: which documents (and calls) are worth a tool's annotation at all.

Why: sampling and scoring cost the same for a text where a tool can never help as for one where
it can, and the paper spends its compute only where help is plausible:

* **Calculator** — a text with ≥ 3 numbers inside a window of 100 tokens where one is the result of
  +, −, × or ÷ applied to two others, or with "=", "equals", "equal to", "total of" or "average
  of" followed by a number. A text that merely has ≥ 3 numbers is kept at a seeded 1 %.
* **MT** — the text is cut into 10-token chunks and each is language-identified; it is kept if some
  non-English chunk (confidence > 0.8, not just numbers or symbols) has English chunks on both
  sides. After sampling, an MT call is dropped when its input appears after the call but not
  before it: that input was copied from text the model saw in ``Input: x`` but has not reached.
* **Calendar** — only documents that carry their own date (handled by the runner).

"Tokens" here are whitespace-separated words: these are cheap text heuristics, independent of any
model's tokenizer.
"""

from __future__ import annotations

import bisect
import hashlib
import logging
import re
from fractions import Fraction
from functools import lru_cache
from itertools import permutations

NUMBER = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")
CUE = re.compile(r"(=|\bequals?\b|\bequal to\b|\btotal of\b|\baverage of\b)\s*\$?\s*-?\d", re.I)
WINDOW_WORDS = 100
MAX_NUMBERS_PER_WINDOW = 40  # partners looked at per number; real texts rarely come near this
MAX_DIGITS = 30  # a longer number is never the sum or product a text shows; Fraction of >4,300 digits raises
log = logging.getLogger(__name__)


def numbers(text: str) -> list[tuple[int, Fraction]]:
    """(word index, value) for each number in ``text``.

    >>> [(i, float(v)) for i, v in numbers("He paid 1,200 dollars and 3.5 more, -2 left")]
    [(2, 1200.0), (5, 3.5), (7, -2.0)]
    """
    out = []
    for idx, word in enumerate(text.split()):
        for m in NUMBER.finditer(word):
            digits = m.group(0).replace(",", "")
            if len(digits) <= MAX_DIGITS:
                out.append((idx, Fraction(digits)))
    return out


def _close(a: Fraction, b: Fraction) -> bool:
    """Equal up to the rounding a text would show (2 decimals, or 0.1 % for large values)."""
    return abs(a - b) <= max(Fraction(1, 100), abs(b) / 1000)


def is_result_of_two(values: list[Fraction]) -> bool:
    """True if some value is a +, −, ×, ÷ of two others (distinct positions).

    >>> is_result_of_two([Fraction(12), Fraction(30), Fraction(42)])
    True
    >>> is_result_of_two([Fraction(3), Fraction(7), Fraction(100)])
    False
    """
    for (ia, a), (ib, b) in permutations(enumerate(values), 2):
        results = [a + b, a - b, a * b] + ([a / b] if b else [])
        for ic, c in enumerate(values):
            if ic not in (ia, ib) and any(_close(r, c) for r in results):
                return True
    return False


def seeded_fraction(key: str, seed: int) -> float:
    """A uniform number in [0, 1) fixed by (seed, key): the same document always draws the same.

    >>> seeded_fraction("doc-1", 0) == seeded_fraction("doc-1", 0) != seeded_fraction("doc-1", 1)
    True
    """
    digest = hashlib.sha256(f"{seed}|{key}".encode()).digest()
    return int.from_bytes(digest[:8], "little") / 2**64


def calculator_keep(text: str, key: str = "", seed: int = 0, rate: float = 0.01) -> bool:
    """Appendix A's Calculator pre-filter.

    >>> calculator_keep("They had 12 apples, got 30 more and now have 42.")
    True
    >>> calculator_keep("The bill came to a total of 80 dollars.")
    True
    >>> calculator_keep("No numbers here.")
    False
    """
    try:
        if CUE.search(text):
            return True
        found = numbers(text)
        if len(found) < 3:
            return False
        if _has_result_triple(found):
            return True
    except Exception as exc:  # a document must never stop a run: skip it (counted as pre-filtered)
        log.warning("Calculator pre-filter failed on %s (%s: %s); document skipped", key or text[:40],
                    type(exc).__name__, exc)
        return False
    return seeded_fraction(key or text, seed) < rate


def _has_result_triple(found: list[tuple[int, Fraction]]) -> bool:
    """Some number within ``WINDOW_WORDS`` words of two others is their +, −, × or ÷.

    Near-linear: each number is paired with at most ``MAX_NUMBERS_PER_WINDOW`` later ones, and each
    pair's four results are looked up among the text's values by bisection, not by a scan.

    >>> _has_result_triple(numbers("12 apples and 30 pears make 42 fruit"))
    True
    >>> _has_result_triple(numbers("3 cats, 7 dogs and 100 birds"))
    False
    """
    values = sorted({v for _, v in found})
    where: dict[Fraction, list[int]] = {}
    for pos, (_, v) in enumerate(found):
        where.setdefault(v, []).append(pos)
    for p, (ia, a) in enumerate(found):
        for q in range(p + 1, min(len(found), p + MAX_NUMBERS_PER_WINDOW)):
            ib, b = found[q]
            if ib - ia >= WINDOW_WORDS:
                break
            results = {a + b, a - b, b - a, a * b} | ({a / b} if b else set()) | ({b / a} if a else set())
            if any(_third(r, p, q, found, values, where) for r in results):
                return True
    return False


def _third(r: Fraction, p: int, q: int, found, values: list[Fraction], where: dict) -> bool:
    """A number other than ``found[p]``, ``found[q]`` close to ``r``, the three within one window."""
    slack = max(Fraction(1, 100), abs(r) / 999)
    lo, hi = bisect.bisect_left(values, r - slack), bisect.bisect_right(values, r + slack)
    first, last = found[p][0], found[q][0]
    for c in values[lo:hi]:
        if not _close(r, c):
            continue
        for pos in where[c]:
            i = found[pos][0]
            if pos not in (p, q) and max(last, i) - min(first, i) < WINDOW_WORDS:
                return True
    return False


# ------------------------------------------------------------------ MT
SYMBOLS_ONLY = re.compile(r"^[\W\d_]+$")


@lru_cache(maxsize=1)
def _identifier():
    try:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier  # lazy: loads a language-ID model
    except ImportError as exc:  # listed in the project's dependencies
        raise RuntimeError("the MT pre-filter needs py3langid: pip install py3langid") from exc
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def language(chunk: str) -> tuple[str, float]:
    """(ISO 639-1 code, confidence in [0, 1]) of a chunk of text.

    >>> language("le chat est sur la table dans la cuisine")[0]
    'fr'
    """
    lang, prob = _identifier().classify(chunk)
    return lang, float(prob)


def chunks(text: str, size: int = 10) -> list[str]:
    words = text.split()
    return [" ".join(words[i: i + size]) for i in range(0, len(words), size)]


def mt_keep(text: str, confidence: float = 0.8, size: int = 10) -> bool:
    """Appendix A's MT pre-filter: a confidently non-English chunk with English on both sides.

    >>> mt_keep("The museum opened in the spring of that year with a large show. "
    ...         "Le musée a ouvert ses portes au printemps avec une grande exposition de peinture. "
    ...         "Visitors came from many countries to see the paintings and the new hall.")
    True
    >>> mt_keep("Only English text here, repeated over and over so that there are several chunks to read.")
    False
    """
    labels = []
    try:
        for chunk in chunks(text, size):
            if SYMBOLS_ONLY.match(chunk.replace(" ", "")):
                labels.append("symbols")
                continue
            lang, prob = language(chunk)
            labels.append(lang if prob > confidence else "unsure")
    except Exception as exc:  # a document must never stop a run: skip it (counted as pre-filtered)
        log.warning("MT pre-filter failed (%s: %s); document skipped", type(exc).__name__, exc)
        return False
    return _foreign_between_english(labels)


def _foreign_between_english(labels: list[str]) -> bool:
    """A run of confident non-English chunks with confident English before and after it.

    A foreign sentence rarely fits one 10-word chunk, and the chunks where languages meet are
    mixed (low confidence), so runs count as one and unsure chunks at their edges are passed over.

    >>> _foreign_between_english(["en", "unsure", "fr", "fr", "en"]), _foreign_between_english(["en", "fr", "fr"])
    (True, False)
    """
    sure = [lab for lab in labels if lab not in ("unsure", "symbols")]
    for i, lab in enumerate(sure):
        if lab != "en" and i > 0 and sure[i - 1] == "en":
            j = i
            while j < len(sure) and sure[j] != "en":
                j += 1
            if j < len(sure):
                return True
    return False


def mt_leaks(text: str, char_offset: int, call_input: str) -> bool:
    """True if an MT input appears after the call position but not before it.

    Compared without case: a sampled input often drops the capital of the sentence it copies
    ("le piano est …" from "Le piano est …"), and that is the same look-ahead.

    >>> t = "He said bonjour tout le monde to everyone."
    >>> mt_leaks(t, 7, "bonjour tout le monde"), mt_leaks(t, 35, "bonjour tout le monde")
    (True, False)
    >>> mt_leaks("A piano is. Le piano est un instrument.", 7, "le piano est un instrument")
    True
    """
    needle = " ".join((call_input or "").split()).casefold()
    if not needle:
        return False
    before = " ".join(text[:char_offset].split()).casefold()
    after = " ".join(text[char_offset:].split()).casefold()
    return needle in after and needle not in before
