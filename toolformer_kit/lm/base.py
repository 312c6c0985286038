"""The language-model interface: the only door through which the pipeline touches a model.

Annotation needs exactly three things from a model, so a backend (transformers here; vLLM or a
fake in tests) implements exactly three methods:

* :meth:`LanguageModel.call_start_logprobs` — log P(" [" | prompt, x₁…x_{i−1}) at every token
  position i of a text, from one forward pass. This picks where calls may go.
* :meth:`LanguageModel.sample` — n continuations per prefix, cut at the first "]". This proposes
  calls.
* :meth:`LanguageModel.token_logprobs` — log p of each continuation token given its prefix. This
  scores calls.

Prefixes and continuations may be given as text or as token ids. Ids matter for scoring: the
tokens x_j being scored must be the document's own tokens whatever precedes them, which re-encoding
``call + text`` as one string would not guarantee.

**The call-open token.** " [" is one token in every embedded model (SmolLM2 933, Qwen 508,
Gemma 870). Where a tokenizer splits " [" into several tokens, ``call_open_ids`` holds them all
and ``call_start_logprobs`` reports the log-probability of the *first* one only — an upper bound
on the probability of the whole sequence, so position selection keeps at least the positions
the exact value would keep; a warning is logged once.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any, Optional, Protocol, Sequence, Union, runtime_checkable

import numpy as np

from ..config import ConfigError
from ..registry import Registry

log = logging.getLogger(__name__)

TextOrIds = Union[str, Sequence[int]]

CALL_OPEN_TEXT = " ["


@dataclass
class PositionLogprobs:
    """log P(call-open | prompt, x_<i) for each token x_i of one text.

    ``offsets[i]`` is the character index where token i starts in the text (including any
    leading space it carries), so a call chosen at position i is inserted at ``text[:offsets[i]]``.
    """

    token_ids: list[int]
    offsets: list[int]
    logprobs: np.ndarray

    @property
    def probs(self) -> np.ndarray:
        return np.exp(self.logprobs)


@dataclass
class Sample:
    """One sampled continuation; ``closed`` says whether the stop string was reached."""

    text: str
    closed: bool
    token_ids: list[int] = field(default_factory=list)


@dataclass
class SamplingConfig:
    """How :meth:`LanguageModel.sample` draws; temperature 0 means greedy."""

    max_new_tokens: int = 48
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0


@runtime_checkable
class LanguageModel(Protocol):
    """What every backend provides. Implementations must give results that do not depend on how
    requests are batched (up to float round-off)."""

    name: str

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def call_start_logprobs(self, prompt: TextOrIds, texts: Sequence[str],
                            contexts: Sequence[TextOrIds] | None = None) -> list[PositionLogprobs]:
        """``prompt`` is shared by all texts (its KV cache is reused); ``contexts[j]``, if given,
        sits between the prompt and text j and is not scored."""

    def sample(self, prefixes: Sequence[TextOrIds], n: int, stop: str = "]",
               config: SamplingConfig | None = None) -> list[list[Sample]]:
        """``n`` continuations of each prefix, each cut just after the first ``stop``."""

    def token_logprobs(self, prefixes: Sequence[TextOrIds],
                       continuations: Sequence[TextOrIds]) -> list[np.ndarray]:
        """log p(c_t | prefix, c_<t) for every token of each continuation."""



@dataclass(frozen=True)
class SegmentRequest:
    """One row's next stretch of model-written tokens (:meth:`SegmentLM.generate_segments`). ``ban``
    gets probability (almost) 0 at every step; ``watch``'s rank is reported at every step, looked
    for among the top ``k``."""

    prompt_ids: list[int]
    max_tokens: int
    temperature: float = 0.0
    seed: Optional[int] = None
    watch: Optional[int] = None
    k: int = 0
    ban: Optional[int] = None
    stop: tuple[str, ...] = ()
    stop_ids: tuple[int, ...] = ()
    allow: tuple[int, ...] = ()  # when set, only these tokens may be written (one step: a tool name)


@dataclass
class Segment:
    """What the engine wrote. ``ranks[t]`` counts the tokens scoring strictly above the watched
    token at step t (HF's rule for ties); None where it was not among the top ``k``."""

    token_ids: list[int]
    ranks: list[Optional[int]]


@runtime_checkable
class DecodingLM(Protocol):
    """What tool-aware decoding (:mod:`toolformer_kit.decode`) needs of any backend: its tokenizer
    (``len`` and ``batch_decode``, for the tool-name mask), the ids it starts, opens calls, pads
    and stops with, and its context length (None = unbounded)."""

    tokenizer: Any
    bos_ids: list[int]
    call_open_ids: list[int]
    pad_id: int
    eos_ids: set[int]
    max_length: Optional[int]

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...


@runtime_checkable
class StepLM(DecodingLM, Protocol):
    """A backend the decoder steps itself, one forward pass per token (transformers): the causal
    ``model`` on ``device``, called with its KV cache under the keyword ``cache_kw``."""

    model: Any
    device: Any
    cache_kw: str


@runtime_checkable
class SegmentLM(DecodingLM, Protocol):
    """A backend that schedules its own batches (vLLM): the decoder asks for whole segments."""

    def generate_segments(self, requests: Sequence[SegmentRequest]) -> list[Segment]: ...


class TokenizerSide:
    """The tokenizer half both backends share: a transformers tokenizer in ``self.tokenizer`` gives
    the ids of :class:`DecodingLM` and the text/ids conversions of :class:`LanguageModel`."""

    tokenizer: Any

    def _init_tokens(self, tokenizer, generation_eos) -> None:
        self.tokenizer = tokenizer
        self.bos_ids = leading_special_ids(tokenizer)
        self.call_open_ids = self.encode(CALL_OPEN_TEXT)
        if len(self.call_open_ids) != 1:
            log.warning("%r is %d tokens for this tokenizer; call-start probabilities use the first "
                        "token only (an upper bound)", CALL_OPEN_TEXT, len(self.call_open_ids))
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (
            tokenizer.eos_token_id if tokenizer.eos_token_id is not None else 0)
        self.eos_ids = stop_ids(generation_eos, tokenizer)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=False)

    def _ids(self, x: TextOrIds) -> list[int]:
        return self.encode(x) if isinstance(x, str) else [int(i) for i in x]

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[int]]:
        return encode_with_offsets(self.tokenizer, text)

BACKENDS: Registry = Registry("LM backend")
BACKENDS.add("hf", "toolformer_kit.lm.hf:HFLanguageModel")
BACKENDS.add("vllm", "toolformer_kit.lm.vllm:VLLMLanguageModel")


def load_lm(model: str, backend: str = "hf", **kwargs) -> LanguageModel:
    """Load ``model`` (embedded name, folder or hub id) with the named backend."""
    return BACKENDS.get(backend).load(model, **kwargs)



def set_threads(threads: int | None) -> None:
    """Torch's CPU threads, when asked for (None leaves torch's choice)."""
    if threads:
        import torch  # lazy: this module is imported by light code (the CLI, configs)

        torch.set_num_threads(threads)

DTYPE_NAMES = {"fp32": "float32", "float32": "float32", "bf16": "bfloat16", "bfloat16": "bfloat16"}
BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_has_bf16(flags) -> bool:
    """Whether these /proc/cpuinfo flags give hardware bf16 matmuls. Without them torch emulates
    bf16 and it is *slower* than fp32 (measured on an AVX2-only EPYC: matmul 0.4 vs 19 GFLOP/s).

    >>> cpu_has_bf16({"avx2", "avx512f", "avx512_bf16"}), cpu_has_bf16({"avx", "avx2"})
    (True, False)
    """
    return any(f in flags for f in BF16_CPU_FLAGS)


def native_bf16() -> bool:
    """This CPU's answer to :func:`cpu_has_bf16` (torch's own probe where /proc is missing)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            flags = next((line.split(":", 1)[1].split() for line in fh if line.startswith("flags")), [])
        return cpu_has_bf16(set(flags))
    except OSError:
        import torch  # lazy: heavy

        probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
        return any(getattr(torch.cpu, name, lambda: False)() for name in probes)


BF16_ENV = "TOOLFORMER_CPU_BF16"
BF16_MIN_GAIN = 1.2  # bf16 must beat fp32 by this much to be worth its rounding


def matmul_rates(n: int = 2048, repeats: int = 5, dtypes: Sequence[str] = ("fp32", "bf16")) -> dict[str, float]:
    """GFLOP/s of a plain n² matmul per dtype on torch's current threads (median of ``repeats``),
    alternating the dtypes so that both see the same load on a shared machine: the rooflines a dense
    transformer forward can approach on a CPU."""
    import statistics
    import time

    import torch  # lazy: heavy

    mats = {k: [torch.randn(n, n, dtype=getattr(torch, DTYPE_NAMES[k])) for _ in range(2)] for k in dtypes}
    for a, b in mats.values():
        a @ b  # warm-up
    times: dict[str, list[float]] = {k: [] for k in dtypes}
    for _ in range(repeats):
        for k, (a, b) in mats.items():
            t = time.perf_counter()
            a @ b
            times[k].append(time.perf_counter() - t)
    return {k: 2 * n**3 / statistics.median(v) / 1e9 for k, v in times.items()}


def matmul_gflops(n: int = 2048, repeats: int = 7) -> float:
    """The fp32 roofline (:func:`matmul_rates`)."""
    return matmul_rates(n, repeats, ("fp32",))["fp32"]


def bf16_faster(fp32_gflops: float, bf16_gflops: float, min_gain: float = BF16_MIN_GAIN) -> bool:
    """Whether measured rates make bf16 worth it on a CPU.

    >>> bf16_faster(180, 760), bf16_faster(130, 70), bf16_faster(100, 110)
    (True, False, False)
    """
    return bf16_gflops >= min_gain * fp32_gflops


_BF16_PAYS: dict[int, bool] = {}


def bf16_pays() -> bool:
    """Whether ``--dtype auto`` should run bf16 on this CPU. The hardware flag is necessary, not
    sufficient: an AMD EPYC with avx512_bf16 ran a 2048² bf16 matmul 4.2× faster than fp32, an Intel
    Xeon with avx512_bf16 and no AMX ran it at half the fp32 rate (70 vs 130 GFLOP/s, one thread).
    So where the flag is present, both are timed side by side once per process and thread count
    (~0.3 s).
    ``$TOOLFORMER_CPU_BF16=1`` or ``0`` skips the measurement."""
    forced = os.environ.get(BF16_ENV, "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    if not native_bf16():
        return False
    import torch  # lazy: heavy

    threads = torch.get_num_threads()
    if threads not in _BF16_PAYS:
        rates = matmul_rates(1024, 5)
        fp32, bf16 = rates["fp32"], rates["bf16"]
        _BF16_PAYS[threads] = bf16_faster(fp32, bf16)
        log.info("CPU matmul on %d threads: fp32 %.0f, bf16 %.0f GFLOP/s: --dtype auto runs %s (%s=0/1 to choose)",
                 threads, fp32, bf16, "bf16" if _BF16_PAYS[threads] else "fp32", BF16_ENV)
    return _BF16_PAYS[threads]


def resolve_dtype(name: str | None, device: str = "cpu", bf16_cpu: bool | None = None) -> str:
    """``auto|fp32|bf16`` (torch's names too) → the torch dtype name to load a model in.

    ``auto`` is bf16 on a GPU or on a CPU where bf16 is measured faster (:func:`bf16_pays`), fp32
    elsewhere: emulated or slow bf16 costs time and buys nothing. ``None`` (library callers) keeps the
    exact default: fp32 on a CPU.

    >>> resolve_dtype("fp32"), resolve_dtype("bf16"), resolve_dtype("auto", "cuda")
    ('float32', 'bfloat16', 'bfloat16')
    >>> resolve_dtype("auto", "cpu", bf16_cpu=False), resolve_dtype(None, "cpu", bf16_cpu=True)
    ('float32', 'float32')
    >>> resolve_dtype("fp16")
    Traceback (most recent call last):
    toolformer_kit.config.ConfigError: unknown dtype 'fp16': use --dtype auto, fp32 or bf16
    """
    key = (name or "").strip().lower()
    if key in DTYPE_NAMES:
        return DTYPE_NAMES[key]
    if key not in ("", "auto"):
        raise ConfigError(f"unknown dtype {name!r}: use --dtype auto, fp32 or bf16")
    on_gpu = str(device).startswith("cuda")
    if on_gpu or key == "":
        return "bfloat16" if on_gpu else "float32"
    return "bfloat16" if (bf16_pays() if bf16_cpu is None else bf16_cpu) else "float32"


def leading_special_ids(tokenizer) -> list[int]:
    """The ids a tokenizer puts before any text (a BOS for Gemma, nothing for SmolLM2 or Qwen)."""
    plain = tokenizer.encode("a", add_special_tokens=False)
    full = tokenizer.encode("a")
    idx = full.index(plain[0]) if plain and plain[0] in full else 0
    return list(full[:idx])


def stop_ids(generation_eos, tokenizer) -> set[int]:
    """The ids generation ends on: the generation config's EOS (one id, several or None) and the
    tokenizer's; both backends stop on the same set, so their decoders end rows alike.

    >>> class Tok: eos_token_id = 2
    >>> sorted(stop_ids([7, 2], Tok())), sorted(stop_ids(None, Tok()))
    ([2, 7], [2])
    """
    ids = list(generation_eos) if isinstance(generation_eos, (list, tuple)) else [generation_eos]
    return {int(i) for i in ids + [tokenizer.eos_token_id] if i is not None}


def encode_with_offsets(tokenizer, text: str) -> tuple[list[int], list[int]]:
    """Token ids and each token's start character, tiling the text with no gaps: a token's
    leading space belongs to it, so a call inserted at ``offsets[i]`` goes before that space."""
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    starts, prev_end = [], 0
    for s, e in enc["offset_mapping"]:
        starts.append(min(s, prev_end))
        prev_end = max(prev_end, e)
    return list(enc["input_ids"]), starts


def cut_at_stop(text: str, stop: str) -> tuple[str, bool]:
    """Cut ``text`` just after the first ``stop``; also says whether it was found.

    >>> cut_at_stop("Calculator(1 + 2)] and more", "]")
    ('Calculator(1 + 2)]', True)
    >>> cut_at_stop("Calculator(1 +", "]")
    ('Calculator(1 +', False)
    """
    idx = text.find(stop) if stop else -1
    return (text[: idx + len(stop)], True) if idx >= 0 else (text, False)
