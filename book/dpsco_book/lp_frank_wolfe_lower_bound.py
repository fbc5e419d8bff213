r"""Experiments of notebook 06: GG-VR-SFW (result F3, naive and tree) and the lower bound (result L1) in
:math:`\ell_p`, :math:`1 < p \le 2`, on the lower-bound construction (Bassily, Guzmán and Nandi, COLT 2021).

Every run draws an instance of :class:`~dpsco_lib.problems.hard_lp.FingerprintLinearLp` (means from the
fingerprinting prior, padding fraction ``alpha`` = the hardness parameter), samples ``n`` records, runs
:func:`~dpsco_lib.algorithms.gg_vr_sfw.run_gg_vr_sfw` at ``(epsilon, delta = n^-1.1)`` and reports the exact
excess population risk. A rate is read on the worst case over a fixed lattice of ``alpha`` (from 1 down to
1/128, the same at every ``n`` and ``d``) and tested as a declared claim
(:class:`~dpsco_lib.experiments.claims.RateClaim`, :func:`f3_rate_claim`, :func:`dimension_claim`) against the
output ``x = 0`` and the neighbouring regime; the private term of result L1 is the lower-bound claim
:func:`theorem_bound_claim`, whose control is the non-private empirical risk minimizer.

The transition of result L1 is measured against the dimension at fixed ``n`` (:func:`dimension_run`,
:func:`check_dimension_transition`): F3 (tree) on the same construction at ``1 < p <= 2``, and at ``p = 1`` the
private Frank-Wolfe with tree-structured batches of Asi, Feldman, Koren and Talwar (result F2, ICML 2021) on the
planted-vertex family of the ``l_1`` ball (:mod:`dpsco_lib.problems.hard_linear`), whose worst case over
``gamma`` is the polyhedral lower-bound construction.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpsco_book.privacy_rule import delta_for_n
from dpsco_lib._validation import check_epsilon, check_in_range, check_int, check_positive, check_rng
from dpsco_lib.algorithms.gg_vr_sfw import gg_vr_sfw_theory_params, run_gg_vr_sfw
from dpsco_lib.algorithms.vr_frank_wolfe import run_private_vr_frank_wolfe
from dpsco_lib.experiments.analysis import SlopeFit, Verdict, fit_loglog_slope, worst_case_curve
from dpsco_lib.experiments.claims import ClaimOutcome, RateClaim
from dpsco_lib.privacy.accounting.accountants import DEFAULT_ACCOUNTANT
from dpsco_lib.problems.hard_linear import hard_linear
from dpsco_lib.problems.hard_lp import FingerprintLinearLp, fingerprint_lower_bound, fingerprint_prior

__all__ = [
    "EXCESS_FLOOR",
    "FIGURE_BOOT",
    "THEOREM_CONSTANT",
    "LowerBoundClaim",
    "alpha_family",
    "calibration_pair",
    "check_dimension_transition",
    "check_f3_rates",
    "check_lower_bound",
    "dimension_exponent_range",
    "dimension_claim",
    "dimension_grid",
    "dimension_rows",
    "dimension_run",
    "f3_family_run",
    "f3_rate_claim",
    "log_factor_slope_range",
    "lower_bound_rows",
    "p_trend_range",
    "plot_dimension",
    "plot_lower_bound",
    "plot_worst_case",
    "poly_sfw_selection_scale",
    "private_rate_exponent",
    "private_rate_range",
    "theorem_bound_claim",
    "worst_case_replicates",
]

#: Excess risks below this are recorded at this value (a log-log fit needs positive values; an exact optimum
#: output would otherwise give 0 up to rounding).
EXCESS_FLOOR = 1e-15

#: Bootstrap resamples of the fits drawn in the figures and of the transition row (the claims use the profile's).
FIGURE_BOOT = 200

#: The constant ``c`` of the claim "worst-case error >= c (p - 1) sqrt(d)/(eps n)" (result L1): the fingerprinting
#: argument's constant at ``p = 2``, ``1/(8 (e^eps - 1 + 4 delta sqrt d))`` (about ``1/13.8`` at ``eps = 1``),
#: rounded down. For ``p < 2`` the proof in BGN21 fixes no explicit constant: this is a stated value.
THEOREM_CONSTANT = 1.0 / 16.0


def alpha_family(smallest_power: int, *, tail: Sequence[int] = (), per_octave: int = 1) -> list[float]:
    """The hardness parameters ``alpha = 2^(-k/per_octave)`` for ``k = 0, ..., smallest_power * per_octave``,
    then ``2^-k`` for ``k`` in ``tail`` (largest first)."""
    k = check_int(smallest_power, "smallest_power", lo=0, hi=60)
    per = check_int(per_octave, "per_octave", lo=1, hi=8)
    extra = [check_int(j, "tail", lo=k + 1, hi=60) for j in tail]
    return [float(2.0 ** (-j / per)) for j in range(k * per + 1)] + [float(2.0**-j) for j in sorted(set(extra))]


def f3_family_run(*, rng: np.random.Generator, variant: str, n: int, d: int, p: float, alpha: float,
                  epsilon: float = 1.0, depth: int = 4, step_product: float = 8.0,
                  accountant: str = DEFAULT_ACCOUNTANT.name) -> dict[str, float]:
    r"""One run of GG-VR-SFW (result F3) on a fresh instance of the lower-bound construction.

    The instance draws its means from the prior, then ``n`` records; ``delta = n^-1.1``. The tree variant has
    fixed depth ``depth`` (root batch ``b = n/(1 + depth/2)``, so ``b`` is proportional to ``n``); the naive
    variant takes the theory's batches with the constant step ``eta = step_product/T`` (``eta T`` fixed: no
    ``ln n`` factor in its noise, weight ``e^-8`` left on the start point).

    Returns
    -------
    dict
        ``excess`` (exact, floored at :data:`EXCESS_FLOOR`), ``trivial`` (excess of ``x = 0``), ``excess_erm``
        (exact excess of the non-private empirical risk minimizer on the same records: the linear minimizer
        :math:`\arg\min_{\|v\|_p \le 1}\langle \bar g, v\rangle` of the mean gradient of all ``n`` records),
        ``lower_bound`` (:func:`~dpsco_lib.problems.hard_lp.fingerprint_lower_bound` at this ``alpha``), ``kappa``
        (of the GG noise norm), ``certified_eps``.
    """
    rng = check_rng(rng)
    delta = delta_for_n(n)
    prob = FingerprintLinearLp(p, fingerprint_prior(d, rng), alpha)
    data = prob.sample(n, rng)
    if variant == "tree":
        hyper: dict[str, Any] = {"depth": check_int(depth, "depth", lo=1)}
    elif variant == "naive":
        T = gg_vr_sfw_theory_params(n, d, p, epsilon, delta, prob.L0, prob.L1, 2.0, variant="naive").T
        hyper = {"step_size": min(1.0, check_positive(step_product, "step_product") / T)}
    else:
        raise ValueError(f"variant must be 'naive' or 'tree', got {variant!r}")
    res = run_gg_vr_sfw(prob, data, epsilon=epsilon, delta=delta, rng=rng, variant=variant,
                        accountant=accountant, **hyper)
    x_erm = prob.feasible_set.lmo(prob.mean_grad(np.zeros(d), data))
    return {"excess": max(prob.excess_risk(res.x), EXCESS_FLOOR), "trivial": prob.trivial_excess(),
            "excess_erm": max(prob.excess_risk(x_erm), EXCESS_FLOOR), "kappa": float(res.params["kappa"]),
            "lower_bound": fingerprint_lower_bound(n, d, p, epsilon, delta, alpha),
            "certified_eps": res.certified_epsilon(delta)}


def private_rate_exponent(ns: Sequence[int], power: float, epsilon: float) -> float:
    r"""Least-squares log-log slope over the grid ``ns`` of the private term ``sqrt(ln(1/delta_n) + eps) n^-power``.

    The GG noise scale of result F3 is proportional to ``sqrt(ln(1/delta) + eps)/eps``
    (:func:`~dpsco_lib.privacy.mechanisms.gg_sigma_exact`) and ``delta_n = n^-1.1`` shrinks with ``n``, so the
    private term decays slightly slower than ``n^-power`` (``power = 3/4`` naive, ``1`` tree): this is the
    exponent the theorem predicts on the grid.
    """
    x = np.log(np.asarray(ns, dtype=float))
    if x.size < 2:
        raise ValueError(f"ns must hold at least two sizes, got {list(ns)}")
    epsilon = check_positive(epsilon, "epsilon")
    y = 0.5 * np.log([math.log(1.0 / delta_for_n(int(n))) + epsilon for n in ns]) - power * x
    return float(np.polyfit(x, y, 1)[0])


def private_rate_range(ns: Sequence[int], power: float, epsilon: float, kappa: float) -> tuple[float, float]:
    r"""The predicted exponent as a range: the local slope over ``ns`` of ``s(delta_n) n^-power``, where the
    factor ``s(delta)`` is the noise multiplier of one GG release at ``(epsilon, delta)`` under the paper's closed
    form (``sqrt(2 kappa (ln(1/delta) + eps))/eps``, :func:`private_rate_exponent`) or under the tightest
    accountant (Rényi DP at the optimal order, whose multiplier grows a little faster as ``delta = n^-1.1``
    shrinks). Only the ``delta``-dependence of the calibration enters; the power is the theorem's."""
    from dpsco_lib.algorithms.gg_vr_sfw import gg_noise_multiplier

    x = np.log(np.asarray(ns, dtype=float))
    slopes = [private_rate_exponent(ns, power, epsilon)]
    best = [gg_noise_multiplier(epsilon, delta_for_n(int(n)), kappa=kappa, accountant="best") for n in ns]
    slopes.append(float(np.polyfit(x, np.log(best) - power * x, 1)[0]))
    return min(slopes), max(slopes)


def _select(records: Sequence[Mapping[str, Any]], **where: Any) -> list[Mapping[str, Any]]:
    return [r for r in records if all(r[k] == v for k, v in where.items())]


def worst_case_replicates(records: Sequence[Mapping[str, Any]], *, x: str = "n", value: str = "excess",
                          statistic: str = "median", family: str = "alpha"
                          ) -> tuple[list[float], list[np.ndarray], list[float]]:
    """Per grid value of ``x``: the replicates of the worst instance (largest ``statistic`` over the hardness
    parameter named ``family``) and that instance's parameter (for :func:`~dpsco_lib.plotting.plot_rate`)."""
    rows = worst_case_curve([r[x] for r in records], [r[value] for r in records], [r[family] for r in records],
                            statistic=statistic)
    xs = [row["x"] for row in rows]
    reps = [np.array([r[value] for r in records if r[x] == row["x"] and r[family] == row["argmax"]])
            for row in rows]
    return xs, reps, [float(row["argmax"]) for row in rows]


def _half_gap(claim_range: tuple[float, float], neighbour: float, cap: float) -> float:
    """The largest tolerance a claim may take (half the gap to ``neighbour``, rounded down), at most ``cap``."""
    lo, hi = claim_range
    gap = lo - neighbour if neighbour < lo else neighbour - hi
    return min(cap, math.floor(500.0 * gap) / 1000.0)


def f3_rate_claim(variant: str, ns: Sequence[int], *, epsilon: float, kappa: float) -> RateClaim:
    r"""The declared rate claim of one F3 variant over the grid ``ns`` (result F3, BGN21), fixed before the run.

    Prediction: the exponent range of :func:`private_rate_range` (private term :math:`n^{-3/4}` naive,
    :math:`n^{-1}` tree, with the :math:`\delta_n = n^{-1.1}` factor of the calibration). Neighbour: the nearest
    other regime, the statistical term :math:`n^{-1/2}` for the naive variant (gap about 0.2; the tree's
    :math:`n^{-1}` lies further, about 0.29) and the naive private term :math:`n^{-3/4}` for the tree (gap about
    0.18). Tolerance: half the gap (rounded down), at most 0.1. Statistic: the median excess per cell (the
    worst case over the family of medians).
    """
    if variant not in ("naive", "tree"):
        raise ValueError(f"variant must be 'naive' or 'tree', got {variant!r}")
    power, neighbour = (0.75, -0.5) if variant == "naive" else (1.0, -0.75)
    exponent = private_rate_range(ns, power, epsilon, kappa)
    return RateClaim(f"F3 {variant}", f"worst-case excess ~ n^-{power:g} (private term) on a fixed alpha lattice",
                     exponent, neighbour, _half_gap(exponent, neighbour, 0.1), "BGN21, F3", statistic="median")


def check_f3_rates(verdict: Verdict, records: Sequence[Mapping[str, Any]], *, variant: str, epsilon: float,
                   rng: np.random.Generator, n_boot: int, required: float, n_resamples: int = 200) -> SlopeFit:
    r"""The verdict rows of one F3 variant on the measured worst case over the family (a fixed lattice of
    ``alpha``, the same at every ``n``).

    Rows: the declared rate claim :func:`f3_rate_claim` (:class:`~dpsco_lib.experiments.claims.RateClaim`) with
    its two controls: the learns-nothing output ``x = 0`` on the same instances (its worst case over the lattice
    is flat in ``n``) and the records moved to the neighbouring regime's exponent; the worst instance lies inside
    the family at every ``n`` (else the curve would be capped by the trivial error, not governed by the rate);
    learning (worst-case median excess at the largest ``n`` at most half the family's trivial error, the excess
    of ``x = 0`` on its hardest instance ``alpha = 1``); the ledgers certify ``epsilon``. Returns the fit of the
    worst-case curve (for :func:`plot_worst_case`; :data:`FIGURE_BOOT` bootstrap resamples).
    """
    recs = _select(records, variant=variant)
    ns = sorted({int(r["n"]) for r in recs})
    kappa = float(recs[0].get("kappa", 2.0))
    claim = f3_rate_claim(variant, ns, epsilon=epsilon, kappa=kappa)
    x, alpha = [float(r["n"]) for r in recs], [float(r["alpha"]) for r in recs]
    verdict.claim(claim.evaluate(x, [r["excess"] for r in recs], family=alpha,
                                 trivial=[r["trivial"] for r in recs], rng=rng, required=required,
                                 n_boot=n_boot, n_resamples=n_resamples))
    fit = fit_loglog_slope(x, [r["excess"] for r in recs], rng=rng, statistic="median",
                           n_boot=min(n_boot, FIGURE_BOOT), worst_over=alpha, level=claim.level)
    xs, reps, worst_alpha = worst_case_replicates(recs)
    alphas = sorted(set(alpha))
    interior = all(alphas[0] < a < alphas[-1] for a in worst_alpha)
    verdict.check(f"F3 {variant}: worst instance inside the family", interior,
                  "worst alpha per n: " + ", ".join(f"{a:.3g}" for a in worst_alpha),
                  predicted=f"strictly inside [{alphas[0]:.3g}, {alphas[-1]:.3g}]")
    top = _select(recs, n=ns[-1], alpha=alphas[-1])
    trivial = float(np.median([r["trivial"] for r in top]))
    verdict.check_at_most(f"F3 {variant}: learns at n = {ns[-1]} (worst-case median excess)",
                          float(np.median(reps[-1])), 0.5 * trivial, what="0.5 x trivial")
    cert = max(float(r["certified_eps"]) for r in recs)
    verdict.check_at_most(f"F3 {variant}: ledgers certify eps", cert, epsilon, what="target", fmt=".4f")
    return fit


def lower_bound_rows(records: Sequence[Mapping[str, Any]], *, tight_factor: float = 8.0) -> list[dict[str, Any]]:
    r"""Per ``p``: the worst case over ``alpha`` of the mean excess (the Bayes risk under the prior), the explicit
    lower bound maximized over ``alpha`` and their ratio; the pooled ratio ``sum excess / sum LB(alpha)`` over
    the replicates with ``alpha <= alpha*/tight_factor`` (where the bound is nearly tight: the ratio tends to
    ``2 E||m||_q / d^(1/q) <= 2 (q + 1)^(-1/q) <= 1.4``); and the theorem's form ``(p - 1) sqrt(d)/(eps n)``
    with constant 1."""
    out = []
    for p in sorted({float(r["p"]) for r in records}):
        recs = _select(records, p=p)
        r0 = recs[0]
        n, d, eps = int(r0["n"]), int(r0["d"]), float(r0["epsilon"])
        means = {a: float(np.mean([r["excess"] for r in _select(recs, alpha=a)]))
                 for a in sorted({float(r["alpha"]) for r in recs})}
        worst = max(means.values())
        lb = fingerprint_lower_bound(n, d, p, eps, delta_for_n(n))
        a_star = d ** (1.0 - 1.0 / p) / (2.0 * n * math.expm1(eps))
        tight = [r for r in recs if r["alpha"] <= a_star / tight_factor]
        pooled = (sum(r["excess"] for r in tight) / sum(r["lower_bound"] for r in tight)) if tight else math.nan
        out.append({"p": p, "worst mean excess": worst, "lower bound": lb, "ratio": worst / lb,
                    "pooled ratio, small alpha": pooled, "cells": len({r["alpha"] for r in tight}),
                    "(p-1) sqrt(d)/(eps n)": (p - 1.0) * math.sqrt(d) / (eps * n)})
    return out


@dataclass(frozen=True)
class LowerBoundClaim:
    r"""A lower bound: the worst-case error of a private algorithm is at least ``constant`` times ``bound`` in
    every cell ``(p, d, n, epsilon)`` of the run.

    The statistic is :math:`\min_{c} \max_g \operatorname{mean}\{y : c, g\}/\mathrm{bound}(c)` over the cells
    ``c`` and the members ``g`` of the family (the worst case over the family of the Bayes risk, a mean); the
    claim holds iff it is at least ``constant``. A lower bound for private algorithms says nothing about an
    estimator that is not private: the *control* is such an estimator on the same records (the non-private
    empirical risk minimizer), which must **fail** the claim (fall below the bound in some cell) with the
    required power, else the claim could not detect an algorithm that beats it. Powers and the false-alarm
    probability come from resampled experiments (each cell's replicates resampled with replacement), as for
    :class:`~dpsco_lib.experiments.claims.RateClaim`.

    Parameters
    ----------
    claim_id, statement, cite : str
    bound : callable
        ``bound(p, d, n, epsilon) -> float``, the theorem's bound without its constant.
    bound_text : str
        The bound as a formula, for the table.
    constant : float
        The constant (the proof's, or a stated value).
    """

    claim_id: str
    statement: str
    bound: Callable[[float, int, int, float], float]
    bound_text: str
    constant: float
    cite: str

    def __post_init__(self) -> None:
        if not (math.isfinite(self.constant) and self.constant > 0):
            raise ValueError(f"constant must be a positive finite number, got {self.constant!r}")

    @property
    def window(self) -> str:
        """The accepted values, e.g. ``>= 0.0625 x (p - 1) sqrt(d)/(eps n) in every cell``."""
        return f">= {self.constant:g} x {self.bound_text} in every cell"

    def _ratios(self, cells: Mapping[tuple[float, ...], Mapping[float, np.ndarray]], rng: np.random.Generator,
                outer: int) -> tuple[np.ndarray, tuple[float, ...]]:
        """Minimum over the cells of worst-case mean / bound: per resampled experiment (``outer > 0``) or for
        the data (``outer = 0``, one value), and the cell where the data attain it."""
        o = max(outer, 1)
        best, where = np.full(o, np.inf), np.full(o, -1)
        for i, (key, members) in enumerate(cells.items()):
            worst = np.zeros(o)
            for vals in members.values():
                data = vals[rng.integers(0, vals.size, (o, vals.size))] if outer else vals[None, :]
                worst = np.maximum(worst, data.mean(axis=1))
            ratio = worst / float(self.bound(*key))
            where = np.where(ratio < best, i, where)
            best = np.minimum(best, ratio)
        return best, list(cells)[int(where[0])]

    def evaluate(self, records: Sequence[Mapping[str, Any]], *, rng: np.random.Generator, required: float,
                 value: str = "excess", control: str = "excess_erm", family: str = "alpha",
                 n_resamples: int = 200) -> ClaimOutcome:
        """Test the claim on ``records[value]`` and the control ``records[control]`` (same records), cells
        ``(p, d, n, epsilon)`` and family ``records[family]``; every (cell, member) needs >= 2 replicates."""
        rng = check_rng(rng)
        n_resamples = check_int(n_resamples, "n_resamples", lo=20)
        if not 0 < required <= 1:
            raise ValueError(f"required must lie in (0, 1], got {required!r}")

        def cells(field: str) -> dict[tuple[float, ...], dict[float, np.ndarray]]:
            out: dict[tuple[float, ...], dict[float, list[float]]] = {}
            for r in records:
                key = (float(r["p"]), int(r["d"]), int(r["n"]), float(r["epsilon"]))
                out.setdefault(key, {}).setdefault(float(r[family]), []).append(float(r[field]))
            arrays = {k: {g: np.asarray(v) for g, v in m.items()} for k, m in out.items()}
            if any(a.size < 2 for m in arrays.values() for a in m.values()):
                raise ValueError("every (cell, family member) needs at least 2 replicates")
            return arrays

        real, ctrl = cells(value), cells(control)
        ratio, arg = self._ratios(real, rng, 0)
        false_alarm = float(np.mean(self._ratios(real, rng, n_resamples)[0] < self.constant))
        power = float(np.mean(self._ratios(ctrl, rng, n_resamples)[0] < self.constant))
        ctrl_ratio, ctrl_arg = self._ratios(ctrl, rng, 0)
        measured = (f"min ratio {ratio[0]:.3g} (p = {arg[0]:g}, d = {arg[1]}); control "
                    f"{ctrl_ratio[0]:.3g} (p = {ctrl_arg[0]:g}, d = {ctrl_arg[1]})")
        return ClaimOutcome(self.claim_id, self.statement, self.window, measured, bool(ratio[0] >= self.constant),
                            power, None, false_alarm, float(required), n_resamples, self.cite)


def _theorem_bound(p: float, d: int, n: int, epsilon: float) -> float:
    return (p - 1.0) * math.sqrt(d) / (epsilon * n)


def theorem_bound_claim(constant: float = THEOREM_CONSTANT) -> LowerBoundClaim:
    r"""The private term of result L1 as a declared claim: the worst-case Bayes risk of a private algorithm is
    at least ``constant`` :math:`\times (p - 1)\sqrt d/(\varepsilon n)` at every ``(p, d, n)`` of the run
    (:data:`THEOREM_CONSTANT`), with the non-private empirical risk minimizer as the control that must fail."""
    return LowerBoundClaim("L1 bound", "private worst-case error >= c (p - 1) sqrt(d)/(eps n); the "
                           "control (non-private ERM) must fall below", _theorem_bound,
                           "(p - 1) sqrt(d)/(eps n)", constant, "BGN21, L1")


def check_lower_bound(verdict: Verdict, records: Sequence[Mapping[str, Any]], *, rng: np.random.Generator,
                      n_boot: int, required: float, n_resamples: int = 200) -> SlopeFit:
    r"""The verdict rows of result L1 on its construction over a grid of ``p`` at fixed ``n``, ``d``.

    Rows: the declared claim :func:`theorem_bound_claim` (the theorem's :math:`(p - 1)\sqrt d/(\varepsilon n)`
    with the stated constant, the non-private ERM as the control that must fall below it); at every ``p`` the
    measured worst-case Bayes risk stays above the explicit bound of the construction (maximized over
    ``alpha``, with the proof's constant); at every ``p`` the excess pooled over ``alpha <= alpha*/8`` stays
    above that bound (which is within a factor 1.4 of the trivial error there, so a wrong constant or a wrong
    construction fails).

    Returns the fit of the exponent of ``(p - 1)`` in the worst-case error (a description, not a claim: the
    theorem's lower bound has exponent 1 and F3's guarantee about -1 through :math:`\kappa`, and the theorem
    predicts no exponent for the error of any one algorithm inside that gap).
    """
    verdict.claim(theorem_bound_claim().evaluate(records, rng=rng, required=required, n_resamples=n_resamples))
    rows = lower_bound_rows(records)
    verdict.check_at_least("L1: worst-case error / explicit lower bound, min over p", min(r["ratio"] for r in rows),
                           1.0, what="the bound holds")
    pooled = [r["pooled ratio, small alpha"] for r in rows]
    verdict.check_at_least("L1: excess / bound where the bound is nearly tight (alpha <= alpha*/8), min over p",
                           min(pooled) if all(np.isfinite(pooled)) else math.nan, 1.0, what="the bound holds")
    return fit_loglog_slope([r["p"] - 1.0 for r in records], [r["excess"] for r in records], rng=rng,
                            statistic="mean", n_boot=min(n_boot, FIGURE_BOOT),
                            worst_over=[r["alpha"] for r in records])


def calibration_pair(variant: str, *, n: int, d: int, p: float, epsilon: float, rng: np.random.Generator,
                     **hyper: Any) -> dict[str, Any]:
    """Two runs of F3 on one instance (``alpha = 1/4``), calibrated by the paper's closed form and by the
    tightest accountant, for :func:`~dpsco_book.tables.calibration_rows` (same data, same seed)."""
    rng = check_rng(rng)
    check_in_range(p, "p", 1.0, 2.0, lo_inclusive=False)
    prob = FingerprintLinearLp(p, fingerprint_prior(d, rng), 0.25)
    data = prob.sample(n, rng)
    seed = int(rng.integers(2**63))
    return {label: run_gg_vr_sfw(prob, data, epsilon=epsilon, delta=delta_for_n(n), variant=variant,
                                 rng=np.random.default_rng(seed), accountant=acc, **hyper)
            for label, acc in (("paper rule", "paper"), ("tightest", "best"))}


def plot_worst_case(ax: Any, records: Sequence[Mapping[str, Any]], *, variant: str, fit: SlopeFit,
                    expected: float, color: str) -> None:
    """Worst-case median excess against ``n`` (band over the replicates of the worst instance), its fit, the
    predicted slope and the family's trivial error."""
    from dpsco_lib.plotting import plot_rate

    recs = _select(records, variant=variant)
    xs, reps, _ = worst_case_replicates(recs)
    a_max = max(float(r["alpha"]) for r in recs)
    trivial = [float(np.median([r["trivial"] for r in _select(recs, n=int(x), alpha=a_max)])) for x in xs]
    plot_rate(ax, xs, reps, label=f"F3 {variant}, worst over alpha", color=color, fit=fit,
              guide=(expected, f"predicted $n^{{{expected:.2f}}}$"), trivial=trivial)
    ax.set_xlabel("$n$")
    ax.set_ylabel("excess population risk (exact)")


def plot_lower_bound(ax: Any, records: Sequence[Mapping[str, Any]]) -> None:
    """Mean excess of F3 (tree) against ``alpha`` for every ``p`` (solid) and the explicit lower bound at the
    same ``alpha`` (dashed, where positive)."""
    for i, p in enumerate(sorted({float(r["p"]) for r in records})):
        recs = _select(records, p=p)
        al = sorted({float(r["alpha"]) for r in recs})
        mean = [np.mean([r["excess"] for r in _select(recs, alpha=a)]) for a in al]
        lb = np.array([_select(recs, alpha=a)[0]["lower_bound"] for a in al])
        ax.plot(al, mean, marker="o", color=f"C{i}", label=f"p = {p:g}: F3 tree")
        pos = lb > 0
        ax.plot(np.array(al)[pos], lb[pos], ls="--", color=f"C{i}", lw=1.0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"hardness parameter $\alpha$ (share of informative records)")
    ax.set_ylabel("mean excess (solid), lower bound (dashed)")


# ---------------------------------------------------------------------------------------------------------
# the transition of result L1 against the dimension
# ---------------------------------------------------------------------------------------------------------
def dimension_run(*, rng: np.random.Generator, n: int, d: int, p: float, hardness: float, epsilon: float = 1.0,
                  depth: int = 4, block: int = 0) -> dict[str, float]:
    r"""One run of the dimension sweep of result L1 on a fresh instance of a lower-bound construction.

    ``1 < p <= 2``: GG-VR-SFW with tree aggregation (result F3) on
    :class:`~dpsco_lib.problems.hard_lp.FingerprintLinearLp` with ``alpha = hardness`` (means from the prior).
    ``p = 1``: the private Frank-Wolfe with tree-structured batches and report-noisy-min selections (result F2,
    AFKT21, tightest accountant) on the planted-vertex family ``hard_linear(d, gamma = hardness)`` over the unit
    :math:`\ell_1` ball (``|V| = 2d``). Both trees have the fixed depth ``depth`` (root batch ``b = n/(1 +
    depth/2)``, the same at every ``d``: the theoretical depth of F2 is a rounded ``log2`` of a power of
    ``ln|V|`` and would jump along a grid in ``d``). ``delta = n^-1.1``.

    Both losses are linear, so every correction of the tree is data-independent (exactly zero) and every leaf
    sees the root's estimate: the same run with its noise removed outputs the linear minimizer
    :math:`\arg\min_{v \in \mathcal X}\langle \bar g_{B}, v\rangle` of the mean gradient of the root batch
    ``B`` (records ``[0, b)``). Its exact excess is returned as ``excess_nonprivate``: the statistical error of
    the run, measured on the same records.

    ``block`` only labels a batch of extra independent replicates (it enters the task's seed through the sweep's
    parameters, nothing else; :func:`dimension_grid`).

    Returns
    -------
    dict
        ``excess`` and ``excess_nonprivate`` (exact, floored at :data:`EXCESS_FLOOR`), ``trivial`` (excess of
        ``x = 0``), ``lower_bound`` (:func:`~dpsco_lib.problems.hard_lp.fingerprint_lower_bound` at this
        ``alpha``; ``nan`` at ``p = 1``, whose family is another construction), ``certified_eps``.
    """
    rng = check_rng(rng)
    p = check_in_range(p, "p", 1.0, 2.0)
    hardness = check_in_range(hardness, "hardness", 0.0, 1.0, lo_inclusive=False)
    n, d = check_int(n, "n", lo=4), check_int(d, "d", lo=2)
    epsilon = check_epsilon(epsilon)
    check_int(block, "block", lo=0)
    delta = delta_for_n(n)
    if p == 1.0:
        prob: Any = hard_linear(d, hardness)
        data = prob.sample(n, rng)
        res = run_private_vr_frank_wolfe(prob, data, epsilon=epsilon, delta=delta, rng=rng,
                                         depth=check_int(depth, "depth", lo=1))
        trivial, lower = prob.trivial_error, math.nan
    else:
        prob = FingerprintLinearLp(p, fingerprint_prior(d, rng), hardness)
        data = prob.sample(n, rng)
        res = run_gg_vr_sfw(prob, data, epsilon=epsilon, delta=delta, rng=rng, variant="tree",
                            depth=check_int(depth, "depth", lo=1))
        trivial = prob.trivial_excess()
        lower = fingerprint_lower_bound(n, d, p, epsilon, delta, hardness)
    root = data[: int(res.params["batch_size"])]
    x_free = prob.feasible_set.lmo(prob.mean_grad(np.zeros(d), root))
    return {"excess": max(prob.excess_risk(res.x), EXCESS_FLOOR),
            "excess_nonprivate": max(prob.excess_risk(x_free), EXCESS_FLOOR), "trivial": float(trivial),
            "lower_bound": lower, "certified_eps": res.certified_epsilon(delta)}


def dimension_grid(ds: Sequence[int], *, n: int, ps: Sequence[float] = (2.0, 1.5, 1.0), depth: int = 5,
                   epsilon: float = 1.0, per_octave: int = 2) -> list[dict[str, Any]]:
    r"""The task parameters of the dimension sweep (:func:`dimension_run`): every ``p`` in ``ps`` and ``d`` in
    ``ds`` with its family of hardness parameters, a fixed lattice (the same at every ``d``) spanning more than
    two decades. ``1 < p <= 2``: ``alpha = 2^(-k/per_octave)`` from 1 down to ``1/128`` (F3's worst member moves
    like :math:`\sqrt d/n`); ``p = 1``: ``gamma = 2^(-k/4)`` from 1 down to ``1/8``, four per octave at every
    profile (the excess of F2 drops steeply once the planted vertex wins, so a coarser family would make the
    worst case jump between neighbouring members), then ``1/16, 1/32, 1/64, 1/128``.

    A cell at dimension ``d`` gets ``round(sqrt(max(ds)/d))`` blocks of replicates (parameter ``block``): the
    spread of the excess over replicates shrinks as ``d`` grows (the noise and the prior concentrate), and the
    maximum over the family of noisy medians is biased upwards by that spread, so equal replicate counts would
    lift the small-``d`` end of the curve and flatten its fitted exponent. The extra replicates cost little, as a
    run costs about ``n d``."""
    n = check_int(n, "n", lo=4)
    per = check_int(per_octave, "per_octave", lo=1, hi=8)
    dims = [check_int(int(d), "ds", lo=2) for d in ds]
    grid = []
    for p in ps:
        p = check_in_range(p, "ps", 1.0, 2.0)
        family = alpha_family(3, per_octave=4, tail=(4, 5, 6, 7)) if p == 1.0 else alpha_family(7, per_octave=per)
        grid += [{"n": n, "d": d, "p": p, "hardness": h, "epsilon": epsilon, "depth": depth, "block": k}
                 for d in dims for k in range(max(1, round(math.sqrt(max(dims) / d)))) for h in family]
    return grid


def _local_slope(xs: Sequence[float], values: Sequence[float]) -> float:
    return float(np.polyfit(np.log(np.asarray(xs, dtype=float)), np.log(np.asarray(values, dtype=float)), 1)[0])


def log_factor_slope_range(ds: Sequence[int], *, powers: tuple[float, float] = (0.5, 1.0),
                           scales: tuple[float, float] = (0.125, 8.0)) -> tuple[float, float]:
    r"""Range of the local slopes over the grid ``ds`` of the logarithmic factors :math:`\ln(c|V|)^a`,
    :math:`|V| = 2d`, for ``a`` in ``powers`` and ``c`` in ``scales`` (results F1, F2; BGN21, AFKT21).

    The polyhedral bounds depend on the dimension only through such factors: :math:`\ln|V|` in the private term
    of Poly-SFW (F1) and of the tree Frank-Wolfe at a fixed depth, :math:`\ln^{2/3}|V|` in the private term of
    F2 at its theoretical depth, :math:`\ln^{1/2}|V|` in the statistical terms; the ``O(.)`` fixes the constant
    inside the logarithm only up to a constant factor. The default ``c`` in ``[1/8, 8]`` covers the worst case
    over a planted family of report-noisy-min selections (Laplace scale :math:`\lambda`, score gap
    :math:`\gamma = u\lambda` of the planted vertex, which wins with probability about :math:`F(u - \ln d)` for a
    fixed distribution :math:`F` with an exponential left tail): the excess :math:`\lambda u(1 - F(u - \ln d))`
    is largest at :math:`u \approx \ln d - \ln\ln d`, i.e. :math:`\lambda\ln(c|V|)` with
    :math:`c \approx 1/(2\ln d)` drifting slowly with ``d``; over ``d`` in ``[50, 800]`` the local slope of
    :math:`\ln(d/\ln d)` (0.23) lies below that of :math:`\ln(|V|/8)` (0.27). The local slope of
    :math:`\ln(c|V|)^a` decreases with ``c`` and grows with ``a``, so the range is spanned by
    ``(max(powers), min(scales))`` (top) and ``(min(powers), max(scales))`` (bottom).
    """
    xs = np.asarray(ds, dtype=float)
    if xs.size < 2 or np.unique(xs).size < 2:
        raise ValueError(f"ds must hold at least two distinct dimensions, got {list(ds)}")
    a_lo, a_hi = sorted(check_positive(a, "powers") for a in powers)
    c_lo, c_hi = sorted(check_positive(c, "scales") for c in scales)
    if 2.0 * c_lo * xs.min() <= math.e:
        raise ValueError(f"ln(c |V|) must exceed 1 on the grid: min(scales) * 2 * min(ds) = "
                         f"{2.0 * c_lo * xs.min():g} <= e")
    top = _local_slope(xs, np.log(2.0 * c_lo * xs) ** a_hi)
    bottom = _local_slope(xs, np.log(2.0 * c_hi * xs) ** a_lo)
    return bottom, top



def _check_d_sweep(p: float, n: int, epsilon: float, ds: Sequence[int]) -> tuple[float, int, float, list[int]]:
    """Validated ``(p, n, epsilon, ds)`` of a sweep in d: 1 <= p <= 2, n >= 4, two or more distinct d >= 2."""
    p = check_in_range(p, "p", 1.0, 2.0)
    n = check_int(n, "n", lo=4)
    epsilon = check_epsilon(epsilon)
    xs = [check_int(int(d), "ds", lo=2) for d in ds]
    if len(set(xs)) < 2:
        raise ValueError(f"ds must hold at least two distinct dimensions, got {list(ds)}")
    return p, n, epsilon, xs

def dimension_exponent_range(ds: Sequence[int], *, n: int, p: float, epsilon: float = 1.0) -> tuple[float, float]:
    r"""Predicted exponent of the worst-case excess in ``d`` over the grid ``ds`` at fixed ``n`` (result L1).

    ``1 < p <= 2``: between the local slopes over ``ds`` of the two bounds that sandwich the worst case on the
    construction: the explicit lower bound maximized over ``alpha``,
    :func:`~dpsco_lib.problems.hard_lp.fingerprint_lower_bound` :math:`\propto d^{1/q}` (BGN21's fingerprinting
    argument), and F3's private term :math:`\kappa\sqrt d/(\varepsilon n)` (result F3, tree; ``kappa`` of the
    library's smooth norm, constant in ``d`` once :math:`q \le \ln d`). At ``p = 2`` both are ``1/2`` (the
    theorem's :math:`(p - 1)\sqrt d` is tight); at ``p = 1.5`` the range is about ``[1/3, 1/2]``.

    ``p = 1``: the logarithmic range of :func:`log_factor_slope_range` (the bounds of results F1 and F2 at a
    fixed depth depend on ``d`` only through :math:`\ln|V|` and :math:`\ln^{1/2}|V|`).
    """
    from dpsco_lib.geometry.norms import dual_exponent, regularity_constant

    p, n, epsilon, xs = _check_d_sweep(p, n, epsilon, ds)
    if p == 1.0:
        return log_factor_slope_range(xs)
    q = dual_exponent(p)
    lower = _local_slope(xs, [fingerprint_lower_bound(n, d, p, epsilon, delta_for_n(n)) for d in xs])
    upper = _local_slope(xs, [regularity_constant(q, d) * math.sqrt(d) for d in xs])
    return min(lower, upper), max(lower, upper)


def p_trend_range(ps: Sequence[float], *, n: int, d: int, epsilon: float = 1.0) -> tuple[float, float]:
    r"""The exponents in ``p - 1`` of the two bounds over the grid ``ps`` at fixed ``n``, ``d`` (results L1, F3).

    Local slopes against ``p - 1`` of the explicit lower bound maximized over ``alpha`` (its factor
    :math:`d^{1/q} = d^{(p-1)/p}` grows with ``p``) and of F3's private term :math:`\kappa\sqrt d/(\varepsilon n)`
    (:math:`\kappa \approx 1/(p - 1)`, capped near :math:`\ln d`, decreases); returned sorted. A worst case that
    keeps a constant ratio to either bound has that bound's exponent.
    """
    from dpsco_lib.geometry.norms import dual_exponent, regularity_constant

    n, d = check_int(n, "n", lo=4), check_int(d, "d", lo=2)
    epsilon = check_epsilon(epsilon)
    xs = sorted({check_in_range(p, "ps", 1.0, 2.0, lo_inclusive=False) for p in ps})
    if len(xs) < 2:
        raise ValueError(f"ps must hold at least two distinct exponents in (1, 2], got {list(ps)}")
    pm1 = [p - 1.0 for p in xs]
    lower = _local_slope(pm1, [fingerprint_lower_bound(n, d, p, epsilon, delta_for_n(n)) for p in xs])
    upper = _local_slope(pm1, [regularity_constant(dual_exponent(p), d) for p in xs])
    return min(lower, upper), max(lower, upper)


def _by_p(records: Sequence[Mapping[str, Any]]) -> dict[float, list[Mapping[str, Any]]]:
    return {p: _select(records, p=p) for p in sorted({float(r["p"]) for r in records}, reverse=True)}


def dimension_rows(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    r"""Per ``(p, d)`` of the dimension sweep (:func:`dimension_run`): the worst case over the family of the
    median excess and its hardness, the family's trivial error at that member, the worst case of the mean excess
    (the Bayes risk), that of the noise-free run (the statistical error; means, since the noise-free output on the
    planted family is a vertex and its median jumps between ``0`` and ``gamma``) and their ratio, and the explicit
    lower bound maximized over ``alpha`` with the ratio of the Bayes risk to it (``1 < p <= 2``; ``nan`` at
    ``p = 1``)."""
    out = []
    for p, recs in _by_p(records).items():
        xs, reps, worst = worst_case_replicates(recs, x="d", family="hardness")
        _, free, _ = worst_case_replicates(recs, x="d", family="hardness", value="excess_nonprivate",
                                           statistic="mean")
        _, mean_reps, _ = worst_case_replicates(recs, x="d", family="hardness", statistic="mean")
        for d, rep, h, fr, mr in zip(xs, reps, worst, free, mean_reps, strict=True):
            r0 = _select(recs, d=d)[0]
            n, eps = int(r0["n"]), float(r0["epsilon"])
            lb = fingerprint_lower_bound(n, int(d), p, eps, delta_for_n(n)) if p > 1.0 else math.nan
            bayes = float(np.mean(mr))
            out.append({"p": p, "d": int(d), "worst median excess": float(np.median(rep)), "worst hardness": h,
                        "trivial there": float(np.median([r["trivial"] for r in _select(recs, d=d, hardness=h)])),
                        "worst mean excess": bayes, "noise-free worst mean": float(np.mean(fr)),
                        "noise-free / private": float(np.mean(fr)) / bayes, "lower bound": lb,
                        "mean / bound": bayes / lb if p > 1.0 else math.nan})
    return out


def dimension_claim(p: float, ds: Sequence[int], *, n: int, epsilon: float = 1.0) -> RateClaim:
    r"""The declared claim on the exponent of the worst-case excess in ``d`` at fixed ``n`` (result L1), fixed
    before the run from the theorem and the grid ``ds``.

    ``1 < p <= 2``: the theorem's private term :math:`(p - 1)\sqrt d/(\varepsilon n)` and F3's
    :math:`\kappa\sqrt d/(\varepsilon n)` (``kappa`` of the library's smooth norm, constant in ``d`` on the grid
    once :math:`q \le \ln d`) both grow like :math:`\sqrt d`: the prediction is the range of their local slopes
    over ``ds`` (1/2). ``p`` enters the theorem through the factor ``p - 1``, not through the exponent; the
    neighbour is the exponent ``1/3`` of :math:`d^{1/q}` at ``p = 1.5``, the explicit fingerprinting bound of the
    construction, where ``p`` enters through the exponent :math:`(p - 1)/p`. Tolerance: half the gap (rounded
    down), at most 0.08.

    ``p = 1``: the logarithmic range of :func:`log_factor_slope_range` (the bounds of results F1 and F2 at a
    fixed depth depend on ``d`` only through :math:`\ln|V|` and :math:`\ln^{1/2}|V|`); neighbour: the slowest
    polynomial growth of the notebook, ``1/3``; tolerance half the gap (about 0.033).
    """
    from dpsco_lib.geometry.norms import dual_exponent, regularity_constant

    p, n, epsilon, xs = _check_d_sweep(p, n, epsilon, ds)
    neighbour = 1.0 / 3.0
    if p == 1.0:
        exponent = log_factor_slope_range(xs)
        what = "F2 (l1 ball) worst-case excess ~ ln d"
    else:
        upper = _local_slope(xs, [regularity_constant(dual_exponent(p), d) * math.sqrt(d) for d in xs])
        exponent = (min(0.5, upper), max(0.5, upper))
        what = "F3 tree worst-case excess ~ (p - 1) sqrt(d), exponent 1/2"
    return RateClaim(f"L1 d-exponent, p = {p:g}", f"{what} (n = {n}, eps = {epsilon:g})", exponent,
                     neighbour, _half_gap(exponent, neighbour, 0.08), "BGN21, L1", statistic="median")


def check_dimension_transition(verdict: Verdict, records: Sequence[Mapping[str, Any]], *, rng: np.random.Generator,
                               n_boot: int, required: float, n_resamples: int = 200,
                               regime: tuple[float, float] = (0.1, 0.5)) -> dict[float, SlopeFit]:
    r"""The verdict rows of the transition of result L1 against the dimension (records of :func:`dimension_run`
    at one ``n`` and ``epsilon``, one or more ``p``).

    Rows: per ``p``, the declared claim :func:`dimension_claim` on the worst-case median excess against ``d``,
    with its controls: the learns-nothing output ``x = 0`` (its worst case over the fixed lattice is flat in
    ``d``) and the records moved to the neighbouring exponent ``1/3``; when the records hold ``p = 1`` and
    ``p = 2``, the transition: the 95% intervals of their exponents are disjoint (``p = 1`` below); the worst
    instance lies strictly inside the family at every ``d`` and ``p`` (else the curve would be capped, not
    governed by the rate); at every ``d`` and ``p > 1`` the worst-case Bayes risk (mean over replicates) is at
    least the explicit lower bound; the regime: the noise-free run's worst-case Bayes risk is at most
    ``regime[0]`` (F3, ``p > 1``) and ``regime[1]`` (``p = 1``) times the private one at every ``d`` (the private
    term is what is measured); the ledgers certify ``epsilon``. Returns the fits of the curves (for the plot and
    the transition row; :data:`FIGURE_BOOT` bootstrap resamples).
    """
    groups = _by_p(records)
    fits: dict[float, SlopeFit] = {}
    for p, recs in groups.items():
        ds = sorted({int(r["d"]) for r in recs})
        n, eps = int(recs[0]["n"]), float(recs[0]["epsilon"])
        claim = dimension_claim(p, ds, n=n, epsilon=eps)
        x, fam = [float(r["d"]) for r in recs], [float(r["hardness"]) for r in recs]
        verdict.claim(claim.evaluate(x, [r["excess"] for r in recs], family=fam,
                                     trivial=[r["trivial"] for r in recs], rng=rng, required=required,
                                     n_boot=n_boot, n_resamples=n_resamples))
        fits[p] = fit_loglog_slope(x, [r["excess"] for r in recs], rng=rng, statistic="median",
                                   n_boot=min(n_boot, FIGURE_BOOT), worst_over=fam, level=claim.level)
    if 1.0 in fits and 2.0 in fits:
        f1, f2 = fits[1.0], fits[2.0]
        verdict.check("L1 transition: exponent intervals of p = 1 and p = 2 disjoint", f1.ci_high < f2.ci_low,
                      f"p = 1: [{f1.ci_low:+.3f}, {f1.ci_high:+.3f}]; p = 2: [{f2.ci_low:+.3f}, {f2.ci_high:+.3f}]",
                      predicted="p = 1 interval entirely below p = 2")
    inside = []
    for recs in groups.values():
        members = sorted({float(r["hardness"]) for r in recs})
        _, _, worst = worst_case_replicates(recs, x="d", family="hardness")
        inside += [members[0] < h < members[-1] for h in worst]
    verdict.check("L1 sweep in d: worst instance inside the family (every d, every p)", all(inside),
                  f"{sum(inside)} of {len(inside)} (d, p) cells", predicted="all")
    rows = dimension_rows(records)
    ratios = [r["mean / bound"] for r in rows if r["p"] > 1.0]
    if ratios:
        verdict.check_at_least("L1 sweep in d: worst-case error / explicit lower bound, min over d and p > 1",
                               min(ratios), 1.0, what="the bound holds")
    for name, is_l1, limit in (("F3, p > 1", False, regime[0]), ("F2, p = 1", True, regime[1])):
        sel = [r["noise-free / private"] for r in rows if (r["p"] == 1.0) == is_l1]
        if sel:
            verdict.check_at_most(f"L1 sweep in d, regime ({name}): noise-free / private worst-case mean error, "
                                  "max over d", max(sel), limit, what="the private term dominates")
    cert = max(float(r["certified_eps"]) / float(r["epsilon"]) for r in records)
    verdict.check_at_most("L1 sweep in d: ledgers certify eps (max certified / target)", cert, 1.0 + 1e-9,
                          fmt=".6f")
    return fits


def plot_dimension(ax: Any, records: Sequence[Mapping[str, Any]], fits: Mapping[float, SlopeFit]) -> None:
    """Worst-case median excess against ``d`` per ``p`` (band over the replicates of the worst instance, fit), the
    explicit lower bound maximized over ``alpha`` (dashed, ``p > 1``) and a curve proportional to ``ln(2d)``
    through the first point of ``p = 1`` (dotted)."""
    from dpsco_lib.plotting import plot_rate

    for i, (p, recs) in enumerate(_by_p(records).items()):
        xs, reps, _ = worst_case_replicates(recs, x="d", family="hardness")
        what = "F2, $\\ell_1$ ball" if p == 1.0 else "F3 tree"
        plot_rate(ax, xs, reps, label=f"p = {p:g}: {what}, worst case", color=f"C{i}", fit=fits.get(p))
        r0 = recs[0]
        n, eps = int(r0["n"]), float(r0["epsilon"])
        if p > 1.0:
            lb = [fingerprint_lower_bound(n, int(d), p, eps, delta_for_n(n)) for d in xs]
            ax.plot(xs, lb, ls="--", color=f"C{i}", lw=1.0, label=f"p = {p:g}: explicit lower bound")
        else:
            xa = np.asarray(xs)
            ax.plot(xa, np.median(reps[0]) * np.log(2 * xa) / math.log(2 * xa[0]), ls=":", color="k",
                    label=r"$\propto \ln(2d)$")
    ax.set_xlabel("dimension $d$")
    ax.set_ylabel("excess population risk (exact)")


def poly_sfw_selection_scale(n: int, ds: Sequence[int], *, epsilon: float = 1.0) -> list[float]:
    r"""Per ``d`` in ``ds``: the error scale :math:`2\lambda\ln|V|` of one report-noisy-min selection of Poly-SFW
    (result F1, BGN21) with the theorem's step :math:`\eta = \ln(n/\ln|V|)/T` on the unit :math:`\ell_1` ball
    (``|V| = 2d``, ``L0 = 1``, ``L1 = 0``, ``D = 2``, ``delta = n^-1.1``, tightest accountant), where
    :math:`\lambda = 2 s/\varepsilon_0` is the Laplace scale at the sensitivity floor ``s = eta D L0``. On the
    planted family the score gap of the optimal vertex is ``gamma <= 1``: a scale above 1 means that no member of
    the family is learned at this ``n``, so the worst case sits at the cap ``gamma = 1``."""
    from dpsco_lib.algorithms.poly_sfw import poly_sfw_theory_params

    n = check_int(n, "n", lo=4)
    epsilon = check_epsilon(epsilon)
    out = []
    for d in ds:
        nv = 2 * check_int(int(d), "ds", lo=1)
        prm = poly_sfw_theory_params(n, nv, epsilon, delta_for_n(n), 1.0, 0.0, 2.0, step_constant=1.0)
        out.append(2.0 * (2.0 * prm.sensitivity_floor / prm.eps0) * math.log(nv))
    return out
