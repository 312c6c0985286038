"""The Calculator: the four operations and parentheses, nothing else.

Why ``ast`` and a whitelist instead of ``eval``: inputs are written by a sampling model, so they
must be treated as hostile. The expression is parsed into a syntax tree and walked by a tiny
interpreter that knows numbers, ``+ - * /``, unary signs and parentheses; any other node (a name,
an attribute, a call, ``**``, a subscript…) means "no result".

Why bounds everywhere: the input is at most 256 characters, a literal at most 15 digits, and every
intermediate value at most 10¹⁸ in size and 60 digits in its denominator. So no input can make
the calculator slow or hungry (``9**9**9`` is refused, ``1e308 * 1e308`` too).

Arithmetic is exact (:class:`fractions.Fraction`) and rounded half away from zero to two
decimals at the end, so ``2.675 * 1`` gives ``2.68`` rather than what binary floats would say.

>>> calculate("400 / 1400")
'0.29'
>>> calculate("(12 + 3) * 4"), calculate("1,400 - 25.5"), calculate("7 ÷ 2"), calculate("-3 * -2")
('60', '1374.5', '3.5', '6')
>>> [calculate(s) for s in ["2 ** 8", "__import__('os')", "x + 1", "1 / 0", "(1).real", ""]]
[None, None, None, None, None, None]
"""

from __future__ import annotations

import ast
import re
from fractions import Fraction
from typing import Optional

from ..calls import ToolCall, format_call
from .base import PAPER_CALCULATOR_MT, Tool

MAX_INPUT_CHARS = 256
MAX_LITERAL_DIGITS = 15
MAX_MAGNITUDE = 10**18
MAX_DENOMINATOR_DIGITS = 60

_SYMBOLS = str.maketrans({"×": "*", "÷": "/", "−": "-", "–": "-", "·": "*"})
_THOUSANDS = re.compile(r"(?<![\d.])\d{1,3}(?:,\d{3})+(?![\d,])")
_LITERAL = re.compile(r"\d+(\.\d*)?|\.\d+")
_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
        ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b}


class _Refused(ValueError):
    """The expression is outside what the calculator supports."""


def normalize_expression(text: str) -> str:
    """Typographic operators to ASCII, thousands separators dropped, a trailing '=' removed.

    >>> normalize_expression("1,234,567 × 2 =")
    '1234567 * 2'
    """
    text = text.translate(_SYMBOLS).strip().rstrip("=").strip()
    return _THOUSANDS.sub(lambda m: m.group(0).replace(",", ""), text)


def _literal(node: ast.Constant, source: str) -> Fraction:
    value = node.value
    if type(value) not in (int, float):  # bool, complex, str, bytes, None, Ellipsis
        raise _Refused("not a number")
    text = ast.get_source_segment(source, node) or ""
    if not _LITERAL.fullmatch(text):  # 1e5, 0x10, 1_000, 3j: not plain decimals
        raise _Refused("only plain decimal numbers")
    if sum(ch.isdigit() for ch in text) > MAX_LITERAL_DIGITS:
        raise _Refused("number too long")
    return Fraction(text)


def _checked(value: Fraction) -> Fraction:
    if abs(value) > MAX_MAGNITUDE or value.denominator >= 10**MAX_DENOMINATOR_DIGITS:
        raise _Refused("value out of range")
    return value


def _evaluate(node: ast.AST, source: str) -> Fraction:
    if isinstance(node, ast.Constant):
        return _literal(node, source)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _evaluate(node.operand, source)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _evaluate(node.left, source), _evaluate(node.right, source)
        if isinstance(node.op, ast.Div) and right == 0:
            raise _Refused("division by zero")
        return _checked(_OPS[type(node.op)](left, right))
    raise _Refused(f"{type(node).__name__} is not arithmetic")


def round_half_up(value: Fraction, places: int = 2) -> Fraction:
    """Round half away from zero, exactly.

    >>> float(round_half_up(Fraction("2.675"))), float(round_half_up(Fraction("-0.005")))
    (2.68, -0.01)
    """
    scale = 10**places
    magnitude = (abs(value) * scale + Fraction(1, 2)).__floor__()
    return Fraction(magnitude if value >= 0 else -magnitude, scale)


def format_number(value: Fraction) -> str:
    """Two decimals at most, trailing zeros dropped.

    >>> format_number(Fraction(120)), format_number(Fraction(1, 2)), format_number(Fraction(-1, 1000))
    ('120', '0.5', '0')
    """
    rounded = round_half_up(value)
    if rounded == 0:
        return "0"
    sign = "-" if rounded < 0 else ""
    cents = abs(rounded.numerator * 100 // rounded.denominator)
    whole, frac = divmod(cents, 100)
    return f"{sign}{whole}.{frac:02d}".rstrip("0").rstrip(".")


def calculate(text: str) -> Optional[str]:
    """The rounded result of an arithmetic expression, or None if it is not one we support."""
    if not isinstance(text, str) or len(text) > MAX_INPUT_CHARS:
        return None
    source = normalize_expression(text)
    if not source:
        return None
    try:
        tree = ast.parse(source, mode="eval")
        return format_number(_evaluate(tree.body, source))
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError, ZeroDivisionError):
        return None


def _demo(before: str, expression: str, after: str) -> tuple[str, str]:
    """One demonstration: the plain text, and the same text with the call (and its result) in."""
    call = format_call(ToolCall("Calculator", expression, calculate(expression)))
    return before + after, before + call + after


INSTRUCTION = (
    "Your task is to add calls to a Calculator API to a piece of text. A call looks like "
    "[Calculator(expression)], where the expression uses only numbers, + - * / and parentheses. "
    "Put a call just before a number that can be worked out from numbers given earlier in the "
    "text. Here are some examples:"
)

DEMONSTRATIONS = [
    _demo("The bakery sold 120 loaves on Saturday and 85 on Sunday, so", "120 + 85", " 205 loaves in all."),
    _demo("Of the 1400 runners who started, 1050 finished, a completion rate of", "1050 / 1400",
          " 0.75, or 75%."),
    _demo("Tickets cost 18 euros each. A family of four paid", "18 * 4", " 72 euros at the gate."),
    _demo("The river rose from 2.4 m to 5.1 m overnight, a jump of", "5.1 - 2.4", " 2.7 metres."),
    _demo("She split the 90-minute lecture into 6 equal parts of", "90 / 6", " 15 minutes each."),
    _demo("With 3 crates of 24 bottles and 10 loose ones, the shop held", "3 * 24 + 10", " 82 bottles."),
]
# Why results are shown here but not in the other tools' demonstrations: a calculator result is
# exact and checkable, so showing it teaches the model what the call is for at no risk; a search
# or QA result written by hand would teach it to invent results. The paper's prompts do the same.

# The Calculator's input grammar at the character level (Tool.input_grammar): numbers (digits,
# decimal point, thousands commas), + - * / and their typographic forms, parentheses, spaces.
INPUT_GRAMMAR = "0123456789.,+-*/×÷−–·() "

CALCULATOR = Tool(
    name="Calculator",
    fn=calculate,
    instruction=INSTRUCTION,
    demonstrations=DEMONSTRATIONS,
    settings=PAPER_CALCULATOR_MT,
    description="exact + - * / with parentheses, rounded to 2 decimals",
    max_input_chars=MAX_INPUT_CHARS,
    example_input="400 / 1400",
    no_result_hint="not an expression of numbers (at most 15 digits), + - * / and parentheses, or division by zero",
    input_grammar=INPUT_GRAMMAR,
)
