"""A merge that scores each call after the calls already kept in its text (not the paper's).

Why: the paper scores every sampled call alone, against the text without any other call, so when
one call helps at two neighbouring positions both pass and C* writes it twice ("They have to
[Calculator(80 / 5) -> 16] clean [Calculator(80 / 5) -> 16] 16 classrooms"): a text nobody would
write, and the model fine-tuned on it learns to repeat its call. Here, within a text, the calls
that passed are taken in order of position, and a later call is kept only if it still passes the
filter, L⁻ − L⁺ ≥ τf + λ, with the calls kept before it written into the text (its x_1 … x_{i−1}).
A repeat then fails by itself, since its result is already in the text; a call that uses an
earlier result (a chain) can still pass. The first call of a text keeps its score: nothing is
written before it, so its prefix is the one it was scored with.

Within a round, nothing is dropped unscored: exact repeats of the round's own calls are scored
like every other call, so the reasons counted for what was dropped (:func:`reason`) say what the
filter decided. One rule of ours, for a later round (``--keep-calls``): a new call with the tool
and input of a call an earlier round already wrote in the text, before or after it, is dropped
without scoring, as "written before" (the issue allows exact duplicates to go unscored). Without
it, the filter keeps such a call where it sits *before* the earlier call (that call is not in its
prefix) and sometimes after it: datasets/cstar-math-v2-r2 held 10 such repeats in 44 new calls.
Which model scores is the caller's (:func:`model_scorer` for the real one); the merge itself is a
pure function of the calls and that scorer.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Callable, Mapping, Sequence

from ..calls import find_calls
from ..config import ConfigError
from ..tools.base import AnnotationSettings
from .chain import uses_result
from .document import Document
from .merge import annotate_text
from .records import Candidate

MERGES = ("independent", "sequential")
MERGE_NOTE = ("sequential merge: a later call of a text is kept only if it still passes the filter with the calls "
              "kept before it written in (the paper scores every call alone)")

# Scores (document with the earlier calls written in, the call placed in it) pairs: copies of the
# calls with L_eps, L_call_noresult, L_plus, L_minus, score and kept filled in.
ScoreFn = Callable[[Sequence[tuple[Document, Candidate]]], list[Candidate]]


def check_merge(merge: str) -> str:
    """``merge`` if it names a merge, else one error naming the choices."""
    if merge not in MERGES:
        raise ConfigError(f"unknown merge {merge!r}; use one of {', '.join(MERGES)} (independent is the paper's)")
    return merge


def placed(doc: Document, before: Sequence[Candidate], call: Candidate) -> tuple[Document, Candidate]:
    """``doc`` with the calls ``before`` written in, and ``call`` moved to the same place in it.

    Every call in ``before`` sits earlier than ``call``, so the text from ``call``'s offset on is
    unchanged and only shifts by what was inserted.

    >>> d = Document("d", "It costs 5 and then 5 again.")
    >>> a = Candidate("d", "Calculator", 3, 8, .5, "", input="2 + 3", result="5")
    >>> b = Candidate("d", "Calculator", 6, 19, .5, "", input="2 + 3", result="5")
    >>> doc, moved = placed(d, [a], b)
    >>> doc.text, doc.text[moved.char_offset:] == d.text[b.char_offset:]
    ('It costs [Calculator(2 + 3) -> 5] 5 and then 5 again.', True)
    """
    if any(c.char_offset >= call.char_offset for c in before):
        raise ValueError("placed() writes in only calls that sit before the one to score")
    text = annotate_text(doc.text, before)
    shift = len(text) - len(doc.text)
    return (dataclasses.replace(doc, text=text),
            dataclasses.replace(call, char_offset=call.char_offset + shift, score_position=None))


def reason(call: Candidate, before: Sequence[Candidate]) -> str:
    """Why a dropped call might have failed: the same call (tool and input) is already in the text
    ("repeat"), it uses an earlier call's result ("chain"), or neither ("other").

    >>> a = Candidate("d", "Calculator", 3, 8, .5, "", input="80 / 5", result="16")
    >>> b = dataclasses.replace(a, char_offset=20)
    >>> c = dataclasses.replace(a, char_offset=30, input="16 * 2", result="32")
    >>> reason(b, [a]), reason(c, [a]), reason(dataclasses.replace(c, input="3 * 3"), [a])
    ('repeat', 'chain', 'other')
    """
    if any((c.tool, c.input) == (call.tool, call.input) for c in before):
        return "repeat"
    if any(uses_result(call.input or "", c.result) for c in before):
        return "chain"
    return "other"


@dataclasses.dataclass
class MergeReport:
    """What the sequential merge decided: every re-scored call with its new score, why the dropped
    ones might have failed, and the calls dropped unscored as written before by an earlier round."""

    rescored: list[dict] = dataclasses.field(default_factory=list)
    unscored: list[dict] = dataclasses.field(default_factory=list)  # dropped as written before

    def dropped(self) -> dict[str, int]:
        return dict(sorted(Counter(r["reason"] for r in self.rescored + self.unscored if not r["kept"]).items()))

    def kept_after_rescoring(self) -> dict[str, int]:
        return dict(sorted(Counter(r["reason"] for r in self.rescored if r["kept"]).items()))


def written_before(doc: Document, call: Candidate) -> bool:
    """Whether ``doc``'s text (a later round's input) already holds a call with ``call``'s tool and
    input, anywhere in it.

    >>> d = Document("d", "Mr. Jackson will [Calculator(27 * 2) -> 54] need 54 cups.")
    >>> c = Candidate("d", "Calculator", 1, 3, .5, "", input="27 * 2", result="54")
    >>> written_before(d, c), written_before(d, dataclasses.replace(c, input="27 * 3"))
    (True, False)
    """
    return any((p.call.tool, p.call.input) == (call.tool, call.input) for p in find_calls(doc.text))


def sequential_merge(docs: Sequence[Document], calls: Sequence[Candidate], score: ScoreFn
                     ) -> tuple[list[Candidate], MergeReport]:
    """The calls of ``calls`` (one per position, each already kept alone) that stay kept when each
    is scored after the ones kept before it in its text; and the report. A call that repeats one
    an earlier round wrote in its text is dropped first, unscored (:func:`written_before`).

    Round r scores the r-th remaining call of every text at once, so a batch holds one call per
    text and the model runs as many rounds as the longest text has calls.
    """
    by_id = {d.doc_id: d for d in docs}
    report = MergeReport()
    pending: dict[str, list[Candidate]] = {}
    for c in sorted(calls, key=lambda c: (c.doc_id, c.char_offset)):
        if written_before(by_id[c.doc_id], c):
            report.unscored.append(_entry(c.doc_id, c, None, False, "written before"))
            continue
        pending.setdefault(c.doc_id, []).append(c)
    kept = {doc_id: [cs.pop(0)] for doc_id, cs in pending.items()}
    while any(pending.values()):
        batch = [(doc_id, cs.pop(0)) for doc_id, cs in pending.items() if cs]
        scored = score([placed(by_id[doc_id], kept[doc_id], c) for doc_id, c in batch])
        for (doc_id, c), new in zip(batch, scored, strict=True):
            report.rescored.append(_entry(doc_id, c, new.score, bool(new.kept), reason(c, kept[doc_id])))
            if new.kept:
                kept[doc_id].append(dataclasses.replace(
                    c, **{k: getattr(new, k) for k in ("L_eps", "L_call_noresult", "L_plus", "L_minus", "score")}))
    out = [c for cs in kept.values() for c in cs]
    return sorted(out, key=lambda c: (c.doc_id, c.char_offset)), report


def _entry(doc_id: str, c: Candidate, after, kept: bool, why: str) -> dict:
    """One line of the report: the call, its score alone and after the earlier calls (None: not scored)."""
    return {"doc_id": doc_id, "char_offset": c.char_offset, "tool": c.tool, "input": c.input, "result": c.result,
            "alone": _round(c.score), "after_earlier": _round(after), "kept": kept, "reason": why}


def _round(v):
    return None if v is None else round(float(v), 5)


def model_scorer(lm, settings: Mapping[str, AnnotationSettings], scorer=None) -> ScoreFn:
    """The filter's own scorer on ``lm`` (:func:`~.scoring.score_candidates`, every loss computed,
    each tool's calls against its ``settings``: τf and λ),
    for calls placed in texts that hold earlier calls: each text is tokenised as the annotation
    tokenises one (``LEAD + text``), and a call whose place is not a token start for the model
    gets no score (and so is not kept)."""
    from .positions import LEAD, token_at
    from .scoring import BatchedScorer, score_candidates

    scorer = scorer or BatchedScorer(lm)

    def score(pairs: Sequence[tuple[Document, Candidate]]) -> list[Candidate]:
        seqs, cands = [], []
        for doc, c in pairs:
            ids, offsets = lm.encode_with_offsets(LEAD + doc.text)
            seqs.append(ids)
            c = dataclasses.replace(c, score_position=token_at(offsets, c.char_offset), L_eps=None,
                                    L_call_noresult=None, L_plus=None, L_minus=None, score=None, kept=False)
            cands.append(c)
        ok = [n for n, c in enumerate(cands) if c.score_position is not None]
        score_candidates(scorer, seqs, ok, [cands[n] for n in ok], settings)
        return cands

    return score


def repeat_stats(cstar: Sequence[Mapping]) -> dict:
    """How often C* writes the same call (tool and input) twice in one text, and calls per text; in
    a later round's C*, also how many new calls repeat a call of an earlier round.

    >>> rows = [{"calls": [{"tool": "Calculator", "input": "8 / 2"}, {"tool": "Calculator", "input": "8 / 2"}]},
    ...         {"calls": [{"tool": "Calculator", "input": "3 + 4"}]}]
    >>> repeat_stats(rows)
    {'texts': 2, 'calls': 3, 'calls_per_text': 1.5, 'texts_with_a_repeat': 1, 'repeat_rate': 0.5, 'repeated_calls': 1}
    """
    texts = len(cstar)
    calls = sum(len(r["calls"]) for r in cstar)
    with_repeat = repeated = 0
    for r in cstar:
        seen = Counter((c["tool"], c["input"]) for c in r["calls"])
        extra = sum(n - 1 for n in seen.values())
        with_repeat += extra > 0
        repeated += extra
    out = {"texts": texts, "calls": calls, "calls_per_text": round(calls / texts, 3) if texts else 0.0,
           "texts_with_a_repeat": with_repeat, "repeat_rate": round(with_repeat / texts, 4) if texts else 0.0,
           "repeated_calls": repeated}
    if any("earlier_calls" in r for r in cstar):  # a later round: new calls that repeat an earlier round's
        out["repeat_an_earlier_round"] = sum(
            (c["tool"], c["input"]) in {(e["tool"], e["input"]) for e in r.get("earlier_calls", [])}
            for r in cstar for c in r["calls"])
    return out


def merge_summary(report: MergeReport, before: Sequence[Mapping], after: Sequence[Mapping]) -> dict:
    """The summary's record of a sequential merge: C* before and after it (repeats, calls per
    text), the calls re-scored, and the dropped ones by :func:`reason`."""
    return {"merge": "sequential", "note": MERGE_NOTE, "before": repeat_stats(before), "after": repeat_stats(after),
            "rescored": len(report.rescored), "written_before": len(report.unscored),
            "dropped_by_reason": report.dropped(),
            "kept_after_rescoring_by_reason": report.kept_after_rescoring()}
