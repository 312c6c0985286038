"""Annotation on the real SmolLM2 and the real Calculator: prompt-cached sampling and crash safety."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from toolformer_kit.annotate.sample import document_positions, draw, position_suffixes, prompt_ids
from toolformer_kit.lm.base import SamplingConfig

pytestmark = pytest.mark.real_model

DOCS = ["The farm had 12 cows and bought 30 more, so it has 42 now.",
        "A box holds 6 eggs, so 4 boxes hold 24 eggs.",
        "She read 10 pages and then 15 more, 25 in all."]


def test_prompt_cached_sampling_draws_what_plain_sampling_draws(smollm2):
    from toolformer_kit.tools import get_tool

    lm, tool = smollm2, get_tool("Calculator")
    (pos,) = document_positions(lm, tool, DOCS[:1])
    suffixes = position_suffixes(lm, tool, DOCS[0], pos, [3, 9])
    cfg = SamplingConfig(seed=3, max_new_tokens=8)
    head = prompt_ids(lm, tool)
    cached = draw(lm, head, suffixes, 2, cfg)
    plain = lm.sample([head + s for s in suffixes], 2, config=cfg)
    for row_c, row_p in zip(cached, plain):
        for c, p in zip(row_c, row_p):
            assert p.token_ids[: len(c.token_ids)] == c.token_ids  # the cached path may stop earlier, at "->"


def _annotate(out, corpus):
    return [sys.executable, "-m", "toolformer_kit.cli", "annotate", "--model", "smollm2-135m", "--tools", "Calculator",
            "--corpus", str(corpus), "--out", str(out), "--shard-size", "1", "--k", "2", "--m", "2",
            "--max-new-tokens", "12", "--tau-f", "-100", "--progress", "false"]


def test_sigkill_then_resume_gives_the_uninterrupted_output(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(DOCS)))
    env = dict(os.environ, OMP_NUM_THREADS="1")
    subprocess.run(_annotate(tmp_path / "a", corpus), check=True, env=env, capture_output=True, timeout=600)

    b = tmp_path / "b"
    proc = subprocess.Popen(_annotate(b, corpus), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = b / "shards" / "shard-00000.jsonl"
    deadline = time.time() + 300
    while not first.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert first.exists() and not (b / "manifest.json").exists(), "the run was not interrupted mid-way"
    stamp = first.stat().st_mtime_ns

    done = subprocess.run(_annotate(b, corpus), check=True, env=env, capture_output=True, text=True, timeout=600)
    assert "already done and were not redone" in done.stderr
    assert first.stat().st_mtime_ns == stamp
    for name in ("corpus.jsonl", "candidates.jsonl", "shards/shard-00001.jsonl", "shards/shard-00002.jsonl"):
        assert (b / name).read_bytes() == (tmp_path / "a" / name).read_bytes(), name
    assert (b / "corpus.jsonl").read_text().strip()  # C* is not trivially empty
    _check_c_star(b)


def _check_c_star(run):
    """Issue 13.1 on a real run: calls only at whitespace before a word, one per offset, and the
    text without its calls is the original byte for byte."""
    from toolformer_kit.calls import strip_calls

    for line in (run / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        assert strip_calls(rec["text"]) == rec["original"]
        offsets = [c["char_offset"] for c in rec["calls"]]
        assert len(offsets) == len(set(offsets))
        assert all(o > 0 and rec["original"][o].isspace() for o in offsets)
    for line in (run / "candidates.jsonl").read_text(encoding="utf-8").splitlines():
        c = json.loads(line)
        assert c["char_offset"] > 0
