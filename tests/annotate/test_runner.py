import json
import os

import pytest

from toolformer_kit.annotate.config import AnnotateConfig
from toolformer_kit.annotate.execute import Executor
from toolformer_kit.annotate.runner import Runner
from toolformer_kit.calls import find_calls, strip_calls
from toolformer_kit.config import ConfigError
from toolformer_kit.tools.base import Tool

from .fakes import FakeEngine, FakeLM, calculator_tool

TEXTS = ["The farm had 12 cows and bought 30 more, so it has 42 now.",
         "A box holds 6 eggs; 4 boxes hold 24 eggs in all.",
         "Nothing to compute in this sentence at all.",
         "She read 10 pages, then 15 more: 25 pages so far.",
         "They walked 3 km and ran 5 km, 8 km together."]


def make(tmp_path, name="out", lm=None, **kw):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"t{i}", "text": t}) + "\n" for i, t in enumerate(TEXTS)))
    cfg = AnnotateConfig(corpus=str(corpus), out=str(tmp_path / name), tools=["Calculator"], shard_size=2,
                         k=2, m=4, tau_f=0.5, progress=False, **kw)
    return Runner(cfg, lm=lm or FakeLM(), tools=[calculator_tool()], executor=Executor(engine_factory=FakeEngine))


def outputs(path):
    return {f: (path / f).read_bytes() for f in ("corpus.jsonl", "candidates.jsonl")}


def test_end_to_end_with_a_fake_model(tmp_path):
    summary = make(tmp_path).run()
    out = tmp_path / "out"
    cands = [json.loads(line) for line in (out / "candidates.jsonl").read_text().splitlines()]
    statuses = {c["status"] for c in cands}
    assert {"ok", "unclosed", "other_tool"} <= statuses
    kept = [c for c in cands if c["kept"]]
    assert kept and all(c["L_plus"] < c["L_minus"] for c in kept)
    # The fake predicts digits better only when the call's result contains them.
    assert all(set(c["result"]) & set(TEXTS[int(c["doc_id"][1:])][c["char_offset"]:c["char_offset"] + 4]) for c in kept)
    cstar = [json.loads(line) for line in (out / "corpus.jsonl").read_text().splitlines()]
    assert {r["id"] for r in cstar} == {c["doc_id"] for c in kept}
    for r in cstar:
        assert strip_calls(r["text"]) == r["original"] and find_calls(r["text"])
    assert "t2" not in {c["doc_id"] for c in cands}  # the Calculator pre-filter skipped it
    assert summary["tools"]["Calculator"]["skipped_prefilter"] == 1
    assert summary["kept_at_tau_f"]["Calculator"]["kept"][0] == {"tau_f": 0.5, "calls": len(kept),
                                                                   "texts": len({c["doc_id"] for c in kept})}
    assert summary["tau_f"] == {"Calculator": 0.5}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["shards"] == 3 and set(manifest["files"]) >= {"corpus.jsonl", "candidates.jsonl"}


def test_resume_redoes_only_unfinished_shards_and_matches(tmp_path):
    make(tmp_path, "a").run()
    make(tmp_path, "b").run()
    b = tmp_path / "b"
    # Simulate a crash during shard 1: its files are gone, a half-written temp file is left behind.
    for f in ("shards/shard-00001.jsonl", "shards/shard-00001.json", "shards/shard-00002.jsonl",
              "shards/shard-00002.json", "manifest.json", "corpus.jsonl"):
        (b / f).unlink()
    (b / "shards" / ".shard-00001.jsonl.tmp").write_text("garbage")
    done_before = os.stat(b / "shards/shard-00000.jsonl").st_mtime_ns
    lm = FakeLM()
    summary = make(tmp_path, "b", lm=lm).run()
    assert summary["shards_resumed"] == 1 and lm.calls["positions"] == 2  # shards 1 and 2 only
    assert os.stat(b / "shards/shard-00000.jsonl").st_mtime_ns == done_before
    assert outputs(tmp_path / "a") == outputs(b)


@pytest.mark.parametrize("damaged", ["summary.json", "corpus.jsonl", "manifest.json"])
def test_a_cut_final_file_is_rebuilt_from_the_shards_without_the_model(tmp_path, damaged):
    make(tmp_path, "a").run()
    make(tmp_path, "b").run()
    path = tmp_path / "b" / damaged
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    lm = FakeLM()
    make(tmp_path, "b", lm=lm).run()
    assert lm.calls["positions"] == 0  # every shard was done: nothing was annotated again
    assert outputs(tmp_path / "a") == outputs(tmp_path / "b")
    json.loads((tmp_path / "b" / "summary.json").read_text())


def test_complete_run_is_not_redone_and_other_settings_are_refused(tmp_path):
    make(tmp_path).run()
    lm = FakeLM()
    make(tmp_path, lm=lm).run()
    assert lm.calls["positions"] == 0
    with pytest.raises(ConfigError, match="settings differ: seed"):
        make(tmp_path, seed=5).run()
    make(tmp_path, seed=5, overwrite=True).run()


def test_a_run_resumes_whatever_the_spelling_of_its_corpus_path(tmp_path, monkeypatch):
    """issue 29, item 8: a relative --corpus (or a run folder copied elsewhere, whose corpus then
    lies elsewhere) was refused as 'settings differ: corpus'; the corpus's content decides."""
    make(tmp_path, "a").run()
    first = make(tmp_path, "b")
    first.run()
    b = tmp_path / "b"
    for f in ("shards/shard-00002.jsonl", "shards/shard-00002.json", "manifest.json"):  # as a kill leaves it
        (b / f).unlink()
    monkeypatch.chdir(tmp_path)
    again = make(tmp_path, "b")
    again.cfg.corpus, again.cfg.out = "c.jsonl", "b"
    again.out = type(again.out)("b")
    again.run()
    assert outputs(tmp_path / "a") == outputs(b)
    other = make(tmp_path, "b")
    (tmp_path / "c2.jsonl").write_text((tmp_path / "c.jsonl").read_text().replace("12 cows", "13 cows"))
    other.cfg.corpus = str(tmp_path / "c2.jsonl")
    (b / "manifest.json").unlink()
    with pytest.raises(ConfigError, match="the corpus differs"):  # other content is still refused
        other.run()


def test_tool_without_demonstrations_is_a_clear_error(tmp_path):
    runner = make(tmp_path)
    runner._tools = [Tool("Calculator", str, "No demos.", [])]
    with pytest.raises(ConfigError, match="no demonstrations"):
        runner.run()


def test_cli_flags_and_config_file_build_the_same_settings(tmp_path):
    import argparse

    from toolformer_kit.commands.annotate import add_arguments
    from toolformer_kit.config import build_config

    (tmp_path / "a.yaml").write_text("tools: [Calculator, QA]\ntau-f: 2.0\nshard_size: 3\n")
    p = argparse.ArgumentParser()
    add_arguments(p)
    cfg = build_config(AnnotateConfig, p.parse_args(["--config", str(tmp_path / "a.yaml"), "--shard-size", "5",
                                                     "--sampler-model", "qwen2.5-coder-0.5b"]))
    assert cfg.tools == ["Calculator", "QA"] and cfg.tau_f == 2.0 and cfg.shard_size == 5
    assert cfg.sampler_model == "qwen2.5-coder-0.5b"


def test_per_tool_overrides_and_their_errors(tmp_path):
    from toolformer_kit.annotate.config import tool_settings

    tool = calculator_tool()
    s = tool_settings(AnnotateConfig(tau_f=2.0, per_tool=["Calculator.tau_f=0.25", "Calculator.k=7"]), tool)
    assert (s.tau_f, s.k, s.m) == (0.25, 7, tool.settings.m)
    # A bad entry fails when the config is built, before any model could load.
    with pytest.raises(ConfigError, match="TOOL.SETTING=VALUE"):
        AnnotateConfig(per_tool=["Calculator.temperature=3"])
    with pytest.raises(ConfigError, match="not a number"):
        AnnotateConfig(per_tool=["Calculator.k=many"])
    from toolformer_kit.annotate.sources import default_corpus

    with pytest.raises(ConfigError, match="unknown embedded source"):
        default_corpus(1, 0, ("news",))


def test_a_summary_written_before_the_kept_table_held_numbers_still_reads(tmp_path):
    """summary.json of older runs keyed its kept counts "tau_f=0.5"; the report and the command
    read both forms alike."""
    from toolformer_kit.annotate.summary import kept_table_of
    from toolformer_kit.commands.annotate import format_summary

    new = make(tmp_path).run()
    old = {k: v for k, v in new.items() if k not in ("kept_at_tau_f", "tau_f")}
    old["kept_by_tau_f"] = {tool: {"scored": row["scored"], **{f"tau_f={r['tau_f']}": {"calls": r["calls"], "texts": r["texts"]}
                                                              for r in row["kept"]}}
                            for tool, row in new["kept_at_tau_f"].items()}
    assert kept_table_of(old) == kept_table_of(new) == new["kept_at_tau_f"]
    assert format_summary(old) == format_summary(new) and "tau_f=0.5" in format_summary(new)
