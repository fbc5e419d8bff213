"""mu-Gaussian DP (DRS22): privacy curve, trade-off function, composition; amplification by subsampling (BBG18).
Spec P6, P5."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import special

from dpsco_lib._validation import (
    check_array,
    check_delta,
    check_positive,
    check_probability,
)
from dpsco_lib.privacy.accounting._common import _check_epsilons, _conservative_root, _sq

# ----------------------------------------------------------------------------------------------------------------
# mu-Gaussian DP (Spec P6) and amplification by subsampling
# ----------------------------------------------------------------------------------------------------------------


def gdp_delta(mu: float, *, epsilon: float) -> float:
    r"""Privacy curve of mu-GDP (DRS22 Cor 2.13; Balle-Wang 2018):
    :math:`\delta(\varepsilon) = \Phi(-\varepsilon/\mu + \mu/2) - e^\varepsilon\Phi(-\varepsilon/\mu - \mu/2)`,
    in log space (no cancellation for large eps). Spec P6."""
    mu = check_positive(mu, "mu")
    epsilon = check_positive(epsilon, "epsilon", allow_zero=True)
    la = special.log_ndtr(-epsilon / mu + mu / 2)
    lb = epsilon + special.log_ndtr(-epsilon / mu - mu / 2)
    if lb >= la:
        return 0.0
    return float(math.exp(la) * -math.expm1(lb - la))


def gdp_epsilon(mu: float, *, delta: float) -> float:
    """Smallest eps with ``gdp_delta(mu, epsilon=eps) <= delta`` (brentq, rounded up). Spec P6."""
    mu = check_positive(mu, "mu")
    delta = check_delta(delta)
    if delta == 0:
        return math.inf
    if gdp_delta(mu, epsilon=0.0) <= delta:
        return 0.0
    hi = _sq(mu) / 2 + mu * math.sqrt(2 * math.log(1 / delta)) + 1.0
    while math.isfinite(hi) and gdp_delta(mu, epsilon=hi) > delta:
        hi *= 2
    if not math.isfinite(hi):  # mu beyond ~1e154: eps ~ mu^2/2 exceeds float64, the certificate is +inf
        return math.inf
    return _conservative_root(lambda e: gdp_delta(mu, epsilon=e) - delta, 0.0, hi, feasible_below=False)


def gdp_tradeoff(mu: float, *, alpha: float | Sequence[float] | np.ndarray) -> float | np.ndarray:
    r"""Trade-off function of mu-GDP: :math:`G_\mu(\alpha) = \Phi(\Phi^{-1}(1-\alpha) - \mu)` (DRS22 Def 2.7),
    the smallest type-II error of a level-alpha test between N(0,1) and N(mu,1). Spec P6."""
    mu = check_positive(mu, "mu", allow_zero=True)
    arr = check_array(alpha, "alpha", ndim=(0, 1))
    if np.any(arr < 0) or np.any(arr > 1):
        raise ValueError("alpha must lie in [0, 1]")
    out = special.ndtr(special.ndtri(1 - arr) - mu)
    return float(out) if out.ndim == 0 else out


def gdp_compose(mus: Sequence[float] | np.ndarray) -> float:
    r"""Composition of mu_i-GDP mechanisms (adaptive): :math:`\sqrt{\sum_i \mu_i^2}`-GDP (DRS22 Cor 3.3). Spec P6."""
    arr = _check_epsilons(mus, "mus")
    with np.errstate(over="ignore"):
        return float(math.sqrt(np.sum(arr**2)))


def amplify_by_subsampling(epsilon: float, *, delta: float, sampling_rate: float) -> tuple[float, float]:
    r"""Privacy amplification by subsampling (BBG18): an (eps, delta)-DP mechanism run on a subsample is
    :math:`(\log(1 + q(e^\varepsilon - 1)),\ q\delta)`-DP.

    Holds for Poisson subsampling with rate q under add/remove-one, and for sampling m of n without
    replacement under replace-one with q = m/n (BBG18 Thms 8, 9); tight (randomized response). Note that
    :math:`\log(1+q(e^\varepsilon-1)) \ge q\varepsilon` (concavity in q), so the often quoted
    "(q eps, q delta)" (e.g. seed 002 Lemma 3.3 as written) is not valid in general.
    """
    epsilon = check_positive(epsilon, "epsilon", allow_zero=True)
    delta = check_delta(delta)
    q = check_probability(sampling_rate, "sampling_rate")
    if epsilon < 1.0:  # log1p keeps full relative accuracy for small eps
        return float(math.log1p(q * math.expm1(epsilon))), q * delta
    # log((1 - q) + q e^eps) in log space: no overflow for eps beyond ~709
    log_q = math.log(q) if q > 0 else -math.inf
    return float(np.logaddexp(math.log1p(-q) if q < 1 else -math.inf, log_q + epsilon)), q * delta
