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
    assert set(to_dict(cfg)) - set(recorded(cfg)) == {"call_cost", "backend", "dtype", "base_reference", "endpoints",
                                                      "which_tool", "eval_drop_empty", "specialists",
                                                      "publish_model", "bank", "max_minutes"}
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


@pytest.mark.parametrize("cls", COMPOSITES, ids=lambda c: c.__name__)
def test_each_declared_target_exists_with_the_same_type_and_is_fed_once(cls):
    hints, fed = typing.get_type_hints(cls), {}
    for f in dataclasses.fields(cls):
        for target in f.metadata.get("to", ()):
            stage, _, name = target.partition(".")
            name = name or f.name  # a composite's own setting feeds the stage's of the same name
            target = f"{stage}.{name}"
            assert name in typing.get_type_hints(STAGES[stage]), (f.name, target)
            assert _plain(hints[f.name]) == _plain(typing.get_type_hints(STAGES[stage])[name]), (f.name, target)
            assert fed.setdefault(target, f.name) == f.name, f"{target} fed by {fed[target]} and {f.name}"


def _changed(f, value):
    """A value of ``f``'s type other than ``value`` (the runner must pass it through)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1 if f.name != "micro_batch" else 1  # the micro-batch is capped at the effective batch
    if isinstance(value, list):
        return [*value, "svamp"] if f.name == "tasks" else [*value, "Calendar"]
    choices = {"dtype": ("fp32", "bf16"), "backend": ("vllm", "hf"), "train_keep": ("last", "best")}
    return next(c for c in choices[f.name] if c != value) if f.name in choices else f"{value}-x"


# What a runner sets itself over a declared setting, each with its reason.
OVERRIDDEN = {("campaign", "tau_f"): "the bank keeps every score >= 0; tau_f decides at publish",
              ("campaign", "progress"): "a shard's bar is the campaign's",
              ("experiment-eval", "dtype"): "evaluation keeps the library's default under auto (eval_dtype)"}


def _runners(tmp_path):
    from toolformer_kit.campaign import run as campaign
    from toolformer_kit.experiment import run as experiment
    from toolformer_kit.pipeline import run as pipeline

    return {"campaign": (CampaignConfig(recipe="mt"), AnnotateConfig, campaign.annotate_config),
            "pipeline-annotate": (PipelineConfig(corpus="default"), AnnotateConfig,
                                  lambda c: pipeline.annotate_config(c, tmp_path)),
            "pipeline-train": (PipelineConfig(), TrainConfig,
                               lambda c: pipeline.train_config(c, tmp_path, tmp_path / "d", None, False)),
            "pipeline-eval": (PipelineConfig(), EvalConfig,
                              lambda c: pipeline.eval_config(c, tmp_path, tmp_path, None, None)),
            "experiment-annotate": (ExperimentConfig(name="t"), AnnotateConfig,
                                    lambda c: experiment.annotate_config(c, tmp_path)),
            "experiment-train": (ExperimentConfig(name="t"), TrainConfig,
                                 lambda c: experiment.train_config(c, tmp_path, False, tmp_path / "d")),
            "experiment-eval": (ExperimentConfig(name="t"), EvalConfig, lambda c: experiment.eval_config(c, tmp_path))}


@pytest.mark.parametrize("runner", ["campaign", "pipeline-annotate", "pipeline-train", "pipeline-eval",
                                    "experiment-annotate", "experiment-train", "experiment-eval"])
def test_every_declared_setting_reaches_the_stage_config_the_runner_builds(tmp_path, runner):
    """Renamed settings included (train_steps is max_steps, eval_limit is limit, work is the
    annotation's out): the runners map them through config.stage_config, never by hand."""
    cfg, stage, build = _runners(tmp_path)[runner]
    checked = 0
    for f in dataclasses.fields(cfg):
        for target in f.metadata.get("to", ()):
            owner, _, name = target.partition(".")
            if owner != stage.__name__ or (runner.split("-")[0], f.name) in OVERRIDDEN or (runner, f.name) in OVERRIDDEN:
                continue
            value = _changed(f, getattr(cfg, f.name))
            assert getattr(build(dataclasses.replace(cfg, **{f.name: value})), name or f.name) == value, (f.name, target)
            checked += 1
    assert checked >= 5
