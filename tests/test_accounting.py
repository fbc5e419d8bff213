"""Tests of dpsco_lib.privacy.accounting (Spec P3, P5, P6).

Oracles: dp-accounting (RdpAccountant, PLD), published values (dp-accounting's and TF-Privacy's tests,
Balle-Wang 2018), and closed forms evaluated independently here.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from dpsco_lib.privacy import accounting as acc
from dpsco_lib.privacy.accounting import (
    DEFAULT_RDP_ORDERS,
    AdvancedCompositionFilter,
    PrivacyLedger,
    advanced_composition_epsilon,
    advanced_composition_epsilon_heterogeneous,
    advanced_composition_per_step_epsilon,
    amplify_by_subsampling,
    basic_composition,
    cor36_per_step_epsilon,
    filter_spend,
    gdp_compose,
    gdp_delta,
    gdp_epsilon,
    gdp_tradeoff,
    kov_delta,
    kov_epsilon,
    kov_per_step_epsilon,
    max_composition_steps,
    rdp_bounded_range,
    rdp_gaussian,
    rdp_generalized_gaussian,
    rdp_pure,
    rdp_subsampled_gaussian,
    rdp_to_epsilon,
)

HYP = settings(max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
ORDERS = np.asarray(DEFAULT_RDP_ORDERS)


def _rdp_accountant_eps(noise_multiplier: float, q: float, count: int, delta: float) -> tuple[float, np.ndarray]:
    inner = dp_event.GaussianDpEvent(noise_multiplier)
    ev = inner if q == 1 else dp_event.PoissonSampledDpEvent(q, inner)
    a = rdp_lib.RdpAccountant(orders=list(DEFAULT_RDP_ORDERS))
    a.compose(dp_event.SelfComposedDpEvent(ev, count))
    return a.get_epsilon(delta), a.rdp


# ------------------------------------------------------------------------------------------------ oracles
def test_oracle_subsampled_gaussian_rdp_dp_accounting_test_values():
    orders = [1.5, 2.5, 5, 50, 100]
    expected = [6.70579741e-04, 1.08548710e-03, 2.18075656e-03, 2.38460375e-02, 1.67416308e02]
    got = 50 * rdp_subsampled_gaussian(2.5, sampling_rate=0.01, orders=orders)
    np.testing.assert_allclose(got, expected, rtol=1e-4)


def test_oracle_dpsgd_mnist_epsilon():
    # TF-Privacy's MNIST example: n=60000, batch 150, sigma 1.3, 15 epochs, delta 1e-5.
    q, steps = 150 / 60000, 15 * 60000 // 150
    led = PrivacyLedger()
    led.record_subsampled_gaussian(1.3, q, count=steps, label="dp-sgd")
    eps = led.epsilon(1e-5, method="rdp")
    ref, _ = _rdp_accountant_eps(1.3, q, steps, 1e-5)
    assert eps == pytest.approx(ref, rel=1e-4)
    assert eps == pytest.approx(0.724, abs=1e-3)
    # PLD (dp-accounting) now applies too and is tighter: "best" is the PLD value, 0.640 < RDP's 0.724.
    assert led.epsilon(1e-5) == led.epsilon(1e-5, method="pld") == pytest.approx(0.6401, abs=1e-3)


def test_oracle_gdp_delta_and_analytic_gaussian():
    assert gdp_delta(1.0, epsilon=1.0) == pytest.approx(0.126937, rel=1e-4)
    # Gaussian mechanism Delta = 1, sigma = 1 is exactly 1-GDP: Balle-Wang analytic eps at delta 1e-5.
    assert gdp_epsilon(1.0, delta=1e-5) == pytest.approx(4.37718, rel=1e-4)


def test_oracle_rdp_to_epsilon_pure_dp_case_from_dp_accounting():
    orders = np.arange(2, 33, dtype=float)
    eps, order = rdp_to_epsilon(np.full(orders.size, 1.1), orders=orders, delta=1e-5)
    assert eps == pytest.approx(1.32783806176, rel=1e-9)
    assert order == 32


def test_gdp_delta_matches_scipy_form():
    for mu, eps in [(0.5, 0.1), (1.0, 1.0), (2.0, 3.0), (0.3, 2.0)]:
        ref = stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
        assert gdp_delta(mu, epsilon=eps) == pytest.approx(ref, rel=1e-10, abs=1e-300)


# ------------------------------------------------------------------------------- property tests vs dp-accounting
@HYP
@given(
    sigma=st.floats(0.5, 20.0),
    q=st.floats(1e-4, 0.5),
    count=st.integers(1, 2000),
    log10_delta=st.floats(-10, -3),
)
def test_property_subsampled_gaussian_matches_rdp_accountant(sigma, q, count, log10_delta):
    delta = 10.0**log10_delta
    ref_eps, ref_rdp = _rdp_accountant_eps(sigma, q, count, delta)
    mine = count * rdp_subsampled_gaussian(sigma, sampling_rate=q, orders=ORDERS)
    fin = np.isfinite(ref_rdp)
    np.testing.assert_allclose(mine[fin], ref_rdp[fin], rtol=1e-6, atol=1e-12)
    # where dp-accounting gives up (inf) we return the next-integer-order upper bound
    assert np.all(np.isfinite(mine))
    led = PrivacyLedger()
    led.record_subsampled_gaussian(sigma, q, count=count)
    assert led.epsilon(delta, "rdp") <= ref_eps * (1 + 1e-6) + 1e-12
    if fin.all():
        assert led.epsilon(delta, "rdp") == pytest.approx(ref_eps, rel=1e-6, abs=1e-12)


@HYP
@given(sigma=st.floats(0.3, 50.0), count=st.integers(1, 10_000), log10_delta=st.floats(-12, -2))
def test_property_gaussian_rdp_and_gdp_vs_dp_accounting(sigma, count, log10_delta):
    delta = 10.0**log10_delta
    ref_eps, _ = _rdp_accountant_eps(sigma, 1.0, count, delta)
    led = PrivacyLedger()
    led.record_gaussian(sigma, count=count)
    assert led.epsilon(delta, "rdp") == pytest.approx(ref_eps, rel=1e-9, abs=1e-12)
    # exact GDP composition (mu = sqrt(count)/sigma) never worse than RDP
    gdp = led.epsilon(delta, "gdp")
    assert gdp <= led.epsilon(delta, "rdp") + 1e-12
    assert led.epsilon(delta) == pytest.approx(gdp)


@settings(max_examples=10, deadline=None, database=None)
@given(sigma=st.floats(0.8, 5.0), count=st.integers(1, 50), log10_delta=st.floats(-8, -3))
def test_property_gdp_equals_gaussian_pld(sigma, count, log10_delta):
    delta = 10.0**log10_delta
    pld = pld_lib.from_gaussian_mechanism(sigma, value_discretization_interval=1e-3).self_compose(count)
    pld_eps = pld.get_epsilon_for_delta(delta)
    mine = gdp_epsilon(math.sqrt(count) / sigma, delta=delta)
    # PLD is a pessimistic discretization of the same exact curve: slightly above, never far
    assert mine <= pld_eps + 1e-9
    assert pld_eps - mine <= count * 1e-3 + 1e-3


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


@HYP
@given(eps=st.floats(0.01, 5.0))
def test_property_laplace_rdp_below_pure_worst_case(eps):
    # the Laplace mechanism is eps-DP, so its exact RDP (Mir17 Prop 6) lies below the worst case over eps-DP pairs
    lap = np.array([rdp_lib._laplace_rdp(eps, a) for a in ORDERS])
    assert np.all(lap <= rdp_pure(eps, orders=ORDERS) * (1 + 1e-10) + 1e-14)


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


def test_rdp_pure_tight_equals_randomized_response_divergence():
    eps = 0.8
    p = math.exp(eps) / (1 + math.exp(eps))
    for a in [1.5, 2.0, 7.0, 64.0]:
        ref = math.log(p**a * (1 - p) ** (1 - a) + (1 - p) ** a * p ** (1 - a)) / (a - 1)
        assert rdp_pure(eps, orders=[a])[0] == pytest.approx(ref, rel=1e-12)
        sinh_form = math.log((math.sinh(a * eps) - math.sinh((a - 1) * eps)) / math.sinh(eps)) / (a - 1)
        assert rdp_pure(eps, orders=[a])[0] == pytest.approx(sinh_form, rel=1e-12)
    assert np.all(rdp_pure(eps, orders=ORDERS) <= np.minimum(eps, ORDERS * eps**2 / 2) + 1e-15)
    np.testing.assert_allclose(rdp_pure(eps, orders=[2.0], tight=False), [min(eps, eps**2)])


@pytest.mark.parametrize("eps", [0.01, 0.3, 1.0, 4.0])
def test_bounded_range_rdp_matches_brute_force_and_bounds(eps):
    orders = np.array([1.1, 1.5, 2.0, 3.5, 10.0, 64.0])
    t = np.linspace(0, eps, 200_001)[1:-1]
    q = np.expm1(eps - t) / np.expm1(eps)  # Q(loss = t); loss t - eps otherwise; E_Q[e^loss] = 1
    for a, val in zip(orders, rdp_bounded_range(eps, orders=orders), strict=True):
        mom = q * np.exp(a * t) + (1 - q) * np.exp(a * (t - eps))
        brute = np.log(mom.max()) / (a - 1)
        assert val == pytest.approx(brute, rel=1e-6, abs=1e-12)
    assert np.all(rdp_bounded_range(eps, orders=ORDERS) <= ORDERS * eps**2 / 8 * (1 + 1e-12))
    assert np.all(rdp_bounded_range(eps, orders=ORDERS) <= rdp_pure(eps, orders=ORDERS) + 1e-15)


def test_gaussian_and_gg_rdp_closed_forms():
    a = np.array([1.5, 2.0, 10.0])
    np.testing.assert_allclose(rdp_gaussian(2.0, orders=a), a / 8)
    np.testing.assert_allclose(rdp_generalized_gaussian(2.0, kappa=3.0, orders=a), 3.0 * a**2 / (8 * (a - 1)))
    # kappa = 1: the G1 bound exceeds the Gaussian value by exactly alpha/(alpha-1)
    ratio = rdp_generalized_gaussian(2.0, kappa=1.0, orders=a) / rdp_gaussian(2.0, orders=a)
    np.testing.assert_allclose(ratio, a / (a - 1))
    np.testing.assert_allclose(rdp_subsampled_gaussian(2.0, sampling_rate=1.0, orders=a), a / 8)
    np.testing.assert_allclose(rdp_subsampled_gaussian(2.0, sampling_rate=0.0, orders=a), 0.0)


def test_subsampled_gaussian_integer_order_matches_quadrature():
    sigma, q, alpha = 1.1, 0.05, 4
    mu0 = stats.norm(0, sigma).pdf
    mu1 = stats.norm(1, sigma).pdf
    val, _ = integrate.quad(lambda z: mu0(z) * ((1 - q) + q * mu1(z) / mu0(z)) ** alpha, -30, 30, limit=200)
    expected = math.log(val) / (alpha - 1)
    assert rdp_subsampled_gaussian(sigma, sampling_rate=q, orders=[alpha])[0] == pytest.approx(expected, rel=1e-8)


def test_gdp_tradeoff_and_composition():
    al = np.linspace(0, 1, 11)
    np.testing.assert_allclose(gdp_tradeoff(0.0, alpha=al), 1 - al, atol=1e-15)
    assert gdp_tradeoff(1.0, alpha=0.05) == pytest.approx(stats.norm.cdf(stats.norm.ppf(0.95) - 1.0))
    # symmetric trade-off function: G(G(alpha)) = alpha
    np.testing.assert_allclose(gdp_tradeoff(1.3, alpha=gdp_tradeoff(1.3, alpha=al[1:-1])), al[1:-1], rtol=1e-10)
    assert gdp_compose([0.3, 0.4]) == pytest.approx(0.5)
    # composition of 100 Gaussians with multiplier 10 = one 1-GDP mechanism
    led = PrivacyLedger()
    led.record_gaussian(10.0, count=100)
    assert led.epsilon(1e-5, "gdp") == pytest.approx(gdp_epsilon(1.0, delta=1e-5), rel=1e-12)


def test_amplification_by_subsampling():
    eps, d = amplify_by_subsampling(1.0, delta=1e-6, sampling_rate=0.1)
    assert eps == pytest.approx(math.log(1 + 0.1 * (math.e - 1)))
    assert d == pytest.approx(1e-7)
    assert amplify_by_subsampling(0.7, delta=0.0, sampling_rate=1.0) == (pytest.approx(0.7), 0.0)
    # never below q*eps (so "(q eps, q delta)" as stated in seed 002 Lemma 3.3 is not valid in general)
    for e in [0.1, 1.0, 5.0]:
        for q in [0.01, 0.5, 0.9]:
            assert amplify_by_subsampling(e, delta=0.0, sampling_rate=q)[0] >= q * e


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


# ----------------------------------------------------------------------------------------------------- ledger
def test_ledger_coalesces_repeated_records():
    led = PrivacyLedger()
    for _ in range(1000):
        led.record_exponential(0.01, label="vertex")
    led.record_exponential(0.01, count=10**6, label="vertex")
    assert len(led.events) == 1 and led.events[0].count == 10**6 + 1000
    led.record_exponential(0.01, label="other")
    assert len(led.events) == 2 and led.total_count == 10**6 + 1001
    with pytest.raises(AttributeError):
        led.events[0].count = 3  # type: ignore[misc]


def test_ledger_methods_for_pure_events():
    led = PrivacyLedger()
    led.record_pure(0.01, count=500)
    all_eps = led.epsilons(1e-6)
    assert all_eps["basic"] == pytest.approx(5.0)
    assert all_eps["advanced"] == pytest.approx(advanced_composition_epsilon(0.01, k=500, delta_prime=1e-6))
    assert all_eps["kov"] == pytest.approx(kov_epsilon(0.01, k=500, delta=1e-6))
    assert all_eps["kov"] <= all_eps["advanced"] <= all_eps["basic"]
    # PLD (dp-accounting, pessimistic, its FFT rounding error charged to delta) is within 1e-4 of the exact
    # optimal composition and never below it; "best" uses KOV when it applies
    assert all_eps["kov"] <= all_eps["pld"] <= all_eps["kov"] * (1 + 1e-4)
    assert led.epsilon(1e-6) == min(v for m, v in all_eps.items() if m != "pld") == all_eps["kov"]
    assert led.epsilon(0.0) == pytest.approx(5.0)  # delta = 0: pure composition
    # exponential (bounded-range) events: same pure accountants, tighter RDP
    led2 = PrivacyLedger()
    led2.record_exponential(0.01, count=500)
    assert led2.epsilon(1e-6, "kov") == all_eps["kov"]
    assert led2.epsilon(1e-6, "rdp") <= all_eps["rdp"]


def test_ledger_heterogeneous_and_mixed():
    led = PrivacyLedger()
    led.record_pure(0.01, count=10)
    led.record_pure(0.02, count=10)
    with pytest.raises(ValueError, match="kov"):
        led.epsilon(1e-6, "kov")
    assert led.epsilon(1e-6, "advanced") == pytest.approx(
        advanced_composition_epsilon_heterogeneous([0.01] * 10 + [0.02] * 10, delta_prime=1e-6)
    )
    led.record_gaussian(20.0, count=5)
    with pytest.raises(ValueError, match="basic"):
        led.epsilon(1e-6, "basic")
    with pytest.raises(ValueError, match="gdp"):
        led.epsilon(1e-6, "gdp")
    rdp_total = (
        10 * rdp_pure(0.01, orders=ORDERS) + 10 * rdp_pure(0.02, orders=ORDERS) + 5 * rdp_gaussian(20.0, orders=ORDERS)
    )
    np.testing.assert_allclose(led.rdp(), rdp_total)
    assert led.epsilon(1e-6, "rdp") == pytest.approx(rdp_to_epsilon(rdp_total, orders=ORDERS, delta=1e-6)[0])
    # the mixed ledger is certified tighter by PLD than by RDP; "best" takes it
    assert led.epsilon(1e-6) == led.epsilon(1e-6, "pld") < led.epsilon(1e-6, "rdp")
    assert led.epsilon(0.0) == math.inf
    gg = PrivacyLedger()
    gg.record_gg(10.0, 2.0, count=3)
    np.testing.assert_allclose(gg.rdp([2.0, 4.0]), 3 * rdp_generalized_gaussian(10.0, kappa=2.0, orders=[2.0, 4.0]))


def test_ledger_merge_and_parallel():
    a, b = PrivacyLedger(), PrivacyLedger()
    a.record_pure(0.1, count=3)
    b.record_pure(0.1, count=5)
    seq = PrivacyLedger().merge(a).merge(b)
    assert len(seq.events) == 1 and seq.total_count == 8
    assert seq.epsilon(1e-6, "kov") == pytest.approx(kov_epsilon(0.1, k=8, delta=1e-6))
    par = PrivacyLedger.parallel(a, b, label="disjoint halves")
    assert par.total_count == 8
    assert par.epsilon(1e-6, "basic") == pytest.approx(0.5)
    assert par.epsilon(1e-6, "kov") == pytest.approx(kov_epsilon(0.1, k=5, delta=1e-6))
    np.testing.assert_allclose(par.rdp(), 5 * rdp_pure(0.1, orders=ORDERS))
    par.record_pure(0.1, count=2)  # sequential after the parallel block
    assert par.epsilon(1e-6, "kov") == pytest.approx(kov_epsilon(0.1, k=7, delta=1e-6))
    assert par.epsilon(1e-6, "basic") == pytest.approx(0.7)
    g1, g2 = PrivacyLedger(), PrivacyLedger()
    g1.record_gaussian(2.0)
    g2.record_gaussian(1.0)
    assert PrivacyLedger.parallel(g1, g2).epsilon(1e-5, "gdp") == pytest.approx(gdp_epsilon(1.0, delta=1e-5))
    assert PrivacyLedger().epsilon(1e-5) == 0.0


# ------------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "call",
    [
        lambda: advanced_composition_epsilon(0.0, k=10, delta_prime=1e-5),
        lambda: advanced_composition_epsilon(0.1, k=0, delta_prime=1e-5),
        lambda: advanced_composition_epsilon(0.1, k=10, delta_prime=0.0),
        lambda: advanced_composition_epsilon(0.1, k=2.5, delta_prime=1e-5),
        lambda: kov_epsilon(0.1, k=10, delta=1.0),
        lambda: kov_epsilon(float("nan"), k=10, delta=1e-5),
        lambda: kov_per_step_epsilon(-1.0, delta_total=1e-5, k=10),
        lambda: advanced_composition_per_step_epsilon(1.0, delta_total=1e-5, k=10, delta0=2e-6),
        lambda: cor36_per_step_epsilon(1.5, delta=1e-6, k=10),
        lambda: cor36_per_step_epsilon(0.5, delta=0.0, k=10),
        lambda: rdp_gaussian(0.0),
        lambda: rdp_subsampled_gaussian(1.0, sampling_rate=1.5),
        lambda: rdp_gaussian(1.0, orders=[0.5, 2.0]),
        lambda: rdp_generalized_gaussian(1.0, kappa=0.5),
        lambda: rdp_to_epsilon([0.1, 0.2], orders=[2.0], delta=1e-5),
        lambda: rdp_to_epsilon([-0.1], orders=[2.0], delta=1e-5),
        lambda: gdp_delta(-1.0, epsilon=1.0),
        lambda: gdp_epsilon(1.0, delta=1.0),
        lambda: gdp_tradeoff(1.0, alpha=1.5),
        lambda: gdp_compose([]),
        lambda: amplify_by_subsampling(1.0, delta=1e-5, sampling_rate=1.2),
        lambda: basic_composition([0.1, float("inf")]),
        lambda: AdvancedCompositionFilter(1.0, 0.0),
        lambda: AdvancedCompositionFilter(1.0, 1e-5, delta_prime=1e-4),
        lambda: AdvancedCompositionFilter(1.0, 1e-5).try_spend(-0.1),
        lambda: PrivacyLedger().record_pure(0.0),
        lambda: PrivacyLedger().record_gaussian(1.0, count=0),
        lambda: PrivacyLedger().record_subsampled_gaussian(1.0, 0.0),
        lambda: PrivacyLedger().record_gg(1.0, kappa=0.5),
        lambda: PrivacyLedger().epsilon(1e-5, method="magic"),
        lambda: PrivacyLedger().epsilon(1.5),
        lambda: PrivacyLedger().merge("not a ledger"),  # type: ignore[arg-type]
        lambda: PrivacyLedger.parallel(),
        lambda: max_composition_steps(0.1, epsilon=1.0, delta=1e-5, method="magic"),
    ],
)
def test_invalid_inputs_raise_value_error(call):
    with pytest.raises(ValueError):
        call()


def test_error_messages_name_the_parameter():
    with pytest.raises(ValueError, match="noise_multiplier"):
        rdp_gaussian(-2.0)
    with pytest.raises(ValueError, match="sampling_rate"):
        rdp_subsampled_gaussian(1.0, sampling_rate=-0.1)
    with pytest.raises(ValueError, match="epsilon must be <= 1"):
        cor36_per_step_epsilon(2.0, delta=1e-6, k=3)


def test_module_exports_exist():
    for name in acc.__all__:
        assert hasattr(acc, name), name


@pytest.mark.parametrize("k", [1, 13, 4096])
def test_solvers_round_trip_through_the_ledger_exactly(k):
    # algorithms calibrate eps0 with the solvers and certify with the ledger: no ulp may be lost in between
    for eps_t, delta_t in [(0.3, 1e-7), (1.0, 1e-6), (4.0, 1e-5)]:
        led = PrivacyLedger()
        led.record_pure(advanced_composition_per_step_epsilon(eps_t, delta_total=delta_t, k=k), count=k)
        assert led.epsilon(delta_t, "advanced") <= eps_t
        led = PrivacyLedger()
        led.record_exponential(kov_per_step_epsilon(eps_t, delta_total=delta_t, k=k), count=k)
        assert led.epsilon(delta_t, "kov") <= eps_t
    assert PrivacyLedger().epsilon(1e-6, "rdp") == 0.0


# ------------------------------------------------------------------ regressions: extreme eps, method selection


@pytest.mark.parametrize("eps", [700.0, 710.0, 1e4])
def test_amplification_extreme_epsilon_is_finite_and_exact_in_log_space(eps):
    # log(1 - q + q e^eps) = eps + log q + log1p((1 - q) e^-eps / q); no OverflowError past eps ~ 709
    q = 0.01
    amp, d = acc.amplify_by_subsampling(eps, delta=1e-6, sampling_rate=q)
    assert math.isfinite(amp)
    assert amp == pytest.approx(eps + math.log(q) + math.log1p((1 - q) * math.exp(-eps) / q), rel=1e-14)
    assert d == pytest.approx(1e-8, rel=1e-15)


def test_amplification_is_continuous_across_the_small_eps_branch():
    lo = acc.amplify_by_subsampling(1.0 - 1e-12, delta=0.0, sampling_rate=0.3)[0]
    hi = acc.amplify_by_subsampling(1.0, delta=0.0, sampling_rate=0.3)[0]
    assert hi == pytest.approx(math.log(0.7 + 0.3 * math.e), rel=1e-13)
    assert abs(hi - lo) < 1e-11


def test_ledger_with_huge_pure_epsilon_certifies_without_overflow():
    led = PrivacyLedger()
    led.record_pure(800.0, count=3)
    eps = led.epsilons(1e-6)
    assert eps["basic"] == 2400.0
    assert eps["advanced"] == math.inf  # DRV term e^eps - 1 overflows: vacuous, reported as +inf
    assert led.epsilon(1e-6) <= 2400.0


def test_ledger_epsilon_computes_only_the_requested_method():
    led = PrivacyLedger()
    led.record_pure(0.01, count=1000)
    only = led.epsilons(1e-6, methods=("advanced",))
    assert set(only) == {"advanced"}
    assert led.epsilon(1e-6, method="advanced") == only["advanced"]
    assert led.epsilon(1e-6, method="kov") == led.epsilons(1e-6)["kov"]
    with pytest.raises(ValueError, match="methods"):
        led.epsilons(1e-6, methods=("nope",))


# ------------------------------------------------ regressions: overflow / cancellation at extreme eps and k
EXTREME_EPS = [1e-12, 1e-5, 1e3, 1e6, 1e12]


@pytest.mark.parametrize("eps", EXTREME_EPS)
@pytest.mark.parametrize("kind", ["pure", "exponential"])
def test_ledger_extreme_epsilon_never_raises(eps, kind):
    # used to raise OverflowError (math.expm1 in the bounded-range RDP, eps > ~709) or ValueError (negative
    # RDP from cancellation in the randomized-response formula, eps ~ 1e-12)
    for count in (1, 10**6):
        led = PrivacyLedger()
        getattr(led, f"record_{kind}")(eps, count=count)
        assert led.epsilon(0, "basic") == pytest.approx(count * eps, rel=1e-15)
        all_eps = led.epsilons(1e-6)
        assert set(all_eps) - {"pld"} == {"basic", "advanced", "kov", "rdp"}  # PLD only where numerically sound
        assert all(not math.isnan(v) and v >= 0 for v in all_eps.values())
        assert min(all_eps.values()) <= count * eps * (1 + 1e-12)  # basic is always a valid certificate
        if kind == "pure":  # KOV15 is optimal for eps-DP steps (bounded-range ones can do better)
            assert all_eps["rdp"] >= all_eps["kov"] * (1 - 1e-9)
        curve = led.rdp()
        assert np.all(np.isfinite(curve)) and np.all(curve >= 0)


def _rr_rdp_mp(eps: float, a: float, dps: int = 80) -> float:
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(dps):
        e, al = mpmath.mpf(eps), mpmath.mpf(a)
        return float(mpmath.log((mpmath.exp(al * e) + mpmath.exp((1 - al) * e)) / (1 + mpmath.exp(e))) / (al - 1))


def _br_rdp_mp(eps: float, a: float, dps: int = 80) -> float:
    # closed form at the interior optimum u* (see rdp_bounded_range), in 80-digit arithmetic
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(dps):
        e, al = mpmath.mpf(eps), mpmath.mpf(a)
        r = mpmath.expm1(al * e) / mpmath.expm1(e)
        s = mpmath.log(al / (al - 1)) + mpmath.log1p(-1 / r)
        return float((mpmath.log((r - 1) / (al - 1)) - al * s) / (al - 1))


@pytest.mark.parametrize("eps", [1e-12, 1e-8, 1e-5, 3e-4, 0.05, 1.0, 30.0, 1e3, 1e6])
def test_pure_and_bounded_range_rdp_are_accurate_at_every_scale(eps):
    # the old formulas lost all digits below eps ~ 1e-6 (negative values, or 4x the true bounded-range value)
    orders = np.array([1.01, 1.1, 2.0, 7.5, 64.0, 1024.0])
    pure, br = rdp_pure(eps, orders=orders), rdp_bounded_range(eps, orders=orders)
    for a, p, b in zip(orders, pure, br, strict=True):
        assert p == pytest.approx(_rr_rdp_mp(eps, a), rel=1e-9)
        assert b == pytest.approx(_br_rdp_mp(eps, a), rel=1e-9)
    assert np.all(br <= pure) and np.all(br > 0)
    if eps <= 1e-8:  # leading terms: a eps^2/2 (randomized response), a eps^2/8 (bounded range)
        np.testing.assert_allclose(pure, orders * eps**2 / 2, rtol=1e-6)
        np.testing.assert_allclose(br, orders * eps**2 / 8, rtol=1e-6)


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


@pytest.mark.parametrize("m", [1e-200, 1e200])
def test_extreme_noise_multipliers_give_inf_or_zero_not_errors(m):
    for rec in ("gaussian", "subsampled_gaussian", "gg"):
        led = PrivacyLedger()
        if rec == "gaussian":
            led.record_gaussian(m, count=10)
        elif rec == "subsampled_gaussian":
            led.record_subsampled_gaussian(m, 0.01, count=10)
        else:
            led.record_gg(m, 2.0, count=10)
        out = led.epsilons(1e-6)
        assert all(not math.isnan(v) and v >= 0 for v in out.values())
        if m > 1:
            assert all(v < 1e-6 for v in out.values())  # essentially no privacy loss
        else:
            assert all(v == math.inf for v in out.values())
    assert gdp_epsilon(1e200, delta=1e-6) == math.inf


# ------------------------------------------------------------------ RDP conversion: the tight (BBGHS20) one
def test_rdp_conversion_matches_rdp_accountant_and_stays_above_pld_tfp_mnist_60_epochs():
    # TF-Privacy MNIST, second setting: n = 60000, batch 256, noise multiplier 1.1, 60 epochs, delta 1e-5
    q, steps, delta = 256 / 60000, math.ceil(60 * 60000 / 256), 1e-5
    led = PrivacyLedger()
    led.record_subsampled_gaussian(1.1, q, count=steps)
    eps = led.epsilon(delta, "rdp")
    ref, _ = _rdp_accountant_eps(1.1, q, steps, delta)
    assert eps == pytest.approx(ref, rel=1e-6)
    # the classic conversion rdp + log(1/delta)/(a - 1) (Mir17 Prop 3) is strictly looser here
    a, r = ORDERS, led.rdp()
    classic = float(np.min(r + math.log(1 / delta) / (a - 1)))
    assert classic > 1.1 * eps
    pld = pld_lib.from_gaussian_mechanism(1.1, sampling_prob=q, value_discretization_interval=1e-3)
    pld_eps = pld.self_compose(steps).get_epsilon_for_delta(delta)
    assert pld_eps < eps < 1.1 * pld_eps  # RDP is an upper bound, within 10% of the PLD reference here


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
