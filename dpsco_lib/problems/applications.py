"""Applications of the saddle point algorithms built from scikit-learn data (Spec X1, X2).

No downloads: the data come from ``sklearn.datasets.load_breast_cancer`` / ``load_digits`` (shipped
with scikit-learn).  In both problems the population is a finite, known distribution (a dataset's
empirical distribution), so values, best responses and gaps are exact.

X1 (linear queries as a bilinear game).  A finite universe of N = 2^k binarized records, the data
histogram h in Delta_N, queries q_j in {0, 1}^N (k-way conjunctions of attribute values).  With
B = [Q^T, -Q^T] (N x 2m) and a record z = e_k (one-hot),

    f(p, y; z) = (p - e_k)^T B y,   F(p, y) = (p - h)^T B y = sum_j (y_j^+ - y_j^-)(<q_j, p> - <q_j, h>),

so max_y F(p, y) = max_j |<q_j, p> - <q_j, h>| (the largest query error) and the saddle point is
p* = h, y* uniform (B y* = 0), value 0.  Gap(p, y) = max_c (B^T (p - h))_c - min_k (B y)_k + h^T B y.
Constants (l1 setting): |B| <= 1 entrywise, so ||grad_p||_inf = ||B y||_inf <= 1 and
||grad_y||_inf = max_c |<b_c, p - e_k>| <= 1 (query values in [0, 1]); L0 = L1 = 1, L2 = 0.

X2 (minimizing the maximal loss).  m groups with losses L_g(x) = E[l(x; z) | group g], l the logistic
loss, x in the l1 ball of radius R (a polytope: 2d vertices), y in Delta_m:

    min_x max_g L_g(x) = min_x max_{y in Delta_m} sum_g y_g L_g(x),   f(x, y; z) = y_g l(x; a, b)/pi_g,

where pi_g is the population frequency of group g (importance weighting makes E_z f = sum_g y_g L_g).
With ||a||_inf <= B_a, l_max = log(1 + exp(B_a R)) and pi_min the smallest group frequency
(sum norm ||x||_1 + ||y||_1, gradients in l_inf; sigma' <= 1/4, |sigma''| <= 1/(6 sqrt 3)):
L0 = max(B_a, l_max)/pi_min, L1 = max(B_a^2/4, B_a)/pi_min, L2 = max(B_a^3/(6 sqrt 3), B_a^2/4)/pi_min.

References: González, Guzmán & Paquette (2024), arXiv 2403.02912, Section 1.4 (Thm 1.1) and the
min-max-loss application; Hardt, Ligett & McSherry (2012), "A simple and practical algorithm for
differentially private data release" (MWEM, the X1 baseline).

The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
from scipy.special import expit

from dpsco_lib._optional import require
from dpsco_lib._validation import check_array, check_int, check_positive
from dpsco_lib.geometry.sets import L1Ball, Simplex
from dpsco_lib.problems.base import SaddleProblem, solve_cvxpy
from dpsco_lib.problems.dataset import Dataset

__all__ = [
    "QUERY_RELEASE_FAMILY",
    "LinearQueryGame",
    "MaxOfLosses",
    "group_robust_breast_cancer",
    "linear_query_game_from_sklearn",
    "load_sklearn_table",
    "max_of_losses_from_sklearn",
    "query_release_instance",
]

_SKLEARN = ("breast_cancer", "digits")


def load_sklearn_table(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(features, target) of a dataset shipped with scikit-learn (no download)."""
    from sklearn import datasets

    if name == "breast_cancer":
        bunch = datasets.load_breast_cancer()
    elif name == "digits":
        bunch = datasets.load_digits()
    else:
        raise ValueError(f"name must be one of {_SKLEARN}, got {name!r}")
    return np.asarray(bunch.data, dtype=np.float64), np.asarray(bunch.target)


class LinearQueryGame(SaddleProblem):
    """Linear-query release as a bilinear game over the histogram simplex (Spec X1).

    Parameters
    ----------
    queries : array (m, N)
        Query vectors with entries in [0, 1].
    records : int array (n_data,)
        Universe index of every record of the private dataset (its histogram is the population).
    """

    spec = "X1"

    def __init__(self, queries: Any, records: Any) -> None:
        Q = check_array(queries, "queries", ndim=2)
        if np.any(Q < 0) or np.any(Q > 1):
            raise ValueError("queries must have entries in [0, 1]")
        self.Q = Q
        self.N = Q.shape[1]
        rec = np.asarray(records)
        if rec.ndim != 1 or rec.size == 0 or rec.dtype.kind not in "iu" or rec.min() < 0 or rec.max() >= self.N:
            raise ValueError(f"records must be a non-empty 1-D integer array with values in [0, {self.N})")
        self.records = rec
        self.histogram = np.bincount(rec, minlength=self.N) / rec.size
        self.B = np.concatenate([Q.T, -Q.T], axis=1)
        self.x_set = Simplex(self.N)
        self.y_set = Simplex(2 * Q.shape[0])
        self.L0 = 1.0
        self.L1 = 1.0
        self.L2 = 0.0
        self.exact_population = True
        self._cache = {}

    @property
    def n_queries(self) -> int:
        return int(self.Q.shape[0])

    def dataset(self) -> Dataset:
        """The private dataset itself as one-hot records."""
        return Dataset(np.eye(self.N)[self.records])

    def query_answers(self, p: Any) -> np.ndarray:
        """<q_j, p> for every query (p a distribution over the universe)."""
        return self.Q @ check_array(p, "p", shape=(self.N,))

    def max_query_error(self, p: Any) -> float:
        """max_j |<q_j, p> - <q_j, h>| = max_y F(p, y)."""
        return float(np.max(np.abs(self.query_answers(p) - self.Q @ self.histogram)))

    def _loss(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        By = self.B @ y
        return float(x @ By) - data.X @ By

    def _grad_x(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        g = y @ self.B.T  # (k, N)
        return np.repeat(g[:, None, :], data.n, axis=1)

    def _grad_y(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        return (x @ self.B)[:, None, :] - (data.X @ self.B)[None]

    def _sample(self, n: int, rng: np.random.Generator) -> Dataset:
        idx = rng.choice(self.N, size=n, p=self.histogram)
        return Dataset(np.eye(self.N)[idx])

    def _row_violation(self, data: Dataset) -> np.ndarray:
        X = data.X
        return ~(np.all((X == 0) | (X == 1), axis=1) & (X.sum(axis=1) == 1))

    def _clip_rows(self, data: Dataset, bad: np.ndarray) -> Dataset:
        """Map every record to the one-hot vector of its largest entry."""
        return Dataset(np.eye(self.N)[np.argmax(data.X, axis=1)])

    def _population_value(self, x: np.ndarray, y: np.ndarray) -> float:
        return float((x - self.histogram) @ self.B @ y)

    def _best_response_x(self, y: np.ndarray) -> tuple[np.ndarray, float]:
        By = self.B @ y
        k = int(np.argmin(By))
        return np.eye(self.N)[k], float(By[k] - self.histogram @ By)

    def _best_response_y(self, x: np.ndarray) -> tuple[np.ndarray, float]:
        c = (x - self.histogram) @ self.B
        j = int(np.argmax(c))
        return np.eye(self.dy)[j], float(c[j])

    def _saddle_point(self) -> tuple[np.ndarray, np.ndarray, float]:
        return self.histogram.copy(), np.full(self.dy, 1.0 / self.dy), 0.0


def linear_query_game_from_sklearn(
    name: str = "breast_cancer", *, n_attributes: int = 6, way: int = 2
) -> LinearQueryGame:
    """Binarize the first ``n_attributes`` features at their medians (universe N = 2^k) and take all
    ``way``-way marginal queries 1[bit_i = v_i, ...] (m = C(k, way) 2^way queries) (Spec X1)."""
    k = check_int(n_attributes, "n_attributes", lo=1, hi=16)
    way = check_int(way, "way", lo=1, hi=k)
    X, _ = load_sklearn_table(name)
    bits = (X[:, :k] > np.median(X[:, :k], axis=0)).astype(np.int64)
    records = bits @ (1 << np.arange(k))
    universe_bits = (np.arange(2**k)[:, None] >> np.arange(k)[None, :]) & 1
    queries = []
    for attrs in itertools.combinations(range(k), way):
        for vals in itertools.product((0, 1), repeat=way):
            queries.append(np.all(universe_bits[:, attrs] == np.array(vals), axis=1))
    return LinearQueryGame(np.array(queries, dtype=np.float64), records)


QUERY_RELEASE_FAMILY = ("breast-cancer", "point-mass", "two-point", "sparse-8")


def query_release_instance(base: LinearQueryGame, n: int, instance: str, rng: np.random.Generator) -> LinearQueryGame:
    r"""A private dataset of ``n`` records for the queries of ``base``, from a hard instance family (Spec X1).

    ``"breast-cancer"``: n records i.i.d. from the histogram of ``base`` (the real data).  ``"point-mass"``,
    ``"two-point"``, ``"sparse-8"``: n records spread evenly at random over 1, 2 or 8 universe elements drawn
    uniformly (without replacement) by ``rng``.  Concentrated datasets are the packing instances of the lower
    bounds for private query release (Hardt & Talwar 2010; Bun, Ullman & Vadhan 2014: distinguishing among
    datasets concentrated on different universe elements): they maximize the entropic distance
    KL(h || uniform) = log N - H(h) that mirror descent started at the uniform distribution must cover, so they are
    the hard members for the rate of Thm 1.1 (GGP24) and for MWEM alike.

    Parameters
    ----------
    base : LinearQueryGame
        Supplies the universe and the queries.
    n : int
        Number of records (>= 1).
    instance : str
        One of :data:`QUERY_RELEASE_FAMILY`.
    rng : numpy.random.Generator
    """
    if not isinstance(base, LinearQueryGame):
        raise ValueError(f"base must be a LinearQueryGame, got {type(base).__name__}")
    n = check_int(n, "n", lo=1)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if instance == "breast-cancer":
        return LinearQueryGame(base.Q, rng.choice(base.N, size=n, p=base.histogram))
    sizes = {"point-mass": 1, "two-point": 2, "sparse-8": 8}
    if instance not in sizes:
        raise ValueError(f"instance must be one of {QUERY_RELEASE_FAMILY}, got {instance!r}")
    s = min(sizes[instance], base.N)
    support = rng.choice(base.N, size=s, replace=False)
    return LinearQueryGame(base.Q, support[rng.permutation(np.arange(n) % s)])


class MaxOfLosses(SaddleProblem):
    """Group-robust logistic regression min_{||x||_1 <= R} max_g L_g(x) as a saddle problem (Spec X2).

    Parameters
    ----------
    features : array (N, d), labels : array (N,) in {-1, +1}, groups : int array (N,) in [0, m)
        The population (each record has probability 1/N).
    radius : float
        R, the l1 radius of the feasible polytope.
    """

    spec = "X2"
    needs_labels = True
    _extras = ("group",)

    def __init__(self, features: Any, labels: Any, groups: Any, *, radius: float = 5.0) -> None:
        A = check_array(features, "features", ndim=2)
        b = check_array(labels, "labels", shape=(A.shape[0],))
        if np.any(np.abs(b) != 1):
            raise ValueError("labels must be in {-1, +1}")
        g = np.asarray(groups)
        if g.shape != (A.shape[0],) or g.dtype.kind not in "iu" or g.min() < 0:
            raise ValueError("groups must be a non-negative integer array of length N")
        self.m = int(g.max()) + 1
        counts = np.bincount(g, minlength=self.m)
        if np.any(counts == 0):
            raise ValueError("every group 0..m-1 must occur in the population")
        self.population = Dataset(A, b, {"group": g})
        self.pi = counts / g.size
        self.radius = check_positive(radius, "radius")
        self.B_a = float(np.max(np.abs(A)))
        self.x_set = L1Ball(A.shape[1], self.radius)
        self.y_set = Simplex(self.m)
        pmin = float(self.pi.min())
        lmax = math.log1p(math.exp(self.B_a * self.radius))
        self.L0 = max(self.B_a, lmax) / pmin
        self.L1 = max(self.B_a**2 / 4.0, self.B_a) / pmin
        self.L2 = max(self.B_a**3 / (6.0 * math.sqrt(3.0)), self.B_a**2 / 4.0) / pmin
        self.exact_population = True
        self._cache = {}

    def _groups(self, data: Dataset) -> np.ndarray:
        g = np.asarray(data.extras["group"])
        if g.size and (g.min() < 0 or g.max() >= self.m):
            raise ValueError(f"group ids must lie in [0, {self.m})")
        return g.astype(np.int64)

    def _margins(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return data.y * (x @ data.X.T)  # (k, n) for x (k, d); (n,) for x (d,)

    def _loss(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        g = self._groups(data)
        return y[g] * np.logaddexp(0.0, -self._margins(x, data)) / self.pi[g]

    def _grad_x(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        g = self._groups(data)
        coef = -y[:, g] * expit(-self._margins(x, data)) * data.y / self.pi[g]  # (k, n)
        return coef[:, :, None] * data.X[None]

    def _grad_y(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        g = self._groups(data)
        vals = np.logaddexp(0.0, -self._margins(x, data)) / self.pi[g]  # (k, n)
        out = np.zeros((x.shape[0], data.n, self.m))
        out[:, np.arange(data.n), g] = vals
        return out

    def _sample(self, n: int, rng: np.random.Generator) -> Dataset:
        return self.population[rng.integers(0, self.population.n, size=n)]

    def _row_violation(self, data: Dataset) -> np.ndarray:
        g = np.asarray(data.extras["group"])
        return (np.max(np.abs(data.X), axis=1) > self.B_a * (1 + 1e-9)) | (np.abs(data.y) != 1) | (g < 0) | (
            g >= self.m
        )

    def _clip_rows(self, data: Dataset, bad: np.ndarray) -> Dataset:
        """Clip features to [-B_a, B_a], labels to their sign (0 -> +1), groups to [0, m)."""
        g = np.clip(np.asarray(data.extras["group"]), 0, self.m - 1)
        return Dataset(np.clip(data.X, -self.B_a, self.B_a), np.where(data.y < 0, -1.0, 1.0), {"group": g})

    def group_losses(self, x: Any) -> np.ndarray:
        """(L_1(x), ..., L_m(x)) on the population."""
        x = self._pt(x, self.dx, "x")
        P = self.population
        ell = np.logaddexp(0.0, -P.y * (P.X @ x))
        g = np.asarray(P.extras["group"])
        return np.bincount(g, weights=ell, minlength=self.m) / np.bincount(g, minlength=self.m)

    def _population_value(self, x: np.ndarray, y: np.ndarray) -> float:
        return float(y @ self.group_losses(x))

    def _best_response_y(self, x: np.ndarray) -> tuple[np.ndarray, float]:
        L = self.group_losses(x)
        j = int(np.argmax(L))
        return np.eye(self.m)[j], float(L[j])

    def _weighted_logistic(self, xv: Any, w: np.ndarray) -> Any:
        cp = require("cvxpy")

        P = self.population
        return w @ cp.logistic(-cp.multiply(P.y, P.X @ xv))

    def _best_response_x(self, y: np.ndarray) -> tuple[np.ndarray, float]:
        cp = require("cvxpy")

        g = np.asarray(self.population.extras["group"])
        w = y[g] / (self.pi[g] * g.size)
        xv = cp.Variable(self.dx)
        prob = cp.Problem(cp.Minimize(self._weighted_logistic(xv, w)), self.x_set.cvxpy_constraints(xv))
        solve_cvxpy(prob, "the best response in x")
        xs = self.x_set.project(np.asarray(xv.value))
        return xs, self._population_value(xs, y)

    def _saddle_point(self) -> tuple[np.ndarray, np.ndarray, float]:
        cp = require("cvxpy")

        g = np.asarray(self.population.extras["group"])
        counts = np.bincount(g, minlength=self.m)
        xv, t = cp.Variable(self.dx), cp.Variable()
        group_cons = [
            self._weighted_logistic(xv, (g == k) / counts[k]) <= t for k in range(self.m)
        ]
        prob = cp.Problem(cp.Minimize(t), [*group_cons, *self.x_set.cvxpy_constraints(xv)])
        solve_cvxpy(prob, "the max-of-losses saddle point")
        xs = self.x_set.project(np.asarray(xv.value))
        ys = _clean([c.dual_value for c in group_cons])
        return xs, ys, self._population_value(xs, ys)


def _clean(v: Any) -> np.ndarray:
    v = np.maximum(np.asarray(v, dtype=np.float64).ravel(), 0.0)
    return v / v.sum()


def max_of_losses_from_sklearn(
    name: str = "breast_cancer", *, n_groups: int = 3, group_feature: int = 0, radius: float = 5.0
) -> MaxOfLosses:
    """Group-robust logistic regression on a scikit-learn dataset (Spec X2).

    Features are standardized, scaled by their largest absolute value (so ||a||_inf <= 1 exactly) and
    given an intercept column; groups are the ``n_groups`` quantile bins of feature ``group_feature``
    (breast cancer: feature 0 is the mean radius); labels: breast cancer target, digits: digit >= 5.
    """
    k = check_int(n_groups, "n_groups", lo=2)
    X, t = load_sklearn_table(name)
    j = check_int(group_feature, "group_feature", lo=0, hi=X.shape[1] - 1)
    col = X[:, j]
    edges = np.quantile(col, np.linspace(0, 1, k + 1)[1:-1])
    groups = np.searchsorted(edges, col, side="right").astype(np.int64)
    sd = X.std(axis=0)
    Z = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    Z /= np.max(np.abs(Z))
    Z = np.column_stack([Z, np.ones(Z.shape[0])])
    labels = np.where(t == 1, 1.0, -1.0) if name == "breast_cancer" else np.where(t >= 5, 1.0, -1.0)
    return MaxOfLosses(Z, labels, groups, radius=radius)


GROUP_FEATURES = (1, 21, 24, 28)  # mean texture, worst texture, worst smoothness, worst symmetry


def group_robust_breast_cancer(radius: float = 2.0) -> MaxOfLosses:
    r"""The group-robust logistic regression on the breast-cancer data (Spec X2).

    Groups: the terciles of the mean radius (tumour size).  Features: mean texture, worst texture, worst
    smoothness, worst symmetry, standardized, divided by 2 and clipped to [-1, 1], plus an intercept
    (so ||a||_inf <= 1); labels malignant = -1, benign = +1; x in the l1 ball of radius ``radius``.
    The size terciles have very different base rates, so the pooled minimizer serves the small-tumour groups
    well and the large-tumour group badly: the worst-group loss separates group-robust from group-blind learning.
    """
    X, t = load_sklearn_table("breast_cancer")
    edges = np.quantile(X[:, 0], [1 / 3, 2 / 3])
    groups = np.searchsorted(edges, X[:, 0], side="right").astype(np.int64)
    Z = X[:, list(GROUP_FEATURES)]
    Z = np.clip((Z - Z.mean(axis=0)) / Z.std(axis=0) / 2.0, -1.0, 1.0)
    return MaxOfLosses(np.column_stack([Z, np.ones(len(Z))]), np.where(t == 1, 1.0, -1.0), groups, radius=radius)
