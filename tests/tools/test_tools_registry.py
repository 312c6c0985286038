"""The five built-in tools as a set: registry, demonstrations, input checks and the CLI."""

from __future__ import annotations

import pytest

from toolformer_kit.commands import cli
from toolformer_kit.calls import find_calls, format_call, strip_calls
from toolformer_kit.tools import PAPER_CALCULATOR_MT, PAPER_DEFAULT, Tool, get_tool
from toolformer_kit.tools.calculator import calculate
from toolformer_kit.tools.user import check_demonstrations

BUILTIN = ["Calculator", "Calendar", "WikiSearch", "QA", "MT"]


@pytest.mark.parametrize("name", BUILTIN)
def test_builtin_demonstrations_are_well_formed(name):
    tool = get_tool(name)
    assert isinstance(tool, Tool) and tool.name == name
    assert 3 <= len(tool.demonstrations) <= 8
    assert check_demonstrations(name, tool.demonstrations) == list(tool.demonstrations)
    for x, y in tool.demonstrations:
        assert strip_calls(y) == x
        for parsed in find_calls(y):
            assert parsed.call.tool == name and parsed.closed
            assert format_call(parsed.call) in y  # written exactly as format_call writes it
            if name == "Calculator":  # the only tool whose demonstrations show results
                assert parsed.call.result == calculate(parsed.call.input)
            else:
                assert parsed.call.result is None
    prompt = tool.prompt_prefix()
    assert prompt.endswith("\n\nInput:") and f"[{name}(" in prompt.split("\n\n")[0]


@pytest.mark.parametrize("name, settings", [
    ("Calculator", PAPER_CALCULATOR_MT), ("MT", PAPER_CALCULATOR_MT),
    ("Calendar", PAPER_DEFAULT), ("WikiSearch", PAPER_DEFAULT), ("QA", PAPER_DEFAULT),
])
def test_paper_settings(name, settings):
    assert get_tool(name).settings == settings


@pytest.mark.parametrize("name", ["Calculator", "WikiSearch", "QA", "MT"])
@pytest.mark.parametrize("bad", ["", "  \n ", "x" * 100_000, "\x00\x01\x02binary", b"bytes".decode() + "\x7f", None, 42])
def test_direct_calls_refuse_bad_input_without_raising(name, bad):
    tool = get_tool(name)
    assert tool(bad) is None  # no model or index is touched for refused input
    assert tool.check_input(bad)


def test_cli_run_prints_result_or_why_not(capsys):
    assert cli.main(["tools", "run", "Calculator", "(3 + 4) * 2"]) == 0
    assert capsys.readouterr().out.strip() == "14"
    assert cli.main(["tools", "run", "Calculator", "2 ** 8"]) == 1
    assert "no result: not an expression" in capsys.readouterr().err
    assert cli.main(["tools", "run", "Calculator", ""]) == 1
    assert "no result: empty input: Calculator needs some text" in capsys.readouterr().err
    assert cli.main(["tools", "run", "Calendar"]) == 0
    assert capsys.readouterr().out.startswith("Today is ")
    assert cli.main(["tools", "run", "WikiSearch", "Eiffel Tower"]) == 0
    assert "Eiffel" in capsys.readouterr().out
    assert cli.main(["tools", "run", "Calculater", "1"]) == 2
    assert "did you mean 'Calculator'" in capsys.readouterr().err


def test_cli_list_and_show(capsys):
    assert cli.main(["tools", "list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in BUILTIN)
    assert cli.main(["tools", "show", "QA"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Your task is to add calls to a Question Answering API")
    assert out.rstrip().endswith("Input: <your text>\nOutput:")
