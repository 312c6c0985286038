"""Writing a file so that it is either complete or absent: every output another run or stage
reads back (shards, summaries, manifests, ledgers, results) goes through :func:`write_atomic`, so
a kill mid-write never leaves a half file that a resumed run would trust.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "a.json"
>>> write_atomic(p, "{}"); p.read_text(), sorted(x.name for x in p.parent.iterdir())
('{}', ['a.json'])
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

from .config import ConfigError


class DamagedFileError(ConfigError):
    """A file a run wrote and reads back is not what it wrote (cut off by a kill, or edited)."""


def read_json(path: str | Path, fix: str = "") -> Any:
    """A JSON file another stage wrote, or one error naming the file and what to do about it.

    >>> import tempfile; p = Path(tempfile.mkdtemp()) / "s.json"
    >>> _ = p.write_text('{"a": 1')
    >>> read_json(p, "delete it to redo the stage")
    Traceback (most recent call last):
    ...
    toolformer_kit.files.DamagedFileError: ... is damaged (not JSON: Expecting ',' delimiter at line 1, column 8); delete it to redo the stage
    """
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        where = f" at line {exc.lineno}, column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise DamagedFileError(f"{path} is damaged (not JSON: {msg}{where}); " + _fix(path, fix)) from None


def read_jsonl(path: str | Path, fix: str = "", parse: Callable[[str], Any] = json.loads) -> list:
    r"""Every row of a JSONL file another stage wrote (``parse`` turns a line into a row), or one
    error naming the file, the line, what is wrong with it and ``fix``.

    >>> import tempfile; p = Path(tempfile.mkdtemp()) / "s.jsonl"
    >>> _ = p.write_text('{"a": 1}\n{"a": 2')
    >>> read_jsonl(p, "delete it to redo the stage")
    Traceback (most recent call last):
    ...
    toolformer_kit.files.DamagedFileError: ... is damaged at line 2 (not JSON: Expecting ',' delimiter); delete it to redo the stage
    """
    path = Path(path)
    rows = []
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, start=1):
                if line.strip():
                    rows.append(_parsed(parse, line, path, n, fix))
    except UnicodeDecodeError as exc:
        raise DamagedFileError(f"{path} is damaged (not UTF-8 text: {exc.reason}); " + _fix(path, fix)) from None
    return rows


def _parsed(parse, line: str, path: Path, n: int, fix: str):
    try:
        return parse(line)
    except json.JSONDecodeError as exc:
        why = f"not JSON: {exc.msg}"
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        why = str(exc) or type(exc).__name__
    raise DamagedFileError(f"{path} is damaged at line {n} ({why}); " + _fix(path, fix))


def _fix(path: Path, fix: str) -> str:
    return fix or f"it was cut off or edited: delete {path.parent} to redo what wrote it"


def write_atomic(path: str | Path, text: str | bytes) -> None:
    """Write ``text`` (UTF-8, or bytes as they are) to a temporary name beside ``path``, flush it
    to disk, then rename."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    with (open(tmp, "wb") if isinstance(text, bytes) else open(tmp, "w", encoding="utf-8")) as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def finished_rows(path: str | Path, ids, columns=()) -> list | None:
    """The rows of a JSONL file written by an earlier run, if it is finished for this one: the
    same ids in the same order, every row holding ``columns``; else None (write it again). Lets a
    long measurement resume file by file without trusting a file made for other inputs.

    >>> import tempfile; d = Path(tempfile.mkdtemp()); p = d / "a.jsonl"
    >>> finished_rows(p, ["x"]) is None
    True
    >>> _ = p.write_text('{"id": "x", "call": 1}\\n')
    >>> [finished_rows(p, ["x"], ["call"]) is None, finished_rows(p, ["x"], ["context"]), finished_rows(p, ["y"])]
    [False, None, None]
    """
    path = Path(path)
    old = read_jsonl(path) if path.is_file() else []
    if old and [r.get("id") for r in old] == list(ids) and all(c in r for r in old for c in columns):
        return old
    return None
