"""Importing transformers' Trainer where a folder named ``datasets/`` is on ``sys.path``.

Why: a folder without ``__init__.py`` is a namespace package, and transformers decides once, when
its trainer module is first imported, whether the Hugging Face ``datasets`` library is installed by
finding *a* module of that name. This repository keeps its published data sets in ``datasets/``, so
under ``python -m …`` or pytest from the repository root the Trainer took that folder for the
library and failed (``module 'datasets' has no attribute 'Dataset'``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from pathlib import Path


def _namespace_dirs(name: str) -> set[str]:
    """The sys.path entries that provide ``name`` as a namespace package (empty: none, or a real one)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return set()
    if spec is None or spec.origin is not None or not spec.submodule_search_locations:
        return set()
    return {str(Path(p).resolve().parent) for p in spec.submodule_search_locations}


@contextlib.contextmanager
def without_namespace(name: str):
    """Hide the sys.path entries that make ``name`` a bare namespace package, for one import."""
    dirs = _namespace_dirs(name)
    if not dirs:
        yield
        return
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if str(Path(p or ".").resolve()) not in dirs]
    stale = sys.modules.pop(name, None)
    importlib.invalidate_caches()
    try:
        yield
    finally:
        sys.path[:] = saved
        if stale is not None and name not in sys.modules:
            sys.modules[name] = stale
