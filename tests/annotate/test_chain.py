"""Bootstrapped rounds (issue 31): round 2 annotates round 1's C* with its calls kept in the text."""

import json
import re

import pytest

from toolformer_kit.annotate.config import AnnotateConfig
from toolformer_kit.annotate.execute import Executor
from toolformer_kit.annotate.runner import Runner
from toolformer_kit.calls import find_calls, strip_calls
from toolformer_kit.config import ConfigError
from toolformer_kit.lm.base import Sample

from .fakes import FakeEngine, FakeLM, calculator_tool

# Round 1 (the fake samples "first number + second number") finds 3 + 5 -> 8; the 16 after it is
# 8 * 2, a call only a sampler that reads the earlier result can propose.
TEXTS = ["She read 10 pages, then 15 more: 25 pages so far, twice that by Sunday: 50 pages.",
         "They walked 3 km and ran 5 km, 8 km together, and 16 km over two days."]


class ChainLM(FakeLM):
    """The round-1 fake, but a call sampled after an executed call doubles the last result."""

    def sample(self, prefixes, n, stop="]", config=None):
        out = super().sample(prefixes, n, stop, config)
        for j, p in enumerate(prefixes):
            written = "".join(map(chr, p)).rsplit("\nOutput:", 1)[-1]
            results = re.findall(r"-> ([^\]]+)\]", written)
            if results:
                out[j] = [Sample(f"Calculator({results[-1]} * 2)]", True)] * n
        return out


def run(tmp_path, name, corpus, lm, **kw):
    cfg = AnnotateConfig(corpus=str(corpus), out=str(tmp_path / name), tools=["Calculator"], shard_size=1,
                         k=4, m=2, tau_f=0.5, progress=False, prefilter=False, **kw)
    return Runner(cfg, lm=lm, tools=[calculator_tool()], executor=Executor(engine_factory=FakeEngine)).run()


def read(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def round1(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"t{i}", "text": t}) + "\n" for i, t in enumerate(TEXTS)))
    run(tmp_path, "r1", corpus, FakeLM())
    return tmp_path / "r1" / "corpus.jsonl"


def test_round_two_samples_outside_the_calls_and_keeps_a_chain(tmp_path, round1):
    first = {r["id"]: r for r in read(round1)}
    assert "[Calculator(3 + 5) -> 8] 8 km" in first["t1"]["text"] and "16 km" in first["t1"]["text"]
    summary = run(tmp_path, "r2", round1, ChainLM(), keep_calls=True)
    out = tmp_path / "r2"
    docs = {d["id"]: d["text"] for d in read(out / "documents.jsonl")}
    assert docs == {i: r["text"] for i, r in first.items()}  # read as written, calls kept, not windowed
    for c in read(out / "candidates.jsonl"):  # never inside, right before or right after a call
        spans = [(p.start - 1, p.end) for p in find_calls(docs[c["doc_id"]])]
        assert not any(a <= c["char_offset"] <= b for a, b in spans)
    second = {r["id"]: r for r in read(out / "corpus.jsonl")}
    t1 = second["t1"]
    assert t1["text"] == "They walked 3 km and ran 5 km, [Calculator(3 + 5) -> 8] 8 km together, and " \
                         "[Calculator(8 * 2) -> 16] 16 km over two days."
    (call,) = t1["calls"]
    assert (call["input"], call["result"], call["chain"]) == ("8 * 2", "16", True)
    assert t1["round"] == 2 and t1["earlier_calls"] == first["t1"]["calls"]
    assert strip_calls(t1["text"]) == t1["original"] == TEXTS[1]
    assert summary["chains"] == {"Calculator": {"kept": sum(len(r["calls"]) for r in second.values()), "chain": 1}}
    training = read(out / "training.jsonl")  # the next model's data: every text, this round's calls where kept
    assert [r["id"] for r in training] == list(first) and training[1]["text"] == t1["text"]
    assert all(r["text"] == (second[r["id"]] if r["id"] in second else first[r["id"]])["text"] for r in training)
    assert "training.jsonl" in json.loads((out / "manifest.json").read_text())["files"]
    assert not (tmp_path / "r1" / "training.jsonl").exists()  # a first round's C* is already what it trains on
    from toolformer_kit.commands.annotate import format_summary

    assert "Calculator: 1 of" in format_summary(summary)


def test_round_two_resumes_like_round_one(tmp_path, round1):
    run(tmp_path, "a", round1, ChainLM(), keep_calls=True)
    run(tmp_path, "b", round1, ChainLM(), keep_calls=True)
    for f in ("shards/shard-00001.jsonl", "shards/shard-00001.json", "manifest.json", "corpus.jsonl"):
        (tmp_path / "b" / f).unlink()
    lm = ChainLM()
    summary = run(tmp_path, "b", round1, lm, keep_calls=True)
    assert summary["shards_resumed"] == 1 and lm.calls["positions"] == 1
    assert (tmp_path / "a" / "corpus.jsonl").read_bytes() == (tmp_path / "b" / "corpus.jsonl").read_bytes()
    with pytest.raises(ConfigError, match="keep_calls"):  # the round is part of the run's identity
        run(tmp_path, "b", round1, ChainLM())


def test_keep_calls_on_a_corpus_without_calls_is_one_clear_error(tmp_path):
    corpus = tmp_path / "plain.jsonl"
    corpus.write_text(json.dumps({"id": "a", "text": TEXTS[0]}) + "\n")
    with pytest.raises(ConfigError, match="none of the 1 texts holds a call"):
        run(tmp_path, "x", corpus, FakeLM(), keep_calls=True)
