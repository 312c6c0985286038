"""Every loader on the real shared benchmark copies (counts from their README and our filters),
and MLQA / TempLAMA on tiny hand-made files in their published formats."""

import json
import os
from pathlib import Path

import pytest

from toolformer_kit.eval.config import default_data_dir
from toolformer_kit.eval.metrics import parse_number
from toolformer_kit.eval.tasks import get_task, subset

DATA = Path(os.environ.get("TOOLFORMER_BENCHMARKS", default_data_dir()))
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"no benchmark copies at {DATA}")


def load(name):
    return get_task(name).load(DATA)


@needs_data
@pytest.mark.parametrize("task, count", [
    ("svamp", 296), ("asdiv", 662), ("mawps", 515),
    ("lama-trex", 548), ("lama-trex-templates", 3674), ("lama-google-re", 114), ("lama-squad", 59),
    ("webquestions", 595), ("nq", 1071), ("triviaqa", 1769), ("wikitext2", 62),
])
def test_loader_counts(task, count):
    examples = load(task)
    assert len(examples) == count
    assert len({e.id for e in examples}) == count  # ids are unique (resuming relies on it)


@needs_data
def test_asdiv_keeps_exactly_the_numeric_answers():
    import xml.etree.ElementTree as ET

    problems = list(ET.parse(DATA / "math" / "ASDiv.xml").getroot().iter("Problem"))
    assert len(problems) == 712
    numeric = [p for p in problems if parse_number(p.findtext("Answer")) is not None]
    assert len(numeric) == len(load("asdiv"))


@needs_data
def test_math_prompts_and_answers():
    svamp = {e.id: e for e in load("svamp")}["chal-2"]
    assert svamp.prompt.endswith("How much did the candy bar cost?\nThe answer is")
    assert svamp.answers == ("1",)
    mawps = load("mawps")[0]
    assert "number0" not in mawps.prompt and "34 dogwood trees" in mawps.prompt
    assert mawps.answers == ("83",)
    assert all("number0" not in e.prompt for e in load("mawps"))


@needs_data
def test_lama_statements_end_where_the_mask_was():
    for name in ("lama-trex", "lama-google-re", "lama-squad"):
        for ex in load(name):
            assert "[MASK]" not in ex.prompt and ex.answers[0]
    squad = load("lama-squad")[0]
    assert squad.prompt.endswith("was originally aired by") and squad.answers == ("CBS",)


@needs_data
def test_qa_aliases_and_dataset_text():
    trivia = load("triviaqa")
    assert "Lauren Bacall" in trivia[1].answers and len(trivia[1].answers) > 3
    assert all(e.answers for e in trivia + load("nq") + load("webquestions"))
    wiki = load("wikitext2")
    assert wiki[0].prompt.lstrip().startswith("= Robert Boulter =")


def test_missing_data_names_the_flag(tmp_path):
    with pytest.raises(FileNotFoundError, match="--data-dir"):
        get_task("svamp").load(tmp_path)


def test_subset_is_stable_and_nested():
    examples = get_task("dateset").load(Path("/unused"))
    a, b = subset(examples, 20), subset(examples, 40)
    assert [e.id for e in a] == [e.id for e in b[:20]]
    assert [e.id for e in a] != [e.id for e in examples[:20]]  # not just the file's head


def test_mlqa_published_format(tmp_path):
    folder = tmp_path / "mlqa" / "test"
    folder.mkdir(parents=True)
    doc = {"data": [{"title": "Lisboa", "paragraphs": [{
        "context": "Lisbon is the capital of Portugal.",
        "qas": [{"id": "q1", "question": "¿Cuál es la capital de Portugal?",
                 "answers": [{"text": "Lisbon", "answer_start": 0}, {"text": "Lisbon", "answer_start": 0}]},
                {"id": "q2", "question": "¿De qué país es capital Lisboa?",
                 "answers": [{"text": "Portugal", "answer_start": 25}]}]}]}]}
    (folder / "test-context-en-question-es.json").write_text(json.dumps(doc), encoding="utf-8")
    task = get_task("mlqa-es")
    examples = task.load(tmp_path)
    assert [e.id for e in examples] == ["q1", "q2"]
    assert examples[0].answers == ("Lisbon",)
    assert "Lisbon is the capital" in examples[0].prompt and "¿Cuál" in examples[0].prompt
    assert task.score(" Lisbon.", examples[0]) and not task.score(" Madrid.", examples[0])
    with pytest.raises(FileNotFoundError):
        get_task("mlqa-de").load(tmp_path)


def test_mlqa_en_is_the_english_control_on_the_real_file():
    """The control reads the same questions in English as each language's file asks (XQuAD's ids)."""
    from toolformer_kit.eval.config import default_data_dir

    data = default_data_dir()
    if not (data / "mlqa" / "test" / "test-context-en-question-en.json").is_file():
        pytest.skip("the shared MLQA (XQuAD) files are not on this machine")
    en, es = get_task("mlqa-en").load(data), get_task("mlqa-es").load(data)
    assert [e.id for e in en] == [e.id for e in es] and en[0].prompt != es[0].prompt
    assert get_task("mlqa-en").exercises == "MT"


def test_templama_published_format(tmp_path):
    (tmp_path / "templama").mkdir()
    rows = [
        {"query": "Cristiano Ronaldo plays for _X_.", "answer": [{"wikidata_id": "Q1422", "name": "Juventus F.C."}],
         "date": "2019", "id": "Q11571_P54_2019", "relation": "P54"},
        {"query": "_X_ is the head coach of Arsenal.", "answer": [{"name": "Mikel Arteta"}],
         "date": "2020", "id": "x2", "relation": "P286"},
    ]
    (tmp_path / "templama" / "test.json").write_text("\n".join(map(json.dumps, rows)))
    task = get_task("templama")
    (ex,) = task.load(tmp_path)  # the second query's mask is not last
    assert ex.prompt.endswith("Cristiano Ronaldo plays for") and ex.answers == ("Juventus F.C.",)
    assert ex.meta["today"] == "2019-07-01"
    assert task.score(" Juventus FC, an Italian club", ex)
