"""Writing a file so that it is either complete or absent: every output another run or stage
reads back (shards, summaries, manifests, ledgers, results) goes through :func:`write_atomic`, so
a kill mid-write never leaves a half file that a resumed run would trust.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "a.json"
>>> write_atomic(p, "{}"); p.read_text(), sorted(x.name for x in p.parent.iterdir())
('{}', ['a.json'])
"""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to a temporary name beside ``path``, flush it to disk, then rename."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
