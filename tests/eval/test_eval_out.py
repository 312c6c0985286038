"""``--out`` of an evaluation: report files it did not write are never replaced."""

import pytest

from toolformer_kit.config import ConfigError
from toolformer_kit.eval import run as run_mod
from toolformer_kit.eval.config import EvalConfig


def test_foreign_report_files_are_refused_before_any_model_loads(tmp_path, monkeypatch):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "summary.json").write_text('{"my": "numbers"}')
    monkeypatch.setattr(run_mod, "load_lm", lambda *a, **k: pytest.fail("model loaded before --out checked"))
    with pytest.raises(ConfigError, match="summary.json that no evaluation wrote"):
        run_mod.run_eval(EvalConfig(model=["smollm2-135m"], tasks=["svamp"], out=str(out)))
    assert (out / "summary.json").read_text() == '{"my": "numbers"}'
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="is a file"):
        run_mod.check_out(tmp_path / "file")


def test_an_earlier_evaluation_is_resumed(tmp_path):
    out = tmp_path / "run"
    (out / "m" / "k10" / "svamp").mkdir(parents=True)
    (out / "m" / "k10" / "svamp" / "examples.jsonl").write_text("")
    (out / "summary.json").write_text("[]")
    run_mod.check_out(out)  # records under it: an evaluation's folder
    run_mod.check_out(tmp_path / "new")  # a new folder is fine
    (tmp_path / "ppl" / "m" / "perplexity").mkdir(parents=True)
    (tmp_path / "ppl" / "m" / "perplexity" / "wikitext.json").write_text("{}")
    (tmp_path / "ppl" / "table.md").write_text("")
    run_mod.check_out(tmp_path / "ppl")


@pytest.mark.parametrize("spec", ["/tmp/x=smollm2-135m", "a/../../x=smollm2-135m", "..=smollm2-135m"])
def test_a_label_is_a_name_not_a_path(tmp_path, monkeypatch, spec):
    monkeypatch.setattr(run_mod, "load_lm", lambda *a, **k: pytest.fail("model loaded before the label checked"))
    with pytest.raises(ConfigError, match="is a path; a label is a plain name"):
        run_mod.run_eval(EvalConfig(model=[spec], tasks=["svamp"], out=str(tmp_path / "out")))
    assert not (tmp_path / "out").exists()


def test_an_empty_benchmark_file_fails_the_up_front_check(tmp_path):
    from toolformer_kit.eval.config import check_tasks

    (tmp_path / "math").mkdir()
    (tmp_path / "math" / "SVAMP.json").write_text("[]")
    with pytest.raises(ConfigError, match="task svamp: .* holds no examples"):
        check_tasks(EvalConfig(tasks=["svamp"], data_dir=str(tmp_path)))


def test_a_model_is_the_same_wherever_its_folder_lies(tmp_path, monkeypatch):
    import json
    import shutil

    from toolformer_kit.eval.harness import ResumeError, _check_run_info

    model = tmp_path / "a" / "train-tools"
    model.mkdir(parents=True)
    (model / "config.json").write_text('{"x": 1}')
    (model / "model.safetensors").write_bytes(b"0" * 10)
    moved = tmp_path / "b" / "train-tools"
    shutil.copytree(model, moved)
    folder = tmp_path / "eval"
    _check_run_info(folder, {"model": str(model), "model_id": run_mod.model_identity(str(model))})
    _check_run_info(folder, {"model": str(moved), "model_id": run_mod.model_identity(str(moved))})
    (moved / "model.safetensors").write_bytes(b"0" * 11)  # other weights: another model
    with pytest.raises(ResumeError, match="model_id"):
        _check_run_info(folder, {"model": str(moved), "model_id": run_mod.model_identity(str(moved))})
    # records made before model_id existed: a relative and an absolute spelling are one path
    old = tmp_path / "old"
    old.mkdir()
    (old / "run.json").write_text(json.dumps({"model": str(model)}))
    monkeypatch.chdir(tmp_path)
    _check_run_info(old, {"model": "a/train-tools", "model_id": run_mod.model_identity("a/train-tools")})
