"""Step 3 of annotation: run every distinct sampled call once, through the tool engine.

The engine (:class:`toolformer_kit.tools.engine.ToolEngine`) brings the result cache and timeouts;
this module only decides what to run. A call is run once per distinct input per tool *object*:
most tools are one object for the whole corpus, but the Calendar is bound to each document's own
date (:func:`~toolformer_kit.tools.calendar.calendar_tool_for`), so the same ``Calendar()`` gives a
different, correct result in every document, and a WikiSearch is told which document it must not
return. Such per-document objects differ in ``version`` (part of the cache key) and share one engine
per tool name, so a long run opens one cache connection per tool, not one per document.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from ..calls import ToolCall
from . import records as R

log = logging.getLogger(__name__)


@dataclass
class ExecStats:
    calls: int = 0  # distinct calls run (or found in the cache)
    cached: int = 0
    errors: int = 0
    seconds: float = 0.0


class Executor:
    """Keeps one engine per tool object (name + version) for the length of a run."""

    def __init__(self, timeout: float = 10.0, cache_path: str | None = None, engine_factory=None):
        self.timeout = timeout
        self.cache_path = cache_path
        self._factory = engine_factory
        self._engines: dict = {}
        self.stats = ExecStats()

    def _engine(self, tool):
        if tool.name not in self._engines:
            factory = self._factory
            if factory is None:
                from ..tools.engine import ToolEngine as factory
            self._engines[tool.name] = factory({tool.name: tool}, timeout=self.timeout, cache_path=self.cache_path)
        engine = self._engines[tool.name]
        engine.tools = {tool.name: tool}  # this document's variant of the tool
        return engine

    def run(self, candidates: Sequence[R.Candidate], tool_for: Callable[[R.Candidate], object]) -> None:
        """Set ``result`` (or ``status='exec_error'`` and ``error``) on every candidate with status ok."""
        t0 = time.perf_counter()
        groups: dict = {}
        for c in candidates:
            if c.status != R.OK:
                continue
            tool = tool_for(c)
            key = (tool.name, getattr(tool, "version", ""))
            groups.setdefault(key, (tool, []))[1].append(c)
        for tool, cands in groups.values():
            inputs = sorted({c.input or "" for c in cands})
            found = self._engine(tool).run([ToolCall(tool.name, i) for i in inputs])
            by_input = dict(zip(inputs, found))
            self.stats.calls += len(inputs)
            self.stats.cached += sum(bool(getattr(r, "cached", False)) for r in found)
            for c in cands:
                res = by_input[c.input or ""]
                if res.result is None:
                    c.status, c.error = R.EXEC_ERROR, res.error or "no result"
                else:
                    c.result = res.result
            self.stats.errors += sum(r.result is None for r in found)
        self.stats.seconds += time.perf_counter() - t0
