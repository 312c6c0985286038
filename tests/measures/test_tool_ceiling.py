"""Calendar and MT ceilings (issue 47) on fakes: the Calendar's sentence as the oracle, per family
and granularity; MT candidates screened and vetted as the tool does, chrF against English; the
MLQA reader given each translation where the question stood; resumable files."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from toolformer_kit.calls import find_calls
from toolformer_kit.eval.tasks import get_task
from toolformer_kit.measures.oracle import PilotItem, oracle_prompt
from toolformer_kit.measures.tool_ceiling import (calendar_items, chrf, question_line, translator_row,
                                                  translate_questions)
from toolformer_kit.tools.mt import is_worked_example
from toolformer_kit.tools.calendar import calendar_text

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class DateReader:
    """Answers a weekday question right only when the prompt holds "Today is <weekday>, …"."""

    def __init__(self):
        self.prompts = []

    def __call__(self, prompts, config, tools):
        assert config.disabled and tools == {}
        self.prompts += prompts
        out = []
        for p in prompts:
            text = " Monday."
            if "Today is " in p:
                today = dt.datetime.strptime(p.split("Today is ", 1)[1].split(".")[0], "%A, %B %d, %Y").date()
                if "tomorrow" in p and "day of the week" in p:
                    text = f" {(today + dt.timedelta(days=1)):%A}."
            out.append(SimpleNamespace(text=text, calls=[]))
        return out


def test_calendar_items_carry_the_calendar_sentence_for_the_examples_own_date():
    examples = get_task("dateset").load(Path("."))
    items = calendar_items(examples, 5)
    assert len(items) == 5 and all(i.tool == "Calendar" for i in items)
    for item in items:
        assert item.passage == calendar_text(dt.date.fromisoformat(item.example.meta["today"]))
        (call,) = [c.call for c in find_calls(oracle_prompt(item, "call"))]
        assert (call.tool, call.input, call.result) == ("Calendar", "", item.passage)
        assert oracle_prompt(item, "context").startswith(item.passage + "\n\n")


def test_calendar_ceiling_rows_per_family_and_granularity_and_resume(tmp_path, capsys):
    bench = _load("tool_ceilings")
    reader = DateReader()
    out = tmp_path / "cal"
    argv = ["calendar", "--model", "m", "--tasks", "dateset", "--limit", "60", "--out", str(out), "--data-dir", str(tmp_path)]
    assert bench.main(argv, generate_for=lambda m: reader) == 0
    result = json.loads((out / "results.json").read_text())
    rows = {r["task"]: r for r in result["rows"]}
    assert rows["dateset"]["n"] == 60 and rows["dateset"]["pooled"]
    families = [t for t in rows if t.startswith("dateset · ") and t.split(" · ")[1] in
                ("near_day", "n_days", "weekday_of_date", "days_between")]
    assert abs(sum(rows[t]["share"] for t in families) - 1) < 1e-9
    near = rows["dateset · near_day"]
    assert near["closed"]["accuracy"] <= near["context"]["accuracy"]  # "tomorrow" weekday questions gain
    assert rows["dateset · days"]["context"]["accuracy"] == 0  # the fake cannot count days
    assert len(reader.prompts) == 60 * 3
    assert bench.main(argv, generate_for=lambda m: pytest.fail("a finished task must be reused")) == 0


class Parrot:
    """A translator: a fixed line for Hindi (what Qwen did), else a real-looking translation."""

    name = "parrot"

    def translate(self, text, lang):
        return "The library stays closed on Sunday." if lang == "hi" else "Who led the Panthers in sacks?"


@pytest.mark.parametrize("text", [
    "सैक में पैंथर्स का नेतृत्व किसने किया?",   # Hindi
    "من قاد الفهود في الإقالات؟",               # Arabic
    "谁带领黑豹队擒杀四分卫？",                  # Chinese
    "ᚠᛇᚻ᛫ᛒᛦᚦ᛫ᚠᚱᚩᚠᚢᚱ",                        # runes
    "xqzv brrrpt klmnq wxyz",                   # gibberish
])
def test_the_mt_tool_never_returns_a_worked_example(text):
    class Demo:
        name = "demo"

        def translate(self, text, lang):
            return "The museum opens at nine."

    (row,) = translate_questions([("q", text)], "xx", Demo(), {"q": "ref"})
    assert row["result"] is None and row["why"] in ("example", "no-language")


def test_translator_row_counts_what_the_tool_did_and_scores_chrf():
    questions = [("a", "सैक में पैंथर्स का नेतृत्व किसने किया?"), ("b", "Wer führte die Panthers bei den Sacks an?"),
                 ("c", "Who led the Panthers in sacks?")]
    refs = {k: "Who led the Panthers in sacks?" for k in "abc"}
    recs = translate_questions(questions, "xx", Parrot(), refs)
    assert [r["why"] for r in recs] == ["example", "", "english"]
    row = translator_row("parrot", "xx", recs, resamples=20)
    assert (row["returned"], row["examples_raw"], row["examples_returned"]) == (1, 1, 0)
    assert row["no_result"] == {"example": 1, "english": 1}
    assert 0 < row["chrf"] < 100 and chrf(["same words"], ["same words"]) == 100
    assert is_worked_example("the library stays closed on sunday") and not is_worked_example(None)


def _mlqa(data: Path):
    """A two-question MLQA folder in the published layout (en and de)."""
    qs = {"en": ["Who led the Panthers in sacks?", "What year was it built?"],
          "de": ["Wer führte die Panthers bei den Sacks an?", "In welchem Jahr wurde es gebaut?"]}
    for lang, (q1, q2) in qs.items():
        doc = {"data": [{"paragraphs": [{"context": "Kawann Short led the team. It was built in 1901.",
                                         "qas": [{"id": "i1", "question": q1, "answers": [{"text": "Kawann Short"}]},
                                                 {"id": "i2", "question": q2, "answers": [{"text": "1901"}]}]}]}]}
        path = data / "mlqa" / "test" / f"test-context-en-question-{lang}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc))


class EnglishReader:
    """Right only when the prompt's question is English."""

    def __call__(self, prompts, config, tools):
        out = []
        for p in prompts:
            q = question_line(p)
            out.append(SimpleNamespace(text=" Kawann Short" if q.startswith("Who led") else
                                       " 1901" if q.startswith("What year") else " I do not know", calls=[]))
        return out


def test_mlqa_ceiling_reads_each_candidates_translation_where_the_question_stood(tmp_path):
    data = tmp_path / "data"
    _mlqa(data)
    mt = _load("mt_translators")

    class Half:
        name = "half"

        def translate(self, text, lang):
            return "Who led the Panthers in sacks?" if "Panthers" in text else "When?"

    assert mt.main(["--candidates", "half", "--langs", "de", "--data-dir", str(data), "--out", str(tmp_path / "mt"),
                    "--resamples", "10"], translator_for=lambda c: Half()) == 0
    bench = _load("tool_ceilings")
    assert bench.main(["mlqa", "--model", "m", "--langs", "de", "--candidates", "half", "--data-dir", str(data),
                       "--translations", str(tmp_path / "mt"), "--out", str(tmp_path / "q")],
                      generate_for=lambda m: EnglishReader()) == 0
    row = json.loads((tmp_path / "q" / "results.json").read_text())["rows"][0]
    assert (row["closed"]["accuracy"], row["reference"]["accuracy"], row["half"]["accuracy"]) == (0, 1, 0.5)


def test_mt_context_form_replaces_the_question_line():
    from toolformer_kit.eval.tasks import Example
    from toolformer_kit.eval.tasks.qa import mlqa_prompt

    ex = Example("1", mlqa_prompt("Some context.", "Wer war das?"), ("x",))
    item = PilotItem(ex, "Wer war das?", "Who was that?", tool="MT")
    assert question_line(oracle_prompt(item, "context")) == "Who was that?"
    assert oracle_prompt(PilotItem(ex, "Wer war das?", "", tool="MT"), "context") == ex.prompt
    (call,) = [c.call for c in find_calls(oracle_prompt(item, "call"))]
    assert (call.tool, call.input, call.result) == ("MT", "Wer war das?", "Who was that?")
