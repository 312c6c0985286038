"""The task registry: every benchmark of the paper's §4 registers itself on import (no torch here).

>>> "svamp" in TASKS and "lama-trex" in TASKS and "dateset" in TASKS
True
>>> get_task("dateset@7").name, get_task("dateset@7").load(".")[0] != get_task("dateset").load(".")[0]
('dateset@7', True)
>>> get_task("svamq")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
toolformer_kit.registry.UnknownNameError: unknown task 'svamq'; did you mean 'svamp'? Known: ...
"""

import dataclasses

from ...config import ConfigError
from . import lama, math, qa, temporal, text, wikicloze  # noqa: F401  (registration)
from .base import METRICS, TASKS, Example, Task, ToolPolicy, subset, task_list

__all__ = ["METRICS", "TASKS", "Example", "Task", "ToolPolicy", "get_task", "subset", "task_list"]


SEEDED = {"dateset": temporal.load_dateset, "dateset-days": temporal.load_dateset_days}


def get_task(name: str) -> Task:
    """A registered task; ``dateset@SEED`` / ``dateset-days@SEED`` draws another, unseen DATESET
    (the same templates, other dates and questions) for a second look at a Calendar model."""
    base, sep, seed = name.partition("@")
    if sep and base in SEEDED:
        if not seed.isdigit():
            raise ConfigError(f"task {name!r}: the seed after '@' must be a whole number, e.g. {base}@1")
        load = SEEDED[base]
        task = TASKS.get(base)
        return dataclasses.replace(task, name=name, description=f"{task.description.split('(')[0].strip()} (seed {seed})",
                                   loader=lambda data_dir, _s=int(seed): load(data_dir, seed=_s))
    return TASKS.get(name)
