"""LAMA (T-REx, Google-RE, SQuAD) as left-to-right statement completion; WikiSearch is disabled.

**The filter.** LAMA was written for masked LMs; a left-to-right model can only fill a mask that
ends the statement, so an example is kept when one of its masked sentences has ``[MASK]`` as its
last word (only punctuation may follow), and the text before the mask is the statement to
complete. Among several such sentences the first is used; a sentence with two masks (the object
named twice) is skipped, as its prefix would hide the object. On the shared copies this keeps
548 of 4,514 T-REx facts, 114 of 1,101 Google-RE facts (38 of 585 birth places, 46 of 354 birth
dates, 30 of 162 death places) and 59 of 86 SQuAD statements.

**Which T-REx form.** ``lama-trex`` (the default, in the paper's task list) uses T-REx's
*evidence sentences*; see :data:`TREX_FORM` for why. ``lama-trex-templates`` is the variant that
LAMA itself uses for T-REx: the relation's template
filled with the subject (``Allan Peiper was born in``), kept when ``[Y]`` ends the template; it
keeps 3,674 of the 4,514 facts (23 of the 28 relations present).

>>> statement_prefix("Allan Peiper (born 26 April 1960 in [MASK]).")
'Allan Peiper (born 26 April 1960 in'
>>> statement_prefix("In [MASK] he moved to Paris.") is None
True
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterator

from .base import Example, Task, ToolPolicy, register, require

MASK = "[MASK]"
_LAST_MASK = re.compile(r"(.*\S)\s*\[MASK\][^\w\[]*", re.S)
PROMPT = "Finish the sentence with the correct fact.\n{statement}"


def statement_prefix(sentence: str) -> str | None:
    """The text before a sentence-final ``[MASK]``; None if the mask is not the last word."""
    if sentence.count(MASK) != 1:
        return None
    m = _LAST_MASK.fullmatch(sentence.strip())
    return m.group(1) if m else None


def _jsonl(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def _example(ex_id: str, sentences: list[str], answers: list[str], meta: dict) -> Example | None:
    for sentence in sentences:
        prefix = statement_prefix(sentence)
        if prefix:
            return Example(ex_id, PROMPT.format(statement=prefix), tuple(dict.fromkeys(answers)), meta)
    return None


def _answers(row: dict) -> list[str]:
    return [row["obj_label"], *row.get("obj_aliases", [])]


def load_trex(data_dir: Path) -> list[Example]:
    folder = require(data_dir / "lama" / "TREx", "LAMA T-REx folder")
    out = []
    for path in sorted(folder.glob("P*.jsonl")):
        for row in _jsonl(path):
            sentences = [e["masked_sentence"] for e in row.get("evidences", [])]
            out.append(_example(row["uuid"], sentences, _answers(row), {"relation": row["predicate_id"]}))
    return [e for e in out if e is not None]


def load_trex_templates(data_dir: Path) -> list[Example]:
    rel_path = require(data_dir / "lama" / "relations.jsonl", "LAMA relations.jsonl")
    templates = {r["relation"]: r["template"] for r in _jsonl(rel_path)}
    folder = require(data_dir / "lama" / "TREx", "LAMA T-REx folder")
    out = []
    for path in sorted(folder.glob("P*.jsonl")):
        for row in _jsonl(path):
            template = templates.get(row["predicate_id"], "")
            sentence = template.replace("[X]", row["sub_label"]).replace("[Y]", MASK)
            out.append(_example(row["uuid"], [sentence], _answers(row), {"relation": row["predicate_id"]}))
    return [e for e in out if e is not None]


def load_google_re(data_dir: Path) -> list[Example]:
    folder = require(data_dir / "lama" / "Google_RE", "LAMA Google-RE folder")
    out = []
    for path in sorted(folder.glob("*.jsonl")):
        relation = path.stem.replace("_test", "")
        for i, row in enumerate(_jsonl(path)):
            ex_id = row.get("uuid") or f"{relation}-{i}"
            out.append(_example(ex_id, row.get("masked_sentences", []), _answers(row), {"relation": relation}))
    return [e for e in out if e is not None]


def load_squad(data_dir: Path) -> list[Example]:
    path = require(data_dir / "lama" / "Squad" / "test.jsonl", "LAMA SQuAD")
    out = [_example(row.get("id") or str(i), row["masked_sentences"], _answers(row), {})
           for i, row in enumerate(_jsonl(path))]
    return [e for e in out if e is not None]


NO_WIKISEARCH = ToolPolicy(excluded=("WikiSearch",))
TREX_FORM = ("T-REx form: evidence sentences (a Wikipedia sentence stating the fact, its object masked at "
             "the end), not relation templates. The paper does not say which form it used; sentences are "
             "the form of the Google-RE and SQuAD subsets too, so all three LAMA rows are built one way. "
             "lama-trex-templates has LAMA's templates, for comparison.")


def _lama(name: str, description: str, loader, note: str = "") -> Task:
    return register(Task(name, description, loader, policy=NO_WIKISEARCH, max_new_tokens=16, exercises="QA",
                         note=note))


_lama("lama-trex", "LAMA T-REx, evidence sentences with sentence-final masks", load_trex, TREX_FORM)
_lama("lama-trex-templates", "LAMA T-REx, relation templates filled with the subject (LAMA's own probe)",
      load_trex_templates)
_lama("lama-google-re", "LAMA Google-RE, sentence-final masks", load_google_re)
_lama("lama-squad", "LAMA SQuAD, sentence-final masks", load_squad)
