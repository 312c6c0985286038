"""Sampling for the transformers backend: continuous batching.

Why this shape. A decoding step reads every weight of the model whatever the batch, so tokens/s
grows with the rows decoded together (Qwen 0.5B's weights on one thread here: 22 tokens/s at 16
rows, 37 at 64, 42 at 128). Annotation samples m calls at each of k positions of every document
of a shard; most samples stop after a few tokens while a few run to the token budget, so a batch
that only retires rows shrinks to those few slow rows. Here a finished row's slot is refilled at once with
the next (prefix, j) row, and the batch stays full until the work runs out.

* **Heads.** Each prefix ("head") runs once into a head slot (:mod:`toolformer_kit.lm.hf_slots`);
  its n sample rows attend it there and own only their sampled tokens' K/V, so admitting a row
  copies nothing. Heads are taken longest first among those sharing a prefix, and a head that
  differs from the last fully run head (its "base") only in its last few tokens copies the base's
  columns and runs only those tokens. In annotation that is the " [" after x_<i: x_<i is a prefix
  of the longest x_<i of the same document, so a document's context runs once, not once per
  position.
* **Draws.** Each (prefix, j) row owns a generator seeded by the whole prefix, and the token drawn
  is exactly ``torch.multinomial``'s, computed for all rows at once (:class:`TokenDrawer`); so
  what is drawn does not depend on batching, slots or head sharing, up to float round-off in the
  logits.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch

from .hf_slots import ATTENTION, HEADS, ROWS, Groups, SlotCache, Target, activate, kv_bytes_per_column, text_config
from .base import Sample, SamplingConfig, cut_at_stop

# A head runs at most this many tokens on top of its base's columns; a longer tail makes it a base.
MAX_TAIL = 8
# Relative slack of the bound p/u >= p/q: float32 rounding moves either side by < 2.4e-7.
BOUND_SLACK = 1e-6


# ---------------------------------------------------------------- draws
def token_probs(logits: torch.Tensor, cfg: SamplingConfig) -> torch.Tensor:
    """Row-wise temperature, top-k and top-p, as the per-row reference did them, on the batch."""
    if cfg.temperature != 1.0:  # x / 1.0 is x: skipping it changes no bit
        logits = logits / cfg.temperature
    if cfg.top_k and cfg.top_k < logits.shape[-1]:
        kth = torch.topk(logits, cfg.top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    if cfg.top_p < 1.0:
        sorted_p, idx = torch.sort(probs, dim=-1, descending=True)
        drop = sorted_p.cumsum(-1) - sorted_p > cfg.top_p
        probs = probs.scatter(-1, idx, sorted_p.masked_fill(drop, 0.0))
    return probs


def _ratio(p: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """p / Exp(1) noise, in float32 as ``torch.multinomial`` computes it from the same uniforms."""
    return p / (-torch.log1p(-u)).to(p.dtype)


def gumbel_argmax(probs: torch.Tensor, u: torch.Tensor, bound: torch.Tensor, k: int = 8) -> torch.Tensor:
    """Per row, argmax of probs / (-log1p(-u)), taking the logarithm only where it can win.

    ``torch.multinomial(p, 1, generator=g)`` on CPU is argmax(p / q), q drawn by ``exponential_``
    from g as -log1p(-u) for u the generator's next doubles: a logarithm per vocabulary entry
    (151k for Qwen) and row. As q >= u, p / u bounds p / q from above, so only the entries whose
    bound reaches the exact ratio at the bound's argmax can win: almost always one or two, so the
    top ``k`` bounds are checked and a row with more such entries is done in full. ``bound`` is
    float32 scratch shaped like ``probs``.
    """
    bound.copy_(u)
    torch.div(probs, bound, out=bound)
    vals, idx = torch.topk(bound, min(k, bound.shape[-1]), dim=-1)
    best = _ratio(probs.gather(-1, idx[:, :1]), u.gather(-1, idx[:, :1]))
    near = vals >= (best.double() / (1 + BOUND_SLACK)).float()
    e = _ratio(probs.gather(-1, idx), u.gather(-1, idx)).masked_fill(~near, float("-inf"))
    top = e.max(-1, keepdim=True).values
    out = torch.where(near & (e == top), idx, probs.shape[-1]).min(-1).values
    for i in torch.nonzero(near[:, -1] | torch.isnan(best[:, 0])).flatten().tolist():
        out[i] = torch.argmax(_ratio(probs[i], u[i]))  # many near-ties, or p = u = 0 (nan wins there)
    return out


class TokenDrawer:
    """Draws one token per row: what ``torch.multinomial(token_probs(row), 1, generator=gen)``
    draws, for a whole batch at once. The uniforms come from each row's own generator (float64
    ``uniform_`` consumes it exactly as ``multinomial``'s ``exponential_`` does), so batching
    changes nothing but the speed. Buffers are kept between steps (fresh 100 MB tensors cost page
    faults at every step)."""

    def __init__(self, cfg: SamplingConfig):
        self.cfg = cfg
        self._u = self._bound = torch.empty(0)

    def __call__(self, logits: torch.Tensor, gens: Sequence[torch.Generator | None]) -> list[int]:
        if self.cfg.temperature <= 0:
            return logits.argmax(-1).tolist()
        probs = token_probs(logits.float().cpu(), self.cfg)
        rows, vocab = probs.shape
        if self._u.shape[0] < rows or self._u.shape[-1] != vocab:
            self._u = torch.empty(rows, vocab, dtype=torch.float64)
            self._bound = torch.empty(rows, vocab)
        u = self._u[:rows]
        for i, g in enumerate(gens):
            u[i].uniform_(0, 1, generator=g)
        return gumbel_argmax(probs, u, self._bound[:rows]).tolist()


# ---------------------------------------------------------------- bookkeeping
@dataclass
class _Head:
    index: int
    tokens: list[int]
    todo: deque = field(default_factory=deque)  # sample indices j not yet given a row slot
    live: int = 0  # rows decoding now
    slot: int = -1
    logits: torch.Tensor | None = None


@dataclass
class _Row:
    head: _Head
    j: int
    gen: torch.Generator | None
    tokens: list[int] = field(default_factory=list)

    @property
    def col(self) -> int:
        """Own column of the last drawn token, the one the next step feeds."""
        return len(self.tokens) - 1


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


class ContinuousSampler:
    """n samples of each head after a shared prompt, up to ``rows`` of them decoded together.

    ``lm`` is the :class:`~toolformer_kit.lm.hf.HFLanguageModel` (model, tokenizer, prompt cache,
    per-row generators). Head slots are as many as rows need, within ``kv_budget`` bytes.
    """

    def __init__(self, lm, shared: list[int], heads: list[list[int]], n: int, cfg: SamplingConfig,
                 stop: str, stop_when: Callable[[str], bool] | None, rows: int, kv_budget: int):
        if not all(heads):
            raise ValueError("sample needs at least one token after the shared prefix")
        self.lm, self.shared, self.n, self.cfg = lm, shared, n, cfg
        self.stop, self.stop_when, self.P = stop, stop_when, len(shared)
        self.heads = [_Head(i, h, deque(range(n))) for i, h in enumerate(heads)]
        # heads sharing a prefix next to each other, longer x_<i first (so earlier ones are bases)
        self.order = deque(sorted(self.heads, key=lambda h: h.tokens[:-1], reverse=True))
        self.C = max(1, min(rows, len(heads) * n))
        self.per_prefill = max(1, math.ceil(self.C / n))  # heads per prefill: enough for all row slots
        head_cols = max(len(h) for h in heads) + 1  # + a scratch column for pads
        slots = self._head_slots(head_cols, kv_budget)
        self.scratch = head_cols - 1
        config = text_config(lm.model.config)
        sliding = "sliding_attention" in (getattr(config, "layer_types", None) or ())
        self.window = getattr(config, "sliding_window", None) if sliding else None
        self.cache = SlotCache(config.num_hidden_layers, (slots, head_cols), (self.C, cfg.max_new_tokens + 1),
                               self._prefix())
        self.decode: list[_Row | None] = [None] * self.C
        self.free_heads = list(range(slots))
        self.staged: deque[_Head] = deque()  # heads with logits and samples left to place
        self.base: _Head | None = None
        self.draw = TokenDrawer(cfg)
        self.out: list[list[Sample | None]] = [[None] * n for _ in heads]
        self.stats = {"rows": self.C, "head_slots": slots, "steps": 0, "row_steps": 0, "prefill_tokens": 0,
                      "head_tokens": 0, "head_slot_waits": 0}

    def _head_slots(self, cols: int, kv_budget: int) -> int:
        """Head slots to hold: the heads with rows decoding (about 2C/n, as a head lives until its
        slowest row ends), a prefill batch, the base. Fewer only delays a prefill by a step."""
        per_col = kv_bytes_per_column(self.lm.model.config, self.lm.model.dtype.itemsize)
        fit = (kv_budget - per_col * self.C * (self.cfg.max_new_tokens + 1)) // (per_col * cols)
        return max(self.per_prefill + 2, min(self.C + self.per_prefill + 2, 3 * self.per_prefill + 3, fit))

    def _prefix(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        if not self.P:
            return []
        past = self.lm._prompt_cache(self.shared)[0]
        return [(layer.keys[0], layer.values[0]) for layer in past.layers]

    # ------------------------------------------------------------ main loop
    @torch.no_grad()
    def run(self) -> list[list[Sample]]:
        if self.n > 0 and self.cfg.max_new_tokens > 0:
            config = self.lm.model.config
            before = config._attn_implementation
            config._attn_implementation = ATTENTION
            activate(self.cache)
            try:
                self._loop()
            finally:
                config._attn_implementation = before
                activate(None)
        return [[s or Sample("", False, []) for s in row] for row in self.out]

    def _loop(self) -> None:
        while True:
            self._fill()
            live = self._compact()
            if not live:
                if self.order or self.staged:
                    raise RuntimeError("sampler stalled with rows left")  # slot accounting broke
                return
            self._advance(list(range(live)), self._step(live))

    def _fill(self) -> None:
        """Give free row slots to waiting rows, each drawing its first token from its head's logits."""
        while True:
            free = [s for s, r in enumerate(self.decode) if r is None]
            waiting = sum(len(h.todo) for h in self.staged)
            if waiting < len(free) and self.order:
                if self.free_heads:
                    self._prefill_next()
                    waiting = sum(len(h.todo) for h in self.staged)
                else:
                    self.stats["head_slot_waits"] += 1
            if not free or not waiting:
                return
            slots, logits = self._admit(free)
            self._advance(slots, torch.stack(logits))

    def _advance(self, slots: list[int], logits: torch.Tensor) -> None:
        """Draw the next token of the rows in ``slots``; retire those that are done."""
        rows = [self.decode[s] for s in slots]
        for s, row, t in zip(slots, rows, self.draw(logits, [r.gen for r in rows])):
            row.tokens.append(t)
            done = self._finished(row, t)
            if done is not None:
                self.out[row.head.index][row.j] = done
                self.decode[s] = None
                row.head.live -= 1
                self._release(row.head)

    def _finished(self, row: _Row, token: int) -> Sample | None:
        text, closed = cut_at_stop(self.lm.decode(row.tokens), self.stop)
        closed = closed or bool(self.stop_when and self.stop_when(text))
        if closed or token in self.lm.eos_ids or len(row.tokens) >= self.cfg.max_new_tokens:
            return Sample(text, closed, list(row.tokens))
        return None

    def _step(self, live: int) -> torch.Tensor:
        """One decoding step for the rows in slots [0, live)."""
        rows = self.decode[:live]
        lengths = torch.tensor([len(r.head.tokens) for r in rows])
        cols = torch.tensor([[r.col] for r in rows])
        target = Target(ROWS, torch.arange(live), cols, int(cols.max()) + 1, leading=True,
                        groups=_groups([r.head.slot for r in rows], int(lengths.max())))
        ids = torch.tensor([[r.tokens[-1]] for r in rows])
        self.stats["steps"] += 1
        self.stats["row_steps"] += live
        return self._forward(target, ids, cols + self.P + lengths[:, None], self._decode_keys(target, lengths))

    def _decode_keys(self, t: Target, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Positions of [prompt | head | own] keys per row, and which head columns are the row's."""
        b, P, width = len(lengths), self.P, t.groups.width
        head = torch.arange(width)
        pos = torch.cat([torch.arange(P).expand(b, P), (P + head).expand(b, width),
                         P + lengths[:, None] + torch.arange(t.width)], dim=1)
        valid = torch.cat([torch.ones(b, P, dtype=torch.bool), head < lengths[:, None],
                           torch.ones(b, t.width, dtype=torch.bool)], dim=1)
        return pos, valid

    # ------------------------------------------------------------ slots
    def _admit(self, free: list[int]) -> tuple[list[int], list[torch.Tensor]]:
        """Place waiting (head, j) rows into free row slots; returns the slots and the logits each
        row draws its first token from."""
        placed, logits = [], []
        while free and self.staged:
            head = self.staged[0]
            while free and head.todo:
                s = free.pop(0)
                j = head.todo.popleft()
                gen = self.lm._row_generator(self.cfg.seed, self.shared + head.tokens, j) \
                    if self.cfg.temperature > 0 else None
                self.decode[s] = _Row(head, j, gen)
                head.live += 1
                placed.append(s)
                logits.append(head.logits)
            if not head.todo:
                self.staged.popleft()
        return placed, logits

    def _release(self, head: _Head) -> None:
        """Free a head's slot once none of its rows waits or decodes and no head builds on it."""
        if head is not self.base and not head.todo and not head.live and head.slot >= 0:
            self.free_heads.append(head.slot)
            head.slot, head.logits = -1, None

    def _compact(self) -> int:
        """Move rows down into holes so the live rows are slots [0, live); returns live."""
        holes = [s for s, r in enumerate(self.decode) if r is None]
        used = [s for s, r in enumerate(self.decode) if r is not None]
        while holes and used and holes[0] < used[-1]:
            dst, src = holes.pop(0), used.pop()
            self.cache.copy(ROWS, [dst], src, self.decode[src].col)
            self.decode[dst], self.decode[src] = self.decode[src], None
        return sum(r is not None for r in self.decode)

    # ------------------------------------------------------------ heads
    def _prefill_next(self) -> None:
        """Run the next heads into head slots: new bases in full, the others on their base."""
        room = min(self.per_prefill, len(self.free_heads))
        full, tails, old_bases = [], [], []
        while self.order and len(full) + len(tails) < room:
            head = self.order.popleft()
            head.slot = self.free_heads.pop()
            same = common_prefix(head.tokens, self.base.tokens) if self.base else 0
            same = min(same, len(head.tokens) - 1)
            if self.base is not None and len(head.tokens) - same <= MAX_TAIL:
                tails.append((head, self.base, same))
            else:
                full.append(head)
                old_bases.append(self.base)
                self.base = head
        for chunk in self._chunks(full):
            self._run_heads([(h, 0) for h in chunk])
        for head, base, same in tails:
            self.cache.copy(HEADS, [head.slot], base.slot, same)
        if tails:
            self._run_heads([(h, s) for h, _, s in tails])
        self.staged.extend(full + [h for h, _, _ in tails])
        for old in old_bases:  # only now: tails above may have copied from them
            if old is not None:
                self._release(old)

    def _chunks(self, heads: list[_Head]) -> list[list[_Head]]:
        """Runs of heads whose padded batch stays within the backend's token budget."""
        out: list[list[_Head]] = []
        for h in sorted(heads, key=lambda h: -len(h.tokens)):
            if out and len(out[-1][0].tokens) * (len(out[-1]) + 1) <= self.lm.batch_tokens:
                out[-1].append(h)
            else:
                out.append([h])
        return out

    def _run_heads(self, work: list[tuple[_Head, int]]) -> None:
        """Run ``head.tokens[start:]`` of each head in its slot (a left-padded batch whose pads
        write to the scratch column and attend the prompt only, or the first column)."""
        q = max(len(h.tokens) - s for h, s in work)
        ids = torch.full((len(work), q), self.lm.pad_id, dtype=torch.long)
        cols = torch.full((len(work), q), self.scratch, dtype=torch.long)
        for r, (h, s) in enumerate(work):
            k = len(h.tokens) - s
            ids[r, q - k:] = torch.tensor(h.tokens[s:])
            cols[r, q - k:] = torch.arange(s, len(h.tokens))
        self.stats["prefill_tokens"] += sum(len(h.tokens) - s for h, s in work)
        self.stats["head_tokens"] += sum(len(h.tokens) for h, _ in work)  # what running each in full costs
        width = max(len(h.tokens) for h, _ in work)
        target = Target(HEADS, torch.tensor([h.slot for h, _ in work]), cols, width)
        real = cols != self.scratch
        pos = torch.where(real, cols + self.P, max(self.P - 1, 0))
        keys = torch.arange(self.P + width).expand(len(work), -1)
        logits = self._forward(target, ids, pos, (keys, torch.ones_like(keys, dtype=torch.bool)))
        for (h, _), row in zip(work, logits):
            h.logits = row

    # ------------------------------------------------------------ forward
    def _forward(self, target: Target, ids: torch.Tensor, pos: torch.Tensor,
                 keys: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """Last-position logits (fp32, CPU). ``pos``: position of each input token; ``keys``:
        position of each key the batch attends and whether it is the row's."""
        dev = self.lm.device
        key_pos, valid = keys
        seen = valid[:, None, :] & (key_pos[:, None, :] <= pos[..., None])
        masks = self._additive(seen)
        if self.window:
            near = key_pos[:, None, :] > pos[..., None] - self.window
            masks = {"full_attention": masks, "sliding_attention": self._additive(seen & near)}
        self.cache.target = Target(target.store, target.slots.to(dev), target.cols.to(dev), target.width,
                                   target.leading, _to(target.groups, dev))
        out = self.lm.model(input_ids=ids.to(dev), position_ids=pos.to(dev), attention_mask=masks,
                            use_cache=True, logits_to_keep=1, **{self.lm.cache_kw: self.cache})
        self.cache.target = None
        return out.logits[:, -1].float().cpu()

    def _additive(self, seen: torch.Tensor) -> torch.Tensor:
        """(rows, 1, q, keys) mask to add to attention scores (built once for all layers)."""
        dtype = self.lm.model.dtype
        return torch.zeros(seen.shape, dtype=dtype).masked_fill_(~seen, float("-inf"))[:, None].to(self.lm.device)


def _groups(slots: list[int], width: int) -> Groups:
    """Rows by head slot: row b is member k of the u-th distinct slot -> flat index u * per + k."""
    heads = sorted(set(slots))
    index = {h: u for u, h in enumerate(heads)}
    seen = dict.fromkeys(heads, 0)
    member = []
    for h in slots:
        member.append(seen[h])
        seen[h] += 1
    per = max(seen.values())
    flat = [index[h] * per + k for h, k in zip(slots, member)]
    return Groups(torch.tensor(heads), torch.tensor(flat), per, width)


def _to(groups: Groups | None, dev) -> Groups | None:
    if groups is None:
        return None
    return Groups(groups.heads.to(dev), groups.flat.to(dev), groups.per, groups.width)
