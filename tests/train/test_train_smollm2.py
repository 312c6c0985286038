"""The real thing, kept small: SmolLM2-135M with LoRA, a few steps on a tiny C* of calculator calls.

The loss on the call tokens must fall (a base model has never seen ``[Calculator(...) -> ...]``),
and the written folder must load through ``load_lm`` and generate.
"""

from __future__ import annotations

import json
import random

import pytest

from toolformer_kit.calls import ToolCall, format_call

pytestmark = pytest.mark.real_model

TEMPLATES = [
    ("The bakery sold {a} loaves in the morning and {b} in the afternoon, so{call} {r} loaves in all.", "+"),
    ("Our club had {a} members and {b} left this year, which leaves{call} {r} members.", "-"),
    ("A crate holds {a} bottles, and {b} crates hold{call} {r} bottles.", "*"),
]


def tiny_cstar(n: int, seed: int) -> list[str]:
    """Sentences whose later number follows from earlier ones, with the call computed for real."""
    rng = random.Random(seed)
    texts = []
    for i in range(n):
        template, op = TEMPLATES[i % len(TEMPLATES)]
        a, b = rng.randint(20, 99), rng.randint(2, 9)
        result = {"+": a + b, "-": a - b, "*": a * b}[op]
        call = format_call(ToolCall("Calculator", f"{a} {op} {b}", str(result)))
        texts.append(template.format(a=a, b=b, call=call, r=result))
    return texts


def test_smollm2_learns_the_calls_and_its_folder_reloads(smollm2, tmp_path):
    from toolformer_kit.lm.base import SamplingConfig, load_lm
    from toolformer_kit.train.config import TrainConfig
    from toolformer_kit.train.metrics import call_token_loss
    from toolformer_kit.train.trainer import run_training

    texts = tiny_cstar(6, seed=3)
    cstar, dev = tmp_path / "cstar.jsonl", tmp_path / "dev.jsonl"
    cstar.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    dev.write_text(json.dumps({"text": "The old bridge crosses the river near the mill."}) + "\n")
    before = call_token_loss(smollm2.model, smollm2.tokenizer, texts)

    cfg = TrainConfig(model="smollm2-135m", data=str(cstar), dev_data=str(dev), out=str(tmp_path / "tf"),
                      lora=True, lora_r=8, max_length=48, batch_size=4, effective_batch=4, max_steps=3,
                      eval_steps=3, warmup_ratio=0.0, learning_rate=3e-3, device="cpu", logging_steps=1)
    summary = run_training(cfg)

    trained = load_lm(str(tmp_path / "tf"), device="cpu")
    after = call_token_loss(trained.model, trained.tokenizer, texts)
    assert before["call_tokens"] == after["call_tokens"] > 50
    assert after["call_nll"] < 0.6 * before["call_nll"], (before, after)

    assert [step for step, _ in summary["evaluations"]] == [0, 3]
    assert summary["tools"] == {"Calculator": 6} and summary["counts"]["training documents with calls"] == 6
    folder = tmp_path / "tf"
    assert (folder / "README.md").is_file() and (folder / "training_curve.png").is_file()
    assert (folder / "adapter" / "adapter_config.json").is_file()
    assert not (folder / "adapter_config.json").exists()  # the top folder is a plain, merged model
    (sample,) = trained.sample(["A crate holds 24 bottles, and 5 crates hold"], n=1, stop="\n",
                               config=SamplingConfig(max_new_tokens=12, temperature=0))
    assert sample[0].token_ids and sample[0].text.strip()
