"""Least squares with bounded features and a closed-form population risk (Spec S1, F1-F3, A5).

f(x; (a, b)) = (<a, x> - b)^2 / 2 over a feasible set X of the l_p setup.  With known second moments
Sigma = E[a a^T], mu = E[b a], s2 = E[b^2] the population risk is exact:

    F(x) = (x^T Sigma x - 2 mu^T x + s2) / 2,        grad F(x) = Sigma x - mu.

Constants for records with ||a||_q <= B_a (q the dual exponent of p) and |b| <= B_b, and
R = max_{x in X} ||x||_p (Hölder: |<a, x>| <= B_a R):

    L0 = B_a (B_a R + B_b)    since grad f = (<a, x> - b) a,
    L1 = B_a^2                since ||(<a, x - x'>) a||_q <= B_a^2 ||x - x'||_p,
    L2 = 0                    (the Hessian a a^T is constant).

Sigma is stored as diag(sigma_diag) + F F^T (a factor F of shape (d, k)), so structured instances in
d = 10^4 never form a dense d x d matrix.

References: Nemirovski & Yudin (1983), *Problem Complexity and Method Efficiency in Optimization*
(rate table and lower-bound constructions); Nemirovski, Juditsky, Lan & Shapiro (2009), SIAM J. Optim.
(stochastic mirror descent).

The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpsco_lib._optional import require
from dpsco_lib._validation import check_array, check_int, check_positive, check_rng, check_size
from dpsco_lib.geometry.norms import check_exponent, dual_exponent, lp_norm, lp_norms_exceed
from dpsco_lib.geometry.sets import FeasibleSet, L1Ball, LpBall, Simplex
from dpsco_lib.problems.base import Problem
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.stream import BlockSampler, IntegerDraw

__all__ = ["LeastSquares", "hard_least_squares", "max_feasible_norm", "random_least_squares"]

_RTOL = 1e-9
_dot = np.dot
_mul = np.multiply
_LOW_RANK = 50  # factors with more columns are passed to cvxpy as a dense quadratic form


def row_grad_oracle(problem: Any) -> Any:
    """``problem._grad_row`` when ``problem`` is a LeastSquares whose ``_grad`` and ``_grad_row`` are the
    class's own (not overridden by a subclass), else None (any other problem).  Internal: lets the single-pass
    loops skip the per-step one-record Dataset while computing bit-identical gradients."""
    if not isinstance(problem, LeastSquares):
        return None
    cls = type(problem)
    if cls._grad is LeastSquares._grad and cls._grad_row is LeastSquares._grad_row:
        return problem._grad_row
    return None


def max_feasible_norm(fset: Any, p: float) -> float:
    """R = max_{x in X} ||x||_p (about the origin): 1 on the simplex, the radius for centred balls,
    the largest vertex norm for a polytope."""
    if isinstance(fset, Simplex):
        return 1.0
    if isinstance(fset, LpBall):
        return float(fset.center_radius(p))
    return float(np.max(lp_norm(fset.vertices(), p, axis=-1)))


@dataclass(frozen=True)
class _PlantedVertexSampler(BlockSampler):
    """a = r_1 (alpha e_1 + beta r'/(d-1)^(1/q)), b = c r_1 (r_1, r' Rademacher), for 1 <= p <= 2.

    Draws: r_1 for all n records (``integers(0, 2, size=n)``), then r' (``integers(0, 2, size=(n, d))``,
    column 0 drawn and overwritten); records are row-wise in the draws, so they stream bit for bit.
    """

    d: int
    q: float
    alpha: float
    beta: float
    c: float

    def draws(self) -> tuple[IntegerDraw, ...]:
        return (IntegerDraw(0, 2), IntegerDraw(0, 2, self.d))

    def n_features(self) -> int:
        return self.d

    def fill(self, raw: tuple[np.ndarray, ...], X: np.ndarray, y: np.ndarray | None) -> None:
        # the float64 operations of X = (2 r' - 1) (beta scale); X[:, 0] = alpha; X *= r1; y = c r1, in place
        scale = 1.0 if math.isinf(self.q) else (self.d - 1) ** (-1.0 / self.q)
        r1 = 2.0 * raw[0] - 1.0
        np.multiply(raw[1], 2.0, out=X)
        X -= 1.0
        X *= self.beta * scale
        X[:, 0] = self.alpha
        X *= r1[:, None]
        np.multiply(self.c, r1, out=y)


@dataclass(frozen=True)
class _SignedCoordinateSampler(BlockSampler):
    """a = s e_J, b = c s sigma_J (J uniform, s Rademacher), for p = inf.

    Draws: J for all n records (``integers(0, d, size=n)``), then s (``integers(0, 2, size=n)``); records are
    row-wise in the draws, so they stream bit for bit.
    """

    sigma: np.ndarray
    c: float

    def draws(self) -> tuple[IntegerDraw, ...]:
        return (IntegerDraw(0, self.sigma.size), IntegerDraw(0, 2))

    def n_features(self) -> int:
        return int(self.sigma.size)

    def fill(self, raw: tuple[np.ndarray, ...], X: np.ndarray, y: np.ndarray | None) -> None:
        J = raw[0]
        s = 2.0 * raw[1] - 1.0
        X[...] = 0.0
        X[np.arange(J.size), J] = s
        np.multiply(self.c * s, self.sigma[J], out=y)


@dataclass(frozen=True)
class _MixtureSampler:
    """a = M r / c_M (r Rademacher in R^k), b = <a, w> + noise * xi (xi Rademacher)."""

    M: np.ndarray
    w: np.ndarray
    noise: float

    def __call__(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        r = 2.0 * rng.integers(0, 2, size=(n, self.M.shape[1])) - 1.0
        X = r @ self.M.T
        xi = 2.0 * rng.integers(0, 2, size=n) - 1.0
        return X, X @ self.w + self.noise * xi


class LeastSquares(Problem):
    """Least squares f(x; (a, b)) = (<a, x> - b)^2/2 with exact population risk (Spec S1).

    Parameters
    ----------
    feasible_set : FeasibleSet
        X (Simplex, L1Ball, LpBall or Polytope).
    p : float
        Setup norm; features are bounded in the dual norm q.
    feature_bound, label_bound : float
        B_a >= ||a||_q and B_b >= |b| for every admissible record.
    sigma_diag : array (d,), sigma_factor : array (d, k)
        Sigma = E[a a^T] = diag(sigma_diag) + sigma_factor sigma_factor^T.
    mu : array (d,)
        E[b a].
    s2 : float
        E[b^2].
    sampler : callable (n, rng) -> (X, y)
        Draws records from the distribution with these moments (within the bounds).
    known_optimum : array (d,), optional
        A closed-form population minimizer (the planted instances); cvxpy is then not needed, and
        tests cross-check it against cvxpy.
    """

    def __init__(
        self,
        feasible_set: Any,
        p: float,
        *,
        feature_bound: float,
        label_bound: float,
        sigma_diag: Any,
        sigma_factor: Any | None,
        mu: Any,
        s2: float,
        sampler: Any,
        known_optimum: Any | None = None,
        spec: str = "S1",
        name: str = "least_squares",
    ) -> None:
        self.feasible_set = feasible_set
        self.p = check_exponent(p)
        d = feasible_set.d
        self.B_a = check_positive(feature_bound, "feature_bound")
        self.B_b = check_positive(label_bound, "label_bound", allow_zero=True)
        self.sigma_diag = check_array(sigma_diag, "sigma_diag", shape=(d,))
        if np.any(self.sigma_diag < 0):
            raise ValueError("sigma_diag must be >= 0 (Sigma is a second-moment matrix)")
        self.sigma_factor = (
            np.zeros((d, 0)) if sigma_factor is None else check_array(sigma_factor, "sigma_factor", ndim=2, min_size=0)
        )
        if self.sigma_factor.shape[0] != d:
            raise ValueError(f"sigma_factor must have shape (d, k) with d = {d}, got {self.sigma_factor.shape}")
        self.mu = check_array(mu, "mu", shape=(d,))
        self.s2 = check_positive(s2, "s2", allow_zero=True)
        self.sampler = sampler
        self.spec = spec
        self.name = name
        self.R = max_feasible_norm(feasible_set, self.p)
        self.L0 = self.B_a * (self.B_a * self.R + self.B_b)
        self.L1 = self.B_a**2
        self.L2 = 0.0
        self.exact_population = True
        self._cache = {}
        if known_optimum is not None:
            xs = check_array(known_optimum, "known_optimum", shape=(d,))
            self._cache["opt"] = (xs, float(self._population_risk(xs)))

    def __repr__(self) -> str:
        return f"LeastSquares({self.name}, {self.feasible_set!r}, p={self.p}, L0={self.L0:.4g})"

    def _bounds_text(self) -> str:
        return f"||a||_{self.q} <= {self.B_a}, |b| <= {self.B_b}"

    # ---- oracle
    def _loss(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        r = data.X @ x - data.y
        return 0.5 * r * r

    def _grad(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return (data.X @ x - data.y)[:, None] * data.X

    def _mean_grad(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return (data.X @ x - data.y) @ data.X / data.n

    def _grad_row(self, x: np.ndarray, X: np.ndarray, y: np.ndarray, t: int, out: np.ndarray) -> np.ndarray:
        """Internal single-pass fast path: ``_grad(x, data[t:t+1])[0]`` written into ``out`` (1-D, length d).

        ``X``, ``y`` are the arrays of a validated dataset (x 1-D float64).  The float64 operations are those of
        ``_grad``: the inner product <X[t], x> (``np.dot`` of two 1-D float64 arrays and the (1, d) @ (d,)
        matmul of ``_grad`` run the same BLAS dot kernel on the same memory), the residual subtraction, and
        the residual-times-row products (IEEE multiplication commutes).  The result is bit-identical without
        building a one-record Dataset; tests/lib/problems/test_least_squares.py checks this.
        """
        row = X[t]
        return _mul(row, _dot(row, x) - y[t], out)

    # ---- data
    def _sample(self, n: int, rng: np.random.Generator) -> Dataset:
        X, y = self.sampler(n, rng)
        return Dataset(X, y)

    def _block_sampler(self) -> BlockSampler | None:
        """The sampler when it is a :class:`BlockSampler` and ``_sample`` is this class's (streaming data)."""
        if isinstance(self.sampler, BlockSampler) and type(self)._sample is LeastSquares._sample:
            return self.sampler
        return None

    def _row_violation(self, data: Dataset) -> np.ndarray:
        # the same booleans as lp_norm(data.X, q) > B_a (1 + rtol), without pow for integer q (norms.py)
        too_long = lp_norms_exceed(data.X, self.q, self.B_a * (1 + _RTOL))
        return too_long | (np.abs(data.y) > self.B_b * (1 + _RTOL))

    def _clip_rows(self, data: Dataset, bad: np.ndarray) -> Dataset:
        """Rescale a to ||a||_q = B_a and clip b to [-B_b, B_b] (only the offending records)."""
        X = np.array(data.X)
        nrm = np.asarray(lp_norm(X, self.q, axis=-1))
        scale = np.where(nrm > self.B_a, self.B_a / np.maximum(nrm, 1e-300), 1.0)
        X *= scale[:, None]
        y = np.clip(data.y, -self.B_b, self.B_b)
        return Dataset(X, y)

    # ---- population
    def sigma_times(self, x: np.ndarray) -> np.ndarray:
        """Sigma x without forming Sigma."""
        return self.sigma_diag * x + self.sigma_factor @ (self.sigma_factor.T @ x)

    def sigma_dense(self) -> np.ndarray:
        """The dense d x d matrix Sigma (small d only)."""
        return np.diag(self.sigma_diag) + self.sigma_factor @ self.sigma_factor.T

    def _population_risk(self, x: np.ndarray) -> float:
        return 0.5 * (float(x @ self.sigma_times(x)) - 2.0 * float(self.mu @ x) + self.s2)

    def _population_grad(self, x: np.ndarray) -> np.ndarray:
        return self.sigma_times(x) - self.mu

    def _cvxpy_population(self, var: Any) -> Any:
        cp = require("cvxpy")

        k = self.sigma_factor.shape[1]
        if k > _LOW_RANK:
            # a dense PSD quadratic goes to Clarabel as a QP (the SOC form of a dense factor is ~20x slower)
            quad = cp.quad_form(var, cp.psd_wrap(self.sigma_dense()))
        else:
            quad = cp.sum(cp.multiply(self.sigma_diag, cp.square(var)))
            if k > 0:
                quad = quad + cp.sum_squares(self.sigma_factor.T @ var)
        return 0.5 * quad - self.mu @ var + 0.5 * self.s2


def hard_least_squares(p: float, d: int, *, c: float = 2.0, set_kind: str = "simplex", seed: int = 0) -> LeastSquares:
    """Least-squares instances that are hard for mirror descent in each l_p geometry (Spec S1).

    The population minimizer sits at the point of X farthest from the mirror-descent start in the
    Bregman geometry of the setup, and the population gradient there is bounded away from 0
    (a sharp, boundary optimum): averaged SMD with the theory step then pays its full
    D_psi(x*, x_1)/(eta T) + eta L0^2/2 budget, so the measured excess risk follows the
    Nemirovski-Yudin rate instead of the faster rates of easy (interior, strongly convex) instances.

    p in [1, 2] (q = p/(p-1), alpha = beta = 2^(-1/q), r_1, r' Rademacher):
        a = r_1 (alpha e_1 + beta r'/(d-1)^(1/q)) with r'_1 = 0, so ||a||_q = 1 exactly; b = c r_1.
        Sigma = alpha^2 e_1 e_1^T + beta^2 (d-1)^(-2/q) (I - e_1 e_1^T), mu = c alpha e_1, s2 = c^2.
        X = Simplex(d) (``set_kind="simplex"``) or L1Ball(d) for p = 1, LpBall(d, p) for 1 < p <= 2.
        x* = e_1 (grad F(e_1) = -alpha (c - alpha) e_1 lies in minus the normal cone), F* = (c - alpha)^2/2.
        Bregman distance from the start: ln d (entropy, uniform start) for p = 1; 1/(2(p-1)) for the
        p-norm map started at 0: the ln d versus dimension-free contrast of the rate table.
    p = inf (box [-1, 1]^d, dual norm l1):
        a = s e_J, b = c s sigma_J with J uniform, s Rademacher and a planted sign vector sigma
        (from ``seed``), so ||a||_1 = 1; Sigma = I/d, mu = c sigma/d, s2 = c^2; x* = sigma, F* = (c-1)^2/2.
        Euclidean distance from the start 0 is sqrt(d): the sqrt(d/n) rate.  (This is the classical
        lower-bound construction: each coordinate is seen n/d times.)

    Constants: B_a = 1, B_b = c, R = 1, so L0 = 1 + c, L1 = 1, L2 = 0.
    """
    p = check_exponent(p)
    d = check_size(d, "d", lo=2)
    c = check_positive(c, "c")
    if c < 1.0:
        raise ValueError(f"c must be >= 1 so that the optimum is the planted boundary point, got {c}")
    if math.isinf(p):
        sigma = 2.0 * np.random.default_rng(check_int(seed, "seed", lo=0)).integers(0, 2, size=d) - 1.0
        return LeastSquares(
            LpBall(d, math.inf),
            p,
            feature_bound=1.0,
            label_bound=c,
            sigma_diag=np.full(d, 1.0 / d),
            sigma_factor=None,
            mu=c * sigma / d,
            s2=c * c,
            sampler=_SignedCoordinateSampler(sigma, c),
            known_optimum=sigma,
            name=f"hard_ls_pinf_d{d}",
        )
    if p > 2.0:
        raise ValueError(f"p must lie in [1, 2] or be inf for hard_least_squares, got {p}")
    q = dual_exponent(p)
    alpha = beta = 1.0 if math.isinf(q) else 2.0 ** (-1.0 / q)
    scale2 = 1.0 if math.isinf(q) else (d - 1) ** (-2.0 / q)
    diag = np.full(d, beta**2 * scale2)
    diag[0] = alpha**2
    mu = np.zeros(d)
    mu[0] = c * alpha
    if p == 1.0:
        if set_kind == "simplex":
            fset: Any = Simplex(d)
        elif set_kind == "l1ball":
            fset = L1Ball(d)
        else:
            raise ValueError(f"set_kind must be 'simplex' or 'l1ball', got {set_kind!r}")
    else:
        fset = LpBall(d, p)
    x_star = np.zeros(d)
    x_star[0] = 1.0
    return LeastSquares(
        fset,
        p,
        feature_bound=1.0,
        label_bound=c,
        sigma_diag=diag,
        sigma_factor=None,
        mu=mu,
        s2=c * c,
        sampler=_PlantedVertexSampler(d, q, alpha, beta, c),
        known_optimum=x_star,
        name=f"hard_ls_p{p:g}_d{d}",
    )


def random_least_squares(
    feasible_set: Any,
    p: float,
    rng: np.random.Generator,
    *,
    k: int | None = None,
    w_norm: float = 2.0,
    noise: float = 0.1,
) -> LeastSquares:
    """A random least-squares instance with correlated features and exact moments (tests, Spec S1).

    a = M r / c_M with M (d, k) Gaussian, r Rademacher in R^k and c_M = sum_j ||M_{:, j}||_q, so that
    ||a||_q <= sum_j |r_j| ||M_{:, j}||_q / c_M = 1; b = <a, w> + noise * xi with ||w||_p = w_norm and
    xi Rademacher, so |b| <= w_norm + noise.  Sigma = M M^T / c_M^2, mu = Sigma w,
    s2 = w^T Sigma w + noise^2.  ``w_norm > R`` typically puts the optimum on the boundary.
    """
    if not isinstance(feasible_set, FeasibleSet):
        raise TypeError(f"feasible_set must be a dpsco_lib.geometry FeasibleSet, got {type(feasible_set).__name__}")
    rng = check_rng(rng)
    p = check_exponent(p)
    d = feasible_set.d
    k = d if k is None else check_int(k, "k", lo=1)
    q = dual_exponent(p)
    M = rng.standard_normal((d, k))
    M /= float(np.sum(lp_norm(M.T, q, axis=-1)))
    w = rng.standard_normal(d)
    w *= check_positive(w_norm, "w_norm") / float(lp_norm(w, p))
    noise = check_positive(noise, "noise", allow_zero=True)
    Sw = M @ (M.T @ w)
    return LeastSquares(
        feasible_set,
        p,
        feature_bound=1.0,
        label_bound=w_norm + noise,
        sigma_diag=np.zeros(d),
        sigma_factor=M,
        mu=Sw,
        s2=float(w @ Sw) + noise**2,
        sampler=_MixtureSampler(M, w, noise),
        name=f"random_ls_d{d}",
    )
