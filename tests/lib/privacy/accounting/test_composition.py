"""Tests of dpsco_lib.privacy.accounting.composition (Spec P3): basic, advanced (DRV10) and optimal (KOV15) composition,
their per-step solvers, the WRRW23 filter and the step-count limit.

Oracles: published values and dp-accounting where a counterpart exists; exact closed forms elsewhere.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from hypothesis import given, settings
from hypothesis import strategies as st

from dpsco_lib.privacy.accounting import (
    AdvancedCompositionFilter,
    PrivacyLedger,
    advanced_composition_epsilon,
    advanced_composition_epsilon_heterogeneous,
    advanced_composition_per_step_epsilon,
    basic_composition,
    cor36_per_step_epsilon,
    filter_spend,
    gdp_delta,
    gdp_epsilon,
    kov_delta,
    kov_epsilon,
    kov_per_step_epsilon,
    max_composition_steps,
)


@settings(max_examples=10, deadline=None, database=None)
@given(eps0=st.floats(0.01, 1.0), k=st.integers(1, 60), log10_delta=st.floats(-8, -2))
def test_property_kov_equals_randomized_response_pld(eps0, k, log10_delta):
    delta = 10.0**log10_delta
    p = 2 / (1 + math.exp(eps0))  # binary randomized response with privacy loss exactly +-eps0
    pld = pld_lib.from_randomized_response(p, 2, value_discretization_interval=1e-4).self_compose(k)
    pld_eps = pld.get_epsilon_for_delta(delta)
    kov = kov_epsilon(eps0, k=k, delta=delta)
    assert kov <= pld_eps + 1e-9
    assert pld_eps - kov <= k * 1e-4 + 1e-9


# ---------------------------------------------------------------------------------------------- closed forms
def test_kov_delta_matches_kov15_formula_on_the_grid_exactly():
    eps0, k = 0.3, 9
    e = Fraction(math.exp(eps0))
    for i in range(0, k // 2 + 1):
        num = sum(
            math.comb(k, ll) * (Fraction(math.exp((k - ll) * eps0)) - Fraction(math.exp((k - 2 * i + ll) * eps0)))
            for ll in range(i)
        )
        ref = float(num / (1 + e) ** k)
        assert kov_delta(eps0, k=k, epsilon=(k - 2 * i) * eps0) == pytest.approx(ref, rel=1e-9, abs=1e-15)


def test_kov_single_step_is_randomized_response():
    eps0 = 0.7
    for eps in [0.0, 0.2, 0.5]:
        expected = (math.exp(eps0) - math.exp(eps)) / (1 + math.exp(eps0))
        assert kov_delta(eps0, k=1, epsilon=eps) == pytest.approx(expected)
    assert kov_delta(eps0, k=1, epsilon=0.7) == 0.0


def test_kov_large_k_is_finite_and_below_drv():
    eps = kov_epsilon(0.001, k=100_000, delta=1e-6)
    assert math.isfinite(eps)
    assert eps < advanced_composition_epsilon(0.001, k=100_000, delta_prime=1e-6) < 100_000 * 0.001


# ------------------------------------------------------------------------------- orderings and round trips
@pytest.mark.parametrize("eps0", [0.001, 0.01, 0.1, 0.5])
@pytest.mark.parametrize("k", [1, 10, 300, 5000])
@pytest.mark.parametrize("delta", [1e-8, 1e-5])
def test_orderings_kov_filter_drv_basic(eps0, k, delta):
    kov = kov_epsilon(eps0, k=k, delta=delta)
    drv = advanced_composition_epsilon(eps0, k=k, delta_prime=delta)
    filt = filter_spend(np.full(k, eps0), delta_prime=delta)
    basic = basic_composition(np.full(k, eps0))[0]
    assert kov <= min(drv, basic) + 1e-12  # KOV15 is optimal: below every valid bound
    assert kov <= filt + 1e-12
    assert filt <= drv + 1e-12  # eps^2/2 <= eps (e^eps - 1)
    if math.sqrt(2 * k * math.log(1 / delta)) + k * math.expm1(eps0) <= k:  # where DRV beats basic
        assert drv <= basic


def test_heterogeneous_advanced_reduces_to_homogeneous():
    assert advanced_composition_epsilon_heterogeneous(np.full(40, 0.05), delta_prime=1e-6) == pytest.approx(
        advanced_composition_epsilon(0.05, k=40, delta_prime=1e-6)
    )
    assert basic_composition([0.1, 0.2], deltas=[1e-6, 2e-6]) == (pytest.approx(0.3), pytest.approx(3e-6))


def test_monotonicity():
    ks = [1, 5, 50, 500]
    kovs = [kov_epsilon(0.05, k=k, delta=1e-6) for k in ks]
    assert all(x < y for x, y in zip(kovs, kovs[1:], strict=False))
    deltas = [1e-9, 1e-6, 1e-3, 1e-1]
    kd = [kov_epsilon(0.05, k=100, delta=d) for d in deltas]
    assert all(x > y for x, y in zip(kd, kd[1:], strict=False))
    gd = [gdp_epsilon(1.0, delta=d) for d in deltas]
    assert all(x > y for x, y in zip(gd, gd[1:], strict=False))
    e0 = [kov_epsilon(e, k=100, delta=1e-6) for e in [0.01, 0.02, 0.05]]
    assert all(x < y for x, y in zip(e0, e0[1:], strict=False))
    grid = np.linspace(0, 5, 50)
    assert np.all(np.diff([gdp_delta(1.5, epsilon=e) for e in grid]) < 0)


@pytest.mark.parametrize("k", [1, 7, 100, 10_000])
@pytest.mark.parametrize("target", [(0.5, 1e-6), (2.0, 1e-5)])
def test_inverse_solver_round_trips(k, target):
    eps_t, delta_t = target
    e_kov = kov_per_step_epsilon(eps_t, delta_total=delta_t, k=k)
    got = kov_epsilon(e_kov, k=k, delta=delta_t)
    assert got <= eps_t and got == pytest.approx(eps_t, rel=1e-8)
    assert kov_delta(e_kov, k=k, epsilon=eps_t) <= delta_t
    e_drv = advanced_composition_per_step_epsilon(eps_t, delta_total=delta_t, k=k)
    got = advanced_composition_epsilon(e_drv, k=k, delta_prime=delta_t)
    assert got <= eps_t and got == pytest.approx(eps_t, rel=1e-10)
    assert e_drv <= e_kov  # optimal composition admits the larger per-step budget
    d = gdp_delta(0.7, epsilon=1.2)
    assert gdp_epsilon(0.7, delta=d) == pytest.approx(1.2, rel=1e-9)
    assert gdp_delta(0.7, epsilon=gdp_epsilon(0.7, delta=1e-6)) <= 1e-6


def test_advanced_solver_with_per_step_delta():
    e0 = advanced_composition_per_step_epsilon(1.0, delta_total=1e-5, k=100, delta0=5e-8)
    assert advanced_composition_epsilon(e0, k=100, delta_prime=1e-5 - 100 * 5e-8) == pytest.approx(1.0, rel=1e-10)


def test_cor36_rule_is_conservative():
    for eps in [0.05, 0.3, 1.0]:
        for delta in [1e-10, 1e-6, 1e-3, 0.1, 0.5]:
            for k in [1, 3, 100, 10_000]:
                c = cor36_per_step_epsilon(eps, delta=delta, k=k)
                assert c == pytest.approx(eps / (2 * math.sqrt(2 * k * math.log(1 / delta))))
                assert c <= advanced_composition_per_step_epsilon(eps, delta_total=delta, k=k)
                assert c <= kov_per_step_epsilon(eps, delta_total=delta, k=k)
                assert filter_spend(np.full(k, c), delta_prime=delta) <= eps  # the paper's derivation via Thm 3.5


# ----------------------------------------------------------------------------------------------------- filter
@pytest.mark.parametrize("eps0,eps,delta", [(0.01, 1.0, 1e-6), (0.05, 0.5, 1e-5), (0.2, 3.0, 1e-8), (0.001, 0.1, 1e-9)])
def test_filter_homogeneous_admits_fixed_k_count_between_drv_and_kov(eps0, eps, delta):
    f = AdvancedCompositionFilter(eps, delta)
    while f.try_spend(eps0):
        pass
    n = f.n_steps
    assert n == max_composition_steps(eps0, epsilon=eps, delta=delta, method="filter")
    n_adv = max_composition_steps(eps0, epsilon=eps, delta=delta, method="advanced")
    assert n_adv <= n <= max_composition_steps(eps0, epsilon=eps, delta=delta, method="kov")
    assert f.spent <= eps
    assert not f.would_allow(eps0)


def test_filter_random_sequence_never_overspends_and_refusal_records_nothing():
    rng = np.random.default_rng(20261122)
    f = AdvancedCompositionFilter(1.0, 1e-6)
    budgets = rng.uniform(0.001, 0.05, size=5000)
    admitted = []
    for b in budgets:
        before = (f.n_steps, f.sum_sq)
        if f.try_spend(b):
            admitted.append(b)
        else:
            assert (f.n_steps, f.sum_sq) == before
        assert f.spent <= 1.0
    assert len(admitted) == f.n_steps
    assert filter_spend(np.array(admitted), delta_prime=1e-6) == pytest.approx(f.spent)
    # every admitted prefix is certified by the fixed-sequence KOV-free bound sqrt(2 log(1/delta) V) + V/2
    assert filter_spend(np.array(admitted), delta_prime=1e-6) <= 1.0


def test_filter_with_approximate_steps():
    f = AdvancedCompositionFilter(1.0, 1e-5, delta_prime=5e-6)
    assert f.delta_slack == pytest.approx(5e-6)
    assert f.try_spend(0.01, 4e-6)
    assert not f.try_spend(0.01, 2e-6)  # would exceed delta''
    assert f.try_spend(0.01, 1e-6)
    pure = AdvancedCompositionFilter(1.0, 1e-5)
    assert not pure.would_allow(0.01, 1e-9)  # all of delta is spent on concentration by default


@pytest.mark.parametrize("eps_total", [1e-12, 1e3, 1e6, 1e12])
@pytest.mark.parametrize("k", [1, 1000, 10**6])
def test_advanced_per_step_solver_extreme_inputs(eps_total, k):
    # used to raise OverflowError (math.expm1 at the bracket's end eps_total / sqrt(2k ln(1/delta)) > ~709)
    e0 = advanced_composition_per_step_epsilon(eps_total, delta_total=1e-6, k=k)
    assert 0 < e0 <= eps_total
    assert advanced_composition_epsilon(e0, k=k, delta_prime=1e-6) <= eps_total  # the round trip certifies the target
    assert advanced_composition_epsilon(math.nextafter(e0, math.inf) * (1 + 1e-9), k=k, delta_prime=1e-6) > eps_total
    led = PrivacyLedger()
    led.record_pure(e0, count=k)
    assert led.epsilon(1e-6, "advanced") <= eps_total


def test_advanced_per_step_solver_unchanged_where_it_did_not_overflow():
    # frozen values of the solver before the bracket fix (brentq + conservative rounding, identical path)
    assert advanced_composition_per_step_epsilon(1000.0, delta_total=1e-6, k=1) == 5.230694965249076
    assert advanced_composition_per_step_epsilon(1.0, delta_total=1e-6, k=10**6) == 0.0001838116912818873
    assert advanced_composition_per_step_epsilon(1000.0, delta_total=1e-6, k=10**6) == 0.028910734587775662


@pytest.mark.parametrize("eps0", [710.0, 1e6, 1e12, 1e200])
def test_composition_bounds_are_inf_not_overflow_for_huge_steps(eps0):
    assert advanced_composition_epsilon(eps0, k=3, delta_prime=1e-6) == math.inf
    assert advanced_composition_epsilon_heterogeneous([0.1, eps0], delta_prime=1e-6) == math.inf
    assert max_composition_steps(eps0, epsilon=1.0, delta=1e-6, method="advanced") == 0
    assert max_composition_steps(eps0, epsilon=1.0, delta=1e-6, method="filter") == 0
    f = AdvancedCompositionFilter(1.0, 1e-6)
    assert not f.try_spend(eps0) and f.n_steps == 0 and f.sum_sq == 0.0
    assert kov_epsilon(eps0, k=3, delta=1e-6) <= 3 * eps0


def test_max_composition_steps_tiny_eps0_beyond_1e9_steps():
    # 1e-12-DP steps: ~1e22 of them fit in (1, 1e-6) by DRV10; the old search stopped at 1e9 with RuntimeError
    k_adv = max_composition_steps(1e-12, epsilon=1.0, delta=1e-6, method="advanced")
    k_fil = max_composition_steps(1e-12, epsilon=1.0, delta=1e-6, method="filter")
    assert 1e21 < k_adv <= k_fil
    # (max_composition_steps evaluates k * eps0**2, advanced_composition_epsilon (k * eps0) * eps0: 1 ulp apart)
    assert advanced_composition_epsilon(1e-12, k=k_adv, delta_prime=1e-6) <= 1.0 * (1 + 1e-15)
    assert advanced_composition_epsilon(1e-12, k=k_adv + k_adv // 10**6, delta_prime=1e-6) > 1.0


def test_max_composition_steps_kov_refuses_instead_of_exhausting_memory():
    # KOV15 is O(k) in memory: at eps0 = 1e-6 the answer (~1e11 steps) is far beyond its search limit, which
    # used to allocate arrays of 5e8 entries on the way to a RuntimeError; now a ValueError names eps0 at 2^20.
    with pytest.raises(ValueError, match="eps0=1e-06"):
        max_composition_steps(1e-6, epsilon=1.0, delta=1e-6, method="kov")
    # below the limit the exact answer is unchanged and sits between DRV10 and the filter's bound and basic
    k_kov = max_composition_steps(1e-2, epsilon=1.0, delta=1e-6, method="kov")
    assert max_composition_steps(1e-2, epsilon=1.0, delta=1e-6, method="advanced") <= k_kov
    assert k_kov >= max_composition_steps(1e-2, epsilon=1.0, delta=1e-6, method="basic")


# ----------------------------------------------------------------------------------- filter: try_spend_many
def test_try_spend_many_equals_repeated_try_spend():
    rng = np.random.default_rng(7)
    budgets = rng.uniform(0.001, 0.05, size=3000)
    seq, vec = AdvancedCompositionFilter(1.0, 1e-6), AdvancedCompositionFilter(1.0, 1e-6)
    n_seq = 0
    for b in budgets:
        if not seq.try_spend(b):
            break
        n_seq += 1
    assert 0 < n_seq < budgets.size
    assert vec.try_spend_many(budgets) == n_seq == vec.n_steps
    assert vec.sum_sq == pytest.approx(seq.sum_sq, rel=1e-13) and vec.spent <= 1.0
    # the next step refused sequentially is refused here too, and a refused all-or-nothing run records nothing
    before = (vec.n_steps, vec.sum_sq, vec.sum_delta)
    assert vec.try_spend_many(budgets[n_seq:], all_or_nothing=True) == 0
    assert (vec.n_steps, vec.sum_sq, vec.sum_delta) == before
    assert vec.try_spend_many(budgets[n_seq:]) == 0


@pytest.mark.parametrize("eps0,eps,delta", [(0.01, 1.0, 1e-6), (0.2, 3.0, 1e-8), (0.001, 0.1, 1e-9)])
def test_try_spend_many_equal_steps_admits_the_fixed_k_count(eps0, eps, delta):
    k = max_composition_steps(eps0, epsilon=eps, delta=delta, method="filter")
    f = AdvancedCompositionFilter(eps, delta)
    assert f.try_spend_many(eps0, count=k + 50) == k == f.n_steps
    assert f.spent <= eps and not f.would_allow(eps0)
    g = AdvancedCompositionFilter(eps, delta)
    assert g.try_spend_many(eps0, count=k + 1, all_or_nothing=True) == 0 and g.n_steps == 0
    assert g.try_spend_many(eps0, count=k, all_or_nothing=True) == k
    assert g.sum_sq == f.sum_sq
    # equal steps as a scalar with count, or as an array: the same decisions
    h = AdvancedCompositionFilter(eps, delta)
    assert h.try_spend_many(np.full(k + 50, eps0)) == k


def test_try_spend_many_with_deltas_and_validation():
    f = AdvancedCompositionFilter(1.0, 1e-5, delta_prime=5e-6)
    assert f.try_spend_many([0.01, 0.01, 0.01], [2e-6, 2e-6, 2e-6]) == 2  # third would exceed delta'' = 5e-6
    assert f.sum_delta == pytest.approx(4e-6)
    assert f.try_spend_many(0.01, 1e-6, count=5) == 1
    assert f.try_spend_many([], 0.0) == 0
    with pytest.raises(ValueError, match="epsilons"):
        f.try_spend_many([0.1, -0.1])
    with pytest.raises(ValueError, match="count"):
        f.try_spend_many(0.1, count=-1)
    with pytest.raises(ValueError, match="deltas"):
        f.try_spend_many([0.1, 0.1], [0.0])
    with pytest.raises(ValueError, match="deltas"):
        f.try_spend_many(0.1, [0.0], count=1)


# ---------------------------------------------------------------------------------------------------------------
# Basic composition's step count (mutant acc-max-steps-basic-ceil)
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("eps0", [0.3, 0.07, 1.0 / 3.0, 0.25, 0.011, 2.5])
def test_basic_composition_step_count_is_the_largest_count_within_the_budget(eps0):
    """Basic composition certifies k eps0-DP steps at k eps0: the count for a budget epsilon is the largest k with
    k eps0 <= epsilon (exact multiples admitted), so one more step would exceed the budget."""
    for epsilon in (1.0, 0.5, 2.0, 7.3):
        k = max_composition_steps(eps0, epsilon=epsilon, delta=0.0, method="basic")
        assert k * eps0 <= epsilon * (1 + 1e-12), (eps0, epsilon, k)
        assert (k + 1) * eps0 > epsilon, (eps0, epsilon, k)


# bad input that was once accepted: each must raise naming the parameter -------------------------------------
def test_kov_delta_rejects_huge_k() -> None:
    # allocated arrays of 1e9 entries (memory exhaustion)
    with pytest.raises(ValueError, match=r"k must be an integer in \[1, 1048576\] .*got 1000000000"):
        kov_delta(0.01, k=10**9, epsilon=1.0)


def test_kov_epsilon_rejects_huge_k() -> None:
    with pytest.raises(ValueError, match=r"k must be an integer in \[1, 1048576\] .*got 1000000000"):
        kov_epsilon(0.01, k=10**9, delta=1e-5)
    # the cap itself is still evaluated exactly (same result as before the cap)
    assert kov_epsilon(1e-3, k=2**20, delta=1e-5) > 0
