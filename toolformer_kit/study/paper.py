"""The paper's Figure 4 as numbers, so the scaling study can set its own curve beside it.

Figure 4 gives no table: these are readings of its curves (GPT-2 124M–1.6B, then GPT-J 6.7B),
averaged over each family's benchmarks as the paper does, in % accuracy. Where a reading is a
range ("about 2–3 %") the midpoint is used. They are approximate by nature; the report says so.
"""

from __future__ import annotations

from typing import Mapping, Sequence

SIZES = (124e6, 355e6, 775e6, 1.6e9, 6.7e9)
SIZE_NAMES = ("GPT-2 124M", "GPT-2 355M", "GPT-2 775M", "GPT-2 1.6B", "GPT-J 6.7B")
# family → (with tools, calls disabled), one value per size in SIZES
FIGURE_4 = {
    "LAMA": ((2.5, 3.5, 7.0, 14.0, 33.0), (2.5, 3.5, 5.0, 9.0, 21.0)),
    "QA": ((5.0, 10.0, 12.0, 20.0, 31.0), (4.0, 7.0, 8.0, 13.0, 26.0)),
    "math": ((4.5, 4.5, 9.0, 14.0, 38.0), (4.5, 4.5, 7.0, 9.0, 15.0)),
}
# A gap under this many points is within what one can read off the figure.
READABLE_GAP = 1.0


def emergence(sizes: Sequence[float], helps: Sequence[bool]) -> float | None:
    """The smallest size from which tools help at that size and every larger one; None if never.

    >>> emergence([1, 2, 3], [False, True, True]), emergence([1, 2, 3], [True, False, True])
    (2, 3)
    >>> emergence([1, 2], [False, False]) is None
    True
    """
    first = None
    for size, ok in sorted(zip(sizes, helps)):
        if ok and first is None:
            first = size
        elif not ok:
            first = None
    return first


def paper_emergence(family: str, table: Mapping = FIGURE_4) -> float | None:
    """Where the paper's curves part (gap ≥ 1 point from there on), read from the figure.

    >>> [paper_emergence(f) for f in ("LAMA", "QA", "math")]
    [775000000.0, 124000000.0, 775000000.0]
    """
    tools, disabled = table[family]
    return emergence(SIZES, [t - d >= READABLE_GAP for t, d in zip(tools, disabled)])


def size_name(params: float | None) -> str:
    """
    >>> size_name(135e6), size_name(1.6e9), size_name(None)
    ('135M', '1.6B', '?')
    """
    if params is None:
        return "?"
    return f"{params / 1e9:.2g}B" if params >= 1e9 else f"{params / 1e6:.0f}M"


def parse_params(text: str) -> float | None:
    """
    >>> parse_params("630M"), parse_params("1.6B"), parse_params("a lot")
    (630000000.0, 1600000000.0, None)
    """
    units = {"K": 1e3, "M": 1e6, "B": 1e9}
    text = text.strip().upper()
    try:
        return float(text[:-1]) * units[text[-1]] if text and text[-1] in units else float(text)
    except ValueError:
        return None
