"""The transformers implementation of :class:`toolformer_kit.lm.base.LanguageModel`.

Design points (each measured or needed for exactness):

* Sequences are right-padded and run through the decoder body only; the output head is applied
  just to the positions a request needs, in row chunks, since a 150k-entry vocabulary times every
  position would dominate time and memory.
* ``call_start_logprobs`` encodes the shared prompt once and reuses its KV cache for every text
  (a several-fold saving for a few-hundred-token demonstration prompt).
* ``sample`` decodes with continuous batching (:mod:`toolformer_kit.lm.hf_sample`): a finished row's
  slot is refilled at once with the next (prefix, sample) row, since tokens/s grows with the rows
  decoded together (Qwen 0.5B's weights, one thread: 22 tokens/s at 16 rows, 42 at 128) and a
  batch that only shrinks ends up decoding its slowest rows alone. The shared prompt, each prefix and each row's own tokens have their K/V stored once
  (:mod:`toolformer_kit.lm.hf_slots`), and prefixes that share a start run it once. Every row draws
  from its own generator seeded by (seed, prefix, sample index) with ``torch.multinomial``'s own
  draw, so the samples for a prefix do not depend on what else is in the batch.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import logging
from typing import Callable, Sequence

import numpy as np
import torch

from .base import PositionLogprobs, Sample, SamplingConfig, TextOrIds, TokenizerSide, resolve_dtype
from .embedded import ModelError, resolve_model
from .hf_sample import ContinuousSampler

log = logging.getLogger(__name__)


def _pick_device(device: str | None) -> torch.device:
    if device:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _cache_kwarg(module) -> str:
    """transformers renamed ``past_key_values`` to ``cache``; use whichever forward() takes."""

    return "cache" if "cache" in inspect.signature(module.forward).parameters else "past_key_values"


def adapter_base(model: str) -> str | None:
    """The base model a LoRA adapter folder names (its ``adapter_config.json``), or None for any
    other model. Why load adapters at all: a published model (``models/NAME``, issue 42) is an
    adapter of a few MB over an embedded base, not a 1 GB copy of the weights."""
    import json
    from pathlib import Path

    config = Path(model).expanduser() / "adapter_config.json"
    if not config.is_file():
        return None
    base = json.loads(config.read_text(encoding="utf-8")).get("base_model_name_or_path")
    if not base:
        raise ValueError(f"{config} names no base_model_name_or_path; set it to the base model (an embedded name)")
    return base


def with_adapter(model, adapter_dir: str, dtype):
    """``model`` with the adapter in ``adapter_dir`` folded into its weights (a plain model again)."""
    from peft import PeftModel  # lazy: heavy

    merged = PeftModel.from_pretrained(model, adapter_dir).merge_and_unload()
    return merged.to(dtype)


class HFLanguageModel(TokenizerSide):
    """A causal LM from transformers behind the three annotation primitives."""

    def __init__(self, model, tokenizer, name: str = "", batch_tokens: int = 4096, max_batch: int = 32,
                 head_chunk: int = 512, sample_rows: int = 128, kv_budget: int = 2 << 30):
        self.model = model.eval()
        self.name = name or getattr(model.config, "_name_or_path", "model")
        self.batch_tokens = batch_tokens
        self.max_batch = max_batch
        self.head_chunk = head_chunk
        self.sample_rows = sample_rows  # rows decoded together (continuous batching keeps it full)
        self.kv_budget = kv_budget  # bytes for the sampler's KV slots; fewer rows if they need more
        self.sample_stats: dict = {}
        self.device = next(model.parameters()).device
        config = model.generation_config
        self._init_tokens(tokenizer, config.eos_token_id if config else None)
        self.max_length = int(getattr(model.config, "max_position_embeddings", 0) or 1 << 30)
        self.cache_kw = _cache_kwarg(self._body())
        self._head_is_exact = self._check_head()
        self._prompt_states: dict = {}

    # ---------------------------------------------------------------- loading
    @classmethod
    def load(cls, model: str, device: str | None = None, dtype: str | None = None,
             cache: str | None = None, **kwargs) -> "HFLanguageModel":
        """Load an embedded model name, a local folder or a hub id."""
        from safetensors import SafetensorError  # lazy: with transformers
        from transformers import AutoModelForCausalLM, AutoTokenizer  # lazy: heavy

        dev = _pick_device(device)
        torch_dtype = getattr(torch, resolve_dtype(dtype, dev.type))
        try:
            adapter = adapter_base(model)
            path = resolve_model(adapter or model, cache)
            tok = AutoTokenizer.from_pretrained(path)
            lm = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype)
            if adapter:
                lm = with_adapter(lm, model, torch_dtype)
        except (OSError, ValueError, KeyError, TypeError, SafetensorError) as exc:  # a broken folder
            first = (str(exc).strip().splitlines() or [""])[0]
            raise ModelError(
                f"could not load model {model!r} ({exc.__class__.__name__}: {first}). A local folder needs a "
                "valid config.json, tokenizer files and weights; without access to a model hub, use an embedded "
                "model (toolformer models list) or a complete local Hugging Face folder."
            ) from None
        return cls(lm.to(dev), tok, name=model, **kwargs)

    # ---------------------------------------------------------------- forward helpers
    def _body(self):
        return getattr(self.model, self.model.base_model_prefix)

    def _head_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Logits as fp32 whatever the model's dtype, so log-softmax and log-probs are fp32 (an fp32
        head matmul for a bf16 body was tried: |ΔL| vs fp32 max 0.050 against 0.051, so not kept)."""
        logits = self.model.get_output_embeddings()(hidden).float()
        cap = getattr(self.model.config, "final_logit_softcapping", None)
        if cap:
            logits = torch.tanh(logits / cap) * cap
        return logits

    @torch.no_grad()
    def _check_head(self) -> bool:
        """Our body+head shortcut must reproduce the model's own logits; else use the full model."""
        ids = torch.tensor([self.bos_ids + self.encode("Check the head.")], device=self.device)
        full = self.model(input_ids=ids).logits.float()
        ours = self._head_logits(self._body()(input_ids=ids).last_hidden_state)
        ok = torch.allclose(full, ours, atol=1e-3, rtol=1e-3)
        if not ok:
            log.warning("model head is not a plain projection; falling back to full forward passes")
        return ok

    def _hidden(self, batch: list[list[int]], past=None, past_len: int = 0) -> torch.Tensor:
        """Right-padded forward through the body; returns last hidden states (B, L, H)."""
        width = max(len(s) for s in batch)
        ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), past_len + width), dtype=torch.long)
        mask[:, :past_len] = 1
        for r, seq in enumerate(batch):
            ids[r, : len(seq)] = torch.tensor(seq)
            mask[r, past_len: past_len + len(seq)] = 1
        pos = torch.arange(past_len, past_len + width).unsqueeze(0).expand(len(batch), -1)
        kwargs = dict(input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                      position_ids=pos.to(self.device), use_cache=past is not None, **{self.cache_kw: past})
        if self._head_is_exact:
            return self._body()(**kwargs).last_hidden_state
        return self.model(**kwargs, output_hidden_states=True).hidden_states[-1]

    def _logprob_rows(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """log p(target_r | row r) for hidden rows (N, H), computed in chunks."""
        out = []
        for s in range(0, hidden.shape[0], self.head_chunk):
            logits = self._head_logits(hidden[s: s + self.head_chunk])
            lp = logits.gather(-1, targets[s: s + self.head_chunk, None]).squeeze(-1)
            out.append(lp - torch.logsumexp(logits, dim=-1))
        return torch.cat(out) if out else hidden.new_zeros(0)

    def _batches(self, lengths: list[int]) -> list[list[int]]:
        """Indices grouped longest-first under the token budget, to keep padding small."""
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        groups, cur, cur_max = [], [], 0
        for i in order:
            new_max = max(cur_max, lengths[i])
            if cur and (new_max * (len(cur) + 1) > self.batch_tokens or len(cur) >= self.max_batch):
                groups.append(cur)
                cur, new_max = [], lengths[i]
            cur.append(i)
            cur_max = new_max
        if cur:
            groups.append(cur)
        return groups

    def _check_length(self, n: int) -> None:
        if n > self.max_length:
            raise ValueError(f"sequence of {n} tokens exceeds the model's context of {self.max_length}; "
                             "split the text into shorter windows")

    # ---------------------------------------------------------------- primitive 1
    @torch.no_grad()
    def call_start_logprobs(self, prompt: TextOrIds, texts: Sequence[str],
                            contexts: Sequence[TextOrIds] | None = None,
                            reuse_prompt_cache: bool = True) -> list[PositionLogprobs]:
        """See :class:`~toolformer_kit.lm.base.LanguageModel`; ``contexts[j]`` sits between the shared
        prompt and text j (e.g. ``"Input: x\nOutput:"``) and is not scored."""
        prompt_ids = self.bos_ids + self._ids(prompt)
        if not prompt_ids:
            raise ValueError("call_start_logprobs needs a non-empty prompt: the first position has no context")
        ctx = [self._ids(c) for c in contexts] if contexts is not None else [[] for _ in texts]
        if len(ctx) != len(texts):
            raise ValueError("call_start_logprobs needs one context per text")
        encoded = [self.encode_with_offsets(t) for t in texts]
        for (ids, _), c in zip(encoded, ctx):
            self._check_length(len(prompt_ids) + len(c) + len(ids))
        target = torch.tensor(self.call_open_ids[:1] or [0], device=self.device)
        results: list[PositionLogprobs | None] = [None] * len(texts)
        past, last_hidden = (self._prompt_cache(prompt_ids) if reuse_prompt_cache and prompt_ids
                             else (None, None))
        rows_all = [c + e[0] for c, e in zip(ctx, encoded)]
        shared = 0 if past is not None else len(prompt_ids)
        for group in self._batches([len(r) + shared for r in rows_all]):
            rows = [rows_all[i] for i in group]
            if past is not None:
                batch_past = copy.deepcopy(past)
                batch_past.batch_repeat_interleave(len(group))
                hidden = self._hidden([r or [self.pad_id] for r in rows], batch_past, len(prompt_ids))
                # the position before a row's first token is the prompt's last one
                hidden = torch.cat([last_hidden.expand(len(group), 1, -1), hidden], dim=1)
            else:
                hidden = self._hidden([prompt_ids + r for r in rows])[:, len(prompt_ids) - 1:]
            for b, i in enumerate(group):
                n, start = len(encoded[i][0]), len(ctx[i])
                h = hidden[b, start: start + n]
                lp = self._logprob_rows(h, target.expand(n)).cpu().numpy().astype(np.float64)
                results[i] = PositionLogprobs(encoded[i][0], encoded[i][1], lp)
        return results  # type: ignore[return-value]

    @torch.no_grad()
    def next_token_logprobs(self, prefixes: Sequence[TextOrIds], candidates: Sequence[Sequence[int]], *,
                            shared_prefix: TextOrIds = ()) -> list[np.ndarray]:
        """log p(t | shared_prefix + prefix) for each token id t of ``candidates[i]``, at the one
        position after prefix i: what a reader was about to choose between (an answer's first
        token or "unknown"'s), in one pass over each prefix, the shared start run once."""
        shared = self.bos_ids + self._ids(shared_prefix) if len(shared_prefix) else []
        heads = [self._ids(p) if shared else self.bos_ids + self._ids(p) for p in prefixes]
        if len(candidates) != len(heads):
            raise ValueError("next_token_logprobs needs one candidate list per prefix")
        for h in heads:
            self._check_length(len(shared) + len(h) + 1)
        past, last = self._prompt_cache(shared) if shared else (None, None)
        out: list[np.ndarray] = [np.zeros(0)] * len(heads)
        for group in self._batches([len(h) + 1 for h in heads]):
            rows = [heads[i] or [self.pad_id] for i in group]
            if past is not None:
                batch_past = copy.deepcopy(past)
                batch_past.batch_repeat_interleave(len(group))
                hidden = self._hidden(rows, batch_past, len(shared))
            else:
                hidden = self._hidden(rows)
            for b, i in enumerate(group):
                h = hidden[b, len(heads[i]) - 1] if heads[i] else last[0, -1]
                logits = self._head_logits(h[None])[0]
                lp = logits - torch.logsumexp(logits, dim=-1)
                out[i] = lp[torch.tensor(list(candidates[i]), device=lp.device)].cpu().numpy().astype(np.float64)
        return out

    def _prompt_cache(self, prompt_ids: list[int]):
        """(KV cache, last hidden state) of a prompt shared by many requests, computed once.

        An annotation run asks for the same tool prompt (a few hundred tokens) in every batch of
        every shard, so the states are memoised per prompt (a few at a time). Callers deep-copy
        the cache before extending it.
        """
        key = tuple(prompt_ids)
        if key not in self._prompt_states:
            if len(self._prompt_states) >= 8:
                self._prompt_states.pop(next(iter(self._prompt_states)))
            self._prompt_states[key] = self._run_prompt(prompt_ids)
        return self._prompt_states[key]

    @torch.no_grad()
    def _run_prompt(self, prompt_ids: list[int]):
        from transformers import DynamicCache  # lazy: heavy

        past = DynamicCache()
        ids = torch.tensor([prompt_ids], device=self.device)
        kw = {self.cache_kw: past}
        out = self._body()(input_ids=ids, use_cache=True, **kw) if self._head_is_exact \
            else self.model(input_ids=ids, use_cache=True, output_hidden_states=True, **kw)
        hidden = out.last_hidden_state if self._head_is_exact else out.hidden_states[-1]
        return past, hidden[:, -1:]

    # ---------------------------------------------------------------- primitive 3
    @torch.no_grad()
    def token_logprobs(self, prefixes: Sequence[TextOrIds],
                       continuations: Sequence[TextOrIds]) -> list[np.ndarray]:
        if len(prefixes) != len(continuations):
            raise ValueError("token_logprobs needs one continuation per prefix")
        seqs, cuts = [], []
        for p, c in zip(prefixes, continuations):
            head, tail = self.bos_ids + self._ids(p), self._ids(c)
            if not head:
                raise ValueError("token_logprobs needs a non-empty prefix (the first token has no context)")
            self._check_length(len(head) + len(tail))
            seqs.append(head + tail)
            cuts.append(len(head))
        results: list[np.ndarray] = [np.zeros(0)] * len(seqs)
        for group in self._batches([len(s) for s in seqs]):
            hidden = self._hidden([seqs[i] for i in group])
            rows, targets, spans = [], [], []
            for b, i in enumerate(group):
                n = len(seqs[i]) - cuts[i]
                rows.append(hidden[b, cuts[i] - 1: cuts[i] - 1 + n])
                targets += seqs[i][cuts[i]:]
                spans.append(n)
            lp = self._logprob_rows(torch.cat(rows), torch.tensor(targets, device=self.device))
            for i, chunk in zip(group, torch.split(lp, spans)):
                results[i] = chunk.cpu().numpy().astype(np.float64)
        return results

    # ---------------------------------------------------------------- primitive 2
    def _row_generator(self, seed: int, prefix: list[int], j: int) -> torch.Generator:
        digest = hashlib.sha256(f"{seed}|{j}|{','.join(map(str, prefix))}".encode()).digest()
        return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") & ((1 << 63) - 1))

    @torch.no_grad()
    def sample(self, prefixes: Sequence[TextOrIds], n: int, stop: str = "]",
               config: SamplingConfig | None = None, *, shared_prefix: TextOrIds = (),
               stop_when: Callable[[str], bool] | None = None) -> list[list[Sample]]:
        """See :class:`~toolformer_kit.lm.base.LanguageModel`. Two additions for annotation:
        ``shared_prefix`` comes before every prefix and is run once (its KV cache is memoised and
        reused), and ``stop_when(text)`` ends a sample early (marked closed) once it holds.

        Each (prefix, j) draws from its own generator seeded by the seed and the *whole* prefix,
        so samples do not depend on batching or on whether a shared prefix was split off.
        """
        cfg = config or SamplingConfig()
        shared = self.bos_ids + self._ids(shared_prefix) if len(shared_prefix) else []
        heads = [self._ids(p) if shared else self.bos_ids + self._ids(p) for p in prefixes]
        for h in heads:
            self._check_length(len(shared) + len(h) + cfg.max_new_tokens)
        if n <= 0 or not heads:
            return [[] for _ in heads]
        sampler = ContinuousSampler(self, shared, heads, n, cfg, stop, stop_when, self.sample_rows,
                                    self.kv_budget)
        out = sampler.run()
        self.sample_stats = sampler.stats
        return out
