"""`toolformer chaining` (issue 31, item 3): accuracy against the call budget per round, the chain
rate and the verdict, from synthetic eval records; the runner's plan with evaluation replaced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolformer_kit.commands import chaining as cmd
from toolformer_kit.config import ConfigError
from toolformer_kit.study import chaining as C

ONE = "( 3.0 + 2.0 )"
TWO = "( 25.0 - 5.0 ) / 4.0"


def _call(inp: str, result: str, reason: str = "") -> dict:
    return {"tool": "Calculator", "input": inp, "result": result, "reason": reason, "ok": not reason}


def _write(out: Path, name: str, setting: str, rows: list[dict]) -> None:
    d = out / "eval" / name / setting / "svamp"
    d.mkdir(parents=True, exist_ok=True)
    d.joinpath("examples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _rows(n: int, right_two: int, chain: bool) -> list[dict]:
    """n one-step problems (all right) and n two-step ones, ``right_two`` of them right; with
    ``chain`` the two-step answers call twice, the second call on the first's result."""
    rows = [{"id": f"a{i}", "correct": True, "meta": {"equation": ONE}, "output": "[Calculator(3 + 2) -> 5] 5",
             "calls": [_call("3 + 2", "5")]} for i in range(n)]
    calls = [_call("25 - 5", "20"), _call("20 / 4", "5")] if chain else [_call("25 - 5", "20")]
    rows += [{"id": f"b{i}", "correct": i < right_two, "meta": {"equation": TWO}, "calls": calls,
              "output": " ".join(f"[Calculator({c['input']}) -> {c['result']}]" for c in calls)} for i in range(n)]
    return rows


def test_chains_are_later_calls_on_earlier_results_and_a_repeated_call_is_not_one():
    rec = {"calls": [_call("25 - 5", "20"), _call("20 / 4", "5"), _call("20 / 4", None, "repeated")]}
    assert [(a["input"], b["input"]) for a, b in C.chains(rec)] == [("25 - 5", "20 / 4")]
    assert len(C.ran_calls(rec)) == 2  # the loop guard's empty close ran no tool
    assert not C.chains({"calls": [_call("3 + 2", "5"), _call("7 * 6", "42")]})
    assert C.in_subset({"meta": {"equation": TWO}}, "2+ operations") and not C.in_subset(
        {"meta": {"equation": ONE}}, "2+ operations") and C.in_subset({"meta": {}}, "all")


def test_the_report_pairs_each_budget_with_one_call_and_says_whether_chains_help(tmp_path):
    cfg = C.ChainingConfig(rounds=["round1=m1", "round2=m2"], tasks=["svamp"], out=str(tmp_path / "run"),
                           results=str(tmp_path / "res"), budgets=[3, 1])
    assert cfg.budgets == [1, 3]
    run = Path(cfg.out)
    for name in ("round1", "round2"):
        _write(run, name, "k10", _rows(40, 8, chain=False))
    repeats = _rows(40, 9, chain=False)  # round 1: more calls, no chains, no gain; half its two-step answers repeat
    for r in repeats[40:60]:
        r["calls"] = r["calls"] + [_call("25 - 5", None, "repeated")]
    _write(run, "round1", "k10+calls3", repeats)
    _write(run, "round2", "k10+calls3", _rows(40, 30, chain=True))  # round 2: chains, +22 of 40 on two-step
    folder = C.write_chaining(cfg, "toolformer chaining --rounds ...")
    res = json.loads((folder / "results.json").read_text())
    two = res["rounds"]["round2"]["3"]["2+ operations"]
    assert two["n"] == 40 and two["accuracy"] == 0.75 and two["chain_rate"] == 1.0 and two["chained_right"] == 30
    assert round(two["vs_one_call"]["diff"], 2) == 0.55 and two["vs_one_call"]["diff_ci95"][0] > 0.3
    assert res["rounds"]["round2"]["3"]["all"]["n"] == 80 and res["rounds"]["round2"]["3"]["all"]["calls_per_input"] == 1.5
    assert res["rounds"]["round1"]["3"]["2+ operations"]["chain_rate"] == 0.0
    assert two["repeat_rate"] == 0.0 and res["rounds"]["round1"]["3"]["2+ operations"]["repeat_rate"] == 0.5
    later = res["rounds"]["round2"]["3"]["2+ operations"]["vs_first_round"]  # 30 against round 1's 9 of 40
    assert later["n"] == 40 and round(later["diff"], 3) == 0.525 and later["diff_ci95"][0] > 0.3
    assert "vs_first_round" not in res["rounds"]["round1"]["3"]["2+ operations"]
    assert "round2 against round1 on problems of 2+ operations: +0.0 [" in res["verdict"]
    assert "+52.5 [" in res["verdict"].split("round2 against round1")[1]
    assert res["verdict"].startswith("round2: up to 3 calls beat one call on problems of 2+ operations (+55.0 points")
    assert "round1: no budget beats one call (best +2.5 points)" in res["verdict"]
    text = (folder / "report.md").read_text()
    assert text.index("## Verdict") < text.index("| round |") and "| round2 | 3 | 2+ operations | 40 |" in text
    assert (folder / "budget.png").stat().st_size > 1000 and "## Example chains from evaluation" in text
    assert all(e["round"] == "round2" for e in res["examples"]) and 0 < len(res["examples"]) <= 3
    for key in ("command", "seed", "commit", "settings", "interval"):
        assert key in res


def test_the_report_says_what_each_round_was_trained_on_and_the_chains_in_it(tmp_path):
    data = tmp_path / "r2.jsonl"
    chained = "Of 25, 5 left: [Calculator(25 - 5) -> 20] 20 in 4 groups, [Calculator(20 / 4) -> 5] 5 each."
    data.write_text(json.dumps({"text": chained}) + "\n" + json.dumps({"text": "It is [Calculator(3 + 2) -> 5] 5."}) + "\n")
    model = tmp_path / "m2"
    model.mkdir()
    (model / "train_summary.json").write_text(json.dumps({"best_step": 48, "config": {"data": str(data), "max_steps": 96}}))
    cfg = C.ChainingConfig(rounds=["round1=qwen2.5-coder-0.5b", f"round2={model}"], tasks=["svamp"],
                           out=str(tmp_path / "run"), results=str(tmp_path / "res"), budgets=[1])
    for name in ("round1", "round2"):
        _write(Path(cfg.out), name, "k10", _rows(4, 2, chain=False))
    res = json.loads((C.write_chaining(cfg, "cmd") / "results.json").read_text())
    later = C.ChainingConfig(rounds=cfg.rounds, tasks=["svamp"], out=cfg.out, results=str(tmp_path / "res2"),
                             budgets=[1], other_tries=[cfg.results, str(tmp_path / "nowhere")])
    tries = json.loads((C.write_chaining(later, "cmd2") / "results.json").read_text())["tries"]
    assert tries[0]["command"] == "cmd" and tries[0]["verdict"] == res["verdict"] and tries[1]["missing"]
    assert "## Other tries at this measurement" in (tmp_path / "res2" / "report.md").read_text()
    assert res["training"]["round1"] == {}  # an embedded model: no summary, nothing claimed
    t = res["training"]["round2"]
    assert (t["texts"], t["calls"], t["texts_with_chain"], t["chain_pairs"], t["best_step"]) == (2, 3, 1, 1, 48)
    text = (tmp_path / "res" / "report.md").read_text()
    assert "## What each round's model was fine-tuned on" in text and "48 of 96" in text
    assert "[round2 training text] [Calculator(25 - 5) -> 20] 20 in 4 groups, [Calculator(20 / 4) -> 5]" in text


def test_typed_inputs_are_reported_beside_the_unconstrained_run_never_instead(tmp_path):
    cfg = C.ChainingConfig(rounds=["round1=m1"], tasks=["svamp"], out=str(tmp_path / "run"),
                           results=str(tmp_path / "res"), budgets=[1, 2], typed=True)
    run = Path(cfg.out)
    _write(run, "round1", "k10", _rows(10, 2, chain=False))
    _write(run, "round1", "k10+calls2", _rows(10, 3, chain=False))
    _write(run, "round1", "k10+calls2+typed", _rows(10, 7, chain=True))
    res = json.loads((C.write_chaining(cfg, "cmd") / "results.json").read_text())
    assert sorted(res["rounds"]["round1"]) == ["1", "2"]  # the typed run is not a budget of its own
    typed = res["typed"]["round1"]["2"]["2+ operations"]
    assert typed["n"] == 10 and round(typed["vs_unconstrained"]["diff"], 2) == 0.4 and typed["chain_rate"] == 1.0
    text = (tmp_path / "res" / "report.md").read_text()
    assert text.index("| round1 | 2 | 2+ operations | 10 |") < text.index("## Typed inputs, beside the unconstrained decoding")


def test_the_runner_evaluates_every_round_under_every_budget_then_reports(tmp_path, monkeypatch):
    from toolformer_kit.pipeline import stages

    seen = []

    def evaluate(ecfg, runs, tasks, data_dir, tools, info=None):
        for name, model, settings in runs:
            seen.append((name, model, [s.name for s in settings], [t.name for t in tasks], sorted(tools)))
            for s in settings:
                _write(Path(ecfg.out).parent, name, s.name, _rows(4, 2, chain=s.max_calls > 1))
        return Path(ecfg.out)

    monkeypatch.setattr(stages, "evaluate", evaluate)
    rc = cmd.main(["--rounds", "r1=runs/a,r2=runs/b", "--tasks", "svamp", "--budgets", "1,2",
                   "--out", str(tmp_path / "run"), "--results", str(tmp_path / "res")])
    assert rc == 0
    assert seen == [("r1", "runs/a", ["k10", "k10+calls2"], ["svamp"], ["Calculator"]),
                    ("r2", "runs/b", ["k10", "k10+calls2"], ["svamp"], ["Calculator"])]
    assert json.loads((tmp_path / "res" / "results.json").read_text())["rounds"]["r2"]["2"]["all"]["chain_rate"] == 0.5


@pytest.mark.parametrize("flags, match", [
    (["--rounds", "round1"], "must look like NAME=FOLDER"),
    (["--rounds", "r=x", "--budgets", "2,3"], "must include 1"),
    ([], "names no model"),
])
def test_bad_settings_get_one_clear_error(tmp_path, capsys, flags, match):
    assert cmd.main(flags + ["--out", str(tmp_path / "o"), "--results", str(tmp_path / "r")]) != 0
    assert match in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_the_report_states_the_command_from_the_settings(tmp_path, monkeypatch):
    from toolformer_kit.pipeline import stages

    monkeypatch.setattr(stages, "evaluate", lambda ecfg, runs, *a, **k: Path(ecfg.out))
    assert cmd.main(["--rounds", "r1=runs/a", "--eval-limit", "50", "--out", str(tmp_path / "o"),
                     "--results", str(tmp_path / "r")]) == 0
    res = json.loads((tmp_path / "r" / "results.json").read_text())
    assert res["command"] == f"toolformer chaining --rounds r1=runs/a --eval-limit 50 --out {tmp_path / 'o'} --results {tmp_path / 'r'}"
    assert res["verdict"] == "r1: nothing is evaluated yet."


@pytest.mark.slow
def test_a_real_model_answers_under_every_budget_end_to_end(tmp_path):
    """The real harness and decoder, the embedded Qwen as a stand-in for a round's model (it opens
    no call without fine-tuning: the point is that every budget runs and is read back)."""
    assert cmd.main(["--rounds", "base=qwen2.5-coder-0.5b", "--budgets", "1,2", "--tasks", "svamp",
                     "--eval-limit", "4", "--out", str(tmp_path / "o"), "--results", str(tmp_path / "r")]) == 0
    res = json.loads((tmp_path / "r" / "results.json").read_text())
    assert [res["rounds"]["base"][b]["all"]["n"] for b in ("1", "2")] == [4, 4]
    assert (tmp_path / "o" / "eval" / "base" / "k10+calls2" / "svamp" / "examples.jsonl").is_file()
