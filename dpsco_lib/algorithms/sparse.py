r"""DP optimization with sparse gradients (Spec Z1, Z2, Z3; the poster "DP optimization with sparse
gradients").

Setting: per-sample vectors (gradients) :math:`z` with :math:`\|z\|_0 \le s` and :math:`\|z\|_2 \le L`, hence
:math:`\|z\|_1 \le L\sqrt s`. Neighbouring datasets differ by replacing one record.

* Z1 :func:`sparse_mean_estimate`: :math:`\hat z = \arg\min\{\|z - (\bar z + \xi)\|_2 : \|z\|_1 \le L\sqrt s\}`
  with :math:`\xi \sim \mathrm{Lap}(2L\sqrt s/(n\varepsilon))^{d}` (:math:`\delta = 0`; the :math:`\ell_1`
  sensitivity of :math:`\bar z` is :math:`2L\sqrt s/n`) or :math:`\xi \sim N(0, \sigma^2 I)` with the exact
  Gaussian calibration for :math:`\ell_2` sensitivity :math:`2L/n` (:math:`\delta > 0`). Since :math:`\bar z`
  lies in the ball, :math:`\|\hat z - \bar z\|_2^2 \le 2\langle \xi, \hat z - \bar z\rangle \le 4L\sqrt s\,
  \|\xi\|_\infty`, and :math:`\|\xi\|_\infty = O(\text{scale}\cdot\log d)`: the error depends on :math:`d`
  only through :math:`\log d` (vs :math:`\sqrt d` for the unprojected release).
  :func:`sparse_mean_estimate_cs` is the compressed-sensing variant: privatize :math:`A\bar z` for a Gaussian
  :math:`m \times d` matrix, :math:`m \approx s\log(d/s)`, and recover by :math:`\ell_1` minimization (cvxpy).
* Z2 :func:`run_output_perturbation`: noise on the regularized ERM minimizer + :math:`\ell_1` projection.
* Z3 :func:`run_bias_reduced_dp_sgd`: multilevel (Blanchet-Glynn, BG15) debiased gradient estimator built from
  Z1 estimates, with a random per-step budget accounted by the fully adaptive filter of WRRW23.

The library works in the idealized real-arithmetic model with float64 noise and a non-cryptographic RNG.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import brentq, minimize
from scipy.special import gammaln

from dpsco_lib._optional import require
from dpsco_lib._validation import (
    check_array,
    check_delta,
    check_epsilon,
    check_int,
    check_positive,
    check_probability,
    check_rng,
)
from dpsco_lib.algorithms._result import Result
from dpsco_lib.geometry.sets import project_l1_ball
from dpsco_lib.privacy.accounting import AdvancedCompositionFilter, PrivacyLedger
from dpsco_lib.privacy.accounting.accountants import DEFAULT_ACCOUNTANT, AccountantLike, gaussian_accountant
from dpsco_lib.privacy.accounting.budget import gaussian_noise_multiplier
from dpsco_lib.problems.base import Problem
from dpsco_lib.problems.lecture import SparseLogisticSampler

__all__ = [
    "SparseLogisticSampler",
    "bias_reduced_gradient",
    "gaussian_matrix_sparse_norm_bound",
    "level_probabilities",
    "output_perturbation_sensitivity",
    "regularized_erm",
    "run_bias_reduced_dp_sgd",
    "run_output_perturbation",
    "sample_sparse_vectors",
    "sparse_mean_estimate",
    "sparse_mean_estimate_cs",
]


# ---------------------------------------------------------------------------------------------------------
# input checks
# ---------------------------------------------------------------------------------------------------------
def _sparse_rows(Z: Any, sparsity: int, norm_bound: float) -> tuple[np.ndarray, int, int]:
    """Validate rows (s-sparse, l2 <= L) and return (mean, n, d). Accepts a dense array or scipy.sparse."""
    if sp.issparse(Z):
        M = sp.csr_matrix(Z, dtype=np.float64)
        if M.shape[0] < 1 or M.shape[1] < 1:
            raise ValueError(f"Z must be a non-empty (n, d) matrix, got shape {M.shape}")
        if not np.all(np.isfinite(M.data)):
            raise ValueError("Z must be finite, got non-finite entries (NaN or inf)")
        M = M.copy()
        M.sum_duplicates()
        M.eliminate_zeros()
        nnz = np.diff(M.indptr)
        sq = np.asarray(M.multiply(M).sum(axis=1)).ravel()
        mean = np.asarray(M.mean(axis=0)).ravel()
    else:
        M = check_array(Z, "Z", ndim=2)
        nnz = np.count_nonzero(M, axis=1)
        sq = np.einsum("ij,ij->i", M, M)
        mean = M.mean(axis=0)
    n, d = M.shape
    if np.any(nnz > sparsity):
        i = int(np.flatnonzero(nnz > sparsity)[0])
        raise ValueError(f"Z must have rows with at most sparsity={sparsity} nonzeros; row {i} has {int(nnz[i])}")
    worst = float(np.sqrt(sq.max()))
    if worst > norm_bound * (1 + 1e-9):
        raise ValueError(
            f"Z violates the declared l_2 norm bound norm_bound={norm_bound!r}: largest row norm {worst!r}"
        )
    return mean, n, d


def _check_s_L(sparsity: int, norm_bound: float) -> tuple[int, float]:
    return check_int(sparsity, "sparsity", lo=1), check_positive(norm_bound, "norm_bound")


def sample_sparse_vectors(
    n: int, d: int, sparsity: int, norm_bound: float, rng: np.random.Generator, *, spread: float = 0.5
) -> sp.csr_matrix:
    r"""``n`` s-sparse vectors of :math:`\ell_2` norm at most ``L`` sharing a random support (a test family).

    :math:`z_i = L\, w_i/\max(1, \|w_i\|_2)` with :math:`w_i = v + \text{spread}\cdot g_i/\sqrt s` on the common
    support :math:`S` (:math:`|S| = s`, uniform), :math:`\|v\|_2 = 0.7`, :math:`g_i` standard normal.
    Returned as a CSR matrix (``d`` may be large).
    """
    n = check_int(n, "n", lo=1)
    d = check_int(d, "d", lo=1)
    s, L = _check_s_L(sparsity, norm_bound)
    if s > d:
        raise ValueError(f"sparsity must be <= d={d}, got {s}")
    rng = check_rng(rng)
    spread = check_positive(spread, "spread", allow_zero=True)
    support = np.sort(rng.choice(d, size=s, replace=False))
    v = rng.standard_normal(s)
    v *= 0.7 / np.linalg.norm(v)
    W = v + spread * rng.standard_normal((n, s)) / math.sqrt(s)
    W *= (L / np.maximum(1.0, np.linalg.norm(W, axis=1)))[:, None]
    indptr = np.arange(0, n * s + 1, s)
    indices = np.tile(support, n)
    return sp.csr_matrix((W.ravel(), indices, indptr), shape=(n, d))


# ---------------------------------------------------------------------------------------------------------
# Z1: sparse mean estimation
# ---------------------------------------------------------------------------------------------------------
def _z1_release(
    mean: np.ndarray, n: int, s: int, L: float, eps: float, dlt: float, rng: np.random.Generator,
    accountant: AccountantLike = DEFAULT_ACCOUNTANT,
) -> tuple[np.ndarray, float, float]:
    """Noise + l1 projection; returns (estimate, noise scale, Gaussian noise multiplier or nan). Laplace when
    dlt == 0 (scale = l1 sensitivity / eps, no budget to solve), else Gaussian with the multiplier of the budget
    path (:func:`~dpsco_lib.privacy.accounting.budget.gaussian_noise_multiplier`)."""
    d = mean.shape[0]
    if dlt == 0:
        scale, mult = 2.0 * L * math.sqrt(s) / (n * eps), math.nan
        noisy = mean + rng.laplace(0.0, scale, size=d)
    else:
        mult = gaussian_noise_multiplier(eps, dlt, accountant=accountant).value
        scale = (2.0 * L / n) * mult
        noisy = mean + rng.normal(0.0, scale, size=d)
    return project_l1_ball(noisy, L * math.sqrt(s)), scale, mult


def sparse_mean_estimate(
    Z: Any,
    *,
    sparsity: int,
    norm_bound: float,
    epsilon: float,
    delta: float = 0.0,
    rng: np.random.Generator,
    accountant: AccountantLike = DEFAULT_ACCOUNTANT,
) -> Result:
    r"""DP mean of s-sparse vectors with :math:`\|z\|_2 \le L`: noise + projection on the :math:`\ell_1` ball of
    radius :math:`L\sqrt s` (Spec Z1; the sparse-gradients poster, after BST14-type projection estimators).

    ``delta == 0``: :math:`\xi \sim \mathrm{Lap}(2L\sqrt s/(n\varepsilon))^d`, pure :math:`\varepsilon`-DP
    (:math:`\|z - z'\|_1 \le 2L\sqrt s`). ``delta > 0``: :math:`\xi \sim N(0, \sigma^2 I)` with
    :math:`\sigma = (2L/n)\,m`, m = :func:`~dpsco_lib.privacy.accounting.budget.gaussian_noise_multiplier`
    (:math:`\varepsilon`, :math:`\delta`, ``accountant``; ``"gdp"`` (the default ``"best"`` resolves to it) is exact and
    equals the analytic Gaussian calibration; ``"best"`` is the tightest valid accountant, GDP here). Projection is
    post-processing. Error: :math:`\|\hat z - \bar z\|_2 \le 2\sqrt{L\sqrt s\,\|\xi\|_\infty}` (deterministic, since
    :math:`\bar z` is in the ball), i.e. :math:`O(\sqrt{L^2 s\log d/(n\varepsilon)})` for Laplace.

    Parameters
    ----------
    Z : array (n, d) or scipy.sparse matrix
        Rows with at most ``sparsity`` nonzeros and :math:`\ell_2` norm at most ``norm_bound``.
    sparsity, norm_bound : s >= 1, L > 0.
    epsilon, delta : privacy target (delta = 0 for the Laplace version).
    rng : numpy.random.Generator.
    accountant : str
        Calibration of the Gaussian version (ignored by the Laplace version, which has no budget to solve).

    Returns
    -------
    Result
        ``x`` the estimate, ``info["empirical_mean"]``, ``params["noise_scale"]``; the ledger holds one pure
        event (Laplace) or one Gaussian event with noise multiplier :math:`\sigma/(2L/n)`.
    """
    s, L = _check_s_L(sparsity, norm_bound)
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    rng = check_rng(rng)
    accountant = gaussian_accountant(accountant).name
    mean, n, d = _sparse_rows(Z, s, L)
    est, scale, mult = _z1_release(mean, n, s, L, eps, dlt, rng, accountant)
    led = PrivacyLedger()
    if dlt == 0:
        led.record_pure(eps, label="sparse mean, Laplace + l1 projection (Z1)")
    else:
        led.record_gaussian(mult, label="sparse mean, Gaussian + l1 projection (Z1)")
    return Result(
        x=est,
        params={"noise_scale": scale, "radius": L * math.sqrt(s), "noise": "laplace" if dlt == 0 else "gaussian"},
        ledger=led,
        info={"empirical_mean": mean, "n": n, "d": d},
    )


def gaussian_matrix_sparse_norm_bound(m: int, d: int, k: int, fail_prob: float) -> float:
    r"""A value :math:`c` with :math:`P(\sup_{\|v\|_0 \le k, \|v\|_2 = 1}\|Av\|_2 > c) \le` ``fail_prob`` for
    :math:`A \in \mathbb R^{m\times d}` with i.i.d. :math:`N(0, 1/m)` entries (Spec Z1, CS variant).

    Derivation (union bound, explicit constants): for a fixed unit :math:`u`, :math:`m\|Au\|_2^2 \sim \chi^2_m` and
    the Chernoff bound gives :math:`P(\|Au\|^2 > 1 + t) \le \exp(-\tfrac m2(t - \log(1+t)))`. For each of the
    :math:`\binom dk` supports take a :math:`\theta`-net of the unit sphere of the :math:`k`-dimensional coordinate
    subspace, of size :math:`\le (1 + 2/\theta)^k`; then :math:`\sup_v\|A_Sv\| \le \max_{u\in\text{net}}
    \|A_Su\|/(1-\theta)`. Solving :math:`\log\binom dk + k\log(1+2/\theta) - \tfrac m2(t - \log(1+t)) =
    \log(\text{fail\_prob})` for :math:`t` (brentq; a concentration constant of the random matrix, not a privacy
    budget solve) gives :math:`c = \sqrt{1+t}/(1-\theta)`; the minimum over a
    fixed grid of :math:`\theta` is returned.
    """
    m = check_int(m, "m", lo=1)
    d = check_int(d, "d", lo=1)
    k = check_int(k, "k", lo=1, hi=d)
    beta = check_probability(fail_prob, "fail_prob", open_left=True, open_right=True)
    log_supports = float(gammaln(d + 1) - gammaln(k + 1) - gammaln(d - k + 1))
    best = math.inf
    for theta in (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5):
        need = log_supports + k * math.log1p(2.0 / theta) - math.log(beta)

        def h(t: float, need: float = need) -> float:
            return 0.5 * m * (t - math.log1p(t)) - need

        hi = 1.0
        while h(hi) < 0:
            hi *= 2.0
        t = brentq(h, 0.0, hi, xtol=1e-12)  # utility/concentration constant, not a privacy budget solver
        best = min(best, math.sqrt(1.0 + t * (1 + 1e-12)) / (1.0 - theta))
    return best


def _cs_rows(d: int, s: int) -> int:
    return int(max(2 * s + 1, math.ceil(4.0 * s * math.log(max(d / s, math.e)))))


def sparse_mean_estimate_cs(
    Z: Any,
    *,
    sparsity: int,
    norm_bound: float,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    n_measurements: int | None = None,
    matrix_failure: float | None = None,
    feasibility_level: float = 0.05,
    accountant: AccountantLike = DEFAULT_ACCOUNTANT,
) -> Result:
    r"""Compressed-sensing DP sparse mean (Spec Z1, the sparse-gradients poster's "noisy compressed sensing" variant).

    Draw :math:`A` with i.i.d. :math:`N(0, 1/m)` entries, :math:`m` = ``n_measurements`` (default
    :math:`\lceil 4s\log(d/s)\rceil`), independent of the data. The replace-one change of :math:`\bar z` is
    :math:`2s`-sparse with :math:`\ell_2` norm :math:`\le 2L/n`, so :math:`\|A(\bar z - \bar z')\|_2 \le c\cdot 2L/n`
    except on an event of probability :math:`\beta` = ``matrix_failure`` (default :math:`\delta/2`), with
    :math:`c` = :func:`gaussian_matrix_sparse_norm_bound` (``k = 2s``). Release
    :math:`b = A\bar z + N(0, \sigma^2 I_m)` with :math:`\sigma` the exact Gaussian calibration for sensitivity
    :math:`2cL/n` at :math:`(\varepsilon, \delta - \beta)` (:math:`2cL/n` times the noise multiplier of
    :func:`~dpsco_lib.privacy.accounting.budget.gaussian_noise_multiplier` with ``accountant``); the release is
    :math:`(\varepsilon, \delta)`-DP (the bad event of :math:`A` costs at most :math:`\beta` in :math:`\delta`). Recover
    :math:`\hat z = \arg\min\{\|z\|_1 : \|Az - b\|_2 \le \eta\}` (cvxpy, Clarabel) with
    :math:`\eta = \sigma\sqrt{m + 2\sqrt{m\log(1/\gamma)} + 2\log(1/\gamma)}` (Laurent-Massart: the true
    :math:`\bar z` is feasible w.p. :math:`\ge 1-\gamma`, :math:`\gamma` = ``feasibility_level``).

    The ledger records the calibrated Gaussian event; it certifies :math:`\varepsilon` at :math:`\delta - \beta`
    (``result.certified_epsilon(info["mechanism_delta"])``), and
    ``info["matrix_failure"]`` = :math:`\beta` is added to delta (``info["certified_delta"]``).
    """
    cp = require("cvxpy")

    s, L = _check_s_L(sparsity, norm_bound)
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, allow_zero=False)
    rng = check_rng(rng)
    accountant = gaussian_accountant(accountant).name
    gamma = check_probability(feasibility_level, "feasibility_level", open_left=True, open_right=True)
    mean, n, d = _sparse_rows(Z, s, L)
    m = _cs_rows(d, s) if n_measurements is None else check_int(n_measurements, "n_measurements", lo=1)
    beta = dlt / 2 if matrix_failure is None else check_probability(matrix_failure, "matrix_failure", open_left=True)
    if beta >= dlt:
        raise ValueError(f"matrix_failure must be < delta={dlt!r}, got {beta!r}")
    k = min(2 * s, d)
    c = gaussian_matrix_sparse_norm_bound(m, d, k, beta)
    sens = c * 2.0 * L / n
    mult = gaussian_noise_multiplier(eps, dlt - beta, accountant=accountant).value
    sigma = sens * mult
    A = rng.normal(0.0, 1.0 / math.sqrt(m), size=(m, d))
    b = A @ mean + rng.normal(0.0, sigma, size=m)
    lg = math.log(1.0 / gamma)
    eta = sigma * math.sqrt(m + 2.0 * math.sqrt(m * lg) + 2.0 * lg)
    z = cp.Variable(d)
    prob = cp.Problem(cp.Minimize(cp.norm1(z)), [cp.norm2(A @ z - b) <= eta])
    prob.solve(solver=cp.CLARABEL)
    if z.value is None:  # pragma: no cover - A has full row rank a.s., so the problem is feasible
        raise RuntimeError(f"l1 recovery failed: cvxpy status {prob.status}")
    led = PrivacyLedger()
    led.record_gaussian(mult, label="sparse mean, compressed sensing (Z1)")
    return Result(
        x=np.asarray(z.value, dtype=np.float64),
        params={"n_measurements": m, "sigma": sigma, "norm_factor": c, "eta": eta, "matrix_failure": beta},
        ledger=led,
        info={"empirical_mean": mean, "matrix_failure": beta, "certified_delta": dlt, "mechanism_delta": dlt - beta,
              "solver_status": prob.status},
    )


# ---------------------------------------------------------------------------------------------------------
# Z2: output perturbation with l1 projection
# ---------------------------------------------------------------------------------------------------------
def _runner_inputs(problem: Any, data: Any) -> Any:
    """Public-boundary checks of the Z2/Z3 runners: a convex ``Problem`` and a ``Dataset`` within its bounds."""
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a dpsco_lib.problems.Problem (a convex loss), got {type(problem).__name__}")
    _grad_info(problem)
    return problem.validate_data(data)


def _grad_info(problem: Any) -> tuple[float, float | None]:
    if not hasattr(problem, "loss") or not hasattr(problem, "mean_grad") or not hasattr(problem, "grad"):
        raise ValueError(f"problem must provide loss, grad and mean_grad, got {type(problem).__name__}")
    L = float(problem.L0)
    H = getattr(problem, "L1", None)
    return L, (None if H is None else float(H))


def regularized_erm(problem: Any, data: Any, lam: float, *, gtol: float = 1e-10) -> tuple[np.ndarray, float]:
    r""":math:`x_\lambda(S) = \arg\min_{x\in\mathbb R^d} \frac1n\sum_i f(x; z_i) + \lambda\|x\|_2^2` (unconstrained,
    L-BFGS; the objective is :math:`2\lambda`-strongly convex so :math:`\|x - x_\lambda\| \le \|\nabla\|/(2\lambda)`).
    Returns (x, gradient norm at x)."""
    lam = check_positive(lam, "lam")
    d = int(problem.d)

    def fg(x: np.ndarray) -> tuple[float, np.ndarray]:
        return (float(np.mean(problem.loss(x, data))) + lam * float(x @ x),
                np.asarray(problem.mean_grad(x, data)) + 2 * lam * x)

    res = minimize(fg, np.zeros(d), jac=True, method="L-BFGS-B",
                   options={"gtol": gtol, "ftol": 1e-15, "maxiter": 10_000, "maxcor": 30})
    x = np.asarray(res.x, dtype=np.float64)
    return x, float(np.linalg.norm(fg(x)[1]))


def output_perturbation_sensitivity(
    n: int, lam: float, lipschitz: float, *, sparsity: int | None = None, smoothness: float | None = None
) -> dict[str, float]:
    r"""Replace-one sensitivities of the regularized minimizer :math:`x_\lambda(S)` (Spec Z2).

    :math:`F_S(x) = \frac1n\sum_i f(x;z_i) + \lambda\|x\|_2^2` is :math:`2\lambda`-strongly convex. If :math:`S, S'`
    differ in record :math:`j`, then
    :math:`\nabla F_{S}(x_{S'}) = \frac1n(\nabla f(x_{S'}; z_j) - \nabla f(x_{S'}; z'_j))` has norm
    :math:`\le 2L/n`, and strong convexity gives
    :math:`2\lambda\|x_S - x_{S'}\|_2 \le \|\nabla F_S(x_{S'}) - \nabla F_S(x_S)\|_2 \le 2L/n`:

    .. math:: \Delta_2 = \frac{L}{\lambda n}.

    :math:`\ell_1` (for Laplace, needs :math:`H`-smooth losses with s-sparse gradients, unconstrained minimizer):
    from the optimality conditions :math:`2\lambda x_S = -\frac1n\sum_i\nabla f(x_S; z_i)`, subtracting those of
    :math:`S'`, :math:`2\lambda(x_S - x_{S'}) = -\frac1n\sum_{i\ne j}[\nabla f(x_S;z_i) - \nabla f(x_{S'};z_i)]
    - \frac1n[\nabla f(x_S;z_j) - \nabla f(x_{S'};z'_j)]`. Each bracket of the sum is :math:`2s`-sparse with
    :math:`\ell_2` norm :math:`\le H\Delta_2`, hence :math:`\ell_1` norm :math:`\le \sqrt{2s}H\Delta_2`; the last
    one is :math:`2s`-sparse with :math:`\ell_2` norm :math:`\le 2L`. So

    .. math:: \Delta_1 \le \frac{\sqrt{2s}}{2\lambda}\Big(H\frac{L}{\lambda n} + \frac{2L}{n}\Big)
              = \frac{\sqrt{2s}\,L\,(H + 2\lambda)}{2\lambda^2 n}.

    Also :math:`\|x_\lambda\|_1 \le \frac{1}{2\lambda}\max\|\nabla f\|_1 \le L\sqrt s/(2\lambda)`: the projection
    radius.
    """
    n = check_int(n, "n", lo=1)
    lam = check_positive(lam, "lam")
    L = check_positive(lipschitz, "lipschitz")
    out = {"l2": L / (lam * n)}
    if sparsity is not None:
        s = check_int(sparsity, "sparsity", lo=1)
        out["radius_l1"] = L * math.sqrt(s) / (2 * lam)
        if smoothness is not None:
            H = check_positive(smoothness, "smoothness", allow_zero=True)
            out["l1"] = math.sqrt(2 * s) * L * (H + 2 * lam) / (2 * lam**2 * n)
    return out


def run_output_perturbation(
    problem: Any,
    data: Any,
    *,
    epsilon: float,
    delta: float,
    lam: float,
    sparsity: int,
    rng: np.random.Generator,
    project: bool = True,
    accountant: AccountantLike = DEFAULT_ACCOUNTANT,
) -> Result:
    r"""Output perturbation with :math:`\ell_1` projection for regularized ERM with s-sparse gradients (Spec Z2).

    :math:`\tilde x = x_\lambda(S) + \xi`, :math:`\xi \sim \mathrm{Lap}(\Delta_1/\varepsilon)^d` (``delta == 0``) or
    :math:`N(0, \sigma^2 I)`, :math:`\sigma` = exact Gaussian calibration of :math:`\Delta_2 = L/(\lambda n)`
    (``delta > 0``); output :math:`\arg\min\{\|x - \tilde x\|_2 : \|x\|_1 \le L\sqrt s/(2\lambda)\}`
    (see :func:`output_perturbation_sensitivity` for the derivations). :math:`L` = ``problem.L0`` (l2 Lipschitz,
    requires ``problem.p == 2``), :math:`H` = ``problem.L1``. The gradient rows are checked to be s-sparse at the
    solution. The minimizer is computed to gradient norm ~1e-10 (``info["grad_norm"]``); the analysis assumes the
    exact minimizer.

    ``accountant`` calibrates the Gaussian version: :math:`\sigma = \Delta_2 m` with m =
    :func:`~dpsco_lib.privacy.accounting.budget.gaussian_noise_multiplier` (``"gdp"`` (the default ``"best"`` resolves
    to it) is exact and equals the analytic Gaussian calibration; ``"best"`` is the tightest valid accountant, GDP
    here); the ledger records that Gaussian event. The Laplace version (``delta == 0``) has no budget to solve.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    s = check_int(sparsity, "sparsity", lo=1)
    lam = check_positive(lam, "lam")
    rng = check_rng(rng)
    accountant = gaussian_accountant(accountant).name
    data = _runner_inputs(problem, data)
    L, H = _grad_info(problem)
    if float(getattr(problem, "p", 2.0)) != 2.0:
        raise ValueError(f"problem.p must be 2 (l2-Lipschitz losses), got {problem.p!r}")
    n = int(data.n)
    x_lam, gnorm = regularized_erm(problem, data, lam)
    nnz = np.count_nonzero(problem.grad(x_lam, data), axis=1)
    if np.any(nnz > s):
        raise ValueError(f"per-sample gradients must be sparsity={s}-sparse; found a row with {int(nnz.max())}")
    sens = output_perturbation_sensitivity(n, lam, L, sparsity=s, smoothness=H if dlt == 0 else None)
    led = PrivacyLedger()
    if dlt == 0:
        if "l1" not in sens:
            raise ValueError("delta=0 (Laplace) needs the smoothness constant problem.L1")
        scale = sens["l1"] / eps
        noisy = x_lam + rng.laplace(0.0, scale, size=x_lam.shape[0])
        led.record_pure(eps, label="output perturbation, Laplace (Z2)")
    else:
        mult = gaussian_noise_multiplier(eps, dlt, accountant=accountant).value
        scale = sens["l2"] * mult
        noisy = x_lam + rng.normal(0.0, scale, size=x_lam.shape[0])
        led.record_gaussian(mult, label="output perturbation, Gaussian (Z2)")
    out = project_l1_ball(noisy, sens["radius_l1"]) if project else noisy
    return Result(x=out, params={"lam": lam, "noise_scale": scale, "radius_l1": sens["radius_l1"], "project": project,
                                 "accountant": accountant},
                  ledger=led, info={"x_lambda": x_lam, "grad_norm": gnorm, "sensitivity": sens})


# ---------------------------------------------------------------------------------------------------------
# Z3: bias-reduced DP-SGD
# ---------------------------------------------------------------------------------------------------------
def level_probabilities(n: int) -> np.ndarray:
    r""":math:`p_k \propto 2^{-k}` for :math:`k = 0, \dots, K`, :math:`K = \lfloor\log_2 n\rfloor - 1` (so the
    largest batch :math:`2^{K+1} \le n`). Spec Z3."""
    n = check_int(n, "n", lo=2)
    K = int(math.floor(math.log2(n))) - 1
    w = 2.0 ** -np.arange(K + 1)
    return w / w.sum()


def _step_epsilon(b: int, n: int, eps0: float) -> float:
    # batch part: replacing a record of B changes G_B and one of G_O, G_E -> 2 eps0 w.r.t. B, amplified by
    # sampling b of n without replacement (replace-one, BBG18); index part: eps0 amplified with q = 1/n.
    # log(1 + q(e^e - 1)) evaluated as logaddexp(log q + e, log(1 - q)) (no overflow for large e).
    def amp(e: float, q: float) -> float:
        return e if q >= 1 else float(np.logaddexp(math.log(q) + e, math.log1p(-q)))

    return amp(2.0 * eps0, b / n) + amp(eps0, 1.0 / n)


def _z1_of_rows(G: np.ndarray, s: int, L: float, eps0: float, rng: np.random.Generator) -> np.ndarray:
    nrm = np.linalg.norm(G, axis=1)
    G = G * np.minimum(1.0, L / np.maximum(nrm, 1e-300))[:, None]
    return _z1_release(G.mean(axis=0), G.shape[0], s, L, eps0, 0.0, rng)[0]


def _z1_of_groups(G: np.ndarray, b: int, s: int, L: float, eps0: float, rng: np.random.Generator) -> np.ndarray:
    """The four Z1 Laplace releases of :func:`bias_reduced_gradient` (rows ``[:b]``, ``[:b/2]``, ``[b/2:b]``,
    ``[b:]``), noise drawn in that order and one batched projection: the same bits as four calls of
    :func:`_z1_of_rows` (tested), in about a third of the time."""
    nrm = np.linalg.norm(G, axis=1)
    G = G * np.minimum(1.0, L / np.maximum(nrm, 1e-300))[:, None]
    r = L * math.sqrt(s)
    noisy = np.empty((4, G.shape[1]))
    for j, (lo, hi) in enumerate(((0, b), (0, b // 2), (b // 2, b), (b, G.shape[0]))):
        noisy[j] = G[lo:hi].mean(axis=0) + rng.laplace(0.0, 2.0 * r / ((hi - lo) * eps0), size=G.shape[1])
    return project_l1_ball(noisy, r)


def bias_reduced_gradient(
    problem: Any,
    data: Any,
    x: np.ndarray,
    *,
    sparsity: int,
    eps0: float,
    rng: np.random.Generator,
    level: int | None = None,
) -> tuple[np.ndarray, float, int]:
    r"""One draw of the bias-reduced private gradient of Spec Z3 (multilevel estimator, BG15).

    Draw :math:`N = k` with :math:`p_k \propto 2^{-k}` (:func:`level_probabilities`), a batch :math:`B` of
    :math:`2^{k+1}` distinct indices split into halves :math:`O, E`, and an index :math:`i`; each average of
    per-sample gradients (clipped to norm :math:`L`) is privatized by the Z1 Laplace estimator at
    :math:`\varepsilon_0` w.r.t. its own batch, and

    .. math:: G = \frac{1}{p_N}\Big[G_B - \tfrac12(G_O + G_E)\Big] + G_i .

    Telescoping gives :math:`\mathbb E G = \mathbb E\,\hat G_{2^{K+1}}`, the expectation of the Z1 estimator on the
    largest batch, whose projection bias is the smallest. Returns ``(G, eps_step, N)`` with
    ``eps_step`` the step's privacy cost w.r.t. the whole dataset (replace-one):
    :math:`\log(1 + \frac bn(e^{2\varepsilon_0} - 1)) + \log(1 + \frac1n(e^{\varepsilon_0} - 1))` (BBG18
    amplification for sampling without replacement; a record of :math:`B` affects :math:`G_B` and one half).
    ``level`` forces :math:`N` (for tests).
    """
    s = check_int(sparsity, "sparsity", lo=1)
    eps0 = check_epsilon(eps0, "eps0")
    rng = check_rng(rng)
    L, _ = _grad_info(problem)
    n = int(data.n)
    p = level_probabilities(n)
    k = int(rng.choice(p.size, p=p)) if level is None else check_int(level, "level", lo=0, hi=p.size - 1)
    b = 2 ** (k + 1)
    idx = rng.choice(n, size=b, replace=False)
    i = int(rng.integers(n))
    G_all = np.asarray(problem.grad(x, data[np.concatenate([idx, [i]])]), dtype=np.float64)
    if np.any(np.count_nonzero(G_all, axis=1) > s):
        raise ValueError(f"per-sample gradients must be sparsity={s}-sparse")
    GB, GO, GE, Gi = _z1_of_groups(G_all, b, s, L, eps0, rng)
    G = (GB - 0.5 * (GO + GE)) / p[k] + Gi
    return G, _step_epsilon(b, n, eps0), k


def bias_reduced_second_moment(n: int, d: int, *, sparsity: int, norm_bound: float, eps0: float,
                               draws: int = 2000, seed: int = 0) -> float:
    r"""Monte-Carlo value of :math:`\mathbb E\|G\|_2^2` for the bias-reduced gradient of Spec Z3 on the public
    proxy data set whose records all equal :math:`L e_1` (an ``s``-sparse record of norm ``L``).

    With constant records every batch mean is :math:`L e_1`, so each level's term
    :math:`D_k = \hat G_B - (\hat G_O + \hat G_E)/2` is pure release noise, which is what dominates
    :math:`\mathbb E\|G\|^2` on any data (records enter only through means of at most ``L`` in norm). Exact
    decomposition over the level :math:`N`:
    :math:`\mathbb E\|G\|^2 = \sum_k p_k\,\mathbb E\|D_k/p_k + \hat G_i\|^2`, each term estimated with
    ``draws`` bounded draws (:math:`\|D_k/p_k + \hat G_i\|_2 \le 3L\sqrt s/p_k`), from a fixed ``seed``: a
    deterministic function of public quantities, it costs no privacy (so it is computed once per argument tuple
    and cached)."""
    n = check_int(n, "n", lo=2)
    d = check_int(d, "d", lo=1)
    s = check_int(sparsity, "sparsity", lo=1)
    L = check_positive(norm_bound, "norm_bound")
    eps0 = check_epsilon(eps0, "eps0")
    M = check_int(draws, "draws", lo=2)
    return _second_moment(n, d, s, L, eps0, M, check_int(seed, "seed", lo=0))


@lru_cache(maxsize=64)
def _second_moment(n: int, d: int, s: int, L: float, eps0: float, M: int, seed: int) -> float:
    """:func:`bias_reduced_second_moment` on validated arguments (cached: a deterministic function of them)."""
    rng = np.random.default_rng(seed)
    v = np.zeros(d)
    v[0] = L
    r = L * math.sqrt(s)

    def release(b: int) -> np.ndarray:
        return project_l1_ball(v + rng.laplace(0.0, 2.0 * r / (b * eps0), size=(M, d)), r)

    p = level_probabilities(n)
    total = 0.0
    for k in range(p.size):
        b = 2 ** (k + 1)
        G = (release(b) - 0.5 * (release(b // 2) + release(b // 2))) / p[k] + release(1)
        total += p[k] * float(np.mean(np.einsum("ij,ij->i", G, G)))
    return total


def _admitted_levels(n: int, eps0: float, filt: Any, rng: np.random.Generator, max_steps: int) -> list[int]:
    """Levels of the steps the filter admits: draw N_t, offer its cost, stop at the first refusal (or at
    ``max_steps``). Data-independent: the costs depend only on the levels, n and eps0."""
    p = level_probabilities(n)
    levels: list[int] = []
    while len(levels) < max_steps:
        k = int(rng.choice(p.size, p=p))
        if not filt.try_spend(_step_epsilon(2 ** (k + 1), n, eps0)):
            break
        levels.append(k)
    return levels


def run_bias_reduced_dp_sgd(
    problem: Any,
    data: Any,
    *,
    epsilon: float,
    delta: float,
    sparsity: int,
    step_size: float | str,
    eps0: float,
    rng: np.random.Generator,
    max_steps: int = 100_000,
    x0: np.ndarray | None = None,
) -> Result:
    r"""Bias-reduced DP-SGD with a random privacy budget per step and a random stopping time (Spec Z3).

    Iterate :math:`x_{t+1} = \Pi_{\mathcal X}(x_t - \eta G_t)` with :math:`G_t` from
    :func:`bias_reduced_gradient`. The cost :math:`\varepsilon_t` of step :math:`t` depends only on the random
    level :math:`N_t`; each cost is offered to the WRRW23 advanced-composition filter
    (:class:`~dpsco_lib.privacy.accounting.AdvancedCompositionFilter`, target :math:`(\varepsilon, \delta)`,
    all of :math:`\delta` on the concentration term) and the run stops at the first step the filter refuses (or
    at ``max_steps``). The levels, and so the stopping time :math:`T`, do not depend on the data: they are drawn
    first, then the :math:`T` admitted steps run. Fully adaptive composition makes the whole run
    :math:`(\varepsilon, \delta)`-DP; the ledger records the realized per-step pure budgets, grouped by value
    (they are fixed before the data is touched, so their order does not matter). Output: the average iterate.

    ``step_size="auto"`` takes the step of projected SGD with a bounded second moment,
    :math:`\eta = R/(\hat\sigma\sqrt T)` with :math:`R = \max_{x\in\mathcal X}\|x - x_0\|_2` and
    :math:`\hat\sigma^2` = :func:`bias_reduced_second_moment`, for which
    :math:`\mathbb E F(\bar x) - F^\star \le R\hat\sigma/\sqrt T` plus the bias of the largest batch. It uses
    only public quantities (``n``, ``d``, ``s``, ``L``, ``eps0`` and the data-independent :math:`T`), so it costs no
    privacy. Otherwise ``step_size`` is a positive number.

    There is no budget to calibrate and no accountant to choose: ``eps0`` is the user's per-Z1-release budget, each
    step's cost is the amplification formula of :func:`bias_reduced_gradient`, and the stopping rule is the
    filter (the one valid rule for fully adaptive budgets here); ``result.certified_epsilon(delta)`` re-certifies
    the realized sequence with the tightest valid accountant.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, allow_zero=False)
    s = check_int(sparsity, "sparsity", lo=1)
    auto = isinstance(step_size, str)
    if auto and step_size != "auto":
        raise ValueError(f"step_size must be a positive number or 'auto', got {step_size!r}")
    eps0 = check_epsilon(eps0, "eps0")
    rng = check_rng(rng)
    T = check_int(max_steps, "max_steps", lo=1)
    data = _runner_inputs(problem, data)
    fset = problem.feasible_set
    d, n = int(problem.d), int(data.n)
    x = fset.project(np.zeros(d) if x0 is None else check_array(x0, "x0", shape=(d,)))
    filt = AdvancedCompositionFilter(eps, dlt)
    levels = _admitted_levels(n, eps0, filt, rng, T)
    steps = len(levels)
    if auto:
        L, _ = _grad_info(problem)
        R = float(fset.center_radius(2.0)) + float(np.linalg.norm(x - fset.center()))
        sig2 = bias_reduced_second_moment(n, d, sparsity=s, norm_bound=L, eps0=eps0)
        eta = R / math.sqrt(sig2 * max(steps, 1))
    else:
        eta = check_positive(step_size, "step_size")
    led = PrivacyLedger()
    x_sum = np.zeros(d)
    budgets: list[float] = []
    for k in levels:
        G, e_t, _ = bias_reduced_gradient(problem, data, x, sparsity=s, eps0=eps0, rng=rng, level=k)
        x = fset.project(x - eta * G)
        x_sum += x
        budgets.append(e_t)
    # the budgets were fixed before the data was touched, so their composition does not depend on the order:
    # one self-composed record per distinct budget (at most log2(n) of them) keeps certification fast
    for e_t, c in zip(*np.unique(np.array(budgets), return_counts=True), strict=True):
        led.record_pure(float(e_t), count=int(c), label="bias-reduced DP-SGD step (Z3)")
    out = x_sum / steps if steps else x
    return Result(
        x=out,
        params={"step_size": eta, "eps0": eps0, "epsilon": eps, "delta": dlt, "max_steps": T,
                "step_rule": "auto" if auto else "given"},
        ledger=led,
        info={"steps": steps, "levels": np.array(levels, dtype=np.int64), "step_epsilons": np.array(budgets),
              "filter_spent": filt.spent, "stopped_by_filter": steps < T},
    )
