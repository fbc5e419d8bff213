r"""Experiments of notebook 07: private stationarity of nonconvex losses (Spec N1).

Bassily, Guzmán & Menart (NeurIPS 2021), "Differentially private stationary points in nonconvex stochastic
optimization": the private variance-reduced Frank-Wolfe method (smooth, :math:`\ell_1` setup; Frank-Wolfe gap
:math:`\tilde O(\log^{2/3} d/(n\varepsilon)^{1/3})`) and the private proximal-point method (weakly convex; Moreau
envelope gradient :math:`\tilde O(n^{-1/4} + (\sqrt d/(n\varepsilon))^{1/3})`).

Everything here is measured exactly on a family of nonconvex robust regressions over the :math:`\ell_1` ball
(:mod:`dpsco_lib.problems.nonconvex`; finite populations, so the Frank-Wolfe gap is a closed form and the Moreau
gradient an exactly solved proximal problem), at ``delta = n^-1.1`` (:func:`delta_for_n`). A rate is read on
the worst member of the family at every ``n``. Task functions have the :func:`run_sweep` signature.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from dpsco_book.privacy_rule import delta_for_n
from dpsco_lib._validation import check_int
from dpsco_lib.algorithms.nonconvex import (
    fw_iterates,
    proximal_weakly_convex_theory_params,
    run_private_proximal_weakly_convex,
    run_private_vr_fw_nonconvex,
)
from dpsco_lib.experiments.claims import RateClaim
from dpsco_lib.geometry.sets import L1Ball
from dpsco_lib.privacy.accounting.accountants import DEFAULT_ACCOUNTANT
from dpsco_lib.privacy.audit import AuditResult, canary_audit
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.nonconvex import NonconvexRegression, random_nonconvex_regression
from dpsco_lib.testing import noise_scaled

__all__ = [
    "D_DIM",
    "NEIGHBOURS",
    "claim_inputs",
    "fw_audit",
    "fw_calibration_runs",
    "fw_claim",
    "fw_task",
    "learning_ratio",
    "nonsmooth_member",
    "outer_steps",
    "prox_claim",
    "prox_task",
    "rate_terms",
    "smooth_member",
    "start_values",
    "values_by_n",
]

D_DIM = 10  # dimension; |V| = 2d = 20 vertices of the l1 ball

#: The neighbouring regimes of the n^-1/3 rates: n^-1/4 (the proximal method's statistical term) and n^-2/5.
NEIGHBOURS: tuple[float, float] = (-0.25, -0.4)

_CITE = "Bassily, Guzman & Menart 2021 (NeurIPS), private stationary points"


def _member(member: int) -> int:
    return check_int(member, "member", lo=0)


@lru_cache(maxsize=16)
def smooth_member(member: int) -> NonconvexRegression:
    """Member ``member`` of the smooth family: Huber robust regression (``tau`` = half the residual range),
    10% outliers, one planted atom direction drawn from the seed ``member`` (d = 10, 500 population atoms)."""
    g = _member(member)
    base = random_nonconvex_regression(D_DIM, 500, np.random.default_rng(g), kind="smooth", sparsity=1,
                                       outlier_fraction=0.1)
    return random_nonconvex_regression(D_DIM, 500, np.random.default_rng(g), kind="smooth", sparsity=1,
                                       outlier_fraction=0.1, tau=base.t_max / 2)


@lru_cache(maxsize=16)
def nonsmooth_member(member: int) -> NonconvexRegression:
    """Member ``member`` of the nonsmooth family: ``|t| - rho0 t^2/2`` robust regression, 10% outliers
    (d = 10, 300 population atoms, seed ``member``)."""
    return random_nonconvex_regression(D_DIM, 300, np.random.default_rng(_member(member)), kind="nonsmooth",
                                       sparsity=1, outlier_fraction=0.1)


def start_values(members: Sequence[int]) -> dict[str, dict[int, float]]:
    """The stationarity measures at the start point ``x_0`` (centre of the ball) per member: ``"fw"`` the
    Frank-Wolfe gap of the smooth member, ``"prox"`` the Moreau gradient norm of the nonsmooth member."""
    out: dict[str, dict[int, float]] = {"fw": {}, "prox": {}}
    for g in members:
        ps, pn = smooth_member(g), nonsmooth_member(g)
        out["fw"][g] = float(ps.frank_wolfe_gaps(ps.feasible_set.center())[0])
        out["prox"][g] = float(pn.moreau_gradient_norm(pn.feasible_set.center()))
    return out


def fw_task(*, rng: np.random.Generator, n: int, member: int, epsilon: float, steps_constant: float,
            accountant: str = DEFAULT_ACCOUNTANT.name) -> dict[str, Any]:
    r"""One run of the private VR Frank-Wolfe method on a fresh sample of member ``member`` at
    ``delta = n^-1.1``: the exact :math:`\mathbb E_\tau \mathrm{gap}(x_\tau)` over the output index, the gap at the
    released point, the parameters and the certified :math:`\varepsilon`."""
    pr = smooth_member(member)
    delta = delta_for_n(n)
    res = run_private_vr_fw_nonconvex(pr, pr.sample(n, rng), epsilon=epsilon, delta=delta, rng=rng, trace=True,
                                      steps_constant=steps_constant, accountant=accountant)
    gaps = pr.frank_wolfe_gaps(fw_iterates(pr, selected=res.trace["selected"], step_size=res.params["step_size"])[:-1])
    return {"gap_mean": float(gaps.mean()), "gap_output": float(pr.frank_wolfe_gaps(res.x)[0]),
            "T": res.params["T"], "eta": res.params["step_size"], "batch": res.params["batch_size"],
            "bound": res.params["rate_bound"], "delta": delta, "eps_certified": res.certified_epsilon(delta),
            "laplace_scale_max": res.info["laplace_scale_max"]}


def prox_task(*, rng: np.random.Generator, n: int, member: int, epsilon: float,
              inner_constant: float) -> dict[str, Any]:
    r"""One run of the private proximal-point method on member ``member`` at ``delta = n^-1.1``: the root mean
    square :math:`(\frac1T\sum_t\|\nabla F_{1/\beta}(x_t)\|^2)^{1/2}` over the iterates (exact conditional
    expectation over the output index), the inner error of the first subproblem and the certified epsilon."""
    pr = nonsmooth_member(member)
    delta = delta_for_n(n)
    res = run_private_proximal_weakly_convex(pr, pr.sample(n, rng), epsilon=epsilon, delta=delta, rng=rng,
                                             trace=True, inner_constant=inner_constant)
    its = res.trace["x"]
    g = np.array([pr.moreau_gradient_norm(x) for x in its[:-1]])
    return {"moreau_rms": float(np.sqrt(np.mean(g**2))), "moreau_last": pr.moreau_gradient_norm(its[-1]),
            "inner_error": float(np.linalg.norm(its[1] - pr.moreau_prox(its[0]))), "T": res.params["T"],
            "N": res.params["batch_size"], "K": res.params["inner_steps"], "bound": res.params["rate_bound"],
            "delta": delta, "eps_certified": res.certified_epsilon(delta)}


def values_by_n(records: Sequence[Mapping[str, Any]], key: str, member: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """The grid and, per n, the replicate values of ``key`` for one member (input of ``plot_rate``)."""
    ns = sorted({r["n"] for r in records if r["member"] == member})
    return np.array(ns, dtype=float), [np.array([r[key] for r in records if r["n"] == n and r["member"] == member])
                                       for n in ns]


def learning_ratio(records: Sequence[Mapping[str, Any]], key: str, start: Mapping[int, float]) -> dict[str, Any]:
    """At the largest n: the worst member's median ``key`` divided by its value at the start point."""
    top = max(r["n"] for r in records)
    ratios = {g: float(np.median([r[key] for r in records if r["n"] == top and r["member"] == g])) / s
              for g, s in start.items()}
    worst = max(ratios, key=ratios.__getitem__)
    return {"n": top, "member": worst, "ratio": ratios[worst]}


def fw_calibration_runs(n: int, *, epsilon: float, steps_constant: float, rng: np.random.Generator) -> dict[str, Any]:
    """The same VR-FW run calibrated by the papers' rule (DRV10 advanced composition) and by the tightest valid
    accountant (``"best"``), on one sample of member 0 (input of :func:`calibration_rows`)."""
    pr = smooth_member(0)
    data = pr.sample(n, rng)
    return {label: run_private_vr_fw_nonconvex(pr, data, epsilon=epsilon, delta=delta_for_n(n), rng=rng,
                                               steps_constant=steps_constant, accountant=acc)
            for label, acc in (("paper rule (advanced)", "advanced"), ("tightest (best)", "best"))}


def fw_audit(*, runs: int, alpha: float, rng: np.random.Generator, noise_multiplier: float,
             epsilon: float = 2.0) -> tuple[AuditResult, float, float]:
    r"""Canary audit of the first report-noisy-min selection of the VR-FW method (Spec N1, "Audits").

    Worst-case pair in d = 1 (the ball :math:`[-1, 1]`, two vertices): three records have zero gradient at
    :math:`x_0 = 0`; the canary :math:`(a, b) = (1, 1)` against :math:`(1, -1)` moves the first gradient estimate
    by exactly the sensitivity bound. ``delta = 0`` and ``T = 2``: each selection is :math:`\varepsilon_0 =
    \varepsilon/2`-DP. ``noise_multiplier`` scales the Laplace noise (1: the library; 0.25: a broken variant).
    Returns the audit (claimed :math:`\varepsilon_0`), :math:`\varepsilon_0` and the run's certified epsilon.
    """
    pr = NonconvexRegression(np.ones((2, 1)), np.array([1.0, 0.0]), L1Ball(1, 1.0), kind="smooth", tau=0.5,
                             rho0=0.0, label_bound=1.0)
    S = Dataset(np.ones((4, 1)), np.array([1.0, 0.0, 0.0, 0.0]))
    ref = run_private_vr_fw_nonconvex(pr, S, epsilon=epsilon, delta=0.0, rng=np.random.default_rng(0), n_steps=2)
    eps0 = float(ref.params["eps0"])

    def first_selection(data: Dataset, gen: np.random.Generator) -> int:
        with noise_scaled(noise_multiplier):
            r = run_private_vr_fw_nonconvex(pr, data, epsilon=epsilon, delta=0.0, rng=gen, n_steps=2, trace=True)
        return int(r.trace["selected"][0])

    res = canary_audit(first_selection, S, S.replace_one(0, (np.ones(1), -1.0)), lambda v: float(v == 1), runs,
                       alpha, rng, threshold=0.5, claimed_epsilon=eps0, delta=0.0)
    return res, eps0, float(ref.certified_epsilon(0.0))


def _third_rate(n_min: int) -> tuple[tuple[float, float], float]:
    r"""The exponent range of :math:`(\sqrt{\ln(1/\delta)}/(n\varepsilon))^{1/3}` at :math:`\delta = n^{-1.1}`
    over a grid starting at ``n_min`` (:math:`-1/3` up to :math:`-1/3 + 1/(6\ln n_{\min})`, the local exponent
    of the logarithm) and the tolerance: half the gap to the nearer of :data:`NEIGHBOURS`."""
    lo = -1.0 / 3.0
    hi = lo + 1.0 / (6.0 * np.log(check_int(n_min, "n_min", lo=3)))
    return (lo, hi), min(NEIGHBOURS[0] - hi, lo - NEIGHBOURS[1]) / 2.0


def fw_claim(n_min: int) -> RateClaim:
    r"""N1, private VR Frank-Wolfe: the worst member's :math:`\mathbb E\,\mathrm{gap}` decays like
    :math:`(\ln|V|\sqrt{\ln(1/\delta)}/(n\varepsilon))^{1/3}` (both terms of the bound, optimization and
    privacy, have this exponent at the theorem's :math:`T, \eta`); window :func:`_third_rate` of the grid,
    neighbour :math:`n^{-1/4}`."""
    expo, tol = _third_rate(n_min)
    return RateClaim("N1 (FW) exponent in n", "worst-case E gap ~ (n eps)^-1/3 up to logarithms", expo,
                     NEIGHBOURS[0], tol, _CITE + ", Frank-Wolfe theorem")


def outer_steps(n: int, *, member: int, epsilon: float, inner_constant: float) -> int:
    """The number ``T`` of outer steps the proximal method takes on ``n`` records of the nonsmooth member
    ``member`` (its theory parameters at ``delta = n^-1.1``; computed before any run)."""
    pr = nonsmooth_member(member)
    n = check_int(n, "n", lo=2)
    return int(proximal_weakly_convex_theory_params(
        n, d=pr.d, epsilon=epsilon, delta=delta_for_n(n), L0=float(pr.lipschitz_l2), rho=float(pr.rho),
        D=float(pr.feasible_set.diameter(2.0)), inner_constant=inner_constant).T)


def prox_claim(ns: Sequence[int], *, epsilon: float, members: Sequence[int] = (0, 1, 2),
               inner_constant: float = 0.05) -> RateClaim:
    r"""N1, private proximal method, on a grid where the statistical term :math:`n^{-1/4}` of the rate dominates
    the privacy term :math:`(\sqrt{d\ln(1/\delta)}/(n\varepsilon))^{1/3}` (:func:`rate_terms`).

    The statistical rate comes from the optimization term :math:`2\beta L_0 D/T` of the bound at the theory's
    :math:`T \propto \sqrt n` outer steps; on a finite grid the integer :math:`T(n)` of the run's parameters
    (:func:`outer_steps`, every member) gives the local exponent :math:`-\frac12\,\mathrm{slope}(\log T)`, and the
    privacy term pulls the sum towards :math:`-1/3` (least-squares slope over ``ns`` of the two terms with unit
    constants). The prediction is the range spanned by :math:`-1/4` and these slopes; neighbour :math:`n^{-1/3}`
    (the privacy regime), tolerance half the gap to it.
    """
    xs = [check_int(n, "ns", lo=2) for n in ns]
    if len(set(xs)) < 2:
        raise ValueError(f"ns must hold at least two distinct sizes, got {list(ns)}")
    terms = [rate_terms(n, epsilon=epsilon) for n in xs]
    if any(t["privacy"] >= t["statistical"] for t in terms):
        raise ValueError(f"the privacy term dominates at epsilon = {epsilon!r} on this grid; use a larger epsilon")
    lx = np.log(xs)
    total = [t["statistical"] + t["privacy"] for t in terms]
    slopes = [-0.25, float(np.polyfit(lx, np.log(total), 1)[0])]
    slopes += [-0.5 * float(np.polyfit(lx, np.log([outer_steps(n, member=g, epsilon=epsilon,
                                                                inner_constant=inner_constant) for n in xs]), 1)[0])
               for g in members]
    lo, hi = min(slopes), max(slopes)
    gap = lo + 1.0 / 3.0
    if gap <= 0 or hi >= 0:
        raise ValueError(f"the run's outer steps on this grid leave no n^-1/4 regime (slopes {slopes})")
    return RateClaim("N1 (prox) exponent in n", "worst-case RMS Moreau gradient ~ n^-1/4 (statistical term)",
                     (lo, hi), -1.0 / 3.0, gap / 2.0, _CITE + ", weakly convex theorem")


def rate_terms(n: int, *, epsilon: float) -> dict[str, float]:
    r"""The two terms of the proximal method's rate with unit constants at ``delta = n^-1.1``: ``statistical``
    :math:`n^{-1/4}` and ``privacy`` :math:`(\sqrt{d\ln(1/\delta)}/(n\varepsilon))^{1/3}` (d = :data:`D_DIM`),
    computed from the run's parameters only (which term dominates on a grid)."""
    n = check_int(n, "n", lo=2)
    priv = (np.sqrt(D_DIM * np.log(1.0 / delta_for_n(n))) / (n * float(epsilon))) ** (1.0 / 3.0)
    return {"statistical": float(n ** -0.25), "privacy": float(priv)}


def claim_inputs(records: Sequence[Mapping[str, Any]], key: str,
                 start: Mapping[int, float]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Claim input ``(x, y, family, trivial)``: ``n``, the measure ``key``, the member, and the learns-nothing
    control, the measure at the start point ``x_0`` of the same member (``start``), on every record."""
    n, y, g = (np.array([r[k] for r in records]) for k in ("n", key, "member"))
    return n.astype(float), y.astype(float), g, np.array([float(start[int(m)]) for m in g])
