"""The per-example record file an evaluation run appends to, read back by the harness (to resume)
and by the report (to summarise): its own module so neither has to import the other for it."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from ..files import write_atomic

log = logging.getLogger(__name__)

RECORDS = "examples.jsonl"


def read_records(path: Path) -> list[dict]:
    """Records written so far; a line cut off by a kill is ignored (it is redone)."""
    if not path.is_file():
        return []
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                log.warning("%s: ignoring a truncated line (it will be redone)", path)
    return out


def records_for_append(path: Path) -> list[dict]:
    r"""The records so far, with the file made safe to append to: a line cut off by a kill (no
    closing newline, or not JSON) is dropped from the file, not only ignored. Appending after a cut
    line would glue the next record onto it and lose that record too.

    >>> import tempfile; p = Path(tempfile.mkdtemp()) / RECORDS
    >>> _ = p.write_text('{"id": 1}\n{"id": 2, "ans')
    >>> records_for_append(p), p.read_text()
    ([{'id': 1}], '{"id": 1}\n')
    """
    records = read_records(path)
    if path.is_file():
        text = path.read_text(encoding="utf-8")
        if text and (not text.endswith("\n") or len(records) != sum(1 for ln in text.splitlines() if ln.strip())):
            log.warning("%s: dropping a truncated line before appending (its example is redone)", path)
            write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return records
