"""The tool-aware decoder as it was before continuous batching (commit 8433f7b), kept verbatim
(imports made absolute) so that benchmarks/bench_eval.py measures before and after in one run.
Not used by the package.

Tool-aware decoding: the model writes, opens a call when " [" is likely enough, and gets results.

This is how a Toolformer model is used (the paper's §4): decode as usual, but

* **start a call** whenever " [" is among the top ``k`` next tokens (k = 10 in the paper), not
  only when it is the most likely one: a fine-tuned model is cautious, and waiting for " [" to
  be the argmax makes calls rare. The call-open token is then *forced*, not sampled;
* when the model has written ``Tool(input) ->``, **pause**, run the tool and feed `` result]``
  as forced tokens, then continue. The KV cache is kept: only inserted tokens are encoded;
* allow at most ``max_calls`` calls per input (1 in the paper) by masking " [" afterwards;
  ``disabled`` masks it from the start (the paper's "Toolformer (disabled)" baseline);
* once " [" is open, **only the names of the allowed tools can be written**: the tokens that
  would name another tool are masked until the call's ``(``. A task that disables a tool
  (WikiSearch on LAMA) thus never spends its one call on an empty result, and with no tool
  allowed " [" is never opened;
* ``max_answer_tokens`` limits what the model writes *outside* calls, so inserting a call and
  its result (WikiSearch's run to 50-100 tokens) never shortens the answer.

Prompts are decoded in batches, left-padded, each row with its own call state and queue of
forced tokens (nanochat's engine works the same way); every row feeds exactly one token per
step, so rows waiting on a tool and rows writing text share one forward pass. What happens to
malformed calls is documented in :mod:`toolformer_kit.decode.state`.
"""

from __future__ import annotations

import hashlib
import logging
import time
import weakref
from collections import Counter
from typing import Mapping, Optional, Sequence

import torch
from tqdm.auto import tqdm

from toolformer_kit.calls import ToolCall
from toolformer_kit.tools import tool_names
from toolformer_kit.tools.engine import ToolEngine
from toolformer_kit.decode.config import CallRecord, DecodeConfig, DecodeResult
from toolformer_kit.decode.state import RowRules, RowState, closing_tokens, name_tokens, opens_call

log = logging.getLogger(__name__)

__all__ = ["CallRecord", "DecodeConfig", "DecodeResult", "ToolAwareDecoder"]


def _row_generator(seed: int, prompt_ids: Sequence[int]) -> torch.Generator:
    """Seeded by (seed, prompt) so a row's samples do not depend on what else is in the batch."""
    digest = hashlib.sha256(f"{seed}|{','.join(map(str, prompt_ids))}".encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") & ((1 << 63) - 1))


_PIECES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def vocab_pieces(lm) -> list[str]:
    """Each token's text, for the tool-name mask; computed once per model (a 150k vocabulary
    takes a second or two), as decoders are rebuilt per tool set (DATESET: per example)."""
    try:
        return _PIECES[lm]
    except (KeyError, TypeError):
        pass
    tok = lm.tokenizer
    ids = [[t] for t in range(len(tok))]
    pieces = tok.batch_decode(ids) if hasattr(tok, "batch_decode") else [lm.decode(i) for i in ids]
    try:
        _PIECES[lm] = pieces
    except TypeError:  # not weak-referenceable: recomputed per decoder
        pass
    return pieces


def _left_pad(seqs: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded ids and their attention mask, so every row's next token is in the last column.

    >>> ids, mask = _left_pad([[5, 6], [7]], 0)
    >>> ids.tolist(), mask.tolist()
    ([[5, 6], [0, 7]], [[1, 1], [0, 1]])
    """
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for r, s in enumerate(seqs):
        ids[r, width - len(s):] = torch.tensor(s, dtype=torch.long)
        mask[r, width - len(s):] = 1
    return ids, mask


class ToolAwareDecoder:
    """Generate with tools. ``use_cache=False`` re-encodes everything each step (a reference for
    tests); ``batch_size`` bounds how many prompts share a forward pass."""

    def __init__(self, lm, tools: Optional[Mapping] = None, engine=None, config: Optional[DecodeConfig] = None,
                 *, use_cache: bool = True, batch_size: int = 16):
        self.lm = lm
        self.config = config or DecodeConfig()
        self.tools = dict(tools) if tools is not None else None
        self.engine = engine if engine is not None else _make_engine(self.tools)
        self.tool_names = frozenset(self.tools) if self.tools is not None else _engine_tool_names(self.engine)
        self.use_cache = use_cache
        self.batch_size = max(1, batch_size)
        self.pad_id = lm.pad_id
        self.eos_ids = frozenset(lm.eos_ids or ())
        if not lm.call_open_ids:
            raise ValueError("the tokenizer encodes the call-open text ' [' as no tokens; it cannot open calls")
        self._counters: Counter = Counter()
        self._name_cache: dict[tuple, list[int]] = {}
        self._close_cache: dict[int, list[int]] = {}

    @property
    def counters(self) -> dict:
        """Calls started/ok, malformed calls by reason (``malformed.<reason>``), tokens and tool time."""
        return dict(self._counters)

    # ------------------------------------------------------------------ public
    def generate(self, prompts: Sequence[str], config: Optional[DecodeConfig] = None) -> list[DecodeResult]:
        """Decode every prompt; results come back in prompt order."""
        cfg = config or self.config
        if isinstance(prompts, str):
            raise TypeError("generate takes a list of prompts; wrap a single prompt as [prompt]")
        rules = self._rules(cfg)
        calls_left = 0 if cfg.disabled or not self._usable_tools(cfg) else cfg.max_calls
        rows = [RowState(self._prompt_ids(p, cfg), rules, calls_left) for p in prompts]
        order = sorted(range(len(rows)), key=lambda i: -len(rows[i].prompt_ids))
        with tqdm(total=len(rows), desc="decode", unit="prompt", disable=len(rows) < 2, leave=False) as bar:
            for s in range(0, len(order), self.batch_size):
                group = [rows[i] for i in order[s: s + self.batch_size]]
                self._decode_group(group, cfg)
                bar.update(len(group))
        results = [DecodeResult(p, r.final_text(), r.calls, r.forced, r.ids) for p, r in zip(prompts, rows)]
        self._count(results)
        return results

    # ------------------------------------------------------------------ setup
    def _prompt_ids(self, prompt: str, cfg: DecodeConfig) -> list[int]:
        ids = list(self.lm.bos_ids) + self.lm.encode(prompt)
        if not ids:
            raise ValueError("empty prompt: this model has no BOS token to start from; give some text")
        limit = self.lm.max_length
        if limit and len(ids) + cfg.max_new_tokens > limit:
            raise ValueError(f"prompt of {len(ids)} tokens plus max_new_tokens={cfg.max_new_tokens} exceeds the "
                             f"model's context of {limit}; shorten the prompt or lower max_new_tokens")
        return ids

    def _usable_tools(self, cfg: DecodeConfig) -> set[str]:
        names = set(self.tool_names)
        return names if cfg.allowed_tools is None else names & set(cfg.allowed_tools)

    def _rules(self, cfg: DecodeConfig) -> RowRules:
        usable = self._usable_tools(cfg)
        return RowRules(encode=self.lm.encode, decode=self.lm.decode,
                        call_open_ids=tuple(self.lm.call_open_ids), eos_ids=self.eos_ids,
                        stop=tuple(s for s in cfg.stop if s), max_call_tokens=cfg.max_call_tokens,
                        known=usable.__contains__, names=tuple(sorted(usable)), force_arrow=cfg.force_arrow)

    def _name_mask(self, row: RowState) -> Optional[list[int]]:
        """The tokens the row may write next while naming its call's tool; None = no mask."""
        prefix = row.naming()
        if prefix is None:
            return None
        key = (prefix, row.rules.names)
        if key not in self._name_cache:
            self._name_cache[key] = name_tokens(prefix, row.rules.names, vocab_pieces(self.lm))
        return self._name_cache[key] or None  # nothing fits (cannot happen with a full vocabulary)

    def _closing_ban(self, row: RowState) -> Optional[list[int]]:
        """With ``force_arrow``: the tokens that would close the input mid-token; None = no ban."""
        depth = row.input_depth() if row.rules.force_arrow else None
        if depth is None:
            return None
        if depth not in self._close_cache:
            self._close_cache[depth] = closing_tokens(depth, vocab_pieces(self.lm))
        return self._close_cache[depth] or None

    @staticmethod
    def _spent(row: RowState, cfg: DecodeConfig) -> bool:
        """The hard cap on all new tokens, or the answer budget on the model's own text."""
        return len(row.ids) >= cfg.max_new_tokens or (
            cfg.max_answer_tokens is not None and row.answer_tokens >= cfg.max_answer_tokens)

    # ------------------------------------------------------------------ the loop
    @torch.no_grad()
    def _decode_group(self, rows: list[RowState], cfg: DecodeConfig) -> None:
        gens = [_row_generator(cfg.seed, r.prompt_ids) for r in rows] if cfg.temperature > 0 else None
        live = list(range(len(rows)))
        ids, mask = _left_pad([r.prompt_ids for r in rows], self.pad_id)
        mask = mask.to(self.lm.device)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        past = self._new_cache() if self.use_cache else None
        logits = self._forward(ids.to(self.lm.device), mask, pos, past)
        next_pos = pos[:, -1] + 1
        while True:
            tokens = self._step(logits, [rows[i] for i in live], [gens[i] for i in live] if gens else None, cfg)
            keep = [b for b, i in enumerate(live) if not rows[i].done]
            if not keep:
                return
            if len(keep) < len(live):
                sel = torch.tensor(keep, device=self.lm.device)
                if past is not None:
                    past.batch_select_indices(sel)
                mask, next_pos = mask[sel], next_pos[sel]
                tokens, live = [tokens[b] for b in keep], [live[b] for b in keep]
            mask = torch.cat([mask, mask.new_ones((len(live), 1))], dim=1)
            if past is not None:
                step_ids = torch.tensor(tokens, device=self.lm.device)[:, None]
                logits = self._forward(step_ids, mask, next_pos[:, None], past)
            else:
                logits = self._reencode([rows[i] for i in live])
            next_pos = next_pos + 1

    def _step(self, logits: torch.Tensor, rows: list[RowState], gens, cfg: DecodeConfig) -> list[int]:
        """Choose and push one token per live row; run the tools of rows that reached "->"."""
        co = self.lm.call_open_ids[-1]
        can_open = torch.tensor([r.can_open() for r in rows], device=logits.device)
        at_point = torch.tensor([r.at_open_point() for r in rows], device=logits.device)
        ranks = (logits > logits[:, co: co + 1]).sum(-1).tolist()
        opens = [row.can_open() and opens_call(rank, cfg.k) for row, rank in zip(rows, ranks)]
        logits = logits.clone()
        logits[at_point & ~can_open, co] = float("-inf")  # no calls left (or disabled): probability 0
        for b, row in enumerate(rows):
            allowed = self._name_mask(row)
            if allowed is not None:  # naming a tool: only the allowed tools' names
                keep = torch.full_like(logits[b], float("-inf"))
                keep[allowed] = logits[b, allowed]
                logits[b] = keep
            banned = self._closing_ban(row)
            if banned is not None:  # force_arrow: the input may only end on a token boundary
                logits[b, banned] = float("-inf")
        drawn = self._draw(logits, gens, cfg, [not r.queue and not o for r, o in zip(rows, opens)])
        pending: list[tuple[RowState, ToolCall]] = []
        tokens = []
        for b, row in enumerate(rows):
            if row.queue:
                token, forced = row.queue.popleft(), True
            elif opens[b]:
                token, forced = row.open_call(), True
                self._counters["calls_started"] += 1
            else:
                token, forced = drawn[b], False
            tokens.append(token)
            call = row.push(token, forced)
            if self._spent(row, cfg) and not row.done:
                row.stop_now()
            if call is not None and not row.done:
                pending.append((row, call))
        if pending:
            self._run_tools(pending)
        return tokens

    def _draw(self, logits: torch.Tensor, gens, cfg: DecodeConfig, needed: list[bool]) -> list[int]:
        if cfg.temperature <= 0:
            return logits.argmax(-1).tolist()
        probs = torch.softmax(logits.float().cpu() / cfg.temperature, dim=-1)
        return [int(torch.multinomial(probs[b], 1, generator=gens[b])) if need else -1
                for b, need in enumerate(needed)]

    def _run_tools(self, pending: list[tuple[RowState, ToolCall]]) -> None:
        start = time.perf_counter()
        outcomes = self.engine.run([call for _, call in pending])
        self._counters["tool_seconds"] += time.perf_counter() - start
        for (row, call), out in zip(pending, outcomes):
            reason = "tool_error" if getattr(out, "error", None) else ""
            if reason:
                log.debug("tool %s(%r) failed: %s", call.tool, call.input, out.error)
            row.resolve(out.result, reason)

    # ------------------------------------------------------------------ model I/O
    def _new_cache(self):
        from transformers import DynamicCache  # lazy: heavy

        return DynamicCache()

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor, pos: torch.Tensor, past) -> torch.Tensor:
        out = self.lm.model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=past is not None,
                            logits_to_keep=1, **{self.lm.cache_kw: past})
        return out.logits[:, -1].float()

    def _reencode(self, rows: list[RowState]) -> torch.Tensor:
        """The no-cache reference: the whole sequence again, laid out exactly as the cached path."""
        ids, mask = _left_pad([r.prompt_ids + r.ids for r in rows], self.pad_id)
        mask = mask.to(self.lm.device)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        return self._forward(ids.to(self.lm.device), mask, pos, None)

    def _count(self, results: list[DecodeResult]) -> None:
        c = self._counters
        for res in results:
            c["prompts"] += 1
            c["tokens"] += len(res.token_ids)
            c["forced_tokens"] += sum(res.forced)
            for call in res.calls:
                c["calls_ok" if call.ok else f"malformed.{call.reason}"] += 1


def _engine_tool_names(engine) -> frozenset:
    """The tools an engine can run: the ones it was built with, else every registered tool."""
    tools = getattr(engine, "tools", None)
    if tools is None:
        return frozenset(tool_names())
    return frozenset(tools) if isinstance(tools, Mapping) else frozenset(t.name for t in tools)


def _make_engine(tools: Optional[Mapping]):
    return ToolEngine(tools)
