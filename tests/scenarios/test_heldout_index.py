"""The held-out facts stay out of annotation (issue 28, item 2): not annotated, not in the index that
WikiSearch and QA search while annotating, but in the evaluation-time index. Real summaries, real
BM25 (cheap); no model is loaded."""

from __future__ import annotations

import json

import pytest

from toolformer_kit.annotate.build import annotation_tool
from toolformer_kit.annotate.config import AnnotateConfig
from toolformer_kit.config import ConfigError
from toolformer_kit.eval.setting import DISABLED
from toolformer_kit.eval.tasks import get_task
from toolformer_kit.eval.tasks.wikicloze import heldout_titles, wiki_summaries
from toolformer_kit.eval import run as eval_run
from toolformer_kit.experiment import run as R
from toolformer_kit.pipeline import stages
from toolformer_kit.measures.ceiling import question_of
from toolformer_kit.experiment.recipe import ExperimentConfig
from toolformer_kit.tools.wikisearch import BM25Index, default_index


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    cfg = ExperimentConfig(name="t", corpus="wiki", tools=["WikiSearch"], tasks=["wiki-cloze"], docs=60, dev_docs=10)
    R.stage_corpus(cfg, out)
    return cfg, out


def test_held_out_summaries_are_neither_annotated_nor_in_the_annotation_index(corpus_run):
    cfg, out = corpus_run
    summaries = wiki_summaries()
    held = set(heldout_titles(summaries))
    rows = [json.loads(line) for line in (out / "corpus" / R.SEARCH_CORPUS).read_text().splitlines()]
    assert len(rows) == len(summaries) - len(held) and not held & {r["title"] for r in rows}
    assert set(json.loads((out / "corpus" / "heldout_titles.json").read_text())) == held
    docs = [json.loads(line) for line in (out / "corpus" / "train.jsonl").read_text().splitlines()]
    dev = [json.loads(line) for line in (out / "corpus" / "dev.jsonl").read_text().splitlines()]
    assert len(docs) == 60 and not held & {d["title"] for d in docs}
    assert not held & {d["id"].removeprefix("wiki:") for d in dev}


def test_annotation_searches_the_corpus_without_them_evaluation_the_whole_index(corpus_run, tmp_path):
    cfg, out = corpus_run
    held = set(heldout_titles(wiki_summaries()))
    items = get_task("wiki-cloze").load("/unused")[:20]
    annotation = BM25Index(out / "corpus" / R.SEARCH_CORPUS, cache=tmp_path)
    for ex in items:
        statement = question_of(ex.prompt)
        assert default_index().search(statement, 1)  # evaluation: the item is retrievable there
        assert not held & {h.title for h in annotation.search(statement, 10)}
    tool = annotation_tool(AnnotateConfig(wiki_corpus=str(out / "corpus" / R.SEARCH_CORPUS)), "WikiSearch")
    assert R.SEARCH_CORPUS in tool.version and "search.jsonl" in str(tool.fn._index().corpus)
    qa = annotation_tool(AnnotateConfig(wiki_corpus=str(out / "corpus" / R.SEARCH_CORPUS)), "QA")
    assert "search.jsonl" in qa.version
    assert annotation_tool(AnnotateConfig(), "WikiSearch").name == "WikiSearch"  # no corpus: the registered tool
    with pytest.raises(ConfigError, match="--wiki-corpus .* does not exist"):
        annotation_tool(AnnotateConfig(wiki_corpus=str(tmp_path / "nope.jsonl")), "WikiSearch")


def test_the_annotate_stage_is_given_that_corpus(corpus_run, monkeypatch):
    cfg, out = corpus_run
    seen = []

    class Runner:
        def __init__(self, acfg, documents=None):
            seen.append(acfg)

        def run(self):
            pass

    monkeypatch.setattr(stages, "Runner", Runner)
    R.stage_annotate(cfg, out)
    assert seen[0].wiki_corpus == str(out / "corpus" / R.SEARCH_CORPUS)


def test_without_wiki_cloze_nothing_is_held_out(tmp_path):
    cfg = ExperimentConfig(name="t", corpus="wiki", tools=["WikiSearch"], tasks=["dateset"], docs=5, dev_docs=2)
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / R.SEARCH_CORPUS).write_text("stale\n")
    R.stage_corpus(cfg, tmp_path)
    assert not (tmp_path / "corpus" / R.SEARCH_CORPUS).exists()


def test_eval_subset_retrievable_evaluates_only_what_the_index_can_answer(tmp_path, monkeypatch):
    """issue 28, item 4: every retrievable example of the dev tasks plus the cloze set, nothing else."""
    data = tmp_path / "data"
    (data / "qa").mkdir(parents=True)
    rows = [{"question": "who painted the mona lisa", "answer": ["Leonardo da Vinci"]},
            {"question": "who won the 1987 zorblax cup", "answer": ["Quux Quuxson"]}]
    (data / "qa" / "NQ-open.dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = ExperimentConfig(name="t", corpus="wiki", tools=["WikiSearch"], tasks=["nq", "wiki-cloze"], ceiling=True,
                           eval_subset="retrievable", eval_limit=100, data_dir=str(data))
    R.stage_ceiling(cfg, tmp_path)
    seen = {}

    def evaluate(label, generate, tasks, settings, data_dir, folder, **kw):
        seen.update({t.name: t.load(data_dir) for t in tasks})

    monkeypatch.setattr(eval_run, "load_lm", lambda model, **kw: None)  # the pipeline's stage runs it
    monkeypatch.setattr(eval_run, "decoder_generate", lambda lm, batch: None)
    monkeypatch.setattr(eval_run, "evaluate", evaluate)
    monkeypatch.setattr(R, "write_report", lambda *a: None)
    R.stage_eval(cfg, tmp_path, runs=[("toolformer", "m", [DISABLED])])
    assert [e.prompt.split(": ", 1)[1].split("\n")[0] for e in seen["nq"]] == ["who painted the mona lisa"]
    assert len(seen["wiki-cloze"]) == len(get_task("wiki-cloze").load(data))  # every cloze item is retrievable
    with pytest.raises(ConfigError, match="eval_subset retrievable needs the ceiling"):
        ExperimentConfig(name="t", eval_subset="retrievable")
    with pytest.raises(ConfigError, match="eval_subset must be all or retrievable, not 'some'"):
        ExperimentConfig(name="t", eval_subset="some", ceiling=True)
