"""Bootstrapped annotation rounds: round r + 1 annotates C* of round r with its calls kept in the text.

Why (issue 31, beyond the paper): the paper samples each tool's calls independently (§7 names the
limit), so C* holds no call whose input uses another call's result, and a model fine-tuned on it
never sees a chain such as ``[Calculator(25 - 5) -> 20]`` … ``[Calculator(20 / 4) -> 5]``. Here
the chains are learned the Toolformer way, from the model's own filtered calls, not written by hand:

* **The text keeps its calls** (``--keep-calls``, corpus = an earlier round's ``corpus.jsonl``).
  The sampler reads x_1 … x_{i−1} with the earlier calls and their results in it, so a sampled
  call can use an earlier result (:func:`round_documents`; the texts are not cut into windows
  again: they are an earlier round's windows already).
* **Positions only outside existing calls** (:func:`outside_calls`): never inside one, nor right
  before or right after one, where a new call would stack on it.
* **The filter is the paper's, unchanged**: the text it scores, x, is the text with its calls, so
  the prefix x_1 … x_{i−1} of every loss L_i holds the earlier calls; z (the call scored) goes
  before the whole text as in round 1.
* **Chains are recorded**: each kept call says whether its input uses the result of a call
  before it in the same text (:func:`uses_result`, :func:`chain_flags`), written as ``chain`` in
  C*'s ``calls`` and counted in the summary. A run is resumable and banked like round 1 (its
  settings, ``keep_calls`` included, are part of the run's identity).
"""

from __future__ import annotations

import re
from typing import Sequence

from ..calls import find_calls
from .document import CorpusError, Document

_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+")


def outside_calls(text: str, doc_offsets: Sequence[int]) -> list[bool]:
    """For each call site (a document offset where a call would be inserted), whether it lies
    outside every call already in ``text``: not inside one, not at the space before its ``[``,
    not at the space right after its ``]`` (a call there would stack on the existing one).

    >>> t = "It is [Calculator(25 - 5) -> 20] 20 now."
    >>> sites = [2, 5, 17, 32, 35]  # " is", " [", inside, " 20" after the call, " now"
    >>> outside_calls(t, sites)
    [True, False, False, False, True]
    """
    spans = [(max(p.start - 1, 0), p.end) for p in find_calls(text)]
    return [not any(a <= o <= b for a, b in spans) for o in doc_offsets]


def _tokens(text: str) -> list[str]:
    """Numbers (thousands commas dropped, compared by value) and lower-cased words.

    >>> _tokens("(1,050 - 20.50) / 4 apples")
    ['1050', '20.5', '4', 'apples']
    """
    return [_number(tok) if tok[0].isdigit() else tok.lower() for tok in _TOKEN.findall(text)]


def _number(tok: str) -> str:
    """A number token by value: ``"1,050,000"`` and ``"1050000.0"`` both read ``"1050000"``.

    >>> _number("1,050,000"), _number("1050000.0"), _number("2.50"), _number("1.2.3")
    ('1050000', '1050000', '2.5', '1.2.3')
    """
    try:
        value = float(tok.replace(",", ""))
    except ValueError:  # "1.2.3": not one number, compared as written
        return tok
    return str(int(value)) if value.is_integer() else repr(value)


def uses_result(call_input: str, result: str | None) -> bool:
    """Whether a call's input contains an earlier call's result as whole number/word tokens (in a
    row): the definition of a chain. Numbers compare by value; an empty result is never used.

    >>> uses_result("20 / 4", "20"), uses_result("120 / 4", "20"), uses_result("20.0 * 2", "20")
    (True, False, True)
    >>> uses_result("population of Paris", "Paris"), uses_result("x", ""), uses_result("1,050 + 1", "1050")
    (True, False, True)
    """
    want, have = _tokens(result or ""), _tokens(call_input)
    return bool(want) and any(have[i: i + len(want)] == want for i in range(len(have) - len(want) + 1))


def chain_flags(text: str, calls: Sequence) -> list[bool]:
    """For each new call (``char_offset``, ``input``, ``result``; offsets into ``text``, the round's
    input), whether its input uses the result of a call before it: a call already in ``text`` that
    ends before it, or another new call at a smaller offset.

    >>> from types import SimpleNamespace as C
    >>> t = "Of 25, 5 left: [Calculator(25 - 5) -> 20] 20 stayed, in 4 groups of 5 each."
    >>> new = [C(char_offset=t.index(" 5 each"), input="20 / 4", result="5"),
    ...        C(char_offset=2, input="25", result="25")]
    >>> chain_flags(t, new)
    [True, False]
    """
    kept = [(p.end, p.call.result) for p in find_calls(text)]
    out = []
    for c in calls:
        earlier = [r for end, r in kept if end <= c.char_offset]
        earlier += [n.result for n in calls if n.char_offset < c.char_offset]
        out.append(any(uses_result(c.input or "", r) for r in earlier))
    return out


def round_documents(docs: list[Document]) -> list[Document]:
    """An earlier round's C* read for the next round: each window's left context restored from its
    record (``context_chars``), and one clear error where no text holds a call (not a C*)."""
    out = []
    for d in docs:
        meta = dict(d.meta)
        ctx = int(meta.pop("context_chars", 0) or 0)
        out.append(Document(d.doc_id, d.text, meta, context_chars=ctx or d.context_chars))
    if out and not any(find_calls(d.text) for d in out):
        raise CorpusError(f"--keep-calls annotates a C* with its calls kept, but none of the {len(out)} texts holds a "
                          "call; pass an earlier round's corpus.jsonl, or drop --keep-calls for a first round")
    return out


def next_round(rec: dict, doc: Document, calls: Sequence) -> dict:
    """A C* record of round r + 1: the round number, the calls of the rounds before (as they were
    recorded, offsets into their own round's text) and each new call's ``chain`` flag."""
    rec["round"] = int(doc.meta.get("round", 1)) + 1
    rec["earlier_calls"] = list(doc.meta.get("earlier_calls", [])) + list(doc.meta.get("calls", []))
    for entry, flag in zip(rec["calls"], chain_flags(doc.text, calls)):
        entry["chain"] = flag
    return rec


def text_chains(text: str) -> list[tuple]:
    """(earlier, later) calls written in ``text`` where the later call's input holds the earlier
    one's result: the chains a model fine-tuned on the text sees, whichever round wrote them.

    >>> t = "Of 25, 5 left: [Calculator(25 - 5) -> 20] 20, in 4 groups: [Calculator(20 / 4) -> 5] 5 each."
    >>> [(a.call.input, b.call.input) for a, b in text_chains(t)]
    [('25 - 5', '20 / 4')]
    >>> text_chains("[Calculator(3 + 2) -> 5] 5 and [Calculator(7 * 6) -> 42] 42")
    []
    """
    calls = find_calls(text)
    return [(a, b) for j, b in enumerate(calls) for a in calls[:j] if uses_result(b.call.input, a.call.result)]


def chain_counts(cstar: Sequence[dict]) -> dict:
    """Per tool, the new calls kept in a later round and how many of them are chains.

    >>> chain_counts([{"calls": [{"tool": "Calculator", "chain": True}, {"tool": "Calculator", "chain": False}]}])
    {'Calculator': {'kept': 2, 'chain': 1}}
    """
    out: dict = {}
    for rec in cstar:
        for call in rec.get("calls", []):
            row = out.setdefault(call["tool"], {"kept": 0, "chain": 0})
            row["kept"] += 1
            row["chain"] += bool(call.get("chain"))
    return out
