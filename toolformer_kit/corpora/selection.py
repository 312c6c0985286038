"""The campaigns' corpora: the Calculator's (:mod:`toolformer_kit.annotate.math_corpus`, re-exported
here) and the search recipe's Wikipedia summaries less everything the evaluation asks about."""

from __future__ import annotations

import random
from typing import Sequence

from ..annotate.math_corpus import (Selection, _gsm8k_rows, gsm8k_selected, hardness, math_selection,  # noqa: F401
                                    result_hardness, solution_windows, wiki_selected, written_sum_left)
from ..annotate.document import Document
from ..annotate.sources import _load_wiki
from .sources import asked_about, evaluated_text, heldout_for


SEARCH_MIN_WORDS = 40  # as the search recipe's corpus (corpora.wiki_corpus): long enough to hold a fact


def search_selection(seed: int, tasks: Sequence[str], data_dir) -> Selection:
    """The search campaign's corpus (issue 28, item 4): English Wikipedia lead summaries of at least
    :data:`SEARCH_MIN_WORDS` words, less every summary the evaluation asks about
    (:func:`~.corpora.asked_about` over ``tasks``' whole files) and the held-out facts' summaries
    (:func:`~.corpora.heldout_for`), in a seeded order. Each step is counted for the card."""
    en = _load_wiki("en-us")
    answers, questions = evaluated_text(tasks, data_dir)
    asked = asked_about(en, answers, questions)
    held = heldout_for(tasks) & set(en)
    long_enough = {t for t, v in en.items() if len(v.get("extract", "").split()) >= SEARCH_MIN_WORDS}
    titles = sorted(long_enough - asked - held)
    random.Random(f"{seed}:selection:search").shuffle(titles)
    counts = {"wiki_summaries": len(en), "asked_about": len(asked), "heldout": len(held),
              "long_enough": len(long_enough), "documents": len(titles)}
    docs = [Document(f"wiki:{t}", en[t]["extract"], {"source": "wiki", "title": t, "licence": "CC BY-SA 4.0"})
            for t in titles]
    return Selection(docs, counts)
