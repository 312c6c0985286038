"""Reading the corpus to annotate, and cutting long documents into windows.

**Formats.** ``--corpus`` is a file or a folder (every ``*.jsonl``, ``*.txt`` and ``*.parquet`` in
it, sorted by name). A JSONL line or Parquet row is one document with a ``text`` field and
optionally ``id`` and any other fields (``date``, ``url``, ``title`` … are kept and travel with the
document; the Calendar reads its date from them). A ``.txt`` file holds documents separated by blank
lines. ``default`` names the embedded corpus (:mod:`.sources`). Documents are :class:`~.document.Document`.

**Bad input** never stops a run silently half-way: an empty corpus is an error; lines that are not
JSON objects with a non-empty ``text`` are skipped and counted in the run summary.

**Windows.** A document longer than ``max_tokens`` tokens is split into windows that are annotated
as separate texts (ids ``<id>#0``, ``<id>#1`` …, the original fields copied to each). Windows are
packed greedily from whole sentences (split after ``.``, ``!``, ``?`` or at line breaks) so a call
never has to predict across a cut in mid-sentence; a single sentence longer than a window is cut
between words. Token counts are taken sentence by sentence with the model's tokenizer, so a window
can be off by a token or two where two sentences merge into one token at their boundary. The
window *bodies* tile the document (nothing dropped, nothing annotated twice); every window after
the first also starts with up to ``context_tokens`` words from just before its body, as left
context only (``Document.context_chars``): a call at the start of a body then has real text to
condition on, as it would in the unsplit document.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from .document import CorpusError, Document
from .sources import default_corpus

log = logging.getLogger(__name__)

SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass
class ReadReport:
    files: int = 0
    documents: int = 0
    skipped: dict = field(default_factory=dict)  # reason → count

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def corpus_files(path: str | Path) -> list[Path]:
    path = Path(path)
    if path.is_file():
        return [path]
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if p.suffix in (".jsonl", ".txt", ".parquet"))
        if not found:
            raise CorpusError(f"corpus folder {path} holds no .jsonl, .txt or .parquet file")
        return found
    raise CorpusError(f"corpus {path} does not exist; pass a .jsonl/.txt/.parquet file, a folder of them, "
                      "or 'default' for the embedded corpus")


def _from_mapping(obj, fallback_id: str, report: ReadReport) -> Document | None:
    if not isinstance(obj, dict):
        report.skip("not a JSON object")
        return None
    text = obj.get("text")
    if not isinstance(text, str) or not text.strip():
        report.skip("no text field" if text is None else "empty or non-string text")
        return None
    meta = {k: v for k, v in obj.items() if k not in ("text", "id")}
    return Document(str(obj.get("id", fallback_id)), text.strip(), meta)


def decode_text(data: bytes, path: Path, offset: int = 0) -> str:
    r"""UTF-8 text, or a CorpusError naming the file and byte offset: a replacement character or a
    binary file read as text would silently reach C*.

    >>> decode_text("né".encode(), Path("a.txt"))
    'né'
    >>> decode_text(b"caf\xe9", Path("a.txt"))
    Traceback (most recent call last):
    ...
    toolformer_kit.annotate.document.CorpusError: a.txt is not UTF-8 text: byte 0xe9 at offset 3; convert it (e.g. iconv -f latin1 -t utf-8) or leave it out of --corpus
    """
    nul = data.find(b"\x00")
    if nul >= 0:
        raise CorpusError(f"{path} looks like a binary file (NUL byte at offset {offset + nul}); "
                          "pass text: .jsonl, .txt or .parquet")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorpusError(f"{path} is not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {offset + exc.start}; "
                          "convert it (e.g. iconv -f latin1 -t utf-8) or leave it out of --corpus") from None


def _read_jsonl(path: Path, report: ReadReport) -> Iterator[Document]:
    offset = 0
    with open(path, "rb") as fh:
        for n, raw in enumerate(fh):
            line = decode_text(raw, path, offset).lstrip("\ufeff") if n == 0 else decode_text(raw, path, offset)
            offset += len(raw)
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                report.skip("unreadable JSON line")
                continue
            doc = _from_mapping(obj, f"{path.stem}:{n}", report)
            if doc:
                yield doc


def _read_txt(path: Path, report: ReadReport) -> Iterator[Document]:
    text = decode_text(path.read_bytes(), path).lstrip("\ufeff")
    for n, block in enumerate(re.split(r"\n\s*\n", text)):
        if block.strip():
            yield Document(f"{path.stem}:{n}", block.strip(), {})


def _read_parquet(path: Path, report: ReadReport) -> Iterator[Document]:
    try:
        import pyarrow.parquet as pq  # lazy: optional
    except ImportError:
        raise CorpusError(f"reading {path} needs pyarrow: pip install pyarrow (or convert it to JSONL)") from None
    table = pq.read_table(path)
    if "text" not in table.column_names:
        raise CorpusError(f"{path} has no 'text' column (columns: {', '.join(table.column_names)})")
    for n, row in enumerate(table.to_pylist()):
        doc = _from_mapping(row, f"{path.stem}:{n}", report)
        if doc:
            yield doc


READERS = {".jsonl": _read_jsonl, ".txt": _read_txt, ".parquet": _read_parquet}


def read_corpus(path: str | Path, report: ReadReport | None = None, default_docs: int = 16,
                seed: int = 0, default_sources: tuple[str, ...] | None = None) -> list[Document]:
    """Every document of a corpus file or folder, in a fixed order; raises on an empty corpus."""
    report = report if report is not None else ReadReport()
    if str(path) == "default":
        docs = default_corpus(default_docs, seed, *([tuple(default_sources)] if default_sources else []))
    else:
        docs = []
        for f in corpus_files(path):
            report.files += 1
            reader = READERS.get(f.suffix)
            if reader is None:
                raise CorpusError(f"cannot read {f}: use .jsonl, .txt or .parquet")
            docs.extend(reader(f, report))
    seen = set()
    for d in docs:
        if d.doc_id in seen:
            raise CorpusError(f"document id {d.doc_id!r} occurs twice in {path}; ids must be unique "
                              "(drop the 'id' field to number documents by line)")
        seen.add(d.doc_id)
    report.documents = len(docs)
    if not docs:
        raise CorpusError(f"corpus {path} holds no usable document"
                          + (f" (skipped: {report.skipped})" if report.skipped else ""))
    if report.skipped:
        log.warning("skipped %d unusable record(s) in %s: %s", sum(report.skipped.values()), path, report.skipped)
    return docs


def _pieces(text: str) -> list[tuple[int, int]]:
    """Sentence spans (start, end), each end including the whitespace that followed it."""
    out, last = [], 0
    for m in SENTENCE_END.finditer(text):
        out.append((last, m.end()))
        last = m.end()
    if last < len(text):
        out.append((last, len(text)))
    return out


def _word_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    return [(start + m.start(), start + m.end()) for m in re.finditer(r"\S+\s*", text[start:end])]


def _pack(text: str, spans: list[tuple[int, int]], max_tokens: int, count: Callable[[str], int]) -> list[list[tuple[int, int]]]:
    """Consecutive spans packed greedily into groups of at most ``max_tokens``."""
    groups: list[list[tuple[int, int]]] = []
    cur_n = 0
    for a, b in spans:
        n = count(text[a:b])
        if groups and groups[-1] and cur_n + n <= max_tokens:
            groups[-1].append((a, b))
            cur_n += n
        else:
            groups.append([(a, b)])
            cur_n = n
    return groups


def _trim(text: str, a: int, b: int) -> tuple[int, int]:
    """(a, b) with surrounding whitespace moved out of the span."""
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def window_spans(text: str, max_tokens: int, count: Callable[[str], int],
                 context_tokens: int = 0) -> list[tuple[int, int, int]]:
    """(context start, body start, end) character spans of the windows of ``text``.

    Bodies are whole sentences packed greedily into at most ``max_tokens`` (a longer sentence is
    cut between words); they tile the text. Every window but the first also gets the words just
    before its body — at most ``context_tokens`` of them — as left context.

    >>> words = lambda s: len(s.split())
    >>> t = "One two three. Four five. Six seven eight nine."
    >>> [(t[c:b], t[b:e]) for c, b, e in window_spans(t, 5, words, context_tokens=2)]
    [('', 'One two three. Four five.'), ('Four five. ', 'Six seven eight nine.')]
    """
    if max_tokens <= 0 or count(text) <= max_tokens:
        return [(0, 0, len(text))]
    parts: list[tuple[int, int]] = []
    for a, b in _pieces(text):
        parts += _word_spans(text, a, b) if count(text[a:b]) > max_tokens else [(a, b)]
    out = []
    for group in _pack(text, parts, max_tokens, count):
        body, end = _trim(text, group[0][0], group[-1][1])
        if body < end:
            out.append((_context_start(text, body, context_tokens, count), body, end))
    return out


def _context_start(text: str, body: int, context_tokens: int, count: Callable[[str], int]) -> int:
    """Where the left context of a body starting at ``body`` begins: as many whole words as fit."""
    start = body
    if context_tokens <= 0:
        return start
    for m in reversed(list(re.finditer(r"\S+", text[:body]))):
        if count(text[m.start():body]) > context_tokens:
            break
        start = m.start()
    return start


def split_windows(text: str, max_tokens: int, count: Callable[[str], int]) -> list[str]:
    """The window bodies of ``text`` (see :func:`window_spans`), without left context.

    >>> words = lambda s: len(s.split())
    >>> split_windows("One two three. Four five. Six seven eight nine.", 5, words)
    ['One two three. Four five.', 'Six seven eight nine.']
    >>> split_windows("a b c d e f g", 3, words)
    ['a b c', 'd e f', 'g']
    """
    return [text[b:e] for _, b, e in window_spans(text, max_tokens, count)]


def windowed(docs: list[Document], max_tokens: int, count: Callable[[str], int],
             context_tokens: int = 0) -> tuple[list[Document], int]:
    """Documents with the long ones replaced by their windows; also how many were split.

    A window's text is its left context followed by its body; ``context_chars`` marks where the
    body begins, so that no call is placed in the context (it is there to be conditioned on).
    """
    out, split = [], 0
    for d in docs:
        spans = window_spans(d.text, max_tokens, count, context_tokens)
        if len(spans) == 1:
            out.append(d)
            continue
        split += 1
        for w, (c, b, e) in enumerate(spans):
            ctx = len(d.text[c:b].rstrip())
            out.append(Document(f"{d.doc_id}#{w}", d.text[c:e], dict(d.meta, window=w), context_chars=ctx))
    return out, split
