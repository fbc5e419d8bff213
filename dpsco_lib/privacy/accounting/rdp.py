"""Renyi DP: Gaussian, Poisson-subsampled Gaussian (MTZ19), pure DP, bounded range, generalized Gaussian (G1),
and the RDP -> (eps, delta) conversion (CKS20). Spec P5."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import special

from dpsco_lib._validation import (
    check_array,
    check_delta,
    check_epsilon,
    check_positive,
    check_probability,
)
from dpsco_lib.privacy.accounting._common import _check_orders
from dpsco_lib.privacy.accounting.composition import _log_binom_row

# ----------------------------------------------------------------------------------------------------------------
# Renyi DP (Spec P5)
# ----------------------------------------------------------------------------------------------------------------


def rdp_gaussian(noise_multiplier: float, orders: Sequence[float] | np.ndarray | None = None) -> np.ndarray:
    r"""RDP of the Gaussian mechanism with noise multiplier m = sigma/Delta: :math:`\alpha/(2m^2)` (Mir17)."""
    m = check_positive(noise_multiplier, "noise_multiplier")
    a = _check_orders(orders)
    return a / (2 * m**2)


def _log_a_int(q: float, sigma: float, alpha: int) -> float:
    i = np.arange(alpha + 1, dtype=np.float64)
    log_coef = _log_binom_row(alpha) + i * math.log(q) + (alpha - i) * math.log1p(-q)
    return float(special.logsumexp(log_coef + (i * i - i) / (2 * sigma**2)))


def _log_erfc(x: np.ndarray) -> np.ndarray:
    return math.log(2) + special.log_ndtr(-x * math.sqrt(2))


_FRAC_TERMS = 1000


def _log_a_frac(q: float, sigma: float, alpha: float) -> float:
    # MTZ19 Sec 3.3 as implemented in dp-accounting: split the integral at z0, expand both parts in
    # (generalized) binomial series with |binomial coefficients|, stop when both series decrease and are
    # 30 nats below the running total. Returns +inf (order unusable) if it does not converge.
    i = np.arange(_FRAC_TERMS, dtype=np.float64)
    j = alpha - i
    log_coef = special.gammaln(alpha + 1) - special.gammaln(i + 1) - special.gammaln(j + 1)
    log1mq = math.log1p(-q)
    z0 = sigma**2 * math.log(1 / q - 1) + 0.5
    log_t0 = log_coef + i * math.log(q) + j * log1mq
    log_t1 = log_coef + j * math.log(q) + i * log1mq
    log_e0 = math.log(0.5) + _log_erfc((i - z0) / (math.sqrt(2) * sigma))
    log_e1 = math.log(0.5) + _log_erfc((z0 - j) / (math.sqrt(2) * sigma))
    s0 = log_t0 + (i * i - i) / (2 * sigma**2) + log_e0
    s1 = log_t1 + (j * j - j) / (2 * sigma**2) + log_e1
    total = np.logaddexp.accumulate(np.logaddexp(s0, s1))
    stop = np.zeros(_FRAC_TERMS, dtype=bool)
    stop[1:] = (s0[1:] < s0[:-1]) & (s1[1:] < s1[:-1]) & (np.maximum(s0[1:], s1[1:]) < total[1:] - 30)
    hits = np.flatnonzero(stop)
    return float(total[hits[0]]) if hits.size else math.inf


def rdp_subsampled_gaussian(
    noise_multiplier: float, sampling_rate: float, orders: Sequence[float] | np.ndarray | None = None
) -> np.ndarray:
    r"""RDP of one step of the Poisson-subsampled Gaussian mechanism (MTZ19; ACGMMTZ16's moments accountant).

    :math:`\varepsilon(\alpha) = \log A_\alpha / (\alpha - 1)` with
    :math:`A_\alpha = \mathbb{E}_{z\sim\mu_0}[((1-q) + q\,\mu_1(z)/\mu_0(z))^\alpha]`,
    :math:`\mu_0 = N(0, m^2)`, :math:`\mu_1 = N(1, m^2)`. Integer orders: the exact binomial sum
    :math:`A_\alpha = \sum_i \binom{\alpha}{i} q^i (1-q)^{\alpha-i} e^{(i^2-i)/(2m^2)}` (log space);
    fractional orders: the series of MTZ19 Sec 3.3 as in dp-accounting (where that series does not converge
    within 1000 terms, the value at the next integer order, a valid upper bound by monotonicity in alpha).
    Add/remove-one neighbouring. Spec P5.
    """
    m = check_positive(noise_multiplier, "noise_multiplier")
    q = check_probability(sampling_rate, "sampling_rate")
    a = _check_orders(orders)
    if q == 0:
        return np.zeros_like(a)
    if q == 1:
        return a / (2 * m**2)
    out = np.empty_like(a)
    for idx, alpha in enumerate(a):
        if float(alpha).is_integer():
            log_a = _log_a_int(q, m, int(alpha))
        else:
            log_a = _log_a_frac(q, m, float(alpha))
            if not math.isfinite(log_a):
                # series did not converge: D_alpha is nondecreasing in alpha, so the next integer order
                # gives a valid (slightly larger) bound
                out[idx] = _log_a_int(q, m, math.ceil(alpha)) / (math.ceil(alpha) - 1)
                continue
        out[idx] = log_a / (alpha - 1)
    return out


def rdp_pure(epsilon: float, orders: Sequence[float] | np.ndarray | None = None, *, tight: bool = True) -> np.ndarray:
    r"""RDP of an eps-DP mechanism.

    ``tight=False``: :math:`\min(\varepsilon, \alpha\varepsilon^2/2)` (Mir17; Bun-Steinke 2016).
    ``tight=True`` (default): the exact worst case, attained by randomized response,
    :math:`\frac{1}{\alpha-1}\log\frac{e^{\alpha\varepsilon}+e^{(1-\alpha)\varepsilon}}{1+e^{\varepsilon}}
    = \frac{1}{\alpha-1}\log\frac{\sinh(\alpha\varepsilon)-\sinh((\alpha-1)\varepsilon)}{\sinh\varepsilon}`
    (Bun-Steinke 2016 Prop 3.3); every eps-DP pair is a post-processing of randomized response (KOV15).
    """
    eps = check_epsilon(epsilon)
    a = _check_orders(orders)
    loose = np.minimum(eps, a * eps**2 / 2)
    if not tight:
        return loose
    exact = (np.logaddexp(a * eps, (1 - a) * eps) - np.logaddexp(0.0, eps)) / (a - 1)
    return np.minimum(exact, loose)


def rdp_bounded_range(epsilon: float, orders: Sequence[float] | np.ndarray | None = None) -> np.ndarray:
    r"""RDP of an eps-bounded-range mechanism, e.g. the eps-DP exponential mechanism (Cesar-Rogers 2021).

    The privacy loss takes values in an interval :math:`[t-\varepsilon, t]`; the worst case is a two-point
    loss, giving with :math:`u = e^{-t}`
    :math:`\frac{1}{\alpha-1}\log\max_u \frac{u^{-\alpha}(Au - B)}{e^\varepsilon - 1}`,
    :math:`A = e^\varepsilon - e^{(1-\alpha)\varepsilon}`, :math:`B = 1 - e^{(1-\alpha)\varepsilon}`, maximized at
    :math:`u^* = \alpha B/((\alpha-1)A)`. Never above :math:`\alpha\varepsilon^2/8` nor the pure-DP bound. Spec P5.
    """
    eps = check_epsilon(epsilon)
    a = _check_orders(orders)
    log_b = np.log(-np.expm1((1 - a) * eps))
    log_a = eps + np.log1p(-np.exp(-a * eps))
    log_u_star = np.log(a) + log_b - np.log(a - 1) - log_a
    interior = (log_u_star >= -eps) & (log_u_star <= 0.0)
    log_u = np.clip(log_u_star, -eps, 0.0)
    with np.errstate(divide="ignore"):
        # at the interior optimum A u* - B = B/(alpha - 1) exactly; at a clipped end evaluate directly
        inner = np.where(
            interior,
            log_b - np.log(a - 1),
            np.log(np.maximum(np.exp(log_a + log_u) - np.exp(log_b), 0.0)),
        )
    val = (inner - a * log_u - math.log(math.expm1(eps))) / (a - 1)
    return np.minimum(np.maximum(val, 0.0), rdp_pure(eps, a))


def rdp_generalized_gaussian(
    noise_multiplier: float, kappa: float, orders: Sequence[float] | np.ndarray | None = None
) -> np.ndarray:
    r"""RDP bound of the generalized Gaussian mechanism (Spec G1, Bassily-Guzman-Nandi 2021).

    For a kappa-regular smooth norm and noise multiplier m = sigma/Delta:
    :math:`D_\alpha \le \kappa\alpha^2/(2m^2(\alpha-1))`. (For kappa = 1 the Gaussian value
    :math:`\alpha/(2m^2)` is smaller by alpha/(alpha-1); this bound is what G1 proves for general kappa.)
    """
    m = check_positive(noise_multiplier, "noise_multiplier")
    kappa = check_positive(kappa, "kappa")
    if kappa < 1:
        raise ValueError(f"kappa must be >= 1 (regularity constant), got {kappa!r}")
    a = _check_orders(orders)
    return kappa * a**2 / (2 * m**2 * (a - 1))


def rdp_to_epsilon(
    rdp: Sequence[float] | np.ndarray, orders: Sequence[float] | np.ndarray | None, delta: float
) -> tuple[float, float]:
    r"""Convert an RDP curve to (eps, delta)-DP with the improved conversion (CKS20 Prop 12; Balle et al. 2020).

    .. math:: \varepsilon = \min_\alpha\; \mathrm{rdp}(\alpha) + \log\frac{\alpha-1}{\alpha}
              - \frac{\log\delta + \log\alpha}{\alpha-1},

    over orders alpha > 1.01 (as in dp-accounting), and eps = 0 whenever
    :math:`\delta \ge \sqrt{1-e^{-\mathrm{rdp}(\alpha)}}` (Bretagnolle-Huber, since D_alpha >= KL).
    Returns ``(epsilon, optimal_order)``; ``delta = 0`` gives ``inf`` unless the curve is zero. Spec P5.
    """
    a = _check_orders(orders)
    r = check_array(rdp, "rdp", ndim=1, shape=a.shape, finite=False)
    if np.any(np.isnan(r)) or np.any(r < 0):
        raise ValueError("rdp must be >= 0 (and not NaN) at every order")
    delta = check_delta(delta)
    if delta == 0:
        return (0.0, float(a[0])) if np.all(r == 0) else (math.inf, float(a[0]))
    with np.errstate(invalid="ignore", over="ignore"):
        eps = r + np.log1p(-1 / a) - (math.log(delta) + np.log(a)) / (a - 1)
        eps = np.where(a > 1.01, eps, np.inf)
        eps = np.where(delta**2 + np.expm1(-r) > 0, 0.0, eps)
    eps = np.where(np.isnan(eps), np.inf, eps)
    idx = int(np.argmin(eps))
    return max(0.0, float(eps[idx])), float(a[idx])
