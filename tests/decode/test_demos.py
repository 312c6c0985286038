"""``generate --demos``: worked examples shown executed, so a model that follows them writes "->"."""

import pytest

from toolformer_kit.calls import find_calls
from toolformer_kit.decode.demos import demo_prompt, executed
from toolformer_kit.tools import Tool, get_tool


@pytest.mark.parametrize("name", ["Calculator", "WikiSearch", "QA", "MT", "Calendar"])
def test_every_demonstration_call_is_shown_with_its_result(name):
    tool = get_tool(name)
    prompt = demo_prompt(tool, "Go on:", run=lambda call: f"R({call.input})")
    demos = prompt[len(tool.instruction.strip()):]  # the instruction's syntax examples stay as written
    calls = [c.call for c in find_calls(demos)]
    assert len(calls) >= len(tool.demonstrations) and all(c.result for c in calls)
    for c in calls:  # computed by the runner, except results the demonstration already had
        assert c.result == f"R({c.input})" or any(f"-> {c.result}]" in out for _, out in tool.demonstrations)
    assert prompt.endswith("\n\nGo on:")


def test_a_tool_that_gives_nothing_keeps_the_call_only_form():
    echo = Tool("Echo", lambda s: None, "Repeat.", [("a", "I say [Echo(hi)] hi.")])
    assert demo_prompt(echo, "You say", run=lambda call: None) == "Repeat.\n\nI say [Echo(hi)] hi.\n\nYou say"
    assert executed("x [Echo(hi)] y", lambda call: "HI") == "x [Echo(hi) -> HI] y"


def test_the_cli_runs_the_demo_tool_once_per_example(monkeypatch, capsys):
    from decode_fakes import FakeLM, Story

    from toolformer_kit.commands import generate

    seen = []
    lm = FakeLM([Story("", " ok.")])
    monkeypatch.setattr("toolformer_kit.lm.base.load_lm", lambda *a, **k: lm)
    monkeypatch.setattr(generate, "tool_runner", lambda tool, *a: lambda call: seen.append(call) or "RES")
    assert generate.main(["--demos", "WikiSearch", "--json", "--max-new-tokens", "3", "A", "B"]) == 0
    assert len(seen) == len(get_tool("WikiSearch").demonstrations)  # not once per prompt


def test_generate_shows_typed_inputs_beside_the_unconstrained_decoding_and_takes_max_calls(monkeypatch, capsys):
    from decode_fakes import FakeLM, Story

    from toolformer_kit.commands import generate

    story = Story("Q:", " It costs 5 dollars.", ranks={9: 0}, call="Calculator(2 + 3x) ->")
    monkeypatch.setattr("toolformer_kit.lm.base.load_lm", lambda *a, **k: FakeLM([story]))
    assert generate.main(["--tools", "Calculator", "--constrain-inputs", "--max-calls", "2", "Q:"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "[unconstrained] Q: It costs [Calculator(2 + 3x) -> ] 5 dollars."
    assert out[2] == "[typed inputs] Q: It costs [Calculator(2 + 3 ) -> 5] 5 dollars."
    assert "[no_result]" in out[1] and "[ok]" in out[3]
