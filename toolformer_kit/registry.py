"""One generic name → object registry, reused for models, tools, tasks and metrics.

Why one class: every extension point of the package (a user's tool, a new task, a metric)
should fail the same way on a typo — with the list of known names and a "did you mean" hint —
and accept lazy ``"module:attr"`` targets so that importing the registry never imports torch.

>>> animals = Registry("animal")
>>> @animals.register("cat")
... def make_cat():
...     return "meow"
>>> animals.get("cat")()
'meow'
>>> animals.get("cta")
Traceback (most recent call last):
...
toolformer_kit.registry.UnknownNameError: unknown animal 'cta'; did you mean 'cat'? Known: cat
"""

from __future__ import annotations

import difflib
import importlib
from typing import Callable, Generic, Iterator, TypeVar

T = TypeVar("T")


class UnknownNameError(KeyError):
    """Raised for a name nobody registered; the message lists the known names."""

    def __str__(self) -> str:  # KeyError would otherwise quote the whole message
        return str(self.args[0])


class Registry(Generic[T]):
    """Maps names to objects (or lazy ``"module:attr"`` strings resolved on first use)."""

    def __init__(self, kind: str, case_sensitive: bool = True):
        self.kind = kind
        self.case_sensitive = case_sensitive
        self._items: dict[str, T | str] = {}
        self._frozen = False

    def _key(self, name: str) -> str:
        return name if self.case_sensitive else name.lower()

    def add(self, name: str, obj: T | str, *, overwrite: bool = False) -> T | str:
        if self._frozen:
            raise RuntimeError(f"the {self.kind} registry is frozen; register before freeze()")
        key = self._key(name)
        if key in self._items and not overwrite and self._items[key] is not obj:
            raise ValueError(
                f"{self.kind} {name!r} is already registered; pass overwrite=True to replace it"
            )
        self._items[key] = obj
        return obj

    def register(self, name: str, *, overwrite: bool = False) -> Callable[[T], T]:
        """Decorator form of :meth:`add`."""

        def decorate(obj: T) -> T:
            self.add(name, obj, overwrite=overwrite)
            return obj

        return decorate

    def get(self, name: str) -> T:
        key = self._key(name)
        if key not in self._items:
            raise UnknownNameError(self.unknown_message(name))
        obj = self._items[key]
        if isinstance(obj, str) and ":" in obj:
            module, _, attr = obj.partition(":")
            obj = getattr(importlib.import_module(module), attr)
            self._items[key] = obj
        return obj  # type: ignore[return-value]

    def unknown_message(self, name: str) -> str:
        known = sorted(self._items)
        close = difflib.get_close_matches(self._key(name), known, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else "."
        return f"unknown {self.kind} {name!r}{hint} Known: {', '.join(known) or '(none)'}"

    def freeze(self) -> None:
        self._frozen = True

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: str) -> bool:
        return self._key(name) in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items)
