"""wiki-cloze: LAMA-style facts from Wikipedia summaries that annotation never sees (issue 28, item 2).

Why. LAMA's and the QA sets' facts may sit in the annotated corpus or in the model's pretraining,
and only 4–12 % of them are retrievable from the search index at all. A fixed, seeded set of
:data:`HELDOUT_SIZE` summaries is held out instead: never annotated and absent from the index that
WikiSearch and QA search while annotating (``toolformer_kit.corpora.sources`` writes that index's
corpus without them), but present in the evaluation-time index. A fact from them can be found only
by searching at test time, so a gain on them is a search gain.

**How an item is built** (:func:`cloze_candidates`, :func:`build_items`). Each held-out summary is
cut into sentences. A sentence gives a candidate when it ends in a *fact*: a run of capitalised
words (a name: "Ulm", "Johann Sebastian Bach"; ``of``/``de``/``the``... may join them inside; at
most :data:`MAX_ANSWER_WORDS` words, and a longer name is no candidate rather than cut) or a
number of two to four digits (a year, a count), followed only by punctuation. The answer is that
fact; the statement is the sentence before it, which must have at least :data:`MIN_PREFIX_WORDS`
words and must not contain the answer itself (whole words, normalised as the metric does). The
item is kept only if it is **retrievable from the prompt**: the top passage BM25 returns for the
statement holds the answer. The first such sentence of each summary is its one item. Scoring is
LAMA's: the answer within the first five predicted words.

>>> cloze_candidates("Ulm", "Ulm is a city on the Danube. Albert Einstein was born in Ulm.")
[('Ulm is a city on the', 'Danube'), ('Albert Einstein was born in', 'Ulm')]
>>> index = {"einstein": "Albert Einstein was a physicist born in Ulm in 1879."}
>>> search = lambda q, k: [t for w, t in index.items() if w in q.lower()][:k]
>>> [(e.id, e.prompt, e.answers) for e in build_items({"Ulm": "Ulm is a city on the Danube. "
...                                                    "Albert Einstein was born in Ulm."}, ["Ulm"], search)]
[('wiki-cloze:Ulm:1', 'Finish the sentence with the correct fact.\\nAlbert Einstein was born in', ('Ulm',))]

The first sentence gives no item: nothing retrieved for "Ulm is a city on the" holds "Danube".
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from ...tools.wikisearch import default_corpus, read_corpus, sentences
from ..metrics import contains_answer
from .base import Example, Task, ToolPolicy, register
from .lama import PROMPT

HELDOUT_SIZE = 500
HELDOUT_SEED = 0
MIN_SUMMARY_WORDS = 40  # as the search recipe's annotated summaries (corpora.sources.wiki_corpus)
MIN_PREFIX_WORDS = 5
MAX_ANSWER_WORDS = 4
JOINERS = {"of", "de", "the", "von", "van", "da", "du", "del", "la", "le", "al", "bin"}
_TAIL_PUNCT = " \t.,;:!?\"')]}»”’"
_NUMBER = re.compile(r"\d{2,4}")
_CAPITAL = re.compile(r"[A-Z][\w'’.\-]*\Z")

Search = Callable[[str, int], Sequence[str]]


def heldout_titles(summaries: Mapping[str, str], n: int = HELDOUT_SIZE, seed: int = HELDOUT_SEED) -> list[str]:
    """The held-out titles: a seeded draw from the summaries of at least :data:`MIN_SUMMARY_WORDS`
    words, sorted. The draw depends only on the titles, ``n`` and ``seed``.

    >>> s = {f"T{i}": "word " * 50 for i in range(10)} | {"Short": "too short"}
    >>> heldout_titles(s, 3) == heldout_titles(dict(reversed(list(s.items()))), 3), "Short" in heldout_titles(s, 10)
    (True, False)
    """
    eligible = sorted(t for t, text in summaries.items() if len(text.split()) >= MIN_SUMMARY_WORDS)
    return sorted(random.Random(f"{seed}:heldout-facts").sample(eligible, min(n, len(eligible))))


def sentence_fact(sentence: str) -> tuple[str, str] | None:
    """(statement, answer) when ``sentence`` ends in a name or a number; None otherwise.

    >>> sentence_fact("The Danube flows into the Black Sea.")
    ('The Danube flows into the', 'Black Sea')
    >>> sentence_fact("The Louvre opened in 1793."), sentence_fact("It is a large river.")
    (('The Louvre opened in', '1793'), None)
    >>> sentence_fact("The house of the Duke of York.")
    ('The house of the', 'Duke of York')
    >>> sentence_fact("It was shaped chiefly by Henri Poincaré and David Hilbert.")  # "and" ends a name
    ('It was shaped chiefly by Henri Poincaré and', 'David Hilbert')
    >>> sentence_fact("It was painted by Pieter Bruegel the Elder Junior Senior.") is None  # longer than 4 words
    True
    """
    words = sentence.strip().rstrip(_TAIL_PUNCT).split()
    if len(words) < 2:
        return None
    last = words[-1].rstrip(_TAIL_PUNCT)
    if _NUMBER.fullmatch(last):
        start = len(words) - 1
    elif _CAPITAL.match(last):
        start = len(words) - 1
        while start > 1 and len(words) - start < MAX_ANSWER_WORDS:
            prev = words[start - 1]
            if _CAPITAL.match(prev):
                start -= 1
            elif prev in JOINERS and start > 2 and _CAPITAL.match(words[start - 2]):
                start -= 2
            else:
                break
        while words[start] in JOINERS:  # never open the answer with a joiner
            start += 1
        if start > 1 and _CAPITAL.match(words[start - 1]):  # a name longer than an answer may be: cut in half
            return None
    else:
        return None
    if any(w[-1] in ",;:" for w in words[start:-1]):  # a list or clause, not one name
        return None
    answer = " ".join(words[start:-1] + [last])
    prefix = " ".join(words[:start])
    if len(answer.split()) > MAX_ANSWER_WORDS or not prefix or prefix[-1] in ".!?":
        return None
    return prefix, answer


def cloze_candidates(title: str, text: str) -> list[tuple[str, str]]:
    """Every (statement, answer) of a summary that could be an item, in text order (see the module
    docstring); ``title`` is not used yet but names the summary in errors and ids."""
    out = []
    for sent in sentences(" ".join(text.split())):
        fact = sentence_fact(sent)
        if fact is None:
            continue
        prefix, answer = fact
        if len(prefix.split()) >= MIN_PREFIX_WORDS and not contains_answer(prefix, [answer]):
            out.append(fact)
    return out


def build_items(summaries: Mapping[str, str], titles: Iterable[str], search: Search) -> list[Example]:
    """One item per held-out title: its first candidate whose statement retrieves, as the top
    passage, one that holds the answer. Ids are ``wiki-cloze:TITLE:J`` (J: the candidate's index)."""
    items = []
    for title in titles:
        for j, (prefix, answer) in enumerate(cloze_candidates(title, summaries[title])):
            top = list(search(prefix, 1))[:1]
            if top and contains_answer(top[0], [answer]):
                items.append(Example(f"wiki-cloze:{title}:{j}", PROMPT.format(statement=prefix), (answer,),
                                     {"title": title}))
                break
    return items


def wiki_summaries(corpus: str | Path | None = None) -> dict[str, str]:
    """title → summary text of the Wikipedia corpus the held-out set is drawn from (the package's
    10,033 vital-article summaries unless ``corpus`` names another file)."""
    return dict(read_corpus(corpus or default_corpus()))


def load_wiki_cloze(data_dir: Path) -> list[Example]:
    """The held-out cloze items; ``data_dir`` is ignored (the summaries come with the WikiSearch
    package), and retrievability is checked on the evaluation-time index (WikiSearch's own)."""
    from ...tools.wikisearch import default_index  # the index opens here, not at registration

    summaries = wiki_summaries()
    index = default_index()
    return build_items(summaries, heldout_titles(summaries), lambda q, k: [h.text for h in index.search(q, k)])


NOTE = ("Items come from 500 seeded held-out Wikipedia summaries that annotation never sees and its search "
        "index lacks; each is a sentence-final name or number, kept when the statement retrieves it. "
        "WikiSearch and QA are both allowed: finding these facts at test time is what the task measures.")
register(Task("wiki-cloze", "held-out Wikipedia facts, sentence-final cloze (issue 28)", load_wiki_cloze,
              metric="first5", policy=ToolPolicy(), max_new_tokens=16, exercises="WikiSearch", note=NOTE))
