"""Re-running a fixed tool over a campaign's bank (campaign/rerun.py, issue 40): the same sampled
calls, each executed anew; an unchanged result keeps its score, a changed one is scored again, no
result drops the call. Run through the campaign with the fake model of test_campaign_run."""

import json

import pytest

from toolformer_kit.annotate.execute import Executor
from toolformer_kit.campaign import rerun
from toolformer_kit.campaign import run as C
from toolformer_kit.config import ConfigError

from annotate.fakes import FakeEngine, FakeLM, calculator_tool
from test_campaign_run import run, small_corpus  # noqa: F401  (the fixture)


def test_the_campaign_reruns_every_banked_shard_through_rerun_shard(tmp_path, small_corpus, monkeypatch):
    run(tmp_path, "v1", target_calls=0)
    seen = []
    assert C.rerun_shard is rerun.rerun_shard

    def spy(annot, docs, cands, info, names):
        seen.append((len(docs), tuple(names)))
        return rerun.rerun_shard(annot, docs, cands, info, names)

    monkeypatch.setattr(C, "rerun_shard", spy)
    cfg = C.CampaignConfig(out=str(tmp_path / "v2"), work=str(tmp_path / "work"), k=3, m=4, shard_size=1,
                           progress=False, tau_f=0.5, target_calls=0, bank=str(tmp_path / "v1"),
                           rerun_tools=["Calculator"])
    C.run_campaign(cfg, lm=FakeLM(), tools=[calculator_tool()], executor=Executor(engine_factory=FakeEngine))
    assert seen == [(1, ("Calculator",))] * 4  # one call per banked shard of one window


def test_rerunning_a_tool_over_a_bank_keeps_the_calls_and_drops_what_the_fixed_tool_cannot_answer(
        tmp_path, small_corpus):
    from toolformer_kit.tools.base import Tool
    from toolformer_kit.tools.calculator import calculate

    run(tmp_path, "v1", target_calls=0)
    old = [json.loads(line) for n in range(4) for line in (tmp_path / "v1" / "bank" / f"shard-{n:05d}.jsonl").open()]
    fixed = calculator_tool()
    fixed = Tool(fixed.name, lambda x: None if "*" in x else calculate(x), fixed.instruction, fixed.demonstrations,
                 version="fixed")
    lm = FakeLM()
    cfg = C.CampaignConfig(out=str(tmp_path / "v2"), work=str(tmp_path / "work"), k=3, m=4, shard_size=1,
                           progress=False, tau_f=0.5, target_calls=0, bank=str(tmp_path / "v1"),
                           rerun_tools=["Calculator"])
    C.run_campaign(cfg, lm=lm, tools=[fixed], executor=Executor(engine_factory=FakeEngine))
    assert lm.calls["sample"] == 0  # the same calls: nothing sampled again
    new = [json.loads(line) for n in range(4) for line in (tmp_path / "v2" / "bank" / f"shard-{n:05d}.jsonl").open()]
    assert any("*" in c["input"] for c in old)
    assert [c for c in old if "*" not in c["input"]] == new  # same result, same score; no result: dropped
    info = json.loads((tmp_path / "v2" / "bank" / "shard-00000.json").read_text())
    assert info["tools"]["Calculator"] == "fixed" and info["rerun"]["banked_before"] >= info["rerun"]["banked_after"]
    with pytest.raises(ConfigError, match="give it with --bank"):
        C.CampaignConfig(rerun_tools=["Calculator"])


def test_a_rerun_result_that_changed_is_scored_again(tmp_path, small_corpus):
    from toolformer_kit.tools.base import Tool
    run(tmp_path, "v1", target_calls=0)
    fixed = calculator_tool()
    fixed = Tool(fixed.name, lambda x: "none", fixed.instruction, fixed.demonstrations, version="off")
    cfg = C.CampaignConfig(out=str(tmp_path / "v2"), work=str(tmp_path / "work"), k=3, m=4, shard_size=1,
                           progress=False, tau_f=0.5, target_calls=0, bank=str(tmp_path / "v1"),
                           rerun_tools=["Calculator"])
    C.run_campaign(cfg, lm=FakeLM(), tools=[fixed], executor=Executor(engine_factory=FakeEngine))
    infos = [json.loads((tmp_path / "v2" / "bank" / f"shard-{n:05d}.json").read_text())["rerun"] for n in range(4)]
    assert sum(i["rescored"] for i in infos) == sum(i["banked_before"] for i in infos) > 0
    # a result without the text's digits no longer helps the fake M: every score falls to 0
    old = [json.loads(line) for n in range(4) for line in (tmp_path / "v1" / "bank" / f"shard-{n:05d}.jsonl").open()]
    new = [json.loads(line) for n in range(4) for line in (tmp_path / "v2" / "bank" / f"shard-{n:05d}.jsonl").open()]
    assert max(c["score"] for c in old) > 0 and {c["score"] for c in new} == {0.0}
    assert {c["result"] for c in new} == {"none"}
