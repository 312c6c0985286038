"""Issue 44: ``toolformer campaign`` killed with SIGKILL at seeded random moments, each resumed.

A reference campaign runs uninterrupted; then, KILLS times, a fresh one is started into its own
folder, killed at a moment drawn uniformly over the reference run's shard work (bank/campaign.json
written → data/summary.json written), and run again with the same settings to the end. The
published dataset (data/cstar.jsonl, data/documents.jsonl) and every banked shard must equal the
reference byte for byte (a shard's record up to its timing fields), and no candidate may be banked
twice. The campaign runs the fake LM of tests/annotate/fakes.py, slowed so the shards, not the
start-up, fill most of a run; twenty real-model campaigns do not fit a two-core machine.

    python benchmarks/campaign_sigkill_campaign.py [--kills 20] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = [("Ann has 12 cows and buys 30 more. How many?", "She has 42 cows now, so 42 in all."),
            ("A box holds 6 eggs. How many in 4 boxes?", "They hold 24 eggs, so 24 eggs."),
            ("Bo reads 10 pages and 15 more. How many?", "He read 25 pages, so 25 pages."),
            ("Cy walks 3 km and runs 5 km. How far?", "He went 8 km, so 8 km.")]
DELAY = 0.03  # seconds added to each fake model call
TIMING = ("seconds", "finished_at")  # a shard record's fields that say when, not what (and stats.seconds)


def child(out: str) -> None:
    """One campaign (what ``toolformer campaign`` does) on a 12-problem corpus, with the slowed fake model."""
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    from tests.annotate.fakes import FakeEngine, FakeLM, calculator_tool
    from toolformer_kit.annotate.document import Document
    from toolformer_kit.annotate.execute import Executor
    from toolformer_kit.campaign import run as C
    from toolformer_kit.corpora.selection import Selection

    class SlowLM(FakeLM):
        def __getattribute__(self, name):
            attr = super().__getattribute__(name)
            if callable(attr) and not name.startswith("_") and name not in ("encode", "encode_with_offsets"):
                time.sleep(DELAY)
            return attr

    docs = [Document(f"g{i}", f"{q.replace('12', str(12 + i))}\n{s}", {"question_chars": len(q) + 1})
            for i, (q, s) in enumerate(PROBLEMS * 3)]
    n = len(docs)
    C.math_selection = lambda seed, wiki: Selection(docs, {"gsm8k_problems": n, "gsm8k_no_written_sum": n,
                                                           "gsm8k_by_hardness": {"0": n}, "documents": n})
    cfg = C.CampaignConfig(out=out, work=out + "-work", k=3, m=4, shard_size=1, progress=False, tau_f=0.5,
                           target_calls=0)
    C.run_campaign(cfg, lm=SlowLM(), tools=[calculator_tool()], executor=Executor(engine_factory=FakeEngine))


def outputs(folder: Path) -> dict[str, bytes]:
    files = {n: (folder / "data" / n).read_bytes() for n in ("cstar.jsonl", "documents.jsonl")}
    for p in sorted((folder / "bank").glob("shard-*")):
        if p.suffix == ".json":
            info = {k: v for k, v in json.loads(p.read_text()).items() if k not in TIMING}
            info["stats"] = {k: v for k, v in info["stats"].items() if k != "seconds"}
            files[p.name] = json.dumps(info, sort_keys=True).encode()
        else:
            files[p.name] = p.read_bytes()
    return files


def start(out: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, "--child", str(out)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", metavar="OUT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return 0
    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="sigkill-campaign-"))
    ref_proc = start(tmp / "ref")
    assert ref_proc.wait() == 0, ref_proc.stderr.read().decode()
    head, summary = tmp / "ref" / "bank" / "campaign.json", tmp / "ref" / "data" / "summary.json"
    span = summary.stat().st_mtime - head.stat().st_mtime
    ref = outputs(tmp / "ref")
    same = interrupted = duplicated = 0
    for i in range(args.kills):
        out, moment = tmp / f"run{i}", rng.uniform(0, span)
        proc = start(out)
        while not (out / "bank" / "campaign.json").exists() and proc.poll() is None:
            time.sleep(0.005)
        time.sleep(moment)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        interrupted += not (out / "data" / "summary.json").exists()
        before = len(list((out / "bank").glob("shard-*.jsonl")))
        again = start(out)
        assert again.wait() == 0, f"resume {i} failed: {again.stderr.read().decode()[-2000:]}"
        got = outputs(out)
        banked = [line for n, b in got.items() if n.endswith(".jsonl") and n.startswith("shard") for line in b.splitlines()]
        duplicated += len(banked) - len(set(banked))
        same += got == ref
        differ = sorted(n for n in set(ref) | set(got) if ref.get(n) != got.get(n))
        print(f"kill {i:>2} at {moment:5.2f} s: {before:>2} shard(s) banked before, "
              f"{'identical' if got == ref else 'DIFFERENT: ' + ', '.join(differ)}")
    shards = sum(n.endswith(".jsonl") and n.startswith("shard") for n in ref)
    print(f"reference campaign: shard work {span:.2f} s, {shards} shards; {args.kills} kills, {interrupted} mid-run, "
          f"{same}/{args.kills} resumed datasets identical, {duplicated} duplicated candidate(s)")
    return 0 if same == args.kills and not duplicated else 1


if __name__ == "__main__":
    sys.exit(main())
