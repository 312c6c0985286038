"""One resolver for τs, k, m, τf and λ (:mod:`toolformer_kit.annotate.settings`), and its callers:
annotation, the re-filter, the studies and the inspector all answer "which τf" alike."""

import json
from collections import Counter

import pytest

from toolformer_kit.annotate.config import AnnotateConfig, tool_settings
from toolformer_kit.annotate.execute import Executor
from toolformer_kit.annotate.refilter import thresholds as refilter_thresholds
from toolformer_kit.annotate.runner import Runner
from toolformer_kit.annotate.settings import resolve, resolve_run
from toolformer_kit.config import ConfigError
from toolformer_kit.experiment.recipe import ExperimentConfig
from toolformer_kit.study.run import StudyConfig, thresholds
from toolformer_kit.inspector.data import load
from toolformer_kit.tools import get_tool
from toolformer_kit.tools.base import PAPER_CALCULATOR_MT, PAPER_DEFAULT, AnnotationSettings

from .fakes import FakeEngine, FakeLM, calculator_tool
from .test_runner import TEXTS


def test_explicit_beats_per_tool_beats_run_wide_beats_the_papers():
    assert resolve(PAPER_DEFAULT) == PAPER_DEFAULT
    assert resolve(PAPER_DEFAULT, every={"tau_f": 2.0}).tau_f == 2.0
    assert resolve(PAPER_DEFAULT, per_tool={"tau_f": 0.25}, every={"tau_f": 2.0}).tau_f == 0.25
    assert resolve(PAPER_DEFAULT, explicit={"tau_f": 0.0}, per_tool={"tau_f": 0.25}, every={"tau_f": 2.0}).tau_f == 0.0
    # None leaves a parameter to the next layer: an unset config field is no override
    assert resolve(PAPER_CALCULATOR_MT, explicit={"k": None}, every={"k": None, "m": 3}) == \
        AnnotationSettings(tau_s=0.0, k=20, m=3, tau_f=0.5)


@pytest.mark.parametrize("run_wide, per_tool", [(None, []), (2.0, []), (2.0, ["Calculator.tau_f=0.25"]),
                                                (None, ["QA.tau_f=3", "Calculator.call_cost=0.5"])])
def test_annotation_refilter_and_the_inspector_read_the_same_tau_f(run_wide, per_tool):
    cfg = AnnotateConfig(tools=["Calculator", "QA"], tau_f=run_wide, per_tool=per_tool)
    annotated = {t: tool_settings(cfg, get_tool(t)) for t in cfg.tools}
    # what a manifest.json records is enough to resolve it again later
    made = json.loads(json.dumps(vars(cfg)))
    assert {t: resolve_run(get_tool(t), made) for t in cfg.tools} == annotated
    # the re-filter told the run's own values re-decides at exactly those
    tau = {t: s.tau_f for t, s in annotated.items()}
    lam = {t: s.call_cost for t, s in annotated.items()}
    assert {t: (refilter_thresholds(t, tau, lam).tau_f, refilter_thresholds(t, tau, lam).call_cost)
            for t in cfg.tools} == {t: (s.tau_f, s.call_cost) for t, s in annotated.items()}


@pytest.mark.parametrize("tau_f", [None, 0.3])
def test_the_cost_study_refilters_at_the_tau_f_annotation_used(tau_f):
    cfg = ExperimentConfig(name="t", tools=["Calculator", "WikiSearch"], tau_f=tau_f)
    annotated = AnnotateConfig(tools=list(cfg.tools), tau_f=cfg.tau_f, k=cfg.k, m=cfg.m, tau_s=cfg.tau_s)
    taus, costs = thresholds(StudyConfig(name="cost"), cfg, 0.5)
    assert taus == {t: tool_settings(annotated, get_tool(t)).tau_f for t in cfg.tools}
    assert costs == {t: 0.5 for t in cfg.tools}
    assert thresholds(StudyConfig(name="cost", tau_f=2.0), cfg, 0.5)[0] == {t: 2.0 for t in cfg.tools}


def test_a_refilter_needs_a_tau_f_for_every_tool_but_not_a_cost():
    assert refilter_thresholds("QA", 0.5).call_cost == 0.0
    with pytest.raises(ConfigError, match="no value for tool 'QA'"):
        refilter_thresholds("QA", {"Calculator": 0.5})


def _manifest_only_run(tmp_path, settings):
    """An annotation folder as runs wrote it before summary.json recorded each tool's τf."""
    folder = tmp_path / "old"
    folder.mkdir()
    rows = [{"doc_id": "d", "tool": tool, "position": 1, "score": 0.4, "kept": False} for tool in ("Calculator", "QA")]
    (folder / "candidates.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "summary.json").write_text(json.dumps({"c_star_texts": 0}))
    (folder / "manifest.json").write_text(json.dumps({"settings": settings}))
    return folder


def test_the_inspector_honours_an_old_run_s_overrides(tmp_path):
    """The bug: without a recorded τf the inspector took each tool's paper value (Calculator 0.5,
    QA 1.0), ignoring the run's --tau-f and --per-tool; it now resolves them as annotation did."""
    made = vars(AnnotateConfig(tau_f=2.0, per_tool=["Calculator.tau_f=0.25"]))
    assert load([_manifest_only_run(tmp_path, made)]).tau_f == {"Calculator": 0.25, "QA": 2.0}


def test_k_positions_and_m_calls_reach_sampling_per_tool(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"t{i}", "text": t}) + "\n" for i, t in enumerate(TEXTS)))
    for per_tool, k, m in (([], 2, 4), (["Calculator.k=1", "Calculator.m=3"], 1, 3)):
        out = tmp_path / f"out-{k}-{m}"
        cfg = AnnotateConfig(corpus=str(corpus), out=str(out), tools=["Calculator"], k=2, m=4, tau_s=0.0,
                             per_tool=per_tool, progress=False)
        Runner(cfg, lm=FakeLM(), tools=[calculator_tool()], executor=Executor(engine_factory=FakeEngine)).run()
        cands = [json.loads(line) for line in (out / "candidates.jsonl").read_text().splitlines()]
        per_position = Counter((c["doc_id"], c["position"]) for c in cands)
        assert cands and set(per_position.values()) == {m}  # m calls sampled at each chosen position
        assert max(Counter(d for d, _ in per_position).values()) == k  # at most k positions per document
