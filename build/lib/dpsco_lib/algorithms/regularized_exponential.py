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
so the mechanism is recorded as ``record_gaussian(1/mu_GDP)``; ``result.certified_epsilon(delta)`` then
returns the exact GDP conversion (``"best"`` resolves to GDP for Gaussian events).

**Utility (Spec R2).** Seed 003 Lemma 2 (Kalai and Vempala 2006 for linear f, the epigraph lifting for
convex f): :math:`\mathbb E_\nu F/k - \min_K F/k \le d/k`, i.e. for the regularized objective
:math:`f_\mu = f + \mu\|\cdot\|^2/2`, :math:`\mathbb E_\nu f_\mu - \min_K f_\mu \le d/k`, and therefore
:math:`\mathbb E_\nu f - \min_K f \le d/k + \mu R_K^2/2` with :math:`R_K = \max_{x\in K}\|x\|_2`
(:math:`\le D` when :math:`0 \in K`, which gives the seed's :math:`d/k + \mu D^2/2`).

**Choice of (k, mu)** (:func:`regularized_exp_theory_params`). For a target (eps, delta), let
:math:`\mu^\star` be the largest GDP parameter with :math:`\delta_{\mu^\star}(\varepsilon) \le \delta`
(DRS22 Cor 2.13): :func:`gdp_mu_star`, i.e. one over the noise multiplier that the library's single
calibration path (:func:`~dpsco_lib.privacy.accounting.budget.gaussian_noise_multiplier`, which inverts the
ledger's certificate) gives for one Gaussian event. Setting :math:`\mu = 4G^2k/(n^2\mu^{\star2})` makes the mechanism
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
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from dpsco_lib._validation import (
    check_array,
    check_delta,
    check_epsilon,
    check_in_range,
    check_int,
    check_positive,
    check_rng,
)
from dpsco_lib.algorithms._result import Result
from dpsco_lib.algorithms.samplers import (
    boundary_curvature,
    default_step_size,
    proximal_sampler,
    proximal_sampler_steps,
)
from dpsco_lib.geometry.sets import FeasibleSet
from dpsco_lib.privacy.accounting import PrivacyLedger
from dpsco_lib.privacy.accounting.budget import check_accountant, gaussian_noise_multiplier
from dpsco_lib.problems.lecture import (
    LinearLossProblem,
    LogisticRegressionProblem,
    linear_loss_data,
    logistic_regression_data,
)

__all__ = [
    "LinearLossProblem",
    "LogisticRegressionProblem",
    "NoisyGDParams",
    "PureExpParams",
    "RegularizedExpParams",
    "exact_tradeoff_curve_1d",
    "gdp_mu_star",
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


def _max_norm(K: FeasibleSet) -> float:
    """R_K = max_{x in K} ||x||_2 <= ||center|| + center_radius(2)."""
    return float(np.linalg.norm(K.center())) + K.center_radius(2.0)


Problem = LogisticRegressionProblem | LinearLossProblem


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


def gdp_mu_star(epsilon: float, *, delta: float, accountant: str = "gdp") -> float:
    r"""The largest GDP parameter :math:`\mu^\star` whose mechanism is certified (eps, delta)-DP. Spec R1.

    A :math:`\mu`-GDP mechanism is recorded as the Gaussian event with noise multiplier :math:`1/\mu` (module
    docstring), so :math:`\mu^\star = 1/m` with m =
    :func:`~dpsco_lib.privacy.accounting.budget.gaussian_noise_multiplier` (eps, delta, ``accountant``): the
    privacy budget path that inverts the ledger's certificate. ``accountant="gdp"`` (default) is exact: the root
    of :math:`\delta_\mu(\varepsilon) = \delta` (DRS22 Cor 2.13); it is also what ``"best"`` resolves to.
    """
    return 1.0 / gaussian_noise_multiplier(epsilon, delta, accountant=accountant).value


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
    n: int,
    d: int,
    G: float,
    D: float,
    epsilon: float,
    delta: float,
    *,
    radius: float | None = None,
    accountant: str = "gdp",
) -> RegularizedExpParams:
    r"""(k, mu) for a target (eps, delta) (Spec R1, R2).

    :math:`\mu^\star` = :func:`gdp_mu_star` (eps, delta, ``accountant``); with :math:`R` = ``radius`` (the largest
    norm of a point of K; default ``D``, valid when :math:`0 \in K`, as in seed 003 Thm 3),
    :math:`k = \sqrt d\, n\mu^\star/(\sqrt2\,GR)`, :math:`\mu = 4G^2k/(n^2\mu^{\star2})`, so that
    :math:`\mu_{GDP} = \mu^\star` and the bound :math:`d/k + \mu R^2/2 = 2\sqrt{2d}\,GR/(n\mu^\star)`.
    """
    n = check_int(n, "n", lo=1)
    d = check_int(d, "d", lo=1)
    G = check_positive(G, "G")
    D = check_positive(D, "D")
    R = D if radius is None else check_positive(radius, "radius")
    m_star = gdp_mu_star(epsilon, delta=delta, accountant=accountant)
    k = math.sqrt(d) * n * m_star / (math.sqrt(2.0) * G * R)
    # (1 + 1e-12): a rounding margin so that the float mu_GDP never exceeds mu* (the target stays certified)
    mu = 4.0 * G**2 * k / (n**2 * m_star**2) * (1 + 1e-12)
    return RegularizedExpParams(
        k=k, mu=mu, mu_gdp=regularized_exp_mu_gdp(n=n, G=G, k=k, mu=mu), excess_bound=d / k + mu * R**2 / 2
    )


@dataclass(frozen=True)
class PureExpParams:
    """Theory parameters of the pure exponential mechanism (Spec R2 baseline).

    Attributes
    ----------
    k : float
        Inverse temperature eps n/(2 G D).
    excess_per_dimension : float
        1/k = 2 G D/(n eps): the utility bound d/k divided by d (Lemma 2).
    """

    k: float
    excess_per_dimension: float


def pure_exp_theory_params(n: int, G: float, D: float, epsilon: float) -> PureExpParams:
    r"""k = eps n/(2 G D) for the pure-DP exponential mechanism :math:`\nu \propto e^{-kf}` on K: for
    replace-one neighbours :math:`\tilde f - f` is (2G/n)-Lipschitz, so its oscillation on K is at most
    :math:`2GD/n` and the log density ratio at most :math:`2kGD/n = \varepsilon`. Its utility is
    :math:`d/k = 2GDd/(n\varepsilon)` (Lemma 2), the O(GDd/(n eps)) rate of seed 003. Spec R2."""
    n = check_int(n, "n", lo=1)
    G = check_positive(G, "G")
    D = check_positive(D, "D")
    epsilon = check_epsilon(epsilon)
    k = epsilon * n / (2.0 * G * D)
    return PureExpParams(k=k, excess_per_dimension=1.0 / k)


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
    step_size: float | None = None,
    return_info: bool = False,
) -> np.ndarray | tuple[np.ndarray, dict]:
    r"""Draw ``n_samples`` independent samples of :math:`\nu \propto \exp(-k(f(x; D) + \mu\|x\|^2/2))` on K.

    Proximal sampler with exact RGO (:func:`~dpsco_lib.algorithms.samplers.proximal_sampler`) on
    :math:`U = k(f + \mu\|\cdot\|^2/2)`, strongly convex with :math:`m = k\mu` and smooth with
    :math:`L = k(\beta + \mu)` (:math:`\beta` = ``problem.smoothness(data)``). Default ``n_steps`` certifies
    :math:`\mathrm{TV}(\text{law of each sample}, \nu) \le` ``tv_target`` from a uniform start on K, using
    :math:`\mathrm{osc}_K U \le k(G D + \mu R_K^2/2)` (:func:`~dpsco_lib.algorithms.samplers.proximal_sampler_steps`).
    ``mu = 0`` (the pure exponential mechanism) is allowed; the certificate then uses the Poincaré route.
    The step ``step_size`` (eta) defaults to :func:`~dpsco_lib.algorithms.samplers.default_step_size` with the
    boundary curvature at the constrained mode (efficiency only; any step leaves the law exact and the certificate
    valid).
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

    if step_size is None:
        eta = default_step_size(m, L=L, d=problem.d, boundary=boundary_curvature(grad_U, K, L=L))
    else:
        eta = check_positive(step_size, "step_size")
    steps = proximal_sampler_steps(m=m, L=L, d=problem.d, diameter=D, osc_bound=osc, tv_target=tv_target,
                                   step_size=eta)
    n_run = steps.n_steps if n_steps is None else check_int(n_steps, "n_steps", lo=1)
    x, sinfo = proximal_sampler(U, grad_U, K, m=m, L=L, rng=rng, n_chains=n_samples, n_steps=n_run, step_size=eta)
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


_GAUSSIAN_ACCOUNTANTS = ("gdp", "best", "rdp", "pld")


def _gaussian_accountant(accountant: Any) -> str:
    """Validate ``accountant`` for a mu-GDP / Gaussian guarantee: one of gdp, best, rdp, pld."""
    accountant = check_accountant(accountant)
    if accountant not in _GAUSSIAN_ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {_GAUSSIAN_ACCOUNTANTS} for this Gaussian-DP mechanism, "
                         f"got {accountant!r}")
    return accountant


def _n_records(data: Any) -> int:
    return int(np.shape(data[0] if isinstance(data, tuple) else data)[0])


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
    accountant: str = "gdp",
) -> Result:
    r"""Run the regularized exponential mechanism at a target (eps, delta) (Spec R1, R2; GLL22).

    Defaults (k, mu) come from :func:`regularized_exp_theory_params` at
    :math:`\delta_0 = (1 - \phi)\delta` (:math:`\phi` = ``sampler_delta_fraction``); the sampler runs to
    TV accuracy :math:`\tau = \phi\delta/(1 + e^\varepsilon)`, so the implemented mechanism is
    :math:`(\varepsilon, \delta_0 + (1+e^\varepsilon)\tau) = (\varepsilon, \delta)`-DP. If (k, mu) are given
    their certificate at :math:`\delta_0` must be at most epsilon, else ValueError.

    ``accountant`` converts the mechanism's mu-GDP contract to (eps, delta): ``"gdp"`` (default, exact, the
    calibration of earlier versions), ``"best"`` (the tightest valid accountant; equal to GDP here), ``"rdp"`` or
    ``"pld"`` (looser: more regularization). The ledger records one Gaussian mechanism with noise multiplier
    :math:`1/\mu_{GDP}` (mu-GDP is exactly that mechanism's privacy curve);
    ``result.certified_epsilon(info["delta_mechanism"])`` certifies eps for the exact sampler and
    ``info["delta_sampler"]`` is the sampler's additive term.
    """
    problem = _check_problem(problem)
    data = problem.check_data(data)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    rng = check_rng(rng)
    accountant = _gaussian_accountant(accountant)
    phi = check_in_range(
        sampler_delta_fraction, "sampler_delta_fraction", 0.0, 1.0, lo_inclusive=False, hi_inclusive=False
    )
    n = _n_records(data)
    K = problem.feasible_set
    G = problem.lipschitz
    R = _max_norm(K)
    delta0 = (1 - phi) * delta
    tau = phi * delta / (1 + math.exp(epsilon))
    if (k is None) != (mu is None):
        raise ValueError("give both k and mu, or neither (theory defaults)")
    if k is None:
        tp = regularized_exp_theory_params(n, problem.d, G, K.diameter(2.0), epsilon, delta0, radius=R,
                                           accountant=accountant)
        k_used, mu_used = tp.k, tp.mu
    else:
        k_used = check_positive(k, "k")
        mu_used = check_positive(mu, "mu")
    mu_gdp = regularized_exp_mu_gdp(n=n, G=G, k=k_used, mu=mu_used)
    ledger = PrivacyLedger()
    ledger.record_gaussian(1.0 / mu_gdp, label="regularized exponential mechanism (mu-GDP)")
    if ledger.epsilon(delta0, accountant) > epsilon:
        raise ValueError(
            f"k={k_used!r}, mu={mu_used!r} give mu_GDP={mu_gdp!r}, which is not ({epsilon!r}, {delta0!r})-DP"
        )
    x, sinfo = sample_regularized_exponential(
        problem, data, k=k_used, mu=mu_used, rng=rng, n_samples=1, tv_target=tau, return_info=True
    )
    return Result(
        x=x[0],
        params={"k": k_used, "mu": mu_used, "n_steps": sinfo["n_steps"], "step_size": sinfo["step_size"],
                "accountant": accountant},
        ledger=ledger,
        info={
            "method": "regularized exponential mechanism (proximal sampler, exact RGO)",
            "mu_gdp": mu_gdp,
            "delta_mechanism": delta0,
            "delta_sampler": (1 + math.exp(epsilon)) * tau,
            "tv_bound": tau,
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
    delta: float = 0.0,
    rng: np.random.Generator,
    n_steps: int | None = None,
    tv_target: float | None = None,
) -> Result:
    r"""The pure eps-DP exponential mechanism :math:`\nu \propto e^{-kf}` on K, k = eps n/(2GD)
    (:func:`pure_exp_theory_params`); utility :math:`d/k = 2GDd/(n\varepsilon)` (Spec R2 baseline).

    Sampled with the proximal sampler at mu = 0 (Poincaré certificate, TV accuracy ``tv_target``); the
    sampler's TV error adds :math:`(1+e^\varepsilon)\tau` to delta, reported in ``info["delta_sampler"]``.
    ``tv_target`` defaults to :math:`\delta/(1 + e^\varepsilon)` when ``delta > 0`` (so the sampled mechanism is
    (eps, delta)-DP) and to 1e-3 when ``delta == 0``. The ledger records one pure eps-DP event (there is no
    budget to calibrate: k is the closed form above).
    """
    problem = _check_problem(problem)
    data = problem.check_data(data)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    rng = check_rng(rng)
    if tv_target is None:
        tv_target = delta / (1 + math.exp(epsilon)) if delta > 0 else 1e-3
    K = problem.feasible_set
    k = pure_exp_theory_params(_n_records(data), problem.lipschitz, K.diameter(2.0), epsilon).k
    x, sinfo = sample_regularized_exponential(
        problem, data, k=k, mu=0.0, rng=rng, n_samples=1, n_steps=n_steps, tv_target=tv_target, return_info=True
    )
    ledger = PrivacyLedger()
    ledger.record_pure(epsilon, label="exponential mechanism (pure DP)")
    return Result(
        x=x[0],
        params={"k": k, "mu": 0.0, "n_steps": sinfo["n_steps"], "step_size": sinfo["step_size"]},
        ledger=ledger,
        info={
            "method": "pure exponential mechanism",
            "excess_bound": problem.d / k,
            "delta_sampler": (1 + math.exp(epsilon)) * sinfo["tv_bound"],
            "tv_bound": sinfo["tv_bound"],
            "certified_steps": sinfo["certified_steps"],
        },
    )


@dataclass(frozen=True)
class NoisyGDParams:
    """Theory parameters of full-batch noisy gradient descent (Spec R2 baseline).

    Attributes
    ----------
    T : int
        Number of steps.
    noise_multiplier : float
        sigma = s n/(2G): noise standard deviation over the replace-one l2 sensitivity 2G/n of the mean gradient.
    noise_std : float
        s, the standard deviation of each noise coordinate.
    step_size : float
        D / sqrt(T (G^2 + d s^2)).
    mu_gdp : float
        sqrt(T)/sigma: the run's GDP parameter.
    excess_bound : float
        D sqrt((G^2 + d s^2)/T).
    """

    T: int
    noise_multiplier: float
    noise_std: float
    step_size: float
    mu_gdp: float
    excess_bound: float


def _noisy_gd_params(T: int, sigma: float, n: int, d: int, G: float, D: float) -> NoisyGDParams:
    s = 2 * G * sigma / n
    return NoisyGDParams(T=T, noise_multiplier=sigma, noise_std=s, step_size=D / math.sqrt(T * (G**2 + d * s**2)),
                         mu_gdp=math.sqrt(T) / sigma, excess_bound=D * math.sqrt((G**2 + d * s**2) / T))


def noisy_gd_theory_params(
    n: int, d: int, G: float, D: float, epsilon: float, delta: float, *, n_steps: int | None = None,
    accountant: str = "gdp",
) -> NoisyGDParams:
    r"""Full-batch noisy projected gradient descent at a target (eps, delta) (Spec R2 baseline).

    Each step releases :math:`\nabla f(x_t) + \xi_t`, :math:`\xi_t \sim \mathcal N(0, s^2 I)`; the gradient
    mean has replace-one :math:`\ell_2` sensitivity :math:`2G/n`, so with noise multiplier
    :math:`\sigma = s n/(2G)` each step is :math:`(1/\sigma)`-GDP and T steps compose to
    :math:`\sqrt T/\sigma`-GDP (DRS22 Cor 3.3). With :math:`\mu^\star` = :func:`gdp_mu_star`:
    :math:`T = \lceil n^2\mu^{\star2}/(4d)\rceil` (or ``n_steps``), and :math:`\sigma` =
    :func:`~dpsco_lib.privacy.accounting.budget.gaussian_noise_multiplier` (eps, delta, count=T): the smallest
    multiplier whose T recorded Gaussian events certify the target by ``accountant`` (``"gdp"``, the default,
    is exact and gives :math:`\sigma = \sqrt T/\mu^\star`; ``"best"`` is the tightest valid accountant, here
    GDP). Step :math:`\eta = D/\sqrt{T(G^2 + d s^2)}`; the averaged iterate has excess risk
    :math:`\le D\sqrt{(G^2 + ds^2)/T} \approx 2\sqrt2\,GD\sqrt d/(n\mu^\star)` =
    :math:`O(GD\sqrt{d\log(1/\delta)}/(n\varepsilon))`.
    """
    n = check_int(n, "n", lo=1)
    d = check_int(d, "d", lo=1)
    G = check_positive(G, "G")
    D = check_positive(D, "D")
    accountant = _gaussian_accountant(accountant)
    if n_steps is None:
        m_star = gdp_mu_star(epsilon, delta=delta, accountant=accountant)
        T = max(1, math.ceil(n**2 * m_star**2 / (4 * d)))
    else:
        T = check_int(n_steps, "n_steps", lo=1)
    sigma = gaussian_noise_multiplier(epsilon, delta, count=T, accountant=accountant).value
    return _noisy_gd_params(T, sigma, n, d, G, D)


def run_noisy_gradient_descent(
    problem: Problem,
    data: Any,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    n_steps: int | None = None,
    accountant: str = "gdp",
) -> Result:
    """Noisy projected full-batch gradient descent with the averaged iterate (see :func:`noisy_gd_theory_params`).

    ``n_steps`` overrides T (the noise is recalibrated so that the run stays (eps, delta)-DP). ``accountant``:
    ``"gdp"`` (default, exact for Gaussian steps), ``"best"`` (the tightest valid accountant, GDP here),
    ``"rdp"``, ``"pld"``. The ledger records T Gaussian mechanisms with noise multiplier sigma, the events the
    calibration inverted; ``result.certified_epsilon(delta)`` certifies eps. Spec R2 baseline.
    """
    problem = _check_problem(problem)
    data = problem.check_data(data)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    rng = check_rng(rng)
    K = problem.feasible_set
    G, D, d = problem.lipschitz, K.diameter(2.0), problem.d
    tp = noisy_gd_theory_params(_n_records(data), d, G, D, epsilon, delta, n_steps=n_steps, accountant=accountant)
    T, sigma, s, step = tp.T, tp.noise_multiplier, tp.noise_std, tp.step_size
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
        params={"T": T, "noise_multiplier": sigma, "noise_std": s, "step_size": step, "accountant": accountant},
        ledger=ledger,
        info={"method": "noisy gradient descent (averaged iterate)", "mu_gdp": tp.mu_gdp,
              "excess_bound": tp.excess_bound},
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
