"""A scripted causal LM with a real KV cache and a byte tokenizer, for decoding tests without weights.

The model's logits are a *script*: a pure function of the visible (unpadded) context text. A
:class:`Story` says, for one prompt, which text the model writes, where " [" sits at which rank
among the next tokens, and what the model writes inside a call. Everything the decoder gets wrong
about caching, padding or positions changes the context the script sees — or trips an assertion —
so the tests can trust identical outputs to mean correct plumbing.

The cache is the transformers :class:`DynamicCache`, holding token ids as "keys" and position ids
as "values"; so batch row selection, growth and layout are exercised exactly as with a real model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import SimpleNamespace

import torch

CALL = re.compile(r" \[[^\]\n]*[\]\n]")  # a finished call, well-formed or not, as the script skips it

CALL_OPEN, ARROW_TOK, EOS, PAD = 256, 257, 258, 259
VOCAB = 260


class ByteTokenizer:
    """UTF-8 bytes plus " [" and "->" as single tokens (as in the embedded models), EOS and PAD.

    With ``merge_call_open=False`` " [" is two tokens, the case the decoder must also handle.
    """

    def __init__(self, merge_call_open: bool = True):
        self.merged = {" [": CALL_OPEN, "->": ARROW_TOK} if merge_call_open else {"->": ARROW_TOK}
        self.eos_token_id, self.pad_token_id = EOS, PAD

    def __len__(self) -> int:
        return VOCAB

    def encode(self, text: str) -> list[int]:
        out, i = [], 0
        while i < len(text):
            hit = next((s for s in self.merged if text.startswith(s, i)), None)
            if hit:
                out.append(self.merged[hit])
                i += len(hit)
            else:
                out.extend(text[i].encode("utf-8"))
                i += 1
        return out

    def decode(self, ids) -> str:
        names = {v: k for k, v in self.merged.items()} | {EOS: "<eos>", PAD: "<pad>", CALL_OPEN: " [",
                                                          ARROW_TOK: "->"}
        buf, parts = bytearray(), []
        for t in ids:
            t = int(t)
            if t < 256:
                buf.append(t)
            else:
                parts.append(buf.decode("utf-8", errors="replace"))
                buf = bytearray()
                parts.append(names[t])
        parts.append(buf.decode("utf-8", errors="replace"))
        return "".join(parts)


@dataclass
class Story:
    """What the model does after ``prompt``: write ``doc`` (calls removed), rank " [" at
    ``ranks[char index of doc]`` (absent = never), write ``call`` inside a call (or ``call[i]``
    inside the i-th call, if a list). ``sharp=False``
    makes the next-token distribution flat enough for sampling to wander."""

    prompt: str
    doc: str
    ranks: dict = field(default_factory=dict)
    call: object = "Calculator(2 + 3) ->"
    sharp: bool = True


class ScriptedModel:
    """HF causal-LM forward interface: ``model(input_ids, attention_mask, position_ids,
    past_key_values, use_cache, logits_to_keep)`` → ``.logits``; counts the tokens it encodes."""

    def __init__(self, stories: list[Story], tokenizer: ByteTokenizer):
        self.stories = sorted(stories, key=lambda s: -len(s.prompt))
        self.tok = tokenizer
        self.tokens_encoded = 0
        self.forward_calls = 0
        self.config = SimpleNamespace(num_hidden_layers=1)

    # -------------------------------------------------------------- the script
    def script(self, ids: list[int]) -> torch.Tensor:
        text = self.tok.decode(ids)
        story = next(s for s in self.stories if text.startswith(s.prompt))
        written = text[len(story.prompt):]
        logits = -0.01 * torch.arange(VOCAB, dtype=torch.float32) - (10.0 if story.sharp else 1.0)
        logits[PAD] = logits[CALL_OPEN] = -1e4
        open_at = written.rfind(" [")
        if open_at >= 0 and "]" not in written[open_at:] and "\n" not in written[open_at:]:
            body = written[open_at + 2:]
            calls = [story.call] if isinstance(story.call, str) else story.call
            call = calls[min(written.count(" ["), len(calls)) - 1]
            self._prefer(logits, call[len(body)] if len(body) < len(call) else "x", story.sharp)
            return logits
        outside = CALL.sub("", written)
        self._prefer(logits, story.doc[len(outside)] if len(outside) < len(story.doc) else None, story.sharp)
        if written.endswith("]"):  # no second call right after one
            return logits
        if self.tok.merged.get(" [") == CALL_OPEN:
            rank, target = story.ranks.get(len(outside)), CALL_OPEN
        else:  # " [" is " " then "[": rank "[" once the model has written the space
            rank = story.ranks.get(len(outside) - 1) if written.endswith(" ") else None
            target = ord("[")
        if rank is not None:
            self._rank(logits, target, rank)
        return logits

    def _prefer(self, logits: torch.Tensor, ch, sharp: bool) -> None:
        target = EOS if ch is None else self.tok.encode(ch)[0]
        logits[target] = 100.0 if sharp else 1.0

    @staticmethod
    def _rank(logits: torch.Tensor, target: int, rank: int) -> None:
        """Put ``target`` so that exactly ``rank`` tokens score strictly higher."""
        order = torch.argsort(logits, descending=True).tolist()
        order.remove(target)
        if rank == 0:
            logits[target] = logits[order[0]] + 1.0
        else:
            above, below = float(logits[order[rank - 1]]), float(logits[order[rank]])
            assert above > below, "scripted logits must be distinct"
            logits[target] = (above + below) / 2

    # -------------------------------------------------------------- forward
    def __call__(self, input_ids, attention_mask=None, position_ids=None, past_key_values=None,
                 use_cache=False, logits_to_keep=0, **_):
        """Keys are the token ids and values their positions, so a cache (the decoder's row
        slots or transformers' DynamicCache) hands back exactly what each query may see."""
        self.forward_calls += 1
        b, t = input_ids.shape
        pos = position_ids if position_ids is not None else torch.arange(t).expand(b, -1)
        all_ids, all_pos = input_ids, pos
        if past_key_values is not None and use_cache:
            keys, values = past_key_values.update(input_ids[:, None, :, None].float(), pos[:, None, :, None].float(), 0)
            all_ids, all_pos = keys[:, 0, :, 0].long(), values[:, 0, :, 0].long()
        width = all_ids.shape[1]
        if isinstance(attention_mask, torch.Tensor) and attention_mask.dim() == 4:  # (rows, 1, queries, keys)
            seen_at = lambda r, j: attention_mask[r, 0, j].bool()
            self.tokens_encoded += int((input_ids != PAD).sum())
        else:
            mask = attention_mask if attention_mask is not None else torch.ones_like(all_ids)
            assert mask.shape == all_ids.shape, "attention mask must cover past and new tokens"
            seen_at = (lambda m: lambda r, j: m[r] & (torch.arange(width) <= width - t + j))(mask.bool())
            self.tokens_encoded += int(mask[:, -t:].sum())
        keep = t if not logits_to_keep else min(logits_to_keep, t)
        out = torch.empty((b, keep, VOCAB))
        for r in range(b):
            for k, j in enumerate(range(t - keep, t)):
                seen = seen_at(r, j)
                ctx, ctx_pos = all_ids[r][seen].tolist(), all_pos[r][seen].tolist()
                assert ctx_pos == list(range(len(ctx))), f"position ids {ctx_pos} are not 0..n-1"
                out[r, k] = self.script(ctx)
        return SimpleNamespace(logits=out)


class FakeLM:
    """The attributes of :class:`toolformer_kit.lm.hf.HFLanguageModel` the decoder uses."""

    def __init__(self, stories: list[Story], merge_call_open: bool = True):
        self.tokenizer = ByteTokenizer(merge_call_open)
        self.model = ScriptedModel(stories, self.tokenizer)
        self.device = torch.device("cpu")
        self.bos_ids: list[int] = []
        self.call_open_ids = self.encode(" [")
        self.pad_id, self.eos_ids = PAD, {EOS}
        self.cache_kw = "past_key_values"
        self.max_length = None

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text)

    def decode(self, ids) -> str:
        return self.tokenizer.decode(ids)
