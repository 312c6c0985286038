"""The one place that knows how a tool call looks in text.

The paper linearises a call c = (tool, input) as e(c) = ``<API> tool(input) </API>`` and a call
with its result as e(c, r) = ``<API> tool(input) → r </API>``. Like the paper's own experiments we
spell ``<API>``, ``</API>`` and ``→`` with ordinary tokens, so that no vocabulary change is needed:

    e(c)    = " [Tool(input)]"
    e(c, r) = " [Tool(input) -> result]"

Parsing has to survive what a sampling model writes: brackets or parentheses inside an input,
"->" inside an input, calls that never close, and any script. The rule that makes this
unambiguous is that an input's parentheses are balanced: the input ends at the first ``)`` that
closes the opening ``(`` and is followed by ``]`` or ``->``. Results never contain square brackets
(they are written as round ones) and never span lines, so the call ends at the first ``]``.

>>> c = ToolCall("Calculator", "400 / 1400", "0.29")
>>> format_call(c)
' [Calculator(400 / 1400) -> 0.29]'
>>> find_calls("Out of 1400 participants, 400 [Calculator(400 / 1400) -> 0.29] 29% passed.")[0].call
ToolCall(tool='Calculator', input='400 / 1400', result='0.29')
>>> strip_calls("Out of 1400, 400 [Calculator(400 / 1400) -> 0.29] (29%) passed.")
'Out of 1400, 400 (29%) passed.'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CALL_OPEN = " ["
CALL_CLOSE = "]"
ARROW = "->"

_NAME = re.compile(r"\[\s*([A-Za-z_][A-Za-z0-9_.]*)\(")
_NAME_ONLY = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
_END_AFTER_PAREN = re.compile(r"\s*(\]|->)")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class ToolCall:
    """A call; ``result`` is None for e(c) and ``""`` for the empty-result form e(c, ε)."""

    tool: str
    input: str
    result: str | None = None

    def with_result(self, result: str | None) -> "ToolCall":
        return ToolCall(self.tool, self.input, result)


@dataclass(frozen=True)
class ParsedCall:
    """A call found in text: ``start``/``end`` are character offsets of ``[`` and just past ``]``."""

    call: ToolCall
    start: int
    end: int
    closed: bool


def normalize_input(text: str) -> str:
    """Inputs live on one line: whitespace runs become one space."""
    return _SPACES.sub(" ", text).strip()


def normalize_result(text: str) -> str:
    """Results live on one line and hold no square brackets (they would end the call).

    >>> normalize_result("  [1]  a\\n b ")
    '(1) a b'
    """
    return _SPACES.sub(" ", text.replace("[", "(").replace("]", ")")).strip()


def balanced(text: str) -> bool:
    """True if every ``)`` closes an earlier ``(`` and none stays open.

    >>> balanced("(1 + 2) * 3"), balanced("(1 + 2"), balanced(")(")
    (True, False, False)
    """
    depth = 0
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if depth < 0:
            return False
    return depth == 0


def format_call(call: ToolCall, leading_space: bool = True) -> str:
    """Write e(c) (result None) or e(c, r); raises ValueError on what could not be read back."""
    if not _NAME_ONLY.match(call.tool):
        raise ValueError(f"tool name {call.tool!r} must be an identifier such as 'WikiSearch'")
    text = normalize_input(call.input)
    if not balanced(text):
        raise ValueError(f"call input {call.input!r} has unbalanced parentheses")
    body = f"[{call.tool}({text})"
    if call.result is not None:
        result = normalize_result(call.result)
        body += f" {ARROW} {result}" if result else f" {ARROW} "
    body += CALL_CLOSE
    return (" " if leading_space else "") + body


def _input_end(text: str, start: int) -> int:
    """Index of the ``)`` that ends the input starting at ``start``, or -1.

    Prefers a ``)`` at parenthesis depth 0 followed by ``]`` or ``->``; a model that left a
    parenthesis open still gets its call read, ending at the first ``)`` followed by either.
    """
    depth, fallback = 0, -1
    for j in range(start, len(text)):
        ch = text[j]
        if ch == "(":
            depth += 1
        elif ch == ")":
            followed = _END_AFTER_PAREN.match(text, j + 1) is not None
            if depth == 0 and followed:
                return j
            if followed and fallback < 0:
                fallback = j
            depth = max(depth - 1, 0)
        elif ch == "\n":
            break
    return fallback


def parse_call_at(text: str, pos: int) -> ParsedCall | None:
    """Parse the call whose ``[`` is at ``pos``; None if no ``[Name(`` starts there."""
    m = _NAME.match(text, pos)
    if not m:
        return None
    tool, in_start = m.group(1), m.end()
    paren = _input_end(text, in_start)
    if paren < 0:  # no ")" before "]" or "->": malformed, so it never runs (closed False)
        line_end = text.find("\n", in_start)
        line_end = len(text) if line_end < 0 else line_end
        close = text.find(CALL_CLOSE, in_start, line_end)
        # A "]" on the line still ends the call's text: what follows is the model's own words
        # ("[Calculator(4*6) = 24] 24 hours" answers "24 hours"), not more of the call.
        end = close + 1 if close >= 0 else line_end
        raw = text[in_start:end]
        return ParsedCall(ToolCall(tool, normalize_input(raw.rstrip(")]"))), pos, end, False)
    tail = _END_AFTER_PAREN.match(text, paren + 1)
    assert tail is not None
    call_input = normalize_input(text[in_start:paren])
    if tail.group(1) == CALL_CLOSE:
        return ParsedCall(ToolCall(tool, call_input), pos, tail.end(), True)
    close = text.find(CALL_CLOSE, tail.end())
    line_end = text.find("\n", tail.end())
    if close < 0 or (0 <= line_end < close):
        end = len(text) if line_end < 0 else line_end
        result = normalize_result(text[tail.end():end])
        return ParsedCall(ToolCall(tool, call_input, result), pos, end, False)
    result = normalize_result(text[tail.end():close])
    return ParsedCall(ToolCall(tool, call_input, result), pos, close + 1, True)


def find_calls(text: str) -> list[ParsedCall]:
    """Every call in ``text``, left to right; a call's own text is not searched again."""
    found, pos = [], text.find("[")
    while pos >= 0:
        parsed = parse_call_at(text, pos)
        if parsed is None:
            pos = text.find("[", pos + 1)
            continue
        found.append(parsed)
        pos = text.find("[", max(parsed.end, pos + 1))
    return found


def parse_sampled(continuation: str) -> ParsedCall | None:
    """Parse what a model wrote after the call-open token " [" (e.g. ``"Calculator(3 * 4)]"``)."""
    return parse_call_at("[" + continuation.lstrip(), 0)


def strip_calls(text: str) -> str:
    """Remove every call (and the space before it): the "+CC" baseline's view of C*, and the
    answer text the evaluation scores. A malformed call ends at its "]", so the words after it stay.

    >>> strip_calls("It is [Calculator(3 * 2) -> 6] 6 hours.")
    'It is 6 hours.'
    >>> strip_calls(" [Calculator(4*6 + 6*86) = 24 + 504 = 528] 528 hours a day.")
    ' 528 hours a day.'
    >>> strip_calls("So [Calculator(2 + 3 is five")
    'So'
    """
    out, last = [], 0
    for parsed in find_calls(text):
        start = parsed.start - 1 if parsed.start > 0 and text[parsed.start - 1] == " " else parsed.start
        out.append(text[last:start])
        last = parsed.end
    out.append(text[last:])
    return "".join(out)


def insert_call(text: str, char_pos: int, call: ToolCall) -> str:
    """Insert e(c, r) before the character at ``char_pos`` (a token boundary of the text).

    The call brings its own leading space; a space already before ``char_pos`` is kept after
    the call instead, so words stay separated exactly once.

    >>> insert_call("It costs 5 dollars.", 8, ToolCall("Calculator", "2 + 3", "5"))
    'It costs [Calculator(2 + 3) -> 5] 5 dollars.'
    """
    left, right = text[:char_pos], text[char_pos:]
    if left.endswith(" ") and not right.startswith(" "):
        left, right = left[:-1], " " + right
    elif right and not right[:1].isspace():
        right = " " + right
    return left + format_call(call, leading_space=bool(left)) + right
