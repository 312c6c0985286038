"""The three LM primitives against unbatched references on the real SmolLM2 (tolerance 1e-4)."""

import numpy as np
import pytest
import torch

from toolformer_kit.lm.base import LanguageModel, SamplingConfig

pytestmark = pytest.mark.real_model

PROMPT = ("Add calculator calls where they help.\n\nInput: Of 1400 runners, 400 finished.\n"
          "Output: Of 1400 runners, 400 finished, which is [Calculator(400 / 1400) -> 0.29] 29%.\n\nInput: ")
TEXTS = [" The team scored 12 goals in 4 games, so 3 per game.", " Short.",
         " From 5 plus 7 we get 12, and 12 times 2 gives 24 — grüße, naïve café."]


def reference_logprobs(lm, ids_before, ids_scored):
    with torch.no_grad():
        logits = lm.model(torch.tensor([ids_before + ids_scored])).logits[0].float().log_softmax(-1)
    n = len(ids_scored)
    return logits[len(ids_before) - 1: len(ids_before) - 1 + n]


def test_backend_satisfies_protocol(smollm2):
    assert isinstance(smollm2, LanguageModel)
    assert smollm2.call_open_ids == [933]  # " [" is a single token in SmolLM2


@pytest.mark.parametrize("reuse_cache", [True, False])
def test_call_start_logprobs_match_unbatched_reference(smollm2, reuse_cache):
    contexts = [t.strip() + "\nOutput:" for t in TEXTS]
    results = smollm2.call_start_logprobs(PROMPT, TEXTS, contexts=contexts, reuse_prompt_cache=reuse_cache)
    for text, ctx, res in zip(TEXTS, contexts, results):
        ids = smollm2.encode(text)
        assert res.token_ids == ids
        ref = reference_logprobs(smollm2, smollm2.encode(PROMPT) + smollm2.encode(ctx), ids)[:, 933].numpy()
        np.testing.assert_allclose(res.logprobs, ref, atol=1e-4)
        # offsets tile the text: each token starts where the previous one ended
        assert res.offsets[0] == 0
        assert "".join(text[a:b] for a, b in zip(res.offsets, res.offsets[1:] + [len(text)])) == text


def test_token_logprobs_match_reference_and_ignore_batching(smollm2):
    prefixes = [PROMPT, "Hello", PROMPT + " x", "Ein"]
    conts = [" The answer is 42.", " world, how are you", " y z", " Haus [Calculator(1 + 1) -> 2]"]
    batched = smollm2.token_logprobs(prefixes, conts)
    for p, c, got in zip(prefixes, conts, batched):
        cont_ids = smollm2.encode(c)
        ref = reference_logprobs(smollm2, smollm2.encode(p), cont_ids)
        np.testing.assert_allclose(got, ref.gather(-1, torch.tensor(cont_ids)[:, None]).squeeze(-1), atol=1e-4)
    # batch composition and order do not matter
    alone = [smollm2.token_logprobs([p], [c])[0] for p, c in zip(prefixes, conts)]
    reversed_batch = smollm2.token_logprobs(prefixes[::-1], conts[::-1])[::-1]
    for a, b, c in zip(batched, alone, reversed_batch):
        np.testing.assert_allclose(a, b, atol=1e-4)
        np.testing.assert_allclose(a, c, atol=1e-4)


def test_token_logprobs_take_token_ids(smollm2):
    p_ids, c_ids = smollm2.encode("The capital of France"), smollm2.encode(" is Paris")
    (from_ids,) = smollm2.token_logprobs([p_ids], [c_ids])
    (from_text,) = smollm2.token_logprobs(["The capital of France"], [" is Paris"])
    np.testing.assert_allclose(from_ids, from_text, atol=1e-6)


def test_padding_side_of_tokenizer_does_not_matter(smollm2):
    side = smollm2.tokenizer.padding_side
    try:
        smollm2.tokenizer.padding_side = "left"
        left = smollm2.token_logprobs(["A", "A much longer prefix here"], [" b c", " d"])
        smollm2.tokenizer.padding_side = "right"
        right = smollm2.token_logprobs(["A", "A much longer prefix here"], [" b c", " d"])
    finally:
        smollm2.tokenizer.padding_side = side
    for a, b in zip(left, right):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_greedy_sample_matches_hf_generate(smollm2):
    prefixes = ["The capital of France is", PROMPT + TEXTS[0].strip() + "\nOutput:"]
    got = smollm2.sample(prefixes, n=1, stop="]", config=SamplingConfig(max_new_tokens=12, temperature=0))
    for prefix, (sample,) in zip(prefixes, got):
        ids = smollm2.encode(prefix)
        ref = smollm2.model.generate(torch.tensor([ids]), max_new_tokens=12, do_sample=False)[0, len(ids):]
        ref_text = smollm2.decode(ref.tolist())
        if sample.closed:
            assert ref_text.startswith(sample.text)
            assert sample.text.endswith("]") and "]" not in sample.text[:-1]
        else:
            assert ref_text == sample.text


def test_samples_stop_at_bracket_and_do_not_depend_on_batch(smollm2):
    cfg = SamplingConfig(max_new_tokens=16, seed=3)
    prefix = PROMPT + "Out of 10 apples, 5 are red, that is [" 
    both = smollm2.sample([prefix, "Once upon a time"], n=4, stop="]", config=cfg)
    alone = smollm2.sample([prefix], n=4, stop="]", config=cfg)
    assert [s.text for s in both[0]] == [s.text for s in alone[0]]
    assert len(both[0]) == 4 and len(both[1]) == 4
    for s in both[0] + both[1]:
        assert s.closed == ("]" in s.text)
        if s.closed:
            assert s.text.index("]") == len(s.text) - 1
    assert any(s.closed for s in both[0])


def test_too_long_input_is_a_clear_error(smollm2):
    with pytest.raises(ValueError, match="exceeds the model's context"):
        smollm2.token_logprobs(["x"], [list(range(10)) * 1000])


@pytest.mark.real_model
def test_next_token_logprobs_agree_with_token_logprobs_with_and_without_a_shared_start(smollm2):
    """The QA reader's confidence (issue 40) reads the next-token distribution in one pass, the
    reader's head run once: the same numbers as scoring each option whole."""
    from toolformer_kit.tools.lmtool import LazyLM, split_shared

    head = "Answer each question.\nQuestion: capital of Spain?\nAnswer: Madrid\n"
    prompts = [head + "Question: capital of France?\nAnswer:", head + "Question: 2 + 2?\nAnswer:"]
    options = [" Paris", " unknown"]
    shared, tails = split_shared(smollm2, prompts, head)
    assert shared == head  # a split that changes no token, or the test would prove nothing
    ids = [[smollm2.encode(o)[0] for o in options]] * 2
    split = smollm2.next_token_logprobs(tails, ids, shared_prefix=shared)
    whole = smollm2.next_token_logprobs(prompts, ids)
    via_tool = LazyLM(lm=smollm2).first_token_logprobs(prompts, [options] * 2, shared=head)
    for i, prompt in enumerate(prompts):
        first = [smollm2.token_logprobs([prompt], [o])[0][0] for o in options]
        assert np.allclose(split[i], first, atol=2e-3) and np.allclose(whole[i], first, atol=2e-3)
        assert np.allclose(via_tool[i], first, atol=2e-3)
