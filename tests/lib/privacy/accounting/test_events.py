"""Typed privacy events (dpsco_lib.privacy.accounting.events): validation, kinds, neighbouring relations and their
conversion, and the dp-accounting export.
"""

from __future__ import annotations

import math

import pytest

from dpsco_lib.privacy.accounting import (
    ADD_REMOVE,
    REPLACE_ONE,
    ComposedEvent,
    ExponentialEvent,
    GaussianEvent,
    GeneralizedGaussianEvent,
    LaplaceEvent,
    ParallelEvent,
    PrivacyLedger,
    ReportNoisyMaxEvent,
    SelfComposedEvent,
    SubsampledGaussianEvent,
    certify_events,
    to_dp_accounting,
    to_replace_one,
)


# ----------------------------------------------------------------------------------------------------- events
@pytest.mark.parametrize("make", [
    lambda: LaplaceEvent(0.0), lambda: LaplaceEvent(-1.0), lambda: LaplaceEvent(math.nan),
    lambda: ExponentialEvent(math.inf), lambda: GaussianEvent(0.0), lambda: GaussianEvent(-2.0),
    lambda: GeneralizedGaussianEvent(1.0, 0.5), lambda: SubsampledGaussianEvent(1.0, 0.0),
    lambda: SubsampledGaussianEvent(1.0, 1.5), lambda: SelfComposedEvent(LaplaceEvent(1.0), 0),
    lambda: LaplaceEvent(1.0, relation="swap"),
])
def test_events_validate_their_parameters(make):
    with pytest.raises((ValueError, TypeError)):
        make()


def test_events_are_frozen_hashable_and_state_their_kind():
    e = ExponentialEvent(0.1, label="selection")
    with pytest.raises(AttributeError):
        e.epsilon = 0.2  # type: ignore[misc]
    assert hash(e) == hash(ExponentialEvent(0.1, label="selection"))
    assert (LaplaceEvent(1.0).kind, ReportNoisyMaxEvent(1.0).kind, e.kind) == ("pure", "pure", "exponential")
    sc = SelfComposedEvent(e, 7)
    assert sc.kind == "exponential" and sc.epsilon == 0.1 and sc.count == 7
    assert SubsampledGaussianEvent(1.0, 0.1).relation == ADD_REMOVE and GaussianEvent(1.0).relation == REPLACE_ONE


def test_subsampled_gaussian_must_be_add_remove():
    with pytest.raises(ValueError, match="to_replace_one"):
        SubsampledGaussianEvent(1.0, 0.1, relation=REPLACE_ONE)


def test_composing_different_relations_raises_unless_converted():
    sg = SubsampledGaussianEvent(1.2, 0.01)
    with pytest.raises(ValueError, match="relations"):
        ComposedEvent((LaplaceEvent(0.1), sg))
    with pytest.raises(ValueError, match="relations"):
        ParallelEvent(((LaplaceEvent(0.1),), (sg,)))
    led = PrivacyLedger()
    led.record_pure(0.1)
    with pytest.raises(ValueError, match="neighbouring relations"):
        led.record(sg)
    other = PrivacyLedger()
    other.record(sg, 100)
    with pytest.raises(ValueError, match="neighbouring relations"):
        led.merge(other)
    # the explicit conversion: group privacy of two; a valid, larger certificate
    led.record(to_replace_one(SelfComposedEvent(sg, 100)))
    assert led.relation == REPLACE_ONE
    alone = other.epsilon(1e-5)
    assert led.epsilon(1e-5) >= 2 * alone


def test_group_of_two_conversion_matches_its_formula():
    # a single eps-DP add/remove step is 2 eps-DP under replace-one (delta = 0)
    led = PrivacyLedger(REPLACE_ONE)
    led.record(to_replace_one(LaplaceEvent(0.3, relation=ADD_REMOVE)))
    assert led.epsilon(0.0, "basic") == pytest.approx(0.6, rel=1e-15)


def test_gg_events_have_no_dp_accounting_counterpart():
    with pytest.raises(ValueError, match="no dp-accounting"):
        to_dp_accounting(GeneralizedGaussianEvent(2.0, 1.5))


# ---------------------------------------------------------------------------------------------------------------
# Relation conversion: group privacy of two and its delta (mutants rel-group-of-two-delta, rel-conversion-delta-split)
# ---------------------------------------------------------------------------------------------------------------
def _subsampled_block():
    return to_replace_one(SelfComposedEvent(SubsampledGaussianEvent(1.2, 0.05), 200))


@pytest.mark.parametrize("delta", [1e-6, 1e-3])
def test_group_of_two_conversion_is_sound(delta):
    """(eps, d')-DP under add/remove gives (2 eps, (1 + e^eps) d') under replace-one: the replace-one certificate c
    of a converted block must come from an add/remove certificate c/2 valid at d' = delta/(1 + e^(c/2))."""
    block = _subsampled_block()
    # method "rdp" names the accountant of the (empty) rest; the block itself is certified by its best accountant
    c = certify_events((block,), delta, "rdp")
    d_prime = delta / (1.0 + math.exp(c / 2.0))
    assert certify_events(block.events, d_prime) <= c / 2.0 * (1 + 1e-9)
