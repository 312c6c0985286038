"""Pre-registered endpoints (issue 42, item 7): each line is checked against an evaluation's records,
a gain needs its interval above 0, and a line that names an unknown measure or task is refused."""

import json

import pytest

from toolformer_kit.config import ConfigError
from toolformer_kit.measures.endpoints import evaluate, parse_endpoint


def write(folder, setting, task, correct, tool=None, label="toolformer"):
    path = folder / label / setting / task / "examples.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    calls = [{"tool": tool}] if tool and setting != "disabled" else []
    path.write_text("".join(json.dumps({"id": str(i), "correct": c, "called": bool(calls), "calls": calls}) + "\n"
                            for i, c in enumerate(correct)))


def ppl(folder, label, task, value, n=100):
    path = folder / label / "perplexity" / f"{task}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"perplexity": value, "n_tokens": n}))


def test_every_endpoint_is_checked_from_the_records(tmp_path):
    write(tmp_path, "k10", "svamp", [True] * 30 + [False] * 10, "Calculator")
    write(tmp_path, "disabled", "svamp", [True] * 10 + [False] * 30)
    write(tmp_path, "k10", "dateset", [True] * 11 + [False] * 29, "QA")  # +2.5, wrong tool
    write(tmp_path, "disabled", "dateset", [True] * 10 + [False] * 30)
    ppl(tmp_path, "toolformer", "wikitext2", 21.0)
    ppl(tmp_path, "cc", "wikitext2", 20.0)
    lines = ["math: gain svamp >= 20", "dates: gain dateset >= 2", "math tool: right_tool svamp >= 80",
             "dates tool: right_tool dateset >= 80", "lm: ppl_ratio wikitext2 <= 1.05",
             "retrieval: gain@retrievable svamp >= 8"]
    rows = {r["name"]: r for r in evaluate(lines, tmp_path, "k10", {"svamp": "Calculator", "dateset": "Calendar"},
                                           n_resamples=200)}
    assert rows["math"]["met"] and rows["math"]["observed"] == pytest.approx(50.0)
    assert rows["math"]["ci95"][0] > 0 and rows["math"]["pairs"] == 40
    # +2.5 reaches 2 but its interval straddles 0: not met
    assert rows["dates"]["observed"] == pytest.approx(2.5) and not rows["dates"]["met"]
    assert rows["math tool"]["observed"] == 100.0 and rows["math tool"]["met"]
    assert rows["dates tool"]["observed"] == 0.0 and not rows["dates tool"]["met"]
    assert rows["lm"]["observed"] == pytest.approx(1.05) and rows["lm"]["met"]
    assert rows["retrieval"]["observed"] is None and not rows["retrieval"]["met"]  # no ceiling: unknown, not met


def test_the_retrievable_subset_restricts_the_pairs(tmp_path):
    write(tmp_path, "k10", "nq", [True] * 10 + [False] * 30, "QA")
    write(tmp_path, "disabled", "nq", [False] * 40)
    keep = {"nq": {str(i) for i in range(20)}}
    [row] = evaluate(["qa: gain@retrievable nq >= 8"], tmp_path, "k10", {"nq": "QA"}, keep, n_resamples=200)
    assert row["pairs"] == 20 and row["observed"] == pytest.approx(50.0) and row["met"]


def test_a_perplexity_not_measured_is_not_met(tmp_path):
    ppl(tmp_path, "toolformer", "wikitext2", 20.0)
    [row] = evaluate(["lm: ppl_ratio wikitext2 <= 1.05"], tmp_path, "k10", {})
    assert row["observed"] is None and row["per_task"] == {"wikitext2": None} and not row["met"]


@pytest.mark.parametrize("line, says", [("math gain svamp >= 20", "is not of the form"),
                                        ("math: gain gsm8k >= 20", "gsm8k not among the recipe's tasks"),
                                        ("math: rate svamp >= 20", "measure 'rate' is not one of")])
def test_a_bad_line_gets_one_error_naming_the_fix(line, says):
    with pytest.raises(ConfigError, match=says):
        parse_endpoint(line, ["svamp"])


def test_against_the_base_model_with_a_stated_lower_bound_a_non_inferiority_endpoint(tmp_path):
    write(tmp_path, "k10", "lama-trex", [i < 500 for i in range(1000)], "QA")
    write(tmp_path, "disabled", "lama-trex", [i < 250 for i in range(1000)])  # its own calls disabled: far below
    write(tmp_path, "disabled", "lama-trex", [i < 470 or 500 <= i < 520 for i in range(1000)], label="base")
    rows = evaluate(["lama: vs_base lama-trex >= 0, low > -3", "lama tight: vs_base lama-trex >= 0, low > 0",
                     "lama gain: gain lama-trex > 0"], tmp_path, "k10", {"lama-trex": "QA"}, n_resamples=200)
    lama, tight, gain = rows
    assert lama["pairs"] == 1000 and lama["observed"] == pytest.approx(1.0)  # 50 % against the base model's 49 %
    assert -3 < lama["ci95"][0] < 0 and lama["met"] and not tight["met"]
    assert gain["observed"] == pytest.approx(25.0) and gain["met"]  # against its own calls disabled
    assert lama["endpoint"] == "lama: vs_base lama-trex >= 0, low > -3"


def test_a_bound_on_a_measure_without_an_interval_is_refused():
    with pytest.raises(ConfigError, match="only a paired measure"):
        parse_endpoint("tool: right_tool svamp >= 80, low > 70")


@pytest.mark.parametrize("line", ["math: gain svamp,asdiv,mawps >= 20", "public@r: gain@retrievable webqs,nq >= 8",
                                  "lama: vs_base lama-trex,lama-squad >= 0, low > -3", "tool: right_tool svamp >= 80",
                                  "ppl: ppl_ratio wikitext <= 1.05"])
def test_text_parses_back_to_the_same_endpoint(line):
    # the report reads a row's kind (paired or not) back from its recorded text: the two must agree
    e = parse_endpoint(line)
    assert parse_endpoint(e.text()) == e
