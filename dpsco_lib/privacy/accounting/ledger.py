"""The PrivacyLedger: what ran (typed events), and the only certificate of a run. Spec P3, P5, P6.

:func:`certify_events` is the single certification engine: :meth:`PrivacyLedger.epsilon` evaluates it on the
ledger's events, and :func:`~dpsco_lib.privacy.accounting.budget.calibrate` inverts it, so the noise an
algorithm calibrates and the certificate its ledger reports are computed by the same code.

Accountants (``method``)
------------------------
``"basic"`` sum of eps (pure steps only); ``"advanced"`` Dwork-Rothblum-Vadhan 2010 (DRV10), heterogeneous,
pure steps only; ``"kov"`` the optimal composition of Kairouz-Oh-Viswanath 2015 (KOV15) for k steps of one
eps0; ``"rdp"`` Renyi DP (Mironov 2017) with the CKS20/BBGHS20 conversion, every event kind; ``"gdp"`` exact
mu-GDP (Dong-Roth-Su 2022) for Gaussian events; ``"pld"`` privacy-loss distributions of dp-accounting
for pure, exponential, Gaussian and subsampled-Gaussian events, sound at every delta: pessimistic
discretization, truncated mass charged to delta by dp-accounting, and the FFT composition's rounding error
bounded and charged to delta here (:mod:`~dpsco_lib.privacy.accounting.pld`); where that bound exceeds delta/2
(delta below ~1e-9 for long compositions) ``"pld"`` reports the RDP certificate instead; ``"best"`` the
minimum over the applicable ones (each is valid, so is their minimum). For a ledger that is one parallel block,
``"best"`` also considers ``"per_part"``: the largest of the parts' own best certificates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from dpsco_lib._validation import check_delta, check_epsilon, check_int, check_positive, check_probability
from dpsco_lib.privacy.accounting._common import _check_orders, _sq
from dpsco_lib.privacy.accounting.accountants import DEFAULT_ACCOUNTANT, Accountant, AccountantLike
from dpsco_lib.privacy.accounting.composition import (
    _KOV_MAX_STEPS,
    _drv_from_sums,
    _kov_delta_unchecked,
    _kov_epsilon_unchecked,
)
from dpsco_lib.privacy.accounting.events import (
    ADD_REMOVE,
    ComposedEvent,
    DpEvent,
    ExponentialEvent,
    GaussianEvent,
    GeneralizedGaussianEvent,
    LaplaceEvent,
    ParallelEvent,
    ReplaceOneFromAddRemove,
    SelfComposedEvent,
    SubsampledGaussianEvent,
    check_events,
    check_relation,
    to_dp_accounting,
)
from dpsco_lib.privacy.accounting.gdp import gdp_epsilon
from dpsco_lib.privacy.accounting.pld import pld_epsilon
from dpsco_lib.privacy.accounting.rdp import (
    rdp_bounded_range,
    rdp_gaussian,
    rdp_generalized_gaussian,
    rdp_pure,
    rdp_subsampled_gaussian,
    rdp_to_epsilon,
)

METHODS = ("basic", "advanced", "kov", "rdp", "gdp", "pld", "best")

__all__ = ["METHODS", "PrivacyLedger", "certify_events", "epsilons_of_events"]

# ----------------------------------------------------------------------------------------------------------------
# Sufficient statistics per accountant
# ----------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Stats:
    # Sufficient statistics of a sequence of events, per accountant; None = accountant not applicable.
    pure_sum: float | None  # basic: sum eps
    s2: float | None  # DRV: sum eps^2
    s1: float | None  # DRV: sum eps (e^eps - 1)
    kov_ok: bool  # homogeneous pure: all pure steps share eps0
    kov_eps0: float | None
    kov_k: int
    mu2: float | None  # GDP: sum 1/m^2 over Gaussian events
    rdp: np.ndarray
    pld_ok: bool  # every event has a PLD (no GG, no parallel block)


def _add(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


def _max(values: list[float | None]) -> float | None:
    return None if any(v is None for v in values) else max(values)  # type: ignore[type-var]


def _empty(orders: np.ndarray) -> _Stats:
    return _Stats(0.0, 0.0, 0.0, True, None, 0, 0.0, np.zeros_like(orders), True)


def _scale(s: _Stats, c: int) -> _Stats:
    def mul(v: float | None) -> float | None:
        return None if v is None else c * v

    return _Stats(mul(s.pure_sum), mul(s.s2), mul(s.s1), s.kov_ok, s.kov_eps0, c * s.kov_k, mul(s.mu2), c * s.rdp,
                  s.pld_ok)


def _seq(a: _Stats, b: _Stats) -> _Stats:
    kov_ok = a.kov_ok and b.kov_ok and (a.kov_k == 0 or b.kov_k == 0 or a.kov_eps0 == b.kov_eps0)
    return _Stats(_add(a.pure_sum, b.pure_sum), _add(a.s2, b.s2), _add(a.s1, b.s1), kov_ok,
                  a.kov_eps0 if a.kov_k > 0 else b.kov_eps0, a.kov_k + b.kov_k, _add(a.mu2, b.mu2), a.rdp + b.rdp,
                  a.pld_ok and b.pld_ok)


def _parallel(parts: list[_Stats]) -> _Stats:
    eps0s = {s.kov_eps0 for s in parts if s.kov_k > 0}
    return _Stats(
        pure_sum=_max([s.pure_sum for s in parts]),
        s2=_max([s.s2 for s in parts]),
        s1=_max([s.s1 for s in parts]),
        kov_ok=all(s.kov_ok for s in parts) and len(eps0s) <= 1,
        kov_eps0=next(iter(eps0s)) if eps0s else None,
        kov_k=max(s.kov_k for s in parts),
        mu2=_max([s.mu2 for s in parts]),
        rdp=np.max([s.rdp for s in parts], axis=0),
        pld_ok=False,  # the pointwise maximum of privacy curves is not a PLD
    )


@lru_cache(maxsize=512)
def _rdp_of(event: DpEvent, orders: tuple[float, ...]) -> np.ndarray:
    if isinstance(event, LaplaceEvent):
        out = rdp_pure(event.epsilon, orders=orders)
    elif isinstance(event, ExponentialEvent):
        out = rdp_bounded_range(event.epsilon, orders=orders)
    elif isinstance(event, GaussianEvent):
        out = rdp_gaussian(event.noise_multiplier, orders=orders)
    elif isinstance(event, GeneralizedGaussianEvent):
        out = rdp_generalized_gaussian(event.noise_multiplier, kappa=event.kappa, orders=orders)
    else:
        out = rdp_subsampled_gaussian(event.noise_multiplier, sampling_rate=event.sampling_rate, orders=orders)
    out.setflags(write=False)
    return out


def _base_stats(ev: DpEvent, orders: np.ndarray) -> _Stats:
    if isinstance(ev, (LaplaceEvent, ExponentialEvent)):
        return _pure_block(ev, 1, orders)
    rdp = _rdp_of(ev, tuple(orders.tolist()))
    mu2 = None
    if isinstance(ev, GaussianEvent):
        m2 = _sq(ev.noise_multiplier)
        mu2 = 1.0 / m2 if m2 > 0 else math.inf  # m^2 underflows only for m < 1e-162: mu is then +inf
    m = getattr(ev, "noise_multiplier", 0.0)
    pld_ok = not isinstance(ev, GeneralizedGaussianEvent) and _PLD_NOISE[0] <= m <= _PLD_NOISE[1]
    return _Stats(None, None, None, False, None, 0, mu2, rdp, pld_ok)


def _pure_block(ev: LaplaceEvent | ExponentialEvent, c: int, orders: np.ndarray) -> _Stats:
    # c adaptive eps-DP steps; the float64 expressions (c * e * e, ...) are the ones the per-step solvers of
    # composition.py invert, so a solved eps0 certifies exactly its target here.
    e = ev.epsilon
    rdp = c * _rdp_of(ev, tuple(orders.tolist()))
    # e^eps overflows float64 beyond eps ~ 709: the DRV term is then +inf (vacuous), never an OverflowError.
    expm1 = math.expm1(e) if e < 709.0 else math.inf
    return _Stats(c * e, c * e * e, c * e * expm1, True, e, c, None, rdp, _PLD_EPS[0] <= e <= _PLD_EPS[1])


def _stats(ev: DpEvent, orders: np.ndarray) -> _Stats:
    if isinstance(ev, SelfComposedEvent):
        if isinstance(ev.event, (LaplaceEvent, ExponentialEvent)):
            return _pure_block(ev.event, ev.repetitions, orders)
        return _scale(_stats(ev.event, orders), ev.repetitions)
    if isinstance(ev, ComposedEvent):
        return _seq_stats(ev.events, orders)
    if isinstance(ev, ParallelEvent):
        return _parallel([_seq_stats(p, orders) for p in ev.parts])
    if isinstance(ev, ReplaceOneFromAddRemove):
        raise ValueError("a relation conversion is certified as a block (certify_events), not by statistics")
    return _base_stats(ev, orders)


def _seq_stats(events: Sequence[DpEvent], orders: np.ndarray) -> _Stats:
    acc = _empty(orders)
    for ev in events:
        acc = _seq(acc, _stats(ev, orders))
    return acc


# ----------------------------------------------------------------------------------------------------------------
# PLD (dp-accounting)
# ----------------------------------------------------------------------------------------------------------------


# The parameter range in which dp-accounting's discretized PLDs are numerically sound (outside it the PLD
# accountant is simply not applied; the others still certify).
_PLD_EPS = (1e-6, 30.0)
_PLD_NOISE = (0.05, 1e4)


def _pld_interval(events: Sequence[DpEvent]) -> float:
    # A loss grid on which the smallest pure step's loss +-eps is (up to rounding) a grid point: no slack for a
    # homogeneous block, and at most 1/16 of a step otherwise.
    eps = [e.epsilon for e in _flatten(events) if isinstance(e, (LaplaceEvent, ExponentialEvent))]
    return float(min(1e-4, max(1e-7, min(eps) / 16))) if eps else 1e-4


def _flatten(events: Sequence[DpEvent]) -> list[DpEvent]:
    out: list[DpEvent] = []
    for ev in events:
        if isinstance(ev, SelfComposedEvent):
            out.extend(_flatten((ev.event,)))
        elif isinstance(ev, ComposedEvent):
            out.extend(_flatten(ev.events))
        else:
            out.append(ev)
    return out


def _pld_epsilon(events: Sequence[DpEvent], delta: float) -> float:
    # Sound at every delta: the PLD's discretization and truncation are pessimistic (charged by dp-accounting)
    # and its FFT rounding error is charged to delta (pld.pld_epsilon). Where that error is of the order of
    # delta itself the PLD cannot certify, and the "pld" accountant falls back to the RDP certificate.
    eps = pld_epsilon(tuple(events), delta, _pld_interval(events))
    if math.isfinite(eps):
        return eps
    a = _check_orders(None)
    return rdp_to_epsilon(_seq_stats(events, a).rdp, orders=a, delta=delta)[0]


# ----------------------------------------------------------------------------------------------------------------
# The certification engine
# ----------------------------------------------------------------------------------------------------------------


def _exact_method_applies(st: _Stats) -> bool:
    # KOV (homogeneous pure) and GDP (Gaussian only) are exact: no PLD can beat them. Beyond the KOV cap a
    # homogeneous pure ledger is certified by RDP and DRV only (a PLD of millions of steps costs minutes).
    only_pure = st.pure_sum is not None and (st.kov_ok or st.kov_k > _KOV_MAX_STEPS)
    only_gauss = st.mu2 is not None and st.pure_sum is None
    return only_pure or only_gauss


_RESULT_ORDER = ("basic", "advanced", "kov", "gdp", "rdp", "pld", "per_part")


def _kov_may_win(st: _Stats, delta: float, out: dict[str, float]) -> bool:
    """False when KOV15 cannot certify less than the smallest certificate in ``out``: one O(k) pass, delta_KOV at
    that value above ``delta`` (delta_KOV(eps) does not increase with eps), instead of KOV's root solve of ~30
    passes; "best" (the minimum) is unchanged, and for exponential-mechanism draws RDP nearly always wins."""
    if not out or delta <= 0 or st.kov_k == 0:
        return True
    return _kov_delta_unchecked(st.kov_eps0, st.kov_k, min(out.values())) <= delta


def _plain_epsilons(events: Sequence[DpEvent], delta: float, a: np.ndarray, wanted: set[str]) -> dict[str, float]:
    st = _seq_stats(events, a)
    out: dict[str, float] = {}
    best = "best" in wanted
    if st.pure_sum is not None:
        if "basic" in wanted or best:
            out["basic"] = st.pure_sum
        if delta > 0 and ("advanced" in wanted or best):
            out["advanced"] = _drv_from_sums(st.s2, st.s1, delta)  # type: ignore[arg-type]
        if st.kov_ok and wanted == {"kov"} and st.kov_k > _KOV_MAX_STEPS:
            raise ValueError(
                f"the exact KOV15 composition is limited to {_KOV_MAX_STEPS} steps (O(k) time and memory), this "
                f"ledger has {st.kov_k}: use accountant 'rdp', 'advanced' or 'best'"
            )
    if st.mu2 is not None and ("gdp" in wanted or best):
        if st.mu2 == 0:
            out["gdp"] = 0.0
        else:
            out["gdp"] = gdp_epsilon(math.sqrt(st.mu2), delta=delta) if delta > 0 and st.mu2 < math.inf else math.inf
    if "rdp" in wanted or best:
        out["rdp"] = rdp_to_epsilon(st.rdp, orders=a, delta=delta)[0]
    if st.kov_ok and st.kov_k <= _KOV_MAX_STEPS and ("kov" in wanted or (best and _kov_may_win(st, delta, out))):
        out["kov"] = 0.0 if st.kov_k == 0 else _kov_epsilon_unchecked(st.kov_eps0, st.kov_k, delta)
    # PLD: when asked for alone, always; otherwise not beyond the KOV step limit (a PLD of millions of pure steps
    # costs minutes) and, for "best", only where no exact accountant applies.
    small = st.kov_k <= _KOV_MAX_STEPS
    if st.pld_ok and delta > 0 and (wanted == {"pld"} or (small and (
            "pld" in wanted or (best and not _exact_method_applies(st))))):
        out["pld"] = _pld_epsilon(events, delta)
    if best and len(events) == 1 and isinstance(events[0], ParallelEvent):
        # The block's privacy curve is the pointwise maximum of its parts' curves (a neighbouring pair differs in
        # one part), so the largest of the parts' own best certificates is valid, and tighter than charging the
        # worst part's statistics accountant by accountant.
        out["per_part"] = max(min(_plain_epsilons(p, delta, a, {"best"}).values()) for p in events[0].parts)
    return {m: out[m] for m in _RESULT_ORDER if m in out}  # a fixed order: "best" resolves ties by it


def _group_of_two(events: tuple[DpEvent, ...], delta: float, a: np.ndarray) -> float:
    """Replace-one epsilon at ``delta`` of add/remove ``events``: (eps, d') -> (2 eps, (1 + e^eps) d')."""
    if delta <= 0:
        return 2.0 * min(_plain_epsilons(events, 0.0, a, {"best"}).values())
    d_prime = delta / 2.0
    for _ in range(60):
        e = min(_plain_epsilons(events, d_prime, a, {"best"}).values())
        if (1.0 + math.exp(min(e, 700.0))) * d_prime <= delta:
            return 2.0 * e
        d_prime = delta / (1.0 + math.exp(min(e, 700.0))) * (1 - 1e-12)
    return math.inf  # pragma: no cover


def epsilons_of_events(
    events: Sequence[DpEvent],
    delta: float,
    orders: Sequence[float] | np.ndarray | None = None,
    methods: Sequence[str] | None = None,
) -> dict[str, float]:
    """Certified epsilon at ``delta`` of the adaptive sequential composition of ``events``, by accountant.

    A method that does not apply to the events is absent from the result. Relation-conversion blocks
    (:class:`~dpsco_lib.privacy.accounting.events.ReplaceOneFromAddRemove`) are certified with half of delta
    split evenly between them (group privacy, their own best accountant) and added by basic composition.
    """
    events = check_events(events)
    delta = check_delta(delta)
    a = _check_orders(orders)
    wanted = set(METHODS) if methods is None else set(methods)
    unknown = wanted - set(METHODS)
    if unknown:
        raise ValueError(f"methods must be a subset of {METHODS}, got {sorted(unknown)}")
    conv = [e for e in events if isinstance(e, ReplaceOneFromAddRemove)]
    rest = [e for e in events if not isinstance(e, ReplaceOneFromAddRemove)]
    if not conv:
        return _plain_epsilons(rest, delta, a, wanted)
    d_conv = delta / 2.0 / len(conv) if rest else delta / len(conv)
    cost = sum(_group_of_two(c.events, d_conv, a) for c in conv)
    if rest:
        base = _plain_epsilons(rest, delta / 2.0, a, wanted)
    else:  # only conversion blocks: each accountant asked for charges nothing beyond the blocks themselves
        base = {m: 0.0 for m in (sorted(wanted - {"best"}) or ["basic"])}
    return {m: v + cost for m, v in base.items()}


def certify_events(
    events: Sequence[DpEvent],
    delta: float,
    method: AccountantLike = DEFAULT_ACCOUNTANT,
    orders: Sequence[float] | np.ndarray | None = None,
) -> float:
    """The certificate: epsilon at ``delta`` of ``events`` by accountant ``method`` (see module docstring; an
    :class:`~dpsco_lib.privacy.accounting.accountants.Accountant` or its name)."""
    if isinstance(method, Accountant):
        method = method.method  # type: ignore[assignment]
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    all_eps = epsilons_of_events(events, delta, orders, methods=(method,))
    if method == "best":
        return min(all_eps.values())
    if method not in all_eps:
        kinds = sorted({e.kind for e in _flatten(events)})
        raise ValueError(
            f"method {method!r} does not apply to these events (kinds {kinds}, delta={delta!r});"
            f" applicable: {sorted(epsilons_of_events(events, delta, orders))}"
        )
    return all_eps[method]


# ----------------------------------------------------------------------------------------------------------------
# The ledger
# ----------------------------------------------------------------------------------------------------------------


class PrivacyLedger:
    """The record of every mechanism invocation of a run, and the certificate of its guarantee. Spec P3, P5, P6.

    Algorithms record typed events (:mod:`~dpsco_lib.privacy.accounting.events`) as they run; consecutive
    identical events are merged into one :class:`~dpsco_lib.privacy.accounting.events.SelfComposedEvent`
    with a larger count, so a run of 1e6 draws costs one object. :meth:`epsilon` certifies the whole
    (adaptive, sequential) run with :func:`certify_events`.

    Parameters
    ----------
    relation : {"replace_one", "add_remove"}, optional
        The neighbouring relation of the guarantee. When omitted, the first recorded event sets it. Recording
        an event under another relation raises ``ValueError`` (convert it explicitly with
        :func:`~dpsco_lib.privacy.accounting.events.to_replace_one`).

    Examples
    --------
    >>> led = PrivacyLedger()
    >>> led.record_exponential(0.01, count=1000, label="vertex sampling")
    >>> led.record_gaussian(5.0, count=10)
    >>> led.relation
    'replace_one'
    >>> round(led.epsilon(1e-6), 3) > 0
    True
    """

    def __init__(self, relation: str | None = None) -> None:
        self._relation = None if relation is None else check_relation(relation)
        self._events: list[DpEvent] = []

    def __repr__(self) -> str:
        return f"PrivacyLedger({len(self._events)} events, total_count={self.total_count}, relation={self.relation!r})"

    @property
    def relation(self) -> str | None:
        """The neighbouring relation of every event in the ledger (None while empty and unset)."""
        return self._relation

    # -- recording --------------------------------------------------------------------------------------
    def record(self, event: DpEvent, count: int = 1) -> None:
        """Record ``count`` adaptive invocations of ``event`` (merged with an identical previous record)."""
        if not isinstance(event, DpEvent):
            raise TypeError(f"event must be a DpEvent, got {type(event).__name__}")
        count = check_int(count, "count", lo=1)
        if self._relation is None:
            self._relation = event.relation
        elif event.relation != self._relation:
            raise ValueError(
                f"event relation {event.relation!r} differs from the ledger's {self._relation!r}: guarantees under "
                "different neighbouring relations do not compose; convert explicitly with to_replace_one(...)"
            )
        last = self._events[-1] if self._events else None
        if isinstance(event, SelfComposedEvent):
            count, event = count * event.repetitions, event.event
        if isinstance(last, SelfComposedEvent) and last.event == event:
            self._events[-1] = SelfComposedEvent(event, last.repetitions + count)
        elif isinstance(event, (ParallelEvent, ComposedEvent, ReplaceOneFromAddRemove)) and count == 1:
            self._events.append(event)
        else:
            self._events.append(SelfComposedEvent(event, count))

    def record_pure(self, epsilon: float, count: int = 1, label: str = "") -> None:
        """Record ``count`` adaptive eps-DP steps (Laplace, report-noisy-max, ...)."""
        self.record(LaplaceEvent(check_epsilon(epsilon), label=str(label), relation=self._default_rel()), count)

    def record_exponential(self, epsilon: float, count: int = 1, label: str = "") -> None:
        """Record ``count`` draws of an eps-DP exponential mechanism (eps-bounded-range; RDP uses that)."""
        self.record(ExponentialEvent(check_epsilon(epsilon), label=str(label), relation=self._default_rel()), count)

    def record_gaussian(self, noise_multiplier: float, count: int = 1, label: str = "") -> None:
        """Record ``count`` Gaussian mechanisms with noise multiplier sigma/Delta_2."""
        m = check_positive(noise_multiplier, "noise_multiplier")
        self.record(GaussianEvent(m, label=str(label), relation=self._default_rel()), count)

    def record_gg(self, noise_multiplier: float, kappa: float, count: int = 1, label: str = "") -> None:
        """Record ``count`` generalized Gaussian mechanisms (Spec G1) with sigma/Delta and regularity kappa."""
        self.record(GeneralizedGaussianEvent(noise_multiplier, kappa, label=str(label), relation=self._default_rel()),
                    count)

    def record_subsampled_gaussian(
        self, noise_multiplier: float, sampling_rate: float, count: int = 1, label: str = ""
    ) -> None:
        """Record ``count`` Poisson-subsampled Gaussian steps (DP-SGD), add/remove-one relation (MTZ19)."""
        m = check_positive(noise_multiplier, "noise_multiplier")
        q = check_probability(sampling_rate, "sampling_rate", open_left=True)
        self.record(SubsampledGaussianEvent(m, q, label=str(label)), count)

    def _default_rel(self) -> str:
        return self._relation or "replace_one"

    def merge(self, other: PrivacyLedger) -> PrivacyLedger:
        """Sequential composition: append ``other``'s events to this ledger (in place; returns self)."""
        if not isinstance(other, PrivacyLedger):
            raise ValueError(f"other must be a PrivacyLedger, got {type(other).__name__}")
        for ev in list(other._events):
            self.record(ev)
        return self

    @classmethod
    def parallel(cls, *ledgers: PrivacyLedger, label: str = "") -> PrivacyLedger:
        """Parallel composition over disjoint data parts: a new ledger with one :class:`ParallelEvent`.

        Each accountant charges the worst part: basic/DRV/GDP statistics and the RDP curve (order-wise) are
        maxima over parts; KOV counts the longest part. Valid because a neighbouring pair differs in one record,
        which lies in one part only.
        """
        if not ledgers or not all(isinstance(lg, PrivacyLedger) for lg in ledgers):
            raise ValueError("parallel needs at least one PrivacyLedger")
        rels = {lg.relation for lg in ledgers if lg.relation is not None}
        out = cls(rels.pop() if len(rels) == 1 else None)
        out.record(ParallelEvent(tuple(tuple(lg._events) for lg in ledgers), label=str(label)))
        return out

    # -- reading ----------------------------------------------------------------------------------------
    @property
    def events(self) -> tuple[DpEvent, ...]:
        return tuple(self._events)

    @property
    def total_count(self) -> int:
        """Number of mechanism invocations recorded (summing counts, across parallel parts)."""
        return sum(e.count for e in self._events)

    def rdp(self, orders: Sequence[float] | np.ndarray | None = None) -> np.ndarray:
        """The run's RDP curve at ``orders`` (sum over sequential events, max over parallel parts)."""
        a = _check_orders(orders)
        return _seq_stats(tuple(self._events), a).rdp.copy()

    def epsilons(
        self,
        delta: float,
        orders: Sequence[float] | np.ndarray | None = None,
        methods: Sequence[str] | None = None,
    ) -> dict[str, float]:
        """Certified epsilon at ``delta`` by every applicable accountant (see :func:`epsilons_of_events`)."""
        return epsilons_of_events(tuple(self._events), delta, orders, methods)

    def epsilon(self, delta: float, method: AccountantLike = DEFAULT_ACCOUNTANT,
                orders: Sequence[float] | np.ndarray | None = None) -> float:
        """Certified epsilon of the whole run at ``delta`` by accountant ``method`` (:func:`certify_events`).

        ``method``: ``"basic"``, ``"advanced"`` (DRV10; delta > 0), ``"kov"`` (KOV15; one eps0), ``"rdp"``,
        ``"gdp"`` (Gaussian only), ``"pld"`` (dp-accounting; no GG or parallel blocks), ``"best"`` (minimum
        over the applicable ones). A method that does not apply raises ``ValueError``.
        """
        return certify_events(tuple(self._events), delta, method, orders)

    def certificate(self, delta: float) -> str:
        """One line for a reader: the certified (eps, delta) and the neighbouring relation it holds under."""
        return f"({self.epsilon(delta):.4g}, {delta:.3g})-DP under {self.relation or 'replace_one'} neighbours"

    def to_dp_events(self) -> Any:
        """The run as one dp-accounting ``ComposedDpEvent``, for an accountant built with
        ``NeighboringRelation.ADD_OR_REMOVE_ONE`` whatever the ledger's relation (the export carries each event's
        privacy curve; see :func:`~dpsco_lib.privacy.accounting.events.to_dp_accounting`, which also lists the
        events that raise ``ValueError``)."""
        from dp_accounting import dp_event as de

        return de.ComposedDpEvent([to_dp_accounting(e) for e in self._events])

    def is_add_remove(self) -> bool:
        return self._relation == ADD_REMOVE
