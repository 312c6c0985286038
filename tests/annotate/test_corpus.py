import json

import pytest

from toolformer_kit.annotate.corpus import ReadReport, read_corpus, split_windows, windowed
from toolformer_kit.annotate.document import CorpusError, Document
from toolformer_kit.annotate.sources import SOURCES, default_corpus


def words(s):
    return len(s.split())


def test_reads_jsonl_txt_and_parquet_from_a_folder(tmp_path):
    (tmp_path / "a.jsonl").write_text(
        json.dumps({"id": "x", "text": "First doc.", "date": "2020-01-02"}) + "\n"
        + "not json\n" + json.dumps({"text": ""}) + "\n" + json.dumps({"title": "no text"}) + "\n"
        + json.dumps({"text": "Second doc."}) + "\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("Para one.\n\nPara two\nstill two.\n", encoding="utf-8")
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([{"text": "From parquet.", "url": "u"}]), tmp_path / "c.parquet")
    report = ReadReport()
    docs = read_corpus(tmp_path, report)
    assert [d.doc_id for d in docs] == ["x", "a:4", "b:0", "b:1", "c:0"]
    assert docs[0].meta == {"date": "2020-01-02"} and docs[3].text == "Para two\nstill two."
    assert docs[4].meta == {"url": "u"}
    assert report.skipped == {"unreadable JSON line": 1, "empty or non-string text": 1, "no text field": 1}


def test_bad_corpora_give_clear_errors(tmp_path):
    with pytest.raises(CorpusError, match="does not exist"):
        read_corpus(tmp_path / "missing.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="no usable document"):
        read_corpus(tmp_path / "empty.jsonl")
    (tmp_path / "dup.jsonl").write_text('{"id": 1, "text": "a"}\n{"id": 1, "text": "b"}\n', encoding="utf-8")
    with pytest.raises(CorpusError, match="occurs twice"):
        read_corpus(tmp_path / "dup.jsonl")


def test_windows_cover_the_text_without_overlap_and_respect_the_budget():
    text = " ".join(f"Sentence number {i} has a few words in it." for i in range(30))
    parts = split_windows(text, 25, words)
    assert all(words(p) <= 25 for p in parts) and len(parts) > 5
    assert " ".join(parts).split() == text.split()
    assert all(p.endswith(".") for p in parts)  # cut at sentence ends
    long = "word " * 60
    assert [words(p) for p in split_windows(long, 25, words)] == [25, 25, 10]


def test_windowed_documents_keep_their_fields():
    docs, split = windowed([Document("d", "One two. Three four.", {"date": "2021-05-06"}), Document("e", "short")], 2, words)
    assert split == 1 and [d.doc_id for d in docs] == ["d#0", "d#1", "e"]
    assert docs[1].meta == {"date": "2021-05-06", "window": 1}


def test_default_corpus_is_real_mixed_and_deterministic():
    docs = default_corpus(3, seed=0)
    assert docs == default_corpus(3, seed=0)
    sources = {d.meta["source"] for d in docs}
    assert sources <= set(SOURCES) and {"wiki", "mt", "gsm8k"} <= sources
    assert all(len(d.text.split()) >= 8 for d in docs)
    dated = [d for d in docs if d.meta["source"] == "changelog"]
    from toolformer_kit.tools.calendar import document_date

    assert all(document_date(d.record()) is not None for d in dated)
    assert all("<<" not in d.text and "####" not in d.text for d in docs if d.meta["source"] == "gsm8k")
