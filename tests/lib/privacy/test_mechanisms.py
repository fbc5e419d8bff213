"""Tests for dpsco_lib.privacy.mechanisms (Spec P1, P2, P4, G1).

Statistical tests run at fixed seeds, so each is deterministic; the stated false-alarm level is the
probability that a *correct* implementation would fail at a random seed. Unless stated otherwise each
statistical test uses level 1e-3 (p-value threshold, or Clopper-Pearson / DKW confidence 1 - 1e-3).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from dpsco_lib.privacy import mechanisms as mech
from dpsco_lib.privacy.mechanisms import (
    exponential_mechanism,
    exponential_mechanism_log_probs,
    gaussian_delta_analytic,
    gaussian_epsilon_analytic,
    gaussian_mechanism,
    gaussian_sigma_analytic,
    gaussian_sigma_classic,
    generalized_gaussian_mechanism,
    generalized_gaussian_noise,
    gg_epsilon,
    gg_sigma,
    gg_sigma_exact,
    laplace_mechanism,
    report_noisy_max,
    report_noisy_min,
    sample_categorical_log,
)

ALPHA = 1e-3  # false-alarm level of each statistical test


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def lq_norm_rows(z: np.ndarray, q: float) -> np.ndarray:
    """Naive row-wise l_q norm, independent of the library's implementation (fine for |z| ~ 1, q <= 60)."""
    if math.isinf(q):
        return np.abs(z).max(axis=1)
    return np.sum(np.abs(z) ** q, axis=1) ** (1.0 / q)


# ---------------------------------------------------------------------------------------------------------
# Gaussian calibration: exact oracle values (Spec P1)
# ---------------------------------------------------------------------------------------------------------
def test_analytic_gaussian_oracle_epsilon():
    # Spec privacy.md oracle: Delta=1, sigma=1, delta=1e-5 -> eps = 4.37718
    eps = gaussian_epsilon_analytic(1.0, sensitivity=1.0, delta=1e-5)
    assert eps == pytest.approx(4.37718, rel=1e-4)
    assert gaussian_delta_analytic(1.0, sensitivity=1.0, epsilon=eps) <= 1e-5


def test_analytic_gaussian_oracle_delta_mu1():
    # mu-GDP curve with mu = 1 at eps = 1 -> delta = 0.126937 (Dong-Roth-Su; spec oracle)
    assert gaussian_delta_analytic(1.0, sensitivity=1.0, epsilon=1.0) == pytest.approx(0.126937, rel=1e-5)
    # eps = 0 gives the total-variation distance 2 Phi(mu/2) - 1
    tv = 2 * stats.norm.cdf(0.25) - 1
    assert gaussian_delta_analytic(2.0, sensitivity=1.0, epsilon=0.0) == pytest.approx(tv, rel=1e-12)


@pytest.mark.parametrize(("sigma", "sens", "eps"), [(1.0, 1.0, 0.5), (0.7, 2.0, 3.0), (3.0, 1.0, 0.1), (0.3, 1.0, 8.0)])
def test_analytic_gaussian_matches_dp_accounting(sigma, sens, eps):
    plm = pytest.importorskip("dp_accounting.pld.privacy_loss_mechanism")
    want = plm.GaussianPrivacyLoss(standard_deviation=sigma, sensitivity=sens).get_delta_for_epsilon(eps)
    assert gaussian_delta_analytic(sigma, sensitivity=sens, epsilon=eps) == pytest.approx(want, rel=1e-9, abs=1e-300)


def test_analytic_gaussian_delta_stable_for_large_epsilon():
    # Compare with 50-digit mpmath in a regime where the naive formula underflows/cancels.
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    for sigma, eps in [(0.2, 60.0), (0.05, 700.0), (1.0, 30.0), (10.0, 0.001)]:
        mu = mpmath.mpf(1) / sigma
        e = mpmath.mpf(eps)
        want = mpmath.ncdf(-e / mu + mu / 2) - mpmath.exp(e) * mpmath.ncdf(-e / mu - mu / 2)
        got = gaussian_delta_analytic(sigma, sensitivity=1.0, epsilon=eps)
        assert math.isfinite(got) and got >= 0
        assert got == pytest.approx(float(want), rel=1e-7)


def test_classic_sigma_exact_formula_and_dominates_analytic():
    s = gaussian_sigma_classic(2.0, epsilon=0.5, delta=1e-5)
    assert s == pytest.approx(2.0 * math.sqrt(2 * math.log(1.25e5)) / 0.5, rel=1e-15)
    for eps in (0.05, 0.3, 0.9):
        for delta in (1e-3, 1e-6, 1e-10):
            sc = gaussian_sigma_classic(1.0, epsilon=eps, delta=delta)
            sa = gaussian_sigma_analytic(1.0, epsilon=eps, delta=delta)
            assert sa < sc
            # the classic sigma is (eps, delta)-DP: its exact delta is below the target
            assert gaussian_delta_analytic(sc, sensitivity=1.0, epsilon=eps) <= delta


@pytest.mark.parametrize("eps", [0.01, 0.3, 1.0, 4.0, 20.0])
@pytest.mark.parametrize("delta", [1e-2, 1e-5, 1e-12])
def test_analytic_sigma_is_conservative_and_tight(eps, delta):
    sens = 1.7
    s = gaussian_sigma_analytic(sens, epsilon=eps, delta=delta)
    assert gaussian_delta_analytic(s, sensitivity=sens, epsilon=eps) <= delta  # never above the target
    assert gaussian_delta_analytic(s * (1 - 1e-9), sensitivity=sens, epsilon=eps) > delta  # and not wastefully large
    e = gaussian_epsilon_analytic(s, sensitivity=sens, delta=delta)
    assert e <= eps * (1 + 1e-9)
    assert gaussian_delta_analytic(s, sensitivity=sens, epsilon=e) <= delta


def test_analytic_epsilon_zero_when_delta_already_met():
    # huge sigma: total variation distance < delta already
    assert gaussian_epsilon_analytic(1e6, sensitivity=1.0, delta=0.5) == 0.0


# ---------------------------------------------------------------------------------------------------------
# Generalized Gaussian calibration (Spec G1)
# ---------------------------------------------------------------------------------------------------------
def test_gg_sigma_paper_formula():
    expected = math.sqrt(2 * 3 * math.log(1e6)) * 2 / 0.5
    assert gg_sigma(2.0, epsilon=0.5, delta=1e-6, kappa=3.0) == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize(("eps", "delta"), [(0.1, 1e-5), (1.0, 1e-5), (5.0, 1e-3), (1.0, 1e-12)])
def test_gg_paper_calibration_slightly_exceeds_target(eps, delta):
    big_l = math.log(1 / delta)
    got = gg_epsilon(gg_sigma(1.0, epsilon=eps, delta=delta, kappa=2.5), sensitivity=1.0, delta=delta, kappa=2.5)
    want = eps * (math.sqrt(1 + eps**2 / (4 * big_l**2)) + eps / (2 * big_l))
    assert got == pytest.approx(want, rel=1e-12)
    assert got > eps


def test_gg_epsilon_value_eps1_delta1e5():
    # The number quoted in the gg_sigma docstring.
    sigma = gg_sigma(1.0, epsilon=1.0, delta=1e-5, kappa=1.0)
    assert gg_epsilon(sigma, sensitivity=1.0, delta=1e-5, kappa=1.0) == pytest.approx(1.044372, abs=1e-6)


@pytest.mark.parametrize(("sigma", "kappa", "delta"), [(1.0, 1.0, 1e-5), (5.0, 4.0, 1e-8), (0.3, 2.0, 0.01)])
def test_gg_epsilon_closed_form_is_the_rdp_optimum(sigma, kappa, delta):
    c = kappa / (2 * sigma**2)

    def eps_of_alpha(alpha: float) -> float:
        return c * alpha**2 / (alpha - 1) + math.log(1 / delta) / (alpha - 1)

    res = optimize.minimize_scalar(lambda la: eps_of_alpha(1 + math.exp(la)), bounds=(-20, 20), method="bounded",
                                   options={"xatol": 1e-12})
    assert gg_epsilon(sigma, sensitivity=1.0, delta=delta, kappa=kappa) == pytest.approx(res.fun, rel=1e-9)
    # and no alpha on a grid beats it
    grid = 1 + np.logspace(-4, 4, 20001)
    assert np.min(c * grid**2 / (grid - 1) + math.log(1 / delta) / (grid - 1)) >= gg_epsilon(
        sigma, sensitivity=1.0, delta=delta, kappa=kappa) * (1 - 1e-12)


@pytest.mark.parametrize(("eps", "delta", "kappa"), [(0.1, 1e-5, 1.0), (1.0, 1e-5, 6.0), (8.0, 1e-9, 2.0)])
def test_gg_sigma_exact_meets_target_and_matches_brentq(eps, delta, kappa):
    s = gg_sigma_exact(1.3, epsilon=eps, delta=delta, kappa=kappa)
    assert gg_epsilon(s, sensitivity=1.3, delta=delta, kappa=kappa) <= eps
    assert gg_epsilon(s, sensitivity=1.3, delta=delta, kappa=kappa) == pytest.approx(eps, rel=1e-12)
    root = optimize.brentq(
        lambda sg: gg_epsilon(sg, sensitivity=1.3, delta=delta, kappa=kappa) - eps, 1e-6, 1e6, xtol=1e-14, rtol=1e-15
    )
    assert s == pytest.approx(root, rel=1e-10)
    assert s > gg_sigma(1.3, epsilon=eps, delta=delta, kappa=kappa)


# ---------------------------------------------------------------------------------------------------------
# Goodness of fit: Laplace, Gaussian, GG
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.statistical
def test_laplace_ks():
    out = laplace_mechanism(np.array([3.0, -1.0]), sensitivity=2.0, epsilon=0.5, rng=rng(1), size=20000)
    assert out.shape == (20000, 2)
    z = (out - np.array([3.0, -1.0])) / 4.0
    assert stats.kstest(z.ravel(), "laplace").pvalue > ALPHA


@pytest.mark.statistical
def test_gaussian_ks():
    out = gaussian_mechanism(5.0, sigma=2.5, rng=rng(2), size=30000)
    assert out.shape == (30000,)
    assert stats.kstest((out - 5.0) / 2.5, "norm").pvalue > ALPHA


GG_CASES = [(d, q) for d in (2, 50, 1000) for q in (1.5, 2.0, 4.0, "ln")]


@pytest.mark.statistical
@pytest.mark.parametrize(("d", "q"), GG_CASES)
def test_gg_radius_is_chi2(d, q):
    qq = math.log(d) if q == "ln" else q
    if qq < 1:  # ln 2 < 1: use q = 1 (the sampler requires q >= 1)
        qq = 1.0
    n = 2000 if d == 1000 else 5000
    z = generalized_gaussian_noise(d, q=qq, sigma=0.7, rng=rng(d * 10 + int(10 * qq)), size=n)
    assert z.shape == (n, d)
    t = lq_norm_rows(z, qq) ** 2 / 0.7**2
    # 12 cases at level 1e-3 each: family-wise false-alarm <= 1.2e-2
    assert stats.kstest(t, stats.chi2(d).cdf).pvalue > ALPHA


@pytest.mark.statistical
@pytest.mark.parametrize("q", [1.0, math.inf, 60.0])
def test_gg_radius_is_chi2_extreme_q(q):
    z = generalized_gaussian_noise(20, q=q, sigma=1.0, rng=rng(7), size=5000)
    assert np.all(np.isfinite(z))
    t = lq_norm_rows(z, q) ** 2
    assert stats.kstest(t, stats.chi2(20).cdf).pvalue > ALPHA


@pytest.mark.statistical
def test_gg_huge_q_does_not_underflow():
    # Gamma(1/q)^(1/q) would underflow to 0 for about half the draws at q = 1e4; the sampler uses
    # Gamma(1 + 1/q)^(1/q) * U instead. ||z||_inf and ||z||_q differ by a factor <= 5^(1/q) = 1.00016 here.
    z = generalized_gaussian_noise(5, q=1e4, sigma=1.0, rng=rng(8), size=5000)
    assert np.all(np.isfinite(z)) and np.mean(z == 0.0) == 0.0
    assert stats.kstest(np.abs(z).max(axis=1) ** 2, stats.chi2(5).cdf).pvalue > ALPHA


def _gg_marginal_cdf(q: float, sigma: float, ts: np.ndarray) -> np.ndarray:
    """CDF of Z_1 for the d = 2 GG density, by numerical integration of the (unnormalized) density."""

    def dens(y: float, x: float) -> float:
        r = (abs(x) ** q + abs(y) ** q) ** (1 / q) if math.isfinite(q) else max(abs(x), abs(y))
        return math.exp(-(r**2) / (2 * sigma**2))

    def marginal(x: float) -> float:
        # split at |y| = |x|, where the q = inf density has a kink
        ax = abs(x)
        inner = integrate.quad(dens, 0, ax, args=(x,), epsabs=1e-13, epsrel=1e-11)[0] if ax > 0 else 0.0
        return 2 * (inner + integrate.quad(dens, ax, np.inf, args=(x,), epsabs=1e-13, epsrel=1e-11)[0])

    half = integrate.quad(marginal, 0, np.inf, epsabs=1e-12, epsrel=1e-10, limit=200)[0]
    out = []
    for t in ts:  # symmetric marginal: F(t) = 1/2 + sign(t) * int_0^|t| m / (2 half)
        part = integrate.quad(marginal, 0, abs(t), epsabs=1e-12, epsrel=1e-10, limit=200)[0]
        out.append(0.5 + math.copysign(part, t) / (2 * half))
    return np.asarray(out)


@pytest.mark.statistical
@pytest.mark.parametrize("q", [1.5, 4.0, math.inf])
def test_gg_marginal_d2_dkw(q):
    # DKW: P(sup_t |F_n(t) - F(t)| > e) <= 2 exp(-2 n e^2); e chosen for level ALPHA. Evaluating on a grid
    # only lowers the supremum, so the level still holds.
    n, sigma = 40000, 1.3
    z = generalized_gaussian_noise(2, q=q, sigma=sigma, rng=rng(11), size=n)
    ts = np.linspace(-3.5, 3.5, 29) * sigma
    cdf = _gg_marginal_cdf(q, sigma, ts)
    band = math.sqrt(math.log(2 / ALPHA) / (2 * n))
    emp = np.searchsorted(np.sort(z[:, 0]), ts, side="right") / n
    assert np.max(np.abs(emp - cdf)) < band
    # power: the same band rejects the l_2 (Gaussian) marginal with the same sigma
    if q != 2.0:
        zg = generalized_gaussian_noise(2, q=2.0, sigma=sigma, rng=rng(12), size=n)
        emp_g = np.searchsorted(np.sort(zg[:, 0]), ts, side="right") / n
        assert np.max(np.abs(emp_g - cdf)) > band


def test_gg_mean_square_norm_is_d_sigma2():
    z = generalized_gaussian_noise(200, q=4.0, sigma=0.5, rng=rng(3), size=4000)
    m = np.mean(lq_norm_rows(z, 4.0) ** 2)
    # sd of chi2_200 / 200 over 4000 draws: sqrt(400)/200/sqrt(4000) = 1.6e-3 -> 5 sd band
    assert m / (200 * 0.25) == pytest.approx(1.0, abs=8e-3)


def test_gg_mechanism_adds_value():
    v = np.arange(5.0)
    a = generalized_gaussian_mechanism(v, q=3.0, sigma=1.0, rng=rng(4), size=3)
    b = generalized_gaussian_noise(5, q=3.0, sigma=1.0, rng=rng(4), size=3)
    np.testing.assert_array_equal(a, v + b)
    assert generalized_gaussian_mechanism(v, q=3.0, sigma=1.0, rng=rng(4)).shape == (5,)


# ---------------------------------------------------------------------------------------------------------
# Exponential mechanism and categorical sampling (Spec P4)
# ---------------------------------------------------------------------------------------------------------
def _chisq_p(counts: np.ndarray, probs: np.ndarray) -> float:
    n = counts.sum()
    return float(stats.chisquare(counts, probs / probs.sum() * n).pvalue)


def test_em_log_probs_exact_values():
    lp = exponential_mechanism_log_probs(np.array([0.0, 1.0, 3.0]), sensitivity=2.0, epsilon=1.0)
    w = np.exp(np.array([0.0, 0.25, 0.75]))
    np.testing.assert_allclose(np.exp(lp), w / w.sum(), rtol=1e-14)
    lpm = exponential_mechanism_log_probs(np.array([0.0, 1.0, 3.0]), sensitivity=2.0, epsilon=1.0, monotone=True)
    w = np.exp(np.array([0.0, 0.5, 1.5]))
    np.testing.assert_allclose(np.exp(lpm), w / w.sum(), rtol=1e-14)


def test_em_log_probs_privacy_map():
    # eps-DP: for neighbouring score vectors (|u - u'|_inf <= Delta), |log P(i) - log P'(i)| <= eps.
    g = rng(5)
    for monotone in (False, True):
        for _ in range(50):
            u = g.normal(0, 10, 30)
            shift = g.uniform(-1, 1, 30) if not monotone else g.uniform(0, 1) * np.ones(30) * g.uniform(0, 1, 30)
            lp = exponential_mechanism_log_probs(u, sensitivity=1.0, epsilon=0.7, monotone=monotone)
            lp2 = exponential_mechanism_log_probs(u + shift, sensitivity=1.0, epsilon=0.7, monotone=monotone)
            assert np.max(np.abs(lp - lp2)) <= 0.7 + 1e-12


@pytest.mark.parametrize("offset", [1e12, -1e12, 0.0])
def test_em_log_probs_huge_scores_are_exact(offset):
    u = offset + np.array([0.0, 1.0, 2.0, 5.0])
    lp = exponential_mechanism_log_probs(u, sensitivity=1.0, epsilon=2.0)
    w = np.exp(np.array([0.0, 1.0, 2.0, 5.0]))
    np.testing.assert_allclose(np.exp(lp), w / w.sum(), rtol=1e-12)
    assert np.all(np.isfinite(lp))


@pytest.mark.statistical
@pytest.mark.parametrize("offset", [1e12, -1e12])
def test_em_chisquare_huge_scores(offset):
    steps = np.arange(10.0)
    u = offset + 2.0 * steps  # exact in float64 at 1e12 (ulp 1.2e-4)
    draws = exponential_mechanism(u, sensitivity=1.0, epsilon=0.5, rng=rng(6), size=100000)
    counts = np.bincount(draws, minlength=10)
    probs = np.exp(0.5 * steps)  # eps * u / (2 Delta) = 0.5 * step
    assert _chisq_p(counts, probs) > ALPHA


@pytest.mark.statistical
def test_em_chisquare_million_candidates():
    j = 1_000_000
    g = rng(8)
    u = 1e12 + np.round(g.normal(0, 4.0, j), 3)
    eps, sens = 1.0, 1.0
    n = 200_000
    draws = exponential_mechanism(u, sensitivity=sens, epsilon=eps, rng=rng(9), size=n)
    assert draws.shape == (n,)
    # exact probabilities computed independently (long double softmax of exact score differences)
    diff = (u - u.max()).astype(np.longdouble)
    w = np.exp(diff * eps / (2 * sens))
    p = (w / w.sum()).astype(np.float64)
    # aggregate candidates into 40 bins of roughly equal probability (by sorting on p)
    order = np.argsort(p)
    cum = np.cumsum(p[order])
    bin_of_sorted = np.minimum((cum * 40).astype(int), 39)
    bin_of = np.empty(j, dtype=int)
    bin_of[order] = bin_of_sorted
    expected = np.bincount(bin_of, weights=p, minlength=40)
    counts = np.bincount(bin_of[draws], minlength=40)
    keep = expected * n > 5
    assert keep.sum() >= 30
    assert _chisq_p(counts[keep], expected[keep]) > ALPHA


@pytest.mark.statistical
def test_sample_categorical_log_with_neg_inf_and_batch():
    lw = np.array([0.0, -np.inf, np.log(3.0), -np.inf, np.log(0.5), -1e300])
    draws = sample_categorical_log(lw, rng=rng(10), size=60000)
    counts = np.bincount(draws, minlength=6)
    assert counts[1] == 0 and counts[3] == 0 and counts[5] == 0  # zero-probability bins never drawn
    assert _chisq_p(counts[[0, 2, 4]], np.array([1.0, 3.0, 0.5])) > ALPHA
    # batch: one distribution per row, K draws each; a -inf row entry at the end exercises the guard
    lw2 = np.array([[0.0, 1.0, 2.0, -np.inf], [5.0, 5.0, 5.0, 5.0], [-1e12, -1e12 + 1, -np.inf, -np.inf]])
    d2 = sample_categorical_log(lw2, rng=rng(11), size=40000)
    assert d2.shape == (3, 40000)
    for row in range(3):
        finite = np.isfinite(lw2[row])
        c = np.bincount(d2[row], minlength=4)
        assert np.all(c[~finite] == 0)
        p = np.exp(lw2[row][finite] - lw2[row][finite].max())
        assert _chisq_p(c[finite], p) > ALPHA  # 4 tests in this function: family level 4e-3
    assert sample_categorical_log(lw2, rng=rng(11)).shape == (3,)


class _UniformOneGenerator(np.random.Generator):
    """A generator whose uniforms are exactly 1.0 (outside [0, 1)): exercises the last-bin guard."""

    def random(self, size=None, dtype=np.float64, out=None):  # noqa: ARG002
        return np.ones(size)


def test_sample_categorical_last_bin_guard():
    # With U * total >= total (impossible for rng.random() < 1 in float64, but guarded anyway) the draw must
    # go to the last bin of positive weight, never to a trailing zero-probability bin.
    g = _UniformOneGenerator(np.random.PCG64(0))
    out = sample_categorical_log(np.array([0.0, 1.0, 0.0, -np.inf, -np.inf]), rng=g, size=4)
    np.testing.assert_array_equal(out, [2, 2, 2, 2])
    out2 = sample_categorical_log(np.array([[0.0, -np.inf, -np.inf], [0.0, 0.0, 0.0]]), rng=g, size=2)
    np.testing.assert_array_equal(out2, [[0, 0], [2, 2]])


def test_sample_categorical_single_and_degenerate():
    assert sample_categorical_log(np.array([-np.inf, 2.0, -np.inf]), rng=rng(0)) == 1
    assert isinstance(sample_categorical_log(np.array([0.0, 0.0]), rng=rng(0)), int)
    out = sample_categorical_log(np.array([7.0]), rng=rng(0), size=5)
    np.testing.assert_array_equal(out, np.zeros(5, dtype=np.int64))


def test_em_utility_tail_bound_dwork_roth_3_11():
    # P[OPT - u >= (2 Delta/eps)(ln J + t)] <= e^-t; check with an exact binomial CI (level ALPHA).
    j, eps, sens, t = 1000, 1.0, 1.0, 1.0
    u = np.zeros(j)
    u[0] = 2 * sens / eps * math.log(j - 1)  # one best candidate; the rest at a gap where P(best) = 1/2
    u = u - u[0]
    draws = exponential_mechanism(u, sensitivity=sens, epsilon=eps, rng=rng(12), size=20000)
    gap = -u[draws]
    thr = 2 * sens / eps * (math.log(j) + t)
    k = int(np.sum(gap >= thr))
    assert stats.binomtest(k, draws.size).proportion_ci(1 - ALPHA, method="exact").low <= math.exp(-t)
    # exact expected gap for this instance is half the gap (P(best) = 1/2)
    assert gap.mean() == pytest.approx(-u[1] / 2, rel=0.03)


# ---------------------------------------------------------------------------------------------------------
# Report noisy max / min (Spec P2)
# ---------------------------------------------------------------------------------------------------------
def test_rnm_large_gaps_return_argmax():
    g = rng(13)
    scores = g.permutation(np.arange(50.0)) * 1000.0
    best, worst = int(np.argmax(scores)), int(np.argmin(scores))
    for noise in ("laplace", "gumbel"):
        out = report_noisy_max(scores, sensitivity=1.0, epsilon=1.0, rng=g, noise=noise, size=500)
        assert np.all(out == best)
        out = report_noisy_min(scores, sensitivity=1.0, epsilon=1.0, rng=g, noise=noise, size=500)
        assert np.all(out == worst)
        assert report_noisy_max(scores, sensitivity=1.0, epsilon=1.0, rng=g, noise=noise) == best
    batch = np.stack([scores, -scores, np.roll(scores, 3)])
    np.testing.assert_array_equal(
        report_noisy_max(batch, sensitivity=1.0, epsilon=1.0, rng=g),
        [best, worst, (best + 3) % 50],
    )


def test_rnm_huge_scores_keep_resolution():
    # Noise scale 2e-3 on scores 1e12 apart by 1: selection must be near-deterministic.
    scores = 1e12 + np.array([0.0, 1.0, 0.0])
    out = report_noisy_max(scores, sensitivity=1e-3, epsilon=1.0, rng=rng(14), size=1000)
    assert np.all(out == 1)


@pytest.mark.statistical
@pytest.mark.parametrize("monotone", [False, True])
def test_rnm_laplace_two_candidates_exact_law(monotone):
    # J = 2, scores (0, a): P(select 1) = P(Z1 - Z2 < a) with Z Laplace(b); the difference of two
    # Laplace(b) has CDF 1 - exp(-x/b)(1 + x/(2b))/2 for x >= 0.
    sens, eps, a = 1.0, 1.0, 1.5
    b = sens / eps if monotone else 2 * sens / eps
    p1 = 1 - math.exp(-a / b) * (1 + a / (2 * b)) / 2
    out = report_noisy_max(np.array([0.0, a]), sensitivity=sens, epsilon=eps, rng=rng(15), monotone=monotone,
                           size=40000)
    assert stats.binomtest(int(out.sum()), out.size, p1).pvalue > ALPHA


@pytest.mark.statistical
def test_rnm_gumbel_equals_exponential_mechanism():
    u = np.array([0.0, 0.3, 1.0, 2.0, -1.0, 0.5])
    n = 60000
    lp = exponential_mechanism_log_probs(u, sensitivity=0.5, epsilon=1.2)
    out = report_noisy_max(u, sensitivity=0.5, epsilon=1.2, rng=rng(16), noise="gumbel", size=n)
    assert _chisq_p(np.bincount(out, minlength=6), np.exp(lp)) > ALPHA
    lpm = exponential_mechanism_log_probs(-u, sensitivity=0.5, epsilon=1.2, monotone=True)
    outm = report_noisy_min(u, sensitivity=0.5, epsilon=1.2, rng=rng(17), noise="gumbel", monotone=True, size=n)
    assert _chisq_p(np.bincount(outm, minlength=6), np.exp(lpm)) > ALPHA


def test_rnm_accuracy_within_bound():
    # E[OPT - u] <= (4 Delta/eps)(ln J + 1) for Laplace RNM (documented constant)
    j, sens, eps = 2000, 1.0, 0.5
    u = np.zeros(j)
    u[1:] = -2 * sens / eps * math.log(j)
    out = report_noisy_max(u, sensitivity=sens, epsilon=eps, rng=rng(18), size=3000)
    assert -u[out].mean() <= 4 * sens / eps * (math.log(j) + 1)


def test_rnm_batch_shapes():
    s = np.zeros((4, 7))
    assert report_noisy_max(s, sensitivity=1, epsilon=1, rng=rng(0)).shape == (4,)
    assert report_noisy_max(s, sensitivity=1, epsilon=1, rng=rng(0), size=3).shape == (4, 3)
    assert exponential_mechanism(s, sensitivity=1, epsilon=1, rng=rng(0), size=3).shape == (4, 3)
    assert isinstance(exponential_mechanism(s[0], sensitivity=1, epsilon=1, rng=rng(0)), int)


def test_rnm_chunking_does_not_change_the_law(monkeypatch):
    # With a tiny chunk the kernel loops many times; numpy fills noise arrays in row-major order from one
    # stream, so the result must be bit-identical to the unchunked run.
    s = np.arange(12.0).reshape(3, 4)
    a = report_noisy_max(s, sensitivity=1, epsilon=0.1, rng=rng(19), size=5)
    monkeypatch.setattr(mech, "_CHUNK_ENTRIES", 8)
    b = report_noisy_max(s, sensitivity=1, epsilon=0.1, rng=rng(19), size=5)
    assert a.shape == b.shape == (3, 5)
    np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------------------------------------------
# Determinism
# ---------------------------------------------------------------------------------------------------------
def test_determinism_same_seed_bit_identical():
    calls = [
        lambda g: laplace_mechanism(np.ones(3), sensitivity=1, epsilon=1, rng=g, size=4),
        lambda g: gaussian_mechanism(np.ones(3), sigma=1, rng=g, size=4),
        lambda g: generalized_gaussian_noise(6, q=3.3, sigma=2, rng=g, size=4),
        lambda g: generalized_gaussian_noise(6, q=math.inf, sigma=2, rng=g),
        lambda g: report_noisy_max(np.arange(9.0), sensitivity=1, epsilon=1, rng=g, size=4),
        lambda g: report_noisy_max(np.arange(9.0), sensitivity=1, epsilon=1, rng=g, noise="gumbel", size=4),
        lambda g: exponential_mechanism(np.arange(9.0), sensitivity=1, epsilon=1, rng=g, size=40),
        lambda g: sample_categorical_log(np.zeros((3, 9)), rng=g, size=4),
    ]
    for f in calls:
        a, b, c = f(rng(123)), f(rng(123)), f(rng(124))
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c)


# ---------------------------------------------------------------------------------------------------------
# Invalid input: ValueError naming the parameter
# ---------------------------------------------------------------------------------------------------------
G = np.random.default_rng(0)
BAD_CALLS = [
    (lambda: laplace_mechanism(1.0, sensitivity=1, epsilon=0, rng=G), "epsilon"),
    (lambda: laplace_mechanism(1.0, sensitivity=-1, epsilon=1, rng=G), "sensitivity"),
    (lambda: laplace_mechanism(np.nan, sensitivity=1, epsilon=1, rng=G), "value"),
    (lambda: laplace_mechanism(np.ones((2, 2)), sensitivity=1, epsilon=1, rng=G), "value"),
    (lambda: laplace_mechanism(1.0, sensitivity=1, epsilon=1, rng=G, size=0), "size"),
    (lambda: laplace_mechanism(1.0, sensitivity=1, epsilon=1, rng=0), "rng"),
    (lambda: laplace_mechanism(1.0, sensitivity=1, epsilon=float("nan"), rng=G), "epsilon"),
    (lambda: gaussian_sigma_classic(1, epsilon=1.0, delta=1e-5), "epsilon"),
    (lambda: gaussian_sigma_classic(1, epsilon=0.5, delta=0.0), "delta"),
    (lambda: gaussian_sigma_classic(1, epsilon=0.5, delta=1.0), "delta"),
    (lambda: gaussian_delta_analytic(0.0, sensitivity=1, epsilon=1), "sigma"),
    (lambda: gaussian_delta_analytic(1.0, sensitivity=1, epsilon=-0.1), "epsilon"),
    (lambda: gaussian_epsilon_analytic(1.0, sensitivity=1, delta=1.5), "delta"),
    (lambda: gaussian_sigma_analytic(0.0, epsilon=1, delta=1e-5), "sensitivity"),
    (lambda: gaussian_sigma_analytic(1.0, epsilon=-2, delta=1e-5), "epsilon"),
    (lambda: gaussian_mechanism(1.0, sigma=-1, rng=G), "sigma"),
    (lambda: gaussian_mechanism(1.0, sigma=1, rng=G, size=2.5), "size"),
    (lambda: report_noisy_max(np.zeros((2, 2, 2)), sensitivity=1, epsilon=1, rng=G), "scores"),
    (lambda: report_noisy_max(np.array([1.0, np.inf]), sensitivity=1, epsilon=1, rng=G), "scores"),
    (lambda: report_noisy_max(np.zeros(3), sensitivity=1, epsilon=1, rng=G, noise="cauchy"), "noise"),
    (lambda: report_noisy_min(np.zeros(3), sensitivity=1, epsilon=0, rng=G), "epsilon"),
    (lambda: exponential_mechanism(np.zeros(3), sensitivity=0, epsilon=1, rng=G), "sensitivity"),
    (lambda: exponential_mechanism_log_probs(np.array([]), sensitivity=1, epsilon=1), "scores"),
    (lambda: exponential_mechanism(np.zeros(3), sensitivity=1, epsilon=1, rng=G, size=-1), "size"),
    (lambda: sample_categorical_log(np.array([np.nan, 0.0]), rng=G), "log_weights"),
    (lambda: sample_categorical_log(np.array([np.inf, 0.0]), rng=G), "log_weights"),
    (lambda: sample_categorical_log(np.array([-np.inf, -np.inf]), rng=G), "log_weights"),
    (lambda: sample_categorical_log(np.zeros((2, 0)), rng=G), "log_weights"),
    (lambda: generalized_gaussian_noise(3, q=0.5, sigma=1, rng=G), "q"),
    (lambda: generalized_gaussian_noise(3, q=float("nan"), sigma=1, rng=G), "q"),
    (lambda: generalized_gaussian_noise(0, q=2, sigma=1, rng=G), "d"),
    (lambda: generalized_gaussian_noise(3, q=2, sigma=0, rng=G), "sigma"),
    (lambda: generalized_gaussian_mechanism(1.0, q=2, sigma=1, rng=G), "value"),
    (lambda: gg_sigma(1, epsilon=1, delta=0.0, kappa=1), "delta"),
    (lambda: gg_sigma(1, epsilon=1, delta=1e-5, kappa=0), "kappa"),
    (lambda: gg_epsilon(1, sensitivity=1, delta=1e-5, kappa=-1), "kappa"),
    (lambda: gg_epsilon(-1, sensitivity=1, delta=1e-5, kappa=1), "sigma"),
    (lambda: gg_sigma_exact(1, epsilon=float("inf"), delta=1e-5, kappa=1), "epsilon"),
]


@pytest.mark.parametrize(("call", "param"), BAD_CALLS, ids=[f"{i}-{p}" for i, (_, p) in enumerate(BAD_CALLS)])
def test_invalid_input_names_parameter(call, param):
    with pytest.raises(ValueError, match=rf"\b{param}\b"):
        call()


def test_at_least_twenty_invalid_calls():
    assert len(BAD_CALLS) >= 20


# bad input that was once accepted: each must raise naming the parameter -------------------------------------
_KAPPA_MSG = r"kappa must lie in \[1, inf\) \(the regularity constant.*got 0\.5"


def test_gg_sigma_rejects_kappa_below_one() -> None:
    with pytest.raises(ValueError, match=_KAPPA_MSG):
        gg_sigma(1.0, epsilon=1.0, delta=1e-5, kappa=0.5)


def test_gg_sigma_exact_rejects_kappa_below_one() -> None:
    # returned 3.54, 0.7x the smallest valid sigma (kappa = 1)
    with pytest.raises(ValueError, match=_KAPPA_MSG):
        gg_sigma_exact(1.0, epsilon=1.0, delta=1e-5, kappa=0.5)


def test_gg_epsilon_rejects_kappa_below_one() -> None:
    with pytest.raises(ValueError, match=_KAPPA_MSG):
        gg_epsilon(5.0, sensitivity=1.0, delta=1e-5, kappa=0.5)


# bad input that was once accepted: each must raise naming the parameter -------------------------------------
def test_monotone_must_be_a_real_bool() -> None:
    # "yes" was taken as True
    with pytest.raises(TypeError, match=r"monotone must be a bool \(True or False\), got 'yes'"):
        exponential_mechanism_log_probs([0.0, 1.0], sensitivity=1.0, epsilon=1.0, monotone="yes")


# bad input that was once accepted: each must raise naming the parameter -------------------------------------
def test_gaussian_helpers_are_keyword_only() -> None:
    sigma = gaussian_sigma_analytic(1.0, epsilon=1.0, delta=1e-5)
    assert gaussian_epsilon_analytic(sigma, sensitivity=1.0, delta=1e-5) <= 1.0
    # the argument order of gaussian_sigma_analytic passed to gaussian_epsilon_analytic returned 22.2 silently
    with pytest.raises(TypeError, match="positional argument"):
        gaussian_epsilon_analytic(1.0, 3.73, 1e-5)  # type: ignore[misc]
