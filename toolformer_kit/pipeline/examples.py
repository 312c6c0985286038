"""Worked examples of the tool-trained model, printed when the pipeline ends and put in its report:
what a newcomer should see first is the model calling its tool, not a table (issue 43).

An example is one evaluation record under the paper's decoding in which a call ran: its prompt,
the text the model generated with the call and its result written in, whether the answer was
right, and what the same model answered to the same prompt with calls disabled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ..blocks import Block
from ..eval.verdict import LABEL, load_records, tools_setting

# The maths tasks' prompt form (eval.tasks.math.math_prompt): the model was evaluated, and is best
# tried, on a problem followed by a new line and "The answer is".
TRY_PROMPT = "A baker made 238 cupcakes and packed them in boxes of 14. How many boxes did she fill?\nThe answer is"


def pick(eval_folder: Path, tasks: Sequence[str], n: int, label: str = LABEL) -> list[dict]:
    """Up to ``n`` records with a call that ran, one task after another: right answers first and,
    when there is one, the last a wrong answer (the reader should see both), each the shortest
    prompt of its kind so it reads at a glance. Each carries ``disabled``: the same prompt's
    answer with calls disabled (None when that run is missing)."""
    on = tools_setting(eval_folder, label)
    if on is None or n <= 0:
        return []
    pools = {t: [r for r in load_records(eval_folder, label, on.name, t) if r.get("call_ok")] for t in tasks}
    right = [sorted((r for r in pools[t] if r.get("correct")), key=_size) for t in tasks]
    wrong = sorted((r for t in tasks for r in pools[t] if not r.get("correct")), key=_size)
    chosen = _interleave(right)[: n - 1 if wrong else n]
    chosen += wrong[:1] if wrong else []
    off = {(t, r["id"]): r for t in tasks for r in load_records(eval_folder, label, "disabled", t)}
    return [dict(r, setting=on.name, disabled=(off.get((r["task"], r["id"])) or {}).get("prediction"))
            for r in chosen[:n]]


def _size(record: dict) -> tuple[int, str]:
    return len(record.get("prompt", "")), str(record.get("id"))


def _interleave(groups: list[list[dict]]) -> list[dict]:
    """[[a1, a2], [b1]] -> [a1, b1, a2]: one of each task before a second of any."""
    out, i = [], 0
    while any(i < len(g) for g in groups):
        out += [g[i] for g in groups if i < len(g)]
        i += 1
    return out


def _verdict(record: dict) -> str:
    gold = ", ".join(map(str, record.get("answers") or [])) or "?"
    return f"{'right' if record.get('correct') else 'wrong'} (gold {gold})"


def as_text(records: Sequence[dict]) -> str:
    """The examples as the terminal shows them."""
    parts = []
    for i, r in enumerate(records, 1):
        lines = [f"[{i}] {r['task']} · {_verdict(r)}",
                 "  prompt:    " + r["prompt"].strip().replace("\n", "\n             "),
                 "  generated: " + r["output"].strip().replace("\n", "\n             ")]
        if r.get("disabled") is not None:
            lines.append("  with calls disabled it answered: " + (r["disabled"].strip()[:120] or "(nothing)"))
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def try_command(model_dir: Path | str) -> str:
    """The command that asks the trained model one's own question (bash's $'…' writes the new line)."""
    prompt = TRY_PROMPT.replace("\n", "\\n")
    return f"toolformer generate --model {model_dir} --tools Calculator $'{prompt}'"


def blocks(records: Sequence[dict], model_dir: Path | str) -> list[Block]:
    """The report's section: each example as a small table, then the try command."""
    out = [Block("h2", "Worked examples (tool-trained model, the paper's decoding)")]
    if not records:
        return out + [Block("p", "No answer with a call that ran: nothing to show.")]
    for i, r in enumerate(records, 1):
        rows = [("prompt", r["prompt"].strip()), ("generated", r["output"].strip()), ("verdict", _verdict(r))]
        if r.get("disabled") is not None:
            rows.append(("calls disabled", r["disabled"].strip() or "(nothing)"))
        out += [Block("h3", f"{i}. {r['task']} ({r['id']})"), Block("table", header=("", ""), rows=rows)]
    return out + [Block("p", "Try it on your own question: `" + try_command(model_dir) + "`")]
