"""The cost study's tool latency, measured once by a step of the study and stored beside its runs.

Why a step and not part of the report: the eval records keep no per-call timing, so the latency is
measured by re-running stored calls uncached; done while rendering, every re-render re-ran up to
200 calls and printed a new number. Stored in ``<recipe folder>/latency.json``, the report reads
it back and renders the same figures every time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Mapping, Sequence

from ..files import write_atomic
from .layout import value_label
from .results import LATENCY_FILE, ran_calls, value_records


def measure_latency(tool: str, inputs: Sequence[str], n: int) -> dict:
    """Mean seconds of the tool itself over up to ``n`` stored inputs, run uncached here (the eval
    records keep no per-call timing)."""
    import time

    from ..tools import get_tool

    runner = get_tool(tool)
    picked = list(dict.fromkeys(inputs))[:n]
    if not picked:
        return {"tool": tool, "calls": 0, "mean_seconds": None, "how": "no stored call to time"}
    runner(picked[0])  # the first call builds indexes and loads what the tool needs
    t0 = time.perf_counter()
    for text in picked:
        runner(text)
    return {"tool": tool, "calls": len(picked), "mean_seconds": (time.perf_counter() - t0) / len(picked),
            "how": f"measured here: {len(picked)} distinct inputs (calls that ran while answering, then the "
                   "annotation's executed candidates) re-run uncached after one warm-up call"}


def tool_inputs(records: Sequence[Mapping], candidates: Path, tools: Sequence[str]) -> list[str]:
    """Inputs to time a tool on: the calls that ran while answering, then the annotation's executed
    candidates (there are hundreds of those, and only a handful of calls at eval time)."""
    inputs = [c.get("input", "") for r in records for c in ran_calls(r) if c.get("tool") in tools]
    if candidates.is_file():
        with candidates.open(encoding="utf-8") as fh:
            for line in fh:
                c = json.loads(line)
                if c.get("tool") in tools and c.get("input") and c.get("result") is not None:
                    inputs.append(c["input"])
    return inputs


def store_latency(study, base: Path, cfg, latency: Callable | None = None) -> dict:
    """The study step: time ``cfg``'s first tool on the calls every swept value's tool-trained model
    ran (then the annotation's executed candidates) and write ``base / latency.json``."""
    ran = [r for value in study.values for r in value_records(base / value_label(study, value), cfg)[1]]
    inputs = tool_inputs(ran, base / "annotate" / "candidates.jsonl", cfg.tools)
    measured = (latency or measure_latency)(cfg.tools[0], inputs, study.latency_calls)
    write_atomic(base / LATENCY_FILE, json.dumps(measured, indent=1))
    return measured
