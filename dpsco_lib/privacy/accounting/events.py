"""Typed privacy events: one frozen record per mechanism the library runs. Spec P1-P6, G1.

An event states *what ran*; the accountants of :mod:`~dpsco_lib.privacy.accounting.ledger` turn a sequence of
events into a certificate, and :func:`~dpsco_lib.privacy.accounting.budget.calibrate` inverts the same
accountants. The design follows dp-accounting's ``dp_event`` module (Google's DP library): small immutable
records whose parameters are *noise relative to sensitivity*, composed by :class:`SelfComposedEvent`,
:class:`ComposedEvent` and :class:`ParallelEvent`, and exportable with :func:`to_dp_accounting`.

Neighbouring relation
---------------------
Every event carries the neighbouring relation under which its privacy contract holds:

* ``"replace_one"`` (:data:`REPLACE_ONE`): D and D' have the same size and differ in one record. This is the
  relation of every algorithm in the library except DP-SGD.
* ``"add_remove"`` (:data:`ADD_REMOVE`): D' is D with one record added or removed. Poisson subsampling
  amplification (Mironov-Talwar-Zhang 2019, MTZ19) is stated under this relation.

Guarantees under different relations do not compose: a ledger raises when asked to. The explicit conversion
:func:`to_replace_one` wraps an add/remove event in :class:`ReplaceOneFromAddRemove`, certified by group
privacy for the group of size two (a replacement is a removal followed by an addition): an
(eps, delta)-DP guarantee under add/remove gives (2 eps, (1 + e^eps) delta) under replace-one.

All contracts hold in the idealized real-arithmetic model; the library draws float64 noise from a
non-cryptographic generator.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from dpsco_lib._validation import check_epsilon, check_int, check_positive, check_probability

REPLACE_ONE = "replace_one"
ADD_REMOVE = "add_remove"
RELATIONS = (REPLACE_ONE, ADD_REMOVE)

__all__ = [
    "ADD_REMOVE",
    "RELATIONS",
    "REPLACE_ONE",
    "ComposedEvent",
    "DpEvent",
    "ExponentialEvent",
    "GaussianEvent",
    "GeneralizedGaussianEvent",
    "LaplaceEvent",
    "ParallelEvent",
    "ReplaceOneFromAddRemove",
    "ReportNoisyMaxEvent",
    "SelfComposedEvent",
    "SubsampledGaussianEvent",
    "check_events",
    "check_relation",
    "to_dp_accounting",
    "to_replace_one",
]


def check_relation(relation: Any, name: str = "relation") -> str:
    """Validate a neighbouring relation: one of :data:`RELATIONS`."""
    if not isinstance(relation, str) or relation not in RELATIONS:
        raise ValueError(f"{name} must be one of {RELATIONS}, got {relation!r}")
    return relation


@dataclass(frozen=True)
class DpEvent:
    """Base class of the typed privacy events; not itself a mechanism.

    Attributes
    ----------
    relation : {"replace_one", "add_remove"}
        The neighbouring relation under which the event's contract holds (keyword-only).
    label : str
        A free description (``"vertex selection"``); it never changes the accounting (keyword-only).
    """

    kind: ClassVar[str] = "event"
    relation: str = field(default=REPLACE_ONE, kw_only=True)
    label: str = field(default="", kw_only=True)

    def __post_init__(self) -> None:
        check_relation(self.relation)
        if not isinstance(self.label, str):
            raise TypeError(f"label must be a str, got {type(self.label).__name__}")

    @property
    def count(self) -> int:
        """Number of mechanism invocations the event stands for."""
        return 1

    @property
    def total_count(self) -> int:
        return self.count


@dataclass(frozen=True)
class LaplaceEvent(DpEvent):
    """An eps-DP step: the Laplace mechanism with scale Delta_1/eps, or any pure eps-DP release (Spec P1).

    Contract: for neighbouring D, D' and every output set S, P[M(D) in S] <= e^eps P[M(D') in S].
    """

    kind: ClassVar[str] = "pure"
    epsilon: float

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))


@dataclass(frozen=True)
class ReportNoisyMaxEvent(LaplaceEvent):
    """Report-noisy-max with Laplace noise of scale 2 Delta/eps over J scores of sensitivity Delta (Spec P2).

    Contract: eps-DP (pure), the same as :class:`LaplaceEvent`; accounted as such. (With Gumbel noise the
    report-noisy-max *is* the exponential mechanism: record an :class:`ExponentialEvent` instead.)
    """


@dataclass(frozen=True)
class ExponentialEvent(DpEvent):
    """The exponential mechanism with utility sensitivity Delta and factor eps/(2 Delta) (Spec P4).

    Contract: eps-DP and, more strongly, eps-bounded-range (Durfee-Rogers 2019): the privacy loss lies in an
    interval of length eps. RDP uses the bounded-range curve (Cesar-Rogers 2021), which is at most a quarter
    of the pure-DP curve at small eps; the other accountants use eps-DP.
    """

    kind: ClassVar[str] = "exponential"
    epsilon: float

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))


@dataclass(frozen=True)
class GaussianEvent(DpEvent):
    """The Gaussian mechanism N(f(D), sigma^2 I) with l2 sensitivity Delta_2; noise_multiplier = sigma/Delta_2.

    Contract: exactly mu-GDP with mu = 1/noise_multiplier (Dong-Roth-Su 2022), hence the analytic
    (eps, delta) curve of Balle-Wang 2018 and RDP eps(alpha) = alpha/(2 m^2) (Mironov 2017).
    """

    kind: ClassVar[str] = "gaussian"
    noise_multiplier: float

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "noise_multiplier", check_positive(self.noise_multiplier, "noise_multiplier"))


@dataclass(frozen=True)
class SubsampledGaussianEvent(DpEvent):
    """One step of DP-SGD: Poisson subsampling at rate q, then a Gaussian with noise multiplier sigma/C.

    Contract: the RDP curve of the Poisson-subsampled Gaussian (MTZ19) and its exact PLD (dp-accounting), both
    under the add/remove relation, which is therefore the default here.
    """

    kind: ClassVar[str] = "subsampled_gaussian"
    noise_multiplier: float
    sampling_rate: float
    relation: str = field(default=ADD_REMOVE, kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.relation != ADD_REMOVE:
            raise ValueError(
                "relation of a SubsampledGaussianEvent must be 'add_remove' (the relation of its RDP/PLD bound); "
                f"got {self.relation!r}: use to_replace_one(event) for a replace-one guarantee"
            )
        object.__setattr__(self, "noise_multiplier", check_positive(self.noise_multiplier, "noise_multiplier"))
        q = check_probability(self.sampling_rate, "sampling_rate", open_left=True)
        object.__setattr__(self, "sampling_rate", q)


@dataclass(frozen=True)
class GeneralizedGaussianEvent(DpEvent):
    """The generalized Gaussian mechanism of Spec G1 with noise_multiplier = sigma/Delta and regularity kappa.

    Contract: the RDP bound of Spec G1 (kappa-regular smooth norm, kappa >= 1); no PLD is known.
    """

    kind: ClassVar[str] = "gg"
    noise_multiplier: float
    kappa: float

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "noise_multiplier", check_positive(self.noise_multiplier, "noise_multiplier"))
        kp = check_positive(self.kappa, "kappa")
        if kp < 1:
            raise ValueError(f"kappa must be >= 1 (the regularity constant of a smooth norm), got {kp!r}")
        object.__setattr__(self, "kappa", kp)


@dataclass(frozen=True)
class SelfComposedEvent(DpEvent):
    """``count`` adaptive repetitions of ``event`` (sequential composition); the relation is the event's."""

    event: DpEvent
    repetitions: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.event, DpEvent):
            raise TypeError(f"event must be a DpEvent, got {type(self.event).__name__}")
        object.__setattr__(self, "relation", self.event.relation)
        super().__post_init__()
        object.__setattr__(self, "repetitions", check_int(self.repetitions, "repetitions", lo=1))

    @property
    def count(self) -> int:
        return self.repetitions * self.event.count

    # Read-through of the repeated mechanism's parameters, so ``ledger.events[0].epsilon`` reads naturally.
    def __getattr__(self, name: str) -> Any:
        if name in ("epsilon", "noise_multiplier", "kappa", "sampling_rate"):
            return getattr(self.event, name)
        raise AttributeError(name)

    @property  # type: ignore[override]
    def kind(self) -> str:  # noqa: D401 - the repeated mechanism's kind ("exponential", ...)
        """The kind of the repeated mechanism (``"pure"``, ``"exponential"``, ``"gaussian"``, ...)."""
        return self.event.kind


def _check_same_relation(events: tuple[DpEvent, ...], what: str) -> str:
    rels = {e.relation for e in events}
    if len(rels) > 1:
        raise ValueError(
            f"{what} mixes neighbouring relations {sorted(rels)}: guarantees under different relations do not "
            "compose; convert explicitly with to_replace_one(event)"
        )
    return rels.pop() if rels else REPLACE_ONE


@dataclass(frozen=True)
class ComposedEvent(DpEvent):
    """Adaptive sequential composition of ``events`` (all under one neighbouring relation)."""

    kind: ClassVar[str] = "composed"
    events: tuple[DpEvent, ...] = ()

    def __post_init__(self) -> None:
        evs = tuple(self.events)
        for e in evs:
            if not isinstance(e, DpEvent):
                raise TypeError(f"events must be DpEvents, got {type(e).__name__}")
        object.__setattr__(self, "events", evs)
        object.__setattr__(self, "relation", _check_same_relation(evs, "ComposedEvent"))
        super().__post_init__()

    @property
    def count(self) -> int:
        return sum(e.count for e in self.events)


@dataclass(frozen=True)
class ParallelEvent(DpEvent):
    """Parallel composition: each part ran on a disjoint part of the data (McSherry 2009).

    A neighbouring pair differs in one record, which lies in one part only, so the block's privacy curve is
    the pointwise maximum of the parts' curves: each accountant charges the worst part.
    """

    kind: ClassVar[str] = "parallel"
    parts: tuple[tuple[DpEvent, ...], ...] = ()

    def __post_init__(self) -> None:
        parts = tuple(tuple(p) for p in self.parts)
        object.__setattr__(self, "parts", parts)
        flat = tuple(e for p in parts for e in p)
        for e in flat:
            if not isinstance(e, DpEvent):
                raise TypeError(f"parts must hold DpEvents, got {type(e).__name__}")
        object.__setattr__(self, "relation", _check_same_relation(flat, "ParallelEvent"))
        super().__post_init__()

    @property
    def count(self) -> int:
        return sum(e.count for p in self.parts for e in p)


@dataclass(frozen=True)
class ReplaceOneFromAddRemove(DpEvent):
    """Explicit conversion of add/remove ``events`` to a replace-one guarantee (group privacy, group of two).

    If the composed ``events`` are (eps, delta)-DP under add/remove, the block is (2 eps, (1 + e^eps) delta)-DP
    under replace-one. The ledger certifies the block through this (eps, delta) statement only.
    """

    kind: ClassVar[str] = "replace_one_from_add_remove"
    events: tuple[DpEvent, ...] = ()
    relation: str = field(default=REPLACE_ONE, kw_only=True)

    def __post_init__(self) -> None:
        evs = tuple(self.events)
        if not evs or any(not isinstance(e, DpEvent) or e.relation != ADD_REMOVE for e in evs):
            raise ValueError("ReplaceOneFromAddRemove needs at least one event, all under the 'add_remove' relation")
        object.__setattr__(self, "events", evs)
        if self.relation != REPLACE_ONE:
            raise ValueError(f"relation of ReplaceOneFromAddRemove is 'replace_one', got {self.relation!r}")
        super().__post_init__()

    @property
    def count(self) -> int:
        return sum(e.count for e in self.events)


def check_events(events: Any, name: str = "events") -> tuple[DpEvent, ...]:
    """Validate a sequence of :class:`DpEvent` (a list or tuple; a single event is not a sequence)."""
    if isinstance(events, (str, bytes, DpEvent)) or not isinstance(events, (list, tuple)):
        raise TypeError(
            f"{name} must be a list or tuple of DpEvent objects, got {events!r} of type {type(events).__name__}"
        )
    for i, e in enumerate(events):
        if not isinstance(e, DpEvent):
            raise TypeError(f"{name}[{i}] must be a DpEvent (e.g. GaussianEvent(2.0)), got {e!r} of type "
                            f"{type(e).__name__}")
    return tuple(events)


def to_replace_one(*events: DpEvent) -> ReplaceOneFromAddRemove:
    """The explicit add/remove -> replace-one conversion of ``events`` (see :class:`ReplaceOneFromAddRemove`)."""
    return ReplaceOneFromAddRemove(tuple(events))


def to_dp_accounting(event: DpEvent) -> Any:
    """Export an event to dp-accounting's ``DpEvent`` (``dp_accounting.dp_event``), for an accountant built with
    ``neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE``, whatever the event's own relation.

    The export carries the event's privacy curve, not its relation. A ``GaussianEvent(m)`` is exactly mu-GDP with
    mu = 1/m under its own relation, where m is the noise relative to the sensitivity under that relation; that
    is the curve of ``GaussianDpEvent(m)`` under ADD_OR_REMOVE_ONE in both dp-accounting accountants
    (``RdpAccountant`` and ``PLDAccountant``). Under REPLACE_ONE the two accountants disagree (the PLD
    accountant doubles the sensitivity of a Gaussian, the RDP accountant does not), so no single export is
    faithful there. A replace-one Gaussian with noise multiplier m is the add/remove Gaussian with the
    sensitivity doubled and the multiplier halved, which is what dp-accounting's PLD accountant computes for
    ``GaussianDpEvent(2 m)`` under REPLACE_ONE; the export writes the equivalent ``GaussianDpEvent(m)`` for
    ADD_OR_REMOVE_ONE instead. ``SubsampledGaussianEvent(m, q)`` becomes ``PoissonSampledDpEvent(q,
    GaussianDpEvent(m))`` (add/remove, MTZ19).

    Raises ``ValueError`` for the events that have no faithful counterpart in both accountants: pure eps-DP
    steps (Laplace, report-noisy-max, exponential mechanism: their worst-case curve is randomized response,
    which both accountants accept only under REPLACE_ONE, and ``LaplaceDpEvent`` is the Laplace mechanism's
    own, smaller, curve), generalized Gaussian events, parallel blocks and relation conversions.
    """
    from dp_accounting import dp_event as de

    if isinstance(event, GaussianEvent):
        return de.GaussianDpEvent(event.noise_multiplier)
    if isinstance(event, SubsampledGaussianEvent):
        return de.PoissonSampledDpEvent(event.sampling_rate, de.GaussianDpEvent(event.noise_multiplier))
    if isinstance(event, SelfComposedEvent):
        return de.SelfComposedDpEvent(to_dp_accounting(event.event), event.repetitions)
    if isinstance(event, ComposedEvent):
        return de.ComposedDpEvent([to_dp_accounting(e) for e in event.events])
    if isinstance(event, (LaplaceEvent, ExponentialEvent)):
        raise ValueError(
            f"{type(event).__name__} (a pure eps-DP step) has no faithful dp-accounting DpEvent for both the "
            "RdpAccountant and the PLDAccountant under ADD_OR_REMOVE_ONE: its worst-case curve (randomized "
            "response) is accepted only under REPLACE_ONE, where the two accountants disagree on Gaussians, and "
            "LaplaceDpEvent is the Laplace mechanism's own curve, below the eps-DP worst case; certify it with "
            "PrivacyLedger.epsilon (method 'kov', 'pld' or 'rdp')"
        )
    raise ValueError(
        f"{type(event).__name__} has no dp-accounting DpEvent in either the RdpAccountant or the PLDAccountant "
        "(generalized Gaussian, parallel and relation-conversion events are accounted by this library only)"
    )
