"""One calibration path: the noise or per-step budget that meets a target (epsilon, delta). Spec P3, P5, P6.

:func:`calibrate` evaluates :func:`~dpsco_lib.privacy.accounting.ledger.certify_events`, the very function a
:class:`~dpsco_lib.privacy.accounting.ledger.PrivacyLedger` certifies with, so a run calibrated here and
recorded in its ledger certifies at most its target by construction (dp-accounting's
``calibrate_dp_mechanism`` is the model). Every private algorithm's privacy code reads: split the budget,
:func:`calibrate` each part, record the events that ran.

Accountants (``accountant=``)
-----------------------------
An :class:`~dpsco_lib.privacy.accounting.accountants.Accountant` or its name
(:mod:`~dpsco_lib.privacy.accounting.accountants`); the default is
:data:`~dpsco_lib.privacy.accounting.accountants.DEFAULT_ACCOUNTANT`. ``"best"``: the tightest valid
accountant for the events (the minimum over the applicable ones); ``"rdp"``, ``"pld"`` (dp-accounting),
``"kov"`` (KOV15, exact for k steps of one pure eps0), ``"advanced"`` (DRV10), ``"basic"``, ``"gdp"``: that
accountant alone; ``"paper"``: the rule the source papers' proofs use for k pure steps,
eps0 = eps / (2 sqrt(2 k ln(1/delta))) (Bassily-Guzman-Nandi 2021, Cor 3.6 of the saddle-point paper),
certified by DRV10; it raises when the rule does not meet the target.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from scipy import optimize

from dpsco_lib._validation import check_bool, check_delta, check_epsilon, check_int, check_positive
from dpsco_lib.privacy.accounting.accountants import (
    ACCOUNTANTS,
    DEFAULT_ACCOUNTANT,
    Accountant,
    AccountantLike,
    gaussian_accountant,
    get_accountant,
)
from dpsco_lib.privacy.accounting.events import DpEvent, ExponentialEvent, LaplaceEvent, SelfComposedEvent

__all__ = [
    "Calibration",
    "calibrate",
    "check_accountant",
    "filter_per_step_epsilon",
    "gaussian_noise_multiplier",
    "paper_rule_epsilon",
    "parallel_per_step_epsilons",
    "per_step_epsilon",
]


@dataclass(frozen=True)
class Calibration:
    """The result of :func:`calibrate`.

    Attributes
    ----------
    value : float
        The calibrated parameter (per-step epsilon, noise multiplier, ...).
    certified_epsilon : float
        ``certify_events(make_event(value), delta, accountant)``: at most the target.
    accountant : str
        The accountant that certified (``"best"`` resolves to the one achieving the minimum).
    target_epsilon, delta : float
        The target.
    """

    value: float
    certified_epsilon: float
    accountant: str
    target_epsilon: float
    delta: float


def check_accountant(accountant: object, name: str = "accountant") -> str:
    """Validate an accountant (object or name) that certifies a fixed sequence of events; return its name.

    Raises ``ValueError`` naming :data:`~dpsco_lib.privacy.accounting.accountants.ACCOUNTANTS` otherwise (the
    adaptive filter included: it calibrates no fixed count).
    """
    if isinstance(accountant, Accountant):
        accountant = accountant.name
    if not isinstance(accountant, str) or accountant not in ACCOUNTANTS:
        raise ValueError(f"{name} must be one of {ACCOUNTANTS}, got {accountant!r}")
    return accountant


def paper_rule_epsilon(epsilon: float, delta: float, count: int) -> float:
    """The papers' per-step rule eps0 = eps / (2 sqrt(2 k ln(1/delta))) (delta > 0)."""
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    k = check_int(count, "count", lo=1)
    return epsilon / (2.0 * math.sqrt(2.0 * k * math.log(1.0 / delta)))


def _certify(event: DpEvent, delta: float, accountant: str) -> tuple[float, str]:
    """``certify_events((event,), delta, accountant)`` and the accountant that certifies it ("best": the minimizer
    of ``epsilons_of_events``, whose minimum is what ``certify_events`` returns; "paper": DRV10)."""
    return get_accountant(accountant).certify((event,), delta)


def _step_to_feasible(fn: Callable[[float], float], x: float, increasing: bool, discrete: bool) -> float:
    """Move ``x`` toward the safe side (smaller if eps increases in x) until ``fn(x) <= 0``."""
    step = 1.0 if discrete else max(abs(x), 1e-300) * 1e-15
    for _ in range(400):
        if fn(x) <= 0:
            return x
        x = x - step if increasing else x + step
        step *= 2.0
    raise RuntimeError("calibrate could not reach the feasible side")  # pragma: no cover


def _bracket(fn: Callable[[float], float], lo: float, hi: float, increasing: bool) -> tuple[float, float]:
    # Expand [lo, hi] geometrically until fn changes sign (fn(feasible end) <= 0 < fn(other end)).
    for _ in range(200):
        f_lo, f_hi = fn(lo), fn(hi)
        feasible, infeasible = (f_lo, f_hi) if increasing else (f_hi, f_lo)
        if feasible <= 0 < infeasible:
            return lo, hi
        if feasible > 0:
            lo, hi = (lo / 4.0, hi) if increasing else (lo, hi * 4.0)
        else:
            lo, hi = (lo, hi * 4.0) if increasing else (lo / 4.0, hi)
    raise ValueError(f"calibrate found no parameter in [{lo!r}, {hi!r}] that meets the target")


def calibrate(
    make_event: Callable[[float], DpEvent],
    *,
    epsilon: float,
    delta: float,
    accountant: AccountantLike = DEFAULT_ACCOUNTANT,
    bracket: tuple[float, float] = (1e-6, 1.0),
    increasing: bool = True,
    discrete: bool = False,
    guess: float | None = None,
) -> Calibration:
    """Best parameter of ``make_event`` whose certificate is at most ``epsilon`` at ``delta``.

    Parameters
    ----------
    make_event : callable
        ``value -> DpEvent``: the events one run records when its parameter is ``value`` (compose several with
        :class:`~dpsco_lib.privacy.accounting.events.ComposedEvent`).
    epsilon, delta : float
        The target; epsilon > 0, 0 <= delta < 1.
    accountant : Accountant or str
        One of :data:`~dpsco_lib.privacy.accounting.accountants.ACCOUNTANTS` (module docstring); default
        :data:`~dpsco_lib.privacy.accounting.accountants.DEFAULT_ACCOUNTANT`.
    bracket : (float, float)
        A starting interval for the parameter, expanded geometrically when it does not contain the answer.
    increasing : bool
        True when the certificate grows with the parameter (a per-step epsilon: the largest feasible value is
        returned); False when it shrinks (a noise multiplier: the smallest feasible value is returned).
    discrete : bool
        Integer parameters (a number of steps).
    guess : float, optional
        A closed-form or previously solved value (e.g. the papers' rule); it is verified and moved to the
        feasible side by the same accountant, never trusted.

    Returns
    -------
    Calibration
        ``value`` with ``certify_events((make_event(value),), delta, accountant) <= epsilon``, within a relative
        1e-12 of the boundary (continuous) or exact (discrete).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    accountant = check_accountant(accountant)
    increasing = check_bool(increasing, "increasing")
    discrete = check_bool(discrete, "discrete")
    if not callable(make_event):
        raise TypeError(f"make_event must be a callable value -> DpEvent, got {type(make_event).__name__}")
    if not isinstance(bracket, (tuple, list)) or len(bracket) != 2:
        raise ValueError(f"bracket must be a pair (lo, hi) of positive reals with lo < hi, got {bracket!r}")
    lo, hi = (check_positive(b, "bracket") for b in bracket)
    if not lo < hi:
        raise ValueError(f"bracket must satisfy lo < hi, got {bracket!r}")

    memo: dict[float, tuple[float, str]] = {}  # the solver re-evaluates points; a KOV/PLD certificate costs O(k)

    def cert(x: float) -> tuple[float, str]:
        if x not in memo:
            arg = round(x) if discrete else x
            ev = make_event(arg)
            if not isinstance(ev, DpEvent):
                raise TypeError(f"make_event must return a DpEvent, got {ev!r} of type {type(ev).__name__} "
                                f"from make_event({arg!r})")
            memo[x] = _certify(ev, delta, accountant)
        return memo[x]

    def fn(x: float) -> float:
        return cert(x)[0] - epsilon

    if accountant == "paper":
        if guess is None:
            raise ValueError("accountant='paper' needs the rule's value as guess (see paper_rule_epsilon)")
        x = float(guess)
        if fn(x) > 0:
            raise ValueError(
                f"the papers' rule ({x!r}) does not meet epsilon={epsilon!r} at delta={delta!r} under DRV10 "
                "advanced composition; use accountant='advanced' or 'best'"
            )
    else:
        x = _solve(fn, lo, hi, increasing, discrete, guess)
    value = float(round(x)) if discrete else float(x)
    return Calibration(value, *cert(value), epsilon, delta)


def _solve(fn: Callable[[float], float], lo: float, hi: float, increasing: bool, discrete: bool,
           guess: float | None) -> float:
    if guess is not None and math.isfinite(guess) and guess > 0:
        x = float(round(guess)) if discrete else float(guess)
        f = fn(x)
        if f <= 0 and (discrete or f > -1e-9 * (1.0 + abs(f))):
            return _step_to_feasible(fn, x, increasing, discrete)  # the guess sits on the boundary already
        lo, hi = (x / 2.0, x * 2.0) if not discrete else (max(1.0, x / 2.0), x * 2.0)
    lo, hi = _bracket(fn, lo, hi, increasing)
    if discrete:
        a, b = (math.floor(lo), math.ceil(hi))
        while b - a > 1:  # invariant: one end feasible, the other not
            mid = (a + b) // 2
            ok = fn(mid) <= 0
            if ok == increasing:
                a = mid
            else:
                b = mid
        return float(a if increasing else b)
    x = optimize.brentq(fn, lo, hi, xtol=1e-300, rtol=1e-13, maxiter=500)
    return _step_to_feasible(fn, x, increasing, discrete)


@lru_cache(maxsize=1024)
def per_step_epsilon(
    epsilon: float, delta: float, count: int, *, accountant: AccountantLike = DEFAULT_ACCOUNTANT,
    mechanism: str = "pure"
) -> Calibration:
    """Largest eps0 such that ``count`` adaptive eps0-DP steps certify ``epsilon`` at ``delta``.

    ``mechanism="pure"`` (Laplace, report-noisy-max) or ``"exponential"`` (bounded-range: RDP charges it
    less). The closed-form inverses (DRV10, KOV15, the papers' rule) seed the solve; the same accountant that
    certifies the ledger decides.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    k = check_int(count, "count", lo=1)
    accountant = check_accountant(accountant)
    if mechanism not in ("pure", "exponential"):
        raise ValueError(f"mechanism must be 'pure' or 'exponential', got {mechanism!r}")
    cls = LaplaceEvent if mechanism == "pure" else ExponentialEvent

    def make(e0: float) -> DpEvent:
        return SelfComposedEvent(cls(e0), k)

    guess = _closed_form_guess(epsilon, delta, k, accountant, mechanism)
    return calibrate(make, epsilon=epsilon, delta=delta, accountant=accountant,
                     bracket=(epsilon / k / 4.0, epsilon), increasing=True, guess=guess)


def _closed_form_guess(epsilon: float, delta: float, k: int, accountant: str, mechanism: str) -> float | None:
    from dpsco_lib.privacy.accounting.composition import (
        _KOV_MAX_STEPS,
        advanced_composition_per_step_epsilon,
        kov_delta,
        kov_per_step_epsilon,
    )

    if accountant == "paper":
        return paper_rule_epsilon(epsilon, delta, k)
    if delta == 0 or accountant == "basic":
        return epsilon / k
    if accountant == "advanced":
        return advanced_composition_per_step_epsilon(epsilon, delta_total=delta, k=k)
    if accountant == "kov" and k <= 2**16:
        return kov_per_step_epsilon(epsilon, delta_total=delta, k=k)
    if accountant == "best":
        # "best" is the minimum of accountants that each grow with eps0, so its largest feasible eps0 is the
        # largest of theirs: the cheap ones seed it, and KOV15 (exact for pure steps) when one O(k) pass shows
        # that it certifies that seed with room to spare
        x = max(epsilon / k, advanced_composition_per_step_epsilon(epsilon, delta_total=delta, k=k),
                per_step_epsilon(epsilon, delta, k, accountant="rdp", mechanism=mechanism).value)
        if k <= _KOV_MAX_STEPS and kov_delta(x, k=k, epsilon=epsilon) < delta:
            x = max(x, kov_per_step_epsilon(epsilon, delta_total=delta, k=k))
        return x
    return None


def filter_per_step_epsilon(epsilon: float, delta: float, count: int) -> float:
    r"""Largest eps0 (rounded down) for which a fresh WRRW23 filter admits ``count`` eps0-DP steps. Spec P3, A3.

    The fully adaptive filter (:class:`~dpsco_lib.privacy.accounting.composition.AdvancedCompositionFilter`)
    admits k equal steps iff sqrt(2 log(1/delta) S) + S/2 <= epsilon with S = k eps0^2, i.e.
    S <= s* = (sqrt(2 log(1/delta) + 2 epsilon) - sqrt(2 log(1/delta)))^2: the closed form eps0 = sqrt(s*/k)
    (times 1 - 1e-12) seeds the answer, which is then decreased until the filter's *own* admission test
    (``try_spend_many(eps0, count=k, all_or_nothing=True)`` on a fresh filter) admits all k steps, so the
    calibration and the filter that stops the run cannot disagree. Cached (sweeps call it with the same
    arguments many times).
    """
    return _filter_per_step_epsilon(check_epsilon(epsilon), check_delta(delta, allow_zero=False),
                                    check_int(count, "count", lo=1))


@lru_cache(maxsize=65536)
def _filter_per_step_epsilon(eps: float, dl: float, k: int) -> float:
    from dpsco_lib.privacy.accounting.composition import AdvancedCompositionFilter

    a = 2.0 * math.log(1.0 / dl)
    e0 = math.sqrt((math.sqrt(a + 2.0 * eps) - math.sqrt(a)) ** 2 / k) * (1.0 - 1e-12)
    while AdvancedCompositionFilter(eps, dl).try_spend_many(e0, count=k, all_or_nothing=True) != k:
        e0 *= 1.0 - 1e-9  # pragma: no cover - float safety
    return e0


@lru_cache(maxsize=4096)
def gaussian_noise_multiplier(
    epsilon: float, delta: float, *, count: int = 1, accountant: AccountantLike = DEFAULT_ACCOUNTANT
) -> Calibration:
    r"""Smallest noise multiplier m = sigma/Delta_2 such that ``count`` adaptive Gaussian mechanisms certify
    (epsilon, delta). Spec P1, P6.

    The calibrated events are exactly the ones a run records, ``SelfComposedEvent(GaussianEvent(m), count)``
    (:meth:`~dpsco_lib.privacy.accounting.ledger.PrivacyLedger.record_gaussian` with ``count``), and
    :func:`calibrate` inverts :func:`~dpsco_lib.privacy.accounting.ledger.certify_events` on them, so the
    run's ledger certifies at most ``epsilon`` at ``delta`` by construction. ``accountant`` is resolved by
    :func:`~dpsco_lib.privacy.accounting.accountants.gaussian_accountant`: ``"gdp"`` (exact for Gaussian events,
    DRS22; the same curve as the analytic Gaussian mechanism of Balle-Wang 2018), ``"best"`` (the default: the
    tightest valid accountant, which for Gaussian events is GDP, so it calibrates with GDP), ``"rdp"`` or
    ``"pld"``. A mu-GDP mechanism (the regularized exponential
    mechanism) is the Gaussian event with multiplier 1/mu, so ``1 / value`` is the largest mu that meets the
    target. Cached: sweeps call it with the same arguments many times.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    k = check_int(count, "count", lo=1)
    accountant = gaussian_accountant(accountant).name
    from dpsco_lib.privacy.accounting.events import GaussianEvent

    def make(m: float) -> DpEvent:
        return SelfComposedEvent(GaussianEvent(m), k)

    # the classic sigma/Delta (Dwork-Roth Thm A.1, times sqrt(k)) only seeds the bracket; calibrate decides
    guess = math.sqrt(k * 2.0 * math.log(1.25 / delta)) / epsilon
    return calibrate(make, epsilon=epsilon, delta=delta, accountant=accountant, bracket=(guess / 8.0, guess),
                     increasing=False, guess=guess)


def parallel_per_step_epsilons(
    counts: tuple[int, ...], *, epsilon: float, delta: float, accountant: AccountantLike = DEFAULT_ACCOUNTANT
) -> tuple[tuple[float, ...], Calibration]:
    r"""Per-part per-step budgets of a parallel composition of pure blocks (a tree of disjoint batches). Spec F2.

    Part ``i`` runs ``counts[i]`` adaptive eps_i-DP steps (Laplace / report-noisy-max) on its own disjoint
    records; the run records ``ParallelEvent`` over the parts of ``SelfComposedEvent(LaplaceEvent(eps_i),
    counts[i])``. The split: ``eps_i(theta) = max(theta / m_i, eps_DRV(theta, m_i))`` (the per-step budget
    with which part ``i`` *alone* certifies ``theta`` by basic or DRV10 composition, each solved by
    :func:`per_step_epsilon`; ``delta = 0``: ``theta / m_i``), and ``theta`` is the largest value for which
    :func:`calibrate` finds ``certify_events(ParallelEvent(...), delta, accountant) <= epsilon``: the certificate
    the run's ledger reports.

    Parameters
    ----------
    counts : tuple of int
        ``m_i >= 1``, the number of steps of each part.
    epsilon, delta : float
        The target (epsilon > 0, 0 <= delta < 1).
    accountant : str
        One of :data:`~dpsco_lib.privacy.accounting.accountants.ACCOUNTANTS` except ``"paper"`` (no closed-form
        rule for a tree); ``"best"`` (the default,
        the tightest valid accountant of the parallel event) or any accountant that applies to pure events.

    Returns
    -------
    (tuple of float, Calibration)
        ``eps_i`` per part, and the calibration of ``theta`` (its ``certified_epsilon`` is the run's
        certificate under ``accountant``). Cached (runners call it with the same arguments many times).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    accountant = check_accountant(accountant)
    if accountant == "paper":
        raise ValueError("accountant='paper' has no closed-form rule for a parallel (tree) composition; use 'best'")
    if not isinstance(counts, tuple) or not counts:
        raise TypeError(f"counts must be a non-empty tuple of int, got {counts!r}")
    counts = tuple(check_int(m, "counts", lo=1) for m in counts)
    return _parallel_per_step_epsilons(counts, epsilon, delta, accountant)


def _parallel_split(theta: float, delta: float, counts: tuple[int, ...]) -> tuple[float, ...]:
    out = []
    for m in counts:
        e = per_step_epsilon(theta, delta, m, accountant="basic").value
        if delta > 0 and m > 1:
            e = max(e, per_step_epsilon(theta, delta, m, accountant="advanced").value)
        out.append(e)
    return tuple(out)


@lru_cache(maxsize=1024)
def _parallel_per_step_epsilons(counts: tuple[int, ...], epsilon: float, delta: float, accountant: str
                                ) -> tuple[tuple[float, ...], Calibration]:
    from dpsco_lib.privacy.accounting.events import ParallelEvent

    def make(theta: float) -> DpEvent:
        eps = _parallel_split(theta, delta, counts)
        return ParallelEvent(tuple((SelfComposedEvent(LaplaceEvent(e), m),) for e, m in zip(eps, counts, strict=True)))

    cal = calibrate(make, epsilon=epsilon, delta=delta, accountant=accountant, bracket=(epsilon / 4.0, epsilon),
                    increasing=True, guess=epsilon)
    return _parallel_split(cal.value, delta, counts), cal


