"""Per-step budgets and noise calibration (dpsco_lib.privacy.accounting.budget), each certified by the ledger's engine.

per_step_epsilon and calibrate solve a per-step budget or a noise multiplier for any accountant;
filter_per_step_epsilon is the fully adaptive filter's per-step budget (Spec P3, A3); parallel_per_step_epsilons
gives the per-part budgets of a parallel composition of pure blocks (Spec F2). gaussian_noise_multiplier is the one
calibration path of the lecture mechanisms (D1, Z1, Z2, R1, R2): the calibrated noise multiplier must certify at
most the target with the ledger's own engine (certify_events on the events a run records), sit on the boundary (a
slightly smaller multiplier fails), agree with the closed or analytic forms it replaced (Balle-Wang analytic
Gaussian; sqrt(T)/mu* for T GDP steps), and refuse accountants that do not apply to Gaussian events.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsco_lib.privacy.accounting import (
    ACCOUNTANTS,
    ExponentialEvent,
    GaussianEvent,
    LaplaceEvent,
    ParallelEvent,
    PrivacyLedger,
    SelfComposedEvent,
    SubsampledGaussianEvent,
    advanced_composition_per_step_epsilon,
    calibrate,
    certify_events,
    gdp_delta,
    kov_per_step_epsilon,
    paper_rule_epsilon,
    per_step_epsilon,
)
from dpsco_lib.privacy.accounting.budget import (
    Calibration,
    filter_per_step_epsilon,
    gaussian_noise_multiplier,
    parallel_per_step_epsilons,
)
from dpsco_lib.privacy.accounting.composition import AdvancedCompositionFilter, max_composition_steps
from dpsco_lib.privacy.mechanisms import gaussian_sigma_analytic


@pytest.mark.parametrize("accountant", ["gdp", "best", "rdp", "pld"])
@pytest.mark.parametrize(("epsilon", "delta", "count"), [(1.0, 1e-6, 1), (0.2, 1e-5, 1), (1.0, 1e-5, 360),
                                                         (4.0, 1e-3, 10)])
def test_certifies_target_with_the_ledger_engine_and_is_tight(epsilon, delta, count, accountant):
    cal = gaussian_noise_multiplier(epsilon, delta, count=count, accountant=accountant)
    assert isinstance(cal, Calibration)
    led = PrivacyLedger()
    led.record_gaussian(cal.value, count=count)
    method = "gdp" if accountant == "best" else accountant
    assert led.epsilon(delta, method) <= epsilon
    assert led.epsilon(delta, method) == cal.certified_epsilon
    smaller = SelfComposedEvent(GaussianEvent(cal.value * (1 - 1e-9)), count)
    assert certify_events((smaller,), delta, method) > epsilon  # on the boundary: less noise fails


@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 1e-6), (0.5, 1e-5), (0.2, 1e-5), (3.0, 1e-8)])
def test_gdp_equals_the_analytic_gaussian_it_replaced(epsilon, delta):
    m = gaussian_noise_multiplier(epsilon, delta).value
    assert m == pytest.approx(gaussian_sigma_analytic(1.0, epsilon=epsilon, delta=delta), rel=1e-12)
    assert gdp_delta(1.0 / m, epsilon=epsilon) <= delta * (1 + 1e-12)
    assert gaussian_noise_multiplier(epsilon, delta, accountant="best").value == m  # best resolves to exact GDP
    assert gaussian_noise_multiplier(epsilon, delta, accountant="rdp").value > m  # RDP is looser for a Gaussian


def test_t_steps_compose_as_sqrt_t_under_gdp():
    m1 = gaussian_noise_multiplier(1.0, 1e-5).value
    mT = gaussian_noise_multiplier(1.0, 1e-5, count=360).value
    assert mT == pytest.approx(math.sqrt(360) * m1, rel=1e-12)


def test_cached_and_validated():
    assert gaussian_noise_multiplier(1.0, 1e-5) is gaussian_noise_multiplier(1.0, 1e-5)
    for bad in ("basic", "advanced", "kov", "paper", "optimal"):
        with pytest.raises(ValueError, match="accountant"):
            gaussian_noise_multiplier(1.0, 1e-5, accountant=bad)
    with pytest.raises(ValueError, match="epsilon"):
        gaussian_noise_multiplier(0.0, 1e-5)
    with pytest.raises(ValueError, match="delta"):
        gaussian_noise_multiplier(1.0, 0.0)
    with pytest.raises(ValueError, match="count"):
        gaussian_noise_multiplier(1.0, 1e-5, count=0)
    with pytest.raises(TypeError):
        gaussian_noise_multiplier(1.0, 1e-5, 3)  # count is keyword-only


def _event(eps, counts):
    return ParallelEvent(tuple((SelfComposedEvent(LaplaceEvent(e), m),) for e, m in zip(eps, counts, strict=True)))


@pytest.mark.parametrize("accountant", ["best", "rdp", "basic", "advanced"])
@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 1e-5), (4.0, 1e-8), (0.1, 1e-6)])
def test_parallel_budgets_certify_the_target_tightly(accountant, epsilon, delta):
    counts = (16, 8, 4, 2, 1)
    eps, cal = parallel_per_step_epsilons(counts, epsilon=epsilon, delta=delta, accountant=accountant)
    cert = certify_events((_event(eps, counts),), delta, accountant)
    assert cert == cal.certified_epsilon
    assert cert <= epsilon and cert >= 0.999 * epsilon  # never above the target, and not wasteful
    assert all(a <= b for a, b in zip(eps, eps[1:], strict=False))  # fewer steps -> larger per-step budget
    # each part alone certifies theta by basic or DRV composition (the split rule)
    theta = cal.value
    for e, m in zip(eps, counts, strict=True):
        basic = per_step_epsilon(theta, delta, m, accountant="basic").value
        assert e >= basic


def test_parallel_budgets_pure_dp_and_cache():
    eps, cal = parallel_per_step_epsilons((4, 2, 1), epsilon=2.0, delta=0.0, accountant="basic")
    np.testing.assert_allclose(eps, [0.5, 1.0, 2.0], rtol=1e-12)
    again = parallel_per_step_epsilons((4, 2, 1), epsilon=2.0, delta=0.0, accountant="basic")
    assert again[0] is eps  # cached


def test_parallel_budgets_reject_bad_input():
    with pytest.raises(ValueError, match="paper"):
        parallel_per_step_epsilons((2, 1), epsilon=1.0, delta=1e-5, accountant="paper")
    with pytest.raises(ValueError, match="accountant"):
        parallel_per_step_epsilons((2, 1), epsilon=1.0, delta=1e-5, accountant="drv")
    with pytest.raises(ValueError, match="epsilon"):
        parallel_per_step_epsilons((2, 1), epsilon=0.0, delta=1e-5)
    with pytest.raises(ValueError, match="delta"):
        parallel_per_step_epsilons((2, 1), epsilon=1.0, delta=1.0)
    with pytest.raises(TypeError, match="counts"):
        parallel_per_step_epsilons([2, 1], epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="counts"):
        parallel_per_step_epsilons((2, 0), epsilon=1.0, delta=1e-5)


@pytest.mark.parametrize(("eps", "dl", "k"), [(1.0, 1e-6, 1), (1.0, 1e-6, 500), (32.0, 1e-6, 1700),
                                              (0.1, 1e-9, 10**6), (4.0, 0.01, 37)])
def test_filter_admits_exactly_count_steps_of_its_budget(eps, dl, k):
    e0 = filter_per_step_epsilon(eps, dl, k)
    # the filter's own admission test: k steps admitted, one more step or a slightly larger budget refused
    assert AdvancedCompositionFilter(eps, dl).try_spend_many(e0, count=k, all_or_nothing=True) == k
    assert AdvancedCompositionFilter(eps, dl).try_spend_many(e0 * (1 + 1e-9), count=k, all_or_nothing=True) == 0
    assert AdvancedCompositionFilter(eps, dl).try_spend_many(e0, count=k + max(1, k // 10**4),
                                                             all_or_nothing=True) == 0
    # the closed form sqrt(s*/k), s* = (sqrt(2 log(1/delta) + 2 eps) - sqrt(2 log(1/delta)))^2, rounded down
    a = 2 * math.log(1 / dl)
    assert e0 == pytest.approx(math.sqrt((math.sqrt(a + 2 * eps) - math.sqrt(a)) ** 2 / k), rel=1e-11)
    assert max_composition_steps(e0, epsilon=eps, delta=dl, method="filter") >= k


def test_filter_budget_is_cached_and_validated():
    assert filter_per_step_epsilon(1.0, 1e-6, 100) == filter_per_step_epsilon(1.0, 1e-6, 100)
    for bad, match in (((0.0, 1e-6, 5), "epsilon"), ((math.nan, 1e-6, 5), "epsilon"), ((1.0, 0.0, 5), "delta"),
                       ((1.0, 1.0, 5), "delta"), ((1.0, 1e-6, 0), "count")):
        with pytest.raises(ValueError, match=match):
            filter_per_step_epsilon(*bad)


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
