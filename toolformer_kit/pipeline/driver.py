"""The one loop over a run's stages, for ``toolformer pipeline``, every recipe and every study.

The three used to loop each in their own way (the pipeline timed its stages and gave their memory
back, a recipe checked its ledger and printed its ETA, a study did the same as the recipe without the
memory): one loop now runs a stage, times it, gives its memory back and logs what it holds, and a
runner says what it adds around a stage through a :class:`Watch` (skip a finished one, record the
seconds in a ledger, bank the outputs).
"""

from __future__ import annotations

import gc
import logging
import os
import time
from typing import Any, Callable, Iterable, MutableMapping, NamedTuple, Optional, Protocol

log = logging.getLogger(__name__)


class Step(Protocol):
    """What the loop needs of a stage: its name (the log's, the ledger's, the report's timings)
    and what runs it. A runner's own step type carries more (a recipe's guard, a study's settings)."""

    name: str
    run: Callable[[], Any]


class Stage(NamedTuple):
    """A stage with nothing more than a name, what runs it and, for a recipe, the ``KEYS`` entry
    of the settings that guard it (None: the stage decides by itself whether it has work left)."""

    name: str
    guard: Optional[str]
    run: Callable[[], Any]


class Watch:
    """What a runner does around each stage. This one skips nothing and keeps each stage's
    seconds in :attr:`seconds` (the pipeline's timings); a recipe or a study overrides it."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def finished(self, step: Step) -> bool:
        """True when the stage is done already and is skipped."""
        return False

    def start(self, step: Step) -> None:
        log.info("stage %s", step.name)

    def finish(self, step: Step, seconds: float) -> None:
        self.seconds[step.name] = seconds


def run_stages(steps: Iterable[Step], watch: Watch | None = None,
               results: MutableMapping[str, Any] | None = None) -> MutableMapping[str, Any]:
    """Every stage of ``steps`` in order that ``watch`` does not call finished; each one's return
    value goes into ``results`` under its name (a later stage's closure reads an earlier one's
    output there), and its memory is given back before the next one allocates its own. An
    exception (an interrupt included) leaves the stage unrecorded, so a re-run does it again."""
    watch = watch if watch is not None else Watch()
    results = {} if results is None else results
    for step in steps:
        if watch.finished(step):
            continue
        watch.start(step)
        t0 = time.perf_counter()
        results[step.name] = step.run()
        seconds = time.perf_counter() - t0
        release_memory()
        log.info("stage %s done in %.0f s; memory now %.1f GB, peak so far %.1f GB", step.name, seconds,
                 *memory_gb())
        watch.finish(step, seconds)
    return results


def release_memory() -> None:
    """Give a finished stage's memory back before the next stage allocates its own: the trainer's
    optimizer and models sit in reference cycles, and glibc keeps freed heap pages (measured: 6.8 GB
    still resident after fine-tuning Qwen 0.5B without the trim, the run's peak 1–2 GB higher)."""
    import ctypes
    import ctypes.util

    gc.collect()
    try:
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to trim
        pass


def memory_gb() -> tuple[float, float]:
    """This process's resident memory now and its peak so far, in GB: the run's budget (≤ 16 GB
    on a laptop) is checked stage by stage in the log."""
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            now = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # no /proc (macOS): the peak is all there is
        now = peak
    return now / 1e9, peak / 1e9
