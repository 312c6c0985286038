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


def test_calls_read_after_the_sample_was_drawn_are_reported_beside_it():
    verdict = {"sample": 50, "useful": 21, "as_of": "192 calls", "how": "By reading.",
               "later": [{"read": 20, "useful": 11, "banked": "shards 384-447", "how": "The first 20."}]}
    text = "\n".join(_examples_and_judgement([ROW], verdict))
    assert "Later, 20 calls banked after the sample (shards 384-447) were read by the same rule: " \
           "**11 useful**. The first 20." in text
    assert "Later" not in "\n".join(_examples_and_judgement([ROW], dict(verdict, later=[])))
