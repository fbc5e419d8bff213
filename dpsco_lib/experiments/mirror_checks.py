r"""Experiments of notebook 03: the rate of non-private stochastic mirror descent in :math:`\ell_p` (Spec S1).

The worst case over a family of linear losses on the unit :math:`\ell_p` ball, :math:`1 < p \le 2`
(:class:`~dpsco_lib.problems.hard_lp.FingerprintLinearLp` with all its signal on the first coordinate): a record
is :math:`z = s\xi`, :math:`\xi \in \{\pm 1\}^d`, :math:`s = d^{-1/q}` (so :math:`\|z\|_q = 1`), the loss is
:math:`f(x; z) = -\langle x, z\rangle` and :math:`\mathbb E z = \gamma e_1` (the population gradient is
:math:`-\gamma e_1`). Then :math:`F(x) - F^* = \gamma(1 - x_1)` exactly. For a fixed :math:`\gamma` the excess of
any sensible method decays faster than :math:`n^{-1/2}` once :math:`n \gg \gamma^{-2}`; the minimax rate
:math:`n^{-1/2}` is attained at :math:`\gamma \asymp n^{-1/2}` (Le Cam's two-point argument with
:math:`\pm\gamma e_1`, Nemirovski & Yudin 1983). A fixed geometric grid of :math:`\gamma` that brackets
:math:`n^{-1/2}` over the whole range of :math:`n` makes the worst case over the family trace the minimax rate.
The check of notebook 03 takes the members of Le Cam's construction themselves, :math:`\gamma = c/\sqrt n` for a
fixed grid of :math:`c` (:func:`smd_lecam_task`): the instance that is hard at sample size :math:`n`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dpsco_lib._validation import check_in_range, check_int, check_positive
from dpsco_lib.algorithms.smd import run_smd
from dpsco_lib.experiments.analysis import SlopeFit, Verdict, fit_loglog_slope
from dpsco_lib.geometry.norms import dual_exponent
from dpsco_lib.problems.hard_linear import hard_linear
from dpsco_lib.problems.hard_lp import FingerprintLinearLp
from dpsco_lib.problems.least_squares import hard_least_squares

__all__ = ["REGIMES", "cell_table", "d_spread", "fit_by_regime", "gamma_grid", "linear_member", "lnd_two_term",
           "max_mean_over_bound", "plot_vs_d", "plot_vs_n", "s1_d_checks", "s1_n_checks", "smd_excess",
           "smd_lecam_task", "smd_linear_task", "worst_member_values"]

#: The four setups of the rate table checked by notebook 03 (label -> p).
REGIMES: dict[str, float] = {"p=1": 1.0, "p=1.5": 1.5, "p=2": 2.0, "p=inf": math.inf}


def linear_member(p: float, d: int, gamma: float) -> FingerprintLinearLp:
    r"""The member :math:`\mathbb E z = \gamma e_1` of the linear family on the unit :math:`\ell_p` ball (module
    docstring); ``gamma`` must lie in :math:`(0, d^{-1/q}]` (all informative records, mean :math:`\gamma/s` on
    the first coordinate, 0 elsewhere)."""
    p = check_in_range(p, "p", 1.0, 2.0, lo_inclusive=False)
    d = check_int(d, "d", lo=2)
    s = d ** (-1.0 / dual_exponent(p))
    gamma = check_in_range(gamma, "gamma", 0.0, s, lo_inclusive=False)
    means = np.zeros(d)
    means[0] = gamma / s
    return FingerprintLinearLp(p, means, 1.0)


def gamma_grid(p: float, d: int, *, n_min: int, n_max: int, size: int = 5) -> list[float]:
    r"""A geometric grid of ``size`` values of :math:`\gamma` from the largest admissible :math:`d^{-1/q}` down to
    :math:`\tfrac14/\sqrt{n_{\max}}`: it brackets the minimax scale :math:`n^{-1/2}` at every ``n`` of the grid
    (if :math:`d^{-1/q} \ge 1/\sqrt{n_{\min}}`) and contains the large signals for which single-pass SMD with the
    worst-case step size pays its full :math:`B/(\eta n)`, the worst case for that method."""
    p = check_in_range(p, "p", 1.0, 2.0, lo_inclusive=False)
    n_min, n_max = check_int(n_min, "n_min", lo=1), check_int(n_max, "n_max", lo=1)
    size = check_int(size, "size", lo=2)
    hi = d ** (-1.0 / dual_exponent(p))
    lo = check_positive(0.25 / math.sqrt(max(n_min, n_max)), "gamma_min")
    return [float(g) for g in np.geomspace(hi, min(lo, hi), size)]


def smd_linear_task(*, rng: np.random.Generator, p: float, d: int, gamma: float, n: int) -> dict[str, Any]:
    r"""Single-pass SMD with its theory step size on ``n`` records of :func:`linear_member`; returns the exact
    excess :math:`\gamma(1 - \bar x_1)`, the theorem's bound :math:`G\sqrt{2B/n}` and the trivial excess
    :math:`\gamma` of the output :math:`x = 0`."""
    pr = linear_member(p, d, gamma)
    res = run_smd(pr, pr.sample(n, rng), rng=rng)
    return {"excess": float(pr.excess_risk(res.x)), "bound": float(res.info["rate_bound"]),
            "trivial": float(pr.trivial_excess())}



def smd_lecam_task(*, rng: np.random.Generator, p: float, d: int, c: float, n: int) -> dict[str, Any]:
    r"""Single-pass SMD at the Le Cam member :math:`\gamma = c/\sqrt n` of sample size ``n``.

    ``1 < p <= 2``: :func:`linear_member` (requires :math:`c \le d^{-1/q}\sqrt n`). ``p = 1``: the planted-vertex
    linear family on the unit :math:`\ell_1` ball (:func:`~dpsco_lib.problems.hard_linear.hard_linear`, records in
    :math:`\{\pm1\}^d`, :math:`\mathbb E z = -\gamma e_1`, excess :math:`\gamma(1 - x_1)`), run with the entropic
    map of the :math:`2d`-vertex lift. Returns the exact excess, the theorem's bound, the trivial excess and
    ``gamma``.
    """
    gamma = float(c) / math.sqrt(check_int(n, "n", lo=1))
    if p == 1.0:
        pr = hard_linear(check_int(d, "d", lo=2), gamma)
        res = run_smd(pr, pr.sample(n, rng), rng=rng)
        return {"excess": float(pr.excess_risk(res.x)), "bound": float(res.info["rate_bound"]), "trivial": gamma,
                "gamma": gamma}
    return smd_linear_task(rng=rng, p=p, d=d, gamma=gamma, n=n) | {"gamma": gamma}


def worst_member_values(records: Sequence[Mapping[str, Any]], *, key: str = "excess",
                        label: str = "gamma") -> tuple[list[float], list[list[float]]]:
    """Per n, the replicate values of ``key`` of the family member whose median is largest there (the worst
    case of :func:`~dpsco_lib.experiments.worst_case_curve`); records without ``label`` form one member."""
    ns = sorted({float(r["n"]) for r in records})
    vals = []
    for n in ns:
        cell = [r for r in records if r["n"] == n]
        members = sorted({r.get(label, 0.0) for r in cell})
        groups = [[float(r[key]) for r in cell if r.get(label, 0.0) == g] for g in members]
        vals.append(max(groups, key=lambda v: float(np.median(v))))
    return ns, vals


def max_mean_over_bound(records: Sequence[Mapping[str, Any]], *, label: str = "gamma") -> float:
    """The largest ratio, over the cells (regime, n, member), of the mean excess to the theorem's bound
    :math:`G\\sqrt{2B/n}` (which bounds the expected excess)."""
    cells: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for r in records:
        cells.setdefault((r["regime"], r["n"], r.get(label, 0.0)), []).append(r)
    return max(float(np.mean([r["excess"] for r in c])) / c[0]["bound"] for c in cells.values())


# ---------------------------------------------------------------------------------------------------------
# Notebook 03: single-pass SMD on the hard least-squares instances of the four setups
# ---------------------------------------------------------------------------------------------------------
def smd_excess(*, rng: np.random.Generator, regime: str, d: int, n: int, c: float = 2.0) -> dict[str, Any]:
    r"""Sweep task of notebook 03: single-pass SMD with its theory step size on ``n`` records of the hard
    least-squares instance of ``regime`` (:data:`REGIMES`) in dimension ``d`` with label bound ``c``.

    Returns
    -------
    dict
        ``excess`` (exact excess population risk of the averaged iterate), ``bound`` (the theorem's
        :math:`G\sqrt{2B/n}`), ``step_size`` and ``scaled`` :math:`= \sqrt n\,\text{excess}/L_0`.
    """
    prob = hard_least_squares(REGIMES[regime], d, c=c)
    res = run_smd(prob, prob.sample(n, rng), rng=rng)
    excess = float(prob.excess_risk(res.x))
    return {"excess": excess, "bound": float(res.info["rate_bound"]), "step_size": float(res.params["step_size"]),
            "scaled": excess * math.sqrt(n) / prob.L0}


def cell_table(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per cell ``(regime, d, n)`` (first-seen order) of :func:`smd_excess` records.

    Parameters
    ----------
    records
        Sweep records with keys ``regime, d, n, excess, bound, scaled``.

    Returns
    -------
    list of dict
        ``regime, d, n``, the ``mean``, ``q10``, ``q90`` of the excess, the ``bound``, ``ratio`` = mean / bound
        and the mean, ``q10``, ``q90`` of the scaled excess (``s_mean, s_q10, s_q90``).
    """
    cells: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for r in records:
        cells.setdefault((r["regime"], int(r["d"]), int(r["n"])), []).append(r)
    rows = []
    for (regime, d, n), cell in cells.items():
        e = np.array([float(r["excess"]) for r in cell])
        s = np.array([float(r["scaled"]) for r in cell])
        bound = float(np.mean([float(r["bound"]) for r in cell]))
        rows.append({"regime": regime, "d": d, "n": n, "mean": float(e.mean()), "q10": float(np.quantile(e, 0.1)),
                     "q90": float(np.quantile(e, 0.9)), "bound": bound, "ratio": float(e.mean()) / bound,
                     "s_mean": float(s.mean()), "s_q10": float(np.quantile(s, 0.1)),
                     "s_q90": float(np.quantile(s, 0.9))})
    return rows


def fit_by_regime(records: Sequence[Mapping[str, Any]], x: str, *, seed: int, n_boot: int,
                  log_x: bool = False) -> dict[str, SlopeFit]:
    """Log-log slope of the excess against column ``x`` per regime (bootstrap seed ``seed + i``); with
    ``log_x`` the abscissa is :math:`\\ln x` (the exponent in :math:`\\ln d`)."""
    fits = {}
    for i, regime in enumerate(dict.fromkeys(r["regime"] for r in records)):
        rr = [r for r in records if r["regime"] == regime]
        xs = [math.log(float(r[x])) if log_x else float(r[x]) for r in rr]
        fits[regime] = fit_loglog_slope(xs, [float(r["excess"]) for r in rr], rng=np.random.default_rng(seed + i),
                                        n_boot=n_boot)
    return fits


def d_spread(rows: Sequence[Mapping[str, Any]], regime: str) -> tuple[float, float]:
    """``(max, max/min)`` over the d grid of mean excess / bound for ``regime`` (rows of :func:`cell_table`):
    the bound holds iff the first is <= 1; its d-dependence is attained up to a constant iff the second is
    bounded."""
    ratios = [float(r["ratio"]) for r in rows if r["regime"] == regime]
    return max(ratios), max(ratios) / min(ratios)


def lnd_two_term(rows: Sequence[Mapping[str, Any]]) -> tuple[float, float, float]:
    r"""Least-squares fit :math:`\sqrt n\,\text{excess}/L_0 = A\sqrt{\ln d} + B/\sqrt{\ln d}` of the ``p=1`` rows
    of :func:`cell_table`; returns ``(A, B, e)`` with ``e`` the local exponent in :math:`\ln d` at the largest d,
    :math:`\tfrac12 (A\ln d - B)/(A\ln d + B)`."""
    p1 = [r for r in rows if r["regime"] == "p=1"]
    lnd = np.log([float(r["d"]) for r in p1])
    design = np.column_stack([np.sqrt(lnd), 1 / np.sqrt(lnd)])
    (a, b), *_ = np.linalg.lstsq(design, [float(r["s_mean"]) for r in p1], rcond=None)
    ln_max = float(lnd.max())
    return float(a), float(b), 0.5 * (a * ln_max - b) / (a * ln_max + b)


def plot_vs_n(ax: Any, rows: Sequence[Mapping[str, Any]], fits: Mapping[str, SlopeFit]) -> None:
    """Mean excess (q10-q90 bars) against n per regime with the bound dotted and an :math:`n^{-1/2}` guide."""
    from dpsco_lib.plotting import OKABE_ITO, add_rate_guide

    for col, regime in zip(OKABE_ITO, REGIMES, strict=False):
        rr = [r for r in rows if r["regime"] == regime]
        ns, m = np.array([r["n"] for r in rr], dtype=float), np.array([r["mean"] for r in rr])
        err = np.array([[r["mean"] - r["q10"] for r in rr], [r["q90"] - r["mean"] for r in rr]])
        ax.errorbar(ns, m, yerr=err, fmt="o-", color=col, capsize=2,
                    label=f"{regime} (d = {rr[0]['d']}): slope {fits[regime].slope:+.2f}")
        ax.plot(ns, [r["bound"] for r in rr], ":", color=col, lw=1)
        add_rate_guide(ax, ns, -0.5, anchor=(ns[0], m[0]), color="0.5", label="n^{-1/2}" if regime == "p=1" else None)
    ax.set(xscale="log", yscale="log", xlabel="n (samples = SMD steps)", ylabel="excess population risk",
           title="Single-pass SMD on hard instances: dotted = bound G sqrt(2B/n)")
    ax.legend(fontsize=8)


def plot_vs_d(ax: Any, rows: Sequence[Mapping[str, Any]]) -> None:
    r"""Scaled excess :math:`\sqrt n\,\text{excess}/L_0` against d per regime with the predicted shapes
    (:math:`\sqrt{\ln d}`, constant, :math:`\sqrt d`) through the first point."""
    from dpsco_lib.plotting import OKABE_ITO, add_rate_guide

    pred = {"p=1": "sqrt(ln d)", "p=1.5": "const", "p=2": "const", "p=inf": "sqrt(d)"}
    for col, regime in zip(OKABE_ITO, REGIMES, strict=False):
        rr = [r for r in rows if r["regime"] == regime]
        ds, m = np.array([r["d"] for r in rr], dtype=float), np.array([r["s_mean"] for r in rr])
        err = np.array([[r["s_mean"] - r["s_q10"] for r in rr], [r["s_q90"] - r["s_mean"] for r in rr]])
        ax.errorbar(ds, m, yerr=err, fmt="o-", color=col, capsize=2,
                    label=f"{regime} (n = {rr[0]['n']}): predicted {pred[regime]}")
        grid = np.geomspace(ds.min(), ds.max(), 50)
        if regime == "p=1":
            ax.plot(grid, m[0] * np.sqrt(np.log(grid) / np.log(ds[0])), "--", color="0.5", lw=1.2,
                    label="sqrt(ln d) guide")
        elif regime == "p=inf":
            add_rate_guide(ax, ds, 0.5, anchor=(ds[0], m[0]), color="0.3", label="d^{1/2} guide")
        else:
            ax.plot(grid, np.full_like(grid, m[0]), "--", color="0.5", lw=1.2)
    ax.set(xscale="log", yscale="log", xlabel="dimension d", ylabel=r"$\sqrt{n}\,$(excess risk)$/L_0$",
           title="Dimension dependence at fixed n")
    ax.legend(fontsize=8)


def s1_n_checks(verdict: Verdict, fits_n: Mapping[str, SlopeFit], rows_n: Sequence[Mapping[str, Any]],
                tol: float) -> None:
    r"""Verdict rows of the n sweep: exponent :math:`-1/2` in every regime (two-sided on the point estimate,
    ``tol``) and mean excess <= :math:`G\sqrt{2B/n}` in every cell.

    The errors are near-deterministic (seed intervals of width ~0.01) while the ratio excess / bound still
    drifts slowly with n (a lower-order term), so the local slope lies slightly below :math:`-1/2` and the
    seed interval excludes it: the exponent is checked with ``interval=False`` (the verdict table says so).
    """
    for regime, fit in fits_n.items():
        verdict.check_exponent(f"S1 {regime}: excess ~ n^-1/2", fit, -0.5, tol, interval=False)
    worst = max(float(r["ratio"]) for r in rows_n)
    verdict.check("S1 mean excess <= G sqrt(2B/n) (n sweep)", worst <= 1.0, f"max mean excess / bound = {worst:.3f}",
                  predicted="<= 1")


def s1_d_checks(verdict: Verdict, fits_d: Mapping[str, SlopeFit], rows_d: Sequence[Mapping[str, Any]],
                tol: float, *, max_spread: float = 2.0) -> None:
    r"""Verdict rows of the d sweep.

    For ``p=inf`` and ``p=1``: the bound :math:`G\sqrt{2B/n}` (exponent exactly 1/2 in d, resp. in
    :math:`\ln d`) holds at every d, and its d-dependence is attained up to a constant factor, i.e. the
    spread max/min of mean excess / bound over the d grid is <= ``max_spread`` (a d-free error would give
    spread :math:`\sqrt{d_{\max}/d_{\min}}` for ``p=inf``). For ``p=1.5, 2``: d-exponent 0 (two-sided on the
    point estimate, ``tol``: at ``p=2`` the error rises by 0.8% from d = 10 to d = 100, a finite-d effect that
    the seed interval, of width ~0.001, excludes from 0).
    Ordering: the d-exponent intervals are separated, ``p=inf`` > ``p=1`` > ``p=1.5, 2``.
    """
    for regime in ("p=inf", "p=1"):
        worst, spread = d_spread(rows_d, regime)
        verdict.check(f"S1 {regime}: mean excess <= G sqrt(2B/n) at every d", worst <= 1.0,
                      f"max mean excess / bound = {worst:.3f}", predicted="<= 1")
        verdict.check(f"S1 {regime}: d-dependence of the bound attained", spread <= max_spread,
                      f"max/min over d of mean excess / bound = {spread:.3f}", predicted=f"<= {max_spread:g}")
    for regime in ("p=1.5", "p=2"):
        verdict.check_exponent(f"S1 {regime}: no d-dependence", fits_d[regime], 0.0, tol, interval=False)
    f_inf, f_1 = fits_d["p=inf"], fits_d["p=1"]
    flat_hi = max(fits_d["p=1.5"].ci_high, fits_d["p=2"].ci_high)
    verdict.check("S1 ordering: polynomial > logarithmic > none", f_inf.ci_low > f_1.ci_high and f_1.ci_low > flat_hi,
                  f"d-slopes: inf {f_inf.slope:+.3f} [{f_inf.ci_low:+.3f}, {f_inf.ci_high:+.3f}] > p=1 "
                  f"{f_1.slope:+.3f} [{f_1.ci_low:+.3f}, {f_1.ci_high:+.3f}] > max upper CI of p=1.5, 2 = "
                  f"{flat_hi:+.4f}", predicted="separated intervals")
