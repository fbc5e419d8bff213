"""Unit tests of dpsco_book.generalized_gaussian (notebook 04, Spec G1)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsco_book import generalized_gaussian as gg
from dpsco_lib.geometry.norms import lp_norm


@pytest.mark.parametrize("kind", gg.DIRECTIONS)
def test_direction_has_the_requested_dual_norm(kind):
    v = gg.direction(kind, 7, 4.0, sensitivity=2.0)
    assert v.shape == (7,) and float(lp_norm(v, 4.0)) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="kind"):
        gg.direction("diagonal", 3, 2.0)


def test_kappa_limit_closed_form_values():
    assert gg.kappa_limit(2.0) == pytest.approx(1.0)
    assert gg.kappa_limit(4.0) == pytest.approx(2.03, abs=0.01)
    with pytest.raises(ValueError, match="q"):
        gg.kappa_limit(1.0)


def test_delta_bound_profile_and_calibration_table():
    assert gg.delta_bound_profile(0.01, 0.1) == 1.0
    assert gg.delta_bound_profile(1.0, 0.02) == pytest.approx(math.exp(1.0 - 1.0 / 0.08))
    rows = gg.calibration_table(epsilon=1.0, delta=1e-4, qs=(2.0, 4.0))
    assert [r["calibration"] for r in rows][:2] == ["paper rule", "tightest (exact conversion)"]
    exact = [r for r in rows if r["calibration"].startswith("tightest")]
    assert all(r["certified eps"] == pytest.approx(1.0) for r in exact)
    assert all(r["certified eps"] > 1.0 for r in rows if r["calibration"] == "paper rule")


def test_radial_law_rows_weight_by_sample_count():
    recs = [{"d": 4, "q": 2.0, "m": 100, "mean_ratio": 1.0, "ks_p": 0.5},
            {"d": 4, "q": 2.0, "m": 300, "mean_ratio": 1.04, "ks_p": 0.2}]
    (row,) = gg.radial_law_rows(recs)
    assert row["E||Z||^2/(d sigma^2)"] == pytest.approx(1.03)
    assert row["z"] == pytest.approx(0.03 / math.sqrt(2 / (4 * 400)))
    assert row["min KS p"] == 0.2


def test_tasks_return_their_keys():
    rng = np.random.default_rng(0)
    r = gg.radial_law_task(rng=rng, d=3, q=4.0, m=200)
    assert set(r) == {"mean_ratio", "ks_p"}
    q = gg.renyi_quadrature_task(rng=rng, d=1, q=3.0, kind="axis", alpha=2.0, sigma=1.0)
    assert q["D"] == pytest.approx(q["gauss_form"], rel=1e-8)  # d = 1: GG is the Gaussian
    a = gg.half_noise_audit_task(rng=rng, d=2, q=2.0, kind="ones", n=2000, noise_factor=1.0, epsilon=1.0,
                                 delta=1e-4, alpha=1e-3)
    assert 0.0 <= a["cp_lower"] <= a["cp_upper"] <= 1.0 and a["flagged"] is False
    e = gg.dual_norm_error_task(rng=rng, d=5, q=4.0, m=50, epsilon=1.0, delta=1e-5)
    (row,) = gg.dual_norm_rows([e | {"d": 5, "q": 4.0}, e | {"d": 5, "q": 4.0}])
    assert row["ms/bound"] == pytest.approx(e["gg_ms"] / e["gg_bound"])
