"""The language-model backends, the one unit every stage reaches a model through.

* :mod:`.base` — what a backend must offer (:class:`~.base.LanguageModel` for annotation,
  :class:`~.base.DecodingLM` for tool-aware decoding), the backend registry, dtype and tokenizer
  helpers both backends share; light (numpy only), so anything may import it;
* :mod:`.hf` — transformers, with :mod:`.hf_sample` / :mod:`.hf_slots`, its continuous-batching
  sampler; imports torch;
* :mod:`.vllm` — vLLM (optional; imported only when ``--backend vllm`` is asked for);
* :mod:`.embedded` — the small models that ship with the package and the model cache.

``from toolformer_kit.lm import load_lm, LanguageModel`` is the public door for code outside the
package (README, docs); inside, modules import from :mod:`.base` directly.
"""

from .base import (BACKENDS, CALL_OPEN_TEXT, LanguageModel, PositionLogprobs, Sample, SamplingConfig, load_lm,
                   resolve_dtype)

__all__ = ["BACKENDS", "CALL_OPEN_TEXT", "LanguageModel", "PositionLogprobs", "Sample", "SamplingConfig",
           "load_lm", "resolve_dtype"]
