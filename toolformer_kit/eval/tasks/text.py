"""Language-modelling texts for perplexity (Table 8): WikiText-2 raw test and a held-out corpus.

WikiText-2 is split into its articles (top-level ``= Title =`` headings) so that ``--limit``
takes whole articles and intervals can resample them. A held-out corpus is any ``.txt`` file
(blank-line separated documents) or ``.jsonl`` file with a ``text`` field.

>>> [e.id for e in split_articles(" = A = \\n x \\n = = Sub = = \\n y \\n = B = \\n z \\n")]
['wikitext-0', 'wikitext-1']
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from .base import Example, Task, register, require

_ARTICLE = re.compile(r"^ = [^=](?:.*[^=])? = $", re.M)


def split_articles(raw: str) -> list[Example]:
    starts = [m.start() for m in _ARTICLE.finditer(raw)] or [0]
    bounds = zip(starts, starts[1:] + [len(raw)])
    texts = [raw[a:b].strip("\n") for a, b in bounds]
    return [Example(f"wikitext-{i}", t, ()) for i, t in enumerate(t for t in texts if t.strip())]


def load_wikitext2(data_dir: Path) -> list[Example]:
    path = require(data_dir / "wikitext-2-raw" / "wiki.test.raw", "WikiText-2 raw test")
    return split_articles(path.read_text(encoding="utf-8"))


def load_corpus(path: str | Path) -> list[Example]:
    """Documents of a held-out corpus file (``.jsonl`` with ``text``, or blank-line separated text)."""
    path = require(Path(path), "held-out corpus file")
    if path.suffix == ".jsonl":
        with open(path, encoding="utf-8") as fh:
            texts = [json.loads(line)["text"] for line in fh if line.strip()]
    else:
        texts = re.split(r"\n\s*\n", path.read_text(encoding="utf-8"))
    return [Example(f"{path.stem}-{i}", t, ()) for i, t in enumerate(t for t in texts if t.strip())]


register(Task("wikitext2", "WikiText-2 raw test perplexity, calls disabled", load_wikitext2, kind="perplexity"))
