r"""MWEM: multiplicative weights with the exponential mechanism (Hardt, Ligett & McSherry 2012; Spec X1).

The baseline of the synthetic-data application X1 (notebook 13).  A finite universe of N items, the private
data as a histogram of counts h in N^N with n = sum_k h_k records (n is public, as in HLM12), linear queries
q_1..q_m in [0, 1]^N with answers q_j(h) = <q_j, h>.  MWEM keeps a public distribution A_t over the universe
(A_0 uniform, scaled to n records) and for t = 1..T:

1. **select** a query with the exponential mechanism, score u_j = |q_j(A_{t-1}) - q_j(h)| (counts scale):
   P(j) prop. to exp(eps_sel u_j/(2 Delta)), Delta = 1 (in log space, never normalizing exp of raw scores);
2. **measure** it with the Laplace mechanism: m_t = q_{j_t}(h) + Lap(1/eps_meas);
3. **multiplicative weights**: A_t(k) prop. to A_{t-1}(k) exp(q_{j_t}(k) (m_t - q_{j_t}(A_{t-1}))/(2n))
   (a log-space update), optionally followed by ``passes`` further sweeps over all measurements taken so far
   (HLM12 Section 3, "practical improvements"; post-processing, free).

Output: the average (1/T) sum_t A_t (normalized to a distribution), HLM12 Thm 2.2; ``output="last"`` returns A_T.

Privacy (replace-one relation).  Replacing one record moves two cells of h by -1 and +1, so every query count
moves by q_j(k') - q_j(k) in [-1, 1]: the score and the measured value have sensitivity Delta = 1.  Each round is
an eps_sel-DP exponential mechanism and an eps_meas-DP Laplace mechanism, chosen adaptively.

eps_sel = eps_meas = eps0, the largest per-mechanism budget whose 2T events (T exponential mechanisms and T
Laplace mechanisms, the events the ledger records) certify the target under the accountant ``accountant=``,
solved by :func:`~dpsco_lib.privacy.accounting.budget.calibrate` (the inverse of the ledger's certificate):

- ``accountant="best"`` (default): the tightest valid accountant.  At ``delta = 0`` (the default delta) every
  accountant is basic composition, so this is HLM12's eps0 = epsilon/(2T) bit for bit (pure epsilon-DP; the
  ledger's basic certificate is T (eps_sel + eps_meas) = epsilon); at ``delta > 0`` it is the largest eps0 that
  any valid accountant certifies (KOV15 or RDP, which charges the exponential mechanism as bounded-range).
- ``accountant="basic"`` (the default of earlier versions, HLM12): eps0 = epsilon/(2T) at every delta, pure
  epsilon-DP.
- ``accountant="advanced"``: (epsilon, delta)-DP by advanced composition (DRV10).  This is the comparison at
  equal (epsilon, delta) with Algorithm 1.  Any other accountant of
  :data:`~dpsco_lib.privacy.accounting.budget.ACCOUNTANTS` may be used.

Accuracy (HLM12 Thm 2.2, normalized by n): with probability >= 1 - 2T/|Q|^c,
max_j |q_j(avg A)/n - q_j(h)/n| <= 2 sqrt(log N/T) + 10 T log|Q|/(eps n); with eps = infinity (exact selection
and measurement) the first term alone bounds the error, which the tests check.  The choice
T ~ (eps n)^{2/3} (log N)^{1/3}/log^{2/3}|Q| balances the two terms (error ~ (log N log|Q|/(eps n))^{1/3});
:func:`mwem_theory_T` returns it.

The library works in the idealized real-arithmetic model (float64 weights and noise, non-cryptographic RNG).

Reference: M. Hardt, K. Ligett, F. McSherry, "A simple and practical algorithm for differentially private
data release", NeurIPS 2012 [HLM12].
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.special import logsumexp

from dpsco_lib._validation import check_array, check_delta, check_epsilon, check_int, check_rng
from dpsco_lib.algorithms._result import Result
from dpsco_lib.privacy.accounting import PrivacyLedger
from dpsco_lib.privacy.accounting.budget import calibrate, check_accountant, paper_rule_epsilon, per_step_epsilon
from dpsco_lib.privacy.accounting.events import ComposedEvent, ExponentialEvent, LaplaceEvent, SelfComposedEvent
from dpsco_lib.privacy.mechanisms import exponential_mechanism, laplace_mechanism

__all__ = ["ACCOUNTANT", "mwem_events", "mwem_per_round_epsilon", "mwem_theory_T", "run_mwem"]

ACCOUNTANT = "best"  # the default: the tightest valid accountant; at delta = 0 it is basic composition (HLM12)
OUTPUTS = ("average", "last")
_NEEDS_DELTA = ("advanced", "paper", "pld")


def mwem_events(eps0: float, *, T: int) -> ComposedEvent:
    """The events of one MWEM run with per-mechanism budget ``eps0``: T exponential-mechanism selections and T
    Laplace measurements (what the ledger records; their order does not change any certificate)."""
    sel = ExponentialEvent(eps0, label="MWEM query selection (HLM12)")
    meas = LaplaceEvent(eps0, label="MWEM Laplace measurement (HLM12)")
    return ComposedEvent((SelfComposedEvent(sel, T), SelfComposedEvent(meas, T)))


@lru_cache(maxsize=1024)
def _calibrated(eps: float, dl: float, T: int, accountant: str) -> float:
    # the one calibration path: calibrate() inverts the ledger's certificate on the run's exact events; the
    # closed forms (eps/(2T), DRV10 for 2T pure steps, the papers' rule) only seed it
    guess = {"paper": lambda: paper_rule_epsilon(eps, dl, 2 * T),
             "advanced": lambda: per_step_epsilon(eps, dl, 2 * T, accountant="advanced").value}
    seed = guess[accountant]() if accountant in guess else eps / (2.0 * T)
    return calibrate(lambda e0: mwem_events(e0, T=T), epsilon=eps, delta=dl, accountant=accountant,
                     bracket=(eps / (8.0 * T), eps), guess=seed).value


def mwem_per_round_epsilon(epsilon: float, *, T: int, delta: float = 0.0, accountant: str = ACCOUNTANT) -> float:
    """Budget eps0 of each of the 2T mechanisms (selection, measurement) of MWEM (Spec X1, HLM12).

    The largest eps0 whose run (:func:`mwem_events`) certifies (epsilon, delta) under ``accountant`` (one of
    :data:`~dpsco_lib.privacy.accounting.budget.ACCOUNTANTS`; cached): ``"best"`` (default) the tightest valid
    accountant (epsilon/(2T) at delta = 0), ``"basic"`` epsilon/(2T) (pure DP, HLM12), ``"advanced"`` the largest
    eps0 with sqrt(4T ln(1/delta)) eps0 + 2T eps0 (e^eps0 - 1) <= epsilon (DRV10 for k = 2T mechanisms).
    ``"advanced"``, ``"paper"`` and ``"pld"`` need delta in (0, 1).
    """
    eps = check_epsilon(epsilon)
    T = check_int(T, "T", lo=1)
    accountant = check_accountant(accountant)
    dl = check_delta(delta, allow_zero=accountant not in _NEEDS_DELTA)
    return _calibrated(eps, dl, T, accountant)


def mwem_theory_T(n: int, *, N: int, m: int, epsilon: float) -> int:
    r"""Number of rounds balancing the two terms of HLM12 Thm 2.2 (Spec X1).

    Minimizing 2 sqrt(log N/T) + 10 T log m/(eps n) over T gives
    T* = (eps n sqrt(log N)/(10 log m))^{2/3}, rounded and clipped to [1, 10^5].
    """
    n = check_int(n, "n", lo=1)
    N = check_int(N, "N", lo=2)
    m = check_int(m, "m", lo=1)
    eps = check_epsilon(epsilon)
    t = (eps * n * math.sqrt(math.log(N)) / (10.0 * math.log(max(m, 2)))) ** (2.0 / 3.0)
    return int(min(max(round(t), 1), 100_000))


def _check_histogram(histogram: Any) -> np.ndarray:
    h = check_array(histogram, "histogram", ndim=1)
    if np.any(h < 0) or np.any(h != np.round(h)):
        raise ValueError("histogram must hold non-negative integer counts (records per universe item)")
    if h.sum() < 1:
        raise ValueError("histogram must contain at least one record (sum >= 1)")
    if h.size < 2:
        raise ValueError(f"histogram must have a universe of at least 2 items, got {h.size}")
    return h


def _check_queries(queries: Any, N: int) -> np.ndarray:
    Q = check_array(queries, "queries", ndim=2)
    if Q.shape[1] != N:
        raise ValueError(f"queries must have shape (m, N) with N = {N} (the histogram length), got {Q.shape}")
    if np.any(Q < 0) or np.any(Q > 1):
        raise ValueError("queries must have entries in [0, 1] (sensitivity 1 per query)")
    return Q


def run_mwem(
    histogram: Any,
    queries: Any,
    *,
    epsilon: float,
    T: int,
    rng: np.random.Generator,
    delta: float = 0.0,
    accountant: str = ACCOUNTANT,
    passes: int = 0,
    output: str = "average",
) -> Result:
    r"""MWEM of [HLM12] (Spec X1): epsilon-DP (delta = 0) or (epsilon, delta)-DP synthetic distribution.

    See the module docstring for the algorithm and its privacy proof.

    Parameters
    ----------
    histogram : array (N,)
        Non-negative integer counts of the private records over the universe; n = sum (public).
    queries : array (m, N)
        Linear queries with entries in [0, 1].
    epsilon : float
        Total privacy budget.
    T : int
        Rounds (>= 1); :func:`mwem_theory_T` gives the HLM12 balance.
    rng : numpy.random.Generator
    delta : float
        The target delta (0, the default, for pure DP; in (0, 1) for ``"advanced"``, ``"paper"``, ``"pld"``).
    accountant : str
        How the per-mechanism budget is calibrated to the target (:func:`mwem_per_round_epsilon`): ``"best"``
        (default, the tightest valid accountant; HLM12's epsilon/(2T) at delta = 0), ``"basic"`` (HLM12, pure
        DP at every delta, the default of earlier versions), ``"advanced"`` (DRV10), ...
    passes : int
        Extra multiplicative-weights sweeps over all past measurements after each round (HLM12 Sec. 3; 0 =
        the textbook algorithm).
    output : {"average", "last"}
        Average of A_1..A_T (HLM12 Thm 2.2) or A_T.

    Returns
    -------
    Result
        ``x`` the synthetic distribution over the universe (sums to 1); ``trace`` with the selected queries
        and the measurements; ``ledger`` with T exponential-mechanism and T Laplace events (the only certificate:
        ``result.certified_epsilon(delta, accountant=...)``); ``info`` with the max query error of the output.
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    accountant = check_accountant(accountant)
    rng = check_rng(rng)
    h = _check_histogram(histogram)
    N = h.size
    Q = _check_queries(queries, N)
    T = check_int(T, "T", lo=1)
    passes = check_int(passes, "passes", lo=0)
    if output not in OUTPUTS:
        raise ValueError(f"output must be one of {OUTPUTS}, got {output!r}")
    eps0 = mwem_per_round_epsilon(eps, T=T, delta=dl, accountant=accountant)
    n = float(h.sum())
    true = Q @ h  # (m,) query counts on the data (only touched through the two mechanisms below)

    log_a = np.full(N, -math.log(N))  # log of the normalized A_t
    sum_a = np.zeros(N)
    sel = np.empty(T, dtype=np.int64)
    meas = np.empty(T)
    for t in range(T):
        a = np.exp(log_a)
        est = n * (Q @ a)
        j = int(exponential_mechanism(np.abs(est - true), sensitivity=1.0, epsilon=eps0, rng=rng))
        mt = float(laplace_mechanism(true[j], sensitivity=1.0, epsilon=eps0, rng=rng))
        sel[t], meas[t] = j, mt
        # multiplicative weights on the new measurement, then `passes` sweeps over all of them (HLM12 Sec. 3)
        log_a = _mw_update(log_a, Q[j], mt, n)
        for _ in range(passes):
            for s in range(t + 1):
                log_a = _mw_update(log_a, Q[sel[s]], meas[s], n)
        sum_a += np.exp(log_a)
    x = sum_a / T if output == "average" else np.exp(log_a)
    x = x / x.sum()

    led = PrivacyLedger()
    for ev in mwem_events(eps0, T=T).events:  # what ran: T selections, T measurements
        led.record(ev)
    info: dict[str, Any] = {
        "method": "MWEM (HLM12)",
        "target_epsilon": eps,
        "delta": dl,
        "accountant": accountant,
        "max_query_error": float(np.max(np.abs(Q @ x - true / n))),
    }
    params = {"T": T, "eps_per_mechanism": eps0, "accountant": accountant, "passes": passes, "output": output,
              "n": n, "N": N, "m": int(Q.shape[0])}
    return Result(x=x, trace={"selected": sel, "measurements": meas}, params=params, ledger=led, info=info)


def _mw_update(log_a: np.ndarray, q: np.ndarray, measured: float, n: float) -> np.ndarray:
    """log A <- log A + q (m - n <q, A>)/(2n), renormalized in log space (HLM12 step 3)."""
    est = n * float(q @ np.exp(log_a))
    z = log_a + q * ((measured - est) / (2.0 * n))
    return z - logsumexp(z)
