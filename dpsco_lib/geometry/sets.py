"""Feasible sets of the l_p setups: simplex, l1 ball, l_p ball, polytope (Spec S1, F1, A1).

Every set offers the primitives the algorithms need:

- ``lmo(g)``: a linear minimization oracle argmin_{v in X} <g, v> (batched over rows of g), used by
  Frank-Wolfe (Spec F1-F3);
- ``project(x)``: the Euclidean projection argmin_{y in X} ||y - x||_2 (batched over rows for the
  closed-form sets), used by projected SGD (Spec S1, S2);
- ``diameter(p)`` = max_{x, y in X} ||x - y||_p and ``center_radius(p)`` = max_{x in X} ||x - center()||_p, exact;
- ``vertices()`` (a (V, d) array of the extreme points, when finitely many), ``n_vertices``,
  ``sample_uniform_vertex``, ``random_point`` (uniform in the set where cheap), ``center()``;
- ``cvxpy_constraints(var)`` to model exact optima with cvxpy.

Ties in ``lmo`` are broken towards the smallest index, and g = 0 returns a vertex, so the oracle
is deterministic.  The library works in the idealized real-arithmetic model (float64,
non-cryptographic RNG).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import optimize

from dpsco_lib._optional import require
from dpsco_lib._validation import check_array, check_int, check_positive, check_rng, check_size
from dpsco_lib.geometry.norms import check_exponent, dual_exponent, lp_norm

__all__ = [
    "FeasibleSet",
    "L1Ball",
    "LpBall",
    "Polytope",
    "Simplex",
    "project_l1_ball",
    "project_simplex",
]

_MAX_CUBE_DIM = 20  # 2^20 vertices is the largest cube vertex list we materialize
_CLARABEL_TIGHT = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}


# ---------------------------------------------------------------------------------------------
# closed-form Euclidean projections (vectorized over leading axes)
# ---------------------------------------------------------------------------------------------


def _check_points(x: Any) -> np.ndarray:
    """A finite float64 array with at least one axis (points along the last axis)."""
    arr = check_array(x, "x")
    if arr.ndim == 0:
        raise ValueError(f"x must be an array of shape (..., d) with d >= 1, got a scalar {float(arr)!r}")
    return arr


def project_simplex(x: np.ndarray, z: float = 1.0) -> np.ndarray:
    """Euclidean projection onto {y >= 0, sum y = z} along the last axis, O(d log d) by sorting.

    Held-Shor / Duchi et al. (2008): with u the entries sorted decreasingly and
    rho = max{j : u_j - (sum_{i<=j} u_i - z)/j > 0}, theta = (sum_{i<=rho} u_i - z)/rho, the projection
    is max(x - theta, 0).  Works on (..., d) arrays.

    Parameters
    ----------
    x : array of shape (..., d)
        Finite points (NaN or inf raise ``ValueError``).
    z : float
        Total mass, a finite real number > 0 (the set is empty for z < 0).
    """
    z = check_positive(z, "z")
    return _project_simplex(_check_points(x), z)


def _project_simplex(x: np.ndarray, z: float) -> np.ndarray:
    """:func:`project_simplex` without validation (x a float64 array, z > 0)."""
    d = x.shape[-1]
    u = -np.sort(-x, axis=-1)
    css = np.cumsum(u, axis=-1) - z
    ind = np.arange(1, d + 1, dtype=np.float64)
    cond = u - css / ind > 0
    # rho: last index where cond holds (cond is a prefix of True's; index 0 always holds)
    rho = d - 1 - np.argmax(cond[..., ::-1], axis=-1)
    theta = np.take_along_axis(css, rho[..., None], axis=-1) / (rho[..., None] + 1.0)
    return np.maximum(x - theta, 0.0)


def project_l1_ball(x: np.ndarray, radius: float = 1.0) -> np.ndarray:
    """Euclidean projection onto {||y||_1 <= radius} along the last axis (Duchi et al. 2008).

    Points inside are returned unchanged; outside, y = sign(x) * P_{simplex(radius)}(|x|).  ``x`` must be
    finite and ``radius`` a finite real number > 0 (``ValueError`` otherwise).
    """
    radius = check_positive(radius, "radius")
    x = _check_points(x)
    a = np.abs(x)
    inside = a.sum(axis=-1, keepdims=True) <= radius
    proj = np.sign(x) * _project_simplex(a, radius)
    return np.where(inside, x, proj)


def _project_lp_ball_general(x: np.ndarray, p: float, radius: float) -> np.ndarray:
    """Euclidean projection of one point onto {||y||_p <= radius}, 1 < p < inf, p != 2.

    KKT: y_i = sign(x_i) t_i with t_i >= 0 solving t + mu p t^(p-1) = |x_i| for the multiplier
    mu >= 0 such that sum t_i^p = radius^p.  The inner scalar equations are solved for all
    coordinates at once by monotone Newton iterations (in t for p >= 2, in u = t^(p-1) for p < 2, the
    variable in which the equation is convex, started above the root); the outer equation in mu,
    decreasing, by brentq on [0, mu_max] with mu_max from the point t_i = radius d^(-1/p).
    """
    a = np.abs(x)
    d = a.size
    if lp_norm(a, p) <= radius:
        return x.copy()
    active = a > 0

    def inner(mu: float) -> np.ndarray:
        c = mu * p
        aa = a[active]
        if c == 0.0:
            return aa.copy()
        if p >= 2.0:
            t = aa.copy()
            for _ in range(200):
                f = t + c * t ** (p - 1.0) - aa
                fp = 1.0 + c * (p - 1.0) * t ** (p - 2.0)
                t_new = np.maximum(t - f / fp, 0.0)
                if np.all(np.abs(t_new - t) <= 1e-15 * aa):
                    t = t_new
                    break
                t = t_new
            return t
        k = 1.0 / (p - 1.0)  # > 1: t = u^k, equation u^k + c u - a = 0 convex in u
        u = aa ** (p - 1.0)
        for _ in range(200):
            f = u**k + c * u - aa
            fp = k * u ** (k - 1.0) + c
            u_new = np.maximum(u - f / fp, 0.0)
            if np.all(np.abs(u_new - u) <= 1e-15 * np.maximum(u, 1e-300)):
                u = u_new
                break
            u = u_new
        return u**k

    def h(mu: float) -> float:
        t = inner(mu)
        return float(np.sum(t**p)) - radius**p

    tau = radius * d ** (-1.0 / p)
    mu_max = max(0.0, (float(a.max()) - tau) / (p * tau ** (p - 1.0)))
    mu = optimize.brentq(h, 0.0, mu_max * (1 + 1e-12) + 1e-300, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)
    t = np.zeros_like(a)
    t[active] = inner(mu)
    nrm = lp_norm(t, p)
    if nrm > 0:
        t *= radius / nrm  # remove the last rounding error so that the output is feasible
    return np.sign(x) * t


# ---------------------------------------------------------------------------------------------
# abstract set
# ---------------------------------------------------------------------------------------------


class FeasibleSet(ABC):
    """A convex compact subset X of R^d with the oracles used by the algorithms (Spec S1).

    Attributes
    ----------
    d : int
        Ambient dimension.
    """

    d: int

    # --- validation helpers -------------------------------------------------------------------
    def _point(self, x: Any, name: str = "x") -> np.ndarray:
        return check_array(x, name, shape=(self.d,))

    def _points(self, x: Any, name: str = "x") -> np.ndarray:
        arr = check_array(x, name, ndim=(1, 2))
        if arr.shape[-1] != self.d:
            raise ValueError(f"{name} must have last dimension d = {self.d}, got shape {arr.shape}")
        return arr

    # --- oracles ------------------------------------------------------------------------------
    @abstractmethod
    def contains(self, x: Any, tol: float = 1e-9) -> bool | np.ndarray:
        """Whether x (shape (d,)) lies in X up to ``tol``; for an (m, d) array a boolean array."""

    @abstractmethod
    def lmo(self, g: Any) -> np.ndarray:
        """argmin_{v in X} <g, v> for g of shape (d,) or (m, d) (row-wise); returns the same shape."""

    @abstractmethod
    def project(self, x: Any) -> np.ndarray:
        """Euclidean projection argmin_{y in X} ||y - x||_2."""

    @abstractmethod
    def diameter(self, p: float) -> float:
        """max_{x, y in X} ||x - y||_p (exact)."""

    @abstractmethod
    def center_radius(self, p: float) -> float:
        """max_{x in X} ||x - center()||_p (exact)."""

    @abstractmethod
    def center(self) -> np.ndarray:
        """A canonical interior point (barycentre of the vertices / the ball centre)."""

    @abstractmethod
    def vertices(self) -> np.ndarray:
        """The extreme points as a (V, d) array (ValueError when there are infinitely many)."""

    @property
    @abstractmethod
    def n_vertices(self) -> int:
        """Number V of extreme points (ValueError when infinite)."""

    @abstractmethod
    def cvxpy_constraints(self, var: Any) -> list:
        """cvxpy constraints stating ``var in X`` for a cvxpy Variable of shape (d,)."""

    @abstractmethod
    def sample_uniform_vertex(self, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
        """A uniformly random vertex (shape (d,)), or ``size`` i.i.d. ones (shape (size, d))."""

    @abstractmethod
    def random_point(self, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
        """A random point of X (uniform w.r.t. volume where stated), shape (d,) or (size, d)."""

    def __repr__(self) -> str:  # pragma: no cover - cosmetic
        return f"{type(self).__name__}(d={self.d})"


def _size(size: int | None) -> int | None:
    return None if size is None else check_int(size, "size", lo=1)


def _shape(size: int | None, d: int) -> tuple[int, ...]:
    return (d,) if size is None else (size, d)


# ---------------------------------------------------------------------------------------------
# probability simplex
# ---------------------------------------------------------------------------------------------


class Simplex(FeasibleSet):
    """The probability simplex Delta_d = {x in R^d : x >= 0, sum_i x_i = 1} (vertices e_1..e_d)."""

    def __init__(self, d: int) -> None:
        self.d = check_size(d, "d", lo=1)

    def contains(self, x: Any, tol: float = 1e-9) -> bool | np.ndarray:
        arr = self._points(x)
        tol = check_positive(tol, "tol", allow_zero=True)
        ok = np.all(arr >= -tol, axis=-1) & (np.abs(arr.sum(axis=-1) - 1.0) <= tol)
        return bool(ok) if arr.ndim == 1 else ok

    def lmo(self, g: Any) -> np.ndarray:
        g = self._points(g, "g")
        idx = np.argmin(g, axis=-1)
        out = np.zeros_like(g)
        np.put_along_axis(out, np.asarray(idx)[..., None], 1.0, axis=-1)
        return out

    def project(self, x: Any) -> np.ndarray:
        return project_simplex(self._points(x), 1.0)

    def diameter(self, p: float) -> float:
        p = check_exponent(p)
        if self.d == 1:
            return 0.0
        return 1.0 if math.isinf(p) else 2.0 ** (1.0 / p)

    def center_radius(self, p: float) -> float:
        p = check_exponent(p)
        d = self.d
        return float(lp_norm(np.eye(1, d)[0] - 1.0 / d, p))

    def center(self) -> np.ndarray:
        return np.full(self.d, 1.0 / self.d)

    def vertices(self) -> np.ndarray:
        return np.eye(self.d)

    @property
    def n_vertices(self) -> int:
        return self.d

    def cvxpy_constraints(self, var: Any) -> list:
        cp = require("cvxpy")

        return [var >= 0, cp.sum(var) == 1]

    def sample_uniform_vertex(self, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
        rng = check_rng(rng)
        size = _size(size)
        idx = rng.integers(self.d, size=size)
        return np.eye(self.d)[idx]

    def random_point(self, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
        """Uniform on the simplex (Dirichlet(1, ..., 1))."""
        rng = check_rng(rng)
        size = _size(size)
        return rng.dirichlet(np.ones(self.d), size=size)

    def __repr__(self) -> str:
        return f"Simplex(d={self.d})"


# ---------------------------------------------------------------------------------------------
# l_p balls
# ---------------------------------------------------------------------------------------------


class LpBall(FeasibleSet):
    """The l_p ball {x in R^d : ||x||_p <= radius}, p in [1, inf], centred at 0.

    Linear minimization (Spec F3): for 1 < p < inf with q the dual exponent,
    argmin_{||v||_p <= r} <g, v> = -r sign(g) |g|^(q-1) / ||g||_q^(q-1) (equality case of Hölder),
    computed as -r sign(g) a^(q-1)/||a||_q^(q-1) with a = |g|/max|g| (no overflow for large q);
    p = 1: -r sign(g_i) e_i at i = argmax |g_i|;  p = inf: -r sign(g).  Where g_i = 0 the sign is
    taken as +1 so that g = 0 returns a boundary point.

    Exact diameters: the ball is symmetric, so diameter(s) = 2 center_radius(s) and
    center_radius(s) = r max_{||u||_p <= 1} ||u||_s = r d^max(0, 1/s - 1/p).
    """

    def __init__(self, d: int, p: float, radius: float = 1.0) -> None:
        self.d = check_size(d, "d", lo=1)
        self.p = check_exponent(p)
        self.radius = check_positive(radius, "radius")

    def contains(self, x: Any, tol: float = 1e-9) -> bool | np.ndarray:
        arr = self._points(x)
        tol = check_positive(tol, "tol", allow_zero=True)
        ok = np.asarray(lp_norm(arr, self.p)) <= self.radius + tol
        return bool(ok) if arr.ndim == 1 else ok

    def lmo(self, g: Any) -> np.ndarray:
        g = self._points(g, "g")
        return _lp_ball_lmo(g, self.p, self.radius)

    def project(self, x: Any) -> np.ndarray:
        x = self._points(x)
        p, r = self.p, self.radius
        if p == 1.0:
            return project_l1_ball(x, r)
        if math.isinf(p):
            return np.clip(x, -r, r)
        if p == 2.0:
            nrm = np.linalg.norm(x, axis=-1, keepdims=True)
            return x * np.minimum(1.0, r / np.maximum(nrm, 1e-300))
        if x.ndim == 1:
            return _project_lp_ball_general(x, p, r)
        return np.stack([_project_lp_ball_general(row, p, r) for row in x])

    def center_radius(self, p: float) -> float:
        s = check_exponent(p)
        inv_s = 0.0 if math.isinf(s) else 1.0 / s
        inv_p = 0.0 if math.isinf(self.p) else 1.0 / self.p
        return self.radius * float(self.d) ** max(0.0, inv_s - inv_p)

    def diameter(self, p: float) -> float:
        return 2.0 * self.center_radius(p)

    def center(self) -> np.ndarray:
        return np.zeros(self.d)

    def _finite_vertices(self) -> None:
        if 1.0 < self.p < math.inf:
            raise ValueError(
                f"the l_p ball with p = {self.p} has infinitely many extreme points; vertices exist only "
                "for p = 1 (2d vertices) and p = inf (2^d vertices)"
            )

    def vertices(self) -> np.ndarray:
        self._finite_vertices()
        d, r = self.d, self.radius
        if self.p == 1.0:
            return np.concatenate([r * np.eye(d), -r * np.eye(d)])
        if d > _MAX_CUBE_DIM:
            raise ValueError(
                f"the cube in dimension d = {d} has 2^{d} vertices; listing them needs d <= {_MAX_CUBE_DIM}"
            )
        bits = (np.arange(2**d)[:, None] >> np.arange(d)[None, :]) & 1
        return r * (2.0 * bits - 1.0)

    @property
    def n_vertices(self) -> int:
        self._finite_vertices()
        return 2 * self.d if self.p == 1.0 else 2**self.d

    def cvxpy_constraints(self, var: Any) -> list:
        cp = require("cvxpy")

        return [cp.norm(var, self.p if not math.isinf(self.p) else "inf") <= self.radius]

    def sample_uniform_vertex(self, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
        rng = check_rng(rng)
        self._finite_vertices()
        size = _size(size)
        d, r = self.d, self.radius
        if self.p == 1.0:
            idx = rng.integers(2 * d, size=size)
            sign = np.where(idx < d, r, -r)
            return np.eye(d)[idx % d] * (sign if size is None else sign[:, None])
        return r * (2.0 * rng.integers(2, size=_shape(size, d)) - 1.0)

    def random_point(self, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
        """Uniform in the ball (Barthe-Guédon-Mendelson-Naor: G_i density ~ exp(-|t|^p), W ~ Exp(1),
        x = r G / (||G||_p^p + W)^(1/p)); uniform in the cube for p = inf."""
        rng = check_rng(rng)
        size = _size(size)
        shape = _shape(size, self.d)
        p, r = self.p, self.radius
        if math.isinf(p):
            return rng.uniform(-r, r, size=shape)
        mag_p = rng.gamma(1.0 / p, 1.0, size=shape)  # |G_i|^p ~ Gamma(1/p, 1)
        sign = 2.0 * rng.integers(2, size=shape) - 1.0
        w = rng.exponential(1.0, size=None if size is None else (size, 1))
        g = sign * mag_p ** (1.0 / p)
        denom = (np.sum(mag_p, axis=-1, keepdims=size is not None) + w) ** (1.0 / p)
        return r * g / denom

    def __repr__(self) -> str:
        return f"LpBall(d={self.d}, p={self.p}, radius={self.radius})"


def _lp_ball_lmo(g: np.ndarray, p: float, r: float) -> np.ndarray:
    if p == 1.0:
        idx = np.argmax(np.abs(g), axis=-1)
        gi = np.take_along_axis(g, np.asarray(idx)[..., None], axis=-1)
        out = np.zeros_like(g)
        np.put_along_axis(out, np.asarray(idx)[..., None], np.where(gi >= 0, -r, r), axis=-1)
        return out
    sgn = np.where(g >= 0, 1.0, -1.0)
    if math.isinf(p):
        return -r * sgn
    q = dual_exponent(p)
    a = np.abs(g)
    m = a.max(axis=-1, keepdims=True)
    zero = m == 0
    a = a / np.where(zero, 1.0, m)
    w = a ** (q - 1.0)
    nrm = np.expand_dims(np.asarray(lp_norm(w, p)), -1)  # ||a^(q-1)||_p = ||a||_q^(q-1), >= 1 unless g = 0
    w = w / np.where(zero, 1.0, nrm)
    e0 = np.zeros_like(g)
    e0[..., 0] = 1.0
    w = np.where(zero, e0, w)
    return -r * sgn * w


class L1Ball(LpBall):
    """The l1 ball {||x||_1 <= radius} = conv{+-radius e_i} (2d vertices), Spec F1."""

    def __init__(self, d: int, radius: float = 1.0) -> None:
        super().__init__(d, 1.0, radius)

    def __repr__(self) -> str:
        return f"L1Ball(d={self.d}, radius={self.radius})"


# ---------------------------------------------------------------------------------------------
# general polytope
# ---------------------------------------------------------------------------------------------


class Polytope(FeasibleSet):
    """conv(V) for a finite (V, d) array of points V (Spec F1, A1: polytopes reduce to the simplex).

    ``lmo`` is an argmin over the listed points (exact); ``project`` and ``contains`` solve a small
    convex program (cvxpy/Clarabel QP for the projection, a HiGHS LP for membership), so they are
    accurate to solver tolerance (~1e-8), not to machine precision.  The listed points need not all
    be extreme; ``n_vertices`` counts the listed points.
    """

    def __init__(self, vertices: Any) -> None:
        v = check_array(vertices, "vertices", ndim=2)
        if v.shape[0] < 1 or v.shape[1] < 1:
            raise ValueError(f"vertices must be a non-empty (V, d) array, got shape {v.shape}")
        self.V = v
        self.d = v.shape[1]

    def contains(self, x: Any, tol: float = 1e-9) -> bool | np.ndarray:
        arr = self._points(x)
        tol = check_positive(tol, "tol", allow_zero=True)
        if arr.ndim == 2:
            return np.array([self.contains(row, tol) for row in arr])
        # LP: min t  s.t.  |V^T w - x| <= t, w >= 0, sum w = 1  (residual in l_inf)
        nv, d = self.V.shape
        c = np.zeros(nv + 1)
        c[-1] = 1.0
        a_ub = np.block([[self.V.T, -np.ones((d, 1))], [-self.V.T, -np.ones((d, 1))]])
        b_ub = np.concatenate([arr, -arr])
        a_eq = np.concatenate([np.ones(nv), [0.0]])[None, :]
        res = optimize.linprog(
            c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0], bounds=[(0, None)] * (nv + 1), method="highs"
        )
        if res.status != 0:  # pragma: no cover - solver failure
            raise RuntimeError(f"membership LP failed: {res.message}")
        scale = max(1.0, float(np.abs(self.V).max()))
        return bool(res.fun <= tol + 1e-9 * scale)

    def lmo(self, g: Any) -> np.ndarray:
        g = self._points(g, "g")
        idx = np.argmin(g @ self.V.T, axis=-1)
        return self.V[idx].copy()

    def project(self, x: Any) -> np.ndarray:
        arr = self._points(x)
        if arr.ndim == 2:
            return np.stack([self.project(row) for row in arr])
        cp = require("cvxpy")

        w = cp.Variable(self.V.shape[0], nonneg=True)
        prob = cp.Problem(cp.Minimize(cp.sum_squares(self.V.T @ w - arr)), [cp.sum(w) == 1])
        try:
            prob.solve(solver=cp.CLARABEL, **_CLARABEL_TIGHT)
        except cp.error.SolverError:  # pragma: no cover - retry at default tolerances
            prob.solve(solver=cp.CLARABEL)
        if w.value is None:  # pragma: no cover - solver failure
            raise RuntimeError(f"projection QP failed with status {prob.status}")
        wv = np.clip(w.value, 0.0, None)
        y = (wv / wv.sum()) @ self.V
        return self._polish_projection(arr, y, wv)

    def _polish_projection(self, x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Refine the solver's projection to machine precision on its support S = {w_i > 1e-7 max w}:
        solve the equality-constrained least squares min ||V_S^T u - x||^2, sum u = 1 (KKT system), and
        keep it if u >= 0 and the optimality condition <x - y, v_i - y> <= 0 (all i) holds better."""
        support = w > 1e-7 * w.max()
        vs = self.V[support]
        k = vs.shape[0]
        kkt = np.zeros((k + 1, k + 1))
        kkt[:k, :k] = vs @ vs.T
        kkt[:k, k] = kkt[k, :k] = 1.0
        rhs = np.concatenate([vs @ x, [1.0]])
        sol = np.linalg.lstsq(kkt, rhs, rcond=None)[0][:k]
        if np.any(sol < -1e-12):
            return y
        y_pol = np.clip(sol, 0.0, None) / np.clip(sol, 0.0, None).sum() @ vs

        def violation(z: np.ndarray) -> float:
            return float(np.max((self.V - z) @ (x - z)))

        return y_pol if violation(y_pol) <= max(violation(y), 0.0) + 1e-14 * (1 + np.abs(x).max()) ** 2 else y

    def diameter(self, p: float) -> float:
        p = check_exponent(p)
        best = 0.0
        chunk = max(1, 2_000_000 // max(1, self.V.shape[0] * self.d))
        for i in range(0, self.V.shape[0], chunk):
            diff = self.V[i : i + chunk, None, :] - self.V[None, :, :]
            best = max(best, float(np.max(lp_norm(diff, p))))
        return best

    def center_radius(self, p: float) -> float:
        p = check_exponent(p)
        return float(np.max(lp_norm(self.V - self.center(), p)))

    def center(self) -> np.ndarray:
        return self.V.mean(axis=0)

    def vertices(self) -> np.ndarray:
        return self.V.copy()

    @property
    def n_vertices(self) -> int:
        return self.V.shape[0]

    def cvxpy_constraints(self, var: Any) -> list:
        cp = require("cvxpy")

        w = cp.Variable(self.V.shape[0], nonneg=True)
        return [var == self.V.T @ w, cp.sum(w) == 1]

    def sample_uniform_vertex(self, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
        rng = check_rng(rng)
        idx = rng.integers(self.V.shape[0], size=_size(size))
        return self.V[idx].copy()

    def random_point(self, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
        """A random point V^T w with w ~ Dirichlet(1) on the vertex weights (not volume-uniform)."""
        rng = check_rng(rng)
        w = rng.dirichlet(np.ones(self.V.shape[0]), size=_size(size))
        return w @ self.V

    def __repr__(self) -> str:
        return f"Polytope(n_vertices={self.V.shape[0]}, d={self.d})"


# --------------------------------------------------------------------------------------------------------------
# Vertex oracle (Frank-Wolfe over polytopes)
# --------------------------------------------------------------------------------------------------------------

VertexScores = Callable[[np.ndarray], np.ndarray]
VertexMove = Callable[[np.ndarray, int, float], None]


def vertex_oracle(fset: Any) -> tuple[int, VertexScores, VertexMove]:
    """The linear-minimization oracle over the vertex set V of a polytope, for Frank-Wolfe methods.

    Returns ``(|V|, scores, move)``: ``scores(g)`` is the (|V|,) array of <v, g> over the vertices (selection
    by report-noisy-max or the exponential mechanism reads it), and ``move(x, j, eta)`` performs the
    Frank-Wolfe step x <- (1 - eta) x + eta v_j in place. Simplex and l1 ball use their closed forms (no
    vertex matrix); a :class:`Polytope` or the cube (p = inf, small d) use their vertex matrix.
    """
    if isinstance(fset, Simplex):
        def move_simplex(x: np.ndarray, j: int, eta: float) -> None:
            x *= 1.0 - eta
            x[j] += eta

        return fset.d, lambda g: g, move_simplex
    if isinstance(fset, LpBall) and fset.p == 1.0:
        d, r = fset.d, fset.radius

        def scores_l1(g: np.ndarray) -> np.ndarray:
            s = np.empty(2 * d)
            np.multiply(g, r, out=s[:d])
            np.multiply(g, -r, out=s[d:])
            return s

        def move_l1(x: np.ndarray, j: int, eta: float) -> None:
            x *= 1.0 - eta
            x[j % d] += eta * (r if j < d else -r)

        return 2 * d, scores_l1, move_l1
    if isinstance(fset, (Polytope, LpBall)):
        V = fset.vertices()  # Polytope; or the cube (p = inf) for small d; raises for 1 < p < inf

        def move_poly(x: np.ndarray, j: int, eta: float) -> None:
            x *= 1.0 - eta
            x += eta * V[j]

        return V.shape[0], lambda g: V @ g, move_poly
    raise ValueError(
        f"Poly-SFW needs a polytope (Simplex, L1Ball, Polytope or a small cube); got {type(fset).__name__}"
    )
