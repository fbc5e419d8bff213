r"""Algorithm 1 of [GGP24]: private entropic stochastic mirror descent with sampling from vertices (Spec A1).

Problem (the l1 setting, Spec A1): min_{x in Delta_dx} max_{y in Delta_dy} F(x, y) = E_z f(x, y; z) with
f(., .; z) convex-concave, ||grad_x f||_inf, ||grad_y f||_inf <= L0, L1-smooth w.r.t. ||.||_1 (and, for the
second-order regime, L2-smooth partial derivatives).

Algorithm 1 (seed 001, Section 3.1).  Disjoint batches S_1, ..., S_T of size B = floor(n/T) (records beyond
T B are unused); x_1, y_1 uniform.  For t = 1..T:

1. draw K i.i.d. vertices of Cat(x_t) and K of Cat(y_t); x~_t = counts/K, y~_t likewise (released);
2. g^x_t = grad_x f_{S_t}(x~_t, y~_t), g^y_t = grad_y f_{S_t}(x~_t, y~_t) (batch means);
3. x_{t+1} prop. to x_t exp(-eta g^x_t), y_{t+1} prop. to y_t exp(+eta g^y_t) (entropic steps, in log space).

Output (mean_t x~_t, mean_t y~_t), the averages of the *sampled* iterates.  The 2K draws of a step are one
vectorized call of :func:`~dpsco_lib.privacy.mechanisms.sample_categorical_log` on the log-iterates (the two
players' rows padded with -inf to a common length), so no exponential of a raw score is ever normalized.

Privacy (Prop 3.3, derived here for the replace-one relation).  Unrolling step 3,
log x_{t+1}(i) = u_i - logsumexp(u) with the score u_i(S) = -eta sum_{s<=t} g^x_s(i), so a draw from x_{t+1}
is the exponential mechanism P(i) prop. to exp(u_i) given the previously released vertices (which fix the
points where the gradients are taken).  Replacing one record z by z' changes one batch S_s only, hence one
term g^x_s, by (grad_x f(.; z) - grad_x f(.; z'))/B, whose l_inf norm is at most 2 L0/B.  The score therefore
has sensitivity Delta = 2 eta L0/B (and likewise for y).  For the exponential mechanism
P(i) prop. to exp(eps u_i/(2 Delta)) with eps/(2 Delta) = 1, i.e. eps0 = 2 Delta = 4 eta L0/B, one draw is
eps0-DP: log P(i)/P'(i) = (u_i - u'_i) - (logsumexp u - logsumexp u') <= Delta + Delta.  The factor 2 of the
exponential mechanism is thus *included* in the 4 eta L0/B of Prop 3.3 (the mechanism is not monotone: one
coordinate's score can rise while the others fall, and the audit in notebook 09 attains ~2 Delta).
All 2 K T draws compose adaptively; the per-draw budget eps0 comes from the one calibration path,
:func:`~dpsco_lib.privacy.accounting.budget.per_step_epsilon` (2 K T exponential-mechanism events, the events
the run records), with the accountant ``accountant=`` (default ``"best"``: the tightest valid accountant, for
these draws the RDP of the exponential mechanism as a bounded-range mechanism, about 2.4 times DRV's eps0 at
10^5 draws; ``"advanced"``: Dwork-Rothblum-Vadhan, the default of earlier versions; ``"paper"``: the rule
eps0 = eps/(2 sqrt(2 k log(1/delta))) of seed 001 Cor 3.6, certified by DRV), and the step size is capped by
eta <= eta_cap = eps0 B/(4 L0).  The ledger records 2 K T exponential-mechanism draws at
eps_draw = 4 eta L0/B (conservative: the 2K draws of step 1 do not touch the data) and is the only
certificate (``result.certified_epsilon(delta)``).

Theory parameters (Thm 3.1; see :func:`alg1_theory_params` for the derivation).  With
l = log dx + log dy, SMD on the product of simplices gives
E Gap(avg of x_t) <= l/(eta T) + eta L0^2 (+ the data noise, + the vertex-sampling bias 4 b(K)), where
b(K) = 4 L1/sqrt K (Cor 2.6, first order), 2 L2/K (Cor 2.4, second order) or 0 (L2 = 0, K = 1).

The library works in the idealized real-arithmetic model (float64 iterates and a non-cryptographic RNG).
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
    check_int,
    check_positive,
    check_rng,
)
from dpsco_lib.algorithms._result import Result
from dpsco_lib.geometry.mirror import entropic_step_unchecked
from dpsco_lib.privacy.accounting import PrivacyLedger
from dpsco_lib.privacy.accounting.budget import check_accountant, per_step_epsilon
from dpsco_lib.privacy.mechanisms import sample_categorical_log
from dpsco_lib.problems.base import SaddleProblem
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.games import check_saddle_data, saddle_dims

__all__ = [
    "ACCOUNTANT",
    "REGIMES",
    "Alg1Params",
    "alg1_eta_cap",
    "alg1_per_draw_budget",
    "alg1_theory_params",
    "run_private_smd_saddle",
    "run_private_smd_saddle_many",
    "run_smd_saddle",
]

REGIMES = ("first_order", "second_order", "quadratic")
ACCOUNTANT = "best"  # the default: the tightest valid accountant (KOV15 / RDP / PLD, whichever certifies least)
_EXPONENTS = {"first_order": 1.0 / 3.0, "second_order": 2.0 / 5.0, "quadratic": 1.0 / 2.0}
_MAX_K = 1_000_000


def _check_regime(regime: str) -> str:
    if regime not in REGIMES:
        raise ValueError(f"regime must be one of {REGIMES}, got {regime!r}")
    return regime


# The accountant that prices the per-draw budget inside the (K, T) design search, where it is evaluated at ~10^3
# draw counts: accountants with a costly evaluation (KOV: O(k) per call; PLD: seconds) are replaced there by a
# cheap valid one of similar tightness.  The run's eps0, its cap and its step size always come from the chosen
# accountant (a tighter accountant only raises the cap).
_DESIGN_ACCOUNTANT = {"kov": "advanced", "pld": "rdp", "best": "rdp"}
# RDP has no closed-form per-draw budget (each calibration is a root solve of ~15 certificates), so the grid over K
# reads it from a log-log table (16 nodes per decade of draw counts, relative error ~2e-4, cached per target);
# the T of the chosen K is then balanced with the exact eps0.
_TABLE_ACCOUNTANTS = ("rdp",)
_PER_DECADE = 16


@lru_cache(maxsize=8192)
def _eps0(epsilon: float, delta: float, n_draws: int, accountant: str) -> float:
    # the one calibration path: n_draws exponential-mechanism events certify (epsilon, delta).  Cached here too:
    # a design search evicts per_step_epsilon's own cache, and a PLD/KOV ("best") calibration takes seconds
    return per_step_epsilon(epsilon, delta, n_draws, accountant=accountant, mechanism="exponential").value


def alg1_per_draw_budget(epsilon: float, *, delta: float, n_draws: int, accountant: str = ACCOUNTANT) -> float:
    """Per-draw budget eps0 such that ``n_draws`` adaptive eps0-DP draws are (epsilon, delta)-DP (Spec A1).

    A thin wrapper of :func:`~dpsco_lib.privacy.accounting.budget.per_step_epsilon` with
    ``mechanism="exponential"`` (the events Algorithm 1 records).  ``accountant``: one of
    :data:`~dpsco_lib.privacy.accounting.budget.ACCOUNTANTS`; ``"best"`` (default) the tightest valid
    accountant, ``"advanced"`` (DRV10, the default of earlier versions) the largest eps0 with
    sqrt(2k ln(1/delta)) eps0 + k eps0 (e^eps0 - 1) <= epsilon, ``"paper"`` the rule
    eps0 = epsilon/(2 sqrt(2 k ln(1/delta))) of seed 001 Cor 3.6 (certified by DRV10).
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta, allow_zero=False)
    k = check_int(n_draws, "n_draws", lo=1)
    return _eps0(eps, dl, k, check_accountant(accountant))


def alg1_eta_cap(eps0: float, *, B: int, L0: float) -> float:
    """The privacy cap eta <= eps0 B/(4 L0) of Prop 3.3 (each draw is 4 eta L0/B-DP)."""
    return check_positive(eps0, "eps0") * check_int(B, "B", lo=1) / (4.0 * check_positive(L0, "L0"))


@dataclass(frozen=True)
class Alg1Params:
    """Hyperparameters of Algorithm 1 and the terms of the bound they minimize (Spec A1, Thm 3.1).

    Attributes
    ----------
    K, T, B : int
        Vertices per player per step, iterations, batch size floor(n/T).
    eta : float
        The step size (the ``step_size`` keyword of the runners; <= eta_cap unless the privacy cap was
        explicitly disabled).
    eta_cap : float
        eps0 B/(4 L0).
    eps0 : float
        Per-draw budget from the accountant for n_draws = 2 K T draws.
    eps_draw : float
        4 eta L0/B, the per-draw epsilon actually spent (<= eps0 under the cap).
    n_draws : int
        2 K T.
    regime, accountant : str
        The regime of Thm 3.1 and the accountant that calibrated eps0.
    log_d : float
        l = log dx + log dy (Bregman radius of the uniform start).
    smd_term, bias_term, stat_term, bound : float
        l/(eta T) + eta L0^2, 4 b(K), L0 sqrt(l/n) and their sum (the bound up to absolute constants).
    rho : float
        log^{3/2}(max(dx, dy)) sqrt(log(1/delta))/(n eps), so that the private term of Thm 3.1 is
        rho^(1/3), rho^(2/5), rho^(1/2) in the three regimes.
    exponent : float
        1/3, 2/5 or 1/2.
    """

    K: int
    T: int
    B: int
    eta: float
    eta_cap: float
    eps0: float
    eps_draw: float
    n_draws: int
    regime: str
    accountant: str
    log_d: float
    smd_term: float
    bias_term: float
    stat_term: float
    bound: float
    rho: float
    exponent: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _bias(K: int, regime: str, L1: float, L2: float) -> float:
    """4 b(K): gradient bias of vertex sampling (Cor 2.6: 4 L1/sqrt K; Cor 2.4: 2 L2/K) times the l1 diameter
    2 of each simplex, summed over the two players."""
    if regime == "first_order":
        return 4.0 * (4.0 * L1 / math.sqrt(K))
    if regime == "second_order":
        return 4.0 * (2.0 * L2 / K)
    return 0.0


def _eta_stat(log_d: float, T: int, L0: float) -> float:
    return math.sqrt(log_d / T) / L0


@lru_cache(maxsize=64)
def _eps0_table(epsilon: float, delta: float, accountant: str, decades: int) -> tuple[np.ndarray, np.ndarray]:
    """(log k, log eps0(k)) at :data:`_PER_DECADE` draw counts k per decade in [1, 10^decades] (budget path)."""
    ks = np.unique(np.round(np.logspace(0.0, decades, decades * _PER_DECADE + 1)).astype(np.int64))
    e0 = np.array([_eps0(epsilon, delta, int(k), accountant) for k in ks])
    return np.log(ks.astype(np.float64)), np.log(e0)


def _cap(n: int, T: int, K: int, epsilon: float, delta: float, L0: float, accountant: str,
         decades: int = 0) -> float:
    """The privacy cap eps0(2 K T) B/(4 L0); ``decades > 0``: eps0 interpolated on :func:`_eps0_table` (design)."""
    if decades > 0:
        lk, le = _eps0_table(epsilon, delta, accountant, decades)
        eps0 = math.exp(float(np.interp(math.log(2 * K * T), lk, le)))
    else:
        eps0 = _eps0(epsilon, delta, 2 * K * T, accountant)
    return eps0 * (n // T) / (4.0 * L0)


def _balanced_T(n: int, K: int, epsilon: float, delta: float, L0: float, log_d: float, accountant: str,
                decades: int = 0) -> int:
    """Largest T in [1, n] with eta_cap(T) >= eta_stat(T) (1 if none): where the capped and the unconstrained
    SMD step sizes cross.  eta_cap decreases like T^(-3/2), eta_stat like T^(-1/2), so the set is an interval
    [1, T*] up to the floor in B; bisection on that monotone predicate."""
    # A utility root solve (the number of steps where two step sizes cross), not a privacy calibration: the
    # per-draw budget inside the cap comes from the budget path (per_step_epsilon).

    def ok(T: int) -> bool:
        return _cap(n, T, K, epsilon, delta, L0, accountant, decades) >= _eta_stat(log_d, T, L0)

    if ok(n):
        return n
    if not ok(1):
        return 1
    lo, hi = 1, n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _terms(n: int, K: int, T: int, eta: float, L0: float, L1: float, L2: float, log_d: float,
           regime: str) -> tuple[float, float, float]:
    smd = log_d / (eta * T) + eta * L0**2
    return smd, _bias(K, regime, L1, L2), L0 * math.sqrt(log_d / n)


def alg1_theory_params(
    n: int,
    *,
    d: int | tuple[int, int],
    epsilon: float,
    delta: float,
    L0: float,
    L1: float,
    L2: float,
    regime: str,
    accountant: str = ACCOUNTANT,
    K: int | None = None,
    T: int | None = None,
    step_size: float | None = None,
    enforce_privacy_cap: bool = True,
) -> Alg1Params:
    r"""K, T, B, eta of Algorithm 1 that attain the rates of Thm 3.1 [GGP24] (Spec A1).

    Derivation.  Let l = log dx + log dy and rho = log^{3/2} d sqrt(log(1/delta))/(n eps).

    1. SMD (Lemma 3.8 with the entropy, Juditsky-Nemirovski-Tauvel) on the product of simplices:
       E Gap <= l/(eta T) + eta L0^2 + [data noise ~ L0 sqrt(l/n)] + 4 b(K), where b(K) bounds the gradient
       bias of evaluating at vertex samples and 4 = (l1 diameter 2) x (two players).
    2. Privacy (Prop 3.3): eta <= eta_cap = eps0 B/(4 L0), B = floor(n/T), with eps0 the per-draw budget for
       k = 2 K T draws from the accountant; with advanced composition eps0 ~ eps/sqrt(8 K T log(1/delta)) (the
       default "best" allows a constant factor more), so at the cap l/(eta T) ~ 8 sqrt 2 L0 l
       sqrt(K T log(1/delta))/(eps n).
    3. Balancing: without the cap the best step is eta_stat = sqrt(l/T)/L0 (SMD term 2 L0 sqrt(l/T),
       decreasing in T); at the cap the SMD term grows like sqrt T.  So the best T is where the two step
       sizes cross, T* ~ eps n/sqrt(K log d log(1/delta)) (clipped to [1, n]), found here *exactly* with the
       accountant's eps0 by bisection; eta = min(eta_cap, eta_stat).  The SMD term is then
       ~ L0 sqrt(l/T*) ~ L0 K^{1/4} rho^{1/2}.
    4. Vertex-sampling bias: b(K) = 4 L1/sqrt K (Cor 2.6 with the smoothing step h = 2/sqrt K: the bias of a
       partial derivative is <= 4 L1/(K h) + L1 h), 2 L2/K (Cor 2.4), 0 when L2 = 0 (regime "quadratic",
       K = 1).  Minimizing L0 K^{1/4} rho^{1/2} + c/K^a over K gives K ~ rho^{-1/(2(a + 1/4))}, i.e.
       K ~ rho^{-2/3} (a = 1/2) and K ~ rho^{-2/5} (a = 1), and a private term rho^{1/3} and rho^{2/5};
       K = 1 gives rho^{1/2}.  Here K minimizes the bound l/(eta T*) + eta L0^2 + 4 b(K) numerically over
       integers (a geometric grid, then the neighbours of its best point), which realizes the same
       balance with the exact accountant; the absolute constants of the paper's O(.) are not tracked.

    For ``accountant`` in ("kov", "pld", "best") the (K, T) search prices eps0 with a cheaper valid accountant
    (DRV for KOV, RDP for PLD and best; one KOV evaluation costs O(2 K T), one PLD seconds); the grid over K
    reads RDP's eps0 from a log-log table of draw counts (cached per target), and T for the chosen K is balanced
    with the exact RDP eps0; eps0, the cap and eta are then the chosen accountant's.  The search is cached
    (sweeps call it with the same arguments).

    Parameters
    ----------
    n : int
        Number of records.
    d : int or (dx, dy)
        Dimensions of the two simplices.
    epsilon, delta : float
        Target (eps, delta); delta in (0, 1).
    L0, L1, L2 : float
        Constants w.r.t. ||.||_1 (L2 only used by "second_order").
    regime : {"first_order", "second_order", "quadratic"}
    accountant : str
        One of :data:`~dpsco_lib.privacy.accounting.budget.ACCOUNTANTS`.  Default ``"best"``, the tightest
        valid accountant (the largest eps0, hence the largest cap); ``"advanced"`` is DRV10 (the default of
        earlier versions); ``"paper"`` is the rule of seed 001 Cor 3.6.
    K, T, step_size : optional
        Fix some parameters; the others are chosen as above given them.  A given step size above the cap
        raises ``ValueError`` unless ``enforce_privacy_cap=False``.
    """
    n = check_int(n, "n", lo=1)
    dx, dy = saddle_dims(d)
    eps = check_epsilon(epsilon)
    dl = check_delta(delta, allow_zero=False)
    L0 = check_positive(L0, "L0")
    L1 = check_positive(L1, "L1", allow_zero=True)
    L2 = check_positive(L2, "L2", allow_zero=True, allow_inf=True)
    regime = _check_regime(regime)
    accountant = check_accountant(accountant)
    if regime == "second_order" and math.isinf(L2):
        raise ValueError("regime 'second_order' needs a finite L2")
    if K is not None:
        K = check_int(K, "K", lo=1, hi=_MAX_K)
    if T is not None:
        T = check_int(T, "T", lo=1, hi=n)
    if step_size is not None:
        step_size = check_positive(step_size, "step_size")
    log_d = max(math.log(dx) + math.log(dy), 1e-12)  # dx = dy = 1 is degenerate (Gap = 0); keep it finite
    rho = math.log(max(dx, dy, 2)) ** 1.5 * math.sqrt(math.log(1.0 / dl)) / (n * eps)
    K, T_used = _design(n, log_d, eps, dl, L0, L1, L2, regime, _DESIGN_ACCOUNTANT.get(accountant, accountant), K, T,
                        step_size)
    B = n // T_used
    n_draws = 2 * K * T_used
    eps0 = _eps0(eps, dl, n_draws, accountant)
    cap = eps0 * B / (4.0 * L0)
    if step_size is None:
        eta_used = _below_cap(min(cap, _eta_stat(log_d, T_used, L0)), eps0, B, L0)
    else:
        eta_used = step_size
    if eta_used > cap * (1 + 1e-12) and enforce_privacy_cap:
        raise ValueError(
            f"step_size = {eta_used!r} exceeds the privacy cap eps0 B/(4 L0) = {cap!r} (eps0 = {eps0!r} for "
            f"{n_draws} draws, B = {B}); pass enforce_privacy_cap=False to run anyway (the ledger then "
            "certifies the larger epsilon actually spent)"
        )
    smd, bias, stat = _terms(n, K, T_used, eta_used, L0, L1, L2, log_d, regime)
    return Alg1Params(
        K=int(K), T=int(T_used), B=int(B), eta=float(eta_used), eta_cap=float(cap), eps0=float(eps0),
        eps_draw=float(4.0 * eta_used * L0 / B), n_draws=int(n_draws), regime=regime, accountant=accountant,
        log_d=float(log_d), smd_term=float(smd), bias_term=float(bias), stat_term=float(stat),
        bound=float(smd + bias + stat), rho=float(rho), exponent=_EXPONENTS[regime],
    )


def _below_cap(eta: float, eps0: float, B: int, L0: float) -> float:
    """``eta`` lowered by the rounding of eps0 B/(4 L0) if needed, so that the spent 4 eta L0/B is <= eps0."""
    while 4.0 * eta * L0 / B > eps0:
        eta = math.nextafter(eta, 0.0)
    return eta


@lru_cache(maxsize=1024)
def _design(n: int, log_d: float, eps: float, dl: float, L0: float, L1: float, L2: float, regime: str,
            accountant: str, K: int | None, T: int | None, eta: float | None) -> tuple[int, int]:
    """(K, T) minimizing the bound of :func:`alg1_theory_params` (a utility search; eps0 from the budget path)."""
    decades = math.ceil(math.log10(2.0 * _MAX_K * n)) if accountant in _TABLE_ACCOUNTANTS else 0

    def evaluate(k: int) -> float:
        t = T if T is not None else _balanced_T(n, k, eps, dl, L0, log_d, accountant, decades)
        cap = _cap(n, t, k, eps, dl, L0, accountant, decades)
        e = eta if eta is not None else min(cap, _eta_stat(log_d, t, L0))
        smd, bias, _ = _terms(n, k, t, e, L0, L1, L2, log_d, regime)
        return smd + bias

    if K is None:
        if regime == "quadratic":
            K = 1
        else:
            grid = sorted({max(1, round(v)) for v in np.geomspace(1, _MAX_K, 61)})
            vals = [evaluate(k) for k in grid]
            i = int(np.argmin(vals))
            lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
            cand = sorted(set(np.unique(np.geomspace(lo, hi, 24).round().astype(int)).tolist()))
            K = min(cand, key=lambda k: (evaluate(k), k))
    t_used = T if T is not None else _balanced_T(n, K, eps, dl, L0, log_d, accountant)
    return int(K), int(t_used)


# ---------------------------------------------------------------------------------------------------------
# the algorithm
# ---------------------------------------------------------------------------------------------------------
def _core(problem: SaddleProblem, data: Dataset, K: int, T: int, B: int, eta: float, rng: np.random.Generator,
          m: int, keep_draws: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """m independent runs of Algorithm 1 at once; returns the output averages (m, dx), (m, dy) and optionally
    the draws (m, T, K) of each player."""
    dx, dy = problem.dx, problem.dy
    dm = max(dx, dy)
    # rows 2r (x of run r) and 2r + 1 (y of run r) of one padded log-state; padding = -inf (probability 0)
    log_state = np.full((m, 2, dm), -np.inf)
    log_state[:, 0, :dx] = -math.log(dx)
    log_state[:, 1, :dy] = -math.log(dy)
    sum_x = np.zeros((m, dx))
    sum_y = np.zeros((m, dy))
    draws_x = np.empty((m, T, K), dtype=np.int64) if keep_draws else None
    draws_y = np.empty((m, T, K), dtype=np.int64) if keep_draws else None
    rows = np.arange(m)[:, None]
    G = np.zeros((m, 2, dm))
    for t in range(T):
        idx = sample_categorical_log(log_state.reshape(2 * m, dm), rng=rng, size=K).reshape(m, 2, K)
        cx = np.bincount((idx[:, 0, :] + dx * rows).ravel(), minlength=m * dx).reshape(m, dx)
        cy = np.bincount((idx[:, 1, :] + dy * rows).ravel(), minlength=m * dy).reshape(m, dy)
        xt, yt = cx / K, cy / K
        sum_x += xt
        sum_y += yt
        if keep_draws:
            draws_x[:, t] = idx[:, 0]  # type: ignore[index]
            draws_y[:, t] = idx[:, 1]  # type: ignore[index]
        if t == T - 1:
            break  # the last step's update is never used (the output averages x~_1..x~_T)
        batch = data[t * B : (t + 1) * B]
        G[:, 0, :dx] = problem.grad_x(xt, yt, batch).mean(axis=1)
        G[:, 1, :dy] = -problem.grad_y(xt, yt, batch).mean(axis=1)  # ascent in y
        log_state = entropic_step_unchecked(log_state, G, eta)
    return sum_x / T, sum_y / T, draws_x, draws_y


def _resolve(problem: SaddleProblem, n: int, epsilon: float, delta: float, regime: str, K: Any, T: Any, eta: Any,
             accountant: str, enforce_privacy_cap: bool) -> Alg1Params:
    enforce_privacy_cap = check_bool(enforce_privacy_cap, "enforce_privacy_cap")
    regime = _check_regime(regime)
    if regime == "quadratic" and problem.L2 > 0:
        raise ValueError(f"regime 'quadratic' needs L2 = 0 (Thm 3.1 (7)), but the problem has L2 = {problem.L2!r}")
    if T is not None:
        check_int(T, "T", lo=1)
        if T > n:
            raise ValueError(f"T must be <= n = {n} (disjoint batches of size floor(n/T) >= 1), got {T}")
    return alg1_theory_params(
        n, d=(problem.dx, problem.dy), epsilon=epsilon, delta=delta, L0=problem.L0, L1=problem.L1, L2=problem.L2,
        regime=regime, accountant=accountant, K=K, T=T, step_size=eta, enforce_privacy_cap=enforce_privacy_cap,
    )


def _check_privacy_args(epsilon: Any, delta: Any, accountant: Any, rng: Any) -> tuple[float, float, str, Any]:
    """The privacy arguments of a runner, validated at the public boundary (in this order)."""
    return (check_epsilon(epsilon), check_delta(delta, allow_zero=False), check_accountant(accountant),
            check_rng(rng))


def _ledger(prm: Alg1Params) -> PrivacyLedger:
    led = PrivacyLedger()
    led.record_exponential(prm.eps_draw, count=prm.n_draws, label="Alg 1 vertex draws (Prop 3.3)")
    return led


def run_private_smd_saddle(
    problem: SaddleProblem,
    data: Dataset,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    regime: str = "first_order",
    K: int | None = None,
    T: int | None = None,
    step_size: float | None = None,
    accountant: str = ACCOUNTANT,
    enforce_privacy_cap: bool = True,
    trace: bool = False,
) -> Result:
    r"""Algorithm 1 of [GGP24]: (eps, delta)-DP entropic SMD with sampling from vertices (Spec A1, Thm 3.1).

    See the module docstring for the algorithm and its privacy proof, and :func:`alg1_theory_params` for the
    default K, T, B, eta.  The ledger records the 2 K T vertex draws as exponential mechanisms with
    eps_draw = 4 eta L0/B; it is the only certificate: ``result.certified_epsilon(delta, accountant=...)``
    (<= epsilon under the calibrating accountant whenever the privacy cap holds; the default ``"best"``, the
    minimum over DRV, KOV, RDP, both calibrates and certifies, and allows ~2.4x DRV's per-draw budget).

    Parameters
    ----------
    problem : SaddleProblem
        Simplices x_set, y_set; per-record grad_x, grad_y batched over points; constants L0, L1, L2.
    data : Dataset
        n records within the problem's declared bounds (checked).
    epsilon, delta : float
        Target privacy; delta in (0, 1).
    rng : numpy.random.Generator
    regime : {"first_order", "second_order", "quadratic"}
        Which rate of Thm 3.1 the default parameters target ("quadratic" requires L2 = 0).
    K, T, step_size : optional
        Override the theory parameters (K >= 1, 1 <= T <= n, step size > 0 and <= the privacy cap).
    accountant : str
        One of :data:`~dpsco_lib.privacy.accounting.budget.ACCOUNTANTS`: the accountant that calibrates the
        per-draw budget (see :func:`alg1_theory_params`).  Default ``"best"``, the tightest valid accountant;
        ``"advanced"`` is DRV10 (the default of earlier versions); ``"paper"`` is seed 001 Cor 3.6.
    enforce_privacy_cap : bool
        If False, a step size above the cap is accepted; the ledger then records the larger per-draw epsilon
        and the certificate exceeds the target.
    trace : bool
        Store the sampled vertex indices in ``result.trace`` (``"draws_x"``, ``"draws_y"``, shape (T, K)).

    Returns
    -------
    Result
        x, y the averages of the sampled iterates; params the Alg1Params fields; ledger (the certificate);
        info with the target and the accountant.
    """
    eps, dl, accountant, rng = _check_privacy_args(epsilon, delta, accountant, rng)
    trace = check_bool(trace, "trace")
    data = check_saddle_data(problem, data)
    prm = _resolve(problem, data.n, eps, dl, regime, K, T, step_size, accountant, enforce_privacy_cap)
    x, y, dx_, dy_ = _core(problem, data, prm.K, prm.T, prm.B, prm.eta, rng, 1, trace)
    draws = {"draws_x": dx_[0], "draws_y": dy_[0]} if trace else None  # type: ignore[index]
    info = {
        "method": "Algorithm 1 (GGP24), private SMD with vertex sampling",
        "target_epsilon": eps,
        "delta": dl,
        "accountant": accountant,
        "privacy_cap_enforced": bool(enforce_privacy_cap),
    }
    return Result(x=x[0], y=y[0], trace=draws, params=prm.as_dict(), ledger=_ledger(prm), info=info)


def run_private_smd_saddle_many(
    problem: SaddleProblem,
    data: Dataset,
    *,
    n_runs: int,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    regime: str = "first_order",
    K: int | None = None,
    T: int | None = None,
    step_size: float | None = None,
    accountant: str = ACCOUNTANT,
    enforce_privacy_cap: bool = True,
    chunk: int = 20_000,
) -> dict[str, Any]:
    """``n_runs`` independent runs of Algorithm 1 on the same data, vectorized across runs (for audits).

    Same algorithm and validation as :func:`run_private_smd_saddle`; returns a dict with ``x`` (n_runs, dx),
    ``y`` (n_runs, dy), ``draws_x``/``draws_y`` (n_runs, T, K), ``params`` and ``ledger`` (the ledger of one
    run, which every run shares).  Runs are processed ``chunk`` at a time to bound memory.
    """
    eps, dl, accountant, rng = _check_privacy_args(epsilon, delta, accountant, rng)
    n_runs = check_int(n_runs, "n_runs", lo=1)
    chunk = check_int(chunk, "chunk", lo=1)
    data = check_saddle_data(problem, data)
    prm = _resolve(problem, data.n, eps, dl, regime, K, T, step_size, accountant, enforce_privacy_cap)
    xs, ys, dxs, dys = [], [], [], []
    done = 0
    while done < n_runs:
        m = min(chunk, n_runs - done)
        x, y, a, b = _core(problem, data, prm.K, prm.T, prm.B, prm.eta, rng, m, True)
        xs.append(x)
        ys.append(y)
        dxs.append(a)
        dys.append(b)
        done += m
    return {
        "x": np.concatenate(xs), "y": np.concatenate(ys), "draws_x": np.concatenate(dxs),
        "draws_y": np.concatenate(dys), "params": prm.as_dict(), "ledger": _ledger(prm),
    }


def run_smd_saddle(
    problem: SaddleProblem,
    data: Dataset,
    *,
    rng: np.random.Generator,
    T: int | None = None,
    step_size: float | None = None,
) -> Result:
    """Non-private entropic SMD for the saddle problem: the baseline of notebook 09 (Spec A1).

    Same as Algorithm 1 without vertex sampling and without the privacy cap: disjoint batches of size
    B = floor(n/T) (default T = n, B = 1), gradients at the exact iterates (x_t, y_t), step size
    eta = sqrt(l/T)/L0 (l = log dx + log dy; E Gap <= 2 L0 sqrt(l/T); ``step_size`` overrides it), output the
    averages of x_t, y_t.  Deterministic given the data (``rng`` is accepted for API uniformity and not consumed).
    """
    check_rng(rng)
    data = check_saddle_data(problem, data)
    n = data.n
    T = n if T is None else check_int(T, "T", lo=1, hi=n)
    dx, dy = problem.dx, problem.dy
    log_d = max(math.log(dx) + math.log(dy), 1e-12)
    eta = _eta_stat(log_d, T, problem.L0) if step_size is None else check_positive(step_size, "step_size")
    B = n // T
    dm = max(dx, dy)
    log_state = np.full((2, dm), -np.inf)
    log_state[0, :dx] = -math.log(dx)
    log_state[1, :dy] = -math.log(dy)
    sx, sy = np.zeros(dx), np.zeros(dy)
    G = np.zeros((2, dm))
    for t in range(T):
        p = np.exp(log_state)
        xt, yt = p[0, :dx], p[1, :dy]
        sx += xt
        sy += yt
        if t == T - 1:
            break
        batch = data[t * B : (t + 1) * B]
        G[0, :dx] = problem.grad_x(xt, yt, batch).mean(axis=0)
        G[1, :dy] = -problem.grad_y(xt, yt, batch).mean(axis=0)
        log_state = entropic_step_unchecked(log_state, G, eta)
    x, y = sx / T, sy / T
    x, y = x / x.sum(), y / y.sum()
    params = {"T": T, "B": B, "eta": eta, "log_d": log_d, "rate_bound": 2 * problem.L0 * math.sqrt(log_d / T)}
    return Result(x=x, y=y, params=params, ledger=None, info={"method": "non-private entropic SMD (baseline)"})
