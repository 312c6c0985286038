"""corpora/selection.py: the Calendar campaign's dated corpus, and a selection frozen in the
dataset so that a campaign resumes on the same texts on another machine."""

import gzip
import json

import pytest

from toolformer_kit.corpora.selection import Selection, calendar_selection, frozen_selection
from toolformer_kit.annotate.document import Document
from toolformer_kit.files import DamagedFileError

ENTRY = ("{pkg} ({ver}) unstable; urgency=medium\n\n  * {note}\n\n"
         " -- Jo Doe <jo@example.org>  {stamp}\n\n")


def changelog(root, folder, entries, source=None):
    """A doc folder's changelog; its entries name the source package (``folder`` unless given)."""
    (root / folder).mkdir(parents=True)
    text = "".join(ENTRY.format(pkg=source or folder, ver=v, note=n, stamp=s) for v, n, s in entries)
    (root / folder / "changelog.Debian.gz").write_bytes(gzip.compress(text.encode()))


def test_calendar_selection_keeps_dated_distinct_entries_in_a_seeded_order(tmp_path):
    note = "Fix the build with the new compiler and update the watch file for the new upstream site."
    entries = [("1.0-2", note, "Tue, 29 Jun 2010 09:13:05 +0200"),
               ("1.0-1", " ".join(["word"] * 160), "Mon, 28 Jun 2010 10:00:00 +0200")]
    changelog(tmp_path, "aa", entries)
    changelog(tmp_path, "aa-dev", entries, source="aa")  # a binary package's folder: the source's changelog again
    changelog(tmp_path, "bb", [("2.1-1", note, "Wed, 28 Sep 2022 16:50:07 +0200")])
    sel = calendar_selection(0, tmp_path)
    # 5 entries; the 160-word one is too long (twice); aa-dev's copy is the same text as aa's
    assert sel.counts == {"changelogs": 3, "entries": 5, "in_word_range": 3, "documents": 2}
    assert sorted(d.doc_id for d in sel.docs) == ["changelog:aa:1.0-2", "changelog:bb:2.1-1"]
    aa = next(d for d in sel.docs if d.doc_id == "changelog:aa:1.0-2")
    assert aa.text.startswith("Jo Doe uploaded aa 1.0-2 to Debian unstable on Tuesday, June 29, 2010.")
    assert aa.meta["date"] == "Tue, 29 Jun 2010 09:13:05 +0200" and "DFSG" in aa.meta["licence"]
    assert [d.doc_id for d in calendar_selection(0, tmp_path).docs] == [d.doc_id for d in sel.docs]


def test_a_frozen_selection_is_read_back_instead_of_selected_again(tmp_path):
    built = []

    def build():
        built.append(1)
        return Selection([Document("d1", "text one", {"date": "2020-01-02", "source": "changelog"})], {"documents": 1})

    first = frozen_selection(tmp_path / "corpus", build)
    again = frozen_selection(tmp_path / "corpus", build)
    assert built == [1]  # the second machine reads the copy
    assert [(d.doc_id, d.text, d.meta) for d in again.docs] == [(d.doc_id, d.text, d.meta) for d in first.docs]
    assert again.counts == {"documents": 1}
    (tmp_path / "corpus" / "documents.jsonl").write_text('{"id": "d1", "text": "cut')
    with pytest.raises(DamagedFileError, match="git checkout"):
        frozen_selection(tmp_path / "corpus", build)
    assert json.loads((tmp_path / "corpus" / "selection.json").read_text()) == {"documents": 1}


def test_mt_selection_quotes_the_foreign_opening_and_leaves_out_what_mlqa_asks(tmp_path, monkeypatch):
    from toolformer_kit.corpora import selection as S

    long_fr = "Le musée a ouvert ses portes au printemps avec une grande exposition."
    wiki = {"en-us": {"Musée": {"extract": "The museum opened in spring. It shows paintings."},
                      "Warsaw": {"extract": "Warsaw is the capital of Poland. It lies on the Vistula."},
                      "Short": {"extract": "Short is a word. It is short."},
                      "One": {"extract": "Only one sentence here"}},
            "fr-fr": {"Musée": {"extract": long_fr + " Il est grand."}, "Warsaw": {"extract": long_fr},
                      "Short": {"extract": "Un mot court."}, "One": {"extract": long_fr}},
            "es-es": {}}
    monkeypatch.setattr(S, "_load_wiki", lambda lang: wiki[lang])
    folder = tmp_path / "mlqa" / "test"
    folder.mkdir(parents=True)
    xquad = {"data": [{"title": "Warsaw", "paragraphs": [{"context": "c", "qas": [
        {"id": "1", "question": "Which river?", "answers": [{"text": "Vistula", "answer_start": 0}]}]}]}]}
    (folder / "test-context-en-question-en.json").write_text(json.dumps(xquad))
    sel = S.mt_selection(0, tmp_path)
    # Warsaw: an XQuAD article; Short: its quote is under 8 words; One: one English sentence
    assert sel.counts == {"pairs": 4, "asked_about": 1, "mlqa_found": True, "documents": 1}
    (doc,) = sel.docs
    assert doc.doc_id == "mt:fr:Musée" and doc.meta["language"] == "fr"
    assert doc.text == f'Musée. It shows paintings. "{long_fr}" The museum opened in spring.'
    assert doc.text[doc.context_chars:].startswith(f' "{long_fr}"')  # calls go from the quote on
    # without the benchmark folder nothing can be left out, and the counts say so
    assert S.mt_selection(0, tmp_path / "none").counts["mlqa_found"] is False
