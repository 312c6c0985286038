"""`toolformer models`: list, path and verify the embedded models, offline."""

from toolformer_kit.commands import models
from toolformer_kit.commands.cli import main


def test_models_list_shows_the_embedded_models(capsys):
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    assert "smollm2-135m" in out and "qwen2.5-coder-0.5b" in out and "pulled" in out


def test_unknown_model_is_one_clear_error(capsys):
    assert main(["models", "path", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown embedded model 'nope'") and "Traceback" not in err


def test_verify_names_a_model_that_is_not_pulled(tmp_path, capsys):
    assert models.main(["--cache-dir", str(tmp_path), "verify", "smollm2-135m"]) == 1
    assert "smollm2-135m: DAMAGED or missing" in capsys.readouterr().out
