"""Where a study's runs live and with which settings: the recipe settings under a study, its
folders per recipe and swept value. The study driver (:mod:`.studies`) and what reads its runs
back (:mod:`.study_results`, :mod:`.latency`) use them, so they sit below all three.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..config import ConfigError, from_dict, to_dict
from toolformer_kit.experiment.ledger import KEYS
from toolformer_kit.experiment.recipe import ExperimentConfig, available, load_recipe

# The recipe settings a study may set for every recipe (None: each recipe's own value): sizes, the
# compute dtype and the call cost.
SIZE_KEYS = ("docs", "k", "m", "train_steps", "eval_limit", "eval_batch", "tasks", "dtype", "call_cost")


def per_recipe(study, recipe: str) -> dict[str, str]:
    """The ``per_recipe`` overrides that name ``recipe``.

    >>> from toolformer_kit.study.run import StudyConfig
    >>> per_recipe(StudyConfig(name="tau", per_recipe=["search.docs=60", "math.docs=9"]), "search")
    {'docs': '60'}
    """
    out = {}
    for item in study.per_recipe:
        name, _, rest = item.partition(".")
        key, eq, value = rest.partition("=")
        if not eq or not key:
            raise ConfigError(f"per-recipe setting {item!r} must look like RECIPE.SETTING=VALUE, e.g. search.docs=60")
        if name not in study.recipes and name not in available():
            raise ConfigError(f"per-recipe setting {item!r} names {name!r}, which is no recipe "
                              f"(recipes: {', '.join(available())})")
        _check_setting(item, key)
        if name == recipe:
            out[key.replace("-", "_")] = value
    return out


def _check_setting(item: str, key: str) -> None:
    """An unknown setting is the flag's mistake, not the recipe file's: name the flag."""
    import dataclasses
    import difflib

    fields = [f.name for f in dataclasses.fields(ExperimentConfig)]
    if key.replace("-", "_") not in fields:
        close = difflib.get_close_matches(key.replace("-", "_"), fields, 1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"--per-recipe {item!r}: {key!r} is no recipe setting{hint}")


def recipe_config(study, recipe: str, out: Path, model: str | None = None) -> ExperimentConfig:
    """A recipe's settings under the study: its YAML, the study's per-recipe overrides, then the
    sizes set for every recipe (so ``--eval-limit 60`` sets every recipe), the model; the run goes
    to ``out`` (its own report beside it, in ``out/results``)."""
    # a study measures annotation itself (each model its own C*, τf and λ re-filtered from candidates),
    # so it never takes a recipe's published dataset; --per-recipe RECIPE.cstar_dataset=... still can
    over: dict[str, Any] = {"cstar_dataset": ""} | per_recipe(study, recipe)
    over |= {k: getattr(study, k) for k in SIZE_KEYS if getattr(study, k) is not None}
    over |= {"seed": study.seed, "bootstrap": study.bootstrap, "threads": study.threads, "data_dir": study.data_dir}
    if model or study.model:
        over |= {"model": model or study.model, "sampler_model": ""}
    over |= {"out": str(out), "results": str(out / "results")}
    return load_recipe(recipe, over)


def reused_config(study, recipe: str, out: Path) -> ExperimentConfig:
    """With ``--from-run``: the source run's own settings (they made the annotation), the study's
    downstream ones on top; an upstream setting that differs is an error naming the fix."""
    source = Path(study.from_run)
    meta = source / "experiment.json"
    if not meta.is_file() or not (source / "annotate" / "manifest.json").is_file():
        raise ConfigError(f"--from-run {source} is not a finished experiment run (it needs experiment.json and "
                          f"annotate/manifest.json); run `toolformer experiment {recipe}` first, or drop --from-run")
    made = json.loads(meta.read_text("utf-8"))["settings"]
    wanted = to_dict(recipe_config(study, recipe, out))
    upstream = [k for stage in ("corpus", "annotate") for k in KEYS[stage]]
    clash = sorted(k for k in upstream if k in typed_upstream(study, recipe) and wanted[k] != made.get(k))
    if clash:
        raise ConfigError(f"--from-run {source} was annotated with {', '.join(f'{k} {made.get(k)!r}' for k in clash)}; "
                          "drop those settings to reuse it, or annotate anew without --from-run")
    values = {k: v for k, v in made.items() if k in upstream} | {k: v for k, v in wanted.items() if k not in upstream}
    return from_dict(ExperimentConfig, values, source=str(meta))


def typed_upstream(study, recipe: str) -> set[str]:
    """The corpus/annotation settings the study sets itself (the rest come from the source run)."""
    typed = {k for k in SIZE_KEYS if getattr(study, k) is not None} | set(per_recipe(study, recipe))
    return typed | ({"model"} if study.model else set())


def value_label(study, value: float) -> str:
    """
    >>> from toolformer_kit.study.run import StudyConfig
    >>> value_label(StudyConfig(name="tau"), 0.5), value_label(StudyConfig(name="cost"), 2.0)
    ('tau-0.5', 'cost-2')
    """
    return f"{study.name}-{value:g}"


def sweep_configs(study) -> list[tuple[str, Path, ExperimentConfig]]:
    """(recipe, its folder, its settings) of a τf or λ sweep."""
    out = []
    for recipe in study.recipes:
        base = Path(study.out) / recipe
        out.append((recipe, base, reused_config(study, recipe, base) if study.from_run
                    else recipe_config(study, recipe, base)))
    return out
