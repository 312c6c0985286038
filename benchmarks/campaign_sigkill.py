"""Issue 18 campaign: ``annotate`` killed with SIGKILL at seeded random moments, each then resumed.

A reference run goes uninterrupted; then, KILLS times, a fresh run is started, killed at a moment
drawn uniformly over the reference run's shard work, and re-run to completion. Every output file
(shards, candidates, documents, C*) must equal the reference byte for byte, and no candidate may
appear twice. The runs use the fake LM of tests/annotate/fakes.py (slowed so the shards, not the start-up, fill
most of a run): the SmolLM2 resume test in tests/annotate/test_real.py checks one kill with the real
model; twenty real runs do not fit a two-core machine.

    python benchmarks/campaign_sigkill.py [--kills 20] [--seed 0]
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
TEXTS = ["The farm had 12 cows and bought 30 more, so it has 42 now.",
         "A box holds 6 eggs; 4 boxes hold 24 eggs in all.",
         "She read 10 pages, then 15 more: 25 pages so far.",
         "They walked 3 km and ran 5 km, 8 km together.",
         "The shop sold 7 bikes on Monday and 9 on Tuesday, 16 in total.",
         "A class of 20 pupils split into 4 teams of 5."]
DELAY = 0.03  # seconds added to each fake model call


def child(out: str, corpus: str) -> None:
    """One annotate run (what ``toolformer annotate`` does), with the slowed fake model."""
    sys.path.insert(0, str(ROOT))
    from tests.annotate.fakes import FakeEngine, FakeLM, calculator_tool
    from toolformer_kit.annotate.config import AnnotateConfig
    from toolformer_kit.annotate.execute import Executor
    from toolformer_kit.annotate.runner import Runner

    class SlowLM(FakeLM):
        def __getattribute__(self, name):
            attr = super().__getattribute__(name)
            if callable(attr) and not name.startswith("_") and name != "encode":
                time.sleep(DELAY)
            return attr

    cfg = AnnotateConfig(corpus=corpus, out=out, tools=["Calculator"], shard_size=1, k=2, m=4, tau_f=0.5,
                         progress=False, prefilter=False)
    Runner(cfg, lm=SlowLM(), tools=[calculator_tool()], executor=Executor(engine_factory=FakeEngine)).run()


def outputs(folder: Path) -> dict[str, bytes]:
    names = ["candidates.jsonl", "documents.jsonl", "corpus.jsonl", "summary.json"]
    files = {n: (folder / n).read_bytes() for n in names if n != "summary.json"}
    files.update({f"shards/{p.name}": p.read_bytes() for p in sorted((folder / "shards").glob("shard-*.jsonl"))})
    return files


def start(out: Path, corpus: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, "--child", str(out), str(corpus)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", nargs=2, metavar=("OUT", "CORPUS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return 0
    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="sigkill-"))
    corpus = tmp / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"t{i}", "text": t}) + "\n" for i, t in enumerate(TEXTS * 3)))
    assert start(tmp / "ref", corpus).wait() == 0
    # the kill moment is drawn over the shard work (run.json written → manifest written), not the imports
    span = (tmp / "ref" / "manifest.json").stat().st_mtime - (tmp / "ref" / "run.json").stat().st_mtime
    ref = outputs(tmp / "ref")
    same = interrupted = duplicated = 0
    for i in range(args.kills):
        out, moment = tmp / f"run{i}", rng.uniform(0, span)
        proc = start(out, corpus)
        while not (out / "run.json").exists() and proc.poll() is None:
            time.sleep(0.005)
        time.sleep(moment)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        interrupted += not (out / "manifest.json").exists()
        shards_before = len(list((out / "shards").glob("shard-*.jsonl"))) if (out / "shards").exists() else 0
        assert start(out, corpus).wait() == 0, f"resume {i} failed"
        got = outputs(out)
        lines = got["candidates.jsonl"].splitlines()
        duplicated += len(lines) - len(set(lines))
        same += got == ref
        print(f"kill {i:>2} at {moment:5.2f} s: {shards_before:>2} shard(s) done before, "
              f"{'identical' if got == ref else 'DIFFERENT'}")
    print(f"reference run: shard work {span:.2f} s, {len(ref) - 3} shards; {args.kills} kills, {interrupted} mid-run, "
          f"{same}/{args.kills} resumed outputs identical, {duplicated} duplicated candidate(s)")
    return 0 if same == args.kills and not duplicated else 1


if __name__ == "__main__":
    sys.exit(main())
