"""Answer normalisation and the paper's zero-shot metrics, as pure functions.

Why lenient metrics: a zero-shot left-to-right model is never told the answer's format, so the
paper (§4.2) checks whether the gold answer shows up *early* in what the model writes rather than
demanding an exact match:

* LAMA, TempLAMA, DATESET — an answer occurs within the first five predicted words;
* math (SVAMP, ASDiv, MAWPS) — the first number predicted equals the answer, except that when
  that number starts an equation (``5 + 3 = 8``) the number after ``=`` counts. A *number* is
  a numeral; a number word ("four") is read only when the prediction holds no numeral at all
  (see :func:`first_number` for why);
* open-domain QA — an answer occurs within the first 20 words (10 for MLQA).

**Normalisation** (applied to both sides before comparing words): Unicode NFKC, accents removed,
lower case, thousands separators and trailing decimal zeros dropped from numbers
(``1,200.50`` → ``1200.5``), full stops that are not decimal points dropped (``F.C.`` → ``fc``),
every other punctuation mark turned into a space, the articles
*a*, *an*, *the* dropped, whitespace collapsed. "Occurs within the first n words" means the
normalised answer is a whole-word substring of the normalised first n words, so multi-word
answers ("Lauren Bacall") may span words of the window.

>>> within_first_words("The answer is Paris, of course.", ["paris"], 5)
True
>>> first_number("So 5 + 3 = 8 apples.")
8.0
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Iterable, Sequence

import numpy as np

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_SPACES = re.compile(r"\s+")
_GROUPED = re.compile(r"(?<![\d.])(\d{1,3})((?:,\d{3})+)(?![\d,])")
_DECIMAL = re.compile(r"(?<![\d.])(\d+)\.(\d+)(?![\d.])")
# unsigned number with optional thousands groups and decimals; a leading "." ("5.") is not a decimal
_NUM = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_NUMBER = re.compile(r"(?<![\w.])(-?)(" + _NUM + r")(?![\d])")
_EQUATION_TAIL = re.compile(r"(?:\s*[-+*/×x÷^]\s*\(?\s*" + _NUM + r"\s*\)?)*\s*=\s*")

NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty".split())}
NUMBER_WORDS.update({"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
                     "ninety": 90})
_WORD_NUMBER = re.compile(r"\b(" + "|".join(NUMBER_WORDS) + r")\b", re.IGNORECASE)


def canonical_number(text: str) -> str:
    """A number written without grouping commas or trailing decimal zeros.

    >>> canonical_number("1,200.50"), canonical_number("83.0"), canonical_number("007")
    ('1200.5', '83', '7')
    """
    text = text.replace(",", "")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text.lstrip("0") or "0" if not text.startswith("0.") else text


def number_text(value: float) -> str:
    """A float as an answer string: ``106491.0`` → ``106491``, never scientific notation.

    >>> number_text(106491.0), number_text(0.25), number_text(1e-05)
    ('106491', '0.25', '0.00001')
    """
    return canonical_number(f"{value:.10f}")


def _strip_accents(text: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


def normalize(text: str) -> str:
    """The comparison form of an answer or a prediction (see the module docstring).

    >>> normalize("The  Beatles' 1,000th hit: \\"Let It Be\\"!")
    'beatles 1000th hit let it be'
    >>> normalize("Pelé scored 12.0 goals"), normalize("3.14")
    ('pele scored 12 goals', '3.14')
    """
    text = _strip_accents(unicodedata.normalize("NFKC", text)).lower()
    text = _GROUPED.sub(lambda m: m.group(1) + m.group(2).replace(",", ""), text)
    text = _DECIMAL.sub(lambda m: canonical_number(m.group(0)), text)
    text = "".join(" " if unicodedata.category(ch).startswith(("P", "S")) and ch != "." else ch
                   for ch in text)
    text = re.sub(r"\.(?!\d)|(?<!\d)\.", "", text)  # keep decimal points; "F.C." → "fc"
    text = _ARTICLES.sub(" ", text)
    return _SPACES.sub(" ", text).strip()


def first_words(text: str, n: int) -> str:
    """The first ``n`` whitespace-separated words of ``text``.

    >>> first_words("one two  three four", 2)
    'one two'
    """
    return " ".join(text.split()[:n])


def contains_answer(text: str, answers: Iterable[str]) -> bool:
    """True if some answer, normalised, occurs in normalised ``text`` as whole words.

    >>> contains_answer("born in New York City", ["new york", "NYC"])
    True
    >>> contains_answer("born in Yorkshire", ["york"])
    False
    """
    haystack = f" {normalize(text)} "
    return any(needle and f" {needle} " in haystack for needle in (normalize(a) for a in answers))


def within_first_words(text: str, answers: Iterable[str], n: int) -> bool:
    """The paper's "answer among the first n predicted words" check (LAMA n=5, QA n=20).

    The window is taken on the raw words before normalisation, so removed articles do not pull
    later words into it.

    >>> within_first_words("It is located in the city of Rome", ["Rome"], 5)
    False
    >>> within_first_words("Rome, the capital", ["rome"], 5)
    True
    """
    return contains_answer(first_words(text, n), answers)


def _to_float(number: str) -> float:
    return float(number.replace(",", ""))


def first_number(text: str, words: bool = True) -> float | None:
    """The first number predicted, or the first after ``=`` if that number starts an equation.

    The rule: the first *numeral* is the prediction. The paper reads "the first number
    predicted" and illustrates it with numerals only (``5+3=8``); words such as "one" are as often
    pronouns or determiners as counts ("one of them gets 5"), so a word never overrides a numeral.
    Only a prediction with no numeral at all has its first number word read (zero to twenty and
    the tens; ``words=False`` turns this off), since "The answer is four." states its number
    plainly. A minus sign counts only when it is not glued to a preceding word or digit (``5-3``
    is an equation, `` -3`` a number).

    >>> first_number("one of them gets 5"), first_number("The answer is four.")
    (5.0, 4.0)
    >>> first_number("one of them gets five"), first_number("four.", words=False)
    (1.0, None)
    >>> first_number("The answer is 1,250 dollars.")
    1250.0
    >>> first_number("48 / 6 = 8, so 8 cookies each")
    8.0
    >>> first_number("It is 8. Then 2 + 2 = 4.")
    8.0
    >>> first_number("= 12"), first_number("twelve eggs"), first_number("no idea")
    (12.0, 12.0, None)
    >>> first_number("a drop of -3.5 degrees")
    -3.5
    """
    m = _NUMBER.search(text)
    if m is None:
        w = _WORD_NUMBER.search(text) if words else None
        return float(NUMBER_WORDS[w.group(1).lower()]) if w else None
    tail = _EQUATION_TAIL.match(text, m.end())
    if tail is not None:
        after = _NUMBER.match(text, tail.end()) or _NUMBER.search(text, tail.end())
        if after is not None:
            return _to_float(after.group(1) + after.group(2))
    return _to_float(m.group(1) + m.group(2))


def parse_number(answer: str | float | int) -> float | None:
    """A gold answer as a number: ``9 (apples)`` → 9.0; ``3:4`` or ``Yes`` → None.

    >>> parse_number("9 (apples)"), parse_number(4.0), parse_number("1,200"), parse_number("3:30 p.m.")
    (9.0, 4.0, 1200.0, None)
    """
    if isinstance(answer, (int, float)):
        return float(answer)
    text = re.sub(r"\s*\(.*\)\s*$", "", answer.strip())
    m = re.fullmatch(r"(-?)(" + _NUM + r")", text)
    return _to_float(m.group(1) + m.group(2)) if m else None


def numbers_equal(pred: float | None, gold: float, rel_tol: float = 1e-6, abs_tol: float = 1e-6) -> bool:
    """Float equality that forgives round-off (``0.1 + 0.2`` equals ``0.3``).

    >>> numbers_equal(0.1 + 0.2, 0.3), numbers_equal(None, 3.0), numbers_equal(7.0, 7.5)
    (True, False, False)
    """
    return pred is not None and math.isclose(pred, gold, rel_tol=rel_tol, abs_tol=abs_tol)


def math_correct(text: str, answer: float) -> bool:
    """SVAMP/ASDiv/MAWPS: the first number predicted equals the answer."""
    return numbers_equal(first_number(text), answer)


def mean(values: Sequence[bool | float]) -> float | None:
    """Mean of 0/1 outcomes; None for an empty list (an empty subset has no accuracy)."""
    return float(np.mean(values)) if len(values) else None


def bootstrap_ci(values: Sequence[bool | float], n_resamples: int = 1000, alpha: float = 0.05,
                 seed: int = 0) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean; None for an empty list.

    Why bootstrap: the paper reports single numbers, and on a few hundred examples a few points
    of difference can be noise. Resampling examples with replacement needs no assumption about
    the distribution and works the same for AC/NC subsets of any size.

    >>> bootstrap_ci([1, 1, 1, 1])
    (1.0, 1.0)
    >>> lo, hi = bootstrap_ci([1] * 50 + [0] * 50)
    >>> 0.35 < lo < 0.5 < hi < 0.65
    True
    """
    if not len(values):
        return None
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(data), size=(n_resamples, len(data)))
    means = data[idx].mean(axis=1)
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def paired_bootstrap_diff(a: Sequence[bool | float], b: Sequence[bool | float], n_resamples: int = 1000,
                          alpha: float = 0.05, seed: int = 0) -> tuple[float, tuple[float, float]] | None:
    """Mean of ``a − b`` over the same examples and its percentile bootstrap interval; None if empty.

    Why paired: "tools" and "disabled" answer the very same questions, so most of the variation
    between examples (easy vs hard problems) is shared; resampling *examples* and differencing
    within each keeps that pairing, and the interval is far narrower than two separate intervals
    suggest. Two unpaired intervals that overlap can still hide a difference that is clearly not 0.

    >>> d, (lo, hi) = paired_bootstrap_diff([1] * 30 + [0] * 70, [0] * 100)
    >>> round(d, 2), 0.2 < lo < 0.3 < hi < 0.4
    (0.3, True)
    >>> paired_bootstrap_diff([1, 0, 1], [1, 0, 1])
    (0.0, (0.0, 0.0))
    >>> paired_bootstrap_diff([], [])
    """
    if len(a) != len(b):
        raise ValueError(f"paired outcomes need equal lengths, got {len(a)} and {len(b)}")
    if not len(a):
        return None
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    lo, hi = bootstrap_ci(diff, n_resamples, alpha, seed)
    return float(diff.mean()), (lo, hi)


def _z(alpha: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(1 - alpha / 2)


def wilson_interval(k: int, n: int, alpha: float = 0.05) -> tuple[float, float] | None:
    """Wilson score interval of k successes in n; None when n is 0.

    >>> [round(x, 4) for x in wilson_interval(0, 200)]  # 0 of 200 is not certainty of 0
    [0.0, 0.0188]
    >>> [round(x, 3) for x in wilson_interval(50, 100)]
    [0.404, 0.596]
    """
    if n <= 0:
        return None
    z, p = _z(alpha), k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (0.0 if k == 0 else max(0.0, centre - half)), (1.0 if k == n else min(1.0, centre + half))


def wilson_ci(values: Sequence[bool | float], alpha: float = 0.05) -> tuple[float, float] | None:
    """Wilson interval of an accuracy (0/1 outcomes); None for an empty list.

    Why not the bootstrap: at 0 or n of n every resample is the same and the percentile interval
    collapses to a point ([0.0, 0.0] for 0 of 200, whose exact upper bound is about 1.8 %); the
    Wilson interval keeps its width there and matches the bootstrap in between.

    >>> wilson_ci([1, 1, 1, 1])[1], round(wilson_ci([1, 1, 1, 1])[0], 3)
    (1.0, 0.51)
    """
    return wilson_interval(int(sum(bool(v) for v in values)), len(values), alpha)


def newcombe_paired_diff(a: Sequence[bool], b: Sequence[bool], alpha: float = 0.05
                         ) -> tuple[float, tuple[float, float]] | None:
    """Mean of ``a − b`` over paired 0/1 outcomes with Newcombe's interval (1998, method 10: the
    two Wilson intervals combined with the pairs' correlation); None if empty.

    Why: the paired bootstrap collapses to [0, 0] when no pair is discordant, and is narrow
    beyond reason when one or two are; this interval keeps an honest width there.

    >>> d, (lo, hi) = newcombe_paired_diff([1, 0, 1] * 20, [1, 0, 1] * 20)
    >>> d, round(lo, 3), round(hi, 3)
    (0.0, -0.037, 0.037)
    >>> d, (lo, hi) = newcombe_paired_diff([1] * 30 + [0] * 70, [0] * 100)
    >>> round(d, 2), 0.2 < lo < 0.3 < hi < 0.4
    (0.3, True)
    >>> d, (lo, hi) = newcombe_paired_diff([1] * 19 + [0] * 22, [1] * 14 + [0] * 27)  # Altman et al. 2000, Table 6.2
    >>> round(d, 3), round(lo, 3), round(hi, 3)
    (0.122, 0.011, 0.226)
    """
    if len(a) != len(b):
        raise ValueError(f"paired outcomes need equal lengths, got {len(a)} and {len(b)}")
    n = len(a)
    if not n:
        return None
    e = sum(1 for x, y in zip(a, b) if x and y)
    f = sum(1 for x, y in zip(a, b) if x and not y)
    g = sum(1 for x, y in zip(a, b) if not x and y)
    h = n - e - f - g
    p1, p2 = (e + f) / n, (e + g) / n
    (l1, u1), (l2, u2) = wilson_interval(e + f, n, alpha), wilson_interval(e + g, n, alpha)
    denom = (e + f) * (g + h) * (e + g) * (f + h)
    num = e * h - f * g
    num = max(num - n / 2, 0.0) if num > 0 else num  # Newcombe's continuity correction of phi
    phi = num / math.sqrt(denom) if denom else 0.0
    d = p1 - p2
    lo = d - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    hi = d + math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return d, (max(-1.0, lo), min(1.0, hi))


def stratified_paired_bootstrap(strata: Sequence[tuple[Sequence[bool], Sequence[bool]]], n_resamples: int = 1000,
                                alpha: float = 0.05, seed: int = 0) -> tuple[float, tuple[float, float]] | None:
    """Pooled mean of ``a − b`` over several tasks, resampling examples within each task (so each
    task keeps its size); None if there are no pairs.

    >>> d, (lo, hi) = stratified_paired_bootstrap([([1] * 10 + [0] * 10, [0] * 20), ([1, 0] * 20, [1, 0] * 20)])
    >>> round(d, 3), lo < d < hi
    (0.167, True)
    """
    diffs = [np.asarray(a, dtype=float) - np.asarray(b, dtype=float) for a, b in strata if len(a)]
    if not diffs:
        return None
    rng = np.random.default_rng(seed)
    total = sum(len(x) for x in diffs)
    sums = np.zeros(n_resamples)
    for x in diffs:
        sums += x[rng.integers(0, len(x), size=(n_resamples, len(x)))].sum(axis=1)
    lo, hi = np.quantile(sums / total, [alpha / 2, 1 - alpha / 2])
    return float(np.concatenate(diffs).mean()), (float(lo), float(hi))
