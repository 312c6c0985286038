"""The tool-use funnel: where, between "a call opened" and "the answer is right", the chain breaks.

An accuracy gain (or its absence) says nothing about *why*. The funnel follows each input through
the steps a tool must take to help, each step a subset of the one before:

1. **opened** — the model opened a call (" [" was among the top k);
2. **well-formed** — the call reached ``->`` as ``Tool(input)``, so a tool could run;
3. **right tool** — it named the tool the task exercises (Calculator for maths, WikiSearch for
   the search recipe's tasks);
4. **useful result** — the result could give the answer: for maths it equals the gold answer or
   an *intermediate* of it (:func:`intermediates`); for search it contains a gold answer;
5. **correct** — and the answer was right.

Inputs without a call are counted beside it with their own accuracy, so a model that answers
well *without* calling is not mistaken for one whose calls help.
"""

from __future__ import annotations

import ast
import operator
import re
from typing import Callable, Collection, Iterable, Mapping, Sequence

from ..eval.metrics import contains_answer, numbers_equal, parse_number

STEPS = ("opened", "well-formed", "right tool", "useful result", "correct")
# decoder reasons (decode_state) for calls that never reached a runnable Tool(input) ->
MALFORMED = {"unparsable", "closed_without_arrow", "line_break", "too_long", "unfinished", "unknown_tool"}

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
_UNITS = re.compile(r"\(\s*[A-Za-z][^()]*\)")  # ASDiv writes units in brackets: "2 (hour)*60 (min/hour)"
_STATED = re.compile(r"=\s*(-?\d+(?:\.\d+)?)(?![\d:.])")


def _values(node: ast.AST, out: set[float]) -> float | None:
    """The value of an arithmetic tree, adding every operation's value to ``out``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _values(node.operand, out)
        return None if inner is None else -inner
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _values(node.left, out), _values(node.right, out)
        if left is None or right is None or (isinstance(node.op, ast.Div) and right == 0):
            return None
        value = _OPS[type(node.op)](left, right)
        out.add(value)
        return value
    return None


def intermediates(equation: str) -> set[float]:
    """Every number the gold equation computes on the way to its answer, the answer included.

    "Intermediate" means the value of an operation in the published equation: for
    ``( 41 - 9 ) - 18`` that is 32 and 14, not 41 (a number of the problem, which needs no
    calculator) and not 50 (41 + 9 is no step of this solution). ASDiv's multi-step formulas
    (``3+5=8; 8-2=6``) count each step, and the numbers they state after ``=``; their units in
    brackets are dropped. Whatever cannot be read gives no intermediates (the gold answer alone
    then counts as useful).

    >>> sorted(intermediates("( 41.0 - 9.0 ) - 18.0"))
    [14.0, 32.0]
    >>> sorted(intermediates("3+5=8; 8-2=6; 3+8+6=17"))
    [6.0, 8.0, 11.0, 17.0]
    >>> sorted(intermediates("11 (day) * 24 (hour/day) * 60 (min/hour) = 15840 (min)"))
    [264.0, 15840.0]
    >>> intermediates("hh:mm=3:30 p.m."), intermediates("")
    (set(), set())
    """
    out: set[float] = set()
    for step in equation.replace("×", "*").replace("÷", "/").split(";"):
        lhs = _UNITS.sub(" ", step).partition("=")[0]
        try:
            _values(ast.parse(lhs.strip(), mode="eval").body, out)
        except (SyntaxError, ValueError):
            pass
        out.update(float(m.group(1)) for m in _STATED.finditer(_UNITS.sub(" ", step)))
    return out


def _count_ops(node: ast.AST) -> int | None:
    """Binary arithmetic operations in a tree; None where it holds anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return 0
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _count_ops(node.operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _count_ops(node.left), _count_ops(node.right)
        return None if left is None or right is None else left + right + 1
    return None


def operations(equation: str) -> int | None:
    """How many arithmetic operations the gold equation performs (each of ASDiv's steps counted,
    units dropped), so problems can be split into one-step and multi-step ones; None when it
    cannot be read (ASDiv's systems with unknowns, clock times, an empty equation).

    >>> operations("( 41.0 - 9.0 ) - 18.0"), operations("2+4=6"), operations("3*4=12; 12+2=14")
    (2, 1, 2)
    >>> operations("11 (day) * 24 (hour/day) * 60 (min/hour) = 15840 (min)"), operations("x+y=216"), operations("")
    (2, None, None)
    """
    total = 0
    steps = [s for s in equation.replace("×", "*").replace("÷", "/").split(";") if s.strip()]
    for step in steps:
        lhs = _UNITS.sub(" ", step).partition("=")[0].strip()
        try:
            n = _count_ops(ast.parse(lhs, mode="eval").body)
        except (SyntaxError, ValueError):
            return None
        if n is None:
            return None
        total += n
    return total if steps else None


def math_useful(result: str | None, record: Mapping) -> bool:
    """A Calculator result is useful when it is the gold answer or one of its intermediates.

    >>> rec = {"answers": ["14"], "meta": {"equation": "( 41.0 - 9.0 ) - 18.0"}}
    >>> math_useful("32", rec), math_useful("14.0", rec), math_useful("50", rec), math_useful(None, rec)
    (True, True, False, False)
    """
    value = parse_number(result) if result else None
    if value is None:
        return False
    gold = parse_number(record["answers"][0]) if record.get("answers") else None
    wanted = intermediates((record.get("meta") or {}).get("equation", "")) | ({gold} if gold is not None else set())
    return any(numbers_equal(value, w) for w in wanted)


def search_useful(result: str | None, record: Mapping) -> bool:
    """A search result is useful when it contains a gold answer (whole words, normalised).

    >>> search_useful("Paris is the capital of France.", {"answers": ["paris"]})
    True
    """
    return bool(result) and contains_answer(result, record.get("answers") or [])


USEFUL: dict[str, Callable[[str | None, Mapping], bool]] = {"Calculator": math_useful, "WikiSearch": search_useful}


def steps_reached(record: Mapping, right_tool: str | Collection[str],
                  useful: Callable[[str | None, Mapping], bool]) -> int:
    """How many of :data:`STEPS` one input passed, in order (0: no call opened). ``right_tool``
    may name several tools, for a task that allows more than one.

    >>> ok = {"called": True, "correct": True, "calls": [{"tool": "Calculator", "result": "8", "reason": ""}],
    ...       "answers": ["8"]}
    >>> steps_reached(ok, "Calculator", math_useful)
    5
    >>> steps_reached({**ok, "calls": [{"tool": "Calculator", "result": None, "reason": "closed_without_arrow"}]},
    ...               "Calculator", math_useful)
    1
    >>> steps_reached(ok, ("WikiSearch", "Calculator"), math_useful), steps_reached(ok, "WikiSearch", math_useful)
    (5, 2)
    """
    right = {right_tool} if isinstance(right_tool, str) else set(right_tool)
    calls = record.get("calls") or []
    if not record.get("called") or not calls:
        return 0
    call = calls[0]
    checks = (call.get("reason", "") not in MALFORMED and bool(call.get("tool")),
              call.get("tool") in right,
              useful(call.get("result"), record),
              bool(record.get("correct")))
    n = 1
    for passed in checks:
        if not passed:
            break
        n += 1
    return n


def funnel(records: Sequence[Mapping], right_tool: str | Collection[str],
           useful: Callable[[str | None, Mapping], bool] | None = None) -> dict:
    """Counts and shares (of all inputs) at each step, and the inputs without a call.

    >>> recs = [{"called": True, "correct": True, "answers": ["8"],
    ...          "calls": [{"tool": "Calculator", "result": "8", "reason": ""}]},
    ...         {"called": True, "correct": False, "answers": ["8"],
    ...          "calls": [{"tool": "Calculator", "result": "9", "reason": ""}]},
    ...         {"called": False, "correct": True, "answers": ["8"], "calls": []},
    ...         {"called": False, "correct": False, "answers": ["8"], "calls": []}]
    >>> f = funnel(recs, "Calculator")
    >>> [(s["step"], s["n"]) for s in f["steps"]]
    [('opened', 2), ('well-formed', 2), ('right tool', 2), ('useful result', 1), ('correct', 1)]
    >>> f["no_call"]
    {'n': 2, 'share': 0.5, 'correct': 1, 'accuracy': 0.5}
    """
    useful = useful or (USEFUL.get(right_tool, search_useful) if isinstance(right_tool, str) else search_useful)
    reached = [steps_reached(r, right_tool, useful) for r in records]
    total = len(records)
    steps = [{"step": name, "n": sum(r > i for r in reached), "share": _share(sum(r > i for r in reached), total)}
             for i, name in enumerate(STEPS)]
    silent = [r for r, k in zip(records, reached) if k == 0]
    right = sum(bool(r.get("correct")) for r in silent)
    return {"total": total, "tool": right_tool if isinstance(right_tool, str) else list(right_tool), "steps": steps,
            "no_call": {"n": len(silent), "share": _share(len(silent), total), "correct": right,
                        "accuracy": _share(right, len(silent))}}


def _share(n: int, total: int) -> float | None:
    return n / total if total else None


def weakest_step(f: Mapping) -> str:
    """The step that loses the most inputs, for the verdict's one-line diagnosis.

    >>> weakest_step({"total": 10, "steps": [{"step": "opened", "n": 9}, {"step": "well-formed", "n": 8},
    ...               {"step": "right tool", "n": 8}, {"step": "useful result", "n": 2}, {"step": "correct", "n": 2}]})
    'useful result (8 → 2)'
    """
    before = f["total"]
    worst, drop = "", -1
    for s in f["steps"]:
        if before - s["n"] > drop:
            worst, drop, last = s["step"], before - s["n"], (before, s["n"])
        before = s["n"]
    return f"{worst} ({last[0]} → {last[1]})" if worst else ""


def funnel_rows(funnels: Iterable[tuple[str, Mapping]]) -> tuple[tuple[str, ...], list[tuple]]:
    """A table: one row per task, one column per step (% of inputs and count), then no-call inputs."""
    header = ("task", "inputs", *STEPS, "no call", "correct without a call")
    rows = []
    for task, f in funnels:
        cells = [f"{_pct(s['share'])} ({s['n']})" for s in f["steps"]]
        nc = f["no_call"]
        rows.append((task, f["total"], *cells, f"{_pct(nc['share'])} ({nc['n']})",
                     f"{_pct(nc['accuracy'])} ({nc['correct']})"))
    return header, rows


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"
