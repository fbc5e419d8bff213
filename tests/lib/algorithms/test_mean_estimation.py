"""Tests for Spec D1-D3 (dpsco_lib.algorithms.mean_estimation).

Statistical tests use fixed seeds; each states its false-alarm level.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsco_lib.algorithms.mean_estimation import (
    central_mean_estimate,
    gaussian_mean_estimate,
    laplace_mean_estimate,
    local_mean_estimate,
    mean_error_theory,
    shuffle_epsilon_efmrtt19,
    shuffle_epsilon_fmt21,
    shuffled_rr_delta_exact,
    shuffled_rr_exact_epsilon,
)
from dpsco_lib.privacy.accounting.budget import gaussian_noise_multiplier
from dpsco_lib.privacy.audit import audit_mechanism, mu_gdp_lower_bound
from dpsco_lib.privacy.mechanisms import gaussian_sigma_analytic


def _cube(n, d, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, size=(n, d))


# ---------------------------------------------------------------- D1
def test_laplace_mean_scale_ledger_and_determinism():
    X = _cube(50, 7)
    r1 = laplace_mean_estimate(X, epsilon=0.5, rng=np.random.default_rng(3))
    r2 = laplace_mean_estimate(X, epsilon=0.5, rng=np.random.default_rng(3))
    assert np.array_equal(r1.x, r2.x)
    assert r1.params["noise_scale"] == pytest.approx(2 * 7 / (50 * 0.5), rel=1e-15)
    assert r1.ledger.epsilon(0.0, "basic") == 0.5
    noise = np.random.default_rng(3).laplace(0, r1.params["noise_scale"], size=7)
    np.testing.assert_allclose(r1.x, X.mean(0) + noise, rtol=0, atol=1e-15)


def test_gaussian_mean_sigma_and_certificate():
    X = _cube(40, 9)
    r = gaussian_mean_estimate(X, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(0), bound=1.0)
    sens = 2 * 3 / 40
    # the budget path (GDP, exact) agrees with the analytic Gaussian calibration it replaced
    assert r.params["sigma"] == pytest.approx(gaussian_sigma_analytic(sens, epsilon=1.0, delta=1e-6), rel=1e-12)
    assert r.params["sigma"] == sens * gaussian_noise_multiplier(1.0, 1e-6).value
    assert r.certified_epsilon(1e-6) <= 1.0
    assert r.certified_epsilon(1e-6) >= 0.999
    assert "certified_epsilon" not in r.info
    rb = gaussian_mean_estimate(X, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(0), accountant="best")
    np.testing.assert_array_equal(rb.x, r.x)  # "best" resolves to GDP for a Gaussian
    rr = gaussian_mean_estimate(X, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(0), accountant="rdp")
    assert rr.params["sigma"] > r.params["sigma"] and rr.certified_epsilon(1e-6) <= 1.0
    with pytest.raises(ValueError, match="accountant"):
        gaussian_mean_estimate(X, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(0), accountant="optimal")
    with pytest.raises(ValueError, match="accountant"):
        gaussian_mean_estimate(X, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(0), accountant="basic")


@pytest.mark.statistical
def test_d1_rms_error_matches_theory():
    # 4000 replications: relative error of the RMS estimate ~ 1/sqrt(2*4000*d)-ish << 5%.
    rng = np.random.default_rng(11)
    n, d, eps = 100, 20, 1.0
    X = _cube(n, d)
    for delta in (0.0, 1e-5):
        errs = []
        for _ in range(2000):
            if delta == 0:
                r = laplace_mean_estimate(X, epsilon=eps, rng=rng)
            else:
                r = gaussian_mean_estimate(X, epsilon=eps, delta=delta, rng=rng)
            errs.append(np.sum((r.x - X.mean(0)) ** 2))
        rms = math.sqrt(np.mean(errs))
        assert rms == pytest.approx(mean_error_theory(d, n, eps, delta), rel=0.05)
    # d^(3/2) vs d scaling of the exact formulas
    lap = [mean_error_theory(d, 100, 1.0) for d in (10, 1000)]
    gau = [mean_error_theory(d, 100, 1.0, 1e-5) for d in (10, 1000)]
    assert math.log(lap[1] / lap[0]) / math.log(100) == pytest.approx(1.5, abs=1e-12)
    assert math.log(gau[1] / gau[0]) / math.log(100) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"data": np.full((3, 2), 1.5), "epsilon": 1.0}, "data"),
        ({"data": np.zeros((3, 2)), "epsilon": 0.0}, "epsilon"),
        ({"data": np.zeros((3, 2)), "epsilon": 1.0, "bound": -1.0}, "bound"),
        ({"data": np.array([[np.nan, 0.0]]), "epsilon": 1.0}, "data"),
        ({"data": np.zeros(3), "epsilon": 1.0}, "data"),
    ],
)
def test_laplace_mean_bad_inputs(kwargs, name):
    with pytest.raises(ValueError, match=name):
        laplace_mean_estimate(rng=np.random.default_rng(0), **kwargs)


def test_gaussian_mean_bad_inputs():
    with pytest.raises(ValueError, match="delta"):
        gaussian_mean_estimate(np.zeros((3, 2)), epsilon=1.0, delta=0.0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng"):
        gaussian_mean_estimate(np.zeros((3, 2)), epsilon=1.0, delta=1e-5, rng=0)


def _laplace_mech(eps_run):
    def mech(X, rng, size):
        return np.array([laplace_mean_estimate(X, epsilon=eps_run, rng=rng).x[0] for _ in range(size)])

    return mech


@pytest.mark.statistical
def test_d1_laplace_audit_and_broken_variant_caught():
    # Worst-case pair in d = 1: replace -1 by +1. Audit level alpha = 0.05 each.
    S = -np.ones((5, 1))
    Sp = S.copy()
    Sp[0, 0] = 1.0
    stat = np.asarray
    ok = audit_mechanism(_laplace_mech(1.0), S, Sp, stat, 6000, 0.05, np.random.default_rng(1), claimed_epsilon=1.0)
    assert not ok.violation
    # broken: half the noise (runs at 2 eps) while claiming eps
    bad = audit_mechanism(_laplace_mech(2.0), S, Sp, stat, 6000, 0.05, np.random.default_rng(2), claimed_epsilon=1.0)
    assert bad.violation, bad.epsilon_lower_bound


@pytest.mark.statistical
def test_d1_gaussian_mu_audit():
    S = -np.ones((4, 1))
    Sp = S.copy()
    Sp[0, 0] = 1.0
    eps, delta = 1.0, 1e-5
    sigma = gaussian_sigma_analytic(2 / 4, epsilon=eps, delta=delta)
    mu = (2 / 4) / sigma

    def mech(scale):
        def run(X, rng, size):
            out = []
            for _ in range(size):
                r = gaussian_mean_estimate(X, epsilon=eps, delta=delta, rng=rng)
                m = r.info["empirical_mean"][0]
                out.append(m + (r.x[0] - m) * scale)  # scale 0.5: the broken variant (half the noise)
            return np.array(out)

        return run

    ok = mu_gdp_lower_bound(mech(1.0), S, Sp, np.asarray, 0.0, 6000, 0.05, np.random.default_rng(5), claimed_mu=mu)
    assert not ok.violation
    bad = mu_gdp_lower_bound(mech(0.5), S, Sp, np.asarray, 0.0, 6000, 0.05, np.random.default_rng(6), claimed_mu=mu)
    assert bad.violation, (bad.mu_lower_bound, mu)


# ---------------------------------------------------------------- D2
def test_local_and_central_scales():
    x = np.random.default_rng(0).normal(0.5, 1, size=200)
    c = math.sqrt(math.log(200))
    rl = local_mean_estimate(x, epsilon=0.5, rng=np.random.default_rng(1))
    rc = central_mean_estimate(x, epsilon=0.5, rng=np.random.default_rng(1))
    assert rl.params["clip"] == c and rc.params["clip"] == c
    assert rl.params["noise_scale"] == pytest.approx(2 * c / 0.5)
    assert rc.params["noise_scale"] == pytest.approx(2 * c / (200 * 0.5))
    assert rl.info["clipped_mean"] == pytest.approx(np.clip(x, -c, c).mean())
    assert rl.ledger.epsilon(0.0, "basic") == 0.5 and rc.ledger.epsilon(0.0, "basic") == 0.5
    with pytest.raises(ValueError, match="clip"):
        local_mean_estimate(x, epsilon=1.0, rng=np.random.default_rng(0), clip=0.0)
    with pytest.raises(ValueError, match="x"):
        central_mean_estimate(np.zeros((2, 2)), epsilon=1.0, rng=np.random.default_rng(0))


@pytest.mark.statistical
def test_d2_private_error_std():
    # 3000 reps: sample std within 6% of 2 sqrt2 c/(eps sqrt n) (LDP) and 2 sqrt2 c/(n eps) (central).
    rng = np.random.default_rng(4)
    n, eps = 400, 1.0
    x = rng.normal(0.3, 1, size=n)
    c = math.sqrt(math.log(n))
    el = [local_mean_estimate(x, epsilon=eps, rng=rng).x[0] for _ in range(3000)]
    ec = [central_mean_estimate(x, epsilon=eps, rng=rng).x[0] for _ in range(3000)]
    assert np.std(el) == pytest.approx(2 * math.sqrt(2) * c / (eps * math.sqrt(n)), rel=0.06)
    assert np.std(ec) == pytest.approx(2 * math.sqrt(2) * c / (eps * n), rel=0.06)


@pytest.mark.statistical
def test_d2_central_audit_broken_caught():
    S = np.full(6, -5.0)  # clipped to -c
    Sp = S.copy()
    Sp[0] = 5.0
    c = math.sqrt(math.log(6))

    def mech(eps_run):
        def run(X, rng, size):
            return np.array([central_mean_estimate(X, epsilon=eps_run, rng=rng).x[0] for _ in range(size)])

        return run

    ok = audit_mechanism(mech(1.0), S, Sp, np.asarray, 6000, 0.05, np.random.default_rng(7), claimed_epsilon=1.0)
    assert not ok.violation
    bad = audit_mechanism(mech(2.0), S, Sp, np.asarray, 6000, 0.05, np.random.default_rng(8), claimed_epsilon=1.0)
    assert bad.violation
    assert c > 0


# ---------------------------------------------------------------- D3
def test_fmt21_closed_form_value():
    eps0, n, delta = 1.0, 10_000, 1e-6
    a = 8 * math.sqrt(math.e * math.log(4 / delta)) / math.sqrt(n)
    c = 8 * math.e / n
    e1 = math.log(1 + a + c)
    want = math.log(1 + (1 - math.exp(-1)) / (1 + math.exp(-1 - e1)) * (a + c))
    assert shuffle_epsilon_fmt21(eps0, n=n, delta=delta) == pytest.approx(want, rel=1e-14)
    # outside the theorem's range: no amplification claimed
    assert shuffle_epsilon_fmt21(5.0, n=1000, delta=1e-6) == 5.0
    # monotone decreasing in n, ~ n^{-1/2}
    vals = [shuffle_epsilon_fmt21(1.0, n=n, delta=1e-6) for n in (10**4, 10**6)]
    assert vals[1] < vals[0]
    assert math.log(vals[0] / vals[1]) / math.log(100) == pytest.approx(0.5, abs=0.05)


def test_efmrtt19_value_and_range():
    assert shuffle_epsilon_efmrtt19(0.25, n=10**6, delta=1e-6) == pytest.approx(
        12 * 0.25 * math.sqrt(math.log(1e6) / 1e6))
    with pytest.raises(TypeError):
        shuffle_epsilon_efmrtt19(0.25, 10**6, 1e-6)  # keyword-only after eps0: (n, delta) cannot be swapped
    assert shuffle_epsilon_efmrtt19(0.6, n=10**6, delta=1e-6) == 0.6
    with pytest.raises(ValueError, match="delta"):
        shuffle_epsilon_efmrtt19(0.25, n=10**6, delta=0.0)


def test_shuffled_rr_exact_is_a_lower_bound_of_the_upper_bounds():
    # n = 1: no shuffling gain; exact delta of binary RR at eps0 is 0 and just below it positive.
    assert shuffled_rr_delta_exact(1.0, n=1, epsilon=1.0) == pytest.approx(0.0, abs=1e-15)
    assert shuffled_rr_delta_exact(1.0, n=1, epsilon=0.9) > 0
    # closed form for n = 1: delta(eps) = (e^eps0 - e^eps)/(1 + e^eps0)
    assert shuffled_rr_delta_exact(1.0, n=1, epsilon=0.5) == pytest.approx((math.e - math.exp(0.5)) / (1 + math.e),
                                                                           rel=1e-12)
    for n in (2000, 20_000, 200_000):
        lo = shuffled_rr_exact_epsilon(1.0, n=n, delta=1e-6)
        hi = shuffle_epsilon_fmt21(1.0, n=n, delta=1e-6)
        assert 0 < lo <= hi < 1.0


def test_shuffle_bad_inputs():
    with pytest.raises(ValueError, match="eps0"):
        shuffle_epsilon_fmt21(-1.0, n=100, delta=1e-6)
    with pytest.raises(ValueError, match="n"):
        shuffled_rr_exact_epsilon(1.0, n=0, delta=1e-6)


@pytest.mark.statistical
def test_d2_local_randomizer_audit_and_broken_variant():
    # One user (n = 1, clip c = 1): the release is [x]_c + Lap(2c/eps), the Laplace mechanism on [-1, 1].
    S, Sp = np.array([-1.0]), np.array([1.0])

    def mech(eps_run):
        def run(X, rng, size):
            return np.array([local_mean_estimate(X, epsilon=eps_run, rng=rng, clip=1.0).x[0] for _ in range(size)])

        return run

    ok = audit_mechanism(mech(1.0), S, Sp, np.asarray, 6000, 0.05, np.random.default_rng(9), claimed_epsilon=1.0)
    assert not ok.violation
    bad = audit_mechanism(mech(2.0), S, Sp, np.asarray, 6000, 0.05, np.random.default_rng(10), claimed_epsilon=1.0)
    assert bad.violation, bad.epsilon_lower_bound
