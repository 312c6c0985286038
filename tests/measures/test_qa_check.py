"""The QA tool that answers from the right passage (issue 28, item 3) and its measurement, end to end
on a scripted reader over a tiny corpus: a span it did not read, or one that only repeats the
question, is an abstention, never a wrong answer."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from toolformer_kit.config import ConfigError
from toolformer_kit.lm.base import Sample
from toolformer_kit.tools.qa import qa_tool

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "qa_tool_check.py"
CORPUS = [{"title": "Albert Einstein", "text": "Albert Einstein was a physicist. He was born in Ulm."},
          {"title": "Ulm", "text": "Ulm is a city on the Danube. Its minster is tall."},
          {"title": "Zorblax", "text": "The Zorblax mural is in a cave."}]
QUESTIONS = [("where was albert einstein born", ["Ulm"]),  # retrievable; the reader says Ulm: right
             ("what river flows through ulm", ["Danube"]),  # retrievable; the reader says Ulm: repeats the question
             ("who painted the zorblax mural", ["Quux Smith"])]  # not retrievable; the reader says Munich


class Reader:
    """Says "Ulm" when the passages it is shown (the prompt's last block) mention Ulm, else "Munich"."""

    name = "scripted"

    def __init__(self):
        self.prompts = []

    def sample(self, prefixes, n, stop="]", config=None):
        self.prompts += list(prefixes)
        return [[Sample(" Ulm\n" if "Ulm" in p.split("\n\n")[-1] else " Munich\n", True)] for p in prefixes]


@pytest.fixture()
def setup(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLFORMER_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "data"
    (data / "qa").mkdir(parents=True)
    (data / "qa" / "NQ-open.dev.jsonl").write_text("".join(json.dumps({"question": q, "answer": a}) + "\n"
                                                           for q, a in QUESTIONS))
    corpus = tmp_path / "wiki.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in CORPUS))
    spec = importlib.util.spec_from_file_location("qa_tool_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, data, corpus


def test_right_wrong_abstained_per_retrieval(setup, tmp_path, capsys):
    script, data, corpus = setup
    reader = Reader()
    out = tmp_path / "out"
    rc = script.main(["--tasks", "nq", "--data-dir", str(data), "--corpus", str(corpus), "--out", str(out),
                      "--retrievals", "sentences,passages"], lm=reader)
    assert rc == 0
    result = json.loads((out / "results.json").read_text())

    def counts(name):
        rows = {(r["task"], r["subset"]): r for r in result["answerers"][name]["rows"]}
        return {k: tuple(r[o]["count"] for o in ("right", "wrong", "abstained")) for k, r in rows.items()
                if k[0] == "nq"}

    assert counts("sentences") == {("nq", "retrievable"): (1, 0, 1), ("nq", "not retrievable"): (0, 0, 1)}
    assert counts("passages") == {("nq", "retrievable"): (1, 1, 0), ("nq", "not retrievable"): (0, 1, 0)}
    goal = result["answerers"]["sentences"]["goal"]
    assert goal == {"right": 0.5, "wrong": 0.0, "right_met": True, "wrong_met": True, "met": True}
    assert not result["answerers"]["passages"]["goal"]["met"]
    printed = capsys.readouterr().out
    assert "| **pooled** | not retrievable | 1 | 0.0 [0.0, 79.3] | 0.0 [0.0, 79.3] | 100.0 [20.7, 100.0] |" in printed
    recs = [json.loads(line) for line in (out / "sentences.jsonl").read_text().splitlines()]
    assert [r["answer"] for r in recs] == ["Ulm", None, None]


def test_the_sentence_reader_reads_the_sentences_that_share_the_question_words(setup):
    _, _, corpus = setup
    reader = Reader()
    tool = qa_tool(lm=reader, corpus=str(corpus))
    assert tool("Where was Einstein born?") == "Ulm"
    block = reader.prompts[-1].split("\n\n")[-1]
    assert "He was born in Ulm." in block and "Zorblax" not in block
    assert block.index("Albert Einstein was a physicist.") < block.index("He was born in Ulm.")  # best last
    assert tool("Quantum gravity?") is None and len(reader.prompts) == 1  # no sentence shares a word: no reader call
    assert "|sentences" in tool.version and "|sentences" not in qa_tool(lm=reader, retrieval="passages").version


def test_an_unknown_retrieval_is_one_error():
    with pytest.raises(ConfigError, match="unknown QA retrieval 'sentence'; use one of sentences, passages"):
        qa_tool(lm=Reader(), retrieval="sentence")


def test_bad_limits_are_one_error_line(setup, capsys):
    script, data, corpus = setup
    assert script.main(["--limit", "0", "--data-dir", str(data)], lm=Reader()) == 2
    err = capsys.readouterr().err
    assert "--limit must be ≥ 1" in err and len(err.strip().splitlines()) == 1


def test_the_report_shows_the_qa_tool_s_own_accuracy(setup, tmp_path):
    from toolformer_kit import blocks as R
    from toolformer_kit.experiment.report import _qa_tool_blocks, _side_result

    script, data, corpus = setup
    out = tmp_path / "qa"
    assert script.main(["--tasks", "nq", "--data-dir", str(data), "--corpus", str(corpus), "--out", str(out)],
                       lm=Reader()) == 0
    text = R.to_markdown(_qa_tool_blocks(_side_result(str(out))))
    assert "## The QA tool's own accuracy" in text and "right on retrievable questions 50.0 % (goal ≥ 50: met)" in text
    assert "| nq | retrievable | 2 | 50.0 [9.5, 90.5] | 0.0 [0.0, 65.8] | 50.0 [9.5, 90.5] |" in text


def test_an_offset_reports_on_questions_past_the_tuning_ones(setup, tmp_path):
    script, data, corpus = setup
    out = tmp_path / "held-out"
    assert script.main(["--tasks", "nq", "--data-dir", str(data), "--corpus", str(corpus), "--out", str(out),
                        "--limit", "5", "--offset", "1", "--offset-other", "1"], lm=Reader()) == 0
    first = tmp_path / "tuning"
    assert script.main(["--tasks", "nq", "--data-dir", str(data), "--corpus", str(corpus), "--out", str(first),
                        "--limit", "1", "--limit-other", "1"], lm=Reader()) == 0
    held = [json.loads(line) for line in (out / "sentences.jsonl").read_text().splitlines()]
    tuned = [json.loads(line) for line in (first / "sentences.jsonl").read_text().splitlines()]
    assert len(held) == 1 and held[0]["subset"] == "retrievable"  # the one other question was skipped
    assert {r["id"] for r in held}.isdisjoint(r["id"] for r in tuned) and len(tuned) == 2
    assert json.loads((out / "results.json").read_text())["offset"] == 1


def test_the_jsonl_says_what_the_reader_read_and_wrote(setup, tmp_path):
    script, data, corpus = setup
    out = tmp_path / "out"
    assert script.main(["--tasks", "nq", "--data-dir", str(data), "--corpus", str(corpus), "--out", str(out),
                        "--sentences", "4,5"], lm=Reader()) == 0
    result = json.loads((out / "results.json").read_text())
    assert sorted(result["answerers"]) == ["sentences-4", "sentences-5"]
    recs = {r["question"]: r for r in map(json.loads, (out / "sentences-4.jsonl").read_text().splitlines())}
    ulm = recs["where was albert einstein born"]
    assert (ulm["raw"], ulm["why"], ulm["answer"]) == ("Ulm", "answered", "Ulm") and ulm["support"] > 0.5
    assert "Albert Einstein: He was born in Ulm." in ulm["sentences"]
    assert recs["what river flows through ulm"]["why"] == "not grounded"  # "Ulm" only repeats the question
