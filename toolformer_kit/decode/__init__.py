"""Tool-aware decoding: how a Toolformer model is used once trained (the paper's §4).

* :mod:`.config` — :class:`~.config.DecodeConfig` and the result records (no torch: the CLI and
  the evaluation harness import them cheaply);
* :mod:`.state` — one row's call state machine, shared by both decoders, so they cannot disagree;
* :mod:`.hf` — the token-at-a-time decoder on a transformers model (imports torch);
* :mod:`.vllm` — the same rules asked of a vLLM engine in whole segments.

:func:`make_decoder` is the one place that picks between them.
"""

from __future__ import annotations

from typing import Mapping, Optional

from ..lm.base import SegmentLM, StepLM
from .config import CallRecord, DecodeConfig, DecodeResult

__all__ = ["CallRecord", "DecodeConfig", "DecodeResult", "make_decoder"]


def make_decoder(lm, tools: Optional[Mapping] = None, engine=None, config: Optional[DecodeConfig] = None,
                 *, batch_size: int = 16):
    """The decoder for ``lm``'s backend: segments on a :class:`~toolformer_kit.lm.base.SegmentLM`
    (vLLM), token steps on a :class:`~toolformer_kit.lm.base.StepLM` (transformers)."""
    # Imported here, not at the top: both decoders pull in torch, and DecodeConfig must stay light.
    from .hf import ToolAwareDecoder
    from .vllm import VLLMToolDecoder

    if isinstance(lm, SegmentLM):
        cls = VLLMToolDecoder
    elif isinstance(lm, StepLM):
        cls = ToolAwareDecoder
    else:
        missing = sorted(n for n in ("model", "device", "cache_kw", "generate_segments", "tokenizer", "bos_ids",
                                     "call_open_ids", "pad_id", "eos_ids", "max_length") if not hasattr(lm, n))
        raise TypeError(f"{type(lm).__name__} is not a decoding backend (lm.base.StepLM or SegmentLM); "
                        f"it lacks {', '.join(missing)}")
    return cls(lm, tools=tools, engine=engine, config=config, batch_size=batch_size)
