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
import difflib
import json
import shlex
import types
import typing
from pathlib import Path
from typing import Any, Mapping, Sequence, TypeVar

import yaml

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


# Ranges by setting name, shared by every stage's dataclass (a field's metadata "min"/"max" wins).
# Every other number must be finite and >= 0: no setting of this package means anything below 0,
# except thresholds on a loss difference, which may be any finite number.
AT_LEAST_ONE = {"k", "m", "shard_size", "batch_size", "eval_batch_size", "effective_batch", "limit",
                "max_steps", "max_new_tokens", "max_call_tokens", "actors", "default_docs", "docs_per_source",
                "max_length", "ppl_window", "ppl_stride", "threads", "lora_r", "eval_limit", "train_steps",
                "train_batch", "logging_steps", "eval_steps", "bootstrap"}
FRACTIONS = {"tau_s", "top_p", "calculator_rate", "mt_confidence", "dev_fraction", "warmup_ratio", "lora_dropout"}
POSITIVE = {"tool_timeout", "learning_rate"}
ANY_SIGN = {"tau_f", "report_tau_f"}


def _bounds(name: str, meta: Any) -> tuple[float | None, float | None, bool]:
    """(low, high, low is exclusive) for a numeric setting."""
    if "min" in meta or "max" in meta:
        return meta.get("min"), meta.get("max"), False
    if name in ANY_SIGN:
        return None, None, False
    if name in AT_LEAST_ONE:
        return 1, None, False
    if name in FRACTIONS:
        return 0, 1, False
    return 0, None, name in POSITIVE


def _number(name: str, tp: type, value: Any, meta: Any = None) -> Any:
    """``value`` as an int/float within the setting's range, or a ConfigError saying what is allowed.

    >>> _number("k", int, "5"), _number("tau_f", float, "-0.5"), _number("k", int, 4.0)
    (5, -0.5, 4)
    >>> _number("k", int, 3.7)
    Traceback (most recent call last):
    ...
    toolformer_kit.config.ConfigError: k must be a whole number, got 3.7
    """
    kind = "a whole number" if tp is int else "a number"
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ConfigError(f"{name} must be {kind}, got {value!r}")
    try:
        num = float(value) if tp is float else (int(value) if isinstance(value, (int, str)) else value)
    except ValueError:
        raise ConfigError(f"{name} must be {kind}, got {value!r}") from None
    if tp is int and isinstance(num, float):
        if not num.is_integer():
            raise ConfigError(f"{name} must be {kind}, got {value!r}")
        num = int(num)
    if num != num or num in (float("inf"), float("-inf")):
        raise ConfigError(f"{name} must be a finite number, got {value!r}")
    low, high, strict = _bounds(name, meta or {})
    if (low is not None and (num < low or (strict and num == low))) or (high is not None and num > high):
        want = (f"> {low}" if strict else f">= {low}") if high is None else f"between {low} and {high}"
        raise ConfigError(f"{name} must be {want}, got {value!r}")
    return num


def _text(name: str, value: Any) -> str:
    if isinstance(value, (dict, list, tuple, set)):
        raise ConfigError(f"{name} must be a single value, got {value!r}")
    return str(value)


def _convert(f: dataclasses.Field, tp: Any, value: Any) -> Any:
    """One setting's value, converted and range-checked (None stays None)."""
    if value is None:
        return None
    tp = _base(tp)
    if typing.get_origin(tp) in (list, tuple):
        (item,) = typing.get_args(tp)[:1] or (str,)
        if isinstance(value, str):
            items = [x.strip() for x in value.split(",") if x.strip()]
        elif isinstance(value, (list, tuple)):
            items = list(value)
        else:
            raise ConfigError(f"{f.name} must be a list or comma-separated text, got {value!r}")
        if not items and _default(f) and not f.metadata.get("empty_ok"):
            raise ConfigError(f"{f.name} must not be empty; name at least one, e.g. {','.join(map(str, _default(f)))}")
        return [_scalar(f, item, x) for x in items]
    return _scalar(f, tp, value)


def _scalar(f: dataclasses.Field, tp: Any, value: Any) -> Any:
    if tp is bool:
        return _to_bool(value, f.name)
    if tp in (int, float):
        return _number(f.name, tp, value, f.metadata)
    return _text(f.name, value)


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else None  # type: ignore[misc]


def _to_bool(value: Any, name: str = "value") -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in BOOL_WORDS:
        return BOOL_WORDS[text]
    raise ConfigError(f"{name} must be true or false, got {value!r}")


BOOL_WORDS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}


class BoolFlag(argparse.Action):
    """``--name`` / ``--no-name``: takes no value, so it can never swallow a positional argument.

    ``--name=false`` and ``--name false`` still work: :func:`normalize_bool_args` rewrites them
    before parsing (the second only when the word is a boolean one).
    """

    def __init__(self, option_strings, dest, **kw):
        kw.pop("nargs", None)
        super().__init__(option_strings, dest, nargs=0, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, not (option_string or "").startswith("--no-"))


def _flag_type(f: dataclasses.Field, tp: Any):
    def convert(text: str) -> Any:
        try:
            return _convert(f, tp, text)
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = f.name
    return convert


def add_dataclass_args(parser: argparse.ArgumentParser, cls: type) -> None:
    """One ``--flag`` per field; defaults stay None so we can tell what the user typed."""
    types = _field_types(cls)
    for f in dataclasses.fields(cls):
        if f.metadata.get("cli") is False:
            continue
        flag = "--" + f.name.replace("_", "-")
        help_text = f.metadata.get("help", "")
        default = _default(f)
        help_text += f" (default: {default})" if default not in (None, "") else ""
        if _base(types[f.name]) is bool:
            parser.add_argument(flag, "--no-" + flag[2:], dest=f.name, action=BoolFlag, default=None,
                                help=help_text)
        else:
            parser.add_argument(flag, dest=f.name, default=None, help=help_text, type=_flag_type(f, types[f.name]))
    parser.add_argument("--config", default=None, help="YAML, TOML or JSON file with these settings")


def _bool_options(parser: argparse.ArgumentParser) -> tuple[set[str], set[str]]:
    """Option strings that are BoolFlags, and all the others, over a parser and its subparsers."""
    bools, others = set(), set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                b, o = _bool_options(sub)
                bools |= b
                others |= o
        else:
            (bools if isinstance(action, BoolFlag) else others).update(action.option_strings)
    return bools, others


def normalize_bool_args(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """The older ``--flag true`` / ``--flag=false`` forms rewritten to ``--flag`` / ``--no-flag``.

    >>> p = argparse.ArgumentParser()
    >>> _ = p.add_argument("--resume", "--no-resume", action=BoolFlag)
    >>> _ = p.add_argument("prompt", nargs="*")
    >>> normalize_bool_args(p, ["--resume", "false", "--resume=1", "--resume", "a prompt"])
    ['--no-resume', '--resume', '--resume', 'a prompt']
    """
    bools, others = _bool_options(parser)
    bools -= others
    out, i = [], 0
    while i < len(argv):
        arg, nxt = argv[i], argv[i + 1] if i + 1 < len(argv) else None
        name, eq, val = arg.partition("=")
        if name in bools and not name.startswith("--no-") and (eq or (nxt or "").lower() in BOOL_WORDS):
            word = val if eq else nxt
            if word.lower() not in BOOL_WORDS:
                raise ConfigError(f"{name} takes no value (or true/false), got {word!r}; "
                                  f"write {name} or --no-{name[2:]}")
            out.append(name if BOOL_WORDS[word.lower()] else "--no-" + name[2:])
            i += 1 if eq else 2
            continue
        if arg == "--":
            out += argv[i:]
            break
        out.append(arg)
        i += 1
    return out


def load_config_file(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist; pass the path of a YAML/TOML/JSON file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path} is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as "
                          "UTF-8") from None
    try:
        if path.suffix in (".yaml", ".yml"):
            data = yaml.safe_load(text) or {}
        elif path.suffix == ".toml":
            import tomllib  # lazy: Python 3.11+, .toml files only

            data = tomllib.loads(text)
        else:
            data = json.loads(text)
    except Exception as exc:  # parser errors differ per format; one message for all
        raise ConfigError(f"could not parse config file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping of setting: value")
    odd = [repr(k) for k in data if not isinstance(k, str)]
    if odd:
        raise ConfigError(f"config file {path}: setting names must be words, not {', '.join(odd)} (YAML reads "
                          "1:, null: or true: as a number, none or a boolean)")
    return {k.replace("-", "_"): v for k, v in data.items()}


Layer = tuple[str, Mapping[str, Any]]  # (where the settings come from, for messages; the settings)


def layered(cls: type[C], *layers: Layer, extend: Sequence[str] = ()) -> C:
    """The one route from settings to a config: the dataclass defaults, then each ``(source,
    values)`` layer in order, a later layer winning (a recipe or preset file, a ``--config`` file,
    the flags typed); a list field named in ``extend`` is extended by later layers instead of
    replaced. Unknown keys and bad values are reported with the source of the layer that set them,
    so a typo in a ``--config`` file is not blamed on the recipe.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Demo:
    ...     k: int = config_field(5, "positions")
    ...     sizes: list[str] = config_field([], "per-task sizes", empty_ok=True)
    >>> layered(Demo, ("recipe", {"k": 2, "sizes": ["a=1"]}), ("flags", {"sizes": ["b=2"]}), extend=["sizes"])
    Demo(k=2, sizes=['a=1', 'b=2'])
    >>> layered(Demo, ("recipe", {"k": 2}), ("run.yaml", {"k": 0}))
    Traceback (most recent call last):
    ...
    toolformer_kit.config.ConfigError: k must be >= 1, got 0 (in run.yaml)
    """
    types = _field_types(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for source, values in layers:
        _known(values, fields, source)
        for name, value in values.items():
            try:
                value = _convert(fields[name], types[name], value)
            except ConfigError as exc:
                raise ConfigError(f"{exc} (in {source})") from None
            kwargs[name] = kwargs[name] + value if name in extend and kwargs.get(name) and value else value
    return cls(**kwargs)


def _known(values: Mapping[str, Any], fields: Mapping[str, Any], source: str) -> None:
    unknown = sorted(set(values) - set(fields))
    if unknown:
        hints = [f"{u!r}" + (f" (did you mean {m[0]!r}?)" if (m := difflib.get_close_matches(u, fields, 1)) else "")
                 for u in unknown]
        raise ConfigError(f"unknown setting(s) in {source}: {', '.join(hints)}")


def from_dict(cls: type[C], values: dict[str, Any], source: str = "config") -> C:
    """Build ``cls`` from one mapping (a stored record, a worker's settings): :func:`layered` with
    one layer."""
    return layered(cls, (source, values))


def file_layer(path: str | Path) -> Layer:
    """A settings file as a layer for :func:`layered`."""
    return str(path), load_config_file(path)


def typed_flags(cls: type, args: argparse.Namespace) -> dict[str, Any]:
    """The settings of ``cls`` that were typed as flags (the rest stay None in ``args``), in field
    order: the top layer of a run's settings, and what its recorded command line repeats."""
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(cls)
            if f.metadata.get("cli") is not False and getattr(args, f.name, None) is not None}


def build_config(cls: type[C], args: argparse.Namespace, base: Sequence[Layer] = (), extend: Sequence[str] = ()) -> C:
    """Defaults < ``base`` (a recipe's or study's own file) < ``--config`` file < flags typed on
    the command line (flags arrive already checked)."""
    config = [file_layer(args.config)] if getattr(args, "config", None) else []
    return layered(cls, *base, *config, ("flags", typed_flags(cls, args)), extend=extend)


def command_line(words: Sequence[str], flags: Mapping[str, Any]) -> str:
    """The command that reproduces a run: ``words`` (the program, its subcommand and positionals)
    and ``flags`` (field name → value, in the order given) as the flags that set them. One writer
    for every command that records how it was run, so results/ read the same way throughout.

    >>> command_line(["toolformer", "experiment", "math"], {"docs": 10, "tasks": ["svamp", "asdiv"], "ceiling": False})
    'toolformer experiment math --docs 10 --tasks svamp,asdiv --no-ceiling'
    >>> command_line(["toolformer", "chaining"], {"rounds": ["r1=runs/a b"], "typed": True})
    "toolformer chaining --rounds 'r1=runs/a b' --typed"
    """
    parts = list(words)
    for key, value in flags.items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):  # a switch: --typed / --no-typed, never "--typed True"
            parts.append(flag if value else "--no-" + flag[2:])
        else:
            parts += [flag, ",".join(map(str, value)) if isinstance(value, list) else str(value)]
    return " ".join(shlex.quote(p) for p in parts)


def to_dict(cfg: Any) -> dict[str, Any]:
    """A JSON-ready copy, for manifests and model cards."""
    return json.loads(json.dumps(dataclasses.asdict(cfg), default=str))


# ---------------------------------------------------------------- declaring settings
def config_field(default: Any, help_text: str, feeds: Sequence[type] = (), **meta: Any) -> Any:
    """A setting: its default (a list is copied per instance) and its one help text; ``feeds``: the
    stage configs whose field of the same name it sets (:func:`stage_config`), for a composite's own
    setting that every stage shares (``seed``); ``meta`` adds ``min``/``max`` (range), ``empty_ok=True``
    (a list that may be set empty), ``cli=False`` (no flag) or ``added=True`` (see :func:`recorded`).

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Demo:
    ...     tools: list[str] = config_field(["Calculator"], "tools")
    >>> Demo().tools is not Demo().tools
    True
    """
    meta = {"help": help_text, **({"to": _targets(feeds, "")} if feeds else {}), **meta}
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda d=default: list(d), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def stage_field(cls: type, name: str, default: Any = dataclasses.MISSING, note: str = "", also: Sequence[type] = (),
                feeds: bool = True, **meta: Any) -> Any:
    """A composite config's setting that *is* stage config ``cls``'s field ``name``: its help text
    (and range) are taken from there, so they are written once; ``default`` overrides the stage's
    (a recipe's smaller sizes), and ``note`` says what the setting does in the composite besides.
    The composite still annotates the field's type, which tests/test_config_composed.py checks
    against the stage's. :func:`stage_config` sets ``cls.name`` from it (and the field of the same
    name of each stage config in ``also``) unless ``feeds`` is False: a setting the composite
    applies itself (a campaign's shard size) only borrows the stage's help text.

    >>> from dataclasses import dataclass, fields
    >>> @dataclass
    ... class Stage:
    ...     seed: int = config_field(0, "seed for sampling")
    >>> @dataclass
    ... class Recipe:
    ...     seed: int = stage_field(Stage, "seed", 3, note="every stage")
    >>> Recipe().seed, fields(Recipe)[0].metadata["help"], fields(Recipe)[0].metadata["from"]
    (3, 'seed for sampling (every stage)', 'Stage.seed')
    """
    source = {f.name: f for f in dataclasses.fields(cls)}[name]
    if default is dataclasses.MISSING:
        default = source.default_factory() if source.default_factory is not dataclasses.MISSING else source.default
    help_text = source.metadata.get("help", "") + (f" ({note})" if note else "")
    meta = {**dict(source.metadata), **meta, "from": f"{cls.__name__}.{name}", "help": help_text}
    meta["to"] = _targets((cls, *also), name) if feeds else ()
    return config_field(default, help_text, **meta)


def _targets(classes: Sequence[type], name: str) -> tuple[str, ...]:
    return tuple(f"{c.__name__}.{name}" if name else c.__name__ for c in classes)


def stage_values(cls: type, cfg: Any, skip: Sequence[str] = ()) -> dict[str, Any]:
    """The fields of stage config ``cls`` that composite ``cfg`` sets, by their stage names: each
    :func:`stage_field` of ``cls`` (renamed back: ``train_steps`` is ``TrainConfig.max_steps``) and
    each field that ``feeds`` it; lists copied. ``skip``: stage fields left at the stage's default.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Train:
    ...     max_steps: int = config_field(100, "optimizer steps")
    ...     seed: int = config_field(0, "seed")
    >>> @dataclass
    ... class Recipe:
    ...     train_steps: int = stage_field(Train, "max_steps", 40)
    ...     seed: int = config_field(3, "seed for every stage", feeds=(Train,))
    >>> stage_values(Train, Recipe()), stage_config(Train, Recipe(), seed=7)
    ({'max_steps': 40, 'seed': 3}, Train(max_steps=40, seed=7))
    """
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cfg):
        for target in f.metadata.get("to", ()):
            stage, _, name = target.partition(".")
            if stage == cls.__name__ and (name or f.name) not in skip:
                value = getattr(cfg, f.name)
                out[name or f.name] = list(value) if isinstance(value, list) else value
    return out


def stage_config(cls: type[C], cfg: Any, skip: Sequence[str] = (), **run: Any) -> C:
    """Stage config ``cls`` built from composite ``cfg``'s declarations (:func:`stage_values`), with
    ``run`` on top: what one run of the stage sets itself (its folders, its data, a value computed
    from several settings). The one mapping from a composite to a stage, so that a renamed setting
    is mapped back in one place, from the field that declares it."""
    return cls(**{**stage_values(cls, cfg, skip), **run})


def recorded(cfg: Any) -> dict[str, Any]:
    """:func:`to_dict` without the settings marked ``added`` that are at their default: a setting
    added after runs were recorded (``dtype``, ``call_cost``) then leaves those records, and the
    reports rendered from them, byte for byte as they were."""
    values = to_dict(cfg)
    for f in dataclasses.fields(cfg):
        if f.metadata.get("added") and values.get(f.name) == _default(f):
            values.pop(f.name)
    return values
