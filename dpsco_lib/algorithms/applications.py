r"""Runners for the two applications of [GGP24] Section 1.4 built on Algorithm 1 (Spec X1, X2).

X1: DP synthetic data for linear queries
----------------------------------------
:class:`~dpsco_lib.problems.applications.LinearQueryGame` is the bilinear game
min_{p in Delta_N} max_{y in Delta_{2m}} (p - h)^T B y, B = [Q^T, -Q^T], whose value at p is the largest query
error max_j |<q_j, p> - <q_j, h>|.  Two private solvers:

* ``variant="generic"``: Algorithm 1 as is (:func:`~dpsco_lib.algorithms.private_smd_saddle.run_private_smd_saddle`,
  regime "quadratic", K = 1), on the records as one-hot rows in a random order.
* ``variant="structured"`` (default), the structure-exploiting variant used here ("a variant of Algorithm 1",
  GGP24 Thm 1.1; the paper's exact variant is not restated in the extracted text, so this one is derived):
  the p-gradient B y does not depend on the data, so the p-iterates are a deterministic function of the
  released y-draws (post-processing) and need neither vertex sampling nor a privacy charge.  Only the K
  y-draws per step are mechanisms: the score of column c after t steps is
  u_c = eta sum_{s<=t} (B^T (p_s - h_{S_s}))_c; replacing one record of batch S_s moves u_c by
  eta (q_j(k') - q_j(k))/B in [-eta/B, eta/B] (queries in [0, 1]), so Delta = eta/B and each draw is
  2 eta/B-DP (the exponential mechanism with its factor 2; half of the generic 4 eta L0/B, L0 = 1).
  The K T draws compose; the per-draw budget eps0 comes from the one calibration path
  (:func:`~dpsco_lib.privacy.accounting.budget.per_step_epsilon`, K T exponential-mechanism events, accountant
  ``accountant=``, default ``"best"``, the tightest valid accountant; ``"paper"`` is the rule of GGP24 Cor 3.6),
  so the privacy cap is eta <= eps0 B/2.
  T is where that cap meets the unconstrained SMD step sqrt(l/T) (l = log N + log 2m),
  exactly as in :func:`~dpsco_lib.algorithms.private_smd_saddle.alg1_theory_params`.  Output: the average of
  the p-iterates, a distribution over the universe (optionally ``synthetic_size`` records drawn from it).
  SMD on the game gives E max-error <= l/(eta T) + eta + (batch noise), and at the balanced T the private term
  is ~ (l^{3/2} sqrt(log(1/delta)) K^{1/2}/(n eps))^{1/2}: the n^{-1/2} eps^{-1/2} rate of Thm 1.1.
* the non-private reference: entropic SMD with exact iterates
  (:func:`~dpsco_lib.algorithms.private_smd_saddle.run_smd_saddle`), and MWEM (:mod:`dpsco_lib.algorithms.mwem`).

X2: DP minimization of the maximal group loss
---------------------------------------------
:class:`~dpsco_lib.problems.applications.MaxOfLosses` is min_{||x||_1 <= R} max_{y in Delta_m} sum_g y_g L_g(x).
Algorithm 1 needs simplices, so x is lifted to the 2d vertices of the l1 ball, x = R (w[:d] - w[d:]) with
w in Delta_{2d} (:class:`~dpsco_lib.problems.lifted.L1LiftedSaddle`).  The lifted gradient is R [g, -g], so the
constants w.r.t. ||w||_1 + ||y||_1 (gradients in l_inf) become, with pi_min the smallest group frequency,
l_max = log(1 + e^{B_a R}):

    L0 = max(R B_a, l_max)/pi_min,  L1 = max(R^2 B_a^2/4, R B_a)/pi_min,
    L2 = max(R^3 B_a^3/(6 sqrt 3), R^2 B_a^2/4)/pi_min

(:func:`~dpsco_lib.problems.lifted.lift_max_of_losses`; the lifted problem and the pooled problem live in
:mod:`dpsco_lib.problems.lifted` and are re-exported here).  :func:`run_group_robust_alg1` runs Algorithm 1 on
it and unlifts;
:func:`run_group_blind_erm` is private ERM on the pooled logistic loss (Poly-SFW, Spec F1, which ignores groups);
:func:`exact_pooled_erm` is its non-private optimum and ``problem.saddle_point()`` the exact group-robust one
(cvxpy + Clarabel).

The library works in the idealized real-arithmetic model (float64 iterates and noise, non-cryptographic RNG).

References: González, Guzmán & Paquette (2024), arXiv 2403.02912, Section 1.4 [GGP24]; Hardt, Ligett &
McSherry (2012) [HLM12]; Bassily, Guzmán & Nandi (2021) [BGN21] (Poly-SFW).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpsco_lib._optional import require
from dpsco_lib._validation import check_delta, check_epsilon, check_int, check_positive, check_rng
from dpsco_lib.algorithms._result import Result
from dpsco_lib.algorithms.poly_sfw import run_poly_sfw
from dpsco_lib.algorithms.private_smd_saddle import alg1_per_draw_budget, run_private_smd_saddle
from dpsco_lib.geometry.mirror import entropic_step_unchecked
from dpsco_lib.privacy.accounting import PrivacyLedger
from dpsco_lib.privacy.accounting.accountants import DEFAULT_ACCOUNTANT, AccountantLike, get_accountant
from dpsco_lib.privacy.accounting.budget import check_accountant
from dpsco_lib.privacy.mechanisms import sample_categorical_log
from dpsco_lib.problems.applications import LinearQueryGame, MaxOfLosses
from dpsco_lib.problems.base import solve_cvxpy
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.lifted import (  # re-exported: they lived here before dpsco_lib.problems.lifted
    L1LiftedSaddle,
    check_max_of_losses,
    lift_max_of_losses,
    pooled_logistic_problem,
)

__all__ = [
    "L1LiftedSaddle",
    "QueryReleaseParams",
    "exact_pooled_erm",
    "lift_max_of_losses",
    "pooled_logistic_problem",
    "query_release_params",
    "run_alg1_query_release",
    "run_group_blind_erm",
    "run_group_robust_alg1",
    "query_release_privacy_loss",
    "run_nonprivate_query_release",
    "structured_query_release",
]

VARIANTS = ("structured", "generic")


# ---------------------------------------------------------------------------------------------------------
# X1: synthetic data
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class QueryReleaseParams:
    """Parameters of the structured Algorithm-1 variant for query release (Spec X1).

    Attributes
    ----------
    K, T, B : int
        y-draws per step, steps, batch size floor(n/T).
    eta, eta_cap : float
        Step size (the ``step_size`` keyword) and the privacy cap eps0 B/2.
    eps0 : float
        Per-draw budget for K T draws (from ``per_step_epsilon`` with the accountant).
    eps_draw : float
        2 eta/B, the per-draw epsilon actually spent.
    n_draws : int
        K T.
    log_d : float
        l = log N + log(2m).
    bound : float
        l/(eta T) + eta, the SMD bound at these parameters (up to the batch noise).
    accountant : str
        The accountant that calibrated eps0.
    """

    K: int
    T: int
    B: int
    eta: float
    eta_cap: float
    eps0: float
    eps_draw: float
    n_draws: int
    log_d: float
    bound: float
    accountant: str = DEFAULT_ACCOUNTANT.name

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _qr_cap(n: int, T: int, K: int, eps: float, dl: float, accountant: str) -> float:
    # eps0 from the budget path (per_step_epsilon, K T exponential-mechanism draws, cached there)
    return alg1_per_draw_budget(eps, delta=dl, n_draws=K * T, accountant=accountant) * (n // T) / 2.0


def query_release_params(
    n: int, *, N: int, m: int, epsilon: float, delta: float, K: int = 1, T: int | None = None,
    step_size: float | None = None, accountant: AccountantLike = DEFAULT_ACCOUNTANT,
) -> QueryReleaseParams:
    r"""K, T, B, eta of the structured Algorithm-1 variant for m linear queries over a universe of N (Spec X1).

    eta_cap(T) = eps0(K T) floor(n/T)/2 decreases like T^{-3/2} and the unconstrained SMD step
    eta_stat(T) = sqrt(l/T) (L0 = 1) like T^{-1/2}; T is the largest T in [1, n] with
    eta_cap(T) >= eta_stat(T) (bisection with the exact accountant: a utility root solve, eps0 itself comes
    from ``per_step_epsilon``), and eta = min(eta_cap, eta_stat).  A given ``step_size`` above the cap raises
    ``ValueError``.  ``accountant``: one of :data:`~dpsco_lib.privacy.accounting.accountants.ACCOUNTANTS` (default
    ``"best"``, the tightest valid accountant; ``"paper"`` the rule of GGP24 Cor 3.6, ``"advanced"`` DRV10).
    For ``"best"``, ``"pld"`` and ``"kov"`` the search for T prices eps0 with RDP (a cheap valid accountant of
    similar tightness; one PLD or KOV evaluation takes up to seconds); eps0, the cap and eta at that T are the
    chosen accountant's.
    """
    n = check_int(n, "n", lo=1)
    N = check_int(N, "N", lo=2)
    m = check_int(m, "m", lo=1)
    eps = check_epsilon(epsilon)
    dl = check_delta(delta, allow_zero=False)
    K = check_int(K, "K", lo=1, hi=10_000)
    accountant = check_accountant(accountant)
    log_d = math.log(N) + math.log(2 * m)

    # the search for T (a utility root solve evaluated ~log2(n) times) prices eps0 with the design accountant
    search = get_accountant(accountant).design_accountant.name

    def ok(t: int) -> bool:
        return _qr_cap(n, t, K, eps, dl, search) >= math.sqrt(log_d / t)

    if T is None:  # a utility root solve (where two step sizes cross), not a privacy calibration
        if ok(n):
            T = n
        elif not ok(1):
            T = 1
        else:
            lo, hi = 1, n
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if ok(mid) else (lo, mid)
            T = lo
    else:
        T = check_int(T, "T", lo=1, hi=n)
    cap = _qr_cap(n, T, K, eps, dl, accountant)
    B = n // T
    eps0 = alg1_per_draw_budget(eps, delta=dl, n_draws=K * T, accountant=accountant)
    if step_size is None:
        eta = min(cap, math.sqrt(log_d / T))
        while 2.0 * eta / B > eps0:  # the rounding of eps0 B/2: spend at most eps0 per draw
            eta = math.nextafter(eta, 0.0)
    else:
        eta = check_positive(step_size, "step_size")
        if eta > cap * (1 + 1e-12):
            raise ValueError(f"step_size = {eta!r} exceeds the privacy cap eps0 B/2 = {cap!r} (T = {T}, K = {K})")
    return QueryReleaseParams(
        K=K, T=int(T), B=int(B), eta=float(eta), eta_cap=float(cap), eps0=float(eps0),
        eps_draw=float(2.0 * eta / B), n_draws=int(K * T), log_d=float(log_d),
        bound=float(log_d / (eta * T) + eta), accountant=accountant,
    )


def _check_game(game: Any) -> LinearQueryGame:
    if not isinstance(game, LinearQueryGame):
        raise ValueError(f"game (the problem of Spec X1) must be a LinearQueryGame, got {type(game).__name__}")
    return game


def run_alg1_query_release(
    game: LinearQueryGame,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    variant: str = "structured",
    K: int = 1,
    T: int | None = None,
    step_size: float | None = None,
    accountant: AccountantLike = DEFAULT_ACCOUNTANT,
    synthetic_size: int | None = None,
) -> Result:
    r"""(epsilon, delta)-DP synthetic distribution for the game's queries by Algorithm 1 (Spec X1, GGP24 Sec. 1.4).

    The private dataset is ``game.records`` (its histogram h is the target); records are processed in a
    uniformly random order in disjoint batches.  See the module docstring for the two variants and the privacy
    argument of the structured one.

    Parameters
    ----------
    game : LinearQueryGame
    epsilon, delta : float
        Target; delta in (0, 1).
    rng : numpy.random.Generator
    variant : {"structured", "generic"}
    K, T, step_size : optional
        Structured: y-draws per step (default 1), steps and step size (default :func:`query_release_params`).
        Generic: passed to ``run_private_smd_saddle`` (regime "quadratic", default K = 1).
    accountant : str
        One of :data:`~dpsco_lib.privacy.accounting.accountants.ACCOUNTANTS`: calibrates the per-draw budget
        (default ``"best"``, the tightest valid accountant; ``"paper"`` the rule of GGP24 Cor 3.6).
    synthetic_size : int, optional
        If given, release ``synthetic_size`` records drawn from the output distribution (post-processing);
        ``x`` is then their empirical distribution.

    Returns
    -------
    Result
        ``x`` the synthetic distribution over the universe; ``ledger`` (the only certificate:
        ``result.certified_epsilon(delta)``); ``info`` with ``max_query_error`` (= max_y F(x, y)) and the target.
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta, allow_zero=False)
    accountant = check_accountant(accountant)
    rng = check_rng(rng)
    game = _check_game(game)
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if synthetic_size is not None:
        synthetic_size = check_int(synthetic_size, "synthetic_size", lo=1)
    n = int(game.records.size)
    order = rng.permutation(n)
    rec = game.records[order]
    if variant == "generic":
        data = Dataset(np.eye(game.N)[rec])
        res = run_private_smd_saddle(game, data, epsilon=eps, delta=dl, rng=rng, regime="quadratic",
                                     K=K, T=T, step_size=step_size, accountant=accountant)
        x, led, params = res.x, res.ledger, dict(res.params)
    else:
        prm = query_release_params(n, N=game.N, m=game.n_queries, epsilon=eps, delta=dl, K=K, T=T,
                                   step_size=step_size, accountant=accountant)
        x, _ = structured_query_release(game, rec, prm, rng)
        led = PrivacyLedger()
        led.record_exponential(prm.eps_draw, count=prm.n_draws, label="Alg 1 query-release y-draws (Spec X1)")
        params = prm.as_dict()
    trace = None
    if synthetic_size is not None:
        idx = sample_categorical_log(np.log(np.maximum(x, 0.0)), rng=rng, size=synthetic_size)
        trace = {"synthetic_records": np.asarray(idx)}
        x = np.bincount(idx, minlength=game.N) / synthetic_size
    info = {
        "method": f"Algorithm 1 ({variant}) for linear-query release",
        "target_epsilon": eps,
        "delta": dl,
        "accountant": accountant,
        "max_query_error": game.max_query_error(x),
    }
    params["variant"] = variant
    return Result(x=x, trace=trace, params=params, ledger=led, info=info)


def structured_query_release(game: LinearQueryGame, records: np.ndarray, prm: QueryReleaseParams,
                             rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    r"""The structured variant on ``records`` in the given order with parameters ``prm`` (Spec X1).

    Exact p-iterates, K vertex draws of y per step, disjoint batches S_t = records[t B:(t + 1) B].  No ledger:
    :func:`run_alg1_query_release` records the K T draws of ``prm``; this core serves it and the privacy audits
    (which run it on a fixed order and a given, possibly deliberately wrong, ``prm``).

    Returns
    -------
    (x, draws)
        x the average of p_1..p_T (a distribution over the universe); draws (T - 1, K) the y-vertices drawn at
        steps 1..T - 1 (the last step's draw is never used, so it is not made).
    """
    N, m = game.N, game.n_queries
    Q = game.Q
    T, B, K, eta = prm.T, prm.B, prm.K, prm.eta
    # batch histograms h_{S_t} (T, N) and their query answers (T, m) in one pass
    used = np.asarray(records)[: T * B]
    Hb = np.bincount((np.arange(T * B) // B) * N + used, minlength=T * N).reshape(T, N) / B
    QH = Hb @ Q.T
    log_p = np.full((1, N), -math.log(N))
    log_y = np.full((1, 2 * m), -math.log(2 * m))
    sum_p = np.zeros(N)
    draws = np.empty((max(T - 1, 0), K), dtype=np.int64)
    for t in range(T):
        p = np.exp(log_p[0])
        sum_p += p
        if t == T - 1:
            break  # the last update is never used
        draws[t] = sample_categorical_log(log_y[0], rng=rng, size=K)
        ytil = np.bincount(draws[t], minlength=2 * m) / K
        gp = Q.T @ (ytil[:m] - ytil[m:])  # B y~ (data-independent)
        r = Q @ p - QH[t]  # <q_j, p_t - h_{S_t}>
        gy = np.concatenate([r, -r])  # B^T (p_t - h_{S_t}); ascent in y
        log_p = entropic_step_unchecked(log_p, gp[None], eta)
        log_y = entropic_step_unchecked(log_y, -gy[None], eta)
    x = sum_p / T
    return x / x.sum(), draws


def _y_log_probs(Q: np.ndarray, records: np.ndarray, prm: QueryReleaseParams, draws: np.ndarray) -> np.ndarray:
    """log P(draws[t] | past) of every step's y-draws on ``records`` (the replay of the structured variant)."""
    N, m = Q.shape[1], Q.shape[0]
    T, B, K, eta = prm.T, prm.B, prm.K, prm.eta
    used = np.asarray(records)[: T * B]
    QH = np.bincount((np.arange(T * B) // B) * N + used, minlength=T * N).reshape(T, N) @ Q.T / B
    log_p = np.full(N, -math.log(N))
    log_y = np.full(2 * m, -math.log(2 * m))
    out = np.empty(T - 1)
    for t in range(T - 1):
        out[t] = log_y[draws[t]].sum()
        ytil = np.bincount(draws[t], minlength=2 * m) / K
        r = Q @ np.exp(log_p) - QH[t]
        log_p = entropic_step_unchecked(log_p, Q.T @ (ytil[:m] - ytil[m:]), eta)
        log_y = entropic_step_unchecked(log_y, -np.concatenate([r, -r]), eta)
    return out


def query_release_privacy_loss(game: LinearQueryGame, records: Any, neighbour: Any, prm: QueryReleaseParams,
                               draws: Any) -> float:
    r"""Exact privacy loss ln P_S(draws)/P_S'(draws) of one run of the structured variant (Spec X1).

    The p-iterates are a function of the released y-draws alone, so the output of a run on ``records`` (in this
    order) is a post-processing of ``draws``, whose probability is the product over steps of
    y_t(S)[draws[t]] (y_t(S) the y-iterate given the past draws and the batches of S).  Replaying the iteration
    on both datasets gives the privacy-loss variable L exactly; for draws from the run on S,
    E[(1 - e^{eps - L})_+] is the tight delta(eps) of the pair (S, S') (Balle & Wang 2018), which the audits
    estimate (:func:`~dpsco_lib.privacy.audit.monte_carlo_delta`).

    Parameters
    ----------
    game : LinearQueryGame
        Supplies the queries (its own records are not used).
    records, neighbour : int arrays (n,)
        The two datasets in the order the run used (same length; a replace-one pair differs in one entry).
    prm : QueryReleaseParams
        The parameters of the run.
    draws : int array (T - 1, K)
        The draws the run made (:func:`structured_query_release`).
    """
    game = _check_game(game)
    a, b = np.asarray(records), np.asarray(neighbour)
    if a.shape != b.shape or a.ndim != 1 or a.size < prm.T * prm.B:
        raise ValueError(f"records and neighbour must be 1-D of equal length >= T B = {prm.T * prm.B}, got "
                         f"shapes {a.shape} and {b.shape}")
    for name, v in (("records", a), ("neighbour", b)):
        if v.dtype.kind not in "iu" or v.min() < 0 or v.max() >= game.N:
            raise ValueError(f"{name} must hold universe indices in [0, {game.N})")
    dr = np.asarray(draws)
    if dr.shape != (max(prm.T - 1, 0), prm.K):
        raise ValueError(f"draws must have shape (T - 1, K) = ({prm.T - 1}, {prm.K}), got {dr.shape}")
    return float(np.sum(_y_log_probs(game.Q, a, prm, dr) - _y_log_probs(game.Q, b, prm, dr)))


def run_nonprivate_query_release(game: LinearQueryGame, *, rng: np.random.Generator, T: int | None = None) -> Result:
    """Non-private reference for X1: entropic SMD with exact iterates of both players on the game (Spec X1).

    Disjoint batches of size floor(n/T) in a random order (``rng``), T = n by default (one record per step),
    step eta = sqrt(l/T) (L0 = 1, l = log N + log 2m): E max-error <= 2 sqrt(l/T) + batch noise.  Same
    iteration as :func:`~dpsco_lib.algorithms.private_smd_saddle.run_smd_saddle` (which it cross-checks in the
    tests), written with the game's structure (query answers of batch histograms) so that T = n is cheap.
    """
    game = _check_game(game)
    rng = check_rng(rng)
    n = int(game.records.size)
    rec = game.records[rng.permutation(n)]
    T = n if T is None else check_int(T, "T", lo=1, hi=n)
    N, m, Q = game.N, game.n_queries, game.Q
    log_d = math.log(N) + math.log(2 * m)
    eta = math.sqrt(log_d / T)
    B = n // T
    used = rec[: T * B]
    QH = np.bincount((np.arange(T * B) // B) * N + used, minlength=T * N).reshape(T, N) @ Q.T / B
    log_p = np.full((1, N), -math.log(N))
    log_y = np.full((1, 2 * m), -math.log(2 * m))
    sum_p, sum_y = np.zeros(N), np.zeros(2 * m)
    for t in range(T):
        p, y = np.exp(log_p[0]), np.exp(log_y[0])
        sum_p += p
        sum_y += y
        if t == T - 1:
            break
        r = Q @ p - QH[t]
        log_p = entropic_step_unchecked(log_p, (Q.T @ (y[:m] - y[m:]))[None], eta)
        log_y = entropic_step_unchecked(log_y, -np.concatenate([r, -r])[None], eta)
    x, y = sum_p / sum_p.sum(), sum_y / sum_y.sum()
    info = {"method": "non-private entropic SMD on the query game", "max_query_error": game.max_query_error(x)}
    params = {"T": T, "B": B, "eta": eta, "log_d": log_d, "rate_bound": 2 * math.sqrt(log_d / T)}
    return Result(x=x, y=y, params=params, ledger=None, info=info)


# ---------------------------------------------------------------------------------------------------------
# X2: maximal group loss
# ---------------------------------------------------------------------------------------------------------
def run_group_robust_alg1(
    problem: MaxOfLosses,
    data: Dataset,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    regime: str = "second_order",
    K: int | None = None,
    T: int | None = None,
    step_size: float | None = None,
    accountant: AccountantLike = DEFAULT_ACCOUNTANT,
) -> Result:
    r"""(epsilon, delta)-DP minimization of the maximal group loss by Algorithm 1 on the lifted problem (Spec X2).

    Parameters
    ----------
    problem : MaxOfLosses
    data : Dataset
        Records (features, labels, ``extras["group"]``) within the problem's bounds; the group of a record is
        part of the record (replace-one may change it).
    epsilon, delta, rng, regime, K, T, step_size, accountant
        As in :func:`~dpsco_lib.algorithms.private_smd_saddle.run_private_smd_saddle`.

    Returns
    -------
    Result
        ``x`` the unlifted point of the l1 ball, ``y`` the group weights; the ledger of Algorithm 1 (the
        certificate); ``info["group_losses"]`` (population) and ``info["worst_group_loss"]`` = max_g L_g(x).
    """
    P = check_max_of_losses(problem)
    lifted = lift_max_of_losses(P)
    res = run_private_smd_saddle(lifted, data, epsilon=epsilon, delta=delta, rng=rng, regime=regime, K=K, T=T,
                                 step_size=step_size, accountant=accountant)
    x = P.x_set.project(lifted.unlift(res.x))
    gl = P.group_losses(x)
    info = dict(res.info)
    info.update({"group_losses": gl, "worst_group_loss": float(gl.max()), "lifted_L0": lifted.L0,
                 "lifted_L1": lifted.L1, "lifted_L2": lifted.L2})
    return Result(x=x, y=res.y, params=dict(res.params), ledger=res.ledger, info=info)


def run_group_blind_erm(
    problem: MaxOfLosses,
    data: Dataset,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    **hyper: Any,
) -> Result:
    """Group-blind (epsilon, delta)-DP ERM: Poly-SFW (Spec F1, BGN21) on the pooled logistic loss (Spec X2).

    The groups of the records are ignored.  ``hyper`` is passed to
    :func:`~dpsco_lib.algorithms.poly_sfw.run_poly_sfw`.  ``info`` adds the population group losses and the
    worst-group loss of the output.
    """
    P = check_max_of_losses(problem)
    if not isinstance(data, Dataset):
        raise ValueError(f"data must be a dpsco_lib.problems.Dataset, got {type(data).__name__}")
    data = P.validate_data(data)
    res = run_poly_sfw(pooled_logistic_problem(P), Dataset(data.X, data.y), epsilon=epsilon, delta=delta, rng=rng,
                       **hyper)
    x = P.x_set.project(res.x)
    gl = P.group_losses(x)
    info = dict(res.info)
    info.update({"group_losses": gl, "worst_group_loss": float(gl.max())})
    return Result(x=x, params=dict(res.params), ledger=res.ledger, info=info)


def exact_pooled_erm(problem: MaxOfLosses) -> tuple[np.ndarray, np.ndarray]:
    """(x, group losses) of the exact non-private pooled logistic minimizer over the l1 ball (cvxpy + Clarabel)."""
    cp = require("cvxpy")

    P = check_max_of_losses(problem)
    pop = P.population
    xv = cp.Variable(P.dx)
    obj = cp.sum(cp.logistic(-cp.multiply(pop.y, pop.X @ xv))) / pop.n
    prob = cp.Problem(cp.Minimize(obj), P.x_set.cvxpy_constraints(xv))
    solve_cvxpy(prob, "the pooled logistic ERM")
    x = P.x_set.project(np.asarray(xv.value))
    return x, P.group_losses(x)
