r"""Experiments of notebooks 14-16: private mean estimation (Spec D1), DP-SGD (Spec D4), the regularized
exponential mechanism (Spec R1, R2) and sparse-gradient methods (Spec Z1-Z3), measured at ``delta = n^-1.1``
(:func:`~dpsco_book.privacy_rule.delta_for_n`).

Everything returned here is measured on an instance with an exact optimum: the l2 error of a mean estimate
against the true mean, or the exact excess risk of a released point. Rates are upper bounds over a class, so the
notebooks fit them on the worst case over a small instance family (the ``label`` column of each record).

Relations. DP-SGD is certified under **add/remove** neighbours (Poisson subsampling); every other algorithm here
under **replace-one**. Wherever DP-SGD is compared with a replace-one algorithm "at the same epsilon", it is
calibrated for the replace-one target through the explicit group-of-two conversion
(:func:`~dpsco_lib.privacy.accounting.events.to_replace_one`): an add/remove ``(e, d')`` guarantee is a replace-one
``(2e, (1 + e^e) d')`` guarantee, so :func:`~dpsco_book.privacy_rule.replace_one_target` asks DP-SGD for
``(eps/2, delta/(1 + e^{eps/2}))`` and :func:`~dpsco_book.privacy_rule.replace_one_certificate` re-certifies the
run's ledger through the conversion.

References: Kamath (2019), lecture notes "Additional topics in private machine learning" (D1, D4); Abadi et al.
(2016) (moments accountant); Gopi, Lee and Liu (2022) (R1, R2); Ghazi et al. (2024), "DP optimization with
sparse gradients" (Z1-Z3).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dpsco_book.privacy_rule import delta_for_n, replace_one_certificate, replace_one_target
from dpsco_book.tables import calibration_rows
from dpsco_lib._validation import check_int
from dpsco_lib.algorithms.dp_sgd import dp_sgd_noise_multiplier, run_dp_sgd
from dpsco_lib.algorithms.mean_estimation import gaussian_mean_estimate, laplace_mean_estimate, mean_error_theory
from dpsco_lib.experiments.analysis import fit_loglog_slope
from dpsco_lib.experiments.claims import BoundClaim, RateClaim
from dpsco_lib.privacy.accounting.accountants import DEFAULT_ACCOUNTANT
from dpsco_lib.problems.hard_linear import hard_linear

__all__ = [
    "d1_error_task",
    "d2_error_task",
    "d1_exponent_range",
    "d1_predicted_rms",
    "d4_bound",
    "d4_calibration_runs",
    "d4_claims",
    "d4_excess_task",
    "d4_exponent_range",
    "d4_noise_multiplier",
    "d4_step_size",
    "local_slope",
    "median_ratio_at",
    "plot_worst_rate",
    "replace_one_rows",
    "worst_fit",
    "worst_values",
]


# ---------------------------------------------------------------------------------------------------------
# Relations
# ---------------------------------------------------------------------------------------------------------
def replace_one_rows(results: Mapping[str, Any], epsilon: float, delta: float) -> list[dict[str, Any]]:
    """:func:`calibration_rows` of add/remove runs calibrated by
    :func:`~dpsco_book.privacy_rule.replace_one_target` ``(epsilon, delta)`` (their native certificate at the
    add/remove delta) plus the replace-one certificate at ``delta`` through the explicit conversion (column
    ``"replace-one eps"``)."""
    _, d_ar = replace_one_target(epsilon, delta)
    rows = calibration_rows(results, d_ar)
    for row, res in zip(rows, results.values(), strict=True):
        row["replace-one eps"] = replace_one_certificate(res, delta)
        row["replace-one delta"] = float(delta)
    return rows


def local_slope(x: Sequence[float], y: Sequence[float]) -> float:
    """OLS slope of ``log y`` on ``log x`` (the exponent a formula shows over a finite grid)."""
    lx, ly = np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float))
    return float(np.polyfit(lx, ly, 1)[0])


# ---------------------------------------------------------------------------------------------------------
# D1: mean estimation in [-1, 1]^d
# ---------------------------------------------------------------------------------------------------------
def d1_predicted_rms(d: int, n: int, method: str, amp: float, epsilon: float = 1.0) -> float:
    r"""Exact RMS of :math:`\|\hat\mu - \mu\|_2` for the D1 instance: sampling :math:`d(1 - a^2)/n` plus the
    mechanism's noise (:func:`~dpsco_lib.algorithms.mean_estimation.mean_error_theory`, ``delta = n^-1.1``)."""
    delta = 0.0 if method == "laplace" else delta_for_n(n)
    return math.sqrt(d * (1.0 - amp**2) / n + mean_error_theory(d, n, epsilon, delta) ** 2)


def d1_error_task(*, rng: np.random.Generator, d: int, n: int, method: str, amp: float,
                  epsilon: float = 1.0) -> dict[str, float]:
    r"""One D1 estimate on records in :math:`\{-1, 1\}^d` with :math:`P(x_j = 1) = (1 + a)/2` (mean
    :math:`\mu = a\mathbf 1`); ``method`` ``"laplace"`` (pure, :math:`\varepsilon`) or ``"gaussian"``
    (:math:`(\varepsilon, n^{-1.1})`), replace-one. Returns the error against the true mean, the trivial error
    :math:`\|\mu\|_2` (the zero estimate) and the certificate."""
    X = np.where(rng.random((n, d)) < (1.0 + amp) / 2.0, 1.0, -1.0)
    if method == "laplace":
        r, dlt = laplace_mean_estimate(X, epsilon=epsilon, rng=rng), 0.0
    elif method == "gaussian":
        dlt = delta_for_n(n)
        r = gaussian_mean_estimate(X, epsilon=epsilon, delta=dlt, rng=rng)
    else:
        raise ValueError(f"method must be 'laplace' or 'gaussian', got {method!r}")
    return {"error": float(np.linalg.norm(r.x - amp)), "trivial": amp * math.sqrt(d),
            "certified_eps": r.certified_epsilon(dlt), "delta": dlt}


# ---------------------------------------------------------------------------------------------------------
# D4: DP-SGD on the Euclidean hard linear family
# ---------------------------------------------------------------------------------------------------------
def d4_step_size(n: int, d: int, q: float, steps: int, sigma: float, radius: float = 1.0) -> float:
    r"""SGD step :math:`\eta = D/\sqrt{T V}` for a smooth (here linear, :math:`L_1 = 0`) loss: :math:`D = 2r` and
    :math:`V = 1/(qn) + d\sigma^2/(qn)^2` the variance of the noisy clipped minibatch gradient (unit-norm records),
    which makes the averaged iterate's excess at most :math:`D\sqrt{V/T}`; public (depends on n, d, q, T, sigma)."""
    m = q * n
    return 2.0 * radius / math.sqrt(steps * (1.0 / m + d * sigma**2 / m**2))


def d4_excess_task(*, rng: np.random.Generator, n: int, d: int, gamma: float, epochs: int = 1, batches: int = 25,
                   epsilon: float = 1.0, accountant: str = DEFAULT_ACCOUNTANT.name) -> dict[str, float]:
    r"""DP-SGD (Poisson rate :math:`q = 1/\text{batches}`, ``epochs * batches`` steps, clip 1) on the Euclidean
    hard linear instance :func:`~dpsco_lib.problems.hard_linear.hard_linear` ``(d, gamma, p=2)`` calibrated by
    ``accountant`` for the **replace-one** target :math:`(\varepsilon, n^{-1.1})` via
    :func:`~dpsco_book.privacy_rule.replace_one_target`. Returns the exact excess population risk and the trivial
    one (the centre)."""
    n, d = check_int(n, "n", lo=2), check_int(d, "d", lo=2)
    prob = hard_linear(d, gamma, radius=1.0, p=2.0)
    data = prob.sample(n, rng)
    q, T = 1.0 / check_int(batches, "batches", lo=1), check_int(epochs, "epochs", lo=1) * batches
    eps_ar, d_ar = replace_one_target(epsilon, delta_for_n(n))
    sigma = d4_noise_multiplier(n, batches=batches, epochs=epochs, epsilon=epsilon, accountant=accountant)
    r = run_dp_sgd(prob, data, epsilon=eps_ar, delta=d_ar, rng=rng, sampling_rate=q, steps=T, clip=1.0,
                   step_size=d4_step_size(n, d, q, T, sigma), accountant=accountant, normalizer=q * n)
    return {"excess": float(prob.excess_risk(r.x)), "trivial": float(prob.trivial_error),
            "noise_multiplier": float(r.params["noise_multiplier"])}


def d4_noise_multiplier(n: int, *, batches: int = 25, epochs: int = 1, epsilon: float = 1.0,
                        accountant: str = DEFAULT_ACCOUNTANT.name) -> float:
    r"""The noise multiplier :math:`\sigma(n)` of :func:`d4_excess_task`: the smallest one whose ``accountant``
    certificate of ``epochs * batches`` Poisson steps of rate ``1/batches`` meets the add/remove target of the
    replace-one :math:`(\varepsilon, n^{-1.1})` (a parameter of the run, known before it; cached per process)."""
    n = check_int(n, "n", lo=2)
    q, T = 1.0 / check_int(batches, "batches", lo=1), check_int(epochs, "epochs", lo=1) * batches
    eps_ar, d_ar = replace_one_target(epsilon, delta_for_n(n))
    return float(dp_sgd_noise_multiplier(eps_ar, delta=d_ar, sampling_rate=q, steps=T, accountant=accountant))


def d4_exponent_range(n_grid: Sequence[int], d: int, sigmas: Sequence[float], *, sampling_factor: float = 4.0,
                      batches: int = 25) -> tuple[float, float]:
    r"""The exponent in :math:`n` that Spec D4 predicts for the worst-case excess over the run's grid, from the
    bound :math:`D\sqrt{V/T}` (:func:`d4_bound`, :math:`V = 1/(qn) + d\sigma(n)^2/(qn)^2`) before the run.

    The excess is :math:`\Theta(1/\sqrt n + \sqrt d\,\sigma(n)/n)` (the bound, and the matching DP-SCO lower bound
    up to constants). The averaged-SGD analysis bounds it through the sum :math:`V` of the sampling and the
    privacy variance, and the worst case of the hard instance need not weigh the two as the bound does (its
    sampling noise is not isotropic Gaussian): the prediction allows the sampling variance a factor up to
    ``sampling_factor`` (a stated cap; 4 is a factor 2 on the sampling term of the excess). Returns ``(lo, hi)``:
    the least-squares slope over the grid of the privacy term :math:`\sigma(n)/n` alone, and that of
    :math:`\sqrt{c/(qn) + d\sigma(n)^2/(qn)^2}` with :math:`c` = ``sampling_factor``, :math:`q = 1/\text{batches}`
    (the bound's own slope, :math:`c = 1`, lies between them).
    """
    if len(n_grid) != len(sigmas) or len(n_grid) < 2:
        raise ValueError(f"n_grid and sigmas must have one common length >= 2, got {len(n_grid)} and {len(sigmas)}")
    d, b = check_int(d, "d", lo=1), check_int(batches, "batches", lo=1)
    c = float(sampling_factor)
    if not (math.isfinite(c) and c >= 1):
        raise ValueError(f"sampling_factor must be a finite number >= 1, got {sampling_factor!r}")
    priv = local_slope(n_grid, [s / n for n, s in zip(n_grid, sigmas, strict=True)])
    mixed = local_slope(n_grid, [math.sqrt(c / (n / b) + d * s**2 / (n / b) ** 2)
                                 for n, s in zip(n_grid, sigmas, strict=True)])
    return min(priv, mixed), max(priv, mixed)


def d4_claims(n_grid: Sequence[int], d: int, sigmas: Sequence[float], *,
              max_tolerance: float = 0.15) -> tuple[RateClaim, BoundClaim]:
    r"""The two declared claims of Spec D4's utility, frozen before the run from the grid and :math:`\sigma(n)`.

    * Rate: the worst-case excess over the hardness lattice scales as :math:`n^\beta` with :math:`\beta` in
      :func:`d4_exponent_range`; the neighbouring regime is the non-private rate :math:`n^{-1/2}` (the sampling term
      alone), and the tolerance is ``max_tolerance`` or half the gap to it, whichever is smaller.
    * Bound: the worst-case mean excess is at most :math:`1 \times D\sqrt{V/T}` (:func:`d4_bound`, the constant of
      the averaged-SGD proof) at every :math:`n`.
    """
    lo, hi = d4_exponent_range(n_grid, d, sigmas)
    tol = min(float(max_tolerance), (-0.5 - hi) / 2)
    bounds = {int(n): d4_bound(int(n), d, s) for n, s in zip(n_grid, sigmas, strict=True)}
    rate = RateClaim("D4 exponent in n", "worst-case excess of one-pass DP-SGD over the lattice ~ n^beta",
                     (lo, hi), -0.5, tol, "BFTT19 Thm 3.2; Kamath lecture Thm 3.1")
    bound = BoundClaim("D4 excess <= bound", "worst-case mean excess <= D sqrt(V/T) at every n",
                       lambda n: bounds[int(n)], "D sqrt(V/T)", 1.0, "averaged SGD, smooth convex losses")
    return rate, bound


def d1_exponent_range(x_grid: Sequence[int], *, vary: str, fixed: int, method: str) -> tuple[float, float]:
    r"""Predicted exponent of the D1 error in ``vary`` (``"d"`` or ``"n"``) at worst-case mean 0: the range between
    the pure privacy exponent (:math:`d^{3/2}` Laplace, :math:`d` Gaussian; :math:`n^{-1}`) and the local slope of
    the exact RMS error (sampling + privacy, with :math:`\sqrt{\log(1/\delta)}`) over the grid."""
    if vary not in ("d", "n"):
        raise ValueError(f"vary must be 'd' or 'n', got {vary!r}")
    pure = (1.5 if method == "laplace" else 1.0) if vary == "d" else -1.0
    ys = [d1_predicted_rms(x, fixed, method, 0.0) if vary == "d" else d1_predicted_rms(fixed, x, method, 0.0)
          for x in x_grid]
    loc = local_slope(x_grid, ys)
    return min(loc, pure), max(loc, pure)


def worst_fit(records: Sequence[Mapping[str, Any]], x: str, y: str, label: str, *, rng: np.random.Generator,
              n_boot: int, where: Mapping[str, Any] | None = None, statistic: str = "median",
              level: float = 0.95) -> Any:
    """:func:`fit_loglog_slope` of the ``statistic`` (median or mean) of ``y`` against ``x``, worst case over the
    instance ``label``, on the records matching ``where``."""
    rr = [r for r in records if all(r[k] == v for k, v in (where or {}).items())]
    return fit_loglog_slope([r[x] for r in rr], [r[y] for r in rr], rng=rng, statistic=statistic, n_boot=n_boot,
                            level=level, worst_over=[r[label] for r in rr])


def median_ratio_at(records: Sequence[Mapping[str, Any]], where: Mapping[str, Any], y: str = "error",
                    trivial: str = "trivial") -> float:
    """Median of ``y`` divided by the (common) trivial value, on the records matching ``where``."""
    rr = [r for r in records if all(r[k] == v for k, v in where.items())]
    if not rr:
        raise ValueError(f"no record matches {dict(where)!r}")
    return float(np.median([r[y] for r in rr]) / rr[0][trivial])


def d4_calibration_runs(n: int, d: int, gamma: float, *, rng: np.random.Generator, batches: int = 25,
                        epsilon: float = 1.0) -> dict[str, Any]:
    """One DP-SGD run of :func:`d4_excess_task`'s setting per calibration: the moments accountant of Thm 3.1
    (``"rdp"``, the paper's rule) and the tightest valid accountant (``"best"``, PLD), same data and seed."""
    prob = hard_linear(d, gamma, radius=1.0, p=2.0)
    data = prob.sample(n, rng)
    q, T = 1.0 / batches, batches
    eps_ar, d_ar = replace_one_target(epsilon, delta_for_n(n))
    out = {}
    for label, acc in (("paper rule: moments accountant (RDP)", "rdp"), ("tightest (PLD)", "best")):
        sigma = dp_sgd_noise_multiplier(eps_ar, delta=d_ar, sampling_rate=q, steps=T, accountant=acc)
        out[label] = run_dp_sgd(prob, data, epsilon=eps_ar, delta=d_ar, rng=np.random.default_rng(0), sampling_rate=q,
                                steps=T, clip=1.0, step_size=d4_step_size(n, d, q, T, sigma), accountant=acc)
    return out


def d4_bound(n: int, d: int, sigma: float, *, batches: int = 25, epochs: int = 1, radius: float = 1.0) -> float:
    r"""The excess-risk bound :math:`D\sqrt{V/T}` of the averaged iterate of :func:`d4_excess_task` (smooth SGD with
    step :func:`d4_step_size`; :math:`D = 2r`, :math:`V = 1/(qn) + d\sigma^2/(qn)^2`, :math:`q = 1/\text{batches}`)."""
    m, T = n / batches, epochs * batches
    return 2.0 * radius * math.sqrt((1.0 / m + d * sigma**2 / m**2) / T)


def worst_values(records: Sequence[Mapping[str, Any]], x: str, y: str, family: str,
                 where: Mapping[str, Any] | None = None) -> tuple[list[Any], list[list[float]]]:
    """Per ``x``: the replicate values of ``y`` of the family member with the largest median (the worst case)."""
    rr = [r for r in records if all(r[k] == v for k, v in (where or {}).items())]
    xs = sorted({r[x] for r in rr})
    out = []
    for xv in xs:
        groups: dict[Any, list[float]] = {}
        for r in rr:
            if r[x] == xv:
                groups.setdefault(r[family], []).append(float(r[y]))
        out.append(max(groups.values(), key=lambda v: float(np.median(v))))
    return xs, out


def plot_worst_rate(ax: Any, records: Sequence[Mapping[str, Any]], x: str, y: str, family: str, *,
                    where: Mapping[str, Any] | None = None, **kw: Any) -> None:
    """:func:`~dpsco_lib.plotting.plot_rate` of the worst family member at each ``x`` (:func:`worst_values`)."""
    from dpsco_lib.plotting import plot_rate

    xs, vals = worst_values(records, x, y, family, where)
    plot_rate(ax, xs, vals, **kw)


def d2_error_task(*, rng: np.random.Generator, n: int, model: str, eps: float, inner: int) -> dict[str, float]:
    r"""Spec D2: mean of :math:`N(0.5, 1)` by the local or central Laplace estimator (clip :math:`c = \sqrt{\log n}`),
    ``inner`` noise draws on one sample: the mean absolute private error divided by :math:`c` and the total error."""
    from dpsco_lib.algorithms.mean_estimation import central_mean_estimate, local_mean_estimate

    if model not in ("local", "central"):
        raise ValueError(f"model must be 'local' or 'central', got {model!r}")
    x = rng.normal(0.5, 1.0, size=n)
    est = local_mean_estimate if model == "local" else central_mean_estimate
    priv, tot = [], []
    for _ in range(check_int(inner, "inner", lo=1)):
        r = est(x, epsilon=eps, rng=rng)
        priv.append(abs(r.x[0] - r.info["clipped_mean"]))
        tot.append(abs(r.x[0] - 0.5))
    return {"private_error_over_c": float(np.mean(priv)) / math.sqrt(math.log(n)), "total_error": float(np.mean(tot))}
