"""The one runner of the method's stages: each is a call into the stage's own library function with
the stage's own config dataclass, skipped once the stage's marker (written last) says it is done.

``toolformer pipeline`` (:mod:`.run`) and every experiment recipe (:mod:`toolformer_kit.experiment.run`)
call these and differ only in the stage configs they build, so a stage cannot behave one way in
the pipeline and another in a recipe (issue 30: the recipes used to re-implement them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterable, Mapping

from ..annotate.config import AnnotateConfig
from ..annotate.hooks import hooks
from ..annotate.runner import Runner
from ..eval.config import EvalConfig
from ..eval.run import evaluate_model
from ..lm.embedded import EMBEDDED, pull
from ..tools import get_tool
from ..train import run_training
from ..train.config import TrainConfig

TRAINED = "train_summary.json"  # the trainer's marker, written last


def pull_models(names: Iterable[str]) -> None:
    """Convert the embedded models named (once; later calls find them in the cache)."""
    for name in set(names) - {""}:
        if name in EMBEDDED:
            pull(name)


def prepare_index(tools: Iterable[str], search: bool = False) -> None:
    """Build WikiSearch's BM25 index, before any stage times itself, when one of ``tools`` searches
    it (its :data:`~toolformer_kit.annotate.hooks.HOOKS` entry reads a search corpus: WikiSearch,
    QA) or ``search`` (a stage of the caller's own does): both runners decide it here."""
    if search or any(hooks(name).on_corpus for name in tools):
        tool = get_tool("WikiSearch")
        if tool.prepare:
            tool.prepare()


def annotation_done(acfg: AnnotateConfig) -> bool:
    """The annotation in ``acfg.out`` is finished and its outputs are what its manifest recorded.
    One whose C*, summary or candidates were cut off or edited counts as unfinished, so the stage
    runs again and the runner rebuilds them from the shards (a C* cut short otherwise)."""
    manifest = Path(acfg.out) / "manifest.json"
    if not manifest.is_file():
        return False
    try:
        listed = "files" in json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False  # the manifest itself cut: the runner rebuilds it
    # The runner says which files it rebuilds; a manifest listing no files has nothing to check against.
    return not listed or not Runner(acfg).damaged_outputs()


def annotate(acfg: AnnotateConfig, documents: Callable[[], list] | None = None) -> Path:
    """Corpus → C* (§2) into ``acfg.out``; an unfinished run resumes inside the runner.
    ``documents``: makes the windows to annotate instead of reading ``acfg.corpus``, called only
    when the annotation has yet to finish (a finished one is never re-cut)."""
    if not annotation_done(acfg):
        Runner(acfg, documents=documents() if documents else None).run()
    return Path(acfg.out)


def trained(folder: Path) -> bool:
    return (Path(folder) / TRAINED).is_file()


def train(tcfg: TrainConfig) -> Path:
    """Fine-tune into ``tcfg.out`` unless a finished run is there; an interrupted one resumes."""
    if not trained(Path(tcfg.out)):
        run_training(tcfg)
    return Path(tcfg.out)


def evaluate(ecfg: EvalConfig, runs: Iterable[tuple[str, str, list]], tasks: list, data_dir: Path,
             tools: Mapping, info: Mapping | None = None) -> Path:
    """Each (label, model, settings) of ``runs`` on ``tasks`` into ``ecfg.out``, through
    :func:`~toolformer_kit.eval.run.evaluate_model` (backend, device and dtype from ``ecfg``); the
    caller writes the report, which reads every run back. ``info`` is recorded with each run."""
    for label, model, settings in runs:
        evaluate_model(ecfg, label, model, settings, tasks, data_dir, dict(tools), info=info)
    return Path(ecfg.out)
