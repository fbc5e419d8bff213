"""Convex-concave games on simplices with exact population gaps (Spec A1 rates (5)-(7)).

All three families share the stochastic bilinear part x^T (A + s u v^T) y with a record
z = (u, v, ...), u in {-1, +1}^dx, v in {-1, +1}^dy Rademacher (E[u v^T] = 0), so the mean matrix is
A exactly.  Records are stored as rows [u, v, ...] with every entry in [-1, 1] (the declared bound;
validation rejects anything else, clipping maps entries to [-1, 1]).  Constants are w.r.t.
||x||_1 + ||y||_1 with gradients in ||.||_inf (the l1 setting); a = ||A||_max + s.

- :class:`BilinearGame` (L2 = 0, regime (7)): f = x^T (A + s u v^T) y.
  L0 = L1 = a.  Gap(x, y) = max_j (A^T x)_j - min_i (A y)_i in closed form; saddle point by an LP.
- :class:`QuadraticGame` (L2 = 0, regime (7)): f = x^T (A + s u v^T) y + (lx/2) <g, x>^2 - (ly/2) <h, y>^2
  with g = m_x + r_g * w_x, h = m_y + r_h * w_y (r Rademacher, |m| + |w| <= 1 entrywise), so
  F = x^T A y + (lx/2) x^T Q x - (ly/2) y^T R y, Q = m_x m_x^T + diag(w_x^2), R likewise.
  L0 = a + max(lx, ly), L1 = max(a, lx, ly).  Saddle point: with ly R = G G^T,
  max_{y in Delta} [y^T u - ||G^T y||^2/2] = min_w ||w||^2/2 + max_j (u - G w)_j (minimax swap), so
  min_x max_y F is the QP  min_{x in Delta, w, t} (lx/2) x^T Q x + ||w||^2/2 + t  s.t. A^T x - G w <= t 1,
  and y* is the multiplier of the inequality.
- :class:`SoftmaxGame` (smooth, not quadratic; regime (6)): f = x^T (A + s u v^T) y
  + lx tau lse(C x/tau) - ly tau lse(D y/tau), lse the log-sum-exp, C, D with entries in [-1, 1].
  grad of tau lse(C x/tau) is C^T softmax(C x/tau) (l_inf norm <= ||C||_max); softmax is
  (1/tau)-Lipschitz from l_inf to l1, and the derivative of a covariance under softmax is a third
  central moment bounded by (2 ||C||_max)^3/tau^2 per unit of ||x||_1, hence
  L0 = a + max(lx ||C||_max, ly ||D||_max), L1 = max(a, lx ||C||^2_max/tau, ly ||D||^2_max/tau),
  L2 = max(8 lx ||C||^3_max, 8 ly ||D||^3_max)/tau^2.  Saddle point: tau lse(v/tau) = max_{w in Delta}
  <w, v> + tau H(w) (H the entropy), and the minimax swap gives the exponential-cone program
  min_{x, w in Delta, t} lx tau lse(C x/tau) + t - ly tau H(w)  s.t. A^T x - ly D^T w <= t 1.

Reference: González, Guzmán & Paquette (2024), "Mirror descent algorithms with nearly
dimension-independent rates for differentially-private stochastic saddle-point problems", COLT / SIAM J.
Optim. (arXiv 2403.02912), Section 3.

The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import logsumexp, softmax

from dpsco_lib._optional import require
from dpsco_lib._validation import check_array, check_int, check_positive, check_rng, check_size
from dpsco_lib.geometry.sets import Simplex
from dpsco_lib.problems.base import SaddleProblem, solve_cvxpy
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.stream import BlockSampler, IntegerDraw

__all__ = [
    "BilinearGame",
    "QuadraticGame",
    "SoftmaxGame",
    "random_bilinear_game",
    "random_quadratic_game",
    "random_softmax_game",
]


class _RademacherRecords(BlockSampler):
    """Unlabelled records with i.i.d. Rademacher entries: ``2.0 * rng.integers(0, 2, size=(n, width)) - 1.0``
    (the draws of :meth:`_NoisyBilinear._sample`, row-sequential, so they stream bit for bit)."""

    labelled = False

    def __init__(self, width: int) -> None:
        self.width = check_int(width, "width", lo=1)

    def draws(self) -> tuple[IntegerDraw, ...]:
        return (IntegerDraw(0, 2, self.width),)

    def n_features(self) -> int:
        return self.width

    def fill(self, raw: tuple[np.ndarray, ...], X: np.ndarray, y: np.ndarray | None) -> None:
        np.multiply(raw[0], 2.0, out=X)
        X -= 1.0


def _simplex_clean(v: Any) -> np.ndarray:
    """Map a solver's (nearly feasible) simplex point exactly onto the simplex."""
    v = np.maximum(np.asarray(v, dtype=np.float64).ravel(), 0.0)
    return v / v.sum()


class _NoisyBilinear(SaddleProblem):
    """Shared stochastic bilinear part x^T (A + s u v^T) y with records [u, v, ...] in [-1, 1]."""

    exact_population = True

    def _init_bilinear(self, A: Any, noise: float) -> None:
        self.A = check_array(A, "A", ndim=2)
        self.s = check_positive(noise, "noise", allow_zero=True)
        self.x_set = Simplex(self.A.shape[0])
        self.y_set = Simplex(self.A.shape[1])
        self.a_max = float(np.max(np.abs(self.A))) + self.s
        self._cache = {}

    @property
    def data_dim(self) -> int:
        return self.dx + self.dy

    def _uv(self, data: Dataset) -> tuple[np.ndarray, np.ndarray]:
        return data.X[:, : self.dx], data.X[:, self.dx : self.dx + self.dy]

    def _rademacher(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return 2.0 * rng.integers(0, 2, size=(n, self.data_dim)) - 1.0

    def _sample(self, n: int, rng: np.random.Generator) -> Dataset:
        return Dataset(self._rademacher(n, rng))

    def _block_sampler(self) -> BlockSampler | None:
        """Rademacher records of width ``data_dim`` unless a subclass changed how records are drawn."""
        cls = type(self)
        if cls._sample is _NoisyBilinear._sample and cls._rademacher is _NoisyBilinear._rademacher:
            return _RademacherRecords(self.data_dim)
        return None

    def _row_violation(self, data: Dataset) -> np.ndarray:
        return np.max(np.abs(data.X), axis=1) > 1.0

    def _clip_rows(self, data: Dataset, bad: np.ndarray) -> Dataset:
        """Clip every entry to [-1, 1]."""
        return Dataset(np.clip(data.X, -1.0, 1.0))

    def _bil_loss(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        U, V = self._uv(data)
        return float(x @ self.A @ y) + self.s * (U @ x) * (V @ y)

    def _bil_grad_x(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        U, V = self._uv(data)
        return (y @ self.A.T)[:, None, :] + self.s * (y @ V.T)[:, :, None] * U[None, :, :]

    def _bil_grad_y(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        U, V = self._uv(data)
        return (x @ self.A)[:, None, :] + self.s * (x @ U.T)[:, :, None] * V[None, :, :]


class BilinearGame(_NoisyBilinear):
    """Stochastic matrix game min_{x in Delta} max_{y in Delta} x^T A y, per-record A + s u v^T (Spec A1 (7)).

    Parameters
    ----------
    A : array (dx, dy)
        The mean payoff matrix.
    noise : float
        s >= 0, the scale of the rank-one Rademacher noise.
    """

    def __init__(self, A: Any, noise: float = 0.5, *, spec: str = "A1") -> None:
        self._init_bilinear(A, noise)
        self.L0 = self.a_max
        self.L1 = self.a_max
        self.L2 = 0.0
        self.spec = spec

    def _loss(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        return self._bil_loss(x, y, data)

    def _grad_x(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        return self._bil_grad_x(x, y, data)

    def _grad_y(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        return self._bil_grad_y(x, y, data)

    def _population_value(self, x: np.ndarray, y: np.ndarray) -> float:
        return float(x @ self.A @ y)

    def _best_response_x(self, y: np.ndarray) -> tuple[np.ndarray, float]:
        c = self.A @ y
        i = int(np.argmin(c))
        return np.eye(self.dx)[i], float(c[i])

    def _best_response_y(self, x: np.ndarray) -> tuple[np.ndarray, float]:
        c = x @ self.A
        j = int(np.argmax(c))
        return np.eye(self.dy)[j], float(c[j])

    def duality_gap(self, x: Any, y: Any, method: str = "closed_form") -> float:
        """max_j (A^T x)_j - min_i (A y)_i (``method="closed_form"``) or by two cvxpy LPs (``"cvxpy"``)."""
        if method == "closed_form":
            return super().duality_gap(x, y)
        if method != "cvxpy":
            raise ValueError(f"method must be 'closed_form' or 'cvxpy', got {method!r}")
        cp = require("cvxpy")

        x = self._feasible(self._pt(x, self.dx, "x"), self.x_set, "x")
        y = self._feasible(self._pt(y, self.dy, "y"), self.y_set, "y")
        yv, xv = cp.Variable(self.dy), cp.Variable(self.dx)
        pmax = cp.Problem(cp.Maximize((x @ self.A) @ yv), self.y_set.cvxpy_constraints(yv))
        pmin = cp.Problem(cp.Minimize(xv @ (self.A @ y)), self.x_set.cvxpy_constraints(xv))
        solve_cvxpy(pmax, "the best response in y")
        solve_cvxpy(pmin, "the best response in x")
        return float(pmax.value - pmin.value)

    def _saddle_point(self) -> tuple[np.ndarray, np.ndarray, float]:
        cp = require("cvxpy")

        x, t = cp.Variable(self.dx), cp.Variable()
        cons = [self.A.T @ x <= t, *self.x_set.cvxpy_constraints(x)]
        prob = cp.Problem(cp.Minimize(t), cons)
        solve_cvxpy(prob, "the matrix game LP")
        xs, ys = _simplex_clean(x.value), _simplex_clean(cons[0].dual_value)
        return xs, ys, float(xs @ self.A @ ys)


def random_bilinear_game(dx: int, dy: int, rng: np.random.Generator, *, noise: float = 0.5) -> BilinearGame:
    """A with i.i.d. U[-1, 1] entries; per-record noise s u v^T with s = ``noise``."""
    rng = check_rng(rng)
    dx = check_size(dx, "dx", lo=1)
    A = rng.uniform(-1.0, 1.0, size=(dx, check_size(dy, "dy", lo=1, per_entry=dx)))
    return BilinearGame(A, noise)


class QuadraticGame(_NoisyBilinear):
    """Convex-concave quadratic game with known moments (Spec A1 (7), L2 = 0); see the module docstring.

    Records are rows [u, v, r_g, r_h] of length 2 (dx + dy), entries in {-1, +1}.
    """

    def __init__(
        self,
        A: Any,
        *,
        noise: float = 0.5,
        lam_x: float = 1.0,
        lam_y: float = 1.0,
        m_x: Any,
        w_x: Any,
        m_y: Any,
        w_y: Any,
        spec: str = "A1",
    ) -> None:
        self._init_bilinear(A, noise)
        self.lam_x = check_positive(lam_x, "lam_x", allow_zero=True)
        self.lam_y = check_positive(lam_y, "lam_y", allow_zero=True)
        self.m_x = check_array(m_x, "m_x", shape=(self.dx,))
        self.w_x = check_array(w_x, "w_x", shape=(self.dx,))
        self.m_y = check_array(m_y, "m_y", shape=(self.dy,))
        self.w_y = check_array(w_y, "w_y", shape=(self.dy,))
        for nm, m, w in (("x", self.m_x, self.w_x), ("y", self.m_y, self.w_y)):
            if np.any(np.abs(m) + np.abs(w) > 1.0 + 1e-12):
                raise ValueError(f"|m_{nm}| + |w_{nm}| must be <= 1 entrywise (so that ||g||_inf <= 1)")
        self.L0 = self.a_max + max(self.lam_x, self.lam_y)
        self.L1 = max(self.a_max, self.lam_x, self.lam_y)
        self.L2 = 0.0
        self.spec = spec

    @property
    def data_dim(self) -> int:
        return 2 * (self.dx + self.dy)

    def _gh(self, data: Dataset) -> tuple[np.ndarray, np.ndarray]:
        o = self.dx + self.dy
        G = self.m_x + data.X[:, o : o + self.dx] * self.w_x
        H = self.m_y + data.X[:, o + self.dx :] * self.w_y
        return G, H

    def Q(self) -> np.ndarray:
        """E[g g^T] = m_x m_x^T + diag(w_x^2)."""
        return np.outer(self.m_x, self.m_x) + np.diag(self.w_x**2)

    def R(self) -> np.ndarray:
        """E[h h^T] = m_y m_y^T + diag(w_y^2)."""
        return np.outer(self.m_y, self.m_y) + np.diag(self.w_y**2)

    def _loss(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        G, H = self._gh(data)
        return self._bil_loss(x, y, data) + 0.5 * self.lam_x * (G @ x) ** 2 - 0.5 * self.lam_y * (H @ y) ** 2

    def _grad_x(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        G, _ = self._gh(data)
        return self._bil_grad_x(x, y, data) + self.lam_x * (x @ G.T)[:, :, None] * G[None]

    def _grad_y(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        _, H = self._gh(data)
        return self._bil_grad_y(x, y, data) - self.lam_y * (y @ H.T)[:, :, None] * H[None]

    def _population_value(self, x: np.ndarray, y: np.ndarray) -> float:
        return float(x @ self.A @ y + 0.5 * self.lam_x * x @ self.Q() @ x - 0.5 * self.lam_y * y @ self.R() @ y)

    def _quad_x(self, xv: Any) -> Any:
        cp = require("cvxpy")

        return 0.5 * self.lam_x * (cp.square(self.m_x @ xv) + cp.sum(cp.multiply(self.w_x**2, cp.square(xv))))

    def _quad_y(self, yv: Any) -> Any:
        cp = require("cvxpy")

        return 0.5 * self.lam_y * (cp.square(self.m_y @ yv) + cp.sum(cp.multiply(self.w_y**2, cp.square(yv))))

    def _best_response_x(self, y: np.ndarray) -> tuple[np.ndarray, float]:
        cp = require("cvxpy")

        xv = cp.Variable(self.dx)
        prob = cp.Problem(cp.Minimize((self.A @ y) @ xv + self._quad_x(xv)), self.x_set.cvxpy_constraints(xv))
        solve_cvxpy(prob, "the best response in x")
        xs = _simplex_clean(xv.value)
        return xs, self._population_value(xs, y)

    def _best_response_y(self, x: np.ndarray) -> tuple[np.ndarray, float]:
        cp = require("cvxpy")

        yv = cp.Variable(self.dy)
        prob = cp.Problem(cp.Maximize((x @ self.A) @ yv - self._quad_y(yv)), self.y_set.cvxpy_constraints(yv))
        solve_cvxpy(prob, "the best response in y")
        ys = _simplex_clean(yv.value)
        return ys, self._population_value(x, ys)

    def _saddle_point(self) -> tuple[np.ndarray, np.ndarray, float]:
        cp = require("cvxpy")

        Gm = np.sqrt(self.lam_y) * np.column_stack([self.m_y, np.diag(self.w_y)])
        xv, wv, t = cp.Variable(self.dx), cp.Variable(Gm.shape[1]), cp.Variable()
        cons = [self.A.T @ xv - Gm @ wv <= t, *self.x_set.cvxpy_constraints(xv)]
        prob = cp.Problem(cp.Minimize(self._quad_x(xv) + 0.5 * cp.sum_squares(wv) + t), cons)
        solve_cvxpy(prob, "the quadratic game saddle point")
        xs, ys = _simplex_clean(xv.value), _simplex_clean(cons[0].dual_value)
        return xs, ys, self._population_value(xs, ys)


def random_quadratic_game(
    dx: int, dy: int, rng: np.random.Generator, *, noise: float = 0.5, lam_x: float = 1.0, lam_y: float = 1.0
) -> QuadraticGame:
    """A ~ U[-1, 1]; m ~ U[-1/2, 1/2], w ~ U[0, 1/2] (so |m| + |w| <= 1)."""
    rng = check_rng(rng)
    dx, dy = check_size(dx, "dx", lo=1), check_size(dy, "dy", lo=1)
    return QuadraticGame(
        rng.uniform(-1.0, 1.0, size=(dx, dy)), noise=noise, lam_x=lam_x, lam_y=lam_y,
        m_x=rng.uniform(-0.5, 0.5, dx), w_x=rng.uniform(0.0, 0.5, dx),
        m_y=rng.uniform(-0.5, 0.5, dy), w_y=rng.uniform(0.0, 0.5, dy),
    )


class SoftmaxGame(_NoisyBilinear):
    """Smooth non-quadratic game with log-sum-exp regularizers (Spec A1 (6)); see the module docstring.

    Records are rows [u, v] (entries in {-1, +1}); C (kx, dx) and D (ky, dy) are fixed.
    """

    def __init__(
        self,
        A: Any,
        C: Any,
        D: Any,
        *,
        noise: float = 0.5,
        lam_x: float = 1.0,
        lam_y: float = 1.0,
        tau: float = 0.5,
        spec: str = "A1",
    ) -> None:
        self._init_bilinear(A, noise)
        self.C = check_array(C, "C", ndim=2)
        self.D = check_array(D, "D", ndim=2)
        if self.C.shape[1] != self.dx or self.D.shape[1] != self.dy:
            raise ValueError(f"C must have {self.dx} columns and D {self.dy}, got {self.C.shape}, {self.D.shape}")
        self.lam_x = check_positive(lam_x, "lam_x", allow_zero=True)
        self.lam_y = check_positive(lam_y, "lam_y", allow_zero=True)
        self.tau = check_positive(tau, "tau")
        cm, dm = float(np.max(np.abs(self.C))), float(np.max(np.abs(self.D)))
        self.L0 = self.a_max + max(self.lam_x * cm, self.lam_y * dm)
        self.L1 = max(self.a_max, self.lam_x * cm**2 / self.tau, self.lam_y * dm**2 / self.tau)
        self.L2 = max(8.0 * self.lam_x * cm**3, 8.0 * self.lam_y * dm**3) / self.tau**2
        self.spec = spec

    def _lse_x(self, x: np.ndarray) -> np.ndarray:
        return self.tau * logsumexp(x @ self.C.T / self.tau, axis=-1)

    def _lse_y(self, y: np.ndarray) -> np.ndarray:
        return self.tau * logsumexp(y @ self.D.T / self.tau, axis=-1)

    def _loss(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        return self._bil_loss(x, y, data) + self.lam_x * self._lse_x(x) - self.lam_y * self._lse_y(y)

    def _grad_x(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        reg = self.lam_x * softmax(x @ self.C.T / self.tau, axis=-1) @ self.C
        return self._bil_grad_x(x, y, data) + reg[:, None, :]

    def _grad_y(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        reg = self.lam_y * softmax(y @ self.D.T / self.tau, axis=-1) @ self.D
        return self._bil_grad_y(x, y, data) - reg[:, None, :]

    def _population_value(self, x: np.ndarray, y: np.ndarray) -> float:
        return float(x @ self.A @ y + self.lam_x * self._lse_x(x) - self.lam_y * self._lse_y(y))

    def _best_response_x(self, y: np.ndarray) -> tuple[np.ndarray, float]:
        cp = require("cvxpy")

        xv = cp.Variable(self.dx)
        obj = (self.A @ y) @ xv + self.lam_x * self.tau * cp.log_sum_exp(self.C @ xv / self.tau)
        prob = cp.Problem(cp.Minimize(obj), self.x_set.cvxpy_constraints(xv))
        solve_cvxpy(prob, "the best response in x")
        xs = _simplex_clean(xv.value)
        return xs, self._population_value(xs, y)

    def _best_response_y(self, x: np.ndarray) -> tuple[np.ndarray, float]:
        cp = require("cvxpy")

        yv = cp.Variable(self.dy)
        obj = (x @ self.A) @ yv - self.lam_y * self.tau * cp.log_sum_exp(self.D @ yv / self.tau)
        prob = cp.Problem(cp.Maximize(obj), self.y_set.cvxpy_constraints(yv))
        solve_cvxpy(prob, "the best response in y")
        ys = _simplex_clean(yv.value)
        return ys, self._population_value(x, ys)

    def _saddle_point(self) -> tuple[np.ndarray, np.ndarray, float]:
        cp = require("cvxpy")

        ky = self.D.shape[0]
        xv, wv, t = cp.Variable(self.dx), cp.Variable(ky), cp.Variable()
        cons = [self.A.T @ xv - self.lam_y * (self.D.T @ wv) <= t, wv >= 0, cp.sum(wv) == 1,
                *self.x_set.cvxpy_constraints(xv)]
        obj = self.lam_x * self.tau * cp.log_sum_exp(self.C @ xv / self.tau) + t - self.lam_y * self.tau * cp.sum(
            cp.entr(wv)
        )
        prob = cp.Problem(cp.Minimize(obj), cons)
        solve_cvxpy(prob, "the softmax game saddle point")
        xs, ys = _simplex_clean(xv.value), _simplex_clean(cons[0].dual_value)
        return xs, ys, self._population_value(xs, ys)


def random_softmax_game(
    dx: int,
    dy: int,
    rng: np.random.Generator,
    *,
    k: int = 5,
    noise: float = 0.5,
    lam_x: float = 1.0,
    lam_y: float = 1.0,
    tau: float = 0.5,
) -> SoftmaxGame:
    """A, C (k, dx), D (k, dy) with i.i.d. U[-1, 1] entries."""
    rng = check_rng(rng)
    dx, dy, k = check_size(dx, "dx", lo=1), check_size(dy, "dy", lo=1), check_int(k, "k", lo=1)
    return SoftmaxGame(
        rng.uniform(-1.0, 1.0, size=(dx, dy)), rng.uniform(-1.0, 1.0, size=(k, dx)),
        rng.uniform(-1.0, 1.0, size=(k, dy)), noise=noise, lam_x=lam_x, lam_y=lam_y, tau=tau,
    )


def saddle_dims(d: int | tuple[int, int]) -> tuple[int, int]:
    """(dx, dy) from an int (square game) or a pair; ValueError names the bad entry."""
    if isinstance(d, tuple | list):
        if len(d) != 2:
            raise ValueError(f"d must be an int or a pair (dx, dy), got {d!r}")
        return check_size(d[0], "dx", lo=1), check_size(d[1], "dy", lo=1)
    dd = check_size(d, "d", lo=1)
    return dd, dd


def check_saddle_data(problem: Any, data: Any) -> Dataset:
    """Validate a (SaddleProblem, Dataset) pair at an algorithm's public boundary; returns the checked data."""
    if not isinstance(problem, SaddleProblem):
        raise ValueError(f"problem must be a SaddleProblem, got {type(problem).__name__}")
    if not isinstance(data, Dataset):
        raise ValueError(f"data must be a dpsco_lib.problems.Dataset, got {type(data).__name__}")
    return problem.validate_data(data)
