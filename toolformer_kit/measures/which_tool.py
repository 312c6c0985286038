"""Which tool, where (issue 42, item 5): the paper's own analysis of one model given every tool.

The paper's claim is that one model, fine-tuned once on every tool's calls, picks the tool a task
needs by itself: on GPT-J it called QA on 98.1 % of LAMA, the Calculator on 97.9 % of the maths
sets, WikiSearch on 99.3 % of the QA sets, MT on 63.8-94.9 % of MLQA and the Calendar on 54.8 % of
DATESET. So, per task, from the tool-trained model's records with tools on:

* the share of inputs with a call to each tool (an input may call two), and with none;
* the **right-tool rate**: of the calls opened, the share that name the task's own tool
  (:attr:`~toolformer_kit.eval.tasks.base.Task.exercises`);
* accuracy on the inputs that called the right tool, on those that called only others, and on
  those that called nothing: does the choice of tool matter for the answer?

:data:`PAPER` holds the paper's GPT-J numbers for the same tasks (Tables 3-8, as the readings in
``shared/paper`` give them), so a report can set them beside ours; None where the paper gives none.
"""

from __future__ import annotations

from typing import Mapping, Sequence

# task → the paper's GPT-J 6.7B columns (accuracy %, perplexity for wikitext2) and how often its
# Toolformer called the task's tool (%). Columns: GPT-J, GPT-J + CC, Toolformer (disabled), Toolformer.
PAPER: dict[str, dict] = {
    "lama-squad": {"base": 17.8, "cc": 19.2, "disabled": 22.1, "tools": 33.8, "tool_rate": 98.1},
    "lama-google-re": {"base": 4.9, "cc": 5.6, "disabled": 6.3, "tools": 11.5, "tool_rate": 98.1},
    "lama-trex": {"base": 31.9, "cc": 33.2, "disabled": 34.9, "tools": 53.5, "tool_rate": 98.1},
    "asdiv": {"base": 7.5, "cc": 9.6, "disabled": 14.8, "tools": 40.4, "tool_rate": 97.9},
    "svamp": {"base": 5.2, "cc": 5.0, "disabled": 6.3, "tools": 29.4, "tool_rate": 97.9},
    "mawps": {"base": 9.9, "cc": 9.3, "disabled": 15.0, "tools": 44.0, "tool_rate": 97.9},
    "webquestions": {"base": 18.5, "cc": 18.4, "disabled": 18.9, "tools": 26.3, "tool_rate": 99.3},
    "nq": {"base": 12.8, "cc": 12.2, "disabled": 12.6, "tools": 17.7, "tool_rate": 99.3},
    "triviaqa": {"base": 43.9, "cc": 45.6, "disabled": 46.7, "tools": 48.8, "tool_rate": 99.3},
    "mlqa-es": {"base": 15.2, "cc": 15.7, "disabled": None, "tools": 20.6, "tool_rate": 94.9},
    "mlqa-de": {"base": 16.5, "cc": 14.9, "disabled": None, "tools": 13.5, "tool_rate": 82.1},
    "mlqa-hi": {"base": 1.3, "cc": 0.5, "disabled": None, "tools": 1.4, "tool_rate": 7.3},
    "mlqa-vi": {"base": 8.2, "cc": None, "disabled": None, "tools": 10.6, "tool_rate": 78.3},
    "mlqa-zh": {"base": 18.2, "cc": 13.7, "disabled": None, "tools": 16.8, "tool_rate": 63.8},
    "mlqa-ar": {"base": 8.2, "cc": 4.6, "disabled": None, "tools": 3.7, "tool_rate": 68.5},
    "dateset": {"base": 3.9, "cc": 2.9, "disabled": 5.9, "tools": 27.3, "tool_rate": 54.8},
    "templama": {"base": 13.7, "cc": 12.9, "disabled": 12.7, "tools": 16.3, "tool_rate": 0.2},
    "wikitext2": {"base": 9.9, "cc": 10.3, "disabled": 10.3, "tools": None, "tool_rate": None},
}


def _tools_called(record: Mapping) -> set[str]:
    return {c.get("tool") for c in record.get("calls") or [] if c.get("tool")}


def right_tool_calls(records: Sequence[Mapping], right: str) -> tuple[int, int]:
    """(calls naming ``right``, calls opened) over the records: the one count behind the right-tool
    rate of this table and of a ``right_tool`` endpoint.

    >>> right_tool_calls([{"calls": [{"tool": "QA"}, {"tool": "Calculator"}]}, {"calls": []}], "Calculator")
    (1, 2)
    """
    tools = [c.get("tool") for r in records for c in r.get("calls") or []]
    return sum(t == right for t in tools), len(tools)


def tool_use_row(task: str, records: Sequence[Mapping], right: str, tools: Sequence[str]) -> dict:
    """One task's row: inputs, the share calling each tool and none, the right-tool rate over
    calls, and accuracy by what was called (None where no input falls in the group).

    >>> recs = [{"correct": True, "calls": [{"tool": "Calculator"}]},
    ...         {"correct": False, "calls": [{"tool": "QA"}]},
    ...         {"correct": False, "calls": []}, {"correct": True, "calls": [{"tool": "Calculator"}]}]
    >>> r = tool_use_row("svamp", recs, "Calculator", ["Calculator", "QA"])
    >>> r["called"], r["none"], r["right_tool_rate"], r["accuracy_right_tool"], r["accuracy_other_tool"]
    ({'Calculator': 0.5, 'QA': 0.25}, 0.25, 0.6667, 1.0, 0.0)
    """
    n = len(records)
    called = [_tools_called(r) for r in records]
    right_calls, calls = right_tool_calls(records, right)

    def acc(group):
        return round(sum(bool(r["correct"]) for r in group) / len(group), 4) if group else None

    return {"task": task, "n": n, "tool": right,
            "called": {t: round(sum(t in c for c in called) / n, 4) if n else 0.0 for t in tools},
            "none": round(sum(not c for c in called) / n, 4) if n else 0.0,
            "calls": calls,
            "right_tool_rate": round(right_calls / calls, 4) if calls else None,
            "accuracy_right_tool": acc([r for r, c in zip(records, called) if right in c]),
            "accuracy_other_tool": acc([r for r, c in zip(records, called) if c and right not in c]),
            "accuracy_no_call": acc([r for r, c in zip(records, called) if not c])}


def tool_use_rows(records_by_task: Mapping[str, Sequence[Mapping]], tool_of: Mapping[str, str],
                  tools: Sequence[str]) -> list[dict]:
    """:func:`tool_use_row` for every task with records, in the given order."""
    return [tool_use_row(task, recs, tool_of.get(task, ""), tools) for task, recs in records_by_task.items() if recs]


def beside_paper(ours: Mapping[str, Mapping[str, float | None]]) -> list[dict]:
    """Per task, our four columns (in %, or perplexity) beside the paper's GPT-J ones, and the
    columns where ours is higher (lower for perplexity). ``ours[task][column]`` for column in
    base, cc, disabled, tools.

    >>> beside_paper({"svamp": {"base": 10.0, "cc": 4.0, "disabled": 20.0, "tools": 45.0}})[0]["ours_higher"]
    ['base', 'disabled', 'tools']
    """
    out = []
    for task, cols in ours.items():
        paper = PAPER.get(task, {})
        lower_is_better = task == "wikitext2"
        higher = [c for c in ("base", "cc", "disabled", "tools")
                  if cols.get(c) is not None and paper.get(c) is not None
                  and (cols[c] < paper[c] if lower_is_better else cols[c] > paper[c])]
        out.append({"task": task, "ours": dict(cols), "paper": {c: paper.get(c) for c in ("base", "cc", "disabled", "tools")},
                    "paper_tool_rate": paper.get("tool_rate"), "ours_higher": higher})
    return out
