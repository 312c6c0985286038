"""Issue 29 campaign: ``toolformer experiment`` killed with SIGKILL at seeded random moments spread
over its stages (annotation, training, evaluation, report), each then re-run until it completes;
the outputs must equal those of an uninterrupted run.

The run is the real command in a subprocess, every stage real (the annotation Runner, the Trainer,
the tool-aware decoder, the report writer), on a tiny model a two-core machine runs in seconds: a
one-layer Llama with SmolLM2's tokenizer whose weights are set by hand to a bigram table (its
attention and MLP outputs start at zero, so the next token depends on the current one only) that
writes " [Calculator(12+3) -> " often enough for annotation to keep calls. Fine-tuning then moves
every part of it, as it would a real model. fp32 and one thread, so the runs can be compared.

A reference run goes uninterrupted and logs when each stage starts. Kill point i picks a stage
(cycling over them) and a moment drawn uniformly within that stage's reference duration, counted
from the stage's start line in the killed run's own log. Compared afterwards (``outputs``): C*,
candidates and annotated texts byte for byte, each model's weights by hash, the training summaries,
probe and evaluation records and the results, less wall times and machine timings.

    python benchmarks/campaign_sigkill_experiment.py [--kills 20] [--seed 0] [--keep]

Run on 2026-12-02 (two-core Xeon shared with a training run, niced; 681 s): 20/20 resumed runs
identical to the uninterrupted one, killed in annotate 4, train (tools) 4, train (+CC) 3, probe 3,
evaluate 3, report 3. An earlier try found a kill after the last training checkpoint giving the
+CC summary an extra step (fixed in train/trainer.py: _last_checkpoint).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGES = ["annotate", "train (tools)", "train (+CC)", "probe", "evaluate", "report"]
RECIPE = """\
description: kill -9 campaign (benchmarks/campaign_sigkill_experiment.py)
model: {model}
sampler_model: ''
tools: [Calculator]
corpus: gsm8k-prose
docs: 4
dev_docs: 2
window_tokens: 48
k: 3
m: 4
tau_s: 0.0
tau_f: -100.0
cstar_texts: with_calls
train_dev: corpus
train_keep: best
train_steps: 24
train_batch: 2
micro_batch: 2
lora: true
learning_rate: 0.003
max_length: 64
tasks: [svamp]
eval_limit: 20
eval_batch: 2
k_eval: 10
references: true
bootstrap: 50
goal_gain: 20
threads: 1
seed: 0
"""


# ---------------------------------------------------------------- the tiny model
def bigram(tok) -> dict[int, dict[int, float]]:
    """Next-token probabilities per current token (the rest share what is left): text → " [" →
    Calculator( → digits, "+" → ")" → " ->" → text. Everything not listed behaves as text."""
    ids = lambda s: tok.encode(s, add_special_tokens=False)  # noqa: E731
    (open_,), name, (paren,), (plus,), (close,), (arrow,), (space,), (nl,) = (
        ids(" ["), ids("Calculator"), ids("("), ids("+"), ids(")"), ids(" ->"), ids(" "), ids("\n"))
    digits = [ids(str(d))[0] for d in range(1, 10)]
    text = {space: 0.5, open_: 0.3}
    table = {open_: {name[0]: 0.97}, paren: {d: 0.1 for d in digits}, plus: {d: 0.1 for d in digits},
             close: {arrow: 0.9}, arrow: {space: 0.9}, space: {**{d: 0.08 for d in digits}, open_: 0.2},
             -1: text}
    for a, b in zip(name, name[1:] + [paren]):
        table[a] = {b: 0.97}
    for d in digits:
        table[d] = {**{e: 0.02 for e in digits}, plus: 0.25, close: 0.28, nl: 0.3}
    return table


def tiny_model(folder: Path) -> Path:
    """Save the bigram Llama (SmolLM2's tokenizer) as an ordinary Hugging Face folder."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    sys.path.insert(0, str(ROOT))
    from toolformer_kit.lm.embedded import resolve_model

    tok = AutoTokenizer.from_pretrained(resolve_model("smollm2-135m"))
    table = bigram(tok)
    rows = sorted(k for k in table if k >= 0)
    dim = 32
    assert len(rows) < dim, "one hidden unit per listed token, one for the rest"
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=dim, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=2048,
                         tie_word_embeddings=False, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        unit = {t: i + 1 for i, t in enumerate(rows)}  # unit 0: every other token
        emb = torch.zeros(len(tok), dim)
        emb[:, 0] = 1.0
        for t, i in unit.items():
            emb[t] = 0.0
            emb[t, i] = 1.0
        model.model.embed_tokens.weight.copy_(emb)
        for layer in model.model.layers:  # the residual stream carries the current token alone
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        head = torch.full((len(tok), dim), -14.0)  # after the final norm a one-hot unit is sqrt(dim)
        for t, probs in table.items():
            col = unit.get(t, 0)
            for nxt, p in probs.items():
                head[nxt, col] = float(torch.tensor(p).log())
        model.lm_head.weight.copy_(head / dim ** 0.5)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


# ---------------------------------------------------------------- one run
def command(recipe: Path, out: Path, results: Path) -> list[str]:
    return [sys.executable, "-P", "-m", "toolformer_kit.cli", "experiment", str(recipe), "--out", str(out),
            "--results", str(results)]


def environment() -> dict:
    env = dict(os.environ, TOOLFORMER_CPU_BF16="0", OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT),
               TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return env


class Run:
    """One ``toolformer experiment`` process; remembers when each stage's start line came."""

    START = re.compile(r"\[\d+/\d+\] (.+?): (about|already done)")

    def __init__(self, argv: list[str], log: Path):
        self.log = log.open("a")
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(argv, cwd=ROOT, env=environment(), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, bufsize=1)
        self.starts: dict[str, float] = {}
        self.stage = "start-up"
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.log.write(line)
            m = self.START.search(line)
            if m:
                self.stage = m.group(1)
                if m.group(2) == "about":
                    self.starts[m.group(1)] = time.monotonic() - self.t0

    def wait(self) -> int:
        rc = self.proc.wait()
        self.reader.join()
        self.log.close()
        return rc

    def kill_at(self, stage: str, delay: float, ref_start: float, limit: float) -> str | None:
        """SIGKILL ``delay`` reference seconds after ``stage`` starts; None when the run ended
        first. The delay is scaled by this run's pace against the reference's (when the stage
        started in each), so that a machine busier or idler than during the reference run still
        sees the kill at the same point of the stage."""
        deadline = time.monotonic() + limit
        while stage not in self.starts:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                return None
            time.sleep(0.02)
        when = self.t0 + self.starts[stage] + delay * self.starts[stage] / max(ref_start, 1e-3)
        while time.monotonic() < when:
            if self.proc.poll() is not None:
                return None
            time.sleep(0.005)
        if self.proc.poll() is not None:
            return None
        where = self.stage
        os.kill(self.proc.pid, signal.SIGKILL)
        return where


# ---------------------------------------------------------------- what must be identical
TIMES = re.compile(r"seconds|wall|elapsed|time|timestamp|started|finished|date|_per_s$|per_second|rate_s|machine|"
                   r"throughput|tokens_per|^commit$")  # the commit: '-dirty' while the tree is being edited


def scrub(value, roots: tuple[str, ...] = ()):
    """JSON less what a clock or the machine decides (wall times, dates, throughput), with the
    trial's own folder (each run has its own, a copied run also the one it was made in) written
    as <root>."""
    if isinstance(value, dict):
        return {k: scrub(v, roots) for k, v in value.items() if not TIMES.search(k)}
    if isinstance(value, list):
        return [scrub(v, roots) for v in value]
    if isinstance(value, str):
        for root in roots:
            value = value.replace(root, "<root>")
    return value


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def outputs(out: Path, results: Path, made_in: str = "") -> dict[str, object]:
    """What an interrupted run must reproduce exactly (``made_in``: where a copied run was made)."""
    found: dict[str, object] = {}
    roots = tuple(r for r in (made_in, str(out.parent)) if r)
    for name in ("corpus.jsonl", "candidates.jsonl", "documents.jsonl"):
        found[f"annotate/{name}"] = _sha(out / "annotate" / name)
    found["corpus/train.jsonl"] = _sha(out / "corpus" / "train.jsonl")
    for run in ("train-tools", "train-cc"):
        for weights in sorted((out / run).glob("*.safetensors")):
            found[f"{run}/{weights.name}"] = _sha(weights)
        found[f"{run}/train_summary.json"] = scrub(json.loads((out / run / "train_summary.json").read_text()), roots)
    found["probe.json"] = scrub(json.loads((out / "probe.json").read_text()), roots)
    for ex in sorted((out / "eval").glob("*/*/*/examples.jsonl")):
        rows = [scrub(json.loads(line), roots) for line in ex.read_text().splitlines() if line.strip()]
        found[str(ex.relative_to(out))] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))
    for name in ("results.json",):
        found[f"results/{name}"] = scrub(json.loads((results / name).read_text()), roots)
    found["results/report.md"] = [scrub(ln, roots) for ln in (results / "report.md").read_text().splitlines()
                                  if not re.search(r"\d+ ?(s|min|h)\b|seconds|GFLOP|wall|commit|cpu|CPU", ln)]
    leftovers = [str(p.relative_to(out)) for p in out.rglob("*") if p.name.startswith(".") or ".tmp" in p.name
                 or p.name.endswith(".saving")]
    found["leftover temporary files"] = sorted(leftovers)
    return found


def differences(a: dict, b: dict) -> list[str]:
    return [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


# ---------------------------------------------------------------- the campaign
def reference(work: Path, recipe: Path) -> tuple[dict, dict[str, float], float, dict[str, float]]:
    out, res = work / "ref" / "run", work / "ref" / "results"
    run = Run(command(recipe, out, res), work / "ref.log")
    rc = run.wait()
    total = time.monotonic() - run.t0
    if rc != 0:
        raise SystemExit(f"the uninterrupted run failed (rc {rc}); see {work / 'ref.log'}")
    starts = dict(run.starts)
    order = [s for s in STAGES if s in starts]
    durations = {s: (starts[order[i + 1]] if i + 1 < len(order) else total) - starts[s] for i, s in enumerate(order)}
    return outputs(out, res), durations, total, starts


def trial(work: Path, recipe: Path, i: int, stage: str, delay: float, ref_start: float, limit: float) -> dict:
    """Kill once at (stage, delay), then re-run until a run completes."""
    out, res = work / f"k{i}" / "run", work / f"k{i}" / "results"
    log = work / f"k{i}.log"
    run = Run(command(recipe, out, res), log)
    where = run.kill_at(stage, delay, ref_start, limit)
    rc = run.wait()
    reruns, errors = 0, []
    while rc != 0:
        if rc not in (0, -signal.SIGKILL):
            errors.append(f"rc {rc}")
        reruns += 1
        if reruns > 3:
            break
        rc = Run(command(recipe, out, res), log).wait()
    return {"point": i, "aimed": f"{stage} +{delay:.2f}s", "killed_in": where, "reruns": reruns, "rc": rc,
            "errors": errors, "out": out, "results": res}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", help="folder for the runs (default: a new temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the run folders")
    parser.add_argument("--json", help="write the per-point results here")
    parser.add_argument("--stages", default=",".join(STAGES),
                        help=f"comma-separated stages the kill points cycle over (default: all, {','.join(STAGES)})")
    args = parser.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="sigkill-exp-"))
    work.mkdir(parents=True, exist_ok=True)
    model = tiny_model(work / "tiny-llama")
    recipe = work / "tiny.yaml"
    recipe.write_text(RECIPE.format(model=model))
    t0 = time.monotonic()
    ref, durations, total, starts = reference(work, recipe)
    print(f"reference run: {total:.1f} s; stage durations: "
          + ", ".join(f"{s} {d:.1f} s" for s, d in durations.items()), flush=True)
    rng = random.Random(args.seed)
    stages = [s for s in args.stages.split(",") if s in durations]
    same, rows = 0, []
    for i in range(args.kills):
        stage = stages[i % len(stages)]
        delay = rng.uniform(0, durations[stage])
        row = trial(work, recipe, i, stage, delay, starts[stage], limit=60 * total)  # a loaded machine runs slower
        diff = differences(ref, outputs(row["out"], row["results"])) if row["rc"] == 0 else ["did not complete"]
        same += not diff and not row["errors"]
        rows.append({k: v for k, v in row.items() if k not in ("out", "results")} | {"differs": diff})
        print(f"point {i:2d}: aimed at {row['aimed']:<24} killed in {str(row['killed_in']):<14} "
              f"reruns {row['reruns']}  {'identical' if not diff else 'DIFFERS: ' + ', '.join(diff)}"
              f"{'  errors: ' + ', '.join(row['errors']) if row['errors'] else ''}", flush=True)
        if not args.keep and not diff:
            shutil.rmtree(work / f"k{i}")
    where = Counter(str(r["killed_in"]) for r in rows)
    print(f"{same}/{args.kills} resumed runs identical to the uninterrupted one (killed in: "
          f"{', '.join(f'{s} {n}' for s, n in where.items())}), {time.monotonic() - t0:.0f} s in all; runs in {work}")
    if args.json:
        Path(args.json).write_text(json.dumps({"reference_seconds": total, "durations": durations, "points": rows},
                                              indent=1, default=str))
    if not args.keep and same == args.kills:
        shutil.rmtree(work)
    return 0 if same == args.kills else 1


if __name__ == "__main__":
    sys.exit(main())
