"""The sequential merge (issue 41): a later call is kept only if it still passes the filter with
the calls kept before it written into its text."""

import dataclasses
import json
import re

import pytest

from toolformer_kit.annotate.document import Document
from toolformer_kit.annotate.merge import build_corpus, chosen_calls, corpus_records
from toolformer_kit.annotate.records import Candidate
from toolformer_kit.annotate.sequential import (model_scorer, placed, reason, repeat_stats, sequential_merge)
from toolformer_kit.config import ConfigError
from toolformer_kit.tools.base import AnnotationSettings

TEXT = "They have 80 chairs in 5 rooms, so 16 per room: 16 chairs each, and 32 in two rooms."


def _call(offset: int, inp: str, res: str, score: float = 1.0) -> Candidate:
    return Candidate("d", "Calculator", 0, offset, 0.5, "", input=inp, result=res, kept=True, score=score,
                     L_eps=2.0, L_call_noresult=2.0, L_plus=2.0 - score, L_minus=2.0)


def _at(word: str, nth: int = 0) -> int:
    """The offset of the space before the ``nth`` ``word`` of TEXT (a call site)."""
    return [m.start() for m in re.finditer(" " + re.escape(word) + r"\b", TEXT)][nth]


class ResultAlreadyThere:
    """A fake filter: a call passes unless its result is already written in the text before it (what
    the real model does with a repeat: the number is predictable from the earlier call). Records
    what it was asked to score."""

    def __init__(self):
        self.seen: list[tuple[str, int]] = []

    def __call__(self, pairs):
        out = []
        for doc, c in pairs:
            self.seen.append((doc.text, c.char_offset))
            known = f"-> {c.result}]" in doc.text[: c.char_offset]
            out.append(dataclasses.replace(c, score=0.1 if known else 1.5, kept=not known))
        return out


def test_a_repeat_is_dropped_by_the_filter_and_a_chain_is_kept():
    doc = Document("d", TEXT)
    first = _call(_at("16"), "80 / 5", "16")
    repeat = _call(_at("16", 1), "80 / 5", "16")
    chain = _call(_at("32"), "16 * 2", "32")
    score = ResultAlreadyThere()
    kept, report = sequential_merge([doc], [chain, repeat, first], score)
    assert [(c.input, c.char_offset) for c in kept] == [("80 / 5", first.char_offset), ("16 * 2", chain.char_offset)]
    assert report.dropped() == {"repeat": 1} and report.kept_after_rescoring() == {"chain": 1}
    # the first call is never re-scored; each later one sees the calls kept before it, in place
    assert len(score.seen) == 2
    text, offset = score.seen[1]
    assert text.count("[Calculator(80 / 5) -> 16]") == 1 and text[offset:] == TEXT[chain.char_offset:]
    # a kept later call carries its new score, at its original offset
    assert kept[1].score == 1.5


def test_the_paper_merge_is_unchanged_by_the_option():
    doc = Document("d", TEXT)
    calls = [_call(_at("16"), "80 / 5", "16"), _call(_at("16", 1), "80 / 5", "16")]
    paper = build_corpus([doc], calls, cap=10, seed=0)
    assert paper == corpus_records([doc], chosen_calls(calls, 10, 0))
    assert paper[0]["text"].count("[Calculator(80 / 5) -> 16]") == 2  # the paper's merge keeps both


def test_texts_are_merged_independently_in_rounds():
    docs = [Document("a", TEXT), Document("b", TEXT)]
    calls = [dataclasses.replace(_call(_at("16"), "80 / 5", "16"), doc_id="a"),
             dataclasses.replace(_call(_at("16", 1), "80 / 5", "16"), doc_id="a"),
             dataclasses.replace(_call(_at("16", 1), "80 / 5", "16"), doc_id="b")]
    kept, report = sequential_merge(docs, calls, ResultAlreadyThere())
    assert sorted((c.doc_id, c.char_offset) for c in kept) == [("a", _at("16")), ("b", _at("16", 1))]
    assert len(report.rescored) == 1


def test_a_later_round_never_writes_a_call_an_earlier_round_wrote_in_the_text():
    """Round 2 over a text that holds ``[Calculator(80 / 5) -> 16]``: a new call with that input is
    dropped unscored wherever it sits (before it, where the filter cannot see it, or after), and a
    new call that uses its result is still scored and kept."""
    call_text = " [Calculator(80 / 5) -> 16]"
    site = _at("16")
    written = TEXT[:site] + call_text + TEXT[site:]
    doc = Document("d", written)
    shift = len(call_text)
    before = _call(TEXT.index(" 5 rooms"), "80 / 5", "16")  # before the earlier round's call
    after = _call(_at("16", 1) + shift, "80 / 5", "16")
    chain = _call(_at("32") + shift, "16 * 2", "32")
    score = ResultAlreadyThere()
    kept, report = sequential_merge([doc], [after, chain, before], score)
    assert [c.input for c in kept] == ["16 * 2"]
    assert report.dropped() == {"written before": 2} and len(report.rescored) == 0
    assert score.seen == []  # the chain is the text's first new call: it keeps its score, unscored again
    rows = corpus_records([doc], kept, keep_calls=True)
    assert rows[0]["text"].count("[Calculator(80 / 5) -> 16]") == 1


def test_repeat_stats_count_new_calls_that_repeat_an_earlier_round():
    rows = [{"calls": [{"tool": "Calculator", "input": "8 / 2"}], "earlier_calls": [{"tool": "Calculator", "input": "8 / 2"}]},
            {"calls": [{"tool": "Calculator", "input": "3 + 4"}], "earlier_calls": []}]
    assert repeat_stats(rows)["repeat_an_earlier_round"] == 1
    assert "repeat_an_earlier_round" not in repeat_stats([{"calls": []}])


def test_placed_refuses_a_call_that_is_not_after_the_written_ones():
    doc = Document("d", TEXT)
    with pytest.raises(ValueError):
        placed(doc, [_call(_at("32"), "16 * 2", "32")], _call(_at("16"), "80 / 5", "16"))


def test_reasons_and_repeat_stats():
    a = _call(_at("16"), "80 / 5", "16")
    assert reason(dataclasses.replace(a, char_offset=60), [a]) == "repeat"
    rows = build_corpus([Document("d", TEXT)], [a, _call(_at("16", 1), "80 / 5", "16")], 10, 0)
    assert repeat_stats(rows)["texts_with_a_repeat"] == 1


def test_an_unknown_merge_is_one_clear_error():
    from toolformer_kit.annotate.config import AnnotateConfig

    with pytest.raises(ConfigError, match="independent is the paper's"):
        AnnotateConfig(merge="chained")


def test_a_sequentially_merged_run_is_not_refiltered(tmp_path):
    from toolformer_kit.annotate.refilter import refilter_run

    (tmp_path / "manifest.json").write_text(json.dumps({"settings": {"merge": "sequential"}}))
    (tmp_path / "documents.jsonl").write_text("")
    (tmp_path / "candidates.jsonl").write_text("")
    with pytest.raises(ConfigError, match="annotate again"):
        refilter_run(tmp_path, tmp_path / "out", 1.0)


@pytest.mark.real_model
def test_on_the_real_model_a_later_call_is_scored_in_the_text_that_holds_the_earlier_one(smollm2):
    """model_scorer against the paper's scorer run by hand: alone, the first call keeps its score;
    after it, the repeat is scored on a text written out here by hand with the first call in it."""
    from toolformer_kit.annotate.positions import LEAD, token_at
    from toolformer_kit.annotate.scoring import BatchedScorer, score_candidates

    lm = smollm2
    text = "The shop sold 37 cakes on Monday and 48 on Tuesday, 85 cakes in all. So it sold 85 cakes."
    doc = Document("d", text)
    first = _call(text.index(" 85"), "37 + 48", "85")
    repeat = _call(text.rindex(" 85"), "37 + 48", "85")

    def by_hand(body, call):
        ids, offsets = lm.encode_with_offsets(LEAD + body)
        call = dataclasses.replace(call, score_position=token_at(offsets, call.char_offset))
        score_candidates(BatchedScorer(lm), [ids], [0], [call], {"Calculator": AnnotationSettings(tau_f=0.5)})
        return call

    alone = by_hand(text, first)
    (same,) = model_scorer(lm, {"Calculator": AnnotationSettings(tau_f=0.5)})([placed(doc, [], first)])
    assert same.score == pytest.approx(alone.score, abs=1e-3)
    call_text = " [Calculator(37 + 48) -> 85]"
    written = text[: first.char_offset] + call_text + text[first.char_offset:]
    expected = by_hand(written, dataclasses.replace(repeat, char_offset=repeat.char_offset + len(call_text)))
    (after,) = model_scorer(lm, {"Calculator": AnnotationSettings(tau_f=0.5)})([placed(doc, [first], repeat)])
    assert after.char_offset == expected.char_offset and after.kept == expected.kept
    assert after.score == pytest.approx(expected.score, abs=1e-3)
    # and the earlier call did change what the model saw before the repeat
    lone_repeat = by_hand(text, repeat)
    assert abs(after.L_minus - lone_repeat.L_minus) > 1e-3
