"""The worked examples the pipeline prints and reports (issue 43): calls that ran, right and wrong,
the paired answer with calls disabled, and the command to try the model."""

import json

from toolformer_kit.commands.pipeline import closing_text
from toolformer_kit.pipeline import examples


def _record(task, i, prompt, correct, call_ok=True, output=None):
    return {"id": f"{task}-{i}", "task": task, "prompt": prompt, "answers": ["12"], "correct": correct,
            "called": True, "call_ok": call_ok, "prediction": "12" if correct else "7",
            "output": output or f" [Calculator(3 * 4) -> 12] {'12' if correct else '7'} apples."}


def _write(folder, setting, task, records):
    path = folder / "toolformer" / setting / task / "examples.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _eval_folder(tmp_path):
    _write(tmp_path, "k10", "svamp", [_record("svamp", 0, "A long problem, long indeed.\nThe answer is", True),
                                      _record("svamp", 1, "Short.\nThe answer is", True),
                                      _record("svamp", 2, "Broken call.\nThe answer is", True, call_ok=False),
                                      _record("svamp", 3, "Wrong one.\nThe answer is", False)])
    _write(tmp_path, "k10", "asdiv", [_record("asdiv", 0, "Asdiv problem.\nThe answer is", True)])
    for task, n in (("svamp", 4), ("asdiv", 1)):
        _write(tmp_path, "disabled", task, [dict(_record(task, i, "p", False), prediction=f"off-{task}-{i}",
                                                 called=False, call_ok=False) for i in range(n)])
    return tmp_path


def test_examples_show_calls_that_ran_right_answers_first_and_one_wrong(tmp_path):
    picked = examples.pick(_eval_folder(tmp_path), ["svamp", "asdiv"], 3)
    assert [r["id"] for r in picked] == ["svamp-1", "asdiv-0", "svamp-3"]  # shortest right per task, then wrong
    assert [r["disabled"] for r in picked] == ["off-svamp-1", "off-asdiv-0", "off-svamp-3"]
    assert examples.pick(tmp_path, ["svamp", "asdiv"], 0) == []
    assert examples.pick(tmp_path / "nothing", ["svamp"], 3) == []
    text = examples.as_text(picked)
    assert "[1] svamp · right (gold 12)" in text and "[3] svamp · wrong (gold 12)" in text
    assert "generated: [Calculator(3 * 4) -> 12] 12 apples." in text
    assert "with calls disabled it answered: off-asdiv-0" in text
    assert "Broken call" not in text  # a call that did not run is no worked example


def test_the_report_section_and_the_closing_text_give_the_try_command(tmp_path):
    picked = examples.pick(_eval_folder(tmp_path / "eval"), ["svamp"], 2)
    blocks = examples.blocks(picked, "runs/default/train-tools")
    assert blocks[0].text.startswith("Worked examples") and blocks[-1].text.endswith(
        "toolformer generate --model runs/default/train-tools --tools Calculator "
        "$'A baker made 238 cupcakes and packed them in boxes of 14. How many boxes did she fill?\\nThe answer is'`")
    assert examples.blocks([], "m")[1].text.startswith("No answer with a call that ran")
    (tmp_path / "examples.txt").write_text(examples.as_text(picked) + "\n", encoding="utf-8")
    shown = closing_text(tmp_path)
    assert "[1] svamp · right" in shown and "[2] svamp · wrong" in shown
    assert f"toolformer generate --model {tmp_path / 'train-tools'} --tools Calculator $'" in shown
    assert "(none: no call ran)" in closing_text(tmp_path / "empty")
