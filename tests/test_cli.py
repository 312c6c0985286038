import subprocess
import sys

import pytest

from toolformer_kit.commands.cli import COMMANDS, build_parser, main


def test_every_command_has_help(capsys):
    for name in COMMANDS:
        with pytest.raises(SystemExit) as exit_info:
            main([name, "--help"])
        assert exit_info.value.code == 0
        assert "usage: toolformer " + name in capsys.readouterr().out


def test_models_list_shows_the_embedded_models(capsys):
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    assert "smollm2-135m" in out and "qwen2.5-coder-0.5b" in out and "pulled" in out


def test_unknown_model_is_one_clear_error(capsys):
    assert main(["models", "path", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown embedded model 'nope'") and "Traceback" not in err


def test_console_script_entry_point():
    proc = subprocess.run([sys.executable, "-m", "toolformer_kit.cli", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and "toolformer-kit" in proc.stdout


def test_command_modules_are_importable_mains():
    import importlib

    for module in COMMANDS.values():
        assert callable(importlib.import_module(module).main)
    assert build_parser().prog == "toolformer"
