r"""Experiments of notebooks 09 and 12: Algorithm 1 (Spec A1) and Algorithm 5 (Spec A5) of [GGP24] on the
planted-vertex families of :mod:`dpsco_lib.problems.hard_saddle`, their declared claims (an exponent range and a
bound, frozen from the theorem and the design before the run, with the learns-nothing and wrong-regime controls
of :mod:`dpsco_lib.experiments.claims`) and the comparison of Algorithm 5 with Poly-SFW and tree Frank-Wolfe.

Everything here is measured: the exact population duality gap (Algorithm 1) or excess risk (Algorithm 5) of
the released output on each member of a family, at ``delta = n^-1.1`` (:func:`delta_for_n`).

The rates of Thm 3.1 / Thm 4.2 are stated in the private scale
:math:`\rho \propto \sqrt{\log(1/\delta)}/(n\varepsilon)` (``d`` fixed), so the exponent checks fit the error
against the effective sample size :math:`m = n\varepsilon/\sqrt{\ln(1/\delta)}` (:func:`effective_n`); with
``delta = n^-1.1`` a fit against ``n`` itself would carry the factor ``sqrt(ln n)`` and bend the exponent by about
``a/(2 ln n)``.

Reference: González, Guzmán & Paquette (2024), "Mirror descent algorithms with nearly dimension-independent
rates for differentially-private stochastic saddle-point problems" (arXiv 2403.02912), Sections 3.1 and 4.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.special import logsumexp

from dpsco_book.privacy_rule import delta_for_n
from dpsco_lib._validation import check_int, check_positive
from dpsco_lib.algorithms.anytime_smd import alg5_theory_params, run_anytime_smd_sco, run_anytime_smd_sco_many
from dpsco_lib.algorithms.private_smd_saddle import (
    alg1_theory_params,
    run_private_smd_saddle,
    run_private_smd_saddle_many,
)
from dpsco_lib.experiments.analysis import SlopeFit, Verdict, fit_loglog_slope, worst_case_curve
from dpsco_lib.experiments.claims import BoundClaim, RateClaim
from dpsco_lib.privacy.accounting.accountants import DEFAULT_ACCOUNTANT
from dpsco_lib.privacy.audit import canary_audit, epsilon_lower_bound_from_counts
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.games import BilinearGame
from dpsco_lib.problems.hard_saddle import PlantedLinearSCO, PlantedMatrixGame
from dpsco_lib.testing import step_scaled

__all__ = [
    "A1_EXPONENTS",
    "A1_NEIGHBOURS",
    "A5_EXPONENTS",
    "A5_NEIGHBOURS",
    "COMPARED",
    "HARDNESS_LATTICE",
    "a1_audit",
    "a1_declared",
    "a1_gap_task",
    "a5_audit",
    "a5_declared",
    "a5_excess_task",
    "a5_margins",
    "bound_claim",
    "bound_ratio_rows",
    "calibration_runs",
    "claim_records",
    "comparison_rows",
    "comparison_task",
    "declared_range",
    "design_params",
    "effective_n",
    "exponent_fits",
    "learning_rows",
    "check_audit_pair",
    "long_format",
    "pairwise_separated",
    "planted_noiseless_excess",
    "plot_comparison",
    "plot_regimes",
    "predicted_ranges",
    "rate_claim",
]

A1_EXPONENTS = {"quadratic": -1.0 / 2.0, "second_order": -2.0 / 5.0, "first_order": -1.0 / 3.0}
A5_EXPONENTS = {"second_order": -1.0 / 2.0, "first_order": -2.0 / 5.0}
#: The nearest neighbouring regime of each exponent (the wrong-regime control of the claims): Algorithm 1's
#: three rates 1/2, 2/5, 1/3 of Thm 3.1; Algorithm 5's 1/2 and 2/5 of Thm 4.2, and next to 2/5 the rate 1/3
#: of the per-step redraws (``tau = 1``, Algorithm 1's first-order rate), the nearer of its two neighbours.
A1_NEIGHBOURS = {"quadratic": -2.0 / 5.0, "second_order": -1.0 / 3.0, "first_order": -2.0 / 5.0}
A5_NEIGHBOURS = {"second_order": -2.0 / 5.0, "first_order": -1.0 / 3.0}
#: The fixed lattice of margins (hardness parameters) of the planted families: two decades, the same at every
#: ``n`` and ``d``; the claims read the worst case over it.
HARDNESS_LATTICE = (0.01, 0.1, 1.0)


def effective_n(n: int, epsilon: float) -> float:
    r""":math:`m = n\varepsilon/\sqrt{\ln(1/\delta)}` at ``delta = delta_for_n(n)``: the private term of Thm 3.1
    and Thm 4.2 is a power of :math:`1/m` (times a factor of ``d`` only)."""
    n = check_int(n, "n", lo=2)
    return float(n * check_positive(epsilon, "epsilon") / math.sqrt(math.log(1.0 / delta_for_n(n))))


# ---------------------------------------------------------------------------------------------------------
# the families with the declared constants of each regime
# ---------------------------------------------------------------------------------------------------------
def a1_declared(regime: str, d: int, margin: float) -> PlantedMatrixGame:
    """The planted matrix game of Algorithm 1's ``regime``: ``c = 1``, ``s = 1/2`` (``L0 = L1 = 3/2``); the
    second-order regime declares ``L2 = L0`` (a bilinear loss is ``L2``-smooth for every ``L2 >= 0``)."""
    if regime not in A1_EXPONENTS:
        raise ValueError(f"regime must be one of {sorted(A1_EXPONENTS)}, got {regime!r}")
    return PlantedMatrixGame(d, margin, scale=1.0, noise=0.5, L2=1.5 if regime == "second_order" else 0.0)


def a5_declared(regime: str, d: int, margin: float) -> PlantedLinearSCO:
    """The planted linear problem of Algorithm 5's ``regime``: ``c = 1``, ``s = 1/2`` (``L0 = 3/2``) with the
    declared ``L1 = L2 = L0/10`` (valid for a linear loss): the class in which the lazy redraws of Thm 4.2 are
    already active at ``n ~ 10^3`` (with ``L1 = L0`` they start only near ``n ~ 3 10^5`` at ``eps = 1``)."""
    if regime not in A5_EXPONENTS:
        raise ValueError(f"regime must be one of {sorted(A5_EXPONENTS)}, got {regime!r}")
    return PlantedLinearSCO(d, margin, scale=1.0, noise=0.5, L1=0.15, L2=0.15)


def a5_margins(regime: str, n: int, *, d: int, epsilon: float, factors: Sequence[float] = (1.0, 4.0)
               ) -> list[float]:
    r"""The margins of Algorithm 5's planted family at ``n``: ``f rho_n`` for ``f`` in ``factors`` and ``c = 1``.

    ``rho_n`` is the private term of Thm 4.2 ([GGP24], Spec A5) in the effective sample size
    :math:`m` (:func:`effective_n`): :math:`\log^{7/10} d\, m^{-2/5}` (first order) or
    :math:`\log d\, m^{-1/2}` (second order), the margin of the lower-bound construction at the accuracy the
    theorem claims, shrinking with ``n``.  The largest margin of the class, ``Delta = c = 1``, is the worst member
    of exponentiated gradient at the privacy cap: its excess grows with the margin up to the plateau
    :math:`\approx 2\log d/(\eta T^2)` (:func:`planted_noiseless_excess`), which ``Delta = 1`` reaches at the
    sizes of notebook 12, while the shrinking members stay below it (about 20-80% of it), so no two members tie
    at the worst case (a maximum over tied noisy medians is biased upwards).

    Returns the sorted margins; ValueError if a shrinking margin is not below 1 (``n`` too small).
    """
    if regime not in A5_EXPONENTS:
        raise ValueError(f"regime must be one of {sorted(A5_EXPONENTS)}, got {regime!r}")
    d = check_int(d, "d", lo=2)
    m = effective_n(n, epsilon)
    rho = math.log(d) ** 0.7 * m**-0.4 if regime == "first_order" else math.log(d) * m**-0.5
    out = []
    for f in factors:
        margin = check_positive(f, "factors") * rho
        if margin >= 1.0:
            raise ValueError(f"factors: margin {f} x rho_n = {margin:.3g} must lie below the largest margin 1 "
                             f"(n = {n} is too small for this family)")
        out.append(float(margin))
    return sorted(out) + [1.0]


# ---------------------------------------------------------------------------------------------------------
# sweep tasks (module level: picklable by joblib)
# ---------------------------------------------------------------------------------------------------------
def _replicates(make: Any, run: Any, *, rng: np.random.Generator, n: int, margins: Sequence[float], reps: int,
                out: dict[str, Any]) -> dict[str, Any]:
    """``reps`` replicates (fresh records each) of ``run(problem, data) -> (mean error, params, ledger)`` on every
    member ``make(margin)``; stores ``gap_<i>_<r>`` and ``trivial_<i>`` (margin i, replicate r) in ``out``."""
    members = [make(m) for m in margins]
    for r in range(reps):
        data = members[0].sample(n, rng)
        for i, prob in enumerate(members):
            err, params, ledger = run(prob, data)
            out[f"gap_{i}_{r}"] = err
    for i, prob in enumerate(members):
        out[f"trivial_{i}"] = prob.trivial_gap() if hasattr(prob, "trivial_gap") else prob.trivial_excess()
    out["certified"] = ledger.epsilon(out["delta"])
    out.update({k: params[k] for k in ("K", "T", "eps0", "eta", "bound") if k in params})
    out.update({k: params[k] for k in ("tau", "K_out") if k in params})
    return out


def a1_gap_task(*, rng: np.random.Generator, regime: str, n: int, d: int, margins: Sequence[float],
                epsilon: float, runs: int, reps: int, accountant: str = DEFAULT_ACCOUNTANT.name) -> dict[str, Any]:
    """``reps`` replicates of Algorithm 1 on every member of the planted family at one (regime, n): fresh
    records per replicate, ``runs`` independent runs per member (vectorized); the replicate value is the mean
    exact gap over the runs (an estimate of E[Gap | S]).  ``accountant`` calibrates the run and prices the
    (K, T) design: default ``"best"``, the tightest valid accountant (``"advanced"`` is the composition rule of
    the paper's proofs, Cor 3.6 solved exactly); the runs' ledgers are certified by the tightest accountant.

    Returns ``gap_<i>_<r>``, ``trivial_<i>``, ``m`` (:func:`effective_n`), ``delta``, K, T, eta, eps0, the value
    ``bound`` of the theorem's bound at these parameters and the certified epsilon of the runs.
    """
    delta = delta_for_n(n)

    def run(game: PlantedMatrixGame, data: Dataset) -> tuple[float, dict[str, Any], Any]:
        res = run_private_smd_saddle_many(game, data, n_runs=runs, epsilon=epsilon, delta=delta, rng=rng,
                                          regime=regime, accountant=accountant)
        gaps = [game.duality_gap(x, y) for x, y in zip(res["x"], res["y"], strict=True)]
        return float(np.mean(gaps)), res["params"], res["ledger"]

    out = {"m": effective_n(n, epsilon), "delta": delta}
    return _replicates(lambda mg: a1_declared(regime, d, mg), run, rng=rng, n=n, margins=margins, reps=reps,
                       out=out)


def a5_excess_task(*, rng: np.random.Generator, regime: str, n: int, d: int, margins: Sequence[float],
                   epsilon: float, runs: int, reps: int, accountant: str = DEFAULT_ACCOUNTANT.name) -> dict[str, Any]:
    r"""As :func:`a1_gap_task` for Algorithm 5 on the planted linear family: ``gap_<i>_<r>`` is the mean exact
    excess risk over ``runs`` runs, ``trivial_<i>`` the uniform point's; also ``regret_term``, the Bregman term
    :math:`\log d/(\eta A_T)` of Thm 4.2's bound at the design's ``T`` and ``eta`` (the term the planted members
    attain, :func:`planted_noiseless_excess`)."""
    delta = delta_for_n(n)

    def run(prob: PlantedLinearSCO, data: Dataset) -> tuple[float, dict[str, Any], Any]:
        res = run_anytime_smd_sco_many(prob, data, n_runs=runs, epsilon=epsilon, delta=delta, rng=rng,
                                       regime=regime, accountant=accountant)
        return float(np.mean([prob.excess_risk(x) for x in res["x"]])), res["params"], res["ledger"]

    out = _replicates(lambda mg: a5_declared(regime, d, mg), run, rng=rng, n=n, margins=margins, reps=reps,
                      out={"m": effective_n(n, epsilon), "delta": delta})
    out["regret_term"] = math.log(d) / (out["eta"] * out["T"] * (out["T"] + 1) / 2.0)
    return out


# ---------------------------------------------------------------------------------------------------------
# fits, curves, verdict inputs
# ---------------------------------------------------------------------------------------------------------
def long_format(records: Sequence[Mapping[str, Any]], margins: Sequence[float] | None = None, *,
                by: str = "regime") -> dict[str, dict[str, np.ndarray]]:
    """Per value of ``by``: arrays ``n``, ``m``, ``y`` (the error), ``trivial`` and ``label`` (the margin),
    one entry per (cell, margin, replicate): the input of ``fit_loglog_slope(..., worst_over=label)``.
    ``margins=None`` reads each record's own ``margins`` (families whose margins change with ``n``)."""
    out: dict[str, dict[str, list]] = {}
    for rec in records:
        col = out.setdefault(rec[by], {"n": [], "m": [], "y": [], "trivial": [], "label": []})
        for i, margin in enumerate(rec["margins"] if margins is None else margins):
            for r in range(int(rec["reps"])):
                col["n"].append(rec["n"])
                col["m"].append(rec["m"])
                col["y"].append(rec[f"gap_{i}_{r}"])
                col["trivial"].append(rec[f"trivial_{i}"])
                col["label"].append(float(margin))
    return {k: {c: np.asarray(v) for c, v in col.items()} for k, col in out.items()}


def exponent_fits(long: Mapping[str, Mapping[str, np.ndarray]], *, rng: np.random.Generator,
                  n_boot: int) -> dict[str, SlopeFit]:
    """Per regime: the exponent of the worst case over the family (of the per-member median) against
    :func:`effective_n`, with the bootstrap interval over replicates (``fit_loglog_slope(worst_over=...)``)."""
    return {k: fit_loglog_slope(v["m"], v["y"], rng=rng, statistic="median", n_boot=n_boot, worst_over=v["label"])
            for k, v in long.items()}


def predicted_ranges(records: Sequence[Mapping[str, Any]], exponents: Mapping[str, float], *,
                     by: str = "regime", terms: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    r"""The theorem's prediction for the exponent over the grid of ``records``, per regime.

    ``bound`` in a record is the theorem's bound evaluated with its constants at the parameters the design chose
    at that ``n`` (``Alg1Params.bound`` / ``Alg5Params.bound``).  Its local slope is the least-squares slope of
    ``log bound`` against ``log m`` over the grid (one point per ``n``: a deterministic function of the design,
    not a fit to measurements).  The prediction is the range between the asymptotic exponent and that slope.

    ``terms`` names record fields holding terms of the same bound at the same parameters (e.g. ``"regret_term"``
    of :func:`a5_excess_task`) that the instance family attains while the bound's other terms vanish on it: the
    bound is minimized over integer parameters, so the balance between its terms, and with it the local slope of
    each term, moves from one ``n`` to the next while the sum stays smooth.  The range then spans the asymptotic
    exponent and the local slopes of the bound and of these terms.

    Returns ``{regime: {"asymptotic", "local", "terms", "lo", "hi"}}`` (``terms``: ``{field: local slope}``).
    """
    pts: dict[str, dict[float, Mapping[str, Any]]] = {}
    for rec in records:
        pts.setdefault(rec[by], {})[float(rec["m"])] = rec
    out = {}
    for k, p in pts.items():
        m = np.array(sorted(p))

        def slope(field: str, p: Mapping[float, Mapping[str, Any]] = p, m: np.ndarray = m) -> float:
            return float(np.polyfit(np.log(m), np.log([float(p[v][field]) for v in m]), 1)[0])

        local = slope("bound")
        e = float(exponents[k])
        attained = {t: slope(t) for t in terms}
        ends = [e, local, *attained.values()]
        out[k] = {"asymptotic": e, "local": local, "terms": attained, "lo": min(ends), "hi": max(ends)}
    return out


# ---------------------------------------------------------------------------------------------------------
# declared claims: frozen from the theorem and the design before the run
# ---------------------------------------------------------------------------------------------------------
_CITE = {"A1": "GGP24 Thm 3.1 (Spec A1)", "A5": "GGP24 Thm 4.2 (Spec A5)"}


@lru_cache(maxsize=256)
def design_params(algorithm: str, regime: str, n: int, *, d: int, epsilon: float) -> Any:
    """The parameters the run will use at ``n`` (``Alg1Params`` or ``Alg5Params`` of the declared family at
    ``delta = delta_for_n(n)``): a function of the theorem's rule and the class constants only, so available
    before any record is drawn. The constants do not depend on the margin, so neither does the design (cached: the
    claims of a notebook ask for the same design twice)."""
    if algorithm == "A1":
        g = a1_declared(regime, d, 1.0)
        return alg1_theory_params(n, d=(g.dx, g.dy), epsilon=epsilon, delta=delta_for_n(n), L0=g.L0, L1=g.L1,
                                  L2=g.L2, regime=regime)
    if algorithm == "A5":
        p = a5_declared(regime, d, 1.0)
        return alg5_theory_params(n, n_vertices=d, epsilon=epsilon, delta=delta_for_n(n), L0=p.L0, L1=p.L1,
                                  L2=p.L2, regime=regime)
    raise ValueError(f"algorithm must be 'A1' or 'A5', got {algorithm!r}")


def _exponents(algorithm: str) -> tuple[Mapping[str, float], Mapping[str, float]]:
    if algorithm not in _CITE:
        raise ValueError(f"algorithm must be 'A1' or 'A5', got {algorithm!r}")
    return (A1_EXPONENTS, A1_NEIGHBOURS) if algorithm == "A1" else (A5_EXPONENTS, A5_NEIGHBOURS)


def declared_range(algorithm: str, regime: str, n_grid: Sequence[int], *, d: int,
                   epsilon: float) -> tuple[float, float]:
    r"""The exponent in :math:`m` (:func:`effective_n`) that the theorem predicts over ``n_grid``, before the run.

    One range for both algorithms: from the asymptotic exponent of the regime (Thm 3.1 or Thm 4.2 of [GGP24]) to
    the least-squares slope of :math:`\log \mathrm{bound}(n)` against :math:`\log m` over the grid, ``bound`` the
    theorem's bound at the design's own parameters (:func:`design_params`: integer ``K, T`` (and ``tau, K'``) and
    the accountant's exact per-draw budget). No measurement enters.
    """
    exps, _ = _exponents(algorithm)
    if regime not in exps:
        raise ValueError(f"regime must be one of {sorted(exps)}, got {regime!r}")
    grid = sorted({check_int(n, "n_grid", lo=2) for n in n_grid})
    if len(grid) < 2:
        raise ValueError(f"n_grid must hold at least two distinct sizes, got {list(n_grid)!r}")
    lm = np.log([effective_n(n, epsilon) for n in grid])
    lb = np.log([design_params(algorithm, regime, n, d=d, epsilon=epsilon).bound for n in grid])
    local = float(np.polyfit(lm, lb, 1)[0])
    return min(exps[regime], local), max(exps[regime], local)


def rate_claim(algorithm: str, regime: str, n_grid: Sequence[int], *, d: int, epsilon: float,
               level: float = 0.95) -> RateClaim:
    """The declared exponent claim of ``regime``: the range of :func:`declared_range`, the neighbouring regime of
    ``A1_NEIGHBOURS``/``A5_NEIGHBOURS``, the widest tolerance the gap allows (half of it, rounded down to
    ``10^-3``) and the confidence ``level`` of the bootstrap interval that must meet the range."""
    exps, neighbours = _exponents(algorithm)
    lo, hi = declared_range(algorithm, regime, n_grid, d=d, epsilon=epsilon)
    nb = neighbours[regime]
    gap = lo - nb if nb < lo else nb - hi
    what = "gap" if algorithm == "A1" else "excess risk"
    return RateClaim(f"{algorithm} {regime.replace('_', '-')}: exponent in m",
                     f"worst-case mean {what} over the margin lattice ~ m^{exps[regime]:+.3g}",
                     (lo, hi), nb, math.floor(500.0 * gap) / 1000.0, _CITE[algorithm], level=level)


def bound_claim(algorithm: str, regime: str, n_grid: Sequence[int], *, d: int, epsilon: float,
                constant: float = 1.0) -> BoundClaim:
    r"""The worst-case error over the lattice is at most ``constant`` times the theorem's bound at the design's
    parameters (Alg1Params/Alg5Params ``bound``, the bound model with every absolute constant 1), at every ``n``
    of the grid, indexed by :math:`m` (:func:`effective_n`). The proofs of [GGP24] leave their absolute constants
    implicit, so ``constant`` is a stated cap, not the theorem's constant."""
    _exponents(algorithm)
    table = {effective_n(n, epsilon): design_params(algorithm, regime, n, d=d, epsilon=epsilon).bound
             for n in n_grid}
    keys = np.array(sorted(table))

    def bound(m: float) -> float:
        k = float(keys[np.argmin(np.abs(keys - m))])
        if not math.isclose(k, m, rel_tol=1e-9):
            raise ValueError(f"m = {m!r} is not a point of the declared grid")
        return table[k]

    what = "gap" if algorithm == "A1" else "excess risk"
    return BoundClaim(f"{algorithm} {regime.replace('_', '-')}: error <= bound",
                      f"worst-case mean {what} over the margin lattice below {constant:g} x the bound",
                      bound, "bound(design at n)", float(constant), _CITE[algorithm])


def claim_records(long: Mapping[str, Mapping[str, np.ndarray]], regime: str) -> dict[str, np.ndarray]:
    """The keyword arrays of ``claim.evaluate`` for ``regime``: ``x`` = m, ``y`` the replicate errors, ``family``
    the margin and ``trivial`` the uniform start point's error on the same member (the learns-nothing control)."""
    v = long[regime]
    return {"x": v["m"], "y": v["y"], "family": v["label"], "trivial": v["trivial"]}


def planted_noiseless_excess(margin: float, d: int, T: int, eta: float) -> float:
    r"""Excess risk of Algorithm 5's last anytime average on the planted linear member without record noise.

    On :class:`~dpsco_lib.problems.hard_saddle.PlantedLinearSCO` the gradient ``a + s u`` does not depend on the
    point, so the vertex estimates do not enter the iterates, the vertex-sampling bias, drift and lazy terms of
    Thm 4.2 vanish and the output draw is unbiased (``E F(x~) = F(x_{T+1})``).  With ``s = 0`` the weights are
    :math:`w_t(1) = 1/(1 + (d-1) e^{-\eta\Delta A_{t-1}})`, :math:`A_t = t(t+1)/2`, and

    .. math:: F(x_{T+1}) - F^\star = \Delta\Big(1 - \sum_{t=1}^{T+1} t\, w_t(1)/A_{T+1}\Big)
              \approx \frac{2}{\eta T^2}\log\frac{d}{1 + (d-1)e^{-\eta\Delta T^2/2}},

    which grows with the margin ``Delta`` up to the plateau :math:`\approx 2\log d/(\eta T^2)`, the
    :math:`\log d/(\eta A_T)` regret term of the bound (Spec A5, [GGP24] Thm 4.2).  With the records' noise
    ``s = 1/2`` the scores move by at most a few percent of their drift at the sizes of notebook 12, so this is
    the expected excess up to that.

    Parameters
    ----------
    margin : float
        ``Delta > 0``.
    d : int
        Dimension (>= 2).
    T : int
        Iterations (>= 1).
    eta : float
        Step size (> 0).
    """
    margin = check_positive(margin, "margin")
    d = check_int(d, "d", lo=2)
    T = check_int(T, "T", lo=1)
    eta = check_positive(eta, "eta")
    t = np.arange(1, T + 2, dtype=np.float64)
    a_prev = (t - 1.0) * t / 2.0  # A_{t-1}
    off = (d - 1) * np.exp(-eta * margin * a_prev)
    w1 = 1.0 / (1.0 + off)
    return float(margin * np.sum(t * (1.0 - w1)) / ((T + 1) * (T + 2) / 2.0))


def bound_ratio_rows(long: Mapping[str, Mapping[str, np.ndarray]],
                     records: Sequence[Mapping[str, Any]], *, by: str = "regime") -> list[dict[str, Any]]:
    """Per regime and ``n``: the worst member and its median error (:func:`worst_case_curve`), the theorem's
    bound at the design's parameters (``bound`` of the records), their ratio, and the noiseless expected excess
    of the largest margin at the design's ``T`` and ``eta`` (:func:`planted_noiseless_excess`; records need ``d``,
    ``T``, ``eta``) and the bound's regret term ``regret_term`` when the records carry it.  A ratio that stays flat
    over ``n`` is what makes the worst case follow the bound's slope."""
    design: dict[tuple[str, int], Mapping[str, Any]] = {}
    for rec in records:
        design.setdefault((rec[by], int(rec["n"])), rec)
    rows = []
    for k, v in long.items():
        for n in np.unique(v["n"]):
            at = v["n"] == n
            top = float(np.max(v["label"][at]))
            curve = worst_case_curve(v["m"][at], v["y"][at], v["label"][at], statistic="median")[0]
            rec = design[(k, int(n))]
            rows.append({by: k, "n": int(n), "worst margin": curve["argmax"], "median error": curve["worst"],
                         "noiseless, largest margin": planted_noiseless_excess(top, int(rec["d"]), int(rec["T"]),
                                                                                float(rec["eta"])),
                         "regret term": float(rec.get("regret_term", math.nan)), "bound": float(rec["bound"]),
                         "error/bound": curve["worst"] / float(rec["bound"])})
    return rows


def pairwise_separated(fits: Mapping[str, SlopeFit]) -> list[tuple[str, str, bool, str]]:
    """For every pair of regimes (ordered by slope): whether the bootstrap intervals are disjoint, with text."""
    keys = sorted(fits, key=lambda k: fits[k].slope)
    rows = []
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            fa, fb = fits[a], fits[b]
            ok = fa.ci_high < fb.ci_low
            rows.append((a, b, ok, f"{a} [{fa.ci_low:+.3f}, {fa.ci_high:+.3f}] vs {b} [{fb.ci_low:+.3f}, "
                                   f"{fb.ci_high:+.3f}]"))
    return rows


def check_audit_pair(verdict: Verdict, name: str, audit: Sequence[Mapping[str, Any]]) -> None:
    """Add the two verdict rows of a whole-run canary audit (:func:`a1_audit`, :func:`a5_audit`): the correct
    algorithm shows no violation (audited lower bound <= claimed eps) and the broken one (eps0 doubled) is caught
    (lower bound > claimed eps). ``audit`` is ``[correct_row, broken_row]``."""
    if len(audit) != 2:
        raise ValueError(f"audit must hold [correct, broken] rows, got {len(audit)} rows")
    ok_row, bad_row = audit
    verdict.check(f"{name} audit, correct: no violation", not ok_row["caught"],
                  f"lb {ok_row['audited lower bound']:.3f}", predicted=f"<= {ok_row['claimed eps']:.3f}")
    verdict.check(f"{name} audit, broken (eps0 doubled): caught", bool(bad_row["caught"]),
                  f"lb {bad_row['audited lower bound']:.3f}", predicted=f"> {bad_row['claimed eps']:.3f}")


def learning_rows(long: Mapping[str, Mapping[str, np.ndarray]]) -> list[dict[str, Any]]:
    """Per regime at its largest n: the worst member (largest median error), its median error, the error of the
    uniform point on that member and their ratio (``<= 1/2`` is the book's learning check)."""
    rows = []
    for k, v in long.items():
        at = v["n"] == v["n"].max()
        curve = worst_case_curve(v["m"][at], v["y"][at], v["label"][at], statistic="median")[0]
        triv = float(v["trivial"][at & (v["label"] == curve["argmax"])][0])
        rows.append({"regime": k, "n": int(v["n"].max()), "worst margin": curve["argmax"],
                     "median error": curve["worst"], "trivial": triv, "ratio": curve["worst"] / triv})
    return rows


def plot_regimes(ax: Any, long: Mapping[str, Mapping[str, np.ndarray]], fits: Mapping[str, SlopeFit],
                 exponents: Mapping[str, float]) -> None:
    """The rate figure: per regime the worst-case member's replicates against m (``plot_rate``), its fit and the
    theorem's slope; the error of the uniform point on the worst member (dotted)."""
    from dpsco_lib.plotting import plot_rate

    for k, v in long.items():
        ms = np.unique(v["m"])
        curve = worst_case_curve(v["m"], v["y"], v["label"], statistic="median")
        vals = [v["y"][(v["m"] == c["x"]) & (v["label"] == c["argmax"])] for c in curve]
        triv = [float(v["trivial"][(v["m"] == c["x"]) & (v["label"] == c["argmax"])][0]) for c in curve]
        e = exponents[k]
        plot_rate(ax, ms, vals, label=k.replace("_", "-"), fit=fits[k], trivial=triv,
                  guide=(e, f"$m^{{{e:+.3g}}}$ ({k.replace('_', '-')})"))
    ax.set_xlabel(r"$m = n\varepsilon/\sqrt{\ln(1/\delta)}$")
    ax.legend(fontsize=7, ncol=2)


# ---------------------------------------------------------------------------------------------------------
# Algorithm 5 against the Frank-Wolfe methods on the same problems
# ---------------------------------------------------------------------------------------------------------
#: The methods of the comparison of notebook 12: Algorithm 5 with its second-order rule, and the registry's
#: Poly-SFW (Spec F1, [BGN21]) and tree-structured variance-reduced Frank-Wolfe (Spec F2, [AFKT21]).
COMPARED = ("A5 anytime SMD", "F1 Poly-SFW", "F2 tree FW")


def comparison_task(*, rng: np.random.Generator, n: int, d: int, margins: Sequence[float], epsilon: float,
                    runs: int, a5_runs: int = 32) -> dict[str, Any]:
    """Algorithm 5 (second-order rule, the class of a linear loss) and the Frank-Wolfe methods of the registry,
    each with its library defaults, on the same records of every member of the planted linear family.

    Returns, per method ``k`` of :data:`COMPARED` and margin index ``i``, ``<k>|<i>``: the mean exact excess
    risk of ``runs`` runs (``a5_runs`` for Algorithm 5, whose runs are vectorized) on one draw of ``n``
    records; ``certified``: the largest certified epsilon of all runs at ``delta = delta_for_n(n)``; ``m``
    (:func:`effective_n`).
    """
    from dpsco_lib.algorithms.registry import get_algorithm

    runs = check_int(runs, "runs", lo=1)
    a5_runs = check_int(a5_runs, "a5_runs", lo=1)
    delta = delta_for_n(n)
    out: dict[str, Any] = {"m": effective_n(n, epsilon)}
    certified = []
    for i, margin in enumerate(margins):
        prob = a5_declared("second_order", d, margin)
        data = prob.sample(n, rng)
        res = run_anytime_smd_sco_many(prob, data, n_runs=a5_runs, epsilon=epsilon, delta=delta, rng=rng,
                                       regime="second_order")
        out[f"{COMPARED[0]}|{i}"] = float(np.mean([prob.excess_risk(x) for x in res["x"]]))
        certified.append(res["ledger"].epsilon(delta))
        for key in COMPARED[1:]:
            runner = get_algorithm(key).runner
            results = [runner(prob, data, epsilon=epsilon, delta=delta, rng=rng) for _ in range(runs)]
            out[f"{key}|{i}"] = float(np.mean([prob.excess_risk(r.x) for r in results]))
            certified.extend(r.ledger.epsilon(delta) for r in results)
    out["certified"] = float(max(certified))
    return out


def comparison_rows(records: Sequence[Mapping[str, Any]], margins: Sequence[float]) -> list[dict[str, Any]]:
    """Per method and ``n``: the worst case over the margins of the mean excess risk (mean over the records'
    replicates) and the margin that attains it."""
    rows = []
    for key in COMPARED:
        for n in sorted({int(r["n"]) for r in records}):
            at = [r for r in records if int(r["n"]) == n]
            means = [float(np.mean([r[f"{key}|{i}"] for r in at])) for i in range(len(margins))]
            j = int(np.argmax(means))
            rows.append({"method": key, "n": n, "m": float(at[0]["m"]), "worst excess": means[j],
                         "worst margin": float(margins[j])})
    return rows


def plot_comparison(ax: Any, rows: Sequence[Mapping[str, Any]]) -> None:
    """Worst-case excess risk against ``m`` for each method of :func:`comparison_rows` (log-log)."""
    for key, marker in zip(COMPARED, "osd", strict=True):
        pts = [(r["m"], r["worst excess"]) for r in rows if r["method"] == key]
        ax.loglog(*zip(*pts, strict=True), marker=marker, label=key)
    ax.set_xlabel(r"$m = n\varepsilon/\sqrt{\ln(1/\delta)}$")
    ax.set_ylabel("exact excess risk (worst member, mean)")
    ax.legend(fontsize=8)


# ---------------------------------------------------------------------------------------------------------
# calibration: the paper's rule against the tightest accountant
# ---------------------------------------------------------------------------------------------------------
def calibration_runs(algorithm: str, regime: str, n: int, *, epsilon: float, d: int,
                     rng: np.random.Generator) -> dict[str, Any]:
    """One run of Algorithm 1 (``algorithm="A1"``) or 5 (``"A5"``) on the hardest planted member per accountant:
    ``"paper"`` (Cor 3.6 of [GGP24]: eps0 = eps/(2 sqrt(2 k ln(1/delta))), advanced composition),
    ``"advanced"`` (DRV10, solved exactly) and ``"best"`` (the tightest valid accountant, the default).
    Returns ``{label: Result}`` for :func:`~dpsco_book.tables.calibration_rows`."""
    delta = delta_for_n(n)
    out = {}
    for label, acc in (("paper rule (Cor 3.6)", "paper"), ("advanced composition", "advanced"),
                       ("tightest (best)", "best")):
        if algorithm == "A1":
            game = a1_declared(regime, d, 1.0)
            out[label] = run_private_smd_saddle(game, game.sample(n, rng), epsilon=epsilon, delta=delta, rng=rng,
                                                regime=regime, accountant=acc)
        elif algorithm == "A5":
            prob = a5_declared(regime, d, 1.0)
            out[label] = run_anytime_smd_sco(prob, prob.sample(n, rng), epsilon=epsilon, delta=delta, rng=rng,
                                             regime=regime, accountant=acc)
        else:
            raise ValueError(f"algorithm must be 'A1' or 'A5', got {algorithm!r}")
    return out


# ---------------------------------------------------------------------------------------------------------
# audits on worst-case neighbouring pairs
# ---------------------------------------------------------------------------------------------------------
def _a1_canary_pair(d: int) -> tuple[BilinearGame, Dataset, Dataset, np.ndarray]:
    """A = 0, s = 1 (L0 = 1); records (u, 1) and (-u, 1), u = (+1, -1, ..., -1), in the first batch."""
    g = BilinearGame(np.zeros((d, d)), noise=1.0)
    u = -np.ones(d)
    u[0] = 1.0
    X = np.zeros((2, 2 * d))
    X[0] = np.concatenate([u, np.ones(d)])
    S = Dataset(X)
    return g, S, S.replace_one(0, (np.concatenate([-u, np.ones(d)]), None)), u


def a1_audit(*, runs: int, alpha: float, rng: np.random.Generator, d: int = 10,
             epsilon: float = 2.0) -> list[dict[str, Any]]:
    r"""Single-draw audit of Algorithm 1 (Prop 3.3) on its worst-case pair, correct and broken.

    ``T = 2``, ``K = 1``, batch size 1: the step-2 ``x``-draw is the exponential mechanism with scores
    ``-eta u`` vs ``+eta u``.  The event "the step-2 vertex is ``e_1``" is counted over ``runs`` runs per world
    and turned into a Clopper-Pearson lower bound on epsilon (false-alarm probability ``alpha``), compared with
    the claimed per-draw ``4 eta L0/B``.  Variants: ``correct``; ``eps0 doubled`` (the sampler uses ``2 eta``,
    i.e. the sensitivity halved, while the ledger keeps the claim).  Also the exact privacy loss of the draw.
    """
    g, S, S2, u = _a1_canary_pair(d)
    delta = 1e-6
    ref = alg1_theory_params(2, d=(d, d), epsilon=epsilon, delta=delta, L0=g.L0, L1=g.L1, L2=g.L2,
                             regime="quadratic", K=1, T=2)
    rows = []
    for name, factor in (("correct", 1.0), ("broken: eps0 doubled (sensitivity halved)", 2.0)):
        eta = ref.eta * factor
        kw = {"n_runs": runs, "epsilon": epsilon, "delta": delta, "rng": rng, "regime": "quadratic", "K": 1,
              "T": 2, "step_size": eta, "enforce_privacy_cap": False}
        ca = int(np.sum(run_private_smd_saddle_many(g, S, **kw)["draws_x"][:, 1, 0] == 0))
        cb = int(np.sum(run_private_smd_saddle_many(g, S2, **kw)["draws_x"][:, 1, 0] == 0))
        res = epsilon_lower_bound_from_counts(ca, cb, runs, runs, alpha, claimed_epsilon=ref.eps_draw)
        exact = float(np.max(np.abs((-eta * u - logsumexp(-eta * u)) - (eta * u - logsumexp(eta * u)))))
        rows.append({"variant": name, "claimed eps": ref.eps_draw, "exact loss": exact,
                     "audited lower bound": res.epsilon_lower_bound, "caught": bool(res.violation)})
    return rows


def a5_audit(*, runs: int, alpha: float, rng: np.random.Generator, d: int = 30, c: float = 100.0,
             claim: float = 2.0) -> list[dict[str, Any]]:
    r"""Whole-run canary audit of Algorithm 5 (Prop 4.3), correct and broken.

    Least squares with one record ``(u, c)`` against ``(u, -c)``, ``u = (+1, -1, ..., -1)``, ``T = 1``,
    ``K = K' = 1`` and ``eta`` such that the claimed per-draw epsilon ``4 eta T L0/B`` is ``claim``.  The event
    "the output vertex is ``e_1``" is audited with Clopper-Pearson bounds (threshold fixed in advance, false-alarm
    probability ``alpha``).  Broken variant: the sampler uses ``2 eta`` under the same ledger.
    """
    from dpsco_lib.problems.least_squares import hard_least_squares

    prob = hard_least_squares(1.0, d, c=c)
    u = -np.ones(d)
    u[0] = 1.0
    S = Dataset(u[None, :], np.array([c]))
    S2 = S.replace_one(0, (u, -c))
    kw = {"epsilon": 1.0, "delta": 1e-5, "T": 1, "K": 1, "K_out": 1, "tau": 1, "t0": 1,
          "step_size": claim / (4 * prob.L0), "enforce_privacy_cap": False}
    claimed = run_anytime_smd_sco(prob, S, rng=np.random.default_rng(0), **kw).ledger.epsilon(1e-5)
    rows = []
    for name, mult in (("correct", 1.0), ("broken: eps0 doubled (sampler uses 2 eta)", 2.0)):

        def run_many(data: Dataset, r: np.random.Generator, k: int, mult: float = mult) -> np.ndarray:
            with step_scaled(mult):
                return run_anytime_smd_sco_many(prob, data, n_runs=k, rng=r, **kw)["x"]

        res = canary_audit(None, S, S2, lambda xs: np.asarray(xs)[:, 0], runs, alpha, rng, threshold=0.5,
                           claimed_epsilon=claimed, delta=1e-5, run_many=run_many, statistic_vectorized=True)
        rows.append({"variant": name, "claimed eps": claimed, "audited lower bound": res.epsilon_lower_bound,
                     "caught": bool(res.violation)})
    return rows
