"""The call cost λ in the kept rule, and C* re-filtered from a finished run without a model."""

import json

import pytest

from toolformer_kit.annotate.config import AnnotateConfig, tool_settings
from toolformer_kit.annotate.execute import Executor
from toolformer_kit.annotate.refilter import read_run, redecide, refilter_run
from toolformer_kit.annotate.runner import Runner, semantic_settings
from toolformer_kit.config import ConfigError

from .fakes import FakeEngine, FakeLM, calculator_tool
from .test_runner import TEXTS


def annotate(tmp_path, name="out", **kw):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"t{i}", "text": t}) + "\n" for i, t in enumerate(TEXTS)))
    cfg = AnnotateConfig(corpus=str(corpus), out=str(tmp_path / name), tools=["Calculator"], shard_size=2,
                         k=2, m=4, progress=False, **{"tau_f": 0.5, **kw})
    Runner(cfg, lm=FakeLM(), tools=[calculator_tool()], executor=Executor(engine_factory=FakeEngine)).run()
    return tmp_path / name


def cands(folder):
    return [json.loads(line) for line in (folder / "candidates.jsonl").read_text().splitlines()]


def test_a_call_cost_raises_the_bar_and_is_stored_with_the_run(tmp_path):
    free = cands(annotate(tmp_path, "free"))
    scores = sorted(c["score"] for c in free if c["kept"])
    assert len(scores) >= 2 and scores[0] < scores[-1]
    lam = (scores[0] + scores[-1]) / 2 - 0.5  # between the weakest and the strongest kept call
    priced = annotate(tmp_path, "priced", call_cost=lam)
    kept = [c for c in cands(priced) if c["kept"]]
    assert kept and len(kept) < len(scores)  # fails if λ is ignored
    assert all(c["score"] >= 0.5 + lam for c in kept)
    assert json.loads((priced / "run.json").read_text())["settings"]["call_cost"] == lam
    assert json.loads((priced / "manifest.json").read_text())["settings"]["call_cost"] == lam


def test_lambda_zero_is_the_paper_and_old_runs_still_resume(tmp_path):
    assert cands(annotate(tmp_path, "a")) == cands(annotate(tmp_path, "b", call_cost=0.0))
    assert "call_cost" not in semantic_settings(AnnotateConfig())  # runs made before λ existed match
    assert semantic_settings(AnnotateConfig(call_cost=0.3))["call_cost"] == 0.3


def test_per_tool_call_cost_wins_and_bad_values_name_the_fix():
    tool = calculator_tool()
    assert tool_settings(AnnotateConfig(call_cost=1.0, per_tool=["Calculator.call_cost=0.25"]), tool).call_cost == 0.25
    assert tool_settings(AnnotateConfig(call_cost=1.0, per_tool=["QA.call_cost=0.25"]), tool).call_cost == 1.0
    # bad values fail when the config is built, before any model loads
    with pytest.raises(ConfigError, match="'Calculator.call_cost=-1': a call cost is >= 0 nats"):
        AnnotateConfig(per_tool=["Calculator.call_cost=-1"])
    with pytest.raises(ConfigError, match="call_cost must be >= 0 nats"):
        AnnotateConfig(call_cost=-0.5)
    with pytest.raises(ConfigError, match="tau_s, k, m, tau_f, call_cost"):
        AnnotateConfig(per_tool=["Calculator.cost=1"])


def test_refiltering_a_finished_run_equals_annotating_at_that_threshold(tmp_path):
    low = annotate(tmp_path, "low", tau_f=0.0)
    for tau, lam in ((0.5, 0.0), (0.5, 0.4), (1.0, 0.0)):
        direct = annotate(tmp_path, f"direct-{tau}-{lam}", tau_f=tau, call_cost=lam)
        info = refilter_run(low, tmp_path / f"re-{tau}-{lam}", tau, {"Calculator": lam})
        assert (tmp_path / f"re-{tau}-{lam}" / "corpus.jsonl").read_text() == (direct / "corpus.jsonl").read_text()
        assert info["candidates"]["Calculator"]["kept"] == sum(c["kept"] for c in cands(direct))
        assert info["c_star_texts"] == json.loads((direct / "summary.json").read_text())["c_star_texts"]
    assert [c["kept"] for c in cands(low)] == [c.kept for c in read_run(low)[1]]  # the source is untouched


def test_redecide_needs_a_threshold_for_every_tool_and_a_finished_run(tmp_path):
    docs, candidates, _ = read_run(annotate(tmp_path))
    with pytest.raises(ConfigError, match="no value for tool 'Calculator'"):
        redecide(candidates, {"QA": 1.0})
    with pytest.raises(ConfigError, match="not a finished annotation run"):
        refilter_run(tmp_path / "nowhere", tmp_path / "x", 1.0)
    with pytest.raises(ConfigError, match="into itself"):
        refilter_run(tmp_path / "out", tmp_path / "out", 1.0)
