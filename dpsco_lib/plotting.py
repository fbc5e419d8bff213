"""One figure style for the whole book: colour-blind-safe (Okabe-Ito) palette, log-log rate guides."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib as mpl
import numpy as np

__all__ = ["OKABE_ITO", "add_rate_guide", "use_style"]

# Okabe & Ito (2008), distinguishable under the common forms of colour-vision deficiency.
OKABE_ITO = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]


def use_style() -> None:
    """Set matplotlib defaults used by every figure of the book."""
    mpl.rcParams.update(
        {
            "axes.prop_cycle": mpl.cycler(color=OKABE_ITO),
            "figure.figsize": (6.4, 4.0),
            "figure.dpi": 110,
            "savefig.dpi": 150,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "legend.frameon": False,
            "font.size": 10,
            "lines.markersize": 5,
        }
    )


def add_rate_guide(
    ax,
    x: Sequence[float] | np.ndarray,
    exponent: float,
    *,
    anchor: tuple[float, float],
    label: str | None = None,
    color: str = "0.4",
) -> None:
    """Draw the reference line ``y = y0 (x / x0)^exponent`` through ``anchor = (x0, y0)``.

    Used to overlay a theorem's predicted rate on measured errors in log-log axes.
    """
    xs = np.asarray(x, dtype=float)
    x0, y0 = anchor
    grid = np.geomspace(xs.min(), xs.max(), 50)
    ax.plot(grid, y0 * (grid / x0) ** exponent, ls="--", color=color, lw=1.2, label=label)
