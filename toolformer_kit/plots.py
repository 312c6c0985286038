"""Small PNGs for results folders: one place that loads matplotlib and writes a figure.

Why one place: five modules drew plots, each with its own copy of the lazy import, the switch to
the file-only backend and the save-and-close; a fix to one (say, a window opening on a desktop)
missed the others. matplotlib is a dependency, but a results folder without plots is still a
results folder, so a missing install costs the plots only, with one warning.
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)


def pyplot():
    """``matplotlib.pyplot`` drawing to files only (the Agg backend: never a window), imported on
    first use (it is heavy, and most commands draw nothing); None, with a warning, where it is not
    installed."""
    try:
        import matplotlib  # lazy: heavy, plots only

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # lazy: heavy, plots only
    except ImportError:
        log.warning("matplotlib is not installed; results have no plots (pip install matplotlib)")
        return None
    return plt


def save(fig, path: str | Path, dpi: int = 90) -> Path:
    """Lay ``fig`` out, write it to ``path`` and free it (pyplot keeps every open figure alive)."""
    import matplotlib.pyplot as plt  # lazy: heavy, plots only; loaded already by whoever drew fig

    path = Path(path)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path
