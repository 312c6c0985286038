"""Stage configs: one dataclass per stage drives both the CLI flags and YAML/TOML config files.

Each field's ``metadata["help"]`` is its only documentation; :func:`add_dataclass_args` turns the
fields into ``--flag`` options and :func:`build_config` merges, in increasing priority, the
dataclass defaults, a ``--config`` file and the flags a user typed.

>>> from dataclasses import dataclass, field
>>> @dataclass
... class Demo:
...     tau: float = field(default=1.0, metadata={"help": "filter threshold"})
...     tools: list[str] = field(default_factory=lambda: ["Calculator"], metadata={"help": "tools"})
>>> import argparse
>>> p = argparse.ArgumentParser()
>>> add_dataclass_args(p, Demo)
>>> build_config(Demo, p.parse_args(["--tau", "0.5", "--tools", "A,B"]))
Demo(tau=0.5, tools=['A', 'B'])
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

C = TypeVar("C")


class ConfigError(ValueError):
    """A config file or flag that cannot be used; the message says which and how to fix it."""


def _field_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _base(tp: Any) -> Any:
    """``Optional[X]`` → X; everything else unchanged."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if typing.get_origin(tp) in (typing.Union, types.UnionType) and len(args) == 1:
        return args[0]
    return tp


def _converter(tp: Any):
    tp = _base(tp)
    if typing.get_origin(tp) in (list, tuple):
        (item,) = typing.get_args(tp)[:1] or (str,)
        conv = _converter(item)
        return lambda s: [conv(x.strip()) for x in s.split(",") if x.strip()] if isinstance(s, str) else list(s)
    if tp is bool:
        return _to_bool
    if tp in (int, float, str):
        return tp
    return str


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"expected a boolean (true/false), got {value!r}")


def add_dataclass_args(parser: argparse.ArgumentParser, cls: type) -> None:
    """One ``--flag`` per field; defaults stay None so we can tell what the user typed."""
    types = _field_types(cls)
    for f in dataclasses.fields(cls):
        if f.metadata.get("cli") is False:
            continue
        flag = "--" + f.name.replace("_", "-")
        help_text = f.metadata.get("help", "")
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None  # type: ignore[misc]
        )
        help_text += f" (default: {default})" if default not in (None, "") else ""
        if _base(types[f.name]) is bool:
            parser.add_argument(flag, dest=f.name, nargs="?", const=True, default=None,
                                type=_to_bool, help=help_text)
        else:
            parser.add_argument(flag, dest=f.name, default=None, help=help_text,
                                type=_converter(types[f.name]))
    parser.add_argument("--config", default=None, help="YAML, TOML or JSON file with these settings")


def load_config_file(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist; pass the path of a YAML/TOML/JSON file")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text) or {}
        elif path.suffix == ".toml":
            import tomllib

            data = tomllib.loads(text)
        else:
            data = json.loads(text)
    except Exception as exc:  # parser errors differ per format; one message for all
        raise ConfigError(f"could not parse config file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping of setting: value")
    return {k.replace("-", "_"): v for k, v in data.items()}


def from_dict(cls: type[C], values: dict[str, Any], source: str = "config") -> C:
    """Build ``cls`` from a mapping, converting strings and naming unknown keys."""
    types = _field_types(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - names)
    if unknown:
        import difflib

        hints = [f"{u!r}" + (f" (did you mean {m[0]!r}?)" if (m := difflib.get_close_matches(u, names, 1)) else "")
                 for u in unknown]
        raise ConfigError(f"unknown setting(s) in {source}: {', '.join(hints)}")
    kwargs = {}
    for name, value in values.items():
        conv = _converter(types[name])
        kwargs[name] = value if value is None else conv(value)
    return cls(**kwargs)


def build_config(cls: type[C], args: argparse.Namespace) -> C:
    """Defaults < ``--config`` file < flags typed on the command line."""
    values: dict[str, Any] = {}
    if getattr(args, "config", None):
        values.update(load_config_file(args.config))
    for f in dataclasses.fields(cls):
        typed = getattr(args, f.name, None)
        if typed is not None:
            values[f.name] = typed
    return from_dict(cls, values, source=getattr(args, "config", None) or "flags")


def to_dict(cfg: Any) -> dict[str, Any]:
    """A JSON-ready copy, for manifests and model cards."""
    return json.loads(json.dumps(dataclasses.asdict(cfg), default=str))
