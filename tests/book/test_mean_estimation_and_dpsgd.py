"""Tests of dpsco_book.mean_estimation_and_dpsgd (Spec D1, D4 experiment helpers of notebook 14)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsco_book import mean_estimation_and_dpsgd as lc
from dpsco_book.privacy_rule import delta_for_n


def test_replace_one_target_inverts_the_group_of_two_conversion():
    e, d = lc.replace_one_target(1.0, 1e-5)
    assert e == 0.5
    assert 2 * e == 1.0 and (1 + math.exp(e)) * d == pytest.approx(1e-5, rel=1e-12)
    with pytest.raises(ValueError, match="delta"):
        lc.replace_one_target(1.0, 0.0)


def test_replace_one_certificate_of_a_calibrated_dp_sgd_run_meets_the_target():
    runs = lc.d4_calibration_runs(400, 5, 0.2, rng=np.random.default_rng(0))
    rows = lc.replace_one_rows(runs, 1.0, delta_for_n(400))
    for row in rows:
        assert row["relation"] == "add_remove"
        assert row["certified eps"] <= 0.5 * (1 + 1e-9)
        assert 0.5 < row["replace-one eps"] <= 1.0 * (1 + 1e-9)
    with pytest.raises(ValueError, match="add_remove"):
        lc.replace_one_certificate(object(), 1e-5)


def test_local_slope_and_worst_values():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    assert lc.local_slope(x, 3 * x**-0.75) == pytest.approx(-0.75)
    recs = [{"n": n, "g": g, "y": y} for n in (1, 2) for g, y in (("a", 1.0 * n), ("b", 2.0 / n))]
    xs, vals = lc.worst_values(recs, "n", "y", "g")
    assert xs == [1, 2] and vals == [[2.0], [2.0]]


def test_d1_exponent_range_brackets_the_pure_exponent():
    lo, hi = lc.d1_exponent_range([16, 64, 256], vary="d", fixed=2000, method="laplace")
    assert lo < hi == 1.5
    lo, hi = lc.d1_exponent_range([500, 4000, 32000], vary="n", fixed=64, method="gaussian")
    assert lo == -1.0 and -1.0 < hi < -0.5
    with pytest.raises(ValueError, match="vary"):
        lc.d1_exponent_range([1, 2], vary="x", fixed=2, method="laplace")


@pytest.mark.statistical
def test_d1_error_matches_its_exact_rms():
    """200 replicates: the mean squared error is within 25% of the exact RMS^2 (chi-square-like, relative s.e. ~ 10%
    at d = 16; false alarm below 1e-3)."""
    rng = np.random.default_rng(3)
    for m in ("laplace", "gaussian"):
        err = [lc.d1_error_task(rng=rng, d=16, n=500, method=m, amp=0.5)["error"] for _ in range(200)]
        pred = lc.d1_predicted_rms(16, 500, m, 0.5)
        assert np.mean(np.square(err)) == pytest.approx(pred**2, rel=0.25)
    with pytest.raises(ValueError, match="method"):
        lc.d1_error_task(rng=rng, d=2, n=10, method="x", amp=0.0)


def test_d4_bound_and_step_size_are_consistent():
    sigma = 2.0
    eta = lc.d4_step_size(1000, 10, 0.04, 25, sigma)
    assert lc.d4_bound(1000, 10, sigma) == pytest.approx(2.0 * 2.0 / (eta * 25), rel=1e-12)


def test_d4_exponent_range_lies_between_the_two_regimes():
    ns = [1000, 2000, 4000, 8000]
    lo, hi = lc.d4_exponent_range(ns, 400, [1.5] * 4)
    assert lo == pytest.approx(-1.0) and -1.0 < hi < -0.5
    # privacy-dominated (huge d) -> the bound's slope tends to -1; tiny d -> -1/2
    assert lc.d4_exponent_range(ns, 10**8, [1.5] * 4)[1] == pytest.approx(-1.0, abs=1e-3)
    assert lc.d4_exponent_range(ns, 1, [1.5] * 4)[1] > -0.52
    with pytest.raises(ValueError, match="sigmas"):
        lc.d4_exponent_range(ns, 400, [1.5] * 3)
    # the bound's own slope (sampling factor 1) lies inside the range of factor 4
    sig = [1.5, 1.6, 1.7, 1.8]
    lo4, hi4 = lc.d4_exponent_range(ns, 400, sig)
    bound_slope = lc.local_slope(ns, [lc.d4_bound(n, 400, s) for n, s in zip(ns, sig, strict=True)])
    assert lc.d4_exponent_range(ns, 400, sig, sampling_factor=1.0)[1] == pytest.approx(bound_slope)
    assert lo4 < bound_slope < hi4 < -0.5
    with pytest.raises(ValueError, match="sampling_factor"):
        lc.d4_exponent_range(ns, 400, sig, sampling_factor=0.5)


def test_d4_noise_multiplier_is_the_task_calibration():
    from dpsco_lib.algorithms.dp_sgd import dp_sgd_noise_multiplier

    eps_ar, d_ar = lc.replace_one_target(1.0, delta_for_n(1000))
    want = dp_sgd_noise_multiplier(eps_ar, delta=d_ar, sampling_rate=1 / 25, steps=25, accountant="rdp")
    assert lc.d4_noise_multiplier(1000, accountant="rdp") == want


def test_d4_claims_accept_the_bound_rate_and_reject_the_controls():
    ns, d, sig = [1000, 2000, 4000, 8000], 400, [1.5, 1.6, 1.7, 1.8]
    rate, bound = lc.d4_claims(ns, d, sig)
    lo, hi = rate.bounds
    assert rate.neighbour == -0.5 and rate.tolerance <= rate.gap / 2 + 1e-12
    assert hi + rate.tolerance < -0.5  # the window excludes the non-private rate
    assert bound.constant == 1.0 and bound.bound(2000) == lc.d4_bound(2000, d, 1.6)
    rng = np.random.default_rng(0)
    x, y, fam, triv = [], [], [], []
    for n, s in zip(ns, sig, strict=True):
        for g in (0.01, 0.1, 1.0):
            for _ in range(6):
                x.append(n)
                y.append(min(g, 0.3 * lc.d4_bound(n, d, s)) * math.exp(0.05 * rng.standard_normal()))
                fam.append(g)
                triv.append(g / math.sqrt(2))
    out = rate.evaluate(x, y, family=fam, trivial=triv, rng=rng, required=0.95, n_boot=300, n_resamples=50)
    assert out.accepted and out.passed
    ob = bound.evaluate(x, y, family=fam, trivial=triv, rng=rng, required=0.95, n_resamples=50)
    assert ob.accepted and ob.passed and ob.power_trivial == 1.0
    # the non-private rate n^-1/2 fails the rate claim; three times the bound fails the bound claim
    slow = [min(f, 0.3 * n**-0.5) for n, f in zip(x, fam, strict=True)]
    assert not rate.evaluate(x, slow, family=fam, rng=rng, required=0.95, n_boot=300, n_resamples=50).accepted
    assert not bound.evaluate(x, [3.5 * v for v in y], family=fam, rng=rng, required=0.95, n_resamples=50).accepted
