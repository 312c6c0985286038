"""``run_training`` end to end on a tiny randomly initialised model with SmolLM2's real tokenizer:
resuming, out-of-memory, bad data, the +CC warning. Fast (seconds), so the branches are cheap
to cover; the real-model run is in test_train_smollm2.py."""

from __future__ import annotations

import json
import logging

import pytest

from toolformer_kit.config import ConfigError
from toolformer_kit.train import trainer as trainer_mod
from toolformer_kit.train.config import TrainConfig
from toolformer_kit.train.data import DataError

pytestmark = pytest.mark.real_model  # needs the pulled SmolLM2 tokenizer

CSTAR = [f"Box {i} holds {10 + i} pens and {i + 2} pencils, {12 + 2 * i} [Calculator({10 + i} + {i + 2}) -> "
         f"{12 + 2 * i}] {12 + 2 * i} items." for i in range(12)]
DEV = ["The river flows north through the valley.", "A small town stands on the hill."]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A 2-layer Llama with SmolLM2's tokenizer, saved as an ordinary HF folder."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from toolformer_kit.lm.embedded import resolve_model

    tok = AutoTokenizer.from_pretrained(resolve_model("smollm2-135m"))
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
                         tie_word_embeddings=True, eos_token_id=tok.eos_token_id)
    folder = tmp_path_factory.mktemp("tiny-llama")
    LlamaForCausalLM(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


@pytest.fixture
def files(tmp_path):
    cstar = tmp_path / "cstar.jsonl"
    cstar.write_text("".join(json.dumps({"text": t}) + "\n" for t in CSTAR))
    dev = tmp_path / "dev.jsonl"
    dev.write_text("".join(json.dumps({"text": t}) + "\n" for t in DEV))
    return cstar, dev


def crash_at_step(monkeypatch, step: int):
    """Make the next training run die (as a kill would) once it has finished ``step`` steps;
    returns the callback it replaced, to put back or wrap."""
    original = trainer_mod.EvaluateAtEnd.on_step_end

    def crash(self, args, state, control, **kw):
        if state.global_step == step:
            raise KeyboardInterrupt
        return original(self, args, state, control, **kw)

    monkeypatch.setattr(trainer_mod.EvaluateAtEnd, "on_step_end", crash)
    return original


def count_steps(monkeypatch, original) -> list[int]:
    """Put ``original`` (what :func:`crash_at_step` replaced) back, recording each step the next
    run trains: the list it returns fills as that run goes."""
    steps_run = []

    def count(self, args, state, control, **kw):
        steps_run.append(state.global_step)
        return original(self, args, state, control, **kw)

    monkeypatch.setattr(trainer_mod.EvaluateAtEnd, "on_step_end", count)
    return steps_run


def _cfg(model, cstar, dev, out, **kw):
    base = dict(model=model, data=str(cstar), dev_data=str(dev), out=str(out), max_length=32, batch_size=4,
                effective_batch=4, max_steps=4, eval_steps=2, learning_rate=1e-3, device="cpu", logging_steps=1)
    return TrainConfig(**{**base, **kw})


def test_interrupted_run_resumes_from_its_last_checkpoint(tiny_model, files, tmp_path, monkeypatch, caplog):
    cstar, dev = files
    cfg = _cfg(tiny_model, cstar, dev, tmp_path / "run")
    original = crash_at_step(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        trainer_mod.run_training(cfg)
    assert (tmp_path / "run" / "checkpoints" / "checkpoint-2").is_dir()
    assert not (tmp_path / "run" / trainer_mod.SUMMARY).exists()

    steps_run = count_steps(monkeypatch, original)
    with caplog.at_level(logging.INFO, logger="toolformer_kit.train.trainer"):
        summary = trainer_mod.run_training(cfg)
    assert "resuming from" in caplog.text and "checkpoint-2" in caplog.text
    assert steps_run == [3, 4]  # steps 1-2 were not trained again
    assert [step for step, _ in summary["evaluations"]] == [0, 2, 4]
    assert not (tmp_path / "run" / "checkpoints").exists()  # removed once the run finished
    assert (tmp_path / "run" / "model.safetensors").is_file()
    with pytest.raises(ConfigError, match="already holds a finished run"):
        trainer_mod.run_training(cfg)


def test_out_of_memory_names_the_settings_to_lower(tiny_model, files, tmp_path, monkeypatch):
    from transformers import Trainer

    def oom(self, *a, **kw):
        raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 GiB")

    monkeypatch.setattr(Trainer, "train", oom)
    cfg = _cfg(tiny_model, *files, tmp_path / "oom", batch_size=4, max_length=32)
    with pytest.raises(trainer_mod.ResourceError, match=r"--batch-size \(now 4.*--max-length \(now 32\)"):
        trainer_mod.run_training(cfg)


def test_bad_data_file_fails_before_any_model_loads(tiny_model, files, tmp_path, monkeypatch):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"content": "no text field"}\n')
    monkeypatch.setattr(trainer_mod, "load_model", lambda cfg, path: pytest.fail("model loaded before data checked"))
    with pytest.raises(DataError, match="line 2"):
        trainer_mod.run_training(_cfg(tiny_model, bad, files[1], tmp_path / "bad"))


def test_data_without_calls_warns_that_this_is_the_cc_baseline(tiny_model, files, tmp_path, caplog):
    from transformers import AutoTokenizer

    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"text": "Nothing to compute here at all."}) + "\n")
    tok = AutoTokenizer.from_pretrained(tiny_model)
    with caplog.at_level(logging.WARNING):
        trainer_mod.prepare_data(_cfg(tiny_model, plain, files[1], tmp_path / "x"), tok)
    assert "no tool calls" in caplog.text and "'+CC' baseline" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        prepared = trainer_mod.prepare_data(_cfg(tiny_model, files[0], files[1], tmp_path / "y"), tok)
    assert "no tool calls" not in caplog.text
    assert prepared["tools"] == {"Calculator": 12} and prepared["counts"]["dev documents"] == 2


def test_cc_run_trains_on_the_same_texts_without_calls(tiny_model, files, tmp_path):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    with_calls = trainer_mod.prepare_data(_cfg(tiny_model, *files, tmp_path / "a", max_length=64), tok)
    cc = trainer_mod.prepare_data(_cfg(tiny_model, *files, tmp_path / "b", max_length=64, plain_baseline=True), tok)
    decoded = [tok.decode(s) for s in cc["train"].sequences]
    assert len(cc["train"]) == len(with_calls["train"]) and not any("Calculator" in d for d in decoded)
    assert cc["counts"]["training tokens"] < with_calls["counts"]["training tokens"]
    assert cc["dev"].sequences == with_calls["dev"].sequences  # identical dev texts: comparable perplexity
    assert cc["tools"] == {} and cc["removed_calls"] == {"Calculator": 12}


def test_cli_merges_a_saved_adapter_into_a_plain_folder(tiny_model, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    from toolformer_kit.commands.train import main
    from toolformer_kit.train import lora

    peft_model = lora.wrap(AutoModelForCausalLM.from_pretrained(tiny_model), r=4, alpha=8, dropout=0.0)
    with torch.no_grad():  # LoRA starts as a no-op (B = 0); make it change the outputs
        for name, param in peft_model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.5)
    peft_model.save_pretrained(tmp_path / "adapter")
    assert main(["--merge-adapter", str(tmp_path / "adapter"), "--out", str(tmp_path / "merged")]) == 0
    merged = AutoModelForCausalLM.from_pretrained(tmp_path / "merged")
    ids = torch.tensor([[5, 17, 300, 42]])
    with torch.no_grad():
        expected, got = peft_model.eval()(input_ids=ids).logits, merged(input_ids=ids).logits
        base = AutoModelForCausalLM.from_pretrained(tiny_model)(input_ids=ids).logits
    assert not (tmp_path / "merged" / "adapter_config.json").exists()
    assert torch.allclose(got, expected, atol=1e-4) and not torch.allclose(got, base, atol=1e-3)
    assert main(["--merge-adapter", str(tmp_path / "nothing"), "--out", str(tmp_path / "m2")]) == 2


def test_dev_texts_carved_from_the_data_are_flagged_as_not_the_papers(tiny_model, files, tmp_path, caplog):
    """Without --dev-data the dev set is a slice of C*, not held-out documents: say so where the
    run's numbers are read (log, counts in the summary, card)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    with caplog.at_level(logging.WARNING):
        carved = trainer_mod.prepare_data(_cfg(tiny_model, *files, tmp_path / "a", dev_data=None), tok)
    assert carved["counts"]["dev documents"] == 1
    assert carved["counts"]["dev source"].startswith("carved out of --data")
    assert "not held-out documents as in the paper" in caplog.text and "--dev-data" in caplog.text
    held = trainer_mod.prepare_data(_cfg(tiny_model, *files, tmp_path / "b"), tok)
    assert held["counts"]["dev source"] == "held-out file dev.jsonl"


def test_out_that_holds_a_model_it_did_not_write_is_refused_before_anything_loads(tiny_model, files, tmp_path,
                                                                                  monkeypatch):
    import hashlib
    from pathlib import Path

    weights = Path(tiny_model) / "model.safetensors"
    before = hashlib.sha256(weights.read_bytes()).hexdigest()
    monkeypatch.setattr(trainer_mod, "load_model", lambda cfg, path: pytest.fail("model loaded before --out checked"))
    with pytest.raises(ConfigError, match="no training run wrote there"):  # the base model's own folder
        trainer_mod.run_training(_cfg(tiny_model, *files, tiny_model))
    inside = Path(tiny_model) / "sub"
    with pytest.raises(ConfigError, match="is the folder of the base model"):
        trainer_mod.run_training(_cfg(tiny_model, *files, inside))
    assert not inside.exists()
    other = tmp_path / "other-model"
    other.mkdir()
    (other / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match="config.json that no training run wrote"):
        trainer_mod.run_training(_cfg(tiny_model, *files, other))
    assert hashlib.sha256(weights.read_bytes()).hexdigest() == before


def test_a_checkpoint_is_resumed_only_by_the_run_that_made_it(tiny_model, files, tmp_path, monkeypatch):
    cstar, dev = files
    cfg = _cfg(tiny_model, cstar, dev, tmp_path / "run")
    crash_at_step(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        trainer_mod.run_training(cfg)
    monkeypatch.setattr(trainer_mod, "load_model", lambda cfg, path: pytest.fail("resumed under other settings"))
    with pytest.raises(ConfigError, match="other learning_rate"):
        trainer_mod.run_training(_cfg(tiny_model, cstar, dev, tmp_path / "run", learning_rate=5e-4))
    with pytest.raises(ConfigError, match="other max_steps"):
        trainer_mod.run_training(_cfg(tiny_model, cstar, dev, tmp_path / "run", max_steps=8))
    other = tmp_path / "other.jsonl"
    other.write_text(cstar.read_text().replace("pens", "pins"))
    with pytest.raises(ConfigError, match="other data"):
        trainer_mod.run_training(_cfg(tiny_model, other, dev, tmp_path / "run"))
    copied = tmp_path / "copy.jsonl"  # the same data under another name is the same run
    copied.write_text(cstar.read_text())
    assert trainer_mod.run_identity(_cfg(tiny_model, copied, dev, tmp_path / "run")) == trainer_mod.run_identity(cfg)


def test_a_one_step_run_changes_the_weights(tiny_model, files, tmp_path):
    """The warm-up is rounded down: one step used to run at learning rate 0 and train nothing."""
    from pathlib import Path

    from safetensors.torch import load_file

    cstar, dev = files
    trainer_mod.run_training(_cfg(tiny_model, cstar, dev, tmp_path / "one", max_steps=1, eval_steps=1))
    before = load_file(str(Path(tiny_model) / "model.safetensors"))
    after = load_file(str(tmp_path / "one" / "model.safetensors"))
    assert any(not (before[k] == after[k]).all() for k in before if k in after)


@pytest.mark.parametrize("lora", [False, True])
def test_training_is_deterministic_and_a_resumed_run_equals_an_uninterrupted_one(tiny_model, files, tmp_path,
                                                                                  monkeypatch, lora):
    import torch
    from safetensors.torch import load_file

    cstar, dev = files
    torch.set_num_threads(1)
    runs = {}
    for name in ("a", "b"):
        trainer_mod.run_training(_cfg(tiny_model, cstar, dev, tmp_path / name, lora=lora))
        runs[name] = load_file(str(tmp_path / name / "model.safetensors"))
    original = crash_at_step(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        trainer_mod.run_training(_cfg(tiny_model, cstar, dev, tmp_path / "c", lora=lora))
    monkeypatch.setattr(trainer_mod.EvaluateAtEnd, "on_step_end", original)
    trainer_mod.run_training(_cfg(tiny_model, cstar, dev, tmp_path / "c", lora=lora))
    runs["c"] = load_file(str(tmp_path / "c" / "model.safetensors"))
    for name in ("b", "c"):
        assert all(torch.equal(runs["a"][k], runs[name][k]) for k in runs["a"]), name


def test_a_kill_after_the_last_step_resumes_to_the_uninterrupted_summary(tiny_model, files, tmp_path, monkeypatch):
    """Killed after the last checkpoint, before the summary (the kill -9 campaign over experiment
    stages found it): resumed at the last step, the Trainer logged a step max_steps + 1 with an
    extra evaluation, so the summary and the report differed from an uninterrupted run's."""
    cstar, dev = files
    whole = trainer_mod.run_training(_cfg(tiny_model, cstar, dev, tmp_path / "a"))
    save = trainer_mod._save_final

    def killed(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(trainer_mod, "_save_final", killed)
    with pytest.raises(KeyboardInterrupt):
        trainer_mod.run_training(_cfg(tiny_model, cstar, dev, tmp_path / "b"))
    assert (tmp_path / "b" / "checkpoints" / "checkpoint-4").is_dir()
    monkeypatch.setattr(trainer_mod, "_save_final", save)
    resumed = trainer_mod.run_training(_cfg(tiny_model, cstar, dev, tmp_path / "b"))
    assert resumed["evaluations"] == whole["evaluations"] and resumed["best_step"] == whole["best_step"]
    assert [e["step"] for e in resumed["log_history"]] == [e["step"] for e in whole["log_history"]]


def test_dev_texts_with_calls_keep_them_for_the_tool_run_only(tiny_model, files, tmp_path):
    """issue 27, item 1: held-out C* texts as the dev set, calls kept, so perplexity does not
    pick the checkpoint that writes fewest calls; +CC's dev texts stay plain."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    cfg = _cfg(tiny_model, *files, tmp_path / "a", dev_data=None, dev_with_calls=True, max_length=64)
    plain = _cfg(tiny_model, *files, tmp_path / "b", dev_data=None, max_length=64)
    with_calls, without = trainer_mod.prepare_data(cfg, tok), trainer_mod.prepare_data(plain, tok)
    assert with_calls["dev"].n_tokens > without["dev"].n_tokens  # the dev text's call is still in it
    cc = trainer_mod.prepare_data(_cfg(tiny_model, *files, tmp_path / "c", dev_data=None, dev_with_calls=True,
                                       plain_baseline=True, max_length=64), tok)
    assert cc["dev"].n_tokens == without["dev"].n_tokens
    # the summary says which: it read "calls removed" for a run whose dev texts kept them
    assert "calls kept" in with_calls["counts"]["dev source"]
    assert "calls removed" in without["counts"]["dev source"] and "calls removed" in cc["counts"]["dev source"]


def test_a_timed_save_between_evaluations_resumes_to_the_uninterrupted_weights(tiny_model, files, tmp_path,
                                                                                monkeypatch):
    """save_minutes: a checkpoint at step 3, where eval_steps 2 saves none, so a run stopped after
    it redoes nothing; the weights end as an uninterrupted run's."""
    import torch
    from safetensors.torch import load_file

    cstar, dev = files
    torch.set_num_threads(1)
    whole = trainer_mod.run_training(_cfg(tiny_model, cstar, dev, tmp_path / "a", lora=True))
    original = crash_at_step(monkeypatch, 4)
    cfg = _cfg(tiny_model, cstar, dev, tmp_path / "b", lora=True, save_minutes=1e-9)  # every step
    with pytest.raises(KeyboardInterrupt):
        trainer_mod.run_training(cfg)
    assert (tmp_path / "b" / "checkpoints" / "checkpoint-3").is_dir()
    steps_run = count_steps(monkeypatch, original)
    resumed = trainer_mod.run_training(cfg)
    assert steps_run == [4]
    assert resumed["evaluations"] == whole["evaluations"] and resumed["best_step"] == whole["best_step"]
    a, b = load_file(str(tmp_path / "a" / "model.safetensors")), load_file(str(tmp_path / "b" / "model.safetensors"))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_an_unfinished_lora_run_goes_on_from_the_bank_on_a_fresh_machine(tiny_model, files, tmp_path, monkeypatch):
    """experiment.bank with a real (tiny) LoRA run: stopped after step 3, banked, its run folder
    lost; restored into a new folder, it trains step 4 only and ends with an uninterrupted run's
    weights and best step; once finished, the bank drops the checkpoints for the adapter."""
    import shutil

    import torch
    from safetensors.torch import load_file

    from toolformer_kit.experiment import bank as B

    cstar, dev = files
    torch.set_num_threads(1)
    whole = trainer_mod.run_training(_cfg(tiny_model, cstar, dev, tmp_path / "a", lora=True))
    out, bank = tmp_path / "run", tmp_path / "bank"
    cfg = _cfg(tiny_model, cstar, dev, out / "train-tools", lora=True, save_minutes=1e-9)
    original = crash_at_step(monkeypatch, 4)
    with pytest.raises(KeyboardInterrupt):
        trainer_mod.run_training(cfg)
    B.save(out, bank)
    banked = sorted(str(p.relative_to(bank)) for p in bank.rglob("*") if p.is_file())
    assert "train-tools/train_run.json" in banked and "train-tools/checkpoints/checkpoint-3/optimizer.pt" in banked
    assert not any("tokenizer" in n or "checkpoint-1/" in n for n in banked)  # the newest and the best only
    shutil.rmtree(out)  # the machine is gone
    assert B.restore(out, bank, tiny_model) == ["train-tools/checkpoints/checkpoint-3"]
    steps_run = count_steps(monkeypatch, original)
    resumed = trainer_mod.run_training(cfg)
    assert steps_run == [4] and resumed["best_step"] == whole["best_step"]
    a, b = load_file(str(tmp_path / "a" / "model.safetensors")), load_file(str(out / "train-tools" / "model.safetensors"))
    assert all(torch.equal(a[k], b[k]) for k in a)
    B.save(out, bank)
    assert not (bank / "train-tools" / "checkpoints").exists()
    assert (bank / "train-tools" / "adapter" / "adapter_model.safetensors").is_file()
