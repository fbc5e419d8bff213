r"""Smooth test functions on the simplex and the exact law of the Maurey estimate (Spec M1-M3).

Maurey estimate [GGP24, Section 2; Pis80]: for x in Delta_d, x~ = (1/K) sum_{k<=K} e_{i_k}, i_k i.i.d. ~ Cat(x),
so K x~ ~ Multinomial(K, x), E x~ = x and Cov(x~) = (diag(x) - x x^T)/K.

Test functions (constants w.r.t. ||.||_1, gradients in ||.||_inf, on the simplex):

- :class:`QuadraticFunction` f(x) = x^T Q x/2: L1 = max_ij |Q_ij| (|h^T Q h| <= max|Q| ||h||_1^2), L2 = 0.
  E f(x~) - f(x) = tr(Q Cov x~)/2 = (sum_i Q_ii x_i - x^T Q x)/(2K) exactly; the gradient Q x~ is unbiased.
- :class:`LogSumExpFunction` f(x) = tau lse(C x/tau), C (k, d): grad = C^T softmax(C x/tau); the Hessian is
  C^T (diag s - s s^T) C/tau (a covariance of columns of C under s), so L1 = max|C|^2/tau; third derivatives
  are third central moments divided by tau^2, so L2 = (2 max|C|)^3/tau^2 = 8 max|C|^3/tau^2.  L0 = max|C|.
  Second-order smooth: Cor 2.4 gives ||E grad f(x~) - grad f(x)||_inf <= 2 L2/K.
- :class:`SquaredHingeFunction` f(x) = max(0, <a, x> - c)^2/2: L1 = ||a||_inf^2 but its gradient
  max(0, <a, x> - c) a is not differentiable on <a, x> = c (L2 = inf): only first-order smooth.  At a point on
  the kink, E grad f(x~) - grad f(x) = E[max(0, <a, x~ - x>)] a ~ sigma a/sqrt(2 pi K): the 1/sqrt K bias of
  Cor 2.6 is attained.  Cor 2.6's proof (smoothing step h = 2/sqrt K) gives the constant 4 L1/sqrt K.

:func:`maurey_law` enumerates the multinomial law (all compositions of K into d parts and their
probabilities) so that biases are computed *exactly* for small d; :func:`maurey_exact_mean` averages any
vectorized function against it.

The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any

import numpy as np
from scipy.special import gammaln, logsumexp, softmax

from dpsco_lib._validation import check_array, check_int, check_positive, check_size
from dpsco_lib.geometry.sparsify import maurey_probabilities

__all__ = [
    "LogSumExpFunction",
    "QuadraticFunction",
    "SmoothTestFunction",
    "SquaredHingeFunction",
    "compositions",
    "maurey_exact_mean",
    "maurey_law",
    "second_moment_bound",
]

MAX_COMPOSITIONS = 5_000_000


class SmoothTestFunction(ABC):
    """A function on the simplex with declared constants L0, L1, L2 w.r.t. ||.||_1 (Spec M1-M3).

    ``value`` and ``grad`` act on the last axis: X of shape (..., d) gives (...) and (..., d).
    """

    d: int
    L0: float
    L1: float
    L2: float

    def _x(self, X: Any) -> np.ndarray:
        arr = check_array(X, "x", ndim=None)
        if arr.ndim == 0 or arr.shape[-1] != self.d:
            raise ValueError(f"x must have last dimension d = {self.d}, got shape {arr.shape}")
        return arr

    def value(self, X: Any) -> np.ndarray | float:
        out = self._value(self._x(X))
        return float(out) if np.ndim(out) == 0 else out

    def grad(self, X: Any) -> np.ndarray:
        return self._grad(self._x(X))

    @abstractmethod
    def _value(self, X: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def _grad(self, X: np.ndarray) -> np.ndarray: ...


class QuadraticFunction(SmoothTestFunction):
    """f(x) = x^T Q x/2 with Q symmetric (L1 = max|Q_ij|, L2 = 0)."""

    def __init__(self, Q: Any) -> None:
        Q = check_array(Q, "Q", ndim=2)
        if Q.shape[0] != Q.shape[1] or not np.allclose(Q, Q.T):
            raise ValueError(f"Q must be a symmetric square matrix, got shape {Q.shape}")
        self.Q = Q
        self.d = Q.shape[0]
        self.L0 = float(np.max(np.abs(Q)))
        self.L1 = float(np.max(np.abs(Q)))
        self.L2 = 0.0

    def _value(self, X: np.ndarray) -> np.ndarray:
        return 0.5 * np.einsum("...i,ij,...j->...", X, self.Q, X)

    def _grad(self, X: np.ndarray) -> np.ndarray:
        return X @ self.Q

    def exact_value_bias(self, x: Any, K: int) -> float:
        """E f(x~) - f(x) = (sum_i Q_ii x_i - x^T Q x)/(2K) (from Cov x~ = (diag x - x x^T)/K)."""
        x = maurey_probabilities(x)
        K = check_int(K, "K", lo=1)
        return float((np.diag(self.Q) @ x - x @ self.Q @ x) / (2.0 * K))


class LogSumExpFunction(SmoothTestFunction):
    """f(x) = tau logsumexp(C x/tau): second-order smooth (L1 = max|C|^2/tau, L2 = 8 max|C|^3/tau^2)."""

    def __init__(self, C: Any, tau: float = 0.5) -> None:
        self.C = check_array(C, "C", ndim=2)
        self.tau = check_positive(tau, "tau")
        self.d = self.C.shape[1]
        cm = float(np.max(np.abs(self.C)))
        self.L0 = cm
        self.L1 = cm**2 / self.tau
        self.L2 = 8.0 * cm**3 / self.tau**2

    def _value(self, X: np.ndarray) -> np.ndarray:
        return self.tau * logsumexp(X @ self.C.T / self.tau, axis=-1)

    def _grad(self, X: np.ndarray) -> np.ndarray:
        return softmax(X @ self.C.T / self.tau, axis=-1) @ self.C


class SquaredHingeFunction(SmoothTestFunction):
    """f(x) = max(0, <a, x> - c)^2/2: L1 = ||a||_inf^2, only first-order smooth (L2 = inf)."""

    def __init__(self, a: Any, c: float) -> None:
        self.a = check_array(a, "a", ndim=1)
        self.c = float(check_array(c, "c", shape=()))
        self.d = self.a.size
        am = float(np.max(np.abs(self.a)))
        self.L0 = am * max(0.0, float(self.a.max()) - self.c)
        self.L1 = am**2
        self.L2 = math.inf

    def _value(self, X: np.ndarray) -> np.ndarray:
        return 0.5 * np.maximum(0.0, X @ self.a - self.c) ** 2

    def _grad(self, X: np.ndarray) -> np.ndarray:
        return np.maximum(0.0, X @ self.a - self.c)[..., None] * self.a


def compositions(K: int, d: int) -> np.ndarray:
    """All count vectors (c_1..c_d) >= 0 with sum K, as an int64 array (C(K+d-1, d-1), d)."""
    K = check_int(K, "K", lo=0)
    d = check_size(d, "d", lo=1)
    total = math.comb(K + d - 1, d - 1)
    if total > MAX_COMPOSITIONS:
        raise ValueError(f"C(K+d-1, d-1) = {total} compositions exceed the limit {MAX_COMPOSITIONS}; lower K or d")
    # rows are built coordinate by coordinate: prefix (m, j) with remaining sum r (m,)
    rows = np.zeros((1, 0), dtype=np.int64)
    rem = np.array([K], dtype=np.int64)
    for _ in range(d - 1):
        reps = rem + 1
        first = np.repeat(np.arange(rows.shape[0]), reps)
        # for each prefix, the next coordinate takes 0..rem
        offs = np.arange(first.size) - np.repeat(np.cumsum(reps) - reps, reps)
        rows = np.column_stack([rows[first], offs])
        rem = rem[first] - offs
    return np.column_stack([rows, rem])


def maurey_law(x: Any, K: int) -> tuple[np.ndarray, np.ndarray]:
    """The exact law of the Maurey estimate: support points x~ = c/K (M, d) and probabilities (M,).

    P(c) = K!/prod c_i! prod x_i^c_i (multinomial), computed in log space; zero-probability points dropped.
    """
    p = maurey_probabilities(x)
    K = check_int(K, "K", lo=1)
    c = compositions(K, p.size)
    with np.errstate(divide="ignore"):
        lp = np.log(p)
    terms = np.where(c > 0, c * np.where(p > 0, lp, 0.0), 0.0)
    terms = np.where((c > 0) & (p == 0), -np.inf, terms)
    logw = gammaln(K + 1) - gammaln(c + 1).sum(axis=1) + terms.sum(axis=1)
    keep = np.isfinite(logw)
    w = np.exp(logw[keep])
    return c[keep] / float(K), w / w.sum()


def maurey_exact_mean(fn: Any, x: Any, K: int, *, chunk: int = 200_000) -> np.ndarray | float:
    """E fn(x~) under the exact multinomial law (fn vectorized over rows: (m, d) -> (m,) or (m, k))."""
    pts, w = maurey_law(x, K)
    chunk = check_int(chunk, "chunk", lo=1)
    acc: Any = 0.0
    for s in range(0, w.size, chunk):
        v = np.asarray(fn(pts[s : s + chunk]), dtype=np.float64)
        acc = acc + np.tensordot(w[s : s + chunk], v, axes=(0, 0))
    return float(acc) if np.ndim(acc) == 0 else np.asarray(acc)


def second_moment_bound(d: int, K: int, value_range: float = 2.0) -> float:
    """Bound on E max_i Z_i^2 for d centred means of K i.i.d. terms with range ``value_range`` (Spec M3).

    Each Z_i is sub-Gaussian with proxy sigma^2 = value_range^2/(4K) (Hoeffding); E exp(Z^2/(4 sigma^2)) <= sqrt 2,
    so by Jensen E max_i Z_i^2 <= 4 sigma^2 (log d + log(2)/2).  This is the log d/K of Lemma 2.10 / Cor 2.12
    with explicit constants, e.g. for grad f(x~) - grad f(x) with f quadratic and |Q_ij| <= 1 (range 2).
    """
    d = check_size(d, "d", lo=1)
    K = check_int(K, "K", lo=1)
    r = check_positive(value_range, "value_range")
    return 4.0 * (r * r / (4.0 * K)) * (math.log(d) + 0.5 * math.log(2.0))
