"""A language model behind a tool (the QA reader, the MT translator), loaded on first call.

Why lazily: registering or listing tools must not cost a model load (seconds, gigabytes); only a
call does. Why shared: QA and MT default to the same embedded model, so one process holds one
copy. Why a lock: the execution engine calls tools from several threads, and one model on one
device gains nothing from overlapping generations.

The model is chosen, in order, by the ``model`` argument, an environment variable
(``$TOOLFORMER_QA_MODEL``, ``$TOOLFORMER_MT_MODEL``) and the embedded ``qwen2.5-coder-0.5b``.

Its dtype, by the ``dtype`` argument, ``$TOOLFORMER_TOOL_DTYPE`` and ``auto`` (the project's
``--dtype`` default: bf16 where it is measured faster, else fp32). Why not fp32 always: until
2026-12-03 the reader loaded in fp32 while the annotated model ran bf16, and on this project's
AMX CPU a search campaign's shard spent ~70 % of its time in a QA reader 2.9× slower than it
needed to be (``benchmarks/bench_qa_batch.py --compare-dtype``).
"""

from __future__ import annotations

import inspect
import logging
import os
import threading
from typing import Optional, Sequence

from ..config import ConfigError
from ..lm.base import LanguageModel, SamplingConfig, load_lm, resolve_dtype

log = logging.getLogger(__name__)

DEFAULT_MODEL = "qwen2.5-coder-0.5b"
DTYPE_ENV = "TOOLFORMER_TOOL_DTYPE"

_LOADED: dict[tuple[str, str], LanguageModel] = {}
_LOAD_LOCK = threading.Lock()


_GEN_LOCKS: dict[int, threading.Lock] = {}


def _generation_lock(lm: LanguageModel) -> threading.Lock:
    """One lock per model object, so two tools sharing a model never generate at once."""
    with _LOAD_LOCK:
        return _GEN_LOCKS.setdefault(id(lm), threading.Lock())


def shared_lm(name: str, dtype: str = "auto") -> LanguageModel:
    """One loaded model per name and dtype per process."""
    key = (name, resolve_dtype(dtype))
    with _LOAD_LOCK:
        if key not in _LOADED:
            log.info("loading %s in %s for a tool (once per process)", *key)
            _LOADED[key] = load_lm(name, dtype=dtype)
        return _LOADED[key]


class LazyLM:
    """Greedy one-line completions from a model that is loaded when first needed."""

    def __init__(self, model: str | None = None, env: str | None = None, lm: LanguageModel | None = None,
                 dtype: str | None = None):
        self._lm = lm
        self.given = lm is not None  # a model handed in is what it is: no name or dtype to choose
        if lm is not None:
            self.name = str(getattr(lm, "name", "") or type(lm).__name__)
        else:
            self.name = model or (os.environ.get(env) if env else None) or DEFAULT_MODEL
        self.dtype = dtype or os.environ.get(DTYPE_ENV, "").strip() or "auto"

    def get(self) -> LanguageModel:
        if self._lm is None:
            try:
                resolve_dtype(self.dtype)
            except ConfigError:
                raise ConfigError(f"a tool's model dtype {self.dtype!r} (dtype= or ${DTYPE_ENV}) is unknown: "
                                  "use auto, fp32 or bf16") from None
            self._lm = shared_lm(self.name, self.dtype)
        return self._lm

    def describe(self) -> str:
        """Model and requested dtype, for a tool's version (its cache key): a reader in another
        dtype may answer differently."""
        return self.name if self.given else f"{self.name}|dtype={self.dtype}"

    def complete(self, prompt: str, max_new_tokens: int = 32) -> str:
        """The model's greedy continuation of ``prompt`` up to the end of the line."""
        lm = self.get()
        cfg = SamplingConfig(temperature=0.0, max_new_tokens=max_new_tokens)
        with _generation_lock(lm):
            (samples,) = lm.sample([prompt], n=1, stop="\n", config=cfg)
        return samples[0].text.split("\n", 1)[0].strip()

    def complete_many(self, prompts: Sequence[str], max_new_tokens: int = 32, shared: str = "") -> list[str]:
        """:meth:`complete` for many prompts in one generation pass; ``shared``, a start common
        to every prompt (a reader's instruction and examples), is run once where the model can."""
        if not prompts:
            return []
        lm = self.get()
        cfg = SamplingConfig(temperature=0.0, max_new_tokens=max_new_tokens)
        shared, tails = split_shared(lm, prompts, shared)
        kwargs = {"shared_prefix": shared} if shared else {}
        with _generation_lock(lm):
            rows = lm.sample(tails, n=1, stop="\n", config=cfg, **kwargs)
        return [row[0].text.split("\n", 1)[0].strip() for row in rows]

    def first_token_logprobs(self, prompts: Sequence[str], options: Sequence[Sequence[str]],
                             shared: str = "") -> list[list[float]] | None:
        """log p of each option's first token right after its prompt: what the model was choosing
        between there (a reader's answer against "unknown"). One pass over each prompt where the
        model can (``next_token_logprobs``, ``shared`` run once), else each option scored whole;
        None for a model that only writes (a scripted reader)."""
        if not prompts:
            return []
        lm = self.get()
        with _generation_lock(lm):
            if hasattr(lm, "next_token_logprobs"):
                head, tails = split_shared(lm, prompts, shared)
                ids = [[lm.encode(o)[0] for o in opts] for opts in options]
                rows = lm.next_token_logprobs(tails, ids, **({"shared_prefix": head} if head else {}))
                return [[float(x) for x in row] for row in rows]
            if not hasattr(lm, "token_logprobs"):
                return None
            flat = [(p, o) for p, opts in zip(prompts, options) for o in opts]
            scored = iter(lm.token_logprobs([p for p, _ in flat], [o for _, o in flat]))
            return [[float(next(scored)[0]) for _ in opts] for opts in options]


def split_shared(lm, prompts: Sequence[str], shared: str) -> tuple[str, list[str]]:
    """(shared, tails) when every prompt starts with ``shared``, ``lm.sample`` takes a
    ``shared_prefix`` (run once, its KV cache reused) and the cut changes no token; else
    ("", prompts), which gives the same text, only slower.

    >>> split_shared(object(), ["ab", "ac"], "a")
    ('', ['ab', 'ac'])
    """
    if not shared or not prompts or not all(p.startswith(shared) for p in prompts):
        return "", list(prompts)
    sample = getattr(lm, "sample", None)
    if sample is None or "shared_prefix" not in inspect.signature(sample).parameters or not hasattr(lm, "encode"):
        return "", list(prompts)
    tails = [p[len(shared):] for p in prompts]
    if any(lm.encode(shared) + lm.encode(t) != lm.encode(p) for t, p in zip(tails, prompts)):
        return "", list(prompts)
    return shared, tails


def first_line(text: Optional[str]) -> str:
    """What a reader wrote before any newline, without surrounding spaces or quotes.

    >>> first_line(' "Leonardo da Vinci"\\nQuestion: more')
    'Leonardo da Vinci'
    """
    return (text or "").split("\n", 1)[0].strip().strip("\"'").strip()
