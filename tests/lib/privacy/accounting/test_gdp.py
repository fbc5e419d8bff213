"""Tests of dpsco_lib.privacy.accounting.gdp (Spec P6): Gaussian DP delta/epsilon, trade-off curve, composition and
amplification by subsampling (oracles: scipy, dp-accounting's PLD).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpsco_lib.privacy import accounting as acc
from dpsco_lib.privacy.accounting import (
    PrivacyLedger,
    amplify_by_subsampling,
    gdp_compose,
    gdp_delta,
    gdp_epsilon,
    gdp_tradeoff,
)


def test_oracle_gdp_delta_and_analytic_gaussian():
    assert gdp_delta(1.0, epsilon=1.0) == pytest.approx(0.126937, rel=1e-4)
    # Gaussian mechanism Delta = 1, sigma = 1 is exactly 1-GDP: Balle-Wang analytic eps at delta 1e-5.
    assert gdp_epsilon(1.0, delta=1e-5) == pytest.approx(4.37718, rel=1e-4)


def test_gdp_delta_matches_scipy_form():
    for mu, eps in [(0.5, 0.1), (1.0, 1.0), (2.0, 3.0), (0.3, 2.0)]:
        ref = stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
        assert gdp_delta(mu, epsilon=eps) == pytest.approx(ref, rel=1e-10, abs=1e-300)


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
