"""Tool-aware decoding against a scripted fake LM: call start on top-k, result insertion, limits,
malformed calls, caching and batching."""

import pytest
from decode_fakes import CALL_OPEN, EOS, FakeLM, Story

from toolformer_kit.calls import strip_calls
from toolformer_kit.decode.config import DecodeConfig
from toolformer_kit.decode.hf import ToolAwareDecoder
from toolformer_kit.tools import Tool, get_tool
from toolformer_kit.tools.engine import ToolEngine

PROMPT = "Q: what does it cost?\nA:"
DOC = " It costs 5 dollars."  # the call goes before " 5", character 9 of the text without calls
CALL_AT = 9


def boom(_):
    raise RuntimeError("tool crashed")


TOOLS = {"Calculator": get_tool("Calculator"), "Boom": Tool("Boom", boom, "Crash.", [("a", "a [Boom(1)]")])}


class CountingEngine(ToolEngine):
    """The real engine, remembering how many calls each run got."""

    def __init__(self, tools):
        super().__init__(tools)
        self.batches = []

    def run(self, calls):
        self.batches.append(len(calls))
        return super().run(calls)


def decode(stories, prompts=None, lm=None, use_cache=True, batch_size=16, **cfg):
    lm = lm or FakeLM(stories)
    decoder = ToolAwareDecoder(lm, engine=CountingEngine(TOOLS), use_cache=use_cache, batch_size=batch_size)
    results = decoder.generate(prompts or [s.prompt for s in stories], DecodeConfig(**cfg))
    return results, decoder


@pytest.mark.parametrize("k", [1, 3, 10])
@pytest.mark.parametrize("inside", [True, False])
def test_call_starts_exactly_when_call_open_enters_top_k(k, inside):
    rank = k - 1 if inside else k  # tokens scoring above " [": k-1 makes it the k-th, k the (k+1)-th
    (res,), _ = decode([Story(PROMPT, DOC, ranks={CALL_AT: rank})], k=k)
    if not inside:
        assert res.calls == [] and res.text == DOC and CALL_OPEN not in res.token_ids
        return
    (call,) = res.calls
    assert call.token_position == CALL_AT  # one byte token per character before the call
    assert res.token_ids[CALL_AT] == CALL_OPEN and res.forced[CALL_AT]


def test_result_is_inserted_forced_and_decoding_continues():
    (res,), decoder = decode([Story(PROMPT, DOC, ranks={CALL_AT: 4})])
    assert res.text == " It costs [Calculator(2 + 3) -> 5] 5 dollars."
    (call,) = res.calls
    assert (call.tool, call.input, call.result, call.ok, call.reason) == ("Calculator", "2 + 3", "5", True, "")
    forced_text = "".join(FakeLM([]).decode([t]) for t, f in zip(res.token_ids, res.forced) if f)
    assert forced_text == " [" + " 5]"  # the call-open and the result; the model wrote the rest
    assert decoder.counters["calls_ok"] == 1 and decoder.counters["forced_tokens"] == 4


DOC2 = " Add 2 and 3: 5, then times 4: 20."
TWO_CALLS = Story(PROMPT, DOC2, ranks={DOC2.index(" 5"): 0, DOC2.index(" 20"): 0},
                  call=["Calculator(2 + 3) ->", "Calculator(5 * 4) ->"])


@pytest.mark.parametrize("max_calls", [0, 1, 2, 3])
def test_max_calls_masks_call_open_after_the_limit(max_calls):
    # " [" is the model's favourite token at both points: only the limit keeps it out
    (res,), _ = decode([TWO_CALLS], max_calls=max_calls, max_new_tokens=200)
    assert [c.result for c in res.calls] == ["5", "20"][:max_calls]
    assert res.token_ids.count(CALL_OPEN) == len(res.calls)
    assert all(c.ok for c in res.calls) and res.token_ids[-1] == EOS


def test_disabled_gives_call_open_probability_zero():
    # a flat distribution with " [" on top everywhere: sampling would pick it often unless masked
    story = Story(PROMPT, DOC, ranks={i: 0 for i in range(len(DOC) + 1)}, sharp=False)
    for seed in range(5):
        (res,), _ = decode([story], disabled=True, temperature=1.0, seed=seed, max_calls=5)
        assert CALL_OPEN not in res.token_ids and res.calls == []
    (res,), _ = decode([story], temperature=1.0, max_calls=5)
    assert res.calls, "the same story opens calls when not disabled"


WANTS_BOOM = Story(PROMPT, DOC, ranks={CALL_AT: 0}, call="Boom(2 + 3) ->")  # Boom is the disabled tool here


def test_a_disabled_tool_cannot_be_named():
    # the model's favourite call names Boom, which the task disables: its name is masked, so the
    # call names the Calculator instead of ending as an empty "unknown_tool" result
    (res,), decoder = decode([WANTS_BOOM], allowed_tools=["Calculator"])
    (call,) = res.calls
    assert call.tool == "Calculator" and call.reason != "unknown_tool" and "Boom" not in res.text
    assert res.text.startswith(" It costs [Calculator(")
    (res,), _ = decode([WANTS_BOOM], allowed_tools=["Boom"])  # allowed: the model's own choice stands
    assert res.calls[0].tool == "Boom" and res.text.startswith(" It costs [Boom(2 + 3) -> ]")
    (res,), _ = decode([Story(PROMPT, DOC, ranks={CALL_AT: 0})], allowed_tools=[])
    assert res.calls == [] and res.text == DOC  # no usable tool: " [" is never opened


def test_a_name_the_tokenizer_splits_anyhow_is_still_allowed():
    # the model writes "Calculator(" byte by byte, the name mask allows each step
    (res,), _ = decode([Story(PROMPT, DOC, ranks={CALL_AT: 0})], allowed_tools=["Calculator", "Calendar"])
    assert res.text == " It costs [Calculator(2 + 3) -> 5] 5 dollars."


class LongResult(CountingEngine):
    """Every call's result is 120 tokens long (a WikiSearch summary is ~50-100)."""

    def run(self, calls):
        from toolformer_kit.tools.engine import ExecResult

        self.batches.append(len(calls))
        return [ExecResult("x" * 120) for _ in calls]


@pytest.mark.parametrize("budget", [12, 16])  # the call comes after 9 tokens, " It costs"
def test_a_long_result_does_not_shrink_the_answer_budget(budget):
    from toolformer_kit.eval.harness import Setting, decode_config
    from toolformer_kit.eval.tasks import Task

    task = Task("t", "toy", lambda d: [], max_new_tokens=budget)
    cfg = decode_config(task, Setting.parse("k10"), stop=())  # the harness's settings for this task
    decoder = ToolAwareDecoder(FakeLM([Story(PROMPT, DOC, ranks={CALL_AT: 0})]), engine=LongResult(TOOLS))
    (res,) = decoder.generate([PROMPT], cfg)
    assert res.calls[0].result == "x" * 120
    assert len(res.token_ids) > budget + 120
    assert strip_calls(res.text) == DOC[:budget]  # one byte token a character: the answer got all its tokens


MALFORMED = [  # (what the model writes after " [", reason, what the text holds after the call)
    # "Nope(1) ->" (unknown_tool) and "2 + 3 ->" (unparsable) cannot happen: a call starts with an
    # allowed tool's "Name(" (test_a_disabled_tool_cannot_be_named)
    ("Calculator(2 +* 3) ->", "no_result", " [Calculator(2 +* 3) -> ] 5 dollars."),
    ("Boom(1) ->", "tool_error", " [Boom(1) -> ] 5 dollars."),
    ("Calculator(" + "1 + " * 20, "too_long", " [Calculator(1 + 1 + 1 + 1] 5 dollars."),  # 24 tokens, "]"
    ("Calculator(2 + 3)]", "closed_without_arrow", " [Calculator(2 + 3)] 5 dollars."),
    ("Calculator(2\n", "line_break", " [Calculator(2\n 5 dollars."),
]


@pytest.mark.parametrize("written,reason,tail", MALFORMED, ids=[m[1] for m in MALFORMED])
def test_malformed_calls_never_stop_decoding(written, reason, tail):
    (res,), decoder = decode([Story(PROMPT, DOC, ranks={CALL_AT: 0}, call=written)], max_call_tokens=24)
    assert res.text == " It costs" + tail  # decoding went on to the end of the text
    (call,) = res.calls
    assert (call.ok, call.reason, call.result) == (False, reason, None)
    assert decoder.counters[f"malformed.{reason}"] == 1 and "calls_ok" not in decoder.counters


def test_call_cut_by_token_budget_is_unfinished():
    (res,), _ = decode([Story(PROMPT, DOC, ranks={CALL_AT: 0})], max_new_tokens=15)
    assert len(res.token_ids) == 15 and res.calls[0].reason == "unfinished"


def test_multi_token_call_open_is_judged_on_its_last_token():
    # " [" as " " + "[": the model writes the space itself, then "[" in the top k opens the call
    lm = FakeLM([Story(PROMPT, DOC, ranks={CALL_AT: 3})], merge_call_open=False)
    assert len(lm.call_open_ids) == 2
    (res,), _ = decode(None, [PROMPT], lm=lm, max_new_tokens=100)
    assert res.text == " It costs [Calculator(2 + 3) -> 5] 5 dollars."
    assert res.calls[0].token_position == CALL_AT and res.forced[CALL_AT: CALL_AT + 2] == [False, True]
    # after the call, "[" is masked after a space, but the space itself is not
    (res,), _ = decode(None, [PROMPT], lm=FakeLM([TWO_CALLS], merge_call_open=False), max_new_tokens=200)
    assert res.text == " Add 2 and 3: [Calculator(2 + 3) -> 5] 5, then times 4: 20."


def test_stop_strings_cut_text_but_not_inside_a_call():
    # "." is a stop string, yet the result "0.5" holds one: only text outside calls is searched
    story = Story(PROMPT, " Half is 0.5. More text\n", ranks={8: 0}, call="Calculator(1 / 2) ->")
    (res,), _ = decode([story], stop=["."])
    assert res.text == " Half is [Calculator(1 / 2) -> 0.5] 0"
    (res,), _ = decode([story], stop=["\n", "More"])
    assert res.text == " Half is [Calculator(1 / 2) -> 0.5] 0.5. "


STORIES = [
    Story("Short:", DOC, ranks={CALL_AT: 2}),
    Story("A much longer prompt, so rows are padded:", " Add 2 and 3: 5, then times 4: 20.", ranks={13: 0, 29: 0}),
    Story("P3:", " No call here at all.", ranks={}),
    Story("Sampled one:", " It costs 5 dollars, I think.", ranks={CALL_AT: 1, 20: 0}, sharp=False),
    Story("Broken call:", DOC, ranks={CALL_AT: 0}, call="Nope(1) ->"),
    Story("Long call:", DOC, ranks={CALL_AT: 0}, call="Calculator(" + "1 + " * 20),
]
SETTINGS = [dict(), dict(temperature=1.0, seed=3, max_calls=2), dict(k=1, stop=["."], max_new_tokens=30)]


def as_tuples(results):
    return [(r.text, r.token_ids, r.forced, r.calls) for r in results]


@pytest.mark.parametrize("cfg", SETTINGS)
def test_cached_and_uncached_decoding_give_identical_tokens(cfg):
    cached, dec = decode(STORIES, max_call_tokens=24, **cfg)
    uncached, _ = decode(STORIES, use_cache=False, max_call_tokens=24, **cfg)
    assert as_tuples(cached) == as_tuples(uncached)
    assert any(r.calls for r in cached)
    # only new tokens were encoded: each prompt once, then one token per step (the last is never fed)
    expected = sum(len(dec.lm.encode(r.prompt)) + len(r.token_ids) - 1 for r in cached)
    assert dec.lm.model.tokens_encoded == expected


@pytest.mark.parametrize("cfg", SETTINGS)
def test_batched_equals_one_at_a_time(cfg):
    batched, _ = decode(STORIES, max_call_tokens=24, **cfg)
    for batch_size in (1, 4):
        other, _ = decode(STORIES, batch_size=batch_size, max_call_tokens=24, **cfg)
        assert as_tuples(other) == as_tuples(batched)
    alone = [decode([s], max_call_tokens=24, **cfg)[0][0] for s in STORIES]
    assert as_tuples(alone) == as_tuples(batched)


def test_rows_reaching_the_arrow_together_share_one_engine_run():
    stories = [Story(f"Prompt {i}:", DOC, ranks={CALL_AT: 0}) for i in range(3)]
    results, decoder = decode(stories)
    assert decoder.engine.batches == [3] and all(r.calls[0].ok for r in results)


def test_tools_default_to_the_engine_s_and_the_registry():
    lm = FakeLM([])
    assert ToolAwareDecoder(lm, tools=TOOLS).tool_names == {"Calculator", "Boom"}
    assert {"Calculator", "WikiSearch"} <= ToolAwareDecoder(lm).tool_names


def test_bad_input_gets_one_clear_error():
    decoder = ToolAwareDecoder(FakeLM([]), tools=TOOLS)
    with pytest.raises(TypeError, match="list of prompts"):
        decoder.generate("just a string")
    with pytest.raises(ValueError, match="temperature"):
        DecodeConfig(temperature=-1)


@pytest.mark.parametrize("written", ["Calculator(2 + 3) = 5]", "Calculator((1 + 1) + 3)]"])
def test_force_arrow_runs_the_call_the_model_closed_with_something_else(written):
    story = Story(PROMPT, DOC, ranks={CALL_AT: 0}, call=written)
    (plain,), _ = decode([story])
    assert plain.calls[0].reason == "closed_without_arrow" and plain.calls[0].result is None
    (res,), decoder = decode([story], force_arrow=True)
    head = written[: written.rindex(")") + 1]  # the input as the model closed it
    assert res.text == f" It costs [{head} -> 5] 5 dollars."
    (call,) = res.calls
    assert (call.ok, call.result) == (True, "5") and decoder.counters["calls_ok"] == 1
    arrow = res.token_ids.index(257)  # the forced " ->" follows the model's own ")"
    assert res.forced[arrow - 1: arrow + 1] == [True, True] and not res.forced[arrow - 2]


def test_force_arrow_leaves_a_call_that_writes_its_own_arrow_alone():
    story = Story(PROMPT, DOC, ranks={CALL_AT: 0})  # "Calculator(2 + 3) ->"
    (a,), _ = decode([story])
    (b,), _ = decode([story], force_arrow=True)
    assert a.text == b.text == " It costs [Calculator(2 + 3) -> 5] 5 dollars."
    assert a.calls == b.calls and sum(b.forced) > sum(a.forced)  # here " ->" is forced, not written


def test_force_arrow_bans_tokens_that_close_the_input_mid_token():
    from toolformer_kit.decode.state import closing_tokens

    pieces = [")", ")]", ") =", "2", "))", "(", "x)", ")) ="]
    assert closing_tokens(1, pieces) == [1, 2, 4, 7]  # ")" and "x)" end where the input closes
    assert closing_tokens(2, pieces) == [7]  # ") =" stays inside; "))" ends as it closes


def test_slots_refill_grow_and_split_prefills_without_changing_a_token():
    """Continuous batching: 2 rows for 8 prompts (slots refilled as rows end), prompts prefilled
    in runs of a few tokens (a tiny token budget), rows outgrowing their slot's first columns."""
    long_doc = " " + "one two three four five six seven eight nine ten " * 3 + "done."
    stories = STORIES + [Story("Long answer:", long_doc, ranks={60: 0}),
                         Story("Another fairly long prompt here:", DOC, ranks={CALL_AT: 3})]
    reference, _ = decode(stories, use_cache=False, max_call_tokens=24, max_new_tokens=200)
    lm = FakeLM(stories)
    lm.batch_tokens = 40  # a run of prompts holds at most 40 tokens, pads included
    small, dec = decode(stories, lm=lm, batch_size=2, max_call_tokens=24, max_new_tokens=200)
    assert as_tuples(small) == as_tuples(reference)
    assert len(small[-2].token_ids) > 64 + len(long_doc) // 2  # past the slot's first columns
    assert dec.lm.model.tokens_encoded == sum(len(lm.encode(r.prompt)) + len(r.token_ids) - 1 for r in small)


# Several calls per input (issue 31): a chain whose second and third inputs use earlier results.
DOC3 = " 25 less 5 is 20, in 4 parts 5 each, thrice 15."
CHAIN_AT = [DOC3.index(" 20"), DOC3.index(" 5 each"), DOC3.index(" 15")]
CHAIN = Story(PROMPT, DOC3, ranks={i: 0 for i in CHAIN_AT},
              call=["Calculator(25 - 5) ->", "Calculator(20 / 4) ->", "Calculator(5 * 3) ->"])
CHAIN_TEXT = " 25 less 5 is [Calculator(25 - 5) -> 20] 20, in 4 parts [Calculator(20 / 4) -> 5] 5 each, " \
             "thrice [Calculator(5 * 3) -> 15] 15."
LOOPING = Story(PROMPT, DOC3, ranks={i: 0 for i in CHAIN_AT},
                call=["Calculator(25 - 5) ->", "Calculator(25  -  5) ->", "Calculator(5 * 3) ->"])


@pytest.mark.parametrize("max_calls", [2, 3, 4])
def test_a_row_chains_calls_with_each_result_in_the_text_up_to_its_budget(max_calls):
    (res,), decoder = decode([CHAIN], max_calls=max_calls, max_new_tokens=200)
    assert [(c.input, c.result, c.ok) for c in res.calls] == \
        [("25 - 5", "20", True), ("20 / 4", "5", True), ("5 * 3", "15", True)][:max_calls]
    if max_calls >= 3:
        assert res.text == CHAIN_TEXT
    else:  # the budget is spent: " [" is masked at the third point, the text goes on plainly
        assert res.text == CHAIN_TEXT.replace(" [Calculator(5 * 3) -> 15]", "")
    assert decoder.engine.batches == [1] * min(max_calls, 3)  # each call ran once, as the row reached it


def test_an_identical_call_is_not_run_twice_and_ends_the_row_s_calls():
    (res,), decoder = decode([LOOPING], max_calls=3, max_new_tokens=200)
    first, again = res.calls  # the third point opens no call: the row was looping
    assert (first.result, first.ok) == ("20", True)
    assert (again.input, again.result, again.ok, again.reason) == ("25 - 5", None, False, "repeated")
    assert res.text == " 25 less 5 is [Calculator(25 - 5) -> 20] 20, in 4 parts [Calculator(25  -  5) -> ] " \
                       "5 each, thrice 15."
    assert decoder.engine.batches == [1] and decoder.counters["malformed.repeated"] == 1


# Typed inputs (issue 31, item 4): an option beside the unconstrained decoding, never instead of it.
SLOPPY = Story(PROMPT, DOC, ranks={CALL_AT: 0}, call="Calculator(2 + 3x) ->")


def test_constrained_inputs_keep_a_call_within_its_tool_s_grammar():
    (free,), _ = decode([SLOPPY])
    assert (free.calls[0].input, free.calls[0].reason) == ("2 + 3x", "no_result")
    (typed,), _ = decode([SLOPPY], constrain_inputs=True)  # "x" is masked: the model's next best fits
    assert typed.text == " It costs [Calculator(2 + 3 ) -> 5] 5 dollars."
    assert (typed.calls[0].input, typed.calls[0].result, typed.calls[0].ok) == ("2 + 3", "5", True)
    (same,), _ = decode([Story(PROMPT, DOC, ranks={CALL_AT: 0})], constrain_inputs=True)
    assert same.text == " It costs [Calculator(2 + 3) -> 5] 5 dollars."  # a call that fits is untouched


def test_a_tool_without_a_grammar_is_not_constrained_and_the_calendar_s_input_is_empty():
    from toolformer_kit.tools.calendar import calendar_tool_for
    import datetime as dt

    tools = {"Calendar": calendar_tool_for(dt.date(2026, 12, 3)), "Boom": TOOLS["Boom"]}
    story = Story(PROMPT, DOC, ranks={CALL_AT: 0}, call="Calendar(today) ->")
    decoder = ToolAwareDecoder(FakeLM([story]), engine=CountingEngine(tools))
    (res,) = decoder.generate([PROMPT], DecodeConfig(constrain_inputs=True, force_arrow=True))
    assert res.text.startswith(" It costs [Calendar() -> Today is ") and res.calls[0].ok
    (boom,), _ = decode([Story(PROMPT, DOC, ranks={CALL_AT: 0}, call="Boom(any text) ->")], constrain_inputs=True)
    assert boom.calls[0].input == "any text"  # no grammar: free text, as without the option


# An empty call costs nothing (issue 40, item 4): an option beside the paper's "Boom(2 + 3) ->]".
@pytest.mark.parametrize("use_cache", [True, False])
@pytest.mark.parametrize("merge_call_open", [True, False])
def test_a_call_that_found_nothing_is_taken_out_before_the_model_goes_on(use_cache, merge_call_open):
    lm = FakeLM([WANTS_BOOM], merge_call_open=merge_call_open)
    (paper,), _ = decode([WANTS_BOOM], lm=lm, use_cache=use_cache)
    assert paper.text == " It costs [Boom(2 + 3) -> ] 5 dollars." and not paper.calls[0].dropped
    lm = FakeLM([WANTS_BOOM], merge_call_open=merge_call_open)
    (res,), decoder = decode([WANTS_BOOM], lm=lm, use_cache=use_cache, drop_empty_calls=True)
    (call,) = res.calls
    assert res.text == DOC  # as if never opened; the fake's position asserts catch a stale cache
    assert (call.tool, call.result, call.ok, call.reason, call.dropped) == ("Boom", None, False, "tool_error", True)
    assert CALL_OPEN not in res.token_ids and not any(res.forced)
    assert decoder.engine.batches == [1]


@pytest.mark.parametrize("merge_call_open", [True, False])
def test_a_dropped_call_is_spent_and_no_call_opens_again_where_it_was(merge_call_open):
    story = Story(PROMPT, DOC2, ranks={DOC2.index(" 5"): 0, DOC2.index(" 20"): 0}, call="Boom(2 + 3) ->")
    lm = FakeLM([story], merge_call_open=merge_call_open)
    (res,), _ = decode([story], lm=lm, drop_empty_calls=True, max_calls=1, max_new_tokens=200)
    assert res.text == DOC2 and len(res.calls) == 1  # the one call was spent on nothing
    lm = FakeLM([story], merge_call_open=merge_call_open)  # " [" as one token, or " " then "["
    (res,), _ = decode([story], lm=lm, drop_empty_calls=True, max_calls=2, max_new_tokens=200)
    first, second = res.calls  # " [" ranks first at the dropped call's point too: masked there
    assert first.dropped and second.token_position == DOC2.index(" 20")
    assert second.reason == "repeated" and res.text.startswith(DOC2[: DOC2.index(" 20")] + " [Boom(2 + 3) -> ]")
