r"""Poly-SFW: private polyhedral stochastic Frank-Wolfe with variance reduction (Spec F1; BGN21).

Setting (spec/frank-wolfe.md). ``X = conv(V)`` for a finite vertex set ``V`` (simplex: ``d`` vertices,
l1 ball of radius ``r``: ``2d`` vertices, or an explicit :class:`~dpsco_lib.geometry.sets.Polytope`),
``f(., z)`` convex, ``L0``-Lipschitz (``||grad f||_q <= L0``) and ``L1``-smooth
(``||grad f(x) - grad f(y)||_q <= L1 ||x - y||_p``) in the problem's setup norm ``||.||_p``,
``D = max_{x, y in X} ||x - y||_p``.

Algorithm (Bassily, Guzmán and Nandi, COLT 2021, the talk of seed 000). With ``n`` records:

* ``B_1`` = the first ``m = n - T`` records, ``T = floor(n/2)``; records ``z_1, ..., z_T`` = the rest,
  each used in exactly one update (single pass).
* ``x_0`` = the centre of ``X`` (data-independent), ``nabla_0 = (1/m) sum_{z in B_1} grad f(x_0, z)``.
* For ``t = 1, ..., T``: ``g_t = grad f(x_t, z_t)``, ``Delta_t = g_t - grad f(x_{t-1}, z_t)``,
  ``nabla_t = (1 - eta)(nabla_{t-1} + Delta_t) + eta g_t``.
* Every ``t = 0, ..., T``: ``v_t = argmin_{v in V} <v, nabla_t> + Lap(lambda_t)`` (report noisy min, Spec P2)
  and ``x_{t+1} = (1 - eta) x_t + eta v_t``. Output ``x_{T+1}``. That is ``K = T + 1`` private selections.
* Constant step ``eta = step_constant * ln(n / ln|V|) / T``, capped to ``(0, 1]`` (the talk's choice up to
  the exposed constant).

Sensitivity lemma (derived here for this batch split; replace-one neighbours ``S ~ S'``). Condition on
the past outputs ``v_0, ..., v_{t-1}``: they determine ``x_0, ..., x_t``, so both runs share the iterates
and only the changed record can make ``nabla_t(S)`` and ``nabla_t(S')`` differ. Write
``delta_t = nabla_t(S) - nabla_t(S')``.

1. *Shift invariance.* ``argmin_v (u_v + Z_v)`` does not change if a constant is added to every score,
   so for one pair the mechanism on ``u(S')`` equals the mechanism on ``u(S') + c`` for any ``c``. The
   report-noisy-max proof (a score may rise by ``s`` while its competitors fall by ``s``) therefore
   needs only ``s_t = min_c max_v |<v, delta_t> - c| = (1/2) max_{v, w in V} <v - w, delta_t>
   <= (D/2) ||delta_t||_q`` (Hölder).
2. *Changed record in* ``B_1``: ``delta_0 = (grad f(x_0, z) - grad f(x_0, z'))/m``, so
   ``||delta_0||_q <= 2 L0 / m``; afterwards ``Delta_t`` and ``g_t`` agree, so
   ``delta_t = (1 - eta)^t delta_0``: ``s_t <= L0 D (1 - eta)^t / m``.
3. *Changed record* ``z_k`` (update ``k >= 1``): ``delta_t = 0`` for ``t < k``;
   ``||grad f(x_k, z) - grad f(x_{k-1}, z)||_q <= L1 ||x_k - x_{k-1}||_p = L1 eta ||v_{k-1} - x_{k-1}||_p
   <= L1 eta D``, so ``||delta_k||_q <= 2(1 - eta) L1 eta D + 2 eta L0`` and
   ``delta_t = (1 - eta)^{t-k} delta_k`` after: ``s_t <= eta D ((1 - eta) L1 D + L0)``.

Hence ``s_0 = L0 D / m`` and, for ``t >= 1``,

.. math:: s_t = \max\Big\{\frac{L_0 D}{m}(1-\eta)^t,\ \eta D\big((1-\eta) L_1 D + L_0\big)\Big\},

which with ``m = n/2`` is the talk's bound ``max{2 L0 D (1-eta)^t / n, 2 eta (L1 D^2 + L0 D)}`` with the
second term halved by the shift argument. The scores ``<v, nabla>`` of a polytope are *not* monotone in
the data (some rise while others fall), so the general report-noisy-min scale
``lambda_t = 2 s_t / eps0`` is used (Dwork-Roth; :func:`dpsco_lib.privacy.mechanisms.report_noisy_min`),
which makes every selection ``(eps0, 0)``-DP given the past.

Privacy budget. The ``K = T + 1`` selections are an adaptive composition of ``eps0``-DP steps; ``eps0``
is the largest per-step budget whose ``K``-fold composition meets ``(epsilon, delta)``:

* ``budget="advanced"`` (default): exact solver of DRV10 advanced composition
  (:func:`~dpsco_lib.privacy.accounting.advanced_composition_per_step_epsilon`); ``delta = 0`` uses basic
  composition ``eps0 = epsilon / K``;
* ``budget="kov"``: the optimal composition of Kairouz-Oh-Viswanath (larger ``eps0``, less noise);
* ``budget="closed_form"``: the talk's ``eps0 = epsilon / (2 sqrt(2 K ln(1/delta)))`` (constant 2 sqrt 2
  stated by us: advanced composition then gives ``epsilon/2 + K eps0 (e^eps0 - 1) <= epsilon`` whenever
  ``epsilon e^eps0 <= 4 ln(1/delta)``; checked at run time, ``ValueError`` otherwise).

The returned ledger records the ``K`` pure steps, and ``ledger.epsilon(delta) <= epsilon`` certifies the run.

Rate (BGN21): ``E F(x_{T+1}) - F* = O((L1 D^2 + L0 D) ln|V| ln(n/ln|V|) sqrt(ln(1/delta)) / (eps sqrt n))``.

Implementation: scores are computed through the structure of the set, ``O(d)`` per step (simplex:
``nabla``; l1 ball: ``(r nabla, -r nabla)``); a general polytope uses ``V nabla``. The Laplace noise of
a block of steps is drawn at once (standard Laplace, scaled by ``lambda_t`` per step), which is
report-noisy-min with scale ``lambda_t`` exactly. The library works in the idealized real-arithmetic
model with float64 noise from a non-cryptographic RNG.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpsco_lib._validation import (
    check_delta,
    check_epsilon,
    check_in_range,
    check_int,
    check_positive,
    check_rng,
)
from dpsco_lib.algorithms._result import Result
from dpsco_lib.geometry.sets import LpBall, Simplex, vertex_oracle
from dpsco_lib.privacy.accounting import (
    PrivacyLedger,
    advanced_composition_epsilon,
    advanced_composition_per_step_epsilon,
    kov_epsilon,
    kov_per_step_epsilon,
)
from dpsco_lib.problems.base import Problem
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.least_squares import row_grad_oracle

__all__ = ["BUDGETS", "poly_sfw_sensitivities", "poly_sfw_theory_params", "run_poly_sfw"]

BUDGETS = ("advanced", "kov", "closed_form")

# Largest number of standard-Laplace draws materialized at once (2 MB of float64: a block stays in cache;
# the draws are a sequential stream, so the block size does not change any value).
_NOISE_BLOCK_ENTRIES = 262_144


def _composed_epsilon(eps0: float, k: int, delta: float, method: str) -> float:
    # The same float64 expressions as PrivacyLedger.epsilon for one event of k pure eps0-DP steps
    # (the tests assert agreement with the ledger), without building a ledger per call.
    if method == "basic":
        return k * eps0
    if method == "advanced":
        return math.sqrt(2 * math.log(1 / delta) * (k * eps0 * eps0)) + k * eps0 * math.expm1(eps0)
    return kov_epsilon(eps0, k=k, delta=delta)


def _certified_down(eps0: float, epsilon: float, delta: float, k: int, method: str) -> float:
    # The solvers round their root down, but the ledger evaluates the composition with a differently
    # ordered float64 formula that can land 1 ulp above the target; step eps0 down until the ledger's
    # formula certifies <= epsilon (a few ulps at most).
    for _ in range(64):
        if _composed_epsilon(eps0, k, delta, method) <= epsilon:
            return eps0
        eps0 = float(np.nextafter(eps0, 0.0))
    raise RuntimeError("could not certify the per-step budget")  # pragma: no cover


def _per_step_epsilon(epsilon: float, delta: float, k: int, budget: str) -> float:
    if budget not in BUDGETS:
        raise ValueError(f"budget must be one of {BUDGETS}, got {budget!r}")
    if budget == "kov":
        return _certified_down(kov_per_step_epsilon(epsilon, delta_total=delta, k=k), epsilon, delta, k, "kov")
    if delta == 0:
        if budget == "closed_form":
            raise ValueError("budget='closed_form' needs delta > 0 (it is the advanced-composition rule)")
        return _certified_down(epsilon / k, epsilon, 0.0, k, "basic")
    if budget == "advanced":
        e_adv = advanced_composition_per_step_epsilon(epsilon, delta_total=delta, k=k)
        return _certified_down(e_adv, epsilon, delta, k, "advanced")
    eps0 = epsilon / (2.0 * math.sqrt(2.0 * k * math.log(1.0 / delta)))
    if advanced_composition_epsilon(eps0, k=k, delta_prime=delta) > epsilon:
        raise ValueError(
            f"budget='closed_form' (eps0 = eps/(2 sqrt(2K ln(1/delta)))) does not meet epsilon={epsilon!r} at "
            f"delta={delta!r} with K={k} steps (it needs epsilon e^eps0 <= 4 ln(1/delta)); use budget='advanced'"
        )
    return _certified_down(eps0, epsilon, delta, k, "advanced")


def poly_sfw_sensitivities(T: int, batch_size: int, eta: float, L0: float, L1: float, D: float) -> np.ndarray:
    r"""Per-step score sensitivities ``s_0, ..., s_T`` of Poly-SFW (Spec F1; derivation in the module docstring).

    ``s_0 = L0 D / m`` and ``s_t = max{L0 D (1 - eta)^t / m, eta D ((1 - eta) L1 D + L0)}`` for
    ``t >= 1``, with ``m`` = ``batch_size`` the size of the initial batch.
    """
    T = check_int(T, "T", lo=0)
    m = check_int(batch_size, "batch_size", lo=1)
    eta = check_in_range(eta, "eta", 0.0, 1.0, lo_inclusive=False)
    L0 = check_positive(L0, "L0")
    L1 = check_positive(L1, "L1", allow_zero=True)
    D = check_positive(D, "D")
    t = np.arange(T + 1, dtype=np.float64)
    first = L0 * D / m * (1.0 - eta) ** t
    update = eta * D * ((1.0 - eta) * L1 * D + L0)
    s = np.maximum(first, update)
    s[0] = first[0]
    return s


def poly_sfw_theory_params(
    n: int,
    num_vertices: int,
    epsilon: float,
    delta: float,
    L0: float,
    L1: float,
    D: float,
    *,
    step_constant: float = 1.0,
    step_size: float | None = None,
    budget: str = "advanced",
) -> dict[str, Any]:
    r"""Hyperparameters of Poly-SFW fixed by the theorem (Spec F1; BGN21), and its rate bound.

    Parameters
    ----------
    n : int
        Number of records (>= 2).
    num_vertices : int
        ``|V|`` (>= 2).
    epsilon, delta : float
        Target ``(epsilon, delta)``; ``delta`` in [0, 1).
    L0, L1, D : float
        Lipschitz and smoothness constants (dual norm) and the ``p``-diameter of ``X``.
    step_constant : float
        ``c > 0`` in ``eta = min(1, c ln(n / ln|V|) / T)``.
    step_size : float, optional
        Explicit ``eta`` in (0, 1] (overrides ``step_constant``).
    budget : {"advanced", "kov", "closed_form"}
        How the per-step budget ``eps0`` is solved for (module docstring).

    Returns
    -------
    dict
        ``batch_size`` (m), ``T``, ``n_selections`` (K = T + 1), ``eta``, ``eps0``, ``budget``,
        ``sensitivity_first`` (s_0), ``sensitivity_floor`` (the update term), ``laplace_scale_first``,
        ``rate_bound`` = ``(L1 D^2 + L0 D) ln|V| ln(n/ln|V|) sqrt(ln(1/delta)) / (eps sqrt n)`` (constant 1;
        ``ln(1/delta)`` replaced by 1 when delta = 0).
    """
    n = check_int(n, "n", lo=2)
    nv = check_int(num_vertices, "num_vertices", lo=2)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    L0 = check_positive(L0, "L0")
    L1 = check_positive(L1, "L1", allow_zero=True)
    D = check_positive(D, "D")
    T = n // 2
    m = n - T
    log_ratio = math.log(n / math.log(nv))
    if step_size is None:
        c = check_positive(step_constant, "step_constant")
        if log_ratio <= 0:
            raise ValueError(
                f"n={n} is too small for the theory step eta = c ln(n/ln|V|)/T with |V|={nv}: ln(n/ln|V|) = "
                f"{log_ratio:.3g} <= 0 (need n > ln|V|); pass step_size explicitly"
            )
        eta = min(1.0, c * log_ratio / T)
    else:
        eta = check_in_range(step_size, "step_size", 0.0, 1.0, lo_inclusive=False)
    k = T + 1
    eps0 = _per_step_epsilon(epsilon, delta, k, budget)
    s = poly_sfw_sensitivities(1, m, eta, L0, L1, D)
    log_term = math.sqrt(math.log(1.0 / delta)) if delta > 0 else 1.0
    rate = (L1 * D * D + L0 * D) * math.log(nv) * max(log_ratio, 1.0) * log_term / (epsilon * math.sqrt(n))
    return {
        "batch_size": m,
        "T": T,
        "n_selections": k,
        "eta": eta,
        "step_constant": float(step_constant),
        "eps0": eps0,
        "budget": budget,
        "sensitivity_first": float(s[0]),
        "sensitivity_floor": float(eta * D * ((1.0 - eta) * L1 * D + L0)),
        "laplace_scale_first": float(2.0 * s[0] / eps0),
        "rate_bound": rate,
    }


# ---------------------------------------------------------------------------------------------------------
# vertex structure: O(d) scores and in-place FW updates
# ---------------------------------------------------------------------------------------------------------
def run_poly_sfw(
    problem: Problem,
    data: Dataset,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    step_constant: float = 1.0,
    step_size: float | None = None,
    budget: str = "advanced",
    trace: bool = False,
    _noise_multiplier: float = 1.0,
) -> Result:
    r"""Run Poly-SFW (Spec F1; Bassily-Guzmán-Nandi 2021) on ``data``; ``(epsilon, delta)``-DP.

    See the module docstring for the algorithm, the derivation of the per-step sensitivity ``s_t`` and
    the privacy budget. Single pass: ``m = n - floor(n/2)`` records for the initial gradient, then
    ``T = floor(n/2)`` single-record variance-reduced updates; ``T + 1`` report-noisy-min selections with
    Laplace scale ``2 s_t / eps0``.

    Parameters
    ----------
    problem : Problem
        A convex problem whose feasible set is a polytope (Simplex, L1Ball, Polytope); constants ``L0``,
        ``L1`` in its setup norm ``p``.
    data : Dataset
        ``n >= 2`` records inside the problem's declared bounds (else ``ValueError``).
    epsilon : float
        Target epsilon > 0.
    delta : float
        Target delta in [0, 1) (``delta = 0``: basic composition, pure DP).
    rng : numpy.random.Generator
        The only source of randomness.
    step_constant : float
        ``c > 0`` in ``eta = min(1, c ln(n/ln|V|)/T)``.
    step_size : float, optional
        Explicit ``eta`` in (0, 1]; overrides ``step_constant``.
    budget : {"advanced", "kov", "closed_form"}
        Per-step budget solver (module docstring).
    trace : bool
        Record the selected vertex indices, the Laplace scales and the iterate at ~40 log-spaced steps.
    _noise_multiplier : float
        Private test hook: multiplies every Laplace scale while the ledger keeps the certified budget.
        Only the privacy tests use it (``0.5`` builds a deliberately broken variant that audits must
        catch); never pass it otherwise.

    Returns
    -------
    Result
        ``x`` = ``x_{T+1}``; ``params`` from :func:`poly_sfw_theory_params`; ``ledger`` with ``T + 1`` pure
        ``eps0`` steps; ``info`` with the sensitivity profile and the number of gradient evaluations.
    """
    if not isinstance(problem, Problem):
        raise ValueError(f"problem must be a dpsco_lib.problems.Problem, got {type(problem).__name__}")
    rng = check_rng(rng)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    noise_mult = check_positive(_noise_multiplier, "_noise_multiplier")
    data = problem.validate_data(data)
    n = data.n
    if n < 2:
        raise ValueError(f"data must hold n >= 2 records for Poly-SFW (one batch and one update), got {n}")
    fset = problem.feasible_set
    n_vertices, scores_of, move = vertex_oracle(fset)
    D = float(fset.diameter(problem.p))
    params = poly_sfw_theory_params(
        n, n_vertices, epsilon, delta, problem.L0, problem.L1, D,
        step_constant=step_constant, step_size=step_size, budget=budget,
    )
    T, m, eta, eps0 = params["T"], params["batch_size"], params["eta"], params["eps0"]
    sens = poly_sfw_sensitivities(T, m, eta, problem.L0, problem.L1, D)
    scales = (2.0 / eps0) * noise_mult * sens

    # Noise for a block of steps at once: lambda_t * Lap(1) is exactly Lap(lambda_t). Each block is scaled by its
    # steps' lambda_t in one vectorized product (the same float64 products as scaling row by row), and the
    # noisy scores of a step are formed in a reused buffer (addition commutes exactly in float64).
    block = max(1, min(T + 1, _NOISE_BLOCK_ENTRIES // n_vertices))
    noise = np.empty((0, n_vertices))
    buf = np.empty(n_vertices)

    selected = np.empty(T + 1, dtype=np.int64)
    checkpoints = set(np.unique(np.round(np.geomspace(1, T + 1, num=40)).astype(int)).tolist()) if trace else set()
    snap_t: list[int] = []
    snap_x: list[np.ndarray] = []

    x_prev = np.asarray(fset.center(), dtype=np.float64).copy()
    grad = problem.mean_grad(x_prev, data[:m])
    noise = rng.laplace(0.0, 1.0, size=(min(block, T + 1), n_vertices))
    noise *= scales[: noise.shape[0], None]
    j = int(np.argmin(np.add(noise[0], scores_of(grad), out=buf)))
    selected[0] = j
    x = x_prev.copy()
    move(x, j, eta)
    updates = data[m:]
    # The records were validated above and the iterates are feasible by construction, so the per-step
    # oracle skips re-validation (problem._grad is the vectorized per-record gradient of the family; least
    # squares has a row oracle on the raw arrays that skips the one-record Dataset, bit-identically).
    per_record_grad = problem._grad
    row_grad = row_grad_oracle(problem)
    Xu, yu = updates.X, updates.y
    keep = 1.0 - eta
    eta_arr = np.array(eta)  # a 0-d operand: the same IEEE products as the Python float, less call overhead
    keep_arr = np.array(keep)
    g_new = np.empty(fset.d)
    g_old = np.empty(fset.d)
    identity_scores = isinstance(fset, Simplex)
    swap_move = identity_scores or (isinstance(fset, LpBall) and fset.p == 1.0)
    d_set = fset.d
    r_move = 1.0 if identity_scores else float(getattr(fset, "radius", 1.0))
    eta_v = eta * r_move  # move_l1 adds eta * r (j < d) or eta * -r (j >= d); move_simplex adds eta
    eta_neg = eta * -r_move
    add, sub, mul, copyto = np.add, np.subtract, np.multiply, np.copyto
    for t in range(1, T + 1):
        r = t % block
        if r == 0:
            noise = rng.laplace(0.0, 1.0, size=(min(block, T + 1 - t), n_vertices))
            noise *= scales[t: t + noise.shape[0], None]
        if row_grad is not None:
            row_grad(x, Xu, yu, t - 1, g_new)
            row_grad(x_prev, Xu, yu, t - 1, g_old)
        else:
            rec = updates[t - 1: t]
            g_new[:] = per_record_grad(x, rec)[0]
            g_old[:] = per_record_grad(x_prev, rec)[0]
        # nabla_t = (1 - eta)(nabla_{t-1} + g_new - g_old) + eta g_new
        sub(g_new, g_old, g_old)
        add(grad, g_old, grad)
        mul(grad, keep_arr, grad)
        mul(g_new, eta_arr, g_new)
        add(grad, g_new, grad)
        j = int(add(noise[r], grad if identity_scores else scores_of(grad), buf).argmin())
        selected[t] = j
        if swap_move:
            # x_prev <- x and x <- (1 - eta) x + eta v_j without a copy: write into the other buffer and swap
            # (the same float64 operations as move_simplex / move_l1)
            mul(x, keep_arr, x_prev)
            x_prev, x = x, x_prev
            if j < d_set:
                x[j] += eta_v
            else:
                x[j - d_set] += eta_neg
        else:
            copyto(x_prev, x)
            move(x, j, eta)
        if t in checkpoints:
            snap_t.append(t + 1)
            snap_x.append(x.copy())

    ledger = PrivacyLedger()
    ledger.record_pure(eps0, count=T + 1, label="Poly-SFW report-noisy-min over the vertices (Spec F1)")
    tr = None
    if trace:
        tr = {
            "selected": selected,
            "laplace_scale": scales,
            "sensitivity": sens,
            "t": np.asarray(snap_t, dtype=np.int64),
            "x": np.asarray(snap_x).reshape(len(snap_x), -1),
        }
    params = dict(params)
    params["n"] = n
    info = {
        "method": "poly_sfw",
        "spec": "F1",
        "paper": "BGN21",
        "n_vertices": n_vertices,
        "diameter": D,
        "sensitivity_max": float(sens.max()),
        "sensitivity_last": float(sens[-1]),
        "laplace_scale_max": float(scales.max()),
        "noise_multiplier_hook": noise_mult,
        "gradient_evaluations": m + 2 * T,
    }
    return Result(x=x, trace=tr, params=params, ledger=ledger, info=info)
