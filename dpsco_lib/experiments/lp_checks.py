r"""Experiments of notebook 06: GG-VR-SFW (result F3, naive and tree) and the lower bound (result L1) in
:math:`\ell_p`, :math:`1 < p \le 2`, on the lower-bound construction (Bassily, Guzmán and Nandi, COLT 2021).

Every run draws an instance of :class:`~dpsco_lib.problems.hard_lp.FingerprintLinearLp` (means from the
fingerprinting prior, padding fraction ``alpha`` = the hardness parameter), samples ``n`` records, runs
:func:`~dpsco_lib.algorithms.gg_vr_sfw.run_gg_vr_sfw` at ``(epsilon, delta = n^-1.1)`` and reports the exact
excess population risk. A rate is read on the worst case over the family ``alpha in {1, 1/2, 1/4, ...}``
(:func:`~dpsco_lib.experiments.analysis.fit_loglog_slope` with ``worst_over``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dpsco_lib._validation import check_in_range, check_int, check_positive, check_rng
from dpsco_lib.algorithms.gg_vr_sfw import gg_vr_sfw_theory_params, run_gg_vr_sfw
from dpsco_lib.experiments.analysis import SlopeFit, Verdict, fit_loglog_slope, worst_case_curve
from dpsco_lib.experiments.tables import delta_for_n
from dpsco_lib.problems.hard_lp import FingerprintLinearLp, fingerprint_lower_bound, fingerprint_prior

__all__ = [
    "EXCESS_FLOOR",
    "alpha_family",
    "calibration_pair",
    "check_f3_rates",
    "check_lower_bound",
    "f3_family_run",
    "lower_bound_rows",
    "plot_lower_bound",
    "plot_worst_case",
    "private_rate_exponent",
    "private_rate_range",
    "worst_case_replicates",
]

#: Excess risks below this are recorded at this value (a log-log fit needs positive values; an exact optimum
#: output would otherwise give 0 up to rounding).
EXCESS_FLOOR = 1e-15


def alpha_family(smallest_power: int, *, tail: Sequence[int] = (), per_octave: int = 1) -> list[float]:
    """The hardness parameters ``alpha = 2^(-k/per_octave)`` for ``k = 0, ..., smallest_power * per_octave``,
    then ``2^-k`` for ``k`` in ``tail`` (largest first)."""
    k = check_int(smallest_power, "smallest_power", lo=0, hi=60)
    per = check_int(per_octave, "per_octave", lo=1, hi=8)
    extra = [check_int(j, "tail", lo=k + 1, hi=60) for j in tail]
    return [float(2.0 ** (-j / per)) for j in range(k * per + 1)] + [float(2.0**-j) for j in sorted(set(extra))]


def f3_family_run(*, rng: np.random.Generator, variant: str, n: int, d: int, p: float, alpha: float,
                  epsilon: float = 1.0, depth: int = 4, step_product: float = 8.0,
                  accountant: str = "best") -> dict[str, float]:
    r"""One run of GG-VR-SFW (result F3) on a fresh instance of the lower-bound construction.

    The instance draws its means from the prior, then ``n`` records; ``delta = n^-1.1``. The tree variant has
    fixed depth ``depth`` (root batch ``b = n/(1 + depth/2)``, so ``b`` is proportional to ``n``); the naive
    variant takes the theory's batches with the constant step ``eta = step_product/T`` (``eta T`` fixed: no
    ``ln n`` factor in its noise, weight ``e^-8`` left on the start point).

    Returns
    -------
    dict
        ``excess`` (exact, floored at :data:`EXCESS_FLOOR`), ``trivial`` (excess of ``x = 0``), ``lower_bound``
        (:func:`~dpsco_lib.problems.hard_lp.fingerprint_lower_bound` at this ``alpha``), ``kappa`` (of the GG noise
        norm), ``certified_eps``.
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
    return {"excess": max(prob.excess_risk(res.x), EXCESS_FLOOR), "trivial": prob.trivial_excess(),
            "kappa": float(res.params["kappa"]),
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
                          statistic: str = "median") -> tuple[list[float], list[np.ndarray], list[float]]:
    """Per grid value of ``x``: the replicates of the worst instance (largest ``statistic`` over ``alpha``) and
    that instance's ``alpha`` (for :func:`~dpsco_lib.plotting.plot_rate`)."""
    rows = worst_case_curve([r[x] for r in records], [r[value] for r in records], [r["alpha"] for r in records],
                            statistic=statistic)
    xs = [row["x"] for row in rows]
    reps = [np.array([r[value] for r in records if r[x] == row["x"] and r["alpha"] == row["argmax"]])
            for row in rows]
    return xs, reps, [float(row["argmax"]) for row in rows]


def check_f3_rates(verdict: Verdict, records: Sequence[Mapping[str, Any]], *, variant: str, epsilon: float,
                   rng: np.random.Generator, n_boot: int, tol: float = 0.1, level: float = 0.99) -> SlopeFit:
    r"""The verdict rows of one F3 variant on the measured worst case over the family.

    Rows: the two-sided exponent check of the worst-case median excess against
    :func:`private_rate_range` (``3/4`` naive, ``1`` tree, with the ``delta_n`` factor of the calibration),
    reading a bootstrap interval at ``level`` (a correct
    rate fails with probability about ``1 - level``); the worst instance lies inside the family at every
    ``n`` (else the curve would be capped by the trivial error, not governed by the rate); learning (worst-case
    median excess at the largest ``n`` at most half the family's trivial error, the excess of ``x = 0`` on its
    hardest instance ``alpha = 1``); the ledgers certify ``epsilon``.
    """
    recs = _select(records, variant=variant)
    ns = sorted({int(r["n"]) for r in recs})
    fit = fit_loglog_slope([r["n"] for r in recs], [r["excess"] for r in recs], rng=rng, statistic="median",
                           n_boot=n_boot, worst_over=[r["alpha"] for r in recs], level=level)
    power = 0.75 if variant == "naive" else 1.0
    kappa = float(recs[0].get("kappa", 2.0))
    verdict.check_exponent(f"F3 {variant}: worst-case excess ~ n^-{power:g} (private term)", fit,
                           private_rate_range(ns, power, epsilon, kappa), tol)
    xs, reps, worst_alpha = worst_case_replicates(recs)
    alphas = sorted({float(r["alpha"]) for r in recs})
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


def check_lower_bound(verdict: Verdict, records: Sequence[Mapping[str, Any]], *, rng: np.random.Generator,
                      n_boot: int) -> SlopeFit:
    r"""The verdict rows of result L1 on its construction.

    Rows: at every ``p`` the measured worst-case Bayes risk stays above the explicit bound (maximized over
    ``alpha``); at every ``p`` the excess pooled over ``alpha <= alpha*/8`` stays above the bound (which is within
    a factor 1.4 of the trivial error there, so a wrong constant or a wrong construction fails); the exponent
    ``beta`` of ``(p - 1)`` in the worst-case error lies, with its bootstrap interval, in ``[-1, 1]``: the lower
    bound's factor ``(p - 1)`` forbids ``beta > 1`` and the upper bound's ``kappa <= 1/(p - 1)`` forbids
    ``beta < -1``.
    """
    rows = lower_bound_rows(records)
    verdict.check_at_least("L1: worst-case error / lower bound, min over p", min(r["ratio"] for r in rows), 1.0,
                           what="the bound holds")
    pooled = [r["pooled ratio, small alpha"] for r in rows]
    verdict.check_at_least("L1: excess / bound where the bound is nearly tight (alpha <= alpha*/8), min over p",
                           min(pooled) if all(np.isfinite(pooled)) else math.nan, 1.0, what="the bound holds")
    fit = fit_loglog_slope([r["p"] - 1.0 for r in records], [r["excess"] for r in records], rng=rng,
                           statistic="mean", n_boot=n_boot, worst_over=[r["alpha"] for r in records])
    ok = -1.0 <= fit.ci_low and fit.ci_high <= 1.0
    verdict.check("L1: exponent of (p - 1) in the worst-case error", ok, str(fit),
                  predicted="interval inside [-1, +1] (lower bound: <= +1; F3 upper bound: >= -1)")
    return fit


def calibration_pair(variant: str, *, n: int, d: int, p: float, epsilon: float, rng: np.random.Generator,
                     **hyper: Any) -> dict[str, Any]:
    """Two runs of F3 on one instance (``alpha = 1/4``), calibrated by the paper's closed form and by the
    tightest accountant, for :func:`~dpsco_lib.experiments.tables.calibration_rows` (same data, same seed)."""
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
