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
