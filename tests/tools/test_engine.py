"""The execution engine: isolation of raising and hanging tools, the persistent cache, counters,
and one clear message for bad calls."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import pytest

from toolformer_kit.calls import ToolCall
from toolformer_kit.tools import Tool, get_tool
from toolformer_kit.tools.engine import ResultCache, ToolEngine


def _tool(name, fn, **kw):
    demo = (f"x", f"[{name}(x)] x")
    return Tool(name, fn, f"Use {name}.", [demo], **kw)


@pytest.fixture
def release():
    event = threading.Event()
    yield event
    event.set()  # let the abandoned thread finish


@pytest.fixture
def counting():
    seen = []

    def upper(text):
        seen.append(text)
        return text.upper()

    return _tool("Upper", upper), seen


def test_hanging_tool_is_abandoned_and_batch_finishes(release, counting):
    upper, _ = counting
    hang = _tool("Hang", lambda text: release.wait(60) and "late")
    engine = ToolEngine({"Hang": hang, "Upper": upper}, timeout=0.5, workers=2)
    start = time.monotonic()
    out = engine.run([ToolCall("Hang", "a"), ToolCall("Upper", "b"), ToolCall("Hang", "c"), ToolCall("Upper", "d")])
    elapsed = time.monotonic() - start
    assert elapsed < 5, elapsed  # two hung calls with a 0.5 s limit, not 60 s
    assert [r.result for r in out] == [None, "B", None, "D"]
    assert out[0].error.startswith("timed out") and out[2].error.startswith("timed out")
    assert engine.stats["Hang"].timeouts == 2 and engine.stats["Upper"].results == 2


def test_hung_threads_do_not_block_later_batches(release, counting):
    upper, _ = counting
    hang = _tool("Hang", lambda text: release.wait(60) and "late")
    engine = ToolEngine({"Hang": hang, "Upper": upper}, timeout=0.3, workers=1)
    engine.run([ToolCall("Hang", "a")])
    assert engine.run([ToolCall("Upper", "next")])[0].result == "NEXT"


@pytest.mark.parametrize("concurrency", [1, None])
def test_calls_waiting_for_a_shared_model_are_not_timed_out(concurrency):
    model_lock = threading.Lock()

    def slow_model(text):
        with model_lock:  # one model: calls queue here
            time.sleep(0.25)
            return text

    tool = _tool("Model", slow_model, concurrency=concurrency)
    engine = ToolEngine({"Model": tool}, timeout=0.6, workers=4)
    out = engine.run([ToolCall("Model", str(i)) for i in range(4)])
    if concurrency == 1:  # each call's clock starts when it gets the model
        assert [r.result for r in out] == ["0", "1", "2", "3"] and engine.stats["Model"].timeouts == 0
    else:  # without the limit, calls queued behind the lock are wrongly counted as hanging
        assert engine.stats["Model"].timeouts >= 1


def test_raising_tool_is_isolated(counting):
    upper, _ = counting

    def boom(text):
        raise RuntimeError("index on fire")

    engine = ToolEngine({"Boom": _tool("Boom", boom), "Upper": upper})
    out = engine.run([ToolCall("Boom", "a"), ToolCall("Upper", "b")])
    assert out[0].result is None and "RuntimeError: index on fire" in out[0].error
    assert out[1].result == "B"
    assert engine.stats["Boom"].failures == 1 and engine.stats.failures == 1


def test_failing_setup_fails_only_that_tools_calls(counting):
    upper, _ = counting

    def broken_setup():
        raise OSError("model folder missing")

    lazy = _tool("Lazy", str.upper, prepare=broken_setup)
    out = ToolEngine({"Lazy": lazy, "Upper": upper}).run([ToolCall("Lazy", "a"), ToolCall("Upper", "b")])
    assert "could not start" in out[0].error and out[1].result == "B"


def test_second_run_is_served_from_cache(tmp_path, counting):
    upper, seen = counting
    calls = [ToolCall("Upper", "abc"), ToolCall("Upper", "def"), ToolCall("Upper", "abc")]
    first = ToolEngine({"Upper": upper}, cache_path=str(tmp_path / "c.sqlite")).run(calls)
    assert [r.cached for r in first] == [False, False, False] and seen == ["abc", "def"]  # deduplicated
    engine = ToolEngine({"Upper": upper}, cache_path=str(tmp_path / "c.sqlite"))  # a new engine: from disk
    second = engine.run(calls)
    assert [r.result for r in second] == ["ABC", "DEF", "ABC"] and all(r.cached for r in second)
    assert seen == ["abc", "def"]  # the tool was not called again
    assert engine.stats["Upper"].cache_hits == 3


def test_no_result_is_cached_but_errors_are_not(tmp_path):
    calls = []

    def flaky(text):
        calls.append(text)
        if text == "err":
            raise ValueError("transient")
        return None

    tool = _tool("Flaky", flaky)
    path = str(tmp_path / "c.sqlite")
    ToolEngine({"Flaky": tool}, cache_path=path).run([ToolCall("Flaky", "none"), ToolCall("Flaky", "err")])
    out = ToolEngine({"Flaky": tool}, cache_path=path).run([ToolCall("Flaky", "none"), ToolCall("Flaky", "err")])
    assert out[0].cached and out[0].result is None
    assert not out[1].cached and calls == ["none", "err", "err"]


def test_uncacheable_tool_and_version_change_bypass_cache(tmp_path):
    path = str(tmp_path / "c.sqlite")
    clock = _tool("Clock", lambda _t: str(time.perf_counter_ns()), takes_input=False, cacheable=False)
    a = ToolEngine({"Clock": clock}, cache_path=path).run([ToolCall("Clock", "")])[0]
    b = ToolEngine({"Clock": clock}, cache_path=path).run([ToolCall("Clock", "")])[0]
    assert not b.cached and a.result != b.result
    v1 = _tool("Model", lambda t: "v1", version="1")
    v2 = _tool("Model", lambda t: "v2", version="2")
    ToolEngine({"Model": v1}, cache_path=path).run([ToolCall("Model", "q")])
    assert ToolEngine({"Model": v2}, cache_path=path).run([ToolCall("Model", "q")])[0].result == "v2"


def test_cache_is_shared_by_concurrent_processes(tmp_path):
    path = tmp_path / "shared.sqlite"
    script = textwrap.dedent(f"""
        import sys
        from toolformer_kit.calls import ToolCall
        from toolformer_kit.tools.engine import ToolEngine
        offset = int(sys.argv[1])
        engine = ToolEngine(cache_path={str(path)!r})
        for start in range(0, 300, 30):
            calls = [ToolCall("Calculator", f"{{i}} * 3") for i in range(start + offset, start + offset + 30)]
            res = engine.run(calls)
            assert all(r.error is None for r in res), [r.error for r in res if r.error]
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(off)]) for off in (0, 15)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    assert len(ResultCache(path)) == 315  # 0..314, each written once whichever process ran it


@pytest.mark.parametrize("call, message", [
    (ToolCall("Calculater", "1 + 1"), "did you mean 'Calculator'"),
    (ToolCall("Calculator", ""), "empty input: Calculator needs some text"),
    (ToolCall("Calculator", "   "), "empty input"),
    (ToolCall("WikiSearch", "x" * 5000), "input too long: WikiSearch accepts at most 300 characters"),
    (ToolCall("QA", "who\x00are\x01you"), "binary input: QA takes plain text"),
    (ToolCall("Calculator", "\ufffd\ufffd"), "binary input"),
])
def test_bad_calls_get_one_clear_message_and_do_not_stop_the_batch(call, message):
    engine = ToolEngine()
    out = engine.run([call, ToolCall("Calculator", "2 + 2")])
    assert out[0].result is None and message in out[0].error
    assert "\n" not in out[0].error
    assert out[1].result == "4"


def test_calendar_takes_no_input_and_is_not_cached(tmp_path):
    engine = ToolEngine(cache_path=str(tmp_path / "c.sqlite"))
    engine.run([ToolCall("Calendar", "")])
    (res,) = engine.run([ToolCall("Calendar", "")])
    assert res.result.startswith("Today is ") and not res.cached


def test_stats_count_every_outcome():
    engine = ToolEngine()
    engine.run([ToolCall("Calculator", "1 + 1"), ToolCall("Calculator", "1 +"), ToolCall("Calculator", ""),
                ToolCall("Nope", "x")])
    calc = engine.stats["Calculator"]
    assert (calc.calls, calc.results, calc.no_result, calc.bad_input) == (3, 1, 1, 1)
    assert engine.stats["Nope"].failures == 1 and engine.stats.calls == 4
    assert "Calculator: 3 calls" in engine.stats.summary()


def test_registry_tool_objects_are_the_engines():
    assert ToolEngine()._tool("Calculator") is get_tool("Calculator")


def _batched(name, fn, calls, size=2, **kw):
    """A tool whose batch_fn records each batch it is given."""
    def batch(texts):
        calls.append(list(texts))
        return [fn(t) for t in texts]
    return _tool(name, fn, batch_fn=batch, batch_size=size, **kw)


def test_batched_tool_gets_its_calls_in_chunks():
    batches = []
    tool = _batched("Up", str.upper, batches, size=2)
    engine = ToolEngine({"Up": tool})
    out = engine.run([ToolCall("Up", t) for t in ["a", "b", "a", "c", "d", "e"]])
    assert [r.result for r in out] == ["A", "B", "A", "C", "D", "E"]
    assert batches == [["a", "b"], ["c", "d"], ["e"]]  # identical calls once, chunks of 2
    assert engine.stats["Up"].results == 6 and engine.stats["Up"].calls == 6
    assert engine.run([ToolCall("Up", "z")])[0].result == "Z" and len(batches) == 3  # one call: no batch


def test_a_raising_batch_is_rerun_call_by_call():
    def fn(text):
        if text == "bad":
            raise ValueError("bad input")
        return text.upper()

    batches = []
    engine = ToolEngine({"Up": _batched("Up", fn, batches, size=8)})
    out = engine.run([ToolCall("Up", t) for t in ["a", "bad", "c"]])
    assert [r.result for r in out] == ["A", None, "C"]  # the failure costs its own call only
    assert "ValueError" in out[1].error and engine.stats["Up"].failures == 1


def test_a_hanging_batch_times_out_as_a_whole(release):
    tool = _batched("Hang", lambda t: release.wait(60) and "late", [], size=2, timeout=0.2)
    engine = ToolEngine({"Hang": tool})
    start = time.monotonic()
    out = engine.run([ToolCall("Hang", "a"), ToolCall("Hang", "b")])
    assert time.monotonic() - start < 5
    assert all(r.result is None and "timed out" in r.error for r in out)
    assert engine.stats["Hang"].timeouts == 2


def test_batch_fn_with_the_wrong_number_of_results_is_a_clear_error():
    tool = _tool("Up", str.upper, batch_fn=lambda texts: ["only one"])
    with pytest.raises(ValueError, match="one result .or None. per input"):
        tool.run_many(["a", "b"])
    engine = ToolEngine({"Up": tool})
    assert [r.result for r in engine.run([ToolCall("Up", "a"), ToolCall("Up", "b")])] == ["A", "B"]
