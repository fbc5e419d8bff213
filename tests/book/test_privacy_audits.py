"""Tests of the book's white-box privacy audits (``book/dpsco_book/privacy_audits.py``), smoke-sized.

Statistical checks state their false-alarm probability: every audited lower bound holds with probability at
least ``1 - alpha`` per seed (simultaneous band of :func:`dpsco_lib.privacy.audit.tradeoff_audit`).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpsco_book import privacy_audits as pa
from dpsco_lib.algorithms.registry import private_algorithms

GAUSSIAN = ("P1 Gaussian mechanism", "S2 noisy SGD", "D4 DP-SGD", "R2 noisy GD", "Z2 output perturbation")


FAST = tuple(k for k in pa.AUDIT_KEYS if k != "D4 DP-SGD subsampled")  # its PLD calibration takes ~15 s


@pytest.fixture(scope="module")
def designs() -> dict[str, pa.AuditDesign]:
    return {d.key: d for d in pa.designs(keys=FAST)}


def test_every_design_certifies_epsilon_one_for_its_whole_run(designs):
    assert set(designs) == set(FAST)
    for d in designs.values():
        assert 0.9 <= d.claimed_epsilon <= 1.0 + 1e-9, (d.key, d.claimed_epsilon)
        assert d.delta == pytest.approx(d.n ** -1.1)


@pytest.mark.parametrize("key", GAUSSIAN)
def test_gaussian_certificates_are_exact_on_the_audited_pair(designs, key):
    """The pair's own epsilon (Monte Carlo of the exact privacy loss) equals the certificate: the canary,
    the loss and the statistic realize the worst case the accountant charges for."""
    eps = pa.pair_epsilon(designs[key], np.random.default_rng(3), samples=200_000)
    assert eps == pytest.approx(designs[key].claimed_epsilon, abs=0.03)


def test_negative_control_honest_audits_stay_below_the_claim(designs):
    """Honest algorithms: lower bound <= claim. Per seed a bound exceeds the truth w.p. <= alpha = 0.01, so two
    or more of 20 seeds exceed it with probability <= 1.7% (binomial), for each algorithm."""
    alpha, seeds = 0.01, 20
    assert stats.binom.sf(1, seeds, alpha) < 0.02
    for key in (*GAUSSIAN, "F1 Poly-SFW", "G1 generalized Gaussian mechanism", "A1 private SMD saddle"):
        d = designs[key]
        over = 0
        for s in range(seeds if key in GAUSSIAN else 5):
            row, _ = pa.audit_design(d, 2000, np.random.default_rng(100 + s), alpha=alpha)
            over += row.epsilon_lower_bound > d.claimed_epsilon
        assert over <= 1, (key, over)


@pytest.mark.parametrize("key", GAUSSIAN)
def test_gaussian_audits_are_tight_and_catch_half_noise(designs, key):
    row, res = pa.audit_design(designs[key], 4000, np.random.default_rng(7))
    assert row.tightness >= 0.5, row
    assert row.caught and row.half_noise_epsilon_lower_bound > 2.0 * row.claimed_epsilon, row
    assert res.trials == (4000, 4000)


def test_poly_sfw_pair_shows_the_certificate_slack_and_half_noise_violates_it(designs):
    """Report-noisy-min steps composed as pure eps0 steps: on the worst pair the run's own epsilon is far below
    the certificate, and halving the Laplace scale makes the pair's epsilon exceed it."""
    d = designs["F1 Poly-SFW"]
    rng = np.random.default_rng(11)
    honest = pa.pair_epsilon(d, rng, samples=100_000)
    half = pa.pair_epsilon(d, rng, samples=100_000, noise_factor=pa.half_noise_variant(d.key))
    assert honest < 0.5 * d.claimed_epsilon < d.claimed_epsilon < half, (honest, half)
    row, _ = pa.audit_design(d, 4000, np.random.default_rng(12))
    assert row.epsilon_lower_bound >= 0.3 * honest, row  # assumption-free bound, smoke size
    assert row.quarter_noise_epsilon_lower_bound > d.claimed_epsilon, row


def test_gdp_conversion_is_not_used_where_it_overshoots(designs):
    """For randomized-response-like and GG releases the GDP conversion can exceed the pair's own epsilon
    (quarter-noise GG: about 1.9 against 1.75 at 50,000 runs); those rows report the assumption-free bound."""
    d = designs["G1 generalized Gaussian mechanism"]
    assert not d.gaussian_releases and not designs["F1 Poly-SFW"].gaussian_releases
    row, res = pa.audit_design(d, 4000, np.random.default_rng(13))
    assert row.epsilon_lower_bound == res.epsilon_lower_bound_direct <= res.epsilon_lower_bound
    pq = pa.pair_epsilon(d, np.random.default_rng(14), samples=100_000, noise_factor=0.25)
    assert row.quarter_noise_epsilon_lower_bound <= pq


def test_algorithm_1_audit_of_the_runners_own_draws_is_tight_and_catches_the_doubled_step(designs):
    """Algorithm 1's vertex draws (the runner's own, replayed for their exact likelihood ratio): the
    exponential-mechanism certificate is nearly attained and the doubled step is caught against the whole run."""
    d = designs["A1 private SMD saddle"]
    assert d.claimed_epsilon == pytest.approx(1.0, abs=1e-6)
    row, _ = pa.audit_design(d, 10_000, np.random.default_rng(21))
    assert 0.45 <= row.epsilon_lower_bound <= row.claimed_epsilon, row
    assert row.caught and row.half_noise_epsilon_lower_bound > 1.2, row


def test_subsampled_dp_sgd_certificate_is_exact_and_the_audit_tight():
    """Poisson-subsampled DP-SGD (q = 0.25, 16 steps): the PLD certificate equals the pair's own epsilon, the
    assumption-free bound reaches most of it, the half-noise copy is caught and no honest seed of five exceeds
    the claim (each w.p. <= alpha = 0.01)."""
    d = pa.design_for("D4 DP-SGD subsampled")
    assert pa.pair_epsilon(d, np.random.default_rng(31), samples=100_000) == pytest.approx(d.claimed_epsilon, abs=0.05)
    row, _ = pa.audit_design(d, 10_000, np.random.default_rng(32))
    assert row.tightness >= 0.6 and row.caught, row
    for s in range(5):
        honest, _ = pa.audit_design(d, 2000, np.random.default_rng(200 + s), alpha=0.01)
        assert honest.epsilon_lower_bound <= d.claimed_epsilon, honest


def test_registry_coverage_lists_every_private_algorithm():
    cov = pa.registry_coverage()
    assert [c["algorithm"] for c in cov] == [r.key for r in private_algorithms()]
    audited = {c["algorithm"] for c in cov if c["audited"]}
    assert all(c["through"] in audited for c in cov if c["through"])
    assert {"S2 noisy SGD", "D4 DP-SGD", "F1 Poly-SFW", "R2 noisy GD", "A1 private SMD saddle"} <= audited


def test_unknown_keys_are_refused():
    with pytest.raises(ValueError, match="record_key"):
        pa.half_noise_variant("Z9 nothing")
    with pytest.raises(ValueError, match="key"):
        pa.design_for("Z9 nothing")


def test_audit_table_rows_and_curves():
    rows, curves = pa.audit_table(1000, 5, keys=("S2 noisy SGD",))
    assert len(rows) == 1 and rows[0]["runs"] == 1000 and set(curves) == {"S2 noisy SGD"}
    c = curves["S2 noisy SGD"].curve
    assert np.all(c.fpr_upper >= c.fpr) and np.all(c.fnr_upper >= c.fnr)
