"""One figure style for the whole book: colour-blind-safe (Okabe-Ito) palette, log-log rate guides.

Needs matplotlib, the ``plot`` extra (``pip install 'dpsco-lib[plot]'``); importing this module without it raises
``ImportError`` naming that command.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpsco_lib._optional import require

mpl = require("matplotlib")

__all__ = ["OKABE_ITO", "add_rate_guide", "plot_rate", "use_style"]

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


def plot_rate(
    ax,
    x: Sequence[float] | np.ndarray,
    values: Sequence[Sequence[float]] | np.ndarray,
    *,
    label: str,
    color: str | None = None,
    fit=None,
    guide: tuple[float, str] | None = None,
    trivial: float | Sequence[float] | np.ndarray | None = None,
    band: tuple[float, float] = (0.10, 0.90),
    marker: str = "o",
):
    r"""The book's rate figure for one method: median over replicates, a quantile band, the fit, a guide.

    Parameters
    ----------
    ax : matplotlib Axes
        Log-log axes are set.
    x : array_like (k,)
        The grid (n, d, ...).
    values : sequence of k array_like
        The replicate errors at each grid point (ragged allowed).
    label : str
        Legend label of the median curve.
    color : str, optional
        Defaults to the next colour of the cycle.
    fit : SlopeFit, optional
        Drawn as a thin line ``C x^slope`` with its slope and interval in the legend.
    guide : (exponent, label), optional
        A dashed reference slope anchored at the first median (the theorem's rate).
    trivial : float or array_like (k,), optional
        The error of the trivial output (dotted line labelled "trivial"): a method below it has learnt.
    band : (low, high)
        Quantiles of the shaded band (default the 10%-90% range).

    Returns
    -------
    numpy.ndarray
        The medians (k,).
    """
    xs = np.asarray(x, dtype=float)
    if len(values) != xs.size:
        raise ValueError(f"values must have one replicate array per grid point ({xs.size}), got {len(values)}")
    reps = [np.asarray(v, dtype=float).ravel() for v in values]
    if any(r.size == 0 for r in reps):
        raise ValueError("every grid point needs at least one replicate")
    med = np.array([np.median(r) for r in reps])
    lo = np.array([np.quantile(r, band[0]) for r in reps])
    hi = np.array([np.quantile(r, band[1]) for r in reps])
    (line,) = ax.plot(xs, med, marker=marker, color=color, label=label)
    c = line.get_color()
    ax.fill_between(xs, lo, hi, color=c, alpha=0.18, lw=0)
    if fit is not None:
        grid = np.geomspace(xs.min(), xs.max(), 50)
        ax.plot(grid, fit.predict(grid), color=c, lw=0.9, alpha=0.8,
                label=f"fit: slope {fit.slope:+.2f} [{fit.ci_low:+.2f}, {fit.ci_high:+.2f}]")
    if guide is not None:
        add_rate_guide(ax, xs, guide[0], anchor=(xs[0], med[0]), label=guide[1])
    if trivial is not None:
        tv = np.broadcast_to(np.asarray(trivial, dtype=float), xs.shape)
        ax.plot(xs, tv, ls=":", color=c, lw=1.2, label=f"trivial ({label})" if np.ndim(trivial) else "trivial")
    ax.set_xscale("log")
    ax.set_yscale("log")
    return med
