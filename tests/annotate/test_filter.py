import math

import numpy as np
import pytest

from toolformer_kit.annotate import records as R
from toolformer_kit.annotate.filter import filter_scores, weighted_loss, weights
from toolformer_kit.tools.base import AnnotationSettings
from toolformer_kit.annotate.scoring import BatchedScorer, Request, document_start, naive_losses, score_candidates
from toolformer_kit.calls import ToolCall

TAU_F_1 = {"Calculator": AnnotationSettings(tau_f=1.0)}  # the scorer reads each tool's resolved settings


def test_worked_example_from_the_paper():
    w = weights(3)  # three tokens left in the text
    assert np.allclose(w, [1 / 3, 0.8 / 3, 0.6 / 3])
    l_eps = weighted_loss(np.log([0.02, 0.30, 0.50]), w)
    l_bare = weighted_loss(np.log([0.03, 0.30, 0.50]), w)
    l_plus = weighted_loss(np.log([0.90, 0.60, 0.55]), w)
    assert (round(l_eps, 3), round(l_bare, 3), round(l_plus, 3)) == (1.764, 1.629, 0.291)
    l_minus, score, kept = filter_scores(l_eps, l_bare, l_plus, tau_f=1.0)
    assert round(l_minus, 3) == 1.629 and round(score, 3) == 1.338 and kept
    assert not filter_scores(l_eps, l_bare, l_plus, tau_f=1.4)[2]


def test_weights_are_the_papers():
    assert np.allclose(weights(10), np.array([1, 0.8, 0.6, 0.4, 0.2]) / 3)
    assert len(weights(0)) == 0 and len(weights(1)) == 1


class TableLM:
    """An LM whose next-token probabilities are given per (prefix kind, token index)."""

    bos_ids = [1]

    def __init__(self, table):
        self.table = table

    def encode(self, text):
        return [ord(c) for c in text]

    def token_logprobs(self, prefixes, continuations):
        out = []
        for p, c in zip(prefixes, continuations):
            text = "".join(map(chr, p))
            kind = "plus" if "-> 7]" in text else ("bare" if "->" in text else "eps")
            out.append(np.log(np.array(self.table[kind][: len(c)])))
        return out


def test_scorer_reproduces_the_worked_example_at_the_end_of_a_text():
    # A 6-token document; the call sits at position 3, so only 3 tokens are left (a cut window).
    table = {"eps": [0.5, 0.5, 0.5, 0.02, 0.30, 0.50], "bare": [0.5, 0.5, 0.5, 0.03, 0.30, 0.50],
             "plus": [0.5, 0.5, 0.5, 0.90, 0.60, 0.55]}
    lm = TableLM(table)
    doc = lm.encode(" abcde")
    cand = R.Candidate("d", "Calculator", 3, 2, 0.5, "", input="3 + 4", result="7", score_position=3)
    score_candidates(BatchedScorer(lm), [doc], [0], [cand], TAU_F_1)
    assert (round(cand.L_eps, 3), round(cand.L_call_noresult, 3), round(cand.L_plus, 3)) == (1.764, 1.629, 0.291)
    assert round(cand.score, 3) == 1.338 and cand.kept


def test_cut_window_counts_only_the_tokens_that_exist():
    table = {k: [0.5, 0.25, 0.125, 0.1, 0.2, 0.3, 0.4] for k in ("eps", "bare", "plus")}
    lm = TableLM(table)
    doc = lm.encode(" abcdef")  # 7 tokens
    (last,) = BatchedScorer(lm).losses([doc], [Request(0, (), (6,))])
    assert math.isclose(last[6], -math.log(0.4) / 3)  # one token left: weight 1/3, no renormalising
    (mid,) = BatchedScorer(lm).losses([doc], [Request(0, (), (1,))])
    full = -sum(w * math.log(p) for w, p in zip(weights(5), [0.25, 0.125, 0.1, 0.2, 0.3]))
    assert math.isclose(mid[1], full)


def test_scorer_only_runs_what_the_weights_need():
    seen = []

    class Spy(TableLM):
        def token_logprobs(self, prefixes, continuations):
            seen.extend(len(c) for c in continuations)
            return super().token_logprobs(prefixes, continuations)

    lm = Spy({k: [0.5] * 40 for k in ("eps", "bare", "plus")})
    doc = lm.encode(" " + "x" * 30)
    cands = [R.Candidate("d", "Calculator", i, i, 0.5, "", input="3 + 4", result="7", score_position=i)
             for i in (2, 4, 4, 4)]
    score_candidates(BatchedScorer(lm), [doc], [0] * 4, cands, TAU_F_1)
    assert sorted(seen) == [9, 9, 9]  # ε, e(c, ε), e(c, r): once each, cut after x_{4+4}


def _floor_case():
    """Three calls at position 3: the result helps a lot, helps a little, or hurts."""
    table = {"eps": [0.5, 0.5, 0.5, 0.02, 0.30, 0.50], "bare": [0.5, 0.5, 0.5, 0.03, 0.30, 0.50],
             "plus": [0.5, 0.5, 0.5, 0.90, 0.60, 0.55]}

    class Results(TableLM):  # "-> 7]" helps (the table's plus), "-> 8]" hurts, "-> 9]" helps a little
        def token_logprobs(self, prefixes, continuations):
            out = []
            for p, c in zip(prefixes, continuations):
                text = "".join(map(chr, p))
                row = {"8]": [0.5, 0.5, 0.5, 0.01, 0.2, 0.4], "9]": [0.5, 0.5, 0.5, 0.05, 0.3, 0.5]}
                key = next((k for k in row if k in text), None)
                out.append(np.log(np.array(row[key][: len(c)])) if key else super().token_logprobs([p], [c])[0])
            return out

    lm = Results(table)
    cands = [R.Candidate("d", "Calculator", 3, 2, 0.5, "", input=i, result=r, score_position=3)
             for i, r in (("3 + 4", "7"), ("3 + 5", "8"), ("3 + 6", "9"))]
    return lm, lm.encode(" abcde"), cands


@pytest.mark.parametrize("floor", [0.0, 0.1])
def test_a_score_floor_skips_only_what_cannot_reach_it(floor):
    lm, doc, exact = _floor_case()
    score_candidates(BatchedScorer(lm), [doc], [0] * 3, exact, TAU_F_1)
    lm, doc, fast = _floor_case()
    scorer = BatchedScorer(lm)
    score_candidates(scorer, [doc], [0] * 3, fast, TAU_F_1, floor=floor)
    for a, b in zip(exact, fast):
        assert b.score >= a.score  # a bound where skipped, the score itself elsewhere
        for tau in (floor, 0.5, 1.0, 2.0):  # every decision at τf ≥ floor is the exact one
            assert (a.score >= tau) == (b.score >= tau)
        if b.L_call_noresult is not None:
            assert (b.L_call_noresult, b.score, b.kept) == (a.L_call_noresult, a.score, a.kept)
    skipped = [b for b in fast if b.L_call_noresult is None]
    assert len(skipped) == 1 and skipped[0].result == "8" and skipped[0].score < floor
    assert scorer.stats.sequences == 1 + 3 + 2  # ε, three e(c, r), e(c, ε) of the two above the bound


def test_unscorable_candidates_are_left_alone():
    lm = TableLM({k: [0.5] * 10 for k in ("eps", "bare", "plus")})
    c = R.Candidate("d", "Calculator", 1, 0, 0.5, "Calculator(1 +", status=R.UNCLOSED)
    score_candidates(BatchedScorer(lm), [lm.encode(" abc")], [0], [c], TAU_F_1)
    assert c.score is None and not c.kept


@pytest.mark.real_model
def test_batched_scorer_matches_naive_reference_on_smollm2(smollm2):
    lm = smollm2
    texts = [" The farm had 12 cows and bought 30 more, so it now has 42 cows.",
             " Out of 1400 people, 400 passed: 29 percent."]
    docs = [lm.encode(t) for t in texts]
    specs = [(0, "12 + 30", "42", 13), (0, "12 + 30", "42", len(docs[0]) - 2), (0, "12 * 30", "360", 13),
             (1, "400 / 1400", "0.29", len(docs[1]) - 1), (1, "400 / 1400", "0.29", 9), (1, "1400 - 400", "1000", 9)]
    cands = [R.Candidate(f"d{d}", "Calculator", i, 0, 0.5, "", input=inp, result=res, score_position=i)
             for d, inp, res, i in specs]
    scorer = BatchedScorer(lm)
    score_candidates(scorer, docs, [d for d, *_ in specs], cands, TAU_F_1)
    assert scorer._fast and document_start(lm) == [lm.tokenizer.eos_token_id]
    for c, (d, *_rest) in zip(cands, specs):
        ref = naive_losses(lm, docs[d], ToolCall("Calculator", c.input, c.result), c.score_position)
        got = (c.L_eps, c.L_call_noresult, c.L_plus)
        assert np.allclose(got, ref, atol=1e-4), (got, ref)
