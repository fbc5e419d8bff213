r"""Problems over the empirical distribution of a data set: :func:`from_data` (Spec S1 setup).

Given records :math:`z_i = (a_i, b_i)`, :math:`i = 1, \dots, n`, :func:`from_data` builds the
:class:`~dpsco_lib.problems.Problem`

.. math:: \min_{x \in \mathcal X} \hat F(x) = \frac1n \sum_{i=1}^n f(x; z_i)

whose "population" is the empirical distribution: ``population_risk`` is :math:`\hat F` exactly, ``sample``
draws records uniformly with replacement from the data, and ``excess_risk(x)`` is the empirical excess
:math:`\hat F(x) - \min_{\mathcal X} \hat F` against the exact optimum (cvxpy + Clarabel).

Declared bounds, never measured. The constants a private algorithm calibrates its noise to must hold for every
record a neighbouring data set may contain, so they are computed from bounds the user *declares*:
``feature_bound`` :math:`B_a \ge \|a\|_q` (q dual to the setup norm p) and ``label_bound``
:math:`B_b \ge |b|`. Computing them from the data would make the noise scale a function of the data and leak it.
Records outside the bounds are refused (``ValueError`` naming the parameter) or, with ``clip=True``, mapped onto
them: :math:`a \mapsto a \min(1, B_a/\|a\|_q)` and :math:`b \mapsto \max(-B_b, \min(B_b, b))` (logistic labels are
mapped to their sign). Clipping acts on one record at a time, so the clipped data of neighbouring data sets are
neighbours and the constants hold by construction.

Constants with :math:`R = \max_{x \in \mathcal X} \|x\|_p`, so that :math:`|\langle a, x\rangle| \le B_a R`
(Hölder), as in :mod:`~dpsco_lib.problems.least_squares` and :mod:`~dpsco_lib.problems.logistic`:

* squared, :math:`f = (\langle a, x\rangle - b)^2/2`: :math:`L_0 = B_a(B_a R + B_b)`, :math:`L_1 = B_a^2`,
  :math:`L_2 = 0`;
* logistic, :math:`f = \log(1 + e^{-b\langle a, x\rangle})`, :math:`b \in \{-1, 1\}`: :math:`L_0 = B_a`,
  :math:`L_1 = B_a^2/4`, :math:`L_2 = B_a^3/(6\sqrt3)`;
* Huber with threshold :math:`\tau`, :math:`f = h_\tau(\langle a, x\rangle - b)`, :math:`h_\tau(r) = r^2/2` for
  :math:`|r| \le \tau` and :math:`\tau|r| - \tau^2/2` otherwise: :math:`|h_\tau'| \le \min(\tau, B_a R + B_b)`, so
  :math:`L_0 = B_a \min(\tau, B_a R + B_b)`, :math:`L_1 = B_a^2`, :math:`L_2 = \infty` (:math:`h_\tau''` jumps).

A user loss is any object with the :class:`Loss` protocol: ``value`` and ``gradient`` on the records and the
declared ``lipschitz`` (:math:`L_0`, w.r.t. the dual norm of gradients) and ``smoothness`` (:math:`L_1`) constants
for records within the declared bounds and every feasible point; optionally ``second_order`` (:math:`L_2`),
``convex`` and ``cvxpy_risk`` (a cvxpy expression of :math:`\hat F`, for the exact optimum).
:func:`check_loss_constants` tests the declared constants on the data at a few feasible points.

The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
from scipy.special import expit

from dpsco_lib._validation import ParameterTypeError, check_bool, check_int, check_positive, check_rng
from dpsco_lib.geometry.norms import check_exponent, dual_exponent, lp_norm
from dpsco_lib.geometry.sets import FeasibleSet, L1Ball, LpBall
from dpsco_lib.problems.base import Problem
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.least_squares import max_feasible_norm

__all__ = [
    "LOSSES",
    "EmpiricalProblem",
    "HuberLoss",
    "LogisticLoss",
    "Loss",
    "SquaredLoss",
    "check_loss_constants",
    "from_data",
    "require_problem",
]

#: The built-in losses of :func:`from_data`.
LOSSES = ("squared", "logistic", "huber")
_RTOL = 1e-9
_SIGMOID_D2_MAX = 1.0 / (6.0 * math.sqrt(3.0))


@runtime_checkable
class Loss(Protocol):
    r"""A per-record loss :math:`f(x; (a, b))` with the constants a private algorithm's proof needs.

    ``lipschitz`` :math:`\ge \|\nabla f(x; z)\|_q` and ``smoothness`` :math:`\ge \|\nabla f(x; z) - \nabla f(x';
    z)\|_q / \|x - x'\|_p` for every feasible :math:`x, x'` and every record within the declared bounds (q dual to
    the setup norm p). Optional attributes: ``second_order`` (:math:`L_2`, default :math:`\infty`), ``convex``
    (default True) and ``cvxpy_risk(var, X, y)`` (a cvxpy expression of the mean loss, for the exact optimum).
    """

    lipschitz: float
    smoothness: float

    def value(self, x: np.ndarray, X: np.ndarray, y: np.ndarray | None) -> np.ndarray:
        """Per-record losses, shape (n,)."""
        ...

    def gradient(self, x: np.ndarray, X: np.ndarray, y: np.ndarray | None) -> np.ndarray:
        """Per-record gradients in x, shape (n, d)."""
        ...


@dataclass(frozen=True)
class SquaredLoss:
    """f = (<a, x> - b)^2/2; constants from B_a, B_b and R (module docstring)."""

    feature_bound: float
    label_bound: float
    radius: float
    binary_labels = False

    @property
    def lipschitz(self) -> float:
        return self.feature_bound * (self.feature_bound * self.radius + self.label_bound)

    @property
    def smoothness(self) -> float:
        return self.feature_bound**2

    second_order = 0.0

    def value(self, x: np.ndarray, X: np.ndarray, y: np.ndarray | None) -> np.ndarray:
        r = X @ x - y
        return 0.5 * r * r

    def gradient(self, x: np.ndarray, X: np.ndarray, y: np.ndarray | None) -> np.ndarray:
        return (X @ x - y)[:, None] * X

    def cvxpy_risk(self, var: Any, X: np.ndarray, y: np.ndarray | None) -> Any:
        import cvxpy as cp

        return 0.5 * cp.sum_squares(X @ var - y) / X.shape[0]


@dataclass(frozen=True)
class LogisticLoss:
    """f = log(1 + exp(-b <a, x>)), b in {-1, +1}; constants from B_a (module docstring)."""

    feature_bound: float
    binary_labels = True

    @property
    def lipschitz(self) -> float:
        return self.feature_bound

    @property
    def smoothness(self) -> float:
        return 0.25 * self.feature_bound**2

    @property
    def second_order(self) -> float:
        return _SIGMOID_D2_MAX * self.feature_bound**3

    def value(self, x: np.ndarray, X: np.ndarray, y: np.ndarray | None) -> np.ndarray:
        return np.logaddexp(0.0, -y * (X @ x))

    def gradient(self, x: np.ndarray, X: np.ndarray, y: np.ndarray | None) -> np.ndarray:
        return (-y * expit(-y * (X @ x)))[:, None] * X

    def cvxpy_risk(self, var: Any, X: np.ndarray, y: np.ndarray | None) -> Any:
        import cvxpy as cp

        return cp.sum(cp.logistic(-cp.multiply(y, X @ var))) / X.shape[0]


@dataclass(frozen=True)
class HuberLoss:
    """f = h_tau(<a, x> - b) (Huber with threshold tau); constants from B_a, B_b, R (module docstring)."""

    feature_bound: float
    label_bound: float
    radius: float
    threshold: float = 1.0
    binary_labels = False
    second_order = math.inf

    @property
    def lipschitz(self) -> float:
        return self.feature_bound * min(self.threshold, self.feature_bound * self.radius + self.label_bound)

    @property
    def smoothness(self) -> float:
        return self.feature_bound**2

    def value(self, x: np.ndarray, X: np.ndarray, y: np.ndarray | None) -> np.ndarray:
        r = np.abs(X @ x - y)
        t = self.threshold
        return np.where(r <= t, 0.5 * r * r, t * r - 0.5 * t * t)

    def gradient(self, x: np.ndarray, X: np.ndarray, y: np.ndarray | None) -> np.ndarray:
        r = X @ x - y
        return np.clip(r, -self.threshold, self.threshold)[:, None] * X

    def cvxpy_risk(self, var: Any, X: np.ndarray, y: np.ndarray | None) -> Any:
        import cvxpy as cp

        # cvxpy's huber(r, M) is r^2 for |r| <= M and 2 M |r| - M^2 beyond: twice h_M
        return 0.5 * cp.sum(cp.huber(X @ var - y, self.threshold)) / X.shape[0]


class EmpiricalProblem(Problem):
    r"""The convex program over the empirical distribution of ``data`` (build it with :func:`from_data`).

    ``population_risk`` is the empirical risk :math:`\hat F` (exact, ``exact_population`` True),
    ``population_optimum`` its exact minimizer over the feasible set (cvxpy + Clarabel, when the loss provides
    ``cvxpy_risk``), ``sample(n, rng)`` draws ``n`` records uniformly with replacement from ``data``.

    Attributes
    ----------
    data : Dataset
        The records (after clipping when ``clip=True``; ``data.n_clipped`` counts the clipped ones).
    loss_fn : Loss
        The per-record loss (``loss(x, data)`` is the Problem's per-record oracle); ``L0``, ``L1``, ``L2`` are
        its ``lipschitz``, ``smoothness``, ``second_order``.
    B_a, B_b : float
        The declared bounds ``||a||_q <= B_a`` and ``|b| <= B_b`` (``B_b`` None when labels are not bounded).
    """

    def __init__(self, data: Dataset, loss: Any, feasible_set: FeasibleSet, p: float, *, feature_bound: float,
                 label_bound: float | None, name: str = "empirical") -> None:
        self.feasible_set = feasible_set
        self.p = check_exponent(p)
        self.loss_fn = loss
        self.B_a = float(feature_bound)
        self.B_b = None if label_bound is None else float(label_bound)
        self.binary_labels = bool(getattr(loss, "binary_labels", False))
        self.L0 = float(loss.lipschitz)
        self.L1 = float(loss.smoothness)
        self.L2 = float(getattr(loss, "second_order", math.inf))
        self.convex = bool(getattr(loss, "convex", True))
        self.needs_labels = data.y is not None
        self.exact_population = True
        self.spec = "S1"
        self.name = name
        self._cache = {}
        self.data = data

    def __repr__(self) -> str:
        return (f"EmpiricalProblem({self.name}, n={self.data.n}, {self.feasible_set!r}, p={self.p}, "
                f"L0={self.L0:.4g}, L1={self.L1:.4g})")

    def _bounds_text(self) -> str:
        lab = "y in {-1, +1}" if self.binary_labels else (f"|b| <= {self.B_b}" if self.B_b is not None else "")
        return f"||a||_{self.q} <= {self.B_a}" + (f", {lab}" if lab else "")

    def _loss(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return np.asarray(self.loss_fn.value(x, data.X, data.y), dtype=np.float64)

    def _grad(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return np.asarray(self.loss_fn.gradient(x, data.X, data.y), dtype=np.float64)

    def _sample(self, n: int, rng: np.random.Generator) -> Dataset:
        idx = rng.integers(0, self.data.n, size=n)
        return Dataset(self.data.X[idx], None if self.data.y is None else self.data.y[idx])

    def _row_violation(self, data: Dataset) -> np.ndarray:
        return record_violations(data, self.q, self.B_a, self.B_b, self.binary_labels)

    def _clip_rows(self, data: Dataset, bad: np.ndarray) -> Dataset:
        """Rescale a to ||a||_q <= B_a; clip b to [-B_b, B_b] (binary labels: b -> sign(b), 0 -> +1)."""
        return clip_records(data, self.q, self.B_a, self.B_b, self.binary_labels)

    def _population_risk(self, x: np.ndarray) -> float:
        return float(np.mean(self._loss(x, self.data)))

    def _population_grad(self, x: np.ndarray) -> np.ndarray:
        return self._grad(x, self.data).mean(axis=0)

    def _cvxpy_population(self, var: Any) -> Any:
        risk = getattr(self.loss_fn, "cvxpy_risk", None)
        if risk is None:
            raise NotImplementedError(
                f"the loss {type(self.loss_fn).__name__} has no cvxpy_risk(var, X, y) method: the exact optimum needs "
                "a cvxpy expression of the mean loss"
            )
        return risk(var, np.asarray(self.data.X), None if self.data.y is None else np.asarray(self.data.y))


def record_violations(data: Dataset, q: float, feature_bound: float, label_bound: float | None,
                      binary_labels: bool) -> np.ndarray:
    """Row-wise booleans: ``||a_i||_q > B_a`` or the label outside its declared domain (relative tolerance 1e-9)."""
    bad = np.asarray(lp_norm(np.asarray(data.X), q, axis=-1)) > feature_bound * (1 + _RTOL)
    if data.y is not None:
        if binary_labels:
            bad |= np.abs(np.abs(data.y) - 1.0) > 0
        elif label_bound is not None:
            bad |= np.abs(data.y) > label_bound * (1 + _RTOL)
    return bad


def clip_records(data: Dataset, q: float, feature_bound: float, label_bound: float | None,
                 binary_labels: bool) -> Dataset:
    """Map every record onto the declared bounds (one record at a time; module docstring)."""
    X = np.array(data.X, dtype=np.float64)
    nrm = np.asarray(lp_norm(X, q, axis=-1))
    X *= np.where(nrm > feature_bound, feature_bound / np.maximum(nrm, 1e-300), 1.0)[:, None]
    y = data.y
    if y is not None:
        if binary_labels:
            y = np.where(y < 0, -1.0, 1.0)
        elif label_bound is not None:
            y = np.clip(y, -label_bound, label_bound)
    return Dataset(X, y)


def _as_arrays(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """Array-likes (numpy, lists, pandas DataFrame / Series through ``__array__``) as float64 arrays."""
    try:
        Xa = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"X must be a numeric array-like of shape (n, d), got {type(X).__name__}") from exc
    if Xa.ndim != 2 or Xa.shape[0] < 1 or Xa.shape[1] < 1:
        raise ValueError(f"X must have shape (n, d) with n, d >= 1, got shape {Xa.shape}")
    if not np.all(np.isfinite(Xa)):
        raise ValueError(f"X must be finite, got {int(np.sum(~np.isfinite(Xa)))} NaN or inf entries")
    if y is None:
        return Xa, None
    try:
        ya = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"y must be a numeric array-like of shape (n,), got {type(y).__name__}") from exc
    if ya.ndim == 2 and ya.shape[1] == 1:
        ya = ya[:, 0]
    if ya.shape != (Xa.shape[0],):
        raise ValueError(f"y must have shape (n,) = ({Xa.shape[0]},) to match X, got shape {ya.shape}")
    if not np.all(np.isfinite(ya)):
        raise ValueError(f"y must be finite, got {int(np.sum(~np.isfinite(ya)))} NaN or inf entries")
    return Xa, ya


def _setup(feasible_set: Any, radius: float, p: float | None, d: int) -> tuple[FeasibleSet, float]:
    if feasible_set is None:
        feasible_set = L1Ball(d, check_positive(radius, "radius"))
    if not isinstance(feasible_set, FeasibleSet):
        raise ParameterTypeError(
            f"feasible_set must be a dpsco_lib.geometry FeasibleSet (Simplex, L1Ball, LpBall, Polytope) or None, "
            f"got {type(feasible_set).__name__}"
        )
    if feasible_set.d != d:
        raise ValueError(f"feasible_set must have dimension d = {d} (the columns of X), got d = {feasible_set.d}")
    if p is None:
        p = float(feasible_set.p) if isinstance(feasible_set, LpBall) else 1.0
    return feasible_set, check_exponent(p)


def _make_loss(loss: Any, B_a: float, B_b: float | None, R: float, huber_threshold: float) -> Any:
    if isinstance(loss, str):
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES} or an object with the Loss protocol, got {loss!r}")
        if loss == "logistic":
            return LogisticLoss(B_a)
        if B_b is None:
            raise ValueError(f"label_bound must be declared (|b| <= label_bound) for loss={loss!r}, got None")
        if loss == "squared":
            return SquaredLoss(B_a, B_b, R)
        return HuberLoss(B_a, B_b, R, check_positive(huber_threshold, "huber_threshold"))
    if not isinstance(loss, Loss):
        raise ParameterTypeError(
            f"loss must be one of {LOSSES} or an object with value(x, X, y), gradient(x, X, y), lipschitz and "
            f"smoothness (the Loss protocol), got {type(loss).__name__}"
        )
    check_positive(loss.lipschitz, "loss.lipschitz")
    check_positive(loss.smoothness, "loss.smoothness", allow_zero=True)
    return loss


def _check_bounds(data: Dataset, q: float, B_a: float, B_b: float | None, binary: bool) -> None:
    """ValueError naming the declared bound that a record violates (the fix is the bound, clip=True, or the data)."""
    nrm = np.asarray(lp_norm(np.asarray(data.X), q, axis=-1))
    if np.any(nrm > B_a * (1 + _RTOL)):
        i = int(np.argmax(nrm))
        raise ValueError(
            f"feature_bound = {B_a} is violated: {int(np.sum(nrm > B_a * (1 + _RTOL)))} of {data.n} records have "
            f"||a||_{q:g} > feature_bound (largest {nrm[i]:.6g}, record {i}); declare a public bound that holds for "
            "every record, or pass clip=True to rescale the offending records"
        )
    if data.y is None:
        return
    if binary and np.any(np.abs(np.abs(data.y) - 1.0) > 0):
        raise ValueError("y must hold labels in {-1, +1} for loss='logistic' (pass clip=True to map y to sign(y))")
    if not binary and B_b is not None and np.any(np.abs(data.y) > B_b * (1 + _RTOL)):
        raise ValueError(
            f"label_bound = {B_b} is violated: {int(np.sum(np.abs(data.y) > B_b * (1 + _RTOL)))} of {data.n} "
            "records have |b| > label_bound; declare a public bound that holds for every record, or pass clip=True"
        )


def from_data(
    X: Any,
    y: Any = None,
    *,
    loss: Any = "squared",
    feature_bound: float,
    label_bound: float | None = None,
    feasible_set: FeasibleSet | None = None,
    radius: float = 1.0,
    p: float | None = None,
    clip: bool = False,
    huber_threshold: float = 1.0,
    rng: np.random.Generator | None = None,
    name: str = "empirical",
) -> EmpiricalProblem:
    r"""A :class:`~dpsco_lib.problems.Problem` over the empirical distribution of the records ``(X, y)``.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Features (numpy array, nested lists, pandas DataFrame: anything ``numpy.asarray`` turns into floats).
    y : array_like, shape (n,), optional
        Labels (a pandas Series or a one-column frame is accepted); ``{-1, +1}`` for ``loss="logistic"``.
    loss : {"squared", "logistic", "huber"} or Loss
        A built-in loss (constants in the module docstring) or a user loss with the :class:`Loss` protocol
        (its declared constants are checked on the data by :func:`check_loss_constants`).
    feature_bound : float
        Declared public bound :math:`B_a \ge \|a_i\|_q` (q dual to the setup norm ``p``: the max-abs feature for
        the default l1 ball). Never estimated from the data (that would leak it).
    label_bound : float, optional
        Declared public bound :math:`B_b \ge |b_i|`; required by the squared and Huber losses.
    feasible_set : FeasibleSet, optional
        The constraint set; default ``L1Ball(d, radius)``.
    radius : float
        Radius of the default l1 ball.
    p : float, optional
        Setup norm; default 1 (the l_p exponent for an ``LpBall``).
    clip : bool
        False (default): a record outside the declared bounds raises ``ValueError`` naming the bound.
        True: such records are mapped onto the bounds (module docstring) and ``problem.data.n_clipped`` counts
        them; the constants then hold by construction.
    huber_threshold : float
        :math:`\tau` of the Huber loss.
    rng : numpy.random.Generator, optional
        Adds random feasible points to the sanity check of a user loss's constants.
    name : str
        A label for the problem.

    Returns
    -------
    EmpiricalProblem
        ``L0``, ``L1``, ``L2`` w.r.t. ``p`` (gradients in the dual norm), ``excess_risk(x)`` = the empirical excess
        risk against the exact optimum (cvxpy + Clarabel).

    Raises
    ------
    ValueError
        Naming the parameter: malformed ``X`` / ``y``, a violated ``feature_bound`` / ``label_bound`` (without
        ``clip``), an unknown ``loss``, a user loss whose declared constants its data violate.
    """
    Xa, ya = _as_arrays(X, y)
    B_a = check_positive(feature_bound, "feature_bound")
    B_b = None if label_bound is None else check_positive(label_bound, "label_bound", allow_zero=True)
    fset, p = _setup(feasible_set, radius, p, Xa.shape[1])
    clip = check_bool(clip, "clip")
    loss_obj = _make_loss(loss, B_a, B_b, max_feasible_norm(fset, p), huber_threshold)
    binary = bool(getattr(loss_obj, "binary_labels", False))
    if binary and ya is None:
        raise ValueError("y must be given for loss='logistic' (labels in {-1, +1}), got None")
    q = dual_exponent(p)
    data = Dataset(Xa, ya)
    bad = record_violations(data, q, B_a, B_b, binary)
    if np.any(bad):
        if not clip:
            _check_bounds(data, q, B_a, B_b, binary)
        data = Dataset(*_xy(clip_records(data, q, B_a, B_b, binary)), n_clipped=int(np.sum(bad)))
    problem = EmpiricalProblem(data, loss_obj, fset, p, feature_bound=B_a, label_bound=B_b, name=name)
    if not isinstance(loss, str):
        check_loss_constants(problem, rng=rng)
    return problem


def _xy(data: Dataset) -> tuple[np.ndarray, np.ndarray | None]:
    return np.asarray(data.X), None if data.y is None else np.asarray(data.y)


def _probe_points(problem: Problem, k: int, rng: np.random.Generator | None) -> list[np.ndarray]:
    """The centre, then ``k`` Frank-Wolfe-like vertices (the LMO of +/- the largest record gradient at the previous
    point, which drives margins to their extremes), then ``k`` random points when ``rng`` is given."""
    fset, data = problem.feasible_set, problem.data
    x = np.asarray(fset.center(), dtype=np.float64)
    pts = [x]
    for j in range(k):
        G = problem.grad(x, data)
        g = G[int(np.argmax(np.asarray(lp_norm(G, problem.q, axis=-1))))]
        if not np.any(g):
            g = np.eye(problem.d)[j % problem.d]
        x = np.asarray(fset.lmo(g if j % 2 else -g), dtype=np.float64)
        pts.append(x)
    if rng is not None:
        pts.extend(np.atleast_2d(fset.random_point(check_rng(rng), size=k)))
    return pts


def check_loss_constants(problem: EmpiricalProblem, *, n_points: int = 6, rng: np.random.Generator | None = None
                         ) -> dict[str, float]:
    r"""Check a problem's declared ``L0`` and ``L1`` on its own records at a few feasible points.

    At the centre of the feasible set, ``n_points`` vertices reached by linear minimization against the largest
    record gradient, and ``n_points`` random feasible points when ``rng`` is given, every record must satisfy
    :math:`\|\nabla f(x; z_i)\|_q \le L_0` and, between consecutive points,
    :math:`\|\nabla f(x; z_i) - \nabla f(x'; z_i)\|_q \le L_1 \|x - x'\|_p` (relative tolerance 1e-9).
    This is a sanity check, not a proof: constants that pass it may still fail at other points or for other
    records inside the declared bounds, and the privacy guarantee rests on the declared constants being true.

    Returns the largest observed ratios ``{"L0": max ||grad||_q, "L1": max difference quotient}``; raises
    ``ValueError`` naming ``loss`` and the violated constant, or a malformed ``value`` / ``gradient``.
    """
    if not isinstance(problem, EmpiricalProblem):
        raise ParameterTypeError(f"problem must be an EmpiricalProblem (from from_data), got {type(problem).__name__}")
    n_points = check_int(n_points, "n_points", lo=1)
    data, d, n = problem.data, problem.d, problem.data.n
    pts = _probe_points(problem, n_points, rng)
    seen = {"L0": 0.0, "L1": 0.0}
    prev: tuple[np.ndarray, np.ndarray] | None = None
    for x in pts:
        G = problem.grad(x, data)
        v = problem.loss(x, data)
        if G.shape != (n, d) or v.shape != (n,) or not (np.all(np.isfinite(G)) and np.all(np.isfinite(v))):
            raise ValueError(
                f"loss must return finite values of shape ({n},) and gradients of shape ({n}, {d}); got "
                f"{v.shape} and {G.shape}"
            )
        g_max = float(np.max(np.asarray(lp_norm(G, problem.q, axis=-1))))
        seen["L0"] = max(seen["L0"], g_max)
        if g_max > problem.L0 * (1 + _RTOL) + 1e-12:
            raise ValueError(
                f"loss declares lipschitz = {problem.L0:.6g}, but a record's gradient has ||grad f||_q = {g_max:.6g} "
                "at a feasible point: the declared constant is false for this data"
            )
        if prev is not None:
            dist = float(lp_norm(x - prev[0], problem.p))
            if dist > 0:
                quot = float(np.max(np.asarray(lp_norm(G - prev[1], problem.q, axis=-1)))) / dist
                seen["L1"] = max(seen["L1"], quot)
                if quot > problem.L1 * (1 + _RTOL) + 1e-12:
                    raise ValueError(
                        f"loss declares smoothness = {problem.L1:.6g}, but a record's gradient changes by "
                        f"{quot:.6g} times ||x - x'||_p between two feasible points: the declared constant is false"
                    )
        prev = (x, G)
    return seen


def require_problem(problem: Any, name: str = "problem") -> Problem:
    """``problem`` when it is a :class:`~dpsco_lib.problems.Problem`; else a ``ParameterTypeError`` (a TypeError
    and a ValueError) that says how to build one from arrays with :func:`from_data`."""
    if isinstance(problem, Problem):
        return problem
    hint = ("build one from the arrays with dpsco_lib.problems.from_data(X, y, loss=..., feature_bound=..., "
            "label_bound=..., feasible_set=...)")
    if type(problem).__name__ in ("LogisticRegressionProblem", "LinearLossProblem"):
        hint = (f"{type(problem).__name__} is a problem of the regularized exponential mechanism (data passed "
                "as arrays), not a Problem; for its loss on your records use dpsco_lib.problems.from_data(X, y, "
                "loss='logistic', feature_bound=..., feasible_set=...)")
    raise ParameterTypeError(f"{name} must be a dpsco_lib.problems.Problem, got {type(problem).__name__}: {hint}")
