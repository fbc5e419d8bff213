r"""Empirical privacy audits: statistical *lower* bounds on the privacy loss of a mechanism.

A privacy proof gives an upper bound (the claimed :math:`\varepsilon`); an audit runs the mechanism
and certifies, with confidence :math:`1 - \alpha`, that its true privacy loss is *at least* some value.
If the audited lower bound exceeds the claimed :math:`\varepsilon`, the implementation (or the proof)
is wrong. Every audit here is exact in the statistical sense: it uses Clopper-Pearson intervals, never
normal approximations, for the event probabilities (Spec "Audits" in privacy.md; Jagielski, Ullman and
Oprea 2020; Nasr et al. 2021).

Contents
--------
* Threshold tests for :math:`(\varepsilon, \delta)`-DP: :func:`epsilon_lower_bound` (threshold fixed in
  advance), :func:`choose_threshold` (threshold chosen on a separate split), :func:`audit_mechanism`
  (both, on disjoint samples), :func:`epsilon_lower_bound_from_counts`.
* :math:`\mu`-GDP audit for Gaussian-noise mechanisms: :func:`mu_gdp_lower_bound`.
* Whole trade-off-curve audit (Nasr et al. 2023): :func:`tradeoff_audit` and
  :func:`empirical_tradeoff_curve`, a :math:`\mu`-GDP lower bound from two samples of a test statistic
  with a band valid at every threshold at once, converted to :math:`\varepsilon` at the run's
  :math:`\delta`.
* The privacy-loss variable of the generalized Gaussian (GG) mechanism (Spec G1) and Monte-Carlo
  :math:`\delta(\varepsilon)`: :func:`gg_privacy_loss`, :func:`monte_carlo_delta`.
* The Rényi divergence between two GG laws: quadrature in :math:`d \le 2`
  (:func:`renyi_divergence_gg_quadrature`) and Monte Carlo in any :math:`d`
  (:func:`renyi_divergence_gg_monte_carlo`).
* Canary audits of iterative algorithms: :func:`canary_audit`.

Model
-----
The audits measure the library in the idealized real-arithmetic model it is designed for: float64
noise from numpy's non-cryptographic generator. They detect calibration bugs (noise too small, wrong
sensitivity, wrong norm), not floating-point attacks (Mironov 2012).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import integrate, stats
from scipy.special import gammaln, logsumexp, ndtri

from dpsco_lib._validation import (
    check_array,
    check_delta,
    check_epsilon,
    check_in_range,
    check_int,
    check_positive,
    check_probability,
    check_rng,
)
from dpsco_lib.geometry.norms import lp_norm
from dpsco_lib.privacy.accounting.gdp import gdp_epsilon
from dpsco_lib.privacy.mechanisms import generalized_gaussian_noise

__all__ = [
    "AuditResult",
    "GDPAuditResult",
    "MonteCarloDelta",
    "RenyiEstimate",
    "TradeoffAuditResult",
    "TradeoffCurve",
    "audit_mechanism",
    "canary_audit",
    "choose_threshold",
    "DeltaInterval",
    "clopper_pearson",
    "epsilon_lower_bound",
    "empirical_tradeoff_curve",
    "epsilon_lower_bound_from_counts",
    "gg_log_normalizer",
    "gg_privacy_loss",
    "monte_carlo_delta",
    "monte_carlo_delta_interval",
    "mu_gdp_lower_bound",
    "mu_gdp_lower_bound_from_counts",
    "renyi_divergence_gg_monte_carlo",
    "renyi_divergence_gg_quadrature",
    "tradeoff_audit",
]

Mechanism = Callable[[Any, np.random.Generator, int], Any]


# ---------------------------------------------------------------------------------------------------------
# Clopper-Pearson
# ---------------------------------------------------------------------------------------------------------
def _check_alpha(alpha: float) -> float:
    return check_probability(alpha, "alpha", open_left=True, open_right=True)


def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    r"""Exact two-sided Clopper-Pearson interval of confidence :math:`1 - \alpha` for a binomial rate.

    Computed by ``scipy.stats.binomtest(successes, trials).proportion_ci(1 - alpha, method="exact")``:
    the interval :math:`[\mathrm{Beta}_{\alpha/2}(k, n-k+1),\ \mathrm{Beta}_{1-\alpha/2}(k+1, n-k)]`
    (lower end 0 when :math:`k = 0`, upper end 1 when :math:`k = n`). Each one-sided end fails with
    probability at most :math:`\alpha/2` for every true rate.

    Parameters
    ----------
    successes : int
        :math:`k \in [0, n]`.
    trials : int
        :math:`n \ge 1`.
    alpha : float
        In (0, 1).
    """
    n = check_int(trials, "trials", lo=1)
    k = check_int(successes, "successes", lo=0, hi=n)
    a = _check_alpha(alpha)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=1.0 - a, method="exact")
    return float(ci.low), float(ci.high)


def _cp_bounds(k: np.ndarray, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Vectorized Clopper-Pearson (same numbers as :func:`clopper_pearson`, via the beta quantiles)."""
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(k > 0, stats.beta.ppf(alpha / 2.0, np.maximum(k, 1.0), n - k + 1.0), 0.0)
        hi = np.where(k < n, stats.beta.ppf(1.0 - alpha / 2.0, k + 1.0, np.maximum(n - k, 1.0)), 1.0)
    return lo, hi


# ---------------------------------------------------------------------------------------------------------
# (epsilon, delta) threshold audits
# ---------------------------------------------------------------------------------------------------------
_EVENTS = (
    "P_S(T > t) vs P_S'(T > t)",
    "P_S'(T > t) vs P_S(T > t)",
    "P_S(T <= t) vs P_S'(T <= t)",
    "P_S'(T <= t) vs P_S(T <= t)",
)


@dataclass(frozen=True)
class AuditResult:
    r"""Outcome of a threshold audit.

    With probability at least :math:`1 - \alpha` (over the audit's randomness) a mechanism that is
    :math:`(\varepsilon, \delta)`-DP has :math:`\varepsilon \ge` ``epsilon_lower_bound``.

    Attributes
    ----------
    epsilon_lower_bound : float
        :math:`\max(0, \max_E \ln((\underline p_E - \delta)/\overline p'_E))` over the four events.
    counts : tuple of int
        Number of runs with :math:`T > t` under ``S`` and under ``S'``.
    trials : tuple of int
        Number of runs in each world.
    alpha : float
        Total failure probability of the bound (split over the two worlds, Bonferroni).
    threshold : float
        The threshold :math:`t` of the event :math:`\{T > t\}`.
    event : str
        Which of the four events (and ordering of the worlds) attains the bound.
    delta : float
        The :math:`\delta` the bound is computed for.
    ci_S, ci_S_prime : tuple of float
        Clopper-Pearson intervals (each of confidence :math:`1 - \alpha/2`) of :math:`P(T > t)`.
    claimed_epsilon : float or None
        The epsilon the mechanism claims, if given.
    """

    epsilon_lower_bound: float
    counts: tuple[int, int]
    trials: tuple[int, int]
    alpha: float
    threshold: float
    event: str
    delta: float
    ci_S: tuple[float, float]
    ci_S_prime: tuple[float, float]
    claimed_epsilon: float | None = None

    @property
    def p_hat(self) -> tuple[float, float]:
        """Empirical rates of :math:`\\{T > t\\}` under ``S`` and ``S'``."""
        return self.counts[0] / self.trials[0], self.counts[1] / self.trials[1]

    @property
    def violation(self) -> bool:
        """True when a claimed epsilon was given and the audited lower bound exceeds it."""
        return self.claimed_epsilon is not None and self.epsilon_lower_bound > self.claimed_epsilon


def _eps_candidates(lo_s: np.ndarray, hi_s: np.ndarray, lo_p: np.ndarray, hi_p: np.ndarray, delta: float) -> np.ndarray:
    """The four log-ratio lower bounds, stacked on axis 0 (numerator <= 0 gives -inf)."""

    def lr(num: np.ndarray, den: np.ndarray) -> np.ndarray:
        num = num - delta
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where((num > 0) & (den > 0), np.log(np.where(num > 0, num, 1.0)) - np.log(den), -np.inf)

    return np.stack(
        [
            lr(lo_s, hi_p),  # E = {T > t}, S over S'
            lr(lo_p, hi_s),  # E = {T > t}, S' over S
            lr(1.0 - hi_s, 1.0 - lo_p),  # E^c, S over S'
            lr(1.0 - hi_p, 1.0 - lo_s),  # E^c, S' over S
        ]
    )


def epsilon_lower_bound_from_counts(
    count: int,
    count_prime: int,
    trials: int,
    trials_prime: int,
    alpha: float,
    *,
    delta: float = 0.0,
    threshold: float = math.nan,
    claimed_epsilon: float | None = None,
) -> AuditResult:
    r"""Epsilon lower bound from the counts of an event :math:`E = \{T > t\}` in two worlds.

    An :math:`(\varepsilon, \delta)`-DP mechanism satisfies
    :math:`P_S(E) \le e^\varepsilon P_{S'}(E) + \delta` for every event and both orderings of the
    neighbours, hence :math:`\varepsilon \ge \ln((P_S(E) - \delta)/P_{S'}(E))`. Replacing the
    probabilities by Clopper-Pearson bounds (lower in the numerator, upper in the denominator) gives a
    valid lower bound. We use the two-sided interval of confidence :math:`1 - \alpha/2` in each world
    (Bonferroni over the two worlds), so the four bounds (:math:`E` and :math:`E^c`, each in both
    orderings) hold *simultaneously* with probability :math:`\ge 1 - \alpha`, and their maximum (clamped
    at 0) is a valid :math:`1 - \alpha` lower bound.

    Parameters
    ----------
    count, count_prime : int
        Number of runs in which the event occurred under ``S`` and ``S'``.
    trials, trials_prime : int
        Number of runs in each world.
    alpha : float
        Failure probability of the bound, in (0, 1).
    delta : float
        The mechanism's claimed delta (default 0).
    threshold : float
        Recorded in the result only.
    claimed_epsilon : float, optional
        Recorded in the result (``result.violation`` compares against it).
    """
    n = check_int(trials, "trials", lo=1)
    n2 = check_int(trials_prime, "trials_prime", lo=1)
    k = check_int(count, "count", lo=0, hi=n)
    k2 = check_int(count_prime, "count_prime", lo=0, hi=n2)
    a = _check_alpha(alpha)
    dl = check_delta(delta)
    if claimed_epsilon is not None:
        claimed_epsilon = check_epsilon(claimed_epsilon, "claimed_epsilon")
    lo_s, hi_s = clopper_pearson(k, n, a / 2.0)
    lo_p, hi_p = clopper_pearson(k2, n2, a / 2.0)
    cand = _eps_candidates(*(np.array([v]) for v in (lo_s, hi_s, lo_p, hi_p)), dl)[:, 0]
    best = int(np.argmax(cand))
    eps_lb = max(0.0, float(cand[best]))
    return AuditResult(
        epsilon_lower_bound=eps_lb,
        counts=(k, k2),
        trials=(n, n2),
        alpha=a,
        threshold=float(threshold),
        event=_EVENTS[best] if np.isfinite(cand[best]) else "none (no event separates the worlds)",
        delta=dl,
        ci_S=(lo_s, hi_s),
        ci_S_prime=(lo_p, hi_p),
        claimed_epsilon=claimed_epsilon,
    )


def _run_statistic(
    mechanism: Mechanism,
    data: Any,
    statistic: Callable[[Any], Any],
    n: int,
    rng: np.random.Generator,
    name: str,
) -> np.ndarray:
    outputs = mechanism(data, rng, n)
    t = np.asarray(statistic(outputs), dtype=np.float64)
    if t.shape != (n,):
        raise ValueError(
            f"statistic(mechanism({name}, rng, {n})) must return shape ({n},), got {t.shape}; the mechanism "
            "must return n outputs stacked on axis 0 and the statistic map them to one number each"
        )
    if np.any(np.isnan(t)):
        raise ValueError(f"statistic returned NaN on outputs of {name}")
    return t


def epsilon_lower_bound(
    mechanism: Mechanism,
    S: Any,
    S_prime: Any,
    statistic: Callable[[Any], Any],
    threshold: float,
    n: int,
    alpha: float,
    rng: np.random.Generator,
    *,
    delta: float = 0.0,
    claimed_epsilon: float | None = None,
) -> AuditResult:
    r"""Audit an :math:`(\varepsilon, \delta)` claim with a threshold test fixed in advance.

    Runs ``mechanism(S, rng, n)`` and ``mechanism(S_prime, rng, n)`` (each returns ``n`` independent
    outputs stacked on axis 0; vectorized), maps them through ``statistic`` to ``n`` numbers
    :math:`T`, counts :math:`\{T > t\}` in each world and returns
    :func:`epsilon_lower_bound_from_counts` (exact Clopper-Pearson, Bonferroni over the two worlds;
    the maximum over :math:`E = \{T > t\}` and :math:`E^c`, both orderings).

    The threshold must not depend on these runs; to pick it from data use :func:`choose_threshold`
    on a separate split, or :func:`audit_mechanism` which does both (Jagielski et al. 2020).

    Parameters
    ----------
    mechanism : callable ``(data, rng, size) -> outputs``
    S, S_prime : neighbouring inputs (any objects the mechanism accepts)
    statistic : callable ``outputs -> array of shape (n,)``
    threshold : float
    n : int
        Runs per world, >= 1.
    alpha : float
        Failure probability of the bound.
    rng : numpy.random.Generator
    delta : float
        The mechanism's delta (0 for pure DP).
    claimed_epsilon : float, optional
    """
    nn = check_int(n, "n", lo=1)
    t = check_in_range(threshold, "threshold")
    _check_alpha(alpha)
    check_delta(delta)
    gen = check_rng(rng)
    ts = _run_statistic(mechanism, S, statistic, nn, gen, "S")
    tp = _run_statistic(mechanism, S_prime, statistic, nn, gen, "S_prime")
    return epsilon_lower_bound_from_counts(
        int(np.sum(ts > t)),
        int(np.sum(tp > t)),
        nn,
        nn,
        alpha,
        delta=delta,
        threshold=t,
        claimed_epsilon=claimed_epsilon,
    )


def choose_threshold(
    statistic_S: np.ndarray,
    statistic_S_prime: np.ndarray,
    *,
    alpha: float = 0.05,
    delta: float = 0.0,
    n_candidates: int = 200,
) -> float:
    r"""Choose the threshold of an audit on a *selection* split (Jagielski, Ullman and Oprea 2020).

    Candidates are quantiles of the pooled selection statistics; for each, the Clopper-Pearson epsilon
    lower bound of :func:`epsilon_lower_bound_from_counts` is computed on the selection split and the
    best candidate is returned. Because the final bound is then computed on fresh runs, it remains a
    valid :math:`1 - \alpha` lower bound (choosing the threshold on the same runs would not be).
    Maximizing the *lower bound* rather than the plug-in ratio avoids thresholds deep in a tail where
    the ratio is noisy.

    Parameters
    ----------
    statistic_S, statistic_S_prime : arrays of shape (m,), (m')
        Statistics of selection runs of the two worlds.
    alpha, delta : float
        As in the final audit.
    n_candidates : int
        Number of candidate quantiles (>= 1).
    """
    a = check_array(statistic_S, "statistic_S", ndim=1, finite=False)
    b = check_array(statistic_S_prime, "statistic_S_prime", ndim=1, finite=False)
    if np.any(np.isnan(a)) or np.any(np.isnan(b)):
        raise ValueError("statistic_S and statistic_S_prime must not contain NaN")
    al = _check_alpha(alpha)
    dl = check_delta(delta)
    m = check_int(n_candidates, "n_candidates", lo=1)
    pooled = np.concatenate([a, b])
    pooled = pooled[np.isfinite(pooled)]
    if pooled.size == 0:
        raise ValueError("the selection statistics have no finite value to place a threshold at")
    cand = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, m + 2)[1:-1], method="lower"))
    sa, sb = np.sort(a), np.sort(b)
    ka = a.size - np.searchsorted(sa, cand, side="right")
    kb = b.size - np.searchsorted(sb, cand, side="right")
    lo_s, hi_s = _cp_bounds(ka, a.size, al / 2.0)
    lo_p, hi_p = _cp_bounds(kb, b.size, al / 2.0)
    best = _eps_candidates(lo_s, hi_s, lo_p, hi_p, dl).max(axis=0)
    return float(cand[int(np.argmax(best))])


def audit_mechanism(
    mechanism: Mechanism,
    S: Any,
    S_prime: Any,
    statistic: Callable[[Any], Any],
    n: int,
    alpha: float,
    rng: np.random.Generator,
    *,
    delta: float = 0.0,
    n_select: int | None = None,
    claimed_epsilon: float | None = None,
) -> AuditResult:
    r"""Threshold chosen on ``n_select`` selection runs, bound computed on ``n`` fresh runs per world.

    :func:`choose_threshold` then :func:`epsilon_lower_bound`; valid at level :math:`1 - \alpha`.
    ``n_select`` defaults to ``max(1, n // 4)``.
    """
    nn = check_int(n, "n", lo=1)
    ns = max(1, nn // 4) if n_select is None else check_int(n_select, "n_select", lo=1)
    gen = check_rng(rng)
    sel_s = _run_statistic(mechanism, S, statistic, ns, gen, "S")
    sel_p = _run_statistic(mechanism, S_prime, statistic, ns, gen, "S_prime")
    t = choose_threshold(sel_s, sel_p, alpha=alpha, delta=delta)
    return epsilon_lower_bound(
        mechanism, S, S_prime, statistic, t, nn, alpha, gen, delta=delta, claimed_epsilon=claimed_epsilon
    )


# ---------------------------------------------------------------------------------------------------------
# mu-GDP audit
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GDPAuditResult:
    r"""Outcome of a :math:`\mu`-GDP audit (see :func:`mu_gdp_lower_bound`).

    With probability :math:`\ge 1 - \alpha` a :math:`\mu`-GDP mechanism has
    :math:`\mu \ge` ``mu_lower_bound``.
    """

    mu_lower_bound: float
    counts: tuple[int, int]
    trials: tuple[int, int]
    alpha: float
    threshold: float
    event: str
    ci_S: tuple[float, float]
    ci_S_prime: tuple[float, float]
    claimed_mu: float | None = None

    @property
    def violation(self) -> bool:
        return self.claimed_mu is not None and self.mu_lower_bound > self.claimed_mu


def mu_gdp_lower_bound_from_counts(
    count: int,
    count_prime: int,
    trials: int,
    trials_prime: int,
    alpha: float,
    *,
    threshold: float = math.nan,
    claimed_mu: float | None = None,
) -> GDPAuditResult:
    r""":math:`\mu`-GDP lower bound from the counts of :math:`E = \{T > t\}` in two worlds.

    A :math:`\mu`-GDP mechanism (Dong, Roth and Su 2022) has trade-off function
    :math:`T_\mu(x) = \Phi(\Phi^{-1}(1 - x) - \mu)`: every test has
    :math:`\mathrm{FNR} \ge \Phi(\Phi^{-1}(1 - \mathrm{FPR}) - \mu)`, i.e.
    :math:`\mu \ge \Phi^{-1}(1 - \mathrm{FPR}) - \Phi^{-1}(\mathrm{FNR})`, which is decreasing in both
    rates, so plugging in Clopper-Pearson *upper* bounds gives a valid lower bound:
    :math:`\mu_{lb} = \Phi^{-1}(1 - \mathrm{FPR}_{up}) - \Phi^{-1}(\mathrm{FNR}_{up})`.
    The test "say S when :math:`T > t`" has FPR :math:`= P_{S'}(E)`, FNR :math:`= 1 - P_S(E)`; the
    mirrored test swaps the worlds. Each world's interval has confidence :math:`1 - \alpha/2`
    (Bonferroni), so the maximum of the two bounds, clamped at 0, holds with probability
    :math:`\ge 1 - \alpha`.
    """
    n = check_int(trials, "trials", lo=1)
    n2 = check_int(trials_prime, "trials_prime", lo=1)
    k = check_int(count, "count", lo=0, hi=n)
    k2 = check_int(count_prime, "count_prime", lo=0, hi=n2)
    a = _check_alpha(alpha)
    if claimed_mu is not None:
        claimed_mu = check_positive(claimed_mu, "claimed_mu")
    lo_s, hi_s = clopper_pearson(k, n, a / 2.0)
    lo_p, hi_p = clopper_pearson(k2, n2, a / 2.0)
    # Phi^-1(1 - FPR_up) - Phi^-1(FNR_up) with FPR_up = hi_p, FNR_up = 1 - lo_s, i.e. ndtri(lo_s) - ndtri(hi_p)
    with np.errstate(divide="ignore"):
        m1 = float(ndtri(lo_s) - ndtri(hi_p))
        m2 = float(ndtri(lo_p) - ndtri(hi_s))
    cands = [m1 if np.isfinite(m1) else -math.inf, m2 if np.isfinite(m2) else -math.inf]
    best = int(np.argmax(cands))
    names = ("test 'S iff T > t'", "test 'S' iff T > t'")
    return GDPAuditResult(
        mu_lower_bound=max(0.0, cands[best]),
        counts=(k, k2),
        trials=(n, n2),
        alpha=a,
        threshold=float(threshold),
        event=names[best],
        ci_S=(lo_s, hi_s),
        ci_S_prime=(lo_p, hi_p),
        claimed_mu=claimed_mu,
    )


def mu_gdp_lower_bound(
    mechanism: Mechanism,
    S: Any,
    S_prime: Any,
    statistic: Callable[[Any], Any],
    threshold: float,
    n: int,
    alpha: float,
    rng: np.random.Generator,
    *,
    claimed_mu: float | None = None,
) -> GDPAuditResult:
    r"""Audit a :math:`\mu`-GDP claim (Gaussian-noise mechanisms) with a threshold test.

    Runs both worlds ``n`` times (vectorized, as in :func:`epsilon_lower_bound`) and returns
    :func:`mu_gdp_lower_bound_from_counts`. For the Gaussian mechanism with a mid-point threshold the
    test is exactly optimal: FPR = FNR = :math:`\Phi(-\mu/2)` and the plug-in estimate equals
    :math:`\mu`.
    """
    nn = check_int(n, "n", lo=1)
    t = check_in_range(threshold, "threshold")
    _check_alpha(alpha)
    gen = check_rng(rng)
    ts = _run_statistic(mechanism, S, statistic, nn, gen, "S")
    tp = _run_statistic(mechanism, S_prime, statistic, nn, gen, "S_prime")
    return mu_gdp_lower_bound_from_counts(
        int(np.sum(ts > t)), int(np.sum(tp > t)), nn, nn, alpha, threshold=t, claimed_mu=claimed_mu
    )


# ---------------------------------------------------------------------------------------------------------
# Whole trade-off-curve audit (Nasr et al. 2023)
# ---------------------------------------------------------------------------------------------------------
_ALTERNATIVES = ("greater", "less", "two-sided")


@dataclass(frozen=True)
class TradeoffCurve:
    r"""Empirical trade-off curve of the tests "say world 1 iff :math:`T > t`", with a simultaneous band.

    Attributes
    ----------
    thresholds : ndarray (k,)
        The thresholds :math:`t` (every distinct observed value, plus :math:`-\infty`).
    fpr, fnr : ndarray (k,)
        Empirical type-I error :math:`\widehat P_0(T > t)` and type-II error :math:`\widehat P_1(T \le t)`.
    fpr_upper, fnr_upper : ndarray (k,)
        Their upper confidence bounds, valid at every threshold simultaneously (one-sided
        Dvoretzky-Kiefer-Wolfowitz-Massart band).
    band : tuple of float
        Half-widths :math:`(\epsilon_0, \epsilon_1)` of the band in world 0 and world 1.
    alpha : float
        Failure probability of the band (both worlds together).
    """

    thresholds: np.ndarray
    fpr: np.ndarray
    fnr: np.ndarray
    fpr_upper: np.ndarray
    fnr_upper: np.ndarray
    band: tuple[float, float]
    alpha: float


def _statistic_sample(x: Any, name: str) -> np.ndarray:
    a = check_array(x, name, ndim=1)
    if a.size < 1:
        raise ValueError(f"{name} must hold at least one value, got an empty array")
    return a


def empirical_tradeoff_curve(statistic_0: np.ndarray, statistic_1: np.ndarray, *, alpha: float = 0.05) -> TradeoffCurve:
    r"""Empirical trade-off curve of a scalar test statistic with a band valid at all thresholds at once.

    For the tests :math:`\phi_t = 1\{T > t\}` ("the data set is world 1"), the type-I error is
    :math:`\mathrm{FPR}(t) = P_0(T > t) = 1 - F_0(t)` and the type-II error is
    :math:`\mathrm{FNR}(t) = F_1(t)`. By the one-sided Dvoretzky-Kiefer-Wolfowitz inequality with
    Massart's constant (Massart 1990), :math:`P(\sup_t (F(t) - \widehat F_m(t)) > \epsilon) \le
    e^{-2 m \epsilon^2}` and likewise for :math:`\widehat F_m - F`; with
    :math:`\epsilon_i = \sqrt{\ln(2/\alpha) / (2 m_i)}` the bounds
    :math:`\mathrm{FPR}(t) \le \widehat{\mathrm{FPR}}(t) + \epsilon_0` and
    :math:`\mathrm{FNR}(t) \le \widehat{\mathrm{FNR}}(t) + \epsilon_1` hold for *every* :math:`t`
    simultaneously with probability :math:`\ge 1 - \alpha`. Thresholds may therefore be chosen after
    looking at the data (no selection split, no union bound over thresholds).

    Parameters
    ----------
    statistic_0, statistic_1 : array_like (m0,), (m1,)
        Finite values of the statistic on independent runs in world 0 and world 1.
    alpha : float
        Failure probability of the band, in (0, 1).

    Returns
    -------
    TradeoffCurve
    """
    s0 = np.sort(_statistic_sample(statistic_0, "statistic_0"))
    s1 = np.sort(_statistic_sample(statistic_1, "statistic_1"))
    a = _check_alpha(alpha)
    e0 = math.sqrt(math.log(2.0 / a) / (2.0 * s0.size))
    e1 = math.sqrt(math.log(2.0 / a) / (2.0 * s1.size))
    t = np.concatenate([[-np.inf], np.unique(np.concatenate([s0, s1]))])
    fpr = 1.0 - np.searchsorted(s0, t, side="right") / s0.size
    fnr = np.searchsorted(s1, t, side="right") / s1.size
    return TradeoffCurve(t, fpr, fnr, np.minimum(1.0, fpr + e0), np.minimum(1.0, fnr + e1), (e0, e1), a)


@dataclass(frozen=True)
class TradeoffAuditResult:
    r"""Outcome of :func:`tradeoff_audit`.

    Attributes
    ----------
    mu_lower_bound : float
        With probability :math:`\ge 1 - \alpha`, the mechanism is not :math:`\mu`-GDP for any
        :math:`\mu <` ``mu_lower_bound`` (no assumption on its trade-off curve).
    epsilon_lower_bound : float
        :math:`\varepsilon_\mu(\delta)` of :math:`\mu_{lb}`-GDP at ``delta`` (Dong, Roth and Su 2022,
        Cor. 2.13): a lower bound on the :math:`\varepsilon` of the mechanism at ``delta`` whenever its
        trade-off curve is Gaussian (exactly so for compositions of Gaussian mechanisms on a fixed pair of
        neighbours; the assumption of Nasr et al. 2023).
    epsilon_lower_bound_direct : float
        Assumption-free :math:`(\varepsilon, \delta)` lower bound from the same band:
        :math:`\max_t \max(\ln\frac{1 - \delta - \overline{\mathrm{FNR}}}{\overline{\mathrm{FPR}}},
        \ln\frac{1 - \delta - \overline{\mathrm{FPR}}}{\overline{\mathrm{FNR}}})`, clamped at 0.
    delta, alpha : float
        The :math:`\delta` of the conversion and the failure probability of the bounds.
    trials : tuple of int
        Runs in world 0 and world 1.
    threshold : float
        Threshold (in the orientation that attains the bound) of the best test.
    orientation : str
        ``"greater"`` (world 1 has the larger statistic) or ``"less"``.
    curve : TradeoffCurve
        The empirical curve and band of that orientation.
    claimed_epsilon : float or None
        The certified epsilon at ``delta``, if given.
    """

    mu_lower_bound: float
    epsilon_lower_bound: float
    epsilon_lower_bound_direct: float
    delta: float
    alpha: float
    trials: tuple[int, int]
    threshold: float
    orientation: str
    curve: TradeoffCurve
    claimed_epsilon: float | None = None

    @property
    def tightness(self) -> float:
        """``epsilon_lower_bound / claimed_epsilon`` (NaN without a claim)."""
        return math.nan if self.claimed_epsilon is None else self.epsilon_lower_bound / self.claimed_epsilon

    @property
    def violation(self) -> bool:
        """True when a claim was given and the GDP-converted lower bound exceeds it."""
        return self.claimed_epsilon is not None and self.epsilon_lower_bound > self.claimed_epsilon


def _best_of_curve(c: TradeoffCurve, delta: float) -> tuple[float, float, float]:
    """(mu_lb, direct eps_lb, threshold attaining mu_lb) of one oriented curve."""
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = ndtri(1.0 - c.fpr_upper) - ndtri(c.fnr_upper)
        num1, num2 = 1.0 - delta - c.fnr_upper, 1.0 - delta - c.fpr_upper
        e1 = np.where((num1 > 0) & (c.fpr_upper > 0), np.log(np.maximum(num1, 1e-300) / c.fpr_upper), -np.inf)
        e2 = np.where((num2 > 0) & (c.fnr_upper > 0), np.log(np.maximum(num2, 1e-300) / c.fnr_upper), -np.inf)
    mu = np.where(np.isnan(mu), -np.inf, mu)
    k = int(np.argmax(mu))
    return max(0.0, float(mu[k])), max(0.0, float(np.max(np.maximum(e1, e2)))), float(c.thresholds[k])


def tradeoff_audit(
    statistic_0: np.ndarray,
    statistic_1: np.ndarray,
    *,
    delta: float,
    alpha: float = 0.05,
    alternative: str = "greater",
    claimed_epsilon: float | None = None,
) -> TradeoffAuditResult:
    r"""Audit from the whole empirical trade-off curve: a :math:`\mu`-GDP and an :math:`\varepsilon` lower bound.

    A :math:`\mu`-GDP mechanism (Dong, Roth and Su 2022, Def. 2.7) has every test between neighbouring
    inputs satisfy :math:`\mathrm{FNR} \ge G_\mu(\mathrm{FPR}) = \Phi(\Phi^{-1}(1 - \mathrm{FPR}) - \mu)`,
    i.e. :math:`\mu \ge \Phi^{-1}(1 - \mathrm{FPR}) - \Phi^{-1}(\mathrm{FNR})`, decreasing in both rates.
    Evaluating it at the upper band of :func:`empirical_tradeoff_curve` for every threshold and taking the
    maximum gives :math:`\mu_{lb}`, valid with probability :math:`\ge 1 - \alpha` although the best
    threshold is chosen on the same runs (the band is simultaneous). The whole curve enters, as in the
    Gaussian-DP audits of Nasr et al. (2023, "Tight auditing of differentially private machine learning").
    :math:`\mu_{lb}` is converted to :math:`\varepsilon_{lb} = \varepsilon_{\mu_{lb}}(\delta)` (Dong, Roth and
    Su 2022, Cor. 2.13; :func:`~dpsco_lib.privacy.accounting.gdp.gdp_epsilon`), a lower bound on the
    :math:`\varepsilon` at :math:`\delta` of any mechanism whose trade-off curve is Gaussian. The
    assumption-free bound of the same band is reported as ``epsilon_lower_bound_direct``. Spec "Audits".

    Parameters
    ----------
    statistic_0, statistic_1 : array_like (m0,), (m1,)
        Finite values of a scalar statistic on independent runs on the two neighbouring inputs. For a
        tight audit use the likelihood-ratio statistic (Neyman-Pearson), e.g. the sum over steps of the
        released noisy gradients projected on the canary direction.
    delta : float
        The :math:`\delta` of the claim, in [0, 1).
    alpha : float
        Failure probability of the bound, in (0, 1).
    alternative : {"greater", "less", "two-sided"}
        Whether world 1 tends to larger values, smaller values, or either (then each orientation gets
        ``alpha / 2``).
    claimed_epsilon : float, optional
        The certified epsilon at ``delta``, recorded (``result.violation``, ``result.tightness``).

    Returns
    -------
    TradeoffAuditResult
    """
    s0 = _statistic_sample(statistic_0, "statistic_0")
    s1 = _statistic_sample(statistic_1, "statistic_1")
    a = _check_alpha(alpha)
    dl = check_delta(delta)
    if alternative not in _ALTERNATIVES:
        raise ValueError(f"alternative must be one of {_ALTERNATIVES}, got {alternative!r}")
    if claimed_epsilon is not None:
        claimed_epsilon = check_epsilon(claimed_epsilon, "claimed_epsilon")
    sides = ("greater", "less") if alternative == "two-sided" else (alternative,)
    results = []
    for side in sides:
        sign = 1.0 if side == "greater" else -1.0
        c = empirical_tradeoff_curve(sign * s0, sign * s1, alpha=a / len(sides))
        mu, eps_direct, t = _best_of_curve(c, dl)
        results.append((mu, eps_direct, sign * t, side, c))
    mu, _, t, side, c = max(results, key=lambda r: r[0])
    eps_direct = max(r[1] for r in results)
    eps = 0.0 if mu == 0.0 else gdp_epsilon(mu, delta=dl)
    return TradeoffAuditResult(mu, eps, eps_direct, dl, a, (s0.size, s1.size), t, side, c, claimed_epsilon)


# ---------------------------------------------------------------------------------------------------------
# Privacy-loss variable and Monte-Carlo delta(eps)
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MonteCarloDelta:
    r"""Monte-Carlo estimate of the tight :math:`\delta(\varepsilon)` of a pair of distributions.

    Attributes
    ----------
    delta : float
        Sample mean of :math:`(1 - e^{\varepsilon - L})_+`.
    std_error : float
        Its standard error.
    ci_low, ci_high : float
        Normal-approximation interval of level ``1 - alpha`` (clipped to [0, 1]).
    upper_exact : float
        A distribution-free upper bound of level ``1 - alpha``: since
        :math:`(1 - e^{\varepsilon - L})_+ \le 1\{L > \varepsilon\}`, the one-sided Clopper-Pearson upper
        bound on :math:`P(L > \varepsilon)` bounds :math:`\delta(\varepsilon)` (loose but exact; useful
        when :math:`\delta` is so small that no sample exceeds :math:`\varepsilon`).
    n : int
    epsilon : float
    alpha : float
    n_positive : int
        Number of samples with :math:`L > \varepsilon` (the only ones that contribute). With few of them
        the normal interval is unreliable; rely on ``upper_exact`` instead.
    """

    delta: float
    std_error: float
    ci_low: float
    ci_high: float
    upper_exact: float
    n: int
    epsilon: float
    alpha: float
    n_positive: int = 0


def monte_carlo_delta(privacy_loss_samples: np.ndarray, epsilon: float, *, alpha: float = 0.05) -> MonteCarloDelta:
    r"""Estimate :math:`\delta(\varepsilon) = \mathbb E_{Z\sim P}[(1 - e^{\varepsilon - L(Z)})_+]`.

    For distributions :math:`P, Q` and :math:`L = \ln(dP/dQ)` with :math:`Z \sim P`, the smallest
    :math:`\delta` with :math:`P(E) \le e^\varepsilon Q(E) + \delta` for all events is the hockey-stick
    divergence :math:`\int (p - e^\varepsilon q)_+ = \mathbb E_P[(1 - e^{\varepsilon - L})_+]`
    (Balle and Wang 2018, Thm 5). The summand lies in [0, 1]; it is computed as
    ``max(0, -expm1(eps - L))`` (exact for :math:`L` near :math:`\varepsilon`).

    Parameters
    ----------
    privacy_loss_samples : array of shape (n,)
        i.i.d. draws of :math:`L(Z)`, :math:`Z \sim P` (``+inf`` allowed: a point where :math:`q = 0`).
    epsilon : float
        :math:`\varepsilon \ge 0`.
    alpha : float
        Level of the intervals.
    """
    lv = check_array(privacy_loss_samples, "privacy_loss_samples", ndim=1, finite=False)
    if np.any(np.isnan(lv)) or np.any(lv == -np.inf):
        raise ValueError("privacy_loss_samples must not contain NaN or -inf")
    eps = check_positive(epsilon, "epsilon", allow_zero=True)
    a = _check_alpha(alpha)
    n = lv.size
    with np.errstate(over="ignore"):
        w = np.maximum(0.0, -np.expm1(eps - lv))
    mean = float(w.mean())
    se = float(w.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf
    z = float(ndtri(1.0 - a / 2.0))
    k = int(np.sum(lv > eps))
    upper = 1.0 if k == n else float(stats.beta.ppf(1.0 - a, k + 1, n - k))
    return MonteCarloDelta(
        delta=mean,
        std_error=se,
        ci_low=max(0.0, mean - z * se),
        ci_high=min(1.0, mean + z * se),
        upper_exact=upper,
        n=n,
        epsilon=eps,
        alpha=a,
        n_positive=k,
    )


@dataclass(frozen=True)
class DeltaInterval:
    r"""Exact (Clopper-Pearson) confidence bounds on the tight :math:`\delta(\varepsilon)` of a pair of laws.

    Attributes
    ----------
    lower, upper : float
        One-sided bounds, each of level ``1 - alpha``: :math:`P(\delta(\varepsilon) < \text{lower}) \le \alpha`
        and :math:`P(\delta(\varepsilon) > \text{upper}) \le \alpha`, for every true value.
    successes : int
        Number of successes of the randomized-rounding Bernoulli variables.
    n : int
    epsilon : float
    alpha : float
    """

    lower: float
    upper: float
    successes: int
    n: int
    epsilon: float
    alpha: float


def monte_carlo_delta_interval(
    privacy_loss_samples: np.ndarray, epsilon: float, *, alpha: float, rng: np.random.Generator
) -> DeltaInterval:
    r"""Exact confidence bounds on :math:`\delta(\varepsilon)` from privacy-loss samples (Spec G1, "Audits").

    With :math:`W = (1 - e^{\varepsilon - L})_+ \in [0, 1]` (:func:`monte_carlo_delta`) and independent
    :math:`U \sim \mathrm{Unif}(0, 1)`, the variable :math:`B = 1\{U < W\}` is Bernoulli with mean exactly
    :math:`\mathbb E W = \delta(\varepsilon)` (randomized rounding). The one-sided Clopper-Pearson bounds on
    the count of :math:`B` are therefore exact bounds on :math:`\delta(\varepsilon)`, valid for every true
    value and every sample size (unlike the normal interval of :func:`monte_carlo_delta`, which fails when few
    samples have :math:`L > \varepsilon`). A test that declares a violation of a claimed
    :math:`(\varepsilon, \delta_0)` when ``lower > delta_0`` has false-alarm probability at most ``alpha``.

    Parameters
    ----------
    privacy_loss_samples : array of shape (n,)
        i.i.d. draws of :math:`L(Z)`, :math:`Z \sim P` (``+inf`` allowed).
    epsilon : float
        :math:`\varepsilon \ge 0`.
    alpha : float
        In (0, 1): the failure probability of each one-sided bound.
    rng : numpy.random.Generator
        Source of the rounding variables :math:`U`.
    """
    lv = check_array(privacy_loss_samples, "privacy_loss_samples", ndim=1, finite=False)
    if np.any(np.isnan(lv)) or np.any(lv == -np.inf):
        raise ValueError("privacy_loss_samples must not contain NaN or -inf")
    eps = check_positive(epsilon, "epsilon", allow_zero=True)
    a = _check_alpha(alpha)
    gen = check_rng(rng)
    with np.errstate(over="ignore"):
        w = np.maximum(0.0, -np.expm1(eps - lv))
    k = int(np.sum(gen.random(lv.size) < w))
    lo, hi = _cp_bounds(np.array([k]), lv.size, 2.0 * a)  # two-sided level 2 alpha = one-sided alpha each
    return DeltaInterval(lower=float(lo[0]), upper=float(hi[0]), successes=k, n=int(lv.size), epsilon=eps, alpha=a)


def _check_q(q: float) -> float:
    return check_in_range(q, "q", 1.0, math.inf, hi_inclusive=False)


def _sq_norm(x: np.ndarray, q: float) -> np.ndarray:
    """Row-wise ||x||_q^2 for an (m, d) array."""
    return np.asarray(lp_norm(x, q, axis=1)) ** 2


def gg_privacy_loss(
    center: np.ndarray,
    center_prime: np.ndarray,
    *,
    q: float,
    sigma: float,
    n: int,
    rng: np.random.Generator,
) -> np.ndarray:
    r"""Samples of the privacy-loss variable of the GG mechanism (Spec G1).

    For :math:`P = GG_q(a, \sigma)` and :math:`Q = GG_q(a', \sigma)` (densities
    :math:`C\exp(-\|z - a\|_q^2/(2\sigma^2))` with the *same* constant :math:`C`),

    .. math:: L(z) = \ln\frac{p(z)}{q(z)} = \frac{\|z - a'\|_q^2 - \|z - a\|_q^2}{2\sigma^2},
              \qquad z \sim P,

    drawn with the exact sampler :func:`~dpsco_lib.privacy.mechanisms.generalized_gaussian_noise`
    (vectorized: ``n`` draws at once). Feed the result to :func:`monte_carlo_delta`.

    Parameters
    ----------
    center, center_prime : arrays of shape (d,)
        :math:`a = f(S)` and :math:`a' = f(S')`.
    q : float
        Norm exponent in [1, inf).
    sigma : float
    n : int
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray of shape (n,)
    """
    a = check_array(center, "center", ndim=1)
    b = check_array(center_prime, "center_prime", shape=(a.shape[0],))
    qq = _check_q(q)
    sig = check_positive(sigma, "sigma")
    nn = check_int(n, "n", lo=1)
    gen = check_rng(rng)
    noise = generalized_gaussian_noise(a.shape[0], q=qq, sigma=sig, rng=gen, size=nn)
    return (_sq_norm(noise + (a - b), qq) - _sq_norm(noise, qq)) / (2.0 * sig * sig)


# ---------------------------------------------------------------------------------------------------------
# Renyi divergence between two GG laws
# ---------------------------------------------------------------------------------------------------------
def _check_alpha_order(alpha: float) -> float:
    return check_in_range(alpha, "alpha", 1.0, math.inf, lo_inclusive=False, hi_inclusive=False)


def gg_log_normalizer(d: int, q: float, sigma: float) -> float:
    r"""Closed form of :math:`\ln\int_{\mathbb R^d} e^{-\|z\|_q^2/(2\sigma^2)}dz` (Spec G1).

    In :math:`\ell_q` polar coordinates :math:`dz = d\,V_{q,d}\,r^{d-1}dr\,d\mu(\theta)` with
    :math:`V_{q,d} = (2\Gamma(1 + 1/q))^d/\Gamma(1 + d/q)` the volume of the unit ball, so the
    integral is :math:`V_{q,d}\,\Gamma(d/2 + 1)\,(2\sigma^2)^{d/2}`.
    """
    dd = check_int(d, "d", lo=1)
    qq = _check_q(q)
    sig = check_positive(sigma, "sigma")
    log_vol = dd * (math.log(2.0) + gammaln(1.0 + 1.0 / qq)) - gammaln(1.0 + dd / qq)
    return float(log_vol + gammaln(dd / 2.0 + 1.0) + 0.5 * dd * math.log(2.0 * sig * sig))


def _shift_vector(shift: float | np.ndarray, max_d: int | None = None) -> np.ndarray:
    v = check_array(shift, "shift", ndim=(0, 1))
    v = np.atleast_1d(v)
    if max_d is not None and v.shape[0] > max_d:
        raise ValueError(
            f"shift must have dimension <= {max_d} for quadrature, got d = {v.shape[0]}"
            " (use renyi_divergence_gg_monte_carlo for higher d)"
        )
    return v


def _log_tilted_integral(q: float, sigma: float, mu: np.ndarray, alpha: float, epsrel: float) -> float:
    r"""ln of :math:`\int \exp(-[\alpha\|z - \mu\|^2 - (\alpha - 1)\|z\|^2]/(2\sigma^2))dz` for d in {1, 2}.

    With ``mu = 0`` this is the log normalizing constant, computed by the very same rule so that
    quadrature errors cancel in the ratio. The integrand is scaled by its value at the tilted centre
    :math:`c = \alpha\mu` (near its maximum, so nothing overflows); the box is wide enough that the
    neglected mass is below :math:`e^{-100}` relative (the slide's inequality bounds the integrand by
    :math:`\exp((\kappa\alpha^2\|\mu\|^2 - \|z - c\|^2)/(2\sigma^2))`; we use :math:`\max(q-1, 1)` for
    :math:`\kappa` and :math:`\|z-c\|_q \ge \|z-c\|_\infty`). Breakpoints are placed on the lines
    through 0 and :math:`\mu` where :math:`\|\cdot\|_q^2` is not smooth.
    """
    d = mu.shape[0]
    s2 = 2.0 * sigma * sigma
    c = alpha * mu

    inv_q = 1.0 / q

    def sqn(x1: float, x2: float = 0.0) -> float:
        # scalar ||(x1, x2)||_q^2, scaled by the larger entry (plain floats: quad calls this ~1e5 times)
        a1, a2 = abs(x1), abs(x2)
        m = a1 if a1 > a2 else a2
        if m == 0.0:
            return 0.0
        return m * m * ((a1 / m) ** q + (a2 / m) ** q) ** (2.0 * inv_q)

    m1 = float(mu[0])
    m2 = float(mu[1]) if d == 2 else 0.0

    def expo(x1: float, x2: float = 0.0) -> float:
        return (alpha * sqn(x1 - m1, x2 - m2) - (alpha - 1.0) * sqn(x1, x2)) / s2

    e_c = expo(*(float(v) for v in c))
    kap = max(q - 1.0, 1.0)
    mu_norm = float(lp_norm(mu, q))
    half = math.sqrt(kap * alpha * alpha * mu_norm * mu_norm + 2.0 * s2 * 100.0) + 1.0 * sigma
    lo = np.minimum(c, np.minimum(mu, 0.0)) - half
    hi = np.maximum(c, np.maximum(mu, 0.0)) + half
    opts = {"epsabs": 0.0, "epsrel": epsrel, "limit": 400}

    def pts(i: int) -> list[float]:
        return sorted({0.0, float(mu[i]), float(c[i])})

    # epsrel = 1e-10 is sometimes below what roundoff allows for large alpha; quad then warns but still
    # returns an accurate value. We silence those warnings and check the outer error estimate instead.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        if d == 1:
            val, err = integrate.quad(lambda x: math.exp(-(expo(x) - e_c)), lo[0], hi[0], points=pts(0), **opts)
        else:

            def inner(x1: float) -> float:
                v, _ = integrate.quad(lambda x2: math.exp(-(expo(x1, x2) - e_c)), lo[1], hi[1], points=pts(1), **opts)
                return v

            val, err = integrate.quad(inner, lo[0], hi[0], points=pts(0), **opts)
    if not err <= 1e-7 * val:
        warnings.warn(
            f"GG Renyi quadrature: estimated relative error {err / val:.1e} exceeds 1e-7 (q={q}, alpha={alpha})",
            RuntimeWarning,
            stacklevel=3,
        )
    return math.log(val) - e_c


def renyi_divergence_gg_quadrature(
    q: float,
    sigma: float,
    shift: float | np.ndarray,
    alpha: float,
    *,
    epsrel: float = 1e-10,
) -> float:
    r"""Rényi divergence :math:`D_\alpha(GG_q(a, \sigma)\,\|\,GG_q(a', \sigma))` by quadrature, d = 1 or 2.

    With :math:`\mu = a - a'` (``shift``) and the common normalizer
    :math:`Z = \int e^{-\|z\|_q^2/(2\sigma^2)}dz` (Spec G1),

    .. math:: D_\alpha = \frac{1}{\alpha - 1}\ln\frac{1}{Z}\int_{\mathbb R^d}
              \exp\Big(-\frac{\alpha\|z - \mu\|_q^2 - (\alpha - 1)\|z\|_q^2}{2\sigma^2}\Big)dz .

    Both integrals are computed by the same nested adaptive Gauss-Kronrod rule
    (``scipy.integrate.quad``) so that the normalizing constants are consistent (the tests check
    :math:`Z` against :func:`gg_log_normalizer`). For :math:`q = 2` the result is the Gaussian
    :math:`\alpha\|\mu\|_2^2/(2\sigma^2)`; in d = 1 every :math:`\ell_q` norm is :math:`|\cdot|`, so the
    GG law *is* Gaussian for every q.

    Parameters
    ----------
    q : float
        Norm exponent in [1, inf).
    sigma : float
    shift : float or array of shape (1,) or (2,)
        :math:`a - a'`.
    alpha : float
        Rényi order, > 1.
    epsrel : float
        Relative tolerance of each quadrature.
    """
    qq = _check_q(q)
    sig = check_positive(sigma, "sigma")
    mu = _shift_vector(shift, max_d=2)
    al = _check_alpha_order(alpha)
    tol = check_in_range(epsrel, "epsrel", 0.0, 1e-2, lo_inclusive=False)
    if not np.any(mu):
        return 0.0
    log_num = _log_tilted_integral(qq, sig, mu, al, tol)
    log_den = _log_tilted_integral(qq, sig, np.zeros_like(mu), al, tol)
    return (log_num - log_den) / (al - 1.0)


@dataclass(frozen=True)
class RenyiEstimate:
    r"""Monte-Carlo estimate of a Rényi divergence.

    ``value`` is :math:`\frac{1}{\alpha-1}\ln\bar W`; ``std_error`` its delta-method standard error
    :math:`\mathrm{se}(\bar W)/(\bar W(\alpha - 1))`; ``ci_low``/``ci_high`` the normal interval for
    :math:`\bar W` of level ``1 - level_alpha`` mapped through the log (``ci_low`` may be ``-inf`` when the
    interval reaches 0). ``max_log_weight`` is the largest :math:`\ln W_i`. ``ess`` is Kish's effective
    sample size :math:`(\sum W_i)^2/\sum W_i^2`: when it is a small fraction of ``n`` the weights are
    heavy-tailed and both the estimate (biased low) and its standard error are unreliable.
    """

    value: float
    std_error: float
    ci_low: float
    ci_high: float
    n: int
    method: str
    max_log_weight: float
    ess: float


def renyi_divergence_gg_monte_carlo(
    q: float,
    sigma: float,
    shift: np.ndarray,
    alpha: float,
    *,
    n: int,
    rng: np.random.Generator,
    method: str = "tilted",
    level_alpha: float = 0.05,
    proposal_scale: float = 1.0,
) -> RenyiEstimate:
    r"""Rényi divergence :math:`D_\alpha(GG_q(\mu, \sigma)\,\|\,GG_q(0, \sigma))` by Monte Carlo, any d.

    :math:`e^{(\alpha-1)D_\alpha} = \mathbb E[W]` is estimated in log space,
    :math:`\ln\bar W = \mathrm{logsumexp}(\ln W_i) - \ln n`, with

    * ``method="direct"``: the importance form :math:`W = (p/q)^{\alpha - 1}(Z) = e^{(\alpha-1)L(Z)}`,
      :math:`Z \sim P = GG(\mu)`, :math:`L` the privacy loss of :func:`gg_privacy_loss`. Unbiased but
      heavy-tailed when :math:`(\alpha - 1)\|\mu\|/\sigma` is large.
    * ``method="tilted"`` (default): sample :math:`Z \sim R = GG(c)` with :math:`c = \alpha\mu` and
      :math:`W = p^\alpha q^{1-\alpha}/r`, i.e.
      :math:`\ln W = [-\alpha\|z-\mu\|^2 + (\alpha-1)\|z\|^2 + \|z - c\|^2]/(2\sigma^2)`.
      This is the centre used in the slide's proof: its inequality
      :math:`-\alpha\|z-\mu\|^2 + (\alpha-1)\|z\|^2 \le -\|z - \alpha\mu\|^2 + \kappa\alpha^2\|\mu\|^2`
      says :math:`\ln W \le \kappa\alpha^2\|\mu\|^2/(2\sigma^2)` pointwise, so the weights are bounded
      (for q = 2 they are constant and the estimator is exact). With ``proposal_scale`` :math:`s > 1`
      the proposal is :math:`GG(c, s\sigma)` (heavier tails than the target; the log-weight gains
      :math:`\|z - c\|^2/(2 s^2\sigma^2) - \|z - c\|^2/(2\sigma^2)`-type terms and :math:`d\ln s`).
      Limitation: for :math:`q > 2` and large :math:`\alpha\|\mu\|/\sigma` the weights become
      heavy-tailed (the estimate is then biased low and its standard error too small); watch ``ess``.

    Parameters
    ----------
    q : float
        Norm exponent in [1, inf).
    sigma : float
    shift : array of shape (d,)
        :math:`\mu = a - a'`.
    alpha : float
        Rényi order, > 1.
    n : int
        Number of samples (>= 2).
    rng : numpy.random.Generator
    method : {"tilted", "direct"}
    level_alpha : float
        The interval has level ``1 - level_alpha``.
    proposal_scale : float
        :math:`s \ge 1`, scale inflation of the tilted proposal (1: the proof's centre and scale).
    """
    qq = _check_q(q)
    sig = check_positive(sigma, "sigma")
    mu = _shift_vector(shift)
    al = _check_alpha_order(alpha)
    nn = check_int(n, "n", lo=2)
    gen = check_rng(rng)
    la = _check_alpha(level_alpha)
    if method not in ("tilted", "direct"):
        raise ValueError(f"method must be 'tilted' or 'direct', got {method!r}")
    scale = check_in_range(proposal_scale, "proposal_scale", 1.0, math.inf, hi_inclusive=False)
    if method == "direct" and scale != 1.0:
        raise ValueError(f"proposal_scale applies to method='tilted' only, got {scale!r} with method='direct'")
    s2 = 2.0 * sig * sig
    d = mu.shape[0]
    noise = generalized_gaussian_noise(d, q=qq, sigma=sig * scale, rng=gen, size=nn)
    if method == "direct":
        z = noise + mu
        log_w = (al - 1.0) * (_sq_norm(z, qq) - _sq_norm(noise, qq)) / s2
    else:
        # proposal GG(alpha mu, scale sigma): log r(z) = -||z - c||^2/(2 scale^2 sigma^2) - d ln(scale) - ln Z_sigma
        z = noise + al * mu
        log_w = (-al * _sq_norm(z - mu, qq) + (al - 1.0) * _sq_norm(z, qq)) / s2
        log_w += _sq_norm(noise, qq) / (s2 * scale * scale) + d * math.log(scale)
    log_mean = float(logsumexp(log_w) - math.log(nn))
    m = float(np.max(log_w))
    w = np.exp(log_w - m)  # in (0, 1]
    w_mean = float(w.mean())
    rel_se = float(w.std(ddof=1) / math.sqrt(nn) / w_mean)
    zq = float(ndtri(1.0 - la / 2.0))
    ess = float(w.sum() ** 2 / np.sum(w * w))
    value = log_mean / (al - 1.0)
    hi = (log_mean + math.log1p(zq * rel_se)) / (al - 1.0)
    lo = (log_mean + math.log1p(-zq * rel_se)) / (al - 1.0) if zq * rel_se < 1.0 else -math.inf
    return RenyiEstimate(
        value=value,
        std_error=rel_se / (al - 1.0),
        ci_low=lo,
        ci_high=hi,
        n=nn,
        method=method,
        max_log_weight=m,
        ess=ess,
    )


# ---------------------------------------------------------------------------------------------------------
# Canary audit of iterative algorithms
# ---------------------------------------------------------------------------------------------------------
def canary_audit(
    run_algorithm: Callable[[Any, np.random.Generator], Any] | None,
    data: Any,
    data_prime: Any,
    statistic: Callable[[Any], Any],
    n_runs: int,
    alpha: float,
    rng: np.random.Generator,
    *,
    threshold: float | None = None,
    claimed_epsilon: float,
    delta: float,
    run_many: Callable[[Any, np.random.Generator, int], Sequence[Any]] | None = None,
    statistic_vectorized: bool = False,
    select_fraction: float = 0.5,
) -> AuditResult:
    r"""Audit an iterative DP algorithm on a worst-case pair of neighbouring datasets (canary).

    ``data`` and ``data_prime`` differ in one record, the *canary* (for gradient methods: a record
    whose gradient has the largest norm :math:`L_0` in the worst direction). The algorithm is run
    ``n_runs`` times on each dataset; ``statistic`` maps a released output (final iterate, sampled
    vertices, ...) to a number :math:`T`, and the event :math:`\{T > t\}` is audited as in
    :func:`epsilon_lower_bound_from_counts` (exact Clopper-Pearson, Bonferroni over the worlds).

    If ``threshold`` is None, the first ``select_fraction`` of the runs of each world choose it
    (:func:`choose_threshold`) and only the remaining runs enter the bound, so it stays valid.

    Parameters
    ----------
    run_algorithm : callable ``(data, rng) -> output`` or None
        One run. Ignored when ``run_many`` is given.
    data, data_prime : neighbouring datasets
    statistic : callable
        ``output -> float`` (or ``batch -> array (n_runs,)`` with ``statistic_vectorized=True``).
    n_runs : int
        Runs per world (>= 2 when the threshold is chosen from data).
    alpha : float
        Failure probability of the bound.
    rng : numpy.random.Generator
    threshold : float, optional
    claimed_epsilon : float
        The epsilon the algorithm certifies (``result.violation`` compares against it).
    delta : float
        The algorithm's delta.
    run_many : callable ``(data, rng, n_runs) -> outputs``, optional
        Vectorized alternative to ``run_algorithm``.
    statistic_vectorized : bool
        Whether ``statistic`` takes the whole batch of outputs.
    select_fraction : float
        Share of the runs used to choose the threshold, in (0, 1).
    """
    nr = check_int(n_runs, "n_runs", lo=1)
    a = _check_alpha(alpha)
    gen = check_rng(rng)
    ce = check_epsilon(claimed_epsilon, "claimed_epsilon")
    dl = check_delta(delta)
    frac = check_in_range(select_fraction, "select_fraction", 0.0, 1.0, lo_inclusive=False, hi_inclusive=False)
    if run_many is None and run_algorithm is None:
        raise ValueError("give run_algorithm (one run) or run_many (vectorized runs)")

    def stats_of(dset: Any, m: int, name: str) -> np.ndarray:
        if run_many is not None:
            outs = run_many(dset, gen, m)
        else:
            outs = [run_algorithm(dset, gen) for _ in range(m)]  # type: ignore[misc]
        if statistic_vectorized:
            t = np.asarray(statistic(outs), dtype=np.float64)
        else:
            t = np.asarray([float(statistic(o)) for o in outs], dtype=np.float64)
        if t.shape != (m,):
            raise ValueError(f"the statistic of {m} runs on {name} must have shape ({m},), got {t.shape}")
        if np.any(np.isnan(t)):
            raise ValueError(f"statistic returned NaN on a run of {name}")
        return t

    if threshold is None:
        n_sel = int(round(frac * nr))
        if n_sel < 1 or nr - n_sel < 1:
            raise ValueError(f"n_runs = {nr} is too small to split into selection and audit runs")
        t = choose_threshold(
            stats_of(data, n_sel, "data"), stats_of(data_prime, n_sel, "data_prime"), alpha=a, delta=dl
        )
        n_eval = nr - n_sel
    else:
        t = check_in_range(threshold, "threshold")
        n_eval = nr
    ts = stats_of(data, n_eval, "data")
    tp = stats_of(data_prime, n_eval, "data_prime")
    return epsilon_lower_bound_from_counts(
        int(np.sum(ts > t)), int(np.sum(tp > t)), n_eval, n_eval, a, delta=dl, threshold=t, claimed_epsilon=ce
    )
