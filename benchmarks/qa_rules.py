"""Abstention rules for the QA tool, replayed on one ``qa_tool_check`` run (issue 40, item 3): which
rule would keep more right answers at ≤ 10 % wrong where abstaining is right?

The check's JSONL holds, per question, the reader's raw reply, the grounded span (kept or not), its
support and its confidence margin (log p of the span's first token − log p of " unknown"'s, right
after "Answer:"), so every rule below is computed from the same replies, with no model run:

* ``today``: a grounded span whose sentence holds ≥ MIN_SUPPORT of the question's word weight;
* ``margin``: ``support ≥ s and margin ≥ m``, or ``margin ≥ m_alone`` (a grid);
* ``prefix``: where the reply is not a span, its longest leading run of words that is one
  ("Honshu, Japan" → "Honshu"), then today's support check.

Tune on the first items (``--offset 0``), never on the held-out ones.

    python benchmarks/qa_rules.py runs/qa-tune/sentences.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from toolformer_kit.measures.qa_check import GOAL_WRONG, outcome
from toolformer_kit.tools.qa import MIN_SUPPORT, clean_answer, corpus_idf, grounded, support
from toolformer_kit.tools.wikisearch import default_index


def chosen(record: dict) -> list[tuple[str, str]]:
    """The (title, sentence) pairs the reader read, from the trace's "title: sentence" lines."""
    return [tuple(s.split(": ", 1)) if ": " in s else ("", s) for s in record["sentences"]]


def prefix_span(record: dict) -> str | None:
    """The reply's longest leading run of words that is a grounded span."""
    words = (clean_answer(record.get("raw") or "") or "").split()
    for n in range(len(words), 0, -1):
        span = grounded(" ".join(words[:n]).rstrip(",;:"), [s for _, s in chosen(record)], record["question"])
        if span:
            return span
    return None


def shares(records: list[dict], rule) -> dict:
    ret = [r for r in records if r["subset"] == "retrievable"]
    other = [r for r in records if r["subset"] != "retrievable"]
    got = [outcome(rule(r), r["answers"]) for r in ret]
    return {"right": got.count("right") / len(ret), "wrong": got.count("wrong") / len(ret),
            "wrong_other": sum(outcome(rule(r), r["answers"]) == "wrong" for r in other) / max(1, len(other))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("jsonl", help="a qa_tool_check run's sentences.jsonl")
    args = ap.parse_args(argv)
    records = [json.loads(line) for line in Path(args.jsonl).read_text(encoding="utf-8").splitlines() if line.strip()]
    weight = corpus_idf(default_index())

    def margin_rule(s_min, m_min, m_alone):
        def rule(r):
            m, s = r.get("margin"), r.get("support") or 0.0
            return r.get("span") if r.get("span") and m is not None and ((s >= s_min and m >= m_min) or m >= m_alone) else None
        return rule

    def prefix_rule(r):
        span = r.get("span") or (prefix_span(r) if r["why"] == "not grounded" else None)
        return span if span and support(span, chosen(r), r["question"], weight) >= MIN_SUPPORT else None

    rows = [("today", shares(records, lambda r: r.get("answer"))),
            ("no support check", shares(records, lambda r: r.get("span"))),
            ("prefix", shares(records, prefix_rule))]
    grid = [((s, m, a), shares(records, margin_rule(s, m, a)))
            for s in (0.0, 0.1, 0.2, 0.25, 0.3, 0.35) for m in (0, 2, 3, 4, 5, 6) for a in (8, 10, 12, 99)]
    fits = [g for g in grid if g[1]["wrong_other"] <= GOAL_WRONG]
    if fits:
        (s, m, a), best = max(fits, key=lambda g: (g[1]["right"], -g[1]["wrong_other"]))
        rows.append((f"margin, best at <= {GOAL_WRONG:.0%} wrong elsewhere (support {s}, margin {m}, alone {a})", best))
    print("| rule | right (retrievable) | wrong (retrievable) | wrong where abstaining is right |\n|---|---|---|---|")
    for name, r in rows:
        print(f"| {name} | {r['right']:.1%} | {r['wrong']:.1%} | {r['wrong_other']:.1%} |")
    print(json.dumps({name: r for name, r in rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
