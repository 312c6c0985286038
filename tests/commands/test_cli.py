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


def test_the_module_shim_is_the_command_lines_main():
    from toolformer_kit import cli

    assert cli.main is main  # python -m toolformer_kit.cli runs the same parser as `toolformer`


def test_console_script_entry_point():
    proc = subprocess.run([sys.executable, "-m", "toolformer_kit.cli", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and "toolformer-kit" in proc.stdout


def test_command_modules_are_importable_mains():
    import importlib

    for module in COMMANDS.values():
        assert callable(importlib.import_module(module).main)
    assert build_parser().prog == "toolformer"
