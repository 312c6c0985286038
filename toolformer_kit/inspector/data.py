"""What the inspector shows, read from the files ``annotate`` and ``eval`` write.

Pure readers and counters; the HTTP layer in :mod:`.server` only slices and serialises them.
An annotation folder is recognised by ``candidates.jsonl``, an evaluation folder by
``*/*/*/examples.jsonl`` (model/setting/task).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

from ..annotate.filter import is_kept
from ..annotate.settings import resolve_run
from ..files import DamagedFileError, read_json
from ..tools import BUILTIN, TOOLS, get_tool

log = logging.getLogger(__name__)


@dataclass
class InspectData:
    candidates: list[dict] = field(default_factory=list)
    documents: dict[str, str] = field(default_factory=dict)
    generations: list[dict] = field(default_factory=list)
    summaries: list[dict] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    tau_f: dict[str, float] = field(default_factory=dict)  # tool → the τf its calls were kept at

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


NUMERIC = ("score", "L_minus", "L_plus", "L_empty", "L_result", "tau_f")


def finite_or_none(value):
    """A score as a finite float, else None: NaN, text or a list must not break the page's JSON.

    >>> finite_or_none("1.5"), finite_or_none(float("nan")), finite_or_none("high"), finite_or_none(True)
    (1.5, None, None, None)
    """
    if isinstance(value, bool):
        return None
    try:
        num = float(value)
    except (TypeError, ValueError):
        return None
    return num if num - num == 0 else None


def _candidates(rows: list, folder: Path, source: str) -> list[dict]:
    """The rows that are candidates (a JSON object with a ``doc_id``), keyed; the others are
    skipped with one warning naming ``source`` (an edited file must not break the page)."""
    good = [c for c in rows if isinstance(c, dict) and "doc_id" in c]
    if len(good) < len(rows):
        log.warning("%s: skipped %d row(s) that are not candidates (no doc_id)", source, len(rows) - len(good))
    return [_candidate(c, f"{folder.name}:{i}") for i, c in enumerate(good)]


def _summary(path: Path) -> dict:
    """A run's or a dataset's summary.json: a JSON object whose ``tau_f`` (if any) is a number or
    a number per tool, or one error naming the file."""
    fix = f"restore it (git checkout -- {path}) or delete it (the inspector then shows each stored decision)"
    summary = read_json(path, fix)
    tau = summary.get("tau_f") if isinstance(summary, dict) else None
    ok = isinstance(summary, dict) and (tau is None or finite_or_none(tau) is not None or (
        isinstance(tau, dict) and all(finite_or_none(v) is not None for v in tau.values())))
    if not ok:
        what = "not a JSON object" if not isinstance(summary, dict) else f"tau_f {tau!r} is not a number"
        raise DamagedFileError(f"{path} is damaged ({what}); {fix}")
    return summary


def _candidate(c: dict, key: str) -> dict:
    for name in NUMERIC:
        if name in c:
            c[name] = finite_or_none(c[name])
    c["tool"] = str(c.get("tool", "?"))
    return c | {"_key": key}


def _texts(rows: list, field: str) -> dict[str, str]:
    """id → text; a row without an id or a text is skipped (an edited or foreign file), not fatal."""
    out = {}
    for row in rows:
        if isinstance(row, dict) and "id" in row and isinstance(row.get(field, row.get("text")), str):
            out.setdefault(str(row["id"]), row.get(field, row.get("text")))
        else:
            log.warning("skipped a row without 'id' or text: %.80s", json.dumps(row, default=str))
    return out


def load_annotation(folder: Path, data: InspectData) -> None:
    cands = _candidates(_jsonl(folder / "candidates.jsonl"), folder, str(folder / "candidates.jsonl"))
    data.candidates += cands
    for name, field in (("documents.jsonl", "text"), ("corpus.jsonl", "original")):  # C* keeps the original
        if (folder / name).is_file():
            for k, v in _texts(_jsonl(folder / name), field).items():
                data.documents.setdefault(k, v)
    summary = {}
    if (folder / "summary.json").is_file():
        summary = _summary(folder / "summary.json")
        if not isinstance(summary.get("tau_f", {}), dict):
            summary["tau_f"] = {}
        data.summaries.append({"source": str(folder), **summary})
    made = read_json(folder / "manifest.json").get("settings", {}) if (folder / "manifest.json").is_file() else {}
    data.tau_f.update(run_tau_f(summary, {c["tool"] for c in cands}, made))


def run_tau_f(summary: dict, tools: set[str], settings: dict | None = None) -> dict[str, float]:
    """Each tool's τf in a run: as its summary records it, else (a run written before summaries
    did) resolved from the ``settings`` its manifest records, as annotation resolved it
    (:func:`~toolformer_kit.annotate.settings.resolve_run`: per-tool override, run-wide τf, the
    tool's own); a tool that is not registered here gets none.

    >>> run_tau_f({"tau_f": {"QA": 2.0}}, {"QA", "Calculator", "Nope"})
    {'Calculator': 0.5, 'QA': 2.0}
    >>> run_tau_f({}, {"QA", "Calculator"}, {"tau_f": 2.0, "per_tool": ["Calculator.tau_f=0.25"]})
    {'Calculator': 0.25, 'QA': 2.0}
    """
    out = {}
    for name in sorted(tools):
        if name in summary.get("tau_f", {}):
            out[name] = summary["tau_f"][name]
        elif name in TOOLS or name in BUILTIN:
            out[name] = resolve_run(get_tool(name), settings or {}).tau_f
    return out


def load_campaign(folder: Path, data: InspectData) -> None:
    """A campaign's dataset folder (``toolformer campaign``): its banked candidates (score ≥ 0) and
    C*; the calls are judged at the τf its summary names."""
    cands = _candidates([c for p in sorted((folder / "bank").glob("shard-*.jsonl")) for c in _jsonl(p)], folder,
                        str(folder / "bank"))
    data.candidates += cands
    if (folder / "data" / "cstar.jsonl").is_file():
        for k, v in _texts(_jsonl(folder / "data" / "cstar.jsonl"), "original").items():
            data.documents.setdefault(k, v)
    summary_path = folder / "data" / "summary.json"
    summary = _summary(summary_path) if summary_path.is_file() else {}
    if isinstance(summary.get("tau_f"), dict):
        summary = {k: v for k, v in summary.items() if k != "tau_f"}  # a campaign's τf is one number
    if summary:
        data.summaries.append({"source": str(folder), "campaign": True, **summary})
    if "tau_f" in summary:
        data.tau_f.update({t: float(summary["tau_f"]) for t in {c["tool"] for c in cands}})


def load_eval(folder: Path, data: InspectData) -> None:
    for path in sorted(folder.glob("*/*/*/examples.jsonl")):
        model, setting, task = path.parts[-4:-1]
        for row in _jsonl(path):
            data.generations.append({"model": model, "setting": setting, **row, "task": task})


def _parts(folder: Path) -> list[Path]:
    """The folder itself, or for a pipeline or experiment run folder its annotate/ and eval/."""
    if (folder / "candidates.jsonl").is_file() or (folder / "bank" / "campaign.json").is_file():
        return [folder]
    inside = [folder / name for name in ("annotate", "eval") if (folder / name).is_dir()]
    return inside or [folder]


def load(folders: list[str | Path]) -> InspectData:
    """Read every folder given; raises FileNotFoundError naming a folder with nothing to show."""
    data = InspectData()
    for f in folders:
        folder = Path(f)
        before = (len(data.candidates), len(data.generations))
        for part in _parts(folder):
            if (part / "candidates.jsonl").is_file():
                load_annotation(part, data)
            elif (part / "bank" / "campaign.json").is_file():
                load_campaign(part, data)
            load_eval(part, data)
        if (len(data.candidates), len(data.generations)) == before:
            raise FileNotFoundError(f"{folder} holds no annotation output (candidates.jsonl) and no "
                                    "evaluation traces (MODEL/SETTING/TASK/examples.jsonl); pass the "
                                    "--out folder of 'toolformer annotate', 'eval', 'pipeline' or 'experiment'")
        data.sources.append(str(folder))
    return data


def kept(c: dict, tau_f: float | None) -> bool:
    """Whether a candidate is kept: its stored decision (made at its tool's own τf) when no
    ``tau_f`` is asked for, else the filter's rule at ``tau_f``."""
    return bool(c.get("kept")) if tau_f is None else is_kept(c.get("score"), tau_f)


def kept_counts(candidates: list[dict], tau_f: float | None = None) -> dict[str, dict[str, int]]:
    """Per tool: scored candidates and how many are kept (stored decisions, or at ``tau_f``).

    >>> cs = [{"tool": "A", "score": 1.2, "kept": True}, {"tool": "A", "score": 0.4}, {"tool": "A", "score": None}]
    >>> kept_counts(cs, 1.0), kept_counts(cs, 0.3)["A"]["kept"], kept_counts(cs)["A"]["kept"]
    ({'A': {'candidates': 3, 'scored': 2, 'kept': 1}}, 2, 1)
    """
    out: dict[str, dict[str, int]] = {}
    for c in candidates:
        row = out.setdefault(c["tool"], {"candidates": 0, "scored": 0, "kept": 0})
        row["candidates"] += 1
        if c.get("score") is not None:
            row["scored"] += 1
            row["kept"] += kept(c, tau_f)
    return out
