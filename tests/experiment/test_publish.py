"""experiment.publish: a recipe's LoRA adapter and its model card in models/ (issue 42: a model that
outlives the machine that trained it)."""

import json
from pathlib import Path

import pytest

from toolformer_kit.config import ConfigError
from toolformer_kit.experiment.cost import estimate
from toolformer_kit.experiment.publish import model_card
from toolformer_kit.experiment.recipe import ExperimentConfig
from toolformer_kit.experiment.run import NOT_EVIDENCE, plan

ROOT = Path(__file__).resolve().parents[2]


def test_the_card_says_what_the_committed_report_says():
    res = json.loads((ROOT / "results" / "math-lora" / "results.json").read_text())
    card = model_card(res, "models/qwen-math-lora", 16.8)
    report = (ROOT / "results" / "math-lora" / "report.md").read_text()
    pooled = next(line for line in report.splitlines() if line.startswith("| pooled | 896"))
    assert pooled in card  # the report's own headline row, not a retelling of it
    assert "| math: gain svamp,asdiv,mawps >= 20 | +24.6 points [+21.0, +28.0] | **met** |" in card
    assert "toolformer generate --model models/qwen-math-lora --tools Calculator" in card
    assert res["commit"] in card and "`toolformer experiment math-lora`" in card
    link = card.split("](", 1)[1].split(")", 1)[0]
    assert (ROOT / "models" / "qwen-math-lora" / link).resolve() == (ROOT / "results" / "math-lora" / "report.md")


def test_only_a_lora_run_may_publish(tmp_path):
    with pytest.raises(ConfigError, match="needs a LoRA run"):
        ExperimentConfig(name="t", publish_model="models/t", lora=False)
    ExperimentConfig(name="t", publish_model="models/t", lora=True)


def test_publishing_is_the_last_stage_and_changes_no_evidence(tmp_path):
    cfg = ExperimentConfig(name="t", out=str(tmp_path / "run"), results=str(tmp_path / "res"))
    assert "publish" not in [name for name, _, _ in plan(cfg, tmp_path / "run", "x")]
    assert "publish" not in estimate(cfg)
    cfg = ExperimentConfig(name="t", out=str(tmp_path / "run"), results=str(tmp_path / "res"), publish_model="models/t")
    assert [name for name, _, _ in plan(cfg, tmp_path / "run", "x")][-2:] == ["report", "publish"]
    assert "publish" in estimate(cfg)
    assert "publish_model" in NOT_EVIDENCE  # a re-run that only adds publishing keeps its results


@pytest.mark.real_model
def test_stage_publish_writes_an_adapter_that_loads_and_its_card(tmp_path):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from toolformer_kit.experiment.publish import stage_publish
    from toolformer_kit.lm.base import load_lm
    from toolformer_kit.lm.embedded import resolve_model

    base = AutoModelForCausalLM.from_pretrained(resolve_model("smollm2-135m"), dtype=torch.float32)
    peft = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj"], task_type="CAUSAL_LM"))
    peft.save_pretrained(tmp_path / "adapter")
    results = tmp_path / "results"
    results.mkdir()
    (results / "results.json").write_text((ROOT / "results" / "math-lora" / "results.json").read_text())
    out = stage_publish(tmp_path / "adapter", results, str(tmp_path / "models" / "m"), "smollm2-135m")
    assert sorted(f.name for f in out.iterdir()) == ["README.md", "adapter_config.json", "adapter_model.safetensors"]
    assert "| pooled | 896 |" in (out / "README.md").read_text()
    assert load_lm(str(out), dtype="fp32").encode("a b")  # the folder, card beside it, loads as a model
