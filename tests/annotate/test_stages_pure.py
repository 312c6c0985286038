import json
import math
import random

import numpy as np
import pytest
from hypothesis import given, strategies as st

from toolformer_kit.annotate import records as R
from toolformer_kit.annotate.merge import annotate_text, best_per_position, build_corpus, cap_per_tool
from toolformer_kit.annotate.document import Document
from toolformer_kit.annotate.positions import char_offset, select_positions, token_at
from toolformer_kit.annotate.prefilters import calculator_keep, is_result_of_two, mt_keep, mt_leaks, numbers
from toolformer_kit.annotate.sample import parse_sample
from toolformer_kit.calls import find_calls, strip_calls


@given(st.lists(st.floats(0, 1), max_size=40), st.floats(0, 1), st.integers(0, 8))
def test_select_positions_keeps_the_top_k_above_threshold(probs, tau, k):
    chosen = select_positions(probs, tau, k)
    assert chosen == sorted(chosen) and len(chosen) <= k
    assert all(probs[i] > tau for i in chosen)
    above = [i for i, p in enumerate(probs) if p > tau]
    assert len(chosen) == min(k, len(above))
    if chosen:
        worst = min(probs[i] for i in chosen)
        assert all(probs[i] <= worst for i in above if i not in chosen)


def test_offsets_round_trip_between_tokenizations():
    starts = [0, 4, 10, 11, 13]  # " It", " costs", " ", "5", " dollars" of " It costs 5 dollars"
    for i, s in enumerate(starts):
        assert token_at(starts, char_offset(s)) <= i
    assert token_at(starts, char_offset(10)) == 2


@pytest.mark.parametrize("text,closed,status", [
    ("Calculator(400 / 1400)]", True, R.OK), ("Calculator((2 + 3) * 4)]", True, R.OK),
    ("Calculator(400 / 1400", False, R.UNCLOSED), ("WikiSearch(Paris)]", True, R.OTHER_TOOL),
    ("400 / 1400]", True, R.UNPARSABLE), ("Calculator(1 + (2)]", True, R.UNPARSABLE),
])
def test_parse_sample(text, closed, status):
    assert parse_sample(text, closed, "Calculator")[0] == status


def test_tool_without_input_gets_empty_input():
    assert parse_sample("Calendar(tomorrow)]", True, "Calendar", takes_input=False) == (R.OK, "")


def test_calculator_prefilter():
    assert calculator_keep("She had 16 eggs, ate 3 and sold the other 13 at the market.")
    assert calculator_keep("The score equals 12 points.")
    assert not calculator_keep("Three apples and two pears.")
    # Texts with >= 3 numbers but no relation are kept at a seeded ~1%.
    plain = [f"In {1900 + i} there were {7 * i + 11} ships and {1000 + 13 * i} sailors and {3 * i + 501} ports." for i in range(600)]
    plain = [t for t in plain if not is_result_of_two([v for _, v in numbers(t)])]
    assert len(plain) > 450
    rate = sum(calculator_keep(t, key=str(i), seed=3) for i, t in enumerate(plain)) / len(plain)
    assert 0.002 < rate < 0.03
    assert [calculator_keep(t, key=str(i), seed=3) for i, t in enumerate(plain[:300])] == \
           [calculator_keep(t, key=str(i), seed=3) for i, t in enumerate(plain[:300])]


def test_mt_prefilter_and_leak_rule():
    mixed = ("The river flows north through the old town and into the sea. "
             "El río atraviesa la ciudad vieja y desemboca en el mar del norte, donde los pescadores "
             "trabajan cada mañana desde hace siglos con sus barcos pequeños. "
             "Boats carry goods along it every day of the year, as they have for centuries.")
    assert mt_keep(mixed)
    assert not mt_keep("El río atraviesa la ciudad vieja y desemboca en el mar del norte cada día del año.")
    at = mixed.index("El río")
    assert mt_leaks(mixed, at, "El río atraviesa la ciudad vieja")
    assert not mt_leaks(mixed, mixed.index("Boats"), "El río atraviesa la ciudad vieja")


def test_candidate_json_round_trip_and_non_finite_losses():
    c = R.Candidate("d", "QA", 4, 12, 0.25, "QA(who?)]", sample_index=2, input="who?", result="Ann",
                    L_eps=1.5, L_call_noresult=float("inf"), L_plus=0.2, score=1.3, kept=True)
    back = R.Candidate.from_json(c.to_json())
    assert back.L_call_noresult is None and back.score == 1.3 and back.kept
    with pytest.raises(ValueError, match="unknown field"):
        R.Candidate.from_json(json.dumps({**json.loads(c.to_json()), "bogus": 1}))


def _kept(doc, off, tool="Calculator", score=1.0, inp="1 + 1", res="2"):
    return R.Candidate(doc, tool, 0, off, 0.5, "", input=inp, result=res, score=score, kept=True,
                       L_plus=0.1, L_minus=0.1 + score)


def test_merge_inserts_several_calls_and_keeps_the_best_per_position():
    text = "She had 16 eggs, ate 3 and sold 13 for 26 dollars."
    calls = [_kept("d", text.index(" 13"), inp="16 - 3", res="13", score=1.5),
             _kept("d", text.index(" 26"), inp="13 * 2", res="26", score=2.0),
             _kept("d", text.index(" 26"), inp="13 + 13", res="26", score=1.0)]
    out = build_corpus([Document("d", text), Document("e", "No calls here.")], calls, cap=10, seed=0)
    assert len(out) == 1 and out[0]["id"] == "d"
    assert [c.call.input for c in find_calls(out[0]["text"])] == ["16 - 3", "13 * 2"]
    assert strip_calls(out[0]["text"]) == text and out[0]["original"] == text


def test_cap_is_seeded_and_per_tool():
    calls = [_kept(f"d{i}", 0) for i in range(50)] + [_kept(f"d{i}", 5, tool="QA") for i in range(3)]
    a, b = cap_per_tool(calls, 10, seed=1), cap_per_tool(calls, 10, seed=1)
    assert a == b and sum(c.tool == "Calculator" for c in a) == 10 and sum(c.tool == "QA" for c in a) == 3
    assert cap_per_tool(calls, 10, seed=2) != a


def test_best_per_position_breaks_ties_deterministically():
    a, b = _kept("d", 3, inp="1 + 1"), _kept("d", 3, inp="2 * 1")
    b.sample_index = 1
    assert best_per_position([b, a]) == best_per_position([a, b]) == [a]
    a.char_offset = 1
    assert annotate_text("x 2", [a]) == "x [Calculator(1 + 1) -> 2] 2"
