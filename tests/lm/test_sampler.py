"""The continuous-batching sampler on tiny random fp32 models (no download): what is drawn does not
depend on batching, equals an unbatched torch.multinomial reference and the sampler it replaced,
and the admit/retire bookkeeping ends every row where it should."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from toolformer_kit.lm.hf import HFLanguageModel
from toolformer_kit.lm.hf_sample import TokenDrawer, _ratio, gumbel_argmax, token_probs
from toolformer_kit.lm.base import SamplingConfig, cut_at_stop

SHARED = "Insert calls. Input: 3 + 4 is 7. Output: 3 + 4 is [Calculator(3 + 4)] 7.\nInput: "
NEVER = "<no such stop>"
HEADS = ["6 times 7 is", "The sum of 12 and 30", "x", "A longer prefix with several words in it, then [",
         "The sum of 12 and 30 is [", "The sum of 12 [", "The sum [", "The sum of 12 and 30 is 42 ["]


def byte_tokenizer():
    """A byte-level tokenizer built in memory: 256 byte tokens, then <s> and </s>."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    vocab = {ch: i for i, ch in enumerate(bytes_to_unicode().values())}
    vocab.update({"<s>": 256, "</s>": 257})
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="</s>")


def tiny_lm(arch: str = "llama", **kw) -> HFLanguageModel:
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    common = dict(vocab_size=258, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512, eos_token_id=257)
    if arch == "qwen2-sliding":  # every layer sliding, window 8: the mask must follow positions
        model = Qwen2ForCausalLM(Qwen2Config(**common, use_sliding_window=True, sliding_window=8,
                                             max_window_layers=0))
    else:
        model = LlamaForCausalLM(LlamaConfig(**common))
    with torch.no_grad():  # sharper than a random init, so samples are neither uniform nor all alike
        model.get_output_embeddings().weight.mul_(8.0)
    return HFLanguageModel(model.float(), byte_tokenizer(), name=arch, **kw)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny matmuls gain nothing from a second thread and lose many-fold when another process
    holds one of two cores (the OpenMP threads then wait on each other)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def lm(one_thread):
    return tiny_lm()


def some_letters(text: str) -> bool:
    """Ends about one row in five at each step: rows of many lengths."""
    return bool(text) and ord(text[-1]) % 5 == 0


def reference(lm, shared: str, heads, n, cfg, stop="]", stop_when=None):
    """One row at a time, the whole sequence through the model at every step (no cache), and
    ``torch.multinomial`` with the row's generator: the sampler's definition."""
    from benchmarks_legacy import _draw

    out = []
    for h in heads:
        prefix = lm.bos_ids + lm.encode(shared) + lm.encode(h)
        rows = []
        for j in range(n):
            gen = lm._row_generator(cfg.seed, prefix, j)
            got = []
            while True:
                logits = lm.model(input_ids=torch.tensor([prefix + got])).logits[0, -1].float()
                got.append(_draw(logits, gen, cfg))
                text, closed = cut_at_stop(lm.decode(got), stop)
                closed = closed or bool(stop_when and stop_when(text))
                if closed or got[-1] in lm.eos_ids or len(got) == cfg.max_new_tokens:
                    rows.append((text, closed, got))
                    break
        out.append(rows)
    return out


@pytest.fixture(autouse=True, scope="module")
def _legacy_importable():
    """``benchmarks/legacy_sample.py`` holds the sampler this one replaced (and the per-row draw)."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "legacy_sample.py"
    spec = importlib.util.spec_from_file_location("benchmarks_legacy", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["benchmarks_legacy"] = module
    yield
    sys.modules.pop("benchmarks_legacy", None)


def triples(samples):
    return [[(s.text, s.closed, s.token_ids) for s in row] for row in samples]


def sample(lm, heads=HEADS, n=5, cfg=None, rows=64, **kw):
    lm.sample_rows = rows
    return lm.sample(heads, n, config=cfg or SamplingConfig(max_new_tokens=12, seed=1), shared_prefix=SHARED, **kw)


# ---------------------------------------------------------------- draws


@pytest.mark.parametrize("cfg", [SamplingConfig(), SamplingConfig(temperature=0.7, top_k=40),
                                 SamplingConfig(temperature=1.4, top_p=0.8), SamplingConfig(top_k=5, top_p=0.5)])
def test_batched_draws_are_torch_multinomial(cfg):
    from benchmarks_legacy import _draw

    logits = torch.randn(16, 3000) * 3
    a = [torch.Generator().manual_seed(i) for i in range(16)]
    b = [torch.Generator().manual_seed(i) for i in range(16)]
    drawer = TokenDrawer(cfg)
    for _ in range(6):  # several steps: the generators must also advance alike
        assert drawer(logits, a) == [_draw(row, g, cfg) for row, g in zip(logits, b)]


def test_bound_filter_keeps_the_reference_argmax_with_zero_uniforms():
    p = token_probs(torch.randn(4, 64), SamplingConfig())
    p[0, 7] = 0
    u = torch.rand(4, 64, dtype=torch.float64)
    u[0, 7] = 0  # p = u = 0: nan, which torch.argmax ranks first
    u[1, 5] = u[1, 9] = 0  # p / 0 = inf twice: the first wins
    u[2] = 0.5  # all ties in u: many entries near the bound
    ref = [int(torch.argmax(_ratio(p[i], u[i]))) for i in range(4)]
    assert gumbel_argmax(p, u, torch.empty(4, 64)).tolist() == ref
    assert ref[:2] == [7, 5]


# ---------------------------------------------------------------- batching


def test_samples_do_not_depend_on_batching(lm):
    results = [triples(sample(lm, rows=r, stop_when=some_letters)) for r in (1, 7, 64)]
    assert results[0] == results[1] == results[2]
    assert len({len(s[2]) for row in results[0] for s in row}) > 3  # rows of many lengths were mixed


def test_samples_equal_the_unbatched_reference_and_the_old_sampler(lm):
    from benchmarks_legacy import legacy_sample

    cfg = SamplingConfig(max_new_tokens=10, seed=4, temperature=0.9, top_k=50)
    got = triples(sample(lm, n=3, cfg=cfg, rows=5, stop_when=some_letters))
    assert got == reference(lm, SHARED, HEADS, 3, cfg, stop_when=some_letters)
    lm.sample_rows = 64
    assert got == triples(legacy_sample(lm, HEADS, 3, config=cfg, shared_prefix=SHARED, stop_when=some_letters))


def test_shared_prefix_split_or_not_draws_the_same(lm):
    cfg = SamplingConfig(max_new_tokens=8, seed=2)
    lm.sample_rows = 16
    split = lm.sample(HEADS[:3], 4, config=cfg, shared_prefix=SHARED)
    whole = lm.sample([SHARED + h for h in HEADS[:3]], 4, config=cfg)
    assert triples(split) == triples(whole)


def test_heads_sharing_a_prefix_run_it_once(lm):
    heads = ["The sum of 12 and 30 is 42 [", "The sum of 12 and 30 [", "The sum of 12 [", "The [", "An unrelated one ["]
    out = sample(lm, heads=heads, n=2, rows=4)
    # the longest runs in full, the three prefixes of it only their last token, the other in full
    assert lm.sample_stats["prefill_tokens"] == len(lm.encode(heads[0])) + 3 + len(lm.encode(heads[4]))
    cfg = SamplingConfig(max_new_tokens=12, seed=1)
    assert triples(out) == reference(lm, SHARED, heads, 2, cfg)


def test_sliding_window_mask_follows_positions(one_thread):
    lm = tiny_lm("qwen2-sliding")
    cfg = SamplingConfig(max_new_tokens=12, seed=5)
    got = triples(lm.sample(HEADS[:4], 2, config=cfg, shared_prefix=SHARED))
    assert got == reference(lm, SHARED, HEADS[:4], 2, cfg)


# ---------------------------------------------------------------- admit / retire bookkeeping


def test_rows_that_stop_at_once_free_their_slot(lm):
    out = sample(lm, rows=3, stop_when=lambda text: True)
    assert all(len(s.token_ids) == 1 and s.closed for row in out for s in row)
    assert lm.sample_stats["steps"] == 0  # every row ended on the token drawn from its head's logits


def test_max_new_tokens_ends_rows_unclosed(lm):
    out = sample(lm, n=3, cfg=SamplingConfig(max_new_tokens=7, seed=0), rows=5, stop=NEVER)
    assert all(len(s.token_ids) == 7 or s.token_ids[-1] in lm.eos_ids for row in out for s in row)
    assert not any(s.closed for row in out for s in row)
    assert all(s.text == lm.decode(s.token_ids) for row in out for s in row)


def test_eos_ends_a_row_and_stays_in_its_text(lm):
    cfg = SamplingConfig(max_new_tokens=30, seed=3)
    eos = lm.eos_ids
    lm.eos_ids = set(range(97, 123))  # every lower-case letter: rows end early, at different steps
    try:
        out = sample(lm, n=4, cfg=cfg, rows=6, stop=NEVER)
        ref = reference(lm, SHARED, HEADS, 4, cfg, stop=NEVER)
    finally:
        lm.eos_ids = eos
    assert triples(out) == ref
    ended = [s for row in out for s in row if len(s.token_ids) < 30]
    assert ended and all(97 <= s.token_ids[-1] <= 122 and not s.closed for s in ended)


def test_stop_string_cuts_the_text(lm):
    out = sample(lm, n=4, cfg=SamplingConfig(max_new_tokens=30, seed=0), rows=9, stop="e")
    closed = [s for row in out for s in row if s.closed]
    assert closed and all(s.text.endswith("e") and "e" not in s.text[:-1] for s in closed)


def test_greedy_rows_of_a_head_agree(lm):
    out = sample(lm, n=3, cfg=SamplingConfig(max_new_tokens=9, temperature=0), rows=4)
    for row in out:
        assert len({tuple(s.token_ids) for s in row}) == 1
    assert triples(out) == reference(lm, SHARED, HEADS, 3, SamplingConfig(max_new_tokens=9, temperature=0))


def test_degenerate_requests(lm):
    assert lm.sample([], 3, shared_prefix=SHARED) == []
    assert sample(lm, n=0) == [[] for _ in HEADS]
    empty = sample(lm, n=2, cfg=SamplingConfig(max_new_tokens=0))
    assert all(s.text == "" and s.token_ids == [] and not s.closed for row in empty for s in row)
    with pytest.raises(ValueError, match="at least one token"):
        lm.sample([""], 1, shared_prefix=SHARED)


def test_attention_is_restored_after_sampling(lm):
    before = lm.model.config._attn_implementation
    sample(lm, n=1)
    assert lm.model.config._attn_implementation == before


@pytest.mark.parametrize("arch", ["llama", "qwen2-sliding"])
def test_fused_prefill_draws_what_the_unfused_one_does(one_thread, arch, monkeypatch):
    """Prefills go through fused SDPA; the unfused path (the spans' scores masked by hand) is the
    definition it must match, on a model with a sliding window too."""
    from toolformer_kit.lm import hf_slots

    model = tiny_lm(arch)
    cfg = SamplingConfig(max_new_tokens=10, seed=3, temperature=0.8)
    fused = triples(sample(model, n=3, cfg=cfg, rows=9, stop_when=some_letters))
    monkeypatch.setattr(hf_slots, "FUSED_PREFILL", False)
    assert fused == triples(sample(model, n=3, cfg=cfg, rows=9, stop_when=some_letters))
