r"""Algorithm 5 of [GGP24]: DP-SCO over the simplex by anytime online-to-batch exponentiated gradient (Spec A5).

Problem (Spec A5): min_{x in X} F(x) = E_z f(x; z) with f(.; z) convex, L0-Lipschitz (||grad f||_inf <= L0)
and L1-smooth w.r.t. ||.||_1 (second-order regime: every partial derivative L2-smooth), X the simplex
Delta_d or the l1 ball r B_1^d.  The l1 ball is handled through its vertex representation: x = V^T w with
V = (r e_1, ..., r e_d, -r e_1, ..., -r e_d) and w in Delta_{2d}; in the weights the constants become
(r L0, r^2 L1, r^3 L2), and the gradient is V grad f(V^T w) = r (g, -g).

Algorithm 5 (seed 001, Section 4; parameters T, K, K', t0, tau, eta).  Disjoint batches B_1, ..., B_T of
size B = floor(n/T) (records beyond T B are unused); weights alpha_t = t, A_t = t (t + 1)/2; w_1 uniform.
For t = 1..T:

1. x_t = sum_{s<=t} alpha_s w_s / A_t (anytime online-to-batch average, Cutkosky 2019);
2. if t <= t0 or (t - t0) is a multiple of tau: draw K i.i.d. vertices of Cat(x_t) and set x~_t to their
   average (Maurey sparsification, :func:`~dpsco_lib.geometry.sparsify.maurey_counts`; released);
   otherwise keep x~_t = x~_{t-1} (lazy resampling);
3. g_t = grad f_{B_t}(x~_t) (batch mean);
4. exponentiated gradient on the weighted linear loss alpha_t <g_t, w>, in log space:
   log w_{t+1} = log w_t - eta alpha_t g_t - logsumexp(.), i.e. w_{t+1}(i) prop. to
   exp(-eta sum_{s<=t} alpha_s g_s(i)).

Output: the K'-vertex Maurey estimate of x_{T+1} (the last anytime average; its online-to-batch guarantee
needs no gradient at T + 1).  x_{T+1} itself is *not* released.

Privacy (Prop 4.3, derived for the replace-one relation).  Let u_s(S) = -eta sum_{r<s} alpha_r g_r(S).  The
released vertices fix the points where the gradients are taken, so, given them, replacing one record (which
sits in one batch r <= T) changes one g_r by at most 2 L0/B in l_inf, hence every u_s by at most
Delta = 2 eta alpha_T L0/B = 2 eta T L0/B in l_inf.  log w_s(i) = u_s(i) - logsumexp(u_s) (the log-sum-exp is
1-Lipschitz in l_inf, the log-sum-exp argument of the proof of Prop 4.3) changes by at most 2 Delta, and the
mixture x_t(i) = sum_s (alpha_s/A_t) w_s(i) by at most the same factor e^{2 Delta}.  So one draw from
Cat(x_t) is an exponential mechanism with score log x_t and is eps_draw = 2 Delta = 4 eta T L0/B -DP.  The
draws at t = 1 come from the uniform w_1 and cost nothing; the other K (n_resample - 1) lazy draws and the
K' output draws, N in total, compose adaptively.  The per-draw budget eps0 comes from the one calibration
path, :func:`~dpsco_lib.privacy.accounting.budget.per_step_epsilon` (N exponential-mechanism events, the events
the run records), with the accountant ``accountant=`` (default ``"best"``: the tightest valid accountant, for
these draws the RDP of the exponential mechanism as a bounded-range mechanism; ``"advanced"``: DRV10, the
default of earlier versions; ``"paper"``: the rule of seed 001 Cor 3.6); the step size is capped
by eta <= eta_cap = eps0 B/(4 T L0) and the ledger, the only certificate, records the N draws actually made
at eps_draw.  The bound is conservative: alpha_r <= alpha_T for the batch r of the changed
record, and the mixture with earlier (unaffected) w_s only dilutes the change.

Theory parameters: :func:`alg5_theory_params` (derivation in its docstring).

The library works in the idealized real-arithmetic model (float64 iterates and a non-cryptographic RNG).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from dpsco_lib._validation import check_bool, check_delta, check_epsilon, check_int, check_positive, check_rng
from dpsco_lib.algorithms._result import Result
from dpsco_lib.geometry.mirror import entropic_step_unchecked, entropic_step_with_weights
from dpsco_lib.geometry.sets import LpBall, Simplex
from dpsco_lib.geometry.sparsify import inverse_cdf_draws, maurey_counts
from dpsco_lib.privacy.accounting import PrivacyLedger
from dpsco_lib.privacy.accounting.budget import check_accountant, per_step_epsilon
from dpsco_lib.problems.base import Problem
from dpsco_lib.problems.dataset import Dataset

__all__ = [
    "ACCOUNTANT",
    "REGIMES",
    "Alg5Params",
    "alg5_resample_steps",
    "alg5_theory_params",
    "run_anytime_smd_sco",
    "run_anytime_smd_sco_many",
]

REGIMES = ("first_order", "second_order")
ACCOUNTANT = "best"  # the default: the tightest valid accountant (KOV15 / RDP / PLD, whichever certifies least)
_EXPONENTS = {"first_order": 2.0 / 5.0, "second_order": 1.0 / 2.0}
_MAX_K = 1_000_000


def _check_regime(regime: str) -> str:
    if regime not in REGIMES:
        raise ValueError(f"regime must be one of {REGIMES}, got {regime!r}")
    return regime


def alg5_resample_steps(T: int, *, t0: int, tau: int) -> np.ndarray:
    """The steps t in 1..T at which Algorithm 5 redraws its K vertices: t <= t0, then t0 + tau, t0 + 2 tau, ...

    Returns an int64 array (sorted, starting at 1).
    """
    T = check_int(T, "T", lo=1)
    t0 = check_int(t0, "t0", lo=1)
    tau = check_int(tau, "tau", lo=1)
    early = np.arange(1, min(t0, T) + 1, dtype=np.int64)
    late = np.arange(t0 + tau, T + 1, tau, dtype=np.int64)
    return np.concatenate([early, late])


def _n_resample(T: Any, t0: Any, tau: Any) -> Any:
    """Number of resampling steps (vectorized): min(t0, T) + floor((T - t0)/tau)_+."""
    return np.minimum(t0, T) + np.maximum(T - t0, 0) // tau


@dataclass(frozen=True)
class Alg5Params:
    """Hyperparameters of Algorithm 5 and the terms of the bound they minimize (Spec A5, Thm 4.2).

    Attributes
    ----------
    T, B : int
        Iterations and batch size floor(n/T).
    K, K_out : int
        Vertices per (re)draw and vertices of the released output (K' of the paper).
    t0, tau : int
        Redraw every step for t <= t0, then every tau steps.
    n_resample : int
        Number of redraw steps (the first, from the uniform w_1, is data independent).
    n_draws : int
        Data-dependent vertex draws N = K (n_resample - 1) + K_out (what the ledger records).
    eta, eta_cap : float
        Step size (the ``step_size`` keyword of the runners) and the privacy cap eps0 B/(4 T L0w).
    eps0, eps_draw : float
        Per-draw budget from the accountant for N draws; 4 eta T L0w/B actually spent (<= eps0 under the cap).
    regime, accountant, set_kind : str
        The regime of Thm 4.2, the accountant that calibrated eps0, the feasible set.
    n_vertices : int
        |V| = d (simplex) or 2d (l1 ball).
    log_v : float
        log |V| (Bregman radius of the uniform start).
    L0w, L1w, L2w : float
        Constants in the vertex weights (r L0, r^2 L1, r^3 L2).
    eg_term, bias_term, drift_term, lazy_term, output_term, stat_term, bound : float
        The terms of the bound model of :func:`alg5_theory_params` and their sum.
    rho : float
        log(|V|) sqrt(log(1/delta))/(n eps), the private scale of Thm 4.2.
    exponent : float
        2/5 (first order) or 1/2 (second order): the predicted exponent of the private term in n eps.
    """

    T: int
    B: int
    K: int
    K_out: int
    t0: int
    tau: int
    n_resample: int
    n_draws: int
    eta: float
    eta_cap: float
    eps0: float
    eps_draw: float
    regime: str
    accountant: str
    set_kind: str
    n_vertices: int
    log_v: float
    L0w: float
    L1w: float
    L2w: float
    eg_term: float
    bias_term: float
    drift_term: float
    lazy_term: float
    output_term: float
    stat_term: float
    bound: float
    rho: float
    exponent: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------------------------------------------
# the bound model (vectorized over parameter grids)
# ---------------------------------------------------------------------------------------------------------
# The accountant that prices the per-draw budget inside the design search (KOV costs O(k) per evaluation, PLD
# seconds: a cheap valid accountant of similar tightness stands in; the run's eps0 is the chosen accountant's).
_DESIGN_ACCOUNTANT = {"kov": "advanced", "pld": "rdp", "best": "rdp"}
# Nodes per decade of the draw-count table of the design search.  RDP has no closed-form per-draw budget (each
# node is a root solve over ~15 certificates, ~20 ms), so its table has 16 nodes per decade (log-log
# interpolation, relative error ~2e-4; the same (T, K, tau, K') as 64 nodes at the sizes checked, n = 2e3..4e5);
# the other design accountants keep 64.  Design only: the run's eps0 is exact.
_PER_DECADE = {"rdp": 16}
_PER_DECADE_DEFAULT = 64


@lru_cache(maxsize=8192)
def _eps0(epsilon: float, delta: float, n_draws: int, accountant: str) -> float:
    # the one calibration path: n_draws exponential-mechanism events certify (epsilon, delta).  Cached here too:
    # a design search evicts per_step_epsilon's own cache, and a PLD/KOV ("best") calibration takes seconds
    return per_step_epsilon(epsilon, delta, n_draws, accountant=accountant, mechanism="exponential").value


@lru_cache(maxsize=64)
def _eps0_table(eps: float, delta: float, accountant: str, decades: int) -> tuple[np.ndarray, np.ndarray]:
    """(log k, log eps0(k)) at :data:`_PER_DECADE` draw counts k per decade in [1, 10^decades] (budget path)."""
    per = _PER_DECADE.get(accountant, _PER_DECADE_DEFAULT)
    ks = np.unique(np.round(np.logspace(0.0, decades, decades * per + 1)).astype(np.int64))
    e0 = np.array([_eps0(eps, delta, int(k), accountant) for k in ks])
    return np.log(ks.astype(np.float64)), np.log(e0)


def _eps0_model(eps: float, delta: float, N: np.ndarray, accountant: str) -> np.ndarray:
    """Per-draw budget at the (10^4-10^5 distinct) draw counts of the design search: log-log interpolation of
    :func:`~dpsco_lib.privacy.accounting.budget.per_step_epsilon` between the nodes of :func:`_eps0_table`
    (relative error ~1e-5 at 64 nodes per decade, ~2e-4 at RDP's 16, exact at the nodes).  Design only: the
    run's eps0 and cap are computed by ``per_step_epsilon`` at the chosen N."""
    N = np.asarray(N, dtype=np.float64)
    decades = max(1, math.ceil(math.log10(max(float(N.max()), 10.0))))
    lk, le = _eps0_table(eps, delta, _DESIGN_ACCOUNTANT.get(accountant, accountant), decades)
    return np.exp(np.interp(np.log(N), lk, le))


def _model(n: int, lv: float, nv: int, eps: float, delta: float, L0: float, L1: float, L2: float, regime: str,
           accountant: str, T: np.ndarray, K: np.ndarray, tau: np.ndarray, Kout: np.ndarray,
           eta_fixed: float | None) -> dict[str, np.ndarray]:
    """Terms of the bound model for broadcast arrays of (T, K, tau, K_out); t0 = min(T, 2 tau)."""
    T = np.asarray(T, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    tau = np.asarray(tau, dtype=np.float64)
    Kout = np.asarray(Kout, dtype=np.float64)
    t0 = np.minimum(T, 2.0 * tau)
    B = np.floor(n / T)
    A = T * (T + 1) / 2.0
    N = K * (_n_resample(T, t0, tau) - 1) + Kout
    eps0 = _eps0_model(eps, delta, N, accountant)
    cap = eps0 * B / (4.0 * T * L0)
    # EG regret / A_T = a/eta + b eta; lazy correlation = c eta (see alg5_theory_params)
    a = lv / A
    b = L0**2 * (2 * T + 1) / 6.0
    s2 = (T * (T + 1) * (2 * T + 1) - t0 * (t0 + 1) * (2 * t0 + 1)) / 6.0
    sg2 = 2.0 * math.log(2.0 * nv) * L1**2 / K
    c = (tau - 1) * sg2 * s2 / A
    eta = np.minimum(cap, np.sqrt(a / (b + c))) if eta_fixed is None else np.full_like(T, eta_fixed)
    eg = a / eta + b * eta
    lazy = c * eta
    drift = 4.0 * L1 * (tau - 1) * (T - t0) / A
    bias = 8.0 * L1 / np.sqrt(K) if regime == "first_order" else 4.0 * L2 / K
    out = 2.0 * L1 / Kout
    total = eg + lazy + drift + bias + out
    return {"total": total, "eta": eta, "cap": cap, "eps0": eps0, "eg": eg, "lazy": lazy, "drift": drift,
            "bias": bias + 0 * T, "out": out + 0 * T}


def _geom_ints(lo: int, hi: int, num: int) -> np.ndarray:
    if hi <= lo:
        return np.array([lo], dtype=np.int64)
    return np.unique(np.round(np.geomspace(lo, hi, num)).astype(np.int64))


def _refine(center: int, grid: np.ndarray, lo: int, hi: int, num: int = 15) -> np.ndarray:
    i = int(np.searchsorted(grid, center))
    a = int(grid[max(i - 1, 0)])
    b = int(grid[min(i + 1, grid.size - 1)])
    return _geom_ints(max(lo, min(a, center)), min(hi, max(b, center)), num)


@lru_cache(maxsize=2048)
def _search(n: int, lv: float, nv: int, eps: float, delta: float, L0: float, L1: float, L2: float, regime: str,
            accountant: str, T_fix: int | None, K_fix: int | None, tau_fix: int | None, Kout_fix: int | None,
            eta_fix: float | None) -> tuple[int, int, int, int]:
    """Minimize the bound model over integer (T, K, tau, K_out) (geometric grids, then a local refinement)."""
    Tg = np.array([T_fix]) if T_fix is not None else _geom_ints(1, n, 36)
    Kg = np.array([K_fix]) if K_fix is not None else _geom_ints(1, _MAX_K, 31)
    taug = np.array([tau_fix]) if tau_fix is not None else _geom_ints(1, n, 30)
    Kog = np.array([Kout_fix]) if Kout_fix is not None else _geom_ints(1, _MAX_K, 31)

    def best(Tv: np.ndarray, Kv: np.ndarray, tv: np.ndarray, Kov: np.ndarray) -> tuple[int, int, int, int]:
        TT, KK, tt, KO = np.meshgrid(Tv, Kv, tv, Kov, indexing="ij")
        ok = tt <= TT
        m = _model(n, lv, nv, eps, delta, L0, L1, L2, regime, accountant, TT, KK, tt, KO, eta_fix)
        tot = np.where(ok, m["total"], np.inf)
        i = np.unravel_index(int(np.argmin(tot)), tot.shape)
        return int(TT[i]), int(KK[i]), int(tt[i]), int(KO[i])

    # coordinate-wise: (T, K, tau) at K_out = median grid value, then K_out, then (T, K, tau) again
    k_out = int(Kog[len(Kog) // 2])
    T_, K_, tau_, _ = best(Tg, Kg, taug, np.array([k_out]))
    _, _, _, k_out = best(np.array([T_]), np.array([K_]), np.array([tau_]), Kog)
    T_, K_, tau_, _ = best(Tg, Kg, taug, np.array([k_out]))
    # local refinement of every coordinate
    Tr = Tg if T_fix is not None else _refine(T_, Tg, 1, n)
    Kr = Kg if K_fix is not None else _refine(K_, Kg, 1, _MAX_K)
    taur = taug if tau_fix is not None else _refine(tau_, taug, 1, n)
    Kor = Kog if Kout_fix is not None else _refine(k_out, Kog, 1, _MAX_K)
    return best(Tr, Kr, taur, Kor)


def alg5_theory_params(
    n: int,
    *,
    n_vertices: int,
    epsilon: float,
    delta: float,
    L0: float,
    L1: float,
    L2: float,
    regime: str,
    accountant: str = ACCOUNTANT,
    set_kind: str = "simplex",
    T: int | None = None,
    K: int | None = None,
    K_out: int | None = None,
    tau: int | None = None,
    t0: int | None = None,
    step_size: float | None = None,
    enforce_privacy_cap: bool = True,
) -> Alg5Params:
    r"""T, B, K, K', t0, tau, eta of Algorithm 5 that attain the rates of Thm 4.2 [GGP24] (Spec A5).

    ``L0, L1, L2`` are the constants *in the vertex weights* (for the l1 ball of radius r: r L0, r^2 L1,
    r^3 L2; :func:`run_anytime_smd_sco` converts), ``n_vertices`` = |V|, l = log |V|.

    Derivation (expected excess risk of x_{T+1}, absolute constants kept as below, not the paper's O(.)).

    1. Anytime online-to-batch (Lemma 4.1) with alpha_t = t, A_T = T(T+1)/2:
       F(x_{T+1}) - F(x*) <= (1/A_T) sum_t alpha_t <grad F(x_t), w_t - x*>.  Writing
       grad F(x_t) = g_t + (grad F(x_t) - g_t), the g_t part is the regret of exponentiated gradient on the
       linear losses alpha_t <g_t, w>: l/eta + (eta/2) sum_t alpha_t^2 ||g_t||_inf^2, so
       EG = 2 l/(eta T (T+1)) + eta L0^2 (2T+1)/6  (= a/eta + b eta).
    2. Fresh draws (t <= t0): E g_t = E grad f(x~_t) and the bias of the Maurey estimate against the l1
       diameter 2 gives 2 b(K), b(K) = 4 L1/sqrt K (Cor 2.6, first order) or 2 L2/K (Cor 2.4, second order).
    3. Lazy steps (t > t0, last redraw at s > t - tau): the anytime average moves slowly,
       x_r - x_{r-1} = (alpha_r/A_r)(w_r - x_{r-1}), so ||x_t - x_s||_1 <= sum_{r=s+1}^t 4/(r+1) ~ 4 (t - s)/t,
       and the drift of the gradient costs alpha_t 2 L1 4 (t - s)/t per step, on average over a redraw cycle
       (t - s ~ (tau - 1)/2) 4 L1 (tau - 1): in total 4 L1 (tau - 1)(T - t0)/A_T.  The batch noise of g_t is
       independent of w_t, but the held sample x~_s is correlated with w_t (the steps s..t-1 used it);
       comparing w_t with the fictitious iterate driven by grad f_{B_r}(x_s) (proof of Thm 4.2) gives
       ||w_t - w~_t||_1 <= eta sum_{r=s}^{t-1} alpha_r ||grad f_{B_r}(x~_s) - grad f_{B_r}(x_s)||_inf
       ~ eta t (tau - 1) sigma_K, with sigma_K^2 = 2 log(2|V|) L1^2/K (bounded differences: one of the K
       vertices moves x~ by 2/K in l1; Cor 2.12/2.14), so the correlation term is c eta with
       c = (tau - 1) sigma_K^2 sum_{t>t0} t^2/A_T.
    4. Output sparsification (Cor 2.3): E F(x~) - F(x_{T+1}) <= 2 L1/K'.
    5. Privacy (Prop 4.3): N = K (n_resample - 1) + K' draws at 4 eta T L0/B each, so
       eta <= eta_cap = eps0(N) B/(4 T L0), eps0 from the accountant.  With eta = min(eta_cap, sqrt(a/(b+c))):
       at the cap, EG ~ l sqrt(N log(1/delta)) L0/(eps n) with N ~ K T/tau.
    6. Rates.  Let m = eps n/(l sqrt(log 1/delta)), r = T/tau.  Second order: EG ~ sqrt(K r)/m, drift ~ 1/r,
       bias ~ 1/K, so K ~ r ~ sqrt m, T ~ eps n (the cap binds only for T >~ m), tau ~ T/sqrt m, t0 = 2 tau,
       K' ~ sqrt m: every term is ~ m^{-1/2}, the log d/sqrt(n eps) of Thm 4.2.  First order: bias ~ K^{-1/2},
       r ~ K^{1/2}, EG ~ K^{3/4}/m, so K ~ m^{4/5}, r ~ m^{2/5}, K' ~ m^{2/5}: the private term is m^{-2/5},
       the (n eps)^{-2/5} of Thm 4.2.  Without the lazy redraws (tau = 1) the same model gives m^{-1/3}
       and m^{-2/5} (the exponents of Algorithm 1).

    Here t0 = min(T, 2 tau) (before ~2 tau the drift bound 4 (t - s)/t is vacuous) and (T, K, tau, K')
    minimize the model numerically over integer geometric grids and a local refinement (the cap inside the
    search interpolates the budget path's eps0 on a table of draw counts, with DRV standing in for KOV and RDP for
    PLD and best; the returned eps0 and eta_cap are the chosen accountant's, from ``per_step_epsilon``).
    The statistical term L0 sqrt(l/n) is reported but does not depend on the parameters.

    Parameters
    ----------
    n : int
        Number of records.
    n_vertices : int
        |V| >= 2.
    epsilon, delta : float
        Target (eps, delta); delta in (0, 1).
    L0, L1, L2 : float
        Constants in the weights (L2 only enters the "second_order" regime).
    regime : {"first_order", "second_order"}
    accountant : str
        One of :data:`~dpsco_lib.privacy.accounting.budget.ACCOUNTANTS`.  Default ``"best"``, the tightest
        valid accountant (the largest eps0, hence the largest cap); ``"advanced"`` is DRV10 (the default of
        earlier versions); ``"paper"`` is the rule of seed 001 Cor 3.6.
    set_kind : str
        Label stored in the result ("simplex" or "l1_ball").
    T, K, K_out, tau, t0, step_size : optional
        Fix some parameters; the others are chosen as above given them (t0 defaults to min(T, 2 tau)).  A step
        size above the cap raises ``ValueError`` unless ``enforce_privacy_cap=False``.
    """
    n = check_int(n, "n", lo=1)
    nv = check_int(n_vertices, "n_vertices", lo=2)
    eps = check_epsilon(epsilon)
    dl = check_delta(delta, allow_zero=False)
    L0 = check_positive(L0, "L0")
    L1 = check_positive(L1, "L1", allow_zero=True)
    L2 = check_positive(L2, "L2", allow_zero=True, allow_inf=True)
    regime = _check_regime(regime)
    accountant = check_accountant(accountant)
    enforce_privacy_cap = check_bool(enforce_privacy_cap, "enforce_privacy_cap")
    if regime == "second_order" and math.isinf(L2):
        raise ValueError("regime 'second_order' needs a finite L2")
    T = None if T is None else check_int(T, "T", lo=1, hi=n)
    K = None if K is None else check_int(K, "K", lo=1, hi=_MAX_K)
    K_out = None if K_out is None else check_int(K_out, "K_out", lo=1, hi=_MAX_K)
    tau = None if tau is None else check_int(tau, "tau", lo=1, hi=n)
    if T is not None and tau is not None and tau > T:
        raise ValueError(f"tau must be <= T = {T}, got {tau}")
    t0 = None if t0 is None else check_int(t0, "t0", lo=1)
    eta = None if step_size is None else check_positive(step_size, "step_size")
    lv = math.log(nv)
    T_, K_, tau_, Ko_ = _search(n, lv, nv, eps, dl, L0, L1, L2, regime, accountant, T, K, tau, K_out, eta)
    t0_ = min(T_, 2 * tau_) if t0 is None else t0
    m = _model(n, lv, nv, eps, dl, L0, L1, L2, regime, accountant, np.array([T_]), np.array([K_]),
               np.array([tau_]), np.array([Ko_]), eta)
    B = n // T_
    n_res = int(_n_resample(T_, t0_, tau_))
    N = K_ * (n_res - 1) + Ko_
    eps0 = _eps0(eps, dl, N, accountant)
    cap = eps0 * B / (4.0 * T_ * L0)
    if eta is None:
        a = lv / (T_ * (T_ + 1) / 2.0)
        b = L0**2 * (2 * T_ + 1) / 6.0
        c = float(m["lazy"][0] / m["eta"][0]) if m["eta"][0] > 0 else 0.0
        eta_used = min(cap, math.sqrt(a / (b + c)))
        while 4.0 * eta_used * T_ * L0 / B > eps0:  # the rounding of eps0 B/(4 T L0): spend at most eps0
            eta_used = math.nextafter(eta_used, 0.0)
    else:
        eta_used = eta
    if eta_used > cap * (1 + 1e-12) and enforce_privacy_cap:
        raise ValueError(
            f"step_size = {eta_used!r} exceeds the privacy cap eps0 B/(4 T L0) = {cap!r} (eps0 = {eps0!r} for {N} "
            f"draws, B = {B}, T = {T_}); pass enforce_privacy_cap=False to run anyway (the ledger then certifies the "
            "larger epsilon actually spent)"
        )
    # the terms at the parameters actually used (t0 may have been fixed by the caller)
    mm = _model(n, lv, nv, eps, dl, L0, L1, L2, regime, accountant, np.array([T_]), np.array([K_]),
                np.array([tau_]), np.array([Ko_]), eta_used)
    A = T_ * (T_ + 1) / 2.0
    drift = 4.0 * L1 * (tau_ - 1) * max(T_ - t0_, 0) / A
    stat = L0 * math.sqrt(lv / n)
    eg, lazy, bias, out = (float(mm[k][0]) for k in ("eg", "lazy", "bias", "out"))
    rho = lv * math.sqrt(math.log(1.0 / dl)) / (n * eps)
    return Alg5Params(
        T=int(T_), B=int(B), K=int(K_), K_out=int(Ko_), t0=int(t0_), tau=int(tau_), n_resample=n_res,
        n_draws=int(N), eta=float(eta_used), eta_cap=float(cap), eps0=float(eps0),
        eps_draw=float(4.0 * eta_used * T_ * L0 / B), regime=regime, accountant=accountant, set_kind=set_kind,
        n_vertices=nv, log_v=lv, L0w=L0, L1w=L1, L2w=L2, eg_term=eg, bias_term=bias, drift_term=float(drift),
        lazy_term=lazy, output_term=out, stat_term=stat, bound=eg + bias + drift + lazy + out + stat,
        rho=rho, exponent=_EXPONENTS[regime],
    )


# ---------------------------------------------------------------------------------------------------------
# the algorithm
# ---------------------------------------------------------------------------------------------------------
def _geometry(problem: Any) -> tuple[str, int, float]:
    """(set_kind, |V|, radius) of the vertex representation; ValueError for other sets or setups."""
    if not isinstance(problem, Problem):
        raise ValueError(f"problem must be a dpsco_lib.problems.Problem, got {type(problem).__name__}")
    if float(problem.p) != 1.0:
        raise ValueError(f"Algorithm 5 works in the l1 setup (problem.p = 1), got p = {problem.p!r}")
    fset = problem.feasible_set
    if isinstance(fset, Simplex):
        return "simplex", fset.d, 1.0
    if isinstance(fset, LpBall) and float(fset.p) == 1.0:
        return "l1_ball", 2 * fset.d, float(fset.radius)
    raise ValueError(f"Algorithm 5 needs a Simplex or an l1 ball (L1Ball) feasible set, got {type(fset).__name__}")


def _resolve(problem: Problem, n: int, epsilon: float, delta: float, regime: str, accountant: str,
             hyper: dict[str, Any], enforce_privacy_cap: bool) -> tuple[Alg5Params, float]:
    kind, nv, r = _geometry(problem)
    regime = _check_regime(regime)
    T = hyper.get("T")
    if T is not None:
        check_int(T, "T", lo=1)
        if T > n:
            raise ValueError(f"T must be <= n = {n} (disjoint batches of size floor(n/T) >= 1), got {T}")
    prm = alg5_theory_params(
        n, n_vertices=nv, epsilon=epsilon, delta=delta, L0=r * problem.L0, L1=r * r * problem.L1,
        L2=r**3 * problem.L2, regime=regime, accountant=accountant, set_kind=kind,
        enforce_privacy_cap=enforce_privacy_cap, **hyper,
    )
    return prm, r


def _maurey_rows(P: np.ndarray, K: int, rng: np.random.Generator) -> np.ndarray:
    """Multinomial(K, P[r]) counts for every row r of P (m, V) at once, by inversion (the row-wise version of
    :func:`~dpsco_lib.geometry.sparsify.maurey_counts`, whose single-row law it shares; used by the
    vectorized audit runs).  Rows are shifted by their index so one ``searchsorted`` serves all rows; equal
    cumulative sums stay equal after the shift, so zero-probability vertices are never drawn."""
    m, v = P.shape
    cdf = np.cumsum(P, axis=1)
    cdf /= cdf[:, -1:]
    off = np.arange(m, dtype=np.float64)[:, None]
    flat = (cdf + off).ravel()
    u = rng.random((m, K)) + off
    idx = np.searchsorted(flat, u.ravel(), side="right").reshape(m, K) - (off.astype(np.int64) * v)
    idx = np.clip(idx, 0, v - 1)
    rows = np.arange(m)[:, None] * v
    return np.bincount((idx + rows).ravel(), minlength=m * v).reshape(m, v)


def _core(problem: Problem, data: Dataset, prm: Alg5Params, radius: float, rng: np.random.Generator,
          eta_sampler: float, m: int, keep_trace: bool) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray] | None]:
    """m independent runs on the same data; returns the outputs (m, d), the output counts (m, |V|) and, for
    m = 1 with ``keep_trace``, the trace.  One run (m = 1) draws through
    :func:`~dpsco_lib.geometry.sparsify.maurey_counts`; m > 1 through the row-wise :func:`_maurey_rows`.
    Within a step the runs whose released points coincide share one gradient evaluation (the batch is the
    same), so audits with K = 1 cost at most |V| gradient calls per step."""
    T, B, K, nv = prm.T, prm.B, prm.K, prm.n_vertices
    d = problem.d
    l1 = prm.set_kind == "l1_ball"
    redraw = np.zeros(T + 1, dtype=bool)
    redraw[alg5_resample_steps(T, t0=prm.t0, tau=prm.tau)] = True
    log_w = np.full((m, nv), -math.log(nv))
    x_avg = np.full((m, nv), 1.0 / nv)  # x_1 = w_1
    grad_of = problem._mean_grad  # records validated by the caller; released points are feasible by construction

    def draw(P: np.ndarray, k: int) -> np.ndarray:
        if m > 1:
            return _maurey_rows(P, k, rng)
        if k < nv:
            # the inversion branch of maurey_counts without its per-call validation (x_avg is a convex
            # combination of softmax vectors, hence a valid point of the simplex): same draws, same stream
            return np.bincount(inverse_cdf_draws(P[0], (k,), rng), minlength=nv)[None, :]
        return maurey_counts(P[0], k, rng)[None, :]

    trace = keep_trace and m == 1
    if trace:
        tr_logw = np.empty((T + 1, nv))
        tr_x = np.empty((T + 1, nv))
        tr_g = np.empty((T, nv))
        tr_tilde = np.empty((int(redraw.sum()), nv))
        tr_logw[0], tr_x[0] = log_w[0], x_avg[0]
    points = np.empty((1, d))
    inverse = np.zeros(m, dtype=np.int64)
    gw = np.empty((m, nv))
    j = 0
    for t in range(1, T + 1):
        if redraw[t]:
            counts = draw(x_avg, K)
            tilde = counts / K
            # distinct released points: identical rows share one gradient evaluation
            if m == 1:
                first, inverse = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
            else:
                key = counts.argmax(axis=1) if K == 1 else counts
                _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
                inverse = inverse.ravel()
            tu = tilde[first]
            points = radius * (tu[:, :d] - tu[:, d:]) if l1 else tu
            if trace:
                tr_tilde[j] = tilde[0]
            j += 1
        batch = data[(t - 1) * B : t * B]
        g = grad_of(points[0], batch)[None, :] if m == 1 else np.stack([grad_of(pt, batch) for pt in points])[inverse]
        if l1:
            gw[:, :d] = radius * g
            gw[:, d:] = -radius * g
        else:
            gw[:] = g
        # w_{t+1} prop. to w_t exp(-eta alpha_t g_t), alpha_t = t; x_{t+1} = (A_t x_t + alpha_{t+1} w_{t+1})/A_{t+1}
        if m == 1:
            lw1, w1 = entropic_step_with_weights(log_w[0], gw[0], eta_sampler * t)
            log_w[0] = lw1
            x_avg += (2.0 / (t + 2)) * (w1 - x_avg)
        else:
            log_w = entropic_step_unchecked(log_w, gw, eta_sampler * t)
            x_avg += (2.0 / (t + 2)) * (np.exp(log_w) - x_avg)
        if trace:
            tr_logw[t], tr_x[t], tr_g[t - 1] = log_w[0], x_avg[0], gw[0]
    out_counts = draw(x_avg, prm.K_out)
    out = out_counts / prm.K_out
    x = radius * (out[:, :d] - out[:, d:]) if l1 else out
    tr = None
    if trace:
        tr = {
            "alpha": np.arange(1, T + 1, dtype=np.float64),
            "redraw_steps": np.flatnonzero(redraw).astype(np.int64),
            "log_w": tr_logw,
            "x_avg": tr_x,
            "grad_weights": tr_g,
            "x_tilde_weights": tr_tilde,
            "output_counts": out_counts[0],
        }
    return x, out_counts, tr


def _ledger(prm: Alg5Params) -> PrivacyLedger:
    led = PrivacyLedger()
    lazy = prm.K * (prm.n_resample - 1)
    if lazy > 0:
        led.record_exponential(prm.eps_draw, count=lazy, label="Alg 5 lazy vertex draws (Prop 4.3)")
    led.record_exponential(prm.eps_draw, count=prm.K_out, label="Alg 5 output draws (Prop 4.3)")
    return led


def _hyper(T: Any, K: Any, K_out: Any, tau: Any, t0: Any, step_size: Any) -> dict[str, Any]:
    return {"T": T, "K": K, "K_out": K_out, "tau": tau, "t0": t0, "step_size": step_size}


def _check_inputs(problem: Any, data: Any, epsilon: Any, delta: Any, accountant: Any, rng: Any,
                  mult: Any) -> tuple[Dataset, float, float, str, np.random.Generator, float]:
    """The public boundary of the runners: privacy arguments, the problem's kind, the data and its bounds."""
    eps, dl = check_epsilon(epsilon), check_delta(delta, allow_zero=False)
    accountant = check_accountant(accountant)
    rng = check_rng(rng)
    mult = check_positive(mult, "_eta_multiplier")
    _geometry(problem)
    if not isinstance(data, Dataset):
        raise ValueError(f"data must be a dpsco_lib.problems.Dataset, got {type(data).__name__}")
    return problem.validate_data(data), eps, dl, accountant, rng, mult


def run_anytime_smd_sco(
    problem: Problem,
    data: Dataset,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    regime: str = "first_order",
    T: int | None = None,
    K: int | None = None,
    K_out: int | None = None,
    tau: int | None = None,
    t0: int | None = None,
    step_size: float | None = None,
    accountant: str = ACCOUNTANT,
    enforce_privacy_cap: bool = True,
    trace: bool = False,
    _eta_multiplier: float = 1.0,
) -> Result:
    r"""Algorithm 5 of [GGP24]: (eps, delta)-DP anytime online-to-batch exponentiated gradient (Spec A5, Thm 4.2).

    See the module docstring for the algorithm and its privacy proof and :func:`alg5_theory_params` for the
    default T, K, K', t0, tau, eta.  Single pass over the data, O(n d + (#redraws) (d + K) + T d) work.

    Parameters
    ----------
    problem : Problem
        Convex problem in the l1 setup (p = 1) over a Simplex or an l1 ball; constants L0, L1, L2.
    data : Dataset
        n records within the problem's declared bounds (checked).
    epsilon, delta : float
        Target privacy; delta in (0, 1).
    rng : numpy.random.Generator
        The only source of randomness.
    regime : {"first_order", "second_order"}
        Which rate of Thm 4.2 the default parameters target.
    T, K, K_out, tau, t0, step_size : optional
        Override the theory parameters (1 <= T <= n, K, K_out >= 1, 1 <= tau <= T, t0 >= 1,
        0 < step_size <= cap).
    accountant : str
        One of :data:`~dpsco_lib.privacy.accounting.budget.ACCOUNTANTS`: the accountant that calibrates the
        per-draw budget.  Default ``"best"``, the tightest valid accountant; ``"advanced"`` is DRV10 (the default
        of earlier versions); ``"paper"`` is seed 001 Cor 3.6.
    enforce_privacy_cap : bool
        If False a step size above the cap is accepted; the ledger records the larger per-draw epsilon.
    trace : bool
        Store ``alpha``, ``redraw_steps``, ``log_w`` (T+1, |V|), ``x_avg`` (T+1, |V|; x_1..x_{T+1}),
        ``grad_weights`` (T, |V|), ``x_tilde_weights`` and ``output_counts`` in ``result.trace`` (memory
        O(T |V|); the non-released ``x_avg`` is for tests and diagnostics only).
    _eta_multiplier : float
        Private test hook: the sampler uses ``eta * _eta_multiplier`` while the ledger keeps the certified
        ``eta`` (``2.0`` is the deliberately broken variant the audits must catch); never pass it otherwise.

    Returns
    -------
    Result
        x the K'-vertex output in R^d; params the Alg5Params fields; ledger (the only certificate:
        ``result.certified_epsilon(delta)``); info with the target and the accountant.
    """
    data, eps, dl, accountant, rng, mult = _check_inputs(problem, data, epsilon, delta, accountant, rng,
                                                          _eta_multiplier)
    trace = check_bool(trace, "trace")
    prm, r = _resolve(problem, data.n, eps, dl, regime, accountant, _hyper(T, K, K_out, tau, t0, step_size),
                      enforce_privacy_cap)
    xs, _, tr = _core(problem, data, prm, r, rng, prm.eta * mult, 1, trace)
    info = {
        "method": "Algorithm 5 (GGP24), anytime online-to-batch EG with lazy vertex sampling",
        "spec": "A5",
        "target_epsilon": eps,
        "delta": dl,
        "accountant": accountant,
        "privacy_cap_enforced": bool(enforce_privacy_cap),
        "gradient_evaluations": prm.T * prm.B,
        "eta_multiplier_hook": mult,
    }
    return Result(x=xs[0], trace=tr, params=prm.as_dict(), ledger=_ledger(prm), info=info)


def run_anytime_smd_sco_many(
    problem: Problem,
    data: Dataset,
    *,
    n_runs: int,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    regime: str = "first_order",
    T: int | None = None,
    K: int | None = None,
    K_out: int | None = None,
    tau: int | None = None,
    t0: int | None = None,
    step_size: float | None = None,
    accountant: str = ACCOUNTANT,
    enforce_privacy_cap: bool = True,
    _eta_multiplier: float = 1.0,
) -> dict[str, Any]:
    """``n_runs`` independent runs of Algorithm 5 on the same data (for audits; Spec A5).

    Same algorithm and validation as :func:`run_anytime_smd_sco` (parameters resolved once), vectorized across
    runs (row-wise Maurey draws; runs that release the same point share a gradient evaluation); returns a dict
    with ``x`` (n_runs, d), ``output_counts`` (n_runs, |V|), ``params`` and ``ledger`` (shared by every run).
    Memory O(n_runs |V|).
    """
    data, eps, dl, accountant, rng, mult = _check_inputs(problem, data, epsilon, delta, accountant, rng,
                                                          _eta_multiplier)
    n_runs = check_int(n_runs, "n_runs", lo=1)
    prm, r = _resolve(problem, data.n, eps, dl, regime, accountant, _hyper(T, K, K_out, tau, t0, step_size),
                      enforce_privacy_cap)
    xs, counts, _ = _core(problem, data, prm, r, rng, prm.eta * mult, n_runs, False)
    return {"x": xs, "output_counts": counts, "params": prm.as_dict(), "ledger": _ledger(prm)}
