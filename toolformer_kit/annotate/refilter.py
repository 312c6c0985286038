"""C* at another τf or call cost λ, from a finished annotation run, without running a model.

Why this is possible: annotation stores every scored candidate with its losses (``score`` =
L⁻ − L⁺) in ``candidates.jsonl``, and the kept rule reads nothing else. So a study of what τf or λ
does to the trained model needs one annotation run, not one per value: each value re-decides
``kept`` (:func:`redecide`) and re-merges C* with the run's own merge rules (:mod:`.merge`: one call
per position, the per-tool cap and seed of the run).

The source run is only read; the new C* goes to another folder with ``refilter.json`` saying what
it was made from and at which (τf, λ).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Mapping, Sequence

from ..config import ConfigError
from ..files import write_atomic
from ..tools.base import AnnotationSettings
from .document import Document
from .filter import is_kept
from .merge import build_corpus
from .records import Candidate, read_jsonl
from .settings import resolve

PerTool = float | Mapping[str, float]
MARKER = "refilter.json"


# What a re-filter knows of a tool besides the values it is given: no τf (each tool needs one), λ 0.
_UNGIVEN = AnnotationSettings(tau_f=math.nan)


def _layers(tool: str, **values: PerTool) -> tuple[dict, dict]:
    """(this tool's layer, every tool's layer): a mapping names one value per tool, a number one
    for every tool."""
    mine = {k: v[tool] for k, v in values.items() if isinstance(v, Mapping) and tool in v}
    every = {k: v for k, v in values.items() if not isinstance(v, Mapping)}
    return mine, every


def thresholds(tool: str, tau_f: PerTool, call_cost: PerTool = 0.0) -> AnnotationSettings:
    """The τf and λ ``tool``'s candidates are re-decided at (:func:`~.settings.resolve`; the other
    parameters are no re-filter's business).

    >>> thresholds("QA", {"QA": 2, "MT": 0.5}, 0.25).tau_f, thresholds("MT", 1.0, {"QA": 2}).call_cost
    (2.0, 0.0)
    """
    s = resolve(_UNGIVEN, None, *_layers(tool, tau_f=tau_f, call_cost=call_cost))
    if math.isnan(s.tau_f):
        raise ConfigError(f"no value for tool {tool!r} in {tau_f}; give one for every tool annotated")
    return dataclasses.replace(s, tau_f=float(s.tau_f), call_cost=float(s.call_cost))


def redecide(candidates: Sequence[Candidate], tau_f: PerTool, call_cost: PerTool = 0.0) -> list[Candidate]:
    """Copies of ``candidates`` whose ``kept`` is decided anew: score ≥ τf + λ of their tool.

    >>> cs = [Candidate("d", "WikiSearch", 1, 0, .3, "", score=s) for s in (0.2, 0.8, 1.5)]
    >>> [c.kept for c in redecide(cs, 0.5)], [c.kept for c in redecide(cs, 0.5, {"WikiSearch": 0.5})]
    ([False, True, True], [False, False, True])
    >>> cs[0].kept  # the stored records are left as they were
    False
    """
    at = {tool: thresholds(tool, tau_f, call_cost) for tool in {c.tool for c in candidates}}
    return [dataclasses.replace(c, kept=is_kept(c.score, at[c.tool].tau_f, at[c.tool].call_cost))
            for c in candidates]


def read_run(folder: Path) -> tuple[list[Document], list[Candidate], dict]:
    """(documents, candidates, settings) of a finished annotation run, or one error naming the fix."""
    folder = Path(folder)
    manifest = folder / "manifest.json"
    if not manifest.is_file():
        raise ConfigError(f"{folder} is not a finished annotation run (no manifest.json); finish it first "
                          f"(re-run the same annotate or experiment command) or pass another folder")
    settings = json.loads(manifest.read_text("utf-8")).get("settings", {})
    docs = []
    with open(folder / "documents.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                docs.append(Document(str(row["id"]), row["text"], {}, int(row.get("context_chars", 0))))
    return docs, read_jsonl(folder / "candidates.jsonl"), settings


def kept_counts(candidates: Sequence[Candidate]) -> dict:
    """Per tool: scored and kept candidates (before merging: C* has one call per position).

    >>> kept_counts([Candidate("d", "QA", 1, 0, .3, "", score=1.0, kept=True), Candidate("d", "QA", 2, 4, .3, "")])
    {'QA': {'scored': 1, 'kept': 1}}
    """
    out: dict = {}
    for c in candidates:
        row = out.setdefault(c.tool, {"scored": 0, "kept": 0})
        row["scored"] += c.score is not None
        row["kept"] += bool(c.kept)
    return out


def refilter_run(source: Path, dest: Path, tau_f: PerTool, call_cost: PerTool = 0.0) -> dict:
    """Write ``dest/corpus.jsonl`` (C* at τf, λ) and ``dest/refilter.json`` from the finished run in
    ``source``; returns what refilter.json holds. The C* records carry ``id``, ``text``,
    ``original`` and ``calls`` (documents.jsonl keeps no other field of the source records)."""
    source, dest = Path(source), Path(dest)
    if source.resolve() == dest.resolve():
        raise ConfigError(f"refiltering {source} into itself would overwrite its C*; pass another folder")
    docs, candidates, settings = read_run(source)
    if settings.get("merge", "independent") != "independent":
        raise ConfigError(f"{source} was merged with --merge {settings['merge']}, which re-scores calls with the model; "
                          "a re-filter runs no model: annotate again with --tau-f (the shards are reused) instead")
    decided = redecide(candidates, tau_f, call_cost)
    cstar = build_corpus(docs, decided, int(settings.get("cap_per_tool", 25000)), int(settings.get("seed", 0)))
    dest.mkdir(parents=True, exist_ok=True)
    write_atomic(dest / "corpus.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in cstar))
    info = {"source": str(source), "tau_f": tau_f, "call_cost": call_cost, "documents": len(docs),
            "c_star_texts": len(cstar), "c_star_calls": sum(len(r["calls"]) for r in cstar),
            "candidates": kept_counts(decided)}
    write_atomic(dest / MARKER, json.dumps(info, indent=1, ensure_ascii=False))
    return info
