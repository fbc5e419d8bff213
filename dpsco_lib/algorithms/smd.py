"""Non-private single-pass stochastic mirror descent in the l_p setups (Spec S1, [NY83]).

Setup (spec/frank-wolfe.md): min_{x in X} F(x) = E_z f(x, z), f(., z) convex and L0-Lipschitz,
||grad f||_q <= L0 with q the dual exponent of the setup norm p.  One sample per step,
T = n steps (single pass), iterates

    x_{t+1} = argmin_{u in X} eta <g_t, u> + D_psi(u, x_t),     g_t = grad f(x_t, z_t),

output the uniform average x_bar = (1/T) sum_{t<=T} x_t.  For psi 1-strongly convex w.r.t. a norm
||.|| with dual ||.||_*, B = max_{x in X} D_psi(x, x_1) and G >= ||g_t||_* the standard analysis gives

    E F(x_bar) - min F <= B/(eta T) + eta G^2/2,   minimized by eta = sqrt(2B/T)/G to  G sqrt(2B/T).

The geometries (``method``) and their constants, with ``p`` the mirror exponent (default: the setup's):

=================  ==========================  =====================  ============================
method             set                         B                      G (gradient bound)
=================  ==========================  =====================  ============================
``entropic``       Simplex, p = 1              ln d                   L0  (||g||_inf <= ||g||_q)
``entropic_lift``  L1Ball(R) / Polytope(V),    ln |V| (= ln 2d)        L0 max_v ||v - c||_{p_setup}
                   p = 1, x = V^T w, w in
                   Delta_|V|
``pnorm``          LpBall(R, p), 1 < p < 2,    R^2/(2(p - 1))         L0 d^max(0, 1/q - 1/q_setup)
                   psi = ||.||_p^2/(2(p-1))
``euclidean``      any set, p >= 2 (incl.      max_x ||x - c||_2^2/2   L0 d^max(0, 1/2 - 1/q_setup)
                   inf: box, d-dependent)
=================  ==========================  =====================  ============================

(c = center() of the set, the starting point; for the lift, the entropic step is invariant to
adding a constant to the lifted gradient V g, so G may use the centred vertices.)  This gives the
rate table of Spec S1: L0 sqrt(2 ln d/T) on the simplex, L0 R sqrt(2 ln(2d)/T) on the l1 ball,
L0 R/sqrt((p - 1) T) for 1 < p < 2 (dimension-free), L0 R sqrt(d/T) on the cube (p = inf).

The algorithm is deterministic given the data (``rng`` is accepted for API uniformity and is not
consumed).  The library works in the idealized real-arithmetic model (float64).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dpsco_lib._validation import check_bool, check_int, check_positive, check_rng
from dpsco_lib.algorithms._result import Result
from dpsco_lib.geometry.mirror import EntropicStepInplace, entropic_step_with_weights, pnorm_step_unchecked
from dpsco_lib.geometry.norms import check_exponent, dual_exponent
from dpsco_lib.geometry.sets import FeasibleSet, LpBall, Polytope, Simplex
from dpsco_lib.problems.base import Problem, SaddleProblem
from dpsco_lib.problems.least_squares import row_grad_oracle

__all__ = ["SMDParams", "run_smd", "run_smd_reference", "smd_theory_params"]

_AVERAGING = ("uniform", "last", "suffix")


@dataclass(frozen=True)
class SMDParams:
    """Hyperparameters of single-pass SMD and the constants of its guarantee (Spec S1).

    Attributes
    ----------
    method : {"entropic", "entropic_lift", "pnorm", "euclidean"}
    mirror_p : float
        Exponent of the norm in which psi is 1-strongly convex.
    T : int
        Number of steps (= n, one sample per step).
    step_size : float
        eta.
    bregman_radius : float
        B = max_{x in X} D_psi(x, x_1).
    grad_bound : float
        G, bound on the dual norm of the (lifted) stochastic gradient.
    rate_bound : float
        B/(eta T) + eta G^2/2, the bound on E F(x_bar) - min F for uniform averaging
        (= G sqrt(2B/T) at the theory step size).
    """

    method: str
    mirror_p: float
    T: int
    step_size: float
    bregman_radius: float
    grad_bound: float
    rate_bound: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _inv(q: float) -> float:
    return 0.0 if math.isinf(q) else 1.0 / q


def smd_theory_params(
    feasible_set: FeasibleSet,
    *,
    n: int,
    L0: float,
    setup_p: float,
    p: float | None = None,
    step_size: float | None = None,
) -> SMDParams:
    """Method, Bregman radius, gradient bound, step size and rate bound of single-pass SMD (Spec S1).

    Parameters
    ----------
    feasible_set : FeasibleSet
        X (Simplex, L1Ball, LpBall or Polytope).
    n : int
        Number of samples; T = n steps.
    L0 : float
        Lipschitz constant: ||grad f||_q <= L0 with q the dual exponent of ``setup_p``.
    setup_p : float
        Norm exponent of the problem's setup.
    p : float, optional
        Mirror geometry (default ``setup_p``): 1 -> entropic (simplex) or entropic lift (l1 ball,
        polytope); 1 < p < 2 -> p-norm map (LpBall with the same p); p >= 2 -> Euclidean projection.
    step_size : float, optional
        Override eta (the rate bound is then B/(eta T) + eta G^2/2 at this eta).

    See the module docstring for the table of constants.
    """
    if not isinstance(feasible_set, FeasibleSet):
        raise ValueError(f"feasible_set must be a FeasibleSet, got {type(feasible_set).__name__}")
    n = check_int(n, "n", lo=1)
    L0 = check_positive(L0, "L0")
    setup_p = check_exponent(setup_p, "setup_p")
    mp = setup_p if p is None else check_exponent(p, "p")
    d = feasible_set.d
    inv_qs = _inv(dual_exponent(setup_p))
    if mp == 1.0:
        if isinstance(feasible_set, Simplex):
            method, B, G = "entropic", math.log(d), L0
        elif (isinstance(feasible_set, LpBall) and feasible_set.p == 1.0) or isinstance(feasible_set, Polytope):
            method = "entropic_lift"
            B = math.log(feasible_set.n_vertices)
            G = L0 * feasible_set.center_radius(setup_p)
        else:
            raise ValueError(
                f"p = 1 (entropic mirror map) needs a Simplex, an L1Ball or a Polytope, got {feasible_set!r}"
            )
    elif mp < 2.0:
        if not (isinstance(feasible_set, LpBall) and feasible_set.p == mp):
            raise ValueError(
                f"p = {mp} (p-norm mirror map) needs an LpBall with the same p (exact Bregman projection), "
                f"got {feasible_set!r}; use p = 1 or p = 2 for other sets"
            )
        method = "pnorm"
        B = feasible_set.radius**2 / (2.0 * (mp - 1.0))
        G = L0 * float(d) ** max(0.0, _inv(dual_exponent(mp)) - inv_qs)
    else:
        method = "euclidean"
        B = feasible_set.center_radius(2.0) ** 2 / 2.0
        G = L0 * float(d) ** max(0.0, 0.5 - inv_qs)
    if step_size is None:
        eta = math.sqrt(2.0 * B / n) / G if B > 0 else 1.0
    else:
        eta = check_positive(step_size, "step_size")
    rate = B / (eta * n) + eta * G**2 / 2.0 if B > 0 else 0.0
    return SMDParams(method=method, mirror_p=mp, T=n, step_size=eta, bregman_radius=B, grad_bound=G, rate_bound=rate)


# ---------------------------------------------------------------------------------------------------------
# mirror maps: the state of one geometry and its step (x is the current primal point)
# ---------------------------------------------------------------------------------------------------------
class _EntropicSimplex:
    """Entropic map on the simplex: log-weights updated in place; x is the weight vector itself."""

    def __init__(self, d: int, eta: float) -> None:
        self.state = np.full(d, -math.log(d))  # log w, w = uniform
        self.x = np.full(d, 1.0 / d)
        self.stepper = EntropicStepInplace(d, eta)

    def step(self, g: np.ndarray) -> np.ndarray:
        self.stepper.step(self.state, g, self.x)
        return self.x


class _EntropicL1Ball:
    """Entropic map on the 2d vertices of the l1 ball: x = R (w[:d] - w[d:]), never the (2d, d) vertex matrix."""

    def __init__(self, d: int, radius: float, eta: float) -> None:
        self.d, self.R = d, radius
        self.state = np.full(2 * d, -math.log(2 * d))
        self.w = np.full(2 * d, 1.0 / (2 * d))
        self.lifted = np.empty(2 * d)
        self.xbuf = np.empty(d)
        self.stepper = EntropicStepInplace(2 * d, eta)
        self.x = self._primal()

    def _primal(self) -> np.ndarray:
        # R * (w[:d] - w[d:]), in place
        np.subtract(self.w[: self.d], self.w[self.d :], out=self.xbuf)
        return np.multiply(self.xbuf, self.R, out=self.xbuf)

    def step(self, g: np.ndarray) -> np.ndarray:
        # the lifted gradient np.concatenate([R * g, -R * g]), in place
        np.multiply(g, self.R, out=self.lifted[: self.d])
        np.multiply(g, -self.R, out=self.lifted[self.d :])
        self.stepper.step(self.state, self.lifted, self.w)
        self.x = self._primal()
        return self.x


class _EntropicPolytope:
    """Entropic map on the vertices V of a polytope: x = w V, lifted gradient V g."""

    def __init__(self, V: np.ndarray, eta: float) -> None:
        self.V = V
        self.state = np.full(V.shape[0], -math.log(V.shape[0]))
        self.w = np.full(V.shape[0], 1.0 / V.shape[0])
        self.stepper = EntropicStepInplace(V.shape[0], eta)
        self.x = self.w @ V

    def step(self, g: np.ndarray) -> np.ndarray:
        self.stepper.step(self.state, self.V @ g, self.w)
        self.x = self.w @ self.V
        return self.x


class _PNorm:
    """The p-norm map psi = ||.||_p^2/(2(p-1)) on an LpBall with the same p (exact Bregman projection)."""

    def __init__(self, X: LpBall, eta: float, p: float) -> None:
        self.x = X.center().astype(np.float64)
        self.eta, self.p, self.radius = eta, p, X.radius

    def step(self, g: np.ndarray) -> np.ndarray:
        self.x = pnorm_step_unchecked(self.x, g, self.eta, self.p, self.radius)
        return self.x


class _Euclidean:
    """Projected gradient: x <- proj_X(x - eta g)."""

    def __init__(self, X: FeasibleSet, eta: float) -> None:
        self.X, self.eta = X, eta
        self.x = X.center().astype(np.float64)

    def step(self, g: np.ndarray) -> np.ndarray:
        self.x = self.X.project(self.x - self.eta * g)
        return self.x


def _mirror(X: FeasibleSet, prm: SMDParams) -> Any:
    """The mirror map object of ``prm.method`` on ``X``, started at the set's center (uniform weights)."""
    if prm.method == "entropic":
        return _EntropicSimplex(X.d, prm.step_size)
    if prm.method == "entropic_lift":
        if isinstance(X, LpBall):
            return _EntropicL1Ball(X.d, X.radius, prm.step_size)
        return _EntropicPolytope(X.vertices(), prm.step_size)
    if prm.method == "pnorm":
        return _PNorm(X, prm.step_size, prm.mirror_p)  # type: ignore[arg-type]
    return _Euclidean(X, prm.step_size)


def _gradient_oracle(problem: Any, data: Any, d: int) -> Any:
    """``grad(x, t)``: the gradient of record t at x (1-D), checked for shape and finiteness at t = 0.

    A library Problem: the dataset was checked once by the caller (type, width and the declared record bounds, more
    than problem.grad checks on every call), so the unvalidated per-record oracle is used; the iterates are finite
    points of X by construction.  Least squares additionally gets a row oracle on the raw arrays (no one-record
    Dataset per step).
    """
    if isinstance(problem, Problem) and type(problem).grad is Problem.grad:
        row_grad = row_grad_oracle(problem)
        if row_grad is not None:
            Xd, yd, gbuf = data.X, data.y, np.empty(d)

            def grad_row(x: np.ndarray, t: int) -> np.ndarray:
                g = row_grad(x, Xd, yd, t, gbuf)
                if t == 0 and not np.all(np.isfinite(g)):
                    raise ValueError(f"problem.grad must return a finite (1, {d}) array for one record")
                return g

            return grad_row
        per_record_grad = problem._grad
    else:
        per_record_grad = problem.grad

    def grad(x: np.ndarray, t: int) -> np.ndarray:
        g = np.asarray(per_record_grad(x, data[t : t + 1]), dtype=np.float64)
        if t == 0 and (g.shape != (1, d) or not np.all(np.isfinite(g))):
            raise ValueError(f"problem.grad must return a finite (1, {d}) array for one record, got shape {g.shape}")
        return g[0]

    return grad


def _prepare(problem: Any, data: Any, rng: Any, p: Any, step_size: Any, averaging: Any, trace: Any,
             trace_every: Any) -> tuple[Any, SMDParams, int | None]:
    """Validate the public arguments of :func:`run_smd` / :func:`run_smd_reference`; the data and the theory
    parameters."""
    check_rng(rng)
    if averaging not in _AVERAGING:
        raise ValueError(f"averaging must be one of {_AVERAGING}, got {averaging!r}")
    trace = check_bool(trace, "trace")
    if isinstance(problem, SaddleProblem) or not all(hasattr(problem, a) for a in ("feasible_set", "p", "L0", "grad")):
        raise ValueError(f"problem must be a convex dpsco_lib Problem (or expose feasible_set, p, L0 and grad), got "
                         f"{type(problem).__name__}")
    if isinstance(problem, Problem) or callable(getattr(problem, "validate_data", None)):
        # every record must satisfy the declared bounds: rate_bound (through L0) holds only for such data; a
        # violation raises ValueError naming the data and the bound (valid data is returned as is)
        data = problem.validate_data(data)
    n = len(data)
    if n < 1:
        raise ValueError("data must contain at least one record")
    if trace_every is not None:
        trace_every = check_int(trace_every, "trace_every", lo=1)
    prm = smd_theory_params(problem.feasible_set, n=n, L0=problem.L0, setup_p=problem.p, p=p, step_size=step_size)
    every = None if not trace else (trace_every or max(1, prm.T // 100))
    return data, prm, every


def _result(prm: SMDParams, averaging: str, total: np.ndarray, suffix_total: np.ndarray, x: np.ndarray,
            trace_t: list[int], trace_x: list[np.ndarray], every: int | None) -> Result:
    T = prm.T
    if averaging == "uniform":
        out = total / T
    elif averaging == "last":
        out = x
    else:
        out = suffix_total / (T - (T + 1) // 2 + 1)
    if not np.all(np.isfinite(out)):  # pragma: no cover - would be a library bug
        raise RuntimeError("SMD produced a non-finite point")
    trace = None if every is None else {"t": np.asarray(trace_t), "x_avg": np.asarray(trace_x)}
    params = prm.as_dict() | {"averaging": averaging}
    info = {"method": prm.method, "rate_bound": prm.rate_bound, "n_grad_evals": T}
    return Result(x=out, trace=trace, params=params, ledger=None, info=info)


def run_smd(
    problem: Any,
    data: Any,
    *,
    rng: np.random.Generator,
    p: float | None = None,
    step_size: float | None = None,
    averaging: str = "uniform",
    trace: bool = False,
    trace_every: int | None = None,
) -> Result:
    """Single-pass stochastic mirror descent (non-private), Spec S1.

    Parameters
    ----------
    problem
        Exposes ``feasible_set``, ``d``, ``p`` (setup norm), ``L0`` and ``grad(x, batch) -> (m, d)``.
    data
        A dataset with ``len(data)`` and slicing ``data[i:j]``; record t is used at step t only. A problem with
        ``validate_data`` (every library Problem) checks it first: records outside the declared bounds raise
        ``ValueError`` (the rate bound assumes them; clip explicitly with ``problem.validate_data(data,
        clip=True)``).
    rng : numpy.random.Generator
        Accepted for API uniformity; SMD is deterministic given the data.
    p : float, optional
        Mirror geometry (default ``problem.p``), see ``smd_theory_params``.
    step_size : float, optional
        Override the theory step size sqrt(2B/T)/G.
    averaging : {"uniform", "last", "suffix"}
        Output the average of x_1..x_T (the analysed output), the last iterate x_{T+1}, or the average
        of the last half x_{ceil(T/2)}..x_T.
    trace : bool
        If True, ``result.trace`` holds ``t`` and ``x_avg`` (running uniform average after t steps) every
        ``trace_every`` steps and at T.
    trace_every : int, optional
        Spacing of the trace (default max(1, T // 100)); only read when ``trace`` is True.

    Returns
    -------
    Result
        ``x`` the output point, ``params`` the SMDParams fields + ``averaging``, ``info`` the rate
        bound and method, ``ledger`` None.

    See Also
    --------
    run_smd_reference : the same algorithm as a plain loop (allocating steps), bit-identical on the entropic
        geometries.
    """
    data, prm, every = _prepare(problem, data, rng, p, step_size, averaging, trace, trace_every)
    d, T = problem.feasible_set.d, prm.T
    mirror = _mirror(problem.feasible_set, prm)
    grad = _gradient_oracle(problem, data, d)
    total = np.zeros(d)
    suffix_total = np.zeros(d)
    keep_suffix = averaging == "suffix"  # the suffix sum is only read for this output
    t_suffix = (T + 1) // 2  # 1-based index where the suffix average starts: x_{ceil(T/2)}
    trace_t: list[int] = []
    trace_x: list[np.ndarray] = []
    x = mirror.x
    step = mirror.step
    # The entropic step ignores overflow/invalid in eta (g - min g) (|eta g| ~ 1e308, handled by the limit
    # branch): the errstate is entered once here instead of once per step (so such warnings of a user gradient
    # oracle are silenced inside the loop too; no value changes, and a non-finite first gradient still raises).
    entropic = prm.method in ("entropic", "entropic_lift")
    with np.errstate(over="ignore", invalid="ignore") if entropic else contextlib.nullcontext():
        for t in range(T):
            total += x
            if keep_suffix and t + 1 >= t_suffix:
                suffix_total += x
            x = step(grad(x, t))
            if every is not None and ((t + 1) % every == 0 or t + 1 == T):
                trace_t.append(t + 1)
                trace_x.append(total / (t + 1))
    return _result(prm, averaging, total, suffix_total, x, trace_t, trace_x, every)


def run_smd_reference(
    problem: Any,
    data: Any,
    *,
    rng: np.random.Generator,
    p: float | None = None,
    step_size: float | None = None,
    averaging: str = "uniform",
    trace: bool = False,
    trace_every: int | None = None,
) -> Result:
    """The readable reference loop of :func:`run_smd` (same signature and outputs), Spec S1.

    One step per record: ``g = problem.grad(x, data[t:t+1])[0]`` and the allocating mirror steps
    (:func:`~dpsco_lib.geometry.mirror.entropic_step_with_weights` on the lifted gradient, the p-norm step,
    the Euclidean projection).  It performs the same float64 operations as :func:`run_smd` on the entropic
    geometries, so the outputs are bit-identical there (tests/lib/algorithms/test_smd.py checks it); it is slower.
    """
    data, prm, every = _prepare(problem, data, rng, p, step_size, averaging, trace, trace_every)
    X, T, eta = problem.feasible_set, prm.T, prm.step_size
    d = X.d
    ball = prm.method == "entropic_lift" and isinstance(X, LpBall)  # vertices R e_i and -R e_i
    V = X.vertices() if prm.method == "entropic_lift" and not ball else None

    def lift(g: np.ndarray) -> np.ndarray:  # the gradient in the vertex weights
        if ball:
            return np.concatenate([X.radius * g, -X.radius * g])
        return g if V is None else V @ g

    def primal(w: np.ndarray) -> np.ndarray:  # the point of the weights
        if ball:
            return X.radius * (w[:d] - w[d:])
        return w if V is None else w @ V

    entropic = prm.method in ("entropic", "entropic_lift")
    size = 2 * d if ball else (d if V is None else V.shape[0])
    log_w = np.full(size, -math.log(size))
    x = primal(np.full(size, 1.0 / size)) if entropic else X.center().astype(np.float64)
    total, suffix_total = np.zeros(d), np.zeros(d)
    trace_t: list[int] = []
    trace_x: list[np.ndarray] = []
    for t in range(T):
        total += x
        if averaging == "suffix" and t + 1 >= (T + 1) // 2:
            suffix_total += x
        g = np.asarray(problem.grad(x, data[t : t + 1]), dtype=np.float64)[0]
        if entropic:
            log_w, w = entropic_step_with_weights(log_w, lift(g), eta)
            x = primal(w)
        elif prm.method == "pnorm":
            x = pnorm_step_unchecked(x, g, eta, prm.mirror_p, X.radius)
        else:
            x = X.project(x - eta * g)
        if every is not None and ((t + 1) % every == 0 or t + 1 == T):
            trace_t.append(t + 1)
            trace_x.append(total / (t + 1))
    return _result(prm, averaging, total, suffix_total, x, trace_t, trace_x, every)
