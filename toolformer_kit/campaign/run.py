"""An annotation campaign that outlasts a session: C* built shard by shard into a folder that is
committed as it grows, and resumed from there by the same command on any machine.

Two recipes: ``math`` (the Calculator on GSM8K prose solutions and arithmetic Wikipedia summaries,
datasets/cstar-math) and ``search`` (WikiSearch and QA on Wikipedia summaries the evaluation does
not ask about; the held-out facts of ``wiki-cloze`` are neither annotated nor in the index the two
tools search while annotating, issue 28). ``configs/campaigns/search.yaml`` holds the search one.

Why not the ordinary annotation run: its shards keep every candidate (200 per window at the
Calculator's k 20 × m 10), tens of MB for a few hundred windows, in a folder that is not committed.
A campaign banks only what C* and its study need: every candidate with a score ≥ 0 (τf is never
below 0, so C* at any τf can be rebuilt from them), a histogram of all scores, the positions and
their p_i, counts and timings. A shard's content depends only on its windows, the seed and the
settings, so a campaign resumed elsewhere writes what an uninterrupted one would (up to the dtype
the machine runs, which each shard records).

**Layout of ``--out``**::

    bank/campaign.json          settings, corpus fingerprint, selection counts (written first)
    bank/shard-00000.json       one shard's counts, timings, score histogram, positions (first)
    bank/shard-00000.jsonl      its candidates with score ≥ 0 (last: its presence marks it done)
    data/cstar.jsonl            C* at τf: texts with their kept calls written in
    data/summary.json           kept calls after merging by τf and by position rank, rates
    README.md                   the dataset card
"""

from __future__ import annotations

import fcntl
import functools
import logging
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Sequence

from tqdm.auto import tqdm

from pathlib import Path

from ..annotate.config import AnnotateConfig
from ..annotate.runner import fingerprint
from ..annotate.sequential import check_merge, model_scorer, sequential_merge
from ..config import ConfigError, config_field as _f, stage_config, stage_field
from ..eval.config import default_data_dir
from ..files import DamagedFileError, read_json
from ..tools.base import AnnotationSettings
from .bank import FORMAT, RECIPES, Bank, Progress, bank_record, merged
from toolformer_kit.corpora.sources import heldout_for, write_search_corpus
from .card import publish
from .rerun import rerun_shard
from toolformer_kit.corpora.selection import (calendar_selection, frozen_selection, math_selection, mt_selection,
                                            search_selection, solution_windows)

log = logging.getLogger(__name__)


SEARCH_TASKS = ["lama-trex", "lama-google-re", "lama-squad", "webquestions", "nq", "triviaqa", "wiki-cloze"]


CALCULATOR = "the paper's Calculator setting"
LOCK = ".campaign.lock"  # held while a campaign writes OUT (git-ignored)


@dataclass
class CampaignConfig:
    """A campaign's settings; an annotation setting is :class:`AnnotateConfig`'s field (one help text)."""

    recipe: str = _f("math", "math: the Calculator on GSM8K prose solutions and arithmetic Wikipedia summaries; "
                             "search: WikiSearch and QA on Wikipedia summaries the evaluation does not ask about "
                             "(the held-out facts left out of the corpus and of the search index); calendar: the "
                             "Calendar on dated Debian changelog entries (frozen in OUT/corpus at the first run); mt: "
                             "the MT on English texts that quote a French or Spanish Wikipedia summary's first "
                             "sentence (the titles MLQA is about left out)")
    out: str = _f("datasets/cstar-math", "the dataset folder: its bank/ is resumed, its data/ and card rewritten")
    model: str = stage_field(AnnotateConfig, "model", "qwen2.5-coder-0.5b", note="M: it also samples, as in the paper")
    k: int = stage_field(AnnotateConfig, "k", 20, note=CALCULATOR)
    m: int = stage_field(AnnotateConfig, "m", 10, note=CALCULATOR)
    tau_s: float = stage_field(AnnotateConfig, "tau_s", 0.0, note=CALCULATOR)
    tau_f: float = stage_field(AnnotateConfig, "tau_f", 0.5, note="of the published C*; " + CALCULATOR + "; ≥ 0")
    # report_tau_f, shard_size and merge are the campaign's own doing (its card, its bank, its publish):
    # they borrow the stage's help text and set nothing of the shards' annotation (feeds=False)
    report_tau_f: list[float] = stage_field(AnnotateConfig, "report_tau_f", [0.25, 0.5, 1.0], feeds=False)
    target_calls: int = _f(300, "stop once C* holds this many calls after merging at τf (0 = the whole corpus)")
    window_tokens: int = stage_field(AnnotateConfig, "window_tokens")
    shard_size: int = stage_field(AnnotateConfig, "shard_size", 4, note="windows per banked shard", feeds=False)
    wiki: bool = _f(True, "after the GSM8K problems, read Wikipedia summaries that pass the Calculator pre-filter")
    max_windows: int = _f(0, "annotate at most the first N windows (0 = all; the pilot is 20)")
    max_minutes: float = _f(0.0, "stop starting new shards after this many minutes (0 = no limit); rerun to go on")
    seed: int = _f(0, "seed for sampling and the selection's tie order", feeds=(AnnotateConfig,))
    merge: str = stage_field(AnnotateConfig, "merge", feeds=False)
    bank: str = _f("", "build from this dataset folder's bank/ instead of OUT/bank, annotating nothing: a new version "
                       "of a published dataset (e.g. --merge sequential) from the same candidates")
    rerun_tools: list[str] = _f([], "with --bank: run these tools again over its banked calls (same calls, the tool as "
                                    "it is now, re-scored where a result changed) into OUT/bank, then go on "
                                    "annotating there until the target")
    replace_dataset: bool = _f(False, "publish even if OUT/data holds more annotated windows than this run would "
                                      "(--max-windows below what is published, or a smaller bank)")
    dtype: str = stage_field(AnnotateConfig, "dtype")
    work: str = stage_field(AnnotateConfig, "out", "runs/cstar-math",
                            note="the campaign's scratch folder: each shard's annotation and the tool result cache, "
                                 "not published")
    progress: bool = stage_field(AnnotateConfig, "progress")
    tasks: list[str] = _f([], "search: the evaluated tasks whose questions and answers leave the corpus "
                              "(default: the search recipe's seven, wiki-cloze's held-out summaries included)")
    data_dir: str = _f("", "search, mt: the benchmark folder of the evaluated tasks (default: ../shared/data/benchmarks)")

    def __post_init__(self) -> None:
        if self.recipe not in RECIPES:
            raise ConfigError(f"unknown campaign recipe {self.recipe!r}; use one of {', '.join(RECIPES)}")
        if self.recipe == "search" and not self.tasks:
            self.tasks = list(SEARCH_TASKS)
        check_merge(self.merge)
        if self.rerun_tools and not self.bank:
            raise ConfigError("--rerun-tools re-runs the calls of another dataset's bank: give it with --bank")
        unknown = sorted(set(self.rerun_tools) - set(RECIPES[self.recipe]))
        if unknown:
            raise ConfigError(f"--rerun-tools {','.join(unknown)}: the {self.recipe} recipe annotates "
                              f"{', '.join(RECIPES[self.recipe])} only")
        if self.bank and Path(self.bank).resolve() == Path(self.out).resolve():
            self.bank = ""  # its own bank
        if self.tau_f < 0:
            raise ConfigError(f"tau_f {self.tau_f} < 0: the bank keeps candidates with score ≥ 0 only; use tau_f ≥ 0")


# Settings a resumed campaign may change: they decide when to stop and what is published, not
# what a shard holds.
NON_SEMANTIC = {"out", "tau_f", "report_tau_f", "target_calls", "max_windows", "max_minutes", "work", "progress",
                "data_dir", "merge", "bank", "rerun_tools", "replace_dataset"}  # the corpus fingerprint guards what the data folder decides
# Settings added after a bank was made, left out of its identity at their default (datasets/cstar-math resumes).
ADDED_AT_DEFAULT = {"recipe": "math", "tasks": []}


def identity(cfg: CampaignConfig) -> dict:
    return {k: v for k, v in vars(cfg).items()
            if k not in NON_SEMANTIC and not (k in ADDED_AT_DEFAULT and v == ADDED_AT_DEFAULT[k])}


def search_corpus_path(cfg: CampaignConfig) -> Path:
    """What WikiSearch and QA search while a search campaign annotates: every summary but the held-out ones."""
    return Path(cfg.work) / "search.jsonl"


def annotate_config(cfg: CampaignConfig) -> AnnotateConfig:
    """The annotation settings every shard runs at. math: the Calculator alone; the strict pre-filter
    (cue word or a result triple, ``calculator_rate`` 0) skips windows without arithmetic, such as a
    problem's tail. search: WikiSearch and QA over :func:`search_corpus_path`, never returning the
    summary being annotated (each tool's ``exclude``, :meth:`~toolformer_kit.tools.base.Tool.without_document`;
    QA only from its reader revision 3: the first search C* was annotated with a QA that read it). calendar: the
    Calendar bound to each entry's own date (:func:`~toolformer_kit.annotate.stages.doc_tool`). mt: the MT
    behind Appendix A's pre-filter (a non-English span with English on both sides). All score with a
    floor of 0 (:mod:`~toolformer_kit.annotate.filter`): the bank keeps only scores ≥ 0, so e(c, ε)
    is scored only where it can change what is kept."""
    own = {"search": dict(wiki_exclude_self=True, wiki_corpus=str(search_corpus_path(cfg))),
           "math": dict(calculator_rate=0.0)}.get(cfg.recipe, {})
    return stage_config(AnnotateConfig, cfg, tools=list(RECIPES[cfg.recipe]), tau_f=0.0, progress=False,
                        score_floor=0.0, **own)


# ------------------------------------------------------------------ the run
def campaign_windows(cfg: CampaignConfig, count) -> tuple[list, dict]:
    """The selected corpus in reading order, cut into windows; and the selection counts."""
    if cfg.recipe == "search":
        sel = search_selection(cfg.seed, cfg.tasks, Path(cfg.data_dir) if cfg.data_dir else default_data_dir())
    elif cfg.recipe == "calendar":
        sel = frozen_selection(Path(cfg.out) / "corpus", lambda: calendar_selection(cfg.seed))
    elif cfg.recipe == "mt":
        sel = mt_selection(cfg.seed, Path(cfg.data_dir) if cfg.data_dir else default_data_dir())
    else:
        sel = math_selection(cfg.seed, cfg.wiki)
    docs, cut = solution_windows(sel.docs, cfg.window_tokens, count, 32)
    counts = dict(sel.counts, windows=len(docs), **cut)
    return docs, counts


def run_campaign(cfg: CampaignConfig, lm=None, tools=None, executor=None) -> dict:
    """Annotate shard after shard until C* holds ``target_calls`` after merging, the corpus (or
    ``max_windows``) ends, or ``max_minutes`` pass; then publish what the bank holds. One campaign
    at a time writes ``out`` (:func:`campaign_lock`)."""
    with campaign_lock(cfg.out):
        return _campaign(cfg, lm, tools, executor)


def _campaign(cfg: CampaignConfig, lm, tools, executor) -> dict:
    from ..annotate.build import build_annotator, load_models  # loads models: only when a run starts

    t0 = time.perf_counter()
    acfg = annotate_config(cfg)
    if cfg.recipe == "search" and tools is None:  # the tools search a corpus without the held-out facts
        Path(cfg.work).mkdir(parents=True, exist_ok=True)
        write_search_corpus(search_corpus_path(cfg), heldout_for(cfg.tasks))
    lm, _ = load_models(acfg, lm, lm)
    docs, counts = campaign_windows(cfg, lambda s: len(lm.encode(s)))
    bank = Bank(cfg.bank if cfg.bank and not cfg.rerun_tools else cfg.out)
    source = Bank(cfg.bank) if cfg.rerun_tools else None
    wanted = {"format": FORMAT, "settings": identity(cfg), "corpus": fingerprint(docs), "windows": len(docs),
              "selection": counts}
    for b in (Bank(cfg.bank),) if cfg.bank else ():
        if not (b.dir / "campaign.json").is_file():
            raise ConfigError(f"--bank {cfg.bank} holds no campaign bank ({b.dir}/campaign.json is missing); "
                              "give a dataset folder made by toolformer campaign")
        b.open(wanted)  # refuses a bank of other settings
    bank.open(wanted)
    limit = len(docs) if cfg.max_windows <= 0 else min(cfg.max_windows, len(docs))
    check_published(cfg, limit)
    size = max(1, cfg.shard_size)
    shards = [docs[i: min(i + size, limit)] for i in range(0, limit, size)]
    own = bank.dir == Bank(cfg.out).dir
    prog = Progress()
    annotator = functools.cache(lambda: build_annotator(acfg, lm, lm, tools, executor))  # built once, when needed
    rescore = None
    if cfg.merge == "sequential":
        rescore = model_scorer(lm, {t: AnnotationSettings(tau_f=cfg.tau_f) for t in RECIPES[cfg.recipe]})
    count = CallCount(cfg.tau_f, docs, rescore)
    bar = tqdm(total=len(shards), desc="shards", unit="shard", disable=not cfg.progress)
    try:
        stopped = _bank_shards(cfg, shards, bank, own, prog, bar, t0, count,
                               lambda n, shard: _annotate_shard(cfg, n, shard, source, annotator, lm))
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM through the command: the shard under way is not banked
        stopped = "interrupt"
        log.warning("interrupted: the shard under way is not banked; publishing what the bank holds "
                    "(interrupt again to leave data/ as it was)")
    bar.close()
    if stopped == "interrupt" and _windows(prog) < published_windows(cfg.out):
        raise KeyboardInterrupt  # interrupted while reading the bank back: data/ already holds more
    if stopped == "corpus" and cfg.target_calls and count(prog) >= cfg.target_calls:
        stopped = "target"
    elif stopped == "corpus" and limit < len(docs):
        stopped = "max_windows"
    check_published(cfg, _windows(prog))  # the bank may hold fewer
    return publish(cfg, docs, counts, prog, stopped, rescore)


class CallCount:
    """The stop rule's count: the calls C* holds after the campaign's own merge. The paper's merge
    holds the best kept call per position; the sequential merge (``rescore``) also scores each
    text's later calls after its earlier ones and drops those that no longer pass, so counting the
    paper's calls stopped a sequential campaign short of its target (datasets/cstar-mt stopped "by
    target" at 303 calls by the paper's merge, 215 after its own). A shard's windows are texts of
    their own, so each shard is merged once, when it is first counted (the shards read back from the bank together,
    one batch per round), and the counts are summed."""

    def __init__(self, tau_f: float, docs: Sequence, rescore=None):
        self.tau_f, self.rescore = tau_f, rescore
        self.by_id = {d.doc_id: d for d in docs}
        self.per_shard: dict[int, int] = {}

    def __call__(self, prog: Progress) -> int:
        if self.rescore is None:
            return prog.merged_calls(self.tau_f)
        new = [(n, cands, info) for n, cands, info in prog.shards if n not in self.per_shard]
        shard_of = {w: n for n, _, info in new for w in info["windows"]}
        calls = merged([c for _, cands, _ in new for c in cands], self.tau_f)
        texts = [self.by_id[w] for w in shard_of if w in self.by_id]
        kept = sequential_merge(texts, calls, self.rescore)[0] if calls else []  # one batch per round, all texts
        self.per_shard.update({n: 0 for n, _, _ in new})
        for c in kept:
            self.per_shard[shard_of[c.doc_id]] += 1
        return sum(self.per_shard.values())


def _bank_shards(cfg: CampaignConfig, shards: Sequence, bank: Bank, own: bool, prog: Progress, bar, t0: float,
                 count: CallCount, annotate) -> str:
    """Each shard in order: read back where banked, else made by ``annotate(n, shard)`` and banked,
    until the target (``count``'s calls), the time limit or the corpus's end; returns which stopped it."""
    for n, shard in enumerate(shards):
        have = banked(bank, n, shard, own)
        fresh = have is None
        if fresh:
            if cfg.target_calls and count(prog) >= cfg.target_calls:
                return "target"
            if cfg.max_minutes and time.perf_counter() - t0 > 60 * cfg.max_minutes:
                return "time"
            have = annotate(n, shard)
            bank.write(n, *have)
        prog.add(n, *have)
        bar.update(1)
        if fresh:  # a banked shard read back is counted with the others at the next decision (one batch)
            bar.set_postfix(calls=count(prog))
    return "corpus"


def _annotate_shard(cfg: CampaignConfig, n: int, shard: Sequence, source: Bank | None, annotator, lm):
    """Shard ``n``'s (candidates, info): its banked calls re-executed from ``source`` (--rerun-tools),
    or annotated here."""
    old = banked(source, n, shard, False) if source else None
    if old is not None:
        start = time.perf_counter()
        keep, info = rerun_shard(annotator(), shard, *old, cfg.rerun_tools)
        info["rerun"]["seconds"] = round(time.perf_counter() - start, 2)
        return keep, info
    if cfg.bank and not source:
        raise ConfigError(f"the bank of {cfg.bank} ends before shard {n} and --bank annotates nothing; "
                          f"continue that campaign first (toolformer campaign --out {cfg.bank}), or lower "
                          "--target-calls / --max-windows to what it holds")
    annot = annotator()
    start = time.perf_counter()
    cands, stats = annot.run(shard)
    keep, info = bank_record(cands, stats.to_dict(), [d.doc_id for d in shard], _dtype_of(lm))
    info["tools"] = {t.name: t.version for t in annot.tools}  # a tool's revision may change between sittings
    info["seconds"] = round(time.perf_counter() - start, 2)
    info["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return keep, info


def _windows(prog: Progress) -> int:
    return sum(len(info["windows"]) for _, _, info in prog.shards)


def banked(bank: Bank, n: int, shard: Sequence, own: bool):
    """Shard ``n`` of ``bank`` if banked; a damaged shard of the campaign's own bank is annotated
    again (a warning says which), one of a bank it only reads stops the run with the fix."""
    try:
        return bank.done(n, [d.doc_id for d in shard])
    except DamagedFileError as exc:
        if not own:
            raise
        log.warning("%s. Annotating shard %d again.", exc, n)
        return None


def published_windows(out: str | Path) -> int:
    """How many annotated windows OUT/data/summary.json says the published dataset holds (0: none)."""
    path = Path(out) / "data" / "summary.json"
    if not path.is_file():
        return 0
    summary = read_json(path, f"restore it (git checkout -- {path}) or delete it to publish from the bank alone")
    windows = summary.get("windows_annotated") if isinstance(summary, dict) else None
    return windows if isinstance(windows, int) else 0


def check_published(cfg: CampaignConfig, windows: int) -> None:
    """Refuse to publish fewer windows than OUT already holds (a pilot run into a published
    dataset's folder would replace its C* with a few texts), unless ``--replace-dataset``."""
    have = published_windows(cfg.out)
    if windows < have and not cfg.replace_dataset:
        raise ConfigError(f"{cfg.out}/data holds {have} annotated windows and this run would publish at most "
                          f"{windows}; pass a new --out for a pilot, or --replace-dataset to replace it")


@contextmanager
def campaign_lock(out: str | Path):
    """One campaign at a time per folder: a second one would annotate the same shards twice."""
    Path(out).mkdir(parents=True, exist_ok=True)
    path = Path(out) / LOCK
    with open(path, "a+", encoding="utf-8") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            raise ConfigError(f"another campaign is writing {out} (pid {fh.read().strip() or '?'}); wait for it to "
                              "stop, or pass another --out") from None
        fh.truncate(0)
        fh.write(str(os.getpid()))
        fh.flush()
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _dtype_of(lm) -> str:
    model = getattr(lm, "model", None)
    return str(getattr(model, "dtype", "unknown")).replace("torch.", "")
