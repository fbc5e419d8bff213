r"""The regularized exponential mechanism and its Gaussian-DP guarantee (Spec R1, R2; Gopi, Lee and Liu 2022).

Mechanism (seed 003, section 2). Given a dataset :math:`\mathcal D = (z_1, \dots, z_n)` and
:math:`G`-Lipschitz (in :math:`\ell_2`) convex per-sample losses :math:`\ell(x, z)` on a convex body
:math:`K \subset \mathbb R^d` (default: the Euclidean ball of radius R), output one draw

.. math:: x^{priv} \sim \nu(x) \propto \exp\bigl(-k\,[f(x; \mathcal D) + \tfrac{\mu}{2}\|x\|_2^2]\bigr)\,
          \mathbf 1_K(x), \qquad f(x; \mathcal D) = \tfrac1n \textstyle\sum_i \ell(x, z_i).

**Privacy (Spec R1).** Seed 003 Thm 1: if :math:`F, \tilde F` are :math:`m`-strongly convex on K and
:math:`\tilde F - F` is :math:`\Gamma`-Lipschitz, then :math:`T(e^{-F} \| e^{-\tilde F}) \ge
T(\mathcal N(0,1)\|\mathcal N(\Gamma/\sqrt m, 1))`. Here :math:`F = k(f + \mu\|x\|^2/2)` is
:math:`k\mu`-strongly convex and, for **replace-one** neighbours (the seed's definition: the databases
agree on all inputs but one), :math:`\tilde F - F = \tfrac kn(\ell(\cdot, z') - \ell(\cdot, z))` is
:math:`2Gk/n`-Lipschitz. Hence the mechanism is :math:`\mu_{GDP}`-GDP (Dong, Roth and Su 2022) with

.. math:: \mu_{GDP} = \frac{2Gk/n}{\sqrt{k\mu}} = \frac{2G\sqrt k}{n\sqrt\mu},

which is the constant of seed 003 Thm 3 (the factor 2 is the replace-one Lipschitz constant; under
add/remove-one neighbours the difference is one loss, G-Lipschitz, but the normalisation 1/n also
changes, so we do not use that variant). This is what :func:`regularized_exp_mu_gdp` implements.
The bound is attained by linear losses :math:`\ell(x, z) = G\langle z, x\rangle` when K is large compared to
:math:`1/\sqrt{k\mu}` (then :math:`\nu, \tilde\nu` are Gaussians shifted by exactly
:math:`\mu_{GDP}` standard deviations): :class:`LinearLossProblem`.

Ledger. mu-GDP is exactly the privacy curve of one Gaussian mechanism with noise multiplier
:math:`1/\mu_{GDP}` (sensitivity 1, noise N(0, (1/mu)^2)), and the ledger has no separate GDP event kind,
so the mechanism is recorded as ``record_gaussian(1/mu_GDP)``; ``ledger.epsilon(delta, "gdp")`` then
returns the exact GDP conversion.

**Utility (Spec R2).** Seed 003 Lemma 2 (Kalai and Vempala 2006 for linear f, the epigraph lifting for
convex f): :math:`\mathbb E_\nu F/k - \min_K F/k \le d/k`, i.e. for the regularized objective
:math:`f_\mu = f + \mu\|\cdot\|^2/2`, :math:`\mathbb E_\nu f_\mu - \min_K f_\mu \le d/k`, and therefore
:math:`\mathbb E_\nu f - \min_K f \le d/k + \mu R_K^2/2` with :math:`R_K = \max_{x\in K}\|x\|_2`
(:math:`\le D` when :math:`0 \in K`, which gives the seed's :math:`d/k + \mu D^2/2`).

**Choice of (k, mu)** (:func:`regularized_exp_theory_params`). For a target (eps, delta), let
:math:`\mu^\star` be the largest GDP parameter with :math:`\delta_{\mu^\star}(\varepsilon) \le \delta`
(DRS22 Cor 2.13, solved by brentq). Setting :math:`\mu = 4G^2k/(n^2\mu^{\star2})` makes the mechanism
exactly :math:`\mu^\star`-GDP and the bound :math:`d/k + 2G^2kR^2/(n^2\mu^{\star 2})`, minimized at
:math:`k = \sqrt d\, n\mu^\star/(\sqrt2 GR)` with value :math:`2\sqrt{2d}\,GR/(n\mu^\star) =
O(GR\sqrt{d\log(1/\delta)}/(n\varepsilon))`, the optimal (eps, delta) rate (noisy gradient descent's).

**Sampling.** :func:`sample_regularized_exponential` uses the proximal sampler with an exact
rejection-sampling restricted Gaussian oracle (:mod:`dpsco_lib.algorithms.samplers`); its number of
steps certifies :math:`\mathrm{TV}(\rho_N, \nu) \le \tau`. A sampler at TV distance :math:`\tau` from an
(eps, delta_0)-DP mechanism is :math:`(\varepsilon, \delta_0 + (1 + e^\varepsilon)\tau)`-DP;
:func:`run_regularized_exponential_mechanism` splits the target delta accordingly.

Baselines (Spec R2): :func:`run_noisy_gradient_descent` (full-batch, Gaussian noise, GDP accounting) and
:func:`run_pure_exponential_mechanism` (mu = 0, k = eps n/(2 G D), eps-DP).

The library works in the idealized real-arithmetic model (float64, numpy's non-cryptographic generator).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, special

from dpsco_lib._validation import (
    check_array,
    check_delta,
    check_epsilon,
    check_in_range,
    check_int,
    check_norm_bound,
    check_positive,
    check_rng,
)
from dpsco_lib.algorithms._result import Result
from dpsco_lib.algorithms.samplers import boundary_curvature, default_eta, proximal_sampler, proximal_sampler_steps
from dpsco_lib.geometry.sets import FeasibleSet, LpBall
from dpsco_lib.privacy.accounting import PrivacyLedger, gdp_delta

__all__ = [
    "LinearLossProblem",
    "LogisticRegressionProblem",
    "RegularizedExpParams",
    "exact_tradeoff_curve_1d",
    "gdp_mu_for_budget",
    "linear_loss_data",
    "logistic_regression_data",
    "noisy_gd_theory_params",
    "pure_exp_theory_params",
    "regularized_exp_mu_gdp",
    "regularized_exp_theory_params",
    "run_noisy_gradient_descent",
    "run_pure_exponential_mechanism",
    "run_regularized_exponential_mechanism",
    "sample_regularized_exponential",
]


# ---------------------------------------------------------------------------------------------------------
# problems: smooth convex G-Lipschitz per-sample losses on a convex body
# ---------------------------------------------------------------------------------------------------------


def _feasible_set(d: int, radius: float, feasible_set: FeasibleSet | None) -> FeasibleSet:
    if feasible_set is None:
        return LpBall(d, 2.0, radius)
    if not isinstance(feasible_set, FeasibleSet) or feasible_set.d != d:
        raise ValueError(f"feasible_set must be a FeasibleSet of dimension d={d}, got {feasible_set!r}")
    return feasible_set


def _max_norm(K: FeasibleSet) -> float:
    """R_K = max_{x in K} ||x||_2 <= ||center|| + center_radius(2)."""
    return float(np.linalg.norm(K.center())) + K.center_radius(2.0)


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
        check_int(self.d, "d", lo=1)
        check_positive(self.radius, "radius")
        check_positive(self.feature_bound, "feature_bound")
        object.__setattr__(self, "feasible_set", _feasible_set(self.d, self.radius, self.feasible_set))

    @property
    def lipschitz(self) -> float:
        return float(self.feature_bound)

    def check_data(self, data: Any) -> tuple[np.ndarray, np.ndarray]:
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

        import cvxpy as cp

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
        check_int(self.d, "d", lo=1)
        check_positive(self.radius, "radius")
        check_positive(self.G, "G")
        object.__setattr__(self, "feasible_set", _feasible_set(self.d, self.radius, self.feasible_set))

    @property
    def lipschitz(self) -> float:
        return float(self.G)

    def check_data(self, data: Any) -> np.ndarray:
        z = check_array(data, "data", shape=(None, self.d))
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
            import cvxpy as cp

            x = cp.Variable(self.d)
            prob = cp.Problem(cp.Minimize(c @ x + (mu / 2) * cp.sum_squares(x)), K.cvxpy_constraints(x))
            prob.solve(solver=cp.CLARABEL)
            xs = K.project(np.asarray(x.value))
        return xs, float(c @ xs + mu / 2 * xs @ xs)


Problem = LogisticRegressionProblem | LinearLossProblem


def logistic_regression_data(
    n: int, d: int, rng: np.random.Generator, *, feature_bound: float = 1.0, signal: float = 2.0
) -> tuple[np.ndarray, np.ndarray]:
    r"""Synthetic bounded logistic data: :math:`a_i` uniform on the sphere of radius ``feature_bound``,
    :math:`P(b_i = 1) = \sigma(\langle a_i, w\rangle)` with :math:`w` uniform on the sphere of radius
    ``signal * sqrt(d) / feature_bound`` (so the margins are O(signal) in every dimension)."""
    rng = check_rng(rng)
    n = check_int(n, "n", lo=1)
    d = check_int(d, "d", lo=1)
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
    d = check_int(d, "d", lo=1)
    s = check_in_range(mean_norm, "mean_norm", 0.0, 1.0)
    u = rng.standard_normal(d)
    u /= np.linalg.norm(u)
    z = s * u + rng.standard_normal((n, d)) * s / math.sqrt(d)
    return z / np.maximum(1.0, np.linalg.norm(z, axis=1, keepdims=True))


def _check_problem(problem: Any) -> Problem:
    needed = ("d", "feasible_set", "lipschitz", "objective", "gradient", "smoothness", "check_data", "minimize")
    missing = [n for n in needed if not hasattr(problem, n)]
    if missing:
        raise ValueError(f"problem must provide {needed}; {type(problem).__name__} lacks {missing}")
    return problem


# ---------------------------------------------------------------------------------------------------------
# privacy and theory parameters
# ---------------------------------------------------------------------------------------------------------


def regularized_exp_mu_gdp(*, n: int, G: float, k: float, mu: float) -> float:
    r""":math:`\mu_{GDP} = 2G\sqrt k/(n\sqrt\mu)` of the regularized exponential mechanism (seed 003 Thm 3,
    replace-one neighbours; see the module docstring). Spec R1."""
    n = check_int(n, "n", lo=1)
    G = check_positive(G, "G")
    k = check_positive(k, "k")
    mu = check_positive(mu, "mu")
    return 2.0 * G * math.sqrt(k) / (n * math.sqrt(mu))


def gdp_mu_for_budget(epsilon: float, delta: float) -> float:
    r"""The largest :math:`\mu` such that :math:`\mu`-GDP implies (eps, delta)-DP, i.e. the root of
    :math:`\delta_\mu(\varepsilon) = \delta` (DRS22 Cor 2.13; increasing in mu), by brentq, rounded down so
    that ``gdp_delta(mu, epsilon) <= delta`` holds in floating point. Spec R1."""
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)

    def fn(m: float) -> float:
        return gdp_delta(m, epsilon=epsilon) - delta

    hi = 1.0
    while fn(hi) < 0:
        hi *= 2.0
    lo = hi / 2.0
    while fn(lo) > 0 and lo > 1e-300:
        lo /= 2.0
    root = optimize.brentq(fn, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    while fn(root) > 0:
        root = math.nextafter(root, 0.0)
    return float(root)


@dataclass(frozen=True)
class RegularizedExpParams:
    """Theory parameters of the regularized exponential mechanism (Spec R1, R2).

    Attributes
    ----------
    k, mu : float
        Inverse temperature and regularization.
    mu_gdp : float
        The GDP parameter 2 G sqrt(k)/(n sqrt(mu)) (equal to the target's).
    excess_bound : float
        d/k + mu R^2/2 (Lemma 2 + regularization bias).
    """

    k: float
    mu: float
    mu_gdp: float
    excess_bound: float


def regularized_exp_theory_params(
    n: int, d: int, G: float, D: float, epsilon: float, delta: float, *, radius: float | None = None
) -> RegularizedExpParams:
    r"""(k, mu) for a target (eps, delta) (Spec R1, R2).

    :math:`\mu^\star` = :func:`gdp_mu_for_budget` (eps, delta); with :math:`R` = ``radius`` (the largest
    norm of a point of K; default ``D``, valid when :math:`0 \in K`, as in seed 003 Thm 3),
    :math:`k = \sqrt d\, n\mu^\star/(\sqrt2\,GR)`, :math:`\mu = 4G^2k/(n^2\mu^{\star2})`, so that
    :math:`\mu_{GDP} = \mu^\star` and the bound :math:`d/k + \mu R^2/2 = 2\sqrt{2d}\,GR/(n\mu^\star)`.
    """
    n = check_int(n, "n", lo=1)
    d = check_int(d, "d", lo=1)
    G = check_positive(G, "G")
    D = check_positive(D, "D")
    R = D if radius is None else check_positive(radius, "radius")
    m_star = gdp_mu_for_budget(epsilon, delta)
    k = math.sqrt(d) * n * m_star / (math.sqrt(2.0) * G * R)
    # (1 + 1e-12): a rounding margin so that the float mu_GDP never exceeds mu* (the target stays certified)
    mu = 4.0 * G**2 * k / (n**2 * m_star**2) * (1 + 1e-12)
    return RegularizedExpParams(
        k=k, mu=mu, mu_gdp=regularized_exp_mu_gdp(n=n, G=G, k=k, mu=mu), excess_bound=d / k + mu * R**2 / 2
    )


def pure_exp_theory_params(n: int, G: float, D: float, epsilon: float) -> float:
    r"""k = eps n/(2 G D) for the pure-DP exponential mechanism :math:`\nu \propto e^{-kf}` on K: for
    replace-one neighbours :math:`\tilde f - f` is (2G/n)-Lipschitz, so its oscillation on K is at most
    :math:`2GD/n` and the log density ratio at most :math:`2kGD/n = \varepsilon`. Its utility is
    :math:`d/k = 2GDd/(n\varepsilon)` (Lemma 2), the O(GDd/(n eps)) rate of seed 003. Spec R2."""
    n = check_int(n, "n", lo=1)
    G = check_positive(G, "G")
    D = check_positive(D, "D")
    epsilon = check_epsilon(epsilon)
    return epsilon * n / (2.0 * G * D)


# ---------------------------------------------------------------------------------------------------------
# sampling
# ---------------------------------------------------------------------------------------------------------


def sample_regularized_exponential(
    problem: Problem,
    data: Any,
    *,
    k: float,
    mu: float,
    rng: np.random.Generator,
    n_samples: int = 1,
    n_steps: int | None = None,
    tv_target: float = 1e-3,
    eta: float | None = None,
    return_info: bool = False,
) -> np.ndarray | tuple[np.ndarray, dict]:
    r"""Draw ``n_samples`` independent samples of :math:`\nu \propto \exp(-k(f(x; D) + \mu\|x\|^2/2))` on K.

    Proximal sampler with exact RGO (:func:`~dpsco_lib.algorithms.samplers.proximal_sampler`) on
    :math:`U = k(f + \mu\|\cdot\|^2/2)`, strongly convex with :math:`m = k\mu` and smooth with
    :math:`L = k(\beta + \mu)` (:math:`\beta` = ``problem.smoothness(data)``). Default ``n_steps`` certifies
    :math:`\mathrm{TV}(\text{law of each sample}, \nu) \le` ``tv_target`` from a uniform start on K, using
    :math:`\mathrm{osc}_K U \le k(G D + \mu R_K^2/2)` (:func:`~dpsco_lib.algorithms.samplers.proximal_sampler_steps`).
    ``mu = 0`` (the pure exponential mechanism) is allowed; the certificate then uses the Poincaré route.
    The step defaults to :func:`~dpsco_lib.algorithms.samplers.default_eta` with the boundary curvature at the
    constrained mode (efficiency only; any eta leaves the law exact and the certificate valid).
    ``n_steps`` overrides the certified number of steps (then ``info["tv_bound"]`` is NaN unless it is larger).

    Returns an ``(n_samples, d)`` array (and an info dict with ``return_info``). Spec R1.
    """
    problem = _check_problem(problem)
    data = problem.check_data(data)
    k = check_positive(k, "k")
    mu = check_positive(mu, "mu", allow_zero=True)
    rng = check_rng(rng)
    n_samples = check_int(n_samples, "n_samples", lo=1)
    tv_target = check_in_range(tv_target, "tv_target", 0.0, 1.0, lo_inclusive=False, hi_inclusive=False)
    K = problem.feasible_set
    D = K.diameter(2.0)
    R = _max_norm(K)
    m = k * mu
    L = max(k * (problem.smoothness(data) + mu), m, 1e-12)
    osc = k * (problem.lipschitz * D + mu * R**2 / 2)
    certified = n_steps is None
    if hasattr(problem, "potential_parts"):
        obj, grad = problem.potential_parts(data)
    else:

        def obj(X: np.ndarray) -> np.ndarray:
            return problem.objective(X, data)

        def grad(X: np.ndarray) -> np.ndarray:
            return problem.gradient(X, data)

    def U(X: np.ndarray) -> np.ndarray:
        return k * (obj(X) + 0.5 * mu * np.einsum("ij,ij->i", X, X))

    def grad_U(X: np.ndarray) -> np.ndarray:
        return k * (grad(X) + mu * X)

    if eta is None:
        eta = default_eta(m, L, problem.d, boundary_curvature(grad_U, K, L=L))
    else:
        eta = check_positive(eta, "eta")
    steps = proximal_sampler_steps(m=m, L=L, d=problem.d, diameter=D, osc_bound=osc, tv_target=tv_target, eta=eta)
    n_run = steps.n_steps if n_steps is None else check_int(n_steps, "n_steps", lo=1)
    x, sinfo = proximal_sampler(U, grad_U, K, m=m, L=L, rng=rng, n_chains=n_samples, n_steps=n_run, eta=eta)
    if not return_info:
        return x
    info = {
        **sinfo,
        "m": m,
        "L": L,
        "route": steps.route,
        "certified_steps": steps.n_steps,
        "tv_bound": tv_target if (certified or n_run >= steps.n_steps) else math.nan,
    }
    return x, info


# ---------------------------------------------------------------------------------------------------------
# the mechanisms
# ---------------------------------------------------------------------------------------------------------


def run_regularized_exponential_mechanism(
    problem: Problem,
    data: Any,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    k: float | None = None,
    mu: float | None = None,
    sampler_delta_fraction: float = 0.01,
) -> Result:
    r"""Run the regularized exponential mechanism at a target (eps, delta) (Spec R1, R2; GLL22).

    Defaults (k, mu) come from :func:`regularized_exp_theory_params` at
    :math:`\delta_0 = (1 - \phi)\delta` (:math:`\phi` = ``sampler_delta_fraction``); the sampler runs to
    TV accuracy :math:`\tau = \phi\delta/(1 + e^\varepsilon)`, so the implemented mechanism is
    :math:`(\varepsilon, \delta_0 + (1+e^\varepsilon)\tau) = (\varepsilon, \delta)`-DP. If (k, mu) are given
    they must satisfy :math:`\delta_{\mu_{GDP}}(\varepsilon) \le \delta_0`, else ValueError.

    The ledger records one Gaussian mechanism with noise multiplier :math:`1/\mu_{GDP}` (mu-GDP is exactly
    that mechanism's privacy curve); ``ledger.epsilon(info["delta_mechanism"])`` certifies eps for the exact
    sampler and ``info["delta_sampler"]`` is the sampler's additive term.
    """
    problem = _check_problem(problem)
    data = problem.check_data(data)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    rng = check_rng(rng)
    phi = check_in_range(
        sampler_delta_fraction, "sampler_delta_fraction", 0.0, 1.0, lo_inclusive=False, hi_inclusive=False
    )
    n = int(np.shape(data[0] if isinstance(data, tuple) else data)[0])
    K = problem.feasible_set
    G = problem.lipschitz
    D = K.diameter(2.0)
    R = _max_norm(K)
    delta0 = (1 - phi) * delta
    tau = phi * delta / (1 + math.exp(epsilon))
    if (k is None) != (mu is None):
        raise ValueError("give both k and mu, or neither (theory defaults)")
    if k is None:
        tp = regularized_exp_theory_params(n, problem.d, G, D, epsilon, delta0, radius=R)
        k_used, mu_used = tp.k, tp.mu
    else:
        k_used = check_positive(k, "k")
        mu_used = check_positive(mu, "mu")
    mu_gdp = regularized_exp_mu_gdp(n=n, G=G, k=k_used, mu=mu_used)
    if gdp_delta(mu_gdp, epsilon=epsilon) > delta0 * (1 + 1e-12):
        raise ValueError(
            f"k={k_used!r}, mu={mu_used!r} give mu_GDP={mu_gdp!r}, which is not ({epsilon!r}, {delta0!r})-DP"
        )
    x, sinfo = sample_regularized_exponential(
        problem, data, k=k_used, mu=mu_used, rng=rng, n_samples=1, tv_target=tau, return_info=True
    )
    ledger = PrivacyLedger()
    ledger.record_gaussian(1.0 / mu_gdp, label="regularized exponential mechanism (mu-GDP)")
    return Result(
        x=x[0],
        params={"k": k_used, "mu": mu_used, "n_steps": sinfo["n_steps"], "eta": sinfo["eta"]},
        ledger=ledger,
        info={
            "method": "regularized exponential mechanism (proximal sampler, exact RGO)",
            "mu_gdp": mu_gdp,
            "delta_mechanism": delta0,
            "delta_sampler": (1 + math.exp(epsilon)) * tau,
            "tv_bound": tau,
            "certified_epsilon": ledger.epsilon(delta0, method="gdp"),
            "excess_bound": problem.d / k_used + mu_used * R**2 / 2,
            "route": sinfo["route"],
            "mean_rounds": sinfo["mean_rounds"],
        },
    )


def run_pure_exponential_mechanism(
    problem: Problem,
    data: Any,
    *,
    epsilon: float,
    rng: np.random.Generator,
    n_steps: int | None = None,
    tv_target: float = 1e-3,
) -> Result:
    r"""The pure eps-DP exponential mechanism :math:`\nu \propto e^{-kf}` on K, k = eps n/(2GD)
    (:func:`pure_exp_theory_params`); utility :math:`d/k = 2GDd/(n\varepsilon)` (Spec R2 baseline).

    Sampled with the proximal sampler at mu = 0 (Poincaré certificate, ``tv_target``); the sampler's TV
    error adds :math:`(1+e^\varepsilon)\tau` to delta, reported in ``info["delta_sampler"]``.
    """
    problem = _check_problem(problem)
    data = problem.check_data(data)
    epsilon = check_epsilon(epsilon)
    rng = check_rng(rng)
    n = int(np.shape(data[0] if isinstance(data, tuple) else data)[0])
    K = problem.feasible_set
    D = K.diameter(2.0)
    k = pure_exp_theory_params(n, problem.lipschitz, D, epsilon)
    x, sinfo = sample_regularized_exponential(
        problem, data, k=k, mu=0.0, rng=rng, n_samples=1, n_steps=n_steps, tv_target=tv_target, return_info=True
    )
    ledger = PrivacyLedger()
    ledger.record_pure(epsilon, label="exponential mechanism (pure DP)")
    return Result(
        x=x[0],
        params={"k": k, "mu": 0.0, "n_steps": sinfo["n_steps"], "eta": sinfo["eta"]},
        ledger=ledger,
        info={
            "method": "pure exponential mechanism",
            "excess_bound": problem.d / k,
            "delta_sampler": (1 + math.exp(epsilon)) * sinfo["tv_bound"],
            "tv_bound": sinfo["tv_bound"],
            "certified_steps": sinfo["certified_steps"],
        },
    )


def noisy_gd_theory_params(n: int, d: int, G: float, D: float, epsilon: float, delta: float) -> dict[str, float]:
    r"""Full-batch noisy projected gradient descent at a target (eps, delta) (Spec R2 baseline).

    Each step releases :math:`\nabla f(x_t) + \xi_t`, :math:`\xi_t \sim \mathcal N(0, s^2 I)`; the gradient
    mean has replace-one :math:`\ell_2` sensitivity :math:`2G/n`, so with noise multiplier
    :math:`\sigma = s n/(2G)` each step is :math:`(1/\sigma)`-GDP and T steps compose to
    :math:`\sqrt T/\sigma`-GDP (DRS22 Cor 3.3). With :math:`\mu^\star` = :func:`gdp_mu_for_budget`:
    :math:`T = \lceil n^2\mu^{\star2}/(4d)\rceil`, :math:`\sigma = \sqrt T/\mu^\star`, step
    :math:`\eta = D/\sqrt{T(G^2 + d s^2)}`; the averaged iterate has excess risk
    :math:`\le D\sqrt{(G^2 + ds^2)/T} \approx 2\sqrt2\,GD\sqrt d/(n\mu^\star)` =
    :math:`O(GD\sqrt{d\log(1/\delta)}/(n\varepsilon))`.
    """
    n = check_int(n, "n", lo=1)
    d = check_int(d, "d", lo=1)
    G = check_positive(G, "G")
    D = check_positive(D, "D")
    m_star = gdp_mu_for_budget(epsilon, delta)
    T = max(1, math.ceil(n**2 * m_star**2 / (4 * d)))
    sigma = math.sqrt(T) / m_star
    s = 2 * G * sigma / n
    step = D / math.sqrt(T * (G**2 + d * s**2))
    return {
        "T": T,
        "noise_multiplier": sigma,
        "noise_std": s,
        "step": step,
        "mu_gdp": m_star,
        "excess_bound": D * math.sqrt((G**2 + d * s**2) / T),
    }


def run_noisy_gradient_descent(
    problem: Problem,
    data: Any,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    n_steps: int | None = None,
) -> Result:
    """Noisy projected full-batch gradient descent with the averaged iterate (see :func:`noisy_gd_theory_params`).

    ``n_steps`` overrides T (the noise is recalibrated so that the run stays (eps, delta)-DP). The ledger
    records T Gaussian mechanisms with noise multiplier sigma; ``ledger.epsilon(delta)`` certifies eps.
    Spec R2 baseline.
    """
    problem = _check_problem(problem)
    data = problem.check_data(data)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    rng = check_rng(rng)
    n = int(np.shape(data[0] if isinstance(data, tuple) else data)[0])
    K = problem.feasible_set
    G, D, d = problem.lipschitz, K.diameter(2.0), problem.d
    tp = noisy_gd_theory_params(n, d, G, D, epsilon, delta)
    T = tp["T"] if n_steps is None else check_int(n_steps, "n_steps", lo=1)
    sigma = math.sqrt(T) / tp["mu_gdp"]
    s = 2 * G * sigma / n
    step = D / math.sqrt(T * (G**2 + d * s**2))
    x = K.project(K.center()[None, :])
    avg = np.zeros((1, d))
    noise = rng.standard_normal((T, d)) * s
    for t in range(T):
        x = K.project(x - step * (problem.gradient(x, data) + noise[t]))
        avg += (x - avg) / (t + 1)
    ledger = PrivacyLedger()
    ledger.record_gaussian(sigma, count=T, label="noisy gradient descent step")
    return Result(
        x=avg[0],
        params={"T": T, "noise_multiplier": sigma, "noise_std": s, "step": step},
        ledger=ledger,
        info={
            "method": "noisy gradient descent (averaged iterate)",
            "mu_gdp": math.sqrt(T) / sigma,
            "excess_bound": D * math.sqrt((G**2 + d * s**2) / T),
        },
    )


# ---------------------------------------------------------------------------------------------------------
# the exact privacy trade-off in d = 1 (numerical, Neyman-Pearson)
# ---------------------------------------------------------------------------------------------------------


def exact_tradeoff_curve_1d(
    problem: Problem,
    data: Any,
    data_prime: Any,
    *,
    k: float,
    mu: float,
    alpha: np.ndarray,
    n_grid: int = 200_001,
) -> np.ndarray:
    r"""The exact trade-off function :math:`T(\nu_D \| \nu_{D'})(\alpha)` of the mechanism in d = 1.

    Both densities :math:`\propto e^{-k(f(x;\cdot) + \mu x^2/2)}` on :math:`K = [c - r, c + r]` are discretized
    into ``n_grid - 1`` cells (trapezoid masses, normalized in log space). By Neyman-Pearson the optimal
    level-alpha test rejects :math:`\nu_D` on the cells of largest likelihood ratio
    :math:`q_i/p_i`, randomizing on the boundary cell; sorting the cells by decreasing ratio traces the
    lower boundary :math:`(\alpha_j, \beta_j) = (\sum_{i\le j} p_i,\ 1 - \sum_{i \le j} q_i)`, linearly
    interpolated (Dong, Roth and Su 2022, Def 2.1). Discretization error is O(1/n_grid^2) in each mass.
    Compare with ``gdp_tradeoff(mu_gdp, alpha)`` (seed 003 Thm 1/3). Spec R1.
    """
    problem = _check_problem(problem)
    if problem.d != 1:
        raise ValueError(f"exact_tradeoff_curve_1d needs a problem with d = 1, got d = {problem.d}")
    data = problem.check_data(data)
    data_prime = problem.check_data(data_prime)
    k = check_positive(k, "k")
    mu = check_positive(mu, "mu", allow_zero=True)
    alpha = check_array(alpha, "alpha", ndim=1)
    if np.any((alpha < 0) | (alpha > 1)):
        raise ValueError("alpha must lie in [0, 1]")
    n_grid = check_int(n_grid, "n_grid", lo=3)
    K = problem.feasible_set
    c, r = float(K.center()[0]), K.center_radius(2.0)
    x = np.linspace(c - r, c + r, n_grid)[:, None]

    def log_cell_masses(dat: Any) -> np.ndarray:
        u = -k * (problem.objective(x, dat) + 0.5 * mu * x[:, 0] ** 2)
        lm = np.logaddexp(u[:-1], u[1:])  # log of (p_i + p_{i+1}) (times constants)
        return lm - special.logsumexp(lm)

    lp, lq = log_cell_masses(data), log_cell_masses(data_prime)
    order = np.argsort(-(lq - lp), kind="stable")
    a_pts = np.concatenate([[0.0], np.cumsum(np.exp(lp[order]))])
    b_pts = np.concatenate([[1.0], 1.0 - np.cumsum(np.exp(lq[order]))])
    a_pts[-1], b_pts[-1] = 1.0, 0.0
    return np.clip(np.interp(alpha, a_pts, b_pts), 0.0, 1.0)
