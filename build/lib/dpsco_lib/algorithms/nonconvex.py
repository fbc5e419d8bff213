r"""Private methods for nonconvex stochastic optimization: stationarity, not excess risk (Spec N1; BGM21).

Two methods, each with a ``*_theory_params`` function that derives its parameters from an explicit bound and
a ledger that certifies the target ``(epsilon, delta)``:

1. :func:`run_private_vr_fw_nonconvex` — private variance-reduced Frank-Wolfe for *smooth* nonconvex losses
   over a polytope ``X = conv(V)`` in the l1 setup; stationarity = the Frank-Wolfe gap
   ``gap(x) = max_{v in X} <grad F(x), x - v>`` of the population objective at a uniformly random iterate.
   Rate (Spec N1, p = 1): ``log^{2/3} d / (n eps)^{1/3}`` up to ``sqrt(log(1/delta))``, linear time.
2. :func:`run_private_proximal_weakly_convex` — proximal-point method for *weakly convex* (possibly nonsmooth)
   losses in the Euclidean setup: a sequence of subproblems ``min_y F(y) + (beta/2) ||y - x_t||^2`` on disjoint
   batches, each solved by a private noisy subgradient method; stationarity = the Moreau envelope gradient
   ``||grad F_{1/beta}(x)||_2`` at a uniformly random iterate. Rate: ``n^{-1/4} + (sqrt(d)/(n eps))^{1/3}``.

Both reuse the repository's machinery rather than duplicating it: the report-noisy-min vertex oracle
(:func:`~dpsco_lib.geometry.sets.vertex_oracle`), the variance-reduction sensitivity lemma
(:func:`~dpsco_lib.algorithms.vr_sensitivity.vr_sensitivities`), the privacy budget path
(:mod:`~dpsco_lib.privacy.accounting.budget`: split, calibrate with the accountant that certifies, record) and
the :class:`PrivacyLedger`.

Accountant (``accountant=``). The VR Frank-Wolfe runs ``T`` pure ``eps0``-DP selections; ``eps0`` is the
largest per-step budget that ``accountant`` certifies for them, and never below basic composition's ``eps/T``
(valid for any pure steps; it wins for few steps). Default ``"best"``: the tightest valid accountant (KOV15
for these homogeneous pure steps, the optimal composition); ``"advanced"`` (DRV10, a smaller ``eps0``) is the
default of earlier versions; ``"paper"`` the papers' closed form. The proximal method records
Gaussian events; default ``"gdp"`` (exact, the analytic Gaussian calibration of earlier versions), which is
also what ``"best"`` selects.

Why the momentum (Poly-SFW) estimator and not the AFKT21 tree for the nonconvex FW. Nonconvex Frank-Wolfe
needs a *constant* step ``eta`` (the decaying ``2/(t+2)`` of the convex analysis does not give stationarity).
With a constant step the tree's right child at depth 1 corrects its parent over a distance up to
``eta D T/2`` with ``b/2`` records, so its statistical error is ``~ L1 eta D T / sqrt(b)``; with the
privacy-optimal ``T ~ (n eps)^{2/3}``, ``eta ~ T^{-1/2}`` this is ``~ sqrt(T/n)``, i.e. ``n^{-1/6}``. The
recursive momentum estimator ``nabla_t = (1 - eta)(nabla_{t-1} + Delta_t) + eta g_t`` of Spec F1 forgets at rate
``eta`` and has steady-state error ``~ sqrt(eta/B)`` with mini-batches of ``B = n/(2T)`` records, which gives
the N1 rate (derivation in :func:`vr_fw_nonconvex_bound`). Its sensitivity lemma is Poly-SFW's, with the
mini-batch ``B`` in the denominators (:func:`~dpsco_lib.algorithms.vr_sensitivity.vr_sensitivities`).

Inner solver of the proximal method. Spec N1 names "phased noisy SMD" (the linear-time solver of AFKT21).
We use noisy projected subgradient descent on the whole (disjoint) batch with Gaussian noise and exact
Gaussian-DP composition, which attains the optimal strongly convex *distance* bound
``E||x - x_hat||^2 <~ (L0^2/mu^2)(1/N + d ln(1/delta)/(N eps)^2)`` that the proximal analysis needs, for
any nonsmooth loss (phased SGD's sensitivity argument needs smoothness); its price is superlinear oracle
complexity, which the theorem's table also lists for this setting ("Linear time? No").

The library works in the idealized real-arithmetic model with float64 noise from a non-cryptographic RNG.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from dpsco_lib._validation import (
    check_bool,
    check_delta,
    check_epsilon,
    check_in_range,
    check_int,
    check_positive,
    check_rng,
)
from dpsco_lib.algorithms._result import Result
from dpsco_lib.algorithms.vr_sensitivity import vr_sensitivities
from dpsco_lib.geometry.sets import LpBall, Simplex, project_l1_ball, project_simplex, vertex_oracle
from dpsco_lib.privacy.accounting import PrivacyLedger
from dpsco_lib.privacy.accounting.budget import (
    calibrate,
    check_accountant,
    gaussian_noise_multiplier,
    per_step_epsilon,
)
from dpsco_lib.privacy.accounting.events import DpEvent, GaussianEvent, ParallelEvent, SelfComposedEvent
from dpsco_lib.problems.base import Problem
from dpsco_lib.problems.dataset import Dataset

__all__ = [
    "ProximalWeaklyConvexParams",
    "VrFwNonconvexParams",
    "fw_iterates",
    "proximal_weakly_convex_bound",
    "proximal_weakly_convex_theory_params",
    "run_private_proximal_weakly_convex",
    "run_private_vr_fw_nonconvex",
    "vr_fw_nonconvex_bound",
    "vr_fw_nonconvex_theory_params",
]


# =========================================================================================================
# 1. private variance-reduced Frank-Wolfe, smooth nonconvex, l1 setup
# =========================================================================================================
def _batches(n: int, T: int) -> tuple[int, int]:
    """(m, B): the first ``m = n - floor(n/2)`` records for ``nabla_0``, then ``T - 1`` batches of ``B``."""
    half = n // 2
    m = n - half
    B = half // (T - 1) if T > 1 else 0
    return m, B


@lru_cache(maxsize=1024)
def _selection_epsilon(epsilon: float, delta: float, T: int, accountant: str) -> float:
    """Per-selection budget ``eps0`` of the T pure selections (module docstring, "Accountant").

    ``per_step_epsilon`` under ``accountant``, floored at basic composition's ``epsilon/T`` (except for the
    papers' closed form, taken as is); ``delta = 0`` is pure DP, where every accountant is basic composition.
    """
    basic = epsilon / T
    if delta == 0:
        return basic
    e0 = per_step_epsilon(epsilon, delta, T, accountant=accountant).value
    return e0 if accountant == "paper" else max(basic, e0)


def _harmonic(k: int) -> float:
    return float(np.sum(1.0 / np.arange(1, k + 1)))


def vr_fw_nonconvex_bound(
    n: int, *, num_vertices: int, d: int, eps0: float, L0: float, L1: float, D: float, T: int, eta: Any
) -> dict[str, np.ndarray]:
    r"""The stationarity bound of the nonconvex private VR Frank-Wolfe, term by term (Spec N1; derived here).

    Descent lemma for ``L1``-smooth ``F`` (l1 / l_inf) and ``x_{t+1} = x_t + eta (v_t - x_t)``:
    ``F(x_{t+1}) <= F(x_t) + eta <grad F(x_t), v_t - x_t> + L1 D^2 eta^2/2``. With ``e_t = nabla_t - grad F(x_t)``
    and ``sel_t = <nabla_t, v_t> - min_v <nabla_t, v>`` (report-noisy-min error),
    ``<grad F(x_t), v_t - x_t> <= -gap(x_t) + 2 D ||e_t||_inf + sel_t``. Summing over ``t < T`` and using
    ``F(x_0) - inf F <= L0 D``, the random iterate ``x_tau`` (``tau`` uniform on ``{0, ..., T-1}``) satisfies

    .. math:: \mathbb E\,\mathrm{gap}(x_\tau) \le \frac{L_0 D}{\eta T} + \frac{L_1 D^2 \eta}{2}
              + \frac{2D}{T}\sum_t \mathbb E\|e_t\|_\infty + \frac{1}{T}\sum_t \mathbb E\,\mathrm{sel}_t .

    * statistical term: ``e_t = (1-eta)^t e_0 + `` a martingale whose increments have coordinates in a range
      of width ``2 eta (L0 + L1 D)`` averaged over ``B`` records; Hoeffding/Azuma give the variance proxy
      ``(1-eta)^{2t} L0^2/m + eta (L0 + L1 D)^2 / B`` (``sum_s (1-eta)^{2s} eta^2 <= eta``), and the maximal
      inequality over ``2d`` signed coordinates ``E||e_t||_inf <= sqrt(2 ln(2d) proxy)``;
    * privacy term: ``sel_t <= lambda_t (max_v Z_v - min_v Z_v)``, ``E <= 2 lambda_t H_{|V|}`` (``H`` the
      harmonic number: the maximum of ``|V|`` standard exponentials), ``lambda_t = 2 s_t/eps0``.

    Privacy-dominated regime: ``s_t ~ eta D L / B = 2 eta T D L / n`` and ``eps0 ~ eps/sqrt(T ln(1/delta))``
    make the privacy term ``~ eta T^{3/2} ln|V| sqrt(ln(1/delta))/(n eps)``; with ``eta = T^{-1/2}`` the bound
    is ``T^{-1/2} + T ln|V|/(n eps)``, minimized at ``T ~ (n eps / ln|V|)^{2/3}``: ``(ln|V|/(n eps))^{1/3}``
    (the statistical term is then ``(n eps)^{1/6}/sqrt(n) = eps^{1/6} n^{-1/3}``). This is Spec N1's
    ``log^{2/3} d/(n eps)^{1/3}`` up to the logarithmic factors of the maximal inequalities.

    Parameters
    ----------
    n, num_vertices, d : int
    eps0 : float
        Per-selection budget (``inf`` for the non-private limit).
    L0, L1, D : float
    T : int
        Number of Frank-Wolfe steps (selections), ``1 <= T <= floor(n/2) + 1``.
    eta : float or array
        Constant step size(s) in (0, 1).

    Returns
    -------
    dict of arrays (shape of ``eta``): ``optimization``, ``curvature``, ``statistical``, ``privacy``, ``total``.
    """
    eta = np.asarray(eta, dtype=np.float64)
    m, B = _batches(n, T)
    Bf = max(B, 1)
    r = 1.0 - eta
    log2d = math.log(2 * d)
    opt = L0 * D / (eta * T)
    curv = 0.5 * L1 * D * D * eta
    geo = (1.0 - r**T) / eta / T  # (1/T) sum_{t<T} (1 - eta)^t
    stat = 2.0 * D * math.sqrt(2.0 * log2d) * (L0 / math.sqrt(m) * geo
                                               + (np.sqrt(eta / Bf) * (L0 + L1 * D) if T > 1 else 0.0))
    if math.isinf(eps0):
        priv = np.zeros_like(eta)
    else:
        A = L0 * D / m
        C = eta * D * (r * L1 * D + L0) / Bf
        # sum_{t=1}^{T-1} max(A r^t, C): the first k terms are A r^t (A r^t > C iff t < log(C/A)/log r)
        with np.errstate(divide="ignore", invalid="ignore"):
            u = np.where(A > C, np.log(C / A) / np.log(r), 0.0)
        k = np.clip(np.ceil(u) - 1.0, 0.0, T - 1.0)
        s_sum = A + A * r * (1.0 - r**k) / eta + C * (T - 1.0 - k)
        priv = 2.0 * (2.0 / eps0) * _harmonic(num_vertices) * s_sum / T
    total = opt + curv + stat + priv
    return {"optimization": opt, "curvature": curv, "statistical": stat, "privacy": priv, "total": total}


@dataclass(frozen=True)
class VrFwNonconvexParams:
    """Parameters of the nonconvex private VR Frank-Wolfe and its bound (Spec N1).

    Attributes
    ----------
    T : int
        Frank-Wolfe steps (selections).
    step_size : float
        The constant step ``eta``.
    init_batch, batch_size : int
        ``m`` records for ``nabla_0`` and ``B`` records per update batch.
    eps0 : float
        Per-selection budget (see the module docstring, "Accountant").
    accountant : str
        The accountant that calibrated ``eps0``.
    records_used : int
        ``m + (T - 1) B``.
    sensitivity_first, sensitivity_floor : float
        ``s_0 = L0 D/m`` and the floor ``eta D ((1 - eta) L1 D + L0)/B`` of the score sensitivities.
    bound : dict
        Terms of :func:`vr_fw_nonconvex_bound` at these parameters.
    rate_bound : float
        Its total.
    rate : float
        The constant-free rate ``(ln|V| sqrt(ln(1/delta))/(n eps))^{1/3} + n^{-1/3}``.
    """

    T: int
    step_size: float
    init_batch: int
    batch_size: int
    eps0: float
    accountant: str
    records_used: int
    sensitivity_first: float
    sensitivity_floor: float
    bound: dict[str, float]
    rate_bound: float
    rate: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def vr_fw_nonconvex_theory_params(
    n: int,
    *,
    num_vertices: int,
    d: int,
    epsilon: float,
    delta: float,
    L0: float,
    L1: float,
    D: float,
    n_steps: int | None = None,
    step_size: float | None = None,
    steps_constant: float = 1.0,
    step_constant: float = 1.0,
    accountant: str = "best",
) -> VrFwNonconvexParams:
    r"""Parameters of the nonconvex private VR Frank-Wolfe and its bound (Spec N1).

    Up to constants, :func:`vr_fw_nonconvex_bound` reads
    ``1/(eta T) + eta + sqrt(eta T/n) + eta T^{3/2} ln|V| sqrt(ln(1/delta))/(n eps)``
    (optimization + curvature, statistical, privacy). The theorem's choice:

    * ``T = clip(c_T (n eps/(ln|V| sqrt(ln(1/delta))))^{2/3}, 2, floor(n/2) + 1)``: the largest number of
      selections for which the privacy term does not exceed the curvature term at ``eta = T^{-1/2}``;
    * ``eta = c_eta min(T^{-1/2}, n^{1/3}/T)`` (capped at 0.9): ``T^{-1/2}`` balances ``1/(eta T)`` with the
      curvature term while ``T <= n^{2/3}`` (the privacy regime), ``n^{1/3}/T`` balances it with the
      statistical term beyond (the non-private regime ``T = n/2``, ``eta ~ n^{-2/3}``, bound ``~ n^{-1/3}``).

    So the bound is ``O((ln|V| sqrt(ln(1/delta))/(n eps))^{1/3} + n^{-1/3})`` up to the logarithms of the
    maximal inequalities: Spec N1's ``log^{2/3} d/(n eps)^{1/3}`` for p = 1. ``delta = 0`` replaces
    ``ln(1/delta)`` by 1. The per-selection budget ``eps0`` is the largest that ``accountant`` certifies for the
    ``T`` selections, never below basic composition's ``eps/T`` (module docstring, "Accountant"; default
    ``"best"``, the tightest valid accountant; ``"advanced"`` DRV10, the default of earlier versions).

    Data layout: ``m = n - floor(n/2)`` records for the initial gradient, ``T - 1`` disjoint batches of
    ``B = floor(floor(n/2)/(T - 1))`` records for the updates (single pass).
    """
    n = check_int(n, "n", lo=4)
    nv = check_int(num_vertices, "num_vertices", lo=2)
    d = check_int(d, "d", lo=1)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    L0 = check_positive(L0, "L0")
    L1 = check_positive(L1, "L1", allow_zero=True)
    D = check_positive(D, "D")
    c_T = check_positive(steps_constant, "steps_constant")
    c_eta = check_positive(step_constant, "step_constant")
    accountant = check_accountant(accountant)
    t_hi = n // 2 + 1
    log_v = math.log(nv)
    log_delta = math.log(1.0 / delta) if delta > 0 else 1.0
    scale = epsilon * n / (log_v * math.sqrt(log_delta))
    if n_steps is not None:
        T = check_int(n_steps, "n_steps", lo=2, hi=t_hi)
    else:
        T = int(min(max(round(c_T * scale ** (2.0 / 3.0)), 2), t_hi)) if math.isfinite(scale) else t_hi
    if step_size is not None:
        eta = check_in_range(step_size, "step_size", 0.0, 1.0, lo_inclusive=False, hi_inclusive=False)
    else:
        eta = min(0.9, c_eta * min(T ** -0.5, n ** (1.0 / 3.0) / T))
    eps0 = _selection_epsilon(epsilon, delta, T, accountant)
    m, B = _batches(n, T)
    terms = {k: float(v) for k, v in vr_fw_nonconvex_bound(n, num_vertices=nv, d=d, eps0=eps0, L0=L0, L1=L1, D=D,
                                                           T=T, eta=eta).items()}
    return VrFwNonconvexParams(
        T=T, step_size=eta, init_batch=m, batch_size=B, eps0=eps0, accountant=accountant,
        records_used=m + (T - 1) * B, sensitivity_first=L0 * D / m,
        sensitivity_floor=eta * D * ((1.0 - eta) * L1 * D + L0) / B, bound=terms, rate_bound=terms["total"],
        rate=(1.0 / scale) ** (1.0 / 3.0) + n ** (-1.0 / 3.0),
    )


def fw_iterates(problem: Problem, *, selected: Any, step_size: float) -> np.ndarray:
    """Replay ``x_{t+1} = (1 - eta) x_t + eta v_{selected[t]}`` (``eta = step_size``) from the centre of X: the
    iterates ``x_0, ..., x_T`` as a ``(T + 1, d)`` array (post-processing of the released selections)."""
    if not isinstance(problem, Problem):
        raise ValueError(f"problem must be a dpsco_lib.problems.Problem, got {type(problem).__name__}")
    eta = check_in_range(step_size, "step_size", 0.0, 1.0, lo_inclusive=False)
    sel = np.asarray(selected, dtype=np.int64)
    _, _, move = vertex_oracle(problem.feasible_set)
    x = np.asarray(problem.feasible_set.center(), dtype=np.float64).copy()
    out = np.empty((sel.size + 1, x.size))
    out[0] = x
    for t, j in enumerate(sel):
        move(x, int(j), eta)
        out[t + 1] = x
    return out


def _check_problem(problem: Any) -> Problem:
    if not isinstance(problem, Problem):
        raise ValueError(f"problem must be a dpsco_lib.problems.Problem, got {type(problem).__name__}")
    return problem


def run_private_vr_fw_nonconvex(
    problem: Problem,
    data: Dataset,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    n_steps: int | None = None,
    step_size: float | None = None,
    steps_constant: float = 1.0,
    step_constant: float = 1.0,
    accountant: str = "best",
    trace: bool = False,
    _noise_multiplier: float = 1.0,
) -> Result:
    r"""Private variance-reduced Frank-Wolfe for smooth nonconvex losses (Spec N1; BGM21); ``(eps, delta)``-DP.

    ``x_0`` = centre of X; ``nabla_0`` = mean gradient at ``x_0`` over the first ``m`` records; for
    ``t = 1, ..., T-1`` with a fresh batch ``B_t`` of ``B`` records:
    ``nabla_t = (1 - eta)(nabla_{t-1} + mean_{B_t}[grad f(x_t) - grad f(x_{t-1})]) + eta mean_{B_t} grad f(x_t)``;
    every ``t``: ``v_t = argmin_{v in V} <v, nabla_t> + Lap(lambda_t)``, ``lambda_t = 2 s_t/eps0``
    (:func:`~dpsco_lib.algorithms.vr_sensitivity.vr_sensitivities`), ``x_{t+1} = (1 - eta) x_t + eta v_t``.
    Output ``x_tau`` with ``tau`` uniform on ``{0, ..., T-1}`` (post-processing). Privacy: each of the ``T``
    selections is ``eps0``-DP given the past (report noisy min, general scale ``2 s/eps``), ``eps0`` calibrated
    so that the ``T``-fold composition meets the target; the ledger records the ``T`` pure steps.

    Parameters
    ----------
    problem : Problem
        Smooth (finite ``L1``) problem over a Simplex, L1Ball or Polytope; constants in the l1 setup.
    data : Dataset
        ``n >= 4`` records within the problem's bounds.
    epsilon, delta : float
        Target; ``delta = 0`` uses basic composition (pure DP).
    rng : numpy.random.Generator
    n_steps, step_size : optional
        Override ``T`` and ``eta`` (defaults: :func:`vr_fw_nonconvex_theory_params`).
    steps_constant, step_constant : float
        The constants ``c_T``, ``c_eta`` of the theory parameters.
    accountant : str
        Calibrates ``eps0`` (module docstring, "Accountant"): ``"best"`` (default, the tightest valid
        accountant, KOV15 here), ``"advanced"`` (DRV10 floored at basic composition, the default of earlier
        versions), ``"kov"``, ``"rdp"``, ``"basic"``, ``"paper"`` (the papers' closed form; was
        ``budget="closed_form"``).
    trace : bool
        Record the selected vertices and the Laplace scales (``fw_iterates`` replays the iterates).
    _noise_multiplier : float
        Private test hook: multiplies the Laplace scales while the ledger keeps the certified budget (the
        canary test uses 0.5 as a broken variant). Never pass it otherwise.

    Returns
    -------
    Result
        ``x = x_tau``; ``params`` from the theory function as a dict (plus ``n``, ``tau``); ``ledger``; ``info``
        with the last iterate ``x_last``, the random index and gradient-evaluation count.
    """
    problem = _check_problem(problem)
    rng = check_rng(rng)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    accountant = check_accountant(accountant)
    trace = check_bool(trace, "trace")
    noise_mult = check_positive(_noise_multiplier, "_noise_multiplier")
    data = problem.validate_data(data)
    n = data.n
    if n < 4:
        raise ValueError(f"data must hold n >= 4 records, got {n}")
    if not math.isfinite(problem.L1):
        raise ValueError(f"the Frank-Wolfe method needs a smooth loss (finite L1), got L1={problem.L1!r}")
    fset = problem.feasible_set
    oracle = vertex_oracle(fset)
    D = float(fset.diameter(1.0))
    L0, L1 = float(problem.L0), float(problem.L1)
    prm = vr_fw_nonconvex_theory_params(n, num_vertices=oracle[0], d=problem.d, epsilon=epsilon, delta=delta,
                                        L0=L0, L1=L1, D=D, n_steps=n_steps, step_size=step_size,
                                        steps_constant=steps_constant, step_constant=step_constant,
                                        accountant=accountant)
    T, eta, m, B = prm.T, prm.step_size, prm.init_batch, prm.batch_size
    sens = vr_sensitivities(T, init_batch=m, batch_size=max(B, 1), step_size=eta, L0=L0, L1=L1, D=D)
    scales = (2.0 / prm.eps0) * noise_mult * sens
    tau, x_tau, x, selected = _vr_fw_loop(problem, data, rng, oracle, T=T, step_size=eta, init_batch=m,
                                          batch_size=B, scales=scales)
    ledger = PrivacyLedger()
    ledger.record_pure(prm.eps0, count=T,
                       label="report-noisy-min over the vertices, nonconvex VR Frank-Wolfe (Spec N1)")
    params = prm.as_dict()
    params.update(n=n, tau=tau)
    info = {
        "method": "private_vr_fw_nonconvex",
        "spec": "N1",
        "paper": "BGM21",
        "n_vertices": oracle[0],
        "diameter": D,
        "x_last": x,
        "laplace_scale_max": float(scales.max()),
        "noise_multiplier_hook": noise_mult,
        "gradient_evaluations": m + 2 * (T - 1) * B,
    }
    tr = {"selected": selected, "laplace_scale": scales} if trace else None
    return Result(x=x_tau, trace=tr, params=params, ledger=ledger, info=info)


def _vr_fw_loop(problem: Problem, data: Dataset, rng: np.random.Generator, oracle: tuple[int, Any, Any], *, T: int,
                step_size: float, init_batch: int, batch_size: int,
                scales: np.ndarray) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """The T steps of :func:`run_private_vr_fw_nonconvex` (inputs validated there): ``(tau, x_tau, x_T, selected)``."""
    n_vertices, scores_of, move = oracle
    eta, m, B = step_size, init_batch, batch_size
    tau = int(rng.integers(0, T))
    noise = rng.laplace(0.0, 1.0, size=(T, n_vertices)) if T * n_vertices <= 4_000_000 else None
    mean_grad = problem._mean_grad  # records validated by the runner, iterates feasible by construction
    x = np.asarray(problem.feasible_set.center(), dtype=np.float64).copy()
    x_prev = x.copy()
    x_tau = x.copy()
    grad = mean_grad(x, data[:m])
    selected = np.empty(T, dtype=np.int64)
    for t in range(T):
        if t >= 1:
            batch = data[m + (t - 1) * B: m + t * B]
            g_new = mean_grad(x, batch)
            grad = (1.0 - eta) * (grad + g_new - mean_grad(x_prev, batch)) + eta * g_new
        if t == tau:
            x_tau = x.copy()
        z = rng.laplace(0.0, 1.0, size=n_vertices) if noise is None else noise[t]
        j = int(np.argmin(scores_of(grad) + scales[t] * z))
        selected[t] = j
        x_prev[:] = x
        move(x, j, eta)
    return tau, x_tau, x, selected


# =========================================================================================================
# 2. proximal-point method for weakly convex losses, Euclidean setup
# =========================================================================================================
def _weakly_convex_constants(problem: Any) -> tuple[float, float, float]:
    """(L0_2, rho, D_2): Euclidean Lipschitz constant, weak convexity and Euclidean diameter of X."""
    problem = _check_problem(problem)
    rho = getattr(problem, "rho", None)
    lip = getattr(problem, "lipschitz_l2", None)
    if rho is None or lip is None:
        raise ValueError(
            f"{type(problem).__name__} must declare `rho` (weak convexity in ||.||_2) and `lipschitz_l2` for the "
            "proximal method (e.g. dpsco_lib.problems.nonconvex.NonconvexRegression)"
        )
    return float(lip), float(rho), float(problem.feasible_set.diameter(2.0))


def proximal_weakly_convex_bound(
    n: int, *, d: int, nu1: float, L0: float, rho: float, D: float, T: Any, K: Any, beta: float
) -> dict[str, np.ndarray]:
    r"""The bound on ``E ||grad F_{1/beta}(x_tau)||_2^2`` of the private proximal method (Spec N1; derived here).

    Notation: ``F`` is ``rho``-weakly convex (every ``f(., z)`` is), ``L0``-Lipschitz in l2 on ``X``
    (Euclidean diameter ``D``); ``beta > rho``, ``mu = beta - rho``; ``x_hat_t = prox(x_t) = argmin_{y in X}
    F(y) + (beta/2)||y - x_t||^2``; ``grad F_{1/beta}(x_t) = beta (x_t - x_hat_t)``.

    Outer recursion (Davis-Drusvyatskiy): ``F_{1/beta}(x_{t+1}) <= F(x_hat_t) + (beta/2)||x_hat_t - x_{t+1}||^2
    = F_{1/beta}(x_t) - (beta/2)||x_t - x_hat_t||^2 + (beta/2)||x_{t+1} - x_hat_t||^2``; summing,

    .. math:: \frac1T\sum_{t<T}\|\nabla F_{1/\beta}(x_t)\|^2 \le \frac{2\beta\Delta}{T}
              + \beta^2 \max_t \mathbb E\|x_{t+1} - \hat x_t\|^2, \qquad \Delta = L_0 D \ge F(x_0) - \inf F.

    Inner error with ``N = floor(n/T)`` fresh records: ``||x_{t+1} - x_hat_t||^2 <= 2||x_{t+1} - y_hat||^2 +
    2||y_hat - x_hat_t||^2`` with ``y_hat`` the empirical minimizer. (i) Uniform stability of the
    ``mu``-strongly convex ERM (every per-record loss ``f + beta/2 ||. - x_t||^2`` is ``mu``-strongly convex):
    ``E[phi(y_hat) - phi(x_hat)] <= 2 L0^2/(mu N)``, so ``E||y_hat - x_hat||^2 <= 4 L0^2/(mu^2 N)``.
    (ii) ``K`` noisy projected subgradient steps with ``eta_k = 2/(mu (k+1))`` and the ``k``-weighted average
    (Lacoste-Julien, Schmidt and Bach 2012): ``E||x_bar - y_hat||^2 <= 4 M^2/(mu^2 (K+1))`` with
    ``M^2 = G^2 + d sigma^2``, ``G = L0 + beta D`` (subgradients of the regularized objective) and
    ``sigma = 2 L0 nu1 sqrt(K)/N`` (noise on the batch-mean subgradient, l2 sensitivity ``2 L0/N``). Hence

    .. math:: \mathbb E\|\nabla F_{1/\beta}(x_\tau)\|^2 \le \frac{2\beta L_0 D}{T}
              + \frac{8\beta^2}{\mu^2}\Big(\frac{L_0^2}{N} + \frac{G^2}{K+1}
              + \frac{4 d L_0^2 \nu_1^2 K}{N^2 (K+1)}\Big).

    With ``K + 1 >= N G^2/L0^2`` and ``beta = 2 rho`` this is ``~ rho L0 D/T + L0^2 T/n + d L0^2 nu1^2 T^2/n^2``;
    minimizing over ``T`` gives ``||grad|| ~ (rho L0^3 D/n)^{1/4} + (rho D L0^2 sqrt(d) nu1/n)^{1/3}``, i.e. Spec
    N1's ``n^{-1/4} + (sqrt(d)/(n eps))^{1/3}`` (``nu1 ~ sqrt(ln(1/delta))/eps``).

    Returns
    -------
    dict of arrays (broadcast of ``T``, ``K``): ``optimization``, ``statistical``, ``inner``, ``privacy``,
    ``total_sq`` (the bound on the mean square) and ``total`` (its square root, the bound on the RMS norm).
    """
    T = np.asarray(T, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    mu = beta - rho
    N = np.floor(n / T)
    G = L0 + beta * D
    c = 8.0 * beta * beta / (mu * mu)
    opt = 2.0 * beta * L0 * D / T
    stat = c * L0 * L0 / N
    inner = c * G * G / (K + 1.0)
    priv = c * 4.0 * d * L0 * L0 * nu1 * nu1 * K / (N * N * (K + 1.0))
    total_sq = opt + stat + inner + priv
    return {"optimization": opt, "statistical": stat, "inner": inner, "privacy": priv, "total_sq": total_sq,
            "total": np.sqrt(total_sq)}


def _inner_steps(N: np.ndarray, d: int, nu1: float, L0: float, G: float, c_K: float = 1.0) -> np.ndarray:
    # K + 1 = G^2 / (L0^2 (1/N + 4 d nu1^2/N^2)): the inner optimization error matches the larger of the
    # statistical and privacy errors of the subproblem (a smaller K only adds error; a larger one only cost).
    k = c_K * G * G / (L0 * L0 * (1.0 / N + 4.0 * d * nu1 * nu1 / (N * N)))
    return np.maximum(1, np.ceil(k - 1.0)).astype(np.int64)


@dataclass(frozen=True)
class ProximalWeaklyConvexParams:
    """Parameters of the private proximal method for weakly convex losses (Spec N1).

    Attributes
    ----------
    T : int
        Outer (proximal) steps.
    batch_size : int
        ``N = floor(n/T)`` records per subproblem.
    inner_steps : int
        ``K`` noisy subgradient steps per subproblem.
    beta, mu : float
        Proximal parameter and the strong convexity ``beta - rho`` of the subproblems.
    nu1 : float
        Multiplier of one Gaussian mechanism meeting the target (enters the bound).
    noise_multiplier : float
        ``nu``: the calibrated multiplier of every inner step (``~ nu1 sqrt(K)``).
    noise_std : float
        ``sigma = 2 L0 nu/N`` on the batch-mean subgradient.
    accountant : str
        The accountant that calibrated ``nu1`` and ``nu``.
    records_used : int
        ``T N``.
    bound : dict
        Terms of :func:`proximal_weakly_convex_bound`.
    rate_bound : float
        The bound on ``sqrt(E||grad F_{1/beta}(x_tau)||^2)``.
    """

    T: int
    batch_size: int
    inner_steps: int
    beta: float
    mu: float
    nu1: float
    noise_multiplier: float
    noise_std: float
    accountant: str
    records_used: int
    bound: dict[str, float]
    rate_bound: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _prox_event(nu: float, K: int, T: int, label: str = "") -> DpEvent:
    """The events of one run: T subproblems on disjoint batches (parallel), K Gaussian steps each."""
    part = (SelfComposedEvent(GaussianEvent(nu), K),)
    return ParallelEvent((part,) * T, label=label)


@lru_cache(maxsize=1024)
def _prox_noise_multiplier(epsilon: float, delta: float, K: int, T: int, accountant: str, guess: float) -> float:
    def make(nu: float) -> DpEvent:
        return _prox_event(nu, K, T)

    return calibrate(make, epsilon=epsilon, delta=delta, accountant=accountant, bracket=(guess / 2.0, guess),
                     increasing=False, guess=guess).value


def proximal_weakly_convex_theory_params(
    n: int,
    *,
    d: int,
    epsilon: float,
    delta: float,
    L0: float,
    rho: float,
    D: float,
    n_outer: int | None = None,
    inner_steps: int | None = None,
    inner_constant: float = 1.0,
    beta: float | None = None,
    accountant: str = "gdp",
) -> ProximalWeaklyConvexParams:
    r"""Parameters of the private proximal method for weakly convex losses (Spec N1): minimizers of its bound.

    ``beta = 2 rho`` (so ``mu = rho``); the number of outer steps ``T`` minimizes
    :func:`proximal_weakly_convex_bound` over all ``T`` in ``[1, floor(n/2)]`` (every subproblem keeps
    ``N = floor(n/T) >= 2`` records), each with ``K = ceil(G^2/(L0^2 (1/N + 4 d nu1^2/N^2))) - 1`` inner steps;
    ``T`` is chosen with this ``K``, after which ``inner_constant`` ``c_K`` (1 in the theorem) rescales ``K``
    to ``ceil(c_K (K + 1)) - 1``: ``G^2/(K+1)`` is a worst-case bound on the subgradient method's error, and a
    smaller ``c_K`` trades that term (reported in ``bound``) for time.

    Privacy (split, calibrate, record): ``nu1`` is the multiplier of one Gaussian mechanism that meets
    ``(epsilon, delta)`` under ``accountant``; the run's events are ``T`` subproblems on disjoint batches
    (parallel composition: given the past, a record only enters its own subproblem), each ``K`` Gaussian steps of
    multiplier ``nu``, and ``nu`` is calibrated on exactly those events (``nu = nu1 sqrt(K)`` under GDP, which
    is exact). ``accountant``: ``"gdp"`` (default; the analytic Gaussian calibration of earlier versions),
    ``"best"`` (the tightest valid accountant: GDP here), ``"rdp"``.
    """
    n = check_int(n, "n", lo=2)
    d = check_int(d, "d", lo=1)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    L0 = check_positive(L0, "L0")
    rho = check_positive(rho, "rho")
    D = check_positive(D, "D")
    accountant = check_accountant(accountant)
    beta = 2.0 * rho if beta is None else check_positive(beta, "beta")
    if beta <= rho:
        raise ValueError(f"beta must exceed rho = {rho!r} (strongly convex subproblems), got beta={beta!r}")
    nu1 = gaussian_noise_multiplier(epsilon, delta, accountant=accountant).value
    G = L0 + beta * D
    if n_outer is not None:
        T_grid = np.array([check_int(n_outer, "n_outer", lo=1, hi=n // 2)])
    else:
        T_grid = np.arange(1, n // 2 + 1)
    N = np.floor(n / T_grid)
    c_K = check_positive(inner_constant, "inner_constant")
    K = (np.full(T_grid.shape, check_int(inner_steps, "inner_steps", lo=1)) if inner_steps is not None
         else _inner_steps(N, d, nu1, L0, G))
    bound_kw = {"d": d, "nu1": nu1, "L0": L0, "rho": rho, "D": D, "beta": beta}
    tot = proximal_weakly_convex_bound(n, T=T_grid, K=K, **bound_kw)["total_sq"]
    i = int(np.argmin(tot))
    T, Kc, Nc = int(T_grid[i]), int(K[i]), int(N[i])
    if inner_steps is None and c_K != 1.0:
        Kc = int(_inner_steps(np.array([float(Nc)]), d, nu1, L0, G, c_K)[0])
    terms = {k: float(v) for k, v in proximal_weakly_convex_bound(n, T=T, K=Kc, **bound_kw).items()}
    nu = _prox_noise_multiplier(epsilon, delta, Kc, T, accountant, nu1 * math.sqrt(Kc))
    return ProximalWeaklyConvexParams(
        T=T, batch_size=Nc, inner_steps=Kc, beta=beta, mu=beta - rho, nu1=nu1, noise_multiplier=nu,
        noise_std=2.0 * L0 * nu / Nc, accountant=accountant, records_used=T * Nc, bound=terms,
        rate_bound=terms["total"],
    )


def _projector(fset: Any) -> Any:
    """Euclidean projection onto X without per-call validation (the iterates are finite by construction)."""
    if isinstance(fset, Simplex):
        return project_simplex
    if isinstance(fset, LpBall) and fset.p == 1.0:
        r = float(fset.radius)
        return lambda v: project_l1_ball(v, r)
    return fset.project


def run_private_proximal_weakly_convex(
    problem: Problem,
    data: Dataset,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    n_outer: int | None = None,
    inner_steps: int | None = None,
    inner_constant: float = 1.0,
    beta: float | None = None,
    accountant: str = "gdp",
    trace: bool = False,
    _noise_multiplier: float = 1.0,
) -> Result:
    r"""Private proximal-point method for weakly convex (possibly nonsmooth) losses (Spec N1; BGM21).

    ``x_0`` = centre of X. For ``t = 0, ..., T-1``, on the fresh batch ``S_t`` of ``N`` records, approximately
    solve ``min_{y in X} (1/N) sum_{z in S_t} f(y; z) + (beta/2)||y - x_t||_2^2`` by ``K`` noisy projected
    subgradient steps from ``y_1 = x_t``:
    ``y_{k+1} = Proj_X(y_k - eta_k (mean_{S_t} g(y_k; z) + beta (y_k - x_t) + N(0, sigma^2 I)))``,
    ``eta_k = 2/(mu (k+1))``, and set ``x_{t+1} = sum_k k y_k / sum_k k``. Output ``x_tau``, ``tau`` uniform on
    ``{0, ..., T-1}``. ``sigma = 2 L0 nu/N`` with ``nu`` calibrated on the run's events (``K`` Gaussian steps per
    subproblem, subproblems on disjoint data: parallel composition), so the ledger certifies ``(epsilon, delta)``.
    Parameters and the bound: :func:`proximal_weakly_convex_theory_params`.

    Parameters
    ----------
    problem : Problem
        Declares ``rho`` (weak convexity in l2) and ``lipschitz_l2``; its feasible set has a Euclidean
        projection.
    data : Dataset
        ``n >= 2`` records within the problem's bounds.
    epsilon, delta : float
        Target, ``delta`` in (0, 1) (Gaussian noise).
    rng : numpy.random.Generator
    n_outer, inner_steps, beta : optional
        Override ``T``, ``K``, ``beta``.
    inner_constant : float
        ``c_K`` of the theory parameters (number of inner steps).
    accountant : str
        Calibrates the noise (:func:`proximal_weakly_convex_theory_params`): ``"gdp"`` (default, exact) or
        ``"best"`` (the tightest valid accountant, GDP here), ``"rdp"``.
    trace : bool
        Record the outer iterates ``x_0, ..., x_T`` (``(T + 1, d)``).
    _noise_multiplier : float
        Private test hook: multiplies the noise while the ledger keeps the certified budget. Never pass it.

    Returns
    -------
    Result
        ``x = x_tau``; ``params`` (theory parameters plus ``n``, ``tau``); ``ledger``; ``info`` with ``x_last``.
    """
    problem = _check_problem(problem)
    rng = check_rng(rng)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    accountant = check_accountant(accountant)
    trace = check_bool(trace, "trace")
    noise_mult = check_positive(_noise_multiplier, "_noise_multiplier")
    L0, rho, D = _weakly_convex_constants(problem)
    data = problem.validate_data(data)
    n = data.n
    if n < 2:
        raise ValueError(f"data must hold n >= 2 records, got {n}")
    prm = proximal_weakly_convex_theory_params(n, d=problem.d, epsilon=epsilon, delta=delta, L0=L0, rho=rho, D=D,
                                               n_outer=n_outer, inner_steps=inner_steps,
                                               inner_constant=inner_constant, beta=beta, accountant=accountant)
    tau = int(rng.integers(0, prm.T))
    iterates = _prox_loop(problem, data, rng, T=prm.T, batch_size=prm.batch_size, inner_steps=prm.inner_steps,
                          beta=prm.beta, mu=prm.mu, noise_std=prm.noise_std * noise_mult)
    ledger = PrivacyLedger()
    ledger.record(_prox_event(prm.noise_multiplier, prm.inner_steps, prm.T,
                              label="noisy subgradient steps of the proximal subproblems, disjoint batches (Spec N1)"))
    params = prm.as_dict()
    params.update(n=n, tau=tau)
    info = {
        "method": "private_proximal_weakly_convex",
        "spec": "N1",
        "paper": "BGM21",
        "x_last": iterates[-1].copy(),
        "lipschitz_l2": L0,
        "rho": rho,
        "diameter_l2": D,
        "noise_multiplier_hook": noise_mult,
        "gradient_evaluations": prm.T * prm.inner_steps * prm.batch_size,
    }
    tr = {"x": iterates} if trace else None
    return Result(x=iterates[tau].copy(), trace=tr, params=params, ledger=ledger, info=info)


def _prox_loop(problem: Problem, data: Dataset, rng: np.random.Generator, *, T: int, batch_size: int,
               inner_steps: int, beta: float, mu: float, noise_std: float) -> np.ndarray:
    """The outer iterates ``x_0, ..., x_T`` of :func:`run_private_proximal_weakly_convex` (inputs validated)."""
    N, K, bta, sigma = batch_size, inner_steps, beta, noise_std
    fset = problem.feasible_set
    project = _projector(fset)
    mean_grad = problem._mean_grad
    x = np.asarray(fset.center(), dtype=np.float64).copy()
    iterates = np.empty((T + 1, x.size))
    iterates[0] = x
    k_idx = np.arange(1, K + 1, dtype=np.float64)
    etas = 2.0 / (mu * (k_idx + 1.0))
    weights = k_idx / k_idx.sum()
    for t in range(T):
        batch = data[t * N:(t + 1) * N]
        noise = rng.standard_normal((K, x.size)) * sigma
        y = x.copy()
        avg = np.zeros_like(x)
        for k in range(K):
            avg += weights[k] * y
            g = mean_grad(y, batch) + bta * (y - x) + noise[k]
            y = project(y - etas[k] * g)
        x = avg
        iterates[t + 1] = x
    return iterates
