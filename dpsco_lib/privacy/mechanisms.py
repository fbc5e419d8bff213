r"""Additive-noise and selection mechanisms (Spec P1, P2, P4, G1).

Every mechanism here states its *privacy map* in its docstring, in the style of OpenDP: the input
stability it needs (a sensitivity bound in a stated norm, over replace-one neighbouring datasets) and the
privacy guarantee it then gives as a function of its noise parameter.

Contents
--------
* Laplace mechanism (``laplace_mechanism``): eps-DP for l_1 sensitivity.
* Gaussian mechanism (Spec P1): the classic calibration of Dwork and Roth (2014, Thm A.1), the exact
  analytic privacy curve of Balle and Wang (2018, Thm 8) and conservative solvers built on it.
* Report noisy max / min (Spec P2) with Laplace or Gumbel noise.
* Exponential mechanism (Spec P4; McSherry-Talwar 2007, Dwork-Roth Thm 3.10/3.11) in log space, and the
  exact categorical sampler ``sample_categorical_log`` that draws K i.i.d. indices at once.
* Generalized Gaussian (GG) mechanism (Spec G1; Bassily, Guzman and Nandi, COLT 2021): an exact
  sampler for the density proportional to ``exp(-||z||_q^2 / (2 sigma^2))``, its calibration and the
  epsilon implied by its Renyi bound.

Limitations
-----------
All guarantees hold in the idealized real-arithmetic model. The noise is drawn in float64 with numpy's
non-cryptographic PCG64 generator; floating-point attacks (Mironov 2012) apply to it. The Laplace and Gaussian
mechanisms offer ``sampler="discrete"``: exact discrete Laplace / discrete Gaussian noise on a grid
(Canonne-Kamath-Steinke 2020, :mod:`~dpsco_lib.privacy.discrete`), which resists that attack; timing side
channels remain out of scope. This is a research companion: never use it to release real data.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Literal

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr, logsumexp

from dpsco_lib._validation import (
    check_array,
    check_bool,
    check_delta,
    check_epsilon,
    check_in_range,
    check_positive,
    check_rng,
    check_size,
)
from dpsco_lib.privacy.discrete import discrete_gaussian, discrete_laplace

__all__ = [
    "exponential_mechanism",
    "exponential_mechanism_log_probs",
    "gaussian_delta_analytic",
    "gaussian_epsilon_analytic",
    "gaussian_mechanism",
    "gaussian_sigma_analytic",
    "gaussian_sigma_classic",
    "generalized_gaussian_mechanism",
    "generalized_gaussian_noise",
    "gg_epsilon",
    "gg_sigma",
    "gg_sigma_exact",
    "laplace_mechanism",
    "report_noisy_max",
    "report_noisy_min",
    "sample_categorical_log",
]

# Largest number of float64 entries materialized at once by the noisy-max kernels (32 MB).
_CHUNK_ENTRIES = 4_000_000


# ---------------------------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------------------------
def _check_size(size: int | None) -> int | None:
    if size is None:
        return None
    return check_size(size, "size", lo=1)


def _check_value(value: object) -> np.ndarray:
    """A release value: scalar or 1-D, finite."""
    return check_array(value, "value", ndim=(0, 1))


def _noise_shape(value: np.ndarray, size: int | None) -> tuple[int, ...]:
    return value.shape if size is None else (size, *value.shape)


def _check_scores(scores: object, name: str = "scores") -> np.ndarray:
    return check_array(scores, name, ndim=(1, 2))


def _lq_norm(x: np.ndarray, q: float, axis: int = -1) -> np.ndarray:
    """l_q norm along ``axis`` for q in [1, inf], scaled by the max entry so that large q cannot overflow."""
    a = np.abs(x)
    if math.isinf(q):
        return a.max(axis=axis)
    if q == 2.0:
        return np.linalg.norm(a, axis=axis)
    if q == 1.0:
        return a.sum(axis=axis)
    m = a.max(axis=axis, keepdims=True)
    safe = np.where(m > 0, m, 1.0)
    s = np.sum((a / safe) ** q, axis=axis)
    return np.squeeze(safe, axis=axis) * s ** (1.0 / q)


# ---------------------------------------------------------------------------------------------------------
# Laplace
# ---------------------------------------------------------------------------------------------------------
def laplace_mechanism(
    value: float | np.ndarray,
    *,
    sensitivity: float,
    epsilon: float,
    rng: np.random.Generator,
    size: int | None = None,
    sampler: str = "float",
    gamma: float | None = None,
) -> np.ndarray:
    r"""Laplace mechanism: ``value + Lap(b)^{shape}`` with scale ``b = sensitivity / epsilon``.

    Privacy map (Dwork and Roth 2014, Thm 3.6; spec privacy.md "Laplace"): if the query ``f`` satisfies
    :math:`\|f(S) - f(S')\|_1 \le \Delta_1` for all neighbouring ``S, S'`` then
    :math:`f(S) + \mathrm{Lap}(\Delta_1/\varepsilon)^d` is :math:`(\varepsilon, 0)`-DP.

    Parameters
    ----------
    value : float or array of shape (d,)
        The exact query answer :math:`f(S)`.
    sensitivity : float
        :math:`\Delta_1 > 0`, the l_1 sensitivity of the query.
    epsilon : float
        Target :math:`\varepsilon > 0`.
    rng : numpy.random.Generator
        Source of randomness.
    size : int, optional
        Number ``m`` of independent releases; they are stacked on axis 0 (shape ``(m,)`` or ``(m, d)``).
    sampler : {"float", "discrete"}
        ``"float"`` (default): numpy's float64 Laplace sampler, private in the real-arithmetic model only
        (Mironov 2012's attack applies). ``"discrete"``: the release ``gamma * (round(value / gamma) + Z)`` on
        the grid of spacing ``gamma``, with Z exact discrete Laplace noise (Canonne-Kamath-Steinke 2020,
        :func:`~dpsco_lib.privacy.discrete.discrete_laplace`) of scale ``Delta_Z / epsilon``, where
        ``Delta_Z = ceil(Delta_1 / gamma)`` for a scalar and ``floor(Delta_1 / gamma) + d`` for d coordinates
        (rounding moves each coordinate by less than one grid step); all in exact rational arithmetic, so the
        release is eps-DP exactly, the same ``LaplaceEvent(epsilon)`` in the ledger. Cost: about 6e3 noise
        entries per second, some 2e3 times slower than the float sampler (``python benchmarks/run.py --only
        discrete_samplers``, scale 10 grid steps, one core).
    gamma : float, optional
        Grid spacing of the discrete sampler (> 0; required with ``sampler="discrete"``). Choose it well below
        ``Delta_1 / d`` so that the rounding overhead in ``Delta_Z`` is small.

    Returns
    -------
    numpy.ndarray
        The noisy release(s); a 0-d array when ``value`` is a scalar and ``size`` is None.
    """
    v = _check_value(value)
    sens = check_positive(sensitivity, "sensitivity")
    eps = check_epsilon(epsilon)
    gen = check_rng(rng)
    m = _check_size(size)
    if _check_sampler(sampler, gamma) == "discrete":
        gam = Fraction(check_positive(gamma, "gamma"))
        ratio = Fraction(sens) / gam
        d_z = math.ceil(ratio) if v.size <= 1 else math.floor(ratio) + v.size
        scale = Fraction(d_z) / Fraction(eps)
        return _grid_release(v, _noise_shape(v, m), gam, lambda n: discrete_laplace(scale, rng=gen, size=n))
    b = sens / eps
    return v + gen.laplace(0.0, b, size=_noise_shape(v, m))


def _check_sampler(sampler: object, gamma: object) -> str:
    if sampler not in ("float", "discrete"):
        raise ValueError(f"sampler must be 'float' or 'discrete', got {sampler!r}")
    if sampler == "discrete" and gamma is None:
        raise ValueError("gamma (the grid spacing, > 0) is required with sampler='discrete', got None")
    if sampler == "float" and gamma is not None:
        raise ValueError(f"gamma applies to sampler='discrete' only, got gamma={gamma!r} with sampler='float'")
    return str(sampler)


def _grid_release(v: np.ndarray, shape: tuple[int, ...], gam: Fraction,
                  draw: Callable[[int], np.ndarray]) -> np.ndarray:
    """gamma * (round(v / gamma) + Z) with exact rounding floor(v/gamma + 1/2) and integer noise Z."""
    q = np.array([math.floor(Fraction(float(x)) / gam + Fraction(1, 2)) for x in v.ravel()], dtype=object)
    n = int(np.prod(shape)) if shape else 1
    z = draw(n).astype(object).reshape(shape) if shape else draw(1).astype(object)[0]
    base = q.reshape(v.shape) if v.shape else q[0]
    out = np.asarray(base + z, dtype=object)  # exact integers; the float product is post-processing
    return np.asarray(out.astype(float) * float(gam), dtype=np.float64)


# ---------------------------------------------------------------------------------------------------------
# Gaussian (Spec P1)
# ---------------------------------------------------------------------------------------------------------
def gaussian_sigma_classic(sensitivity: float, *, epsilon: float, delta: float) -> float:
    r"""Classic Gaussian calibration :math:`\sigma = \Delta_2\sqrt{2\ln(1.25/\delta)}/\varepsilon` (Spec P1).

    Dwork and Roth (2014), Thm A.1: for :math:`\varepsilon \in (0, 1)` the Gaussian mechanism with this
    :math:`\sigma` is :math:`(\varepsilon, \delta)`-DP. The proof uses :math:`\varepsilon < 1`; for
    :math:`\varepsilon \ge 1` the formula is *not* a valid calibration, so this function raises a
    ``ValueError`` there (use :func:`gaussian_sigma_analytic`, which is exact for every
    :math:`\varepsilon`).

    Parameters
    ----------
    sensitivity : float
        :math:`\Delta_2 > 0`, l_2 sensitivity.
    epsilon : float
        :math:`\varepsilon \in (0, 1)`.
    delta : float
        :math:`\delta \in (0, 1)`.
    """
    sens = check_positive(sensitivity, "sensitivity")
    eps = check_epsilon(epsilon)
    if eps >= 1.0:
        raise ValueError(
            f"epsilon must lie in (0, 1) for the classic Gaussian calibration (Dwork-Roth Thm A.1 is only "
            f"valid there), got {eps!r}; use gaussian_sigma_analytic for epsilon >= 1"
        )
    dlt = check_delta(delta, allow_zero=False)
    return sens * math.sqrt(2.0 * math.log(1.25 / dlt)) / eps


def _log_delta_terms(eps: float, mu: float) -> tuple[float, float]:
    a = float(log_ndtr(-eps / mu + mu / 2.0))
    b = eps + float(log_ndtr(-eps / mu - mu / 2.0))
    return a, b


def _gaussian_delta(mu: float, eps: float) -> float:
    """delta(eps) of the Gaussian mechanism with mu = Delta/sigma, computed as e^a (1 - e^(b - a))."""
    a, b = _log_delta_terms(eps, mu)
    if a == -math.inf:
        return 0.0
    diff = min(b - a, 0.0)  # b <= a mathematically; clamp rounding
    return math.exp(a) * -math.expm1(diff)


def gaussian_delta_analytic(sigma: float, *, sensitivity: float, epsilon: float) -> float:
    r"""Exact privacy curve of the Gaussian mechanism (Balle and Wang 2018, Thm 8; Spec P1).

    With :math:`\mu = \Delta_2/\sigma`, the mechanism :math:`f(S) + N(0, \sigma^2 I)` is
    :math:`(\varepsilon, \delta(\varepsilon))`-DP for every :math:`\varepsilon \ge 0` with

    .. math::
        \delta(\varepsilon) = \Phi\!\left(-\frac{\varepsilon}{\mu} + \frac{\mu}{2}\right)
            - e^{\varepsilon}\,\Phi\!\left(-\frac{\varepsilon}{\mu} - \frac{\mu}{2}\right),

    and no smaller :math:`\delta` holds (the curve is tight). Computed stably for large
    :math:`\varepsilon`: with :math:`a = \log\Phi(\cdot)` and :math:`b = \varepsilon + \log\Phi(\cdot)`
    from :func:`scipy.special.log_ndtr`, :math:`\delta = e^a\,(-\mathrm{expm1}(b - a))`.

    Parameters
    ----------
    sigma : float
        Noise standard deviation, > 0.
    sensitivity : float
        :math:`\Delta_2 > 0`.
    epsilon : float
        :math:`\varepsilon \ge 0` (0 gives the total-variation distance).
    """
    sig = check_positive(sigma, "sigma")
    sens = check_positive(sensitivity, "sensitivity")
    eps = check_positive(epsilon, "epsilon", allow_zero=True)
    return _gaussian_delta(sens / sig, eps)


def _bracket_up(f: Callable[[float], float], hi: float) -> float:
    """Double ``hi`` until f(hi) < 0 (f decreasing); returns the first hi that works."""
    for _ in range(2000):
        if f(hi) < 0:
            return hi
        hi *= 2.0
    raise RuntimeError("could not bracket the root")  # pragma: no cover


def gaussian_epsilon_analytic(sigma: float, *, sensitivity: float, delta: float) -> float:
    r"""Smallest :math:`\varepsilon` with :math:`\delta(\varepsilon) \le \delta` for the Gaussian mechanism.

    Inverts :func:`gaussian_delta_analytic` (Balle-Wang, Spec P1) in :math:`\varepsilon` with
    :func:`scipy.optimize.brentq`. Conservative: the returned value always satisfies
    ``gaussian_delta_analytic(sigma, sensitivity=sensitivity, epsilon=eps) <= delta`` in floating point (it is
    moved up by ulps if brentq lands a hair below the root). Returns 0 if already :math:`\delta(0) \le \delta`.

    Oracle: :math:`\Delta = 1, \sigma = 1, \delta = 10^{-5}` gives :math:`\varepsilon = 4.37718...`.
    """
    sig = check_positive(sigma, "sigma")
    sens = check_positive(sensitivity, "sensitivity")
    dlt = check_delta(delta, allow_zero=False)
    mu = sens / sig
    if _gaussian_delta(mu, 0.0) <= dlt:
        return 0.0

    def f(e: float) -> float:
        return _gaussian_delta(mu, e) - dlt

    hi = _bracket_up(f, max(1.0, mu * mu))
    eps = float(brentq(f, 0.0, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps, maxiter=500))
    while _gaussian_delta(mu, eps) > dlt:
        eps = float(np.nextafter(eps, math.inf))
    return eps


def gaussian_sigma_analytic(sensitivity: float, *, epsilon: float, delta: float) -> float:
    r"""Smallest :math:`\sigma` making the Gaussian mechanism :math:`(\varepsilon, \delta)`-DP (Spec P1).

    Solves :math:`\delta(\varepsilon; \mu = \Delta_2/\sigma) = \delta` of Balle and Wang (2018, Alg. 1
    / Thm 8) with :func:`scipy.optimize.brentq`. :math:`\delta(\varepsilon)` increases in :math:`\mu`,
    so the root is unique. Conservative: the returned :math:`\sigma` always satisfies
    ``gaussian_delta_analytic(sigma, sensitivity=sensitivity, epsilon=epsilon) <= delta`` in floating point.
    Valid for every :math:`\varepsilon > 0` (unlike the classic formula) and always smaller than the classic sigma.
    """
    sens = check_positive(sensitivity, "sensitivity")
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, allow_zero=False)

    # Solve in s = sigma / Delta (the curve depends on mu = 1/s only), on a log scale.
    def g(log_s: float) -> float:
        return _gaussian_delta(math.exp(-log_s), eps) - dlt

    lo = -1.0
    while g(lo) <= 0:  # pragma: no branch - tiny sigma gives delta -> 1 > target
        lo -= 1.0
    hi = 1.0
    while g(hi) > 0:
        hi += 1.0
    log_s = float(brentq(g, lo, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps, maxiter=500))
    sigma = sens * math.exp(log_s)
    while _gaussian_delta(sens / sigma, eps) > dlt:
        sigma = float(np.nextafter(sigma, math.inf))
    return sigma


def gaussian_mechanism(
    value: float | np.ndarray,
    *,
    sigma: float,
    rng: np.random.Generator,
    size: int | None = None,
    sampler: str = "float",
    gamma: float | None = None,
) -> np.ndarray:
    r"""Gaussian mechanism: ``value + N(0, sigma^2 I)`` (Spec P1).

    Privacy map: if :math:`\|f(S) - f(S')\|_2 \le \Delta_2` for all neighbours, the release is
    :math:`(\varepsilon, \delta)`-DP for every pair on the Balle-Wang curve
    :func:`gaussian_delta_analytic` (equivalently :math:`\mu`-GDP with :math:`\mu = \Delta_2/\sigma`,
    and RDP :math:`\alpha\Delta_2^2/(2\sigma^2)`). Calibrate ``sigma`` with
    :func:`gaussian_sigma_analytic` (exact) or :func:`gaussian_sigma_classic` (Dwork-Roth, eps < 1).
    Accuracy: :math:`\mathbb E\|Z\|_2 = \sigma\sqrt2\,\Gamma((d+1)/2)/\Gamma(d/2) = \Theta(\sigma\sqrt d)`.

    Parameters
    ----------
    value : float or array of shape (d,)
    sigma : float
        Noise standard deviation, > 0.
    rng : numpy.random.Generator
    size : int, optional
        Number ``m`` of independent releases stacked on axis 0.
    sampler : {"float", "discrete"}
        ``"float"`` (default): numpy's float64 normal sampler (real-arithmetic model). ``"discrete"``: the
        release ``gamma * (round(value / gamma) + Z)`` with Z exact discrete Gaussian noise N_Z(0, (sigma /
        gamma)^2) per coordinate (Canonne-Kamath-Steinke 2020, :func:`~dpsco_lib.privacy.discrete.
        discrete_gaussian`). Rounding moves the query by less than one grid step per coordinate, so its l2
        sensitivity in grid units is at most ``Delta_2 / gamma + sqrt(d)``, and the release is
        rho-zCDP with rho = (Delta_2 + gamma sqrt(d))^2 / (2 sigma^2) (CKS20 Thm 14): record it as
        ``GaussianEvent(sigma / (Delta_2 + gamma sqrt(d)))`` and certify it with the ``"rdp"`` accountant
        (the zCDP/RDP curve is the continuous Gaussian's; the exact continuous curve used by ``"gdp"`` and
        ``"pld"`` is not proved for the discrete Gaussian). Cost: about 3e3 noise entries per second, some 5e3
        times slower than the float sampler (``benchmarks/run.py --only discrete_samplers``).
    gamma : float, optional
        Grid spacing of the discrete sampler (> 0; required with ``sampler="discrete"``).
    """
    v = _check_value(value)
    sig = check_positive(sigma, "sigma")
    gen = check_rng(rng)
    m = _check_size(size)
    if _check_sampler(sampler, gamma) == "discrete":
        gam = Fraction(check_positive(gamma, "gamma"))
        sig_z = Fraction(sig) / gam
        return _grid_release(v, _noise_shape(v, m), gam, lambda n: discrete_gaussian(sig_z, rng=gen, size=n))
    return v + gen.normal(0.0, sig, size=_noise_shape(v, m))


# ---------------------------------------------------------------------------------------------------------
# Exact categorical sampling in log space (used by P2/P4 and by vertex sampling)
# ---------------------------------------------------------------------------------------------------------
def sample_categorical_log(
    log_weights: np.ndarray,
    *,
    rng: np.random.Generator,
    size: int | None = None,
) -> int | np.ndarray:
    r"""I.i.d. draws from :math:`\mathrm{Cat}(\mathrm{softmax}(w))` given log-weights :math:`w`.

    The "K draws at once" primitive (Spec P4; vertex sampling in M1-A5). Exact inverse-CDF sampling in
    :math:`O(J + K\log J)` per distribution: shift by :math:`\max_j w_j` (so the largest weight is
    :math:`e^0 = 1` and nothing overflows, even for weights of magnitude :math:`10^{12}`), exponentiate,
    cumulative-sum to :math:`C_j`, and return the first :math:`j` with :math:`C_j > U\,C_J` for
    :math:`U \sim \mathrm{Unif}[0, 1)` (``searchsorted``). A zero-weight bin can never be returned
    (its :math:`C_j` equals its predecessor's). For ``rng.random() < 1`` the product :math:`U C_J` rounds
    strictly below :math:`C_J`; should it ever reach :math:`C_J` the draw is assigned to the last bin of
    positive weight (a defensive guard, tested with a fake generator). Entries equal to ``-inf`` have
    probability 0. Inverse-CDF is used for every ``K`` (it costs no more than Gumbel-max even at ``K = 1``,
    and Gumbel-max would cost :math:`O(KJ)`).
    Exactness is up to float64 rounding of the cumulative sum (relative error
    :math:`\lesssim J\cdot 2^{-53}`), i.e. the idealized real-arithmetic model.

    For a batch ``(m, J)`` all rows are searched at once in one sorted key array: keys are the complex
    numbers ``row + 1j * C`` (numpy orders complex numbers lexicographically), so no precision is lost to
    row offsets.

    Parameters
    ----------
    log_weights : array of shape (J,) or (m, J)
        Unnormalized log-probabilities; finite or ``-inf`` (at least one finite entry per row).
    rng : numpy.random.Generator
    size : int, optional
        Number ``K`` of i.i.d. draws per distribution.

    Returns
    -------
    int or numpy.ndarray of int64
        ``int`` for 1-D input and ``size=None``; shape ``(K,)`` for 1-D input; ``(m,)`` or ``(m, K)`` for
        a batch.
    """
    w = check_array(log_weights, "log_weights", ndim=(1, 2), finite=False)
    if np.any(np.isnan(w)) or np.any(w == np.inf):
        raise ValueError("log_weights must be finite or -inf (no NaN, no +inf)")
    gen = check_rng(rng)
    k = _check_size(size)
    one_d = w.ndim == 1
    w2 = w[None, :] if one_d else w
    m, j = w2.shape
    if j == 0:
        raise ValueError("log_weights must have at least one candidate (J >= 1)")
    wmax = w2.max(axis=1, keepdims=True)
    if np.any(wmax == -np.inf):
        raise ValueError("log_weights must have at least one finite entry in every row (all were -inf)")
    p = np.exp(w2 - wmax)  # in [0, 1], the max entry is exactly 1
    cdf = np.cumsum(p, axis=1)
    total = cdf[:, -1]
    # last index of positive weight in each row (guard for U * total rounding up to total)
    last_pos = j - 1 - np.argmax(p[:, ::-1] > 0, axis=1)
    kk = 1 if k is None else k
    u = gen.random((m, kk))
    x = u * total[:, None]
    if m == 1:
        idx = np.searchsorted(cdf[0], x[0], side="right")[None, :]
    else:
        rows = np.arange(m, dtype=np.float64)
        keys = (rows[:, None] + 1j * cdf).ravel()
        queries = (rows[:, None] + 1j * x).ravel()
        flat = np.searchsorted(keys, queries, side="right")
        idx = flat.reshape(m, kk) - (np.arange(m) * j)[:, None]
    idx = np.minimum(idx, last_pos[:, None]).astype(np.int64)
    if one_d:
        return int(idx[0, 0]) if k is None else idx[0]
    return idx[:, 0] if k is None else idx


# ---------------------------------------------------------------------------------------------------------
# Exponential mechanism (Spec P4)
# ---------------------------------------------------------------------------------------------------------
def _em_scale(sensitivity: float, epsilon: float, monotone: bool) -> float:
    """The multiplier eps/(2 Delta) (eps/Delta for monotone scores) applied to utilities."""
    return epsilon / (sensitivity if monotone else 2.0 * sensitivity)


def exponential_mechanism_log_probs(
    scores: np.ndarray,
    *,
    sensitivity: float,
    epsilon: float,
    monotone: bool = False,
) -> np.ndarray:
    r"""Exact log-probabilities of the exponential mechanism (Spec P4).

    :math:`\log P(i) = c\,(u_i - u_{\max}) - \log\sum_j e^{c (u_j - u_{\max})}` with
    :math:`c = \varepsilon/(2\Delta)` (general scores) or :math:`c = \varepsilon/\Delta` (monotone
    scores). Subtracting :math:`u_{\max}` *before* scaling keeps score differences exact for scores of
    magnitude :math:`10^{12}` (Sterbenz); normalization uses :func:`scipy.special.logsumexp`.

    Parameters
    ----------
    scores : array of shape (J,) or (m, J)
        Utilities :math:`u_i` (finite); a 2-D input gives one distribution per row.
    sensitivity : float
        :math:`\Delta > 0`, sensitivity of every score (l_inf over candidates).
    epsilon : float
    monotone : bool
        Use the monotone-score calibration :math:`\varepsilon/\Delta`.
    """
    u = _check_scores(scores)
    sens = check_positive(sensitivity, "sensitivity")
    eps = check_epsilon(epsilon)
    c = _em_scale(sens, eps, check_bool(monotone, "monotone"))
    s = c * (u - u.max(axis=-1, keepdims=True))
    return s - logsumexp(s, axis=-1, keepdims=True)


def exponential_mechanism(
    scores: np.ndarray,
    *,
    sensitivity: float,
    epsilon: float,
    rng: np.random.Generator,
    monotone: bool = False,
    size: int | None = None,
) -> int | np.ndarray:
    r"""Exponential mechanism: :math:`P(i) \propto \exp(\varepsilon u_i/(2\Delta))` (Spec P4).

    Privacy map (McSherry and Talwar 2007; Dwork and Roth 2014, Thm 3.10): if every score has
    sensitivity :math:`\max_i |u_i(S) - u_i(S')| \le \Delta` then one draw is :math:`(\varepsilon, 0)`-DP;
    with ``monotone=True`` (all scores move in the same direction between neighbours) the sharper
    :math:`P(i) \propto \exp(\varepsilon u_i/\Delta)` is :math:`\varepsilon`-DP. ``size=K`` returns K
    i.i.d. draws, which together are :math:`K\varepsilon`-DP (basic composition; the accountant may do
    better).

    Utility (Dwork-Roth Thm 3.11): :math:`P[u(\hat i) \le \mathrm{OPT} - \frac{2\Delta}{\varepsilon}
    (\ln J + t)] \le e^{-t}`, hence :math:`\mathbb E[\mathrm{OPT} - u(\hat i)] \le
    \frac{2\Delta}{\varepsilon}(\ln J + 1)`.

    Sampling is exact, in log space (:func:`exponential_mechanism_log_probs` then
    :func:`sample_categorical_log`); the exponential of raw scores is never formed.

    Returns
    -------
    int or numpy.ndarray
        An index for 1-D scores and ``size=None``; ``(K,)`` for 1-D scores with ``size=K``; ``(m,)`` or
        ``(m, K)`` for a batch of score rows.
    """
    logp = exponential_mechanism_log_probs(scores, sensitivity=sensitivity, epsilon=epsilon, monotone=monotone)
    gen = check_rng(rng)
    k = _check_size(size)
    return sample_categorical_log(logp, rng=gen, size=k)


# ---------------------------------------------------------------------------------------------------------
# Report noisy max / min (Spec P2)
# ---------------------------------------------------------------------------------------------------------
def report_noisy_max(
    scores: np.ndarray,
    *,
    sensitivity: float,
    epsilon: float,
    rng: np.random.Generator,
    noise: Literal["laplace", "gumbel"] = "laplace",
    monotone: bool = False,
    size: int | None = None,
) -> int | np.ndarray:
    r"""Report noisy max: :math:`\arg\max_i (u_i + b\,Z_i)` with i.i.d. noise :math:`Z_i` (Spec P2).

    Privacy map. Scores with l_inf-sensitivity :math:`\Delta` (each :math:`|u_i(S) - u_i(S')| \le
    \Delta`):

    * ``noise="laplace"``: :math:`Z_i \sim \mathrm{Lap}(1)`, :math:`b = 2\Delta/\varepsilon` is
      :math:`(\varepsilon, 0)`-DP for general scores; :math:`b = \Delta/\varepsilon` suffices for
      monotone scores (Dwork and Roth 2014, Claim 3.9 is the monotone counting-query case).
    * ``noise="gumbel"``: :math:`Z_i` standard Gumbel, same :math:`b`. By the Gumbel-max identity the
      output has law :math:`P(i) \propto e^{u_i/b}`, i.e. it *is* the exponential mechanism and is
      :math:`\varepsilon`-DP by Dwork-Roth Thm 3.10.

    Accuracy: :math:`\mathrm{OPT} - u(\hat i) \le 2 b\,\max_i|Z_i|`, and
    :math:`P(\max_i |Z_i| > \ln J + t) \le e^{-t}` for Laplace noise, so with probability
    :math:`1 - e^{-t}` the loss is at most :math:`(4\Delta/\varepsilon)(\ln J + t)` (general scores),
    and :math:`\mathbb E[\mathrm{OPT} - u(\hat i)] \le (4\Delta/\varepsilon)(\ln J + 1)`.

    The noise is added to :math:`u_i - \max_j u_j` (same argmax) so that scores of magnitude
    :math:`10^{12}` keep full resolution. Work is chunked to bound memory.

    Parameters
    ----------
    scores : array of shape (J,) or (m, J)
        One selection per row for a batch.
    sensitivity, epsilon : float
    rng : numpy.random.Generator
    noise : {"laplace", "gumbel"}
    monotone : bool
    size : int, optional
        ``K`` independent selections per row.

    Returns
    -------
    int or numpy.ndarray of int64
        Shapes as in :func:`exponential_mechanism`.
    """
    u = _check_scores(scores)
    sens = check_positive(sensitivity, "sensitivity")
    eps = check_epsilon(epsilon)
    gen = check_rng(rng)
    k = _check_size(size)
    if noise not in ("laplace", "gumbel"):
        raise ValueError(f"noise must be 'laplace' or 'gumbel', got {noise!r}")
    b = sens / eps if check_bool(monotone, "monotone") else 2.0 * sens / eps
    one_d = u.ndim == 1
    u2 = u[None, :] if one_d else u
    u2 = u2 - u2.max(axis=1, keepdims=True)
    m, j = u2.shape
    kk = 1 if k is None else k
    total = m * kk
    out = np.empty(total, dtype=np.int64)
    chunk = max(1, _CHUNK_ENTRIES // j)
    for t0 in range(0, total, chunk):
        t1 = min(total, t0 + chunk)
        rows = np.arange(t0, t1) // kk
        if noise == "laplace":
            z = gen.laplace(0.0, b, size=(t1 - t0, j))
        else:
            z = b * gen.gumbel(0.0, 1.0, size=(t1 - t0, j))
        z += u2[rows]
        out[t0:t1] = np.argmax(z, axis=1)
    idx = out.reshape(m, kk)
    if one_d:
        return int(idx[0, 0]) if k is None else idx[0]
    return idx[:, 0] if k is None else idx


def report_noisy_min(
    scores: np.ndarray,
    *,
    sensitivity: float,
    epsilon: float,
    rng: np.random.Generator,
    noise: Literal["laplace", "gumbel"] = "laplace",
    monotone: bool = False,
    size: int | None = None,
) -> int | np.ndarray:
    r"""Report noisy min: :math:`\arg\min_i` of noisy scores (Spec P2).

    Implemented as :func:`report_noisy_max` on ``-scores`` (Laplace noise is symmetric; for Gumbel noise
    this is the exponential mechanism with utility :math:`-u_i`, law :math:`P(i) \propto
    e^{-u_i/b}`). Same privacy map and accuracy bound as :func:`report_noisy_max`.
    """
    u = _check_scores(scores)
    return report_noisy_max(
        -u, sensitivity=sensitivity, epsilon=epsilon, rng=rng, noise=noise, monotone=monotone, size=size
    )


# ---------------------------------------------------------------------------------------------------------
# Generalized Gaussian (Spec G1)
# ---------------------------------------------------------------------------------------------------------
def _check_q(q: float) -> float:
    """Norm exponent q in [1, inf] (math.inf allowed)."""
    return check_in_range(q, "q", 1.0, math.inf)


def _check_kappa(kappa: float) -> float:
    """Regularity constant kappa >= 1 of the noise norm (Juditsky-Nemirovski; kappa = 1 for l_2).

    kappa < 1 is impossible (the smoothness inequality at x = 0 forces kappa_+ >= 1) and would calibrate too
    little noise, so it is rejected rather than used.
    """
    kap = check_positive(kappa, "kappa")
    if kap < 1.0:
        raise ValueError(
            f"kappa must lie in [1, inf) (the regularity constant of the noise norm, 1 for l_2), got {kap!r}"
        )
    return kap


def generalized_gaussian_noise(
    d: int,
    *,
    q: float,
    sigma: float,
    rng: np.random.Generator,
    size: int | None = None,
) -> np.ndarray:
    r"""Exact sampler for the density :math:`\propto \exp(-\|z\|_q^2/(2\sigma^2))` on :math:`\mathbb R^d`.

    Spec G1 (Bassily, Guzman and Nandi 2021), for any :math:`q \in [1, \infty]` (including
    :math:`q = \ln d` and :math:`q = \infty`).

    Derivation (polar decomposition w.r.t. the :math:`\ell_q` cone measure). Let :math:`B` be the unit
    :math:`\ell_q` ball, :math:`S = \partial B` and :math:`\mu` the cone measure on :math:`S`,
    :math:`\mu(A) = \mathrm{vol}\{t a: a \in A, t \in [0, 1]\}/\mathrm{vol}(B)`. Every
    :math:`z \ne 0` is uniquely :math:`z = r\theta` with :math:`r = \|z\|_q`, :math:`\theta \in S`, and
    the Lebesgue measure factorizes as :math:`dz = d\,\mathrm{vol}(B)\,r^{d-1}dr\,d\mu(\theta)` (the
    volume of :math:`\{r\theta: r \le R, \theta \in A\}` is :math:`R^d \mathrm{vol}(B)\mu(A)`).
    A density :math:`h(\|z\|_q)` therefore makes :math:`\theta \sim \mu` independent of :math:`r`, and
    :math:`r` has density :math:`\propto r^{d-1} h(r)`. For :math:`h(r) = e^{-r^2/(2\sigma^2)}` that is
    the law of :math:`\sigma\sqrt{\chi^2_d}`. Applying the same factorization to the product density
    :math:`\prod_i e^{-|g_i|^q} = e^{-\|g\|_q^q}` (also a function of :math:`\|g\|_q` only) shows
    :math:`g/\|g\|_q \sim \mu` (Schechtman-Zinn 1990; Rachev-Rüschendorf 1991). Hence

    .. math:: Z = \sigma\sqrt{\chi^2_d}\;\frac{g}{\|g\|_q},\qquad g_i \overset{iid}{\sim} c_q e^{-|t|^q},

    with :math:`|g_i| = \mathrm{Gamma}(1/q, 1)^{1/q}` and a random sign. For :math:`q = \infty` the
    product density is the indicator of :math:`[-1, 1]^d`, so :math:`g_i \sim \mathrm{Unif}[-1, 1]`.
    Invariant (used by the tests): :math:`\|Z\|_q^2/\sigma^2 \sim \chi^2_d` *exactly*, so
    :math:`\mathbb E\|Z\|_q^2 = d\sigma^2`.

    Numerics: :math:`\mathrm{Gamma}(1/q)^{1/q}` underflows for large :math:`q` (shape :math:`\to 0`), so
    we use the identity :math:`\mathrm{Gamma}(a) \overset{d}{=} \mathrm{Gamma}(a + 1)\,U^{1/a}`, which
    with :math:`a = 1/q` gives :math:`|g_i| = \mathrm{Gamma}(1 + 1/q)^{1/q}\,U` (no underflow; tends to
    :math:`U` as :math:`q\to\infty`). :math:`\|g\|_q` is computed after scaling by :math:`\max_i|g_i|`.

    Parameters
    ----------
    d : int
        Dimension, >= 1.
    q : float
        Norm exponent in :math:`[1, \infty]`.
    sigma : float
        Scale, > 0.
    rng : numpy.random.Generator
    size : int, optional
        Number of i.i.d. draws; returns ``(size, d)`` (``(d,)`` when None).
    """
    dd = check_size(d, "d", lo=1)
    qq = _check_q(q)
    sig = check_positive(sigma, "sigma")
    gen = check_rng(rng)
    m = None if size is None else check_size(size, "size", lo=1, per_entry=dd)
    mm = 1 if m is None else m
    if math.isinf(qq):
        g = gen.uniform(-1.0, 1.0, size=(mm, dd))
    else:
        mag = gen.gamma(1.0 + 1.0 / qq, 1.0, size=(mm, dd)) ** (1.0 / qq) * gen.random((mm, dd))
        sign = np.where(gen.random((mm, dd)) < 0.5, -1.0, 1.0)
        g = sign * mag
    norm = _lq_norm(g, qq, axis=1)
    # ||g||_q = 0 has probability zero; guard against the measure-zero float event anyway.
    norm = np.where(norm > 0, norm, 1.0)
    r = sig * np.sqrt(gen.chisquare(dd, size=mm))
    z = g * (r / norm)[:, None]
    return z[0] if m is None else z


def generalized_gaussian_mechanism(
    value: np.ndarray,
    *,
    q: float,
    sigma: float,
    rng: np.random.Generator,
    size: int | None = None,
) -> np.ndarray:
    r"""GG mechanism: ``value + Z`` with :math:`Z \propto \exp(-\|z\|_q^2/(2\sigma^2))` (Spec G1).

    Privacy map (Bassily, Guzman and Nandi 2021; spec privacy.md G1): if :math:`\|f(S) - f(S')\|_q \le
    \Delta` and :math:`\|\cdot\|_q^2` is :math:`\kappa`-regular in the sense
    :math:`\|x+h\|^2 \le \|x\|^2 + \langle\nabla\|x\|^2, h\rangle + \kappa\|h\|^2` (:math:`\kappa = q - 1`
    for :math:`q \ge 2`, :math:`\kappa = 1` for :math:`q = 2`), the release satisfies Rényi DP
    :math:`D_\alpha \le \kappa\alpha^2\Delta^2/(2\sigma^2(\alpha-1))` for all :math:`\alpha > 1`, hence
    :math:`(\varepsilon, \delta)`-DP with :math:`\varepsilon =` :func:`gg_epsilon`
    ``(sigma, sensitivity=Delta, delta=delta, kappa=kappa)``. Calibrate with :func:`gg_sigma_exact` (meets the
    target exactly under this bound; the library default) or :func:`gg_sigma` (the paper's formula, slightly too
    small).

    Parameters
    ----------
    value : array of shape (d,)
    q : float
        Norm exponent in :math:`[1, \infty]`.
    sigma : float
    rng : numpy.random.Generator
    size : int, optional
        Number of independent releases, stacked on axis 0.
    """
    v = check_array(value, "value", ndim=1)
    return v + generalized_gaussian_noise(v.shape[0], q=q, sigma=sigma, rng=rng, size=size)


def gg_sigma(sensitivity: float, *, epsilon: float, delta: float, kappa: float) -> float:
    r"""The paper's GG calibration :math:`\sigma^2 = 2\kappa\log(1/\delta)\Delta^2/\varepsilon^2` (Spec G1).

    Under the Rényi bound of :func:`gg_epsilon` this calibration is **not** exactly
    :math:`(\varepsilon, \delta)`-DP: with :math:`L = \log(1/\delta)` it gives
    :math:`c = \kappa\Delta^2/(2\sigma^2) = \varepsilon^2/(4L)` and the optimized RDP conversion yields
    :math:`\varepsilon' = \varepsilon\left(\sqrt{1 + \varepsilon^2/(4L^2)} + \varepsilon/(2L)\right) >
    \varepsilon` (e.g. 1.0444 for :math:`\varepsilon = 1, \delta = 10^{-5}`; the excess is
    :math:`\approx \varepsilon^2/(2L)`). Kept to reproduce the paper; the library default for
    calibration is :func:`gg_sigma_exact`.
    """
    sens = check_positive(sensitivity, "sensitivity")
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, allow_zero=False)
    kap = _check_kappa(kappa)
    return math.sqrt(2.0 * kap * math.log(1.0 / dlt)) * sens / eps


def gg_epsilon(sigma: float, *, sensitivity: float, delta: float, kappa: float) -> float:
    r"""Epsilon implied by the GG Rényi bound via the standard RDP conversion (Spec G1, P5).

    Bound: :math:`D_\alpha \le c\,\alpha^2/(\alpha - 1)` with :math:`c = \kappa\Delta^2/(2\sigma^2)`.
    Conversion (Mironov 2017, Prop. 3): :math:`\varepsilon(\alpha) = D_\alpha + L/(\alpha - 1)`,
    :math:`L = \log(1/\delta)`. With :math:`\beta = \alpha - 1 > 0`,
    :math:`\alpha^2/\beta = \beta + 2 + 1/\beta`, so

    .. math:: \varepsilon(\beta) = c\beta + 2c + (c + L)/\beta,

    minimized at :math:`\beta^* = \sqrt{(c + L)/c}`, giving the closed form

    .. math:: \varepsilon^* = 2c + 2\sqrt{c\,(c + L)}.

    Parameters
    ----------
    sigma : float
        GG scale, > 0.
    sensitivity : float
        :math:`\Delta > 0` in the norm :math:`\|\cdot\|_q`.
    delta : float
        In (0, 1).
    kappa : float
        Regularity constant, >= 1 (:func:`dpsco_lib.geometry.regularity_constant`).
    """
    sig = check_positive(sigma, "sigma")
    sens = check_positive(sensitivity, "sensitivity")
    dlt = check_delta(delta, allow_zero=False)
    kap = _check_kappa(kappa)
    c = kap * sens * sens / (2.0 * sig * sig)
    big_l = -math.log(dlt)
    return 2.0 * c + 2.0 * math.sqrt(c * (c + big_l))


def gg_sigma_exact(sensitivity: float, *, epsilon: float, delta: float, kappa: float) -> float:
    r"""Smallest GG :math:`\sigma` whose Rényi bound converts to exactly :math:`(\varepsilon, \delta)` (G1).

    Solving :math:`2c + 2\sqrt{c(c + L)} = \varepsilon` (see :func:`gg_epsilon`): squaring
    :math:`2\sqrt{c(c+L)} = \varepsilon - 2c` gives :math:`4cL = \varepsilon^2 - 4\varepsilon c`, so
    :math:`c = \varepsilon^2/(4(L + \varepsilon))` (and :math:`\varepsilon - 2c > 0` always holds), i.e.

    .. math:: \sigma^2 = \frac{2\kappa\,(\log(1/\delta) + \varepsilon)\,\Delta^2}{\varepsilon^2}.

    This is the paper's :func:`gg_sigma` with :math:`\log(1/\delta)` replaced by
    :math:`\log(1/\delta) + \varepsilon`. The closed form is used instead of a numerical root finder
    (the tests cross-check it against :func:`scipy.optimize.brentq` on :func:`gg_epsilon`); it is made
    conservative in floating point (``gg_epsilon(result) <= epsilon`` always). **This is the library's
    default GG calibration.**
    """
    sens = check_positive(sensitivity, "sensitivity")
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, allow_zero=False)
    kap = _check_kappa(kappa)
    sigma = math.sqrt(2.0 * kap * (math.log(1.0 / dlt) + eps)) * sens / eps
    while gg_epsilon(sigma, sensitivity=sens, delta=dlt, kappa=kap) > eps:
        sigma = float(np.nextafter(sigma, math.inf))
    return sigma
