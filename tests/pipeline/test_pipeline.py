"""The end-to-end pipeline without its heavy stages: which data each run trains on, the dev
texts, the task list and the input checks."""

import json

import pytest

from toolformer_kit.pipeline import run as pipeline
from toolformer_kit.pipeline import stages
from toolformer_kit.annotate.sources import _load_wiki, default_corpus
from toolformer_kit.config import ConfigError
from toolformer_kit.pipeline.config import PipelineConfig, preset
from toolformer_kit.pipeline.run import heldout_texts


def test_dev_texts_exclude_summaries_whose_windows_were_trained_on():
    """C* stores the annotated *window* of a long summary; the summary it came from must not
    become a dev text (that would score perplexity on training data)."""
    longest = max((v["extract"] for v in _load_wiki("en-us").values() if v.get("extract")), key=len)
    window = longest[: len(longest) // 2]
    everything = heldout_texts(set(), 100_000, seed=0)
    assert longest in everything
    assert longest not in heldout_texts({window, ""}, 100_000, seed=0)
    assert len(heldout_texts({window}, 100_000, seed=0)) == len(everything) - 1


# ---------------------------------------------------------------- +CC data and dev texts (issue 13, item 3)
def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def annotated(tmp_path):
    """An annotation folder over the real embedded corpus: 8 documents annotated (one as a window,
    as the runner writes a long one), one of them kept a call."""
    docs = default_corpus(2, seed=0)
    rows = [{"id": d.doc_id, "text": d.text} for d in docs]
    rows[0] = {"id": rows[0]["id"] + "#0", "text": rows[0]["text"][:300]}
    folder = tmp_path / "annotate"
    folder.mkdir()
    _jsonl(folder / "documents.jsonl", rows)
    text = docs[2].text
    _jsonl(folder / "corpus.jsonl", [{"id": docs[2].doc_id, "original": text,
                                      "text": "[Calculator(1 + 1) -> 2] " + text}])
    return folder, rows


def _run_stubbed(cfg, folder, monkeypatch):
    """run_pipeline with every heavy stage replaced; returns the TrainConfigs it would train."""
    trained = []
    monkeypatch.setattr(pipeline, "check_inputs", lambda cfg: None)
    monkeypatch.setattr(stages, "pull_models", lambda names: None)
    monkeypatch.setattr(stages, "prepare_index", lambda tools: None)
    monkeypatch.setattr(stages, "annotate", lambda acfg, documents: folder)
    monkeypatch.setattr(pipeline, "evaluate", lambda ecfg: folder)
    monkeypatch.setattr(pipeline, "stage_examples", lambda *a: [])
    monkeypatch.setattr(pipeline.report, "write_report", lambda *a: (folder, folder))
    monkeypatch.setattr(stages, "run_training", trained.append)  # the one stage runner
    pipeline.run_pipeline(cfg)
    return {("+CC" if c.plain_baseline else "tools"): c for c in trained}


def test_cc_trains_on_every_annotated_text_and_dev_texts_are_unseen_corpus_documents(annotated, tmp_path,
                                                                                      monkeypatch):
    """The paper's +CC is fine-tuned on the whole annotated subset C, not only on the texts that
    kept a call; the dev set is documents of the same sources that were never annotated."""
    folder, rows = annotated
    runs = _run_stubbed(preset("smoke", out=str(tmp_path / "run"), dev_docs=12), folder, monkeypatch)
    assert runs["+CC"].data == str(folder / "documents.jsonl")
    assert runs["tools"].data == str(folder / "corpus.jsonl")
    assert runs["+CC"].dev_data == runs["tools"].dev_data  # one dev set: comparable perplexities
    dev = [json.loads(line) for line in open(runs["tools"].dev_data, encoding="utf-8")]
    assert len(dev) == 12
    assert {d["id"].split(":")[0] for d in dev} == {"wiki", "mt", "gsm8k", "changelog"}
    seen = {pipeline.subject(r["id"]) for r in rows}
    assert not seen & {pipeline.subject(d["id"]) for d in dev}
    assert not any(r["text"] in d["text"] or d["text"] in r["text"] for r in rows for d in dev)


def test_old_baselines_stay_behind_flags(annotated, tmp_path, monkeypatch):
    folder, rows = annotated
    cfg = preset("smoke", out=str(tmp_path / "run"), dev_docs=5, cc_data="cstar", dev_source="wiki")
    runs = _run_stubbed(cfg, folder, monkeypatch)
    assert runs["+CC"].data == str(folder / "corpus.jsonl")
    dev = [json.loads(line) for line in open(runs["tools"].dev_data, encoding="utf-8")]
    assert len(dev) == 5 and all(d["id"].startswith("dev-") for d in dev)
    with pytest.raises(ConfigError, match="--cc-data must be one of annotated, cstar"):
        pipeline.PipelineConfig(cc_data="all")


def test_heldout_documents_skip_what_was_annotated_in_any_form():
    free = pipeline.heldout_documents([], [], 8, seed=0)
    wiki_id, wiki_text = next(d for d in free if d[0].startswith("wiki:"))
    gsm_id, gsm_text = next(d for d in free if d[0].startswith("gsm8k:"))
    title = wiki_id.split(":", 1)[1]
    # the wiki article annotated as an MT document; the maths problem known by its text only
    again = pipeline.heldout_documents([f"mt:fr:{title}", "other:1"], [gsm_text], 8, seed=0)
    ids = [i for i, _ in again]
    assert len(again) == 8 and wiki_id not in ids and gsm_id not in ids
    assert pipeline.heldout_documents([], [], 8, seed=0) == free  # seeded: the same every run


# ---------------------------------------------------------------- measured tasks (issue 13, item 7)
def test_tasks_measure_every_annotated_tool_that_has_a_benchmark():
    from toolformer_kit.pipeline.report import exercised

    smoke = preset("smoke")
    measured = {exercised(t) for t in smoke.tasks}
    assert {"Calculator", "Calendar", "WikiSearch"} <= measured
    assert not {"lama-trex", "lama-google-re", "lama-squad"} & set(smoke.tasks)  # WikiSearch is off on LAMA
    assert smoke.eval_limit <= 30
    default = PipelineConfig()  # issue 43: the Calculator only, on enough problems for a +20-point effect to show
    assert default.tools == ["Calculator"] and {exercised(t) for t in default.tasks} == {"Calculator"}
    assert len(default.tasks) * default.eval_limit >= 300


def test_check_inputs_fails_early_when_a_task_file_is_missing(tmp_path):
    from toolformer_kit.eval.config import default_data_dir

    (tmp_path / "math").symlink_to(default_data_dir() / "math")  # maths present, QA files missing
    with pytest.raises(ConfigError, match="task webquestions: WebQuestions not found"):
        pipeline.check_inputs(preset("smoke", data_dir=str(tmp_path)))
    pipeline.check_inputs(pipeline.PipelineConfig(data_dir=str(tmp_path)))  # the default needs the maths sets only
    with pytest.raises(ConfigError, match="unknown task 'svamq'"):
        pipeline.check_inputs(pipeline.PipelineConfig(tasks=["svamq"], data_dir=str(tmp_path)))
    pipeline.check_inputs(pipeline.PipelineConfig(tasks=["svamp", "dateset"], data_dir=str(tmp_path)))


def test_the_eval_stage_asks_for_what_the_old_command_line_did(tmp_path):
    """stage_eval once built an argv for the eval command; the EvalConfig it now builds is that argv's."""
    import argparse

    from toolformer_kit.commands import eval as eval_cmd
    from toolformer_kit.config import build_config
    from toolformer_kit.eval.config import EvalConfig

    for extra in ({}, {"data_dir": "/data", "threads": 2}):
        cfg = preset("smoke", out=str(tmp_path), **extra)
        argv = ["--model", f"toolformer={tmp_path}/t", "--baselines", f"base={cfg.model},cc={tmp_path}/c",
                "--tools", ",".join(cfg.tools),
                "--tasks", ",".join(cfg.tasks), "--limit", str(cfg.eval_limit), "--out", str(tmp_path / "eval"),
                "--heldout", str(tmp_path / "dev.jsonl"), "--seed", str(cfg.seed)]
        argv += ["--data-dir", cfg.data_dir] if cfg.data_dir else []
        argv += ["--threads", str(cfg.threads)] if cfg.threads else []
        parser = argparse.ArgumentParser()
        eval_cmd.add_arguments(parser)
        old = build_config(EvalConfig, parser.parse_args(argv))
        assert pipeline.eval_config(cfg, tmp_path, tmp_path / "t", tmp_path / "c", tmp_path / "dev.jsonl") == old


def test_the_default_eval_has_no_cc_column_and_no_heldout_documents(tmp_path):
    cfg = PipelineConfig(out=str(tmp_path))
    ecfg = pipeline.eval_config(cfg, tmp_path, tmp_path / "t", None, None)
    assert ecfg.baselines == [f"base={cfg.model}"] and ecfg.heldout is None and ecfg.tools == ["Calculator"]
    assert pipeline.eval_config(PipelineConfig(base_baseline=False), tmp_path, tmp_path / "t", None, None).baselines == []


# ---------------------------------------------------------------- the default run (issue 43)
def test_fresh_windows_are_the_maths_campaigns_next_unannotated_windows():
    """The run annotates windows cut exactly as the campaign cuts them, none that the published
    C* annotated: its kept calls are new calls on new text."""
    from toolformer_kit.campaign.run import CampaignConfig, campaign_windows
    from toolformer_kit.pipeline import fresh

    count = lambda s: len(s.split())  # noqa: E731 - any counter, the same for both
    seen = fresh.annotated_ids(["datasets/cstar-math"])
    assert len(seen) == 592
    got = fresh.fresh_windows(5, 0, ["datasets/cstar-math"], count)
    campaign = [d for d in campaign_windows(CampaignConfig(recipe="math"), count)[0] if d.doc_id not in seen]
    assert [(d.doc_id, d.text, d.context_chars) for d in got] == [(d.doc_id, d.text, d.context_chars)
                                                                  for d in campaign[:5]]
    assert all(d.context_chars > 0 for d in got if d.doc_id.startswith("gsm8k:"))  # the question is context
    with pytest.raises(ConfigError, match="no data/cstar.jsonl"):
        fresh.dataset_dir("datasets/no-such-cstar")


def test_training_joins_the_published_cstar_with_this_runs_calls(tmp_path):
    from toolformer_kit.pipeline import fresh

    annotated = tmp_path / "annotate"
    annotated.mkdir()
    ours = {"id": "gsm8k:1#9", "text": "So [Calculator(6 * 7) -> 42] 42 eggs.", "calls": [{"tool": "Calculator"}]}
    _jsonl(annotated / "corpus.jsonl", [ours])
    _jsonl(annotated / "documents.jsonl", [{"id": "gsm8k:1#9", "text": "So 42 eggs."}, {"id": "x", "text": "No."}])
    data = pipeline.training_data(PipelineConfig(out=str(tmp_path)), annotated, tmp_path)
    rows = [json.loads(line) for line in data["tool-trained"].open(encoding="utf-8")]
    assert len(rows) == 193 and rows[-1]["id"] == ours["id"] and rows[-1]["from"] == "this run"
    assert {r["from"] for r in rows[:-1]} == {"datasets/cstar-math"}
    assert fresh.provenance(data["tool-trained"]) == {"datasets/cstar-math": {"texts": 192, "calls": 300},
                                                     "this run": {"texts": 1, "calls": 1}}
    assert sum(1 for _ in data["+CC"].open(encoding="utf-8")) == 594  # the subset C of both
    solo = pipeline.training_data(PipelineConfig(cstar_datasets=[]), annotated, tmp_path)
    assert solo["tool-trained"] == annotated / "corpus.jsonl"


def test_the_default_run_fine_tunes_all_weights_once_its_dev_texts_carved_from_cstar(annotated, tmp_path,
                                                                                      monkeypatch):
    folder, _ = annotated
    runs = _run_stubbed(PipelineConfig(out=str(tmp_path / "run")), folder, monkeypatch)
    assert set(runs) == {"tools"}  # no +CC run unless --train-cc
    t = runs["tools"]
    assert not t.lora and t.dev_data is None and t.dev_with_calls and t.keep == "best"
    assert (t.max_steps, t.effective_batch, t.batch_size, t.learning_rate) == (24, 8, 4, 3e-5)
    assert t.data == str(tmp_path / "run" / "train-data" / "cstar.jsonl")
    assert not (tmp_path / "run" / "dev.jsonl").exists()


def test_a_missing_published_cstar_fails_before_any_stage(tmp_path):
    with pytest.raises(ConfigError, match="--cstar-datasets datasets/nothing-here"):
        pipeline.run_pipeline(PipelineConfig(out=str(tmp_path / "run"), cstar_datasets=["datasets/nothing-here"]))
    assert not (tmp_path / "run").exists()


def test_the_smoke_preset_is_the_old_default():
    smoke = preset("smoke")
    assert (smoke.model, smoke.sampler_model, smoke.corpus, smoke.lora, smoke.train_cc) == (
        "smollm2-135m", "qwen2.5-coder-0.5b", "default", True, True)
    assert smoke.cstar_datasets == [] and smoke.tools == ["Calculator", "WikiSearch", "Calendar", "MT"]
    with pytest.raises(ConfigError, match="--corpus must be one of math, default"):
        PipelineConfig(corpus="gsm8k")


@pytest.mark.slow
@pytest.mark.real_model
def test_the_pipeline_end_to_end_on_the_real_smollm2_at_a_tiny_size(tmp_path, capsys):
    """Every stage of ``toolformer pipeline`` through the one stage loop on a real model (the
    default's path: one fresh maths window annotated, joined with datasets/cstar-math): the
    timings name each stage, the report and the closing text are written, and a re-run trains
    nothing again."""
    import json

    from toolformer_kit.commands.pipeline import main

    out = tmp_path / "run"
    argv = ["--model", "smollm2-135m", "--fresh-windows", "1", "--train-steps", "1", "--train-batch", "2",
            "--max-length", "64", "--lora", "--train-cc", "--tasks", "svamp", "--eval-limit", "2",
            "--examples", "1", "--out", str(out)]
    assert main(argv) == 0
    timings = json.loads((out / "timings.json").read_text())
    assert list(timings) == ["models", "index", "annotate", "dev texts", "train (tools)", "train (+CC)",
                             "evaluate", "report"]
    assert (out / "report" / "report.md").is_file() and "Try it on your own question" in capsys.readouterr().out
    first = (out / "train-tools" / "train_summary.json").read_text()
    assert main(argv) == 0
    assert (out / "train-tools" / "train_summary.json").read_text() == first  # not trained again
