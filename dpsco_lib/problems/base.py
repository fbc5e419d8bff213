"""Base classes: a stochastic convex problem (:class:`Problem`) and a stochastic convex-concave saddle
point problem (:class:`SaddleProblem`), with their declared constants and exact population optima.

Conventions (Spec S1 setup and the l1 setting of A1):

- the setup norm is ||.||_p on the feasible set; gradients are measured in the dual norm ||.||_q,
  1/p + 1/q = 1.  ``L0`` bounds ||grad f(x; z)||_q, ``L1`` bounds
  ||grad f(x; z) - grad f(x'; z)||_q / ||x - x'||_p, ``L2`` bounds the Lipschitz constant of every
  partial derivative's gradient (second-order smoothness; 0 for quadratics), for every record z the
  data validation accepts and every feasible x, x'.  Each constant is a true bound (tests check it).
- for saddle problems the setting is the product of the two sets with the sum norm
  ||(x, y)|| = ||x||_p + ||y||_1 and gradients in ||.||_inf, as in the l1 setting of Spec A1.
- per-sample losses and gradients are vectorized over the records (no Python loops).
- exact optima, best responses and duality gaps are computed with cvxpy and the Clarabel interior
  point solver at tight tolerances, and cached.

The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from __future__ import annotations

import math
import warnings
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from dpsco_lib._optional import require
from dpsco_lib._validation import check_array, check_int, check_rng
from dpsco_lib.geometry.norms import dual_exponent, lp_norm
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.stream import BlockSampler, DataStream, problem_stream

__all__ = ["Problem", "SaddleProblem", "solve_cvxpy"]

#: Clarabel tolerances used for every exact optimum (tight enough for 1e-7 checks).
CLARABEL_SETTINGS: dict[str, float] = {
    "tol_gap_abs": 1e-10,
    "tol_gap_rel": 1e-10,
    "tol_feas": 1e-10,
}

FEASIBILITY_TOL = 1e-6

#: Records are checked against the declared bounds in row blocks of at most this many entries: every family's
#: ``_row_violation`` is row-wise, so the answer is the same, while the temporaries (|X|, powers of |X|) stay
#: small and cache-resident instead of costing one or two extra (n, d) arrays (8 GB each at n = 1e5, d = 1e4).
_VALIDATION_BLOCK_ENTRIES = 1 << 20


def _blocked_row_violation(check: Any, data: Dataset) -> np.ndarray:
    """``check(data)`` (a row-wise boolean test) evaluated on row blocks of ``data`` and concatenated."""
    n = data.n
    rows = max(1, _VALIDATION_BLOCK_ENTRIES // max(1, data.d))
    if n <= rows:
        return np.asarray(check(data), dtype=bool)
    return np.concatenate([np.asarray(check(data[lo:lo + rows]), dtype=bool) for lo in range(0, n, rows)])


#: Solvers tried, in order, after Clarabel fails (where installed; a solver that does not apply to the problem's
#: cone types raises cvxpy's SolverError and is skipped), at tolerances close to Clarabel's tight settings.
_FALLBACK_SOLVERS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("ECOS", {"abstol": 1e-10, "reltol": 1e-10, "feastol": 1e-10, "max_iters": 500}),
    ("SCS", {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 100_000}),
    ("OSQP", {"eps_abs": 1e-10, "eps_rel": 1e-10, "max_iter": 100_000, "polish": True}),
)
_SOLVED = ("optimal", "optimal_inaccurate")


def solve_cvxpy(prob: Any, what: str) -> None:
    """Solve a cvxpy problem with Clarabel at tight tolerances, then fall back to other solvers.

    Order: Clarabel with :data:`CLARABEL_SETTINGS`, Clarabel at its default tolerances, then ECOS, SCS and OSQP
    (whichever are installed and apply to the problem). The first status "optimal" or "optimal_inaccurate" is
    kept. Raises RuntimeError naming ``what``, the problem's size and every solver tried with its outcome if none
    succeeds, or at once if Clarabel certifies the problem infeasible or unbounded (never cvxpy's bare
    SolverError).
    """
    cp = require("cvxpy")

    installed = set(cp.installed_solvers())
    attempts = [("CLARABEL", CLARABEL_SETTINGS), ("CLARABEL", {})]
    attempts += [(name, kw) for name, kw in _FALLBACK_SOLVERS if name in installed]
    tried: list[str] = []
    with warnings.catch_warnings():
        # Clarabel may stop a hair short of the tight tolerances on exponential cones; the status
        # "optimal_inaccurate" is accepted and the callers' tests check the resulting gaps to 1e-7.
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")
        for name, kw in attempts:
            label = f"{name}{' (tight)' if kw is CLARABEL_SETTINGS else ''}"
            try:
                prob.solve(solver=name, **kw)
            except cp.error.SolverError as exc:
                tried.append(f"{label}: SolverError ({str(exc).splitlines()[0][:80]})")
                continue
            if prob.status in _SOLVED:
                return
            tried.append(f"{label}: status {prob.status}")
            if name == "CLARABEL" and prob.status in ("infeasible", "unbounded"):
                break  # a certificate, not a numerical failure: other solvers cannot do better
    size = f"{prob.size_metrics.num_scalar_variables} variables, {len(prob.constraints)} constraints"
    raise RuntimeError(f"cvxpy failed to solve {what} ({size}); solvers tried: {'; '.join(tried)}")


def _check_data(data: Any, d: int, *, labels: bool, extras: tuple[str, ...] = ()) -> Dataset:
    if isinstance(data, tuple) and len(data) == 2 and not extras:
        data = Dataset(data[0], data[1])  # a tuple (X, y) of array-likes is the dataset of its records
    if not isinstance(data, Dataset):
        raise ValueError(
            f"data must be a dpsco_lib.problems.Dataset or a tuple (X, y) of arrays, got {type(data).__name__}"
        )
    if data.d != d:
        raise ValueError(f"data must have d = {d} feature columns, got {data.d}")
    if labels and data.y is None:
        raise ValueError("data must carry labels y for this problem")
    for key in extras:
        if key not in data.extras:
            raise ValueError(f"data must carry the extra array {key!r}")
    return data


class _Checks:
    """Shared validation of points."""

    @staticmethod
    def _pt(x: Any, d: int, name: str, *, batch: bool = False) -> np.ndarray:
        arr = check_array(x, name, ndim=(1, 2) if batch else 1)
        if arr.shape[-1] != d:
            raise ValueError(f"{name} must have length d = {d}, got shape {arr.shape}")
        return arr

    @staticmethod
    def _feasible(x: np.ndarray, fset: Any, name: str) -> np.ndarray:
        if not fset.contains(x, FEASIBILITY_TOL):
            raise ValueError(f"{name} must lie in the feasible set {fset!r} (tolerance {FEASIBILITY_TOL})")
        return x


class Problem(_Checks, ABC):
    """A stochastic convex program min_{x in X} F(x) = E_z f(x; z) in the l_p setup (Spec S1).

    Subclasses set ``feasible_set``, ``p``, ``L0``, ``L1``, ``L2``, ``exact_population`` and implement
    ``_loss``, ``_grad``, ``_sample``, ``_row_violation``, ``_clip_rows``, ``_population_risk`` and
    ``_cvxpy_population(var)`` (a cvxpy expression of the population risk, for the exact optimum).

    Attributes
    ----------
    feasible_set : FeasibleSet
    p : float
        Setup norm exponent; gradients are bounded in the dual norm q = p/(p-1).
    L0, L1, L2 : float
        Lipschitz, smoothness and second-order smoothness constants (true bounds).
    exact_population : bool
        True when ``population_risk`` is the exact expectation (closed form or a finite population),
        False when it is a large independent sample (then said in the docstring).
    spec : str
        The spec ID(s) the family serves.
    """

    feasible_set: Any
    p: float
    L0: float
    L1: float
    L2: float
    exact_population: bool
    spec: str = "S1"
    convex: bool = True
    needs_labels: bool = True
    _cache: dict[str, Any]

    # ------------------------------------------------------------------ basics
    @property
    def d(self) -> int:
        return int(self.feasible_set.d)

    @property
    def q(self) -> float:
        """Dual exponent of ``p``."""
        return dual_exponent(self.p)

    def constants(self) -> dict[str, float]:
        """The declared constants {L0, L1, L2, D (p-diameter), R (p-radius about the centre)}."""
        return {
            "L0": float(self.L0),
            "L1": float(self.L1),
            "L2": float(self.L2),
            "D": float(self.feasible_set.diameter(self.p)),
            "R": float(self.feasible_set.center_radius(self.p)),
        }

    def _data(self, data: Any) -> Dataset:
        return _check_data(data, self.d, labels=self.needs_labels)

    # ------------------------------------------------------------------ per-sample oracle
    def loss(self, x: Any, data: Dataset) -> np.ndarray:
        """Per-record losses f(x; z_i), shape (n,)."""
        x = self._pt(x, self.d, "x")
        data = self._data(data)
        return self._loss(x, data)

    def grad(self, x: Any, data: Dataset) -> np.ndarray:
        """Per-record gradients grad_x f(x; z_i), shape (n, d) (vectorized)."""
        x = self._pt(x, self.d, "x")
        data = self._data(data)
        return self._grad(x, data)

    def mean_grad(self, x: Any, data: Dataset) -> np.ndarray:
        """Gradient of the empirical risk (1/n) sum_i grad f(x; z_i), shape (d,)."""
        x = self._pt(x, self.d, "x")
        data = self._data(data)
        if data.n == 0:
            raise ValueError("data must hold at least one record")
        return self._mean_grad(x, data)

    def empirical_risk(self, x: Any, data: Dataset) -> float:
        """(1/n) sum_i f(x; z_i)."""
        return float(np.mean(self.loss(x, data)))

    def _mean_grad(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return self._grad(x, data).mean(axis=0)

    # ------------------------------------------------------------------ data
    def sample(self, n: int, rng: np.random.Generator) -> Dataset:
        """n i.i.d. records from the problem's distribution (always within the declared bounds)."""
        n = check_int(n, "n", lo=1)
        rng = check_rng(rng)
        return self._sample(n, rng)

    def stream(self, n: int, rng: np.random.Generator, block_size: int | None = None) -> DataStream:
        """The records of ``sample(n, rng)`` in blocks of at most ``block_size`` (streaming data).

        Guaranteed: the blocks concatenate to ``sample(n, rng2)`` bit for bit (``rng2`` in ``rng``'s state at
        the call), ``rng`` is left at once in exactly the state ``sample`` leaves it in, and the stream can be
        iterated again with identical blocks.  Memory per pass is O(block_size x d) when the family has a block
        sampler (``stream.bounded_memory``), else the n records are sampled at once.  ``block_size`` None means
        max(1, 2^20 // d).  ValueError / TypeError name a bad n, rng or block_size.  See
        :mod:`dpsco_lib.problems.stream`.
        """
        return problem_stream(self, n, rng, block_size)

    def _block_sampler(self) -> BlockSampler | None:
        """A :class:`BlockSampler` consistent with ``_sample`` (then streams hold one block), or None."""
        return None

    def validate_data(self, data: Any, clip: bool = False) -> Dataset:
        """Check every record against the declared bounds (the constants hold only for such data).

        Records outside the bounds raise ValueError, unless ``clip=True``: then they are mapped to the
        bound (rescaled / clipped, as documented by the family) and the returned dataset records how
        many were changed in ``n_clipped``.
        """
        data = self._data(data)
        bad = _blocked_row_violation(self._row_violation, data)
        if not np.any(bad):
            return data
        if not clip:
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"data violates the declared bounds of {type(self).__name__} ({self._bounds_text()}) in "
                f"{int(np.sum(bad))} of {data.n} records (first: record {i}); pass clip=True to clip explicitly"
            )
        clipped = self._clip_rows(data, bad)
        return Dataset(clipped.X, clipped.y, dict(clipped.extras), n_clipped=int(np.sum(bad)))

    def _bounds_text(self) -> str:
        return "see the class docstring"

    # ------------------------------------------------------------------ population
    def population_risk(self, x: Any) -> float:
        """F(x) = E_z f(x; z) at a feasible x (exact, or a large sample when ``exact_population`` is False)."""
        x = self._feasible(self._pt(x, self.d, "x"), self.feasible_set, "x")
        return float(self._population_risk(x))

    def population_grad(self, x: Any) -> np.ndarray:
        """grad F(x) (same population as ``population_risk``)."""
        x = self._pt(x, self.d, "x")
        return self._population_grad(x)

    def population_optimum(self) -> tuple[np.ndarray, float]:
        """(x*, F*) = argmin / min of F over the feasible set (cvxpy + Clarabel; cached).

        x* is the solver's point mapped onto the feasible set (Euclidean projection removes the
        solver's ~1e-10 infeasibility) and F* = F(x*), so excess risks are consistent.
        """
        if "opt" not in self._cache:
            self._cache["opt"] = self._solve_population()
        x, f = self._cache["opt"]
        return x.copy(), f

    def cvxpy_optimum(self) -> tuple[np.ndarray, float]:
        """(x*, F*) from cvxpy + Clarabel, ignoring any closed form (not cached): the cross-check of
        planted optima."""
        return self._solve_population()

    def excess_risk(self, x: Any) -> float:
        """F(x) - F* (not clipped at 0: a negative value of order the solver tolerance is reported as is)."""
        _, f_star = self.population_optimum()
        return self.population_risk(x) - f_star

    def frank_wolfe_gap(self, x: Any) -> float:
        """Population stationarity gap max_{v in X} <grad F(x), x - v> (Spec N1), >= 0 on X."""
        x = self._feasible(self._pt(x, self.d, "x"), self.feasible_set, "x")
        g = self._population_grad(x)
        v = self.feasible_set.lmo(g)
        return float(g @ (x - v))

    def _solve_population(self) -> tuple[np.ndarray, float]:
        cp = require("cvxpy")

        if not self.convex:
            raise NotImplementedError(f"{type(self).__name__} is nonconvex: no cvxpy population optimum")
        var = cp.Variable(self.d)
        objective, aux = self._cvxpy_model(var)
        constraints = [*self.feasible_set.cvxpy_constraints(var), *aux]
        prob = cp.Problem(cp.Minimize(objective), constraints)
        solve_cvxpy(prob, f"the population optimum of {type(self).__name__}")
        x = self.feasible_set.project(np.asarray(var.value, dtype=np.float64))
        return x, float(self._population_risk(x))

    # ------------------------------------------------------------------ to implement
    @abstractmethod
    def _loss(self, x: np.ndarray, data: Dataset) -> np.ndarray: ...

    @abstractmethod
    def _grad(self, x: np.ndarray, data: Dataset) -> np.ndarray: ...

    @abstractmethod
    def _sample(self, n: int, rng: np.random.Generator) -> Dataset: ...

    @abstractmethod
    def _row_violation(self, data: Dataset) -> np.ndarray: ...

    @abstractmethod
    def _clip_rows(self, data: Dataset, bad: np.ndarray) -> Dataset: ...

    @abstractmethod
    def _population_risk(self, x: np.ndarray) -> float: ...

    @abstractmethod
    def _population_grad(self, x: np.ndarray) -> np.ndarray: ...

    def _cvxpy_population(self, var: Any) -> Any:  # pragma: no cover - overridden by convex families
        raise NotImplementedError

    def _cvxpy_model(self, var: Any) -> tuple[Any, list]:
        """(population objective, constraints on auxiliary variables) as cvxpy objects."""
        return self._cvxpy_population(var), []


def _dual_norm_rows(G: np.ndarray, q: float) -> np.ndarray:
    return np.asarray(lp_norm(G, q, axis=-1))


class SaddleProblem(_Checks, ABC):
    """A stochastic convex-concave saddle point problem (Spec A1 setting, X1, X2):

        min_{x in X} max_{y in Y} F(x, y) = E_z f(x, y; z).

    Duality gap Gap(x, y) = max_{y'} F(x, y') - min_{x'} F(x', y) >= 0, zero exactly at saddle points.
    Best responses, gaps and the saddle point are exact (closed forms where they exist, cvxpy + Clarabel
    otherwise).  Constants are w.r.t. ||x||_p + ||y||_1 with gradients in the dual (l_inf for p = 1).

    Subclasses implement ``_loss``, ``_grad_x``, ``_grad_y`` (both batched over k points: x of shape
    (k, dx) gives (k, n, dx)), ``_sample``, ``_row_violation``, ``_clip_rows``, ``_population_value``,
    ``_best_response_x``, ``_best_response_y`` and ``_saddle_point``.
    """

    x_set: Any
    y_set: Any
    p: float = 1.0
    L0: float
    L1: float
    L2: float
    exact_population: bool = True
    spec: str = "A1"
    needs_labels: bool = False
    _extras: tuple[str, ...] = ()
    _cache: dict[str, Any]

    @property
    def dx(self) -> int:
        return int(self.x_set.d)

    @property
    def dy(self) -> int:
        return int(self.y_set.d)

    @property
    def data_dim(self) -> int:
        """Number of feature columns of a record."""
        return self.dx

    def constants(self) -> dict[str, float]:
        return {"L0": float(self.L0), "L1": float(self.L1), "L2": float(self.L2)}

    def _data(self, data: Any) -> Dataset:
        return _check_data(data, self.data_dim, labels=self.needs_labels, extras=self._extras)

    def _xy(self, x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        x = self._pt(x, self.dx, "x", batch=True)
        y = self._pt(y, self.dy, "y", batch=True)
        if x.ndim != y.ndim or (x.ndim == 2 and x.shape[0] != y.shape[0]):
            raise ValueError(f"x and y must both be single points or batches of equal size, got {x.shape}, {y.shape}")
        return x, y

    # ------------------------------------------------------------------ per-sample oracle
    def loss(self, x: Any, y: Any, data: Dataset) -> np.ndarray:
        """Per-record values f(x, y; z_i), shape (n,)."""
        x = self._pt(x, self.dx, "x")
        y = self._pt(y, self.dy, "y")
        return self._loss(x, y, self._data(data))

    def grad_x(self, x: Any, y: Any, data: Dataset) -> np.ndarray:
        """Per-record grad_x f(x, y; z_i): shape (n, dx), or (k, n, dx) for batches x (k, dx), y (k, dy)."""
        x, y = self._xy(x, y)
        data = self._data(data)
        if x.ndim == 1:
            return self._grad_x(x[None], y[None], data)[0]
        return self._grad_x(x, y, data)

    def grad_y(self, x: Any, y: Any, data: Dataset) -> np.ndarray:
        """Per-record grad_y f(x, y; z_i): shape (n, dy), or (k, n, dy) for batches."""
        x, y = self._xy(x, y)
        data = self._data(data)
        if x.ndim == 1:
            return self._grad_y(x[None], y[None], data)[0]
        return self._grad_y(x, y, data)

    def mean_grad_x(self, x: Any, y: Any, data: Dataset) -> np.ndarray:
        """(1/n) sum_i grad_x f(x, y; z_i) (shape (dx,) or (k, dx))."""
        return self.grad_x(x, y, data).mean(axis=-2)

    def mean_grad_y(self, x: Any, y: Any, data: Dataset) -> np.ndarray:
        """(1/n) sum_i grad_y f(x, y; z_i) (shape (dy,) or (k, dy))."""
        return self.grad_y(x, y, data).mean(axis=-2)

    # ------------------------------------------------------------------ data
    def sample(self, n: int, rng: np.random.Generator) -> Dataset:
        """n i.i.d. records from the problem's distribution (within the declared bounds)."""
        return self._sample(check_int(n, "n", lo=1), check_rng(rng))

    def stream(self, n: int, rng: np.random.Generator, block_size: int | None = None) -> DataStream:
        """The records of ``sample(n, rng)`` in blocks of at most ``block_size`` (streaming data); the
        guarantees of :meth:`Problem.stream` (bit-identity, ``rng`` state, re-iteration, memory)."""
        return problem_stream(self, n, rng, block_size)

    def _block_sampler(self) -> BlockSampler | None:
        """A :class:`BlockSampler` consistent with ``_sample`` (then streams hold one block), or None."""
        return None

    def validate_data(self, data: Any, clip: bool = False) -> Dataset:
        """Reject records outside the declared bounds, or clip them when asked (``n_clipped`` records it)."""
        data = self._data(data)
        bad = _blocked_row_violation(self._row_violation, data)
        if not np.any(bad):
            return data
        if not clip:
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"data violates the declared bounds of {type(self).__name__} in {int(np.sum(bad))} of "
                f"{data.n} records (first: record {i}); pass clip=True to clip explicitly"
            )
        clipped = self._clip_rows(data, bad)
        return Dataset(clipped.X, clipped.y, dict(clipped.extras), n_clipped=int(np.sum(bad)))

    # ------------------------------------------------------------------ population
    def population_value(self, x: Any, y: Any) -> float:
        """F(x, y) = E_z f(x, y; z) at feasible (x, y)."""
        x = self._feasible(self._pt(x, self.dx, "x"), self.x_set, "x")
        y = self._feasible(self._pt(y, self.dy, "y"), self.y_set, "y")
        return float(self._population_value(x, y))

    def best_response_x(self, y: Any) -> tuple[np.ndarray, float]:
        """(argmin_{x in X} F(x, y), min value)."""
        y = self._feasible(self._pt(y, self.dy, "y"), self.y_set, "y")
        return self._best_response_x(y)

    def best_response_y(self, x: Any) -> tuple[np.ndarray, float]:
        """(argmax_{y in Y} F(x, y), max value)."""
        x = self._feasible(self._pt(x, self.dx, "x"), self.x_set, "x")
        return self._best_response_y(x)

    def duality_gap(self, x: Any, y: Any) -> float:
        """Gap(x, y) = max_{y'} F(x, y') - min_{x'} F(x', y) (exact)."""
        _, vmax = self.best_response_y(x)
        _, vmin = self.best_response_x(y)
        return float(vmax - vmin)

    def saddle_point(self) -> tuple[np.ndarray, np.ndarray, float]:
        """(x*, y*, F(x*, y*)) of the population problem (cached)."""
        if "saddle" not in self._cache:
            self._cache["saddle"] = self._saddle_point()
        x, y, v = self._cache["saddle"]
        return x.copy(), y.copy(), v

    # ------------------------------------------------------------------ to implement
    @abstractmethod
    def _loss(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray: ...

    @abstractmethod
    def _grad_x(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray: ...

    @abstractmethod
    def _grad_y(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray: ...

    @abstractmethod
    def _sample(self, n: int, rng: np.random.Generator) -> Dataset: ...

    @abstractmethod
    def _row_violation(self, data: Dataset) -> np.ndarray: ...

    @abstractmethod
    def _clip_rows(self, data: Dataset, bad: np.ndarray) -> Dataset: ...

    @abstractmethod
    def _population_value(self, x: np.ndarray, y: np.ndarray) -> float: ...

    @abstractmethod
    def _best_response_x(self, y: np.ndarray) -> tuple[np.ndarray, float]: ...

    @abstractmethod
    def _best_response_y(self, x: np.ndarray) -> tuple[np.ndarray, float]: ...

    @abstractmethod
    def _saddle_point(self) -> tuple[np.ndarray, np.ndarray, float]: ...


def is_inf(p: float) -> bool:
    return math.isinf(p)
