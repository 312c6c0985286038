"""Sampling for the transformers backend: continuous batching over one slot cache.

Why this shape. On a CPU a decoding step streams every weight of the model whatever the batch,
so tokens/s grows almost linearly with the rows decoded together until the matmuls become
compute-bound. Annotation samples m calls at each of k positions of every document of a shard;
most samples stop after a few tokens while a few run to the token budget, so a batch that only
retires rows shrinks to those few slow rows. Here a finished row's slot is refilled at once with
the next (prefix, j) row, and the batch stays full until the work runs out.

* **Slots.** Every layer's keys and values live in one preallocated buffer of decode slots plus
  a few staging slots. A token's K/V sit in the column of its position (less the shared prompt's
  length), so rows of any length share the buffer without padding between prompt and row, the
  mask is just ``key position <= query position`` (and the sliding window where a model has
  one), a row moves by copying its columns, and no step concatenates (``DynamicCache`` copies
  the whole cache at every step).
* **Shared prompt held once.** The tool prompt's K/V (a few hundred tokens, the same for every
  row) are not copied into each slot: while the sampler runs, the model's attention is
  :func:`slot_attention`, which attends the prompt's K/V with all rows of the batch in one
  matmul and each row's own columns separately, under one softmax. Per row and step it reads
  only the row's own columns, which on SmolLM2 (46 KB of K/V per token) was most of the step.
* **Heads.** Each prefix ("head") runs once into a staging slot; its columns and last logits are
  copied to a decode slot for each of its n samples as slots free up. Heads are taken longest
  first among those sharing a prefix, and a head that differs from the last fully run head (its
  "base") only in its last few tokens copies the base's columns and runs only those tokens. In
  annotation that is the " [" after x_<i: x_<i is a prefix of the longest x_<i of the same
  document, so a document's context runs once, not once per position.
* **Draws.** Each (prefix, j) row owns a generator seeded by the whole prefix, and the token drawn
  is exactly ``torch.multinomial``'s, computed for all rows at once (:class:`TokenDrawer`); so
  what is drawn does not depend on batching, slots or head sharing, up to float round-off in the
  logits.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch
from transformers import AttentionInterface
from transformers.cache_utils import Cache, DynamicLayer
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from .lm import Sample, SamplingConfig, cut_at_stop

# A head runs at most this many tokens on top of its base's columns; a longer tail makes it a base.
MAX_TAIL = 8
# Relative slack of the bound p/u >= p/q: float32 rounding moves either side by < 2.4e-7.
BOUND_SLACK = 1e-6
ATTENTION = "toolformer_slots"


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


# ---------------------------------------------------------------- attention with the prompt held once
_active = threading.local()


def slot_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, softcap=None, **kwargs):
    """Attention over [shared prompt | the row's own columns], the prompt's K/V stored once.

    ``key``/``value`` are the rows' own columns (from :class:`SlotCache`); the prompt's come from
    the cache the sampler is running, and ``attention_mask`` (additive) covers both, prompt
    columns first. Outside the sampler this is plain SDPA.
    """
    cache = getattr(_active, "cache", None)
    if cache is None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling,
                                      dropout=dropout, softcap=softcap, **kwargs)
    if kwargs.get("s_aux") is not None:
        raise NotImplementedError("attention sinks are not supported by the slot sampler")
    rows, heads, q, dim = query.shape
    groups, rep = key.shape[1], heads // key.shape[1]
    qg = (query * (scaling if scaling is not None else dim ** -0.5)).reshape(rows, groups, rep * q, dim)
    prefix = cache.prefix[module.layer_idx] if cache.prefix else None
    scores = [torch.matmul(qg, key.transpose(-1, -2))]
    if prefix is not None:  # all rows' queries against the one prompt, per K/V head: one matmul
        flat = qg.transpose(0, 1).reshape(groups, rows * rep * q, dim)
        pre = torch.matmul(flat, prefix[0].transpose(-1, -2)).view(groups, rows, rep * q, -1).transpose(0, 1)
        scores.insert(0, pre)
    s = torch.cat(scores, -1).view(rows, groups, rep, q, -1)
    if softcap:
        s = torch.tanh(s / softcap) * softcap
    s = s.add_(attention_mask[:, :, None])  # additive: 0 or -inf
    p = torch.softmax(s, -1, dtype=torch.float32).to(value.dtype).view(rows, groups, rep * q, -1)
    P = 0 if prefix is None else prefix[0].shape[-2]
    out = torch.matmul(p[..., P:], value)
    if prefix is not None:
        flat = p[..., :P].transpose(0, 1).reshape(groups, rows * rep * q, P)
        out = out + torch.matmul(flat, prefix[1]).view(groups, rows, rep * q, dim).transpose(0, 1)
    return out.reshape(rows, heads, q, dim).transpose(1, 2).contiguous(), None


AttentionInterface.register(ATTENTION, slot_attention)
AttentionMaskInterface.register(ATTENTION, sdpa_mask)  # masks built outside the sampler: as for SDPA


# ---------------------------------------------------------------- the slot cache
class _SlotLayer(DynamicLayer):
    """One layer's K/V for every slot; :meth:`update` writes where the owning cache points."""

    def __init__(self, owner: "SlotCache"):
        super().__init__()
        self.owner = owner

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        # zeros, not empty: masked columns are still multiplied by 0 and must not hold NaN
        shape = (self.owner.slots, key_states.shape[1], self.owner.cols, key_states.shape[-1])
        self.keys, self.values = key_states.new_zeros(shape), value_states.new_zeros(shape)
        self.device, self.dtype, self.is_initialized = key_states.device, key_states.dtype, True

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        rows, cols, width = self.owner.target
        r = rows[:, None].expand_as(cols)
        self.keys[r, :, cols] = key_states.transpose(1, 2)
        self.values[r, :, cols] = value_states.transpose(1, 2)
        return self.owner.view(self.keys, rows, width), self.owner.view(self.values, rows, width)

    def get_seq_length(self) -> int:
        return self.owner.target[2] if self.owner.target else 0


class SlotCache(Cache):
    """K/V of ``slots`` rows after a shared prompt (``prefix``: per layer, its keys and values
    shaped (kv heads, P, dim)). Before each forward, :meth:`point` says which slots the batch
    rows are, which column each input token is written to and how many columns to attend."""

    def __init__(self, layers: int, slots: int, cols: int, prefix: list[tuple[torch.Tensor, torch.Tensor]]):
        self.slots, self.cols, self.prefix = slots, cols, prefix
        self.target: tuple[torch.Tensor, torch.Tensor, int] | None = None
        self._leading = False
        super().__init__(layers=[_SlotLayer(self) for _ in range(layers)])

    def point(self, rows: torch.Tensor, cols: torch.Tensor, width: int, leading: bool) -> None:
        """``leading``: rows are slots [0, len(rows)), read as a view instead of gathered."""
        self.target, self._leading = (rows, cols, width), leading

    def view(self, buf: torch.Tensor, rows: torch.Tensor, width: int) -> torch.Tensor:
        return buf[: len(rows), :, :width] if self._leading else buf[rows, :, :width]

    def copy(self, dst: Sequence[int], src: int, ncols: int) -> None:
        """Columns [0, ncols) of slot ``src`` into each slot of ``dst``."""
        for layer in self.layers:
            layer.keys[list(dst), :, :ncols] = layer.keys[src, :, :ncols]
            layer.values[list(dst), :, :ncols] = layer.values[src, :, :ncols]


def text_config(config):
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def kv_bytes_per_column(config, itemsize: int) -> int:
    """Bytes one token's K and V take over all layers (to size the buffer within a budget)."""
    config = text_config(config)
    heads = config.num_attention_heads
    kv = getattr(config, "num_key_value_heads", None) or heads
    dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    return 2 * config.num_hidden_layers * kv * dim * itemsize


# ---------------------------------------------------------------- bookkeeping
@dataclass
class _Head:
    index: int
    tokens: list[int]
    todo: deque = field(default_factory=deque)  # sample indices j not yet given a decode slot
    slot: int = -1
    logits: torch.Tensor | None = None


@dataclass
class _Row:
    head: _Head
    j: int
    gen: torch.Generator | None
    start: int  # column of the first sampled token
    tokens: list[int] = field(default_factory=list)

    @property
    def col(self) -> int:
        """Column of the last drawn token, the one the next step feeds."""
        return self.start + len(self.tokens) - 1


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


class ContinuousSampler:
    """n samples of each head after a shared prompt, up to ``rows`` of them decoded together
    (fewer if their K/V would pass ``kv_budget`` bytes).

    ``lm`` is the :class:`~toolformer_kit.hf_lm.HFLanguageModel` (model, tokenizer, prompt cache,
    per-row generators). Columns are positions less P, the prompt's length.
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
        cols = max(len(h) for h in heads) + cfg.max_new_tokens + 1
        per_slot = kv_bytes_per_column(lm.model.config, lm.model.dtype.itemsize) * cols
        self.C = max(1, min(rows, len(heads) * n, kv_budget // per_slot))
        self.per_prefill = max(1, math.ceil(self.C / n))
        staging = 2 * self.per_prefill + 2  # staged heads (one partly placed), a batch, the base
        self.scratch = cols - 1  # pad tokens write here; never attended
        config = text_config(lm.model.config)
        sliding = "sliding_attention" in (getattr(config, "layer_types", None) or ())
        self.window = getattr(config, "sliding_window", None) if sliding else None
        self.cache = SlotCache(config.num_hidden_layers, self.C + staging, cols, self._prefix())
        self.decode: list[_Row | None] = [None] * self.C
        self.free_staging = list(range(self.C, self.C + staging))
        self.staged: deque[_Head] = deque()  # heads with logits and samples left to place
        self.base: _Head | None = None
        self.draw = TokenDrawer(cfg)
        self.out: list[list[Sample | None]] = [[None] * n for _ in heads]
        self.stats = {"rows": self.C, "steps": 0, "row_steps": 0, "prefill_tokens": 0, "head_tokens": 0}

    def _prefix(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        if not self.P:
            return []
        past = self.lm._prompt_cache(self.shared)[0]
        return [(layer.keys[0], layer.values[0]) for layer in past.layers]

    # ------------------------------------------------------------ main loop
    def run(self) -> list[list[Sample]]:
        if self.n > 0 and self.cfg.max_new_tokens > 0:
            config = self.lm.model.config
            before = config._attn_implementation
            config._attn_implementation, _active.cache = ATTENTION, self.cache
            try:
                self._loop()
            finally:
                config._attn_implementation, _active.cache = before, None
        return [[s or Sample("", False, []) for s in row] for row in self.out]

    def _loop(self) -> None:
        while True:
            self._fill()
            live = self._compact()
            if not live:
                return
            self._advance(list(range(live)), self._step(live))

    def _fill(self) -> None:
        """Give every free decode slot a row, drawing its first token from its head's logits."""
        while True:
            free = [s for s, r in enumerate(self.decode) if r is None]
            waiting = sum(len(h.todo) for h in self.staged)
            if not free or not (waiting or self.order):
                return
            if waiting < len(free) and self.order:
                self._prefill_next()
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

    def _finished(self, row: _Row, token: int) -> Sample | None:
        text, closed = cut_at_stop(self.lm.decode(row.tokens), self.stop)
        closed = closed or bool(self.stop_when and self.stop_when(text))
        if closed or token in self.lm.eos_ids or len(row.tokens) >= self.cfg.max_new_tokens:
            return Sample(text, closed, list(row.tokens))
        return None

    def _step(self, live: int) -> torch.Tensor:
        """One decoding step for the rows in slots [0, live)."""
        cols = torch.tensor([[self.decode[s].col] for s in range(live)])
        ids = torch.tensor([[self.decode[s].tokens[-1]] for s in range(live)])
        self.stats["steps"] += 1
        self.stats["row_steps"] += live
        return self._forward(torch.arange(live), ids, cols, leading=True)

    # ------------------------------------------------------------ slots
    def _admit(self, free: list[int]) -> tuple[list[int], list[torch.Tensor]]:
        """Place waiting (head, j) rows into free decode slots, copying the head's columns;
        returns the slots and the logits each row draws its first token from."""
        placed, logits = [], []
        while free and self.staged:
            head = self.staged[0]
            take = [free.pop(0) for _ in range(min(len(free), len(head.todo)))]
            self.cache.copy(take, head.slot, len(head.tokens))
            for s in take:
                j = head.todo.popleft()
                gen = self.lm._row_generator(self.cfg.seed, self.shared + head.tokens, j) \
                    if self.cfg.temperature > 0 else None
                self.decode[s] = _Row(head, j, gen, len(head.tokens))
            placed += take
            logits += [head.logits] * len(take)
            if not head.todo:
                self.staged.popleft()
                self._release(head)
        return placed, logits

    def _release(self, head: _Head) -> None:
        """Free a head's staging slot once all its rows are placed and no head builds on it."""
        if head is not self.base and not head.todo and head.slot >= 0:
            self.free_staging.append(head.slot)
            head.slot, head.logits = -1, None

    def _compact(self) -> int:
        """Move rows down into holes so the live rows are slots [0, live); returns live."""
        holes = [s for s, r in enumerate(self.decode) if r is None]
        used = [s for s, r in enumerate(self.decode) if r is not None]
        while holes and used and holes[0] < used[-1]:
            dst, src = holes.pop(0), used.pop()
            self.cache.copy([dst], src, self.decode[src].col)
            self.decode[dst], self.decode[src] = self.decode[src], None
        return sum(r is not None for r in self.decode)

    # ------------------------------------------------------------ heads
    def _prefill_next(self) -> None:
        """Run the next heads into staging slots: new bases in full, the others on their base."""
        room = min(self.per_prefill, len(self.free_staging))
        full, tails, old_bases = [], [], []
        while self.order and len(full) + len(tails) < room:
            head = self.order.popleft()
            head.slot = self.free_staging.pop()
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
            self.cache.copy([head.slot], base.slot, same)
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
        """Run ``head.tokens[start:]`` of each head in its staging slot (a left-padded batch whose
        pads write to the scratch column and attend only the first column)."""
        q = max(len(h.tokens) - s for h, s in work)
        ids = torch.full((len(work), q), self.lm.pad_id, dtype=torch.long)
        cols = torch.full((len(work), q), self.scratch, dtype=torch.long)
        for r, (h, s) in enumerate(work):
            k = len(h.tokens) - s
            ids[r, q - k:] = torch.tensor(h.tokens[s:])
            cols[r, q - k:] = torch.arange(s, len(h.tokens))
        self.stats["prefill_tokens"] += sum(len(h.tokens) - s for h, s in work)
        self.stats["head_tokens"] += sum(len(h.tokens) for h, _ in work)  # what running each in full costs
        logits = self._forward(torch.tensor([h.slot for h, _ in work]), ids, cols)
        for (h, _), row in zip(work, logits):
            h.logits = row

    # ------------------------------------------------------------ forward
    def _forward(self, slots: torch.Tensor, ids: torch.Tensor, cols: torch.Tensor,
                 leading: bool = False) -> torch.Tensor:
        """Last-position logits (fp32, CPU) of a batch whose K/V go to ``cols`` of ``slots``."""
        dev, P = self.lm.device, self.P
        real = cols != self.scratch
        width = int(cols[real].max()) + 1
        pos = torch.where(real, cols + P, max(P - 1, 0))  # pads: the prompt's last position
        self.cache.point(slots.to(dev), cols.to(dev), width, leading)
        key = torch.arange(P + width)[None, None, :]
        seen = key <= pos[..., None]
        masks = self._additive(seen)
        if self.window:
            near = key > pos[..., None] - self.window
            masks = {"full_attention": masks, "sliding_attention": self._additive(seen & near)}
        out = self.lm.model(input_ids=ids.to(dev), position_ids=pos.to(dev), attention_mask=masks,
                            use_cache=True, logits_to_keep=1, **{self.lm._cache_kw: self.cache})
        self.cache.target = None
        return out.logits[:, -1].float().cpu()

    def _additive(self, seen: torch.Tensor) -> torch.Tensor:
        """(rows, 1, q, keys) mask to add to attention scores (built once for all layers)."""
        dtype = self.lm.model.dtype
        return torch.zeros(seen.shape, dtype=dtype).masked_fill_(~seen, float("-inf"))[:, None].to(self.lm.device)
