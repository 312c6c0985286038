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
