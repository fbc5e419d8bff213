r"""Problems of the lecture-topic notebooks (Spec R1, R2, Z2): losses on a convex body with their constants and
synthetic data generators. Moved here from the algorithm modules (:mod:`~dpsco_lib.algorithms.regularized_exponential`
and :mod:`~dpsco_lib.algorithms.sparse` re-export them under their old names).

* :class:`LogisticRegressionProblem`, :class:`LinearLossProblem`: convex G-Lipschitz (in l2) per-sample losses on
  a convex body K (default the Euclidean ball), the problems of the regularized exponential mechanism. Data is a
  tuple ``(features, labels)`` (logistic) or an ``(n, d)`` array (linear); a
  :class:`~dpsco_lib.problems.Dataset` is accepted too (``X``, ``y``).
* :class:`SparseLogisticSampler`: logistic data with s-sparse features (s-sparse per-sample gradients), the
  ``sampler`` of :class:`~dpsco_lib.problems.LogisticRegression` in the sparse-gradient notebook.

The library works in the idealized real-arithmetic model (float64, numpy's non-cryptographic generator).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special

from dpsco_lib._optional import require
from dpsco_lib._validation import (
    check_array,
    check_in_range,
    check_int,
    check_norm_bound,
    check_positive,
    check_rng,
    check_size,
)
from dpsco_lib.geometry.sets import FeasibleSet, LpBall
from dpsco_lib.problems.dataset import Dataset

__all__ = [
    "LinearLossProblem",
    "LogisticRegressionProblem",
    "SparseLogisticSampler",
    "linear_loss_data",
    "logistic_regression_data",
]


def _feasible_set(d: int, radius: float, feasible_set: FeasibleSet | None) -> FeasibleSet:
    if feasible_set is None:
        return LpBall(d, 2.0, radius)
    if not isinstance(feasible_set, FeasibleSet) or feasible_set.d != d:
        raise ValueError(f"feasible_set must be a FeasibleSet of dimension d={d}, got {feasible_set!r}")
    return feasible_set


@dataclass(frozen=True)
class LogisticRegressionProblem:
    r"""Logistic loss :math:`\ell(x; (a, b)) = \log(1 + e^{-b\langle a, x\rangle})`, :math:`b \in \{-1, 1\}`.

    With :math:`\|a\|_2 \le G` (``feature_bound``) the loss is convex, :math:`G`-Lipschitz in
    :math:`\ell_2` (:math:`|\sigma| \le 1`) and the empirical objective is
    :math:`\lambda_{\max}(A^TA)/(4n) \le G^2/4` smooth. Data: a tuple ``(features (n, d), labels (n,))``.
    The feasible set defaults to the Euclidean ball of radius ``radius``.
    """

    d: int
    radius: float = 1.0
    feature_bound: float = 1.0
    feasible_set: FeasibleSet | None = field(default=None)

    def __post_init__(self) -> None:
        check_size(self.d, "d", lo=1)
        check_positive(self.radius, "radius")
        check_positive(self.feature_bound, "feature_bound")
        object.__setattr__(self, "feasible_set", _feasible_set(self.d, self.radius, self.feasible_set))

    @property
    def lipschitz(self) -> float:
        return float(self.feature_bound)

    def check_data(self, data: Any) -> tuple[np.ndarray, np.ndarray]:
        """Validated ``(features, labels)`` from a tuple or a :class:`~dpsco_lib.problems.Dataset` with labels."""
        if isinstance(data, Dataset) and data.y is not None:
            data = (np.asarray(data.X), np.asarray(data.y))
        if not isinstance(data, tuple) or len(data) != 2:
            raise ValueError("data must be a tuple (features of shape (n, d), labels of shape (n,))")
        a = check_array(data[0], "features", shape=(None, self.d))
        b = check_array(data[1], "labels", shape=(a.shape[0],))
        if not np.all(np.abs(b) == 1.0):
            raise ValueError("labels must be -1 or +1")
        check_norm_bound(a, "features", 2.0, self.feature_bound)
        return a, b

    def n_samples(self, data: Any) -> int:
        return int(self.check_data(data)[0].shape[0])

    def objective(self, X: np.ndarray, data: Any) -> np.ndarray:
        """f(x; D) for every row of X (m, d) -> (m,)."""
        a, b = data
        margins = np.atleast_2d(X) @ (a * b[:, None]).T
        return np.mean(np.logaddexp(0.0, -margins), axis=1)

    def gradient(self, X: np.ndarray, data: Any) -> np.ndarray:
        a, b = data
        ab = a * b[:, None]
        margins = np.atleast_2d(X) @ ab.T
        w = -special.expit(-margins)  # d/dm log(1 + e^-m)
        return (w @ ab) / a.shape[0]

    def potential_parts(self, data: Any) -> tuple:
        """Fast closures (objective, gradient) on (m, d) arrays with the signed features precomputed."""
        a, b = data
        ab = np.ascontiguousarray(a * b[:, None])
        abt = np.ascontiguousarray(ab.T)
        n = a.shape[0]

        def obj(X: np.ndarray) -> np.ndarray:
            return np.mean(np.logaddexp(0.0, -(X @ abt)), axis=1)

        def grad(X: np.ndarray) -> np.ndarray:
            return (special.expit(-(X @ abt)) @ ab) / (-n)

        return obj, grad

    def smoothness(self, data: Any) -> float:
        a, _ = data
        return float(np.linalg.eigvalsh(a.T @ a / a.shape[0])[-1]) / 4.0

    def minimize(self, data: Any, mu: float = 0.0, *, n_polish: int = 500) -> tuple[np.ndarray, float]:
        """Exact min over K of f + mu ||x||^2/2: cvxpy (Clarabel, exponential cone), then ``n_polish``
        projected-gradient steps (step 1/(beta + mu)) from its solution, which remove the conic solver's
        residual inaccuracy (its "inaccurate" warning is then harmless and silenced); returns (x*, value)."""
        import warnings

        cp = require("cvxpy")

        a, b = data
        x = cp.Variable(self.d)
        obj = cp.sum(cp.logistic(-cp.multiply(b, a @ x))) / a.shape[0] + (mu / 2) * cp.sum_squares(x)
        prob = cp.Problem(cp.Minimize(obj), self.feasible_set.cvxpy_constraints(x))
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            prob.solve(solver=cp.CLARABEL)
        if x.value is None:  # pragma: no cover - solver failure
            raise RuntimeError(f"cvxpy failed: {prob.status}")
        xs = self.feasible_set.project(np.asarray(x.value)[None, :])
        step = 1.0 / (self.smoothness(data) + mu)
        obj_fn, grad_fn = self.potential_parts(data)
        for _ in range(n_polish):
            xs = self.feasible_set.project(xs - step * (grad_fn(xs) + mu * xs))
        xs = xs[0]
        return xs, float(obj_fn(xs[None, :])[0] + mu / 2 * xs @ xs)


@dataclass(frozen=True)
class LinearLossProblem:
    r"""Linear loss :math:`\ell(x; z) = G\langle z, x\rangle` with :math:`\|z\|_2 \le 1`: convex, smooth
    (:math:`\beta = 0`) and :math:`G`-Lipschitz. Data: an ``(n, d)`` array.

    The privacy worst case of Spec R1: replacing :math:`z` by :math:`-z` with :math:`\|z\| = 1` makes
    :math:`\tilde F - F` linear with gradient norm exactly :math:`2Gk/n`, so the two laws are Gaussians
    (truncated to K) shifted by :math:`\mu_{GDP}` standard deviations.
    """

    d: int
    radius: float = 1.0
    G: float = 1.0
    feasible_set: FeasibleSet | None = field(default=None)

    def __post_init__(self) -> None:
        check_size(self.d, "d", lo=1)
        check_positive(self.radius, "radius")
        check_positive(self.G, "G")
        object.__setattr__(self, "feasible_set", _feasible_set(self.d, self.radius, self.feasible_set))

    @property
    def lipschitz(self) -> float:
        return float(self.G)

    def check_data(self, data: Any) -> np.ndarray:
        """Validated ``(n, d)`` array of records (a :class:`~dpsco_lib.problems.Dataset` gives its ``X``)."""
        z = check_array(data.X if isinstance(data, Dataset) else data, "data", shape=(None, self.d))
        check_norm_bound(z, "data", 2.0, 1.0)
        return z

    def n_samples(self, data: Any) -> int:
        return int(self.check_data(data).shape[0])

    def objective(self, X: np.ndarray, data: Any) -> np.ndarray:
        return self.G * (np.atleast_2d(X) @ np.mean(data, axis=0))

    def gradient(self, X: np.ndarray, data: Any) -> np.ndarray:
        X = np.atleast_2d(X)
        return np.broadcast_to(self.G * np.mean(data, axis=0), X.shape).copy()

    def potential_parts(self, data: Any) -> tuple:
        c = self.G * np.mean(data, axis=0)
        return (lambda X: X @ c), (lambda X: np.broadcast_to(c, X.shape).copy())

    def smoothness(self, data: Any) -> float:
        return 0.0

    def minimize(self, data: Any, mu: float = 0.0) -> tuple[np.ndarray, float]:
        """Exact min over K of G<z_bar, x> + mu||x||^2/2 (closed form on a centred ball, else cvxpy)."""
        c = self.G * np.mean(data, axis=0)
        K = self.feasible_set
        if isinstance(K, LpBall) and K.p == 2.0:
            if mu > 0:
                xs = K.project(-c / mu)
            else:
                nc = np.linalg.norm(c)
                xs = -K.radius * c / nc if nc > 0 else np.zeros(self.d)
        else:
            cp = require("cvxpy")

            x = cp.Variable(self.d)
            prob = cp.Problem(cp.Minimize(c @ x + (mu / 2) * cp.sum_squares(x)), K.cvxpy_constraints(x))
            prob.solve(solver=cp.CLARABEL)
            xs = K.project(np.asarray(x.value))
        return xs, float(c @ xs + mu / 2 * xs @ xs)



def logistic_regression_data(
    n: int, d: int, rng: np.random.Generator, *, feature_bound: float = 1.0, signal: float = 2.0
) -> tuple[np.ndarray, np.ndarray]:
    r"""Synthetic bounded logistic data: :math:`a_i` uniform on the sphere of radius ``feature_bound``,
    :math:`P(b_i = 1) = \sigma(\langle a_i, w\rangle)` with :math:`w` uniform on the sphere of radius
    ``signal * sqrt(d) / feature_bound`` (so the margins are O(signal) in every dimension)."""
    rng = check_rng(rng)
    n = check_int(n, "n", lo=1)
    d = check_size(d, "d", lo=1)
    feature_bound = check_positive(feature_bound, "feature_bound")
    signal = check_positive(signal, "signal", allow_zero=True)
    a = rng.standard_normal((n, d))
    a *= feature_bound / np.linalg.norm(a, axis=1, keepdims=True)
    w = rng.standard_normal(d)
    w *= signal * math.sqrt(d) / (feature_bound * np.linalg.norm(w))
    b = np.where(rng.random(n) < special.expit(a @ w), 1.0, -1.0)
    return a, b


def linear_loss_data(n: int, d: int, rng: np.random.Generator, *, mean_norm: float = 0.5) -> np.ndarray:
    r"""Synthetic data for :class:`LinearLossProblem`: :math:`z_i = s\,u + \xi_i`, u a uniform unit vector,
    :math:`\xi_i \sim \mathcal N(0, s^2 I/d)` with s = ``mean_norm``, rows scaled into the unit ball
    (so :math:`\|\bar z\|_2 \approx s` in every dimension and the scale of f does not shrink with d)."""
    rng = check_rng(rng)
    n = check_int(n, "n", lo=1)
    d = check_size(d, "d", lo=1)
    s = check_in_range(mean_norm, "mean_norm", 0.0, 1.0)
    u = rng.standard_normal(d)
    u /= np.linalg.norm(u)
    z = s * u + rng.standard_normal((n, d)) * s / math.sqrt(d)
    return z / np.maximum(1.0, np.linalg.norm(z, axis=1, keepdims=True))


@dataclass(frozen=True)
class SparseLogisticSampler:
    r"""Logistic data with s-sparse features: :math:`a` has a uniform random support of size ``s`` and
    entries :math:`\pm 1/\sqrt s` (so :math:`\|a\|_2 = 1`), :math:`P(y = 1) = \mathrm{sigmoid}(\langle a, w\rangle)`.
    Per-sample logistic gradients :math:`-y\,\mathrm{sigmoid}(-y\langle a, x\rangle)\,a` are s-sparse with
    :math:`\|\cdot\|_2 \le 1`. Usable as the ``sampler`` of :class:`~dpsco_lib.problems.LogisticRegression`."""

    w: np.ndarray
    sparsity: int

    def __call__(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        d, s = self.w.shape[0], self.sparsity
        X = np.zeros((n, d))
        cols = np.argsort(rng.random((n, d)), axis=1)[:, :s] if d <= 4096 else np.stack(
            [rng.choice(d, size=s, replace=False) for _ in range(n)]
        )
        signs = (2.0 * rng.integers(0, 2, size=(n, s)) - 1.0) / math.sqrt(s)
        np.put_along_axis(X, cols, signs, axis=1)
        p = 1.0 / (1.0 + np.exp(-(X @ self.w)))
        y = np.where(rng.random(n) < p, 1.0, -1.0)
        return X, y
