"""``stages.json``, the recipe's ledger: which stage was finished with which settings, and how long
it took, so that a re-run skips a finished stage, refuses one made with other settings, and adds
an evaluation's resumed seconds to the earlier runs' instead of replacing them."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

from ..config import ConfigError, to_dict
from ..files import write_atomic
from .recipe import ExperimentConfig

log = logging.getLogger(__name__)

STAGES_FILE = "stages.json"
# The settings each stage's output depends on (besides the stages before it).
KEYS = {
    "corpus": ("corpus", "docs", "dev_docs", "seed", "tasks", "cstar_dataset"),
    "annotate": ("model", "sampler_model", "tools", "window_tokens", "k", "m", "tau_s", "tau_f", "call_cost",
                 "wiki_exclude_self", "cstar_dataset"),
    "train": ("model", "train_steps", "train_batch", "learning_rate", "max_length", "train_keep", "train_dev",
              "cstar_texts", "lora"),
}


def stage_settings(cfg: ExperimentConfig, stage: str) -> dict:
    """What a stage was made with: its own keys and those of every stage it reads.

    >>> s = stage_settings(ExperimentConfig(name="t"), "train")
    >>> "docs" in s and "tools" in s and "eval_limit" not in s
    True
    """
    order = list(KEYS)
    keys = [k for st in order[: order.index(stage) + 1] for k in KEYS[st]]
    values = to_dict(cfg)
    return {k: values[k] for k in keys}


_DEFAULTS = {f.name: f.default for f in dataclasses.fields(ExperimentConfig)
             if f.default is not dataclasses.MISSING}


class Ledger:
    """``stages.json``: which stage was finished with which settings, and how long it took."""

    def __init__(self, out: Path):
        self.path = out / STAGES_FILE
        self.data = {}
        if self.path.is_file():
            try:
                self.data = json.loads(self.path.read_text())
            except ValueError:  # cut off by a kill or edited: rebuilt from experiment.json (preflight)
                log.warning("%s is damaged (not JSON); rebuilding it from experiment.json", self.path)

    def check(self, stage: str, settings: dict, done: bool) -> bool:
        """True when ``stage`` is complete with these settings; an error when complete with others."""
        old = self.data.get(stage, {}).get("settings")
        if old is not None:  # a setting added since the stage ran was then at its default
            old = {**{k: _DEFAULTS[k] for k in settings if k not in old and k in _DEFAULTS}, **old}
        if done and old is not None and old != settings:
            changed = sorted(k for k in settings if old.get(k) != settings[k])
            raise ConfigError(f"{self.path.parent}/{stage} was made with other settings "
                              f"({', '.join(f'{k}: {old.get(k)!r} → {settings[k]!r}' for k in changed)}); "
                              f"use another --out, or delete {self.path.parent} to start over")
        return done and old is not None

    def record(self, stage: str, settings: dict | None, seconds: float, mode: str = "set") -> None:
        """``mode``: ``set`` the stage's seconds (it ran in full), ``add`` them to the earlier runs'
        (an evaluation resumed), or ``keep`` the earlier runs' (a re-run that had nothing to do:
        it must not inflate, nor replace, what the work took). The last run's are kept apart."""
        entry = self.data.setdefault(stage, {})
        if settings is not None:
            entry["settings"] = settings
        if mode != "keep" or "seconds" not in entry:
            entry["seconds"] = round(seconds + entry.get("seconds", 0.0) * (mode == "add"), 1)
        entry["seconds_last_run"] = round(seconds, 1)
        write_atomic(self.path, json.dumps(self.data, indent=1))


def _mode(stage: str, guard, before: int, after: int) -> str:
    """How a finished stage's seconds enter the ledger (see :meth:`Ledger.record`): a guarded
    stage ran in full; an evaluation that found answers adds what it answered, or keeps the
    earlier seconds when it answered nothing; other unguarded stages (models, ceiling, report)
    keep their first run's.

    >>> _mode("annotate", "annotate", 0, 0), _mode("evaluate", None, 0, 9), _mode("evaluate", None, 4, 9)
    ('set', 'set', 'add')
    >>> _mode("evaluate", None, 9, 9), _mode("report", None, 9, 9)
    ('keep', 'keep')
    """
    if guard:
        return "set"
    if stage == "evaluate":
        return "set" if before == 0 else "add" if after > before else "keep"
    return "keep"
