"""What the default pipeline annotates and learns from (issue 43): a few *fresh* windows of the
maths campaign's corpus, and the published C* joined with the calls this run keeps.

Why both: a laptop cannot annotate enough text in minutes for fine-tuning to teach tool use (the
published datasets/cstar-math took 4.3 hours for 300 calls), yet the demonstration must run every
stage of the method on real text. So the run annotates the next windows that no published dataset
has seen, at the paper's settings with one model M, and trains on those kept calls plus the
published ones.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Sequence

from ..annotate.document import Document
from ..annotate.math_corpus import math_selection, solution_windows
from ..config import ConfigError
from ..files import write_atomic

REPO = Path(__file__).resolve().parents[2]
# How the maths campaign cuts its corpus (campaign.run.campaign_windows: the annotation's
# default window, 32 tokens of left context); a test holds the two to the same windows.
CAMPAIGN_WINDOW, CAMPAIGN_CONTEXT = 128, 32


def dataset_dir(name: str) -> Path:
    """A published C* folder: ``name`` as given (relative to the working directory), else inside
    the repository, so the default works from any directory."""
    for path in (Path(name), REPO / name):
        if (path / "data" / "cstar.jsonl").is_file():
            return path
    raise ConfigError(f"--cstar-datasets {name}: no data/cstar.jsonl there (nor under {REPO}); give a dataset "
                      "folder made by `toolformer campaign` (e.g. datasets/cstar-math), or '' for none")


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def annotated_ids(datasets: Sequence[str]) -> set[str]:
    """Ids of every window the datasets annotated (kept a call or not)."""
    ids: set[str] = set()
    for name in datasets:
        docs = dataset_dir(name) / "data" / "documents.jsonl"
        ids |= {r["id"] for r in read_jsonl(docs)} if docs.is_file() else set()
    return ids


def fresh_windows(n: int, seed: int, datasets: Sequence[str], count: Callable[[str], int]) -> list[Document]:
    """The first ``n`` windows of the maths campaign's corpus (in its reading order, cut as it cuts
    them, a problem's question as read-only context) that none of ``datasets`` annotated."""
    docs, _ = solution_windows(math_selection(seed, wiki=True).docs, CAMPAIGN_WINDOW, count, CAMPAIGN_CONTEXT)
    seen = annotated_ids(datasets)
    fresh = [d for d in docs if d.doc_id not in seen][:n]
    if not fresh:
        raise ConfigError(f"the maths corpus has no window left that {', '.join(datasets)} did not annotate; "
                          "use --corpus default")
    return fresh


def write_windows(path: Path, docs: Sequence[Document]) -> None:
    """The annotated windows as JSONL, for the reader (the run itself passes the documents)."""
    rows = [{"id": d.doc_id, "text": d.text, "context_chars": d.context_chars, **d.meta} for d in docs]
    write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def joined(annotated: Path, datasets: Sequence[str], out: Path) -> dict[str, Path]:
    """``out/cstar.jsonl``: the datasets' C* then this run's; ``out/documents.jsonl``: every text
    the datasets and this run annotated (the +CC baseline's subset C). Each row says where it
    came from (``from``); a text already in a dataset is not added twice."""
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for name in ("cstar.jsonl", "documents.jsonl"):
        own = annotated / ("corpus.jsonl" if name == "cstar.jsonl" else "documents.jsonl")
        sources = [(str(dataset_dir(d).relative_to(REPO) if dataset_dir(d).is_relative_to(REPO) else d),
                    dataset_dir(d) / "data" / name) for d in datasets] + [("this run", own)]
        rows, seen = [], set()
        for label, path in sources:
            for r in read_jsonl(path) if path.is_file() else []:
                key = r.get("id") or r.get("text")
                if key not in seen:
                    seen.add(key)
                    rows.append({**r, "from": label})
        files[name] = out / name
        write_atomic(files[name], "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return files


def provenance(cstar: Path) -> dict[str, dict[str, int]]:
    """Texts and calls of a joined C* per source, for the report."""
    counts: dict[str, dict[str, int]] = {}
    for r in read_jsonl(cstar):
        c = counts.setdefault(r.get("from", "this run"), {"texts": 0, "calls": 0})
        c["texts"] += 1
        c["calls"] += len(r.get("calls") or [])
    return counts
