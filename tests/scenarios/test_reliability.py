"""Issue 18: nothing a user types or feeds in loses data or ends in a traceback.

One row per hostile input: the command, the expected exit code, a fragment of the one error line,
and a check on disk that nothing was written and nothing lost (every file's bytes before == after).
Rows that reach the model (the corpus decode checks) load the embedded SmolLM2 and are marked.

Issue 29's cases that are sequences rather than one command (kill, cut, copy, then re-run) are
tested beside their module, each against the bytes or summary of an uninterrupted run:
5 (a cut last evaluation record) tests/eval/test_harness.py::test_resume_skips_done_examples*;
8 (a run folder copied or spelled relative) tests/eval/test_eval_out.py::test_a_model_is_the_same*,
tests/annotate/test_runner.py::test_a_run_resumes_whatever_the_spelling_of_its_corpus_path and
tests/scenarios/test_sigkill_experiment.py::test_a_copied_run_with_cut_files_resumes_to_the_same_outputs;
9 (resume under other settings) tests/train/test_train_run.py::test_a_checkpoint_is_resumed_only_by_the_run_that_made_it;
10 (one step trains; determinism; resume == uninterrupted) tests/train/test_train_run.py and
benchmarks/campaign_sigkill_experiment.py (kill -9 at 20 points over the experiment's stages).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket

import pytest

from toolformer_kit.commands.cli import main

DOCS = [{"id": f"d{i}", "text": f"Doc {i}: 12 plus 30 is 42, item {i}."} for i in range(6)]


def snapshot(root) -> dict:
    """Every file under ``root`` with its bytes' hash, and every folder."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root)] = "dir"
        for f in filenames:
            p = os.path.join(dirpath, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def setup(tmp):
    """The folders and files the rows point at."""
    d = tmp / "d"
    d.mkdir()
    (d / "corpus.jsonl").write_text("".join(json.dumps(x) + "\n" for x in DOCS))
    foreign = tmp / "foreign"
    foreign.mkdir()
    (foreign / "corpus.jsonl").write_text('{"text": "a file the user made"}\n')
    (tmp / "latin1.jsonl").write_bytes(b'{"text": "caf\xe9 costs 3 plus 4 euros"}\n')
    (tmp / "random.txt").write_bytes(bytes(range(256)) * 4)
    (tmp / "afile").write_text("not a folder")
    for name, text in {"k37.yaml": "k: 3.7\n", "ktrue.yaml": "k: true\n", "nan.yaml": "tau_f: .nan\n",
                       "shard0.yaml": "shard_size: 0\n", "kabc.yaml": 'k: "abc"\n', "maxlen.yaml": 'max_length: "x"\n',
                       "limit.yaml": 'limit: "ten"\n'}.items():
        (tmp / name).write_text(text)
    return {"d": d, "c": d / "corpus.jsonl", "foreign": foreign, "o": tmp / "out", "tmp": tmp} | setup_29(tmp)


TINY_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 64, "hidden_size": 8,
               "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1}


def setup_29(tmp) -> dict:
    """Issue 29's inputs: a model folder (no training run wrote it), a report no evaluation wrote,
    evidence from another configuration, experiment folders a kill or an edit left, an empty
    benchmark file, tool files that run code."""
    model = tmp / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(TINY_CONFIG))
    (model / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")  # weights: not read
    cut = tmp / "cut-model"
    cut.mkdir()
    (cut / "config.json").write_text(json.dumps(TINY_CONFIG))
    (cut / "model.safetensors").write_bytes(b"\xff\x00\x00\x00\x00\x00\x00\x00{\"a\": {\"dtype\"")  # cut short
    report = tmp / "report"
    report.mkdir()
    (report / "summary.json").write_text('{"my": "numbers"}')
    (report / "table.md").write_text("| my | table |\n")
    evidence = tmp / "evidence"
    evidence.mkdir()
    (evidence / "results.json").write_text(json.dumps({"settings": {"name": "math", "docs": 20}}))
    bench = tmp / "bench" / "math"
    bench.mkdir(parents=True)
    (bench / "SVAMP.json").write_text("[]")
    (tmp / "evil.py").write_text(f"open({str(tmp / 'ran')!r}, 'w').write('x')\n")
    (tmp / "shell.yaml").write_text("tools:\n  - function: subprocess:getoutput\n    name: Sh\n"
                                    "    demonstrations: ['a [Sh(ls)] b', 'c [Sh(pwd)] d', 'e [Sh(id)] f']\n")
    inspected = tmp / "inspected"
    inspected.mkdir()
    (inspected / "candidates.jsonl").write_text("")
    (inspected / "summary.json").write_text('{"tools": {')
    return {"m": model, "cut": cut, "report": report, "evidence": evidence, "bench": tmp / "bench",
            "run6": experiment_run(tmp / "run6", docs=3), "run6b": experiment_run(tmp / "run6b", docs=3, ledger=False),
            "run7": experiment_run(tmp / "run7", trained="cut summary"),
            "run7b": experiment_run(tmp / "run7b", trained="cut weights")}


def experiment_run(out, docs: int = 20, ledger: bool = True, trained: str = ""):
    """A folder ``toolformer experiment math`` left: the corpus made (``docs``) and, with
    ``trained``, the dataset annotation and the tool-trained model too, damaged as it says."""
    from toolformer_kit.config import to_dict
    from toolformer_kit.experiment import run as R
    from toolformer_kit.experiment.recipe import load_recipe

    cfg = load_recipe("math", {"docs": docs, "out": str(out)})
    (out / "corpus").mkdir(parents=True)
    (out / "corpus" / "train.jsonl").write_text('{"id": "a", "text": "2 and 3 is 5."}\n')
    (out / "experiment.json").write_text(json.dumps({"command": "toolformer experiment math", "settings": to_dict(cfg)}))
    stages = {"corpus": {"settings": R.stage_settings(cfg, "corpus"), "seconds": 1.0}}
    if trained:
        (out / "annotate").mkdir()
        (out / "annotate" / "manifest.json").write_text('{"from_dataset": "datasets/cstar-math"}')
        (out / "train-tools").mkdir()
        summary = '{"best_step": 4}'
        (out / "train-tools" / "train_summary.json").write_text(summary[:-3] if trained == "cut summary" else summary)
        (out / "train-tools" / "config.json").write_text(json.dumps(TINY_CONFIG))
        (out / "train-tools" / "model.safetensors").write_bytes(b"\xff\x00\x00\x00\x00\x00\x00\x00{")
        stages |= {"annotate": {"settings": R.stage_settings(cfg, "annotate")},
                   "train (tools)": {"settings": R.stage_settings(cfg, "train")}}
    if ledger:
        (out / "stages.json").write_text(json.dumps(stages))
    return out


ANN = ["annotate", "--corpus", "{c}", "--out", "{o}", "--tools", "Calculator", "--no-progress"]
ROWS = [
    # issue item, argv, exit code, fragment of the error line
    ("1 out is the corpus folder", ["annotate", "--corpus", "{d}", "--out", "{d}"], 2, "holds the corpus"),
    ("1 out holds the corpus file", ["annotate", "--corpus", "{c}", "--out", "{d}"], 2, "holds the corpus"),
    ("1 out holds foreign outputs", ["annotate", "--corpus", "{c}", "--out", "{foreign}"], 2,
     "no annotation run wrote"),
    ("3 tool cache is a folder", ANN + ["--tool-cache", "{d}"], 2, "is a folder"),
    ("7 --k -1", ANN + ["--k", "-1"], 2, "k must be >= 1"),
    ("7 --m -2", ANN + ["--m", "-2"], 2, "m must be >= 1"),
    ("7 --tau-s 5", ANN + ["--tau-s", "5"], 2, "tau_s must be between 0 and 1"),
    ("7 --tools ''", ["annotate", "--tools", ""], 2, "tools must not be empty"),
    ("7 eval --limit -1", ["eval", "--limit", "-1"], 2, "limit must be >= 1"),
    ("7 eval --limit 0", ["eval", "--limit", "0"], 2, "limit must be >= 1"),
    ("7 k: 3.7", ANN + ["--config", "{tmp}/k37.yaml"], 2, "k must be a whole number"),
    ("7 k: true", ANN + ["--config", "{tmp}/ktrue.yaml"], 2, "k must be a whole number"),
    ("7 tau_f: .nan", ANN + ["--config", "{tmp}/nan.yaml"], 2, "tau_f must be a finite number"),
    ("7 --temperature -1", ANN + ["--temperature", "-1"], 2, "temperature must be >= 0"),
    ("7 shard_size: 0", ANN + ["--config", "{tmp}/shard0.yaml"], 2, "shard_size must be >= 1"),
    ("7 --window-tokens -5", ANN + ["--window-tokens", "-5"], 2, "window_tokens must be >= 0"),
    ("8 k: 'abc'", ANN + ["--config", "{tmp}/kabc.yaml"], 2, "k must be a whole number"),
    ("8 max_length: 'x'", ["train", "--config", "{tmp}/maxlen.yaml"], 2, "max_length must be a whole number"),
    ("8 limit: 'ten'", ["eval", "--config", "{tmp}/limit.yaml"], 2, "limit must be a whole number"),
    ("8 --out is a file", ["annotate", "--corpus", "{c}", "--out", "{tmp}/afile"], 2, "is a file"),
    ("8 tools run --cache DIR", ["tools", "run", "Calculator", "1 + 2", "--cache", "{d}"], 2, "is a folder"),
    ("8 tools run --timeout -1", ["tools", "run", "Calculator", "1 + 2", "--timeout", "-1"], 2, "timeout must be"),
    ("8 inspect on an invalid port", ["inspect", "{d}", "--port", "70000"], 2, "is not a port"),
    ("9a --disabled=maybe", ["generate", "--disabled=maybe", "p"], 2, "takes no value"),
    # issue 29, item 14: a file where a folder is expected, refused before any stage runs
    ("29.14 experiment --out FILE", ["experiment", "math", "--out", "{tmp}/afile"], 2, "is a file"),
    ("29.14 experiment --results FILE", ["experiment", "math", "--out", "{o}", "--results", "{tmp}/afile"], 2,
     "--results"),
    ("29.14 study --out FILE", ["study", "tau", "--out", "{tmp}/afile"], 2, "is a file"),
    ("29.14 study --results FILE", ["study", "tau", "--out", "{o}", "--results", "{tmp}/afile"], 2, "--results"),
    ("29.15 --per-recipe unknown setting", ["study", "scale", "--per-recipe", "math.bogus=1", "--out", "{o}"], 2,
     "--per-recipe 'math.bogus=1': 'bogus' is no recipe setting"),
    ("29.15 experiment: unknown tool", ["experiment", "math", "--tools", "Calculatr", "--out", "{o}"], 2,
     "did you mean 'Calculator'"),
    ("29.15 pipeline: unknown tool", ["pipeline", "--tools", "Calculatr", "--out", "{o}"], 2,
     "did you mean 'Calculator'"),
    ("29.14 eval --out FILE", ["eval", "--model", "smollm2-135m", "--tasks", "svamp", "--out", "{tmp}/afile"], 2,
     "is a file"),
    # issue 29, items 1-6: refused before anything is written (the snapshot says nothing was)
    ("29.1 train --out the base model", ["train", "--model", "{m}", "--data", "{c}", "--out", "{m}", "--lora"], 2,
     "that no training run wrote there"),
    ("29.1 train --out inside the base model", ["train", "--model", "{m}", "--data", "{c}", "--out", "{m}/sub"], 2,
     "is the folder of the base model"),
    ("29.2 experiment --out a folder of mine", ["experiment", "math", "--out", "{foreign}"], 2,
     "holds files that no experiment wrote"),
    ("29.2 study --out a folder of mine", ["study", "tau", "--out", "{foreign}"], 2, "holds files that no study wrote"),
    ("29.3 evidence of another configuration", ["experiment", "math", "--docs", "1", "--out", "{o}", "--results",
                                                "{evidence}"], 2, "pass --results DIR to write elsewhere, or --replace-results"),
    ("29.4 eval --out a report of mine", ["eval", "--model", "smollm2-135m", "--tasks", "svamp", "--out", "{report}"], 2,
     "summary.json, table.md that no evaluation wrote there"),
    ("29.6 a re-run with other settings", ["experiment", "math", "--docs", "5", "--out", "{run6}"], 2,
     "run6/corpus was made with other settings (docs: 3 → 5)"),
    ("29.6 stages.json deleted", ["experiment", "math", "--docs", "5", "--out", "{run6b}"], 2,
     "run6b/corpus was made with other settings (docs: 3 → 5)"),
    # issue 29, items 7, 11-14: found before any stage runs, one line naming the file or input and the fix
    ("29.7 a cut train_summary.json", ["experiment", "math", "--out", "{run7}"], 2,
     "train-tools/train_summary.json is damaged (not JSON"),
    ("29.7 cut final weights", ["experiment", "math", "--out", "{run7b}"], 2,
     "train-tools is damaged: model.safetensors is unreadable"),
    ("29.11 an empty benchmark file", ["experiment", "math", "--data-dir", "{bench}", "--out", "{o}"], 2,
     "task svamp: its data under"),
    ("29.11 eval: an empty benchmark file", ["eval", "--model", "smollm2-135m", "--tasks", "svamp", "--data-dir",
                                             "{bench}", "--out", "{o}"], 2, "holds no examples"),
    ("29.12 a .py tool file", ["tools", "--tools", "{tmp}/evil.py", "list"], 2, "--trust-tool-code"),
    ("29.12 function: subprocess:getoutput", ["tools", "--tools", "{tmp}/shell.yaml", "list"], 2, "--trust-tool-code"),
    ("29.13 a label that is an absolute path", ["eval", "--model", "/tmp/x=smollm2-135m", "--tasks", "svamp", "--out",
                                                "{o}"], 2, "is a path; a label is a plain name"),
    ("29.13 a label that climbs out", ["eval", "--model", "a/../../x=smollm2-135m", "--tasks", "svamp", "--out", "{o}"],
     2, "is a path; a label is a plain name"),
    ("29.14 a model folder with cut weights", ["generate", "--model", "{cut}", "hi"], 2, "could not load model"),
    ("29.14 inspect a cut summary", ["inspect", "{tmp}/inspected"], 2, "inspected/summary.json is damaged (not JSON"),
]
MODEL_ROWS = [
    ("6 non-UTF-8 corpus", ["annotate", "--corpus", "{tmp}/latin1.jsonl", "--out", "{o}"], 2,
     "not UTF-8 text: byte 0xe9 at offset 13"),
    ("6 binary corpus", ["annotate", "--corpus", "{tmp}/random.txt", "--out", "{o}"], 2,
     "looks like a binary file (NUL byte at offset 0)"),
]


def run_row(tmp_path, capsys, argv, code, fragment):
    paths = setup(tmp_path)
    before = snapshot(tmp_path)
    try:
        rc = main([a.format(**paths) for a in argv])
    except SystemExit as exc:  # argparse usage errors
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == code, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1 and fragment in lines[0], err
    assert snapshot(tmp_path) == before  # nothing written, nothing lost


@pytest.mark.parametrize("name,argv,code,fragment", ROWS, ids=[r[0] for r in ROWS])
def test_bad_input_is_one_line_and_touches_nothing(tmp_path, capsys, name, argv, code, fragment):
    run_row(tmp_path, capsys, argv, code, fragment)


@pytest.mark.real_model
@pytest.mark.parametrize("name,argv,code,fragment", MODEL_ROWS, ids=[r[0] for r in MODEL_ROWS])
def test_bad_corpus_is_refused_naming_the_byte(tmp_path, capsys, name, argv, code, fragment):
    run_row(tmp_path, capsys, argv, code, fragment)


def test_hub_id_offline_fails_at_once(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    run_row(tmp_path, capsys, ["generate", "--model", "no-such-org/no-such-model", "hi"], 2,
            "is not in the local Hugging Face cache and HF_HUB_OFFLINE is set")


def test_inspect_on_a_busy_port(tmp_path, capsys):

    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    try:
        paths = setup(tmp_path)
        (paths["d"] / "candidates.jsonl").write_text('{"tool": "Calculator", "doc_id": "d0", "score": 1.0}\n')
        before = snapshot(tmp_path)
        assert main(["inspect", str(paths["d"]), "--port", str(busy.getsockname()[1])]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "cannot listen on 127.0.0.1" in err and "--port 0" in err
        assert snapshot(tmp_path) == before
    finally:
        busy.close()


def test_boolean_flags_never_swallow_a_prompt():
    from toolformer_kit.commands.cli import _parse, build_parser

    args = _parse(build_parser(), ["generate", "--disabled", "prompt one", "prompt two"])
    assert args.disabled is True and args.prompts == ["prompt one", "prompt two"]
    args = _parse(build_parser(), ["generate", "--no-disabled", "p"])
    assert args.disabled is False and args.prompts == ["p"]
    assert _parse(build_parser(), ["annotate", "--progress", "false"]).progress is False  # older form still works


# ---------------------------------------------------------------- one test per fix, below the CLI


def test_huge_number_does_not_break_the_calculator_prefilter_and_many_numbers_are_fast():
    import time

    from toolformer_kit.annotate.prefilters import calculator_keep

    assert calculator_keep("x " + "9" * 5000 + " and 1 plus 2 is 3") is True  # Fraction() of >4,300 digits raised
    text = " ".join(str(1_000_003 + 7919 * i * i) for i in range(80))  # 80 seven-digit numbers: 57 s before
    start = time.perf_counter()
    calculator_keep(text)
    assert time.perf_counter() - start < 2.0


def _fake_runner(tmp_path, cache=""):
    from annotate.fakes import FakeEngine, FakeLM, calculator_tool
    from toolformer_kit.annotate.config import AnnotateConfig
    from toolformer_kit.annotate.execute import Executor
    from toolformer_kit.annotate.runner import Runner

    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(x) + "\n" for x in DOCS))
    cfg = AnnotateConfig(corpus=str(corpus), out=str(tmp_path / "out"), tools=["Calculator"], shard_size=2,
                         k=2, m=4, tau_f=0.5, progress=False, tool_cache=cache)
    executor = None if cache else Executor(engine_factory=FakeEngine)
    return Runner(cfg, lm=FakeLM(), tools=[calculator_tool()], executor=executor)


def test_a_truncated_shard_is_redone_with_a_warning(tmp_path, caplog):
    _fake_runner(tmp_path).run()
    out = tmp_path / "out"
    whole = (out / "corpus.jsonl").read_bytes()
    shard = out / "shards" / "shard-00001.jsonl"
    shard.write_bytes(shard.read_bytes()[:-7])  # cut mid-line, as a full disk would
    (out / "manifest.json").unlink()
    _fake_runner(tmp_path).run()
    assert (out / "corpus.jsonl").read_bytes() == whole
    assert any("shard-00001.jsonl is damaged" in r.getMessage() for r in caplog.records)


def test_a_tool_cache_that_is_not_a_database_is_moved_aside(tmp_path, caplog):
    bad = tmp_path / "cache.sqlite"
    bad.write_bytes(b"this is not sqlite" * 100)
    _fake_runner(tmp_path, cache=str(bad)).run()
    aside = list(tmp_path.glob("cache.sqlite.broken-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == b"this is not sqlite" * 100  # kept, not lost
    import sqlite3

    assert sqlite3.connect(bad).execute("SELECT COUNT(*) FROM results").fetchone()[0] > 0
    assert any("not a SQLite database" in r.getMessage() for r in caplog.records)


def test_the_engine_timeout_bounds_a_tool_with_its_own_longer_timeout():
    import time

    from toolformer_kit.calls import ToolCall
    from toolformer_kit.tools.base import Tool
    from toolformer_kit.tools.engine import ToolEngine

    slow = Tool("Slow", lambda s: time.sleep(3) or "late", "Use Slow.", [("a", "[Slow(x) -> y] a")], timeout=60.0)
    engine = ToolEngine({"Slow": slow}, timeout=0.2)
    start = time.perf_counter()
    (res,) = engine.run([ToolCall("Slow", "x")])
    assert res.result is None and "timed out after 0.2 s" in res.error and time.perf_counter() - start < 2
    assert engine.abandoned_alive() == 1


def test_inspector_host_limit_and_bad_scores(tmp_path):
    import urllib.error
    import urllib.request

    from toolformer_kit.inspector.data import load
    from toolformer_kit.inspector.server import api, serve

    (tmp_path / "candidates.jsonl").write_text(
        "".join(json.dumps({"tool": "Calculator", "doc_id": f"d{i}", "char_offset": 0, "input": "1+1",
                            "score": s, "kept": False}) + "\n" for i, s in enumerate([1.0, "high", None, 2.0]))
        + '{"tool": "Calculator", "doc_id": "d9", "score": NaN}\n')
    (tmp_path / "documents.jsonl").write_text('{"text": "no id here"}\n{"id": "d0", "text": "ok"}\n')
    data = load([tmp_path])
    assert api(data, "/api/candidates", {"limit": "-1"})["rows"].__len__() == 1  # was: every row
    server = serve(data, 0, background=True)
    port = server.server_address[1]
    try:
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/api/scores", timeout=10).read()
        assert json.loads(body) == {"Calculator": [1.0, None, None, 2.0, None]}  # valid JSON, no NaN
        evil = urllib.request.Request(f"http://127.0.0.1:{port}/api/meta", headers={"Host": f"evil.example:{port}"})
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(evil, timeout=10)
        assert info.value.code == 403
    finally:
        server.shutdown()
        server.server_close()


def test_a_malformed_benchmark_file_names_task_file_and_field(tmp_path):
    from toolformer_kit.eval.tasks import TASKS
    from toolformer_kit.eval.tasks.base import BenchmarkError

    (tmp_path / "math").mkdir()
    (tmp_path / "math" / "SVAMP.json").write_text('[{"Body": "x"}]')
    with pytest.raises(BenchmarkError, match=r"task svamp: cannot read .*SVAMP.json \(missing field 'ID'\)"):
        TASKS.get("svamp").load(tmp_path)
    (tmp_path / "math" / "SVAMP.json").write_text('{"a": [')
    with pytest.raises(BenchmarkError, match="SVAMP.json .JSONDecodeError"):
        TASKS.get("svamp").load(tmp_path)


@pytest.mark.real_model
@pytest.mark.slow
def test_mt_timeout_exits_cleanly(tmp_path):
    """SIGABRT (rc 134) before the fix: the abandoned thread was still inside torch at exit."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "toolformer_kit.cli", "tools", "run", "MT",
                           "Guten Morgen, wie geht es dir heute in der schönen Stadt", "--timeout", "1"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1 and "no result: timed out after 1 s" in proc.stderr, proc.stderr[-2000:]


@pytest.mark.slow
def test_sigkill_campaign_resumes_identically():
    """benchmarks/campaign_sigkill.py: 20 seeded SIGKILL moments, each resumed, output identical."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "campaign_sigkill.py"
    proc = subprocess.run([sys.executable, str(script), "--kills", "20"], capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0 and "20/20 resumed outputs identical, 0 duplicated" in proc.stdout, proc.stdout


def test_read_only_out_is_refused(tmp_path, capsys, monkeypatch):
    """A read-only --out: as root (CI) permission bits do not stop writes, so the folder is made
    read-only with chmod where that holds, and the access check is told so where it does not."""
    import toolformer_kit.annotate.runner as runner

    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    if os.access(ro, os.W_OK):  # root: chmod does not bind, so answer as a non-root user would
        real = os.access
        monkeypatch.setattr(runner.os, "access", lambda p, mode: False if str(p) == str(ro) else real(p, mode))
    try:
        run_row(tmp_path, capsys, ANN[:4] + [str(ro)] + ANN[5:], 2, "is not writable")
    finally:
        ro.chmod(0o755)


def test_a_damaged_summary_is_one_error_naming_the_file(tmp_path):
    """A truncated summary.json read back (inspector, reports) names the file, not a JSON traceback."""
    from toolformer_kit.config import ConfigError
    from toolformer_kit.inspector.data import load
    from toolformer_kit.pipeline.report import annotation_blocks

    run = tmp_path / "run"
    run.mkdir()
    (run / "candidates.jsonl").write_text("")
    (run / "summary.json").write_text('{"tools": {')
    for read in (lambda: load([run]), lambda: annotation_blocks(run)):
        with pytest.raises(ConfigError, match=r"run/summary.json is damaged \(not JSON"):
            read()


@pytest.mark.parametrize("text, match", [("1: 2\nnull: 3\n", "setting names must be words"),
                                         (b"k: 3\nmodel: caf\xe9\n", "is not UTF-8 text")])
def test_odd_config_files_are_one_line(tmp_path, capsys, text, match):
    from toolformer_kit.commands.cli import main

    path = tmp_path / "c.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    assert main(["annotate", "--config", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err


@pytest.mark.parametrize("config", ["{", "{}"])
def test_a_broken_model_folder_is_one_line(tmp_path, capsys, config):
    from toolformer_kit.commands.cli import main

    (tmp_path / "config.json").write_text(config)
    assert main(["generate", "--model", str(tmp_path), "hi"]) == 2
    err = capsys.readouterr().err
    assert "could not load model" in err and "complete local Hugging Face folder" in err


@pytest.mark.real_model
@pytest.mark.parametrize("argv, match", [(["--max-new-tokens", "99999999", "hi"], "exceeds the model's context"),
                                         ([""], "empty prompt")])
def test_a_prompt_the_model_cannot_take_is_one_line(smollm2, monkeypatch, capsys, argv, match):
    from toolformer_kit.commands.cli import main
    from toolformer_kit.lm.base import BACKENDS

    monkeypatch.setattr(BACKENDS.get("hf"), "load", classmethod(lambda cls, *a, **k: smollm2))
    assert main(["generate", "--model", "smollm2-135m", *argv]) == 2
    assert match in capsys.readouterr().err


def test_a_calculator_input_that_starts_with_a_minus_needs_no_double_dash(capsys):
    """issue 29, item 15: argparse could take "-(2 + 3) * 4" for an option."""
    assert main(["tools", "run", "Calculator", "-(2 + 3) * 4"]) == 0
    assert capsys.readouterr().out.strip() == "-20"


# ------------------------------------------------------------------ issue 44 (third round)
# Rows D2, T1, W2 and the lock run the campaign: tests/campaign/test_campaign_reliability.py.
def _chaining_results(folder, rounds):
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps({"settings": {"rounds": rounds, "budgets": [1, 2, 3]}}))
    (folder / "report.md").write_text("committed\n")


def test_d1_chaining_never_replaces_results_of_another_configuration(tmp_path, capsys):
    res = tmp_path / "results" / "chaining"
    _chaining_results(res, ["round1=runs/math/train-tools"])
    before = snapshot(tmp_path)
    rc = main(["chaining", "--rounds", "r1=x", "--report-only", "--results", str(res), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and "another configuration" in err and "--replace-results" in err and "Traceback" not in err
    assert snapshot(tmp_path) == before


def test_d1_the_same_configuration_may_rewrite_its_report(tmp_path):
    from toolformer_kit.study.chaining import ChainingConfig, check_results

    res = tmp_path / "r"
    _chaining_results(res, ["r1=x"])
    check_results(ChainingConfig(rounds=["r1=x"], results=str(res), other_tries=["results/a"]))  # no error
    with pytest.raises(Exception, match="another configuration"):
        check_results(ChainingConfig(rounds=["r1=x"], budgets=[1, 2], results=str(res)))
    check_results(ChainingConfig(rounds=["r1=y"], results=str(res), replace_results=True))


@pytest.mark.parametrize("rounds, budgets, match", [
    ("r1=A,r1=B", "1,2", "names 'r1' twice"),                      # W1
    ("r1=smollm2-135m", "1,1000000000", "at most 10 calls per input"),  # T4
])
def test_w1_t4_chaining_settings_that_cannot_be_run_are_one_line(tmp_path, capsys, rounds, budgets, match):
    before = snapshot(tmp_path)
    rc = main(["chaining", "--rounds", rounds, "--budgets", budgets, "--out", str(tmp_path / "o"),
               "--results", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert rc == 2 and match in err and "Traceback" not in err, err
    assert snapshot(tmp_path) == before


def test_t2_a_cut_published_dataset_is_one_error_naming_the_file_and_line(tmp_path):
    from toolformer_kit.experiment.run import _rows
    from toolformer_kit.files import DamagedFileError

    path = tmp_path / "D" / "data" / "cstar.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text('{"id": "a", "text": "x"}\n{"id": "b", "te')
    with pytest.raises(DamagedFileError, match=r"cstar.jsonl is damaged at line 2 \(not JSON.*git checkout"):
        _rows(path)
    path.write_text('{"id": "a", "text": "x"}\n[1, 2]\n')
    with pytest.raises(DamagedFileError, match="line 2 .*JSON object, not list"):
        _rows(path)


@pytest.mark.parametrize("summary, what", [("[1]", "not a JSON object"), ('{"tau_f": "abc"}', "tau_f 'abc'")])
def test_t3_the_inspector_names_a_damaged_dataset_summary(tmp_path, summary, what):
    from toolformer_kit.files import DamagedFileError
    from toolformer_kit.inspector.data import load

    ds = tmp_path / "ds"
    (ds / "bank").mkdir(parents=True)
    (ds / "data").mkdir()
    (ds / "bank" / "campaign.json").write_text("{}")
    (ds / "bank" / "shard-00000.jsonl").write_text(json.dumps(CANDIDATE) + "\n")
    (ds / "data" / "summary.json").write_text(summary)
    with pytest.raises(DamagedFileError, match=rf"summary.json is damaged \({what}"):
        load([ds])


CANDIDATE = {"doc_id": "d", "tool": "Calculator", "position": 1, "char_offset": 3, "p_i": 0.5, "sample": "",
             "input": "1 + 2", "result": "3", "score": 1.0, "kept": True}


def test_w7_a_bank_row_without_a_doc_id_is_skipped_not_a_404(tmp_path, caplog):
    from toolformer_kit.inspector.data import load
    from toolformer_kit.inspector.server import api

    ds = tmp_path / "ds"
    (ds / "bank").mkdir(parents=True)
    (ds / "bank" / "campaign.json").write_text("{}")
    bad = {k: v for k, v in CANDIDATE.items() if k != "doc_id"}
    (ds / "bank" / "shard-00000.jsonl").write_text(json.dumps(CANDIDATE) + "\n" + json.dumps(bad) + "\n")
    data = load([ds])
    assert "skipped 1 row(s) that are not candidates" in caplog.text
    body = api(data, "/api/candidates", {"limit": "500"})
    assert len(body["rows"] if isinstance(body, dict) else body) == 1


def test_t5_a_model_cache_that_is_a_file_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TOOLFORMER_CACHE", "/etc/passwd")
    rc = main(["generate", "--model", "smollm2-135m", "Hi"])
    err = capsys.readouterr().err
    assert rc != 0 and "/etc/passwd is a file" in err and "TOOLFORMER_CACHE" in err and "Traceback" not in err, err


def test_w6_a_studies_folder_that_does_not_exist_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TOOLFORMER_STUDIES", str(tmp_path / "nonexistent"))
    rc = main(["study", "scale", "--estimate"])
    err = capsys.readouterr().err
    assert rc == 2 and "TOOLFORMER_STUDIES" in err and "is not a folder" in err and "Traceback" not in err, err


class _Parrot:
    """A translator that answers with a fixed line (what the LM did on W4 and W5)."""

    name = "parrot"

    def __init__(self, line):
        self.line = line

    def translate(self, text, lang):
        return self.line


@pytest.mark.parametrize("text, line", [
    ("ᚠᛇᚻ᛫ᛒᛦᚦ᛫ᚠᚱᚩᚠᚢᚱ", "The museum opens at nine."),       # W4: runes, read as Amharic
    ("xqzv brrrpt klmnq wxyz", "xqzv is a movie."),          # W5: letters at random
    ("Der Zug fährt um acht Uhr ab.", "The museum opens at nine."),  # a demonstration echoed
])
def test_w4_w5_mt_gives_no_result_for_no_language_or_a_demonstration(text, line):
    from toolformer_kit.tools.mt import translate

    assert translate(text, _Parrot(line)) is None


def test_mt_still_translates_real_text_and_the_demonstrations_own_source():
    from toolformer_kit.tools.mt import translate

    assert translate("Der Zug fährt um acht Uhr ab.", _Parrot("The train leaves at eight.")) == "The train leaves at eight."
    assert translate("Il museo apre alle nove.", _Parrot("The museum opens at nine.")) == "The museum opens at nine."
    assert translate("gato", _Parrot("cat")) == "cat"  # one word: identification is unsure, and allowed


@pytest.mark.slow
def test_sigkill_over_the_campaign_command_publishes_the_same_dataset():
    """benchmarks/campaign_sigkill_campaign.py (issue 44): 20 seeded SIGKILL moments over
    ``campaign``, each resumed; the published dataset and the bank equal an uninterrupted run's."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "campaign_sigkill_campaign.py"
    proc = subprocess.run([sys.executable, str(script), "--kills", "20"], capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0 and "20/20 resumed datasets identical, 0 duplicated" in proc.stdout, proc.stdout
