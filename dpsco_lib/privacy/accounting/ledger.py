"""The PrivacyLedger: what ran, and the certificate of the whole run. Spec P3, P5, P6."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from dpsco_lib._validation import (
    check_delta,
    check_epsilon,
    check_int,
    check_positive,
    check_probability,
)
from dpsco_lib.privacy.accounting._common import _check_orders, _sq
from dpsco_lib.privacy.accounting.composition import _drv_from_sums, _kov_epsilon_unchecked
from dpsco_lib.privacy.accounting.gdp import gdp_epsilon
from dpsco_lib.privacy.accounting.rdp import (
    rdp_bounded_range,
    rdp_gaussian,
    rdp_generalized_gaussian,
    rdp_pure,
    rdp_subsampled_gaussian,
    rdp_to_epsilon,
)

EVENT_KINDS = ("pure", "gaussian", "gg", "exponential", "subsampled_gaussian")
METHODS = ("basic", "advanced", "kov", "rdp", "gdp", "best")

# ----------------------------------------------------------------------------------------------------------------
# The ledger (Spec P3, P5, P6)
# ----------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrivacyEvent:
    """One (possibly repeated) mechanism invocation.

    ``kind`` is one of :data:`EVENT_KINDS`: ``"pure"`` (an eps-DP step), ``"exponential"`` (an eps-DP
    exponential mechanism, which is eps-bounded-range), ``"gaussian"`` (noise multiplier sigma/Delta_2),
    ``"gg"`` (generalized Gaussian: sigma/Delta and the regularity kappa), ``"subsampled_gaussian"``
    (noise multiplier and Poisson sampling rate). ``count`` identical adaptive repetitions.
    """

    kind: str
    epsilon: float | None = None
    noise_multiplier: float | None = None
    kappa: float | None = None
    sampling_rate: float | None = None
    count: int = 1
    label: str = ""

    @property
    def params(self) -> tuple:
        return (self.kind, self.epsilon, self.noise_multiplier, self.kappa, self.sampling_rate)

    @property
    def total_count(self) -> int:
        return self.count


@dataclass(frozen=True)
class ParallelEvent:
    """Parallel composition: each part ran on a disjoint part of the data (each record in at most one part),
    so a neighbouring pair changes one part only and the block costs the worst part (McSherry 2009)."""

    parts: tuple[tuple[PrivacyEvent | ParallelEvent, ...], ...]
    label: str = ""
    kind: str = "parallel"

    @property
    def total_count(self) -> int:
        return sum(e.total_count for part in self.parts for e in part)


@dataclass(frozen=True)
class _Stats:
    # Sufficient statistics of a sequence of events, per accounting method; None = method not applicable.
    pure_sum: float | None  # basic: sum eps
    s2: float | None  # DRV: sum eps^2
    s1: float | None  # DRV: sum eps (e^eps - 1)
    kov_ok: bool  # homogeneous pure: all pure steps share eps0
    kov_eps0: float | None
    kov_k: int
    mu2: float | None  # GDP: sum 1/m^2 over Gaussian events
    rdp: np.ndarray


def _add(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


def _max(values: list[float | None]) -> float | None:
    return None if any(v is None for v in values) else max(values)  # type: ignore[type-var]


def _event_stats(ev: PrivacyEvent | ParallelEvent, orders: np.ndarray) -> _Stats:
    if isinstance(ev, ParallelEvent):
        parts = [_seq_stats(p, orders) for p in ev.parts]
        eps0s = {s.kov_eps0 for s in parts if s.kov_k > 0}
        kov_ok = all(s.kov_ok for s in parts) and len(eps0s) <= 1
        return _Stats(
            pure_sum=_max([s.pure_sum for s in parts]),
            s2=_max([s.s2 for s in parts]),
            s1=_max([s.s1 for s in parts]),
            kov_ok=kov_ok,
            kov_eps0=next(iter(eps0s)) if eps0s else None,
            kov_k=max(s.kov_k for s in parts),
            mu2=_max([s.mu2 for s in parts]),
            rdp=np.max([s.rdp for s in parts], axis=0),
        )
    c = ev.count
    rdp = c * _rdp_of(ev.params, tuple(orders.tolist()))
    if ev.kind in ("pure", "exponential"):
        e = float(ev.epsilon)  # type: ignore[arg-type]
        # e^eps overflows float64 beyond eps ~ 709; the DRV term is then +inf (the advanced bound is vacuous,
        # other methods still certify), never an OverflowError.
        expm1 = math.expm1(e) if e < 709.0 else math.inf
        return _Stats(c * e, c * e * e, c * e * expm1, True, e, c, None, rdp)
    mu2 = None
    if ev.kind == "gaussian":
        m2 = _sq(ev.noise_multiplier)  # type: ignore[arg-type]
        mu2 = c / m2 if m2 > 0 else math.inf  # m^2 underflows to 0 only for m < 1e-162: mu is then +inf
    return _Stats(None, None, None, False, None, 0, mu2, rdp)


def _seq_stats(events: tuple[PrivacyEvent | ParallelEvent, ...], orders: np.ndarray) -> _Stats:
    acc = _Stats(0.0, 0.0, 0.0, True, None, 0, 0.0, np.zeros_like(orders))
    for ev in events:
        s = _event_stats(ev, orders)
        kov_ok = acc.kov_ok and s.kov_ok and (acc.kov_k == 0 or s.kov_k == 0 or acc.kov_eps0 == s.kov_eps0)
        acc = _Stats(
            _add(acc.pure_sum, s.pure_sum),
            _add(acc.s2, s.s2),
            _add(acc.s1, s.s1),
            kov_ok,
            acc.kov_eps0 if acc.kov_k > 0 else s.kov_eps0,
            acc.kov_k + s.kov_k,
            _add(acc.mu2, s.mu2),
            acc.rdp + s.rdp,
        )
    return acc


@lru_cache(maxsize=256)
def _rdp_of(params: tuple, orders: tuple[float, ...]) -> np.ndarray:
    kind, eps, m, kappa, q = params
    if kind == "pure":
        out = rdp_pure(eps, orders)
    elif kind == "exponential":
        out = rdp_bounded_range(eps, orders)
    elif kind == "gaussian":
        out = rdp_gaussian(m, orders)
    elif kind == "gg":
        out = rdp_generalized_gaussian(m, kappa, orders)
    else:
        out = rdp_subsampled_gaussian(m, q, orders)
    out.setflags(write=False)
    return out


class PrivacyLedger:
    """The record of every mechanism invocation of a run, and the certificate of its guarantee. Spec P3, P5, P6.

    Algorithms call ``record_*`` as they run; consecutive identical records (same kind, parameters and label)
    are merged into one event with a larger ``count``, so a run of 1e6 draws costs one object.
    :meth:`epsilon` certifies the whole (adaptive, sequential) run.

    Examples
    --------
    >>> led = PrivacyLedger()
    >>> led.record_exponential(0.01, count=1000, label="vertex sampling")
    >>> led.record_gaussian(5.0, count=10)
    >>> round(led.epsilon(1e-6), 3) > 0
    True
    """

    def __init__(self) -> None:
        self._events: list[PrivacyEvent | ParallelEvent] = []

    def __repr__(self) -> str:
        return f"PrivacyLedger({len(self._events)} events, total_count={self.total_count})"

    # -- recording --------------------------------------------------------------------------------------
    def _record(self, event: PrivacyEvent) -> None:
        last = self._events[-1] if self._events else None
        if isinstance(last, PrivacyEvent) and last.params == event.params and last.label == event.label:
            self._events[-1] = replace(last, count=last.count + event.count)
        else:
            self._events.append(event)

    def record_pure(self, epsilon: float, count: int = 1, label: str = "") -> None:
        """Record ``count`` adaptive eps-DP steps (Laplace, report-noisy-max, ...)."""
        eps = check_epsilon(epsilon)
        self._record(PrivacyEvent("pure", epsilon=eps, count=check_int(count, "count", lo=1), label=str(label)))

    def record_exponential(self, epsilon: float, count: int = 1, label: str = "") -> None:
        """Record ``count`` draws of an eps-DP exponential mechanism (eps-bounded-range; RDP uses that)."""
        eps = check_epsilon(epsilon)
        self._record(PrivacyEvent("exponential", epsilon=eps, count=check_int(count, "count", lo=1), label=str(label)))

    def record_gaussian(self, noise_multiplier: float, count: int = 1, label: str = "") -> None:
        """Record ``count`` Gaussian mechanisms with noise multiplier sigma/Delta_2."""
        m = check_positive(noise_multiplier, "noise_multiplier")
        self._record(
            PrivacyEvent("gaussian", noise_multiplier=m, count=check_int(count, "count", lo=1), label=str(label))
        )

    def record_gg(self, noise_multiplier: float, kappa: float, count: int = 1, label: str = "") -> None:
        """Record ``count`` generalized Gaussian mechanisms (Spec G1) with sigma/Delta and regularity kappa."""
        m = check_positive(noise_multiplier, "noise_multiplier")
        kp = check_positive(kappa, "kappa")
        if kp < 1:
            raise ValueError(f"kappa must be >= 1 (regularity constant), got {kp!r}")
        self._record(
            PrivacyEvent("gg", noise_multiplier=m, kappa=kp, count=check_int(count, "count", lo=1), label=str(label))
        )

    def record_subsampled_gaussian(
        self, noise_multiplier: float, sampling_rate: float, count: int = 1, label: str = ""
    ) -> None:
        """Record ``count`` Poisson-subsampled Gaussian steps (DP-SGD), add/remove-one relation (MTZ19)."""
        m = check_positive(noise_multiplier, "noise_multiplier")
        q = check_probability(sampling_rate, "sampling_rate", open_left=True)
        self._record(
            PrivacyEvent(
                "subsampled_gaussian",
                noise_multiplier=m,
                sampling_rate=q,
                count=check_int(count, "count", lo=1),
                label=str(label),
            )
        )

    def merge(self, other: PrivacyLedger) -> PrivacyLedger:
        """Sequential composition: append ``other``'s events to this ledger (in place; returns self)."""
        if not isinstance(other, PrivacyLedger):
            raise ValueError(f"other must be a PrivacyLedger, got {type(other).__name__}")
        for ev in list(other._events):
            if isinstance(ev, PrivacyEvent):
                self._record(ev)
            else:
                self._events.append(ev)
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
        out = cls()
        out._events.append(ParallelEvent(tuple(tuple(lg._events) for lg in ledgers), label=str(label)))
        return out

    # -- reading ----------------------------------------------------------------------------------------
    @property
    def events(self) -> tuple[PrivacyEvent | ParallelEvent, ...]:
        return tuple(self._events)

    @property
    def total_count(self) -> int:
        """Number of mechanism invocations recorded (summing counts, across parallel parts)."""
        return sum(e.total_count for e in self._events)

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
        """Certified epsilon at ``delta`` by every applicable method (see :meth:`epsilon`).

        ``methods`` restricts the computation to those methods (default: all); a method that does not apply
        to the ledger is simply absent from the result. Restricting matters for speed: the exact KOV15
        bound costs O(k) for k homogeneous steps.
        """
        delta = check_delta(delta)
        a = _check_orders(orders)
        wanted = set(METHODS) if methods is None else set(methods)
        unknown = wanted - set(METHODS)
        if unknown:
            raise ValueError(f"methods must be a subset of {METHODS}, got {sorted(unknown)}")
        st = _seq_stats(tuple(self._events), a)
        out: dict[str, float] = {}
        if st.pure_sum is not None:
            if "basic" in wanted or "best" in wanted:
                out["basic"] = st.pure_sum
            if delta > 0 and ("advanced" in wanted or "best" in wanted):
                out["advanced"] = _drv_from_sums(st.s2, st.s1, delta)  # type: ignore[arg-type]
            if st.kov_ok and ("kov" in wanted or "best" in wanted):
                out["kov"] = 0.0 if st.kov_k == 0 else _kov_epsilon_unchecked(st.kov_eps0, st.kov_k, delta)
        if st.mu2 is not None and ("gdp" in wanted or "best" in wanted):
            if st.mu2 == 0:
                out["gdp"] = 0.0
            else:
                out["gdp"] = gdp_epsilon(math.sqrt(st.mu2), delta) if delta > 0 and st.mu2 < math.inf else math.inf
        if "rdp" in wanted or "best" in wanted:
            out["rdp"] = rdp_to_epsilon(st.rdp, a, delta)[0]
        return out

    def epsilon(self, delta: float, method: str = "best", orders: Sequence[float] | np.ndarray | None = None) -> float:
        """Certified epsilon of the whole run at ``delta``.

        ``method``:
        ``"basic"`` (sum of eps; pure/exponential events only), ``"advanced"`` (DRV10, heterogeneous; pure
        only; delta > 0), ``"kov"`` (KOV15 optimal; all pure steps share one eps0), ``"rdp"`` (every kind:
        RDP curves summed, CKS20 conversion over ``orders``), ``"gdp"`` (Gaussian events only: exact
        mu-GDP with mu = sqrt(sum 1/m_i^2), DRS22), ``"best"`` (minimum over the applicable ones; each is a
        valid certificate, so is their minimum). A method that does not apply raises ``ValueError``.
        """
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        all_eps = self.epsilons(delta, orders, methods=None if method == "best" else (method,))
        if method == "best":
            return min(all_eps.values())
        if method not in all_eps:
            kinds = sorted({e.kind for e in self._events})
            raise ValueError(
                f"method {method!r} does not apply to this ledger (event kinds {kinds}, delta={delta!r});"
                f" applicable: {sorted(all_eps)}"
            )
        return all_eps[method]
