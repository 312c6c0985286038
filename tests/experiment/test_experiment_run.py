"""`toolformer experiment`: recipes, the funnel, the retrieval ceiling, the results writer and
resumption, all without a model (the end-to-end run on the real SmolLM2 is the one `slow` test)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from toolformer_kit.commands import experiment as cmd
from toolformer_kit.config import ConfigError
from toolformer_kit.eval.tasks import Example
from toolformer_kit.experiment import run as R
from toolformer_kit.measures.ceiling import ceiling_flags
from toolformer_kit.measures.funnel import funnel, math_useful
from toolformer_kit.experiment.recipe import ExperimentConfig, available, load_recipe
from toolformer_kit.measures.results import headline_rows, paired


# ---------------------------------------------------------------- recipes
def test_both_recipes_load_and_every_field_can_be_overridden():
    assert {"math", "search"} <= set(available())
    math = load_recipe("math")
    assert math.name == "math" and math.tools == ["Calculator"] and math.corpus == "gsm8k-prose"
    assert math.out == "runs/math" and math.results == "results/math" and math.eval_limit >= 200
    search = load_recipe("search", {"eval_limit": 7, "tasks": ["nq"], "lama_search": False})
    assert search.eval_limit == 7 and search.tasks == ["nq"] and search.lama_search is False
    assert search.tools == ["WikiSearch"] and search.wiki_exclude_self and search.ceiling


def test_an_unknown_recipe_is_one_line_naming_the_ones_there_are(capsys):
    assert cmd.main(["maths", "--estimate"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert err == "error: unknown recipe 'maths' (did you mean 'math'?); available: all, math, math-lora, math-v2, search, search-v2, search-v3"


def test_bad_values_in_a_recipe_or_a_flag_are_one_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("docz: 3\n")
    with pytest.raises(ConfigError, match="'docz' \\(did you mean 'docs'\\?\\)"):
        load_recipe(str(bad))
    with pytest.raises(ConfigError, match="docs must be >= 1"):
        load_recipe("math", {"docs": 0})
    assert cmd.main(["math", "--corpus", "web", "--estimate"]) == 2
    assert "corpus must be one of gsm8k, gsm8k-prose, wiki" in capsys.readouterr().err


def test_the_cli_estimates_from_the_recipe_with_flags_on_top(capsys):
    assert cmd.main(["math", "--estimate"]) == 0
    full = capsys.readouterr().out
    assert cmd.main(["math", "--estimate", "--docs", "4", "--eval-limit", "10"]) == 0
    small = capsys.readouterr().out
    assert "annotate" in full and "evaluate" in full and "total" in full and small != full


def test_the_command_line_is_written_from_what_was_typed():
    from toolformer_kit.config import command_line

    line = command_line(["toolformer", "experiment", "search"],
                        {"eval_limit": 50, "ceiling": True, "tasks": ["nq", "webquestions"]})
    assert line == "toolformer experiment search --eval-limit 50 --ceiling --tasks nq,webquestions"


# ---------------------------------------------------------------- funnel
def _rec(i, called, correct, tool="Calculator", result=None, reason="", answer="14", equation="( 41 - 9 ) - 18"):
    calls = [{"tool": tool, "input": "x", "result": result, "token_position": 3, "ok": not reason,
              "reason": reason}] if called else []
    return {"id": str(i), "called": called, "correct": correct, "calls": calls, "answers": [answer],
            "meta": {"equation": equation}}


def test_the_funnel_counts_each_step_within_the_one_before():
    records = [_rec(0, True, True, result="14"),                         # all five steps
               _rec(1, True, False, result="32"),                        # an intermediate: useful, answer wrong
               _rec(2, True, False, result="50"),                        # a wrong operation: not useful
               _rec(3, True, False, tool="WikiSearch", result="14"),     # the wrong tool
               _rec(4, True, False, reason="closed_without_arrow"),      # never ran
               _rec(5, False, True), _rec(6, False, False), _rec(7, False, False)]
    f = funnel(records, "Calculator")
    assert [s["n"] for s in f["steps"]] == [5, 4, 3, 2, 1]
    assert f["steps"][0]["share"] == 5 / 8
    assert f["no_call"] == {"n": 3, "share": 3 / 8, "correct": 1, "accuracy": 1 / 3}


def test_intermediates_come_from_the_gold_equation_of_each_benchmark():
    from toolformer_kit.eval.config import default_data_dir
    from toolformer_kit.eval.tasks import get_task

    for task in ("svamp", "asdiv", "mawps"):
        examples = get_task(task).load(default_data_dir())
        with_eq = [e for e in examples if e.meta.get("equation")]
        assert len(with_eq) >= 0.95 * len(examples)
        # the gold answer is always an intermediate of its own equation (or the answer itself)
        useful = [math_useful(e.answers[0], {"answers": e.answers, "meta": e.meta}) for e in with_eq]
        assert all(useful)


# ---------------------------------------------------------------- retrieval ceiling
def test_accuracy_on_the_retrievable_subset_sits_beside_the_full_set():
    examples = [Example(str(i), f"Answer the following question: q{i}\nAnswer:", (f"a{i}",)) for i in range(10)]
    search = lambda q, k: [f"The answer is a{q[1:]}." if int(q[1:]) < 4 else "nothing here"]  # noqa: E731
    flags = ceiling_flags(examples, search)
    keep = {i for i, v in flags.items() if v}
    assert keep == {"0", "1", "2", "3"}
    on = [{"id": str(i), "correct": i < 3 or i == 9, "called": True} for i in range(10)]
    off = [{"id": str(i), "correct": i == 9, "called": False} for i in range(10)]
    full, sub = paired(on, off, 300), paired(on, off, 300, keep=keep)
    assert (full["n"], full["tools"]["accuracy"], full["disabled"]["accuracy"]) == (10, 0.4, 0.1)
    assert (sub["n"], sub["tools"]["accuracy"], sub["disabled"]["accuracy"], sub["diff"]) == (4, 0.75, 0.0, 0.75)


# ---------------------------------------------------------------- results writer
def _write_eval(folder: Path, task: str, label: str, setting: str, correct: list[bool], called: bool):
    d = folder / "eval" / label / setting / task
    d.mkdir(parents=True, exist_ok=True)
    rows = [_rec(i, called, c, result="14" if c else "50") for i, c in enumerate(correct)]
    (d / "examples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def finished_run(tmp_path, monkeypatch):
    from toolformer_kit.measures import results

    monkeypatch.setattr(results, "machine", lambda: {"cpu": "test cpu", "cores": 2, "torch_threads": 2,
                                                     "torch": "2.13.0", "fp32_matmul_gflops": 150.0,
                                                     "roofline_note": "test"})
    run = tmp_path / "runs" / "math"
    n = 40
    _write_eval(run, "svamp", "toolformer", "k10", [i < 20 for i in range(n)], True)
    _write_eval(run, "svamp", "toolformer", "disabled", [i < 2 for i in range(n)], False)
    _write_eval(run, "svamp", "base", "disabled", [i < 1 for i in range(n)], False)
    _write_eval(run, "svamp", "cc", "disabled", [i < 2 for i in range(n)], False)
    (run / "stages.json").write_text(json.dumps({"annotate": {"seconds": 600.0}, "evaluate": {"seconds": 900.0}}))
    cfg = ExperimentConfig(name="math", tasks=["svamp"], out=str(run), results=str(tmp_path / "results" / "math"),
                           goal_gain=20, goal_call_rate=0.8, bootstrap=300)
    return cfg, run


def test_the_results_open_with_the_verdict_and_hold_every_number_with_its_interval(finished_run):
    from toolformer_kit.experiment.report import write_results

    cfg, run = finished_run
    folder = write_results(cfg, run, "toolformer experiment math --tasks svamp")
    text = (folder / "report.md").read_text()
    headings = [ln for ln in text.splitlines() if ln.startswith("#")]
    assert headings[0].startswith("# Evidence: math") and headings[1] == "## Verdict"
    assert text.index("## Verdict") < text.index("## Settings") < text.index("toolformer experiment math")
    assert "Goal met on svamp" in text and "| svamp | 40 | 50.0 [" in text
    res = json.loads((folder / "results.json").read_text())
    for key in ("command", "seed", "commit", "machine", "headline", "columns", "funnel", "verdict", "wall_seconds"):
        assert key in res
    assert res["machine"]["fp32_matmul_gflops"] == 150.0 and res["seed"] == 0
    head = res["headline"][0]["all"]
    assert head["n"] == 40 and round(head["diff"], 2) == 0.45 and head["diff_ci95"][0] > 0.2
    assert head["tools"]["ci95"][0] < 0.5 < head["tools"]["ci95"][1]
    assert res["columns"][0]["base"]["ci95"] is not None
    assert [s["n"] for s in res["funnel"]["svamp"]["steps"]] == [40, 40, 40, 20, 20]
    assert not list(folder.glob("*.safetensors")) and (folder / "accuracy.png").is_file()


def test_a_missed_goal_names_the_funnel_step_that_loses_most(finished_run):
    from toolformer_kit.experiment.report import write_results

    cfg, run = finished_run
    cfg.goal_gain = 60
    res = json.loads((write_results(cfg, run, "x") / "results.json").read_text())
    assert res["verdict"].startswith("Goal not met") and "useful result (40 → 20)" in res["verdict"]


def test_the_forced_arrow_setting_is_reported_beside_the_papers_decoding(finished_run):
    from toolformer_kit.experiment.run import model_runs
    from toolformer_kit.experiment.report import write_results

    cfg, run = finished_run
    names = lambda: [s.name for s in model_runs(cfg, run)[-1][2]]  # noqa: E731 -- the run folders' names
    assert names() == ["k10", "disabled"]  # off by default: the paper's decoding only
    cfg.eval_force_arrow = True
    assert names() == ["k10", "disabled", "k10+arrow"]
    res = json.loads((write_results(cfg, run, "x") / "results.json").read_text())
    assert res["arrow_forced"] == {} and res["tools_setting"] == "k10"  # not evaluated yet: nothing claimed
    _write_eval(run, "svamp", "toolformer", "k10+arrow", [i < 30 for i in range(40)], True)
    folder = write_results(cfg, run, "x")
    res = json.loads((folder / "results.json").read_text())
    assert res["tools_setting"] == "k10" and round(res["headline"][0]["all"]["diff"], 2) == 0.45
    arrow = res["arrow_forced"]
    assert arrow["setting"] == "k10+arrow" and round(arrow["headline"][0]["all"]["diff"], 2) == 0.7
    text = (folder / "report.md").read_text()
    assert text.index("## Verdict") < text.index("'->' forced (k10+arrow") < text.index("## All four columns")
    assert any("'->' forced" in d for d in res["deviations"])


def test_the_dropped_empty_calls_setting_is_reported_beside_and_paired_against_the_papers(finished_run):
    from toolformer_kit.experiment.run import model_runs
    from toolformer_kit.experiment.report import write_results

    cfg, run = finished_run
    cfg.eval_drop_empty = True
    assert [s.name for s in model_runs(cfg, run)[-1][2]] == ["k10", "disabled", "k10+drop"]
    assert "empty_dropped" not in json.loads((write_results(cfg, run, "x") / "results.json").read_text())
    _write_eval(run, "svamp", "toolformer", "k10+drop", [i < 32 for i in range(40)], True)
    folder = write_results(cfg, run, "x")
    res = json.loads((folder / "results.json").read_text())
    dropped = res["empty_dropped"]
    assert dropped["setting"] == "k10+drop" and round(dropped["headline"][0]["all"]["diff"], 2) == 0.75
    against = dropped["against_papers"]  # paired with the paper's decoding (k10: 50 %) on the same 40
    assert against["n"] == 40 and round(against["diff"], 2) == 0.3 and against["diff_ci95"][0] > 0
    assert res["tools_setting"] == "k10" and round(res["headline"][0]["all"]["diff"], 2) == 0.45  # the headline stays
    text = (folder / "report.md").read_text()
    assert text.index("## Verdict") < text.index("empty calls taken out (k10+drop") < text.index("## All four columns")
    assert any("found nothing taken out" in d for d in res["deviations"])


def test_the_one_model_is_set_beside_the_specialists_committed_gains(finished_run, tmp_path):
    from toolformer_kit.experiment.report import write_results

    cfg, run = finished_run
    spec = tmp_path / "results-math"
    spec.mkdir()
    (spec / "results.json").write_text(json.dumps({"settings": {"eval_limit": cfg.eval_limit}, "headline": [
        {"task": "svamp", "all": {"diff": 0.25, "diff_ci95": [0.19, 0.31], "n": 296}}]}))
    cfg.specialists = [str(spec)]
    folder = write_results(cfg, run, "x")
    (row,) = json.loads((folder / "results.json").read_text())["specialists"]
    assert row["task"] == "svamp" and row["difference"] == pytest.approx(20.0)  # this run's +45 against +25
    text = (folder / "report.md").read_text()
    assert "## Against the specialists" in text and "| svamp | +25.0 [+19.0, +31.0] (n 296) | +45.0" in text


def test_without_references_only_the_tool_trained_model_is_trained_and_evaluated(finished_run, monkeypatch):
    from toolformer_kit.experiment.cost import estimate
    from toolformer_kit.experiment.run import model_runs, plan
    from toolformer_kit.experiment.report import write_results

    cfg, run = finished_run
    full = estimate(cfg, bf16=False)
    cfg.references = False
    assert [label for label, _, _ in model_runs(cfg, run)] == ["toolformer"]
    assert "train (+CC)" not in [name for name, _, _ in plan(cfg, run, "x")]
    lean = estimate(cfg, bf16=False)
    assert lean["train (+CC)"] == 0 and lean["evaluate"] < 0.6 * full["evaluate"]
    for label in ("base", "cc"):  # never evaluated: the columns say so instead of failing
        shutil.rmtree(run / "eval" / label)
    res = json.loads((write_results(cfg, run, "x") / "results.json").read_text())
    assert res["columns"][0]["base"] is None and round(res["headline"][0]["all"]["diff"], 2) == 0.45
    assert any("references off" in d for d in res["deviations"])


def test_headline_rows_skip_tasks_that_have_not_run(finished_run):
    cfg, run = finished_run
    rows = headline_rows(run / "eval", ["svamp", "asdiv"], "k10", 200)
    assert [r["task"] for r in rows] == ["svamp"]


def test_the_pipeline_report_opens_with_its_verdict(tmp_path, monkeypatch):
    from toolformer_kit.pipeline import report, run as pipeline

    for name in ("annotation_blocks", "training_blocks", "eval_blocks"):
        monkeypatch.setattr(report, name, lambda *a: [])
    _write_eval(tmp_path, "svamp", "toolformer", "k10", [True, False, True], True)
    _write_eval(tmp_path, "svamp", "toolformer", "disabled", [False, False, True], False)
    cfg = pipeline.PipelineConfig(out=str(tmp_path), tasks=["svamp"], sampler_model="qwen2.5-coder-0.5b")
    md, _ = report.write_report(cfg, tmp_path, tmp_path, {}, tmp_path / "eval", {"annotate": 1.0})
    text = md.read_text()
    assert text.index("## Verdict") < text.index("## Deviations from the paper") < text.index("## Settings")
    assert "| svamp | 3 | 66.7 [" in text


# ---------------------------------------------------------------- resumption
def test_finished_stages_are_skipped_and_changed_settings_are_refused(tmp_path, monkeypatch):
    calls = []

    def fake(name, marker=None):
        def stage(cfg, out, *rest, **kw):
            label = name + ("-cc" if kw.get("plain") else "")
            calls.append(label)
            if marker:
                path = out / (marker.replace("train-tools", "train-cc") if kw.get("plain") else marker)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("{}")
        return stage

    monkeypatch.setattr(R, "check_tasks", lambda cfg: None)
    monkeypatch.setattr(R, "stage_models", fake("models"))
    monkeypatch.setattr(R, "stage_corpus", fake("corpus", "corpus/train.jsonl"))
    monkeypatch.setattr(R, "stage_annotate", fake("annotate", "annotate/manifest.json"))
    monkeypatch.setattr(R, "stage_train", fake("train", "train-tools/train_summary.json"))
    monkeypatch.setattr(R, "stage_probe", fake("probe", "probe.json"))
    monkeypatch.setattr(R, "stage_eval", fake("eval"))
    monkeypatch.setattr(R, "write_results", fake("report"))
    cfg = ExperimentConfig(name="t", out=str(tmp_path / "run"), results=str(tmp_path / "res"), docs=3)
    R.run_experiment(cfg)
    assert calls == ["models", "corpus", "annotate", "train", "train-cc", "probe", "eval", "report"]
    calls.clear()
    R.run_experiment(cfg)
    # evaluation resumes by itself, the probe returns at once once probe.json exists, the report is redone
    assert calls == ["models", "probe", "eval", "report"]
    calls.clear()
    R.run_experiment(ExperimentConfig(name="t", out=cfg.out, results=cfg.results, docs=3, eval_limit=20))
    assert calls == ["models", "probe", "eval", "report"]  # a larger evaluation extends, nothing upstream reruns
    with pytest.raises(ConfigError, match=r"run/corpus was made with other settings \(docs: 3 → 5\)"):
        R.run_experiment(ExperimentConfig(name="t", out=cfg.out, results=cfg.results, docs=5))
    stages = json.loads((tmp_path / "run" / "stages.json").read_text())
    assert set(stages) >= {"corpus", "annotate", "train (tools)", "train (+CC)", "evaluate", "report"}
    made = json.loads((tmp_path / "run" / "experiment.json").read_text())
    assert made["settings"]["eval_limit"] == 20  # the refused run rewrote nothing
    (tmp_path / "run" / "stages.json").write_text('{"corpus": {"sett')  # cut off by a kill
    calls.clear()
    R.run_experiment(ExperimentConfig(name="t", out=cfg.out, results=cfg.results, docs=3, eval_limit=20))
    assert calls == ["models", "probe", "eval", "report"]  # rebuilt from experiment.json: nothing upstream reruns
    (tmp_path / "run" / "stages.json").unlink()
    with pytest.raises(ConfigError, match=r"made with other settings \(docs: 3 → 5\)"):
        R.run_experiment(ExperimentConfig(name="t", out=cfg.out, results=cfg.results, docs=5))
    assert not (tmp_path / "run" / "stages.json").exists()  # the refused run wrote nothing
    (tmp_path / "run" / "experiment.json").unlink()
    with pytest.raises(ConfigError, match="holds files that no experiment wrote"):
        R.run_experiment(ExperimentConfig(name="t", out=cfg.out, results=cfg.results, docs=5))


def test_foreign_out_and_other_evidence_are_refused_before_anything_is_written(tmp_path, monkeypatch):
    monkeypatch.setattr(R, "check_tasks", lambda cfg: None)
    for stage in ("stage_models", "stage_corpus", "stage_annotate", "stage_train", "stage_probe", "stage_eval",
                  "write_results"):
        monkeypatch.setattr(R, stage, lambda *a, **k: pytest.fail("a stage ran"))
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    with pytest.raises(ConfigError, match="holds files that no experiment wrote"):
        R.run_experiment(ExperimentConfig(name="t", out=str(mine), results=str(tmp_path / "res")))
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]
    res = tmp_path / "res"
    res.mkdir()
    (res / "results.json").write_text(json.dumps({"settings": {"name": "t", "docs": 20}}))
    with pytest.raises(ConfigError, match="--replace-results"):
        R.run_experiment(ExperimentConfig(name="t", out=str(tmp_path / "new"), results=str(res), docs=1))
    assert not (tmp_path / "new").exists()


def test_an_unfinished_stage_begun_with_other_settings_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    """issue 29, item 6: a kill left an annotation (or a fine-tuning run) half done; a re-run with
    other settings was refused by the runner (or the trainer) only after experiment.json had been
    rewritten with them, so the folder then claimed settings that made none of it."""
    from toolformer_kit.annotate.runner import semantic_settings
    from toolformer_kit.config import to_dict
    from toolformer_kit.train.trainer import run_identity

    monkeypatch.setattr(R, "check_tasks", lambda cfg: None)
    for stage in ("stage_models", "stage_corpus", "stage_annotate", "stage_train", "stage_probe", "stage_eval",
                  "write_results"):
        monkeypatch.setattr(R, stage, lambda *a, **k: pytest.fail("a stage ran"))
    out = tmp_path / "run"
    cfg = ExperimentConfig(name="t", out=str(out), results=str(tmp_path / "res"), k=3, train_steps=4)
    (out / "corpus").mkdir(parents=True)
    (out / "corpus" / "train.jsonl").write_text('{"id": "a", "text": "2 and 3 is 5."}\n')
    R.Ledger(out).record("corpus", R.stage_settings(cfg, "corpus"), 1.0)
    (out / "experiment.json").write_text(json.dumps({"command": "x", "settings": to_dict(cfg)}))
    (out / "annotate").mkdir()
    (out / "annotate" / "run.json").write_text(json.dumps({"settings": semantic_settings(R.annotate_config(cfg, out))}))
    made = (out / "experiment.json").read_bytes()
    with pytest.raises(ConfigError, match=r"unfinished annotation made with other settings \(k: 3\)"):
        R.run_experiment(ExperimentConfig(name="t", out=cfg.out, results=cfg.results, k=4, train_steps=4))
    assert (out / "experiment.json").read_bytes() == made
    for name in ("manifest.json", "corpus.jsonl", "documents.jsonl"):  # annotation done, training cut short
        (out / "annotate" / name).write_text('{"id": "a", "text": "2 and 3 is [Calculator(2 + 3) -> 5] 5."}\n')
    R.Ledger(out).record("annotate", R.stage_settings(cfg, "annotate"), 1.0)
    tools = R.train_folder(out, plain=False)
    (tools / "checkpoints").mkdir(parents=True)
    (tools / "train_run.json").write_text(json.dumps(run_identity(R.train_config(
        cfg, out, False, R.train_data(cfg, out, False)))))
    with pytest.raises(ConfigError, match=r"train-tools holds checkpoints of an unfinished fine-tuning run with "
                                          r"other eval_steps, max_steps"):
        R.run_experiment(ExperimentConfig(name="t", out=cfg.out, results=cfg.results, k=3, train_steps=8))
    assert (out / "experiment.json").read_bytes() == made


def test_an_empty_c_star_stops_before_training_with_the_fix(tmp_path):
    (tmp_path / "annotate").mkdir()
    (tmp_path / "annotate" / "corpus.jsonl").write_text("")
    with pytest.raises(ConfigError, match=r"annotation kept no call .*\(--docs, now 40\)"):
        R.stage_train(ExperimentConfig(name="t"), tmp_path, plain=False)


def test_search_corpus_leaves_out_what_the_evaluation_asks_about():
    from toolformer_kit.eval.config import default_data_dir
    from toolformer_kit.corpora.sources import asked_about, evaluated_text, wiki_corpus
    from toolformer_kit.annotate.sources import _load_wiki

    answers, questions = evaluated_text(["webquestions"], default_data_dir())
    titles = _load_wiki("en-us")
    out = asked_about(titles, answers, questions)
    assert 100 < len(out) < len(titles) / 2
    docs, dev = wiki_corpus(30, 10, 0, out)
    assert len(docs) == 30 and len(dev) == 10
    assert not {d.meta["title"] for d in docs + dev} & out
    assert not {d.doc_id for d in docs} & {d.doc_id for d in dev}


def test_lama_may_search_only_when_the_recipe_says_so():
    cfg = ExperimentConfig(name="t", tools=["WikiSearch"], tasks=["lama-trex", "nq"], corpus="wiki")
    assert "WikiSearch" in R.eval_tasks(cfg)[0].policy.excluded
    cfg.lama_search = True
    lama, nq = R.eval_tasks(cfg)
    assert "WikiSearch" not in lama.policy.excluded and lama.exercises == "WikiSearch"
    assert nq.policy.excluded == ("QA",)


# ---------------------------------------------------------------- end to end on the real SmolLM2
@pytest.mark.slow
@pytest.mark.real_model
def test_experiment_math_end_to_end_at_a_tiny_size(tmp_path):
    out, res = tmp_path / "run", tmp_path / "results"
    argv = ["math", "--model", "smollm2-135m", "--docs", "1", "--dev-docs", "2", "--k", "2", "--m", "2",
            "--tau-f", "-100", "--train-steps", "1", "--train-batch", "2", "--max-length", "64",
            "--tasks", "svamp", "--eval-limit", "3", "--bootstrap", "50", "--out", str(out), "--results", str(res)]
    assert cmd.main(argv) == 0
    text = (res / "report.md").read_text()
    assert text.splitlines()[2] == "## Pre-registered endpoint" and "\n## Verdict\n" in text  # math.yaml fixes one
    data = json.loads((res / "results.json").read_text())
    assert data["headline"][0]["all"]["n"] == 3 and data["command"].startswith("toolformer experiment math")
    first = json.loads((out / "stages.json").read_text())
    assert cmd.main(argv) == 0  # resumed: nothing upstream is redone
    again = json.loads((out / "stages.json").read_text())
    assert again["annotate"] == first["annotate"] and again["train (tools)"] == first["train (tools)"]


def test_the_maths_corpus_in_prose_drops_written_sums_but_keeps_the_draw_and_every_result():
    from toolformer_kit.corpora.sources import gsm8k_corpus

    written, _ = gsm8k_corpus(12, 0, 0)
    prose, _ = gsm8k_corpus(12, 0, 0, prose=True)
    assert [d.doc_id for d in written] == [d.doc_id for d in prose]
    assert sum(d.text.count("=") for d in prose) < sum(d.text.count("=") for d in written) / 2
    for w, p in zip(written, prose):
        assert "<<" not in p.text and len(p.text) <= len(w.text)
        # every number the prose keeps was in the written solution: results are not invented
        assert set(re.findall(r"\d+", p.text)) <= set(re.findall(r"\d+", w.text))


def test_a_re_run_with_nothing_to_do_keeps_the_stage_times(tmp_path):
    """issue 29, item 15: a no-op re-run used to add its seconds to the evaluation's and the report's."""
    from toolformer_kit.experiment.run import Ledger

    ledger = Ledger(tmp_path)
    ledger.record("evaluate", None, 900.0, "set")
    ledger.record("report", None, 5.0, "keep")  # first run: kept as it is the only one
    ledger.record("evaluate", None, 40.0, "keep")  # re-run, nothing left to answer
    ledger.record("report", None, 6.0, "keep")
    assert ledger.data["evaluate"]["seconds"] == 900.0 and ledger.data["report"]["seconds"] == 5.0
    assert ledger.data["evaluate"]["seconds_last_run"] == 40.0
    ledger.record("evaluate", None, 300.0, "add")  # resumed: answered what a kill left
    assert Ledger(tmp_path).data["evaluate"]["seconds"] == 1200.0


def test_training_choices_are_checked_and_old_ledgers_still_resume(tmp_path):
    """train_keep / train_dev (issue 27, item 1) are refused when misspelt; a stage recorded before
    they existed was made at their defaults, so it resumes rather than being refused."""
    from toolformer_kit.experiment.recipe import ExperimentConfig
    from toolformer_kit.experiment.run import Ledger

    with pytest.raises(ConfigError, match="train_keep must be best or last"):
        ExperimentConfig(name="t", train_keep="newest")
    with pytest.raises(ConfigError, match="train_dev must be corpus or cstar"):
        ExperimentConfig(name="t", train_dev="dev")
    ledger = Ledger(tmp_path)
    ledger.record("train (tools)", {"model": "m", "train_steps": 4}, 1.0)
    assert ledger.check("train (tools)", {"model": "m", "train_steps": 4, "train_keep": "best"}, done=True)
    with pytest.raises(ConfigError, match="train_keep: 'best' → 'last'"):
        ledger.check("train (tools)", {"model": "m", "train_steps": 4, "train_keep": "last"}, done=True)


def test_cstar_all_trains_on_every_annotated_text(tmp_path):
    """issue 27, item 2: the paper's C* holds every text of C, calls inserted where kept."""
    ann = tmp_path / "annotate"
    ann.mkdir()
    (ann / "documents.jsonl").write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in
                                                 (("a", "2 and 3 is 5."), ("b", "Plain text."))))
    (ann / "corpus.jsonl").write_text(json.dumps({"id": "a", "text": "2 and 3 is [Calculator(2 + 3) -> 5] 5."}) + "\n")
    path = R._every_text(tmp_path)
    texts = [json.loads(line)["text"] for line in path.read_text().splitlines()]
    assert texts == ["2 and 3 is [Calculator(2 + 3) -> 5] 5.", "Plain text."]


def test_the_probe_cuts_the_texts_the_trainer_held_out(tmp_path):
    """With train_dev cstar the probe reads the very texts the trainer carved out (same split)."""
    from toolformer_kit.experiment.recipe import ExperimentConfig
    from toolformer_kit.experiment.report import _probe_blocks
    from toolformer_kit.train.config import TrainConfig
    from toolformer_kit.train.data import split_dev

    assert R.PROBE_DEV_DOCS == TrainConfig().dev_docs
    ann = tmp_path / "annotate"
    ann.mkdir()
    texts = [f"Item {i} costs [Calculator({i} + 1) -> {i + 1}] {i + 1}." for i in range(20)]
    (ann / "corpus.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    held, which = R.probe_texts(ExperimentConfig(name="t", train_dev="cstar"), tmp_path)
    assert which == "held-out C* texts" and held == split_dev(texts, TrainConfig().dev_docs, 0.1, 0)[1] and len(held) == 2
    seen, which = R.probe_texts(ExperimentConfig(name="t"), tmp_path)
    assert seen == texts and "seen in training" in which
    text = _probe_blocks({"points": 2, "opened": 1, "open_rate": 0.5, "well_formed": 1, "well_formed_rate": 1.0,
                          "same_tool": 1, "texts": which, "k": 10})[1].text
    assert "opened a call right there on 1 (50 %)" in text and "100 %" in text


def test_a_published_dataset_is_the_run_s_annotation(tmp_path):
    """issue 27: the math run fine-tunes on datasets/cstar-math instead of annotating again."""
    from toolformer_kit.experiment.recipe import ExperimentConfig
    from toolformer_kit.experiment.report import _annotation, _annotation_blocks

    ds = tmp_path / "ds" / "data"
    ds.mkdir(parents=True)
    docs = [{"id": "a", "text": "2 and 3 is 5."}, {"id": "b", "text": "Plain."}]
    cstar = [{"id": "a", "text": "2 and 3 is [Calculator(2 + 3) -> 5] 5.", "calls": [{"tool": "Calculator"}]}]
    (ds / "documents.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (ds / "cstar.jsonl").write_text("".join(json.dumps(d) + "\n" for d in cstar))
    cfg = ExperimentConfig(name="t", cstar_dataset=str(tmp_path / "ds"))
    run = tmp_path / "run"
    R.stage_corpus(cfg, run)
    R.stage_annotate(cfg, run)
    assert [json.loads(line)["id"] for line in (run / "annotate" / "documents.jsonl").read_text().splitlines()] == ["a", "b"]
    assert [json.loads(line)["text"] for line in (run / "annotate" / "corpus.jsonl").read_text().splitlines()] == [cstar[0]["text"]]
    text = _annotation_blocks({"annotation": _annotation(run)})[1].text
    assert "2 annotated texts, 1 with a kept call, 1 calls after merging" in text
    with pytest.raises(ConfigError, match="has no data/cstar.jsonl"):
        R.stage_annotate(ExperimentConfig(name="t", cstar_dataset=str(tmp_path / "nothing")), tmp_path / "run2")


def test_several_published_datasets_are_merged_into_the_run_s_annotation(tmp_path):
    """issue 42, item 2: the one model's recipe names every dataset; the run joins them (one text,
    all its calls) and its manifest states the mix."""
    from toolformer_kit.experiment.recipe import ExperimentConfig

    def dataset(name, rows, docs):
        data = tmp_path / name / "data"
        data.mkdir(parents=True)
        (data / "cstar.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (data / "documents.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
        return str(tmp_path / name)

    text = "2 and 3 is 5 in Paris."
    calc = {"id": "a", "original": text, "text": "2 and 3 is [Calculator(2 + 3) -> 5] 5 in Paris.",
            "calls": [{"tool": "Calculator", "input": "2 + 3", "result": "5", "char_offset": 11, "score": 1.0}]}
    search = {"id": "a", "original": text, "text": "2 and 3 is 5 in [WikiSearch(Paris) -> a city] Paris.",
              "calls": [{"tool": "WikiSearch", "input": "Paris", "result": "a city", "char_offset": 16, "score": 1.0}]}
    a = dataset("math", [calc], [{"id": "a", "text": text}, {"id": "b", "text": "Plain."}])
    b = dataset("search", [search], [{"id": "a", "text": text}])
    run = tmp_path / "run"
    cfg = ExperimentConfig(name="t", cstar_dataset=f"{a},{b}")
    R.stage_corpus(cfg, run)
    R.stage_annotate(cfg, run)
    [row] = [json.loads(line) for line in (run / "annotate" / "corpus.jsonl").read_text().splitlines()]
    assert row["text"] == "2 and 3 is [Calculator(2 + 3) -> 5] 5 in [WikiSearch(Paris) -> a city] Paris."
    assert len((run / "annotate" / "documents.jsonl").read_text().splitlines()) == 2  # the same window once
    manifest = json.loads((run / "annotate" / "manifest.json").read_text())
    assert manifest["calls"] == 2 and manifest["mix"]["calls_by_tool"] == {"Calculator": 1, "WikiSearch": 1}
    assert set(manifest["datasets"]) == {a, b}
    with pytest.raises(ConfigError, match="nothing has no data/cstar.jsonl"):
        R.stage_annotate(ExperimentConfig(name="t", cstar_dataset=f"{a},{tmp_path / 'nothing'}"), tmp_path / "run2")


@pytest.mark.parametrize("recipe", sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "configs" / "experiments").glob("*.yaml")))
def test_every_committed_recipe_loads(recipe):
    """A recipe's typo (a key, a task, an endpoint line) is found here, not hours into its run."""
    from toolformer_kit.experiment.recipe import eval_tasks, load_recipe

    cfg = load_recipe(recipe)
    assert cfg.name == recipe and eval_tasks(cfg)


def test_the_one_model_recipe_pre_registers_the_issue_s_endpoints():
    """issue 42, item 7: every family's endpoint is in configs/experiments/all.yaml."""
    from toolformer_kit.experiment.recipe import load_recipe
    from toolformer_kit.measures.endpoints import parse_endpoint

    cfg = load_recipe("all")
    got = {e.name: (e.measure, e.op, e.value) for e in map(parse_endpoint, cfg.endpoints)}
    assert got["math"] == ("gain", ">=", 20) and got["search"] == ("gain@retrievable", ">=", 8)
    assert got["dates"] == ("gain", ">=", 10) and got["mlqa"] == ("gain", ">", 0)
    assert got["math tool"][2] == got["dates tool"][2] == 80 and got["perplexity"] == ("ppl_ratio", "<=", 1.05)
    assert len(cfg.cstar_dataset.split(",")) == 4 and cfg.tools == ["Calculator", "Calendar", "WikiSearch", "QA", "MT"]


def test_the_one_model_report_says_which_tool_it_called_where_and_sets_the_paper_beside_it(finished_run):
    """issue 42, item 5: with which_tool on, the report has the task x tool table and the paper's
    GPT-J numbers beside ours; off (every earlier recipe), results.json holds neither key."""
    from toolformer_kit.experiment.report import write_results

    cfg, run = finished_run
    res = json.loads((write_results(cfg, run, "x") / "results.json").read_text())
    assert "which_tool" not in res and "beside_paper" not in res
    cfg.which_tool, cfg.tools = True, ["Calculator", "QA"]
    folder = write_results(cfg, run, "x")
    res = json.loads((folder / "results.json").read_text())
    [row] = res["which_tool"]
    assert row["task"] == "svamp" and row["called"]["Calculator"] == 1.0 and row["right_tool_rate"] == 1.0
    assert res["beside_paper"][0]["ours"] == {"base": 2.5, "cc": 5.0, "disabled": 5.0, "tools": 50.0}
    assert res["beside_paper"][0]["ours_higher"] == ["tools"]  # 50.0 against the paper's 29.4
    text = (folder / "report.md").read_text()
    assert "## Which tool, where" in text and "## Beside the paper (GPT-J 6.7B)" in text and "**50** / 29.4" in text
