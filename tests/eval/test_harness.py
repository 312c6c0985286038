"""The harness with a scripted generator: records, AC/NC, tool policy, resuming, reports, CLI errors."""

import datetime as dt
import json

import pytest

from toolformer_kit.decode.config import CallRecord, DecodeResult
from toolformer_kit.eval.harness import ResumeError, Setting, evaluate, run_task
from toolformer_kit.eval.report import breakdown_table, collect, comparison_table, write_report
from toolformer_kit.eval.tasks import Example, Task, ToolPolicy, get_task
from toolformer_kit.tools.calendar import calendar_tool_for

ANSWERS = {f"q{i}": i * 7 for i in range(10)}


def math_task():
    examples = [Example(k, f"What is {v // 7} times 7?\nThe answer is", (str(v),)) for k, v in ANSWERS.items()]
    return Task("toy-math", "toy", lambda d: examples, metric="math", max_new_tokens=8)


class ScriptedGenerator:
    """Calls the Calculator (and is right) on even questions when calls are on; guesses 0 otherwise."""

    def __init__(self):
        self.prompts, self.tool_sets, self.configs = [], [], []

    def __call__(self, prompts, config, tools):
        self.prompts += prompts
        self.tool_sets.append(dict(tools))
        self.configs.append(config)
        out = []
        for p in prompts:
            n = int(p.split()[2])
            if not config.disabled and "Calculator" in tools and n % 2 == 0:
                call = CallRecord("Calculator", f"{n} * 7", str(n * 7), 0, True, "")
                text = f" [Calculator({n} * 7) -> {n * 7}] {n * 7}."
                out.append(DecodeResult(p, text, [call], [], []))
            else:
                out.append(DecodeResult(p, " 0.", [], [], []))
        return out


def test_records_call_rate_and_table9_breakdown(tmp_path):
    gen = ScriptedGenerator()
    tools = {"Calculator": object(), "WikiSearch": object()}
    settings = [Setting.parse("tools"), Setting.parse("disabled")]
    summaries = evaluate("fake", gen, [math_task()], settings, tmp_path, tmp_path, tools=tools, batch_size=3)
    on, off = summaries
    # even ids 0,2,4,6,8 call and are right; q0's answer is 0, so the guess "0" is right without a call
    assert (on["setting"], on["n"], on["call_rate"]) == ("k10", 10, 0.5)
    assert on["ac"]["accuracy"] == 1.0 and on["nc"]["accuracy"] == 0.0
    assert on["accuracy"] == 0.5 and on["tools"] == {"Calculator": 5}
    assert off["call_rate"] == 0.0 and off["accuracy"] == 0.1 and off["ac"]["accuracy"] is None
    lo, hi = on["ci95"]
    assert lo < 0.5 < hi
    rec = json.loads((tmp_path / "fake" / "k10" / "toy-math" / "examples.jsonl").read_text().splitlines()[0])
    assert set(rec) >= {"id", "prompt", "output", "prediction", "calls", "correct", "called"}
    assert gen.configs[0].k == 10 and gen.configs[0].max_calls == 1 and gen.configs[-1].disabled
    assert gen.tool_sets[-1] == {}  # disabled runs get no tools at all
    table = breakdown_table(summaries)
    assert "| toy-math | – | fake | k10 | 50.0 [" in table and "| 100.0 [56.6, 100.0] | 0.0 [0.0, 43.4] | 50.0 |" in table  # Wilson: 5 of 5 is not certainty


def test_resume_skips_done_examples_and_refuses_other_settings(tmp_path):
    task, folder = math_task(), tmp_path / "run"
    examples = task.load(tmp_path)
    first = ScriptedGenerator()
    run_task(task, examples[:4], first, Setting.parse("k3"), {"Calculator": 1}, folder, batch_size=2)
    with open(folder / "examples.jsonl", "a") as fh:
        fh.write('{"id": "q9", "truncat')  # a kill in the middle of a write
    again = ScriptedGenerator()
    records = run_task(task, examples, again, Setting.parse("k3"), {"Calculator": 1}, folder, batch_size=2)
    assert len(first.prompts) == 4 and len(again.prompts) == 6
    assert sorted(r["id"] for r in records) == sorted(ANSWERS)
    from toolformer_kit.eval.records import read_records

    on_disk = read_records(folder / "examples.jsonl")  # the cut line was dropped, not appended to
    assert sorted(r["id"] for r in on_disk) == sorted(ANSWERS)
    with pytest.raises(ResumeError, match="setting"):
        run_task(task, examples, again, Setting.parse("k1"), {"Calculator": 1}, folder)


def test_policy_removes_tools_and_dateset_gets_its_own_calendar(tmp_path):
    tools = {"Calculator": object(), "WikiSearch": object(), "QA": object(),
             "Calendar": calendar_tool_for(dt.date(2000, 1, 1))}
    seen = []

    def generate(prompts, config, tool_set):
        seen.append((prompts, tool_set))
        return [DecodeResult(p, " Monday", [], [], []) for p in prompts]

    lama = Task("toy-lama", "", lambda d: [Example("a", "x", ("y",))], policy=ToolPolicy(("WikiSearch",)))
    qa = Task("toy-qa", "", lambda d: [Example("b", "x", ("y",))], policy=ToolPolicy(("QA",)))
    dateset = get_task("dateset")
    evaluate("m", generate, [lama, qa], [Setting.parse("k10")], tmp_path, tmp_path, tools=tools)
    assert "WikiSearch" not in seen[0][1] and "QA" in seen[0][1]
    assert "QA" not in seen[1][1] and "WikiSearch" in seen[1][1]
    seen.clear()
    evaluate("m", generate, [dateset], [Setting.parse("k10")], tmp_path, tmp_path, tools=tools, limit=3)
    assert len(seen) == 3 and all(len(prompts) == 1 for prompts, _ in seen)
    records = [json.loads(l) for l in (tmp_path / "m" / "k10" / "dateset" / "examples.jsonl").open()]
    for (prompts, tool_set), rec in zip(seen, records):
        today = dt.date.fromisoformat(rec["meta"]["today"])
        assert tool_set["Calendar"]("").endswith(f"{today:%B} {today.day}, {today.year}.")


def test_report_tables_and_plots(tmp_path):
    gen = ScriptedGenerator()
    evaluate("base", gen, [math_task()], [Setting.parse("disabled")], tmp_path, tmp_path)
    evaluate("tf", gen, [math_task()], [Setting.parse("k10"), Setting.parse("disabled")], tmp_path, tmp_path,
             tools={"Calculator": 1})
    summaries = write_report(tmp_path)
    assert len(collect(tmp_path)) == 3
    table = comparison_table(summaries)
    assert table.splitlines()[0] == "| task | exercises | base (disabled) | tf (disabled) | tf (k10) |"
    assert "| toy-math | – | 10.0 [" in table  # an unregistered task exercises no known tool
    md = (tmp_path / "table.md").read_text()
    assert "AC" in md and "calls %" in md
    for png in ("accuracy.png", "breakdown.png"):
        assert (tmp_path / png).read_bytes()[:4] == b"\x89PNG"
    assert json.loads((tmp_path / "summary.json").read_text())[0]["model"] == "base"


def test_cli_errors_name_the_fix(tmp_path, capsys):
    from toolformer_kit.commands.cli import main

    assert main(["eval", "--model", "x", "--tasks", "svamp", "--data-dir", str(tmp_path / "nope")]) == 2
    assert "--data-dir" in capsys.readouterr().err
    assert main(["eval", "--model", "x", "--tasks", "svamq"]) == 2
    assert "did you mean 'svamp'" in capsys.readouterr().err
    assert main(["eval", "--tasks", "svamp"]) == 2
    assert "--model" in capsys.readouterr().err
    assert main(["eval", "--model", "x", "--settings", "sometimes", "--tasks", "dateset"]) == 2
    assert "kN" in capsys.readouterr().err


def test_settings_and_k_sweep():
    from toolformer_kit.eval.config import EvalConfig
    from toolformer_kit.eval.run import settings_for

    assert [s.name for s in settings_for(EvalConfig())] == ["k10", "disabled"]
    swept = settings_for(EvalConfig(settings=["tools"], k=3, k_sweep=True))
    assert [(s.name, s.k) for s in swept] == [("k3", 3), ("k1", 1), ("k10", 10)]
    assert Setting.parse("disabled").disabled and not Setting.parse("k1").disabled
