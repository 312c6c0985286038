import argparse
from dataclasses import dataclass, field

import pytest

from toolformer_kit.config import ConfigError, add_dataclass_args, build_config


@dataclass
class Stage:
    model: str = field(default="smollm2-135m", metadata={"help": "model"})
    tau_f: float = field(default=1.0, metadata={"help": "threshold"})
    tools: list[str] = field(default_factory=lambda: ["Calculator"], metadata={"help": "tools"})
    resume: bool = field(default=True, metadata={"help": "resume"})
    limit: int | None = field(default=None, metadata={"help": "limit"})


def parse(argv):
    p = argparse.ArgumentParser()
    add_dataclass_args(p, Stage)
    return build_config(Stage, p.parse_args(argv))


def test_defaults_file_then_flags(tmp_path):
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text("tau-f: 0.5\ntools: [Calculator, WikiSearch]\nlimit: 3\n")
    assert parse([]) == Stage()
    cfg = parse(["--config", str(cfg_file), "--tau-f", "2.0", "--no-resume"])
    assert cfg == Stage(tau_f=2.0, tools=["Calculator", "WikiSearch"], resume=False, limit=3)


def test_toml_and_json_files(tmp_path):
    (tmp_path / "c.toml").write_text('model = "m"\ntools = ["A"]\n')
    (tmp_path / "c.json").write_text('{"model": "n"}')
    assert parse(["--config", str(tmp_path / "c.toml")]).tools == ["A"]
    assert parse(["--config", str(tmp_path / "c.json")]).model == "n"


def test_unknown_key_names_a_close_match(tmp_path):
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text("tau_g: 0.5\n")
    with pytest.raises(ConfigError, match="did you mean 'tau_f'"):
        parse(["--config", str(cfg_file)])


def test_missing_or_broken_file(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        parse(["--config", str(tmp_path / "nope.yaml")])
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [unclosed\n")
    with pytest.raises(ConfigError, match="could not parse"):
        parse(["--config", str(bad)])


def test_every_layer_of_a_run_is_named_in_its_error(tmp_path):
    """A recipe file, then a --config file, then the flags: one route (config.build_config), and a
    bad value is blamed on the layer that set it, not on the recipe underneath."""
    from toolformer_kit.config import file_layer

    recipe, extra = tmp_path / "recipe.yaml", tmp_path / "mine.yaml"
    recipe.write_text("tau_f: 0.5\nlimit: 3\n")
    extra.write_text("limit: lots\n")
    p = argparse.ArgumentParser()
    add_dataclass_args(p, Stage)
    assert build_config(Stage, p.parse_args(["--limit", "4"]), base=[file_layer(recipe)]) == Stage(tau_f=0.5, limit=4)
    with pytest.raises(ConfigError, match=r"limit must be a whole number, got 'lots' \(in .*mine.yaml\)"):
        build_config(Stage, p.parse_args(["--config", str(extra)]), base=[file_layer(recipe)])


def test_the_experiment_and_study_commands_take_the_same_route(tmp_path):
    """`toolformer experiment` and `toolformer study` build their configs through build_config with
    the recipe's or study's file as the bottom layer; a typed --per-recipe extends the study's list."""
    from toolformer_kit.commands import experiment, study
    from toolformer_kit.experiment.recipe import ExperimentConfig, load_recipe, recipe_layers
    from toolformer_kit.study.run import EXTENDED, StudyConfig, load_study, study_layers

    p = argparse.ArgumentParser()
    experiment.add_arguments(p)
    args = p.parse_args(["math", "--eval-limit", "7"])
    assert build_config(ExperimentConfig, args, base=recipe_layers("math")) == load_recipe("math", {"eval_limit": 7})
    p = argparse.ArgumentParser()
    study.add_arguments(p)
    args = p.parse_args(["scale", "--per-recipe", "search.eval_limit=200"])
    cfg = build_config(StudyConfig, args, base=study_layers("scale"), extend=EXTENDED)
    assert cfg == load_study("scale", {"per_recipe": ["search.eval_limit=200"]})
    assert cfg.per_recipe[-1] == "search.eval_limit=200" and len(cfg.per_recipe) > 1
