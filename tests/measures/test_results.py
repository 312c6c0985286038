"""The headline's pooled row (issue 27, item 3): every task's pairs together, with Newcombe's
interval and the task-stratified paired bootstrap; intervals stay honest at 0 of n."""

import json

from toolformer_kit.measures.results import LABEL, goal_check, headline_rows


def write(folder, setting, task, correct):
    path = folder / LABEL / setting / task / "examples.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"id": str(i), "correct": c, "called": setting != "disabled"}) + "\n"
                            for i, c in enumerate(correct)))


def test_pooled_row_joins_the_tasks_and_keeps_honest_intervals(tmp_path):
    write(tmp_path, "k10", "svamp", [True] * 12 + [False] * 28)
    write(tmp_path, "disabled", "svamp", [True] * 8 + [False] * 32)
    write(tmp_path, "k10", "asdiv", [False] * 30)  # 0 of 30 either way: no discordant pair
    write(tmp_path, "disabled", "asdiv", [False] * 30)
    rows = headline_rows(tmp_path, ["svamp", "asdiv"], "k10", 400)
    assert [r["task"] for r in rows] == ["svamp", "asdiv", "pooled"]
    asdiv, pooled = rows[1]["all"], rows[2]["all"]
    assert asdiv["diff"] == 0.0 and asdiv["diff_ci95"][0] < 0 < asdiv["diff_ci95"][1]  # not [0, 0]
    assert asdiv["tools"]["ci95"][0] == 0.0 and asdiv["tools"]["ci95"][1] > 0.1  # 0 of 30 is not certainty
    assert pooled["n"] == 70 and abs(pooled["diff"] - 4 / 70) < 1e-12
    lo, hi = pooled["diff_ci95"]
    blo, bhi = pooled["diff_ci95_stratified_bootstrap"]
    assert lo < pooled["diff"] < hi and blo <= pooled["diff"] <= bhi
    assert "pooled" not in goal_check(rows, 1)["met_on"]  # the goal stays per task


def test_the_endpoint_opens_the_report_and_says_whether_it_was_met(tmp_path):
    from toolformer_kit.measures.results import endpoint_check
    from toolformer_kit.experiment.report import _endpoint_blocks

    write(tmp_path, "k10", "svamp", [True] * 12 + [False] * 28)
    write(tmp_path, "disabled", "svamp", [True] * 8 + [False] * 32)
    rows = headline_rows(tmp_path, ["svamp"], "k10", 400)
    recs = [{"calls": [{"reason": "" if i % 4 else "too_long"}]} for i in range(40)]
    e = endpoint_check(rows, recs, 5, 0.8)
    assert e["well_formed"]["rate"] == 0.75 and not e["well_formed_met"] and not e["met"]
    text = _endpoint_blocks(e)[1].text
    assert "**not met**" in text and "+10.0 points" in text and "75 % (30 of 40)" in text
    assert _endpoint_blocks(None) == []


def test_a_smoke_sized_pipeline_says_so_in_its_verdict(tmp_path):
    """issue 27, item 6: the main job's few C* calls check the stages; the verdict says where the evidence is."""
    from toolformer_kit.pipeline.report import pipeline_verdict

    write(tmp_path, "k10", "svamp", [True] * 3 + [False] * 7)
    write(tmp_path, "disabled", "svamp", [True] * 2 + [False] * 8)
    text = " ".join(b.text for b in pipeline_verdict(tmp_path, ["svamp"], 200, cstar=(9, 6)) if b.kind == "p")
    assert "smoke-sized: its C* holds 9 calls in 6 texts" in text and "results/math" in text
    text = " ".join(b.text for b in pipeline_verdict(tmp_path, ["svamp"], 200, cstar=(500, 300)) if b.kind == "p")
    assert "smoke-sized" not in text


def test_every_earlier_try_is_listed_beside_this_run(tmp_path):
    """issue 27, item 4: 'report every try, not only the best' — each earlier results.json is read back."""
    import json
    from toolformer_kit.experiment.report import _tries_blocks, earlier_tries

    e = {"met": True, "pooled_diff": 0.244, "pooled_ci95": [0.211, 0.277], "well_formed": {"rate": 1.0},
         "gain_met": True, "well_formed_met": True}
    (tmp_path / "try1").mkdir()
    (tmp_path / "try1" / "results.json").write_text(json.dumps({"endpoint": e, "command": "toolformer x", "commit": "c"}))
    tries = earlier_tries([str(tmp_path / "try1"), str(tmp_path / "gone")])
    assert tries[0]["endpoint"] == e and tries[1] == {"results": str(tmp_path / "gone"), "missing": True}
    now = dict(e, met=False, pooled_diff=0.03, pooled_ci95=[-0.01, 0.07])
    table = _tries_blocks({"tries": tries, "endpoint": now, "command": "toolformer y"}, "results/math")[1]
    assert [r[1] for r in table.rows] == ["met", "missing", "not met"]
    assert table.rows[0][2] == "+24.4 [+21.1, +27.7]" and table.rows[2][0] == "results/math (this run)"
    assert _tries_blocks({"tries": []}, "x") == []


def test_the_report_shows_which_checkpoint_each_run_kept_and_why():
    from toolformer_kit.experiment.report import _training_blocks

    res = {"training": {"tool-trained": {"best_step": 48, "evaluations": [[0, 9.68], [48, 4.72], [96, 9.58]],
                                         "counts": {"training sequences": 183, "dev source": "carved"}}}}
    table = _training_blocks(res)[2]
    assert table.rows == [("tool-trained", 183, 48, "0: 9.68, 48: 4.72, 96: 9.58", "carved")]
    assert _training_blocks({"training": {}}) == []
