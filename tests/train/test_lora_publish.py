"""A published model (issue 42, item 3) is a LoRA adapter over an embedded base: written in bf16
with its base named, and loaded by load_lm (so by generate and eval) as the merged model."""

import json

import numpy as np
import pytest

pytestmark = pytest.mark.real_model


def test_a_published_adapter_loads_as_the_merged_model_on_its_embedded_base(tmp_path):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from toolformer_kit.lm.base import load_lm
    from toolformer_kit.lm.embedded import resolve_model
    from toolformer_kit.train.lora import publish_adapter

    base = AutoModelForCausalLM.from_pretrained(resolve_model("smollm2-135m"), dtype=torch.float32)
    peft = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))
    torch.manual_seed(0)
    for name, p in peft.named_parameters():
        if "lora_B" in name:  # B starts at 0 (the identity): give the adapter something to change
            p.data.normal_(0, 0.05)
    for name, p in peft.named_parameters():
        if "lora_" in name:  # bf16-exact, as the published file stores them
            p.data = p.data.to(torch.bfloat16).to(torch.float32)
    peft.save_pretrained(tmp_path / "adapter")
    out = publish_adapter(tmp_path / "adapter", tmp_path / "models" / "m", "smollm2-135m")
    assert json.loads((out / "adapter_config.json").read_text())["base_model_name_or_path"] == "smollm2-135m"
    assert sorted(f.name for f in out.iterdir()) == ["adapter_config.json", "adapter_model.safetensors"]

    loaded = load_lm(str(out), dtype="fp32")
    plain = load_lm("smollm2-135m", dtype="fp32")
    text = "The capital of France is"
    with torch.no_grad():
        want = peft.merge_and_unload()(torch.tensor([plain.encode(text)])).logits[0, -1]
    got = loaded.next_token_logprobs([text], [list(range(5))])[0]
    ref = (want - torch.logsumexp(want, -1))[:5].numpy()
    assert np.allclose(got, ref, atol=1e-3)
    assert not np.allclose(plain.next_token_logprobs([text], [list(range(5))])[0], ref, atol=1e-3)  # it changed something


def test_publishing_needs_a_lora_run_s_adapter_folder(tmp_path):
    from toolformer_kit.train.lora import publish_adapter

    with pytest.raises(FileNotFoundError, match="holds no adapter_config.json"):
        publish_adapter(tmp_path, tmp_path / "out", "smollm2-135m")


@pytest.mark.real_model
def test_the_cli_merge_keeps_a_bf16_adapter_in_bf16_and_an_fp32_one_in_fp32(tmp_path):
    """`toolformer train --merge-adapter` folds an adapter in its own dtype: transformers' default
    would load Qwen and SmolLM2 in the bf16 their configs name and fold an fp32 run into bf16."""
    import torch
    from peft import LoraConfig, get_peft_model
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from toolformer_kit.lm.embedded import resolve_model
    from toolformer_kit.train.lora import adapter_dtype, merge_adapter_folder

    for dtype in (torch.float32, torch.bfloat16):
        base = AutoModelForCausalLM.from_pretrained(resolve_model("smollm2-135m"), dtype=dtype)
        peft = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj"], task_type="CAUSAL_LM"),
                              autocast_adapter_dtype=False)  # a bf16 adapter, as publish_adapter writes one
        folder = tmp_path / str(dtype)
        peft.save_pretrained(folder / "adapter")
        assert adapter_dtype(folder / "adapter") == dtype
        merge_adapter_folder(folder / "adapter", folder / "merged", "smollm2-135m")
        weights = load_file(str(folder / "merged" / "model.safetensors"))
        assert {w.dtype for w in weights.values()} == {dtype}
