"""User-defined tools: a typed Python function plus demonstrations, without editing the package.

Two ways in, both ending in the same registry the built-in tools live in (so annotation,
decoding and the engine treat them alike):

* the decorator, in any Python file::

      from toolformer_kit.tools import register_tool

      @register_tool(demonstrations=["The word 'level' reversed is [Reverse(level)] 'level'.", ...])
      def Reverse(text: str) -> str:
          "Reverses a word."
          return text[::-1]

* a YAML/TOML/JSON file listing tools whose ``function`` is ``path/to/file.py:name`` (relative to
  the file) or ``package.module:name``; see :func:`load_tools_file`.

Files named in ``$TOOLFORMER_TOOLS`` (separated by ``os.pathsep``; ``.py`` files or tool files)
are loaded the first time a tool is looked up, and ``toolformer tools --tools FILE`` loads one
for a command.

**A tool file is code.** A ``.py`` file runs when it is loaded, and a ``function:`` entry imports
what it names (``subprocess:getoutput`` is a shell). So loading a tool file is an explicit opt-in,
as Hugging Face's ``trust_remote_code`` is: ``trust_code=True``, ``--trust-tool-code``, or
``$TOOLFORMER_TRUST_TOOL_CODE=1``. Without it a tool file is refused before anything in it runs,
and the refusal names the three ways in.

A demonstration is either an (input, output) pair or just the output: the text with calls
written in, from which the input is recovered by removing the calls. Every output must contain a
call to the tool and must be its input with calls inserted, which is checked at registration.

>>> t = make_tool(lambda text: text.upper(), "Shout",
...               demonstrations=["He said [Shout(hi)] hi.", "She wrote [Shout(bye)] bye."])
>>> t.demonstrations[0], t("hi")
(('He said hi.', 'He said [Shout(hi)] hi.'), 'HI')
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
import os
import sys
import threading
import typing
from pathlib import Path
from typing import Any, Callable, Iterable

from ..calls import find_calls, strip_calls
from ..config import ConfigError, load_config_file
from .base import PAPER_CALCULATOR_MT, PAPER_DEFAULT, TOOLS, AnnotationSettings, Tool

log = logging.getLogger(__name__)

TOOLS_ENV = "TOOLFORMER_TOOLS"
TRUST_ENV = "TOOLFORMER_TRUST_TOOL_CODE"
_NAMED_SETTINGS = {"paper_default": PAPER_DEFAULT, "default": PAPER_DEFAULT,
                   "paper_calculator_mt": PAPER_CALCULATOR_MT, "calculator_mt": PAPER_CALCULATOR_MT}


class ToolDefinitionError(ConfigError):
    """A user tool that cannot be registered; the message says which part and how to fix it."""


def _settings(value: Any) -> AnnotationSettings:
    if value is None:
        return PAPER_DEFAULT
    if isinstance(value, AnnotationSettings):
        return value
    if isinstance(value, str) and value.lower() in _NAMED_SETTINGS:
        return _NAMED_SETTINGS[value.lower()]
    if isinstance(value, dict):
        try:
            return AnnotationSettings(**value)
        except TypeError as exc:
            raise ToolDefinitionError(f"settings {value}: {exc}; use tau_s, k, m and tau_f") from None
    raise ToolDefinitionError(f"settings {value!r}: give a mapping of tau_s/k/m/tau_f or one of "
                              f"{', '.join(sorted(_NAMED_SETTINGS))}")


def check_demonstrations(name: str, demos: Iterable[Any]) -> list[tuple[str, str]]:
    """(input, output) pairs, each output being its input with at least one call to ``name``."""
    pairs = []
    for n, demo in enumerate(demos, 1):
        if isinstance(demo, str):
            demo = (strip_calls(demo), demo)
        elif isinstance(demo, dict):
            demo = (demo.get("input") or strip_calls(demo.get("output", "")), demo.get("output", ""))
        x, y = (str(part) for part in demo)
        if not any(p.call.tool == name for p in find_calls(y)):
            raise ToolDefinitionError(f"{name} demonstration {n} has no call to {name}; write it like "
                                      f"'... [{name}(input)] ...'")
        if strip_calls(y) != x:
            raise ToolDefinitionError(f"{name} demonstration {n}: the output must be the input with "
                                      f"calls inserted, but without its calls it reads {strip_calls(y)!r}")
        pairs.append((x, y))
    if not pairs:
        raise ToolDefinitionError(f"tool {name} needs demonstrations: 3-8 texts showing where its calls go")
    if not 3 <= len(pairs) <= 8:
        log.warning("tool %s has %d demonstrations; 3-8 work best", name, len(pairs))
    return pairs


def _text_fn(fn: Callable, name: str) -> tuple[Callable[[str], Any], bool]:
    """Adapt ``fn`` to text → result; also says whether it takes an input at all."""
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return fn, True
    if len(params) > 1:
        raise ToolDefinitionError(f"tool {name}: {getattr(fn, '__name__', fn)} takes {len(params)} "
                                  "arguments; a tool takes one text argument (or none)")
    if not params:
        return (lambda _text: fn()), False
    try:
        hint = typing.get_type_hints(fn).get(params[0].name, str)
    except Exception:  # unresolvable annotations: trust the caller
        hint = str
    if hint not in (str, Any, typing.Optional[str]):
        raise ToolDefinitionError(f"tool {name}: its argument is annotated {hint}, but tools receive "
                                  "text; annotate it 'str' and parse inside the function")
    return fn, True


def _instruction(name: str, fn: Callable) -> str:
    doc = inspect.getdoc(fn) or ""
    first = doc.split("\n\n", 1)[0].replace("\n", " ").strip()
    what = f" {first}" if first else ""
    return (f"Your task is to add calls to a {name} API to a piece of text.{what} "
            f"A call looks like [{name}(input)]. Here are some examples:")


def make_tool(fn: Callable, name: str | None = None, *, demonstrations: Iterable[Any],
              instruction: str | None = None, settings: Any = None, **options: Any) -> Tool:
    """A :class:`Tool` from a typed function; ``options`` are further :class:`Tool` fields."""
    name = name or getattr(fn, "__name__", "")
    if not name.isidentifier():
        raise ToolDefinitionError(f"tool name {name!r} must be an identifier such as 'WordCount'")
    text_fn, takes_input = _text_fn(fn, name)
    options.setdefault("takes_input", takes_input)
    options.setdefault("description", (inspect.getdoc(fn) or "").split("\n", 1)[0])
    return Tool(name=name, fn=text_fn, instruction=instruction or _instruction(name, fn),
                demonstrations=check_demonstrations(name, demonstrations), settings=_settings(settings),
                **options)


def register_tool(name: str | None = None, *, demonstrations: Iterable[Any], instruction: str | None = None,
                  settings: Any = None, overwrite: bool = False, **options: Any) -> Callable[[Callable], Tool]:
    """Decorator: register the function as a tool (named after it unless ``name`` is given)."""

    def decorate(fn: Callable) -> Tool:
        tool = make_tool(fn, name, demonstrations=demonstrations, instruction=instruction,
                         settings=settings, **options)
        _add(tool, overwrite)
        return tool

    return decorate


_MODULES: dict[str, Any] = {}
_MODULES_LOCK = threading.RLock()


def load_python_file(path: str | os.PathLike) -> Any:
    """Import a .py file once per process (its decorators register its tools)."""
    path = Path(path).expanduser().resolve()
    with _MODULES_LOCK:
        if str(path) not in _MODULES:
            if not path.is_file():
                raise ToolDefinitionError(f"tool file {path} does not exist")
            mod_name = f"toolformer_user_tools_{abs(hash(str(path)))}"
            spec = importlib.util.spec_from_file_location(mod_name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[mod_name] = module
            spec.loader.exec_module(module)
            _MODULES[str(path)] = module
        return _MODULES[str(path)]


def resolve_function(target: str, base: Path) -> Any:
    """``file.py:attr`` (relative to ``base``) or ``package.module:attr``."""
    where, _, attr = target.rpartition(":")
    if not where or not attr:
        raise ToolDefinitionError(f"function {target!r}: write it as 'file.py:name' or 'package.module:name'")
    if where.endswith(".py"):
        module = load_python_file(base / where)
    else:
        module = importlib.import_module(where)
    if not hasattr(module, attr):
        raise ToolDefinitionError(f"function {target!r}: {where} has no attribute {attr!r}")
    return getattr(module, attr)


def _add(tool: Tool, overwrite: bool = False) -> None:
    try:
        TOOLS.add(tool.name, tool, overwrite=overwrite)
    except ValueError as exc:
        raise ToolDefinitionError(f"{exc}, or rename the new tool") from None


def _register_entry(entry: dict, base: Path, source: str) -> str:
    if not isinstance(entry, dict):
        raise ToolDefinitionError(f"{source}: each entry under 'tools:' must be a mapping with "
                                  "function and demonstrations")
    entry = dict(entry)
    overwrite = bool(entry.pop("overwrite", False))
    target = entry.pop("function", None)
    if not target:
        raise ToolDefinitionError(f"{source}: every tool needs 'function: file.py:name'")
    obj = resolve_function(str(target), base)
    if isinstance(obj, Tool) and "demonstrations" not in entry and entry.get("name", obj.name) == obj.name:
        _add(obj)  # already a tool (decorated): registering the same object again is fine
        return obj.name
    fn = obj.fn if isinstance(obj, Tool) else obj
    name = entry.pop("name", None) or getattr(obj, "name", None) or getattr(fn, "__name__", "")
    try:
        tool = make_tool(fn, name, demonstrations=entry.pop("demonstrations", []), **entry)
    except TypeError as exc:
        raise ToolDefinitionError(f"{source}, tool {name}: {exc}") from None
    _add(tool, overwrite)
    return tool.name


def trusted(trust_code: bool | None) -> bool:
    """The caller's choice, else ``$TOOLFORMER_TRUST_TOOL_CODE``."""
    return bool(trust_code) if trust_code is not None else os.environ.get(TRUST_ENV, "").strip() == "1"


def refuse_untrusted(path: Path, what: str) -> None:
    raise ToolDefinitionError(f"tool file {path} {what}: loading it runs that code. If you trust the file, pass "
                              f"--trust-tool-code (toolformer tools), trust_code=True (Python) or set {TRUST_ENV}=1")


def load_tools_file(path: str | os.PathLike, trust_code: bool | None = None) -> list[str]:
    """Register the tools a file defines; returns their names. Refused unless the code it runs is
    trusted (:func:`trusted`): checked before anything in the file is imported.

    A ``.py`` file is imported (its decorated functions register themselves). A YAML/TOML/JSON
    file holds ``tools:``, a list of entries with ``function``, ``demonstrations`` and optionally
    ``name``, ``instruction``, ``settings`` (tau_s/k/m/tau_f or ``paper_calculator_mt``),
    ``timeout``, ``cacheable``, ``max_input_chars``.
    """
    path = Path(path).expanduser()
    with _MODULES_LOCK:
        key = str(path.resolve())
        if key not in _FILES:  # once per process: a second load would meet its own tools
            _FILES[key] = _load_tools_file(path, trusted(trust_code))
        return list(_FILES[key])


_FILES: dict[str, list[str]] = {}


def _load_tools_file(path: Path, trust: bool) -> list[str]:
    if path.suffix == ".py":
        if not trust:
            refuse_untrusted(path, "is Python code")
        before = set(TOOLS.names())
        load_python_file(path)
        return sorted(set(TOOLS.names()) - before)

    data = load_config_file(path)
    entries = data.get("tools", [data] if "function" in data else None)
    if not isinstance(entries, list):
        raise ToolDefinitionError(f"{path} must hold 'tools:', a list of tool entries")
    named = [str(e.get("function")) for e in entries if isinstance(e, dict) and e.get("function")]
    if named and not trust:
        refuse_untrusted(path, f"names code to import ({', '.join(named)})")
    return [_register_entry(e, path.parent, str(path)) for e in entries]


_ENV_LOADED: set[str] = set()


def load_env_tools() -> list[str]:
    """Load each file in ``$TOOLFORMER_TOOLS`` once per process."""
    names: list[str] = []
    with _MODULES_LOCK:
        for item in filter(None, os.environ.get(TOOLS_ENV, "").split(os.pathsep)):
            if item not in _ENV_LOADED:
                names += load_tools_file(item)
                _ENV_LOADED.add(item)  # after: a refused file is refused again, never skipped
    return names
