r"""Private mean estimation: pure vs approximate DP in high dimension, local vs central DP, and the shuffle
model (Spec D1, D2, D3; seed 002, lecture "additional topics in private ML").

* D1 (:func:`laplace_mean_estimate`, :func:`gaussian_mean_estimate`): data in the cube
  :math:`[-B, B]^d` (the :math:`\ell_\infty` ball of radius ``B``). Under replace-one neighbours the
  empirical mean has :math:`\ell_1` sensitivity :math:`\Delta_1 = 2Bd/n` and :math:`\ell_2` sensitivity
  :math:`\Delta_2 = 2B\sqrt d/n`. Coordinate-wise Laplace (pure DP) has :math:`\ell_2` error
  :math:`\sqrt{2d}\,\Delta_1/\varepsilon = \Theta(d^{3/2}/(n\varepsilon))`; the Gaussian mechanism has
  :math:`\sqrt d\,\sigma = \Theta(d\sqrt{\log(1/\delta)}/(n\varepsilon))`. At a fixed target error
  :math:`\alpha` the private sample complexities are therefore :math:`d^{3/2}/(\alpha\varepsilon)` vs
  :math:`d/(\alpha\varepsilon)` (plus the statistical :math:`d/\alpha^2`).
* D2 (:func:`local_mean_estimate`, :func:`central_mean_estimate`): univariate
  :math:`X_i \sim N(\mu, 1)`, :math:`|\mu| \le 1`, clipped to :math:`[-c, c]` with
  :math:`c = \sqrt{\log n}` by default. Locally each user releases :math:`[X_i]_c + \mathrm{Lap}(2c/\varepsilon)`
  (each release is :math:`\varepsilon`-DP w.r.t. its own record; the range has diameter :math:`2c`,
  so the lecture's scale :math:`c/\varepsilon` is a factor 2 short of :math:`\varepsilon`-LDP); the
  average has private error :math:`\Theta(c/(\varepsilon\sqrt n))`. Centrally one adds
  :math:`\mathrm{Lap}(2c/(n\varepsilon))` once: private error :math:`\Theta(c/(n\varepsilon))`.
* D3 (:func:`shuffle_epsilon_fmt21`, :func:`shuffle_epsilon_efmrtt19`, :func:`shuffled_rr_exact_epsilon`):
  amplification by shuffling of binary randomized response, as an *illustration*: the closed-form bound
  of Feldman, McMillan and Talwar (2021, Thm 3.1), the bound of Erlingsson et al. (2019, amplification by
  shuffling theorem, :math:`12\varepsilon_0\sqrt{\log(1/\delta)/n}` for :math:`\varepsilon_0 < 1/2`) and,
  as a lower bound, the exact privacy curve of
  the shuffled count for one neighbouring pair.

The library works in the idealized real-arithmetic model: float64 noise from a non-cryptographic RNG
(floating-point attacks on the Laplace mechanism are out of scope).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln, logsumexp

from dpsco_lib._validation import (
    check_array,
    check_delta,
    check_epsilon,
    check_int,
    check_positive,
    check_rng,
)
from dpsco_lib.algorithms._result import Result
from dpsco_lib.privacy.accounting import PrivacyLedger
from dpsco_lib.privacy.accounting.budget import gaussian_noise_multiplier

__all__ = [
    "central_mean_estimate",
    "gaussian_mean_estimate",
    "laplace_mean_estimate",
    "local_mean_estimate",
    "mean_error_theory",
    "shuffle_epsilon_efmrtt19",
    "shuffle_epsilon_fmt21",
    "shuffled_rr_delta_exact",
    "shuffled_rr_exact_epsilon",
]


def _cube_data(data: object, bound: float) -> np.ndarray:
    X = check_array(data, "data", ndim=2)
    worst = float(np.max(np.abs(X)))
    if worst > bound * (1 + 1e-12):
        raise ValueError(
            f"data must lie in the cube [-{bound}, {bound}]^d (bound={bound!r}); the largest |entry| is {worst!r}"
        )
    return X


# ---------------------------------------------------------------------------------------------------------
# D1: pure vs approximate DP in high dimension
# ---------------------------------------------------------------------------------------------------------
def laplace_mean_estimate(
    data: object, *, epsilon: float, rng: np.random.Generator, bound: float = 1.0
) -> Result:
    r"""Pure :math:`\varepsilon`-DP mean of data in :math:`[-B, B]^d` by coordinate-wise Laplace noise (Spec D1).

    Output :math:`\bar x + \mathrm{Lap}(\Delta_1/\varepsilon)^d` with :math:`\Delta_1 = 2Bd/n` the
    :math:`\ell_1` sensitivity of the mean under replace-one neighbours (Dwork-Roth Thm 3.6). Expected
    squared :math:`\ell_2` privacy error :math:`2d(\Delta_1/\varepsilon)^2 = 8B^2d^3/(n\varepsilon)^2`.

    Parameters
    ----------
    data : array (n, d) with entries in [-bound, bound].
    epsilon : float > 0.
    rng : numpy.random.Generator.
    bound : float > 0, the cube half-width B.

    Returns
    -------
    Result
        ``x`` the estimate, ``ledger`` one pure event, ``info["empirical_mean"]`` the non-private mean,
        ``params["noise_scale"]`` the Laplace scale.
    """
    bound = check_positive(bound, "bound")
    X = _cube_data(data, bound)
    eps = check_epsilon(epsilon)
    rng = check_rng(rng)
    n, d = X.shape
    mean = X.mean(axis=0)
    scale = 2.0 * bound * d / (n * eps)
    led = PrivacyLedger()
    led.record_pure(eps, label="coordinate-wise Laplace mean (D1)")
    x = mean + rng.laplace(0.0, scale, size=d)
    return Result(x=x, params={"noise_scale": scale, "sensitivity_l1": 2.0 * bound * d / n}, ledger=led,
                  info={"empirical_mean": mean, "method": "laplace"})


def gaussian_mean_estimate(
    data: object,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    bound: float = 1.0,
    accountant: str = "gdp",
) -> Result:
    r"""(eps, delta)-DP mean of data in :math:`[-B, B]^d` by the Gaussian mechanism (Spec D1).

    :math:`\ell_2` sensitivity :math:`\Delta_2 = 2B\sqrt d/n`; :math:`\sigma = \Delta_2 m` with m the noise
    multiplier of :func:`~dpsco_lib.privacy.accounting.budget.gaussian_noise_multiplier` (the calibration that
    inverts the ledger's certificate; ``accountant="gdp"``, the default, is exact and equals the analytic
    Balle-Wang calibration; ``"best"`` is the tightest valid accountant, GDP for a Gaussian). Expected squared
    :math:`\ell_2` error :math:`d\sigma^2 = \Theta(d^2\log(1/\delta)/(n\varepsilon)^2)`. The ledger records the
    calibrated Gaussian event (noise multiplier m), so ``result.certified_epsilon(delta)`` is at most epsilon.
    """
    bound = check_positive(bound, "bound")
    X = _cube_data(data, bound)
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, allow_zero=False)
    rng = check_rng(rng)
    n, d = X.shape
    mean = X.mean(axis=0)
    sens = 2.0 * bound * math.sqrt(d) / n
    m = gaussian_noise_multiplier(eps, dlt, accountant=accountant).value
    sigma = sens * m
    led = PrivacyLedger()
    led.record_gaussian(m, label="Gaussian mean (D1)")
    x = mean + rng.normal(0.0, sigma, size=d)
    return Result(x=x, params={"sigma": sigma, "sensitivity_l2": sens, "accountant": accountant}, ledger=led,
                  info={"empirical_mean": mean, "method": "gaussian"})


def mean_error_theory(
    d: int, n: int, epsilon: float, delta: float = 0.0, bound: float = 1.0, *, accountant: str = "gdp"
) -> float:
    r"""Root-mean-square :math:`\ell_2` privacy error of the D1 estimators (exact, not a bound).

    ``delta == 0``: Laplace, :math:`\sqrt{2d}\cdot 2Bd/(n\varepsilon)`; ``delta > 0``: Gaussian,
    :math:`\sqrt d\,\sigma` with the :func:`gaussian_mean_estimate` calibration (same ``accountant``).
    """
    d = check_int(d, "d", lo=1)
    n = check_int(n, "n", lo=1)
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    bound = check_positive(bound, "bound")
    if dlt == 0:
        return math.sqrt(2 * d) * 2 * bound * d / (n * eps)
    sens = 2.0 * bound * math.sqrt(d) / n
    return math.sqrt(d) * (sens * gaussian_noise_multiplier(eps, dlt, accountant=accountant).value)


# ---------------------------------------------------------------------------------------------------------
# D2: local vs central DP
# ---------------------------------------------------------------------------------------------------------
def _univariate(x: object, clip: float | None) -> tuple[np.ndarray, float]:
    X = check_array(x, "x", ndim=1)
    n = X.shape[0]
    if clip is None:
        if n < 3:
            raise ValueError(f"x must hold at least 3 samples for the default clip sqrt(log n), got n={n}")
        c = math.sqrt(math.log(n))
    else:
        c = check_positive(clip, "clip")
    return np.clip(X, -c, c), c


def local_mean_estimate(
    x: object, *, epsilon: float, rng: np.random.Generator, clip: float | None = None
) -> Result:
    r"""epsilon-local-DP mean of univariate samples (Spec D2; DJW13).

    Each user releases :math:`Y_i = [X_i]_c + \mathrm{Lap}(2c/\varepsilon)` with :math:`[\cdot]_c` the clip
    to :math:`[-c, c]`, :math:`c = \sqrt{\log n}` by default; the server averages. Each local randomizer is
    :math:`\varepsilon`-DP for its own record (range diameter :math:`2c`), hence so is every post-processing.
    Private error :math:`|\frac1n\sum_i Z_i|` has standard deviation :math:`2\sqrt2\, c/(\varepsilon\sqrt n)`.

    The ledger certifies the per-user (local) guarantee: one pure event of :math:`\varepsilon`
    (each record is touched by exactly one randomizer, so it is also the central guarantee).
    """
    Xc, c = _univariate(x, clip)
    eps = check_epsilon(epsilon)
    rng = check_rng(rng)
    n = Xc.shape[0]
    Y = Xc + rng.laplace(0.0, 2.0 * c / eps, size=n)
    led = PrivacyLedger()
    led.record_pure(eps, label="local Laplace randomizer (D2)")
    return Result(x=np.array([Y.mean()]), params={"clip": c, "noise_scale": 2.0 * c / eps}, ledger=led,
                  info={"clipped_mean": float(Xc.mean()), "model": "local"})


def central_mean_estimate(
    x: object, *, epsilon: float, rng: np.random.Generator, clip: float | None = None
) -> Result:
    r"""epsilon-(central) DP mean: :math:`\frac1n\sum_i [X_i]_c + \mathrm{Lap}(2c/(n\varepsilon))` (Spec D2).

    Replace-one sensitivity of the clipped mean is :math:`2c/n`. Private error standard deviation
    :math:`2\sqrt2\, c/(n\varepsilon)`.
    """
    Xc, c = _univariate(x, clip)
    eps = check_epsilon(epsilon)
    rng = check_rng(rng)
    n = Xc.shape[0]
    m = float(Xc.mean())
    led = PrivacyLedger()
    led.record_pure(eps, label="central Laplace mean (D2)")
    est = m + float(rng.laplace(0.0, 2.0 * c / (n * eps)))
    return Result(x=np.array([est]), params={"clip": c, "noise_scale": 2.0 * c / (n * eps)}, ledger=led,
                  info={"clipped_mean": m, "model": "central"})


# ---------------------------------------------------------------------------------------------------------
# D3: shuffle amplification (illustration)
# ---------------------------------------------------------------------------------------------------------
def shuffle_epsilon_fmt21(eps0: float, *, n: int, delta: float) -> float:
    r"""Closed-form amplification-by-shuffling bound of Feldman, McMillan and Talwar (2021), Theorem 3.1.

    For :math:`\varepsilon_0`-DP local randomizers, :math:`n` users and :math:`\delta \in (0, 1)` with
    :math:`\varepsilon_0 \le \log(n/(16\log(4/\delta)))`, the shuffled outputs are
    :math:`(\varepsilon, \delta)`-DP with

    .. math:: \varepsilon \le \log\Big(1 + \frac{1-e^{-\varepsilon_0}}{1+e^{-\varepsilon_0-e_1}}\,(a + c)\Big),
              \quad a = \frac{8\sqrt{e^{\varepsilon_0}\log(4/\delta)}}{\sqrt n},\ c = \frac{8e^{\varepsilon_0}}{n},
              \ e_1 = \log(1 + a + c).

    This is the form of Thm 3.1 in the final (arXiv v4) version, as implemented in the authors' reference
    code (``closedformanalysis`` of apple/ml-shuffling-amplification); it is slightly larger than (so at
    least as safe as) the FOCS form :math:`\log(1 + \frac{e^{\varepsilon_0}-1}{e^{\varepsilon_0}+1}(a + c))`,
    and both are :math:`O((1-e^{-\varepsilon_0})\sqrt{e^{\varepsilon_0}\log(1/\delta)/n})`.
    Outside the theorem's range of :math:`\varepsilon_0` the function returns :math:`\varepsilon_0`
    (no amplification claimed). Spec D3 (illustration only).
    """
    e0 = check_epsilon(eps0, "eps0")
    n = check_int(n, "n", lo=1)
    dlt = check_delta(delta, allow_zero=False)
    if n <= 16 * math.log(4 / dlt) or e0 > math.log(n / (16 * math.log(4 / dlt))):
        return e0
    a = 8 * math.sqrt(math.exp(e0) * math.log(4 / dlt)) / math.sqrt(n)
    c = 8 * math.exp(e0) / n
    e1 = math.log1p(a + c)
    b = -math.expm1(-e0)
    dd = 1 + math.exp(-e0 - e1)
    return min(e0, math.log1p(b / dd * (a + c)))


def shuffle_epsilon_efmrtt19(eps0: float, *, n: int, delta: float) -> float:
    r"""Amplification by shuffling (Erlingsson et al. 2019): :math:`12\varepsilon_0\sqrt{\log(1/\delta)/n}`.

    Stated for :math:`\varepsilon_0 < 1/2`, :math:`n \ge 1000`, :math:`\delta < 1/100` (the
    amplification-by-shuffling theorem of EFMRTT19, for arbitrary eps0-LDP randomizers); outside that range
    the function returns :math:`\varepsilon_0` (no claim). Spec D3.
    """
    e0 = check_epsilon(eps0, "eps0")
    n = check_int(n, "n", lo=1)
    dlt = check_delta(delta, allow_zero=False)
    if e0 >= 0.5 or n < 1000 or dlt >= 0.01:
        return e0
    return min(e0, 12 * e0 * math.sqrt(math.log(1 / dlt) / n))


def _log_binom_pmf(n: int, p: float) -> np.ndarray:
    k = np.arange(n + 1, dtype=np.float64)
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1) + k * math.log(p) + (n - k) * math.log1p(-p)


def _shuffled_rr_logpmfs(eps0: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    # Binary RR keeps the bit w.p. e^eps0/(1 + e^eps0). Shuffled output = the count K of ones.
    # D = (0, ..., 0) vs D' = (0, ..., 0, 1): K = Bin(n-1, p) + Bern(p) vs Bin(n-1, p) + Bern(1-p).
    p = 1.0 / (1.0 + math.exp(eps0))
    base = _log_binom_pmf(n - 1, p)
    lp, l1p = math.log(p), math.log1p(-p)
    neg = np.full(n + 1, -np.inf)
    a = np.logaddexp(np.concatenate([base + l1p, neg[:1]]), np.concatenate([neg[:1], base + lp]))
    b = np.logaddexp(np.concatenate([base + lp, neg[:1]]), np.concatenate([neg[:1], base + l1p]))
    return a, b


def shuffled_rr_delta_exact(eps0: float, *, n: int, epsilon: float) -> float:
    r"""Exact :math:`\delta(\varepsilon)` of the shuffled randomized-response count for one neighbouring pair.

    The pair is :math:`D = (0,\dots,0)`, :math:`D' = (0,\dots,0,1)`; the shuffled output of binary
    randomized response is equivalent to the count of ones. Returns
    :math:`\max_{P,Q\in\{D,D'\}}\sum_k (P(k) - e^\varepsilon Q(k))_+` in log space. This is a *lower*
    bound on the shuffled protocol's :math:`\delta(\varepsilon)` (one pair only). Spec D3.
    """
    e0 = check_epsilon(eps0, "eps0")
    n = check_int(n, "n", lo=1)
    eps = check_positive(epsilon, "epsilon", allow_zero=True)
    a, b = _shuffled_rr_logpmfs(e0, n)
    out = 0.0
    for lp, lq in ((a, b), (b, a)):
        mask = lp > lq + eps
        if np.any(mask):
            t1 = logsumexp(lp[mask])
            t2 = logsumexp(lq[mask]) + eps
            out = max(out, float(math.exp(t1) * -math.expm1(t2 - t1)))
    return out


def shuffled_rr_exact_epsilon(eps0: float, *, n: int, delta: float) -> float:
    """Smallest epsilon with :func:`shuffled_rr_delta_exact` <= delta (bisection); a lower bound on the
    central epsilon of shuffled randomized response. Spec D3.

    Not a privacy budget solver: it inverts the exact curve of one neighbouring pair, an empirical *lower* bound
    that no run is calibrated or certified with (certificates come from the ledger only)."""
    e0 = check_epsilon(eps0, "eps0")
    n = check_int(n, "n", lo=1)
    dlt = check_delta(delta, allow_zero=False)
    if shuffled_rr_delta_exact(e0, n=n, epsilon=0.0) <= dlt:
        return 0.0
    # lower-bound inversion (not a budget solve): bisection on the exact one-pair curve
    lo, hi = 0.0, e0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if shuffled_rr_delta_exact(e0, n=n, epsilon=mid) <= dlt:
            hi = mid
        else:
            lo = mid
    return hi
