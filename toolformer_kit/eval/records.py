"""The per-example record file an evaluation run appends to, read back by the harness (to resume)
and by the report (to summarise): its own module so neither has to import the other for it."""

from __future__ import annotations

import json
import logging
from pathlib import Path

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
