"""Annotate shards on a Ray cluster with Ray Data: the same per-shard function, many processes.

Why Ray Data rather than a home-made pool: it already schedules actors across machines and GPUs,
streams inputs to them and results back, and survives a worker's death by retrying its task.
Each actor loads the models once (``fn_constructor_kwargs``) and then runs
:meth:`~toolformer_kit.annotate.stages.ShardAnnotator.run` — the very function the local engine
runs — on one shard per batch. The driver writes each finished shard in the local engine's
format as results stream back, so resumption, the merge step and the inspector are unchanged.

Local runs set ``RAY_AUTH_MODE=disabled`` (Ray ≥ 2.5x asks for a token otherwise). On an
existing cluster start the head with ``ray start --head`` and pass ``--ray-address auto`` (or
``ray://host:10001``).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict
from typing import Callable, Sequence

from ..config import from_dict, to_dict
from ..lm.base import set_threads
from .build import build_annotator
from .config import AnnotateConfig
from .document import Document

log = logging.getLogger(__name__)

INSTALL_HINT = "the Ray engine needs Ray Data: pip install 'toolformer-kit[ray]'"


def _import_ray():
    try:
        import ray  # lazy: heavy and optional
        import ray.data  # noqa: F401
    except ImportError as exc:
        raise RuntimeError(INSTALL_HINT) from exc
    return ray


class ShardActor:
    """A Ray actor holding the models; called with batches of one shard each."""

    def __init__(self, cfg: dict, threads: int = 1):
        set_threads(max(1, threads))
        self.annot = build_annotator(from_dict(AnnotateConfig, cfg))

    def __call__(self, batch: dict) -> dict:
        shards, cands, stats = [], [], []
        for n, docs_json in zip(batch["shard"], batch["docs"]):
            docs = [Document(**d) for d in json.loads(docs_json)]
            c, s = self.annot.run(docs)
            shards.append(int(n))
            cands.append("".join(x.to_json() + "\n" for x in c))
            stats.append(json.dumps(s.to_dict(), indent=1))
        return {"shard": shards, "candidates": cands, "stats": stats}


def run_shards_ray(cfg: AnnotateConfig, shards: Sequence[Sequence[Document]], todo: Sequence[int],
                   on_done: Callable[[int, str, str], None], actors: int = 2, gpus_per_actor: float = 0.0,
                   cpus_per_actor: float = 1.0, address: str | None = None) -> None:
    """Annotate ``shards[n]`` for n in ``todo`` on ``actors`` Ray actors; ``on_done(n, jsonl, stats)``
    is called in the driver as each shard finishes (in completion order)."""
    if not todo:
        return
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray = _import_ray()
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 # a local cluster gets one CPU more than the actors need, for Ray Data's own read tasks
                 **({} if address else {"num_cpus": max(1, int(actors * cpus_per_actor)) + 1}))
    items = [{"shard": n, "docs": json.dumps([asdict(d) for d in shards[n]], ensure_ascii=False)} for n in todo]
    ds = ray.data.from_items(items, override_num_blocks=len(items))
    results = ds.map_batches(
        ShardActor, batch_size=1, batch_format="numpy", concurrency=max(1, actors),
        num_cpus=cpus_per_actor, num_gpus=gpus_per_actor,
        fn_constructor_kwargs={"cfg": to_dict(cfg), "threads": max(1, int(cpus_per_actor))},
    )
    for row in results.iter_rows():  # streams: each shard is written as soon as it is back
        on_done(int(row["shard"]), str(row["candidates"]), str(row["stats"]))
