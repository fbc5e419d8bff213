r"""Sampling strongly log-concave laws on a convex body: the proximal sampler with an exact RGO (Spec R1).

Target: :math:`\pi(x) \propto e^{-U(x)}\,\mathbf 1_K(x)` on a convex body :math:`K \subset \mathbb R^d`, with
:math:`U` :math:`m`-strongly convex (:math:`m \ge 0`) and :math:`L`-smooth on :math:`\mathbb R^d`.

Algorithm (proximal sampler of Lee, Shen and Tian 2021; analysed by Chen, Chewi, Salim and Wibisono 2022,
"Improved analysis for a proximal algorithm for sampling"), a Gibbs sampler on the joint law
:math:`\pi(x, y) \propto \exp(-U(x) - \|x-y\|_2^2/(2\eta))\,\mathbf 1_K(x)`:

1. :math:`y \sim \mathcal N(x, \eta I_d)`;
2. :math:`x \sim \pi^{X|Y=y} \propto \exp(-g_y(x))\,\mathbf 1_K(x)`, :math:`g_y(x) = U(x) + \|x-y\|^2/(2\eta)`
   (the *restricted Gaussian oracle*, RGO).

The x-marginal of the joint law is exactly :math:`\pi`, so :math:`\pi` is the stationary law.

**Exact RGO by rejection.**  :math:`g_y` is :math:`c`-strongly convex with :math:`c = m + 1/\eta`. For any
:math:`\hat x \in K` (a few projected-gradient steps towards :math:`\arg\min_K g_y`; :math:`\hat x = P_K(z)`),
strong convexity gives, for every x,

.. math:: g_y(x) \ge h(x) := g_y(\hat x) + \langle\nabla g_y(\hat x), x-\hat x\rangle + \tfrac c2\|x-\hat x\|^2 .

Let :math:`H = \{x : \langle \nu, x - \hat x\rangle \le 0\}` with :math:`\nu = z - P_K(z)` the last projection
residual (a normal vector of K at :math:`\hat x`), so :math:`K \subseteq H` (:math:`H = \mathbb R^d` when
:math:`\nu = 0`). We propose from :math:`e^{-h}` restricted to H (a Gaussian whose component along
:math:`\nu` is a one-dimensional truncated normal, drawn exactly by the inverse CDF in log space), reject
proposals outside K, and accept with probability :math:`e^{-(g_y(x) - h(x))} \le 1`. An accepted draw has
density :math:`\propto e^{-g_y}` on K **exactly**, whatever the accuracy of :math:`\hat x` (which only
affects the acceptance rate). The half-space keeps the proposals close to the boundary when the
constrained mode lies on it. Default step: :func:`default_step_size`, :math:`\eta = 1/(d\max(L - m, b))` with b
the boundary curvature of :func:`boundary_curvature`; the acceptance rate is then of order :math:`e^{-1/2}`.

**Stated accuracy** (what the library certifies). Let :math:`\rho_N` be the law after :math:`N` steps.

* LSI route (:math:`m > 0`): :math:`\pi` is :math:`m`-strongly log-concave on a convex set, so it satisfies
  the log-Sobolev inequality with constant :math:`1/m` (Bakry-Émery), and (Chen et al. 2022, Thm 3)
  :math:`\mathrm{KL}(\rho_N\|\pi) \le \mathrm{KL}(\rho_0\|\pi)\,(1+\eta m)^{-2N}`.
* Poincaré route (any :math:`m \ge 0`): a log-concave law on a convex body of diameter :math:`D` satisfies
  a Poincaré inequality with constant :math:`D^2/\pi^2` (Payne-Weinberger; Bebendorf 2003), and (Chen et
  al. 2022, Thm 4) :math:`\chi^2(\rho_N\|\pi) \le \chi^2(\rho_0\|\pi)\,(1+\eta\pi^2/D^2)^{-2N}`.
* Start: :math:`\rho_0` uniform on :math:`K` (``feasible_set.random_point`` must be volume-uniform, as for
  :class:`~dpsco_lib.geometry.sets.LpBall`). Then :math:`\rho_0/\pi \le e^{\mathrm{osc}_K U}` pointwise, so
  :math:`\mathrm{KL}(\rho_0\|\pi) \le \mathrm{osc}_K U` and :math:`\chi^2(\rho_0\|\pi) \le e^{\mathrm{osc}_K U}`,
  with the oscillation bound ``osc_bound`` supplied by the caller.
* Pinsker / :math:`\mathrm{TV} \le \tfrac12\sqrt{\chi^2}`: :math:`N` is the smallest number of steps for which
  either route gives :math:`\mathrm{TV}(\rho_N, \pi) \le` ``tv_target`` (:func:`proximal_sampler_steps`).

Chains are independent and vectorized (arrays of shape ``(chains, d)``); the final states are i.i.d. draws
from :math:`\rho_N`. Validated in ``tests/lib/algorithms/test_regularized_exponential.py`` against the exactly
normalized density (scipy.integrate) in d = 1 and d = 2.

The library works in the idealized real-arithmetic model (float64, numpy's non-cryptographic generator).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special

from dpsco_lib._validation import check_in_range, check_int, check_positive, check_rng
from dpsco_lib.geometry.sets import FeasibleSet

__all__ = [
    "ProximalSamplerSteps",
    "boundary_curvature",
    "default_step_size",
    "proximal_sampler",
    "proximal_sampler_steps",
]

Potential = Callable[[np.ndarray], np.ndarray]
"""Maps an (m, d) array of points to the (m,) values (or (m, d) gradients) of U."""

_MAX_ETA_M = 1e3  # cap on eta * m when U is (nearly) quadratic (L = m): the RGO is then already pi


@dataclass(frozen=True)
class ProximalSamplerSteps:
    """Step size and certified number of steps of :func:`proximal_sampler`.

    Attributes
    ----------
    step_size : float
        Gaussian step eta of the proximal sampler.
    n_steps : int
        Number of steps certifying ``TV(rho_N, pi) <= tv_target``.
    route : str
        ``"lsi"`` or ``"poincare"``: which bound gave the smaller ``n_steps``.
    kl0_bound : float
        The bound ``osc_K U`` on ``KL(rho_0 || pi)`` (uniform start).
    tv_target : float
    """

    step_size: float
    n_steps: int
    route: str
    kl0_bound: float
    tv_target: float


def boundary_curvature(U_grad: Potential, feasible_set: FeasibleSet, *, L: float, n_iter: int = 300) -> float:
    r"""Effective curvature :math:`\|\nabla U(x^\star)\|_2 / R_K` added by the boundary at the constrained mode.

    :math:`x^\star \approx \arg\min_K U` by ``n_iter`` projected-gradient steps (step 1/L) from the centre;
    :math:`R_K` = ``center_radius(2)``. When the mode sits on the boundary, the law near it looks like
    :math:`e^{-F s}` in the inward depth s with F the outward force, and the sphere's curvature turns this into
    a quadratic of curvature about :math:`F/R_K` in the tangential directions; :func:`default_step_size` uses it so
    that RGO proposals stay inside K. It affects efficiency only, never the stationary law.
    """
    x = feasible_set.center()[None, :]
    for _ in range(n_iter):
        x = feasible_set.project(x - U_grad(x) / L)
    g = U_grad(x)[0]
    z = x[0] - g / L
    # only the outward (normal-cone) part of the gradient presses the mode onto the boundary
    nu = z - feasible_set.project(z[None, :])[0]
    force = float(np.linalg.norm(nu)) * L
    return force / feasible_set.center_radius(2.0)


def default_step_size(m: float, *, L: float, d: int, boundary: float = 0.0) -> float:
    r"""Default step :math:`\eta = 1/(d\,\max(L - m, b))` with b = ``boundary`` (:func:`boundary_curvature`),
    capped at :math:`10^3/m`; the RGO acceptance rate is then about :math:`e^{-1/2}` or better."""
    gap = max(L - m, boundary)
    if gap <= 0:
        return _MAX_ETA_M / m if m > 0 else 1.0 / max(L, 1e-300)
    eta = 1.0 / (d * gap)
    if m > 0:
        eta = min(eta, _MAX_ETA_M / m)
    return eta


def proximal_sampler_steps(
    *,
    m: float,
    L: float,
    d: int,
    diameter: float,
    osc_bound: float,
    tv_target: float = 1e-3,
    step_size: float | None = None,
) -> ProximalSamplerSteps:
    r"""Step size and number of steps with a certified total-variation accuracy (Chen et al. 2022).

    With :math:`\eta = 1/(d(L-m))` (default) and uniform start,

    * LSI: :math:`N_{LSI} = \lceil \log(\mathrm{osc}/(2\tau^2)) / (2\log(1+\eta m)) \rceil` (Pinsker),
    * Poincaré: :math:`N_{PI} = \lceil (\mathrm{osc} + \log(1/(4\tau^2))) / (2\log(1+\eta\pi^2/D^2)) \rceil`
      (:math:`\mathrm{TV} \le \sqrt{\chi^2}/2`),

    and :math:`N = \min(N_{LSI}, N_{PI})` (:math:`N_{LSI} = \infty` when :math:`m = 0`).

    Parameters
    ----------
    m, L : float
        Strong convexity (>= 0) and smoothness (>= m, > 0) of the potential U.
    d : int
        Dimension.
    diameter : float
        Euclidean diameter of K.
    osc_bound : float
        Upper bound on :math:`\max_K U - \min_K U` (> 0).
    tv_target : float
        Target total-variation distance in (0, 1).
    step_size : float, optional
        Override the step size eta.
    """
    m = check_positive(m, "m", allow_zero=True)
    L = check_positive(L, "L")
    if L < m:
        raise ValueError(f"L must be >= m (smoothness >= strong convexity), got L={L!r}, m={m!r}")
    d = check_int(d, "d", lo=1)
    diameter = check_positive(diameter, "diameter")
    osc = max(check_positive(osc_bound, "osc_bound", allow_zero=True), 1e-12)
    tau = check_in_range(tv_target, "tv_target", 0.0, 1.0, lo_inclusive=False, hi_inclusive=False)
    eta = default_step_size(m, L=L, d=d) if step_size is None else check_positive(step_size, "step_size")
    n_lsi = math.inf
    if m > 0:
        n_lsi = math.log(max(osc / (2 * tau**2), 1.0)) / (2 * math.log1p(eta * m))
    n_pi = (osc + math.log(max(1.0 / (4 * tau**2), 1.0))) / (2 * math.log1p(eta * math.pi**2 / diameter**2))
    route = "lsi" if n_lsi <= n_pi else "poincare"
    n = max(1, math.ceil(min(n_lsi, n_pi)))
    return ProximalSamplerSteps(step_size=eta, n_steps=int(n), route=route, kl0_bound=osc, tv_target=tau)


def _rgo(
    y: np.ndarray,
    x_start: np.ndarray,
    *,
    U: Potential,
    grad_U: Potential,
    feasible_set: FeasibleSet,
    eta: float,
    m: float,
    L: float,
    rng: np.random.Generator,
    n_inner: int,
    max_rounds: int,
) -> tuple[np.ndarray, int]:
    """Exact draw from exp(-U(x) - ||x - y||^2/(2 eta)) on K for every row of y (rejection; see module doc)."""
    c = m + 1.0 / eta
    step = 1.0 / (L + 1.0 / eta)
    xh = x_start.copy()
    nu = np.zeros_like(xh)
    for _ in range(n_inner):
        z = xh - step * (grad_U(xh) + (xh - y) / eta)
        xh = feasible_set.project(z)
        nu = z - xh
    grad = grad_U(xh) + (xh - y) / eta
    g_hat = U(xh) + np.einsum("ij,ij->i", xh - y, xh - y) / (2 * eta)
    # supporting half-space H = {<nu_hat, x - xh> <= 0} of K at xh (nu = last projection residual)
    nn = np.linalg.norm(nu, axis=1)
    on_face = nn > 0
    nu_hat = np.where(on_face[:, None], nu / np.where(on_face, nn, 1.0)[:, None], 0.0)
    mean = -grad / c  # of the Gaussian exp(-h) in v = x - xh
    m_s = np.einsum("ij,ij->i", mean, nu_hat)  # its component along nu_hat
    sd = 1.0 / math.sqrt(c)
    log_mass = special.log_ndtr(-m_s / sd)  # log P(s <= 0) of the normal component
    out = np.empty_like(xh)
    todo = np.arange(y.shape[0])
    rounds = 0
    while todo.size:
        rounds += 1
        if rounds > max_rounds:
            raise RuntimeError(
                f"restricted Gaussian oracle: {todo.size} chains not accepted after {max_rounds} rounds; decrease eta"
            )
        v = mean[todo] + sd * rng.standard_normal((todo.size, y.shape[1]))
        face = on_face[todo]
        if np.any(face):
            # exact truncated normal s <= 0 along nu_hat by inverse CDF in log space; tangential part unchanged
            f_idx = todo[face]
            u = rng.random(f_idx.size)
            z = special.ndtri_exp(np.log(u) + log_mass[f_idx])
            s_new = m_s[f_idx] + sd * np.minimum(z, -m_s[f_idx] / sd)
            nh = nu_hat[f_idx]
            s_old = np.einsum("ij,ij->i", v[face], nh)
            v[face] += (s_new - s_old)[:, None] * nh
        prop = xh[todo] + v
        inside = np.asarray(feasible_set.contains(prop, 0.0), dtype=bool)
        u = rng.random(todo.size)
        acc = np.zeros(todo.size, dtype=bool)
        if np.any(inside):
            idx = todo[inside]
            p = prop[inside]
            vi = v[inside]
            g = U(p) + np.einsum("ij,ij->i", p - y[idx], p - y[idx]) / (2 * eta)
            h = g_hat[idx] + np.einsum("ij,ij->i", grad[idx], vi) + 0.5 * c * np.einsum("ij,ij->i", vi, vi)
            # log acceptance -(g - h) <= 0 up to rounding; clip the rounding so the test stays a probability
            acc[inside] = np.log(u[inside]) <= np.minimum(0.0, -(g - h))
        out[todo[acc]] = prop[acc]
        todo = todo[~acc]
    return out, rounds


def proximal_sampler(
    U: Potential,
    grad_U: Potential,
    feasible_set: FeasibleSet,
    *,
    m: float,
    L: float,
    rng: np.random.Generator,
    n_chains: int,
    n_steps: int,
    step_size: float | None = None,
    x0: np.ndarray | None = None,
    n_inner: int = 2,
    max_rounds: int = 10_000,
) -> tuple[np.ndarray, dict]:
    r"""Run ``n_chains`` independent proximal-sampler chains for ``n_steps`` steps (see module docstring).

    Parameters
    ----------
    U, grad_U : callable
        Potential and its gradient on (chains, d) arrays; U must be m-strongly convex and L-smooth.
    feasible_set : FeasibleSet
        The convex body K (needs ``project``, ``contains``, ``random_point``).
    m, L : float
        Strong convexity (>= 0) and smoothness (> 0, >= m) of U.
    rng : numpy.random.Generator
    n_chains, n_steps : int
    step_size : float, optional
        Step eta; default :math:`1/(d(L-m))` (capped at :math:`10^3/m`).
    x0 : ndarray (n_chains, d), optional
        Start points in K; default i.i.d. ``feasible_set.random_point`` (uniform for balls), which is the
        start the accuracy certificate of :func:`proximal_sampler_steps` assumes.
    n_inner : int
        Projected-gradient steps locating the RGO envelope centre (efficiency only, not exactness).
    max_rounds : int
        Safety cap on rejection rounds per step (RuntimeError when exceeded).

    Returns
    -------
    x : ndarray (n_chains, d)
        Final states.
    info : dict
        ``step_size``, ``n_steps``, ``mean_rounds`` (rejection rounds per step, averaged).
    """
    rng = check_rng(rng)
    m = check_positive(m, "m", allow_zero=True)
    L = check_positive(L, "L")
    if L < m:
        raise ValueError(f"L must be >= m, got L={L!r}, m={m!r}")
    n_chains = check_int(n_chains, "n_chains", lo=1)
    n_steps = check_int(n_steps, "n_steps", lo=0)
    n_inner = check_int(n_inner, "n_inner", lo=1)
    max_rounds = check_int(max_rounds, "max_rounds", lo=1)
    d = feasible_set.d
    eta = default_step_size(m, L=L, d=d) if step_size is None else check_positive(step_size, "step_size")
    if x0 is None:
        x = np.asarray(feasible_set.random_point(rng, size=n_chains), dtype=np.float64).reshape(n_chains, d)
    else:
        x = np.array(x0, dtype=np.float64).reshape(n_chains, d)
        if not np.all(feasible_set.contains(x)):
            raise ValueError("x0 must lie in the feasible set")
    total_rounds = 0
    sq = math.sqrt(eta)
    for _ in range(n_steps):
        y = x + sq * rng.standard_normal(x.shape)
        x, rounds = _rgo(
            y,
            x,
            U=U,
            grad_U=grad_U,
            feasible_set=feasible_set,
            eta=eta,
            m=m,
            L=L,
            rng=rng,
            n_inner=n_inner,
            max_rounds=max_rounds,
        )
        total_rounds += rounds
    return x, {"step_size": eta, "n_steps": n_steps, "mean_rounds": total_rounds / max(n_steps, 1)}
