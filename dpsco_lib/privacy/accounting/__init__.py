"""Privacy accounting: what ran (the ledger) and what it certifies (Spec P3, P5, P6).

Contents
--------
* Accountants as objects (:mod:`~dpsco_lib.privacy.accounting.accountants`): what each supports and
  certifies, :func:`get_accountant` by name, and the library's one :data:`DEFAULT_ACCOUNTANT`.
* Typed privacy events (:mod:`~dpsco_lib.privacy.accounting.events`): one frozen record per mechanism
  (Laplace / report-noisy-max, exponential mechanism as bounded-range, Gaussian, Poisson-subsampled Gaussian,
  generalized Gaussian, self-composition, composition, parallel composition), each with its neighbouring
  relation, exportable to dp-accounting's ``DpEvent``.
* :class:`PrivacyLedger` records the events of a run (homogeneous repetitions are one
  :class:`SelfComposedEvent`) and certifies it with :meth:`PrivacyLedger.epsilon`, which evaluates
  :func:`certify_events`; :func:`calibrate` (:mod:`~dpsco_lib.privacy.accounting.budget`) inverts the same
  function, so calibration and certificate cannot disagree.
* Composition of pure eps-DP steps: basic, advanced (Dwork-Rothblum-Vadhan 2010, DRV10), the optimal
  composition of Kairouz-Oh-Viswanath 2015 (KOV15), inverse solvers for the per-step budget and the
  papers' per-step rule (Bassily-Guzman-Nandi 2021).
* Fully adaptive composition: the privacy filter of Whitehouse-Ramdas-Rogers-Wu 2023 (WRRW23),
  :class:`AdvancedCompositionFilter`.
* Renyi DP (Mironov 2017, Mir17): Gaussian, Poisson-subsampled Gaussian (Mironov-Talwar-Zhang 2019,
  MTZ19), pure eps-DP, bounded-range (exponential mechanism), generalized Gaussian (Spec G1), and the
  RDP -> (eps, delta) conversion of Canonne-Kamath-Steinke 2020 (CKS20) / Balle et al. 2020.
* mu-Gaussian DP (Dong-Roth-Su 2022, DRS22): privacy curve, trade-off function, composition.
* Amplification by subsampling for (eps, delta)-DP (Balle-Barthe-Gaboardi 2018, BBG18).

Submodules: :mod:`~dpsco_lib.privacy.accounting.composition` (P3), :mod:`~dpsco_lib.privacy.accounting.rdp`
(P5), :mod:`~dpsco_lib.privacy.accounting.gdp` (P6, amplification), :mod:`~dpsco_lib.privacy.accounting.ledger`;
everything public is re-exported here (``from dpsco_lib.privacy.accounting import PrivacyLedger``).

Neighbouring relation. Every event and every ledger carries its relation: replace-one (the library's
default) or add/remove. The per-step parameters (eps, noise multiplier sigma/Delta) refer to the
sensitivity under that relation. Poisson subsampling amplification (``SubsampledGaussianEvent``,
:func:`amplify_by_subsampling`) follows MTZ19/BBG18 under add/remove (and, for :func:`amplify_by_subsampling`,
sampling m of n without replacement under replace-one with q = m/n). A ledger refuses to compose events under
different relations; :func:`to_replace_one` converts explicitly (group privacy of two).

All guarantees hold in the idealized real-arithmetic model; the library draws float64 noise from a
non-cryptographic RNG (see the package docstring). Accounting itself is exact math evaluated in float64,
rounded conservatively where a root is solved for.
"""

from dpsco_lib.privacy.accounting._common import DEFAULT_RDP_ORDERS
from dpsco_lib.privacy.accounting.accountants import (
    ACCOUNTANTS,
    ADVANCED,
    BASIC,
    BEST,
    DEFAULT_ACCOUNTANT,
    FILTER,
    GDP,
    KOV,
    PAPER,
    PLD,
    RDP,
    Accountant,
    AccountantLike,
    accountant_names,
    gaussian_accountant,
    get_accountant,
)
from dpsco_lib.privacy.accounting.budget import (
    Calibration,
    calibrate,
    check_accountant,
    filter_per_step_epsilon,
    gaussian_noise_multiplier,
    paper_rule_epsilon,
    parallel_per_step_epsilons,
    per_step_epsilon,
)
from dpsco_lib.privacy.accounting.composition import (
    AdvancedCompositionFilter,
    advanced_composition_epsilon,
    advanced_composition_epsilon_heterogeneous,
    advanced_composition_per_step_epsilon,
    basic_composition,
    cor36_per_step_epsilon,
    filter_spend,
    kov_delta,
    kov_epsilon,
    kov_per_step_epsilon,
    max_composition_steps,
)
from dpsco_lib.privacy.accounting.events import (
    ADD_REMOVE,
    RELATIONS,
    REPLACE_ONE,
    ComposedEvent,
    DpEvent,
    ExponentialEvent,
    GaussianEvent,
    GeneralizedGaussianEvent,
    LaplaceEvent,
    ParallelEvent,
    ReplaceOneFromAddRemove,
    ReportNoisyMaxEvent,
    SelfComposedEvent,
    SubsampledGaussianEvent,
    to_dp_accounting,
    to_replace_one,
)
from dpsco_lib.privacy.accounting.gdp import amplify_by_subsampling, gdp_compose, gdp_delta, gdp_epsilon, gdp_tradeoff
from dpsco_lib.privacy.accounting.ledger import METHODS, PrivacyLedger, certify_events, epsilons_of_events
from dpsco_lib.privacy.accounting.pld import SoundPld, pld_epsilon, sound_pld
from dpsco_lib.privacy.accounting.rdp import (
    rdp_bounded_range,
    rdp_gaussian,
    rdp_generalized_gaussian,
    rdp_pure,
    rdp_subsampled_gaussian,
    rdp_to_epsilon,
)

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
    "ADD_REMOVE",
    "DEFAULT_RDP_ORDERS",
    "METHODS",
    "RELATIONS",
    "REPLACE_ONE",
    "AdvancedCompositionFilter",
    "Calibration",
    "ComposedEvent",
    "DpEvent",
    "ExponentialEvent",
    "GaussianEvent",
    "GeneralizedGaussianEvent",
    "LaplaceEvent",
    "ParallelEvent",
    "PrivacyLedger",
    "ReplaceOneFromAddRemove",
    "ReportNoisyMaxEvent",
    "SelfComposedEvent",
    "SoundPld",
    "SubsampledGaussianEvent",
    "calibrate",
    "certify_events",
    "check_accountant",
    "filter_per_step_epsilon",
    "gaussian_noise_multiplier",
    "parallel_per_step_epsilons",
    "epsilons_of_events",
    "paper_rule_epsilon",
    "per_step_epsilon",
    "pld_epsilon",
    "sound_pld",
    "to_dp_accounting",
    "to_replace_one",
    "advanced_composition_epsilon",
    "advanced_composition_epsilon_heterogeneous",
    "advanced_composition_per_step_epsilon",
    "amplify_by_subsampling",
    "basic_composition",
    "cor36_per_step_epsilon",
    "filter_spend",
    "gdp_compose",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_tradeoff",
    "kov_delta",
    "kov_epsilon",
    "kov_per_step_epsilon",
    "max_composition_steps",
    "rdp_bounded_range",
    "rdp_gaussian",
    "rdp_generalized_gaussian",
    "rdp_pure",
    "rdp_subsampled_gaussian",
    "rdp_to_epsilon",
]
