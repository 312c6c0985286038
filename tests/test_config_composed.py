"""The composite configs (pipeline, experiment, study, campaign) are built from the stage configs
(issue 30): every setting they share with a stage is that stage's field, declared once, and every
recipe file under configs/ still loads."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest

from toolformer_kit.annotate.config import AnnotateConfig
from toolformer_kit.config import load_config_file, recorded, to_dict
from toolformer_kit.eval.config import EvalConfig
from toolformer_kit.campaign.run import CampaignConfig
from toolformer_kit.experiment.recipe import ExperimentConfig, load_recipe
from toolformer_kit.study.run import StudyConfig, load_study
from toolformer_kit.pipeline.config import PipelineConfig
from toolformer_kit.train.config import TrainConfig

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
STAGES = {c.__name__: c for c in (AnnotateConfig, TrainConfig, EvalConfig, ExperimentConfig)}
COMPOSITES = (PipelineConfig, ExperimentConfig, StudyConfig, CampaignConfig)


def _plain(tp):
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    return args[0] if typing.get_origin(tp) is typing.Union and len(args) == 1 else tp


@pytest.mark.parametrize("cls", COMPOSITES, ids=lambda c: c.__name__)
def test_a_taken_setting_has_the_stages_type_and_help(cls):
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if "from" not in f.metadata:
            continue
        stage, _, name = f.metadata["from"].partition(".")
        source = {g.name: g for g in dataclasses.fields(STAGES[stage])}[name]
        assert _plain(hints[f.name]) == _plain(typing.get_type_hints(STAGES[stage])[name]), f.name
        assert f.metadata["help"].startswith(source.metadata["help"]), f.name


@pytest.mark.parametrize("cls", (PipelineConfig, ExperimentConfig, StudyConfig), ids=lambda c: c.__name__)
def test_dtype_and_call_cost_reach_every_entry_point(cls):
    names = {f.name for f in dataclasses.fields(cls)}
    assert {"dtype", "call_cost"} <= names


def test_the_pipeline_passes_dtype_and_call_cost_to_its_stages(tmp_path):
    from toolformer_kit.pipeline import run

    cfg = PipelineConfig(out=str(tmp_path), dtype="fp32", call_cost=0.5)
    assert run.annotate_config(cfg, tmp_path).call_cost == 0.5
    assert run.annotate_config(cfg, tmp_path).dtype == "fp32"
    assert run.train_config(cfg, tmp_path, tmp_path / "d", tmp_path / "v", False).dtype == "fp32"
    assert run.eval_config(cfg, tmp_path, tmp_path, tmp_path, tmp_path).dtype == "fp32"


def test_a_recipe_passes_them_too_and_its_evaluation_keeps_fp32_on_a_cpu_under_auto(tmp_path):
    from toolformer_kit.experiment import run

    cfg = ExperimentConfig(name="t", call_cost=1.0, dtype="bf16", backend="hf")
    assert (run.annotate_config(cfg, tmp_path).call_cost, run.annotate_config(cfg, tmp_path).dtype) == (1.0, "bf16")
    assert run.eval_config(cfg, tmp_path).dtype == "bf16"
    assert run.eval_config(ExperimentConfig(name="t"), tmp_path).dtype == ""  # the library default, as before


def test_a_study_sets_them_for_every_recipe_and_the_cost_study_refuses_a_fixed_call_cost(tmp_path):
    from toolformer_kit.config import ConfigError
    from toolformer_kit.study.layout import recipe_config

    study = load_study("tau", {"out": str(tmp_path), "dtype": "fp32", "call_cost": 0.5})
    cfg = recipe_config(study, "math", tmp_path / "math")
    assert (cfg.dtype, cfg.call_cost) == ("fp32", 0.5)
    assert recipe_config(load_study("tau", {"out": str(tmp_path)}), "math", tmp_path).dtype == load_recipe("math").dtype
    with pytest.raises(ConfigError, match="sweeps the call cost"):
        load_study("cost", {"call_cost": 1.0})
    assert "dtype" not in recorded(load_study("tau")) and recorded(study)["dtype"] == "fp32"


def test_settings_added_at_their_default_leave_the_records_as_they_were():
    cfg = load_recipe("math")
    assert set(to_dict(cfg)) - set(recorded(cfg)) == {"call_cost", "backend", "dtype", "base_reference", "endpoints", "which_tool"}
    assert "dtype" in recorded(ExperimentConfig(name="t", dtype="fp32"))


@pytest.mark.parametrize("path", sorted((CONFIGS / "experiments").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_recipe_file_loads(path):
    assert load_recipe(str(path)).name == path.stem


@pytest.mark.parametrize("path", sorted((CONFIGS / "studies").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_study_file_loads(path):
    assert load_study(path.stem, folder=path.parent).name == path.stem


@pytest.mark.parametrize("path", sorted((CONFIGS / "campaigns").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_campaign_file_loads(path):
    from toolformer_kit.config import from_dict

    assert from_dict(CampaignConfig, load_config_file(path), str(path)).recipe
