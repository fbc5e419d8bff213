r"""Exact samplers for the discrete Laplace and discrete Gaussian distributions (Canonne-Kamath-Steinke 2020).

Textbook float sampling of Laplace noise leaks: the set of doubles ``f(D) + Lap(b)`` can reach differs between
neighbouring inputs, and Mironov (2012) showed the release can reveal ``f(D)`` outright. The samplers here use
no floating point at all: every probability is an exact rational (Python ``fractions.Fraction`` and ints), and
the only randomness is uniform integers drawn from a ``numpy.random.Generator``. They implement Algorithms 1-3
of Canonne, Kamath and Steinke, "The Discrete Gaussian for Differential Privacy" (NeurIPS 2020, CKS20):

* :func:`bernoulli_exp` -- Bernoulli(exp(-gamma)) for a rational gamma >= 0 (CKS20 Alg. 1);
* :func:`discrete_laplace` -- P[X = x] proportional to exp(-|x| / t) on the integers, t = s/t' rational
  (CKS20 Alg. 2);
* :func:`discrete_gaussian` -- P[X = x] proportional to exp(-x^2 / (2 sigma^2)) on the integers, sigma^2
  rational (CKS20 Alg. 3).

Privacy (CKS20): adding discrete Laplace noise of scale t to an integer query of l1 sensitivity Delta is
(Delta/t)-DP; adding discrete Gaussian noise N_Z(0, sigma^2) per coordinate to an integer query of l2
sensitivity Delta is (Delta^2 / (2 sigma^2))-zCDP (CKS20 Thm 14), the same Renyi curve as the continuous
Gaussian, so the RDP accountant certifies it as a ``GaussianEvent(sigma / Delta)``.

Cost: these are pure-Python rejection samplers. At scale 10 (grid steps) on one core they draw about 6e3
discrete Laplace and 3e3 discrete Gaussian samples per second, 2e3 and 5e3 times slower than numpy's float
samplers (``python benchmarks/run.py --only discrete_samplers``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from numbers import Integral, Real

import numpy as np

from dpsco_lib._validation import check_rng, check_size

__all__ = ["bernoulli_exp", "bernoulli_rational", "discrete_gaussian", "discrete_laplace", "to_fraction"]


def to_fraction(value: object, name: str) -> Fraction:
    """An exact positive rational: an int, a Fraction, or a finite float > 0 (converted exactly, no rounding)."""
    if isinstance(value, bool) or not isinstance(value, (Real, Fraction)):
        raise ValueError(f"{name} must be a positive real number (int, float or Fraction), got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    fr = Fraction(value) if not isinstance(value, Fraction) else value
    if fr <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return fr


def _uniform_int(rng: np.random.Generator, n: int) -> int:
    """Uniform on {0, ..., n-1} for an arbitrary Python int n >= 1 (rejection from 32-bit words)."""
    if n < 2**62:
        return int(rng.integers(0, n))
    k = n.bit_length()
    words = (k + 31) // 32
    while True:
        x = 0
        for w in rng.integers(0, 2**32, size=words, dtype=np.uint64):
            x = (x << 32) | int(w)
        x >>= words * 32 - k
        if x < n:
            return x


def bernoulli_rational(p: Fraction, rng: np.random.Generator) -> bool:
    """Exact Bernoulli(p) for a rational p in [0, 1]: U uniform on {0, ..., den-1}, return U < num."""
    return _uniform_int(rng, p.denominator) < p.numerator


def bernoulli_exp(gamma: Fraction, rng: np.random.Generator) -> bool:
    """Exact Bernoulli(exp(-gamma)) for a rational gamma >= 0 (CKS20 Algorithm 1)."""
    gamma = Fraction(gamma)
    if gamma < 0:
        raise ValueError(f"gamma must be >= 0, got {gamma}")
    while gamma > 1:  # exp(-gamma) = exp(-1)^floor(gamma) exp(-(gamma - floor(gamma)))
        if not bernoulli_exp(Fraction(1), rng):
            return False
        gamma -= 1
    k = 1
    while bernoulli_rational(gamma / k, rng):
        k += 1
    return k % 2 == 1


def _geometric_exp1(rng: np.random.Generator) -> int:
    # V with P[V = v] = (1 - e^-1) e^-v: count successes of Bernoulli(e^-1) before the first failure
    v = 0
    while bernoulli_exp(Fraction(1), rng):
        v += 1
    return v


def _one_discrete_laplace(scale: Fraction, rng: np.random.Generator) -> int:
    s, t = scale.denominator, scale.numerator  # scale = t / s
    while True:
        u = _uniform_int(rng, t)
        if not bernoulli_exp(Fraction(u, t), rng):
            continue
        y = (u + t * _geometric_exp1(rng)) // s
        negative = bernoulli_rational(Fraction(1, 2), rng)
        if negative and y == 0:
            continue
        return -y if negative else y


def _one_discrete_gaussian(sigma2: Fraction, rng: np.random.Generator) -> int:
    t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1  # floor(sigma) + 1
    while True:
        y = _one_discrete_laplace(Fraction(t), rng)
        gamma = (abs(y) - sigma2 / t) ** 2 / (2 * sigma2)
        if bernoulli_exp(gamma, rng):
            return y


def _check_count(size: object) -> int:
    if isinstance(size, bool) or not isinstance(size, Integral):
        raise ValueError(f"size must be a non-negative integer, got {size!r}")
    return 0 if int(size) == 0 else check_size(size, "size", lo=1)


def discrete_laplace(scale: object, *, rng: np.random.Generator, size: int = 1) -> np.ndarray:
    r"""``size`` i.i.d. draws of the discrete Laplace distribution with P[X = x] proportional to exp(-|x|/scale).

    Exact (CKS20 Algorithm 2): ``scale`` is converted to a rational exactly (a float is a dyadic rational), and
    only uniform integers are drawn from ``rng``. Returns an int64 array of shape ``(size,)``.
    """
    sc = to_fraction(scale, "scale")
    gen = check_rng(rng)
    n = _check_count(size)
    return np.array([_one_discrete_laplace(sc, gen) for _ in range(n)], dtype=np.int64)


def discrete_gaussian(sigma: object, *, rng: np.random.Generator, size: int = 1) -> np.ndarray:
    r"""``size`` i.i.d. draws of N_Z(0, sigma^2): P[X = x] proportional to exp(-x^2 / (2 sigma^2)), x integer.

    Exact (CKS20 Algorithm 3, expected O(1) discrete Laplace draws per sample): sigma^2 is the exact square of
    the rational ``sigma``. Returns an int64 array of shape ``(size,)``.
    """
    sg = to_fraction(sigma, "sigma")
    gen = check_rng(rng)
    n = _check_count(size)
    return np.array([_one_discrete_gaussian(sg * sg, gen) for _ in range(n)], dtype=np.int64)
