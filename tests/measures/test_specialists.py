"""Against the specialists (issue 42, item 6): the one model's gains beside the committed
single-family models', task by task, with an unpaired interval for the difference."""

import json

import pytest

from toolformer_kit.measures.specialists import beside_specialists, difference


def cell(diff, lo, hi, n):
    return {"diff": diff, "diff_ci95": [lo, hi], "n": n}


def specialist(tmp_path, name, subset, rows):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps({"settings": {"eval_limit": 300, "eval_subset": subset},
                                                     "headline": rows}))
    return str(folder)


def test_each_task_is_set_beside_its_specialist_and_the_retrievable_one_beside_its_subset(tmp_path):
    math = specialist(tmp_path, "math", None, [{"task": "svamp", "all": cell(0.25, 0.19, 0.31, 296)},
                                               {"task": "pooled", "pooled": True, "all": cell(0.26, 0.2, 0.3, 896)}])
    search = specialist(tmp_path, "search", "retrievable", [{"task": "nq", "all": cell(0.10, 0.02, 0.18, 79),
                                                             "retrievable": cell(0.10, 0.02, 0.18, 79)}])
    ours = [{"task": "svamp", "all": cell(0.20, 0.14, 0.26, 300)},
            {"task": "nq", "all": cell(0.01, -0.02, 0.04, 300), "retrievable": cell(0.05, -0.05, 0.15, 21)},
            {"task": "pooled", "pooled": True, "all": cell(0.1, 0.0, 0.2, 600)}]
    rows = beside_specialists(ours, {"eval_limit": 300, "eval_subset": "all"},
                              [math, search, str(tmp_path / "absent")])
    svamp, nq, absent = rows
    assert (svamp["task"], svamp["ours_gain"], svamp["specialist_gain"]) == ("svamp", pytest.approx(20.0), 25.0)
    assert svamp["difference"] == pytest.approx(-5.0) and svamp["difference_ci95"][0] < -5 < svamp["difference_ci95"][1]
    assert nq["ours_n"] == 21 and nq["ours_gain"] == pytest.approx(5.0)  # the retrievable row, as the specialist's
    assert not nq["same_examples"] and absent == {"specialist": str(tmp_path / "absent"), "missing": True}


def test_the_difference_of_two_independent_gains_widens_in_quadrature():
    d, ci = difference((10.0, [7.0, 13.0], 100), (10.0, [6.0, 14.0], 100))
    assert d == 0.0 and ci == [-5.0, 5.0]
    assert difference((None, None, 0), (1.0, [0.0, 2.0], 9)) == (None, None)


def test_pooled_rows_are_compared_only_over_the_same_tasks(tmp_path):
    folder = tmp_path / "math"
    folder.mkdir()
    pooled = {"task": "pooled", "pooled": True, "all": cell(0.26, 0.22, 0.30, 896)}
    (folder / "results.json").write_text(json.dumps({"settings": {"eval_limit": 300, "tasks": ["svamp", "asdiv"]},
                                                     "headline": [pooled]}))
    ours = [{"task": "pooled", "pooled": True, "all": cell(0.24, 0.20, 0.28, 896)}]
    (row,) = beside_specialists(ours, {"eval_limit": 300, "tasks": ["asdiv", "svamp"]}, [str(folder)])
    assert row["task"] == "pooled" and row["difference"] == pytest.approx(-2.0) and row["same_examples"]
    assert beside_specialists(ours, {"eval_limit": 300, "tasks": ["svamp", "asdiv", "mawps"]}, [str(folder)]) == []
