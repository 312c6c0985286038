"""The task registry: every benchmark of the paper's §4 registers itself on import (no torch here).

>>> "svamp" in TASKS and "lama-trex" in TASKS and "dateset" in TASKS
True
>>> get_task("svamq")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
toolformer_kit.registry.UnknownNameError: unknown task 'svamq'; did you mean 'svamp'? Known: ...
"""

from . import lama, math, qa, temporal, text, wikicloze  # noqa: F401  (registration)
from .base import METRICS, TASKS, Example, Task, ToolPolicy, subset, task_list

__all__ = ["METRICS", "TASKS", "Example", "Task", "ToolPolicy", "get_task", "subset", "task_list"]


def get_task(name: str) -> Task:
    return TASKS.get(name)
