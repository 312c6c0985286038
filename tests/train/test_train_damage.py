"""A training run cut off by a kill: a damaged newest checkpoint is skipped, the final save lands
whole or not at all, and the run's own half-finished folder is not refused as foreign
(issue 29, items 7 and 15)."""

import json
from types import SimpleNamespace

import torch
from safetensors.torch import save_file

from toolformer_kit.train import trainer as T


def checkpoint(root, step, state=True, weights=True):
    ckpt = root / T.CHECKPOINTS / f"checkpoint-{step}"
    ckpt.mkdir(parents=True)
    if state:
        (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    if weights:
        save_file({"w": torch.zeros(64, 64), "b": torch.ones(64)}, str(ckpt / "model.safetensors"))
    return ckpt


def test_a_whole_checkpoint_has_no_problem_and_damaged_ones_say_which_file(tmp_path):
    assert T.checkpoint_problem(checkpoint(tmp_path, 1)) is None
    cut = checkpoint(tmp_path, 2)
    (cut / "trainer_state.json").write_text('{"global_st')
    assert "trainer_state.json" in T.checkpoint_problem(cut)
    short = checkpoint(tmp_path, 3)
    data = (short / "model.safetensors").read_bytes()
    (short / "model.safetensors").write_bytes(data[: len(data) // 2])
    assert "model.safetensors" in T.checkpoint_problem(short)
    assert "no weights" in T.checkpoint_problem(checkpoint(tmp_path, 4, weights=False))


def test_resume_skips_the_damaged_newest_checkpoint(tmp_path, caplog):
    checkpoint(tmp_path, 5)
    newest = checkpoint(tmp_path, 10)
    (newest / "trainer_state.json").write_text("")
    assert T._last_checkpoint(tmp_path, resume=True, max_steps=20).endswith("checkpoint-5")
    assert "skipping" in caplog.text and "checkpoint-10" in caplog.text
    assert T._last_checkpoint(tmp_path, resume=False, max_steps=20) is None
    checkpoint(tmp_path, 20)  # the run's last step: a kill came before the summary
    assert T._last_checkpoint(tmp_path, resume=True, max_steps=20).endswith("checkpoint-5")


def test_the_final_save_moves_whole_files_and_leaves_no_staging(tmp_path):
    class Saver:
        config = SimpleNamespace(use_cache=False)

        def save_pretrained(self, folder):
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "model.safetensors").write_bytes(b"weights")
            (folder / "config.json").write_text("{}")

    tok = SimpleNamespace(save_pretrained=lambda folder: (folder / "tokenizer.json").write_text("{}"))
    trainer = SimpleNamespace(is_deepspeed_enabled=False, is_world_process_zero=lambda: True, model=Saver())
    (tmp_path / T.STAGING).mkdir()
    (tmp_path / T.STAGING / "model.safetensors").write_bytes(b"half of a killed save")
    T._save_final(trainer, tok, tmp_path, is_lora=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "model.safetensors", "tokenizer.json"]
    assert (tmp_path / "model.safetensors").read_bytes() == b"weights"


def test_a_folder_this_run_started_is_not_foreign(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"x")
    try:
        T._check_out(tmp_path)
        raise AssertionError("a model no run wrote must be refused")
    except T.ConfigError as exc:
        assert "no training run wrote" in str(exc)
    (tmp_path / T.RUN_FILE).write_text("{}")  # written when this run started
    T._check_out(tmp_path)
