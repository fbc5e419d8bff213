r"""Nonconvex robust regression with an exact finite population and exact stationarity measures (Spec N1).

Loss. For a record ``z = (a, b)`` and a residual ``r = <a, x> - b``,

.. math:: f(x; z) = \phi(r), \qquad \phi(t) = h(t) - \frac{\rho_0}{2} t^2,

with ``h`` convex: ``kind="smooth"``: the Huber function ``h_tau(t) = t^2/(2 tau)`` for ``|t| <= tau`` and
``|t| - tau/2`` otherwise; ``kind="nonsmooth"``: ``h(t) = |t|``. The concave part makes the loss a robust,
bounded-influence regression loss (``phi'(t) = h'(t) - rho0 t`` decreases for large residuals) and makes
``f`` nonconvex but *weakly convex*: where ``h`` is twice differentiable,
``nabla^2 f = (h''(r) - rho0) a a^T >= -rho0 a a^T >= -rho0 ||a||_2^2 I`` (and the kinks of ``h`` are convex).

Constants, for records with ``||a||_inf <= B_inf``, ``||a||_2 <= B_2``, ``|b| <= B_b`` and feasible sets
(l1 ball of radius ``r``, simplex) with ``R = max_x ||x||_1`` (``r``, resp. 1), so that every residual
satisfies ``|r| <= t_max = B_inf R + B_b`` (Hölder):

* ``G = max_{0 <= t <= t_max} |phi'(t)|`` (computed exactly: ``phi'`` is piecewise linear, the maximum is
  at ``0+``, ``min(tau, t_max)`` or ``t_max``);
* ``L0 = G B_inf`` (l1 setup, gradients ``phi'(r) a`` in l_inf); ``lipschitz_l2 = G B_2`` (Euclidean);
* ``L1 = max(|1/tau - rho0|, rho0) B_inf^2`` for the smooth kind (``|phi''| <= max(|1/tau - rho0|, rho0)``),
  ``inf`` for the nonsmooth kind; ``L2 = inf`` (``phi''`` jumps at ``+-tau``);
* ``rho = rho0 B_2^2``: every ``f(., z)`` is ``rho``-weakly convex in ``||.||_2`` (``f + rho/2 ||.||_2^2`` is
  convex); ``rho_population = rho0 lambda_max(E[a a^T])`` bounds the weak convexity of ``F`` itself.

Population. The distribution is uniform over ``m`` fixed atoms ``(a_i, b_i)`` (records are drawn with
replacement), so ``F(x) = (1/m) sum_i phi(<a_i, x> - b_i)`` and its gradient are *exact*
(``exact_population = True``).

Stationarity measures (Spec N1), both on the population objective:

* Frank-Wolfe gap ``gap(x) = max_{v in X} <grad F(x), x - v>`` in closed form:
  ``<g, x> + r ||g||_inf`` on the l1 ball, ``<g, x> - min_i g_i`` on the simplex
  (:meth:`frank_wolfe_gaps`, vectorized over points; zero exactly at the stationary points of F on X);
* Moreau envelope gradient for the weakly convex (possibly nonsmooth) loss:
  ``F_{1/beta}(x) = min_{y in X} F(y) + (beta/2) ||y - x||_2^2`` with ``beta > rho_population``;
  ``grad F_{1/beta}(x) = beta (x - prox(x))`` and ``||grad F_{1/beta}(x)||_2`` is the standard near-stationarity
  measure (Davis and Drusvyatskiy 2019): ``prox(x)`` is within ``||grad||/beta`` of ``x`` and nearly stationary.
  The prox subproblem is strongly convex; it is solved with cvxpy + Clarabel in the DCP form
  ``(1/m) sum_i h(r_i) + ||P^{1/2} y||^2 - <c, y>`` with ``P = (beta/2) I - (rho0/2m) A^T A`` positive
  semidefinite (one compiled, parametrized problem per ``beta``) (:meth:`moreau_prox`,
  :meth:`moreau_gradient_norm`).

References: Bassily, Guzmán and Menart (2021), NeurIPS (Spec N1); Davis and Drusvyatskiy (2019), SIAM J.
Optim. (Moreau envelope as stationarity measure of weakly convex functions).

The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from dpsco_lib._optional import require
from dpsco_lib._validation import check_array, check_in_range, check_int, check_positive, check_rng, check_size
from dpsco_lib.geometry.sets import L1Ball, LpBall, Simplex
from dpsco_lib.problems.base import CLARABEL_SETTINGS, Problem
from dpsco_lib.problems.dataset import Dataset

__all__ = ["KINDS", "NonconvexRegression", "phi_derivative_bound", "random_nonconvex_regression"]

KINDS = ("smooth", "nonsmooth")
_RTOL = 1e-9


def phi_derivative_bound(kind: str, tau: float, rho0: float, t_max: float) -> float:
    r"""``G = max_{0 <= t <= t_max} |phi'(t)|`` for ``phi = h - rho0 t^2/2`` (exact).

    ``phi'(t) = h'(t) - rho0 t`` with ``h'(t) = min(t/tau, 1)`` (smooth) or ``1`` for ``t > 0`` (nonsmooth) is
    piecewise linear on ``[0, t_max]``, so ``|phi'|`` attains its maximum at a breakpoint: ``0+``,
    ``min(tau, t_max)`` or ``t_max``.
    """
    if kind == "nonsmooth":
        return max(1.0, abs(1.0 - rho0 * t_max))
    c = min(tau, t_max)
    return max(abs(c / tau - rho0 * c), abs(min(t_max / tau, 1.0) - rho0 * t_max))


class NonconvexRegression(Problem):
    r"""Weakly convex robust regression ``phi(<a, x> - b)``, ``phi = h - rho0 t^2/2``, over an l1 ball or a
    simplex, with an exact finite population (Spec N1). See the module docstring for the constants.

    Parameters
    ----------
    atoms_X : array (m, d), atoms_y : array (m,)
        The population: records are uniform over these atoms.
    feasible_set : L1Ball or Simplex
    kind : {"smooth", "nonsmooth"}
        Huber (``tau``) or absolute value for the convex part ``h``.
    tau : float
        Huber width (smooth kind; ignored otherwise).
    rho0 : float
        Curvature of the concave part (>= 0).
    feature_bound : float, optional
        ``B_inf >= ||a||_inf`` of every admissible record (default: the atoms' maximum).
    feature_bound_l2 : float, optional
        ``B_2 >= ||a||_2`` (default: the atoms' maximum).
    label_bound : float, optional
        ``B_b >= |b|`` (default: the atoms' maximum).
    """

    convex = False
    needs_labels = True

    def __init__(
        self,
        atoms_X: Any,
        atoms_y: Any,
        feasible_set: Any,
        *,
        kind: str = "smooth",
        tau: float = 0.25,
        rho0: float = 0.5,
        feature_bound: float | None = None,
        feature_bound_l2: float | None = None,
        label_bound: float | None = None,
        name: str = "nonconvex_regression",
    ) -> None:
        if not isinstance(feasible_set, (L1Ball, Simplex)) and not (
            isinstance(feasible_set, LpBall) and feasible_set.p == 1.0
        ):
            raise ValueError(f"feasible_set must be an L1Ball or a Simplex, got {type(feasible_set).__name__}")
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        d = feasible_set.d
        A = check_array(atoms_X, "atoms_X", ndim=2)
        if A.shape[1] != d:
            raise ValueError(f"atoms_X must have d = {d} columns, got shape {A.shape}")
        y = check_array(atoms_y, "atoms_y", shape=(A.shape[0],))
        self.feasible_set = feasible_set
        self.p = 1.0
        self.kind = kind
        self.tau = check_positive(tau, "tau")
        self.rho0 = check_positive(rho0, "rho0", allow_zero=True)
        amax = float(np.max(np.abs(A)))
        a2max = float(np.max(np.linalg.norm(A, axis=1)))
        bmax = float(np.max(np.abs(y)))
        self.B_inf = amax if feature_bound is None else check_positive(feature_bound, "feature_bound")
        self.B_2 = a2max if feature_bound_l2 is None else check_positive(feature_bound_l2, "feature_bound_l2")
        self.B_b = bmax if label_bound is None else check_positive(label_bound, "label_bound", allow_zero=True)
        if amax > self.B_inf * (1 + _RTOL) or a2max > self.B_2 * (1 + _RTOL) or bmax > self.B_b * (1 + _RTOL):
            raise ValueError("the atoms violate the declared bounds feature_bound / feature_bound_l2 / label_bound")
        if self.B_2 > self.B_inf * math.sqrt(d) * (1 + _RTOL):
            self.B_2 = self.B_inf * math.sqrt(d)  # ||a||_2 <= sqrt(d) ||a||_inf always
        self.atoms_X = A
        self.atoms_y = y
        self.m = A.shape[0]
        R = 1.0 if isinstance(feasible_set, Simplex) else float(feasible_set.radius)
        self.t_max = self.B_inf * R + self.B_b
        G = phi_derivative_bound(kind, self.tau, self.rho0, self.t_max)
        self.G = G
        self.L0 = G * self.B_inf
        self.lipschitz_l2 = G * self.B_2
        if kind == "smooth":
            curv = max(abs(1.0 / self.tau - self.rho0), self.rho0) if self.tau < self.t_max else abs(
                1.0 / self.tau - self.rho0)
            self.L1 = curv * self.B_inf**2
        else:
            self.L1 = math.inf
        self.L2 = math.inf
        self.rho = self.rho0 * self.B_2**2
        self.rho_population = self.rho0 * float(np.linalg.eigvalsh(A.T @ A / self.m)[-1])
        self.exact_population = True
        self.spec = "N1"
        self.name = name
        self._cache = {}
        self._prox_cache: dict[float, Any] = {}

    # ------------------------------------------------------------------ pickling (cvxpy objects are local)
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_prox_cache"] = {}
        return state

    def _bounds_text(self) -> str:
        return f"||a||_inf <= {self.B_inf}, ||a||_2 <= {self.B_2}, |b| <= {self.B_b}"

    # ------------------------------------------------------------------ the scalar loss
    def phi(self, t: Any) -> np.ndarray:
        """``phi(t) = h(t) - rho0 t^2/2`` elementwise."""
        t = np.asarray(t, dtype=np.float64)
        at = np.abs(t)
        if self.kind == "smooth":
            h = np.where(at <= self.tau, t * t / (2.0 * self.tau), at - 0.5 * self.tau)
        else:
            h = at
        return h - 0.5 * self.rho0 * t * t

    def dphi(self, t: Any) -> np.ndarray:
        """``phi'(t)`` (for the nonsmooth kind the subgradient with ``sign(0) = 0``)."""
        t = np.asarray(t, dtype=np.float64)
        hp = np.clip(t / self.tau, -1.0, 1.0) if self.kind == "smooth" else np.sign(t)
        return hp - self.rho0 * t

    # ------------------------------------------------------------------ Problem oracle
    def _loss(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return self.phi(data.X @ x - data.y)

    def _grad(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return self.dphi(data.X @ x - data.y)[:, None] * data.X

    def _mean_grad(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return self.dphi(data.X @ x - data.y) @ data.X / data.n

    def _sample(self, n: int, rng: np.random.Generator) -> Dataset:
        idx = rng.integers(0, self.m, size=n)
        return Dataset(self.atoms_X[idx], self.atoms_y[idx])

    def _row_violation(self, data: Dataset) -> np.ndarray:
        X = data.X
        return (
            (np.max(np.abs(X), axis=1) > self.B_inf * (1 + _RTOL))
            | (np.linalg.norm(X, axis=1) > self.B_2 * (1 + _RTOL))
            | (np.abs(data.y) > self.B_b * (1 + _RTOL))
        )

    def _clip_rows(self, data: Dataset, bad: np.ndarray) -> Dataset:
        """Clip features to ``[-B_inf, B_inf]``, then rescale to ``||a||_2 <= B_2``; clip ``b`` to ``[-B_b, B_b]``."""
        X = np.clip(np.array(data.X), -self.B_inf, self.B_inf)
        nrm = np.linalg.norm(X, axis=1)
        X *= np.where(nrm > self.B_2, self.B_2 / np.maximum(nrm, 1e-300), 1.0)[:, None]
        return Dataset(X, np.clip(data.y, -self.B_b, self.B_b))

    def _population_risk(self, x: np.ndarray) -> float:
        return float(np.mean(self.phi(self.atoms_X @ x - self.atoms_y)))

    def _population_grad(self, x: np.ndarray) -> np.ndarray:
        return self.dphi(self.atoms_X @ x - self.atoms_y) @ self.atoms_X / self.m

    # ------------------------------------------------------------------ stationarity: Frank-Wolfe gap
    def population_grads(self, X: Any) -> np.ndarray:
        """``grad F`` at every row of ``X`` (k, d) -> (k, d) (exact)."""
        X = self._pt(X, self.d, "X", batch=True)
        X2 = np.atleast_2d(X)
        R = X2 @ self.atoms_X.T - self.atoms_y
        return self.dphi(R) @ self.atoms_X / self.m

    def frank_wolfe_gaps(self, X: Any) -> np.ndarray:
        r"""Population Frank-Wolfe gaps ``max_{v in X} <grad F(x), x - v>`` at every row of ``X`` (Spec N1).

        Closed form: ``<g, x> + r ||g||_inf`` (l1 ball of radius r), ``<g, x> - min_i g_i`` (simplex).
        """
        X = np.atleast_2d(self._pt(X, self.d, "X", batch=True))
        if not np.all(self.feasible_set.contains(X, 1e-6)):
            raise ValueError(f"every row of X must lie in the feasible set {self.feasible_set!r}")
        G = self.population_grads(X)
        inner = np.einsum("ij,ij->i", G, X)
        if isinstance(self.feasible_set, Simplex):
            return inner - G.min(axis=1)
        return inner + float(self.feasible_set.radius) * np.abs(G).max(axis=1)

    # ------------------------------------------------------------------ stationarity: Moreau envelope
    def default_beta(self) -> float:
        """``beta = 2 rho`` (per-record weak convexity), the prox parameter of Spec N1's method."""
        return 2.0 * self.rho

    def _prox_problem(self, beta: float) -> Any:
        cp = require("cvxpy")

        key = float(beta)
        if key in self._prox_cache:
            return self._prox_cache[key]
        A, b, m = self.atoms_X, self.atoms_y, self.m
        P = 0.5 * beta * np.eye(self.d) - (0.5 * self.rho0 / m) * (A.T @ A)
        w, V = np.linalg.eigh(P)
        if w[0] < -1e-12 * max(1.0, abs(w[-1])):
            raise ValueError(
                f"beta must exceed rho_population = {self.rho_population:.6g} so that the prox subproblem is "
                f"convex, got beta={beta!r}"
            )
        Rt = (V * np.sqrt(np.maximum(w, 0.0))).T  # ||Rt y||^2 = y^T P y
        y = cp.Variable(self.d)
        c = cp.Parameter(self.d)
        r = A @ y - b
        if self.kind == "smooth":
            h = cp.sum(cp.huber(r, self.tau)) / (2.0 * self.tau * m)
        else:
            h = cp.sum(cp.abs(r)) / m
        # F(y) + beta/2 ||y - x||^2 = (1/m) sum h(r_i) + y^T P y + <rho0 A^T b / m, y> - beta <x, y> + const
        lin = (self.rho0 / m) * (A.T @ b)
        obj = h + cp.sum_squares(Rt @ y) + lin @ y - c @ y
        prob = cp.Problem(cp.Minimize(obj), self.feasible_set.cvxpy_constraints(y))
        self._prox_cache[key] = (prob, y, c)
        return self._prox_cache[key]

    def moreau_prox(self, x: Any, beta: float | None = None) -> np.ndarray:
        r"""``prox(x) = argmin_{y in X} F(y) + (beta/2) ||y - x||_2^2`` (cvxpy + Clarabel).

        ``beta`` defaults to :meth:`default_beta` and must exceed ``rho_population``.
        """
        cp = require("cvxpy")

        x = self._pt(x, self.d, "x")
        beta = self.default_beta() if beta is None else check_positive(beta, "beta")
        if beta <= self.rho_population:
            raise ValueError(f"beta must exceed rho_population = {self.rho_population:.6g}, got {beta!r}")
        prob, y, c = self._prox_problem(beta)
        c.value = beta * x
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            try:
                prob.solve(solver=cp.CLARABEL, **CLARABEL_SETTINGS)
            except cp.error.SolverError:  # pragma: no cover - retry at default tolerances
                prob.solve(solver=cp.CLARABEL)
        if prob.status not in ("optimal", "optimal_inaccurate"):  # pragma: no cover
            raise RuntimeError(f"cvxpy/Clarabel failed on the prox subproblem: status {prob.status}")
        return self.feasible_set.project(np.asarray(y.value, dtype=np.float64))

    def moreau_gradient_norm(self, x: Any, beta: float | None = None) -> float:
        r"""``||grad F_{1/beta}(x)||_2 = beta ||x - prox(x)||_2`` (Spec N1's weakly convex stationarity measure)."""
        x = self._pt(x, self.d, "x")
        beta = self.default_beta() if beta is None else check_positive(beta, "beta")
        return float(beta * np.linalg.norm(x - self.moreau_prox(x, beta)))

    def moreau_envelope(self, x: Any, beta: float | None = None) -> float:
        """``F_{1/beta}(x) = F(prox(x)) + (beta/2) ||prox(x) - x||^2``."""
        x = self._pt(x, self.d, "x")
        beta = self.default_beta() if beta is None else check_positive(beta, "beta")
        y = self.moreau_prox(x, beta)
        return float(self._population_risk(y) + 0.5 * beta * float(np.sum((y - x) ** 2)))


def random_nonconvex_regression(
    d: int,
    m: int,
    rng: np.random.Generator,
    *,
    kind: str = "smooth",
    set_kind: str = "l1ball",
    radius: float = 1.0,
    feature_scale: float = 1.0,
    noise: float = 0.1,
    outlier_fraction: float = 0.2,
    tau: float | None = None,
    rho0: float | None = None,
    sparsity: int = 3,
) -> NonconvexRegression:
    r"""A planted robust regression instance of :class:`NonconvexRegression` (Spec N1).

    Atoms: ``a = feature_scale * (Rademacher vector)`` (so ``B_inf = feature_scale``,
    ``B_2 = feature_scale sqrt(d)``), a ``sparsity``-sparse ``x_true`` with ``||x_true||_1 = 0.8 R``,
    ``b = <a, x_true> + noise * U[-1, 1]``; a fraction ``outlier_fraction`` of the labels is replaced by a
    uniform draw on ``[-B_b, B_b]`` with ``B_b = feature_scale R + noise`` (gross outliers: the reason for a
    bounded-influence nonconvex loss). Defaults: ``tau = t_max/8``, ``rho0 = 1/(2 t_max)`` so that
    ``phi`` is increasing in ``|t|`` on the feasible residual range.
    """
    rng = check_rng(rng)
    d = check_size(d, "d", lo=1)
    m = check_int(m, "m", lo=1)
    s = check_positive(feature_scale, "feature_scale")
    noise = check_positive(noise, "noise", allow_zero=True)
    frac = check_in_range(outlier_fraction, "outlier_fraction", 0.0, 1.0)
    k = check_int(sparsity, "sparsity", lo=1, hi=d)
    if set_kind == "l1ball":
        fset: Any = L1Ball(d, check_positive(radius, "radius"))
        R = float(radius)
        x_true = np.zeros(d)
        idx = rng.choice(d, size=k, replace=False)
        x_true[idx] = rng.choice([-1.0, 1.0], size=k) * (0.8 * R / k)
    elif set_kind == "simplex":
        fset = Simplex(d)
        R = 1.0
        x_true = np.full(d, 0.2 / d)
        idx = rng.choice(d, size=k, replace=False)
        x_true[idx] += 0.8 / k
    else:
        raise ValueError(f"set_kind must be 'l1ball' or 'simplex', got {set_kind!r}")
    A = s * (2.0 * rng.integers(0, 2, size=(m, d)) - 1.0)
    B_b = s * R + noise
    y = np.clip(A @ x_true + noise * rng.uniform(-1.0, 1.0, size=m), -B_b, B_b)
    out = rng.random(m) < frac
    y[out] = rng.uniform(-B_b, B_b, size=int(out.sum()))
    t_max = s * R + B_b
    tau = t_max / 8.0 if tau is None else check_positive(tau, "tau")
    rho0 = 1.0 / (2.0 * t_max) if rho0 is None else check_positive(rho0, "rho0", allow_zero=True)
    pr = NonconvexRegression(
        A, y, fset, kind=kind, tau=tau, rho0=rho0, feature_bound=s, feature_bound_l2=s * math.sqrt(d),
        label_bound=B_b, name=f"nonconvex_regression_{kind}_{set_kind}_d{d}",
    )
    pr.x_true = x_true
    return pr
