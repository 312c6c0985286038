"""``toolformer eval`` end to end on the real SmolLM2, the real decoder and the real tools (short)."""

import json
import os
from pathlib import Path

import pytest

from toolformer_kit.eval.config import default_data_dir

DATA = Path(os.environ.get("TOOLFORMER_BENCHMARKS", default_data_dir()))


@pytest.mark.real_model
@pytest.mark.skipif(not DATA.is_dir(), reason="no benchmark copies")
def test_eval_command_real_model_resumes(tmp_path, smollm2, monkeypatch, one_thread):
    from toolformer_kit.commands.cli import main
    from toolformer_kit.lm.base import BACKENDS

    backend = BACKENDS.get("hf")
    monkeypatch.setattr(backend, "load", classmethod(lambda cls, *a, **k: smollm2))  # reuse the session's model
    heldout = tmp_path / "heldout.txt"
    heldout.write_text("The river rises in the hills and flows west to the sea.\n\n"
                       "In 1998 the town built a second bridge over the river.\n")
    args = ["eval", "--model", "small=smollm2-135m", "--tasks", "svamp,dateset-days", "--limit", "2",
            "--settings", "k10,disabled", "--tools", "Calculator,Calendar", "--data-dir", str(DATA),
            "--out", str(tmp_path / "out"), "--batch-size", "2", "--heldout", str(heldout),
            "--bootstrap", "200"]
    assert main(args) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    runs = {(s["model"], s["setting"], s["task"]) for s in summary}
    assert {("small", "k10", "svamp"), ("small", "disabled", "dateset-days"), ("small", "disabled", "heldout")} <= runs
    for s in summary:
        if s["kind"] == "generate":
            assert s["n"] == 2 and 0 <= s["accuracy"] <= 1 and s["ci95"][0] <= s["accuracy"] <= s["ci95"][1]
            assert s["setting"] != "disabled" or s["call_rate"] == 0
        else:
            assert s["perplexity"] > 1 and s["n_docs"] == 2
    path = tmp_path / "out" / "small" / "k10" / "dateset-days" / "examples.jsonl"
    records = [json.loads(line) for line in path.open()]
    for rec in records:
        assert rec["output"] and len(rec["calls"]) <= 1
        for call in rec["calls"]:  # a Calendar call answered with the example's own date
            if call["tool"] == "Calendar" and call["ok"]:
                assert rec["meta"]["today"][:4] in call["result"]
    before = path.read_text()
    assert main(args + ["--limit", "3"]) == 0  # resumes: two old records kept, one added
    after = path.read_text().splitlines()
    assert len(after) == 3 and "\n".join(after[:2]) + "\n" == before
    assert (tmp_path / "out" / "table.md").is_file() and (tmp_path / "out" / "accuracy.png").is_file()


def test_pipeline_refuses_to_start_without_benchmark_data(tmp_path, monkeypatch, capsys):
    """The data check runs before annotation and training, so a missing folder costs seconds,
    not the half hour of stages before evaluation; nothing is written."""
    from toolformer_kit.commands.pipeline import main

    monkeypatch.setenv("TOOLFORMER_DATA_DIR", str(tmp_path / "missing"))
    assert main(["--out", str(tmp_path / "run")]) == 2
    assert "TOOLFORMER_DATA_DIR" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_data_dir_from_the_environment(tmp_path, monkeypatch):
    from toolformer_kit.eval.config import EvalConfig, resolve_data_dir

    monkeypatch.setenv("TOOLFORMER_DATA_DIR", str(tmp_path))
    assert resolve_data_dir(EvalConfig(tasks=["svamp"])) == tmp_path
