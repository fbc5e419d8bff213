"""Tests of the whole trade-off-curve audit (:func:`dpsco_lib.privacy.audit.tradeoff_audit`).

On exact Gaussian samples N(0, 1) (world 0) and N(mu, 1) (world 1), the pair's trade-off curve is exactly
G_mu, so a valid audit at level 1 - ALPHA exceeds mu in at most a binomial share of the seeds, and a tight
one recovers most of mu at a few thousand samples per world.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpsco_lib.privacy import audit as A
from dpsco_lib.privacy.accounting.gdp import gdp_epsilon

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
