"""Renyi DP: Gaussian, Poisson-subsampled Gaussian (MTZ19), pure DP, bounded range, generalized Gaussian (G1),
and the RDP -> (eps, delta) conversion (CKS20). Spec P5."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import special

from dpsco_lib._validation import (
    check_array,
    check_bool,
    check_delta,
    check_epsilon,
    check_positive,
    check_probability,
)
from dpsco_lib.privacy.accounting._common import _check_orders, _sq
from dpsco_lib.privacy.accounting.composition import _log_binom_row

# ----------------------------------------------------------------------------------------------------------------
# Renyi DP (Spec P5)
# ----------------------------------------------------------------------------------------------------------------


def rdp_gaussian(noise_multiplier: float, *, orders: Sequence[float] | np.ndarray | None = None) -> np.ndarray:
    r"""RDP of the Gaussian mechanism with noise multiplier m = sigma/Delta: :math:`\alpha/(2m^2)` (Mir17)."""
    m = check_positive(noise_multiplier, "noise_multiplier")
    a = _check_orders(orders)
    with np.errstate(divide="ignore", over="ignore"):  # m**2 under/overflows only for m beyond 1e-154 / 1e154
        return a / (2 * _sq(m))


def _log_a_int(q: float, sigma: float, alpha: int) -> float:
    i = np.arange(alpha + 1, dtype=np.float64)
    log_coef = _log_binom_row(alpha) + i * math.log(q) + (alpha - i) * math.log1p(-q)
    return float(special.logsumexp(log_coef + (i * i - i) / (2 * _sq(sigma))))


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
    z0 = _sq(sigma) * math.log(1 / q - 1) + 0.5
    log_t0 = log_coef + i * math.log(q) + j * log1mq
    log_t1 = log_coef + j * math.log(q) + i * log1mq
    log_e0 = math.log(0.5) + _log_erfc((i - z0) / (math.sqrt(2) * sigma))
    log_e1 = math.log(0.5) + _log_erfc((z0 - j) / (math.sqrt(2) * sigma))
    s0 = log_t0 + (i * i - i) / (2 * _sq(sigma)) + log_e0
    s1 = log_t1 + (j * j - j) / (2 * _sq(sigma)) + log_e1
    total = np.logaddexp.accumulate(np.logaddexp(s0, s1))
    stop = np.zeros(_FRAC_TERMS, dtype=bool)
    stop[1:] = (s0[1:] < s0[:-1]) & (s1[1:] < s1[:-1]) & (np.maximum(s0[1:], s1[1:]) < total[1:] - 30)
    hits = np.flatnonzero(stop)
    return float(total[hits[0]]) if hits.size else math.inf


def rdp_subsampled_gaussian(
    noise_multiplier: float, *, sampling_rate: float, orders: Sequence[float] | np.ndarray | None = None
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
        return rdp_gaussian(m, orders=a)
    out = np.empty_like(a)
    # errstate: only extreme noise multipliers (beyond 1e-154 / 1e154) under/overflow here
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
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
    # NaN only for a vanishing noise multiplier (0/0 in the exponent): the divergence is then unbounded; a
    # Renyi divergence is >= 0, and float rounding of log A_alpha ~ 0 (huge noise) must not make it negative
    return np.where(np.isnan(out), np.inf, np.maximum(out, 0.0))


def _log_cosh(x: np.ndarray) -> np.ndarray:
    r""":math:`\log\cosh x` for x >= 0 without overflow or cancellation: Taylor series
    :math:`x^2/2 - x^4/12 + x^6/45 - 17x^8/2520 + 31x^{10}/14175` below 0.05 (remainder < 4e-16 relative), else
    :math:`x + \log(1 + e^{-2x}) - \log 2` (finite for every finite x, ``inf`` at ``inf``)."""
    x = np.asarray(x, dtype=np.float64)
    x2 = x * x
    series = x2 * (1 / 2 + x2 * (-1 / 12 + x2 * (1 / 45 + x2 * (-17 / 2520 + x2 * (31 / 14175)))))
    with np.errstate(over="ignore"):
        direct = x + np.log1p(np.exp(-2 * x)) - math.log(2)
    return np.where(x < 0.05, series, direct)


def _log_sinhc(y: np.ndarray) -> np.ndarray:
    r""":math:`\log(\sinh(y)/y)` for y > 0 without overflow or cancellation: Taylor series
    :math:`y^2/6 - y^4/180 + y^6/2835 - y^8/37800 + y^{10}/467775` below 0.1 (remainder < 2e-16 relative),
    else :math:`y + \log(1 - e^{-2y}) - \log(2y)`."""
    y = np.asarray(y, dtype=np.float64)
    y2 = y * y
    series = y2 * (1 / 6 + y2 * (-1 / 180 + y2 * (1 / 2835 + y2 * (-1 / 37800 + y2 * (1 / 467775)))))
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        direct = y + np.log(-np.expm1(-2 * y)) - np.log(2 * y)
    return np.where(y < 0.1, series, direct)


def rdp_pure(epsilon: float, *, orders: Sequence[float] | np.ndarray | None = None, tight: bool = True) -> np.ndarray:
    r"""RDP of an eps-DP mechanism.

    ``tight=False``: :math:`\min(\varepsilon, \alpha\varepsilon^2/2)` (Mir17; Bun-Steinke 2016).
    ``tight=True`` (default): the exact worst case, attained by randomized response,
    :math:`\frac{1}{\alpha-1}\log\frac{e^{\alpha\varepsilon}+e^{(1-\alpha)\varepsilon}}{1+e^{\varepsilon}}
    = \frac{1}{\alpha-1}\log\frac{\sinh(\alpha\varepsilon)-\sinh((\alpha-1)\varepsilon)}{\sinh\varepsilon}`
    (Bun-Steinke 2016 Prop 3.3); every eps-DP pair is a post-processing of randomized response (KOV15).

    Evaluated as :math:`\frac{1}{\alpha-1}\big(\log\cosh((\alpha-\tfrac12)\varepsilon)
    - \log\cosh(\varepsilon/2)\big)` (multiply numerator and denominator by :math:`e^{-\varepsilon/2}`),
    with :math:`\log\cosh` by its Taylor series near 0: no cancellation for tiny eps (the value
    :math:`\approx\alpha\varepsilon^2/2` keeps full relative accuracy, never negative) and no overflow for
    huge eps (the value tends to eps). Spec P5.
    """
    eps = check_epsilon(epsilon)
    a = _check_orders(orders)
    tight = check_bool(tight, "tight")
    with np.errstate(over="ignore"):
        loose = np.minimum(eps, a * _sq(eps) / 2)
    if not tight:
        return loose
    with np.errstate(over="ignore", invalid="ignore"):
        exact = (_log_cosh((a - 0.5) * eps) - _log_cosh(np.float64(eps / 2))) / (a - 1)
    return np.fmax(np.fmin(exact, loose), 0.0)


def rdp_bounded_range(epsilon: float, *, orders: Sequence[float] | np.ndarray | None = None) -> np.ndarray:
    r"""RDP of an eps-bounded-range mechanism, e.g. the eps-DP exponential mechanism (Cesar-Rogers 2021).

    The privacy loss takes values in an interval :math:`[t-\varepsilon, t]`; the worst case is a two-point
    loss, giving with :math:`u = e^{-t}`
    :math:`\frac{1}{\alpha-1}\log\max_u \frac{u^{-\alpha}(Au - B)}{e^\varepsilon - 1}`,
    :math:`A = e^\varepsilon - e^{(1-\alpha)\varepsilon}`, :math:`B = 1 - e^{(1-\alpha)\varepsilon}`, maximized at
    :math:`u^* = \alpha B/((\alpha-1)A)` (always interior: the log-moment is concave in t and vanishes at both
    ends). Never above :math:`\alpha\varepsilon^2/8` nor the pure-DP bound. Spec P5.

    Evaluation. Substituting :math:`u^*` and writing :math:`\log(e^x-1) = \log x + x/2 + k(x)`,
    :math:`k(x) = \log(\sinh(x/2)/(x/2))`, every linear term cancels exactly and

    .. math:: (\alpha-1)\,D_\alpha = (1-\alpha)\,k((\alpha-1)\varepsilon) - k(\varepsilon)
              + \alpha\,k(\alpha\varepsilon),

    with :math:`k` by its Taylor series near 0 (:math:`k(x) = x^2/24 - x^4/2880 + \dots`, so
    :math:`D_\alpha = \alpha\varepsilon^2/8 + O(\varepsilon^4)`) and in log space for large x: no cancellation
    for tiny eps, no overflow for huge eps (:math:`D_\alpha \to \varepsilon + \log(\alpha-1)
    - \frac{\alpha}{\alpha-1}\log\alpha`).
    """
    eps = check_epsilon(epsilon)
    a = _check_orders(orders)
    with np.errstate(over="ignore", invalid="ignore"):
        val = (
            (1 - a) * _log_sinhc((a - 1) * eps / 2) - _log_sinhc(np.float64(eps / 2)) + a * _log_sinhc(a * eps / 2)
        ) / (a - 1)
        cap = np.fmin(a * _sq(eps) / 8, rdp_pure(eps, orders=a))
    # fmin/fmax: where a*eps overflows (eps beyond ~1e305) val is NaN and the pure-DP bound (~eps) is used
    return np.fmax(np.fmin(val, cap), 0.0)


def rdp_generalized_gaussian(
    noise_multiplier: float, *, kappa: float, orders: Sequence[float] | np.ndarray | None = None
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
    with np.errstate(divide="ignore", over="ignore"):
        return kappa * a**2 / (2 * _sq(m) * (a - 1))


def rdp_to_epsilon(
    rdp: Sequence[float] | np.ndarray, *, orders: Sequence[float] | np.ndarray | None, delta: float
) -> tuple[float, float]:
    r"""Convert an RDP curve to (eps, delta)-DP with the improved conversion (CKS20 Prop 12; BBGHS20).

    .. math:: \varepsilon = \min_\alpha\; \mathrm{rdp}(\alpha) + \log\frac{\alpha-1}{\alpha}
              - \frac{\log\delta + \log\alpha}{\alpha-1},

    the conversion of dp-accounting's ``RdpAccountant`` (equal to it to float precision on the same orders).
    It is never larger than the classic :math:`\min_\alpha \mathrm{rdp}(\alpha) + \log(1/\delta)/(\alpha-1)`
    (Mir17 Prop 3), since :math:`\log\frac{\alpha-1}{\alpha} - \frac{\log\alpha}{\alpha-1} < 0`; for
    DP-SGD on MNIST (q = 256/60000, m = 1.1, 60 epochs, delta = 1e-5) it gives 2.597 instead of 3.008,
    against 2.382 for the PLD accountant. Minimized
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
