"""`toolformer tools`: list the tools with their paper settings, show a prompt, run one call."""

from toolformer_kit.commands import tools
from toolformer_kit.tools import BUILTIN


def test_list_shows_every_built_in_tool_with_its_settings(capsys):
    assert tools.main(["list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:5] == ["name", "tau_s", "k", "m", "tau_f"]
    names = {line.split()[0] for line in out[1:]}
    assert set(BUILTIN) <= names


def test_run_prints_the_result_and_a_failed_call_says_why(capsys):
    assert tools.main(["run", "Calculator", "(18 + 6) / 4"]) == 0
    assert capsys.readouterr().out.strip() == "6"
    assert tools.main(["run", "Calculator", "eighteen plus six"]) == 1
    assert capsys.readouterr().err.startswith("no result:")


def test_show_prints_the_annotation_prompt_ending_in_the_users_text(capsys):
    assert tools.main(["show", "Calculator"]) == 0
    out = capsys.readouterr().out
    assert "[Calculator(" in out and "<your text>" in out


def test_an_unknown_tool_is_one_clear_error(capsys):
    assert tools.main(["run", "Calculater", "1 + 1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "Calculator" in err and "Traceback" not in err
