"""Logistic regression and a nonconvex robust regression (Spec S1/A5 and N1).

Logistic: f(x; (a, y)) = log(1 + exp(-y <a, x>)), y in {-1, +1}, ||a||_q <= B_a::

    L0 = B_a,  L1 = B_a^2/4  (sigma' <= 1/4),  L2 = B_a^3/(6 sqrt 3)  (|sigma''| <= 1/(6 sqrt 3)).

The population objective has no closed form: it is a large independent sample drawn once (from a
fixed seed) and treated as the population, so ``exact_population`` is False.

Robust regression (N1): f(x; (a, b)) = phi(<a, x> - b) with phi(t) = t^2/(1 + t^2) (nonconvex,
bounded by 1), over the l1 ball, ||a||_inf <= B_a::

    |phi'| <= 9/(8 sqrt 3) (at t = 1/sqrt 3), |phi''| <= 2 (at t = 0),
    |phi'''| <= 24 t0 (1 - t0^2)/(1 + t0^2)^4 at t0 = tan(pi/10) (~4.6686),

so L0 = 9 B_a/(8 sqrt 3), L1 = 2 B_a^2, L2 = |phi'''|_max B_a^3 (w.r.t. ||.||_1, gradients in l_inf).
Planted model b = <a, x_true> + sigma xi, xi ~ U[-1, 1] independent of a.  For fixed a the map
s -> E_xi phi(s - sigma xi) = 1 - (arctan(s + sigma) - arctan(s - sigma))/(2 sigma) is minimized at
s = 0 (phi even and increasing in |t|, the uniform density symmetric and unimodal: Anderson's lemma
in one dimension), hence x_true is a global population minimizer and F* = 1 - arctan(sigma)/sigma
exactly.  F(x) for other x averages that closed form over a large fixed sample of features.

Reference for N1: Bassily, Guzmán & Menart (2021), "Differentially private stochastic optimization:
new results in convex and non-convex settings", NeurIPS.

The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import expit

from dpsco_lib._optional import require
from dpsco_lib._validation import check_array, check_int, check_positive, check_rng, check_size
from dpsco_lib.geometry.norms import check_exponent, dual_exponent, lp_norm, lp_norms_exceed
from dpsco_lib.geometry.sets import FeasibleSet, L1Ball
from dpsco_lib.problems.base import Problem
from dpsco_lib.problems.dataset import Dataset

__all__ = [
    "PHI_D1_MAX",
    "PHI_D2_MAX",
    "PHI_D3_MAX",
    "LogisticRegression",
    "RobustRegression",
    "random_logistic",
]

_RTOL = 1e-9
SIGMOID_D1_MAX = 0.25
SIGMOID_D2_MAX = 1.0 / (6.0 * math.sqrt(3.0))
PHI_D1_MAX = 9.0 / (8.0 * math.sqrt(3.0))
PHI_D2_MAX = 2.0
_T0 = math.tan(math.pi / 10.0)
PHI_D3_MAX = 24.0 * _T0 * (1.0 - _T0**2) / (1.0 + _T0**2) ** 4 * (1.0 + 1e-12)


@dataclass(frozen=True)
class _LogisticSampler:
    """a = M r / c_M (||a||_q <= 1), y = +1 with probability sigmoid(<a, w>)."""

    M: np.ndarray
    w: np.ndarray

    def __call__(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        r = 2.0 * rng.integers(0, 2, size=(n, self.M.shape[1])) - 1.0
        X = r @ self.M.T
        y = np.where(rng.random(n) < expit(X @ self.w), 1.0, -1.0)
        return X, y


class LogisticRegression(Problem):
    """Logistic regression over a feasible set of the l_p setup; population = a large sample.

    Parameters
    ----------
    feasible_set, p : the setup.
    feature_bound : float
        B_a >= ||a||_q of every admissible record.
    sampler : callable (n, rng) -> (X, y)
        The data distribution (labels in {-1, +1}).
    population_size : int
        Size N of the independent sample used as the population (drawn from ``population_seed``).
        The exact optimum of that sample costs one cvxpy/Clarabel solve that grows quickly with N
        (d = 50: about 1 s at N = 2000, 7 s at 5000, 85 s at 20000), cached on the instance.
    """

    def __init__(
        self,
        feasible_set: Any,
        p: float,
        *,
        feature_bound: float,
        sampler: Any,
        population_size: int = 5_000,
        population_seed: int = 12345,
        spec: str = "A5",
        name: str = "logistic",
    ) -> None:
        self.feasible_set = feasible_set
        self.p = check_exponent(p)
        self.B_a = check_positive(feature_bound, "feature_bound")
        self.sampler = sampler
        self.L0 = self.B_a
        self.L1 = SIGMOID_D1_MAX * self.B_a**2
        self.L2 = SIGMOID_D2_MAX * self.B_a**3
        self.exact_population = False
        self.spec = spec
        self.name = name
        self._cache = {}
        N = check_int(population_size, "population_size", lo=1)
        Xp, yp = sampler(N, np.random.default_rng(check_int(population_seed, "population_seed", lo=0)))
        self.population = Dataset(Xp, yp)

    def _bounds_text(self) -> str:
        return f"||a||_{self.q} <= {self.B_a}, y in {{-1, +1}}"

    def _loss(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return np.logaddexp(0.0, -data.y * (data.X @ x))

    def _grad(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return (-data.y * expit(-data.y * (data.X @ x)))[:, None] * data.X

    def _mean_grad(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return (-data.y * expit(-data.y * (data.X @ x))) @ data.X / data.n

    def _sample(self, n: int, rng: np.random.Generator) -> Dataset:
        X, y = self.sampler(n, rng)
        return Dataset(X, y)

    def _row_violation(self, data: Dataset) -> np.ndarray:
        # the same booleans as lp_norm(data.X, q) > B_a (1 + rtol), without pow for integer q (norms.py)
        too_long = lp_norms_exceed(data.X, self.q, self.B_a * (1 + _RTOL))
        return too_long | (np.abs(np.abs(data.y) - 1.0) > 0)

    def _clip_rows(self, data: Dataset, bad: np.ndarray) -> Dataset:
        """Rescale a to ||a||_q = B_a; labels are mapped to sign(y) (0 -> +1)."""
        X = np.array(data.X)
        nrm = np.asarray(lp_norm(X, self.q, axis=-1))
        X *= np.where(nrm > self.B_a, self.B_a / np.maximum(nrm, 1e-300), 1.0)[:, None]
        return Dataset(X, np.where(data.y < 0, -1.0, 1.0))

    def _population_risk(self, x: np.ndarray) -> float:
        return float(np.mean(self._loss(x, self.population)))

    def _population_grad(self, x: np.ndarray) -> np.ndarray:
        return self._mean_grad(x, self.population)

    def _cvxpy_model(self, var: Any) -> tuple[Any, list]:
        cp = require("cvxpy")

        P = self.population
        # margins as an auxiliary variable: Clarabel is ~1.5x faster on this form
        z = cp.Variable(P.n)
        return cp.sum(cp.logistic(z)) / P.n, [z == -cp.multiply(P.y, P.X @ var)]


def random_logistic(
    feasible_set: Any,
    p: float,
    rng: np.random.Generator,
    *,
    k: int | None = None,
    w_norm: float = 4.0,
    population_size: int = 5_000,
    population_seed: int = 12345,
) -> LogisticRegression:
    """Logistic regression with a = M r/c_M (||a||_q <= 1, as in ``random_least_squares``) and labels
    from a logistic model with ||w||_p = w_norm (so the optimum is typically on the boundary of X)."""
    if not isinstance(feasible_set, FeasibleSet):
        raise TypeError(f"feasible_set must be a dpsco_lib.geometry FeasibleSet, got {type(feasible_set).__name__}")
    rng = check_rng(rng)
    p = check_exponent(p)
    d = feasible_set.d
    k = d if k is None else check_int(k, "k", lo=1)
    M = rng.standard_normal((d, k))
    M /= float(np.sum(lp_norm(M.T, dual_exponent(p), axis=-1)))
    w = rng.standard_normal(d)
    w *= check_positive(w_norm, "w_norm") / float(lp_norm(w, p))
    return LogisticRegression(
        feasible_set, p, feature_bound=1.0, sampler=_LogisticSampler(M, w),
        population_size=population_size, population_seed=population_seed, name=f"random_logistic_d{d}",
    )


@dataclass(frozen=True)
class _RobustSampler:
    x_true: np.ndarray
    noise: float

    def __call__(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        X = 2.0 * rng.integers(0, 2, size=(n, self.x_true.size)) - 1.0
        return X, X @ self.x_true + self.noise * rng.uniform(-1.0, 1.0, size=n)


def _phi(t: np.ndarray) -> np.ndarray:
    t2 = t * t
    return t2 / (1.0 + t2)


def _dphi(t: np.ndarray) -> np.ndarray:
    return 2.0 * t / (1.0 + t * t) ** 2


class RobustRegression(Problem):
    """Nonconvex robust regression phi(<a, x> - b), phi(t) = t^2/(1+t^2), over the l1 ball (Spec N1).

    Rademacher features (||a||_inf = 1 = B_a), planted x_true (||x_true||_1 <= radius), uniform noise of
    half-width ``noise`` > 0.  See the module docstring for the constants and the exact optimum.
    ``population_risk`` averages the exact noise-integrated loss over ``population_size`` fixed feature
    draws (exact_population False; F* is exact).
    """

    convex = False

    def __init__(
        self,
        d: int,
        *,
        radius: float = 1.0,
        x_true: Any | None = None,
        noise: float = 0.5,
        population_size: int = 20_000,
        population_seed: int = 12345,
        seed: int = 0,
    ) -> None:
        d = check_size(d, "d", lo=1)
        self.feasible_set = L1Ball(d, radius)
        self.p = 1.0
        if x_true is None:  # a 3-sparse planted point in the interior of the ball
            rng = np.random.default_rng(check_int(seed, "seed", lo=0))
            x_true = np.zeros(d)
            idx = rng.choice(d, size=min(3, d), replace=False)
            x_true[idx] = rng.choice([-1.0, 1.0], size=idx.size) * (0.8 * radius / idx.size)
        self.x_true = check_array(x_true, "x_true", shape=(d,))
        if float(np.abs(self.x_true).sum()) > radius * (1 + 1e-12):
            raise ValueError(f"x_true must lie in the l1 ball of radius {radius}")
        self.noise = check_positive(noise, "noise")
        self.B_a = 1.0
        self.B_b = float(np.abs(self.x_true).sum()) + self.noise
        self.L0 = PHI_D1_MAX * self.B_a
        self.L1 = PHI_D2_MAX * self.B_a**2
        self.L2 = PHI_D3_MAX * self.B_a**3
        self.exact_population = False
        self.spec = "N1"
        self.name = f"robust_regression_d{d}"
        self.sampler = _RobustSampler(self.x_true, self.noise)
        N = check_int(population_size, "population_size", lo=1)
        prng = np.random.default_rng(check_int(population_seed, "population_seed", lo=0))
        self._pop_A = 2.0 * prng.integers(0, 2, size=(N, d)) - 1.0
        self.F_star = 1.0 - math.atan(self.noise) / self.noise
        self._cache = {"opt": (self.x_true.copy(), self.F_star)}

    def _bounds_text(self) -> str:
        return f"||a||_inf <= {self.B_a}, |b| <= {self.B_b}"

    def _loss(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return _phi(data.X @ x - data.y)

    def _grad(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return _dphi(data.X @ x - data.y)[:, None] * data.X

    def _mean_grad(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return _dphi(data.X @ x - data.y) @ data.X / data.n

    def _sample(self, n: int, rng: np.random.Generator) -> Dataset:
        X, y = self.sampler(n, rng)
        return Dataset(X, y)

    def _row_violation(self, data: Dataset) -> np.ndarray:
        return (np.max(np.abs(data.X), axis=1) > self.B_a * (1 + _RTOL)) | (np.abs(data.y) > self.B_b * (1 + _RTOL))

    def _clip_rows(self, data: Dataset, bad: np.ndarray) -> Dataset:
        """Clip features to [-B_a, B_a] coordinatewise and b to [-B_b, B_b]."""
        return Dataset(np.clip(data.X, -self.B_a, self.B_a), np.clip(data.y, -self.B_b, self.B_b))

    def _noise_integrated(self, s: np.ndarray) -> np.ndarray:
        sg = self.noise
        return 1.0 - (np.arctan(s + sg) - np.arctan(s - sg)) / (2.0 * sg)

    def _population_risk(self, x: np.ndarray) -> float:
        s = self._pop_A @ (x - self.x_true)
        return float(np.mean(self._noise_integrated(s)))

    def _population_grad(self, x: np.ndarray) -> np.ndarray:
        s = self._pop_A @ (x - self.x_true)
        sg = self.noise
        g = -(1.0 / (1.0 + (s + sg) ** 2) - 1.0 / (1.0 + (s - sg) ** 2)) / (2.0 * sg)
        return g @ self._pop_A / s.size
