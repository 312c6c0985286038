"""Driving a whole annotation run: shards on disk, resumption, progress, summary, manifest.

**Layout of ``--out``**::

    run.json                   settings and corpus fingerprint, written first
    shards/shard-00000.jsonl   candidate log of documents 0…S−1 (one Candidate per line)
    shards/shard-00000.json    that shard's counts and timings
    candidates.jsonl           all shard logs, in order (every candidate, kept or not, with scores)
    corpus.jsonl               C*: texts with at least one kept call, calls written in
    training.jsonl             a later round (--keep-calls) only: every text, with this round's kept
                               calls written in where kept: what the next model is fine-tuned on
    summary.json               counts per tool, kept counts per τf, top calls, timings
    manifest.json              written last: its presence means the run is complete

**Crash safety.** Every file is written to a temporary name, flushed to disk and renamed, so a file
is either complete or absent. A shard's ``.json`` is renamed before its ``.jsonl``; a shard counts
as done when its ``.jsonl`` exists. A re-run with the same settings skips done shards and redoes
only the rest — after SIGKILL, Ctrl-C or a power cut — and since a shard's content depends only on
its documents, the seed and the settings (never on what ran before it), the output is the same as
an uninterrupted run's. A re-run with different settings is refused unless ``--overwrite``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from pathlib import Path

from tqdm.auto import tqdm

from ..config import ConfigError, to_dict
from ..files import write_atomic
from ..tools.engine import check_cache_file
from . import records as R
from .build import build_annotator, load_models, resolve_tools, tool_cache
from .config import ADDED_AT_DEFAULT, NON_SEMANTIC, AnnotateConfig
from .chain import chain_counts, round_documents
from .corpus import ReadReport, read_corpus, windowed
from .merge import chosen_calls, corpus_records, every_text
from .sequential import merge_summary, model_scorer, sequential_merge
from .ray_engine import run_shards_ray
from .stages import ShardAnnotator
from .summary import summarize

log = logging.getLogger(__name__)
FORMAT = "toolformer-kit annotate v1"
OUTPUTS = ("shards", "run.json", "candidates.jsonl", "documents.jsonl", "corpus.jsonl", "corpus.parquet",
           "training.jsonl", "summary.json", "manifest.json")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fingerprint(docs) -> str:
    h = hashlib.sha256()
    for d in docs:
        h.update(json.dumps([d.doc_id, d.text], ensure_ascii=False).encode())
    return h.hexdigest()


def _doc_row(d) -> dict:
    """A row of documents.jsonl; ``context_chars`` only for windows that open with left context."""
    row = {"id": d.doc_id, "text": d.text}
    if d.context_chars:
        row["context_chars"] = d.context_chars
    return row


def semantic_settings(cfg: AnnotateConfig) -> dict:
    return {k: v for k, v in to_dict(cfg).items()
            if k not in NON_SEMANTIC and not (k in ADDED_AT_DEFAULT and v == ADDED_AT_DEFAULT[k])}


# Settings that name a file or folder: the same run whatever their spelling (relative or absolute,
# or the run folder copied elsewhere). The corpus is compared by its fingerprint (its documents'
# ids and texts), a model folder by where it resolves to.
PATHS = ("corpus", "model", "sampler_model")


def settings_differ(have: dict, wanted: dict) -> list[str]:
    """The settings that make ``have``'s run another one than ``wanted``'s.

    >>> import os; here = os.getcwd()
    >>> settings_differ({"k": 5, "corpus": "c.jsonl", "model": "."}, {"k": 5, "corpus": "/x/c.jsonl", "model": here})
    []
    >>> settings_differ({"k": 5, "model": "smollm2-135m"}, {"k": 6, "model": "qwen2.5-coder-0.5b"})
    ['k', 'model']
    """
    def same(key, a, b) -> bool:
        if key == "corpus" or a == b:
            return True
        if key in PATHS and isinstance(a, str) and isinstance(b, str) and Path(a).is_dir() and Path(b).is_dir():
            return Path(a).resolve() == Path(b).resolve()
        return False

    return sorted(k for k in set(have) | set(wanted) if not same(k, have.get(k), wanted.get(k)))


class Runner:
    """One ``toolformer annotate`` run; models and tools may be injected (tests, benchmarks), and so
    may the documents: windows already cut by their owner (the pipeline's fresh windows of a
    campaign corpus, whose read-only question context a JSONL corpus cannot carry)."""

    def __init__(self, cfg: AnnotateConfig, lm=None, sampler=None, tools=None, executor=None, documents=None):
        self.cfg = cfg
        self.out = Path(cfg.out)
        self._lm, self._sampler, self._tools, self._executor = lm, sampler, tools, executor
        self._given = list(documents) if documents is not None else None

    # ------------------------------------------------------------ setup
    def _models(self):
        self._lm, self._sampler = load_models(self.cfg, self._lm, self._sampler)
        return self._lm, self._sampler

    def _resolve_tools(self):
        self._tools, self._settings = resolve_tools(self.cfg, self._tools)
        return self._tools

    def _documents(self, lm, report: ReadReport):
        if self._given is not None:
            return self._given, 0
        docs = read_corpus(self.cfg.corpus, report, self.cfg.default_docs, self.cfg.seed, self.cfg.default_sources)
        if self.cfg.keep_calls:  # an earlier round's C*: its texts are that round's windows already
            docs, split = round_documents(docs), 0
        else:
            docs, split = windowed(docs, self.cfg.window_tokens, lambda s: len(lm.encode(s)), self.cfg.window_context)
        if self.cfg.max_docs > 0:
            docs = docs[: self.cfg.max_docs]
        return docs, split

    def _check_out(self) -> None:
        """Refuse an --out that would destroy input or files this tool did not write (before any work)."""
        out = self.out.resolve()
        if self.out.exists() and not self.out.is_dir():
            raise ConfigError(f"--out {self.out} is a file; pass a folder (it is created if missing)")
        if self.cfg.corpus != "default":
            corpus = Path(self.cfg.corpus).resolve()
            if corpus == out or out in corpus.parents:
                raise ConfigError(f"--out {self.out} holds the corpus {self.cfg.corpus}; the run would overwrite "
                                  "its own input: pass a new folder for --out")
        if self.out.is_dir() and not (self.out / "run.json").exists():
            ours = [n for n in OUTPUTS if (self.out / n).exists()]
            if ours:
                raise ConfigError(f"--out {self.out} holds {', '.join(ours)} that no annotation run wrote there; "
                                  "refusing to replace them: pass a new folder for --out")
        probe = self.out if self.out.exists() else next(p for p in self.out.absolute().parents if p.exists())
        if not os.access(probe, os.W_OK | os.X_OK):
            raise ConfigError(f"--out {self.out} is not writable ({probe} is read-only); pass a folder you can write")
        if not self._executor:
            check_cache_file(tool_cache(self.cfg))

    def _prepare_out(self, docs) -> None:
        run_file = self.out / "run.json"
        wanted = {"format": FORMAT, "settings": semantic_settings(self.cfg), "corpus": fingerprint(docs),
                  "documents": len(docs)}
        if self.cfg.overwrite and self.out.exists():
            for name in OUTPUTS:
                p = self.out / name
                shutil.rmtree(p) if p.is_dir() else p.unlink(missing_ok=True)
        if run_file.exists():
            have = json.loads(run_file.read_text(encoding="utf-8"))
            diff = settings_differ(have.get("settings", {}), wanted["settings"])
            if diff or {k: v for k, v in have.items() if k != "settings"} != {k: v for k, v in wanted.items()
                                                                             if k != "settings"}:
                what = f"settings differ: {', '.join(diff)}" if diff else "the corpus differs"
                raise ConfigError(f"{self.out} holds another annotation run ({what}); "
                                  "use a new --out, or discard it (`toolformer annotate --overwrite`, or delete "
                                  "the folder)")
        (self.out / "shards").mkdir(parents=True, exist_ok=True)
        if not run_file.exists():
            write_atomic(run_file, json.dumps(wanted, indent=1, ensure_ascii=False))

    # ------------------------------------------------------------ main
    def run(self) -> dict:
        t0 = time.perf_counter()
        self._check_out()
        tools = self._resolve_tools()  # tools and their settings first: a bad one fails before the models load
        lm, sampler = self._models()
        report = ReadReport()
        docs, split = self._documents(lm, report)
        self._prepare_out(docs)
        if (self.out / "manifest.json").exists():
            damaged = self.damaged_outputs()
            if not damaged:
                log.info("%s is already complete; nothing to do", self.out)
                return json.loads((self.out / "summary.json").read_text(encoding="utf-8"))
            log.warning("%s: %s no longer match(es) manifest.json (cut off or edited); rebuilding them from the "
                        "shards", self.out, ", ".join(damaged))
            (self.out / "manifest.json").unlink()
        size = max(1, self.cfg.shard_size)
        shards = [docs[i: i + size] for i in range(0, len(docs), size)]
        if self.cfg.engine == "ray":
            done = self._run_shards_ray(shards)
        elif self.cfg.engine == "local":
            annot = build_annotator(self.cfg, lm, sampler, tools, self._executor, self._settings)
            done = self._run_shards(shards, annot)
        else:
            raise ConfigError(f"unknown --engine {self.cfg.engine!r}; use 'local' or 'ray'")
        candidates = [c for n in range(len(shards)) for c in R.read_jsonl(self._shard(n))]
        return self._finish(docs, candidates, len(shards), report, split, done, time.perf_counter() - t0)

    def damaged_outputs(self) -> list[str]:
        """The final files that differ from what manifest.json recorded (a damaged manifest: all)."""
        try:
            files = json.loads((self.out / "manifest.json").read_text(encoding="utf-8"))["files"]
        except (ValueError, KeyError, OSError):
            return ["manifest.json"]
        return [f for f, info in files.items() if f != "run.json" and
                (not (self.out / f).is_file() or _sha256(self.out / f) != info.get("sha256"))]

    def _shard(self, n: int, suffix: str = ".jsonl") -> Path:
        return self.out / "shards" / f"shard-{n:05d}{suffix}"

    def _done_shard(self, n: int):
        """A finished shard's candidates; None when it is absent, or unreadable (then it is redone)."""
        path = self._shard(n)
        if not path.exists():
            return None
        try:
            cands = R.read_jsonl(path)
            json.loads(self._shard(n, ".json").read_text(encoding="utf-8"))
            return cands
        except (ValueError, KeyError, TypeError, OSError) as exc:
            log.warning("shard %s is damaged (%s: %s); redoing it", path, type(exc).__name__, exc)
            path.unlink(missing_ok=True)
            return None

    def _run_shards(self, shards, annot: ShardAnnotator) -> int:
        off = not self.cfg.progress
        bars = [tqdm(total=sum(map(len, shards)), desc="documents", unit="doc", position=0, disable=off),
                tqdm(desc="candidates", unit="call", position=1, disable=off),
                tqdm(desc="kept", unit="call", position=2, disable=off)]
        skipped = 0
        try:
            for n, shard in enumerate(shards):
                cands = self._done_shard(n)
                if cands is not None:
                    skipped += 1
                else:
                    cands, stats = annot.run(shard)
                    write_atomic(self._shard(n, ".json"), json.dumps(stats.to_dict(), indent=1))
                    write_atomic(self._shard(n), "".join(c.to_json() + "\n" for c in cands))
                bars[0].update(len(shard))
                bars[1].update(sum(c.score is not None for c in cands))
                bars[2].update(sum(c.kept for c in cands))
        finally:
            for b in bars:
                b.close()
        if skipped:
            log.info("resumed: %d of %d shard(s) were already done and were not redone", skipped, len(shards))
        return skipped

    def _run_shards_ray(self, shards) -> int:
        """The same shards through Ray Data actors; each is written as it comes back."""
        todo = [n for n in range(len(shards)) if self._done_shard(n) is None]

        def write(n: int, jsonl: str, stats: str) -> None:
            write_atomic(self._shard(n, ".json"), stats)
            write_atomic(self._shard(n), jsonl)

        run_shards_ray(self.cfg, shards, todo, write, actors=self.cfg.actors,
                       gpus_per_actor=self.cfg.num_gpus_per_actor, cpus_per_actor=self.cfg.cpus_per_actor,
                       address=self.cfg.ray_address or None)
        return len(shards) - len(todo)

    def _finish(self, docs, candidates, n_shards, report, split, resumed, seconds) -> dict:
        write_atomic(self.out / "candidates.jsonl", "".join(c.to_json() + "\n" for c in candidates))
        # the annotated texts as read (after windowing), so the inspector can show any candidate in place
        rows = [_doc_row(d) for d in docs]
        write_atomic(self.out / "documents.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        cstar, merge_info = self._merge(docs, candidates)
        write_atomic(self.out / "corpus.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in cstar))
        if self.cfg.parquet:
            self._write_parquet(cstar)
        stats = [json.loads(self._shard(n, ".json").read_text()) for n in range(n_shards)]
        summary = summarize(self.cfg, docs, candidates, cstar, stats, report, split,
                            {name: s.tau_f for name, s in self._settings.items()})
        if merge_info is not None:
            summary["merge"] = merge_info
        if self.cfg.keep_calls:
            summary["chains"] = chain_counts(cstar)
            self._write_training(rows, cstar)
        summary["wall_seconds_this_session"] = round(seconds, 2)
        summary["shards_resumed"] = resumed
        write_atomic(self.out / "summary.json", json.dumps(summary, indent=1, ensure_ascii=False))
        files = (["run.json", "candidates.jsonl", "documents.jsonl", "corpus.jsonl", "summary.json"]
                 + (["corpus.parquet"] if self.cfg.parquet else []) + (["training.jsonl"] if self.cfg.keep_calls else []))
        manifest = {"format": FORMAT, "settings": to_dict(self.cfg), "documents": len(docs),
                    "shards": len(stats), "c_star_texts": len(cstar),
                    "files": {f: {"sha256": _sha256(self.out / f), "bytes": (self.out / f).stat().st_size} for f in files}}
        write_atomic(self.out / "manifest.json", json.dumps(manifest, indent=1, ensure_ascii=False))
        return summary

    def _merge(self, docs, candidates):
        """C* under the run's merge; with the sequential one, also what it dropped and why."""
        chosen = chosen_calls(candidates, self.cfg.cap_per_tool, self.cfg.seed)
        if self.cfg.merge == "independent":
            return corpus_records(docs, chosen, self.cfg.keep_calls), None
        lm, _ = self._models()
        score = model_scorer(lm, self._settings)
        kept, report = sequential_merge(docs, chosen, score)
        before, after = (corpus_records(docs, cs, self.cfg.keep_calls) for cs in (chosen, kept))
        return after, merge_summary(report, before, after)

    def _write_training(self, documents, cstar) -> None:
        """A later round's whole corpus for the next fine-tuning: every text of the earlier C*
        (calls kept; ``documents`` as in documents.jsonl), with this round's kept calls written in
        where it has some, in corpus order (C* alone holds only the texts that gained a call)."""
        rows = every_text(documents, cstar)
        write_atomic(self.out / "training.jsonl", "".join(json.dumps({"id": r["id"], "text": r["text"]}, ensure_ascii=False)
                                                          + "\n" for r in rows))

    def _write_parquet(self, records) -> None:
        try:
            import pyarrow as pa  # lazy: optional
            import pyarrow.parquet as pq  # lazy: optional
        except ImportError:
            raise ConfigError("--parquet needs pyarrow: pip install pyarrow") from None
        rows = [dict(r, calls=json.dumps(r["calls"], ensure_ascii=False)) for r in records]
        tmp = self.out / ".corpus.parquet.tmp"
        pq.write_table(pa.Table.from_pylist(rows), tmp)
        os.replace(tmp, self.out / "corpus.parquet")
