"""The GPU check rehearsed on the CPU, up to the device switch: random weights from the committed
config, the stand-in tokenizer, every stage, and the agreement check."""

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_check.py"


@pytest.fixture(scope="module")
def gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_stand_in_tokenizer_round_trips_and_has_a_one_token_call_open(gpu_check):
    tok = gpu_check.stand_in_tokenizer()
    text = "Total: 23 × 28 [Calculator(23 * 28) -> 644] pupils, café"
    ids = tok.encode(text, add_special_tokens=False)
    assert tok.decode(ids) == text and max(ids) < 300
    assert len(tok.encode(" [", add_special_tokens=False)) == 1


def test_every_stage_runs_and_the_cpu_agrees_with_itself(gpu_check, tmp_path):
    out = tmp_path / "gpu.json"
    report = gpu_check.main(["--device", "cpu", "--models", "smollm2-135m", "--layers", "2",
                             "--k", "2", "--m", "2", "--json", str(out)])
    model = report["models"]["smollm2-135m"]
    assert model["agreement"]["fp32"] == 0.0 and model["agreement"]["fp32_ok"]
    assert 0 < model["agreement"]["bf16"] < 0.5
    assert set(model["bf16"]) == {"positions", "sampling", "scoring", "train_step", "decoding"}
    assert all(v["seconds"] > 0 for v in model["bf16"].values())
    assert json.loads(out.read_text())["models"]["smollm2-135m"]["bf16"]["sampling"]["rows"] == 8 * 2 * 2


def test_without_cuda_it_says_how_to_rehearse(gpu_check):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(SystemExit, match="--device cpu"):
        gpu_check.main(["--models", "smollm2-135m"])
