"""What the inspector shows, read from the files ``annotate`` and ``eval`` write.

Pure readers and counters; the HTTP layer in :mod:`.server` only slices and serialises them.
An annotation folder is recognised by ``candidates.jsonl``, an evaluation folder by
``*/*/*/examples.jsonl`` (model/setting/task).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class InspectData:
    candidates: list[dict] = field(default_factory=list)
    documents: dict[str, str] = field(default_factory=dict)
    generations: list[dict] = field(default_factory=list)
    summaries: list[dict] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def tools(self) -> list[str]:
        return sorted({c["tool"] for c in self.candidates})


def _jsonl(path: Path) -> list[dict]:
    rows = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if line:
                try:
                    rows.append(json.loads(line))
                except ValueError:  # a line cut by a kill: skip it, as the writers do
                    continue
    return rows


def load_annotation(folder: Path, data: InspectData) -> None:
    cands = _jsonl(folder / "candidates.jsonl")
    for i, c in enumerate(cands):
        c["_key"] = f"{folder.name}:{i}"
    data.candidates += cands
    if (folder / "documents.jsonl").is_file():
        for row in _jsonl(folder / "documents.jsonl"):
            data.documents.setdefault(str(row["id"]), row["text"])
    if (folder / "corpus.jsonl").is_file():  # C* keeps each annotated document's original text
        for row in _jsonl(folder / "corpus.jsonl"):
            data.documents.setdefault(str(row["id"]), row.get("original", row.get("text", "")))
    if (folder / "summary.json").is_file():
        data.summaries.append({"source": str(folder), **json.loads((folder / "summary.json").read_text("utf-8"))})


def load_eval(folder: Path, data: InspectData) -> None:
    for path in sorted(folder.glob("*/*/*/examples.jsonl")):
        model, setting, task = path.parts[-4:-1]
        for row in _jsonl(path):
            data.generations.append({"model": model, "setting": setting, **row, "task": task})


def load(folders: list[str | Path]) -> InspectData:
    """Read every folder given; raises FileNotFoundError naming a folder with nothing to show."""
    data = InspectData()
    for f in folders:
        folder = Path(f)
        before = (len(data.candidates), len(data.generations))
        if (folder / "candidates.jsonl").is_file():
            load_annotation(folder, data)
        load_eval(folder, data)
        if (len(data.candidates), len(data.generations)) == before:
            raise FileNotFoundError(f"{folder} holds no annotation output (candidates.jsonl) and no "
                                    "evaluation traces (MODEL/SETTING/TASK/examples.jsonl); pass the "
                                    "--out folder of 'toolformer annotate' or 'toolformer eval'")
        data.sources.append(str(folder))
    return data


def kept_counts(candidates: list[dict], tau_f: float) -> dict[str, dict[str, int]]:
    """Per tool: scored candidates and how many a threshold τf would keep (score ≥ τf).

    >>> kept_counts([{"tool": "A", "score": 1.2}, {"tool": "A", "score": 0.4}, {"tool": "A", "score": None}], 1.0)
    {'A': {'candidates': 3, 'scored': 2, 'kept': 1}}
    """
    out: dict[str, dict[str, int]] = {}
    for c in candidates:
        row = out.setdefault(c["tool"], {"candidates": 0, "scored": 0, "kept": 0})
        row["candidates"] += 1
        if c.get("score") is not None:
            row["scored"] += 1
            row["kept"] += c["score"] >= tau_f
    return out
