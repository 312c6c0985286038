"""The paper's metrics on hand-written predictions (§4.2): first number, five-word window, aliases."""

import pytest

from toolformer_kit.eval import metrics as M
from toolformer_kit.eval.tasks import Example, get_task


@pytest.mark.parametrize("text, expected", [
    (" 8 apples.", 8.0),
    (" 5 + 3 = 8, so she has 8 apples.", 8.0),          # an equation: the number after "="
    (" 12 / 4 = 3", 3.0),
    (" 3 * (4 + 2) = 18", 18.0),
    (" 7-2=5", 5.0),                                    # glued minus is an operator, not a sign
    (" 8. Then 2 + 2 = 4.", 8.0),                       # a later, unrelated equation does not count
    (" = 42", 42.0),
    (" $1,250.00 in total", 1250.0),
    (" -3.5 degrees", -3.5),
    (" four.", 4.0),                                    # no numeral at all: the number word
    (" one of them gets 5", 5.0),                       # a numeral beats an earlier word
    (" Two boxes hold 3 pens each, 6 in all.", 3.0),    # the first numeral, words skipped
    (" one of them gets five", 1.0),                    # words only: the first word
    (" I do not know.", None),
    (" the 3rd one", 3.0),
])
def test_first_number(text, expected):
    assert M.first_number(text) == expected


@pytest.mark.parametrize("prediction, answer, correct", [
    (" 8", "8", True),
    (" 8.0 apples", "8", True),
    (" 5 + 3 = 8", "8", True),
    (" 5 + 3 = 9", "8", False),
    (" 1,000", "1000", True),
    (" 0.5", "0.5", True),
    (" 3 apples and 8 pears", "8", False),              # only the first number counts
    (" one of them gets 5", "5", True),                 # "one" is not the first number
    (" one of them gets 5", "1", False),
])
def test_math_metric(prediction, answer, correct):
    assert get_task("svamp").score(prediction, Example("x", "", (answer,))) is correct


@pytest.mark.parametrize("prediction, correct", [
    (" Paris, France.", True),
    (" the capital city Paris.", True),                 # 5th word
    (" a lovely old capital city, Paris.", False),      # 6th word: outside the window
    (" PARIS!", True),                                  # case and punctuation
    (" Parisian food", False),                          # whole words only
])
def test_lama_five_word_window(prediction, correct):
    assert get_task("lama-trex").score(prediction, Example("x", "", ("Paris",))) is correct


def test_answer_aliases_and_articles():
    aliases = ("Sir Henry Campbell-Bannerman", "Campbell-Bannerman", "Henry Campbell Bannerman")
    qa = get_task("triviaqa")
    assert qa.score(" It was campbell bannerman who followed.", Example("x", "", aliases))
    assert not qa.score(" Henry Asquith", Example("x", "", aliases))
    assert qa.score(" The Beatles", Example("x", "", ("Beatles",)))
    assert qa.score(" Beatles", Example("x", "", ("The Beatles",)))


def test_qa_twenty_word_window_and_mlqa_ten():
    words = " ".join(f"w{i}" for i in range(15)) + " Lisbon"
    ex = Example("x", "", ("Lisbon",))
    assert get_task("nq").score(words, ex)            # 16th word < 20
    assert not get_task("mlqa-de").score(words, ex)   # > 10 words


@pytest.mark.parametrize("raw, norm", [
    ("The Answer: 1,000,000!", "answer 1000000"),
    ("An apple a day", "apple day"),
    ("12.50 dollars", "12.5 dollars"),
    ("Café   Müller", "cafe muller"),
    ("U.S. Navy", "us navy"),
    ("Juventus F.C.", "juventus fc"),
    ("3.0", "3"),
])
def test_normalize(raw, norm):
    assert M.normalize(raw) == norm


def test_bootstrap_interval_contains_mean_and_shrinks_with_n():
    small = [1, 0] * 10
    large = [1, 0] * 500
    lo_s, hi_s = M.bootstrap_ci(small, seed=1)
    lo_l, hi_l = M.bootstrap_ci(large, seed=1)
    assert lo_s <= 0.5 <= hi_s and lo_l <= 0.5 <= hi_l
    assert hi_l - lo_l < (hi_s - lo_s) / 3
    assert M.bootstrap_ci([]) is None and M.mean([]) is None
