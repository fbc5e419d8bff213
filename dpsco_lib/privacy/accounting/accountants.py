"""Accountants as objects: which events each certifies, and how. Spec P3, P5, P6.

The structure follows dp-accounting's ``PrivacyAccountant`` (``supports(event)``, composition,
``get_epsilon(target_delta)``), adapted to the library's typed events
(:mod:`~dpsco_lib.privacy.accounting.events`): an :class:`Accountant` states whether it supports a sequence of
events (:meth:`Accountant.supports`) and certifies their adaptive sequential composition
(:meth:`Accountant.get_epsilon`) through :func:`~dpsco_lib.privacy.accounting.ledger.certify_events`, the one
certification engine, so a certificate does not depend on how the accountant was named.

The accountants
---------------
:data:`BASIC` (sum of eps, pure steps); :data:`ADVANCED` (Dwork-Rothblum-Vadhan 2010, DRV10, pure steps,
delta > 0); :data:`KOV` (the optimal composition of Kairouz-Oh-Viswanath 2015, KOV15, for k steps of one eps0);
:data:`RDP` (Renyi DP, Mironov 2017, with the conversion of Canonne-Kamath-Steinke 2020; every event kind);
:data:`GDP` (exact mu-GDP of Dong-Roth-Su 2022, Gaussian events); :data:`PLD` (privacy-loss distributions of
dp-accounting, pessimistic discretization); :data:`BEST` (the pointwise minimum over the sound accountants that
support the events: each is an upper bound, so is their minimum); :data:`PAPER` (the per-step rule of the
source papers' proofs, eps0 = eps / (2 sqrt(2 k ln(1/delta))), Bassily-Guzman-Nandi 2021, certified by DRV10);
:data:`FILTER` (the fully adaptive privacy filter of Whitehouse-Ramdas-Rogers-Wu 2023, WRRW23, for pure steps
whose budgets are chosen during the run; it admits steps instead of calibrating a fixed count).

:data:`DEFAULT_ACCOUNTANT` is the default of every runner, of
:func:`~dpsco_lib.privacy.accounting.budget.calibrate`, of
:func:`~dpsco_lib.privacy.accounting.budget.per_step_epsilon`, of
:func:`~dpsco_lib.privacy.accounting.ledger.certify_events` and of
:meth:`~dpsco_lib.privacy.accounting.ledger.PrivacyLedger.epsilon`. Public functions accept an accountant
object or its name; :func:`get_accountant` resolves a name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dpsco_lib.privacy.accounting.events import DpEvent

__all__ = [
    "ACCOUNTANTS",
    "ADVANCED",
    "BASIC",
    "BEST",
    "DEFAULT_ACCOUNTANT",
    "FILTER",
    "GDP",
    "KOV",
    "PAPER",
    "PLD",
    "RDP",
    "Accountant",
    "AccountantLike",
    "accountant_names",
    "gaussian_accountant",
    "get_accountant",
]


@dataclass(frozen=True)
class Accountant:
    """One accountant: the events it supports and the certificate it gives them.

    Attributes
    ----------
    name : str
        The name accepted at the public boundary (``accountant="rdp"``) and recorded in results.
    method : str or None
        The accountant of :func:`~dpsco_lib.privacy.accounting.ledger.certify_events` that certifies its
        events (``None``: it does not certify a fixed sequence of events, e.g. the filter).
    design : str
        The name of the accountant that prices a per-step budget inside a runner's design search, where it is
        evaluated at thousands of step counts: a cheap sound accountant of similar tightness stands in for a
        costly one (KOV15: O(k) per evaluation; PLD: seconds); the run's own budget is always this accountant's.
    closed_form_inverse : bool
        Whether the per-step budget of k pure steps has a closed form (basic, DRV10, KOV15, the papers' rule);
        design searches tabulate the others.
    """

    name: str
    method: str | None
    design: str = ""
    closed_form_inverse: bool = True

    def __repr__(self) -> str:
        return f"<accountant {self.name!r}>"

    @property
    def design_accountant(self) -> Accountant:
        """The accountant a design search prices per-step budgets with (see ``design``)."""
        return get_accountant(self.design or self.name)

    def supports(self, events: Sequence[DpEvent], delta: float) -> bool:
        """Whether this accountant certifies the adaptive composition of ``events`` at ``delta``."""
        if self.method is None:
            return False
        from dpsco_lib.privacy.accounting.ledger import epsilons_of_events

        if self.method == "best":
            return True
        try:
            return self.method in epsilons_of_events(tuple(events), delta, methods=(self.method,))
        except ValueError:
            return False

    def get_epsilon(self, events: Sequence[DpEvent], delta: float, orders: Sequence[float] | None = None) -> float:
        """Certified epsilon at ``delta`` of the adaptive composition of ``events``; ``ValueError`` if unsupported."""
        if self.method is None:
            raise ValueError(f"accountant {self.name!r} does not certify a fixed sequence of events")
        from dpsco_lib.privacy.accounting.ledger import certify_events

        return certify_events(tuple(events), delta, self.method, orders)

    def certify(self, events: Sequence[DpEvent], delta: float) -> tuple[float, str]:
        """``(epsilon, name)``: the certificate and the name of the accountant that gives it (for :data:`BEST`,
        the minimizer of :func:`~dpsco_lib.privacy.accounting.ledger.epsilons_of_events`)."""
        if self.method == "best":
            from dpsco_lib.privacy.accounting.ledger import epsilons_of_events

            eps = epsilons_of_events(tuple(events), delta, methods=("best",))
            name = min(eps, key=eps.__getitem__)
            return eps[name], name
        return self.get_epsilon(events, delta), str(self.method)


#: Sum of the per-step epsilons (pure steps; also the only accountant at delta = 0).
BASIC = Accountant("basic", "basic")
#: DRV10 advanced composition, heterogeneous pure steps, delta > 0.
ADVANCED = Accountant("advanced", "advanced")
#: KOV15 optimal composition of k steps of one eps0 (O(k)); designs price with DRV10.
KOV = Accountant("kov", "kov", design="advanced")
#: Renyi DP with the CKS20 conversion; every event kind.
RDP = Accountant("rdp", "rdp", closed_form_inverse=False)
#: Exact mu-GDP (DRS22) for Gaussian events.
GDP = Accountant("gdp", "gdp")
#: dp-accounting's privacy-loss distributions; designs price with RDP.
PLD = Accountant("pld", "pld", design="rdp", closed_form_inverse=False)
#: The pointwise minimum over the sound accountants that support the events; designs price with RDP.
BEST = Accountant("best", "best", design="rdp", closed_form_inverse=False)
#: The papers' per-step rule for k pure steps, certified by DRV10.
PAPER = Accountant("paper", "advanced")
#: The WRRW23 fully adaptive filter (pure steps chosen during the run); admits steps, calibrates no fixed count.
FILTER = Accountant("filter", None)

#: The default accountant of the library: the tightest sound one for the events.
DEFAULT_ACCOUNTANT: Accountant = BEST

_ALL: tuple[Accountant, ...] = (BASIC, ADVANCED, KOV, RDP, GDP, PLD, BEST, PAPER, FILTER)
_BY_NAME = {a.name: a for a in _ALL}

#: Names of the accountants that certify a fixed sequence of events (accepted by ``calibrate``).
ACCOUNTANTS: tuple[str, ...] = tuple(a.name for a in _ALL if a.method is not None)

AccountantLike = Accountant | str


def accountant_names() -> tuple[str, ...]:
    """Names of every accountant, including the adaptive filter."""
    return tuple(_BY_NAME)


def get_accountant(accountant: AccountantLike, name: str = "accountant") -> Accountant:
    """The accountant named ``accountant`` (an :class:`Accountant` is returned as is).

    Raises
    ------
    ValueError
        When ``accountant`` is neither an :class:`Accountant` nor one of :func:`accountant_names`.
    """
    if isinstance(accountant, Accountant):
        return accountant
    if isinstance(accountant, str) and accountant in _BY_NAME:
        return _BY_NAME[accountant]
    raise ValueError(f"{name} must be one of {accountant_names()}, got {accountant!r}")


def gaussian_accountant(accountant: AccountantLike, name: str = "accountant") -> Accountant:
    """The accountant that certifies Gaussian (mu-GDP) events for ``accountant``.

    GDP is exact for Gaussian events, so the minimum :data:`BEST` takes over the sound accountants is GDP's
    certificate: :data:`BEST` resolves to :data:`GDP`. :data:`GDP`, :data:`RDP` and :data:`PLD` are returned as
    they are; the pure-step accountants do not apply (``ValueError``).
    """
    acc = get_accountant(accountant, name)
    if acc is BEST:
        return GDP
    if acc not in (GDP, RDP, PLD):
        raise ValueError(f"{name} must be one of ('gdp', 'best', 'rdp', 'pld') for Gaussian events, got {acc.name!r}")
    return acc
