"""Re-running one tool over a campaign's banked calls: the same sampled calls, a fixed tool.

Why: a bank keeps every candidate with score ≥ 0 together with its call, so when a tool turns out
to be wrong (the first search campaign's QA read the very summary it was annotating, issue 40) its
calls need not be sampled again. Each banked call of that tool is executed anew by the fixed tool,
in its own document (so the document exclusion applies); a call whose result changed is scored
again by the same M; and it is banked again only if its score is still ≥ 0. A call that gets no
result is dropped. The other tools' candidates are banked as they were.

What this cannot do: calls that scored below 0 with the old result were never banked, so a re-run
can only lose calls the old tool gave, never find those it missed; the shard's histogram of all
scores stays the old run's. Both are stated in the shard's ``rerun`` record and the card.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Sequence

from ..annotate import records as R
from ..annotate.sequential import model_scorer
from ..annotate.stages import doc_tool
from ..tools.base import AnnotationSettings
from .bank import _compact


def rerun_shard(annot, docs: Sequence, cands: Sequence[R.Candidate], info: dict, names: Sequence[str]
                ) -> tuple[list[R.Candidate], dict]:
    """(banked candidates, shard JSON) of one banked shard with the tools ``names`` run again by
    ``annot`` (a :class:`~toolformer_kit.annotate.stages.ShardAnnotator`: its tools, executor and M)."""
    by_id = {d.doc_id: d for d in docs}
    tools = {t.name: t for t in annot.tools}
    redo = [dataclasses.replace(c, result=None, error=None, status=R.OK) for c in cands if c.tool in names]
    old = {id(n): c for n, c in zip(redo, (c for c in cands if c.tool in names))}
    annot.executor.run(redo, lambda c: doc_tool(tools[c.tool], by_id[c.doc_id], annot.cfg.wiki_exclude_self))
    counts: Counter = Counter()
    changed = []
    for c in redo:
        before = old[id(c)]
        if c.result is None:
            counts["no result"] += 1
        elif c.result == before.result:
            counts["same result"] += 1
            for k in ("score_position", "L_eps", "L_call_noresult", "L_plus", "L_minus", "score", "kept"):
                setattr(c, k, getattr(before, k))
        else:
            counts["new result"] += 1
            changed.append(c)
    floor = {name: AnnotationSettings(tau_f=0.0) for name in names}  # the bank's: every score ≥ 0
    scored = model_scorer(annot.lm, floor)([(by_id[c.doc_id], c) for c in changed]) if changed else []
    for c, new in zip(changed, scored):
        for k in ("score_position", "L_eps", "L_call_noresult", "L_plus", "L_minus", "score", "kept"):
            setattr(c, k, getattr(new, k))
    again = [_compact(c) for c in redo if c.result is not None and c.score is not None and c.score >= 0]
    keep = [c for c in cands if c.tool not in names] + again
    keep.sort(key=lambda c: (c.doc_id, c.position, c.tool, c.sample_index))
    out = dict(info)
    out["tools"] = {**info.get("tools", {}), **{n: tools[n].version for n in names}}
    out["rerun"] = {"tools": list(names), "banked_before": sum(c.tool in names for c in cands),
                    **dict(sorted(counts.items())), "rescored": len(changed), "banked_after": len(again),
                    "note": "the score histogram is the first run's; calls it scored below 0 were never re-run"}
    return keep, out
