r"""Experiment tasks, rates, calibration runs and privacy audits of notebook 13 (Spec X1, X2; GGP24 Sec. 1.4).

X1: private linear-query release (synthetic data) by the structured variant of Algorithm 1, against MWEM
[HLM12], on the 3-way marginals of six binarized breast-cancer attributes, over the hard instance family
:data:`~dpsco_lib.problems.applications.QUERY_RELEASE_FAMILY`.  X2: minimizing the maximal group loss by
Algorithm 1, (a) on the planted max-of-linear-losses family of :mod:`dpsco_lib.problems.hard_groups` (worst case
over margins, exact worst-group excess, two-sided exponent in n, a canary audit on a worst-case neighbouring
pair with deliberately broken variants) and (b) on group-robust logistic regression (breast cancer) by
Algorithm 1 on the vertex lift of the l1 ball, against group-blind private ERM and the exact optima.

Every private run uses delta = n^-1.1 (:func:`~dpsco_book.privacy_rule.delta_for_n`).  The X1 audit replays
a run on a neighbouring dataset and computes its privacy-loss variable exactly (the output is a post-processing of
the vertex draws, whose probabilities the replay recomputes); a Clopper-Pearson bound on P(L > eps + margin)
turns the runs into an exact lower confidence bound on the tight delta(eps) of the pair.  The X2 audit counts an
event of the released vertex draws on a worst-case neighbouring pair in both worlds and turns the counts into a
Clopper-Pearson lower bound on epsilon (:func:`~dpsco_lib.privacy.audit.canary_audit`).

References: González, Guzmán & Paquette (2024) [GGP24]; Hardt, Ligett & McSherry (2012) [HLM12];
Balle & Wang (2018) (delta(eps) = E[(1 - e^{eps - L})_+]).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.special import logsumexp

from dpsco_book.privacy_rule import DELTA_POWER, delta_for_n
from dpsco_lib._validation import check_epsilon, check_int, check_positive, check_rng
from dpsco_lib.algorithms.applications import (
    QueryReleaseParams,
    exact_pooled_erm,
    query_release_privacy_loss,
    run_alg1_query_release,
    run_group_blind_erm,
    run_group_robust_alg1,
    structured_query_release,
)
from dpsco_lib.algorithms.mwem import mwem_theory_T, run_mwem
from dpsco_lib.algorithms.private_smd_saddle import (
    alg1_per_draw_budget,
    alg1_theory_params,
    run_private_smd_saddle,
    run_private_smd_saddle_many,
)
from dpsco_lib.experiments.analysis import SlopeFit, fit_loglog_slope, worst_case_curve
from dpsco_lib.experiments.claims import RateClaim
from dpsco_lib.privacy.audit import canary_audit, clopper_pearson, monte_carlo_delta
from dpsco_lib.problems.applications import (
    LinearQueryGame,
    MaxOfLosses,
    group_robust_breast_cancer,
    linear_query_game_from_sklearn,
    query_release_instance,
)
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.hard_groups import PlantedGroupLosses, planted_group_family
from dpsco_lib.problems.lifted import lift_max_of_losses

__all__ = [
    "audit_row",
    "certificate_ratio",
    "broken_query_release_params",
    "rate_exponent",
    "x1_base_game",
    "x1_calibration",
    "x1_claim_outcomes",
    "x1_claims",
    "x1_privacy_loss_samples",
    "x1_rate",
    "x1_task",
    "X2_HARD",
    "x2_hard_claim",
    "x2_hard_claim_outcome",
    "x2_audit",
    "x2_audit_checks",
    "x2_calibration",
    "x2_design",
    "x2_hard_family",
    "x2_hard_fit",
    "x2_hard_long",
    "x2_hard_prediction",
    "x2_hard_table",
    "x2_hard_task",
    "x2_hard_verdict_checks",
    "x2_design_task",
    "x2_problem",
    "x2_reference",
    "x2_sensitivity_audit",
    "x2_task",
    "x1_verdict_checks",
    "x2_verdict_checks",
    "median_ratio_at",
    "plot_x2_hard",
    "worst_instance_values",
]


# ---------------------------------------------------------------------------------------------------------
# X1
# ---------------------------------------------------------------------------------------------------------
@functools.cache
def x1_base_game() -> LinearQueryGame:
    """All 3-way marginals (m = 160) of the first six breast-cancer attributes binarized at their medians (N = 64)."""
    return linear_query_game_from_sklearn("breast_cancer", n_attributes=6, way=3)


def x1_task(*, rng: np.random.Generator, n: int, epsilon: float, instance: str) -> dict[str, Any]:
    r"""One replicate of X1 at (n, epsilon, delta = n^-1.1) on a member of the hard instance family.

    Runs the structured Algorithm 1 (accountant ``"best"``), MWEM with its pure-DP basic composition [HLM12] and
    MWEM calibrated by the tightest accountant to the same (epsilon, delta) (T from :func:`mwem_theory_T`).
    Returns their largest query errors, the error of the uniform distribution (``trivial``: the release that
    looks at no data), the certificates and the neighbouring relations.
    """
    rng = check_rng(rng)
    g = query_release_instance(x1_base_game(), n, instance, rng)
    dl = delta_for_n(n)
    a = run_alg1_query_release(g, epsilon=epsilon, delta=dl, rng=rng)
    counts = np.bincount(g.records, minlength=g.N)
    T_m = mwem_theory_T(n, N=g.N, m=g.n_queries, epsilon=epsilon)
    mb = run_mwem(counts, g.Q, epsilon=epsilon, T=T_m, rng=rng)
    mt = run_mwem(counts, g.Q, epsilon=epsilon, T=T_m, rng=rng, delta=dl, accountant="best")
    return {"err_alg1": a.info["max_query_error"], "err_mwem": mb.info["max_query_error"],
            "err_mwem_best": mt.info["max_query_error"], "trivial": g.max_query_error(np.full(g.N, 1.0 / g.N)),
            "cert_alg1": a.certified_epsilon(dl), "cert_mwem_best": mt.certified_epsilon(dl),
            "cert_mwem_basic": mb.certified_epsilon(0.0, accountant="basic"), "T_alg1": a.params["T"],
            "T_mwem": T_m, "same_relation": a.relation == mt.relation == mb.relation}


def x1_rate(n: Any, epsilon: Any) -> np.ndarray:
    r"""The rate of GGP24 Thm 1.1 for the X1 workload with constant 1 and delta = n^-1.1:
    (log^{3/2}(N m) sqrt(log(1/delta))/(n eps))^{1/2}, N = 64, m = 160."""
    n, eps = np.asarray(n, dtype=float), np.asarray(epsilon, dtype=float)
    g = x1_base_game()
    lnm = math.log(g.N * g.n_queries)
    return np.sqrt(lnm**1.5 * np.sqrt(DELTA_POWER * np.log(n)) / (n * eps))


def rate_exponent(x: Any, rate: Any) -> float:
    """Least-squares slope of log ``rate`` on log ``x``: the exponent a theorem's rate has on this grid (it
    differs from the leading power when the rate carries a slowly varying factor such as log(1/delta(n)))."""
    lx, ly = np.log(np.asarray(x, dtype=float)), np.log(np.asarray(rate, dtype=float))
    if lx.size < 2 or lx.shape != ly.shape or not (np.all(np.isfinite(lx)) and np.all(np.isfinite(ly))):
        raise ValueError("x and rate must be positive arrays of equal length >= 2")
    return float(np.polyfit(lx, ly, 1)[0])


def x1_calibration(n: int, epsilon: float, rng: np.random.Generator) -> tuple[dict[str, Any], dict[str, Any]]:
    """Runs for the calibration tables on the breast-cancer instance: Algorithm 1 under the rule of GGP24
    Cor 3.6 (``"paper"``) and under ``"best"``; MWEM under HLM12's basic composition and under ``"best"``."""
    rng = check_rng(rng)
    g = query_release_instance(x1_base_game(), n, "breast-cancer", rng)
    dl = delta_for_n(n)
    alg1 = {lab: run_alg1_query_release(g, epsilon=epsilon, delta=dl, rng=rng, accountant=acc)
            for lab, acc in (("paper rule", "paper"), ("tightest", "best"))}
    counts, T_m = np.bincount(g.records, minlength=g.N), mwem_theory_T(n, N=g.N, m=g.n_queries, epsilon=epsilon)
    mwem = {"HLM12 rule (basic, pure DP)": run_mwem(counts, g.Q, epsilon=epsilon, T=T_m, rng=rng),
            "tightest": run_mwem(counts, g.Q, epsilon=epsilon, T=T_m, rng=rng, delta=dl, accountant="best")}
    return alg1, mwem


def broken_query_release_params(n: int, *, N: int, m: int, epsilon: float, delta: float,
                                K: int = 1) -> QueryReleaseParams:
    r"""DELIBERATELY WRONG parameters of the structured X1 variant, for the audits: the per-draw budget is that
    of the K draws of one round instead of the K T draws of the run ("counts the draws once").

    T is re-balanced with that budget exactly as :func:`query_release_params` does, so the step size is as large
    as the wrong ledger allows; ``n_draws`` = K is what its ledger would record (and certify within epsilon).
    """
    n, K = check_int(n, "n", lo=2), check_int(K, "K", lo=1)
    eps0 = alg1_per_draw_budget(epsilon, delta=delta, n_draws=K)
    log_d = math.log(N) + math.log(2 * m)
    T = n if eps0 / 2 >= math.sqrt(log_d / n) else _last_true(n, eps0, log_d)
    B = n // T
    eta = min(eps0 * B / 2, math.sqrt(log_d / T))
    return QueryReleaseParams(K=K, T=T, B=B, eta=eta, eta_cap=eps0 * B / 2, eps0=eps0, eps_draw=2 * eta / B,
                              n_draws=K, log_d=log_d, bound=log_d / (eta * T) + eta)


def _last_true(n: int, eps0: float, log_d: float) -> int:
    lo, hi = 1, n  # largest T with eps0 floor(n/T)/2 >= sqrt(log_d/T) (a bisection, as in query_release_params)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if eps0 * (n // mid) / 2 >= math.sqrt(log_d / mid) else (lo, mid)
    return lo


def x1_audit_pair(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The neighbouring pair of the X1 audit: n records at universe element 0 (all attributes 0), and the same
    with the first record (batch 1, so every later draw sees the change) moved to element 1 (attribute 1 set):
    the change moves half of the queries that the y-player concentrates on and leaves the other half."""
    a = np.zeros(check_int(n, "n", lo=2), dtype=np.int64)
    b = a.copy()
    b[0] = 1
    return a, b


def x1_privacy_loss_samples(prm: QueryReleaseParams, *, n: int, runs: int, rng: np.random.Generator) -> np.ndarray:
    """``runs`` draws of the exact privacy-loss variable of the structured X1 variant with parameters ``prm`` on
    :func:`x1_audit_pair` (records in the fixed order: the privacy proof holds for every order)."""
    rng = check_rng(rng)
    a, b = x1_audit_pair(n)
    g = LinearQueryGame(x1_base_game().Q, a)
    out = np.empty(check_int(runs, "runs", lo=1))
    for i in range(runs):
        _, draws = structured_query_release(g, a, prm, rng)
        out[i] = query_release_privacy_loss(g, a, b, prm, draws)
    return out


def audit_row(variant: str, losses: np.ndarray, *, epsilon: float, delta: float, certified: float,
              alpha: float = 1e-3, margin: float = 1.0) -> dict[str, Any]:
    r"""One row of an audit table: an exact lower confidence bound on delta(epsilon) from privacy-loss samples.

    Since (1 - e^{eps - L})_+ >= (1 - e^{-margin}) 1{L > eps + margin}, the one-sided Clopper-Pearson lower
    bound p_lo on P(L > eps + margin) gives delta(eps) >= (1 - e^{-margin}) p_lo with probability >= 1 - alpha/2
    for every true law: a correct mechanism (delta(eps) <= delta) is flagged with probability <= alpha/2.
    """
    eps, margin = check_epsilon(epsilon), check_positive(margin, "margin")
    k = int(np.sum(losses > eps + margin))
    lo = (1 - math.exp(-margin)) * clopper_pearson(k, int(losses.size), alpha)[0]
    mc = monte_carlo_delta(losses, eps)
    return {"variant": variant, "ledger certifies eps": certified, "target delta": delta,
            "median loss L": float(np.median(losses)), "MC delta(eps)": mc.delta,
            "lower bound delta(eps)": lo, "violation detected": bool(lo > delta)}


# ---------------------------------------------------------------------------------------------------------
# X2
# ---------------------------------------------------------------------------------------------------------
@functools.cache
def x2_problem() -> MaxOfLosses:
    """The group-robust breast-cancer problem (:func:`~dpsco_lib.problems.applications.group_robust_breast_cancer`)."""
    return group_robust_breast_cancer(2.0)


@functools.cache
def x2_reference() -> dict[str, float]:
    """Exact references (cvxpy + Clarabel): the group-robust optimum, the pooled ERM's worst-group loss, and the
    worst-group excess of x = 0 (every group loss log 2), the trivial error."""
    P = x2_problem()
    opt = float(P.saddle_point()[2])
    _, gl_pool = exact_pooled_erm(P)
    return {"opt": opt, "pooled_worst": float(gl_pool.max()), "trivial_excess": math.log(2) - opt,
            "pooled_excess": float(gl_pool.max()) - opt}


@functools.cache
def x2_design(n: int, epsilon: float) -> tuple[int, int, float]:
    """(K, T, bound) of Algorithm 1 on the lifted X2 problem at (n, epsilon, n^-1.1) (:func:`alg1_theory_params`,
    regime "second_order"): computed once per grid point and passed to the tasks."""
    L = lift_max_of_losses(x2_problem())
    p = alg1_theory_params(n, d=(L.dx, L.dy), epsilon=epsilon, delta=delta_for_n(n), L0=L.L0, L1=L.L1, L2=L.L2,
                           regime="second_order")
    return p.K, p.T, p.bound


def x2_design_task(*, rng: np.random.Generator, n: int, epsilon: float) -> dict[str, Any]:
    """:func:`x2_design` as a sweep task (``rng`` unused), so the grid points' designs run in parallel and cached."""
    K, T, bound = x2_design(n, epsilon)
    return {"K": K, "T": T, "bound": bound}


def x2_task(*, rng: np.random.Generator, n: int, epsilon: float, K: int, T: int, blind: bool = False) -> dict:
    """One X2 replicate: worst-group excess of the DP group-robust Algorithm 1 (and of DP group-blind Poly-SFW)."""
    P, ref = x2_problem(), x2_reference()
    data = P.sample(n, check_rng(rng))
    dl = delta_for_n(n)
    r = run_group_robust_alg1(P, data, epsilon=epsilon, delta=dl, rng=rng, K=K, T=T)
    out = {"excess_robust": r.info["worst_group_loss"] - ref["opt"], "bound": r.params["bound"],
           "cert_robust": r.certified_epsilon(dl)}
    if blind:
        b = run_group_blind_erm(P, data, epsilon=epsilon, delta=dl, rng=rng)
        out.update(excess_blind=b.info["worst_group_loss"] - ref["opt"], cert_blind=b.certified_epsilon(dl))
    return out


def x2_calibration(n: int, epsilon: float, rng: np.random.Generator) -> dict[str, Any]:
    """Algorithm 1 on X2 under the rule of GGP24 Cor 3.6 (``"paper"``) and under ``"best"``."""
    P = x2_problem()
    data = P.sample(n, check_rng(rng))
    return {lab: run_group_robust_alg1(P, data, epsilon=epsilon, delta=delta_for_n(n), rng=rng, accountant=acc)
            for lab, acc in (("paper rule", "paper"), ("tightest", "best"))}


def x2_sensitivity_audit(*, n: int, epsilon: float, rng: np.random.Generator,
                         constant_factor: float = 1.0) -> dict[str, Any]:
    r"""Exact recomputation of the sensitivity behind the ledger of Algorithm 1 on X2 (Spec X2, Prop 3.3).

    The ledger of a run records 2 K T exponential-mechanism draws at eps_draw = 4 eta L0/B, i.e. it prices every
    draw with the Lipschitz constant L0_ledger = eps_draw B/(4 eta).  The draw is eps_draw-DP only if no record
    has a gradient of l_inf norm above L0_ledger at the points where the gradients are taken.  The audit replays
    the run (``trace=True``: the released vertex draws fix those points) and recomputes the largest per-record
    gradient norm over every batch, max_t max_{z in S_t} max(||grad_x f(x~_t, y~_t; z)||_inf,
    ||grad_y f(x~_t, y~_t; z)||_inf), with the true lifted problem.  A violation is certain evidence that the
    ledger under-prices the draws actually made; for correct code it never fires (false-alarm probability 0:
    the lifted constants bound every gradient).

    ``constant_factor`` < 1 builds the DELIBERATELY WRONG variant whose lifted constants (L0, L1, L2) are scaled
    by it, e.g. 1/3 = pi_min, "forgetting the importance weights 1/pi_g".
    """
    P = x2_problem()
    true = lift_max_of_losses(P)
    used = lift_max_of_losses(P)
    f = check_positive(constant_factor, "constant_factor")
    used.L0, used.L1, used.L2 = true.L0 * f, true.L1 * f, true.L2 * f
    rng = check_rng(rng)
    data = P.sample(check_int(n, "n", lo=2), rng)
    dl = delta_for_n(n)
    r = run_private_smd_saddle(used, data, epsilon=epsilon, delta=dl, rng=rng, regime="second_order", trace=True)
    K, T, B = r.params["K"], r.params["T"], r.params["B"]
    worst = 0.0
    for t in range(T - 1):  # the last step's gradients are never taken
        xt = np.bincount(r.trace["draws_x"][t], minlength=true.dx) / K
        yt = np.bincount(r.trace["draws_y"][t], minlength=true.dy) / K
        batch = data[t * B:(t + 1) * B]
        worst = max(worst, float(np.abs(true.grad_x(xt, yt, batch)).max()),
                    float(np.abs(true.grad_y(xt, yt, batch)).max()))
    ledger_L0 = r.ledger.events[0].epsilon * B / (4.0 * r.params["eta"])
    return {"variant": f"constants x {f:.3g}", "ledger certifies eps": r.certified_epsilon(dl),
            "L0 the ledger prices": ledger_L0, "largest gradient recomputed": worst,
            "violation detected": bool(worst > ledger_L0 * (1 + 1e-9))}


# ---------------------------------------------------------------------------------------------------------
# X2 on the planted max-of-linear-losses family
# ---------------------------------------------------------------------------------------------------------
X2_HARD: dict[str, Any] = {"d": 10, "m": 3, "margins": (0.125, 0.25, 0.5), "decoy": 1.5, "scale": 1.0, "noise": 0.5}
"""The X2 hard family: d = 10 vertices, m = 3 groups of equal share, decoy kappa = 3/2, c = 1, s = 1/2
(A = 3/2, L0 = L1 = A/pi_min = 9/2, L2 = 0 for every member) and margins Delta in {1/8, 1/4, 1/2}."""
X2_ASYMPTOTIC = -0.5  # Thm 3.1 (7): the quadratic (here bilinear) regime, exponent 1/2 of rho


@functools.cache
def x2_hard_family() -> dict[float, PlantedGroupLosses]:
    """The members of :data:`X2_HARD` (:func:`~dpsco_lib.problems.hard_groups.planted_group_family`)."""
    h = X2_HARD
    return planted_group_family(h["d"], h["m"], h["margins"], decoy=h["decoy"], scale=h["scale"], noise=h["noise"])


def x2_hard_task(*, rng: np.random.Generator, n: int, epsilon: float, runs: int) -> dict[str, Any]:
    r"""One replicate of Algorithm 1 on every member of the X2 hard family at (n, epsilon, delta = n^-1.1).

    Per member ``i`` (margin ``X2_HARD["margins"][i]``): fresh records, ``runs`` independent runs on them
    (vectorized, regime "quadratic": K = 1, the parameters of Thm 3.1 (7)); ``excess_<i>`` is the mean exact
    worst-group excess ``Delta (1 - x_1)`` of the outputs (an estimate of its expectation given the data),
    ``excess_max_<i>`` the largest, ``trivial_<i>`` that of the uniform point and ``pooled_<i>`` that of the exact
    group-blind minimizer.  Also the design (K, T, eta, and the bound of Thm 3.1 at it with its mirror-descent
    term ``smd_term`` and statistical term ``stat_term``: the same for every member, whose constants agree) and
    the certified epsilon (tightest accountant) of the runs.
    """
    rng = check_rng(rng)
    n, runs = check_int(n, "n", lo=2), check_int(runs, "runs", lo=1)
    dl = delta_for_n(n)
    out: dict[str, Any] = {}
    for i, P in enumerate(x2_hard_family().values()):
        res = run_private_smd_saddle_many(P, P.sample(n, rng), n_runs=runs, epsilon=epsilon, delta=dl, rng=rng,
                                          regime="quadratic")
        ex = np.array([P.worst_group_excess(x) for x in res["x"]])
        out.update({f"excess_{i}": float(ex.mean()), f"excess_max_{i}": float(ex.max()),
                    f"trivial_{i}": P.trivial_excess(), f"pooled_{i}": P.worst_group_excess(P.pooled_point())})
    prm = res["params"]
    out.update({k: prm[k] for k in ("K", "T", "eta", "bound", "smd_term", "stat_term")})
    out["certified"] = float(res["ledger"].epsilon(dl))
    return out


def x2_hard_long(records: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Arrays ``n``, ``y`` (the replicate's mean worst-group excess), ``trivial`` and ``label`` (the margin), one
    entry per (record, member): the input of ``fit_loglog_slope(n, y, worst_over=label)``."""
    if not records:
        raise ValueError("records must hold at least one record of x2_hard_task")
    cols: dict[str, list] = {"n": [], "y": [], "trivial": [], "label": []}
    for r in records:
        for i, margin in enumerate(X2_HARD["margins"]):
            cols["n"].append(float(r["n"]))
            cols["y"].append(float(r[f"excess_{i}"]))
            cols["trivial"].append(float(r[f"trivial_{i}"]))
            cols["label"].append(float(margin))
    return {k: np.asarray(v) for k, v in cols.items()}


def x2_hard_fit(long: dict[str, np.ndarray], *, rng: np.random.Generator, n_boot: int,
                level: float = 0.99) -> SlopeFit:
    """Exponent in n of the worst case over the family (of the per-member median), with the bootstrap interval
    over replicates (the worst case re-taken in every resample)."""
    return fit_loglog_slope(long["n"], long["y"], rng=rng, statistic="median", n_boot=n_boot, level=level,
                            worst_over=long["label"])


def x2_hard_prediction(records: list[dict[str, Any]]) -> dict[str, float]:
    r"""The exponent in n that Thm 3.1 predicts for the X2 family over the grid of ``records``.

    The bound at the design's parameters (one value per n, a deterministic function of the design) is the sum
    of the privacy-capped mirror-descent term ``l/(eta T) + eta L0^2`` and the statistical term
    ``L0 sqrt(l/n)`` (no vertex-sampling bias: K = 1, L2 = 0).  The statistical term has exponent exactly -1/2,
    the asymptotic exponent of the quadratic regime; the mirror-descent term carries sqrt(log(1/delta(n)))
    and the integer rounding of K, T, B, so its local slope (least squares of log term on log n over the grid)
    is slightly above -1/2.  Over the grid the local slope of the sum lies between those of its terms, so the
    prediction is the range ``[lo, hi]`` spanned by -1/2, the local slope of the mirror-descent term and that of
    the whole bound.  No measurement enters.
    """
    pts = {float(r["n"]): (float(r["bound"]), float(r["smd_term"])) for r in records}
    if len(pts) < 2:
        raise ValueError("records must cover at least two values of n")
    ns = sorted(pts)
    local_bound = rate_exponent(ns, [pts[v][0] for v in ns])
    local_smd = rate_exponent(ns, [pts[v][1] for v in ns])
    vals = (X2_ASYMPTOTIC, local_bound, local_smd)
    return {"asymptotic": X2_ASYMPTOTIC, "local_bound": local_bound, "local_smd": local_smd, "lo": min(vals),
            "hi": max(vals)}


def x2_hard_table(records: list[dict[str, Any]], long: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    r"""Per n: the design (K, T, eta T), the bound of Thm 3.1 at it, the worst member (largest median excess) and
    its median excess, the ratio of that worst case to the worst case of the trivial output over the family
    (``/ trivial``: ``max_Delta median excess / max_Delta Delta (1 - 1/d)``, the uniform point's), the exact
    group-blind excess on the worst member, and the largest excess/bound over every run."""
    rows = []
    k = len(X2_HARD["margins"])
    for c in worst_case_curve(long["n"], long["y"], long["label"], statistic="median"):
        at = [r for r in records if float(r["n"]) == c["x"]]
        r0, i = at[0], list(X2_HARD["margins"]).index(c["argmax"])
        trivial = max(r0[f"trivial_{j}"] for j in range(k))
        worst = max(r[f"excess_max_{j}"] for r in at for j in range(k))
        rows.append({"n": int(c["x"]), "K": r0["K"], "T": r0["T"], "eta T": r0["eta"] * r0["T"],
                     "bound": r0["bound"], "worst margin": c["argmax"], "worst median excess": c["worst"],
                     "/ trivial": c["worst"] / trivial, "group-blind (exact)": r0[f"pooled_{i}"],
                     "max excess / bound": worst / r0["bound"]})
    return rows


def plot_x2_hard(ax: Any, records: list[dict[str, Any]], long: dict[str, np.ndarray], fit: SlopeFit) -> None:
    """The X2 rate figure: every member's median excess (dotted), the worst member's replicates with the fit and
    the rate guide (``plot_rate``), the worst trivial excess over the family (the uniform point on the largest
    margin), and the bound of Thm 3.1 at the design (dashed)."""
    from dpsco_lib.plotting import plot_rate

    for mg in X2_HARD["margins"]:
        at = long["label"] == mg
        xs = np.unique(long["n"][at])
        ax.plot(xs, [np.median(long["y"][at & (long["n"] == v)]) for v in xs], ":", marker=".", lw=1, alpha=0.7,
                label=rf"member $\Delta = {mg:g}$ (median)")
    curve = worst_case_curve(long["n"], long["y"], long["label"], statistic="median")
    xs = [c["x"] for c in curve]
    cells = [(long["n"] == c["x"]) & (long["label"] == c["argmax"]) for c in curve]
    plot_rate(ax, xs, [long["y"][c] for c in cells], label="worst member", fit=fit,
              guide=(X2_ASYMPTOTIC, "rate $n^{-1/2}$"), trivial=float(long["trivial"].max()))
    bound = {float(r["n"]): float(r["bound"]) for r in records}
    ax.plot(xs, [bound[x] for x in xs], "k--", lw=1, label="bound of Thm 3.1 at the design")
    ax.set_xlabel("$n$")
    ax.set_ylabel("worst-group excess (exact, median)")
    ax.legend(fontsize=7)


def _x2_audit_pair() -> tuple[PlantedGroupLosses, Dataset, Dataset, int, np.ndarray]:
    """The worst-case pair of the X2 audit on the largest-margin member: two records (T = 2, B = 1); the first
    (the canary, in batch 1) is ``(A u, g)`` against ``(-A u, g)`` with ``u = (+1, -1, ..., -1)``, ``A`` the
    declared entry bound and ``g`` the smallest group (the largest importance weight 1/pi_g)."""
    P = x2_hard_family()[max(X2_HARD["margins"])]
    u = -np.ones(P.dx)
    u[0] = 1.0
    g = int(np.argmin(P.pi))
    S = Dataset(np.vstack([P.A_bound * u, np.zeros(P.dx)]), None, {"group": np.array([g, g])})
    return P, S, S.replace_one(0, (-P.A_bound * u, None, {"group": g})), g, u


def x2_audit(*, runs: int, alpha: float, rng: np.random.Generator, claim: float = 2.0) -> list[dict[str, Any]]:
    r"""Canary audit of Algorithm 1 on the max-of-losses problem (Spec X2, Prop 3.3), correct and broken.

    Whole runs (T = 2, K = 1, B = 1) on :func:`_x2_audit_pair`, step size ``eta`` such that Prop 3.3's per-draw
    claim ``4 eta L0/B`` (L0 = A/pi_min) is ``claim``.  Given the data-independent step-1 group draw
    ``y~_1 = e_g``, the step-2 vertex draw is the exponential mechanism with scores ``-/+ eta A u/pi_g``: the
    canary's importance weight 1/pi_g enters in full, and the score of ``e_1`` moves against all the others (the
    factor 2 of the exponential mechanism).  The event "``y~_1 = e_g`` and ``x~_2 = e_1``" (a function of the
    released draws, fixed in advance) is counted over ``runs`` runs per world and turned into a Clopper-Pearson
    lower bound on epsilon (:func:`~dpsco_lib.privacy.audit.canary_audit`, false-alarm probability ``alpha``).

    Variants (the sampler's step against the same claim): ``correct``; ``half the exponential-mechanism
    factor`` (a ledger pricing a draw at 2 eta L0/B lets the step double); ``forgets the importance weights``
    (a ledger pricing L0 = A instead of A/pi_min lets the step grow by 1/pi_min).  ``exact loss``: the largest
    log-ratio of the step-2 draw's probabilities, in closed form.
    """
    P, S, S2, g, u = _x2_audit_pair()
    eta = claim / (4.0 * P.L0)  # B = 1
    variants = (("correct", 1.0), ("broken: half the exponential-mechanism factor", 2.0),
                ("broken: forgets the importance weights 1/pi_g", 1.0 / float(P.pi.min())))
    rows = []
    for name, mult in variants:
        kw = {"epsilon": 1.0, "delta": 1e-6, "regime": "quadratic", "K": 1, "T": 2, "step_size": mult * eta,
              "enforce_privacy_cap": False}

        def run_many(data: Dataset, r: np.random.Generator, k: int, kw: dict = kw) -> dict[str, Any]:
            return run_private_smd_saddle_many(P, data, n_runs=k, rng=r, **kw)

        def event(res: dict[str, Any]) -> np.ndarray:
            return ((res["draws_y"][:, 0, 0] == g) & (res["draws_x"][:, 1, 0] == 0)).astype(float)

        res = canary_audit(None, S, S2, event, runs, alpha, rng, threshold=0.5, claimed_epsilon=claim,
                           delta=0.0, run_many=run_many, statistic_vectorized=True)
        s = -mult * eta * P.A_bound * u / P.pi[g]
        exact = float(np.max(np.abs((s - logsumexp(s)) - (-s - logsumexp(-s)))))
        rows.append({"variant": name, "claimed eps (per draw)": claim, "exact loss": exact,
                     "audited lower bound": res.epsilon_lower_bound, "caught": bool(res.violation)})
    return rows


def x2_audit_checks(v: Any, audit: list[dict[str, Any]]) -> None:
    """The audit rows of the X2 verdict: the exact loss of the correct draw is at most the claim, the audit of the
    correct algorithm shows no violation, and both broken variants are caught."""
    if len(audit) != 3:
        raise ValueError(f"audit must hold [correct, half factor, forgets weights] rows, got {len(audit)}")
    ok = audit[0]
    v.check_at_most("X2 exact loss of the audited draw", ok["exact loss"], ok["claimed eps (per draw)"], what="claim")
    for row, want in zip(audit, (False, True, True), strict=True):
        lab = "no violation" if not want else "caught"
        v.check(f"X2 audit, {row['variant']}: {lab}", row["caught"] == want, f"lb {row['audited lower bound']:.3f}",
                predicted=("<= " if not want else "> ") + f"{row['claimed eps (per draw)']:.3f}")


def x2_hard_verdict_checks(v: Any, records: list[dict[str, Any]], long: dict[str, np.ndarray],
                           outcome: Any | None) -> None:
    """The X2 rows on the hard family (Spec X2, Thm 3.1 (7)): learning at the largest n (the worst case over the
    family of the median excess is at most half the worst case of the trivial output, max_Delta Delta (1 - 1/d):
    minimax risk against minimax risk; a member whose margin is below the resolution at that n cannot be learnt
    by any private algorithm, so a per-member ratio is not the learning criterion), every run's excess <= the
    bound of Thm 3.1 at the run's parameters, and the claim of :func:`x2_hard_claim` (``outcome``: the exponent in n
    of the worst case, with its controls)."""
    rows = x2_hard_table(records, long)
    top = rows[-1]
    v.check_at_most(f"X2 family learns: worst case at n = {top['n']}", top["/ trivial"], 0.5,
                    what="0.5 x worst trivial excess over the family")
    v.check_at_most("X2 family: every run's excess / bound of Thm 3.1", max(r["max excess / bound"] for r in rows),
                    1.0, what="bound at the run's parameters")
    if outcome is not None:  # the rate claim needs the paper grid (see notebook 13's verdict)
        v.claim(outcome)


X1_NEIGHBOUR = -0.4
"""The exponent of the neighbouring (second-order smooth) regime of Thm 3.1, in ``n`` and in ``eps``."""


def x1_claims(n_grid: Sequence[float]) -> dict[str, RateClaim]:
    r"""The X1 claims of notebook 13, frozen before the run (GGP24 Thm 1.1).

    ``"n"``: the worst-instance median max-query error of Algorithm 1 at eps = 1 decays in ``n`` with the exponent
    of the rate :func:`x1_rate` over ``n_grid`` (about -1/2, with the slowly growing
    :math:`\sqrt{\log(1/\delta)}`, :math:`\delta = n^{-1.1}`); ``"eps"``: at fixed ``n`` and eps <= 2 it decays like
    :math:`\varepsilon^{-1/2}`. In ``n`` the neighbouring regime is the second-order smooth one, exponent -2/5,
    and the tolerance is at most half the gap to it. In ``eps`` the bound's eps-free statistical term
    :math:`\sqrt{\log(Nm)/n}` is of the same order as the private term over eps <= 2 at any ``n`` (their ratio does
    not depend on ``n``), which flattens the local slope to about -0.44: that claim cannot separate -1/2 from -2/5
    and is made against MWEM's :math:`\varepsilon^{-1/3}` (tolerance 1/12). The learns-nothing control is the
    uniform release."""
    pred_n = rate_exponent(n_grid, x1_rate(n_grid, 1.0))
    tol_n = min(0.05, abs(pred_n - X1_NEIGHBOUR) / 2)
    cite = "Gonzalez, Guzman and Paquette 2024, Thm 1.1"
    return {
        "n": RateClaim("X1 exponent in n", "Algorithm 1 query release, eps = 1: worst-instance median max query "
                       "error ~ the rate of Thm 1.1", pred_n, X1_NEIGHBOUR, tol_n, cite, statistic="median",
                       level=0.99),
        "eps": RateClaim("X1 exponent in eps", "Algorithm 1 query release, eps <= 2 at fixed n: worst-instance "
                         "median max query error ~ eps^-1/2 (against MWEM's eps^-1/3)", -0.5, -1.0 / 3.0, 0.08,
                         cite, statistic="median", level=0.99),
    }


def x1_claim_outcomes(claims: dict[str, RateClaim], rec_n: list[dict], rec_e: list[dict], *,
                      rng: np.random.Generator, required: float, n_boot: int) -> dict[str, Any]:
    """Evaluate :func:`x1_claims` on the sweeps (eps <= 2 for the eps claim), with the uniform release's error on
    the same records as the learns-nothing control."""
    out = {}
    for key, recs, x in (("n", rec_n, "n"), ("eps", [r for r in rec_e if r["epsilon"] <= 2], "epsilon")):
        out[key] = claims[key].evaluate([r[x] for r in recs], [r["err_alg1"] for r in recs],
                                        family=[r["instance"] for r in recs], trivial=[r["trivial"] for r in recs],
                                        rng=rng, required=required, n_boot=n_boot)
    return out


def x2_hard_claim(pred: dict[str, float]) -> RateClaim:
    """The X2 hard-family claim (Thm 3.1 (7), quadratic regime): the worst case over the family of the mean
    excess (an expected excess; each replicate is already the mean of its runs) decays with an exponent in
    ``[pred["lo"], pred["hi"]]`` (:func:`x2_hard_prediction`, from the design alone); neighbour the second-order
    regime's -2/5, tolerance 0.04 or half the gap, whichever is smaller."""
    gap = X1_NEIGHBOUR - pred["hi"]
    return RateClaim("X2 family exponent in n", "Algorithm 1 on the planted max-of-losses family, eps = 1: "
                     "worst-case mean worst-group excess ~ Thm 3.1's bound", (pred["lo"], pred["hi"]),
                     X1_NEIGHBOUR, min(0.04, gap / 2), "Gonzalez, Guzman and Paquette 2024, Thm 3.1",
                     statistic="mean", level=0.99)


def x2_hard_claim_outcome(claim: RateClaim, long: dict[str, np.ndarray], *, rng: np.random.Generator,
                          required: float, n_boot: int) -> Any:
    """Evaluate :func:`x2_hard_claim` on :func:`x2_hard_long`'s arrays, the uniform point as the control."""
    return claim.evaluate(long["n"], long["y"], family=long["label"], trivial=long["trivial"], rng=rng,
                          required=required, n_boot=n_boot)


def worst_instance_values(records: list[dict[str, Any]], key: str, value: str) -> tuple[np.ndarray, list, list]:
    """Per distinct ``key``: the replicate values of ``value`` on the instance with the largest median (the worst
    case over the family, as in :func:`~dpsco_lib.experiments.analysis.worst_case_curve`) and that instance's
    label.  Records carry the instance label in ``"instance"``."""
    xs = np.array(sorted({r[key] for r in records}), dtype=float)
    vals, labels = [], []
    for xv in xs:
        sub = [r for r in records if r[key] == xv]
        by = {}
        for r in sub:
            by.setdefault(r["instance"], []).append(float(r[value]))
        worst = max(by, key=lambda lab: float(np.median(by[lab])))
        vals.append(np.array(by[worst]))
        labels.append(worst)
    return xs, vals, labels


def median_ratio_at(records: list[dict[str, Any]], key: str, at: float, value: str, trivial: str) -> float:
    """max over instances of median(value)/median(trivial) at ``key == at`` (the family's worst learning ratio)."""
    sub = [r for r in records if r[key] == at]
    if not sub:
        raise ValueError(f"no record with {key} = {at!r}")
    out = 0.0
    for lab in {r.get("instance", "") for r in sub}:
        s = [r for r in sub if r.get("instance", "") == lab]
        out = max(out, float(np.median([r[value] for r in s]) / np.median([r[trivial] for r in s])))
    return out


def x1_verdict_checks(v: Any, rec_n: list[dict], outcomes: dict[str, Any]) -> None:
    """The X1 rows of notebook 13's verdict (Spec X1): learning at the largest n (<= 0.5 x trivial on every
    instance), the claims of :func:`x1_claims` (``outcomes`` of :func:`x1_claim_outcomes`), Algorithm 1 below MWEM
    at the same (eps, delta) and relation, and MWEM's basic composition spending exactly eps."""
    nmax = max(r["n"] for r in rec_n)
    v.check_at_most("X1 learns: max over family of median error / trivial at largest n, eps = 1",
                    median_ratio_at(rec_n, "n", nmax, "err_alg1", "trivial"), 0.5, what="0.5 x trivial")
    for outcome in outcomes.values():
        v.claim(outcome)
    alg = worst_instance_values(rec_n, "n", "err_alg1")[1][-1]
    mw = worst_instance_values(rec_n, "n", "err_mwem_best")[1][-1]
    v.check("X1 Alg 1 < MWEM at the same (eps, delta), largest n", np.median(alg) < np.median(mw)
            and all(r["same_relation"] for r in rec_n), f"{np.median(alg):.4f} vs {np.median(mw):.4f}",
            predicted="Alg 1 smaller (rate -1/2 vs -1/3), both replace-one")
    v.check("MWEM basic spends exactly eps", all(abs(r["cert_mwem_basic"] - r["epsilon"]) < 1e-9 for r in rec_n),
            "basic certificate = eps in every run", predicted="= eps (HLM12)")


def x2_verdict_checks(v: Any, rec2: list[dict], ref: dict[str, float]) -> None:
    """The X2 rows of notebook 13's verdict (Spec X2): at the largest n the median worst-group excess is at most
    half the trivial error (x = 0) and below the exact pooled ERM's; the excess is below the bound of Thm 3.1 at
    the run's parameters in every run."""
    nmax = max(r["n"] for r in rec2)
    top = float(np.median([r["excess_robust"] for r in rec2 if r["n"] == nmax]))
    v.check_at_most("X2 learns: median worst-group excess at largest n, eps = 1", top, 0.5 * ref["trivial_excess"],
                    what="0.5 x trivial (x = 0)")
    v.check_at_most("X2 below the exact pooled ERM's worst-group excess", top, ref["pooled_excess"],
                    what="group-blind limit")
    v.check("X2 excess <= bound of Thm 3.1 at every n", all(r["excess_robust"] <= r["bound"] for r in rec2),
            f"max excess/bound {max(r['excess_robust'] / r['bound'] for r in rec2):.3f}", predicted="<= 1")


def certificate_ratio(rec_n: list[dict], rec_e: list[dict], rec2: list[dict], rec_hard: list[dict] = ()) -> float:
    """Largest certified eps / target over every private run of notebook 13 (tightest accountant, n^-1.1):
    X1 (``rec_n``, ``rec_e``), X2 on breast cancer (``rec2``) and on the hard family (``rec_hard``)."""
    r1 = [r[k] / r["epsilon"] for r in rec_n + rec_e for k in ("cert_alg1", "cert_mwem_best")]
    return max(r1 + [r["cert_robust"] / r["epsilon"] for r in rec2] + [r["certified"] / r["epsilon"] for r in rec_hard])
