"""The ceiling pilot (issue 28, item 1) end to end on a fake reader: retrievable items only, the
evaluation's decoding, the oracle passage in the prompt, paired intervals, resumable files."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from toolformer_kit.calls import find_calls
from toolformer_kit.measures.oracle import PilotItem, oracle_prompt
from toolformer_kit.eval.tasks import Example, get_task
from toolformer_kit.tools.wikisearch import BM25Index

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "ceiling_pilot.py"
QUESTIONS = [("who wrote the play hamlet", ["Shakespeare"]),
             ("what is the capital of france", ["Paris"]),
             ("who painted the zorblax mural", ["Nobody Knows"])]  # no passage holds it: not retrievable
CORPUS = [{"title": "Hamlet", "text": "Hamlet is a play written by William Shakespeare."},
          {"title": "France", "text": "France is a country whose capital is Paris."},
          {"title": "Zorblax", "text": "The Zorblax mural was painted in a cave."}]


@pytest.fixture(scope="module")
def pilot(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("ceiling_pilot", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture()
def setup(tmp_path):
    data = tmp_path / "data"
    (data / "qa").mkdir(parents=True)
    (data / "qa" / "NQ-open.dev.jsonl").write_text(
        "".join(json.dumps({"question": q, "answer": a}) + "\n" for q, a in QUESTIONS))
    corpus = tmp_path / "wiki.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in CORPUS))
    index = BM25Index(corpus, cache=tmp_path / "cache")
    return data, (lambda q, k: [h.text for h in index.search(q, k)])


class FakeReader:
    """Closed-book it always says "Paris"; with a passage in the prompt it answers the passage's
    last word. Every call must use the evaluation's decoding for the task, calls masked."""

    def __init__(self):
        self.prompts = []

    def __call__(self, prompts, config, tools):
        assert config.disabled and config.temperature == 0 and tools == {}
        assert config.max_answer_tokens == get_task("nq").max_new_tokens
        self.prompts += prompts
        out = []
        for p in prompts:
            body = p.split("->", 1)[1] if "->" in p else p.split("\n\n", 1)[0] if "\n\n" in p else ""
            words = body.replace("]", " ").replace(".", " ").split()
            out.append(SimpleNamespace(text=f" {words[-1]}." if words else " Paris.", calls=[]))
        return out


def test_the_pilot_measures_closed_book_against_the_oracle_on_retrievable_items(pilot, setup, tmp_path, capsys):
    data, search = setup
    reader = FakeReader()
    out = tmp_path / "out"
    rc = pilot.main(["--models", "m1", "--tasks", "nq,webquestions", "--data-dir", str(data), "--out", str(out),
                     "--forms", "call,context"], generate_for=lambda model: reader, search=search)
    assert rc == 0
    table = capsys.readouterr().out
    assert "| m1 | nq | 2 | 50.0 [9.5, 90.5] | 100.0 [34.2, 100.0] | +50.0" in table  # webquestions: no file, skipped
    result = json.loads((out / "results.json").read_text())
    assert result["items"] == {"nq": 2} and result["tasks"] == ["nq"]
    nq = result["rows"][0]
    assert (nq["n"], nq["closed"]["accuracy"], nq["call"]["accuracy"], nq["context"]["accuracy"]) == (2, 0.5, 1.0, 1.0)
    assert nq["call"]["diff"] == 0.5 and nq["call"]["diff_ci95"][0] < 0.5 < nq["call"]["diff_ci95"][1]
    assert result["rows"][-1]["task"] == "pooled" and result["rows"][-1]["n"] == 2
    records = [json.loads(line) for line in (out / "m1" / "nq.jsonl").read_text().splitlines()]
    assert not any("zorblax" in r["question"] for r in records)
    assert all(r["call"]["prediction"] in r["passage"] + "." for r in records)
    assert len(reader.prompts) == 6  # 2 items × (closed, call, context)

    def refuse(model):
        raise AssertionError("a finished (model, task) must be reused, not answered again")

    assert pilot.main(["--models", "m1", "--tasks", "nq", "--data-dir", str(data), "--out", str(out),
                       "--forms", "call,context"], generate_for=refuse, search=search) == 0
    more = FakeReader()
    assert pilot.main(["--models", "m1,m2", "--tasks", "nq", "--data-dir", str(data), "--out", str(out),
                       "--forms", "call,context"], generate_for=lambda model: more, search=search) == 0
    assert len(more.prompts) == 6  # only m2 answered


@pytest.mark.parametrize("argv, message", [
    (["--forms", "cal"], "unknown oracle form 'cal'; use one of call, context"),
    (["--tasks", "nqq"], "unknown task 'nqq'; did you mean 'nq'?"),
    (["--limit", "-1"], "--limit must be 0 (all) or more"),
])
def test_bad_input_is_one_error_line(pilot, setup, tmp_path, capsys, argv, message):
    data, search = setup
    rc = pilot.main(["--tasks", "nq", "--data-dir", str(data), "--out", str(tmp_path / "o"), *argv],
                    generate_for=lambda m: FakeReader(), search=search)
    err = capsys.readouterr().err
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1


def test_no_task_with_files_is_an_error(pilot, tmp_path, capsys):
    rc = pilot.main(["--tasks", "nq,triviaqa", "--data-dir", str(tmp_path), "--out", str(tmp_path / "o")],
                    generate_for=lambda m: FakeReader(), search=lambda q, k: [])
    assert rc == 2 and "none of the tasks nq, triviaqa has its files" in capsys.readouterr().err


def test_the_call_form_reads_back_as_a_wikisearch_call_with_the_passage_as_result():
    item = PilotItem(Example("1", "Finish the sentence with the correct fact.\nHamlet (a play) was written by", ("x",)),
                     "Hamlet (a play) was written by", "Hamlet is a play [1] by William Shakespeare.")
    prompt = oracle_prompt(item, "call")
    (call,) = find_calls(prompt)
    assert call.closed and call.call.tool == "WikiSearch" and call.end == len(prompt)
    assert call.call.result == "Hamlet is a play (1) by William Shakespeare."
    assert prompt.startswith(item.example.prompt + " [")


def test_the_report_opens_with_the_pilot_s_table(pilot, setup, tmp_path):
    from toolformer_kit import blocks as R
    from toolformer_kit.experiment.report import _pilot_blocks, _side_result

    data, search = setup
    out = tmp_path / "pilot"
    assert pilot.main(["--models", "m1", "--tasks", "nq", "--data-dir", str(data), "--out", str(out)],
                      generate_for=lambda m: FakeReader(), search=search) == 0
    text = R.to_markdown(_pilot_blocks(_side_result(str(out))))
    assert text.startswith("## Ceiling pilot") and "| m1 | nq | 2 | 50.0 [9.5, 90.5] | 100.0 [34.2, 100.0] |" in text
    missing = R.to_markdown(_pilot_blocks(_side_result(str(tmp_path / "later"))))
    assert "Not run yet" in missing and f"--out {tmp_path / 'later'}" in missing
    assert _pilot_blocks(_side_result("")) == []


def test_the_pilot_runs_through_the_real_decoder_on_a_scripted_lm(pilot, setup, tmp_path, monkeypatch, capsys):
    """The script's own path (load_lm, decoder_generate, the tool-aware decoder with calls masked),
    the model replaced by the decoding tests' scripted LM: closed-book it says Paris, with the
    passage in the prompt it says the gold."""
    from toolformer_kit.measures.oracle import pilot_items

    spec = importlib.util.spec_from_file_location("pilot_decode_fakes", SCRIPT.parents[1] / "tests" / "decode" / "decode_fakes.py")
    fakes = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "pilot_decode_fakes", fakes)  # its dataclasses look their module up
    spec.loader.exec_module(fakes)
    data, search = setup
    items = pilot_items(get_task("nq").load(data), search)
    stories = [fakes.Story(i.example.prompt, " I think Paris.\n") for i in items]
    stories += [fakes.Story(oracle_prompt(i, "call"), f" {i.example.answers[0]}.\n") for i in items]
    lm = fakes.FakeLM(stories)
    monkeypatch.setattr("toolformer_kit.lm.base.load_lm", lambda model, **kw: lm)
    assert pilot.main(["--models", "scripted", "--tasks", "nq", "--data-dir", str(data), "--out", str(tmp_path / "o"),
                       "--dtype", "fp32", "--batch", "2"], search=search) == 0
    records = [json.loads(line) for line in (tmp_path / "o" / "scripted" / "nq.jsonl").read_text().splitlines()]
    assert [r["closed"]["prediction"] for r in records] == ["I think Paris."] * 2
    assert sorted(r["call"]["prediction"] for r in records) == ["Paris.", "Shakespeare."]
    assert "| scripted | nq | 2 | 50.0 [9.5, 90.5] | 100.0 [34.2, 100.0] |" in capsys.readouterr().out
