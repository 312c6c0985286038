"""SVAMP, ASDiv and MAWPS in their published formats; prompt = context, question, "The answer is".

Only problems with a single numeric answer are kept: the paper's metric compares the first
predicted number with the answer, which is undefined for ASDiv's yes/no, clock-time, ratio and
name answers (``3:4``, ``Yes``, ``Harry``). On the shared copies that keeps all 296 SVAMP and
515 MAWPS problems and 662 of the 712 ASDiv problems.

>>> fill_placeholders("Tom has number0 apples and number1 pears .", "3.0 0.5")
'Tom has 3 apples and 0.5 pears.'
>>> math_prompt("Dan had $ 3 left", "How much did it cost?")
'Dan had $ 3 left. How much did it cost?\\nThe answer is'
"""

from __future__ import annotations

import csv
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from ..metrics import canonical_number, number_text, parse_number
from .base import Example, Task, ToolPolicy, register, require

_PLACEHOLDER = re.compile(r"\bnumber(\d+)\b")


def detokenize(text: str) -> str:
    """Undo the space-before-punctuation tokenisation of the MAWPS copies.

    >>> detokenize("Emily 's father gives Emily 7 more , she says .")
    "Emily's father gives Emily 7 more, she says."
    """
    text = re.sub(r"\s+([.,?!;:])", r"\1", text)
    return re.sub(r"\s+('s|n't|'re|'ll|'ve|'d|'m)\b", r"\1", text).strip()


def fill_placeholders(question: str, numbers: str) -> str:
    """Put MAWPS's ``Numbers`` back into its ``number0``… placeholders."""
    values = [canonical_number(n) for n in numbers.split()]

    def repl(m: re.Match) -> str:
        i = int(m.group(1))
        if i >= len(values):
            raise ValueError(f"placeholder {m.group(0)} has no value in Numbers={numbers!r}")
        return values[i]

    return detokenize(_PLACEHOLDER.sub(repl, question))


def math_prompt(context: str, question: str) -> str:
    context = context.strip()
    if context and not context.endswith((".", "?", "!")):
        context += "."
    return f"{context} {question.strip()}".strip() + "\nThe answer is"


def prefix_to_infix(equation: str, numbers: str) -> str:
    """MAWPS's prefix equation over ``number0``… as an infix one with the numbers written in,
    so every task's gold equation has one form (the tool-use funnel reads its intermediates).

    >>> prefix_to_infix("- * number0 number1 number2", "4.0 10.0 6.0")
    '((4 * 10) - 6)'
    >>> prefix_to_infix("+ number0", "1.0")
    ''
    """
    values = [canonical_number(n) for n in numbers.split()]
    tokens = equation.split()

    def build(i: int) -> tuple[str, int]:
        tok = tokens[i]
        if tok in "+-*/" and len(tok) == 1:
            left, j = build(i + 1)
            right, k = build(j)
            return f"({left} {tok} {right})", k
        m = _PLACEHOLDER.fullmatch(tok)
        return (values[int(m.group(1))] if m else tok), i + 1

    try:
        text, end = build(0)
    except (IndexError, ValueError):
        return ""
    return text if end == len(tokens) else ""


def _numeric(ex_id: str, prompt: str, answer, equation: str = "") -> Example | None:
    """A problem with a numeric answer; its gold ``equation`` as published (SVAMP's infix, ASDiv's
    ``Formula`` with its steps and units, MAWPS's made infix; may be "") goes into ``meta``."""
    value = parse_number(answer)
    if value is None:
        return None
    return Example(ex_id, prompt, (number_text(value),), {"equation": equation} if equation else {})


def load_svamp(data_dir: Path) -> list[Example]:
    rows = json.loads(require(data_dir / "math" / "SVAMP.json", "SVAMP").read_text(encoding="utf-8"))
    out = [_numeric(r["ID"], math_prompt(r["Body"], r["Question"]), r["Answer"], r.get("Equation") or "")
           for r in rows]
    return [e for e in out if e is not None]


def load_asdiv(data_dir: Path) -> list[Example]:
    root = ET.parse(require(data_dir / "math" / "ASDiv.xml", "ASDiv")).getroot()
    out = []
    for p in root.iter("Problem"):
        prompt = math_prompt(p.findtext("Body") or "", p.findtext("Question") or "")
        out.append(_numeric(p.get("ID", str(len(out))), prompt, p.findtext("Answer") or "",
                            (p.findtext("Formula") or "").strip()))
    return [e for e in out if e is not None]


def load_mawps(data_dir: Path) -> list[Example]:
    path = require(data_dir / "math" / "MAWPS.csv", "MAWPS")
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    out = []
    for i, r in enumerate(rows):
        prompt = math_prompt("", fill_placeholders(r["Question"], r["Numbers"]))
        out.append(_numeric(f"mawps-{i}", prompt, r["Answer"], prefix_to_infix(r.get("Equation", ""), r["Numbers"])))
    return [e for e in out if e is not None]


_POLICY = ToolPolicy()
register(Task("svamp", "SVAMP math word problems", load_svamp, metric="math", policy=_POLICY, max_new_tokens=24, exercises="Calculator"))
register(Task("asdiv", "ASDiv math word problems (numeric answers)", load_asdiv, metric="math",
              policy=_POLICY, max_new_tokens=24, exercises="Calculator"))
register(Task("mawps", "MAWPS math word problems", load_mawps, metric="math", policy=_POLICY, max_new_tokens=24, exercises="Calculator"))
