"""Typed tool inputs (issue 31): a tool may declare its input grammar; decoding may hold calls to it."""

from toolformer_kit.calls import find_calls
from toolformer_kit.tools import get_tool
from toolformer_kit.tools.base import fits_grammar
from toolformer_kit.tools.calculator import calculate


def test_the_calculator_s_demonstrations_and_the_calendar_s_empty_input_fit_their_grammars():
    calc, cal = get_tool("Calculator"), get_tool("Calendar")
    inputs = [c.call.input for _, out in calc.demonstrations for c in find_calls(out)]
    assert inputs and all(fits_grammar(i, calc.input_grammar) for i in inputs)
    for typographic in ("1,050 × 2", "(25 − 5) ÷ 4"):  # what the calculator reads, the grammar lets through
        assert fits_grammar(typographic, calc.input_grammar) and calculate(typographic) is not None
    assert not fits_grammar("twenty / 4", calc.input_grammar)
    assert cal.input_grammar == "" and fits_grammar("", cal.input_grammar) and not fits_grammar("today", "")
    assert get_tool("WikiSearch").input_grammar is None  # free text
