"""The card's judged section: read from judged.json (a person's verdict, never the code's)."""

from toolformer_kit.campaign.card import _examples_and_judgement

ROW = {"doc_id": "d", "score": 1.0, "call": "x -> y", "in_context": "…[MT(x) -> y]…"}


def test_a_judged_sample_prints_its_share_and_its_breakdown():
    verdict = {"sample": 50, "useful": 22, "as_of": "300 calls", "how": "By reading.",
               "breakdown": {"useful": 22, "mistranslation": 28}}
    text = "\n".join(_examples_and_judgement([ROW], verdict))
    assert "**22 (44 %)** were judged useful (`judged.json`). By reading." in text
    assert "| useful | 22 |" in text and "| mistranslation | 28 |" in text


def test_an_unjudged_sample_says_where_the_sample_to_judge_is():
    text = "\n".join(_examples_and_judgement([ROW], None))
    assert "Not judged yet: `data/judge-sample.jsonl`" in text and "| judged |" not in text
