"""Typed privacy events, neighbouring relations, the one calibration path and the dp-accounting export."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsco_lib.algorithms import Result
from dpsco_lib.privacy.accounting import (
    ACCOUNTANTS,
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
    advanced_composition_per_step_epsilon,
    calibrate,
    certify_events,
    kov_per_step_epsilon,
    paper_rule_epsilon,
    per_step_epsilon,
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


def test_ledger_relation_is_set_by_first_event_and_shown_in_the_certificate():
    led = PrivacyLedger()
    assert led.relation is None
    led.record_subsampled_gaussian(1.1, 0.01, count=100)
    assert led.relation == ADD_REMOVE
    assert "add_remove" in led.certificate(1e-5)


def test_gg_events_have_no_dp_accounting_counterpart():
    with pytest.raises(ValueError, match="no dp-accounting"):
        to_dp_accounting(GeneralizedGaussianEvent(2.0, 1.5))


# ----------------------------------------------------------------------------------------------- calibration
@pytest.mark.parametrize("accountant", [a for a in ACCOUNTANTS if a not in ("gdp",)])
@pytest.mark.parametrize("mechanism", ["pure", "exponential"])
def test_per_step_epsilon_certifies_the_target_tightly(accountant, mechanism):
    eps, delta, k = 1.0, 1e-6, 500
    cal = per_step_epsilon(eps, delta, k, accountant=accountant, mechanism=mechanism)
    ev = SelfComposedEvent((LaplaceEvent if mechanism == "pure" else ExponentialEvent)(cal.value), k)
    method = "advanced" if accountant == "paper" else accountant
    assert certify_events((ev,), delta, method) <= eps == cal.target_epsilon
    assert cal.certified_epsilon == certify_events((ev,), delta, method)
    if accountant not in ("paper", "pld"):  # solved to the boundary (PLD is a step function of eps0)
        assert cal.certified_epsilon == pytest.approx(eps, rel=1e-9)


def test_per_step_epsilon_reproduces_the_closed_form_solvers_bit_for_bit():
    eps, delta, k = 2.0, 1e-7, 1000
    assert per_step_epsilon(eps, delta, k, accountant="advanced").value == advanced_composition_per_step_epsilon(
        eps, delta_total=delta, k=k)
    assert per_step_epsilon(eps, delta, k, accountant="kov").value <= kov_per_step_epsilon(eps, delta_total=delta,
                                                                                           k=k)
    assert per_step_epsilon(eps, delta, k, accountant="paper").value == paper_rule_epsilon(eps, delta, k)


def test_best_is_at_least_as_generous_as_every_single_accountant():
    eps, delta, k = 1.0, 1e-6, 2000
    best = per_step_epsilon(eps, delta, k, accountant="best", mechanism="exponential").value
    for acc in ("advanced", "kov", "rdp", "basic", "paper"):
        assert best >= per_step_epsilon(eps, delta, k, accountant=acc, mechanism="exponential").value * (1 - 1e-12)
    # the bounded-range RDP of the exponential mechanism beats the optimal pure-DP composition here
    assert best > 1.5 * per_step_epsilon(eps, delta, k, accountant="kov").value


@pytest.mark.parametrize("mechanism", ["pure", "exponential"])
@pytest.mark.parametrize(("eps", "k"), [(0.05, 3), (1.0, 40), (16.0, 40), (1.0, 3000)])
def test_best_is_the_minimum_and_its_seeded_solve_the_largest_single_budget(mechanism, eps, k):
    """"best" is the minimum over the accountants (KOV15's root solve is skipped only where one pass shows it
    cannot win), and its seeded per-step solve is the largest of the single accountants' budgets."""
    cls = LaplaceEvent if mechanism == "pure" else ExponentialEvent
    delta = 1e-6
    singles = {a: per_step_epsilon(eps, delta, k, accountant=a, mechanism=mechanism).value
               for a in ("basic", "advanced", "kov", "rdp")}
    cal = per_step_epsilon(eps, delta, k, accountant="best", mechanism=mechanism)
    assert cal.value == pytest.approx(max(singles.values()), rel=1e-11) and cal.certified_epsilon <= eps
    for e0 in (0.5 * cal.value, cal.value, 2.0 * cal.value):
        ev = (SelfComposedEvent(cls(e0), k),)
        every = {a: certify_events(ev, delta, a) for a in ("basic", "advanced", "kov", "rdp")}
        assert certify_events(ev, delta, "best") == min(every.values())
    if mechanism == "pure":  # the optimal composition of pure steps wins, and "best" resolves to it
        assert cal.accountant == "kov" and cal.value == pytest.approx(singles["kov"], rel=1e-11)


def test_calibrate_noise_multiplier_decreasing_and_discrete_steps():
    cal = calibrate(lambda m: SelfComposedEvent(GaussianEvent(m), 50), epsilon=1.0, delta=1e-5, accountant="gdp",
                    bracket=(1.0, 2.0), increasing=False)
    assert cal.certified_epsilon <= 1.0 and cal.certified_epsilon == pytest.approx(1.0, rel=1e-9)
    assert cal.accountant == "gdp"
    steps = calibrate(lambda k: SelfComposedEvent(LaplaceEvent(0.01), int(k)), epsilon=1.0, delta=1e-6,
                      accountant="kov", bracket=(1, 10), discrete=True)
    k = int(steps.value)
    assert certify_events((SelfComposedEvent(LaplaceEvent(0.01), k),), 1e-6, "kov") <= 1.0
    assert certify_events((SelfComposedEvent(LaplaceEvent(0.01), k + 1),), 1e-6, "kov") > 1.0


def test_dp_sgd_calibration_with_pld_is_tighter_than_rdp():
    def make(m):
        return SelfComposedEvent(SubsampledGaussianEvent(m, 0.01), 1000)

    rdp = calibrate(make, epsilon=1.0, delta=1e-5, accountant="rdp", bracket=(0.5, 5.0), increasing=False)
    best = calibrate(make, epsilon=1.0, delta=1e-5, accountant="best", bracket=(0.5, 5.0), increasing=False)
    assert best.value < rdp.value and best.accountant == "pld" and best.certified_epsilon <= 1.0


@pytest.mark.parametrize("kwargs, match", [
    ({"epsilon": 0.0, "delta": 1e-5}, "epsilon"), ({"epsilon": 1.0, "delta": 1.0}, "delta"),
    ({"epsilon": 1.0, "delta": 1e-5, "accountant": "optimal"}, "accountant"),
    ({"epsilon": 1.0, "delta": 1e-5, "bracket": (2.0, 1.0)}, "bracket"),
    ({"epsilon": 1.0, "delta": 1e-5, "accountant": "paper"}, "guess"),
    ({"epsilon": 1.0, "delta": 1e-5, "increasing": "yes"}, "increasing"),
])
def test_calibrate_rejects_bad_input(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        calibrate(lambda e: LaplaceEvent(e), **kwargs)


def test_paper_rule_refuses_a_target_it_does_not_meet():
    # the rule eps/(2 sqrt(2 k ln 1/delta)) needs eps e^eps0 <= 4 ln(1/delta): false for eps = 30, delta = 0.5
    with pytest.raises(ValueError, match="papers' rule"):
        per_step_epsilon(30.0, 0.5, 1, accountant="paper")


# ---------------------------------------------------------------------------------------------- the certificate
def test_result_certified_epsilon_reads_the_ledger():
    led = PrivacyLedger()
    led.record_exponential(0.01, count=1000)
    res = Result(x=np.zeros(2), ledger=led)
    assert res.certified_epsilon(1e-6) == led.epsilon(1e-6)
    assert res.certified_epsilon(1e-6, "advanced") == led.epsilon(1e-6, "advanced")
    assert res.relation == REPLACE_ONE
    with pytest.raises(ValueError, match="ledger"):
        Result(x=np.zeros(2)).certified_epsilon(1e-6)


def test_parallel_block_is_certified_by_its_worst_part_not_worse():
    a, b = PrivacyLedger(), PrivacyLedger()
    a.record_exponential(0.01, count=2000)
    b.record_gaussian(3.0, count=50)
    block = PrivacyLedger.parallel(a, b)
    parts = max(a.epsilon(1e-6), b.epsilon(1e-6))
    assert block.epsilon(1e-6) == parts  # the pointwise maximum of the parts' privacy curves
    assert block.epsilon(1e-6, "rdp") >= parts  # charging the worst part per accountant is valid but looser


def test_best_skips_the_exact_kov_sum_beyond_its_step_limit():
    led = PrivacyLedger()
    led.record_exponential(7e-4, count=9_000_000)  # Algorithm 1's first-order setting: O(k) KOV is infeasible
    eps = led.epsilons(1e-6)
    assert "kov" not in eps and "pld" not in eps and led.epsilon(1e-6) == min(eps["rdp"], eps["advanced"])
    with pytest.raises(ValueError, match="limited to 1048576 steps"):
        led.epsilon(1e-6, "kov")


def test_ledger_of_only_a_conversion_block_certifies_under_best():
    # found by the mutation suite: "best" on a ledger holding only a relation-conversion block raised
    # ValueError (min of an empty sequence)
    led = PrivacyLedger(REPLACE_ONE)
    led.record(to_replace_one(SelfComposedEvent(SubsampledGaussianEvent(1.2, 0.01), 100)))
    best = led.epsilon(1e-5)
    assert math.isfinite(best) and 0 < best <= led.epsilon(1e-5, "rdp")
