r"""Runners for the two applications of [GGP24] Section 1.4 built on Algorithm 1 (Spec X1, X2; notebook 13).

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
  The K T draws compose (advanced composition, per-draw budget eps0 from the accountant), so the privacy cap
  is eta <= eps0 B/2.  T is where that cap meets the unconstrained SMD step sqrt(l/T) (l = log N + log 2m),
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
w in Delta_{2d} (:class:`L1LiftedSaddle`).  The lifted gradient is R [g, -g], so the constants w.r.t.
||w||_1 + ||y||_1 (gradients in l_inf) become, with pi_min the smallest group frequency, l_max = log(1 + e^{B_a R}):

    L0 = max(R B_a, l_max)/pi_min,  L1 = max(R^2 B_a^2/4, R B_a)/pi_min,
    L2 = max(R^3 B_a^3/(6 sqrt 3), R^2 B_a^2/4)/pi_min

(:func:`lift_max_of_losses`).  :func:`run_group_robust_alg1` runs Algorithm 1 on it and unlifts;
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

from dpsco_lib._validation import check_delta, check_epsilon, check_int, check_positive, check_rng
from dpsco_lib.algorithms._result import Result
from dpsco_lib.algorithms.poly_sfw import run_poly_sfw
from dpsco_lib.algorithms.private_smd_saddle import (
    alg1_per_draw_budget,
    run_private_smd_saddle,
)
from dpsco_lib.geometry.mirror import entropic_step_unchecked, l1_lift, l1_unlift
from dpsco_lib.geometry.sets import L1Ball, Simplex
from dpsco_lib.privacy.accounting import PrivacyLedger, advanced_composition_epsilon
from dpsco_lib.privacy.mechanisms import sample_categorical_log
from dpsco_lib.problems.applications import LinearQueryGame, MaxOfLosses
from dpsco_lib.problems.base import SaddleProblem, solve_cvxpy
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.logistic import LogisticRegression

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
    "run_nonprivate_query_release",
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
        Step size and the privacy cap eps0 B/2.
    eps0 : float
        Per-draw budget for K T draws (advanced composition, from the accountant).
    eps_draw : float
        2 eta/B, the per-draw epsilon actually spent.
    n_draws : int
        K T.
    log_d : float
        l = log N + log(2m).
    bound : float
        l/(eta T) + eta, the SMD bound at these parameters (up to the batch noise).
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


def _qr_cap(n: int, T: int, K: int, eps: float, dl: float) -> float:
    return alg1_per_draw_budget(eps, dl, K * T) * (n // T) / 2.0


def query_release_params(
    n: int, N: int, m: int, epsilon: float, delta: float, *, K: int = 1, T: int | None = None,
    eta: float | None = None,
) -> QueryReleaseParams:
    r"""K, T, B, eta of the structured Algorithm-1 variant for m linear queries over a universe of N (Spec X1).

    eta_cap(T) = eps0(K T) floor(n/T)/2 decreases like T^{-3/2} and the unconstrained SMD step
    eta_stat(T) = sqrt(l/T) (L0 = 1) like T^{-1/2}; T is the largest T in [1, n] with
    eta_cap(T) >= eta_stat(T) (bisection with the exact accountant), and eta = min(eta_cap, eta_stat).
    A given eta above the cap raises ``ValueError``.
    """
    n = check_int(n, "n", lo=1)
    N = check_int(N, "N", lo=2)
    m = check_int(m, "m", lo=1)
    eps = check_epsilon(epsilon)
    dl = check_delta(delta, allow_zero=False)
    K = check_int(K, "K", lo=1, hi=10_000)
    log_d = math.log(N) + math.log(2 * m)

    def ok(t: int) -> bool:
        return _qr_cap(n, t, K, eps, dl) >= math.sqrt(log_d / t)

    if T is None:
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
    cap = _qr_cap(n, T, K, eps, dl)
    if eta is None:
        eta = min(cap, math.sqrt(log_d / T))
    else:
        eta = check_positive(eta, "eta")
        if eta > cap * (1 + 1e-12):
            raise ValueError(f"eta = {eta!r} exceeds the privacy cap eps0 B/2 = {cap!r} (T = {T}, K = {K})")
    B = n // T
    return QueryReleaseParams(
        K=K, T=int(T), B=int(B), eta=float(eta), eta_cap=float(cap),
        eps0=float(alg1_per_draw_budget(eps, dl, K * T)), eps_draw=float(2.0 * eta / B), n_draws=int(K * T),
        log_d=float(log_d), bound=float(log_d / (eta * T) + eta),
    )


def _check_game(game: Any) -> LinearQueryGame:
    if not isinstance(game, LinearQueryGame):
        raise ValueError(f"game must be a LinearQueryGame, got {type(game).__name__}")
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
    eta: float | None = None,
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
    K, T, eta : optional
        Structured: y-draws per step (default 1), steps and step size (default :func:`query_release_params`).
        Generic: passed to ``run_private_smd_saddle`` (regime "quadratic", default K = 1).
    synthetic_size : int, optional
        If given, release ``synthetic_size`` records drawn from the output distribution (post-processing);
        ``x`` is then their empirical distribution.

    Returns
    -------
    Result
        ``x`` the synthetic distribution over the universe; ``ledger``; ``info`` with ``max_query_error``
        (= max_y F(x, y)), ``certified_epsilon`` (advanced composition) and the target.
    """
    game = _check_game(game)
    rng = check_rng(rng)
    eps = check_epsilon(epsilon)
    dl = check_delta(delta, allow_zero=False)
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
                                     K=K, T=T, eta=eta)
        x, led, params, cert = res.x, res.ledger, dict(res.params), res.info["certified_epsilon"]
    else:
        prm = query_release_params(n, game.N, game.n_queries, eps, dl, K=K, T=T, eta=eta)
        x = _structured_core(game, rec, prm, rng)
        led = PrivacyLedger()
        led.record_exponential(prm.eps_draw, count=prm.n_draws, label="Alg 1 query-release y-draws (Spec X1)")
        params = dict(prm.__dict__)
        cert = advanced_composition_epsilon(prm.eps_draw, k=prm.n_draws, delta_prime=dl)
    trace = None
    if synthetic_size is not None:
        idx = sample_categorical_log(np.log(np.maximum(x, 0.0)), rng=rng, size=synthetic_size)
        trace = {"synthetic_records": np.asarray(idx)}
        x = np.bincount(idx, minlength=game.N) / synthetic_size
    info = {
        "method": f"Algorithm 1 ({variant}) for linear-query release",
        "target_epsilon": eps,
        "delta": dl,
        "certified_epsilon": float(cert),
        "max_query_error": game.max_query_error(x),
    }
    params["variant"] = variant
    return Result(x=x, trace=trace, params=params, ledger=led, info=info)


def _structured_core(game: LinearQueryGame, rec: np.ndarray, prm: QueryReleaseParams,
                     rng: np.random.Generator) -> np.ndarray:
    """The structured variant: exact p-iterates, K vertex draws of y per step, disjoint batches."""
    N, m = game.N, game.n_queries
    Q = game.Q
    T, B, K, eta = prm.T, prm.B, prm.K, prm.eta
    # batch histograms h_{S_t} (T, N) and their query answers (T, m) in one pass
    used = rec[: T * B]
    Hb = np.bincount((np.arange(T * B) // B) * N + used, minlength=T * N).reshape(T, N) / B
    QH = Hb @ Q.T
    log_p = np.full((1, N), -math.log(N))
    log_y = np.full((1, 2 * m), -math.log(2 * m))
    sum_p = np.zeros(N)
    for t in range(T):
        p = np.exp(log_p[0])
        sum_p += p
        if t == T - 1:
            break  # the last update is never used
        draws = sample_categorical_log(log_y[0], rng=rng, size=K)
        ytil = np.bincount(draws, minlength=2 * m) / K
        gp = Q.T @ (ytil[:m] - ytil[m:])  # B y~ (data-independent)
        r = Q @ p - QH[t]  # <q_j, p_t - h_{S_t}>
        gy = np.concatenate([r, -r])  # B^T (p_t - h_{S_t}); ascent in y
        log_p = entropic_step_unchecked(log_p, gp[None], eta)
        log_y = entropic_step_unchecked(log_y, -gy[None], eta)
    x = sum_p / T
    return x / x.sum()


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
class L1LiftedSaddle(SaddleProblem):
    """A saddle problem over (l1 ball) x (simplex) lifted to (Delta_{2d}) x (simplex) for Algorithm 1 (Spec X2).

    x = R (w[:d] - w[d:]); grad_w f = R [grad_x f, -grad_x f]; values, best responses and the saddle point are
    those of the base problem (best responses and saddle points are lifted with
    :func:`~dpsco_lib.geometry.mirror.l1_lift`).  The constants are given explicitly (see
    :func:`lift_max_of_losses` for MaxOfLosses); by default the safe scaling max(R, 1)^k L_k of the base.

    Parameters
    ----------
    base : SaddleProblem
        With ``x_set`` an L1Ball of radius R.
    L0, L1, L2 : float, optional
    """

    def __init__(self, base: SaddleProblem, *, L0: float | None = None, L1: float | None = None,
                 L2: float | None = None) -> None:
        if not isinstance(base, SaddleProblem) or not isinstance(base.x_set, L1Ball) or base.x_set.p != 1.0:
            raise ValueError("base must be a SaddleProblem whose x_set is an l1 ball (L1Ball)")
        self.base = base
        self.radius = float(base.x_set.radius)
        self.d = base.dx
        self.x_set = Simplex(2 * self.d)
        self.y_set = base.y_set
        s = max(self.radius, 1.0)
        self.L0 = float(base.L0 * s if L0 is None else check_positive(L0, "L0"))
        self.L1 = float(base.L1 * s**2 if L1 is None else check_positive(L1, "L1", allow_zero=True))
        self.L2 = float(base.L2 * s**3 if L2 is None else check_positive(L2, "L2", allow_zero=True))
        self.exact_population = base.exact_population
        self.spec = base.spec
        self.needs_labels = base.needs_labels
        self._extras = base._extras
        self._cache = {}

    @property
    def data_dim(self) -> int:
        return self.base.data_dim

    def unlift(self, w: Any) -> np.ndarray:
        return l1_unlift(w, self.radius)

    def _loss(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        return self.base._loss(self.unlift(x), y, data)

    def _grad_x(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        g = self.base._grad_x(self.unlift(x), y, data)
        return self.radius * np.concatenate([g, -g], axis=-1)

    def _grad_y(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        return self.base._grad_y(self.unlift(x), y, data)

    def _sample(self, n: int, rng: np.random.Generator) -> Dataset:
        return self.base._sample(n, rng)

    def _row_violation(self, data: Dataset) -> np.ndarray:
        return self.base._row_violation(data)

    def _clip_rows(self, data: Dataset, bad: np.ndarray) -> Dataset:
        return self.base._clip_rows(data, bad)

    def _base_x(self, w: np.ndarray) -> np.ndarray:
        return self.base.x_set.project(self.unlift(w))  # rounding only: ||unlift(w)||_1 <= R exactly in reals

    def _population_value(self, x: np.ndarray, y: np.ndarray) -> float:
        return float(self.base._population_value(self._base_x(x), y))

    def _best_response_x(self, y: np.ndarray) -> tuple[np.ndarray, float]:
        xb, v = self.base._best_response_x(y)
        return l1_lift(xb, self.radius), v

    def _best_response_y(self, x: np.ndarray) -> tuple[np.ndarray, float]:
        return self.base._best_response_y(self._base_x(x))

    def _saddle_point(self) -> tuple[np.ndarray, np.ndarray, float]:
        xb, yb, v = self.base.saddle_point()
        return l1_lift(xb, self.radius), yb, v


def _check_mol(problem: Any) -> MaxOfLosses:
    if not isinstance(problem, MaxOfLosses):
        raise ValueError(f"problem must be a MaxOfLosses, got {type(problem).__name__}")
    return problem


def lift_max_of_losses(problem: MaxOfLosses) -> L1LiftedSaddle:
    """The 2d-vertex lift of a MaxOfLosses problem with its exact lifted constants (Spec X2; module docstring)."""
    P = _check_mol(problem)
    R, Ba, pmin = P.radius, P.B_a, float(P.pi.min())
    lmax = math.log1p(math.exp(Ba * R))
    return L1LiftedSaddle(
        P,
        L0=max(R * Ba, lmax) / pmin,
        L1=max(R**2 * Ba**2 / 4.0, R * Ba) / pmin,
        L2=max(R**3 * Ba**3 / (6.0 * math.sqrt(3.0)), R**2 * Ba**2 / 4.0) / pmin,
    )


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
    eta: float | None = None,
    composition: str = "advanced",
) -> Result:
    r"""(epsilon, delta)-DP minimization of the maximal group loss by Algorithm 1 on the lifted problem (Spec X2).

    Parameters
    ----------
    problem : MaxOfLosses
    data : Dataset
        Records (features, labels, ``extras["group"]``) within the problem's bounds; the group of a record is
        part of the record (replace-one may change it).
    epsilon, delta, rng, regime, K, T, eta, composition
        As in :func:`~dpsco_lib.algorithms.private_smd_saddle.run_private_smd_saddle`.

    Returns
    -------
    Result
        ``x`` the unlifted point of the l1 ball, ``y`` the group weights; ledger and certificate of Algorithm 1;
        ``info["group_losses"]`` (population) and ``info["worst_group_loss"]`` = max_g L_g(x).
    """
    P = _check_mol(problem)
    lifted = lift_max_of_losses(P)
    res = run_private_smd_saddle(lifted, data, epsilon=epsilon, delta=delta, rng=rng, regime=regime, K=K, T=T,
                                 eta=eta, composition=composition)
    x = P.x_set.project(lifted.unlift(res.x))
    gl = P.group_losses(x)
    info = dict(res.info)
    info.update({"group_losses": gl, "worst_group_loss": float(gl.max()), "lifted_L0": lifted.L0,
                 "lifted_L1": lifted.L1, "lifted_L2": lifted.L2})
    return Result(x=x, y=res.y, params=dict(res.params), ledger=res.ledger, info=info)


@dataclass(frozen=True)
class _RowSampler:
    """(n, rng) -> n rows drawn uniformly with replacement from a fixed table (the population)."""

    X: np.ndarray
    y: np.ndarray

    def __call__(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        idx = rng.integers(0, self.X.shape[0], size=n)
        return self.X[idx], self.y[idx]


def pooled_logistic_problem(problem: MaxOfLosses) -> LogisticRegression:
    """The group-blind problem: logistic loss on the pooled records over the same l1 ball (Spec X2).

    Constants in the l1 setup (gradients in l_inf): L0 = B_a, L1 = B_a^2/4.  Its ``population`` attribute is a
    resample of the table; use :func:`exact_pooled_erm` for the exact pooled optimum.
    """
    P = _check_mol(problem)
    pop = P.population
    return LogisticRegression(L1Ball(P.dx, P.radius), 1.0, feature_bound=P.B_a,
                              sampler=_RowSampler(np.asarray(pop.X), np.asarray(pop.y)),
                              population_size=pop.n, spec="X2", name="pooled logistic")


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
    P = _check_mol(problem)
    if not isinstance(data, Dataset):
        raise ValueError(f"data must be a dpsco_lib.problems.Dataset, got {type(data).__name__}")
    data = P.validate_data(data)
    res = run_poly_sfw(pooled_logistic_problem(P), Dataset(data.X, data.y), epsilon=epsilon, delta=delta, rng=rng,
                       **hyper)
    x = P.x_set.project(res.x)
    gl = P.group_losses(x)
    info = dict(res.info)
    info.update({"group_losses": gl, "worst_group_loss": float(gl.max()),
                 "certified_epsilon": res.ledger.epsilon(delta, method="advanced" if delta > 0 else "basic")})
    return Result(x=x, params=dict(res.params), ledger=res.ledger, info=info)


def exact_pooled_erm(problem: MaxOfLosses) -> tuple[np.ndarray, np.ndarray]:
    """(x, group losses) of the exact non-private pooled logistic minimizer over the l1 ball (cvxpy + Clarabel)."""
    import cvxpy as cp

    P = _check_mol(problem)
    pop = P.population
    xv = cp.Variable(P.dx)
    obj = cp.sum(cp.logistic(-cp.multiply(pop.y, pop.X @ xv))) / pop.n
    prob = cp.Problem(cp.Minimize(obj), P.x_set.cvxpy_constraints(xv))
    solve_cvxpy(prob, "the pooled logistic ERM")
    x = P.x_set.project(np.asarray(xv.value))
    return x, P.group_losses(x)
