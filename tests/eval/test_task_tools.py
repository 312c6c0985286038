"""Which tool each task exercises, and which T-REx form LAMA uses: in the task list and the report."""

import pytest

from toolformer_kit.eval.config import PAPER_TASKS
from toolformer_kit.eval.report import breakdown_table, comparison_table, results_table, write_report
from toolformer_kit.eval.tasks import TASKS, get_task

EXPECTED = {"svamp": "Calculator", "asdiv": "Calculator", "mawps": "Calculator", "lama-trex": "QA",
            "lama-google-re": "QA", "lama-squad": "QA", "lama-trex-templates": "QA", "webquestions": "WikiSearch",
            "nq": "WikiSearch", "triviaqa": "WikiSearch", "mlqa-de": "MT", "dateset": "Calendar",
            "templama": "Calendar", "wikitext2": ""}


@pytest.mark.parametrize("name, tool", EXPECTED.items())
def test_each_task_declares_the_tool_it_exercises(name, tool):
    assert get_task(name).exercises == tool


def test_every_generation_task_exercises_a_registered_tool():
    from toolformer_kit.tools import tool_names

    for name in TASKS.names():
        task = get_task(name)
        assert (task.exercises in tool_names()) == (task.kind == "generate"), name
        assert task.exercises not in task.policy.excluded  # never a tool the task removes


def test_eval_help_lists_tasks_with_their_tool_and_the_trex_form(capsys):
    from toolformer_kit.commands.cli import main

    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    out = capsys.readouterr().out
    for name in PAPER_TASKS:
        line = next(l for l in out.splitlines() if l.split()[:1] == [name])
        assert (get_task(name).exercises or "-") in line.split()
    assert "evidence sentences" in out and "relation templates" in out


def _summary(task, setting="k10"):
    return {"kind": "generate", "model": "m", "setting": setting, "task": task, "n": 2, "accuracy": 0.5,
            "ci95": (0.0, 1.0), "call_rate": 0.5, "ac": {"n": 1, "accuracy": 1.0, "ci95": (1.0, 1.0)},
            "nc": {"n": 1, "accuracy": 0.0, "ci95": (0.0, 0.0)}, "tools": {}}


def test_report_tables_have_an_exercises_column():
    summaries = [_summary("svamp"), _summary("webquestions"), _summary("lama-trex")]
    for table in (results_table(summaries), comparison_table(summaries), breakdown_table(summaries)):
        assert "exercises" in table.splitlines()[0]
        assert "| Calculator |" in table and "| WikiSearch |" in table and "| QA |" in table


def test_report_says_which_trex_form_and_why(tmp_path):
    import json

    folder = tmp_path / "m" / "k10" / "lama-trex"
    folder.mkdir(parents=True)
    (folder / "examples.jsonl").write_text(json.dumps({"correct": True, "called": False, "tool": None}) + "\n")
    summaries = write_report(tmp_path, n_resamples=10, plots=False)
    assert summaries[0]["exercises"] == "QA"
    md = (tmp_path / "table.md").read_text()
    assert "## Tasks" in md and "evidence sentences" in md and "does not say" in md
