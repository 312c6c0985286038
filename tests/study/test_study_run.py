"""`toolformer study`: configs and flags, the plan of each study and its resumption, the report on
synthetic eval records, and a tiny τf / λ study end to end on the fake character-level LM.

The experiment's stages load real models by name (annotation, LoRA training and evaluation take no
injected LM), so the end-to-end study runs the real annotation Runner on the fake LM, the real
study driver, re-filter and report, and replaces only model loading: training (``run_training``)
and evaluation (``stage_eval``) write what they would, derived from each value's C*.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolformer_kit.commands import study as cmd
from toolformer_kit.config import ConfigError
from toolformer_kit.study import layout as L
from toolformer_kit.study import report as RS
from toolformer_kit.experiment import run as X
from toolformer_kit.study import run as S
from toolformer_kit.experiment.run import Ledger
from toolformer_kit.pipeline import stages as stage_runner

from annotate.fakes import FakeEngine, FakeLM, calculator_tool
from annotate.test_runner import TEXTS

MACHINE = {"cpu": "test cpu", "cores": 2, "torch_threads": 2, "torch": "2.13.0", "fp32_matmul_gflops": 150.0,
           "roofline_note": "test"}


@pytest.fixture(autouse=True)
def no_roofline(monkeypatch):
    from toolformer_kit.measures import results

    monkeypatch.setattr(results, "machine", lambda: MACHINE)


@pytest.fixture(autouse=True)
def fp32_estimates(monkeypatch):
    """Estimates as on a CPU without hardware bf16, whatever CPU runs the tests."""
    from toolformer_kit.experiment import cost

    monkeypatch.setattr(cost, "bf16_pays", lambda: False)


# ---------------------------------------------------------------- configs and the command line
def test_each_study_loads_and_every_field_is_a_flag_and_a_yaml_key(tmp_path):
    scale, tau, cost = (S.load_study(n) for n in S.STUDIES)
    assert scale.recipes == ["math", "search"] and len(scale.models) == 3 and scale.out == "runs/study-scale"
    assert tau.values == [0.0, 0.5, 1.0, 2.0] and tau.results == "results/study-tau"
    assert cost.values == [0.0, 0.5, 1.0, 2.0] and cost.recipes == ["search"]
    yaml = tmp_path / "tau.yaml"
    yaml.write_text("recipes: [math]\ntau_f_values: [1, 0]\neval_limit: 9\n")
    t = S.load_study("tau", {"docs": 4}, folder=tmp_path)
    assert (t.recipes, t.values, t.eval_limit, t.docs) == (["math"], [0.0, 1.0], 9, 4)
    cfg = L.recipe_config(t, "math", tmp_path / "r")
    assert (cfg.docs, cfg.eval_limit, cfg.out, cfg.results) == (4, 9, str(tmp_path / "r"), str(tmp_path / "r/results"))


def test_the_cli_parses_flags_over_the_yaml(monkeypatch):
    import argparse

    from toolformer_kit.config import typed_flags
    from toolformer_kit.study.run import StudyConfig

    parser = argparse.ArgumentParser()
    cmd.add_arguments(parser)
    args = parser.parse_args(["cost", "--call-costs", "0,0.25", "--from-run", "runs/search", "--eval-limit", "7",
                              "--per-recipe", "search.docs=3"])
    assert args.name == "cost" and typed_flags(StudyConfig, args) == {"from_run": "runs/search", "call_costs": [0.0, 0.25],
                                                        "eval_limit": 7, "per_recipe": ["search.docs=3"]}
    from toolformer_kit.config import command_line

    assert command_line(["toolformer", "study", "cost"], typed_flags(StudyConfig, args)) == (
        "toolformer study cost --call-costs 0.0,0.25 --from-run runs/search --eval-limit 7 --per-recipe search.docs=3")
    from toolformer_kit.commands.cli import build_parser

    assert build_parser().parse_args(["study", "tau", "--estimate"]).name == "tau"
    assert parser.parse_args(["tau", "--from", "runs/search"]).from_run == "runs/search"


def test_a_per_recipe_flag_extends_the_studys_own_and_wins_where_they_overlap():
    study = S.load_study("scale", {"per_recipe": ["search.eval_limit=200"]})
    search = L.recipe_config(study, "search", Path("x"), "smollm2-135m")
    assert search.eval_limit == 200 and search.docs == 30 and search.references is False  # the YAML's stay


def test_bad_input_is_one_line_naming_the_fix(capsys):
    assert cmd.main(["taus", "--estimate"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: unknown study 'taus' (did you mean 'tau'?); available: scale, tau, cost"
    with pytest.raises(ConfigError, match="scale annotates with every model"):
        S.load_study("scale", {"from_run": "runs/search"})
    with pytest.raises(ConfigError, match="name that one recipe"):
        S.load_study("tau", {"from_run": "runs/search", "recipes": ["math", "search"]})
    with pytest.raises(ConfigError, match="call_costs must be >= 0"):
        S.load_study("cost", {"call_costs": [-1]})
    with pytest.raises(ConfigError, match="names 'maths', which is no recipe"):
        L.per_recipe(S.load_study("tau", {"per_recipe": ["maths.docs=3"]}), "search")
    with pytest.raises(ConfigError, match=r"--per-recipe 'search.docz=3': 'docz' is no recipe setting \(did you mean 'docs'\?\)"):
        L.recipe_config(S.load_study("tau", {"per_recipe": ["search.docz=3"]}), "search", Path("x"))


def test_estimate_prints_each_step_then_the_total(capsys):
    assert cmd.main(["tau", "--estimate"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [ln.split("  ")[0].strip() for ln in lines]
    assert names[:5] == ["search: models", "search: corpus", "search: annotate", "search: train (+CC)",
                         "search: evaluate base, +CC"]
    assert sum("re-filter" in n for n in names) == 4 and names[-1] == "total" and "h" in lines[-1]
    assert cmd.main(["scale", "--estimate"]) == 0
    out = capsys.readouterr().out
    assert out.index("math / smollm2-135m") < out.index("math / gemma3-270m") < out.index("math / qwen2.5-coder-0.5b")
    assert "annotate" in out and "evaluate" in out


def test_the_default_sizes_fit_three_hours_here():
    from toolformer_kit.experiment.cost import estimate

    for name in S.STUDIES:
        study = S.load_study(name)
        steps = S.plan(study)
        assert sum(s.seconds for s in steps) <= 3 * 3600, name
    assert estimate(L.recipe_config(S.load_study("scale"), "math", Path("x"), "gemma3-270m"))["annotate"] > 0


# ---------------------------------------------------------------- planning and resumption
def _fake_stages(monkeypatch, calls: list):
    """Stages that only record themselves and write their completion markers."""

    def mark(path: Path, text: str = "{}"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    monkeypatch.setattr(X, "stage_models", lambda cfg, out: calls.append("models"))
    monkeypatch.setattr(X, "stage_corpus", lambda cfg, out: (calls.append("corpus"),
                                                             mark(out / "corpus/train.jsonl"),
                                                             mark(out / "corpus/dev.jsonl", "")))
    monkeypatch.setattr(X, "stage_annotate", lambda cfg, out: (calls.append("annotate"),
                                                               mark(out / "annotate/manifest.json")))

    def train(cfg, out, plain):
        calls.append(f"train-{'cc' if plain else out.name}")
        mark(out / ("train-cc" if plain else "train-tools") / "train_summary.json")

    def evaluate(cfg, out, runs=None):
        where = "" if out.name == "search" else "@" + out.name
        calls.append("eval-" + ",".join(label for label, _, _ in runs) + where)

    monkeypatch.setattr(X, "stage_train", train)
    monkeypatch.setattr(X, "stage_eval", evaluate)
    monkeypatch.setattr(S, "refilter_value", lambda base, v, tau, lam: (calls.append(f"refilter-{v.name}"),
                                                                       mark(v / "annotate/refilter.json"),
                                                                       mark(v / "annotate/corpus.jsonl", "x")))
    monkeypatch.setattr(RS, "write_study", lambda study, command, latency=None: calls.append("report"))


def test_a_sweep_annotates_once_trains_references_once_and_resumes(tmp_path, monkeypatch):
    calls: list = []
    _fake_stages(monkeypatch, calls)
    study = S.load_study("tau", {"out": str(tmp_path / "run"), "results": str(tmp_path / "res"),
                                 "tau_f_values": [1.0, 0.0]})
    S.run_study(study)
    assert calls == ["models", "corpus", "annotate", "train-cc", "eval-base,cc",
                     "refilter-tau-0", "train-tau-0", "eval-toolformer@tau-0",
                     "refilter-tau-1", "train-tau-1", "eval-toolformer@tau-1", "report"]
    calls.clear()
    S.run_study(study)
    assert calls == ["models", "eval-base,cc", "eval-toolformer@tau-0", "eval-toolformer@tau-1", "report"]
    calls.clear()
    more = S.load_study("tau", {"out": study.out, "results": study.results, "tau_f_values": [0.0, 1.0, 2.0]})
    assert S.pending(S.plan(more), Ledger(Path(study.out))) == [
        "search: models", "search: evaluate base, +CC", "search τf 0: evaluate", "search τf 1: evaluate",
        "search τf 2: re-filter", "search τf 2: train", "search τf 2: evaluate", "report"]
    S.run_study(more)
    assert "train-tau-2" in calls and "train-tau-0" not in calls and "annotate" not in calls
    calls.clear()
    with pytest.raises(ConfigError, match="--tasks: .*nope"):
        S.run_study(S.load_study("tau", {"out": str(tmp_path / "other"), "tasks": ["nope"]}))
    assert calls == []  # refused before any stage ran
    changed = S.load_study("tau", {"out": study.out, "results": study.results, "train_steps": 3})
    before = (Path(study.out) / "study.json").read_text()
    with pytest.raises(ConfigError, match=r"was made with other settings \(train_steps: 40 → 3\)"):
        S.run_study(changed)
    assert calls == [] and (Path(study.out) / "study.json").read_text() == before  # refused before writing
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "study.txt").write_text("mine")
    with pytest.raises(ConfigError, match="holds files that no study wrote"):
        S.run_study(S.load_study("tau", {"out": str(foreign), "results": str(tmp_path / "r2")}))
    assert [p.name for p in foreign.iterdir()] == ["study.txt"]


def test_a_cost_sweep_keeps_tau_f_and_prices_each_call(tmp_path, monkeypatch):
    study = S.load_study("cost", {"out": str(tmp_path / "run"), "tau_f": 0.5, "call_costs": [0, 1]})
    steps = {s.name: s for s in S.plan(study)}
    assert steps["search λ 1: re-filter"].settings["tau_f"] == {"WikiSearch": 0.5}
    assert steps["search λ 1: re-filter"].settings["call_cost"] == {"WikiSearch": 1.0}
    names = [s.name for s in S.plan(study)]
    assert names[-2:] == ["search: tool latency", "report"]  # measured once after every value's evaluation
    default = S.load_study("cost", {"out": str(tmp_path / "run2")})
    assert {s.name: s for s in S.plan(default)}["search λ 2: re-filter"].settings["tau_f"] == {"WikiSearch": 1.0}


def test_scale_runs_each_recipe_per_model_and_skips_finished_ones(tmp_path, monkeypatch):
    ran = []

    def fake_experiment(cfg, command=""):
        ran.append((Path(cfg.out).name, cfg.model, cfg.sampler_model, cfg.docs))
        (Path(cfg.out)).mkdir(parents=True, exist_ok=True)
        (Path(cfg.out) / "report.md").write_text("done")

    monkeypatch.setattr(X, "run_experiment", fake_experiment)
    monkeypatch.setattr(RS, "write_study", lambda study, command, latency=None: ran.append("report"))
    study = S.load_study("scale", {"out": str(tmp_path / "run"), "models": ["qwen2.5-coder-0.5b", "smollm2-135m"]})
    S.run_study(study)
    assert ran == [("math-smollm2-135m", "smollm2-135m", "", 6), ("search-smollm2-135m", "smollm2-135m", "", 30),
                   ("math-qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b", "", 6),
                   ("search-qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b", "", 30), "report"]
    ran.clear()
    S.run_study(study)
    assert ran == ["report"]
    S.run_study(S.load_study("scale", {"out": study.out, "models": study.models, "eval_limit": 60}))
    assert len(ran) == 6  # a larger evaluation re-enters every recipe run, which extends itself


def test_from_run_reuses_an_annotation_read_only_and_refuses_a_clash(tmp_path, monkeypatch):
    src = tmp_path / "runs" / "search"
    (src / "annotate").mkdir(parents=True)
    (src / "corpus").mkdir()
    (src / "annotate" / "manifest.json").write_text("{}")
    made = X.to_dict(L.recipe_config(S.load_study("tau"), "search", src)) | {"docs": 12}
    (src / "experiment.json").write_text(json.dumps({"settings": made}))
    calls: list = []
    _fake_stages(monkeypatch, calls)
    study = S.load_study("tau", {"out": str(tmp_path / "study"), "from_run": str(src), "tau_f_values": [1]})
    names = [s.name for s in S.plan(study)]
    assert "search: annotate" not in names and f"search: reuse {src}" in names
    S.run_study(study)
    assert "annotate" not in calls and (tmp_path / "study/search/annotate").resolve() == (src / "annotate").resolve()
    assert L.reused_config(study, "search", tmp_path / "x").docs == 12  # the source's, not the recipe's
    with pytest.raises(ConfigError, match="annotated with docs 12; drop those settings"):
        S.plan(S.load_study("tau", {"out": str(tmp_path / "s2"), "from_run": str(src), "docs": 50}))
    with pytest.raises(ConfigError, match="is not a finished experiment run"):
        S.plan(S.load_study("tau", {"out": str(tmp_path / "s3"), "from_run": str(tmp_path / "nothing")}))


# ---------------------------------------------------------------- the report on synthetic records
def _records(folder: Path, label: str, setting: str, task: str, correct: list[bool], called: bool):
    d = folder / "eval" / label / setting / task
    d.mkdir(parents=True, exist_ok=True)
    rows = [{"id": str(i), "correct": c, "called": called,
             "calls": [{"tool": "Calculator", "input": f"{i} + 1", "reason": ""}] if called else []}
            for i, c in enumerate(correct)]
    (d / "examples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_scale_report_states_emergence_from_the_numbers_beside_the_paper(tmp_path):
    study = S.load_study("scale", {"out": str(tmp_path / "run"), "results": str(tmp_path / "res"),
                                   "recipes": ["math"], "tasks": ["svamp", "asdiv"], "bootstrap": 300})
    gains = {"smollm2-135m": 0, "gemma3-270m": 2, "qwen2.5-coder-0.5b": 30}  # correct answers gained of 60
    for model, gain in gains.items():
        for task in ("svamp", "asdiv"):
            sub = tmp_path / "run" / f"math-{model}"
            _records(sub, "toolformer", "k10", task, [i < 10 + gain for i in range(60)], True)
            _records(sub, "toolformer", "disabled", task, [i < 10 for i in range(60)], False)
    qwen_results = tmp_path / "run" / "math-qwen2.5-coder-0.5b" / "results"
    qwen_results.mkdir()
    (qwen_results / "results.json").write_text(json.dumps({"annotation": {"c_star_calls": 12, "c_star_texts": 7}}))
    folder = RS.write_study(study, "toolformer study scale")
    text = (folder / "report.md").read_text()
    res = json.loads((folder / "results.json").read_text())
    assert "| math | qwen2.5-coder-0.5b | 630M | 12 / 7 | 120 |" in text and "| 135M | – |" in text
    assert text.startswith("# Study: scale") and text.index("## Finding") < text.index("## Ours")
    assert res["findings"] == ["math: tools help from 630M on (paired interval above 0); the paper saw the gap "
                               "open at ~775M — here earlier."]
    qwen = next(r for r in res["rows"] if r["model"] == "qwen2.5-coder-0.5b")
    assert qwen["params"] == 630e6 and round(qwen["diff"], 2) == 0.5 and qwen["diff_ci95"][0] > 0.3
    assert qwen["n"] == 120 and qwen["tools"]["ci95"][0] < 0.67 < qwen["tools"]["ci95"][1]
    assert "| GPT-2 775M | 7 / 5 | 12 / 8 | 9 / 7 |" in text and "| GPT-J 6.7B | 33 / 21 | 31 / 26 | 38 / 15 |" in text
    assert (folder / "scaling.png").stat().st_size > 1000
    for key in ("command", "seed", "commit", "machine", "interval", "paper"):
        assert key in res


def test_the_scale_report_sets_the_forced_arrow_decoding_beside_the_papers(tmp_path):
    study = S.load_study("scale", {"out": str(tmp_path / "run"), "results": str(tmp_path / "res"),
                                   "recipes": ["math"], "tasks": ["svamp"], "bootstrap": 300,
                                   "models": ["smollm2-135m", "qwen2.5-coder-0.5b"]})
    for model, forced_gain in (("smollm2-135m", 0), ("qwen2.5-coder-0.5b", 30)):
        sub = tmp_path / "run" / f"math-{model}"
        _records(sub, "toolformer", "k10", "svamp", [i < 10 for i in range(60)], True)
        _records(sub, "toolformer", "disabled", "svamp", [i < 10 for i in range(60)], False)
        if model != "smollm2-135m":  # a model evaluated without the forced setting has no forced row
            _records(sub, "toolformer", "k10+arrow", "svamp", [i < 10 + forced_gain for i in range(60)], True)
    res = json.loads((RS.write_study(study, "x") / "results.json").read_text())
    assert [r["setting"] for r in res["rows"]] == ["k10", "k10"]
    assert [(r["model"], r["setting"]) for r in res["forced_rows"]] == [("qwen2.5-coder-0.5b", "k10+arrow")]
    assert round(res["forced_rows"][0]["diff"], 2) == 0.5
    assert res["findings"][0].startswith("math: tools help at none of the sizes here")
    assert res["findings"][1].startswith("With '->' forced (a deviation): math: tools help from 630M on")
    text = (tmp_path / "res" / "report.md").read_text()
    assert text.index("## Ours") < text.index("## The same models with '->' forced") < text.index("## The paper's")


def test_a_sweep_report_gives_latency_saved_from_calls_that_ran(tmp_path, monkeypatch):
    from toolformer_kit.study.latency import store_latency

    study = S.load_study("cost", {"out": str(tmp_path / "run"), "results": str(tmp_path / "res"),
                                  "recipes": ["math"], "tasks": ["svamp"], "call_costs": [0, 1], "bootstrap": 200})
    base = tmp_path / "run" / "math"
    _records(base, "base", "disabled", "svamp", [i < 3 for i in range(20)], False)
    _records(base, "cc", "disabled", "svamp", [i < 4 for i in range(20)], False)
    for value, called in ((0, 20), (1, 5)):
        v = base / f"cost-{value:g}"
        (v / "annotate").mkdir(parents=True)
        (v / "annotate" / "refilter.json").write_text(json.dumps({"c_star_texts": 9 - 5 * value,
                                                                  "c_star_calls": 12 - 6 * value}))
        d = v / "eval" / "toolformer" / "k10" / "svamp"
        d.mkdir(parents=True)
        rows = [{"id": str(i), "correct": i < 8, "called": i < called, "seconds": 0.1 + 0.2 * (i < called),
                 "calls": [{"tool": "Calculator", "input": f"{i} * 2", "reason": ""}] if i < called else []}
                for i in range(20)]
        d.joinpath("examples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        _records(v, "toolformer", "disabled", "svamp", [i < 4 for i in range(20)], False)
    (base / "annotate").mkdir()
    (base / "annotate" / "candidates.jsonl").write_text("".join(json.dumps(c) + "\n" for c in (
        {"tool": "Calculator", "input": "3 * 4", "result": "12"}, {"tool": "Calculator", "input": None, "result": None},
        {"tool": "Calculator", "input": "1 / 0", "result": None})))  # unparsable and failed: nothing to time
    seen = {}

    def latency(tool, inputs, n):
        seen.update(tool=tool, inputs=len(inputs), last=inputs[-1])
        return {"tool": tool, "calls": len(inputs), "mean_seconds": 0.5, "how": "test"}

    ((_, base_, cfg),) = L.sweep_configs(study)
    assert json.loads((RS.write_study(study, "x") / "results.json").read_text())["recipes"]["math"]["latency"][
        "mean_seconds"] is None  # not measured yet: the report says so and measures nothing
    store_latency(study, base_, cfg, latency)  # the study's step, stored in the run folder
    res = json.loads((RS.write_study(study, "x") / "results.json").read_text())
    entry = res["recipes"]["math"]
    assert seen == {"tool": "Calculator", "inputs": 20 + 5 + 1, "last": "3 * 4"}  # eval calls, then candidates
    assert [p["calls_ran"] for p in entry["points"]] == [20, 5]
    assert [round(p["decode_seconds"]["tools"], 2) for p in entry["points"]] == [6.0, 3.0]
    assert entry["points"][1]["latency_saved_s"] == 7.5 and entry["points"][1]["call_rate"] == 0.25
    assert entry["reference"]["cc"]["math"]["tools"]["accuracy"] == 0.2
    text = (Path(study.results) / "report.md").read_text()
    assert "+7.50 s of tool time saved" in text and "| 1 | 4 | 6 | math | 20 |" in text
    assert "Answering with tools took +6.00 s at λ 0, +3.00 s at λ 1 against calls disabled" in text
    assert (Path(study.results) / "cost-math.png").is_file()
    seen.clear()
    RS.write_study(study, "x")  # a re-render reads the stored latency: same report, no call re-run
    assert seen == {} and (Path(study.results) / "report.md").read_text() == text


# ---------------------------------------------------------------- a tiny study end to end on the fake LM
def test_a_tau_study_end_to_end_on_the_fake_lm(tmp_path, monkeypatch):
    """Real: the annotation Runner (fake LM), the study driver and ledger, re-filter, stage_train's
    checks, the report. Faked: model loading in training and evaluation."""
    from toolformer_kit.annotate.config import AnnotateConfig
    from toolformer_kit.annotate.execute import Executor
    from toolformer_kit.annotate.runner import Runner

    def corpus(cfg, out):
        (out / "corpus").mkdir(parents=True, exist_ok=True)
        (out / "corpus" / "train.jsonl").write_text("".join(json.dumps({"id": f"t{i}", "text": t}) + "\n"
                                                            for i, t in enumerate(TEXTS)))
        (out / "corpus" / "dev.jsonl").write_text(json.dumps({"id": "dev", "text": "2 and 2"}) + "\n")

    def annotate(cfg, out):
        Runner(AnnotateConfig(corpus=str(out / "corpus/train.jsonl"), out=str(out / "annotate"), tools=cfg.tools,
                              k=2, m=4, tau_f=0.0, shard_size=2, progress=False, seed=cfg.seed),
               lm=FakeLM(), tools=[calculator_tool()], executor=Executor(engine_factory=FakeEngine)).run()

    def run_training(tc):
        calls = sum(len(json.loads(ln).get("calls", [])) for ln in Path(tc.data).read_text().splitlines())
        Path(tc.out).mkdir(parents=True, exist_ok=True)
        Path(tc.out, "train_summary.json").write_text(json.dumps({"best_step": 1, "calls_seen": calls}))

    def evaluate(cfg, out, runs=None):
        for label, model, settings in runs:
            summary = Path(model, "train_summary.json")
            calls = json.loads(summary.read_text())["calls_seen"] if label == "toolformer" else 0
            for setting in settings:  # typed settings (eval/setting.py), written under their folder names
                on = not setting.disabled
                _records(out, label, setting.name, "svamp", [i < 5 + (calls if on else 0) for i in range(30)], on)

    monkeypatch.setattr(X, "stage_models", lambda cfg, out: None)
    monkeypatch.setattr(X, "stage_corpus", corpus)
    monkeypatch.setattr(X, "stage_annotate", annotate)
    monkeypatch.setattr(stage_runner, "run_training", run_training)
    monkeypatch.setattr(X, "stage_eval", evaluate)
    study = S.load_study("tau", {"out": str(tmp_path / "run"), "results": str(tmp_path / "res"), "recipes": ["math"],
                                 "tasks": ["svamp"], "tau_f_values": [0, 0.5, 50], "bootstrap": 200})
    folder = S.run_study(study, "toolformer study tau --recipes math")
    res = json.loads((folder / "results.json").read_text())
    points = res["recipes"]["math"]["points"]
    sizes = [p["c_star_calls"] for p in points]
    assert sizes[0] >= sizes[1] > sizes[2] == 0  # a higher τf keeps fewer calls; τf 50 keeps none
    assert points[2]["families"] == {} and (tmp_path / "run/math/tau-50/train-tools/empty.json").is_file()
    acc = [p["families"]["math"]["tools"]["accuracy"] for p in points[:2]]
    assert acc[0] >= acc[1] and points[0]["families"]["math"]["call_rate"] == 1.0
    text = (folder / "report.md").read_text()
    assert text.index("## Finding") < text.index("## math") and "toolformer study tau --recipes math" in text
    assert (folder / "tau-math.png").is_file()
    stages = json.loads((tmp_path / "run/stages.json").read_text())
    assert stages["math τf 0.5: re-filter"]["settings"]["tau_f"] == {"Calculator": 0.5}
    # the annotation's candidates are the re-filter's only input: τf 0.5 from it equals annotating at 0.5
    cands = [json.loads(ln) for ln in (tmp_path / "run/math/annotate/candidates.jsonl").read_text().splitlines()]
    assert points[1]["candidates"]["Calculator"]["kept"] == sum(c["score"] is not None and c["score"] >= 0.5
                                                                for c in cands)
