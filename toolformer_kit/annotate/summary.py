"""The run summary: what the paper's Table 2 and Table 10 report, plus where the time went."""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from ..calls import insert_call
from .filter import is_kept
from .records import Candidate


def _sum(stats: Sequence[dict], key: str) -> Counter:
    total: Counter = Counter()
    for s in stats:
        total.update(s.get(key, {}))
    return total


def kept_table(candidates: Sequence[Candidate], thresholds: Sequence[float]) -> dict:
    """Per tool: scored calls and, for each τf, how many reach it and in how many texts (Table 2's shape).

    >>> cs = [Candidate("a", "QA", 1, 0, .3, "", score=1.5), Candidate("a", "QA", 2, 4, .3, "", score=0.7),
    ...       Candidate("b", "QA", 1, 0, .3, "", score=2.5)]
    >>> kept_table(cs, [0.5, 2.0])["QA"]
    {'scored': 3, 'kept': [{'tau_f': 0.5, 'calls': 3, 'texts': 2}, {'tau_f': 2.0, 'calls': 1, 'texts': 1}]}
    """
    out: dict = {}
    for tool in sorted({c.tool for c in candidates}):
        scored = [c for c in candidates if c.tool == tool and c.score is not None]
        rows = []
        for t in thresholds:
            hit = [c for c in scored if is_kept(c.score, t)]
            rows.append({"tau_f": t, "calls": len(hit), "texts": len({c.doc_id for c in hit})})
        out[tool] = {"scored": len(scored), "kept": rows}
    return out


def kept_table_of(summary: dict) -> dict:
    """The kept table of a summary.json, also of one written before the table held numbers
    (``{"scored": n, "tau_f=0.5": {...}}``): the one place that reads those keys.

    >>> kept_table_of({"kept_by_tau_f": {"QA": {"scored": 3, "tau_f=0.5": {"calls": 3, "texts": 2}}}})
    {'QA': {'scored': 3, 'kept': [{'tau_f': 0.5, 'calls': 3, 'texts': 2}]}}
    """
    if "kept_at_tau_f" in summary:
        return summary["kept_at_tau_f"]
    return {tool: {"scored": row.get("scored", 0),
                   "kept": [{"tau_f": float(k.partition("=")[2]), **v} for k, v in row.items() if k.startswith("tau_f=")]}
            for tool, row in summary.get("kept_by_tau_f", {}).items()}


def kept_at(row: dict, tau_f: float) -> dict:
    """One tool's counts at ``tau_f`` (zeros when the table has no such threshold)."""
    return next((r for r in row.get("kept", []) if r["tau_f"] == tau_f), {"tau_f": tau_f, "calls": 0, "texts": 0})


def in_context(text: str, c: Candidate, before: int = 70, after: int = 40) -> str:
    """The call written into a slice of its text, for reading kept calls at a glance.

    >>> in_context("He paid 12 dollars.", Candidate("d", "Calculator", 2, 7, .5, "", input="3 * 4", result="12"))
    'He paid [Calculator(3 * 4) -> 12] 12 dollars.'
    """
    start = max(0, c.char_offset - before)
    written = insert_call(text[start: c.char_offset + after], c.char_offset - start, c.call)
    return ("…" if start else "") + written + ("…" if c.char_offset + after < len(text) else "")


def top_calls(docs, candidates: Sequence[Candidate], n: int = 12) -> list[dict]:
    """The best-scoring kept calls, one per (text, tool), in their context (Table 10's shape)."""
    texts = {d.doc_id: d.text for d in docs}
    seen, out = set(), []
    for c in sorted((c for c in candidates if c.kept), key=lambda c: (-c.score, c.doc_id, c.char_offset)):
        if (c.doc_id, c.tool) in seen:
            continue
        seen.add((c.doc_id, c.tool))
        out.append({"tool": c.tool, "score": round(c.score, 3), "L_minus": round(c.L_minus, 3),
                    "L_plus": round(c.L_plus, 3), "doc_id": c.doc_id, "in_context": in_context(texts[c.doc_id], c)})
        if len(out) >= n:
            break
    return out


def rates(seconds: Counter, tokens: Counter, scored: int) -> dict:
    """Per stage: seconds and tokens through the model per second (for sampling, the prefixes run
    plus the tokens decoded; decoded tokens also on their own).

    >>> rates(Counter(sampling=2.0), Counter(sampling_prefix=30, sampling_new=10), 0)
    {'sampling': {'seconds': 2.0, 'tokens': 40, 'tokens_per_s': 20.0, 'new_tokens_per_s': 5.0}}
    """
    out = {}
    for stage, sec in sorted(seconds.items()):
        row = {"seconds": round(sec, 2)}
        toks = tokens.get(stage, 0) + (tokens.get("sampling_prefix", 0) + tokens.get("sampling_new", 0)
                                       if stage == "sampling" else 0)
        if toks and sec:
            row["tokens"] = int(toks)
            row["tokens_per_s"] = round(toks / sec, 1)
        if stage == "sampling" and sec:
            row["new_tokens_per_s"] = round(tokens.get("sampling_new", 0) / sec, 1)
        if stage == "scoring" and sec:
            row["candidates_per_s"] = round(scored / sec, 2)
        out[stage] = row
    return out


def summarize(cfg, docs, candidates, cstar, stats, report, split, tau_f: dict | None = None) -> dict:
    """``tau_f``: the threshold each tool's calls were kept at (its own, or the run's override)."""
    counts: dict = {}
    for s in stats:
        for tool, c in s["counts"].items():
            counts.setdefault(tool, Counter()).update(c)
    for rec in cstar:
        for tool in {call["tool"] for call in rec["calls"]}:
            counts.setdefault(tool, Counter())["c_star_texts"] += 1
    scored = sum(c.score is not None for c in candidates)
    return {
        "corpus": {"documents": len(docs), "split_into_windows": split, "skipped_records": report.skipped},
        "tools": {t: dict(sorted(c.items())) for t, c in sorted(counts.items())},
        "tau_f": dict(sorted((tau_f or {}).items())),
        "kept_at_tau_f": kept_table(candidates, cfg.report_tau_f),
        "c_star_texts": len(cstar),
        "top_calls": top_calls(docs, candidates),
        "stages": rates(_sum(stats, "seconds"), _sum(stats, "tokens"), scored),
    }
