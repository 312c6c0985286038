"""Segment decoding (the vLLM decoder) against the scripted fake: token for token what the HF
decoder writes, whatever the engine writes past the point where a segment must be cut."""

import pytest
import torch
from decode_fakes import CALL_OPEN, EOS, FakeLM, Story
from test_decode_fake import (CALL_AT, DOC, DOC2, MALFORMED, PROMPT, STORIES, TOOLS, TWO_CALLS, WANTS_BOOM,
                              CountingEngine)

from toolformer_kit.decode.config import DecodeConfig
from toolformer_kit.decode.hf import ToolAwareDecoder
from toolformer_kit.decode import make_decoder
from toolformer_kit.decode.vllm import VLLMToolDecoder, segment_seed
from toolformer_kit.lm.base import Segment


class SegmentLM(FakeLM):
    """The fake model behind ``generate_segments``, as vLLM answers it: the engine writes on to
    its budget, a stop string or EOS, reporting the watched token's rank at each step."""

    def __init__(self, stories, **kw):
        super().__init__(stories, **kw)
        self.rounds: list[list] = []

    def generate_segments(self, requests):
        self.rounds.append(list(requests))
        return [self._segment(r) for r in requests]

    def _segment(self, req) -> Segment:
        ids, out, ranks = list(req.prompt_ids), [], []
        gen = torch.Generator().manual_seed(req.seed) if req.temperature > 0 else None
        for _ in range(req.max_tokens):
            logits = self.model.script(ids)
            ranks.append(self._rank(logits, req))
            if req.ban is not None:
                logits[req.ban] = float("-inf")
            if getattr(req, "allow", ()):  # vLLM's allowed_token_ids
                keep = torch.full_like(logits, float("-inf"))
                keep[list(req.allow)] = logits[list(req.allow)]
                logits = keep
            token = (int(logits.argmax()) if gen is None else
                     int(torch.multinomial(torch.softmax(logits / req.temperature, -1), 1, generator=gen)))
            out.append(token)
            ids.append(token)
            if token in req.stop_ids or any(s in self.decode(out) for s in req.stop):
                break
        return Segment(out, ranks)

    @staticmethod
    def _rank(logits, req):
        if req.watch is None:
            return None
        rank = int((logits > logits[req.watch]).sum())
        return rank if rank < req.k else None  # vLLM reports only the top k


def both(stories, prompts=None, merge_call_open=True, **cfg):
    """The HF decoder's and the segment decoder's results on the same script and settings."""
    prompts = prompts or [s.prompt for s in stories]
    config = DecodeConfig(**cfg)
    hf = ToolAwareDecoder(FakeLM(stories, merge_call_open), engine=CountingEngine(TOOLS))
    seg = VLLMToolDecoder(SegmentLM(stories, merge_call_open=merge_call_open), engine=CountingEngine(TOOLS))
    return hf.generate(prompts, config), seg.generate(prompts, config), seg


def as_tuples(results):
    return [(r.text, r.token_ids, r.forced, r.calls) for r in results]


def assert_same(stories, **cfg):
    hf, seg, decoder = both(stories, **cfg)
    assert as_tuples(seg) == as_tuples(hf)
    return seg, decoder


@pytest.mark.parametrize("k", [1, 3, 10])
@pytest.mark.parametrize("inside", [True, False])
def test_call_opens_on_the_kth_rank_and_not_the_next(k, inside):
    (res,), _ = assert_same([Story(PROMPT, DOC, ranks={CALL_AT: k - 1 if inside else k})], k=k)
    assert bool(res.calls) == inside and (CALL_OPEN in res.token_ids) == inside
    if inside:
        assert res.text == " It costs [Calculator(2 + 3) -> 5] 5 dollars." and res.forced[CALL_AT]


@pytest.mark.parametrize("max_calls", [0, 1, 2, 3])
def test_call_open_is_banned_once_the_calls_are_used(max_calls):
    # " [" is the favourite token at both points: without the ban the engine would write it
    (res,), decoder = assert_same([TWO_CALLS], max_calls=max_calls, max_new_tokens=200)
    assert len(res.calls) == min(max_calls, 2) and res.token_ids[-1] == EOS
    banned = [r for rnd in decoder.lm.rounds for r in rnd if r.ban is not None]
    assert bool(banned) == (max_calls <= 2)  # two calls use up max_calls=2 before the text ends


def test_disabled_bans_from_the_start_and_watches_nothing():
    story = Story(PROMPT, DOC, ranks={i: 0 for i in range(len(DOC) + 1)})
    (res,), decoder = assert_same([story], disabled=True, max_calls=5)
    assert res.calls == [] and CALL_OPEN not in res.token_ids
    (req,) = [r for rnd in decoder.lm.rounds for r in rnd]  # one request wrote the whole text
    assert req.ban == CALL_OPEN and req.watch is None


@pytest.mark.parametrize("written,reason,tail", MALFORMED, ids=[m[1] for m in MALFORMED])
def test_malformed_calls_match(written, reason, tail):
    (res,), decoder = assert_same([Story(PROMPT, DOC, ranks={CALL_AT: 0}, call=written)], max_call_tokens=24)
    assert res.text == " It costs" + tail and res.calls[0].reason == reason
    assert decoder.counters[f"malformed.{reason}"] == 1


@pytest.mark.parametrize("stop", [["."], ["\n", "More"], ["0.5"]])
def test_stop_strings_match_and_are_not_searched_inside_calls(stop):
    story = Story(PROMPT, " Half is 0.5. More text\n", ranks={8: 0}, call="Calculator(1 / 2) ->")
    assert_same([story], stop=stop)


@pytest.mark.parametrize("max_new_tokens", [1, 5, 9, 10, 15, 19, 25, 200])
def test_token_budget_matches_forced_tokens_included(max_new_tokens):
    (res,), _ = assert_same([Story(PROMPT, DOC, ranks={CALL_AT: 0})], max_new_tokens=max_new_tokens)
    assert len(res.token_ids) == min(max_new_tokens, len(res.token_ids))


@pytest.mark.parametrize("allowed", [["Calculator"], ["Boom"], ["Calculator", "Boom"], []])
@pytest.mark.parametrize("merge_call_open", [True, False])
def test_the_tool_name_mask_matches(allowed, merge_call_open):
    (res,), decoder = assert_same([WANTS_BOOM], allowed_tools=allowed, merge_call_open=merge_call_open,
                                  max_new_tokens=100)
    assert all(c.tool in allowed for c in res.calls) and bool(res.calls) == bool(allowed)
    asked = [r for rnd in decoder.lm.rounds for r in rnd if r.allow]
    assert all(r.max_tokens == 1 for r in asked) and bool(asked) == bool(allowed)


@pytest.mark.parametrize("answer", [1, 4, 9, 30])
def test_answer_budget_matches(answer):
    seg, _ = assert_same(STORIES, max_call_tokens=24, max_answer_tokens=answer, max_calls=2, max_new_tokens=200)
    assert all(r.text for r in seg)


def test_multi_token_call_open_matches():
    assert_same([Story(PROMPT, DOC, ranks={CALL_AT: 3})], merge_call_open=False, max_new_tokens=100)
    assert_same([TWO_CALLS], merge_call_open=False, max_new_tokens=200)  # "[" banned after a space only


SETTINGS = [dict(), dict(k=1, stop=["."], max_new_tokens=30), dict(max_calls=2, max_new_tokens=80),
            dict(disabled=True), dict(k=3, max_calls=0)]


@pytest.mark.parametrize("cfg", SETTINGS)
def test_batch_of_prompts_of_different_lengths_matches(cfg):
    results, decoder = assert_same(STORIES, max_call_tokens=24, **cfg)
    # rows reaching "->" in the same round share one tool run, as in the HF decoder's steps
    assert sum(decoder.engine.batches) == sum(c.result is not None or c.reason in ("no_result", "tool_error")
                                              for r in results for c in r.calls)


def test_a_call_closed_by_the_model_lets_the_next_one_be_watched():
    # the model closes the first call with "]" itself mid-segment; with a call left, " [" must be
    # watched again from there, so the segment written inside the call is cut
    story = Story(PROMPT, DOC2, ranks={DOC2.index(" 5"): 0, DOC2.index(" 20"): 0},
                  call=["Calculator(2 + 3)]", "Calculator(5 * 4) ->"])
    (res,), _ = assert_same([story], max_calls=2, max_new_tokens=200)
    assert [c.reason for c in res.calls] == ["closed_without_arrow", ""]


def test_segments_cut_only_where_needed():
    """A call costs three requests (up to the open, the call up to "->", the rest after the
    result) and one per token of the tool's name (the name mask changes at each)."""
    story = Story(PROMPT, " Half is 0.5. More text\n", ranks={8: 0}, call="Calculator(1 / 2) ->")
    (res,), decoder = assert_same([story], stop=["/", "More"])  # "/" is text only outside a call
    name = len("Calculator(")  # one byte token a character
    assert res.calls[0].ok and len(decoder.lm.rounds) == 3 + name
    assert all(len(r[0].allow) >= 1 and r[0].max_tokens == 1 for r in decoder.lm.rounds[1: 1 + name])
    call = decoder.lm.rounds[1 + name][0]
    assert call.max_tokens == 48 - name and call.stop == () and call.allow == ()
    (res,), decoder = assert_same([Story(PROMPT, DOC)])
    assert len(decoder.lm.rounds) == 1
    # " [" as two tokens: "[" is watched throughout, so one request writes up to the open (once
    # banned, though, "[" is banned after a space only, one step at a time)
    (res,), decoder = assert_same([Story(PROMPT, DOC, ranks={CALL_AT: 3})], merge_call_open=False)
    assert decoder.lm.decode(decoder.lm.rounds[1][0].prompt_ids) == PROMPT + " It costs ["


def test_sampling_is_seeded_per_row_not_per_batch():
    cfg = dict(temperature=1.0, seed=3, max_calls=2, max_call_tokens=24)
    decoder = VLLMToolDecoder(SegmentLM(STORIES), engine=CountingEngine(TOOLS))
    batched = decoder.generate([s.prompt for s in STORIES], DecodeConfig(**cfg))
    alone = [decoder.generate([s.prompt], DecodeConfig(**cfg))[0] for s in STORIES]
    assert as_tuples(alone) == as_tuples(batched)
    other = decoder.generate([s.prompt for s in STORIES], DecodeConfig(**(cfg | {"seed": 4})))
    assert as_tuples(other) != as_tuples(batched)
    assert segment_seed(3, [1, 2], 0) != segment_seed(3, [1, 2], 1)


def test_disabled_sampling_never_writes_call_open():
    story = Story(PROMPT, DOC, ranks={i: 0 for i in range(len(DOC) + 1)}, sharp=False)
    decoder = VLLMToolDecoder(SegmentLM([story]), engine=CountingEngine(TOOLS))
    for seed in range(5):
        (res,) = decoder.generate([PROMPT], DecodeConfig(disabled=True, temperature=1.0, seed=seed, max_calls=5))
        assert CALL_OPEN not in res.token_ids and res.calls == []


def test_an_empty_segment_ends_the_row_instead_of_looping():
    lm = SegmentLM([Story(PROMPT, DOC)])
    lm.generate_segments = lambda requests: [Segment([], []) for _ in requests]
    (res,) = VLLMToolDecoder(lm, engine=CountingEngine(TOOLS)).generate([PROMPT], DecodeConfig())
    assert res.token_ids == [] and res.text == ""


def test_make_decoder_picks_the_backend_s_decoder():
    assert type(make_decoder(FakeLM([]), tools=TOOLS)) is ToolAwareDecoder
    decoder = make_decoder(SegmentLM([]), tools=TOOLS, batch_size=3)
    assert type(decoder) is VLLMToolDecoder and decoder.batch_size == 3


def test_make_decoder_names_what_a_backend_lacks():
    lm = FakeLM([])
    del lm.cache_kw
    with pytest.raises(TypeError, match="lacks cache_kw, generate_segments"):
        make_decoder(lm, tools=TOOLS)


# ------------------------------------------------------------------ the --backend flag
def _has_vllm() -> bool:
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


@pytest.mark.skipif(_has_vllm(), reason="checks the message shown when vLLM is missing")
@pytest.mark.parametrize("argv", [["generate", "--backend", "vllm", "Hello"],
                                  ["eval", "--backend", "vllm", "--model", "smollm2-135m", "--tasks", "dateset"]])
def test_backend_vllm_without_vllm_is_one_clear_error(argv, capsys, tmp_path):
    from toolformer_kit.commands.cli import main
    from toolformer_kit.lm.vllm import INSTALL_HINT

    assert main(argv + (["--out", str(tmp_path / "out")] if argv[0] == "eval" else [])) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"error: {INSTALL_HINT}" and "Traceback" not in err


def test_unknown_backend_is_refused(capsys, tmp_path):
    from toolformer_kit.commands.cli import main

    assert main(["eval", "--backend", "nope", "--model", "m", "--tasks", "dateset", "--out", str(tmp_path)]) == 2
    assert "nope" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["generate", "--backend", "nope", "Hello"])


def test_force_arrow_is_refused_with_the_fix_rather_than_applied_halfway():
    from toolformer_kit.config import ConfigError

    seg = VLLMToolDecoder(SegmentLM([Story(PROMPT, DOC, ranks={CALL_AT: 0})]), engine=CountingEngine(TOOLS))
    with pytest.raises(ConfigError, match="--backend hf"):
        seg.generate([PROMPT], DecodeConfig(force_arrow=True))


@pytest.mark.parametrize("max_calls", [2, 3])
def test_chained_calls_and_the_loop_guard_match(max_calls):
    from test_decode_fake import CHAIN, LOOPING

    (res,), decoder = assert_same([CHAIN], max_calls=max_calls, max_new_tokens=200)
    assert [c.result for c in res.calls] == ["20", "5", "15"][:max_calls]
    assert decoder.engine.batches == [1] * max_calls
    (res,), decoder = assert_same([LOOPING], max_calls=max_calls, max_new_tokens=200)
    assert [c.reason for c in res.calls] == ["", "repeated"] and decoder.engine.batches == [1]


def test_constrained_inputs_match():
    from test_decode_fake import SLOPPY

    (res,), decoder = assert_same([SLOPPY], constrain_inputs=True)
    assert res.calls[0].result == "5"
    assert any(r.allow and r.max_tokens == 1 for rnd in decoder.lm.rounds for r in rnd)  # the input, step by step


@pytest.mark.parametrize("max_calls", [1, 2])
def test_dropped_empty_calls_match(max_calls):
    story = Story(PROMPT, DOC2, ranks={DOC2.index(" 5"): 0, DOC2.index(" 20"): 0}, call="Boom(2 + 3) ->")
    for one in (story, WANTS_BOOM):  # one prompt each: the two stories share it
        (res,), _ = assert_same([one], drop_empty_calls=True, max_calls=max_calls, max_new_tokens=200)
        assert res.calls[0].dropped and res.text.startswith(one.doc[:12])
