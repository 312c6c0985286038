"""Shared fixtures. Real-model fixtures pull the embedded model into the cache on first use
(SmolLM2 ~30 s, Qwen ~2–3 min) and load it once per test session."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def smollm2():
    """The real embedded SmolLM2-135M behind the transformers backend."""
    from toolformer_kit.lm.base import load_lm

    return load_lm("smollm2-135m", device="cpu")


@pytest.fixture(scope="session")
def qwen():
    """The real embedded Qwen2.5-Coder-0.5B-class model (630M parameters)."""
    from toolformer_kit.lm.base import load_lm

    return load_lm("qwen2.5-coder-0.5b", device="cpu")
