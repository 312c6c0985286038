"""Run a batch of tool calls safely: checked inputs, a per-call timeout, isolation, a shared cache.

Why each part:

* **Isolation.** Tools are other people's code (a user's tool, a model, an index). A call that
  raises gives that call an error and no result; the rest of the batch carries on.
* **Timeouts without signals.** ``signal.alarm`` only works in the main thread, so each call runs
  in its own daemon thread and the batch stops waiting for it after ``timeout`` seconds. A
  Python thread cannot be killed: a hung call keeps running in the background, but its result is
  thrown away, it never holds up the batch, and, being a daemon, it never holds up exit.
* **Cache.** Annotation asks the same calls again and again (m samples per position often agree,
  and runs are resumed). Results live in SQLite, keyed by sha256 of (tool, tool version, input),
  in WAL mode with a busy timeout so several worker processes can share one file. Errors and
  timeouts are not cached (they may be transient); "no result" is (it is an answer).
  Tools marked ``cacheable=False`` (the Calendar, whose answer depends on the date) skip it.
* **Setup.** A tool's ``prepare`` (loading a model, building an index) runs once, before its calls
  and outside their clocks, with no timeout: building an index of a full dump legitimately takes
  long. A tool with ``concurrency=1`` (the model-backed ones) gets one call at a time, so a call
  waiting for the model is not counted as hanging.
* **Batches.** A tool with a ``batch_fn`` (QA's reader) gets its pending calls in chunks of
  ``batch_size``, each chunk one generation pass in one worker thread whose timeout is the sum of
  its calls' timeouts. A chunk that raises is re-run call by call, so a bad input still costs only
  its own call; a chunk that overruns costs its calls (they time out together).
* **Counters.** Per tool: calls, cache hits, no-results, failures, timeouts, seconds.

>>> from toolformer_kit.calls import ToolCall
>>> engine = ToolEngine()
>>> [r.result for r in engine.run([ToolCall("Calculator", "6 * 7"), ToolCall("Calculator", "6 *")])]
['42', None]
>>> engine.run([ToolCall("Calculater", "1 + 1"), ToolCall("Calculator", "")])[0].error  # doctest: +ELLIPSIS
"unknown tool 'Calculater'; did you mean 'Calculator'? Known: Calculator, ..."
>>> engine.stats.summary().splitlines()[1]
'Calculator: 3 calls, 0 cached, 1 results, 1 none, 0 failed, 0 timed out, 1 bad input, 0.00 s'
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import queue
import sqlite3
import threading
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Mapping, Optional, Sequence

from tqdm import tqdm

from ..calls import ToolCall
from ..config import ConfigError
from ..registry import Registry, UnknownNameError
from . import get_tool
from .base import Tool

DEFAULT_TIMEOUT = 10.0  # seconds, for a tool without its own timeout when the caller sets none

log = logging.getLogger(__name__)


@dataclass
class ExecResult:
    """What one call gave: a result, or None with ``error`` saying why (None error = no result)."""

    result: Optional[str]
    error: Optional[str] = None
    cached: bool = False
    seconds: float = 0.0


@dataclass
class ToolStats:
    calls: int = 0
    cache_hits: int = 0
    results: int = 0
    no_result: int = 0
    failures: int = 0
    timeouts: int = 0
    bad_input: int = 0
    seconds: float = 0.0


@dataclass
class EngineStats:
    """Counters per tool name; ``total()`` sums them."""

    per_tool: dict[str, ToolStats] = field(default_factory=lambda: defaultdict(ToolStats))

    def __getitem__(self, tool: str) -> ToolStats:
        return self.per_tool[tool]

    def total(self) -> ToolStats:
        out = ToolStats()
        for s in self.per_tool.values():
            for key, value in asdict(s).items():
                setattr(out, key, getattr(out, key) + value)
        return out

    @property
    def calls(self) -> int:
        return self.total().calls

    @property
    def cache_hits(self) -> int:
        return self.total().cache_hits

    @property
    def failures(self) -> int:
        return self.total().failures

    @property
    def timeouts(self) -> int:
        return self.total().timeouts

    def summary(self) -> str:
        """One line per tool, for logs."""
        return "\n".join(f"{name}: {s.calls} calls, {s.cache_hits} cached, {s.results} results, "
                         f"{s.no_result} none, {s.failures} failed, {s.timeouts} timed out, "
                         f"{s.bad_input} bad input, {s.seconds:.2f} s"
                         for name, s in sorted(self.per_tool.items()))


def cache_key(tool: Tool, text: str) -> str:
    """sha256 over the tool's name and version and the input."""
    return hashlib.sha256(f"{tool.name}\x1f{tool.version}\x1f{text}".encode("utf-8", "surrogatepass")).hexdigest()


def check_cache_file(path: str | Path) -> Path:
    """Make ``path`` usable as a cache before any work is done: a folder is a usage error, and a file
    that is not a SQLite database is moved aside (with a warning) so a fresh cache starts there.

    Why at start-up: a broken cache used to surface only after the models had loaded and sampled.
    """

    path = Path(path).expanduser()
    if path.is_dir():
        raise ConfigError(f"tool cache {path} is a folder; pass a file path such as {path / 'tool-cache.sqlite'}")
    if path.is_file() and path.stat().st_size:
        try:
            with contextlib.closing(sqlite3.connect(str(path), timeout=60)) as db:
                db.execute("PRAGMA schema_version").fetchone()
        except sqlite3.DatabaseError as exc:
            if "locked" in str(exc):
                return path
            aside = path.with_name(f"{path.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}")
            os.replace(path, aside)
            log.warning("tool cache %s is not a SQLite database (%s); moved it to %s and started a fresh one",
                        path, exc, aside)
    return path


class ResultCache:
    """A SQLite table key → (result or NULL); safe to share between threads and processes."""

    def __init__(self, path: str | Path):
        path = check_cache_file(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), timeout=60, check_same_thread=False,
                                   isolation_level=None)
        self._lock = threading.Lock()
        with self._lock:
            self._setup()

    def _setup(self, attempts: int = 60) -> None:
        """Switch to WAL and create the table. Two processes opening a new file at once can find it
        locked here: SQLite's busy timeout does not cover a journal-mode change, so retry it."""
        for attempt in range(attempts):
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.execute("CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, tool TEXT, "
                                 "input TEXT, result TEXT, created REAL)")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == attempts - 1:
                    raise
                time.sleep(0.05 + 0.05 * attempt)

    def get_many(self, keys: Sequence[str]) -> dict[str, Optional[str]]:
        found: dict[str, Optional[str]] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = list(keys[start:start + 500])
                marks = ",".join("?" * len(chunk))
                for key, result in self._db.execute(f"SELECT key, result FROM results WHERE key IN ({marks})", chunk):
                    found[key] = result
        return found

    def put_many(self, rows: Sequence[tuple[str, str, str, Optional[str]]]) -> None:
        if not rows:
            return
        now = time.time()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?)",
                                 [(k, t, i, r, now) for k, t, i, r in rows])
            self._db.execute("COMMIT")

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM results").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _worker(tool: Tool, text: str, key: int, out: "queue.Queue") -> None:
    start = time.perf_counter()
    try:
        result, error = tool(text), None
    except BaseException as exc:  # isolation: a tool's bug (even sys.exit) is that call's error only
        result, error = None, f"{tool.name} failed: {type(exc).__name__}: {exc}"
    out.put((key, result, error, time.perf_counter() - start))


def _batch_worker(tool: Tool, texts: list[str], out: "queue.Queue") -> None:
    start = time.perf_counter()
    try:
        results, error = tool.run_many(texts), None
    except BaseException as exc:  # isolation, as in _worker; the caller re-runs the chunk call by call
        results, error = None, f"{tool.name} failed: {type(exc).__name__}: {exc}"
    out.put((results, error, time.perf_counter() - start))


class ToolEngine:
    """Executes batches of :class:`ToolCall` against a set of tools (default: the registry)."""

    def __init__(self, tools: Mapping[str, Tool] | None = None, timeout: float | None = None,
                 cache_path: str | None = None, workers: int = 4, progress: bool = False):
        self.tools = tools
        self.progress = progress  # a tqdm bar per batch, for batches a user waits on
        self.timeout = timeout
        self.workers = max(1, workers)
        self.cache = ResultCache(cache_path) if cache_path else None
        self.stats = EngineStats()
        self._prepared: dict[int, Tool] = {}
        self._abandoned: list[threading.Thread] = []

    def _tool(self, name: str) -> Tool:
        if self.tools is None:
            return get_tool(name)
        if name not in self.tools:
            known: Registry[Tool] = Registry("tool")
            for k, v in self.tools.items():
                known.add(k, v)
            raise UnknownNameError(known.unknown_message(name))
        return self.tools[name]

    def _prepare(self, tool: Tool) -> Optional[str]:
        """Run a tool's one-off setup outside the per-call clock; an error here fails its calls."""
        if tool.prepare is None or id(tool) in self._prepared:
            return None
        start = time.perf_counter()
        try:
            tool.prepare()
        except Exception as exc:
            return f"{tool.name} could not start: {type(exc).__name__}: {exc}"
        self._prepared[id(tool)] = tool  # holding the tool keeps its id from being reused
        log.debug("prepared %s in %.1f s", tool.name, time.perf_counter() - start)
        return None

    def run(self, calls: Sequence[ToolCall]) -> list[ExecResult]:
        """One :class:`ExecResult` per call, in order; never raises for a tool's or a call's fault."""
        results: list[Optional[ExecResult]] = [None] * len(calls)
        todo: dict[tuple[str, str], list[int]] = defaultdict(list)  # identical calls run once
        tools: dict[str, Tool] = {}
        for i, call in enumerate(calls):
            error = self._admit(call, tools)
            if error:
                results[i] = ExecResult(None, error)
            else:
                todo[(call.tool, call.input)].append(i)
        keys = {job: cache_key(tools[job[0]], job[1]) for job in todo if tools[job[0]].cacheable}
        cached = self._cache_read(list(keys.values()))
        pending = []
        for job, indices in todo.items():
            if job in keys and keys[job] in cached:
                self._record(job[0], indices, ExecResult(cached[keys[job]], cached=True))
                for i in indices:
                    results[i] = ExecResult(cached[keys[job]], cached=True)
            else:
                pending.append(job)
        fresh = self._execute(pending, tools)
        for job, res in fresh.items():
            self._record(job[0], todo[job], res)
            for i in todo[job]:
                results[i] = ExecResult(res.result, res.error, False, res.seconds)
        self._cache_write([(keys[j], j[0], j[1], r.result) for j, r in fresh.items()
                           if j in keys and r.error is None])
        return [r if r is not None else ExecResult(None, "internal error: call not run") for r in results]

    def _cache_read(self, keys: list[str]) -> dict[str, Optional[str]]:
        """Cached results; a cache that cannot be read is logged and skipped, never fatal."""
        if self.cache is None or not keys:
            return {}
        try:
            return self.cache.get_many(keys)
        except sqlite3.Error as exc:
            log.warning("tool cache unreadable (%s); running the calls instead", exc)
            return {}

    def _cache_write(self, rows: list) -> None:
        if self.cache is None or not rows:
            return
        try:
            self.cache.put_many(rows)
        except sqlite3.Error as exc:
            log.warning("could not write %d results to the tool cache (%s); they stay uncached", len(rows), exc)

    def _admit(self, call: ToolCall, tools: dict[str, Tool]) -> Optional[str]:
        """The one-line reason a call cannot run (unknown tool, bad input), or None."""
        try:
            tool = tools.get(call.tool) or self._tool(call.tool)
        except Exception as exc:  # unknown name, or a tool module that fails to import
            self.stats[call.tool].calls += 1
            self.stats[call.tool].failures += 1
            if isinstance(exc, UnknownNameError):
                return str(exc)
            return f"tool {call.tool} could not be loaded: {type(exc).__name__}: {exc}"
        tools[call.tool] = tool
        problem = tool.check_input(call.input)
        if problem:
            self.stats[call.tool].calls += 1
            self.stats[call.tool].bad_input += 1
        return problem

    def _record(self, name: str, indices: list[int], res: ExecResult) -> None:
        s = self.stats[name]
        s.calls += len(indices)
        s.cache_hits += len(indices) if res.cached else 0
        s.seconds += res.seconds
        if res.error is None:
            s.results += len(indices) if res.result is not None else 0
            s.no_result += len(indices) if res.result is None else 0
        elif res.error.startswith("timed out"):
            s.timeouts += len(indices)
        else:
            s.failures += len(indices)

    def _execute(self, jobs: list[tuple[str, str]], tools: dict[str, Tool]) -> dict[tuple[str, str], ExecResult]:
        """Run jobs in at most ``workers`` daemon threads, abandoning any that overrun."""
        done: dict[tuple[str, str], ExecResult] = {}
        for name in {j[0] for j in jobs}:
            error = self._prepare(tools[name])
            if error:
                for job in [j for j in jobs if j[0] == name]:
                    done[job] = ExecResult(None, error)
        waiting = [j for j in jobs if j not in done]
        for name in {j[0] for j in waiting if tools[j[0]].batch_fn is not None}:
            mine = [j for j in waiting if j[0] == name]
            if len(mine) > 1:
                done.update(self._run_batches(tools[name], [j[1] for j in mine]))
                waiting = [j for j in waiting if j not in done]
        out: queue.Queue = queue.Queue()  # one per batch: late results of abandoned calls land here unread
        running: dict[int, tuple[tuple[str, str], float, threading.Thread]] = {}
        serial = 0
        with tqdm(total=len(jobs), initial=len(done), desc="tool calls", unit=" calls", leave=False,
                  disable=not self.progress) as bar:
            while waiting or running:
                for job in self._startable(waiting, running, tools):
                    waiting.remove(job)
                    serial += 1
                    thread = threading.Thread(target=_worker, args=(tools[job[0]], job[1], serial, out),
                                              daemon=True, name=f"tool-{job[0]}")
                    thread.start()
                    running[serial] = (job, time.monotonic(), thread)
                before = len(done)
                self._collect(out, running, done, tools)
                bar.update(len(done) - before)
        return done

    def _run_batches(self, tool: Tool, texts: list[str]) -> dict[tuple[str, str], ExecResult]:
        """Results of the chunks that ran as batches; a chunk that raised is left out (the caller
        runs its calls one by one)."""
        done: dict[tuple[str, str], ExecResult] = {}
        size = max(1, tool.batch_size)
        chunks = [texts[i:i + size] for i in range(0, len(texts), size)]
        for chunk in tqdm(chunks, desc=f"{tool.name} batches", unit=" batch", leave=False,
                          disable=not self.progress or len(chunks) < 2):
            out: queue.Queue = queue.Queue()
            thread = threading.Thread(target=_batch_worker, args=(tool, chunk, out), daemon=True,
                                      name=f"tool-{tool.name}-batch")
            thread.start()
            limit = self._limit(tool) * len(chunk)
            try:
                results, error, seconds = out.get(timeout=limit)
            except queue.Empty:
                self._abandoned.append(thread)
                log.warning("a batch of %d %s calls timed out after %.1f s; its thread is abandoned",
                            len(chunk), tool.name, limit)
                done.update({(tool.name, t): ExecResult(None, f"timed out after {limit:g} s (a batch of "
                             f"{len(chunk)})", False, limit / len(chunk)) for t in chunk})
                continue
            if error is not None:
                log.warning("%s; running its %d calls one by one", error, len(chunk))
                continue
            done.update({(tool.name, t): ExecResult(r, None, False, seconds / len(chunk))
                         for t, r in zip(chunk, results)})
        return done

    def _startable(self, waiting: list, running: dict, tools: dict[str, Tool]) -> list[tuple[str, str]]:
        """Jobs that fit in the free workers and their tool's ``concurrency`` (a model-backed tool
        runs one call at a time, so a queued call's clock must not start before its turn)."""
        busy = defaultdict(int)
        for job, *_ in running.values():
            busy[job[0]] += 1
        chosen = []
        for job in waiting:
            if len(running) + len(chosen) >= self.workers:
                break
            limit = tools[job[0]].concurrency
            if limit is None or busy[job[0]] < max(1, limit):
                busy[job[0]] += 1
                chosen.append(job)
        return chosen

    def _limit(self, tool: Tool) -> float:
        """The engine's timeout (the user's) bounds every tool; a tool's own is used only without it."""
        if self.timeout is not None:
            return min(self.timeout, tool.timeout) if tool.timeout is not None else self.timeout
        return tool.timeout if tool.timeout is not None else DEFAULT_TIMEOUT

    def abandoned_alive(self) -> int:
        """Timed-out calls whose threads still run (a process exiting under them may abort)."""
        return sum(t.is_alive() for t in self._abandoned)

    def _collect(self, out: "queue.Queue", running: dict, done: dict, tools: dict[str, Tool]) -> None:
        """Wait for one result or the earliest deadline, then retire whatever finished or overran."""
        now = time.monotonic()
        deadline = min(start + self._limit(tools[job[0]]) for job, start, _ in running.values())
        try:
            key, result, error, seconds = out.get(timeout=max(0.0, deadline - now))
            if key in running:
                job, *_ = running.pop(key)
                done[job] = ExecResult(result, error, False, seconds)
        except queue.Empty:
            pass
        now = time.monotonic()
        for key, (job, start, thread) in list(running.items()):
            limit = self._limit(tools[job[0]])
            if now - start >= limit:
                running.pop(key)
                self._abandoned.append(thread)
                log.warning("%s(%r) timed out after %.1f s; its thread is abandoned", job[0], job[1][:60], limit)
                done[job] = ExecResult(None, f"timed out after {limit:g} s", False, now - start)
