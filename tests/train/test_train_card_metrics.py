"""Model card, plot, and the token-level perplexity the Trainer reports."""

from __future__ import annotations

import math

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st

from toolformer_kit.train import card, metrics
from toolformer_kit.train.data import IGNORE

HISTORY = [
    {"step": 0, "eval_perplexity": 30.0, "eval_loss": 3.4},
    {"step": 1, "loss": 3.2, "learning_rate": 1e-5},
    {"step": 2, "loss": 2.9, "learning_rate": 1e-5},
    {"step": 2, "eval_perplexity": 21.5, "eval_loss": 3.0},
]


def _summary(**overrides):
    base = {"name": "tf-run", "base_model": "smollm2-135m", "plain_baseline": False,
            "tools": {"Calculator": 12, "QA": 3}, "counts": {"C* documents": 40, "dev documents": 4},
            "hyperparameters": {"learning_rate": 1e-5, "effective_batch": 128}, "best_step": 2,
            "wall_time_s": 61.0}
    return {**base, **overrides}


def test_card_and_plot_are_written(tmp_path):
    card.write_card(tmp_path, _summary(), HISTORY)
    text = (tmp_path / "README.md").read_text()
    for needle in ("Calculator: 12 calls", "| C* documents | 40 |", "| learning_rate | 1e-05 |",
                   "| 0 | 30.00 |", "| 2 | 21.50 |", "Kept checkpoint: step 2", card.PLOT_NAME):
        assert needle in text
    png = (tmp_path / card.PLOT_NAME).read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 5000


def test_cc_card_says_it_is_the_baseline():
    text = card.render_card(_summary(plain_baseline=True, tools={}, evaluations=[]))
    assert "'+CC' baseline" in text and "- none" in text and "cc-baseline" in text


def test_token_nll_matches_cross_entropy_and_skips_ignored():
    torch.manual_seed(0)
    logits = torch.randn(2, 5, 11)
    labels = torch.randint(0, 11, (2, 5))
    labels[1, 3:] = IGNORE
    nll = metrics.token_nll(logits, labels)
    assert nll.shape == (2, 4)
    expected = torch.nn.functional.cross_entropy(logits[0, :-1], labels[0, 1:], reduction="none")
    assert torch.allclose(nll[0], expected, atol=1e-6)
    assert nll[1, 2:].tolist() == [IGNORE, IGNORE] and (nll[1, :2] >= 0).all()


@given(st.lists(st.lists(st.floats(0, 20), min_size=1, max_size=9), min_size=1, max_size=5))
def test_perplexity_pools_tokens_not_batches(rows):
    width = max(len(r) for r in rows)
    padded = np.full((len(rows), width), float(IGNORE))
    for i, r in enumerate(rows):
        padded[i, :len(r)] = r
    flat = [v for r in rows for v in r]
    result = metrics.perplexity_from_nll(padded)
    assert result["tokens"] == len(flat)
    assert math.isclose(result["perplexity"], math.exp(sum(flat) / len(flat)), rel_tol=1e-5)


def test_card_flags_dev_texts_carved_from_the_training_file():
    from toolformer_kit.train.data import CARVED_DEV

    carved = card.render_card(_summary(counts={"dev source": CARVED_DEV}))
    assert f"**Dev texts: {CARVED_DEV}.**" in carved and "not held-out documents as in the paper" in carved
    held = card.render_card(_summary(counts={"dev source": "held-out file dev.jsonl"}))
    assert "Dev texts: held-out file dev.jsonl." in held and "**Dev texts" not in held


def test_card_says_whether_the_dev_texts_hold_calls():
    with_calls = card.render_card(_summary(config={"dev_with_calls": True}))
    assert "held-out texts with their calls written in" in with_calls and "(no calls)" not in with_calls
    assert "held-out plain texts (no calls)" in card.render_card(_summary(config={"dev_with_calls": False}))
