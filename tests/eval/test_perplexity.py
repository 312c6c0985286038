"""Perplexity with calls disabled: windows score each token once; real SmolLM2 agrees with itself."""

import math
import os
from pathlib import Path

import numpy as np
import pytest

from toolformer_kit.eval.config import default_data_dir
from toolformer_kit.eval.perplexity import document_nll, run_perplexity, window_spans
from toolformer_kit.eval.tasks import Example, get_task
from toolformer_kit.eval.tasks.text import load_corpus

DATA = Path(os.environ.get("TOOLFORMER_BENCHMARKS", default_data_dir()))


class UniformLM:
    """Characters as tokens, every one with probability 1/vocab: perplexity is exactly vocab."""

    def __init__(self, vocab=50):
        self.vocab, self.scored = vocab, []

    def encode(self, text):
        return [ord(c) for c in text]

    def token_logprobs(self, prefixes, continuations):
        assert all(len(p) >= 1 for p in prefixes)
        self.scored += [t for c in continuations for t in c]
        return [np.full(len(c), -math.log(self.vocab)) for c in continuations]


@pytest.mark.parametrize("n, window, stride", [(1, 8, 4), (2, 8, 4), (100, 16, 5), (100, 16, 16), (37, 1024, 512)])
def test_windows_cover_every_token_but_the_first_once(n, window, stride):
    spans = window_spans(n, window, stride)
    scored = [i for _, b, c in spans for i in range(b, c)]
    assert scored == list(range(1, n))
    assert all(c - a <= window and a <= b for a, b, c in spans)


def test_uniform_model_has_perplexity_vocab(tmp_path):
    lm = UniformLM(50)
    docs = [Example("a", "hello world, " * 20, ()), Example("b", "short", ())]
    summary = run_perplexity(lm, "uniform", "toy", docs, tmp_path, window=32, stride=8)
    assert summary["perplexity"] == pytest.approx(50.0)
    assert summary["n_tokens"] == len(docs[0].prompt) - 1 + len("short") - 1
    assert summary["ci95"][0] == pytest.approx(50.0) and summary["ci95"][1] == pytest.approx(50.0)
    again = UniformLM(50)
    run_perplexity(again, "uniform", "toy", docs, tmp_path, window=32, stride=8)
    assert again.scored == []  # resumed: nothing rescored


def test_heldout_corpus_formats(tmp_path):
    (tmp_path / "c.jsonl").write_text('{"text": "one doc"}\n{"text": "two doc"}\n')
    (tmp_path / "c.txt").write_text("first doc\nstill first\n\nsecond doc\n")
    assert [e.prompt for e in load_corpus(tmp_path / "c.jsonl")] == ["one doc", "two doc"]
    assert len(load_corpus(tmp_path / "c.txt")) == 2


@pytest.mark.real_model
@pytest.mark.skipif(not DATA.is_dir(), reason="no benchmark copies")
def test_real_smollm2_windows_match_one_pass(smollm2, one_thread):
    text = get_task("wikitext2").load(DATA)[0].prompt[:700]
    whole, n = document_nll(smollm2, text, window=4096, stride=4096)
    windowed, n2 = document_nll(smollm2, text, window=100, stride=70)
    assert n == n2 == len(smollm2.encode(text)) - 1
    ppl = math.exp(whole / n)
    assert 3 < ppl < 200                              # a real LM on Wikipedia prose
    assert windowed >= whole * 0.97                   # shorter context can only cost a little
    assert windowed / n2 == pytest.approx(whole / n, rel=0.15)
