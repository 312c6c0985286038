"""The one loop over a run's stages (the pipeline's, a recipe's, a study's): order, skips, the
outputs a later stage reads, what an exception leaves unrecorded, and the memory it gives back."""

import pytest

from toolformer_kit.pipeline import driver
from toolformer_kit.pipeline.driver import Stage, Watch, run_stages


class Recording(Watch):
    """Skips the stages named in ``done``; keeps the order of the calls it sees."""

    def __init__(self, done=()):
        super().__init__()
        self.done, self.calls = set(done), []

    def finished(self, step):
        return step.name in self.done

    def start(self, step):
        self.calls.append(("start", step.name))

    def finish(self, step, seconds):
        super().finish(step, seconds)
        self.calls.append(("finish", step.name))


def test_stages_run_in_order_and_a_later_one_reads_an_earlier_ones_output():
    out = {}
    steps = [Stage("a", None, lambda: 2), Stage("b", None, lambda: out["a"] * 10)]
    watch = Watch()
    assert run_stages(steps, watch, out) is out
    assert out == {"a": 2, "b": 20}
    assert list(watch.seconds) == ["a", "b"] and all(s >= 0 for s in watch.seconds.values())


def test_a_finished_stage_is_skipped_and_neither_started_nor_timed():
    ran = []
    steps = [Stage(n, None, lambda n=n: ran.append(n)) for n in ("a", "b", "c")]
    watch = Recording(done={"b"})
    run_stages(steps, watch)
    assert ran == ["a", "c"] and list(watch.seconds) == ["a", "c"]
    assert watch.calls == [("start", "a"), ("finish", "a"), ("start", "c"), ("finish", "c")]


def test_a_stage_that_fails_is_not_recorded_and_later_stages_do_not_run():
    def boom():
        raise KeyboardInterrupt

    ran = []
    watch = Recording()
    with pytest.raises(KeyboardInterrupt):
        run_stages([Stage("a", None, lambda: ran.append("a")), Stage("b", None, boom),
                    Stage("c", None, lambda: ran.append("c"))], watch)
    assert ran == ["a"] and watch.calls == [("start", "a"), ("finish", "a"), ("start", "b")]
    assert list(watch.seconds) == ["a"]


def test_any_object_with_a_name_and_run_is_a_step():
    """A study's own Step type (with settings, done, estimates) runs through the same loop."""
    from toolformer_kit.study.run import Step

    out = run_stages([Step("x", None, lambda: False, lambda: "ran")])
    assert out == {"x": "ran"}


def test_the_stage_log_reads_the_memory_held_and_freed_memory_leaves_the_process():
    """The log line after each stage says what is resident and the peak (the run's ≤ 16 GB budget);
    a freed large buffer no longer counts once the stage's memory is released."""
    import numpy as np

    before, _ = driver.memory_gb()
    buf = np.ones(200_000_000 // 8)  # 200 MB
    held, peak = driver.memory_gb()
    del buf
    driver.release_memory()
    after, peak_after = driver.memory_gb()
    assert held - before > 0.15 and after < held - 0.15
    assert peak_after >= peak > held - 0.01  # the peak is counted in KiB, the resident set in pages
