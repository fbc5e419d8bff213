r"""Experiments of notebook 03: the worst-case rate of single-pass stochastic mirror descent in :math:`\ell_p`
(Spec S1, the Nemirovski-Yudin table).

A rate is an upper bound over a class of problems, so it is checked on the worst case over a family whose hardness
parameter :math:`\gamma` follows the lower-bound construction of each row of the table. All three families have
linear losses :math:`f(x; z) = \langle z, x\rangle`, :math:`L_0 = 1` in the setup's dual norm, a planted optimum and
an exact excess risk:

- ``p=1``: :func:`~dpsco_lib.problems.hard_linear` (records :math:`z \in \{\pm1\}^d` over the unit
  :math:`\ell_1` ball, :math:`\mathbb E z = -\gamma e_1`, excess :math:`\gamma(1 - x_1)`); minimax scale
  :math:`s(n, d) = \sqrt{2\ln(2d)/n}`.
- ``p=1.5``, ``p=2``: :func:`~dpsco_lib.problems.planted_lp_linear` (Le Cam's two points; records of unit
  :math:`\ell_q` norm over the unit :math:`\ell_p` ball, excess :math:`\gamma w_1(1 - x_1)`); :math:`s = 1/\sqrt n`.
- ``p=inf``: :func:`~dpsco_lib.problems.planted_cube_linear` (Assouad's hypercube; records :math:`z = \pm e_J` over
  the cube :math:`[-1, 1]^d`, excess :math:`\gamma(1 - \langle\sigma, x\rangle/d)`); :math:`s = \sqrt{d/n}`.

The members are :math:`\gamma = c \cdot s(n, d)` with :math:`s` the minimax scale of the regime and :math:`c` on a
fixed geometric grid of ratio 2 (:data:`MULTIPLIERS`; a member with :math:`\gamma > 1` does not exist and is left
out). Single-pass SMD with its theory step size is scale invariant on these families: the drift and the noise of
its dual iterate over the :math:`n` steps depend on :math:`c` only, so :math:`\text{excess}/s(n, d)` has a limit
:math:`\phi(c)` as :math:`n \to \infty` (for ``p=inf``, as :math:`n/d \to \infty`). Its maximum over :math:`c` sits
inside the grid (``p=1``: :math:`c \approx 1`, where the signal just reaches the bound; ``p=1.5, 2``: a flat
maximum over :math:`c \approx 4`-:math:`8`; ``p=inf``: :math:`c \approx 4`-:math:`8`), so the worst member's
:math:`\gamma` moves with :math:`n` like the minimax construction, :math:`\propto n^{-1/2}`. Since the :math:`n` grids
double, the probed :math:`\gamma` lie on one fixed lattice :math:`\gamma_0 2^{-k/2}` of the family; only the window
of members moves.

The check reads the worst case, over the members, of the median over replicates (:func:`worst_fit`,
:func:`worst_rows`): its exponent in :math:`n` is :math:`-1/2` in every regime; at fixed :math:`n` it grows like
:math:`\sqrt{\ln d}` (exponent 1/2 on the :math:`\ln d` axis) for ``p=1``, not at all for ``p=1.5, 2`` (exponent 0
on that axis) and like :math:`\sqrt d` for ``p=inf`` (exponent 1/2 in :math:`d`, at :math:`n \ge d`); and the mean
excess of no member exceeds the theorem's bound :math:`G\sqrt{2B/n}` (:func:`bound_margin`).

Lower-order terms seen at the sizes of notebook 03. Where the iterate is projected (the :math:`\ell_p` balls, the
cube), a step cut off at the boundary loses part of the budget :math:`B/(\eta n) + \eta G^2/2` of the analysis, and
at small :math:`n` the members with large :math:`\gamma` are less noisy (a sign has variance :math:`1 - \gamma^2`);
both fade with :math:`n`, so the worst case approaches the bound from below (``p=2``: worst case / bound 0.73 at
:math:`n = 256`, 0.82 at :math:`n = 4096`, local slope about :math:`-0.46`; from :math:`n = 1024` on the slope is
within 0.01-0.02 of :math:`-1/2`). On the cube the same losses scale with :math:`\sqrt{d/n}` (each coordinate is a
walk of about :math:`n/d` steps of length :math:`\eta = \sqrt{d/n}`): the local slopes are tilted by about 0.05 (in
:math:`n` upward, in :math:`d` downward) from :math:`n/d = 256` and by about 0.02-0.03 from :math:`n/d = 1024`. For
``p=1`` the entropic steps are never cut off, but the error has a part that does not grow with :math:`d` (the weights
move onto the planted vertex after a log-weight lead of :math:`\ln(2d) + O(1)`), which makes the local exponent on
the :math:`\ln(2d)` axis (the Bregman radius :math:`B = \ln(2d)`) about 0.6-0.7 for :math:`d` from 4 to 4096, and
about 0.5 on the :math:`\ln d` axis of the table.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from dpsco_lib._validation import check_int, check_positive
from dpsco_lib.algorithms.smd import run_smd
from dpsco_lib.experiments.analysis import SlopeFit, Verdict, fit_loglog_slope, worst_case_curve
from dpsco_lib.problems.base import Problem
from dpsco_lib.problems.hard_linear import hard_linear
from dpsco_lib.problems.hard_sco import planted_cube_linear, planted_lp_linear

__all__ = ["D_PREDICTION", "MULTIPLIERS", "REGIMES", "bound_margin", "exact_optima_rows", "expected_max_gaussian",
           "family_grid", "lnd_exponent_range",
           "family_member", "minimax_scale", "plot_worst_vs_d", "plot_worst_vs_n", "s1_checks", "s1_fits",
           "smd_family_task", "sweep_grid", "worst_fit", "worst_rows"]

#: The four setups of the rate table checked by notebook 03 (label -> p).
REGIMES: dict[str, float] = {"p=1": 1.0, "p=1.5": 1.5, "p=2": 2.0, "p=inf": math.inf}

#: Members of each family: multipliers c of the minimax scale (gamma = c s(n, d)), a geometric grid of ratio 2
#: around the worst member of single-pass SMD (module docstring).
MULTIPLIERS: dict[str, tuple[float, ...]] = {
    "p=1": (0.5, 1.0, 2.0, 4.0),
    "p=1.5": (2.0, 4.0, 8.0, 16.0),
    "p=2": (2.0, 4.0, 8.0, 16.0),
    "p=inf": (2.0, 4.0, 8.0, 16.0),
}

#: The d-dependence predicted by the table: (axis of the fit, exponent on that axis).
D_PREDICTION: dict[str, tuple[str, float]] = {"p=1": ("ln d", 0.5), "p=1.5": ("ln d", 0.0), "p=2": ("ln d", 0.0),
                                              "p=inf": ("d", 0.5)}


def _regime(regime: Any) -> str:
    if regime not in REGIMES:
        raise ValueError(f"regime must be one of {sorted(REGIMES)}, got {regime!r}")
    return str(regime)


def minimax_scale(regime: str, n: int, d: int) -> float:
    r"""The minimax scale :math:`s(n, d)` of the regime's row of the table, with :math:`L_0 = R = 1`:
    :math:`\sqrt{2\ln(2d)/n}` (``p=1``, the bound of SMD on the :math:`2d` vertices), :math:`1/\sqrt n`
    (``p=1.5, 2``) and :math:`\sqrt{d/n}` (``p=inf``)."""
    regime = _regime(regime)
    n, d = check_int(n, "n", lo=1), check_int(d, "d", lo=2)
    if regime == "p=1":
        return math.sqrt(2.0 * math.log(2 * d) / n)
    if regime == "p=inf":
        return math.sqrt(d / n)
    return 1.0 / math.sqrt(n)


def family_member(regime: str, d: int, gamma: float) -> Problem:
    """The member ``gamma`` of the regime's lower-bound family in dimension ``d`` (module docstring)."""
    regime = _regime(regime)
    if regime == "p=1":
        return hard_linear(d, gamma)
    if regime == "p=inf":
        return planted_cube_linear(d, gamma)
    return planted_lp_linear(d, gamma, p=REGIMES[regime])


def smd_family_task(*, rng: np.random.Generator, regime: str, d: int, n: int, c: float) -> dict[str, Any]:
    r"""Sweep task: single-pass SMD with its theory step size on ``n`` records of the member
    :math:`\gamma = c\,s(n, d)` (:func:`minimax_scale`) of the regime's family.

    Returns
    -------
    dict
        ``excess`` (exact excess population risk of the averaged iterate, floored at 1e-12 for the log-log fits),
        ``bound`` (the theorem's :math:`G\sqrt{2B/n}`), ``gamma`` (the stored hardness parameter) and ``trivial``
        (the excess of the start :math:`x = 0`).

    Raises
    ------
    ValueError
        If :math:`c\,s(n, d) > 1` (no such member: ``n`` is too small for this multiplier).
    """
    c = check_positive(c, "c")
    gamma = c * minimax_scale(regime, n, d)
    if gamma > 1.0:
        raise ValueError(f"c = {c} gives gamma = {gamma:.4g} > 1 at n = {n}, d = {d} (regime {regime}); "
                         "use a larger n or a smaller c")
    prob = family_member(regime, d, gamma)
    res = run_smd(prob, prob.sample(n, rng), rng=rng)
    return {"excess": max(float(prob.excess_risk(res.x)), 1e-12), "bound": float(res.info["rate_bound"]),
            "gamma": float(prob.gamma), "trivial": float(prob.trivial_error)}


def family_grid(regime: str, pairs: Iterable[tuple[int, int]]) -> list[dict[str, Any]]:
    r"""Sweep points ``{regime, d, n, c}`` for every ``(d, n)`` of ``pairs`` and every multiplier of the regime
    (:data:`MULTIPLIERS`) whose member exists there (:math:`c\,s(n, d) \le 1`); duplicates of ``(d, n)`` are
    dropped, so an n sweep and a d sweep can share a cell."""
    regime = _regime(regime)
    pts = dict.fromkeys((int(d), int(n)) for d, n in pairs)
    return [{"regime": regime, "d": d, "n": n, "c": c} for d, n in pts for c in MULTIPLIERS[regime]
            if c * minimax_scale(regime, n, d) <= 1.0]


def _select(records: Sequence[Mapping[str, Any]], regime: str, vary: str, at: int,
            values: Sequence[int] | None) -> list[Mapping[str, Any]]:
    if vary not in ("n", "d"):
        raise ValueError(f"vary must be 'n' or 'd', got {vary!r}")
    fixed = "d" if vary == "n" else "n"
    keep = None if values is None else {int(v) for v in values}
    rr = [r for r in records if r["regime"] == regime and int(r[fixed]) == int(at)
          and (keep is None or int(r[vary]) in keep)]
    if len({int(r[vary]) for r in rr}) < 2:
        raise ValueError(f"records hold fewer than two values of {vary} for regime {regime} at {fixed} = {at}")
    return rr


def worst_fit(records: Sequence[Mapping[str, Any]], *, regime: str, vary: str, at: int, seed: int, n_boot: int,
              axis: str = "log", values: Sequence[int] | None = None, level: float = 0.95) -> SlopeFit:
    r"""Log-log slope of the worst case over the members (median over replicates) against ``vary`` (``"n"`` at
    ``d = at``, or ``"d"`` at ``n = at``), with the bootstrap interval of the worst case
    (:func:`~dpsco_lib.experiments.fit_loglog_slope` with ``worst_over`` the multiplier ``c``).

    ``axis="log"`` fits against :math:`\ln x`; ``axis="lnd"`` (``vary="d"`` only) against :math:`\ln\ln d`, i.e.
    the exponent in :math:`\ln d`: :math:`1/2` for growth like :math:`\sqrt{\ln d}`, 0 for none. ``values``
    restricts the records to these values of ``vary``; ``level`` is the interval's level.
    """
    if axis not in ("log", "lnd") or (axis == "lnd" and vary != "d"):
        raise ValueError(f"axis must be 'log', or 'lnd' with vary='d'; got axis={axis!r}, vary={vary!r}")
    rr = _select(records, _regime(regime), vary, at, values)
    x = [math.log(float(r["d"])) if axis == "lnd" else float(r[vary]) for r in rr]
    return fit_loglog_slope(x, [float(r["excess"]) for r in rr], rng=np.random.default_rng(seed),
                            statistic="median", n_boot=n_boot, level=level, worst_over=[float(r["c"]) for r in rr])


def worst_rows(records: Sequence[Mapping[str, Any]], *, regime: str, vary: str, at: int,
               values: Sequence[int] | None = None) -> list[dict[str, Any]]:
    r"""Per value of ``vary``: the worst member's median excess, its multiplier ``c`` and :math:`\gamma`, the ratio
    to the bound, the scaled worst case (worst / minimax scale) and ``interior`` (the worst ``c`` is neither the
    smallest nor the largest multiplier measured there); ``values`` as in :func:`worst_fit`."""
    rr = _select(records, _regime(regime), vary, at, values)
    curve = worst_case_curve([float(r[vary]) for r in rr], [float(r["excess"]) for r in rr],
                             [float(r["c"]) for r in rr], statistic="median")
    rows = []
    for row in curve:
        present = sorted({float(r["c"]) for r in rr if float(r[vary]) == row["x"]})
        cell = [r for r in rr if float(r[vary]) == row["x"] and float(r["c"]) == row["argmax"]]
        d, n = int(cell[0]["d"]), int(cell[0]["n"])
        bound = float(cell[0]["bound"])
        rows.append({"regime": regime, "d": d, "n": n, "worst": row["worst"], "c": row["argmax"],
                     "gamma": float(cell[0]["gamma"]), "ratio": row["worst"] / bound,
                     "scaled": row["worst"] / minimax_scale(regime, n, d),
                     "interior": present[0] < row["argmax"] < present[-1], "members": row["instances"]})
    return rows


Sweep = Mapping[str, tuple[int, Sequence[int]]]


def sweep_grid(sweep_n: Sweep, sweep_d: Sweep, regimes: Iterable[str]) -> list[dict[str, Any]]:
    """The sweep points (:func:`family_grid`) of ``regimes``: ``sweep_n[regime] = (d, n values)`` (an n sweep at
    fixed d) and ``sweep_d[regime] = (n, d values)`` (a d sweep at fixed n); either may omit a regime."""
    grid: list[dict[str, Any]] = []
    for regime in regimes:
        pairs = [(sweep_n[regime][0], n) for n in sweep_n[regime][1]] if regime in sweep_n else []
        pairs += [(d, sweep_d[regime][0]) for d in sweep_d[regime][1]] if regime in sweep_d else []
        grid += family_grid(regime, pairs)
    return grid


def s1_fits(records: Sequence[Mapping[str, Any]], sweep_n: Sweep, sweep_d: Sweep, *, seed: int, n_boot: int,
            level: float = 0.95) -> tuple[dict[str, SlopeFit], dict[str, SlopeFit], dict[str, SlopeFit]]:
    r"""The worst-case fits of every regime (:func:`worst_fit`, bootstrap seeds ``seed + i``): in :math:`n` over
    ``sweep_n[regime] = (d, n values)``; in :math:`d` over ``sweep_d[regime] = (n, d values)`` on the axis of
    :data:`D_PREDICTION`; and in :math:`d` on the :math:`\ln d` axis for all regimes (the ordering check)."""
    fits_n, fits_d, fits_order = {}, {}, {}
    for i, regime in enumerate(REGIMES):
        kw = {"regime": regime, "seed": seed + i, "n_boot": n_boot, "level": level}
        (d0, ns), (n0, ds) = sweep_n[regime], sweep_d[regime]
        fits_n[regime] = worst_fit(records, vary="n", at=d0, values=ns, **kw)
        fits_order[regime] = worst_fit(records, vary="d", at=n0, values=ds, **kw)
        lnd = D_PREDICTION[regime][0] == "ln d"
        fits_d[regime] = worst_fit(records, vary="d", at=n0, values=ds, axis="lnd", **kw) if lnd else \
            fits_order[regime]
    return fits_n, fits_d, fits_order


def bound_margin(records: Sequence[Mapping[str, Any]]) -> tuple[float, float]:
    r"""Over the cells (regime, d, n, c): the largest ratio of the mean excess to the bound :math:`G\sqrt{2B/n}`,
    and the largest standardized excess over the bound, :math:`(\bar e - \text{bound})/(s/\sqrt R)` (``R``
    replicates, ``s`` their standard deviation). The theorem bounds the expectation, so a cell whose mean lies
    within a few standard errors above the bound does not contradict it; a violation is a large second value."""
    cells: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for r in records:
        cells.setdefault((r["regime"], int(r["d"]), int(r["n"]), float(r["c"])), []).append(r)
    ratio, z = -math.inf, -math.inf
    for cell in cells.values():
        e = np.array([float(r["excess"]) for r in cell])
        bound = float(cell[0]["bound"])
        se = float(e.std(ddof=1)) / math.sqrt(e.size) if e.size > 1 else math.inf
        ratio = max(ratio, float(e.mean()) / bound)
        z = max(z, (float(e.mean()) - bound) / se if se > 0 else math.copysign(math.inf, e.mean() - bound))
    return ratio, z


def exact_optima_rows(d: int = 12) -> list[dict[str, Any]]:
    """The planted optimum of one member of every family against cvxpy (Clarabel), in dimension ``d``:
    ``regime, F_star_closed_form, F_star_cvxpy, abs_diff, max_abs_dx``."""
    rows = []
    for regime in REGIMES:
        prob = family_member(regime, check_int(d, "d", lo=2), 0.3)
        x_cf, f_cf = prob.population_optimum()
        x_cv, f_cv = prob.cvxpy_optimum()
        rows.append({"regime": regime, "F_star_closed_form": f_cf, "F_star_cvxpy": f_cv, "abs_diff": abs(f_cf - f_cv),
                     "max_abs_dx": float(np.max(np.abs(x_cf - x_cv)))})
    return rows


def expected_max_gaussian(k: int) -> float:
    r""":math:`\mathbb E\max_{i \le k} Z_i` for i.i.d. standard normals, by quadrature of
    :math:`\int x\,k\,\varphi(x)\Phi(x)^{k-1}\,dx` (``Phi`` in log space, so large ``k`` does not underflow)."""
    from scipy import integrate, stats

    k = check_int(k, "k", lo=1)
    val, _ = integrate.quad(lambda x: x * k * stats.norm.pdf(x) * math.exp((k - 1) * stats.norm.logcdf(x)),
                            -12.0, 14.0, limit=400)
    return float(val)


def lnd_exponent_range(ds: Sequence[int]) -> tuple[float, float]:
    r"""Predicted exponent of the ``p=1`` worst case on the :math:`\ln d` axis over the grid ``ds`` (Spec S1).

    The minimax rate :math:`\sqrt{\ln d/n}` of the simplex and the :math:`\ell_1` ball is, in Le Cam's and Fano's
    constructions, the scale at which the planted vertex stands out of the :math:`2d - 1` others: the expected maximum
    of their centred empirical scores, :math:`\mathbb E\max_{i < 2d} Z_i/\sqrt n`. That maximum is
    :math:`\sqrt{2\ln(2d)} - O(\ln\ln d/\sqrt{\ln d})`, so its local exponent in :math:`\ln d` over a finite grid
    lies above the asymptotic :math:`1/2` (about 0.57 over :math:`d = 8, \dots, 4096`). Returns
    ``(1/2, s)``: from the asymptotic exponent to the least-squares slope ``s`` of
    :math:`\log\mathbb E\max_{i < 2d} Z_i` against :math:`\log\ln d` (:func:`expected_max_gaussian`). Both come
    from the construction alone, not from the algorithm's run.
    """
    xs = [check_int(d, "ds", lo=3) for d in ds]
    if len(set(xs)) < 2:
        raise ValueError(f"ds must hold at least two distinct dimensions >= 3, got {list(ds)}")
    e = [expected_max_gaussian(2 * d - 1) for d in xs]
    s = float(np.polyfit(np.log(np.log(xs)), np.log(e), 1)[0])
    return 0.5, max(0.5, s)


def _exponent_row(verdict: Verdict, name: str, fit: SlopeFit, expected: float | tuple[float, float], tol: float,
                  interval: bool) -> None:
    """:meth:`Verdict.check_exponent` with the interval, or the same two-sided test on the point estimate only,
    labelled as a reading of few replicates (whose percentile interval under-covers)."""
    if interval:
        verdict.check_exponent(name, fit, expected, tol)
        return
    lo, hi = expected if isinstance(expected, tuple) else (expected, expected)
    ok = math.isfinite(fit.slope) and max(lo - fit.slope, fit.slope - hi, 0.0) <= tol
    pred = f"{lo:+.3f}" if lo == hi else f"in [{lo:+.3f}, {hi:+.3f}]"
    verdict.check(name, ok, str(fit), predicted=f"{pred} +- {tol:g}, point estimate (few replicates)")


def s1_checks(verdict: Verdict, fits_n: Mapping[str, SlopeFit], fits_d: Mapping[str, SlopeFit],
              records: Sequence[Mapping[str, Any]], *, tol_n: float, tol_d: float, interval: bool,
              z_max: float = 4.0, fits_order: Mapping[str, SlopeFit] | None = None,
              d_values: Mapping[str, Sequence[int]] | None = None) -> None:
    r"""Verdict rows of notebook 03 (Spec S1), on the worst case over the lower-bound families.

    - per regime: the worst case decays like :math:`n^{-1/2}` (two-sided, ``tol_n``; the bootstrap interval must
      meet :math:`-1/2` when ``interval``, else the point estimate alone is read and the row says so);
    - per regime: the d-dependence of :data:`D_PREDICTION` (``fits_d``: ``p=1, 1.5, 2`` on the :math:`\ln d`
      axis, ``p=inf`` in :math:`d`), two-sided, ``tol_d``, same interval rule; with ``d_values`` (the d grid of each
      regime) the ``p=1`` prediction is the range :func:`lnd_exponent_range` of that grid;
    - the mean excess of no cell exceeds the bound by more than ``z_max`` standard errors
      (:func:`bound_margin`);
    - with ``fits_order`` (the d-slopes of all four regimes on the :math:`\ln d` axis): the ordering polynomial
      (``p=inf``) > logarithmic (``p=1``) > none (``p=1.5, 2``), with separated intervals when ``interval``, else
      ordered point estimates.
    """
    for regime, fit in fits_n.items():
        _exponent_row(verdict, f"S1 {regime}: worst case ~ n^-1/2", fit, -0.5, tol_n, interval)
    names = {"p=1": "grows like sqrt(ln d)", "p=1.5": "no d-dependence", "p=2": "no d-dependence",
             "p=inf": "grows like sqrt(d)"}
    for regime, fit in fits_d.items():
        axis, expo = D_PREDICTION[regime]
        if regime == "p=1" and d_values is not None:  # the finite-grid range of the selection scale
            expo = lnd_exponent_range(d_values[regime])
        _exponent_row(verdict, f"S1 {regime}: worst case {names[regime]} (exponent in {axis})", fit, expo, tol_d,
                      interval)
    ratio, z = bound_margin(records)
    verdict.check("S1 mean excess <= G sqrt(2B/n) in every cell", z <= z_max,
                  f"max mean/bound = {ratio:.3f}; max (mean - bound)/s.e. = {z:+.2f}",
                  predicted=f"no cell above by > {z_max:g} s.e.")
    if fits_order is not None:
        f_inf, f_1 = fits_order["p=inf"], fits_order["p=1"]
        flat = [fits_order["p=1.5"], fits_order["p=2"]]
        if interval:
            ok = f_inf.ci_low > f_1.ci_high and f_1.ci_low > max(f.ci_high for f in flat)
        else:
            ok = f_inf.slope > f_1.slope > max(f.slope for f in flat)
        verdict.check("S1 ordering in d: polynomial > logarithmic > none", ok,
                      f"d-slopes: inf {f_inf}; p=1 {f_1}; p=1.5 {flat[0]}; p=2 {flat[1]}",
                      predicted="separated intervals" if interval else "ordered point estimates")


def plot_worst_vs_n(ax: Any, rows: Sequence[Mapping[str, Any]], fits: Mapping[str, SlopeFit]) -> None:
    r"""Worst-case median excess divided by the bound against :math:`n`, per regime, with the fitted slope in the
    legend: a rate :math:`n^{-1/2}` is a flat line."""
    from dpsco_lib.plotting import OKABE_ITO

    for col, regime in zip(OKABE_ITO, REGIMES, strict=False):
        rr = [r for r in rows if r["regime"] == regime]
        ns = np.array([r["n"] for r in rr], dtype=float)
        ax.plot(ns, [r["ratio"] for r in rr], "o-", color=col,
                label=f"{regime} (d = {rr[0]['d']}): slope {fits[regime].slope:+.2f}")
    ax.axhline(1.0, color="0.3", ls=":", lw=1)
    ax.set(xscale="log", xlabel="n (samples = SMD steps)", ylabel="worst-case median excess / bound",
           ylim=(0.0, 1.2), title="Worst case over the family, relative to G sqrt(2B/n)")
    ax.legend(fontsize=8)


def plot_worst_vs_d(ax: Any, rows: Sequence[Mapping[str, Any]]) -> None:
    r"""Worst-case median excess times :math:`\sqrt n` against :math:`d`, per regime, with the predicted shapes
    (:math:`\sqrt{\ln d}`, constant, :math:`\sqrt d`) through the first point."""
    from dpsco_lib.plotting import OKABE_ITO, add_rate_guide

    for col, regime in zip(OKABE_ITO, REGIMES, strict=False):
        rr = [r for r in rows if r["regime"] == regime]
        ds = np.array([r["d"] for r in rr], dtype=float)
        m = np.array([r["worst"] * math.sqrt(r["n"]) for r in rr])
        ax.plot(ds, m, "o-", color=col, label=f"{regime} (n = {rr[0]['n']})")
        grid = np.geomspace(ds.min(), ds.max(), 50)
        if regime == "p=1":
            ax.plot(grid, m[0] * np.sqrt(np.log(grid) / np.log(ds[0])), "--", color=col, lw=1)
        elif regime == "p=inf":
            add_rate_guide(ax, ds, 0.5, anchor=(ds[0], m[0]), color=col)
        else:
            ax.plot(grid, np.full_like(grid, m[0]), "--", color=col, lw=1)
    ax.set(xscale="log", yscale="log", xlabel="dimension d", ylabel=r"$\sqrt{n}\,\times$ worst-case median excess",
           title="Dimension dependence at fixed n (dashed: predicted shape)")
    ax.legend(fontsize=8)
