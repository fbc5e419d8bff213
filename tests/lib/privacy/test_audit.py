"""Tests of dpsco_lib.privacy.audit (Spec privacy.md "Audits" and G1).

Every audit runs twice: on the correct mechanism (the audited lower bound must not exceed the claimed
epsilon / mu) and on a deliberately broken copy (too little noise or a wrong sensitivity), which the
audit must detect (lower bound > claim). The audits are exact (Clopper-Pearson) at level 1 - ALPHA, so for
a correct mechanism the "lb <= claim" check has false-alarm probability <= ALPHA; seeds are fixed.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from dpsco_lib.geometry.norms import lp_norm, regularity_constant
from dpsco_lib.privacy import audit as A
from dpsco_lib.privacy import mechanisms as M
from dpsco_lib.privacy.accounting.gdp import gdp_epsilon

ALPHA = 0.01  # failure probability of every audited bound below


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------------------------------------
# Clopper-Pearson
# ---------------------------------------------------------------------------------------------------------
def test_clopper_pearson_closed_forms_at_the_ends():
    n, a = 40, 0.05
    lo, hi = A.clopper_pearson(0, n, a)
    assert lo == 0.0
    assert hi == pytest.approx(1.0 - (a / 2.0) ** (1.0 / n), rel=1e-10)
    lo, hi = A.clopper_pearson(n, n, a)
    assert hi == 1.0
    assert lo == pytest.approx((a / 2.0) ** (1.0 / n), rel=1e-10)


def test_clopper_pearson_equals_beta_quantiles_and_vectorized_version():
    n, a = 57, 0.1
    k = np.arange(n + 1)
    lo_v, hi_v = A._cp_bounds(k, n, a)
    for kk in k:
        lo, hi = A.clopper_pearson(int(kk), n, a)
        if 0 < kk:
            assert lo == pytest.approx(stats.beta.ppf(a / 2, kk, n - kk + 1), rel=1e-9)
        if kk < n:
            assert hi == pytest.approx(stats.beta.ppf(1 - a / 2, kk + 1, n - kk), rel=1e-9)
        assert (lo, hi) == pytest.approx((lo_v[kk], hi_v[kk]), rel=1e-9, abs=1e-15)


def test_clopper_pearson_exact_coverage_and_tails():
    """Exact (not simulated) coverage: for every p on a grid, each one-sided tail fails w.p. <= a/2."""
    n, a = 25, 0.05
    k = np.arange(n + 1)
    bounds = np.array([A.clopper_pearson(int(kk), n, a) for kk in k])
    for p in np.linspace(0.001, 0.999, 400):
        pmf = stats.binom.pmf(k, n, p)
        assert pmf[bounds[:, 0] > p].sum() <= a / 2 + 1e-12
        assert pmf[bounds[:, 1] < p].sum() <= a / 2 + 1e-12
    # and the interval is not trivially wide: at some p the coverage is tight (> 1 - 2a)
    p = 0.3
    pmf = stats.binom.pmf(k, n, p)
    cover = pmf[(bounds[:, 0] <= p) & (bounds[:, 1] >= p)].sum()
    assert 1 - a <= cover < 1 - a / 5


def test_epsilon_from_counts_formula():
    r = A.epsilon_lower_bound_from_counts(800, 200, 1000, 1000, 0.05, delta=0.01)
    lo_s, _ = A.clopper_pearson(800, 1000, 0.025)
    _, hi_p = A.clopper_pearson(200, 1000, 0.025)
    assert r.epsilon_lower_bound == pytest.approx(math.log((lo_s - 0.01) / hi_p), rel=1e-12)
    assert r.event.startswith("P_S(T > t)")
    # the mirrored situation is caught by the symmetric events
    r2 = A.epsilon_lower_bound_from_counts(200, 800, 1000, 1000, 0.05, delta=0.01)
    assert r2.epsilon_lower_bound == pytest.approx(r.epsilon_lower_bound, rel=1e-12)
    # complement event: E^c = {T <= t} rare in one world
    r3 = A.epsilon_lower_bound_from_counts(990, 900, 1000, 1000, 0.05)
    lo_c, _ = A.clopper_pearson(100, 1000, 0.025)
    _, hi_c = A.clopper_pearson(10, 1000, 0.025)
    assert r3.epsilon_lower_bound == pytest.approx(math.log(lo_c / hi_c), rel=1e-12)
    # identical worlds: nothing to detect
    assert A.epsilon_lower_bound_from_counts(500, 500, 1000, 1000, 0.05).epsilon_lower_bound == 0.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.alpha = 0.5  # type: ignore[misc]


# ---------------------------------------------------------------------------------------------------------
# Laplace
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.statistical
@pytest.mark.parametrize(("noise_factor", "detected"), [(1.0, False), (0.5, True)])
def test_laplace_audit(noise_factor, detected):
    """Lap(1/eps) on f(S) = 0 vs f(S') = 1: {X > 1} has likelihood ratio exactly e^eps (tight)."""
    eps = 1.0

    def mech(value, rng, size):
        # the broken copy uses a scale `noise_factor` times too small
        return M.laplace_mechanism(value, sensitivity=noise_factor, epsilon=eps, rng=rng, size=size)

    r = A.epsilon_lower_bound(mech, 1.0, 0.0, lambda x: x, 1.0, 100_000, ALPHA, _rng(11), claimed_epsilon=eps)
    assert r.violation is detected
    if detected:
        assert r.epsilon_lower_bound > 1.5  # true value 2
    else:
        assert 0.8 < r.epsilon_lower_bound <= eps  # tight audit: close to the truth


# ---------------------------------------------------------------------------------------------------------
# Gaussian: mu-GDP audit
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.statistical
@pytest.mark.parametrize(("noise_factor", "detected"), [(1.0, False), (0.5, True)])
def test_gaussian_mu_gdp_audit(noise_factor, detected):
    sigma = M.gaussian_sigma_analytic(1.0, epsilon=1.0, delta=1e-5)
    claimed_mu = 1.0 / sigma  # the Gaussian mechanism is exactly (Delta/sigma)-GDP

    def mech(value, rng, size):
        return M.gaussian_mechanism(value, sigma=noise_factor * sigma, rng=rng, size=size)

    r = A.mu_gdp_lower_bound(mech, 1.0, 0.0, lambda x: x, 0.5, 200_000, ALPHA, _rng(12), claimed_mu=claimed_mu)
    assert r.violation is detected
    if not detected:
        assert r.mu_lower_bound > 0.8 * claimed_mu  # the mid-point test is optimal: the bound is tight


def test_mu_gdp_from_counts_formula():
    r = A.mu_gdp_lower_bound_from_counts(700, 300, 1000, 1000, 0.05)
    lo_s, _ = A.clopper_pearson(700, 1000, 0.025)
    _, hi_p = A.clopper_pearson(300, 1000, 0.025)
    assert r.mu_lower_bound == pytest.approx(stats.norm.ppf(1 - hi_p) - stats.norm.ppf(1 - lo_s), rel=1e-12)


@pytest.mark.statistical
def test_gaussian_epsilon_delta_audit_detects_half_noise():
    """(eps, delta) threshold audit with the threshold chosen on a separate split."""
    eps, dl = 1.0, 1e-3
    sigma = M.gaussian_sigma_analytic(1.0, epsilon=eps, delta=dl)
    for factor, detected in ((1.0, False), (0.5, True)):

        def mech(value, rng, size, f=factor):
            return M.gaussian_mechanism(value, sigma=f * sigma, rng=rng, size=size)

        r = A.audit_mechanism(mech, 1.0, 0.0, lambda x: x, 200_000, ALPHA, _rng(13), delta=dl, claimed_epsilon=eps)
        assert r.violation is detected, (factor, r)


# ---------------------------------------------------------------------------------------------------------
# Report noisy max and the exponential mechanism
# ---------------------------------------------------------------------------------------------------------
# Worst-case non-monotone pair: all scores 0 vs the first up by Delta and all others down by Delta.
J = 20
U = np.zeros(J)
U_PRIME = -np.ones(J)
U_PRIME[0] = 1.0


def _is_first(idx):
    return (np.asarray(idx) == 0).astype(np.float64)


@pytest.mark.statistical
@pytest.mark.parametrize("noise", ["laplace", "gumbel"])
@pytest.mark.parametrize(("broken", "detected"), [(False, False), (True, True)])
def test_report_noisy_max_audit(noise, broken, detected):
    """The broken copy uses the monotone scale Delta/eps (half the noise) on non-monotone scores."""
    eps = 1.0

    def mech(scores, rng, size):
        return M.report_noisy_max(
            scores, sensitivity=1.0, epsilon=eps, rng=rng, noise=noise, monotone=broken, size=size
        )

    r = A.epsilon_lower_bound(mech, U, U_PRIME, _is_first, 0.5, 200_000, ALPHA, _rng(14), claimed_epsilon=eps)
    assert r.violation is detected
    if detected:
        assert r.epsilon_lower_bound > 1.4


@pytest.mark.statistical
@pytest.mark.parametrize(("broken", "detected"), [(False, False), (True, True)])
def test_exponential_mechanism_audit(broken, detected):
    """P(0) ratio = J e^{eps/2}/(e^{eps/2} + (J-1) e^{-eps/2}) -> e^eps (0.953 at J = 20); broken: exp(eps u/Delta)."""
    eps = 1.0

    def mech(scores, rng, size):
        return M.exponential_mechanism(scores, sensitivity=1.0, epsilon=eps, rng=rng, monotone=broken, size=size)

    r = A.epsilon_lower_bound(mech, U, U_PRIME, _is_first, 0.5, 200_000, ALPHA, _rng(15), claimed_epsilon=eps)
    assert r.violation is detected
    true_ratio = J * math.exp(eps / 2) / (math.exp(eps / 2) + (J - 1) * math.exp(-eps / 2))
    if not detected:
        assert math.log(true_ratio) - 0.1 < r.epsilon_lower_bound <= math.log(true_ratio)


# ---------------------------------------------------------------------------------------------------------
# Generalized Gaussian (G1)
# ---------------------------------------------------------------------------------------------------------
def _gg_stat(center, q):
    """Neyman-Pearson statistic for GG(center) vs GG(0): ||z||_q^2 - ||z - center||_q^2."""

    def stat(z):
        return np.asarray(lp_norm(z, q, axis=1)) ** 2 - np.asarray(lp_norm(z - center, q, axis=1)) ** 2

    return stat


@pytest.mark.statistical
@pytest.mark.parametrize(
    ("q", "noise_factor", "detected"),
    [(2.0, 1.0, False), (2.0, 0.5, True), (4.0, 1.0, False), (4.0, 0.25, True)],
)
def test_gg_audit(q, noise_factor, detected):
    """GG mechanism in d = 2, shift along the diagonal with ||a - a'||_q = 1, sigma = gg_sigma_exact.

    For q = 4 the kappa = q - 1 = 3 calibration is so conservative that a 2x noise deficit is *still*
    (1, 1e-3)-DP for this pair (Monte-Carlo delta(1) about 3e-5, see test_gg_two_x_deficit_not_a_violation),
    so no sound audit can flag it; the broken copy there uses 4x too little noise.
    """
    eps, dl = 1.0, 1e-3
    kappa = regularity_constant(q)
    sigma = M.gg_sigma_exact(1.0, epsilon=eps, delta=dl, kappa=kappa)
    a = np.ones(2) / 2 ** (1 / q)

    def mech(center, rng, size):
        return M.generalized_gaussian_mechanism(center, q=q, sigma=noise_factor * sigma, rng=rng, size=size)

    r = A.audit_mechanism(mech, a, np.zeros(2), _gg_stat(a, q), 200_000, ALPHA, _rng(16), delta=dl, claimed_epsilon=eps)
    assert r.violation is detected, r


@pytest.mark.statistical
def test_gg_two_x_deficit_not_a_violation():
    q, eps, dl = 4.0, 1.0, 1e-3
    sigma = 0.5 * M.gg_sigma_exact(1.0, epsilon=eps, delta=dl, kappa=regularity_constant(q))
    a = np.ones(2) / 2 ** (1 / q)
    loss = A.gg_privacy_loss(a, np.zeros(2), q=q, sigma=sigma, n=200_000, rng=_rng(17))
    mc = A.monte_carlo_delta(loss, eps, alpha=ALPHA)
    assert mc.ci_high < dl / 10


@pytest.mark.statistical
def test_monte_carlo_delta_matches_analytic_gaussian():
    """GG with q = 2 is the Gaussian: MC delta(eps) must match Balle-Wang's closed form."""
    sigma, shift = 1.5, np.array([0.6, -0.8, 0.0])  # ||shift||_2 = 1
    loss = A.gg_privacy_loss(shift, np.zeros(3), q=2.0, sigma=sigma, n=400_000, rng=_rng(18))
    # privacy loss of the Gaussian: N(mu^2/2, mu^2), mu = 1/sigma
    mu = 1.0 / sigma
    assert loss.mean() == pytest.approx(mu * mu / 2, abs=5 * mu / math.sqrt(loss.size))
    for eps in (0.0, 0.3, 1.0):
        mc = A.monte_carlo_delta(loss, eps)
        tv = 2 * stats.norm.cdf(mu / 2) - 1
        exact = M.gaussian_delta_analytic(sigma, sensitivity=1.0, epsilon=eps) if eps > 0 else tv
        assert abs(mc.delta - exact) < 4 * mc.std_error
        assert mc.upper_exact >= mc.delta


def test_monte_carlo_delta_edge_cases():
    mc = A.monte_carlo_delta(np.full(1000, -2.0), 0.5)
    assert mc.delta == 0.0 and mc.std_error == 0.0
    assert mc.upper_exact == pytest.approx(1 - 0.05 ** (1 / 1000), rel=1e-9)  # one-sided CP with k = 0
    mc = A.monte_carlo_delta(np.array([np.inf, np.inf, 1.0]), 1.0)
    assert mc.delta == pytest.approx(2 / 3)
    assert mc.n_positive == 2


# ---------------------------------------------------------------------------------------------------------
# Renyi divergence of GG laws
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("alpha", [1.1, 2.0, 5.0, 20.0])
@pytest.mark.parametrize("shift", [0.7, [1.0], [0.3, -0.4], [1.5, 0.5]])
def test_quadrature_q2_equals_gaussian_closed_form(alpha, shift):
    sigma = 1.3
    sq = float(np.sum(np.square(shift)))
    got = A.renyi_divergence_gg_quadrature(2.0, sigma, shift, alpha)
    assert got == pytest.approx(alpha * sq / (2 * sigma**2), abs=1e-6, rel=1e-6)


@pytest.mark.parametrize("q", [1.0, 3.0, 7.5])
def test_quadrature_d1_is_gaussian_for_every_q(q):
    assert A.renyi_divergence_gg_quadrature(q, 0.8, 0.5, 3.0) == pytest.approx(3 * 0.25 / (2 * 0.64), rel=1e-8)


@pytest.mark.parametrize("q", [1.5, 3.0, 4.0, 10.0])
def test_quadrature_normalizer_matches_closed_form(q):
    got = A._log_tilted_integral(q, 0.7, np.zeros(2), 2.0, 1e-10)
    assert got == pytest.approx(A.gg_log_normalizer(2, q, 0.7), abs=1e-8)
    assert A.gg_log_normalizer(1, q, 0.7) == pytest.approx(0.5 * math.log(2 * math.pi * 0.49), rel=1e-12)


@pytest.mark.statistical
@pytest.mark.parametrize("q", [3.0, 4.0, 8.0])
def test_monte_carlo_agrees_with_quadrature_in_d2(q):
    shift, sigma, alpha = np.array([0.6, 0.3]), 1.0, 3.0
    quad = A.renyi_divergence_gg_quadrature(q, sigma, shift, alpha)
    for method, n in (("tilted", 100_000), ("direct", 200_000)):
        mc = A.renyi_divergence_gg_monte_carlo(q, sigma, shift, alpha, n=n, rng=_rng(19), method=method)
        assert abs(mc.value - quad) < 4.5 * mc.std_error, (method, mc, quad)
        assert mc.std_error < 0.01


@pytest.mark.statistical
def test_inflated_proposal_fixes_heavy_tailed_weights_in_d2():
    """q = 8, diagonal shift, alpha = 8: the proof's proposal has heavy-tailed weights (ESS tiny); s = 1.7 not."""
    q, sigma, alpha = 8.0, 2.0, 8.0
    shift = np.ones(2) / 2 ** (1 / q)
    quad = A.renyi_divergence_gg_quadrature(q, sigma, shift, alpha)
    est = A.renyi_divergence_gg_monte_carlo(q, sigma, shift, alpha, n=100_000, rng=_rng(30), proposal_scale=1.7)
    assert abs(est.value - quad) < 4.5 * est.std_error
    assert est.ess > 0.05 * est.n
    plain = A.renyi_divergence_gg_monte_carlo(q, sigma, shift, alpha, n=100_000, rng=_rng(30))
    assert plain.ess < est.ess


def test_monte_carlo_tilted_is_exact_for_q2():
    shift = np.linspace(-1, 1, 10) / 3
    est = A.renyi_divergence_gg_monte_carlo(2.0, 1.0, shift, 4.0, n=1000, rng=_rng(20))
    assert est.value == pytest.approx(4.0 * float(shift @ shift) / 2, rel=1e-10)
    assert est.std_error < 1e-12


@pytest.mark.parametrize("q", [2.0, 3.0, 6.0])
def test_slide_inequality_bounds_tilted_weights(q):
    """Pointwise (alpha-1) ln(p/q)-type weight <= kappa alpha^2 Delta^2/(2 sigma^2), kappa = q - 1 (G1 proof)."""
    d, sigma, alpha = 30, 0.5, 6.0
    shift = _rng(21).normal(size=d)
    shift /= lp_norm(shift, q)
    est = A.renyi_divergence_gg_monte_carlo(q, sigma, shift, alpha, n=20_000, rng=_rng(22))
    bound = regularity_constant(q) * alpha**2 / (2 * sigma**2)
    assert est.max_log_weight <= bound * (1 + 1e-12)
    assert est.value <= bound / (alpha - 1)


# ---------------------------------------------------------------------------------------------------------
# Threshold selection and canary audits
# ---------------------------------------------------------------------------------------------------------
def test_choose_threshold_picks_the_separating_region():
    rng = _rng(23)
    a, b = rng.laplace(1.0, 1.0, 20_000), rng.laplace(0.0, 1.0, 20_000)
    t = A.choose_threshold(a, b, alpha=0.05)
    assert t >= 0.5  # any t >= 1 is optimal for Laplace; it must not choose the uninformative left tail
    assert A.choose_threshold(-a, -b, alpha=0.05) <= -0.5  # the complement events are used too


def _noisy_sums(sigma, steps=4):
    """A toy iterative algorithm: `steps` noisy sums of the data, averaged (mu-GDP with sqrt(steps)/sigma)."""

    def run_many(data, rng, m):
        x = np.zeros(m)
        s = float(np.sum(data))
        for _ in range(steps):
            x += s + rng.normal(0.0, sigma, size=m)
        return x / steps

    def run_one(data, rng):
        return float(run_many(data, rng, 1)[0])

    return run_one, run_many


@pytest.mark.statistical
@pytest.mark.parametrize(("factor", "detected"), [(1.0, False), (0.5, True)])
def test_canary_audit_vectorized(factor, detected):
    data = np.zeros(50)
    data_prime = data.copy()
    data_prime[0] = 1.0  # the canary: the record with the largest possible influence
    sigma, steps, dl = 4.0, 4, 1e-3
    claimed = M.gaussian_epsilon_analytic(sigma / math.sqrt(steps), sensitivity=1.0, delta=dl)
    _, run_many = _noisy_sums(factor * sigma, steps)
    r = A.canary_audit(
        None,
        data,
        data_prime,
        lambda o: o,
        200_000,
        ALPHA,
        _rng(24),
        claimed_epsilon=claimed,
        delta=dl,
        run_many=run_many,
        statistic_vectorized=True,
    )
    assert r.violation is detected
    assert r.claimed_epsilon == pytest.approx(claimed)


def test_canary_audit_per_run_matches_interface():
    data = np.zeros(5)
    data_prime = data.copy()
    data_prime[0] = 1.0
    run_one, _ = _noisy_sums(0.05)  # almost no noise: the canary is plainly visible
    r = A.canary_audit(
        run_one, data, data_prime, lambda o: o, 300, 0.05, _rng(25), threshold=0.5, claimed_epsilon=1.0, delta=1e-5
    )
    assert r.counts == (0, 300) and r.trials == (300, 300)
    assert r.violation and r.epsilon_lower_bound > 3.0


# ---------------------------------------------------------------------------------------------------------
# Determinism and bad input
# ---------------------------------------------------------------------------------------------------------
def test_same_seed_same_result():
    def mech(v, rng, size):
        return M.laplace_mechanism(v, sensitivity=1.0, epsilon=1.0, rng=rng, size=size)

    r1 = A.audit_mechanism(mech, 1.0, 0.0, lambda x: x, 5000, 0.05, _rng(26))
    r2 = A.audit_mechanism(mech, 1.0, 0.0, lambda x: x, 5000, 0.05, _rng(26))
    assert r1 == r2
    e1 = A.renyi_divergence_gg_monte_carlo(3.0, 1.0, np.ones(4), 2.0, n=500, rng=_rng(27))
    e2 = A.renyi_divergence_gg_monte_carlo(3.0, 1.0, np.ones(4), 2.0, n=500, rng=_rng(27))
    assert e1 == e2


def _lap(v, rng, size):
    return M.laplace_mechanism(v, sensitivity=1.0, epsilon=1.0, rng=rng, size=size)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: A.clopper_pearson(5, 3, 0.05), "successes"),
        (lambda: A.clopper_pearson(1, 0, 0.05), "trials"),
        (lambda: A.clopper_pearson(1, 3, 0.0), "alpha"),
        (lambda: A.clopper_pearson(1, 3, 1.0), "alpha"),
        (lambda: A.clopper_pearson(1.5, 3, 0.1), "successes"),
        (lambda: A.epsilon_lower_bound_from_counts(1, 2, 3, 3, 0.05, delta=1.0), "delta"),
        (lambda: A.epsilon_lower_bound(_lap, 0.0, 1.0, lambda x: x[:3], 0.5, 10, 0.05, _rng(0)), "shape"),
        (lambda: A.epsilon_lower_bound(_lap, 0.0, 1.0, lambda x: x, math.nan, 10, 0.05, _rng(0)), "threshold"),
        (lambda: A.epsilon_lower_bound(_lap, 0.0, 1.0, lambda x: x * np.nan, 0.5, 10, 0.05, _rng(0)), "NaN"),
        (lambda: A.epsilon_lower_bound(_lap, 0.0, 1.0, lambda x: x, 0.5, 0, 0.05, _rng(0)), "n"),
        (lambda: A.epsilon_lower_bound(_lap, 0.0, 1.0, lambda x: x, 0.5, 10, 0.05, 42), "rng"),
        (lambda: A.mu_gdp_lower_bound(_lap, 0.0, 1.0, lambda x: x, 0.5, 10, 2.0, _rng(0)), "alpha"),
        (lambda: A.choose_threshold(np.array([np.nan]), np.zeros(3)), "NaN"),
        (lambda: A.choose_threshold(np.zeros(3), np.zeros(3), n_candidates=0), "n_candidates"),
        (lambda: A.monte_carlo_delta(np.array([0.1, np.nan]), 1.0), "NaN"),
        (lambda: A.monte_carlo_delta(np.zeros(3), -1.0), "epsilon"),
        (lambda: A.gg_privacy_loss(np.zeros(2), np.zeros(3), q=2, sigma=1, n=5, rng=_rng(0)), "center_prime"),
        (lambda: A.gg_privacy_loss(np.zeros(2), np.zeros(2), q=0.5, sigma=1, n=5, rng=_rng(0)), "q"),
        (lambda: A.gg_privacy_loss(np.zeros(2), np.zeros(2), q=2, sigma=0, n=5, rng=_rng(0)), "sigma"),
        (lambda: A.renyi_divergence_gg_quadrature(3.0, 1.0, np.ones(3), 2.0), "dimension"),
        (lambda: A.renyi_divergence_gg_quadrature(3.0, 1.0, 1.0, 1.0), "alpha"),
        (lambda: A.renyi_divergence_gg_quadrature(math.inf, 1.0, 1.0, 2.0), "q"),
        (lambda: A.renyi_divergence_gg_quadrature(3.0, 1.0, [np.inf], 2.0), "shift"),
        (lambda: A.renyi_divergence_gg_monte_carlo(3.0, 1.0, np.ones(3), 2.0, n=1, rng=_rng(0)), "n"),
        (lambda: A.renyi_divergence_gg_monte_carlo(3.0, 1.0, np.ones(3), 2.0, n=9, rng=_rng(0), method="x"), "method"),
        (
            lambda: A.renyi_divergence_gg_monte_carlo(3.0, 1.0, np.ones(3), 2.0, n=9, rng=_rng(0), proposal_scale=0.5),
            "proposal_scale",
        ),
        (
            lambda: A.renyi_divergence_gg_monte_carlo(
                3.0, 1.0, np.ones(3), 2.0, n=9, rng=_rng(0), method="direct", proposal_scale=2.0
            ),
            "proposal_scale",
        ),
        (lambda: A.canary_audit(None, 0, 1, float, 10, 0.05, _rng(0), claimed_epsilon=1.0, delta=0.0), "run_"),
        (lambda: A.canary_audit(None, 0, 1, float, 10, 0.05, _rng(0), claimed_epsilon=0.0, delta=0.0), "claimed"),
        (lambda: A.gg_log_normalizer(0, 2.0, 1.0), "d"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ---------------------------------------------------------------------------------------------------------
# Exact bounds on delta(eps) by randomized rounding, and the half-noise audit of the GG mechanism (G1)
# ---------------------------------------------------------------------------------------------------------
def test_monte_carlo_delta_interval_exact_ends_and_validation():
    # L = +inf everywhere: W = 1, every rounding variable succeeds -> lower = alpha^(1/n), upper = 1
    iv = A.monte_carlo_delta_interval(np.full(50, np.inf), 1.0, alpha=0.01, rng=_rng(0))
    assert iv.successes == 50 and iv.upper == 1.0 and iv.lower == pytest.approx(0.01 ** (1 / 50), rel=1e-10)
    # L <= eps everywhere: W = 0 -> lower = 0, upper = 1 - alpha^(1/n)
    iv = A.monte_carlo_delta_interval(np.zeros(200), 1.0, alpha=0.01, rng=_rng(0))
    assert iv.successes == 0 and iv.lower == 0.0 and iv.upper == pytest.approx(1 - 0.01 ** (1 / 200), rel=1e-10)
    with pytest.raises(ValueError, match="alpha"):
        A.monte_carlo_delta_interval(np.zeros(3), 1.0, alpha=1.5, rng=_rng(0))
    with pytest.raises(ValueError, match="NaN"):
        A.monte_carlo_delta_interval(np.array([0.0, np.nan]), 1.0, alpha=0.1, rng=_rng(0))
    with pytest.raises(ValueError, match="epsilon"):
        A.monte_carlo_delta_interval(np.zeros(3), -1.0, alpha=0.1, rng=_rng(0))


@pytest.mark.statistical
def test_monte_carlo_delta_interval_covers_the_exact_gaussian_profile():
    """Gaussian shift mu = 1: delta(0.5) is known in closed form (Balle-Wang). Over 40 independent intervals at
    alpha = 0.05 per side the number of misses is Binomial(40, <= 0.1); more than 12 misses has probability
    below 1e-4 (the stated false-alarm probability)."""
    rng = _rng(7)
    exact = M.gaussian_delta_analytic(1.0, sensitivity=1.0, epsilon=0.5)
    misses = 0
    for _ in range(40):
        z = rng.normal(size=4000)
        loss = z + 0.5  # L = ln p(Y)/q(Y) = Y - 1/2 for Y = 1 + Z ~ N(1, 1) against N(0, 1)
        iv = A.monte_carlo_delta_interval(loss, 0.5, alpha=0.05, rng=rng)
        misses += not (iv.lower <= exact <= iv.upper)
    assert misses <= 12


@pytest.mark.statistical
@pytest.mark.parametrize(("d", "q"), [(10, 2.0), (100, 4.0)])
def test_half_noise_gg_is_caught_and_the_correct_one_is_not(d, q):
    """The GG release calibrated by gg_sigma_exact for (1, 1e-4) and a broken copy with sigma/2, all-ones shift
    (notebook 04). False-alarm probability: the correct mechanism is flagged only if the exact lower bound on its
    delta(1) exceeds 1e-4, probability <= 1e-3. Power: the broken copy's delta(1) is about 2.9e-3 (q = 2) and
    3.6e-4 (q = 4, d = 100); with n = 150000 the expected rounding count is >= 50 against about 30 needed."""
    from dpsco_book.generalized_gaussian import half_noise_audit_task

    kw = dict(d=d, q=q, kind="ones", n=150_000, epsilon=1.0, delta=1e-4, alpha=1e-3)
    ok = half_noise_audit_task(rng=_rng(11), noise_factor=1.0, **kw)
    bad = half_noise_audit_task(rng=_rng(12), noise_factor=0.5, **kw)
    assert not ok["flagged"] and ok["cp_upper"] <= 1e-4
    assert bad["flagged"] and bad["cp_lower"] > 1e-4


# ---------------------------------------------------------------------------------------------------------------
# Tests of the whole trade-off-curve audit (:func:`dpsco_lib.privacy.audit.tradeoff_audit`).
#
# On exact Gaussian samples N(0, 1) (world 0) and N(mu, 1) (world 1), the pair's trade-off curve is exactly
# G_mu, so a valid audit at level 1 - ALPHA exceeds mu in at most a binomial share of the seeds, and a tight
# one recovers most of mu at a few thousand samples per world.
# ---------------------------------------------------------------------------------------------------------------
ALPHA = 0.05


def _gauss(mu: float, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    r = np.random.default_rng(seed)
    return r.standard_normal(m), mu + r.standard_normal(m)


def _max_failures(seeds: int, p: float, false_alarm: float) -> int:
    """Smallest k with P(Binomial(seeds, p) > k) <= false_alarm."""
    k = 0
    while stats.binom.sf(k, seeds, p) > false_alarm:
        k += 1
    return k


@pytest.mark.parametrize("mu", [0.3, 1.0, 2.0])
def test_lower_bound_is_valid_on_exact_gaussian_samples(mu):
    """The bound stays <= the truth in >= 95% of 40 seeds (at most 2 exceed it). At alpha = 0.01 each seed
    exceeds it w.p. <= 0.01, so the test's false-alarm probability is P(Bin(40, 0.01) > 2) < 0.01."""
    seeds, delta, alpha = 40, 1e-5, 0.01
    k = 2
    assert _max_failures(seeds, alpha, 0.01) <= k
    over_mu = over_eps = over_direct = 0
    for s in range(seeds):
        res = A.tradeoff_audit(*_gauss(mu, 1500, 1000 * s + 7), delta=delta, alpha=alpha)
        over_mu += res.mu_lower_bound > mu
        over_eps += res.epsilon_lower_bound > gdp_epsilon(mu, delta=delta)
        over_direct += res.epsilon_lower_bound_direct > gdp_epsilon(mu, delta=delta)
    assert over_mu <= k and over_eps <= k and over_direct <= k, (over_mu, over_eps, over_direct)


def test_a_loose_band_does_exceed_the_truth_sometimes():
    """At a loose level the bound exceeds the truth in some seeds: the test above can fail (the band is
    not vacuous)."""
    over = sum(A.tradeoff_audit(*_gauss(1.0, 300, s), delta=1e-5, alpha=0.9).mu_lower_bound > 1.0
               for s in range(60))
    assert over >= 1


@pytest.mark.parametrize(("mu", "delta"), [(1.0, 1e-5), (0.27, 1e-5), (1.5, 0.08)])
def test_lower_bound_is_tight_at_five_thousand_runs_per_world(mu, delta):
    """mu_lb >= 0.8 mu at 5,000 runs a world when mu >= 1 (0.6 mu at mu = 0.27, where the band dominates)."""
    need = 0.8 if mu >= 1.0 else 0.6
    for s in range(3):
        res = A.tradeoff_audit(*_gauss(mu, 5000, s), delta=delta, alpha=ALPHA, claimed_epsilon=1.0)
        assert res.mu_lower_bound >= need * mu, res.mu_lower_bound
        assert res.mu_lower_bound <= mu
        assert res.epsilon_lower_bound == pytest.approx(gdp_epsilon(res.mu_lower_bound, delta=delta))
        assert res.epsilon_lower_bound >= need * gdp_epsilon(mu, delta=delta) - 1e-12
        assert res.tightness == pytest.approx(res.epsilon_lower_bound)


def test_no_signal_gives_a_small_bound_and_a_detected_violation():
    r = np.random.default_rng(3)
    same = A.tradeoff_audit(r.standard_normal(4000), r.standard_normal(4000), delta=1e-5)
    assert same.mu_lower_bound < 0.05
    far = A.tradeoff_audit(*_gauss(3.0, 4000, 4), delta=1e-5, claimed_epsilon=1.0)
    assert far.violation and far.epsilon_lower_bound > 5.0


def test_orientation_and_two_sided():
    s0, s1 = _gauss(1.0, 3000, 5)
    g = A.tradeoff_audit(s0, s1, delta=1e-5)
    lo = A.tradeoff_audit(-s0, -s1, delta=1e-5, alternative="less")
    assert lo.mu_lower_bound == pytest.approx(g.mu_lower_bound) and lo.orientation == "less"
    wrong = A.tradeoff_audit(-s0, -s1, delta=1e-5)
    assert wrong.mu_lower_bound == 0.0
    two = A.tradeoff_audit(-s0, -s1, delta=1e-5, alternative="two-sided")
    assert 0.8 * g.mu_lower_bound < two.mu_lower_bound < g.mu_lower_bound  # alpha / 2 per orientation


def test_curve_matches_counts_and_band_formula():
    s0 = np.array([0.0, 1.0, 2.0, 3.0])
    s1 = np.array([2.5, 3.5])
    c = A.empirical_tradeoff_curve(s0, s1, alpha=0.1)
    assert c.band == pytest.approx((math.sqrt(math.log(20) / 8), math.sqrt(math.log(20) / 4)))
    i = int(np.searchsorted(c.thresholds, 2.0))
    assert c.thresholds[i] == 2.0 and c.fpr[i] == 0.25 and c.fnr[i] == 0.0
    assert c.fpr[0] == 1.0 and c.fnr[0] == 0.0 and c.fpr[-1] == 0.0 and c.fnr[-1] == 1.0
    assert np.all(np.diff(c.fpr) <= 0) and np.all(np.diff(c.fnr) >= 0)
    assert np.all(c.fpr_upper <= 1.0) and np.all(c.fnr_upper >= c.fnr)


def test_band_is_simultaneous_at_its_level():
    """Coverage of the one-sided band sup_t (F - F_hat) <= eps over 2,000 replications (exact F)."""
    m, a, reps = 200, 0.1, 2000
    r = np.random.default_rng(11)
    eps = math.sqrt(math.log(2 / a) / (2 * m))
    u = np.sort(r.random((reps, m)), axis=1)
    sup = np.max(np.arange(1, m + 1) / m - u, axis=1)  # sup_t (F_hat - F) for uniform samples
    miss = int(np.sum(sup > eps))
    assert stats.binom.sf(miss - 1, reps, a / 2) > 1e-4, miss  # not more misses than the level allows


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"delta": 1.5}, "delta"),
        ({"delta": 1e-5, "alpha": 0.0}, "alpha"),
        ({"delta": 1e-5, "alternative": "up"}, "alternative"),
        ({"delta": 1e-5, "claimed_epsilon": -1.0}, "claimed_epsilon"),
    ],
)
def test_bad_input_is_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        A.tradeoff_audit(np.zeros(3), np.ones(3), **kwargs)


def test_bad_samples_are_refused():
    with pytest.raises(ValueError, match="statistic_0"):
        A.tradeoff_audit(np.array([0.0, np.nan]), np.ones(3), delta=1e-5)
    with pytest.raises(ValueError, match="statistic_1"):
        A.tradeoff_audit(np.zeros(3), np.zeros((2, 2)), delta=1e-5)
    with pytest.raises(ValueError, match="statistic_1"):
        A.empirical_tradeoff_curve(np.zeros(3), np.zeros(0))
