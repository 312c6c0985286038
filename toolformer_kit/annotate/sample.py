"""Steps 1–2 of annotation: p_i at every position, then m calls sampled at the chosen ones.

A call at position i is sampled from [P(x), x_1…x_{i−1}, " ["] until "]". What the model writes is
kept as a :class:`~.records.Candidate` whatever it is; only samples that close, name the tool being
annotated and survive a round trip through :func:`~toolformer_kit.calls.format_call` get status
``ok`` and go on to execution.

**Stopping.** A row stops at "]" or as soon as the arrow after its input's closing parenthesis
appears (:func:`input_complete`): the input is all a sample contributes, so the tokens of a result
the model would invent are not worth decoding.

**Speed.** The tool prompt (instruction + demonstrations, a few hundred tokens) is the same for
every document and position. It is handed to the backend as a shared prefix, with the
per-position suffixes ``Input: x / Output: x_<i [`` of all documents of a shard in one call. The
transformers backend (:mod:`toolformer_kit.lm.hf_sample`) computes the prompt's KV cache once per run
and holds it once for all rows, runs each document's context once (the suffixes of a document are
prefixes of its longest one but for the final " ["), and decodes with continuous batching: a row
that stops hands its slot to the next (position, j) row at once, so the batch stays full across
positions and documents. Each row draws from a generator seeded by the whole prefix, so the
samples are those of the unsplit prefix in any batch (up to float round-off in the logits). vLLM
gets the whole prefix and shares the prompt through its prefix cache.
"""

from __future__ import annotations

import inspect
import logging
import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..calls import ToolCall, format_call, parse_sampled
from ..lm.base import CALL_OPEN_TEXT, PositionLogprobs, Sample, SamplingConfig

from . import records as R
from .chain import outside_calls
from .positions import LEAD, call_sites, char_offset, select_positions

log = logging.getLogger(__name__)


@dataclass
class SampleStats:
    prompt_tokens: int = 0  # prefix tokens run through the model (shared prompt counted once)
    new_tokens: int = 0  # tokens decoded
    rows: int = 0
    seconds: float = 0.0


def input_complete(text: str) -> bool:
    """True once a sample has closed its call or reached the arrow after the input's ``)``.

    The input is all a sampled call contributes (a result the model writes itself is thrown away
    and replaced by the tool's), so decoding can stop at the arrow.

    >>> input_complete("Calculator(3 * 4) ->"), input_complete("MT(a -> b"), input_complete("QA(x)]")
    (True, False, True)
    """
    if "]" in text:
        return True
    parsed = parse_sampled(text)
    return parsed is not None and parsed.call.result is not None


def parse_sample(text: str, closed: bool, tool_name: str, takes_input: bool = True) -> tuple[str, str | None]:
    """(status, call input) for what the model wrote after " [".

    >>> parse_sample("Calculator(3 * 4)]", True, "Calculator")
    ('ok', '3 * 4')
    >>> parse_sample("Calculator(3 * 4) -> 1", False, "Calculator")  # a guessed result is dropped
    ('ok', '3 * 4')
    >>> [parse_sample(t, c, "Calculator")[0] for t, c in [("Calculator(3 *", False), ("QA(who?)]", True), ("36 * 4]", True)]]
    ['unclosed', 'other_tool', 'unparsable']
    """
    parsed = parse_sampled(text)
    if not (closed or (parsed is not None and parsed.call.result is not None)):
        return R.UNCLOSED, None
    if parsed is None or not (parsed.closed or parsed.call.result is not None):
        return R.UNPARSABLE, None
    if parsed.call.tool != tool_name:
        return R.OTHER_TOOL, None
    call = ToolCall(tool_name, parsed.call.input if takes_input else "")
    try:
        written = format_call(call, leading_space=False)
    except ValueError:
        return R.UNPARSABLE, None
    back = parse_sampled(written[1:])  # parse_sampled reads what follows "["
    if back is None or back.call != call:
        return R.UNPARSABLE, None
    return R.OK, call.input


def prompt_ids(lm, tool) -> list[int]:
    """The shared prompt as the LM's positions pass tokenizes it (BOS included)."""
    return list(getattr(lm, "bos_ids", [])) + lm.encode(tool.prompt_prefix())


def position_suffixes(lm, tool, text: str, pos: PositionLogprobs, chosen: Sequence[int]) -> list[list[int]]:
    """Per chosen position i: ids of ``Input: x / Output:`` + x_<i + " [" (the prompt excluded)."""
    ctx = lm.encode(tool.prompt_context(text))
    opener = list(getattr(lm, "call_open_ids", None) or lm.encode(CALL_OPEN_TEXT))
    return [ctx + list(pos.token_ids[:i]) + opener for i in chosen]


def sample_calls(lm, tool, doc_ids: Sequence[str], texts: Sequence[str], positions: Sequence[PositionLogprobs],
                 tau_s: float, k: int, m: int, cfg: SamplingConfig, stats: SampleStats | None = None,
                 context_chars: Sequence[int] | None = None, keep_calls: bool = False) -> list[R.Candidate]:
    """Candidates for every chosen position of every document (``positions`` from the same LM).

    Positions are chosen among call sites only (:func:`~.positions.call_sites`); ``context_chars[j]``
    is the length of text j's context-only opening (a window's left context), where no call goes.
    With ``keep_calls`` (a later round) the texts hold calls already, and no call goes inside,
    right before or right after one (:func:`~.chain.outside_calls`).
    All positions of all documents go to the backend in one call, so that it can keep its batch
    full across documents.
    """

    t0 = time.perf_counter()
    meta, suffixes = chosen_suffixes(lm, tool, doc_ids, texts, positions, tau_s, k, context_chars, keep_calls)
    samples = draw(lm, prompt_ids(lm, tool), suffixes, m, cfg, stats)
    takes_input = getattr(tool, "takes_input", True)
    out = []
    for (doc_id, i, off, p), row in zip(meta, samples):
        for j, s in enumerate(row):
            status, call_input = parse_sample(s.text, s.closed, tool.name, takes_input)
            out.append(R.Candidate(doc_id=doc_id, tool=tool.name, position=i, char_offset=off, p_i=p,
                                   sample=s.text, sample_index=j, status=status, input=call_input))
    if stats is not None:
        stats.seconds += time.perf_counter() - t0
    return out


def chosen_suffixes(lm, tool, doc_ids: Sequence[str], texts: Sequence[str], positions: Sequence[PositionLogprobs],
                    tau_s: float, k: int, context_chars: Sequence[int] | None = None, keep_calls: bool = False):
    """(doc id, position, char offset, p_i) and the suffix to sample from, per chosen position."""
    meta, suffixes = [], []
    ctx_chars = context_chars if context_chars is not None else [0] * len(texts)
    for doc_id, text, pos, ctx in zip(doc_ids, texts, positions, ctx_chars):
        sites = call_sites(pos.offsets, LEAD + text, ctx)
        if keep_calls:
            sites &= np.array(outside_calls(text, [char_offset(o) for o in pos.offsets]), dtype=bool)
        chosen = select_positions(pos.probs, tau_s, k, allowed=sites)
        suffixes += position_suffixes(lm, tool, text, pos, chosen)
        meta += [(doc_id, i, char_offset(pos.offsets[i]), float(pos.probs[i])) for i in chosen]
    return meta, suffixes


def draw(lm, head: list[int], suffixes: list[list[int]], n: int, cfg: SamplingConfig,
         stats: SampleStats | None = None) -> list[list[Sample]]:
    """n samples per ``head + suffix``; ``head`` (the tool prompt, BOS included) is handed to the
    backend as a shared prefix where it takes one, so it runs once per run, not once per row."""
    if not suffixes or n <= 0:
        return [[] for _ in suffixes]
    if stats is not None:
        stats.prompt_tokens += len(head) + sum(len(s) for s in suffixes)
    prompt = head[len(getattr(lm, "bos_ids", [])):]
    if "shared_prefix" in inspect.signature(lm.sample).parameters and prompt:
        samples = lm.sample(suffixes, n, stop="]", config=cfg, shared_prefix=prompt, stop_when=input_complete)
    else:
        samples = lm.sample([prompt + s for s in suffixes], n, stop="]", config=cfg)
    if stats is not None:
        stats.rows += sum(len(r) for r in samples)
        stats.new_tokens += sum(len(s.token_ids) for r in samples for s in r)
    return samples


def document_positions(lm, tool, texts: Sequence[str]) -> list[PositionLogprobs]:
    """p_i over ``LEAD + text`` for each text, prompt KV shared (one pass per text)."""
    if not texts:
        return []
    return lm.call_start_logprobs(tool.prompt_prefix(), [LEAD + t for t in texts],
                                  contexts=[tool.prompt_context(t) for t in texts])
