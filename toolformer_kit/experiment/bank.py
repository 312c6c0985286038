"""A recipe run's finished parts kept in the repository (``bank: DIR``), so that a run longer than
one sitting goes on, on a fresh machine, with the same command.

Why: the run folder (``runs/NAME``) holds gigabytes (merged weights, checkpoints, the corpus) and is
lost with its machine; the one-model recipe needs ~8 hours of CPU. What cannot be made again
quickly and deterministically is small: each fine-tuning run's LoRA adapter (~35 MB in fp32 for
Qwen 0.5B at r 16; while the run is unfinished, its newest checkpoint, ~3× that with the
optimiser's state, so that a fine-tuning longer than a sitting goes on) and the evaluation's
answers, one JSONL per model, setting and task. The bank holds those and the ledger that says
what made them; the corpus and the annotation (read from published datasets), the ceiling and
the report are made again.

Layout of the bank (the run folder's own paths)::

    stages.json, experiment.json, probe.json        the ledger, the run's settings, the call probe
    train-tools/, train-cc/                           adapter/, train_run.json, README.md,
                                                      train_summary.json (the "trained" marker);
                                                      while unfinished: train_run.json and
                                                      checkpoints/ (the newest and the best)
    eval/<model>/<setting>/<task>/examples.jsonl      the answers (and run.json beside them)
    eval/<model>/perplexity/<task>.jsonl              scored documents

:func:`restore` fills a run folder from the bank (a file already there is kept: it is at least
as far on); a fine-tuning run is restored by merging its adapter into its base again, with its
marker written last, an unfinished one by putting its banked checkpoints back for the trainer
to resume from. :func:`save` copies what the run folder has finished into the bank (JSONL
cut to whole lines: the evaluation appends while it runs); the runner calls it after each stage,
every ten minutes inside one, and when the run stops. Committing the bank is the user's step,
as for a campaign's.
"""

from __future__ import annotations

import _thread
import json
import logging
import shutil
import signal
import threading
from pathlib import Path
from typing import Callable, Iterable

from ..files import write_atomic
from ..train.lora import ADAPTER_DIR, merge_adapter_folder
from ..train.trainer import CHECKPOINTS, RUN_FILE, SUMMARY, checkpoint_problem, checkpoint_step, checkpoints

log = logging.getLogger(__name__)

LEDGER = ("stages.json", "experiment.json", "probe.json")
TRAIN_RUNS = ("train-tools", "train-cc")
TRAIN_FILES = (RUN_FILE, "README.md")  # and adapter/, then SUMMARY last
EVAL = ("eval/*/*/*/examples.jsonl", "eval/*/*/*/run.json", "eval/*/perplexity/*.jsonl")
# Of an unfinished LoRA run's newest checkpoint, what resuming reads (not the tokenizer's copy:
# the run loads its base's); of its best so far, what loading the best at the end reads.
RESUME_FILES = ("adapter_model.safetensors", "adapter_config.json", "trainer_state.json", "optimizer.pt",
                "scheduler.pt", "scaler.pt", "rng_state.pth")
BEST_FILES = RESUME_FILES[:3]


def bankable(out: Path) -> list[Path]:
    """The files of run folder ``out`` that the bank keeps, relative to ``out``; a fine-tuning run's
    only with an adapter (a full fine-tuning's weights are ~1.2 GB): once finished, the adapter;
    until then, :func:`unfinished_checkpoint`."""
    out = Path(out)
    files = [Path(n) for n in LEDGER if (out / n).is_file()]
    for run in TRAIN_RUNS:
        folder = out / run
        if not (folder / SUMMARY).is_file():
            files += [p.relative_to(out) for p in unfinished_checkpoint(folder)]
            continue
        if not (folder / ADAPTER_DIR).is_dir():
            log.warning("%s is a full fine-tuning run: its weights are not banked (set lora: true)", folder)
            continue
        files += [p.relative_to(out) for p in sorted((folder / ADAPTER_DIR).rglob("*")) if p.is_file()]
        files += [Path(run) / n for n in TRAIN_FILES if (folder / n).is_file()] + [Path(run) / SUMMARY]
    for pattern in EVAL:
        files += [p.relative_to(out) for p in sorted(out.glob(pattern))]
    return files


def unfinished_checkpoint(folder: Path) -> list[Path]:
    """What the bank keeps of an unfinished LoRA run in ``folder``, so that a run longer than a
    sitting goes on elsewhere from where it stopped: its identity (``train_run.json``), its
    newest whole checkpoint before the last step (what resuming reads: adapter, optimiser,
    scheduler, random state; ~3× the adapter in fp32) and the best checkpoint so far (its adapter
    only: the run loads it at the end). A full fine-tuning's checkpoints hold every weight: none
    is kept (warned). Nothing while no checkpoint is whole."""
    for ckpt in checkpoints(folder / CHECKPOINTS):
        state = _state(ckpt)
        if state is None or checkpoint_problem(ckpt) or state.get("global_step", 0) >= state.get("max_steps", 0):
            continue  # cut off by a kill, or the last step, which the trainer redoes from the one before
        if not (ckpt / "adapter_model.safetensors").is_file():
            log.warning("%s is a full fine-tuning run: its checkpoints are not banked (set lora: true)", folder)
            return []
        files = [ckpt / n for n in RESUME_FILES if (ckpt / n).is_file()]
        best = ckpt.with_name(f"checkpoint-{state['best_global_step']}") if state.get("best_global_step") else None
        if best is not None and best != ckpt and best.is_dir():
            files += [best / n for n in BEST_FILES if (best / n).is_file()]
        return [folder / RUN_FILE] + files if (folder / RUN_FILE).is_file() else []
    return []


def _state(ckpt: Path) -> dict | None:
    try:
        return json.loads((ckpt / "trainer_state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _content(path: Path) -> bytes:
    """A file as the bank keeps it: a JSONL up to its last whole line."""
    data = path.read_bytes()
    return data[: data.rfind(b"\n") + 1] if path.suffix == ".jsonl" else data


def save(out: Path, bank: Path) -> int:
    """Copy what ``out`` has finished into ``bank``; returns how many files changed there. A
    fine-tuning run's marker is written after its adapter, so a bank cut mid-copy never holds a
    marker without its weights."""
    changed, kept = 0, bankable(out)
    for rel in kept:
        data, target = _content(Path(out) / rel), Path(bank) / rel
        if target.is_file() and target.read_bytes() == data:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, data)
        changed += 1
    changed += _prune_checkpoints(Path(out), Path(bank), set(kept))
    if changed:
        log.info("banked %d changed files of %s in %s", changed, out, bank)
    return changed


def _prune_checkpoints(out: Path, bank: Path, kept: set[Path]) -> int:
    """Drop the bank's checkpoints that ``out`` has gone past: all of a run ``out`` has finished
    (its adapter is banked), the older ones of a run that banked a newer checkpoint just now. A
    run ``out`` has not reached (nothing of it banked now) keeps the bank's: they are all there is."""
    removed = 0
    for run in TRAIN_RUNS:
        folder = bank / run / CHECKPOINTS
        banked_now = any(p.parts[:2] == (run, CHECKPOINTS) for p in kept)
        if not folder.is_dir() or not ((out / run / SUMMARY).is_file() or banked_now):
            continue
        for path in sorted(folder.rglob("*"), reverse=True):  # files before their folders
            if path.is_file() and path.relative_to(bank) not in kept:
                path.unlink()
                removed += 1
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
        if not any(folder.iterdir()):
            folder.rmdir()
    return removed


def restore(out: Path, bank: Path, base_model: str,
            merge: Callable[[Path, Path, str], object] | None = None) -> list[str]:
    """Fill run folder ``out`` from ``bank``: every banked file ``out`` lacks, and each banked
    fine-tuning run that ``out`` has not finished, merged into ``base_model`` again (``merge``:
    :func:`~toolformer_kit.train.lora.merge_adapter_folder`, in the adapter's own dtype; replaced in tests). Returns what was restored, for the log."""
    out, bank = Path(out), Path(bank)
    if not bank.is_dir():
        return []
    restored = _copy_missing(bank, out, [Path(n) for n in LEDGER])
    for run in TRAIN_RUNS:
        src, dst = bank / run, out / run
        if (src / SUMMARY).is_file() and not (dst / SUMMARY).is_file():
            if dst.exists():  # an unfinished run there: the banked one is finished; keep it aside
                aside = _set_aside(dst)
                log.warning("%s was unfinished and the bank holds a finished one: moved it to %s", dst, aside)
            shutil.copytree(src / ADAPTER_DIR, dst / ADAPTER_DIR)
            for name in TRAIN_FILES:
                if (src / name).is_file():
                    shutil.copy2(src / name, dst / name)
            (merge or merge_adapter_folder)(dst / ADAPTER_DIR, dst, base_model)
            shutil.copy2(src / SUMMARY, dst / SUMMARY)  # the marker, last
            restored.append(run)
        elif not (src / SUMMARY).is_file() and not (dst / SUMMARY).is_file():
            restored += _restore_checkpoint(src, dst)
    evaluated = [p.relative_to(bank) for pattern in EVAL for p in sorted(bank.glob(pattern))]
    restored += _copy_missing(bank, out, evaluated)
    if restored:
        log.info("restored from %s: %s", bank, ", ".join(restored[:6]) + (" …" if len(restored) > 6 else ""))
    return restored


def _restore_checkpoint(src: Path, dst: Path) -> list[str]:
    """Put an unfinished run's banked checkpoints into ``dst`` so that training resumes there,
    unless ``dst`` is another run (its own identity differs) or has got further itself."""
    banked = checkpoints(src / CHECKPOINTS)
    if not banked or not (src / RUN_FILE).is_file():
        return []
    if (dst / RUN_FILE).is_file() and (dst / RUN_FILE).read_bytes() != (src / RUN_FILE).read_bytes():
        log.warning("%s holds checkpoints of another run than the bank's %s: left as it is", dst, src)
        return []
    newest = max((checkpoint_step(p) for p in checkpoints(dst / CHECKPOINTS) if not checkpoint_problem(p)), default=-1)
    if newest >= checkpoint_step(banked[0]):
        return []
    files = [p.relative_to(src) for p in sorted((src / CHECKPOINTS).rglob("*")) if p.is_file()]
    _copy_missing(src, dst, files + [Path(RUN_FILE)])
    return [f"{dst.name}/{CHECKPOINTS}/{banked[0].name}"]


def _set_aside(folder: Path) -> Path:
    """Move ``folder`` to the first free ``NAME.unfinished[-N]`` beside it, so that a restore never
    deletes what a run wrote (its checkpoints may be worth more than the log says)."""
    n, aside = 1, folder.with_name(folder.name + ".unfinished")
    while aside.exists():
        n += 1
        aside = folder.with_name(f"{folder.name}.unfinished-{n}")
    folder.rename(aside)
    return aside


def _copy_missing(bank: Path, out: Path, rels: Iterable[Path]) -> list[str]:
    done = []
    for rel in rels:
        if (bank / rel).is_file() and not (out / rel).exists():
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(bank / rel, out / rel)
            done.append(str(rel))
    return done


def answer_count(folder: Path) -> int:
    """Answers an evaluation has written so far in ``folder`` (a run folder or a bank): the
    evaluation resumes by skipping them, and the ledger adds its seconds when it wrote more."""
    return sum(sum(1 for _ in p.open("rb")) for p in Path(folder).glob(EVAL[0]))


def describe(bank: Path) -> str:
    """One line: what the bank holds (for the log and the stop message)."""
    bank = Path(bank)
    trained = [r for r in TRAIN_RUNS if (bank / r / SUMMARY).is_file()]
    answers = answer_count(bank)
    stages = json.loads((bank / "stages.json").read_text("utf-8")) if (bank / "stages.json").is_file() else {}
    return (f"{bank}: stages {', '.join(stages) or 'none'}; fine-tuned {', '.join(trained) or 'none'}; "
            f"{answers} answers")


# ---------------------------------------------------------------- stopping and refreshing a long run
class Stopped(Exception):
    """The run stopped at ``max_minutes`` (``on_time``) or was interrupted, its finished parts kept."""

    def __init__(self, message: str, on_time: bool):
        super().__init__(message)
        self.on_time = on_time


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


class Deadline:
    """``max_minutes`` as an interrupt of the main thread (inside a stage too: an evaluation takes
    hours), and SIGTERM as one, so that the runner can bank what is finished before it stops."""

    def __init__(self, minutes: float):
        self.minutes, self.fired, self._timer, self._term = minutes, False, None, None

    def _fire(self) -> None:
        self.fired = True
        _thread.interrupt_main()

    def __enter__(self) -> "Deadline":
        if self.minutes:
            self._timer = threading.Timer(60 * self.minutes, self._fire)
            self._timer.daemon = True
            self._timer.start()
        if threading.current_thread() is threading.main_thread():
            self._term = signal.signal(signal.SIGTERM, _interrupt)
        return self

    def __exit__(self, *exc) -> None:
        if self._timer:
            self._timer.cancel()
        if self._term is not None:
            signal.signal(signal.SIGTERM, self._term)


_LOCK = threading.Lock()
BANK_EVERY_S = 600  # inside a long stage (an evaluation takes hours), the bank is refreshed this often


def save_locked(out: Path, bank: Path) -> int:
    """:func:`save`, one at a time (the runner's and :class:`Refresh`'s)."""
    with _LOCK:
        return save(out, bank)


class Refresh:
    """Saves the bank every :data:`BANK_EVERY_S` while a stage runs, so a machine lost without a
    signal (a sitting cut off) loses at most that much of a stage's answers on disk."""

    def __init__(self, out: Path, bank: Path | None, every: float | None = None):
        self.out, self.bank, self.every, self._stop = out, bank, every or BANK_EVERY_S, threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            try:
                save_locked(self.out, self.bank)
            except OSError as exc:  # a refresh that fails leaves the last one; the stage goes on
                log.warning("could not refresh the bank: %s", exc)

    def __enter__(self) -> "Refresh":
        if self.bank:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
