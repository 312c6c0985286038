"""Step 5 of annotation: write the kept calls into their texts, giving C*.

* **One call per position.** Where several kept candidates (of one or several tools) share a
  character offset, the highest score wins (ties: tool name, then sample order), so C* never stacks
  two calls at one spot; different positions of one text each keep their call.
* **Texts without a kept call are left out** of C*; the paper fine-tunes on texts with calls only.
* **At most ``cap`` texts per tool** (the paper's 25,000): where a tool has calls in more texts, a
  seeded subset of those texts keeps that tool's calls. Which texts is decided from the sorted
  document ids and the seed alone, so a resumed or re-run annotation writes the same C*.
"""

from __future__ import annotations

import random
from typing import Iterable, Mapping, Sequence

from ..calls import insert_call, strip_calls
from .chain import next_round
from .records import Candidate


def best_per_position(kept: Iterable[Candidate]) -> list[Candidate]:
    """The winning call at each (document, char offset).

    >>> a = Candidate("d", "Calculator", 3, 10, 0.5, "", kept=True, score=1.2)
    >>> b = Candidate("d", "QA", 3, 10, 0.5, "", kept=True, score=2.0)
    >>> [c.tool for c in best_per_position([a, b])]
    ['QA']
    """
    best: dict = {}
    for c in kept:
        key = (c.doc_id, c.char_offset)
        rank = (-(c.score or 0.0), c.tool, c.sample_index)
        if key not in best or rank < best[key][0]:
            best[key] = (rank, c)
    return [c for _, c in sorted(best.values(), key=lambda rc: (rc[1].doc_id, rc[1].char_offset))]


def cap_per_tool(calls: Sequence[Candidate], cap: int, seed: int) -> list[Candidate]:
    """Keep each tool's calls in at most ``cap`` documents (a seeded choice among them).

    >>> calls = [Candidate(f"d{i}", "QA", 0, 0, 1.0, "", kept=True) for i in range(5)]
    >>> len(cap_per_tool(calls, 2, seed=0)), cap_per_tool(calls, 2, 0) == cap_per_tool(calls, 2, 0)
    (2, True)
    """
    if cap <= 0:
        return list(calls)
    allowed: dict[str, set] = {}
    for tool in sorted({c.tool for c in calls}):
        docs = sorted({c.doc_id for c in calls if c.tool == tool})
        if len(docs) > cap:
            docs = random.Random(f"{seed}:cap:{tool}").sample(docs, cap)
        allowed[tool] = set(docs)
    return [c for c in calls if c.doc_id in allowed[c.tool]]


def annotate_text(text: str, calls: Sequence[Candidate]) -> str:
    """``text`` with each call and its result inserted at its offset (right to left, so earlier
    offsets stay valid).

    >>> c = Candidate("d", "Calculator", 2, 8, 0.9, "", input="2 + 3", result="5", kept=True)
    >>> annotate_text("It costs 5 dollars.", [c])
    'It costs [Calculator(2 + 3) -> 5] 5 dollars.'
    """
    for c in sorted(calls, key=lambda c: -c.char_offset):
        text = insert_call(text, c.char_offset, c.call)
    return text


def chosen_calls(candidates: Sequence[Candidate], cap: int, seed: int) -> list[Candidate]:
    """The calls C* holds under the paper's merge: the kept ones, one per position, capped per tool."""
    return cap_per_tool(best_per_position(c for c in candidates if c.kept), cap, seed)


def build_corpus(docs: Sequence, candidates: Sequence[Candidate], cap: int, seed: int,
                 keep_calls: bool = False) -> list[dict]:
    """C* records, in corpus order, under the paper's merge (:func:`chosen_calls`, then
    :func:`corpus_records`)."""
    return corpus_records(docs, chosen_calls(candidates, cap, seed), keep_calls)


def corpus_records(docs: Sequence, chosen: Sequence[Candidate], keep_calls: bool = False) -> list[dict]:
    """C* records, in corpus order: the document's fields, the annotated text and its calls. With
    ``keep_calls`` (a later round, :mod:`.chain`) the texts held calls already: ``original`` stays
    the text without any call, and each record gets its round, the earlier rounds' calls and a
    ``chain`` flag per new call."""
    by_doc: dict[str, list[Candidate]] = {}
    for c in chosen:
        by_doc.setdefault(c.doc_id, []).append(c)
    out = []
    for d in docs:
        calls = by_doc.get(d.doc_id)
        if not calls:
            continue
        rec = d.record()
        rec["original"] = strip_calls(d.text) if keep_calls else d.text
        rec["text"] = annotate_text(d.text, calls)
        rec["calls"] = [{"tool": c.tool, "input": c.input, "result": c.result, "char_offset": c.char_offset,
                         "score": round(c.score, 6), "L_plus": round(c.L_plus, 6), "L_minus": round(c.L_minus, 6)}
                        for c in calls]
        out.append(next_round(rec, d, calls) if keep_calls else rec)
    return out


def every_text(documents: Sequence[Mapping], cstar: Sequence[Mapping]) -> list[dict]:
    """C* as the paper builds it: "the exact same texts as C", each with its kept calls written in
    where it has some, in the documents' order. (``corpus.jsonl`` holds only the texts with a
    call; a model fine-tuned on those alone learns that every text has one.)

    >>> docs = [{"id": "a", "text": "2 and 3 is 5."}, {"id": "b", "text": "No sums here."}]
    >>> [r["text"] for r in every_text(docs, [{"id": "a", "text": "2 and 3 is [Calculator(2 + 3) -> 5] 5."}])]
    ['2 and 3 is [Calculator(2 + 3) -> 5] 5.', 'No sums here.']
    """
    annotated = {r["id"]: r for r in cstar}
    return [dict(annotated.get(d["id"], {"id": d["id"], "text": d["text"]})) for d in documents]

