"""The one place a tool's annotation parameters are resolved: the paper's τs, k, m and τf, and the
call cost λ (not the paper's).

Why one place: annotation, the re-filter of a finished run, the τf and λ studies and the
inspector all need "which τf did (or will) this tool's calls meet"; each used to answer it on its
own, and one of them left out the per-tool overrides. Every caller now states what it knows as
layers and :func:`resolve` decides, highest first:

1. ``explicit`` — a value the caller asked for outright, for every tool (a study's swept τf, the
   τf a run recorded in its summary, ``toolformer positions --tau-s``);
2. ``per_tool`` — the run's override for this one tool (``--per-tool Calculator.tau_f=0.25``);
3. ``every`` — the run's value for every tool (``--tau-f 2``);
4. the tool's own :class:`~toolformer_kit.tools.base.AnnotationSettings` (the paper's: τs 0.05,
   k 5, m 5, τf 1.0; Calculator and MT 0, 20, 10, 0.5; λ 0).

A layer leaves a parameter to the next one by not naming it, or by naming it as None (a config
field left unset).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Optional

from ..config import ConfigError
from ..tools.base import AnnotationSettings

# Each parameter and its type (what a TOOL.SETTING=VALUE override is parsed as).
PARAMETERS = {"tau_s": float, "k": int, "m": int, "tau_f": float, "call_cost": float}

Layer = Optional[Mapping[str, Any]]


def _set(layer: Layer) -> dict[str, Any]:
    """The parameters a layer sets (None values and other keys are left to the next layer).

    >>> _set({"tau_f": None, "k": 3, "out": "x"}), _set(None)
    ({'k': 3}, {})
    """
    return {k: v for k, v in (layer or {}).items() if k in PARAMETERS and v is not None}


def resolve(own: AnnotationSettings, explicit: Layer = None, per_tool: Layer = None,
            every: Layer = None) -> AnnotationSettings:
    """A tool's settings: ``explicit`` > ``per_tool`` > ``every`` > ``own`` (its paper settings).

    >>> from toolformer_kit.tools.base import PAPER_CALCULATOR_MT as calc
    >>> resolve(calc)
    AnnotationSettings(tau_s=0.0, k=20, m=10, tau_f=0.5, call_cost=0.0)
    >>> resolve(calc, per_tool={"tau_f": 0.25}, every={"tau_f": 2.0, "k": 3, "m": None})
    AnnotationSettings(tau_s=0.0, k=3, m=10, tau_f=0.25, call_cost=0.0)
    >>> resolve(calc, explicit={"tau_f": 0.0}, per_tool={"tau_f": 0.25}).tau_f
    0.0
    """
    return dataclasses.replace(own, **{**_set(every), **_set(per_tool), **_set(explicit)})


def parse_per_tool(items) -> dict[str, dict]:
    """``TOOL.SETTING=VALUE`` entries → ``{tool: {setting: value}}`` (later entries win).

    >>> parse_per_tool(["Calendar.tau_s=0", "Calculator.k=7"])
    {'Calendar': {'tau_s': 0.0}, 'Calculator': {'k': 7}}
    """
    out: dict[str, dict] = {}
    for item in items:
        name, _, rest = item.partition(".")
        key, eq, value = rest.partition("=")
        if not eq or key not in PARAMETERS:
            raise ConfigError(f"per-tool setting {item!r} must look like TOOL.SETTING=VALUE with SETTING one of "
                              "tau_s, k, m, tau_f, call_cost (e.g. Calendar.tau_s=0)")
        try:
            out.setdefault(name, {})[key] = PARAMETERS[key](value)
        except ValueError:
            raise ConfigError(f"per-tool setting {item!r}: {value!r} is not a number") from None
        if key == "call_cost" and out[name][key] < 0:
            raise ConfigError(f"per-tool setting {item!r}: a call cost is >= 0 nats (0 is the paper's rule)")
    return out


def resolve_run(tool, settings: Mapping[str, Any], explicit: Layer = None) -> AnnotationSettings:
    """``tool``'s settings in an annotation run made with ``settings`` (an
    :class:`~.config.AnnotateConfig`'s fields, or the ``settings`` its manifest.json records): its
    ``per_tool`` entry, then the run-wide fields, then the tool's own.

    >>> from toolformer_kit.tools.base import Tool
    >>> t = Tool("Calendar", str, "", [("a", "b")])
    >>> resolve_run(t, {"k": 3, "tau_f": None, "per_tool": ["Calendar.tau_s=0", "QA.k=9"]})
    AnnotationSettings(tau_s=0.0, k=3, m=5, tau_f=1.0, call_cost=0.0)
    """
    per_tool = parse_per_tool(settings.get("per_tool") or []).get(tool.name)
    return resolve(tool.settings, explicit, per_tool, settings)
