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
    deviation from the paper, reported as its own setting). Beyond the paper (issue 31):
    ``max_calls`` calls per input (the paper's is 1) and ``typed``, a call's input constrained to
    its tool's grammar (``constrain_inputs``); each is its own setting, beside the paper's. Beyond
    it too (issue 40): ``drop_empty``, a call whose tool found nothing taken out of the text before
    the model goes on (``drop_empty_calls``).

    >>> Setting(3).name, DISABLED.name, Setting(10, force_arrow=True).name
    ('k3', 'disabled', 'k10+arrow')
    >>> Setting(10, max_calls=2).name, Setting(10, typed=True).name, Setting(5, force_arrow=True, max_calls=3, typed=True).name
    ('k10+calls2', 'k10+typed', 'k5+arrow+calls3+typed')
    >>> Setting(10, drop_empty=True).name
    'k10+drop'
    """

    k: int = 10
    disabled: bool = False
    force_arrow: bool = False
    max_calls: int = 1
    typed: bool = False
    drop_empty: bool = False

    def __post_init__(self) -> None:
        if self.disabled and (self.k or self.force_arrow or self.typed or self.max_calls != 1 or self.drop_empty):
            raise ValueError("a disabled setting opens no call: it has k 0, no forced arrow, no typed inputs, "
                             "no dropped calls and the default max_calls")
        if self.k < 0:
            raise ValueError(f"k must be >= 0, got {self.k}")
        if self.max_calls < 1:
            raise ValueError(f"max_calls must be >= 1 (use 'disabled' for none), got {self.max_calls}")

    @property
    def name(self) -> str:
        """The run's folder name: ``disabled``, or ``kN`` with ``+arrow``, ``+callsN``, ``+typed``,
        ``+drop`` in that order where they apply (the paper's settings keep their old names)."""
        if self.disabled:
            return "disabled"
        return (f"k{self.k}" + ("+arrow" if self.force_arrow else "")
                + (f"+calls{self.max_calls}" if self.max_calls != 1 else "") + ("+typed" if self.typed else "")
                + ("+drop" if self.drop_empty else ""))

    @property
    def papers(self) -> bool:
        """Whether this is the paper's decoding (top-k, one call, nothing forced or constrained).

        >>> Setting(10).papers, Setting(10, max_calls=2).papers, DISABLED.papers, Setting(10, drop_empty=True).papers
        (True, False, False, False)
        """
        return (not self.disabled and not self.force_arrow and self.max_calls == 1 and not self.typed
                and not self.drop_empty)

    def arrow(self) -> "Setting":
        """The same decoding with "->" forced.

        >>> Setting(10).arrow()
        Setting(k=10, disabled=False, force_arrow=True, max_calls=1, typed=False, drop_empty=False)
        """
        return dataclasses.replace(self, force_arrow=True)

    def dropping(self) -> "Setting":
        """The same decoding with calls that found nothing taken out of the text.

        >>> Setting(10).dropping().name
        'k10+drop'
        """
        return dataclasses.replace(self, drop_empty=True)

    @classmethod
    def parse(cls, text: str, k: int = 10) -> "Setting":
        """A ``--settings`` entry or a run's folder name; ``tools`` (or ``on``) means top-``k``.

        >>> Setting.parse("k3"), Setting.parse("disabled").name, Setting.parse("tools", k=10).name
        (Setting(k=3, disabled=False, force_arrow=False, max_calls=1, typed=False, drop_empty=False), 'disabled', 'k10')
        >>> Setting.parse("tools+arrow", k=10).force_arrow, Setting.parse("k5+arrow").name
        (True, 'k5+arrow')
        >>> Setting.parse("tools+typed+calls2").name, Setting.parse("k10+drop").drop_empty
        ('k10+calls2+typed', True)
        """
        text = text.strip().lower()
        base, *extras = text.split("+")
        if extras and base not in OFF:
            fields = {}
            for extra in extras:
                m = re.fullmatch(r"calls(\d+)", extra)
                if extra in ("arrow", "typed", "drop"):
                    fields[{"arrow": "force_arrow", "typed": "typed", "drop": "drop_empty"}[extra]] = True
                elif m and int(m.group(1)) >= 1:
                    fields["max_calls"] = int(m.group(1))
                else:
                    raise ValueError(_unknown(text))
            return dataclasses.replace(cls.parse(base, k), **fields)
        if text in OFF:
            return DISABLED
        if text in ON:
            return cls(k)
        m = re.fullmatch(r"k(\d+)", text)
        if not m:
            raise ValueError(_unknown(text))
        return cls(int(m.group(1)))


def _unknown(text: str) -> str:
    return (f"unknown setting {text!r}; use 'disabled', 'tools' or kN such as k1, k3, k10, each of the last two "
            f"optionally with '+arrow' (k10+arrow), '+callsN' (k10+calls2: up to N calls per input) or "
            f"'+typed' (inputs constrained to the tool's grammar) or '+drop' (a call that found nothing taken out)")


DISABLED = Setting(k=0, disabled=True)
