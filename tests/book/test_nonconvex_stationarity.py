"""Tests of dpsco_book.nonconvex_stationarity (the experiment module of notebook 07; Spec N1)."""

from __future__ import annotations

import numpy as np
import pytest


# ---------------------------------------------------------------------------------------------------------
# The experiment module of notebook 07 (dpsco_book.nonconvex_stationarity)
# ---------------------------------------------------------------------------------------------------------
def test_nonconvex_checks_family_and_tasks():
    from dpsco_book import nonconvex_stationarity as nc

    start = nc.start_values([0, 1])
    assert set(start) == {"fw", "prox"} and all(v > 0 for v in start["fw"].values())
    assert nc.smooth_member(1) is nc.smooth_member(1)  # cached
    with pytest.raises(ValueError, match="member"):
        nc.smooth_member(-1)
    rng = np.random.default_rng(3)
    r = nc.fw_task(rng=rng, n=400, member=0, epsilon=1.0, steps_constant=0.1)
    assert r["delta"] == pytest.approx(400 ** -1.1) and r["eps_certified"] <= 1.0 + 1e-9
    assert 0.0 <= r["gap_mean"] <= r["bound"]
    cells = [(10, 0, 0.3), (20, 0, 0.1), (20, 1, 0.2), (20, 1, 0.4)]
    recs = [{"n": n, "member": g, "gap_mean": v} for n, g, v in cells]
    x, vals = nc.values_by_n(recs, "gap_mean", 0)
    assert list(x) == [10.0, 20.0] and [list(v) for v in vals] == [[0.3], [0.1]]
    lr = nc.learning_ratio(recs, "gap_mean", {0: 1.0, 1: 1.0})
    assert lr == {"n": 20, "member": 1, "ratio": pytest.approx(0.3)}


def test_nonconvex_checks_calibration_pair_and_audit():
    from dpsco_book import nonconvex_stationarity as nc
    from dpsco_book.privacy_rule import delta_for_n
    from dpsco_book.tables import calibration_rows

    runs = nc.fw_calibration_runs(2000, epsilon=1.0, steps_constant=0.1, rng=np.random.default_rng(0))
    rows = calibration_rows(runs, delta_for_n(2000))
    assert [r["certified eps"] <= 1.0 + 1e-9 for r in rows] == [True, True]
    res, eps0, cert = nc.fw_audit(runs=200, alpha=1e-3, rng=np.random.default_rng(1), noise_multiplier=1.0)
    assert eps0 == pytest.approx(1.0) and cert == pytest.approx(2.0) and not res.violation


# ---------------------------------------------------------------------------------------------------------
# The declared claims of notebook 07: windows, controls, and claims that can fail
# ---------------------------------------------------------------------------------------------------------
NS = [8000, 16000, 32000, 64000, 128000]


def _records(exponent, *, key="gap_mean", reps=6, noise=0.02, seed=0):
    """Three members whose measure decays like n^exponent with lognormal noise (the worst member scaled 1.2)."""
    rng = np.random.default_rng(seed)
    return [{"n": n, "member": g, key: (1 + 0.1 * g) * 3 * n**exponent * float(np.exp(noise * rng.standard_normal()))}
            for n in NS for g in (0, 1, 2) for _ in range(reps)]


def test_windows_exclude_both_neighbouring_regimes():
    from dpsco_book import nonconvex_stationarity as nc

    claim = nc.fw_claim(8000)
    lo, hi = claim.bounds
    assert lo == pytest.approx(-1 / 3) and hi == pytest.approx(-1 / 3 + 1 / (6 * np.log(8000)))
    assert hi + claim.tolerance < -0.25 and lo - claim.tolerance > -0.4  # neither 1/4 nor 2/5 is admitted
    prox = nc.prox_claim(NS, epsilon=100.0)
    lo, hi = prox.bounds
    assert -0.3 < lo <= -0.25 <= hi < -0.2 and lo - prox.tolerance > -1 / 3  # the privacy regime is not admitted
    steps = [nc.outer_steps(n, member=0, epsilon=100.0, inner_constant=0.05) for n in NS]
    assert steps == sorted(steps) and 1.5 < steps[-1] / steps[-3] < 2.5  # T ~ sqrt(n): a factor 2 per 4x n
    for c in (claim, prox):
        assert c.tolerance <= c.gap / 2 + 1e-12
    with pytest.raises(ValueError, match="privacy term dominates"):
        nc.prox_claim(NS, epsilon=0.01)


def test_fw_claim_accepts_the_rate_and_rejects_the_controls_and_the_neighbours():
    from dpsco_book import nonconvex_stationarity as nc

    start = {0: 0.5, 1: 0.52, 2: 0.51}
    claim = nc.fw_claim(min(NS))
    rec = _records(-1 / 3 + 0.01)
    x, y, g, triv = nc.claim_inputs(rec, "gap_mean", start)
    assert list(triv) == [start[int(m)] for m in g]
    out = claim.evaluate(x, y, family=g, trivial=triv, rng=np.random.default_rng(0), required=0.8, n_boot=200,
                         n_resamples=50)
    assert out.passed and out.power_trivial == 1.0 and out.power_regime >= 0.8
    # the learns-nothing output (the start point's gap on every record) fails the claim
    bad = claim.evaluate(x, triv, family=g, trivial=triv, rng=np.random.default_rng(0), required=0.8, n_boot=200,
                         n_resamples=50)
    assert not bad.accepted
    for expo in (-0.25, -0.4):
        x, y, g, triv = nc.claim_inputs(_records(expo, seed=1), "gap_mean", start)
        assert not claim.evaluate(x, y, family=g, trivial=triv, rng=np.random.default_rng(1), required=0.8,
                                  n_boot=200, n_resamples=50).accepted


def test_prox_claim_accepts_the_statistical_rate_and_rejects_the_privacy_rate_and_the_start_point():
    from dpsco_book import nonconvex_stationarity as nc

    start = {0: 0.7, 1: 0.78, 2: 0.72}
    claim = nc.prox_claim(NS, epsilon=100.0)
    x, y, g, triv = nc.claim_inputs(_records(-0.25, key="moreau_rms", reps=12, seed=5), "moreau_rms", start)
    out = claim.evaluate(x, y, family=g, trivial=triv, rng=np.random.default_rng(2), required=0.8, n_boot=200,
                         n_resamples=50)
    assert out.passed and out.power_trivial == 1.0
    assert not claim.evaluate(x, triv, family=g, trivial=triv, rng=np.random.default_rng(2), required=0.8,
                              n_boot=200, n_resamples=50).accepted
    x, y, g, triv = nc.claim_inputs(_records(-1 / 3, key="moreau_rms", seed=3), "moreau_rms", start)
    assert not claim.evaluate(x, y, family=g, trivial=triv, rng=np.random.default_rng(2), required=0.8,
                              n_boot=200, n_resamples=50).accepted
    t = nc.rate_terms(64000, epsilon=0.1)
    assert t["statistical"] == pytest.approx(64000 ** -0.25)
    assert t["privacy"] == pytest.approx((np.sqrt(10 * 1.1 * np.log(64000)) / 6400) ** (1 / 3), rel=1e-6)
    assert nc.rate_terms(64000, epsilon=1.0)["privacy"] < t["privacy"]
