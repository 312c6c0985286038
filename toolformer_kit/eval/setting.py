"""The decoding setting of one evaluation run, as typed fields.

Why typed: a run's setting used to travel as a string ("k10+arrow") that the next stage parsed
back into ``k`` and ``force_arrow``, and the reports rebuilt names with f-strings. Now the fields
travel, and :attr:`Setting.name` is the one place a name is spelled: the folder a run's records
go to (``<model>/<setting>/<task>``), unchanged, so earlier runs stay readable. Names are parsed
only where they come from outside: a ``--settings`` flag, or a folder on disk
(:meth:`Setting.parse`).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

OFF = ("disabled", "off", "none")
ON = ("tools", "on", "enabled")


@dataclass(frozen=True)
class Setting:
    """How calls are decoded: masked entirely (``disabled``, the paper's "(disabled)" rows), or
    opened when " [" is among the top ``k`` tokens; ``force_arrow`` also forces "->" once a call's
    input is closed (:class:`~toolformer_kit.decode.config.DecodeConfig`'s ``force_arrow``; a
    deviation from the paper, reported as its own setting).

    >>> Setting(3).name, DISABLED.name, Setting(10, force_arrow=True).name
    ('k3', 'disabled', 'k10+arrow')
    """

    k: int = 10
    disabled: bool = False
    force_arrow: bool = False

    def __post_init__(self) -> None:
        if self.disabled and (self.k or self.force_arrow):
            raise ValueError("a disabled setting opens no call: it has k 0 and no forced arrow")
        if self.k < 0:
            raise ValueError(f"k must be >= 0, got {self.k}")

    @property
    def name(self) -> str:
        """The run's folder name: ``disabled``, ``kN`` or ``kN+arrow``."""
        if self.disabled:
            return "disabled"
        return f"k{self.k}" + ("+arrow" if self.force_arrow else "")

    def arrow(self) -> "Setting":
        """The same decoding with "->" forced.

        >>> Setting(10).arrow()
        Setting(k=10, disabled=False, force_arrow=True)
        """
        return dataclasses.replace(self, force_arrow=True)

    @classmethod
    def parse(cls, text: str, k: int = 10) -> "Setting":
        """A ``--settings`` entry or a run's folder name; ``tools`` (or ``on``) means top-``k``.

        >>> Setting.parse("k3"), Setting.parse("disabled").name, Setting.parse("tools", k=10).name
        (Setting(k=3, disabled=False, force_arrow=False), 'disabled', 'k10')
        >>> Setting.parse("tools+arrow", k=10), Setting.parse("k5+arrow").name
        (Setting(k=10, disabled=False, force_arrow=True), 'k5+arrow')
        """
        text = text.strip().lower()
        base, plus, extra = text.partition("+")
        if plus and extra == "arrow" and base not in OFF:
            return cls.parse(base, k).arrow()
        if text in OFF:
            return DISABLED
        if text in ON:
            return cls(k)
        m = re.fullmatch(r"k(\d+)", text)
        if not m:
            raise ValueError(f"unknown setting {text!r}; use 'disabled', 'tools' or kN such as k1, k3, k10, "
                             f"each of the last two optionally with '+arrow' (k10+arrow)")
        return cls(int(m.group(1)))


DISABLED = Setting(k=0, disabled=True)
