"""Which tool, where (issue 42, item 5): the task x tool table and the paper's numbers beside ours."""

from toolformer_kit.measures.which_tool import PAPER, beside_paper, tool_use_rows


def rec(correct, *tools):
    return {"correct": correct, "calls": [{"tool": t} for t in tools]}


def test_each_task_says_which_tools_it_called_and_what_the_choice_was_worth():
    records = {"svamp": [rec(True, "Calculator"), rec(True, "Calculator"), rec(False, "QA"), rec(False)],
               "dateset": [rec(True, "Calendar", "QA"), rec(False, "QA"), rec(False, "QA")],
               "empty": []}
    rows = tool_use_rows(records, {"svamp": "Calculator", "dateset": "Calendar"}, ["Calculator", "Calendar", "QA"])
    assert [r["task"] for r in rows] == ["svamp", "dateset"]  # a task with no records has no row
    svamp, dates = rows
    assert svamp["called"] == {"Calculator": 0.5, "Calendar": 0.0, "QA": 0.25} and svamp["none"] == 0.25
    assert svamp["right_tool_rate"] == round(2 / 3, 4) and svamp["accuracy_right_tool"] == 1.0
    assert svamp["accuracy_other_tool"] == 0.0 and svamp["accuracy_no_call"] == 0.0
    # an input calling two tools counts for both; the rate is over calls (1 of 4 named the Calendar)
    assert dates["called"]["QA"] == 1.0 and dates["called"]["Calendar"] == round(1 / 3, 4)
    assert dates["right_tool_rate"] == 0.25 and dates["accuracy_no_call"] is None


def test_ours_is_marked_where_it_beats_the_paper_and_perplexity_counts_lower_as_better():
    rows = {r["task"]: r for r in beside_paper({
        "svamp": {"base": 1.0, "cc": 1.0, "disabled": 1.0, "tools": 30.0},
        "wikitext2": {"base": 9.0, "cc": 12.0, "disabled": 11.0, "tools": None},
        "wiki-cloze": {"base": 10.0, "cc": 10.0, "disabled": 10.0, "tools": 20.0}})}
    assert rows["svamp"]["ours_higher"] == ["tools"] and rows["svamp"]["paper"]["tools"] == PAPER["svamp"]["tools"]
    assert rows["wikitext2"]["ours_higher"] == ["base"]
    assert rows["wiki-cloze"]["ours_higher"] == [] and rows["wiki-cloze"]["paper_tool_rate"] is None
