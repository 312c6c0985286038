"""Perplexity with calls disabled (the paper's Table 8): WikiText-2 test and held-out corpus text.

"Calls disabled" means the text is scored as it is, with no call inserted anywhere: the model's
probability of the plain tokens. (Scoring *with* calls would need a sum over every call the model
might make at every position, which the paper also calls intractable.) A tool-trained model still
puts some probability on the call-open token, and that mass is not given back: this is the same
quantity the paper reports, and it is what makes the comparison with the base model fair.

Long documents are scored in overlapping windows: each window scores only its last ``stride``
tokens, with up to ``window - stride`` tokens before them as context, so every token except a
document's first is scored exactly once.

>>> window_spans(10, window=6, stride=4)
[(0, 1, 5), (3, 5, 9), (4, 9, 10)]
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Sequence

import numpy as np
from tqdm.auto import tqdm

from .tasks import Example

log = logging.getLogger(__name__)


def window_spans(n_tokens: int, window: int = 1024, stride: int = 512) -> list[tuple[int, int, int]]:
    """``(context_start, score_start, end)`` triples covering tokens 1..n-1 exactly once."""
    if stride > window or stride < 1:
        raise ValueError(f"need 1 <= stride ({stride}) <= window ({window})")
    spans, start = [], 1
    while start < n_tokens:
        end = min(start + stride, n_tokens)
        spans.append((max(0, end - window), start, end))
        start = end
    return spans


def document_nll(lm, text: str, window: int = 1024, stride: int = 512, batch: int = 4) -> tuple[float, int]:
    """Total negative log-likelihood (nats) of a text's tokens after the first, and their count."""
    ids = lm.encode(text)
    spans = window_spans(len(ids), window, stride)
    total = 0.0
    for s in range(0, len(spans), batch):
        group = spans[s: s + batch]
        prefixes = [ids[a:b] for a, b, _ in group]
        conts = [ids[b:c] for _, b, c in group]
        total -= float(sum(np.sum(lp) for lp in lm.token_logprobs(prefixes, conts)))
    return total, max(len(ids) - 1, 0)


def summarize_perplexity(per_doc: Sequence[tuple[float, int]], model: str, task: str,
                         n_resamples: int = 1000, seed: int = 0) -> dict:
    """Token-level perplexity exp(Σ nll / Σ tokens), with a bootstrap interval over documents.

    >>> s = summarize_perplexity([(2.0, 2), (2.0, 2)], "m", "wikitext2")
    >>> round(s["perplexity"], 4), s["n_tokens"], [round(x, 4) for x in s["ci95"]]
    (2.7183, 4, [2.7183, 2.7183])
    """
    nll = np.array([d[0] for d in per_doc], dtype=float)
    n = np.array([d[1] for d in per_doc], dtype=float)
    ppl = math.exp(nll.sum() / n.sum()) if n.sum() else float("nan")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(nll), size=(n_resamples, len(nll))) if len(nll) else np.zeros((0, 0), int)
    with np.errstate(invalid="ignore", divide="ignore"):
        boots = np.exp(nll[idx].sum(1) / n[idx].sum(1)) if len(nll) else np.array([ppl])
    lo, hi = np.nanquantile(boots, [0.025, 0.975])
    return {"model": model, "setting": "disabled", "task": task, "kind": "perplexity", "n_docs": len(per_doc),
            "n_tokens": int(n.sum()), "perplexity": ppl, "ci95": (float(lo), float(hi))}


def summary_path(out: str | Path, label: str, task: str) -> Path:
    """Where a run's perplexity summary lies: ``<out>/<label>/perplexity/<task>.json``."""
    return Path(out) / label / "perplexity" / f"{task}.json"


def load_summary(out: str | Path, label: str, task: str) -> dict | None:
    """A run's perplexity summary (:func:`summarize_perplexity`), or None where it was not measured."""
    path = summary_path(out, label, task)
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def run_perplexity(lm, label: str, task: str, docs: Sequence[Example], out: str | Path,
                   window: int = 1024, stride: int = 512, n_resamples: int = 1000, seed: int = 0) -> dict:
    """Score each document once (resumable: ``<out>/<label>/perplexity/<task>.jsonl``)."""
    folder = summary_path(out, label, task).parent
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{task}.jsonl"
    done = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
                done[row["id"]] = (row["nll"], row["n_tokens"])
            except (json.JSONDecodeError, KeyError):
                continue
    with open(path, "a", encoding="utf-8") as fh:
        for doc in tqdm([d for d in docs if d.id not in done], desc=f"{task} perplexity", unit="doc"):
            nll, n = document_nll(lm, doc.prompt, window, stride)
            fh.write(json.dumps({"id": doc.id, "nll": nll, "n_tokens": n}) + "\n")
            fh.flush()
            done[doc.id] = (nll, n)
    summary = summarize_perplexity([done[d.id] for d in docs if d.id in done], label, task, n_resamples, seed)
    summary_path(out, label, task).write_text(json.dumps(summary, indent=2))
    log.info("%s %s: perplexity %.2f over %d tokens", label, task, summary["perplexity"], summary["n_tokens"])
    return summary
