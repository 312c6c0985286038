"""How many kept WikiSearch calls does excluding the annotated document remove?

An annotate run excludes, for each document, search hits that *are* that document (same title,
or 8 consecutive words in common; :class:`toolformer_kit.tools.wikisearch.NotTheDocument`). This
script re-runs every WikiSearch call of a finished run *without* the exclusion, scores the
calls whose result changes with the same scoring model and the same exact filter, and prints,
at each τf, how many calls were kept with the exclusion and how many would have been without it.

Run: ``python benchmarks/wiki_self_hits.py runs/default/annotate [--model smollm2-135m]``
"""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", help="an annotate output folder (candidates.jsonl, documents.jsonl)")
    ap.add_argument("--model", default="", help="scoring model (default: the run's --model)")
    ap.add_argument("--tau-f", default="0.5,1.0,2.0")
    args = ap.parse_args(argv)

    from toolformer_kit.annotate import records as R
    from toolformer_kit.annotate.scoring import BatchedScorer, score_candidates
    from toolformer_kit.annotate.positions import LEAD
    from toolformer_kit.lm.base import load_lm
    from toolformer_kit.tools import get_tool
    from toolformer_kit.tools.base import AnnotationSettings

    run = Path(args.run)
    settings = json.loads((run / "run.json").read_text())["settings"]
    cands = [c for c in R.read_jsonl(run / "candidates.jsonl") if c.tool == "WikiSearch" and c.input is not None
             and c.score_position is not None and c.status in (R.OK, R.EXEC_ERROR)]
    docs = {json.loads(line)["id"]: json.loads(line)["text"] for line in (run / "documents.jsonl").open()}
    tool = get_tool("WikiSearch")
    plain = {q: tool(q) for q in sorted({c.input for c in cands})}
    changed = []
    for c in cands:
        if plain[c.input] is not None and plain[c.input] != c.result:
            twin = copy.copy(c)
            twin.status, twin.result = R.OK, plain[c.input]
            changed.append(twin)
    lm = load_lm(args.model or settings["model"])
    ids = sorted({c.doc_id for c in changed})
    seqs = [lm.encode(LEAD + docs[i]) for i in ids]
    taus = [float(t) for t in args.tau_f.split(",")]
    score_candidates(BatchedScorer(lm), seqs, [ids.index(c.doc_id) for c in changed], changed,
                     {"WikiSearch": AnnotationSettings(tau_f=0.0)})
    by_key = {(c.doc_id, c.position, c.sample_index): c for c in changed}
    print(f"WikiSearch candidates with a query: {len(cands)}; distinct queries {len(plain)}; "
          f"result changed by the exclusion: {len(changed)} candidates "
          f"({len({c.input for c in changed})} queries)")
    print("| τf | kept with exclusion | kept without exclusion | of those, self-hits |")
    print("|---|---|---|---|")
    for tau in taus:
        with_ex = sum(1 for c in cands if c.score is not None and c.score >= tau)
        without = 0
        self_hits = 0
        for c in cands:
            twin = by_key.get((c.doc_id, c.position, c.sample_index))
            score = twin.score if twin is not None else c.score
            if score is not None and score >= tau:
                without += 1
                self_hits += twin is not None
        print(f"| {tau} | {with_ex} | {without} | {self_hits} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
