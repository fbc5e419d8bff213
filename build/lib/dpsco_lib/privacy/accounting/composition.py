"""Composition of pure eps-DP steps (basic, DRV10, KOV15, inverse solvers, seed 001 Cor 3.6) and the fully
adaptive composition filter of WRRW23 (seed 001 Thm 3.5). Spec P3."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy import special

from dpsco_lib._validation import (
    check_array,
    check_bool,
    check_delta,
    check_epsilon,
    check_int,
    check_positive,
)
from dpsco_lib.privacy.accounting._common import _check_epsilons, _conservative_root, _expm1_or_inf, _sq

# ----------------------------------------------------------------------------------------------------------------
# Composition of pure eps-DP steps (Spec P3)
# ----------------------------------------------------------------------------------------------------------------


def basic_composition(
    epsilons: Sequence[float] | np.ndarray, *, deltas: Sequence[float] | np.ndarray | None = None
) -> tuple[float, float]:
    """Basic composition: (eps_i, delta_i)-DP steps compose to (sum eps_i, sum delta_i)-DP (DR14 Thm 3.16)."""
    eps = _check_epsilons(epsilons)
    if deltas is None:
        return float(eps.sum()), 0.0
    dl = check_array(deltas, "deltas", shape=eps.shape)
    if np.any(dl < 0) or np.any(dl >= 1):
        raise ValueError("deltas must all lie in [0, 1)")
    return float(eps.sum()), float(min(dl.sum(), 1.0))


def advanced_composition_epsilon(eps0: float, *, k: int, delta_prime: float) -> float:
    r"""Advanced composition (DRV10; DR14 Thm 3.20) of ``k`` adaptive eps0-DP steps.

    .. math:: \varepsilon = \sqrt{2k\ln(1/\delta')}\,\varepsilon_0 + k\varepsilon_0(e^{\varepsilon_0}-1),

    with total delta ``k delta0 + delta'`` (here delta0 = 0: pass ``delta'`` only). ``inf`` (vacuous, never an
    OverflowError) where :math:`e^{\varepsilon_0}` overflows float64 (eps0 beyond ~709.78). Spec P3.
    """
    eps0 = check_epsilon(eps0, "eps0")
    k = check_int(k, "k", lo=1)
    delta_prime = check_delta(delta_prime, "delta_prime", allow_zero=False)
    # same float64 expression as the ledger's "advanced" certificate (PrivacyLedger.epsilon)
    return _drv_from_sums(k * eps0 * eps0, k * eps0 * _expm1_or_inf(eps0), delta_prime)


def advanced_composition_epsilon_heterogeneous(epsilons: Sequence[float] | np.ndarray, *, delta_prime: float) -> float:
    r"""Heterogeneous advanced composition (DRV10, same Azuma argument):
    :math:`\sqrt{2\ln(1/\delta')\sum_i\varepsilon_i^2} + \sum_i \varepsilon_i(e^{\varepsilon_i}-1)`. Spec P3."""
    eps = _check_epsilons(epsilons)
    delta_prime = check_delta(delta_prime, "delta_prime", allow_zero=False)
    with np.errstate(over="ignore"):  # e^eps beyond float64 (eps > ~709.78): the bound is +inf
        return _drv_from_sums(float(np.sum(eps**2)), float(np.sum(eps * np.expm1(eps))), delta_prime)


def _drv_from_sums(s2: float, s1: float, delta_prime: float) -> float:
    return math.sqrt(2 * math.log(1 / delta_prime) * s2) + s1


def advanced_composition_per_step_epsilon(
    eps_total: float, *, delta_total: float, k: int, delta0: float = 0.0
) -> float:
    """Largest eps0 such that k adaptive (eps0, delta0)-DP steps are (eps_total, delta_total)-DP by DRV10.

    Solves ``sqrt(2k ln(1/delta')) eps0 + k eps0 (e^eps0 - 1) = eps_total`` with ``delta' = delta_total - k
    delta0`` by brentq, rounded down so the returned eps0 never exceeds the target. The left side is increasing
    in eps0 and at least eps_total at ``eps_total / sqrt(2k ln(1/delta'))``, the bracket's upper end; where that
    end is so large that the left side is not finite in float64 (e^eps0 overflows past ~709.78) the end is
    lowered by bisection to a point where it is finite and still >= eps_total (the root is always below 709.78,
    since k eps0 (e^eps0 - 1) alone exceeds every float64 there). Spec P3.
    """
    eps_total = check_epsilon(eps_total, "eps_total")
    delta_total = check_delta(delta_total, "delta_total", allow_zero=False)
    k = check_int(k, "k", lo=1)
    delta0 = check_delta(delta0, "delta0")
    delta_prime = delta_total - k * delta0
    if delta_prime <= 0:
        raise ValueError(f"delta_total={delta_total!r} must exceed k*delta0={k * delta0!r}")
    c = math.sqrt(2 * k * math.log(1 / delta_prime))

    def fn(e0: float) -> float:
        # the exact expression of advanced_composition_epsilon, so the round trip certifies <= eps_total
        return _drv_from_sums(k * e0 * e0, k * e0 * _expm1_or_inf(e0), delta_prime) - eps_total

    lo, hi = 0.0, eps_total / c
    f_hi = fn(hi)
    while not math.isfinite(f_hi):  # only when e^hi or k hi e^hi overflows; fn(lo) <= 0 < fn(hi) is kept
        mid = 0.5 * (lo + hi)
        f_mid = fn(mid)
        if f_mid <= 0:
            lo = mid
        else:
            hi, f_hi = mid, f_mid
    if f_hi < 0:
        # fn(eps_total / c) >= 0 in exact arithmetic; < 0 in float only when the DRV term underflows
        # (eps_total ~ 1e-300): then hi itself certifies <= eps_total and is the answer up to rounding
        return hi
    return _conservative_root(fn, lo, hi, feasible_below=True)


def cor36_per_step_epsilon(epsilon: float, *, delta: float, k: int) -> float:
    r"""Seed 001 Cor 3.6 rule: :math:`\varepsilon_0 = \varepsilon / (2\sqrt{2k\log(1/\delta)})`, for eps <= 1.

    The paper derives it from the WRRW23 filter (Thm 3.5): with k equal steps the filter's spend is
    :math:`\sqrt{2k\log(1/\delta)}\varepsilon_0 + k\varepsilon_0^2/2
    = \varepsilon/2 + \varepsilon^2/(16\log(1/\delta))`,
    which is at most eps when eps <= 1 and delta <= e^{-1/8}. Raises ``ValueError`` for eps > 1. Spec P3.
    """
    epsilon = check_epsilon(epsilon)
    if epsilon > 1:
        raise ValueError(f"epsilon must be <= 1 for the Cor 3.6 rule, got {epsilon!r}")
    delta = check_delta(delta, allow_zero=False)
    k = check_int(k, "k", lo=1)
    return epsilon / (2 * math.sqrt(2 * k * math.log(1 / delta)))


@lru_cache(maxsize=8)
def _log_binom_row(k: int) -> np.ndarray:
    j = np.arange(k + 1, dtype=np.float64)
    row = special.gammaln(k + 1) - special.gammaln(j + 1) - special.gammaln(k - j + 1)
    row.setflags(write=False)
    return row


def _kov_delta_unchecked(eps0: float, k: int, epsilon: float) -> float:
    # Privacy loss of k-fold randomized response: L_j = (k - 2j) eps0 with P-probability
    # C(k,j) e^{(k-j) eps0} / (1 + e^eps0)^k. delta(eps) = E_P[(1 - e^{eps - L})_+], summed in log space.
    j_max = math.ceil((k - epsilon / eps0) / 2)  # L_j > eps  <=>  j < (k - eps/eps0)/2
    if j_max <= 0:
        return 0.0
    j = np.arange(min(j_max, k + 1), dtype=np.float64)
    loss = (k - 2 * j) * eps0
    keep = loss > epsilon
    j, loss = j[keep], loss[keep]
    if j.size == 0:
        return 0.0
    log_p = _log_binom_row(k)[j.astype(np.int64)] + (k - j) * eps0 - k * np.logaddexp(0.0, eps0)
    terms = log_p + np.log(-np.expm1(epsilon - loss))
    return float(min(math.exp(special.logsumexp(terms)), 1.0))


def _check_kov_k(k: int) -> int:
    """Number of steps of the exact KOV15 sum: an integer in [1, _KOV_MAX_STEPS] (its arrays have k + 1 entries)."""
    k = check_int(k, "k", lo=1)
    if k > _KOV_MAX_STEPS:
        raise ValueError(
            f"k must be an integer in [1, {_KOV_MAX_STEPS}] (2**20) for the exact KOV15 composition, got {k}: its sum "
            "needs float64 arrays of k + 1 entries; use advanced_composition_epsilon or filter_spend (upper bounds "
            "on the KOV answer) for more steps"
        )
    return k


def kov_delta(eps0: float, *, k: int, epsilon: float) -> float:
    r"""Exact (optimal) delta(eps) of the k-fold adaptive composition of eps0-DP mechanisms (KOV15 Thm 3.3).

    .. math:: \delta(\varepsilon) = \frac{1}{(1+e^{\varepsilon_0})^k}\sum_{j:(k-2j)\varepsilon_0>\varepsilon}
              \binom{k}{j}\big(e^{(k-j)\varepsilon_0} - e^{\varepsilon}e^{j\varepsilon_0}\big),

    the hockey-stick divergence of k-fold randomized response (the dominating pair); at
    :math:`\varepsilon=(k-2i)\varepsilon_0` this is KOV15's :math:`\delta_i`. Log-space and exact. The sum
    needs float64 arrays of k + 1 entries (about 8 MB each, a few at once, at the cap), so ``k`` is limited to
    ``2**20 = 1048576`` steps (``_KOV_MAX_STEPS``, the cap of :func:`max_composition_steps`); larger ``k``
    raise ``ValueError`` (use :func:`advanced_composition_epsilon` or :func:`filter_spend`, valid upper bounds
    on the KOV answer). Spec P3.
    """
    eps0 = check_epsilon(eps0, "eps0")
    k = _check_kov_k(k)
    epsilon = check_positive(epsilon, "epsilon", allow_zero=True)
    return _kov_delta_unchecked(eps0, k, epsilon)


@lru_cache(maxsize=1024)
def _kov_epsilon_unchecked(eps0: float, k: int, delta: float) -> float:
    # cached: ~30 O(k) passes, and a calibration asks for the same point twice (kov_per_step_epsilon's final
    # check, then the ledger's certificate of the solved eps0)
    if delta == 0:
        return k * eps0
    if _kov_delta_unchecked(eps0, k, 0.0) <= delta:
        return 0.0
    return _conservative_root(lambda e: _kov_delta_unchecked(eps0, k, e) - delta, 0.0, k * eps0, feasible_below=False)


def kov_epsilon(eps0: float, *, k: int, delta: float) -> float:
    """Smallest eps with ``kov_delta(eps0, k=k, epsilon=eps) <= delta``: the optimal composition (KOV15).

    ``k`` is limited to ``2**20`` steps as in :func:`kov_delta` (O(k) memory per evaluation). Spec P3.
    """
    eps0 = check_epsilon(eps0, "eps0")
    k = _check_kov_k(k)
    delta = check_delta(delta)
    return _kov_epsilon_unchecked(eps0, k, delta)


def kov_per_step_epsilon(eps_total: float, *, delta_total: float, k: int) -> float:
    """Largest eps0 whose k-fold composition is (eps_total, delta_total)-DP by KOV15 (exact, brentq).

    ``k`` is limited to ``2**20`` steps as in :func:`kov_delta` (O(k) memory per evaluation). Spec P3.
    """
    eps_total = check_epsilon(eps_total, "eps_total")
    delta_total = check_delta(delta_total, "delta_total")
    k = _check_kov_k(k)
    lo = eps_total / k  # k eps0 <= eps_total: delta = 0
    if delta_total == 0:
        return lo

    def fn(e0: float) -> float:
        return _kov_delta_unchecked(e0, k, eps_total) - delta_total

    hi = 2 * max(lo, eps_total)
    while fn(hi) <= 0:
        hi *= 2
        if hi > 1e4:  # pragma: no cover - delta_total < 1 always fails at huge eps0
            raise RuntimeError("kov_per_step_epsilon: no bracket found")
    e0 = _conservative_root(fn, lo, hi, feasible_below=True)
    # delta(eps_total) <= delta_total holds; also make kov_epsilon(e0) (rounded up) land <= eps_total
    for _ in range(64):
        if _kov_epsilon_unchecked(e0, k, delta_total) <= eps_total:
            break
        e0 = math.nextafter(e0, 0.0)
    return e0


def filter_spend(epsilons: Sequence[float] | np.ndarray, *, delta_prime: float) -> float:
    r"""The spend of the WRRW23 advanced-composition filter on a (realized) budget sequence.

    .. math:: \sqrt{2\log(1/\delta')\sum_m\varepsilon_m^2} + \tfrac12\sum_m\varepsilon_m^2 .

    For a fixed sequence this is also a valid fixed-k composition bound (pure eps-DP implies
    eps^2/2-zCDP, Bun-Steinke 2016), and it is never larger than DRV10's bound since eps^2/2 <=
    eps(e^eps - 1). Spec P3.
    """
    eps = _check_epsilons(epsilons)
    delta_prime = check_delta(delta_prime, "delta_prime", allow_zero=False)
    with np.errstate(over="ignore"):
        s2 = float(np.sum(eps**2))
    return math.sqrt(2 * math.log(1 / delta_prime) * s2) + 0.5 * s2


#: Largest k the exact KOV15 step search of :func:`max_composition_steps` evaluates (memory is O(k)).
_KOV_MAX_STEPS = 2**20


def max_composition_steps(eps0: float, *, epsilon: float, delta: float, method: str = "kov") -> int:
    """Largest k such that k eps0-DP steps are (epsilon, delta)-DP by ``method``.

    ``method`` in {"basic", "advanced" (DRV10), "filter" (WRRW23 spend at fixed k), "kov" (optimal)}.
    Optimality of KOV15 implies ``basic, advanced, filter <= kov``. Spec P3.
    """
    eps0 = check_epsilon(eps0, "eps0")
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=method == "basic")
    if method == "basic":
        return int(math.floor(epsilon / eps0 * (1 + 1e-12)))  # exact multiples are admitted

    def ok(k: int) -> bool:
        if method == "advanced":
            return _drv_from_sums(k * _sq(eps0), k * eps0 * _expm1_or_inf(eps0), delta) <= epsilon
        if method == "filter":
            s2 = k * _sq(eps0)
            return math.sqrt(2 * math.log(1 / delta) * s2) + 0.5 * s2 <= epsilon
        if method == "kov":
            return _kov_epsilon_unchecked(eps0, k, delta) <= epsilon
        raise ValueError(f"method must be one of 'basic', 'advanced', 'filter', 'kov', got {method!r}")

    if not ok(1):
        return 0
    # KOV15 costs O(k) time and memory (float64 arrays of length k + 1: tens of MB and about a second at
    # k = 2^20), so its search stops there instead of exhausting memory (2^29 entries were reached before); the
    # closed-form tests of "advanced"/"filter" handle any k whose float is finite.
    limit = _KOV_MAX_STEPS if method == "kov" else 2**1000
    lo, hi = 1, 2
    while ok(hi):
        lo, hi = hi, hi * 2
        if hi > limit:
            raise ValueError(
                f"max_composition_steps: eps0={eps0!r} admits more than {limit} steps (method={method!r}); the exact "
                f"KOV15 search is limited to {_KOV_MAX_STEPS} steps, use method='advanced' or 'filter' (lower bounds "
                "on the KOV answer) for smaller eps0"
            )
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


# ----------------------------------------------------------------------------------------------------------------
# Fully adaptive composition: the WRRW23 privacy filter (seed 001 Thm 3.5)
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class AdvancedCompositionFilter:
    r"""Privacy filter for fully adaptive composition (WRRW23 Thm; seed 001 Thm 3.5). Spec P3.

    Mechanisms :math:`A_1, A_2, \dots` are run one after another; :math:`A_m` is
    :math:`(\varepsilon_m, \delta_m)`-DP conditionally on the outputs of :math:`A_{1:m-1}`, and
    :math:`\varepsilon_m, \delta_m` may themselves be chosen from those outputs. With target
    :math:`(\varepsilon, \delta)`, :math:`\delta = \delta' + \delta''`, :math:`\delta' > 0`, the filter halts at

    .. math:: N = \inf\Big\{n : \varepsilon < \sqrt{2\log(1/\delta')\textstyle\sum_{m\le n+1}\varepsilon_m^2}
              + \tfrac12\textstyle\sum_{m\le n+1}\varepsilon_m^2
              \ \text{ or }\ \delta'' < \textstyle\sum_{m\le n+1}\delta_m\Big\},

    and :math:`A_{1:N}` is :math:`(\varepsilon, \delta)`-DP. The seed's text of Thm 3.5 lost its formulas; this
    is WRRW23's advanced-composition filter (it matches the constants of fixed-k advanced composition in its
    eps^2/2 form, Bun-Steinke 2016) and is consistent with the seed's Cor 3.6. Note it admits at least as many
    steps as DRV10 (eps^2/2 <= eps(e^eps - 1)) and never more than the optimal KOV15 composition.

    A refused step is not run; the caller may propose a smaller budget instead (that choice depends only on
    released outputs, so it is still a predictable budget sequence).

    Parameters
    ----------
    epsilon, delta : float
        Target guarantee of the whole run.
    delta_prime : float, optional
        The part of ``delta`` spent on the concentration term; defaults to all of it, in which case only pure
        steps (delta_m = 0) are admitted.
    """

    epsilon: float
    delta: float
    delta_prime: float | None = None
    n_steps: int = field(default=0, init=False)
    sum_sq: float = field(default=0.0, init=False)
    sum_delta: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        self.epsilon = check_epsilon(self.epsilon)
        self.delta = check_delta(self.delta, allow_zero=False)
        dp = self.delta if self.delta_prime is None else check_delta(self.delta_prime, "delta_prime", allow_zero=False)
        if dp > self.delta:
            raise ValueError(f"delta_prime must be <= delta={self.delta!r}, got {dp!r}")
        self.delta_prime = dp
        self._log_term = 2 * math.log(1 / dp)

    @property
    def delta_slack(self) -> float:
        """delta'' = delta - delta', the budget for the steps' own deltas."""
        return self.delta - self.delta_prime  # type: ignore[operator]

    def _value(self, sum_sq: float) -> float:
        return math.sqrt(self._log_term * sum_sq) + 0.5 * sum_sq

    @property
    def spent(self) -> float:
        """Current value of the filter's spend function (<= epsilon at all times)."""
        return self._value(self.sum_sq)

    def would_allow(self, eps_m: float, delta_m: float = 0.0) -> bool:
        """Whether running one more (eps_m, delta_m)-DP step keeps the run (epsilon, delta)-DP."""
        eps_m = check_epsilon(eps_m, "eps_m")
        delta_m = check_delta(delta_m, "delta_m")
        ok_eps = self._value(self.sum_sq + _sq(eps_m)) <= self.epsilon
        return ok_eps and self.sum_delta + delta_m <= self.delta_slack

    def try_spend(self, eps_m: float, delta_m: float = 0.0) -> bool:
        """Record the step and return True if allowed; otherwise record nothing and return False."""
        if not self.would_allow(eps_m, delta_m):
            return False
        self.sum_sq += _sq(float(eps_m))
        self.sum_delta += float(delta_m)
        self.n_steps += 1
        return True

    def try_spend_many(
        self,
        epsilons: float | Sequence[float] | np.ndarray,
        deltas: float | Sequence[float] | np.ndarray = 0.0,
        *,
        count: int | None = None,
        all_or_nothing: bool = False,
    ) -> int:
        r"""Offer a run of steps in order; record the longest admissible prefix and return its length.

        The decision is that of calling :meth:`try_spend` on the steps in order and stopping at the first
        refusal: the filter's test is monotone along a run (:math:`\sum_m\varepsilon_m^2` and
        :math:`\sum_m\delta_m` only grow), so the first refusal ends the admissible prefix. With
        ``all_or_nothing=True`` the run is recorded whole or not at all (returns ``n`` or 0), e.g. for one
        algorithm step that consists of ``n`` mechanism draws.

        Parameters
        ----------
        epsilons, deltas : float or 1-D array
            Per-step budgets; a scalar ``epsilons`` with ``count`` stands for ``count`` equal steps (O(log count)
            time, no array), and a scalar ``deltas`` applies to every step.
        count : int, optional
            Number of equal steps when ``epsilons`` is a scalar (required then, forbidden otherwise).
        all_or_nothing : bool
            Record all steps or none.

        Notes
        -----
        After :math:`j` accepted steps the state is the float64 sum :math:`S_j`: the running (cumulative) sum
        of :math:`\varepsilon_m^2` for an array, and the closed form :math:`S_0 + (j\varepsilon)\varepsilon` for
        ``count`` equal steps. The admission test is evaluated on exactly the state that is recorded, so
        :attr:`spent` <= epsilon holds in float64 after every call (j sequential :meth:`try_spend` calls may
        differ from the closed form in the last ulp).
        """
        all_or_nothing = check_bool(all_or_nothing, "all_or_nothing")
        if count is None:
            eps = np.atleast_1d(np.asarray(epsilons, dtype=np.float64))
            if eps.size:
                eps = _check_epsilons(eps, "epsilons")
            n = eps.size
        else:
            n = check_int(count, "count", lo=0)
            e = check_epsilon(epsilons, "epsilons")
            if np.ndim(deltas) != 0:
                raise ValueError("deltas must be a scalar when epsilons is a scalar with count")
        if np.ndim(deltas) == 0:
            dm = check_delta(float(deltas), "deltas")  # type: ignore[arg-type]
            dl_arr = None
        else:
            dl_arr = check_array(deltas, "deltas", ndim=1, shape=(n,))
            if np.any(dl_arr < 0) or np.any(dl_arr >= 1):
                raise ValueError("deltas must all lie in [0, 1)")
        if n == 0:
            return 0
        s0, d0 = self.sum_sq, self.sum_delta
        if count is None:
            with np.errstate(over="ignore"):
                sums = s0 + np.cumsum(eps**2)
            dsums = d0 + (np.cumsum(dl_arr) if dl_arr is not None else np.arange(1, n + 1) * dm)
            with np.errstate(invalid="ignore", over="ignore"):
                ok = (np.sqrt(self._log_term * sums) + 0.5 * sums <= self.epsilon) & (dsums <= self.delta_slack)
            if ok.all():
                j = n
            else:  # the number of leading admitted steps (ok is monotone: True ... True False ... False)
                j = 0 if all_or_nothing else int(np.argmin(ok))
            if j:
                self.sum_sq, self.sum_delta = float(sums[j - 1]), float(dsums[j - 1])
        else:

            def state(i: int) -> tuple[float, float]:
                s = s0 + (i * e) * e if e < 1e154 else math.inf
                return s, d0 + i * dm

            def admits(i: int) -> bool:
                s, d = state(i)
                return self._value(s) <= self.epsilon and d <= self.delta_slack

            if admits(n):
                j = n
            elif all_or_nothing or not admits(1):
                j = 0
            else:  # admits(lo) and not admits(hi): bisect on the monotone test
                lo, hi = 1, n
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    lo, hi = (mid, hi) if admits(mid) else (lo, mid)
                j = lo
            if j:
                self.sum_sq, self.sum_delta = state(j)
        self.n_steps += j
        return j
