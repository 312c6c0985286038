"""What an evaluation task is: examples with prompts and gold answers, a metric, and a tool policy.

Why a task carries its own tool policy: the paper removes the tool that would make a benchmark
trivial — WikiSearch on LAMA (the statements come from Wikipedia) and QA on the QA benchmarks
(the QA model was trained on Natural Questions) — and DATESET's Calendar must say the example's
own "today". Keeping that next to the task means no caller can forget it.

>>> task = Task("demo", "a demo", loader=lambda d: [Example("1", "2 + 2 =", ("4",))], metric="math")
>>> ex = task.load("/nowhere")[0]
>>> task.score("4, obviously", ex), task.score("five", ex)
(True, False)
"""

from __future__ import annotations

import datetime as dt
import hashlib
import textwrap
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ...config import ConfigError
from ...registry import Registry
from ...tools.calendar import calendar_tool_for
from .. import metrics as M


@dataclass(frozen=True)
class Example:
    """One test item. ``answers`` are gold strings (aliases); ``meta`` holds task extras such as
    DATESET's ``today`` (ISO date) that the tool policy reads."""

    id: str
    prompt: str
    answers: tuple[str, ...]
    meta: Mapping[str, Any] = field(default_factory=dict)


Metric = Callable[[str, Example], bool]
METRICS: Registry[Metric] = Registry("metric")


@METRICS.register("math")
def _math(prediction: str, ex: Example) -> bool:
    gold = M.parse_number(ex.answers[0])
    return gold is not None and M.math_correct(prediction, gold)


@METRICS.register("first5")
def _first5(prediction: str, ex: Example) -> bool:
    return M.within_first_words(prediction, ex.answers, 5)


@METRICS.register("first10")
def _first10(prediction: str, ex: Example) -> bool:
    return M.within_first_words(prediction, ex.answers, 10)


@METRICS.register("first20")
def _first20(prediction: str, ex: Example) -> bool:
    return M.within_first_words(prediction, ex.answers, 20)


@dataclass(frozen=True)
class ToolPolicy:
    """Which tools a task may not use, and whether Calendar's "today" is the example's date."""

    excluded: tuple[str, ...] = ()
    calendar_from_example: bool = False

    def tools_for(self, example: Example, tools: Mapping[str, Any]) -> dict[str, Any]:
        """The tools available while answering ``example``."""
        allowed = {name: tool for name, tool in tools.items() if name not in self.excluded}
        if self.calendar_from_example and "Calendar" in allowed and "today" in example.meta:
            allowed["Calendar"] = calendar_tool_for(dt.date.fromisoformat(example.meta["today"]))
        return allowed


@dataclass
class Task:
    """A benchmark: ``loader(data_dir)`` reads its examples; ``metric`` names a :data:`METRICS` entry.

    ``exercises`` names the tool the paper measures with the task (its Tables 3-7 are grouped that
    way): a pipeline that annotates a tool can then check that some task measures it.
    """

    name: str
    description: str
    loader: Callable[[Path], list[Example]]
    metric: str = "first5"
    policy: ToolPolicy = field(default_factory=ToolPolicy)
    max_new_tokens: int = 32
    kind: str = "generate"  # or "perplexity"
    exercises: str = ""  # the tool the task measures ("" for perplexity: calls are off)
    note: str = ""  # a choice the reader of a report should know about (shown with the task)

    def load(self, data_dir: str | Path) -> list[Example]:
        """The examples, or one BenchmarkError naming the task, the file and the field at fault."""
        _LAST_FILE.path = None
        try:
            return self.loader(Path(data_dir))
        except (FileNotFoundError, BenchmarkError):
            raise
        except Exception as exc:
            where = _LAST_FILE.path or data_dir
            what = f"missing field {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
            raise BenchmarkError(f"task {self.name}: cannot read {where} ({what}); check the file against "
                                 "shared/data/README.md, or drop the task from --tasks") from None

    def score(self, prediction: str, example: Example) -> bool:
        return METRICS.get(self.metric)(prediction, example)


TASKS: Registry[Task] = Registry("task", case_sensitive=False)


def register(task: Task) -> Task:
    TASKS.add(task.name, task)
    return task


def task_list(names: Sequence[str] | None = None) -> str:
    """One line per task: name, the tool it exercises, what it is (the ``eval --help`` listing).

    >>> print(task_list(["svamp", "wikitext2"]))
    svamp      Calculator  SVAMP math word problems
    wikitext2  -           WikiText-2 raw test perplexity, calls disabled
    """
    tasks = [TASKS.get(n) for n in (names if names is not None else TASKS.names())]
    width = max(len(t.name) for t in tasks) + 2
    lines = []
    for t in tasks:
        lines.append(f"{t.name:<{width}}{t.exercises or '-':<12}{t.description}")
        if t.note:
            lines += textwrap.wrap(t.note, 100, initial_indent=" " * (width + 12),
                                   subsequent_indent=" " * (width + 12))
    return "\n".join(lines)


class BenchmarkError(ConfigError):
    """A benchmark file that is malformed or has the wrong shape; the message names file and field."""


_LAST_FILE = threading.local()  # the file a loader asked for last, so a parse error can name it


def require(path: Path, what: str) -> Path:
    """``path`` if it exists, else one error that names the flag to fix."""
    _LAST_FILE.path = path
    if not path.exists():
        raise FileNotFoundError(
            f"{what} not found at {path}; pass --data-dir pointing at a folder laid out like "
            "shared/data/benchmarks (see its README), or drop the task from --tasks")
    return path


def subset(examples: Sequence[Example], limit: int | None, salt: str = "") -> list[Example]:
    """The first ``limit`` examples in a stable hash order of their ids.

    Why not the first ``limit`` in file order: files are often sorted (by type, grade or
    relation), so a prefix would be a biased sample; a hash order is a fixed pseudo-random sample
    that does not depend on the file order and grows by extension as ``limit`` grows.

    >>> exs = [Example(str(i), "", ()) for i in range(10)]
    >>> small, big = subset(exs, 3), subset(exs, 5)
    >>> [e.id for e in big[:3]] == [e.id for e in small], len(subset(exs, None))
    (True, 10)
    """
    ordered = sorted(examples, key=lambda e: hashlib.sha1(f"{salt}|{e.id}".encode()).hexdigest())
    return ordered if limit is None else ordered[:limit]
