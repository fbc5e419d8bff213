r"""Experiments of notebook 08: Maurey sparsification with function-value approximation (Spec M1-M3).

The Maurey estimate of :math:`x \in \Delta_d` with :math:`K` vertices is
:math:`\tilde x = \frac1K\sum_{k=1}^K e_{i_k}`, :math:`i_k` i.i.d. :math:`\sim \mathrm{Cat}(x)`, so
:math:`K\tilde x \sim \mathrm{Multinomial}(K, x)` [GGP24, Section 2; Pis80]. The notebook measures

- M1 (GGP24 Lemma 2.1, Cor 2.3): :math:`|\mathbb E f(\tilde x) - f(x)| \le L_1\sigma^2/(2K) \le 2L_1/K` for
  :math:`L_1`-smooth :math:`f` w.r.t. :math:`\|\cdot\|_1`;
- M2 (GGP24 Cor 2.4, Cor 2.6): :math:`\|\mathbb E\nabla f(\tilde x) - \nabla f(x)\|_\infty \le 2L_2/K` when every
  partial derivative is :math:`L_2`-smooth, and :math:`\le 4L_1/\sqrt K` when :math:`f` is only
  :math:`L_1`-smooth;
- M3 (GGP24 Lemma 2.10, Cor 2.12, Cor 2.14):
  :math:`\mathbb E\|\nabla f(\tilde x) - \nabla f(x)\|_\infty^2 \le 4(\log d + \frac12\log 2)/K` for
  :math:`f(x) = \frac12 x^\top Qx` with :math:`|Q_{ij}| \le 1`.

M1 and M2 are measured *exactly* on :math:`\Delta_4` by enumerating the multinomial law
(:func:`~dpsco_lib.problems.maurey_functions.maurey_exact_mean`, :func:`exact_bias_task`); M3 by Monte Carlo on
quadratics with a symmetric Rademacher :math:`Q` (:func:`grad_second_moment_task`).

Reference: González, Guzmán & Paquette (2024) [GGP24], "Mirror descent algorithms with nearly
dimension-independent rates for differentially-private stochastic saddle-point problems" (arXiv 2403.02912),
Section 2.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpsco_lib._validation import check_array, check_int, check_positive, check_rng
from dpsco_lib.experiments.analysis import SlopeFit, Verdict, fit_loglog_slope, summarize
from dpsco_lib.geometry.sparsify import maurey_probabilities, maurey_sample
from dpsco_lib.problems.maurey_functions import (
    LogSumExpFunction,
    QuadraticFunction,
    SmoothTestFunction,
    SquaredHingeFunction,
    maurey_exact_mean,
    second_moment_bound,
)

__all__ = [
    "BIAS_FIT_KEYS",
    "HINGE_DIRECTION",
    "SecondMomentFits",
    "bias_fits",
    "bias_table",
    "bias_test_functions",
    "exact_bias_task",
    "grad_second_moment_task",
    "m1_m2_checks",
    "m3_checks",
    "plot_exact_bias",
    "plot_second_moment",
    "rademacher_instance",
    "second_moment_fits",
    "second_moment_rows",
    "second_moment_table",
]

#: The exact biases whose exponent in K is fitted: M1 value error, M2 second-order and first-order gradient bias.
BIAS_FIT_KEYS: tuple[str, ...] = ("lse_value", "lse_grad", "hinge_grad")

#: The direction a of the squared hinge max(0, <a, x> - c)^2/2 of notebook 08 (a point of Delta_4 is put on its kink).
HINGE_DIRECTION: tuple[float, ...] = (1.0, -0.7, 0.35, -0.15)


def _check_tol(tol: float) -> float:
    tol = check_positive(tol, "tol")
    if not math.isfinite(tol):
        raise ValueError(f"tol must be a positive finite number, got {tol!r}")
    return tol


def _check_simplex_point(x0: Any) -> np.ndarray:
    """``x0`` as a float array, after checking that it is a point of the simplex (ValueError naming ``x0``)."""
    x = check_array(x0, "x0", ndim=1)
    try:
        maurey_probabilities(x)
    except ValueError as exc:
        raise ValueError(f"x0 must be a point of the simplex: {exc}") from None
    return x


def _check_records(records: Sequence[Mapping[str, Any]], name: str = "records") -> list[Mapping[str, Any]]:
    recs = list(records)
    if not recs:
        raise ValueError(f"{name} must contain at least one record, got none")
    return recs


# ---------------------------------------------------------------------------------------------------------
# M1, M2: exact biases on Delta_4
# ---------------------------------------------------------------------------------------------------------
def bias_test_functions(x0: Any, rng: np.random.Generator, *,
                        hinge_direction: Sequence[float] = HINGE_DIRECTION) -> dict[str, SmoothTestFunction]:
    r"""The three test functions of the exact-bias experiment (Spec M1, M2), at the point ``x0`` of
    :math:`\Delta_d`.

    - ``"lse"``: :math:`f(x) = \tau\log\sum_j e^{(Cx)_j/\tau}`, :math:`\tau = 1/2`, :math:`C \in [-1, 1]^{5\times d}`
      uniform (second-order smooth: :math:`L_1 = \|C\|_{\max}^2/\tau`, :math:`L_2 = 8\|C\|_{\max}^3/\tau^2`);
    - ``"quad"``: :math:`f(x) = \frac12 x^\top Qx`, :math:`Q = (M + M^\top)/2`, :math:`M \in [-1, 1]^{d\times d}`
      uniform (:math:`L_2 = 0`: the gradient is unbiased);
    - ``"hinge"``: :math:`f(x) = \frac12\max(0, \langle a, x\rangle - c)^2` with :math:`c = \langle a, x_0\rangle`,
      so ``x0`` sits exactly on the kink: the first-order-smooth worst case of M2 (GGP24 Cor 2.6).

    Parameters
    ----------
    x0 : array_like (d,)
        A point of the simplex.
    rng : numpy.random.Generator
        Draws ``C`` first, then ``M``.
    hinge_direction : sequence of float (d,)
        The direction ``a`` of the hinge (default :data:`HINGE_DIRECTION`, for ``d = 4``).

    Returns
    -------
    dict
        ``{"lse": LogSumExpFunction, "quad": QuadraticFunction, "hinge": SquaredHingeFunction}``.
    """
    x = _check_simplex_point(x0)
    rng = check_rng(rng)
    a = check_array(hinge_direction, "hinge_direction", ndim=1)
    if a.size != x.size:
        raise ValueError(f"hinge_direction must have the length of x0 ({x.size}), got {a.size}")
    lse = LogSumExpFunction(rng.uniform(-1.0, 1.0, size=(5, x.size)), tau=0.5)
    M = rng.uniform(-1.0, 1.0, size=(x.size, x.size))
    return {"lse": lse, "quad": QuadraticFunction((M + M.T) / 2), "hinge": SquaredHingeFunction(a, float(a @ x))}


def exact_bias_task(*, rng: np.random.Generator, K: int, functions: Mapping[str, SmoothTestFunction],
                    x0: Any) -> dict[str, float]:
    r"""Exact biases of the ``K``-vertex Maurey estimate at ``x0`` and their bounds (Spec M1, M2; GGP24 Cor 2.3,
    2.4, 2.6): a sweep task, ``rng`` unused (the expectations are sums over the multinomial law of
    :math:`K\tilde x`).

    Parameters
    ----------
    rng : numpy.random.Generator
        Unused (the sweep's per-task generator).
    K : int
        Number of vertices, >= 1.
    functions : mapping
        The functions of :func:`bias_test_functions` (keys ``lse``, ``quad``, ``hinge``).
    x0 : array_like (d,)
        The point of the simplex that is sparsified.

    Returns
    -------
    dict
        :math:`|\mathbb E f(\tilde x) - f(x)|` (``lse_value``, ``quad_value``; ``quad_value_closed_form`` is
        :math:`|\sum_i Q_{ii}x_i - x^\top Qx|/(2K)`), :math:`\|\mathbb E\nabla f(\tilde x) - \nabla f(x)\|_\infty`
        (``lse_grad``, ``quad_grad``, ``hinge_grad``) and the bounds :math:`2L_1/K` (``bound_value_lse``,
        ``bound_value_quad``), :math:`2L_2/K` (``bound_grad_lse``) and :math:`4L_1/\sqrt K` (``bound_grad_hinge``).
    """
    K = check_int(K, "K", lo=1)
    missing = {"lse", "quad", "hinge"} - set(functions)
    if missing:
        raise ValueError(f"functions must have the keys 'lse', 'quad', 'hinge'; missing {sorted(missing)}")
    lse, quad, hinge = functions["lse"], functions["quad"], functions["hinge"]
    x = _check_simplex_point(x0)
    return {
        "lse_value": abs(maurey_exact_mean(lse.value, x, K) - lse.value(x)),
        "lse_grad": float(np.abs(maurey_exact_mean(lse.grad, x, K) - lse.grad(x)).max()),
        "quad_value": abs(maurey_exact_mean(quad.value, x, K) - quad.value(x)),
        "quad_value_closed_form": abs(quad.exact_value_bias(x, K)),  # type: ignore[attr-defined]
        "quad_grad": float(np.abs(maurey_exact_mean(quad.grad, x, K) - quad.grad(x)).max()),
        "hinge_grad": float(np.abs(maurey_exact_mean(hinge.grad, x, K) - hinge.grad(x)).max()),
        "bound_value_lse": 2 * lse.L1 / K,
        "bound_grad_lse": 2 * lse.L2 / K,
        "bound_value_quad": 2 * quad.L1 / K,
        "bound_grad_hinge": 4 * hinge.L1 / math.sqrt(K),
    }


def bias_table(records: Sequence[Mapping[str, Any]]) -> str:
    """The exact-bias records of :func:`exact_bias_task` as a fixed-width text table, one line per ``K``."""
    recs = _check_records(records)
    lines = [f"{'K':>4} {'lse value':>11} {'2L1/K':>9} {'lse grad':>11} {'2L2/K':>8} {'hinge grad':>11}"
             f" {'4L1/sqrtK':>9} {'quad value':>11} {'closed form':>11}"]
    for r in recs:
        lines.append(f"{r['K']:>4} {r['lse_value']:11.3e} {r['bound_value_lse']:9.3f} {r['lse_grad']:11.3e}"
                     f" {r['bound_grad_lse']:8.3f} {r['hinge_grad']:11.3e} {r['bound_grad_hinge']:9.3f}"
                     f" {r['quad_value']:11.3e} {r['quad_value_closed_form']:11.3e}")
    return "\n".join(lines)


def bias_fits(records: Sequence[Mapping[str, Any]], *, k_min: int, rng: np.random.Generator,
              n_boot: int) -> dict[str, SlopeFit]:
    r"""Log-log slopes in ``K`` of the exact biases :data:`BIAS_FIT_KEYS` on ``K >= k_min`` (the :math:`1/K` and
    :math:`1/\sqrt K` laws of M1 and M2 are asymptotic), with a pairs-bootstrap interval.

    Parameters
    ----------
    records : sequence of dict
        Records of :func:`exact_bias_task` (one per ``K``).
    k_min : int
        Smallest ``K`` of the fit; at least two values of ``K`` must remain.
    rng : numpy.random.Generator
        Every fit draws its bootstrap from its own copy of ``rng`` (common random numbers: the same resamples
        for every curve), so ``rng`` itself is not advanced.
    n_boot : int
        Bootstrap resamples.

    Returns
    -------
    dict of SlopeFit
        One fit per key of :data:`BIAS_FIT_KEYS`.
    """
    recs = _check_records(records)
    k_min = check_int(k_min, "k_min", lo=1)
    rng = check_rng(rng)
    Ks = np.array([r["K"] for r in recs], dtype=float)
    sel = Ks >= k_min
    if np.unique(Ks[sel]).size < 2:
        raise ValueError(f"k_min = {k_min} leaves fewer than two values of K >= k_min in the records")
    fits = {}
    for key in BIAS_FIT_KEYS:
        yv = np.array([r[key] for r in recs])
        fits[key] = fit_loglog_slope(Ks[sel], yv[sel], rng=copy.deepcopy(rng), n_boot=n_boot)
    return fits


def plot_exact_bias(records: Sequence[Mapping[str, Any]]) -> Any:
    r"""Figure of the exact biases against ``K`` (log-log): function values with the bound :math:`2L_1/K`
    (left, M1), gradients with :math:`2L_2/K` and :math:`4L_1/\sqrt K` (right, M2), and rate guides; returns the
    matplotlib figure."""
    import matplotlib.pyplot as plt

    from dpsco_lib.plotting import add_rate_guide

    recs = _check_records(records)
    Ks = np.array([r["K"] for r in recs], dtype=float)
    col = {k: [r[k] for r in recs] for k in recs[0]}
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    ax = axes[0]
    ax.loglog(Ks, col["lse_value"], "o-", label=r"log-sum-exp $|\mathbb{E}f(\tilde x)-f(x)|$")
    ax.loglog(Ks, col["quad_value"], "s-", label=r"quadratic $|\mathbb{E}f(\tilde x)-f(x)|$")
    ax.loglog(Ks, col["bound_value_lse"], "k--", lw=1, label=r"bound $2L_1/K$ (log-sum-exp)")
    add_rate_guide(ax, Ks, -1.0, anchor=(Ks[0], recs[0]["lse_value"]), label="$K^{-1}$")
    ax.set_xlabel("$K$ (vertices)")
    ax.set_ylabel("function-value error")
    ax.set_title("M1: value error")
    ax.legend(fontsize=8)
    ax = axes[1]
    ax.loglog(Ks, col["lse_grad"], "o-", label="log-sum-exp (second-order smooth)")
    ax.loglog(Ks, col["hinge_grad"], "^-", label="squared hinge at its kink (first-order)")
    ax.loglog(Ks, col["bound_grad_lse"], "k--", lw=1, label=r"$2L_2/K$")
    ax.loglog(Ks, col["bound_grad_hinge"], "k:", lw=1, label=r"$4L_1/\sqrt{K}$")
    add_rate_guide(ax, Ks, -1.0, anchor=(Ks[0], recs[0]["lse_grad"]), label="$K^{-1}$")
    add_rate_guide(ax, Ks, -0.5, anchor=(Ks[0], recs[0]["hinge_grad"]), label="$K^{-1/2}$")
    ax.set_xlabel("$K$ (vertices)")
    ax.set_ylabel(r"$\|\mathbb{E}\nabla f(\tilde x)-\nabla f(x)\|_\infty$")
    ax.set_title("M2: gradient bias")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def m1_m2_checks(verdict: Verdict, fits: Mapping[str, SlopeFit], records: Sequence[Mapping[str, Any]],
                 tol: float) -> None:
    r"""The verdict rows of M1 and M2 (GGP24 Cor 2.3, 2.4, 2.6) on the exact biases of :func:`exact_bias_task`.

    Exponents (point estimate within ``tol``; exact quantities have no sampling interval): value error
    :math:`-1`, second-order gradient bias :math:`-1`, first-order (hinge) gradient bias :math:`-1/2`. Bounds at
    every ``K``: :math:`2L_1/K` (log-sum-exp and quadratic), :math:`2L_2/K`, :math:`4L_1/\sqrt K`. The quadratic's
    enumerated value bias equals its closed form :math:`\operatorname{tr}(Q\operatorname{Cov}\tilde x)/2` and its
    gradient bias is 0 (:math:`L_2 = 0`), both to ``1e-12``.

    Parameters
    ----------
    verdict : Verdict
        Receives the eight rows.
    fits : mapping of SlopeFit
        :func:`bias_fits`.
    records : sequence of dict
        Records of :func:`exact_bias_task`.
    tol : float
        Tolerance of the exponent checks, > 0.
    """
    recs = _check_records(records)
    tol = _check_tol(tol)
    verdict.check_exponent("M1 value error slope -1 (log-sum-exp, exact)", fits["lse_value"], -1.0, tol, interval=False)
    verdict.check("M1 |E f(x~) - f(x)| <= 2 L1/K at every K",
                  all(r["lse_value"] <= r["bound_value_lse"] and r["quad_value"] <= r["bound_value_quad"]
                      for r in recs),
                  f"max ratio {max(r['lse_value'] / r['bound_value_lse'] for r in recs):.3f} (lse), "
                  f"{max(r['quad_value'] / r['bound_value_quad'] for r in recs):.3f} (quadratic)")
    verdict.check("M1 quadratic: enumeration = closed form (tr(Q Cov)/2)",
                  all(abs(r["quad_value"] - r["quad_value_closed_form"]) <= 1e-12 for r in recs),
                  f"max |diff| {max(abs(r['quad_value'] - r['quad_value_closed_form']) for r in recs):.1e}")
    verdict.check_exponent("M2 second-order gradient bias slope -1 (exact)", fits["lse_grad"], -1.0, tol,
                           interval=False)
    verdict.check("M2 ||E grad f(x~) - grad f(x)|| <= 2 L2/K", all(r["lse_grad"] <= r["bound_grad_lse"] for r in recs),
                  f"max ratio {max(r['lse_grad'] / r['bound_grad_lse'] for r in recs):.4f}")
    verdict.check("M2 quadratic (L2 = 0): gradient unbiased", max(r["quad_grad"] for r in recs) <= 1e-12,
                  f"max bias {max(r['quad_grad'] for r in recs):.1e}")
    verdict.check_exponent("M2 first-order gradient bias slope -1/2 (hinge, exact)", fits["hinge_grad"], -0.5, tol,
                           interval=False)
    verdict.check("M2 first-order bias <= 4 L1/sqrt K", all(r["hinge_grad"] <= r["bound_grad_hinge"] for r in recs),
                  f"max ratio {max(r['hinge_grad'] / r['bound_grad_hinge'] for r in recs):.3f}")


# ---------------------------------------------------------------------------------------------------------
# M3: second moment of the gradient error, Monte Carlo
# ---------------------------------------------------------------------------------------------------------
def rademacher_instance(d: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    r"""The M3 instance of dimension ``d``: a symmetric Rademacher matrix :math:`Q` (upper triangle with the
    diagonal i.i.d. :math:`\pm 1`, mirrored) and a point :math:`x \sim \mathrm{Dirichlet}(1, \dots, 1)` of
    :math:`\Delta_d`, both drawn from ``rng`` (in that order)."""
    d = check_int(d, "d", lo=1)
    rng = check_rng(rng)
    R = rng.choice([-1.0, 1.0], size=(d, d))
    return np.triu(R) + np.triu(R, 1).T, rng.dirichlet(np.ones(d))


def grad_second_moment_task(*, rng: np.random.Generator, d: int, K: int,
                            instance_rngs: Mapping[int, np.random.Generator], m: int) -> dict[str, float]:
    r"""One replicate of M3 (GGP24 Lemma 2.10, Cor 2.12): the mean of
    :math:`\|\nabla f(\tilde x) - \nabla f(x)\|_\infty^2` over ``m`` independent ``K``-vertex Maurey estimates
    (drawn from ``rng``) for :math:`f(x) = \frac12 x^\top Qx` on :func:`rademacher_instance` ``(d, ...)``.

    Parameters
    ----------
    rng : numpy.random.Generator
        Draws the Maurey estimates.
    d : int
        Dimension, >= 2.
    K : int
        Number of vertices, >= 1.
    instance_rngs : mapping int -> numpy.random.Generator
        The instance is drawn from a copy of ``instance_rngs[d]``, so every replicate and every ``K`` sees the
        same :math:`(Q, x)` whatever the backend.
    m : int
        Maurey estimates averaged, >= 1.

    Returns
    -------
    dict
        ``m2``, the bound :math:`4(\log d + \frac12\log 2)/K` of
        :func:`~dpsco_lib.problems.maurey_functions.second_moment_bound` (``bound``) and :math:`K\,m_2/\log d`
        (``K_m2_over_logd``).
    """
    d = check_int(d, "d", lo=2)
    K = check_int(K, "K", lo=1)
    m = check_int(m, "m", lo=1)
    if d not in instance_rngs:
        raise ValueError(f"instance_rngs must have a generator for d = {d}, has {sorted(instance_rngs)}")
    Q, x = rademacher_instance(d, copy.deepcopy(check_rng(instance_rngs[d], "instance_rngs[d]")))
    f = QuadraticFunction(Q)
    xt = maurey_sample(x, K, rng, size=m)
    err2 = np.abs(f.grad(xt) - f.grad(x)).max(axis=1) ** 2
    m2 = float(err2.mean())
    return {"m2": m2, "bound": second_moment_bound(d, K), "K_m2_over_logd": m2 * K / math.log(d)}


def second_moment_rows(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    r"""Per ``(d, K)``: mean, q10 and q90 of ``m2`` over the replicates, the normal 95% interval
    :math:`\bar m \pm 1.96\,s/\sqrt{r}` (``ci_low``, ``ci_high``; needs at least two replicates) and the bound
    :math:`4(\log d + \frac12\log 2)/K` of M3 (``bound``)."""
    recs = _check_records(records)
    rows = summarize(recs, by=("d", "K"), value="m2", stats=("mean", "q10", "q90"))
    for r in rows:
        vals = np.array([q["m2"] for q in recs if q["d"] == r["d"] and q["K"] == r["K"]])
        if vals.size < 2:
            raise ValueError(f"records must have at least two replicates per (d, K), got {vals.size} at "
                             f"d = {r['d']}, K = {r['K']}")
        half = 1.96 * vals.std(ddof=1) / math.sqrt(vals.size)
        r["ci_low"], r["ci_high"] = vals.mean() - half, vals.mean() + half
        r["bound"] = second_moment_bound(r["d"], r["K"])
    return rows


def second_moment_table(rows: Sequence[Mapping[str, Any]]) -> str:
    r"""The rows of :func:`second_moment_rows` as a fixed-width text table with :math:`K\bar m/\log d`."""
    rows = _check_records(rows, "rows")
    lines = [f"{'d':>6} {'K':>4} {'E||err||^2':>11} {'95% CI':>21} {'bound':>8} {'K E/log d':>9}"]
    for r in rows:
        lines.append(f"{r['d']:>6} {r['K']:>4} {r['m2_mean']:11.4e} [{r['ci_low']:.3e}, {r['ci_high']:.3e}]"
                     f" {r['bound']:8.4f} {r['m2_mean'] * r['K'] / math.log(r['d']):9.3f}")
    return "\n".join(lines)


@dataclass(frozen=True)
class SecondMomentFits:
    r"""The M3 fits: the slope in ``K`` per ``d`` (``slopes``), and at the largest ``K`` (``k_top``) the values
    :math:`K\,\mathbb E\|\cdot\|_\infty^2` (``km2``) against :math:`\log d` (``logd``) with their log-log slope
    (``fit_logd``); ``d_grid`` lists the dimensions in record order."""

    slopes: dict[int, SlopeFit]
    d_grid: list[int]
    k_top: int
    logd: np.ndarray
    km2: np.ndarray
    fit_logd: SlopeFit


def second_moment_fits(records: Sequence[Mapping[str, Any]], *, rng: np.random.Generator,
                       n_boot: int) -> SecondMomentFits:
    r"""Fits of M3 (GGP24 Cor 2.12): per ``d``, the log-log slope of ``m2`` in ``K`` (bootstrap over replicates)
    on :math:`K \ge 4\log d` only; and the log-log slope of :math:`K\,\mathbb E\|\cdot\|_\infty^2` against
    :math:`\log d` at the largest ``K``.

    The error is a bounded variable (entries in :math:`[-2, 2]`), so for small ``K`` its second moment saturates
    while the bound :math:`4\log d/K` exceeds the square of its range: the :math:`1/K` law is the regime
    :math:`K \ge 4\log d`.

    Parameters
    ----------
    records : sequence of dict
        Records of :func:`grad_second_moment_task` (keys ``d``, ``K``, ``m2``).
    rng : numpy.random.Generator
        Every fit draws its bootstrap from its own copy of ``rng``.
    n_boot : int
        Bootstrap resamples.

    Returns
    -------
    SecondMomentFits
    """
    recs = _check_records(records)
    rng = check_rng(rng)
    d_grid = list(dict.fromkeys(int(r["d"]) for r in recs))
    slopes = {}
    for d in d_grid:
        sub = [q for q in recs if q["d"] == d and q["K"] >= 4 * math.log(d)]
        slopes[d] = fit_loglog_slope([q["K"] for q in sub], [q["m2"] for q in sub], rng=copy.deepcopy(rng),
                                     n_boot=n_boot)
    k_top = max(r["K"] for r in recs)
    km2 = np.array([np.mean([q["m2"] for q in recs if q["d"] == d and q["K"] == k_top]) * k_top for d in d_grid])
    logd = np.log(np.array(d_grid, dtype=float))
    fit_logd = fit_loglog_slope(logd, km2, rng=copy.deepcopy(rng), n_boot=n_boot)
    return SecondMomentFits(slopes, d_grid, k_top, logd, km2, fit_logd)


def plot_second_moment(rows: Sequence[Mapping[str, Any]], fits: SecondMomentFits) -> Any:
    r"""Figure of M3: the measured second moment against ``K`` per ``d`` with its 95% interval and the bound
    (dashed), with a :math:`K^{-1}` guide (left); :math:`K\,\mathbb E\|\cdot\|_\infty^2` at the largest ``K``
    against :math:`\log d` with the bound :math:`4(\log d + \frac12\log 2)` and :math:`2\log d` (right); returns the
    matplotlib figure."""
    import matplotlib.pyplot as plt

    from dpsco_lib.plotting import add_rate_guide

    rows = _check_records(rows, "rows")
    ks = list(dict.fromkeys(r["K"] for r in rows))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for d in fits.d_grid:
        rr = [r for r in rows if r["d"] == d]
        axes[0].errorbar([r["K"] for r in rr], [r["m2_mean"] for r in rr],
                         yerr=[[r["m2_mean"] - r["ci_low"] for r in rr], [r["ci_high"] - r["m2_mean"] for r in rr]],
                         fmt="o-", label=f"d = {d}")
        axes[0].loglog([r["K"] for r in rr], [r["bound"] for r in rr], "k--", lw=0.8)
    add_rate_guide(axes[0], np.array(ks, dtype=float), -1.0, anchor=(ks[0], rows[0]["m2_mean"]), label="$K^{-1}$")
    axes[0].set_xscale("log")
    axes[0].set_yscale("log")
    axes[0].set_xlabel("$K$")
    axes[0].set_ylabel(r"$\mathbb{E}\|\nabla f(\tilde x)-\nabla f(x)\|_\infty^2$")
    axes[0].set_title("M3: second moment (dashed: bound)")
    axes[0].legend(fontsize=8)
    logd = fits.logd
    axes[1].plot(logd, fits.km2, "o-", label=f"measured, K = {fits.k_top}")
    axes[1].plot(logd, 4 * (logd + 0.5 * math.log(2)), "k--", lw=1, label=r"bound $4(\log d + \frac{1}{2}\log 2)$")
    axes[1].plot(logd, 2 * logd, "k:", lw=1, label=r"$2\log d$ (Gaussian maximum)")
    axes[1].set_xlabel(r"$\log d$")
    axes[1].set_ylabel(r"$K\,\mathbb{E}\|\cdot\|_\infty^2$")
    axes[1].set_title(r"M3: the $\log d$ factor")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    return fig


def m3_checks(verdict: Verdict, fits: SecondMomentFits, rows: Sequence[Mapping[str, Any]], tol: float) -> None:
    r"""The verdict rows of M3 (GGP24 Lemma 2.10, Cor 2.12, Cor 2.14).

    Per ``d``: slope :math:`-1` in ``K`` within ``tol`` (point estimate: the interval covers only the Monte-Carlo
    error, not the lower-order terms of the expansion). Every upper 95% limit below
    :math:`4(\log d + \frac12\log 2)/K`. Logarithmic growth in ``d``: :math:`K\,\mathbb E\|\cdot\|_\infty^2/\log d`
    within a factor 2 over the ``d`` grid while its log-log slope against :math:`\log d` has a positive lower
    confidence limit.

    Parameters
    ----------
    verdict : Verdict
        Receives one row per ``d`` and two more.
    fits : SecondMomentFits
        :func:`second_moment_fits`.
    rows : sequence of dict
        :func:`second_moment_rows`.
    tol : float
        Tolerance of the exponent checks, > 0.
    """
    rows = _check_records(rows, "rows")
    tol = _check_tol(tol)
    for d in fits.d_grid:
        verdict.check_exponent(f"M3 second moment slope -1 in K (d = {d})", fits.slopes[d], -1.0, tol, interval=False)
    verdict.check("M3 E||err||^2 <= 4(log d + log(2)/2)/K (upper 95% limit)",
                  all(r["ci_high"] <= r["bound"] for r in rows),
                  f"max ratio {max(r['ci_high'] / r['bound'] for r in rows):.3f}")
    ratio_logd = fits.km2 / fits.logd
    verdict.check("M3 growth in d is logarithmic",
                  ratio_logd.max() / ratio_logd.min() <= 2.0 and fits.fit_logd.ci_low > 0,
                  f"K E||.||^2/log d in [{ratio_logd.min():.2f}, {ratio_logd.max():.2f}] (spread <= 2x while d varies "
                  f"{max(fits.d_grid) // min(fits.d_grid)}x); increasing in log d (slope {fits.fit_logd.slope:.2f}, "
                  f"CI low > 0)")
