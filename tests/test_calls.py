import pytest
from hypothesis import given, settings, strategies as st

from toolformer_kit.calls import (
    ToolCall, balanced, find_calls, format_call, insert_call, normalize_input, normalize_result,
    parse_sampled, strip_calls,
)

names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True)
# Inputs may hold anything printable (brackets, "->", non-ASCII) as long as parentheses balance.
raw_inputs = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=40)
inputs = raw_inputs.map(normalize_input).filter(balanced)
results = st.one_of(st.none(), st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=40).map(normalize_result))
plain = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="["), max_size=40)


@settings(max_examples=500)
@given(names, inputs, results)
def test_format_then_parse_round_trips(name, text, result):
    call = ToolCall(name, text, result)
    written = format_call(call)
    (parsed,) = find_calls(written)
    assert parsed.call == call and parsed.closed
    assert written[parsed.start:parsed.end] == written.strip()


@settings(max_examples=300)
@given(names, inputs, results, plain, plain)
def test_call_found_inside_surrounding_text(name, text, result, left, right):
    call = ToolCall(name, text, result)
    doc = left + format_call(call) + right
    found = [p.call for p in find_calls(doc)]
    assert found and found[0] == call


@settings(max_examples=300)
@given(names, inputs, st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30).map(normalize_result))
def test_strip_calls_restores_text(name, text, result):
    doc = "Before" + format_call(ToolCall(name, text, result)) + " after."
    assert strip_calls(doc) == "Before after."


@pytest.mark.parametrize("text, expected", [
    (" [Calculator((2 + 3) * 4) -> 20]", ToolCall("Calculator", "(2 + 3) * 4", "20")),
    (" [WikiSearch(f(x) -> y)]", ToolCall("WikiSearch", "f(x) -> y")),  # "->" inside the input
    (" [WikiSearch(a ] b)]", ToolCall("WikiSearch", "a ] b")),  # a bracket inside the input
    (" [MT(Wie spät ist es?) -> What time is it?]", ToolCall("MT", "Wie spät ist es?", "What time is it?")),
    (" [Calendar() -> Today is Monday, November 30, 2026.]", ToolCall("Calendar", "", "Today is Monday, November 30, 2026.")),
    (" [QA(Who wrote Faust?) -> ]", ToolCall("QA", "Who wrote Faust?", "")),
    (" [Calculator(3 * (4 + 5)]", ToolCall("Calculator", "3 * (4 + 5")),  # a model left "(" open
])
def test_parse_cases(text, expected):
    (parsed,) = find_calls(text)
    assert parsed.call == expected and parsed.closed


def test_unclosed_calls_are_marked():
    (p,) = find_calls("The sum is [Calculator(3 + 4")
    assert not p.closed and p.call == ToolCall("Calculator", "3 + 4")
    (p,) = find_calls("x [Calculator(3 + 4) -> 7 and then\nmore text]")
    assert not p.closed and p.call.result == "7 and then"


def test_parse_sampled_continuation():
    p = parse_sampled("Calculator(350 / 1400)]")
    assert p.closed and p.call == ToolCall("Calculator", "350 / 1400")
    assert parse_sampled("36 * 4]") is None  # no tool name: not a call


def test_format_refuses_what_cannot_be_read_back():
    with pytest.raises(ValueError, match="unbalanced"):
        format_call(ToolCall("Calculator", "3 * (4"))
    with pytest.raises(ValueError, match="identifier"):
        format_call(ToolCall("Bad Name", "x"))
    assert format_call(ToolCall("S", "a\n b", "x [1]")) == " [S(a b) -> x (1)]"


def test_brackets_that_are_not_calls_are_left_alone():
    assert find_calls("see [1] and [note] and [f (x)]") == []
    assert strip_calls("see [1] here") == "see [1] here"


def test_insert_call_keeps_words_apart():
    call = ToolCall("Calculator", "400 / 1400", "0.29")
    assert insert_call("400 passed, 29% of all.", 11, call) == "400 passed, [Calculator(400 / 1400) -> 0.29] 29% of all."
    assert insert_call("29% of all", 0, call) == "[Calculator(400 / 1400) -> 0.29] 29% of all"
