"""--dtype auto|fp32|bf16: how auto decides, that bad values are one clear error, and (on the real
SmolLM2) how far bf16 moves the filter's losses and decisions and greedy decoding from fp32."""

from __future__ import annotations

import re

import numpy as np
import pytest

from toolformer_kit.config import ConfigError
from toolformer_kit.lm.base import cpu_has_bf16, resolve_dtype

# ---------------------------------------------------------------- auto and bad input


def test_auto_is_bf16_only_with_hardware_bf16_or_a_gpu():
    assert resolve_dtype("auto", "cpu", bf16_cpu=True) == "bfloat16"
    assert resolve_dtype("auto", "cpu", bf16_cpu=False) == "float32"
    assert resolve_dtype("auto", "cuda:0", bf16_cpu=False) == "bfloat16"
    assert resolve_dtype("BF16", "cpu", bf16_cpu=False) == "bfloat16"  # asked for: given, even if emulated
    assert cpu_has_bf16({"avx2", "amx_bf16"}) and not cpu_has_bf16({"avx2", "avx512f"})


def test_auto_measures_bf16_where_the_flag_is_present_and_picks_fp32_when_bf16_is_slower(monkeypatch):
    from toolformer_kit.lm import base

    rates = {"fp32": 130.0, "bf16": 70.0}  # an Intel Xeon with avx512_bf16 and no AMX: bf16 at half the fp32 rate
    monkeypatch.setattr(base, "native_bf16", lambda: True)
    monkeypatch.setattr(base, "matmul_rates", lambda n, repeats: dict(rates))
    monkeypatch.setattr(base, "_BF16_PAYS", {})
    monkeypatch.delenv(base.BF16_ENV, raising=False)
    assert resolve_dtype("auto", "cpu") == "float32"
    monkeypatch.setattr(base, "_BF16_PAYS", {})
    rates["fp32"] = 20.0  # an EPYC with avx512_bf16: bf16 several times faster
    assert resolve_dtype("auto", "cpu") == "bfloat16"
    monkeypatch.setenv(base.BF16_ENV, "0")  # the user's word wins, without measuring
    monkeypatch.setattr(base, "matmul_rates", lambda *a, **k: pytest.fail("measured despite the override"))
    assert resolve_dtype("auto", "cpu") == "float32"
    monkeypatch.setattr(base, "native_bf16", lambda: False)
    monkeypatch.delenv(base.BF16_ENV)
    assert resolve_dtype("auto", "cpu") == "float32"  # no flag: emulated, never measured


def test_library_default_stays_exact_fp32_on_cpu():
    # load(dtype=None) is what tests and library callers use: it must not turn to bf16 on a bf16 CPU
    assert resolve_dtype(None, "cpu", bf16_cpu=True) == "float32"


@pytest.mark.parametrize("bad", ["fp16", "half", "bf-16"])
def test_bad_dtype_is_one_clear_error(bad):
    with pytest.raises(ConfigError, match="use --dtype auto, fp32 or bf16"):
        resolve_dtype(bad)


def test_train_config_rejects_a_bad_dtype_and_auto_follows_the_cpu():
    from toolformer_kit.train.config import TrainConfig

    with pytest.raises(ConfigError, match="--dtype must be auto, fp32 or bf16"):
        TrainConfig(dtype="fp16")
    assert TrainConfig().resolved_bf16(on_gpu=False, bf16_cpu=True) is True
    assert TrainConfig().resolved_bf16(on_gpu=False, bf16_cpu=False) is False
    assert TrainConfig(dtype="bf16", bf16=False).resolved_bf16(on_gpu=True) is False  # the older flag wins


def test_annotate_runner_rejects_a_bad_dtype_before_loading():
    from toolformer_kit.annotate.config import AnnotateConfig
    from toolformer_kit.annotate.runner import Runner

    with pytest.raises(ConfigError, match="unknown dtype 'fp16'"):
        Runner(AnnotateConfig(dtype="fp16"))._models()


# ---------------------------------------------------------------- real SmolLM2: agreement

DOCS = [
    "Tom had 12 apples and bought 7 more, so he had 19 apples. He gave away 4 and kept 15.",
    "A ticket costs 8 dollars, so 6 tickets cost 48 dollars and 10 tickets cost 80 dollars.",
    "The train left at 3 and travelled 240 miles in 4 hours, an average of 60 miles per hour.",
]
# (document, the number a call goes before, Calculator input, result): right and wrong results
CALLS = [(0, "19", "12 + 7", "19"), (0, "19", "12 * 7", "84"), (0, "15", "19 - 4", "15"), (0, "15", "19 + 4", "23"),
         (1, "48", "8 * 6", "48"), (1, "48", "8 + 6", "14"), (1, "80", "8 * 10", "80"), (1, "80", "8 - 10", "-2"),
         (2, "60", "240 / 4", "60"), (2, "60", "240 * 4", "960"), (2, "240", "3 * 80", "240"), (2, "4", "2 + 2", "4")]
MARGIN = 0.15  # τf ± this: bf16 may decide either way (measured here: |Δscore| max 0.046, |ΔL| max 0.050)


def filter_scores_of(lm):
    """L⁻ − L⁺ of every CALLS candidate, and all their losses, through the batched scorer."""
    from toolformer_kit.annotate.scoring import BatchedScorer, Request, call_prefix
    from toolformer_kit.annotate.positions import LEAD
    from toolformer_kit.calls import ToolCall

    docs, positions = [], []
    for text in DOCS:
        docs.append(lm.encode_with_offsets(LEAD + text))
    for d, number, _, _ in CALLS:
        ids, offsets = docs[d]
        char = re.search(rf" {number}\b", LEAD + DOCS[d]).start()
        positions.append(offsets.index(char))
    requests = []
    for (d, _, expr, result), i in zip(CALLS, positions):
        requests += [Request(d, (), (i,)),
                     Request(d, call_prefix(lm, ToolCall("Calculator", expr, "")), (i,)),
                     Request(d, call_prefix(lm, ToolCall("Calculator", expr, result)), (i,))]
    found = BatchedScorer(lm).losses([ids for ids, _ in docs], requests)
    losses = np.array([[found[3 * n + k][i] for k in range(3)] for n, i in enumerate(positions)])
    return np.minimum(losses[:, 0], losses[:, 1]) - losses[:, 2], losses


@pytest.fixture(scope="module")
def smollm2_bf16():
    from toolformer_kit.lm.base import load_lm

    return load_lm("smollm2-135m", device="cpu", dtype="bf16")


@pytest.mark.real_model
def test_bf16_loads_as_asked_and_keeps_the_fast_scoring_path(smollm2_bf16):
    import torch

    assert next(smollm2_bf16.model.parameters()).dtype == torch.bfloat16
    assert smollm2_bf16._head_is_exact  # body + row-wise head, not the full-vocabulary fallback


@pytest.mark.real_model
def test_bf16_filter_agrees_with_fp32_within_the_margin(smollm2, smollm2_bf16):
    """bf16 moves the three losses by |ΔL| ≤ 0.05 here (median 0.011); no kept/rejected decision
    flips at τf 0.5 / 1 / 2 unless the fp32 score is within MARGIN of τf."""
    from toolformer_kit.annotate.filter import decision_flips

    ref, ref_losses = filter_scores_of(smollm2)
    new, new_losses = filter_scores_of(smollm2_bf16)
    delta = np.abs(ref_losses - new_losses)
    assert delta.max() < 0.1 and np.median(delta) < 0.03, delta
    for tau in (0.5, 1.0, 2.0):
        assert decision_flips(ref, new, tau, MARGIN)[1] == 0, (tau, ref, new)
