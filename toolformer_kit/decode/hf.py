"""Tool-aware decoding: the model writes, opens a call when " [" is likely enough, and gets results.

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
* with ``max_calls`` > 1 a row makes several calls, each result in its text before the next
  (a chain); a call identical to one the row already ran is not run again (the loop guard of
  :mod:`toolformer_kit.decode.state`);
* ``constrain_inputs`` (not the paper's) masks, while a call's input is written, the tokens that
  leave its tool's input grammar;
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
from collections import Counter, deque
from typing import Mapping, Optional, Sequence

import torch
from tqdm.auto import tqdm

from ..calls import ToolCall
from ..registry import UnknownNameError
from ..tools import get_tool, tool_names
from ..tools.engine import ToolEngine
from .config import CallRecord, DecodeConfig, DecodeResult
from .rows import RowCache, RowTarget, num_layers, slot_mask, sliding_window
from .state import RowRules, RowState, closing_tokens, grammar_tokens, name_tokens, opens_call

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


# A prefill run holds at most this many tokens, pads included, and no prompt shorter than this
# share of its longest (ASDiv, 100 prompts of 21-98 tokens at 128 rows, Qwen bf16: prefill 5.1 s
# in runs of 4,096 tokens with no length rule, 4.5 s with 0.75, 4.0 s with 1,024 and 0.8).
PREFILL_TOKENS, PREFILL_RATIO = 1024, 0.8

_NAMES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_CLOSES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_GRAMMARS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _per_model(store: "weakref.WeakKeyDictionary", lm) -> dict:
    """A mask cache shared by every decoder of one model: a name mask scans the vocabulary
    (0.15 s on Qwen), and DATESET builds a decoder per example."""
    try:
        return store.setdefault(lm, {})
    except TypeError:  # not weak-referenceable: one cache per decoder
        return {}


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
        self._name_cache: dict[tuple, list[int]] = _per_model(_NAMES, lm)
        self._close_cache: dict[int, list[int]] = _per_model(_CLOSES, lm)
        self._grammar_cache: dict[tuple, list[int]] = _per_model(_GRAMMARS, lm)
        self._grammars: dict[str, Optional[str]] = {}

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
        with tqdm(total=len(rows), desc="decode", unit="prompt", disable=len(rows) < 2, leave=False) as bar:
            self._decode_all(rows, cfg, bar)
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
                        known=usable.__contains__, names=tuple(sorted(usable)), force_arrow=cfg.force_arrow,
                        drop_empty=cfg.drop_empty_calls)

    def _name_mask(self, row: RowState) -> Optional[list[int]]:
        """The tokens the row may write next while naming its call's tool; None = no mask."""
        prefix = row.naming()
        if prefix is None:
            return None
        key = (prefix, row.rules.names)
        if key not in self._name_cache:
            self._name_cache[key] = name_tokens(prefix, row.rules.names, vocab_pieces(self.lm))
        return self._name_cache[key] or None  # nothing fits (cannot happen with a full vocabulary)

    def _allowed(self, row: RowState, cfg: DecodeConfig) -> Optional[list[int]]:
        """The only tokens the row may write next: naming a tool, or (``constrain_inputs``)
        writing the input of a tool with an input grammar; None = no such mask."""
        named = self._name_mask(row)
        return named if named is not None or not cfg.constrain_inputs else self._input_mask(row)

    def _input_mask(self, row: RowState) -> Optional[list[int]]:
        """The tokens that keep the call's input within its tool's grammar; None = no grammar."""
        where = row.input_tool()
        grammar = None if where is None else self._grammar(where[0])
        if grammar is None:
            return None
        key = (grammar, where[1])
        if key not in self._grammar_cache:
            self._grammar_cache[key] = grammar_tokens(where[1], grammar, vocab_pieces(self.lm))
        return self._grammar_cache[key] or None

    def _grammar(self, name: str) -> Optional[str]:
        """A tool's input grammar: from the decoder's tools, the engine's, or the registry."""
        if name not in self._grammars:
            tools = self.tools if self.tools is not None else getattr(self.engine, "tools", None)
            tool = tools.get(name) if isinstance(tools, Mapping) else None
            if tool is None and name in self.tool_names:
                try:
                    tool = get_tool(name)
                except UnknownNameError:
                    tool = None
            self._grammars[name] = getattr(tool, "input_grammar", None)
        return self._grammars[name]

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
    def _decode_all(self, rows: list[RowState], cfg: DecodeConfig, bar) -> None:
        """Continuous batching: up to ``batch_size`` rows decode together and a finished row's
        slot takes the next prompt (longest first); a step feeds one token per live row."""
        waiting = deque(sorted(rows, key=lambda r: -len(r.prompt_ids)))
        gens = {id(r): _row_generator(cfg.seed, r.prompt_ids) for r in rows} if cfg.temperature > 0 else None
        io = _CachedRows(self, rows, cfg) if self.use_cache else _Reencoded(self)
        live: list[RowState] = []
        logits = None
        while live or waiting:
            free = self.batch_size - len(live)
            if waiting and (not live or free >= self._refill_at()):
                new = [waiting.popleft() for _ in range(min(free, len(waiting)))]
                fresh = io.prefill(new, len(live))
                live, logits = live + new, fresh if logits is None else torch.cat([logits, fresh])
            self._step(logits, live, [gens[id(r)] for r in live] if gens else None, cfg)
            keep = [b for b, r in enumerate(live) if not r.done]
            bar.update(len(live) - len(keep))
            live = io.compact(live, keep)
            logits = io.step(live) if live else None

    def _refill_at(self) -> int:
        """Free slots that make a prefill worth its cost: a prompt or two alone runs the weights
        for few tokens, so new prompts are admitted a quarter of the batch at a time."""
        return max(1, self.batch_size // 4)

    def _step(self, logits: torch.Tensor, rows: list[RowState], gens, cfg: DecodeConfig) -> list[int]:
        """Choose and push one token per live row; run the tools of rows that reached "->"."""
        co = self.lm.call_open_ids[-1]
        can_open = [r.can_open() for r in rows]
        opens = [False] * len(rows)
        if any(can_open):  # the rank of " [" only matters where a call may open
            ranks = (logits > logits[:, co: co + 1]).sum(-1).tolist()
            opens = [can and opens_call(rank, cfg.k) for can, rank in zip(can_open, ranks)]
        closed = [b for b, r in enumerate(rows) if not can_open[b] and r.at_open_point()]
        if closed:  # no calls left (or disabled): " [" gets probability 0
            logits[closed, co] = float("-inf")
        for b, row in enumerate(rows):
            allowed = self._allowed(row, cfg)
            if allowed is not None:  # naming a tool (only allowed names), or a typed input
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
    def _forward(self, ids: torch.Tensor, mask: torch.Tensor, pos: torch.Tensor, past) -> torch.Tensor:
        out = self.lm.model(input_ids=ids.to(self.lm.device), attention_mask=mask, position_ids=pos.to(self.lm.device),
                            use_cache=past is not None, logits_to_keep=1, **{self.lm.cache_kw: past})
        return out.logits[:, -1].float()

    def _count(self, results: list[DecodeResult]) -> None:
        c = self._counters
        for res in results:
            c["prompts"] += 1
            c["tokens"] += len(res.token_ids)
            c["forced_tokens"] += sum(res.forced)
            for call in res.calls:
                c["calls_ok" if call.ok else f"malformed.{call.reason}"] += 1


class _CachedRows:
    """The decoder's model I/O with a :class:`~.rows.RowCache`: live rows in slots [0, live)."""

    def __init__(self, decoder: ToolAwareDecoder, rows: list[RowState], cfg: DecodeConfig):
        self.d = decoder
        config = decoder.lm.model.config
        slots = min(decoder.batch_size, len(rows))
        start = max(len(r.prompt_ids) for r in rows) + min(cfg.max_new_tokens, 64)
        self.cache = RowCache(num_layers(config), slots, start)
        self.window = sliding_window(config)

    def prefill(self, new: list[RowState], first: int) -> torch.Tensor:
        """Run the new rows' prompts into slots [first, first + len(new)), in runs of similar
        length (a prefill of a hundred prompts padded to the longest spends much on pads)."""
        budget, ratio = min(PREFILL_TOKENS, getattr(self.d.lm, "batch_tokens", PREFILL_TOKENS)), PREFILL_RATIO
        out, start = [], 0
        for end in range(1, len(new) + 1):
            widest = max(len(r.prompt_ids) for r in new[start:end + 1]) if end < len(new) else 0
            if end == len(new) or widest * (end + 1 - start) > budget or \
                    len(new[end].prompt_ids) < ratio * widest:
                out.append(self._prefill(new[start:end], first + start))
                start = end
        return torch.cat(out)

    def _prefill(self, new: list[RowState], first: int) -> torch.Tensor:
        """Left-padded; a pad writes to its row's first free column (overwritten before it is
        ever attended)."""
        q = max(len(r.prompt_ids) for r in new)
        ids = torch.full((len(new), q), self.d.pad_id, dtype=torch.long)
        pos = torch.zeros((len(new), q), dtype=torch.long)
        cols = torch.empty((len(new), q), dtype=torch.long)
        for b, r in enumerate(new):
            n = len(r.prompt_ids)
            ids[b, q - n:] = torch.tensor(r.prompt_ids)
            pos[b, q - n:] = torch.arange(n)
            cols[b] = n
            cols[b, q - n:] = torch.arange(n)
        slots = torch.arange(first, first + len(new))
        return self._run(ids, pos, RowTarget(slots, cols, q, leading=False))

    def step(self, live: list[RowState]) -> torch.Tensor:
        """Feed each live row's last token at its next column."""
        cols = torch.tensor([[len(r.prompt_ids) + len(r.ids) - 1] for r in live])
        ids = torch.tensor([[r.ids[-1] if r.ids else r.prompt_ids[-1]] for r in live])  # a dropped call may leave none
        return self._run(ids, cols, RowTarget(torch.arange(len(live)), cols, int(cols.max()) + 1, leading=True))

    def compact(self, live: list[RowState], keep: list[int]) -> list[RowState]:
        """Drop finished rows; the last live rows move into the holes so slots stay [0, live)."""
        if len(keep) == len(live):
            return live
        n, kept = len(keep), set(keep)
        holes = [b for b in range(n) if b not in kept]
        movers = [b for b in keep if b >= n]
        for dst, src in zip(holes, movers):
            row = live[src]
            self.cache.move(dst, src, len(row.prompt_ids) + len(row.ids) - 1)
        return _placed(live, keep, holes, movers)

    def _run(self, ids: torch.Tensor, pos: torch.Tensor, target: RowTarget) -> torch.Tensor:
        dev = self.d.lm.device
        full = slot_mask(pos, target.width).to(dev)
        mask = full if not self.window else \
            {"full_attention": full, "sliding_attention": slot_mask(pos, target.width, self.window).to(dev)}
        self.cache.target = RowTarget(target.slots.to(dev), target.cols.to(dev), target.width, target.leading)
        try:
            return self.d._forward(ids, mask, pos, self.cache)
        finally:
            self.cache.target = None


def _placed(live: list[RowState], keep: list[int], holes: list[int], movers: list[int]) -> list[RowState]:
    """The live rows in slot order once the rows past the end (``movers``) filled the holes.

    >>> _placed(list("abcde"), [1, 3, 4], [0, 2], [3, 4])
    ['d', 'b', 'e']
    """
    kept = set(keep)
    out = [live[b] if b in kept else None for b in range(len(keep))]
    for dst, src in zip(holes, movers):
        out[dst] = live[src]
    return out


class _Reencoded:
    """The no-cache reference: every forward runs each row's whole sequence again, left-padded,
    with the model's own 2-D mask; the same rows in the same order as the cached path."""

    def __init__(self, decoder: ToolAwareDecoder):
        self.d = decoder

    def prefill(self, new: list[RowState], first: int) -> torch.Tensor:
        return self._run(new)

    def step(self, live: list[RowState]) -> torch.Tensor:
        return self._run(live)

    def compact(self, live: list[RowState], keep: list[int]) -> list[RowState]:
        kept = set(keep)
        return _placed(live, keep, [b for b in range(len(keep)) if b not in kept], [b for b in keep if b >= len(keep)])

    def _run(self, rows: list[RowState]) -> torch.Tensor:
        ids, mask = _left_pad([r.prompt_ids + r.ids for r in rows], self.d.pad_id)
        mask = mask.to(self.d.lm.device)
        return self.d._forward(ids, mask, (mask.cumsum(-1) - 1).clamp(min=0), None)


def _engine_tool_names(engine) -> frozenset:
    """The tools an engine can run: the ones it was built with, else every registered tool."""
    tools = getattr(engine, "tools", None)
    if tools is None:
        return frozenset(tool_names())
    return frozenset(tools) if isinstance(tools, Mapping) else frozenset(t.name for t in tools)


def _make_engine(tools: Optional[Mapping]):
    return ToolEngine(tools)
