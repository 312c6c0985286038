"""Tool-aware decoding on vLLM: the rules of :class:`~toolformer_kit.decode.hf.ToolAwareDecoder`,
asking the engine for whole *segments* instead of one token per forward pass.

vLLM schedules its own batches and keeps its own KV cache, so stepping it one token at a time
would pay a request's overhead per token. Instead each round sends every live row once, over its
prompt and everything it has so far (automatic prefix caching makes the resent prefix nearly free),
and lets the engine write until the row's budget, a stop string or EOS. The tokens are then
replayed through the same :class:`~toolformer_kit.decode.state.RowState` the HF decoder drives,
one step at a time, and the segment is cut where the HF decoder would have done something the
engine did not:

* **a call opens**: at a step where the row may open a call and " [" is among the top ``k``
  (the engine reports the top ``k`` log-probabilities of every step), the drawn token and the
  rest are dropped and the call-open token is forced instead;
* **a tool runs**: the row wrote "->"; the result is fed as forced tokens (no model call) and the
  row goes on in the next round;
* **the rules change**: the row left a call, or used its last call, so " [" is now masked (or no
  longer masked, or now watched). Tokens after that point were drawn from another distribution.

While a call's tool name is being written, the allowed tokens change with every token (the name
mask of :mod:`toolformer_kit.decode.state`), so those steps are asked one token at a time with
``allow`` (vLLM's ``allowed_token_ids``); a name is a few tokens, so this costs a few requests
per call; with ``constrain_inputs`` so are the steps of a typed input (its allowed tokens change
with the paren depth). The answer budget (``max_answer_tokens``) bounds a text segment's length as well.

Where the HF decoder sets the call-open logit to -inf, a request carries a logit bias of -100,
the most vLLM accepts: greedy decoding can then never pick " [", and sampling picks it with
probability at most e^-100 relative to the best token (if it ever did, the token would stay plain
text: with no calls left it cannot open one).

The engine-facing part is one method, ``lm.generate_segments(requests) -> segments``
(:meth:`toolformer_kit.lm.vllm.VLLMLanguageModel.generate_segments`), so the logic here is tested
against a scripted fake, token for token against the HF decoder.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Mapping, Optional, Sequence

from ..calls import ToolCall
from ..config import ConfigError
from ..lm.base import Segment, SegmentRequest
from .hf import ToolAwareDecoder
from .config import DecodeConfig
from .state import RowState, opens_call

log = logging.getLogger(__name__)

__all__ = ["Segment", "SegmentRequest", "VLLMToolDecoder"]


def segment_seed(seed: int, prompt_ids: Sequence[int], n_written: int) -> int:
    """Seeded by (seed, prompt, position) so a row's samples do not depend on the batch or round."""
    digest = hashlib.sha256(f"{seed}|{','.join(map(str, prompt_ids))}|{n_written}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


class VLLMToolDecoder(ToolAwareDecoder):
    """Generate with tools on an LM that answers :class:`SegmentRequest` s. Same API and results
    as :class:`ToolAwareDecoder` (greedy: the same tokens, up to the backends' float round-off)."""

    def __init__(self, lm, tools: Optional[Mapping] = None, engine=None, config: Optional[DecodeConfig] = None,
                 *, batch_size: int = 256):
        super().__init__(lm, tools=tools, engine=engine, config=config, batch_size=batch_size)
        self.co = lm.call_open_ids[-1]

    # ------------------------------------------------------------------ the loop
    def _decode_all(self, rows: list[RowState], cfg: DecodeConfig, bar) -> None:
        """vLLM batches continuously inside; groups only bound the requests in flight at once."""
        order = sorted(rows, key=lambda r: -len(r.prompt_ids))
        for s in range(0, len(order), self.batch_size):
            self._decode_group(order[s: s + self.batch_size], cfg)
            bar.update(len(order[s: s + self.batch_size]))

    def _decode_group(self, rows: list[RowState], cfg: DecodeConfig) -> None:
        if cfg.force_arrow:  # its ban on mid-token closes is a per-step logits mask vLLM is not given
            raise ConfigError("force_arrow is not supported by the vLLM backend yet; use --backend hf")
        live = list(rows)
        while live:
            for row in live:
                self._feed_forced(row, cfg)
            asked = [r for r in live if not r.done]
            requests = [self._request(r, cfg) for r in asked]
            segments = self.lm.generate_segments(requests) if requests else []
            pending: list[tuple[RowState, ToolCall]] = []
            for row, req, seg in zip(asked, requests, segments):
                call = self._replay(row, req, seg, cfg)
                if call is not None:
                    pending.append((row, call))
            if pending:
                self._run_tools(pending)
            live = [r for r in live if not r.done]

    def _feed_forced(self, row: RowState, cfg: DecodeConfig) -> None:
        """A result or a closing "]": the model has no say, so no request is needed."""
        while row.queue and not row.done:
            self._push(row, row.queue.popleft(), True, cfg)

    def _push(self, row: RowState, token: int, forced: bool, cfg: DecodeConfig) -> Optional[ToolCall]:
        call = row.push(token, forced)
        if self._spent(row, cfg) and not row.done:
            row.stop_now()
        return None if row.done else call

    # ------------------------------------------------------------------ requests
    def _request(self, row: RowState, cfg: DecodeConfig) -> SegmentRequest:
        """Watch " [" while the row may still open calls (its rank decides), ban it where HF masks it."""
        budget = cfg.max_new_tokens - len(row.ids)
        if row.phase == "call":  # the call is closed as too long after this many tokens anyway
            budget = min(budget, cfg.max_call_tokens - (len(row.ids) - row.call_start))
        elif cfg.max_answer_tokens is not None:
            budget = min(budget, cfg.max_answer_tokens - row.answer_tokens)
        allow = tuple(self._allowed(row, cfg) or ())
        watch = row.phase == "text" and row.calls_left > 0 and cfg.k > 0
        return SegmentRequest(
            row.prompt_ids + row.ids, 1 if allow else max(1, budget), cfg.temperature,
            segment_seed(cfg.seed, row.prompt_ids, len(row.ids)) if cfg.temperature > 0 else None,
            self.co if watch else None, cfg.k, self.co if self._banned(row) else None,
            row.rules.stop if row.phase == "text" else (), tuple(sorted(self.eos_ids)), allow)

    @staticmethod
    def _banned(row: RowState) -> bool:
        return row.at_open_point() and not row.can_open()

    def _fits(self, row: RowState, req: SegmentRequest, cfg: DecodeConfig) -> bool:
        """Whether the request drew this step from the distribution the HF decoder would use."""
        if self._banned(row) != (req.ban is not None) or tuple(self._allowed(row, cfg) or ()) != req.allow:
            return False
        return req.watch is not None or not (row.can_open() and cfg.k > 0)

    # ------------------------------------------------------------------ replay
    def _replay(self, row: RowState, req: SegmentRequest, seg: Segment, cfg: DecodeConfig) -> Optional[ToolCall]:
        """Push the segment's tokens until the HF decoder would have diverged; returns a call to run."""
        if not seg.token_ids:  # never happens with max_tokens >= 1; asking again would loop forever
            log.warning("the engine wrote nothing for a row; ending it")
            row.stop_now()
            return None
        for step, (token, rank) in enumerate(zip(seg.token_ids, seg.ranks)):
            if row.done or row.queue or not self._fits(row, req, cfg):
                if step == 0:  # the request was made for this very state; cutting here would loop
                    raise RuntimeError("segment request does not fit the row it was made for")
                return None
            if row.can_open() and rank is not None and opens_call(rank, cfg.k):
                self._counters["calls_started"] += 1
                self._push(row, row.open_call(), True, cfg)
                return None
            call = self._push(row, token, False, cfg)
            if call is not None:
                return call
        return None

