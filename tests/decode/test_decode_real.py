"""Tool-aware decoding with the real embedded models and the real Calculator (no fine-tuning)."""

import dataclasses
import json

import pytest

from toolformer_kit.commands import generate
from toolformer_kit.decode.config import DecodeConfig
from toolformer_kit.decode.hf import ToolAwareDecoder
from toolformer_kit.tools import get_tool
from toolformer_kit.tools.calculator import calculate

pytestmark = pytest.mark.real_model

CALCULATOR = get_tool("Calculator")
PROMPTS = ["The school has 23 classes of 28 pupils, so it has", "I had 250 euros and spent 85, which left me"]


def assert_correct_calculator_call(text, calls):
    executed = [c for c in calls if c.get("ok")]
    assert executed, f"no executed call in {text!r}: {calls}"
    call = executed[0]
    assert call["tool"] == "Calculator"
    assert call["result"] is not None and call["result"] == calculate(call["input"])
    assert f"[Calculator({call['input']}) -> {call['result']}]" in text


def test_cli_generate_with_qwen_makes_a_correct_calculator_call(qwen, monkeypatch, capsys):
    monkeypatch.setattr("toolformer_kit.lm.base.load_lm", lambda *a, **k: qwen)  # reuse the loaded fixture
    code = generate.main(["--model", "qwen2.5-coder-0.5b", "--demos", "Calculator", "--tools", "Calculator",
                          "--json", "--max-new-tokens", "32", *PROMPTS])
    assert code == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [rec["prompt"] for rec in lines] == PROMPTS
    for rec in lines:
        assert_correct_calculator_call(rec["text"], rec["calls"])
        assert "\n" not in rec["text"]  # demonstration prompts stop at the end of the line
        assert sum(rec["forced"]) >= 2 and len(rec["forced"]) == len(rec["token_ids"])


def test_qwen_rewrite_prompt_call_result_is_the_calculators_value(qwen):
    decoder = ToolAwareDecoder(qwen, tools={"Calculator": CALCULATOR})
    prompt = generate.demo_prompt(CALCULATOR, "A box holds 12 eggs, so 7 boxes hold 84 eggs.", rewrite=True)
    (res,) = decoder.generate([prompt], DecodeConfig(stop=["\n"], max_new_tokens=40))
    assert_correct_calculator_call(res.text, [vars(c) for c in res.calls])
    assert decoder.counters["calls_ok"] == 1


def test_smollm2_cached_and_uncached_agree(smollm2):
    # two worked examples keep the prompt short: the uncached reference re-encodes it every step
    shots = "\n\n".join(out for _, out in CALCULATOR.demonstrations[:2])
    prompts = [f"{shots}\n\n{p}" for p in PROMPTS]
    cfg = DecodeConfig(max_new_tokens=16, k=10)
    tools = {"Calculator": CALCULATOR}
    cached = ToolAwareDecoder(smollm2, tools=tools).generate(prompts, cfg)
    uncached = ToolAwareDecoder(smollm2, tools=tools, use_cache=False).generate(prompts, cfg)
    assert [r.token_ids for r in cached] == [r.token_ids for r in uncached]
    assert any(r.calls for r in cached)


def test_smollm2_takes_out_a_call_that_found_nothing_cached_as_uncached(smollm2):
    """drop_empty_calls (issue 40, item 4) on a real model: a Calculator that finds nothing, so
    every call is taken out; the cache past a dropped call must never be attended."""
    shots = "\n\n".join(out for _, out in CALCULATOR.demonstrations[:2])
    prompts = [f"{shots}\n\n{p}" for p in PROMPTS]
    empty = dataclasses.replace(CALCULATOR, fn=lambda _: None, batch_fn=None, cacheable=False)
    cfg = DecodeConfig(max_new_tokens=16, k=10, drop_empty_calls=True)
    cached = ToolAwareDecoder(smollm2, tools={"Calculator": empty}).generate(prompts, cfg)
    uncached = ToolAwareDecoder(smollm2, tools={"Calculator": empty}, use_cache=False).generate(prompts, cfg)
    assert [r.token_ids for r in cached] == [r.token_ids for r in uncached]
    assert any(r.calls for r in cached) and all(c.dropped for r in cached for c in r.calls)
    assert all(" [Calculator(" not in r.text and not any(r.forced) for r in cached)


# ------------------------------------------------------------------ --demos runs every tool
DEMO_PROMPTS = {
    "Calculator": ["The farm has 14 rows of 12 apple trees, so it has"],
    "WikiSearch": ["The Eiffel Tower stands in the city of", "Mount Kilimanjaro is the highest mountain in"],
    "QA": ["The Mona Lisa was painted by", "The capital of Australia is"],
    "MT": ["On the door a sign reads « Fermé le dimanche », which means that the shop",
           "Der Zug fährt um acht Uhr ab, said the guard:"],
    "Calendar": ["The shop opened its doors today, a", "We will meet again next week, on"],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(DEMO_PROMPTS))
def test_demos_in_executed_form_make_qwen_run_every_tool(name, qwen, monkeypatch, capsys):
    """With call-only demonstrations Qwen closed its calls with "]" and nothing ran (WebQS: 35
    opened, 0 executed); executed ones must get at least one call run per tool."""
    from toolformer_kit.tools import lmtool

    monkeypatch.setattr("toolformer_kit.lm.base.load_lm", lambda *a, **k: qwen)
    monkeypatch.setitem(lmtool._LOADED, "qwen2.5-coder-0.5b", qwen)  # QA and MT read with the same model
    prompts = DEMO_PROMPTS[name]
    assert generate.main(["--model", "qwen2.5-coder-0.5b", "--demos", name, "--tools", name, "--json",
                          "--max-new-tokens", "300", "--max-answer-tokens", "24", *prompts]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    calls = [c for rec in records for c in rec["calls"]]
    ran = [c for c in calls if c["ok"]]
    with capsys.disabled():
        print(f"\n{name}: {len(calls)} calls opened, {len(ran)} executed "
              f"({', '.join(c['reason'] or 'ok' for c in calls)}); {[r['text'][:120] for r in records]}")
    assert ran, f"no {name} call ran: {records}"
    for rec in records:
        for c in rec["calls"]:
            if c["ok"]:
                assert f"[{c['tool']}({c['input']}) -> {c['result']}]" in rec["text"]


def test_qwen_with_demos_chains_two_calls_with_max_calls_2(qwen, monkeypatch, capsys):
    """The in-context path of issue 31: an untuned Qwen with the Calculator's executed examples
    opens a second call after the first, stops at the budget, and each call either ran with its
    result in the text or repeated an earlier one and was not run (the loop guard: in fp32 Qwen
    writes ``4 * 4 - 5`` twice)."""
    monkeypatch.setattr("toolformer_kit.lm.base.load_lm", lambda *a, **k: qwen)
    prompt = "A class has 25 pupils and 5 are away. The others sit in 4 equal rows, so there are"
    found = {}
    for n in (1, 2):
        assert generate.main(["--demos", "Calculator", "--tools", "Calculator", "--json", "--max-new-tokens", "60",
                              "--max-calls", str(n), prompt]) == 0
        (rec,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        found[n] = rec
        assert 1 <= len(rec["calls"]) <= n
        ran = set()
        for call in rec["calls"]:
            if call["reason"] == "repeated":
                assert call["result"] is None and (call["tool"], call["input"]) in ran
                continue
            assert call["ok"] and call["result"] == calculate(call["input"])
            assert f"[Calculator({call['input']}) -> {call['result']}]" in rec["text"]
            ran.add((call["tool"], call["input"]))
    assert len(found[2]["calls"]) == 2 and found[2]["calls"][0] == found[1]["calls"][0]
