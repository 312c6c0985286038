"""The Ray Data engine writes exactly what the local engine writes (real SmolLM2, 2 CPU actors)."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.real_model

DOCS = ["The farm had 12 cows and bought 30 more, so it has 42 now.",
        "A box holds 6 eggs, so 4 boxes hold 24 eggs.",
        "She read 10 pages and then 15 more, 25 in all.",
        "The Nile is a river in Africa; it is 6650 km long."]


def _annotate(out, corpus, *extra):
    return [sys.executable, "-m", "toolformer_kit.cli", "annotate", "--model", "smollm2-135m",
            "--tools", "Calculator,WikiSearch", "--corpus", str(corpus), "--out", str(out), "--shard-size", "1",
            "--k", "2", "--m", "2", "--max-new-tokens", "12", "--tau-f", "-100", "--progress", "false", *extra]


def test_ray_engine_output_is_identical_to_local(tmp_path):
    if os.environ.get("CI") == "true":
        import ray  # noqa: F401  (scripts/test.sh installs the [ray] extra: in CI this test must run)
    else:
        pytest.importorskip("ray")
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(DOCS)))
    # One torch thread everywhere: each actor gets one CPU, so the local run uses one too.
    env = dict(os.environ, OMP_NUM_THREADS="1", RAY_AUTH_MODE="disabled")
    subprocess.run(_annotate(tmp_path / "local", corpus), check=True, env=env, capture_output=True, timeout=900)
    ray = subprocess.run(_annotate(tmp_path / "ray", corpus, "--engine", "ray", "--actors", "2"),
                         env=env, capture_output=True, text=True, timeout=900)
    assert ray.returncode == 0, ray.stderr[-3000:]
    for name in ("candidates.jsonl", "corpus.jsonl", "documents.jsonl"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
    assert len(list((tmp_path / "ray" / "shards").glob("shard-*.jsonl"))) == len(DOCS)
    cands = [json.loads(line) for line in (tmp_path / "ray" / "candidates.jsonl").open()]
    assert cands and any(c["score"] is not None for c in cands)


def test_without_ray_the_engine_names_the_extra_to_install(monkeypatch):
    from toolformer_kit.annotate import ray_engine

    monkeypatch.setitem(sys.modules, "ray", None)  # an import of ray now fails as if not installed
    with pytest.raises(RuntimeError, match=r"pip install 'toolformer-kit\[ray\]'"):
        ray_engine._import_ray()
