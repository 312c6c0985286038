"""The one record every annotation stage reads and writes: a :class:`Candidate` call.

Why a single flat record: each stage (sample → execute → filter → merge) only fills in more of
its fields, so a per-candidate JSONL log can be inspected, resumed or re-filtered at another
threshold without re-running the model. Nothing is ever dropped silently: a sample that did not
parse stays in the log with its ``status`` and no scores.

>>> c = Candidate(doc_id="d1", tool="Calculator", position=7, char_offset=30, p_i=0.4,
...               sample="Calculator(3 * 4)]", input="3 * 4")
>>> Candidate.from_json(c.to_json()) == c
True
"""

from __future__ import annotations

import json
import math
from dataclasses import MISSING, asdict, dataclass, fields
from typing import Optional

from ..calls import ToolCall

# Why a sample becomes no candidate, or why a scored candidate cannot be kept.
OK = "ok"
UNCLOSED = "unclosed"  # never reached "]" within the token budget
OTHER_TOOL = "other_tool"  # names a tool other than the one being annotated
UNPARSABLE = "unparsable"  # no "Name(...)" could be read, or it does not survive format_call
EXEC_ERROR = "exec_error"  # the tool gave no result (error, timeout, refused input)
LEAK = "leak"  # MT only: the input is copied from text after the call (Appendix A)
STATUSES = (OK, UNCLOSED, OTHER_TOOL, UNPARSABLE, EXEC_ERROR, LEAK)


@dataclass
class Candidate:
    """One sampled call at one position of one document, with everything measured about it.

    ``position`` is the token index i in the *sampling* model's tokenization of the document;
    ``char_offset`` is where the call goes in the document text (a token boundary, usually the
    space before the word); ``score_position`` is i in the *scoring* model's tokenization (the
    same as ``position`` unless a separate sampler model is used). Losses are the paper's:
    ``L_eps`` = L_i(ε), ``L_call_noresult`` = L_i(e(c, ε)), ``L_plus`` = L_i(e(c, r)),
    ``L_minus`` = min of the first two, ``score`` = L_minus − L_plus.
    """

    doc_id: str
    tool: str
    position: int
    char_offset: int
    p_i: float
    sample: str
    sample_index: int = 0
    status: str = OK
    input: Optional[str] = None
    result: Optional[str] = None
    error: Optional[str] = None
    score_position: Optional[int] = None
    L_eps: Optional[float] = None
    L_call_noresult: Optional[float] = None
    L_plus: Optional[float] = None
    L_minus: Optional[float] = None
    score: Optional[float] = None
    kept: bool = False

    @property
    def call(self) -> ToolCall:
        """The call with its result (``result`` None means not executed yet)."""
        return ToolCall(self.tool, self.input or "", self.result)

    @property
    def scorable(self) -> bool:
        return self.status == OK and self.result is not None

    def to_json(self) -> str:
        return json.dumps({k: _finite(v) for k, v in asdict(self).items()}, ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, line: str) -> "Candidate":
        data = json.loads(line)
        names = {f.name for f in fields(cls)}
        if not isinstance(data, dict):
            raise ValueError(f"a candidate record is a JSON object, not {type(data).__name__}")
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"candidate record has unknown field(s) {sorted(unknown)}; "
                             "was it written by another version of toolformer-kit?")
        missing = [f.name for f in fields(cls) if f.name not in data and f.default is MISSING]
        if missing:
            raise ValueError(f"candidate record lacks field(s) {missing}")
        return cls(**data)


def _finite(value):
    """JSON has no NaN/inf; a loss that overflowed is written as null (never as a number)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_jsonl(path, records) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(rec.to_json() + "\n")


def read_jsonl(path, fix: str = "") -> list[Candidate]:
    """The candidates of a JSONL log, or one error naming the file, the line and ``fix``."""
    from ..files import read_jsonl as checked

    return checked(path, fix, Candidate.from_json)
