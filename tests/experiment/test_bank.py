"""experiment.bank: a recipe run's finished parts banked in the repository and restored on a fresh
machine; run_experiment's max_minutes stops inside a stage and banks what is finished."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from toolformer_kit.experiment import bank as B
from toolformer_kit.experiment import run as R
from toolformer_kit.experiment.recipe import ExperimentConfig
from toolformer_kit.pipeline import driver

ANSWERS = "eval/toolformer/k10/svamp/examples.jsonl"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _run_folder(out: Path) -> None:
    """A run folder as a LoRA recipe leaves it: ledger, a finished LoRA run, a full fine-tuning
    run, an evaluation still appending (its last line cut), and what the bank never keeps."""
    _write(out / "stages.json", json.dumps({"train (tools)": {"settings": {"k": 1}}}))
    _write(out / "experiment.json", "{}")
    _write(out / "train-tools/adapter/adapter_model.safetensors", "weights")
    _write(out / "train-tools/adapter/adapter_config.json", "{}")
    _write(out / "train-tools/train_summary.json", '{"steps": 4}')
    _write(out / "train-tools/train_run.json", "{}")
    _write(out / "train-tools/model.safetensors", "merged: made again")
    _write(out / "train-tools/checkpoints/checkpoint-2/optimizer.pt", "moments")
    _write(out / "train-cc/train_summary.json", "{}")  # full fine-tuning: ~1.2 GB of weights, not banked
    _write(out / "train-cc/model.safetensors", "full weights")
    _write(out / ANSWERS, '{"id": 1}\n{"id": 2}\n{"id": 3, "cut')
    _write(out / "eval/toolformer/k10/svamp/run.json", "{}")
    _write(out / "eval/base/perplexity/wikitext2.jsonl", '{"id": "a"}\n')
    _write(out / "corpus/train.jsonl", "made again from the datasets\n")


def test_the_bank_keeps_the_small_finished_parts_and_whole_lines_only(tmp_path):
    out, bank = tmp_path / "run", tmp_path / "bank"
    _run_folder(out)
    assert B.save(out, bank) == 9
    kept = sorted(str(p.relative_to(bank)) for p in bank.rglob("*") if p.is_file())
    assert kept == sorted(["stages.json", "experiment.json", "train-tools/adapter/adapter_config.json",
                           "train-tools/adapter/adapter_model.safetensors", "train-tools/train_summary.json",
                           "train-tools/train_run.json", ANSWERS, "eval/toolformer/k10/svamp/run.json",
                           "eval/base/perplexity/wikitext2.jsonl"])
    assert (bank / ANSWERS).read_text() == '{"id": 1}\n{"id": 2}\n'  # the line being written waits
    assert B.save(out, bank) == 0  # nothing changed, nothing rewritten
    assert "fine-tuned train-tools; 2 answers" in B.describe(bank)


def test_a_fresh_machine_is_restored_with_the_marker_last_and_nothing_there_overwritten(tmp_path):
    out, bank, fresh = tmp_path / "run", tmp_path / "bank", tmp_path / "fresh"
    _run_folder(out)
    B.save(out, bank)
    _write(fresh / ANSWERS, '{"id": 1}\n{"id": 2}\n{"id": 3}\n')  # further on than the bank
    merged = []

    def merge(adapter, dst, base):
        assert not (dst / "train_summary.json").exists()  # the "trained" marker comes after the weights
        merged.append((adapter, dst, base))
        (dst / "model.safetensors").write_text("merged")

    restored = B.restore(fresh, bank, "qwen2.5-coder-0.5b", merge=merge)
    assert merged == [(fresh / "train-tools/adapter", fresh / "train-tools", "qwen2.5-coder-0.5b")]
    assert "train-tools" in restored and "train-cc" not in restored
    assert (fresh / "train-tools/train_summary.json").read_text() == '{"steps": 4}'
    assert (fresh / ANSWERS).read_text().count("\n") == 3  # kept, not replaced by the bank's shorter one
    assert json.loads((fresh / "stages.json").read_text()) == {"train (tools)": {"settings": {"k": 1}}}
    assert B.restore(fresh, bank, "m", merge=merge) == [] and len(merged) == 1  # once restored, left alone


def test_an_unfinished_local_run_is_set_aside_not_deleted_when_the_bank_has_a_finished_one(tmp_path):
    out, bank, here = tmp_path / "run", tmp_path / "bank", tmp_path / "here"
    _run_folder(out)
    B.save(out, bank)
    for n in (1, 2):  # an interrupted run on this machine, twice: its checkpoint is what it wrote
        _write(here / "train-tools/checkpoints/checkpoint-8/adapter_model.safetensors", f"try {n}")
        B.restore(here, bank, "m", merge=lambda adapter, dst, base: None)
        (here / "train-tools/train_summary.json").unlink()  # unfinished again for the second try
    assert (here / "train-tools.unfinished/checkpoints/checkpoint-8/adapter_model.safetensors").read_text() == "try 1"
    assert (here / "train-tools.unfinished-2/checkpoints/checkpoint-8/adapter_model.safetensors").read_text() == "try 2"
    assert (here / "train-tools/adapter/adapter_model.safetensors").read_text() == "weights"


def _stub(monkeypatch, calls: list) -> None:
    """The recipe's stages as fakes that write their markers; evaluation answers until stopped."""
    def stage(name, marker=None):
        def run(cfg, out, *rest, **kw):
            calls.append(name + ("-cc" if kw.get("plain") else ""))
            if marker:
                _write(out / (marker.replace("train-tools", "train-cc") if kw.get("plain") else marker), "{}")
                if name == "train" and not kw.get("plain"):
                    _write(out / "train-tools/adapter/adapter_config.json", "{}")
        return run

    def evaluate(cfg, out, *rest, **kw):
        calls.append("eval")
        path = out / ANSWERS
        path.parent.mkdir(parents=True, exist_ok=True)
        answered = path.read_text().count("\n") if path.is_file() else 0
        for i in range(answered, 10 ** 6):  # resumes after the answers there, like the harness
            with path.open("a") as f:
                f.write(json.dumps({"id": i}) + "\n")
            time.sleep(0.01)

    monkeypatch.setattr(R, "check_tasks", lambda cfg: None)
    monkeypatch.setattr(driver, "release_memory", lambda: None)  # the fakes hold nothing; a real gc takes ~0.3 s
    monkeypatch.setattr(R, "stage_models", stage("models"))
    monkeypatch.setattr(R, "stage_corpus", stage("corpus", "corpus/train.jsonl"))
    monkeypatch.setattr(R, "stage_annotate", stage("annotate", "annotate/manifest.json"))
    monkeypatch.setattr(R, "stage_train", stage("train", "train-tools/train_summary.json"))
    monkeypatch.setattr(R, "stage_probe", stage("probe"))
    monkeypatch.setattr(R, "stage_eval", evaluate)
    monkeypatch.setattr(B, "merge_adapter_folder", lambda adapter, dst, base: calls.append("merge"))


def test_max_minutes_stops_inside_a_stage_banks_it_and_a_fresh_machine_goes_on(tmp_path, monkeypatch):
    calls: list = []
    _stub(monkeypatch, calls)
    bank = tmp_path / "banks" / "t"
    cfg = ExperimentConfig(name="t", out=str(tmp_path / "run"), results=str(tmp_path / "res"), docs=3, lora=True,
                           references=False, bank=str(bank), max_minutes=0.05)
    with pytest.raises(R.Stopped, match=r"stopped in stage evaluate \(0.05 minutes passed\): banked .*"
                                        r"fine-tuned train-tools; \d+ answers; commit it"):
        R.run_experiment(cfg)
    assert calls == ["models", "corpus", "annotate", "train", "probe", "eval"]
    first = (bank / ANSWERS).read_text().count("\n")
    assert first > 0 and json.loads((bank / "stages.json").read_text())["train (tools)"]["settings"]["lora"]

    calls.clear()  # a fresh machine: nothing but the bank
    again = ExperimentConfig(**{**vars(cfg), "out": str(tmp_path / "elsewhere")})
    with pytest.raises(R.Stopped):
        R.run_experiment(again)
    assert calls == ["merge", "models", "corpus", "annotate", "probe", "eval"]  # not trained again
    assert (bank / ANSWERS).read_text().count("\n") > first
    ids = [json.loads(line)["id"] for line in (bank / ANSWERS).read_text().splitlines()]
    assert ids == list(range(len(ids)))  # went on from the banked answers, none twice


def test_a_bank_with_other_training_settings_is_refused(tmp_path, monkeypatch):
    calls: list = []
    _stub(monkeypatch, calls)
    bank = tmp_path / "bank"
    cfg = ExperimentConfig(name="t", out=str(tmp_path / "run"), results=str(tmp_path / "res"), docs=3, lora=True,
                           references=False, bank=str(bank), max_minutes=0.05)
    with pytest.raises(R.Stopped):
        R.run_experiment(cfg)
    other = ExperimentConfig(**{**vars(cfg), "out": str(tmp_path / "b"), "train_steps": 99})
    with pytest.raises(R.ConfigError, match=r"train \(tools\) was made with other settings \(train_steps: 40 → 99\)"):
        R.run_experiment(other)


def test_the_bank_changes_no_evidence():
    assert {"bank", "max_minutes"} <= set(R.NOT_EVIDENCE)


@pytest.mark.real_model
def test_a_restored_adapter_merges_into_the_weights_the_trainer_wrote(tmp_path):
    """The trainer folds the adapter in memory; the bank folds the saved one into a freshly loaded
    base: the two merged models must be the same weights."""
    import torch
    from peft import LoraConfig, get_peft_model
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from toolformer_kit.lm.embedded import resolve_model
    from toolformer_kit.train.lora import merge

    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(resolve_model("smollm2-135m"), dtype=torch.float32)
    peft = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj"], task_type="CAUSAL_LM"))
    for name, p in peft.named_parameters():
        if "lora_B" in name:
            p.data.normal_(0, 0.02)  # a trained adapter: B is no longer zero
    peft.save_pretrained(tmp_path / "run" / "adapter")
    merge(peft).save_pretrained(tmp_path / "trainer")
    B.merge_adapter_folder(tmp_path / "run" / "adapter", tmp_path / "run", "smollm2-135m")
    ours, theirs = load_file(str(tmp_path / "run" / "model.safetensors")), load_file(
        str(tmp_path / "trainer" / "model.safetensors"))
    assert ours.keys() == theirs.keys()
    assert all(torch.equal(ours[k], theirs[k]) for k in ours)


def test_the_bank_is_refreshed_while_a_long_stage_runs(tmp_path, monkeypatch):
    calls: list = []
    _stub(monkeypatch, calls)
    monkeypatch.setattr(B, "BANK_EVERY_S", 0.05)
    seen = []
    save = B.save
    monkeypatch.setattr(B, "save", lambda out, bank: seen.append(R.eval_records(out)) or save(out, bank))
    cfg = ExperimentConfig(name="t", out=str(tmp_path / "run"), results=str(tmp_path / "res"), docs=3, lora=True,
                           references=False, bank=str(tmp_path / "bank"), max_minutes=0.05)
    with pytest.raises(R.Stopped):
        R.run_experiment(cfg)
    during = [n for n in seen if n > 0]
    assert len(during) >= 3  # saves while the evaluation ran, not only after each stage and at the stop


@pytest.mark.slow
@pytest.mark.real_model
def test_a_banked_run_goes_on_on_a_fresh_machine_without_training_or_answering_again(tmp_path):
    """The tiny maths recipe on the real SmolLM2 with LoRA and a bank; then, as on a fresh machine,
    a new run folder with only the bank: both LoRA runs are merged back, not trained, the answers
    are read, not made, and the evidence is the same."""
    from toolformer_kit.commands import experiment as cmd

    bank, res = tmp_path / "banks" / "tiny", tmp_path / "results"
    argv = ["math", "--model", "smollm2-135m", "--docs", "1", "--dev-docs", "2", "--k", "2", "--m", "2",
            "--tau-f", "-100", "--train-steps", "1", "--train-batch", "2", "--max-length", "64", "--lora",
            "--tasks", "svamp", "--eval-limit", "3", "--bootstrap", "50", "--results", str(res), "--bank", str(bank)]
    assert cmd.main(argv + ["--out", str(tmp_path / "run")]) == 0
    first = json.loads((res / "results.json").read_text())
    ledger = json.loads((bank / "stages.json").read_text())
    assert (bank / "train-tools" / "adapter" / "adapter_model.safetensors").is_file()
    assert (bank / "train-cc" / "train_summary.json").is_file()
    answers = sorted(bank.glob("eval/*/*/svamp/examples.jsonl"))
    assert len(answers) >= 4  # base, +CC, the tool-trained model with tools and disabled (and the recipe's others)
    for path in answers:  # marked, so that answers made again (the same, by a seeded decoder) would show
        rows = [json.loads(line) | {"from_bank": True} for line in path.read_text().splitlines()]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cmd.main(argv + ["--out", str(tmp_path / "fresh")]) == 0
    for path in answers:
        rows = (tmp_path / "fresh" / path.relative_to(bank)).read_text().splitlines()
        assert len(rows) == 3 and all(json.loads(r)["from_bank"] for r in rows)
    again = json.loads((tmp_path / "fresh" / "stages.json").read_text())
    for stage in ("train (tools)", "train (+CC)"):
        assert again[stage] == ledger[stage]  # skipped: restored, not trained again
    assert again["evaluate"]["seconds_last_run"] < ledger["evaluate"]["seconds"]
    assert json.loads((res / "results.json").read_text())["headline"] == first["headline"]


def test_sigterm_stops_the_run_as_an_interrupt_with_the_answers_banked(tmp_path, monkeypatch):
    import os
    import signal
    import threading

    calls: list = []
    _stub(monkeypatch, calls)
    bank = tmp_path / "bank"
    cfg = ExperimentConfig(name="t", out=str(tmp_path / "run"), results=str(tmp_path / "res"), docs=3, lora=True,
                           references=False, bank=str(bank))
    before = signal.getsignal(signal.SIGTERM)
    threading.Timer(3.0, os.kill, (os.getpid(), signal.SIGTERM)).start()
    with pytest.raises(R.Stopped, match=r"\(interrupted\)") as stop:
        R.run_experiment(cfg)
    assert not stop.value.on_time and (bank / ANSWERS).read_text().count("\n") > 0
    assert signal.getsignal(signal.SIGTERM) is before  # the run's handler is gone with the run


def _checkpoint(folder: Path, step: int, best: int | None, max_steps: int = 8) -> None:
    state = {"global_step": step, "max_steps": max_steps, "best_global_step": best}
    for name in ("adapter_model.safetensors", "optimizer.pt", "tokenizer.json"):
        _write(folder / f"checkpoint-{step}" / name, f"{name} {step}")
    _write(folder / f"checkpoint-{step}" / "trainer_state.json", json.dumps(state))


def test_an_unfinished_run_banks_its_newest_checkpoint_and_the_best_and_drops_older_ones(tmp_path, monkeypatch):
    monkeypatch.setattr(B, "checkpoint_problem", lambda ckpt: None)  # the fakes hold no real safetensors
    out, bank = tmp_path / "run", tmp_path / "bank"
    ckpts = out / "train-tools" / "checkpoints"
    _write(out / "train-tools" / "train_run.json", '{"settings": {}}')
    _checkpoint(ckpts, 2, best=2)
    B.save(out, bank)
    _checkpoint(ckpts, 3, best=2)
    _checkpoint(ckpts, 4, best=2)
    (ckpts / "checkpoint-4" / "trainer_state.json").write_text('{"cut')  # a save a kill cut off
    B.save(out, bank)
    kept = sorted(str(p.relative_to(bank / "train-tools")) for p in (bank / "train-tools").rglob("*") if p.is_file())
    assert kept == ["checkpoints/checkpoint-2/adapter_model.safetensors", "checkpoints/checkpoint-2/trainer_state.json",
                    "checkpoints/checkpoint-3/adapter_model.safetensors", "checkpoints/checkpoint-3/optimizer.pt",
                    "checkpoints/checkpoint-3/trainer_state.json", "train_run.json"]
    fresh = tmp_path / "fresh"
    assert B.restore(fresh, bank, "m") == ["train-tools/checkpoints/checkpoint-3"]
    assert (fresh / "train-tools/checkpoints/checkpoint-3/optimizer.pt").read_text() == "optimizer.pt 3"
    assert B.restore(fresh, bank, "m") == []  # as far on as the bank already
    B.save(tmp_path / "elsewhere", bank)  # a run folder that has not got there leaves the bank's alone
    assert (bank / "train-tools/checkpoints/checkpoint-3/optimizer.pt").is_file()


def test_a_bank_s_checkpoints_do_not_go_into_another_run_and_a_finished_run_drops_them(tmp_path, monkeypatch):
    monkeypatch.setattr(B, "checkpoint_problem", lambda ckpt: None)
    out, bank, other = tmp_path / "run", tmp_path / "bank", tmp_path / "other"
    _write(out / "train-tools" / "train_run.json", '{"settings": {"learning_rate": 1}}')
    _checkpoint(out / "train-tools" / "checkpoints", 3, best=None)
    B.save(out, bank)
    _write(other / "train-tools" / "train_run.json", '{"settings": {"learning_rate": 2}}')
    assert B.restore(other, bank, "m") == [] and not (other / "train-tools" / "checkpoints").exists()
    _write(out / "train-tools/adapter/adapter_model.safetensors", "weights")
    _write(out / "train-tools/train_summary.json", "{}")
    B.save(out, bank)
    assert not (bank / "train-tools" / "checkpoints").exists()
    assert (bank / "train-tools/adapter/adapter_model.safetensors").is_file()
