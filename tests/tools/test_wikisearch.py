"""WikiSearch on the real index of the vital-article summaries, plus other corpus formats."""

from __future__ import annotations

import json

import pytest

from toolformer_kit.tools import get_tool
from toolformer_kit.tools.wikisearch import (SNIPPET_CHARS, BM25Index, CorpusError, default_corpus,
                                             search_snippets, snippet, wikisearch_tool)


@pytest.fixture(scope="module")
def articles():
    """The real summaries, read straight from the package's JSON file (not through our reader)."""
    with open(default_corpus(), encoding="utf-8") as fh:
        return {v["title"]: v["extract"] for v in json.load(fh).values()}


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    idx = BM25Index(cache=tmp_path_factory.mktemp("cache"))
    idx.index()
    return idx


@pytest.mark.parametrize("query, title", [
    ("Who painted the Mona Lisa", "Mona Lisa"),
    ("Albert Einstein physicist", "Albert Einstein"),
    ("Mount Kilimanjaro volcano", "Mount Kilimanjaro"),
    ("photosynthesis plants light energy", "Photosynthesis"),
    ("Great Wall of China", "Great Wall of China"),
])
def test_vital_article_query_returns_its_snippet(index, articles, query, title):
    assert title in articles
    hits = index.search(query, k=3)
    assert hits[0].title == title
    result = search_snippets(index, query)
    assert result == snippet(articles[title])
    assert " ".join(articles[title].split()).startswith(result.rstrip("…"))


def test_index_is_built_once_and_reused(index):
    assert index.built
    again = BM25Index(cache=index.folder.parent.parent)
    assert again.search("Eiffel Tower")[0].title == "Eiffel Tower"
    assert not again.built


def test_registered_tool_uses_the_default_corpus(articles):
    tool = get_tool("WikiSearch")
    assert tool("Eiffel Tower") == snippet(articles["Eiffel Tower"])


@pytest.mark.parametrize("query", ["AND OR (", "title:Paris", '"unterminated', "*", "a:b:c", "NOT", "x" * 300,
                                   "ωμέγα ünïcödé", "🙂 Paris"])
def test_query_syntax_cannot_break_search(index, query):
    result = search_snippets(index, query)
    assert result is None or len(result) <= SNIPPET_CHARS


def test_no_words_no_result(index):
    assert search_snippets(index, "?!. ,;") is None


def test_snippets_fit_inline(index, articles):
    for title in list(articles)[::500]:
        text = search_snippets(index, title)
        assert text and len(text) <= SNIPPET_CHARS and "\n" not in text and "[" not in text


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_jsonl_corpus_and_rebuild_on_change(tmp_path):
    corpus = tmp_path / "mini.jsonl"
    _write_jsonl(corpus, [{"title": "Zorblax", "text": "Zorblax is a fictional moon of ice. It has geysers."},
                          {"title": "Quintar", "text": "Quintar is a made-up desert town."}])
    tool = wikisearch_tool(corpus=str(corpus))
    idx = BM25Index(corpus, cache=tmp_path / "c")
    assert search_snippets(idx, "icy moon geysers Zorblax") == "Zorblax is a fictional moon of ice. It has geysers."
    assert BM25Index(corpus, cache=tmp_path / "c").search("Quintar")[0].title == "Quintar"
    _write_jsonl(corpus, [{"title": "Vellumar", "text": "Vellumar is an invented river of ink."}])
    changed = BM25Index(corpus, cache=tmp_path / "c")
    assert changed.search("river of ink")[0].title == "Vellumar" and changed.built
    assert changed.search("Zorblax") == []
    assert tool.version != wikisearch_tool(corpus=str(corpus)).version  # cache keys follow the corpus


def test_kilt_corpus_long_articles_are_split(tmp_path):
    corpus = tmp_path / "kilt.jsonl"
    filler = " ".join(f"Sentence number {i} talks about nothing in particular." for i in range(60))
    _write_jsonl(corpus, [{"_id": "1", "wikipedia_id": "1", "wikipedia_title": "Long Article",
                           "text": ["Long Article\n", "Long Article is a very long article.\n", filler + "\n",
                                    "Section::::History.\n", "The glorbnik tradition began late.\n"]}])
    idx = BM25Index(corpus, cache=tmp_path / "c")
    hit = idx.search("glorbnik tradition")[0]
    assert hit.title == "Long Article" and "glorbnik" in hit.text and "Long Article is" not in hit.text
    assert search_snippets(idx, "very long article").startswith("Long Article is a very long article.")


def test_bad_corpus_gets_a_clear_message(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"title": "A", "text": "fine"}\nnot json\n', encoding="utf-8")
    with pytest.raises(CorpusError, match="line 2 is not JSON"):
        BM25Index(bad, cache=tmp_path / "c").index()
    with pytest.raises(CorpusError, match="does not exist"):
        BM25Index(tmp_path / "missing.jsonl", cache=tmp_path / "c")
    notext = tmp_path / "notext.jsonl"
    _write_jsonl(notext, [{"title": "A", "body": "x"}])
    with pytest.raises(CorpusError, match="no 'text' field"):
        BM25Index(notext, cache=tmp_path / "c").index()
