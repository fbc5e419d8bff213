"""Tests of dpsco_lib.privacy.accounting.rdp (Spec P5): Renyi curves of the Gaussian, subsampled Gaussian, pure,
bounded-range and generalized Gaussian mechanisms, and the RDP-to-(eps, delta) conversion (oracles: dp-accounting,
quadrature, mpmath).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from dpsco_lib.privacy.accounting import (
    DEFAULT_RDP_ORDERS,
    cor36_per_step_epsilon,
    gdp_epsilon,
    rdp_bounded_range,
    rdp_gaussian,
    rdp_generalized_gaussian,
    rdp_pure,
    rdp_subsampled_gaussian,
    rdp_to_epsilon,
)

HYP = settings(max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


ORDERS = np.asarray(DEFAULT_RDP_ORDERS)


# ------------------------------------------------------------------------------------------------ oracles
def test_oracle_subsampled_gaussian_rdp_dp_accounting_test_values():
    orders = [1.5, 2.5, 5, 50, 100]
    expected = [6.70579741e-04, 1.08548710e-03, 2.18075656e-03, 2.38460375e-02, 1.67416308e02]
    got = 50 * rdp_subsampled_gaussian(2.5, sampling_rate=0.01, orders=orders)
    np.testing.assert_allclose(got, expected, rtol=1e-4)


def test_oracle_rdp_to_epsilon_pure_dp_case_from_dp_accounting():
    orders = np.arange(2, 33, dtype=float)
    eps, order = rdp_to_epsilon(np.full(orders.size, 1.1), orders=orders, delta=1e-5)
    assert eps == pytest.approx(1.32783806176, rel=1e-9)
    assert order == 32


@HYP
@given(eps=st.floats(0.01, 5.0))
def test_property_laplace_rdp_below_pure_worst_case(eps):
    # the Laplace mechanism is eps-DP, so its exact RDP (Mir17 Prop 6) lies below the worst case over eps-DP pairs
    lap = np.array([rdp_lib._laplace_rdp(eps, a) for a in ORDERS])
    assert np.all(lap <= rdp_pure(eps, orders=ORDERS) * (1 + 1e-10) + 1e-14)


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


def test_error_messages_name_the_parameter():
    with pytest.raises(ValueError, match="noise_multiplier"):
        rdp_gaussian(-2.0)
    with pytest.raises(ValueError, match="sampling_rate"):
        rdp_subsampled_gaussian(1.0, sampling_rate=-0.1)
    with pytest.raises(ValueError, match="epsilon must be <= 1"):
        cor36_per_step_epsilon(2.0, delta=1e-6, k=3)


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


@pytest.mark.parametrize("delta", [1e-5, 1e-3, 0.1])
@pytest.mark.parametrize("noise_multiplier", [0.5, 1.0, 10.0, 100.0, 300.0, 1000.0, 3000.0])
def test_rdp_certificate_never_below_the_exact_gaussian_curve(noise_multiplier, delta):
    """RDP -> (eps, delta) is an upper bound: never below the tight mu-GDP curve of the same Gaussian mechanism.

    At delta = 1e-5 the exact epsilon is positive for every multiplier here (delta(0) = 2 Phi(1/(2m)) - 1 > delta).
    Large noise multipliers make the RDP curve tiny (alpha/(2 m^2) < delta at small orders), where a wrong
    Bretagnolle-Huber shortcut (``delta`` for ``delta**2``) certifies eps = 0 (mutant ``acc-rdp-zero-guard``).
    """
    eps_rdp, _ = rdp_to_epsilon(rdp_gaussian(noise_multiplier), orders=None, delta=delta)
    eps_exact = gdp_epsilon(1.0 / noise_multiplier, delta=delta)
    assert eps_rdp >= eps_exact * (1 - 1e-9)
    assert np.isfinite(eps_rdp)
