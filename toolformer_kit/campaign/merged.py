"""The merged C* (issue 42, item 2): every published dataset's texts with their calls, in one
corpus, as the paper fine-tunes one model on the calls of all five tools.

Built from the published folders alone (each ``data/cstar.jsonl`` and ``data/documents.jsonl``),
so it is rebuilt by one command on any machine and never re-annotates:

* **One text, all its calls.** Where two datasets annotated the same window (same id, same text
  without calls), its calls are joined and written in once, one call per position (the higher
  score wins, as :func:`~toolformer_kit.annotate.merge.best_per_position` decides within a run).
* **The paper's cap**: each tool's calls in at most ``cap`` texts (25,000 in the paper), a seeded
  choice (:func:`~toolformer_kit.annotate.merge.cap_per_tool`).
* **A stated mix**: every text of every dataset, in a seeded order so that one fine-tuning pass
  meets the tools interleaved; the counts per dataset and per tool are the card's first table.
* ``documents.jsonl`` is the union of the datasets' annotated texts without calls: +CC's C.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Sequence

from ..annotate.merge import annotate_text, best_per_position, cap_per_tool
from ..annotate.records import Candidate
from ..config import ConfigError
from ..files import write_atomic

PAPER_CAP = 25_000


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def read_dataset(folder: str | Path) -> tuple[list[dict], list[dict]]:
    """(C* rows, annotated texts) of one published dataset, or one error naming what is missing."""
    folder = Path(folder)
    cstar, docs = folder / "data" / "cstar.jsonl", folder / "data" / "documents.jsonl"
    if not cstar.is_file():
        raise ConfigError(f"{folder}: no data/cstar.jsonl; give dataset folders made by `toolformer campaign` "
                          "(e.g. datasets/cstar-math-v2)")
    return _rows(cstar), (_rows(docs) if docs.is_file() else [])


def _candidates(row: dict, text_key: str) -> list[Candidate]:
    """The row's calls as kept candidates of the merged text ``text_key`` (one id per distinct text)."""
    return [Candidate(text_key, c["tool"], 0, c["char_offset"], 0.0, "", input=c["input"], result=c["result"],
                      kept=True, score=c.get("score")) for c in row["calls"]]


def dataset_state(folder: str | Path) -> str:
    """Whether a campaign's dataset was finished when merged, from its data/summary.json: one that
    is still banking towards its target makes the merge a snapshot of it."""
    path = Path(folder) / "data" / "summary.json"
    if not path.is_file():
        return "–"
    s = json.loads(path.read_text(encoding="utf-8"))
    target = f"target {s['target_calls']} calls" if s.get("target_calls") else "no target"
    return f"{'complete' if s.get('complete') else 'in progress'} (stopped by {s.get('stopped', '?')}; {target})"


def merge_rows(datasets: Sequence[tuple[str, list[dict]]], cap: int = PAPER_CAP, seed: int = 0) -> list[dict]:
    """The merged C* rows: one per distinct (id, text without calls), its calls from every dataset
    joined (one per position), each tool capped at ``cap`` texts, in a seeded order. Each row names
    the datasets it came from (``from``)."""
    by_key: dict[tuple, dict] = {}
    for name, rows in datasets:
        for row in rows:
            key = (row["id"], row.get("original", row["text"]))
            entry = by_key.setdefault(key, {"row": row, "calls": [], "from": [], "key": str(len(by_key))})
            entry["calls"] += _candidates(row, entry["key"])
            entry["from"].append(name)
    chosen = cap_per_tool(best_per_position(c for e in by_key.values() for c in e["calls"]), cap, seed)
    kept: dict[str, list[Candidate]] = {}
    for c in chosen:
        kept.setdefault(c.doc_id, []).append(c)
    out = []
    for (_, original), e in by_key.items():
        calls = kept.get(e["key"], [])
        if not calls:
            continue
        row = dict(e["row"], original=original, **{"from": sorted(set(e["from"]))})
        row["text"] = annotate_text(original, calls) if len(e["from"]) > 1 else e["row"]["text"]
        if len(e["from"]) > 1:
            row["calls"] = [{"tool": c.tool, "input": c.input, "result": c.result, "char_offset": c.char_offset,
                             "score": c.score} for c in calls]
        out.append(row)
    random.Random(f"{seed}:merged").shuffle(out)
    return out


def merge_documents(datasets: Sequence[tuple[str, list[dict]]]) -> list[dict]:
    """Every annotated text of every dataset, once (by id and text), in the datasets' order."""
    seen, out = set(), []
    for _, docs in datasets:
        for d in docs:
            if (d["id"], d["text"]) not in seen:
                seen.add((d["id"], d["text"]))
                out.append(d)
    return out


def mix(rows: Sequence[dict]) -> dict:
    """Texts and calls per source dataset and per tool: the stated mix."""
    texts, calls = Counter(), Counter()
    for r in rows:
        for name in r["from"]:
            texts[name] += 1
        for c in r["calls"]:
            calls[c["tool"]] += 1
    return {"texts": len(rows), "texts_by_dataset": dict(sorted(texts.items())),
            "calls": sum(calls.values()), "calls_by_tool": dict(sorted(calls.items()))}


def build_merged(folders: Sequence[str], out: str | Path, cap: int = PAPER_CAP, seed: int = 0,
                 command: str = "") -> dict:
    """Write OUT/data/cstar.jsonl, documents.jsonl, summary.json and a card; return the summary."""
    if not folders:
        raise ConfigError("give the dataset folders to merge (--datasets datasets/cstar-math-v2,...)")
    datasets = [(str(f), *read_dataset(f)) for f in folders]
    rows = merge_rows([(n, c) for n, c, _ in datasets], cap, seed)
    docs = merge_documents([(n, d) for n, _, d in datasets])
    summary = {"datasets": list(map(str, folders)), "cap_per_tool": cap, "seed": seed, "command": command,
               **mix(rows), "documents": len(docs), "states": {str(f): dataset_state(f) for f in folders}}
    data = Path(out) / "data"
    data.mkdir(parents=True, exist_ok=True)
    for name, items in (("cstar.jsonl", rows), ("documents.jsonl", docs)):
        write_atomic(data / name, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in items))
    write_atomic(data / "summary.json", json.dumps(summary, indent=1, ensure_ascii=False))
    write_atomic(Path(out) / "README.md", merged_card(summary))
    return summary


def merged_card(s: dict) -> str:
    """The merged C*'s card: what it joins, the mix, how it was built."""
    lines = ["# The merged C*: every published dataset's calls in one corpus", "",
             f"**{s['calls']} calls in {s['texts']} texts** from {len(s['datasets'])} datasets, for one model "
             "fine-tuned on every tool's calls (the paper's §2: C* is the union over tools). Built by "
             f"`{s['command'] or 'toolformer merge'}` from the published folders alone; nothing is annotated again.",
             "", "| dataset | texts | state when merged | card |", "|---|---|---|---|"]
    lines += [f"| `{d}` | {s['texts_by_dataset'].get(d, 0)} | {s['states'][d]} | "
              f"[{Path(d).name}](../{Path(d).name}/README.md) |" for d in s["datasets"]]
    lines += ["", "| tool | calls |", "|---|---|"] + [f"| {t} | {n} |" for t, n in s["calls_by_tool"].items()]
    lines += ["", f"- Mix: every text of every dataset (no re-weighting), in a seeded order (seed {s['seed']}); "
              f"each tool's calls in at most {s['cap_per_tool']} texts (the paper's cap is {PAPER_CAP}).",
              "- A window annotated by two datasets (same id and text) holds the calls of both, one per position.",
              f"- `data/documents.jsonl`: the {s['documents']} annotated texts without calls (+CC's C).",
              "- A snapshot: a recipe that names the datasets (`cstar_dataset: A,B,...`, e.g. "
              "`configs/experiments/all.yaml`) builds the same merge on the fly from the folders as they are when it "
              "runs, and writes its own mix into its manifest; run this command again after a dataset grows.", ""]
    return "\n".join(lines)
