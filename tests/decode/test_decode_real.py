"""Tool-aware decoding with the real embedded models and the real Calculator (no fine-tuning)."""

import json

import pytest

from toolformer_kit.commands import generate
from toolformer_kit.decode import DecodeConfig, ToolAwareDecoder
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
    monkeypatch.setattr("toolformer_kit.lm.load_lm", lambda *a, **k: qwen)  # reuse the loaded fixture
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
