"""Steps 1–2 of annotation: p_i at every position, then m calls sampled at the chosen ones.

A call at position i is sampled from [P(x), x_1…x_{i−1}, " ["] until "]". What the model writes is
kept as a :class:`~.records.Candidate` whatever it is; only samples that close, name the tool being
annotated and survive a round trip through :func:`~toolformer_kit.calls.format_call` get status
``ok`` and go on to execution.

**Stopping.** A row stops at "]" or as soon as the arrow after its input's closing parenthesis
appears (:func:`input_complete`): the input is all a sample contributes, so the tokens of a result
the model would invent are not worth decoding.

**Speed.** The tool prompt (instruction + demonstrations, a few hundred tokens) is the same for
every document and position. With the transformers backend, :func:`sample_prompt_cached` computes
its KV cache once per run and runs only the per-position suffix ``Input: x / Output: x_<i [`` through the
model, then decodes every row with its own seeded generator — the same generator
:meth:`~toolformer_kit.hf_lm.HFLanguageModel.sample` would use for the full prefix, so the two paths
draw the same tokens (up to float round-off in the logits) and parse to the same calls. Other backends go through
:meth:`~toolformer_kit.lm.LanguageModel.sample`.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from typing import Sequence

from ..calls import ToolCall, format_call, parse_sampled
from ..lm import CALL_OPEN_TEXT, PositionLogprobs, Sample, SamplingConfig, cut_at_stop
from . import records as R
from .positions import LEAD, char_offset, select_positions

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
                 tau_s: float, k: int, m: int, cfg: SamplingConfig, stats: SampleStats | None = None
                 ) -> list[R.Candidate]:
    """Candidates for every chosen position of every document (``positions`` from the same LM)."""
    import time

    t0 = time.perf_counter()
    meta, suffixes = [], []
    for doc_id, text, pos in zip(doc_ids, texts, positions):
        chosen = select_positions(pos.probs, tau_s, k)
        suffixes += position_suffixes(lm, tool, text, pos, chosen)
        meta += [(doc_id, i, char_offset(pos.offsets[i]), float(pos.probs[i])) for i in chosen]
    head = prompt_ids(lm, tool)
    samples = draw(lm, head, suffixes, m, cfg, stats)
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


def draw(lm, head: list[int], suffixes: list[list[int]], n: int, cfg: SamplingConfig,
         stats: SampleStats | None = None) -> list[list[Sample]]:
    """n samples per suffix, through the prompt-cached path when the backend allows it."""
    if not suffixes or n <= 0:
        return [[] for _ in suffixes]
    if stats is not None:
        stats.prompt_tokens += len(head) + sum(len(s) for s in suffixes)
    if all(hasattr(lm, a) for a in ("_prompt_cache", "_row_generator", "_draw", "model")) and head:
        samples = sample_prompt_cached(lm, head, suffixes, n, cfg)
    else:
        bos = len(getattr(lm, "bos_ids", []))
        samples = lm.sample([head[bos:] + s for s in suffixes], n, stop="]", config=cfg)
    if stats is not None:
        stats.rows += sum(len(r) for r in samples)
        stats.new_tokens += sum(len(s.token_ids) for r in samples for s in r)
    return samples


def sample_prompt_cached(lm, head: list[int], suffixes: list[list[int]], n: int, cfg: SamplingConfig,
                         stop: str = "]") -> list[list[Sample]]:
    """:meth:`HFLanguageModel.sample` for prefixes ``head + suffix``, computing ``head`` once."""
    import torch

    with torch.no_grad():
        past = _prompt_past(lm, head)
        out: list[list[Sample]] = [[] for _ in suffixes]
        per_group = max(1, lm.max_batch // max(n, 1))
        order = sorted(range(len(suffixes)), key=lambda i: -len(suffixes[i]))
        for s in range(0, len(order), per_group):
            group = order[s: s + per_group]
            rows = _sample_group(lm, past, head, [suffixes[i] for i in group], n, stop, cfg)
            for i, samples in zip(group, rows):
                out[i] = samples
    return out


_PROMPT_PASTS: dict = {}


def _prompt_state(lm, head: list[int]):
    """(KV cache, last hidden state) of the shared prompt, computed once per (model, prompt) for
    the whole run rather than once per batch. Users deep-copy the cache before extending it."""
    key = (id(lm), tuple(head))
    if key not in _PROMPT_PASTS:
        if len(_PROMPT_PASTS) >= 8:
            _PROMPT_PASTS.pop(next(iter(_PROMPT_PASTS)))
        _PROMPT_PASTS[key] = type(lm)._prompt_cache(lm, head)
    return _PROMPT_PASTS[key]


def _prompt_past(lm, head: list[int]):
    return _prompt_state(lm, head)[0]


def _sample_group(lm, prompt_past, head, suffixes, n, stop, cfg) -> list[list[Sample]]:
    """Left-pad the suffixes after the shared prompt cache; then decode, retiring finished rows."""
    import torch

    P, width, dev = len(head), max(len(x) for x in suffixes), lm.device
    ids = torch.full((len(suffixes), width), lm.pad_id, dtype=torch.long)
    mask = torch.zeros((len(suffixes), P + width), dtype=torch.long)
    mask[:, :P] = 1
    for r, suf in enumerate(suffixes):
        ids[r, width - len(suf):] = torch.tensor(suf)
        mask[r, P + width - len(suf):] = 1
    pos = P + (mask[:, P:].cumsum(-1) - 1).clamp(min=0)
    past = copy.deepcopy(prompt_past)
    past.batch_repeat_interleave(len(suffixes))
    kw = {lm._cache_kw: past}
    logits = lm.model(input_ids=ids.to(dev), attention_mask=mask.to(dev), position_ids=pos.to(dev),
                      use_cache=True, logits_to_keep=1, **kw).logits[:, -1].float()
    past.batch_repeat_interleave(n)
    logits = logits.repeat_interleave(n, 0)
    mask = mask.repeat_interleave(n, 0).to(dev)
    next_pos = (pos[:, -1] + 1).repeat_interleave(n, 0).to(dev)
    gens = [lm._row_generator(cfg.seed, head + suf, j) for suf in suffixes for j in range(n)]
    rows = list(range(len(gens)))
    generated: list[list[int]] = [[] for _ in gens]
    done: list[Sample | None] = [None] * len(gens)
    for _ in range(cfg.max_new_tokens):
        tokens = [lm._draw(logits[b], gens[r], cfg) for b, r in enumerate(rows)]
        keep = []
        for b, (r, t) in enumerate(zip(rows, tokens)):
            generated[r].append(t)
            text, closed = cut_at_stop(lm.decode(generated[r]), stop)
            closed = closed or input_complete(text)
            if closed or t in lm.eos_ids:
                done[r] = Sample(text, closed, list(generated[r]))
            else:
                keep.append(b)
        if not keep:
            break
        if len(keep) < len(rows):
            sel = torch.tensor(keep, device=dev)
            past.batch_select_indices(sel)
            mask, next_pos = mask[sel], next_pos[sel]
            tokens, rows = [tokens[b] for b in keep], [rows[b] for b in keep]
        mask = torch.cat([mask, mask.new_ones((len(rows), 1))], dim=1)
        logits = lm.model(input_ids=torch.tensor(tokens, device=dev)[:, None], attention_mask=mask,
                          position_ids=next_pos[:, None], use_cache=True, **kw).logits[:, -1].float()
        next_pos = next_pos + 1
    for r in range(len(gens)):
        if done[r] is None:
            done[r] = Sample(lm.decode(generated[r]), False, list(generated[r]))
    return [done[h * n:(h + 1) * n] for h in range(len(suffixes))]  # type: ignore[misc]


def document_positions(lm, tool, texts: Sequence[str]) -> list[PositionLogprobs]:
    """p_i over ``LEAD + text`` for each text, prompt KV shared (one pass per text)."""
    if not texts:
        return []
    args = (tool.prompt_prefix(), [LEAD + t for t in texts])
    kwargs = {"contexts": [tool.prompt_context(t) for t in texts]}
    if not hasattr(lm, "_prompt_cache"):
        return lm.call_start_logprobs(*args, **kwargs)
    # The HF backend recomputes the prompt's KV cache on every call; serve it from the run-wide
    # memo instead (the backend deep-copies it before use, so sharing it is safe).
    lm._prompt_cache = lambda ids: _prompt_state(lm, list(ids))
    try:
        return lm.call_start_logprobs(*args, **kwargs)
    finally:
        del lm._prompt_cache
