"""Row slots for the tool-aware decoder's continuous batching: each prompt's K/V in a slot of its own.

Why. Evaluation prompts differ in length and their answers end after 2 to 70+ tokens (a call and
its result included). A static batch decodes until its slowest row is done, and a step's cost
hardly depends on how many rows it carries (Qwen 0.5B, bf16, 2 threads: 82 ms at 8 rows, 107 ms
at 32, 142 ms at 64), so a shrinking batch wastes most of each step. Here a finished row's slot
takes the next prompt at once.

A slot holds one row's keys and values by *column*: column c is the token at position c (prompt
tokens 0..P-1, then one column per new token), so no row is padded against another and a new row
needs no shifting. Each forward says which slots and columns its input tokens go to
(:attr:`RowCache.target`); a query attends the columns of its own slot up to its own position
(:func:`slot_mask`), which the model's own attention (SDPA) takes as a 4-D mask. Live rows are
kept in slots [0, live), so a decoding step reads the stores as a view, without a copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from transformers.cache_utils import Cache, DynamicLayer

from ..lm.hf_slots import text_config

GROW = 64  # columns are added in steps of this many when a row outgrows its slot


@dataclass
class RowTarget:
    """Where a forward's input tokens go: ``cols`` (rows × input length) of ``slots``; the batch
    attends columns [0, ``width``); ``leading``: the slots are [0, rows), read as a view."""

    slots: torch.Tensor
    cols: torch.Tensor
    width: int
    leading: bool


class _RowLayer(DynamicLayer):
    """One layer's row slots: keys and values shaped (slots, kv heads, columns, head dim)."""

    def __init__(self, owner: "RowCache"):
        super().__init__()
        self.owner = owner
        self.store: Optional[list[torch.Tensor]] = None

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        t = self.owner.target
        self._fit(key_states, int(t.cols.max()) + 1)
        rows = t.slots[:, None].expand_as(t.cols)
        out = []
        for buf, new in zip(self.store, (key_states, value_states)):
            buf[rows, :, t.cols] = new.transpose(1, 2)
            out.append(buf[: len(t.slots), :, : t.width] if t.leading else buf[t.slots, :, : t.width])
        return tuple(out)

    def _fit(self, like: torch.Tensor, cols: int) -> None:
        """Allocate on first use; grow (copying what is stored) when a column lies beyond the end."""
        have = 0 if self.store is None else self.store[0].shape[2]
        if cols <= have:
            return
        size = max(cols, self.owner.columns, 2 * have)
        size = -(-size // GROW) * GROW
        # zeros, not empty: a masked column is still multiplied by 0 and must not hold NaN
        shape = (self.owner.slots, like.shape[1], size, like.shape[-1])
        grown = [like.new_zeros(shape), like.new_zeros(shape)]
        if self.store is not None:
            for new, old in zip(grown, self.store):
                new[:, :, :have] = old
        self.store = grown
        self.device, self.dtype, self.is_initialized = like.device, like.dtype, True

    def move(self, dst: int, src: int, ncols: int) -> None:
        if self.store is not None:
            for buf in self.store:
                buf[dst, :, :ncols] = buf[src, :, :ncols]

    def get_seq_length(self) -> int:
        return self.owner.target.width if self.owner.target is not None else 0


class RowCache(Cache):
    """``slots`` row slots of every layer, ``columns`` wide to start with (they grow on demand)."""

    def __init__(self, layers: int, slots: int, columns: int):
        self.slots, self.columns = slots, columns
        self.target: Optional[RowTarget] = None
        super().__init__(layers=[_RowLayer(self) for _ in range(layers)])

    def move(self, dst: int, src: int, ncols: int) -> None:
        """Columns [0, ncols) of slot ``src`` into slot ``dst`` (to close a hole in [0, live))."""
        for layer in self.layers:
            layer.move(dst, src, ncols)


def slot_mask(query_pos: torch.Tensor, width: int, window: Optional[int] = None) -> torch.Tensor:
    """Which columns each query attends: its own slot's, up to its own position (and within the
    sliding ``window`` where a model has one). Bool, shaped (rows, 1, queries, width).

    >>> slot_mask(torch.tensor([[0, 1], [0, 0]]), 3)[:, 0].int().tolist()
    [[[1, 0, 0], [1, 1, 0]], [[1, 0, 0], [1, 0, 0]]]
    >>> slot_mask(torch.tensor([[3]]), 4, window=2)[0, 0].int().tolist()
    [[0, 0, 1, 1]]
    """
    cols = torch.arange(width)
    seen = cols[None, None, :] <= query_pos[..., None]
    if window:
        seen &= cols[None, None, :] > query_pos[..., None] - window
    return seen[:, None]


def sliding_window(config) -> Optional[int]:
    """The sliding window of a model that has sliding-attention layers (Gemma 3), else None."""
    config = text_config(config)
    sliding = "sliding_attention" in (getattr(config, "layer_types", None) or ())
    return getattr(config, "sliding_window", None) if sliding else None


def num_layers(config) -> int:
    return text_config(config).num_hidden_layers
