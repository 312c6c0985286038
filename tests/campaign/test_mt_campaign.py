"""The MT campaign (issue 42, item 1) with a fake M and a fake translator: English texts quoting a
French sentence, MT calls right after the quote, kept where the translation helps, and the card
naming the recipe."""

import json

import numpy as np

from toolformer_kit.annotate.document import Document
from toolformer_kit.annotate.execute import Executor
from toolformer_kit.campaign import run as C
from toolformer_kit.corpora.selection import Selection, mt_text
from toolformer_kit.lm.base import Sample
from toolformer_kit.tools.mt import mt_tool

from annotate.fakes import FakeEngine, FakeLM, PositionLogprobs, _text

QUOTE = "Le musée a ouvert ses portes au printemps avec une grande exposition de peinture moderne."
ENGLISH = ["The museum opened its doors in the spring with a large exhibition of modern painting.",
           "Visitors came from many countries to see the paintings and the new hall.",
           "It stands on the river bank."]
TRANSLATION = "The museum opened its doors in the spring with a large exhibition of modern painting."


class TranslatingLM(FakeLM):
    """Opens a call only right after a closing quote; samples MT(the quote); predicts a character
    of the text well when the call's result (in front of the text) holds it."""

    def call_start_logprobs(self, prompt, texts, contexts=None):
        out = []
        for t in texts:
            p = [0.6 if (c == " " and t[i - 1: i] == '"') else 0.001 for i, c in enumerate(t)]
            out.append(PositionLogprobs([ord(c) for c in t], list(range(len(t))), np.log(np.array(p))))
        return out

    def sample(self, prefixes, n, stop="]", config=None):
        return [[Sample(f"MT({QUOTE})]", True)] * n for _ in prefixes]

    def token_logprobs(self, prefixes, continuations):
        out = []
        for p, c in zip(prefixes, continuations):
            head = _text(p)
            result = head.split("->", 1)[1].split("]", 1)[0].lower() if "->" in head else ""
            out.append(np.array([np.log(0.9) if ch.isalpha() and result and ch.lower() in result else np.log(0.2)
                                 for ch in _text(c)]))
        return out


class Dictionary:
    """A translator that knows one sentence."""

    name = "dictionary"

    def translate(self, text, lang):
        return TRANSLATION if (text, lang) == (QUOTE, "fr") else None


def test_an_mt_campaign_keeps_the_translation_after_the_quote(tmp_path, monkeypatch):
    text = mt_text("Musée", QUOTE, ENGLISH)
    monkeypatch.setattr(C, "mt_selection", lambda seed, data_dir: Selection(
        [Document("mt:fr:Musée", text, {"source": "mt", "title": "Musée", "language": "fr"})],
        {"pairs": 1, "asked_about": 3, "mlqa_found": True, "documents": 1}))
    translator = mt_tool(translator=Dictionary())
    cfg = C.CampaignConfig(recipe="mt", out=str(tmp_path / "mt"), work=str(tmp_path / "work"), k=5, m=2,
                           tau_s=0.0, tau_f=0.5, shard_size=1, progress=False, target_calls=0, merge="sequential",
                           window_tokens=2000)  # the fake M reads a character as a token
    C.run_campaign(cfg, lm=TranslatingLM(), tools=[translator], executor=Executor(engine_factory=FakeEngine))
    (row,) = [json.loads(line) for line in (tmp_path / "mt" / "data" / "cstar.jsonl").open()]
    (call,) = row["calls"]
    assert (call["tool"], call["input"], call["result"]) == ("MT", QUOTE, TRANSLATION)
    assert row["text"][: row["text"].index("[MT(")].endswith(QUOTE + '" ')  # right after the closing quote
    card = (tmp_path / "mt" / "README.md").read_text()
    assert "# C* for the MT" in card and "3 titles MLQA (XQuAD) is about" in card
    assert "the paper's MT settings: k 20 × m 10, τs 0.0, τf 0.5" in card
    counts = json.loads((tmp_path / "mt" / "data" / "summary.json").read_text())["counts"]
    assert counts and sum(counts.values()) >= 1  # the MT's execution statuses (the card once counted the Calculator's)


def test_the_mt_recipe_runs_the_paper_pre_filter_and_tool():
    acfg = C.annotate_config(C.CampaignConfig(recipe="mt", k=20, m=10, tau_s=0.0, tau_f=0.5))
    assert acfg.tools == ["MT"] and acfg.prefilter and (acfg.k, acfg.m, acfg.tau_s) == (20, 10, 0.0)
