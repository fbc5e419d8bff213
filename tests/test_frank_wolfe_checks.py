"""Notebook-05 experiment helpers (Spec F1, F2, S2): grids without capped members, worst-case fits, calibration
runs and the Euclidean member of the hard linear family in the noisy-SGD task."""

from __future__ import annotations

import numpy as np
import pytest

from dpsco_lib.experiments import frank_wolfe_checks as fc
from dpsco_lib.experiments.frank_wolfe_checks import (
    bound_terms,
    calibration_runs,
    fit_worst,
    gamma_for,
    hard_linear_task,
    rate_grid,
)


def test_rate_grid_drops_capped_values():
    grid, dropped = rate_grid("poly_sfw", [1000, 60_000], vary="n", d=2, eps=2.0, mults=[1, 3])
    assert dropped == [1000] and {g["n"] for g in grid} == {60_000} and len(grid) == 2
    assert all(gamma_for("poly_sfw", g["n"], 2, 2.0, g["mult"]) < 1 for g in grid)
    grid_d, dropped_d = rate_grid("noisy_sgd", [64, 10**6], vary="d", n=2000, eps=1.0, mults=[1], p=2)
    assert dropped_d == [10**6] and grid_d[0]["d"] == 64 and grid_d[0]["p"] == 2
    with pytest.raises(ValueError, match="vary"):
        rate_grid("poly_sfw", [10], vary="eps", eps=1.0, mults=[1])


def test_gamma_for_euclidean_member_scales_the_signal():
    b = sum(bound_terms("noisy_sgd", 2000, 64, 1.0, p=2))
    assert b == pytest.approx(2 / np.sqrt(2000) + 2 * np.sqrt(64 * 1.1 * np.log(2000)) / 2000)
    assert gamma_for("noisy_sgd", 2000, 64, 1.0, 1.0, p=2) == pytest.approx(b * np.sqrt(2))


def test_fit_worst_reads_the_worst_member():
    recs = [{"n": n, "mult": m, "excess": (m * n ** -0.5 if m == 2 else 0.1 * n ** -0.5)} for n in (100, 400, 1600)
            for m in (1, 2) for _ in range(3)]
    fit = fit_worst(recs, "n", rng=np.random.default_rng(0), n_boot=200)
    assert fit.slope == pytest.approx(-0.5) and fit.ci_low == pytest.approx(-0.5)


def test_noisy_sgd_task_on_the_euclidean_member_measures_the_nonprivate_error():
    out = hard_linear_task(rng=np.random.default_rng(0), alg="noisy_sgd", n=400, d=16, eps=1.0, mult=1.0, p=2)
    assert out["trivial"] == pytest.approx(out["gamma"] / np.sqrt(2)) and not out["capped"]
    assert 0 < out["excess_nonprivate"] <= out["trivial"] and out["eps_certified"] <= 1.0 + 1e-9
    with pytest.raises(ValueError, match="p = 2"):
        hard_linear_task(rng=np.random.default_rng(0), alg="poly_sfw", n=400, d=16, eps=1.0, mult=1.0, p=2)


@pytest.mark.parametrize("alg", ["poly_sfw", "tree_fw"])
def test_calibration_runs_certify_and_gain(alg):
    runs, gain = calibration_runs(alg, 4000, 3, 1.0, np.random.default_rng(1))
    delta = 4000 ** -1.1
    paper, best = runs.values()
    assert best.certified_epsilon(delta) <= 1.0 + 1e-9 and paper.certified_epsilon(delta) <= 1.0 + 1e-9
    assert gain > 1.0
    with pytest.raises(ValueError, match="alg"):
        calibration_runs("noisy_sgd", 4000, 3, 1.0, np.random.default_rng(1))


def test_poly_sfw_exponent_range_brackets_the_closed_form_bound() -> None:
    ns = [6e4, 1.2e5, 2.4e5, 4.8e5]
    lo, hi = fc.poly_sfw_exponent_range(ns, d=2, eps=2.0)
    closed = fc.bound_exponent("poly_sfw", ns, vary="n", d=2, eps=2.0)
    assert lo == -0.5 and closed <= hi < -0.3  # the closed form is one member of the family; all decay
    narrow = fc.poly_sfw_exponent_range(ns, d=2, eps=2.0, log_scales=(1.0,), accountants=("paper",))[1]
    assert abs(narrow - closed) < 0.01  # the paper's eps0 reproduces the closed form's slope
    with pytest.raises(ValueError, match="ns"):
        fc.poly_sfw_exponent_range([1e4], d=2, eps=2.0)
    with pytest.raises(ValueError, match="log_scales"):
        fc.poly_sfw_exponent_range(ns, d=2, eps=2.0, log_scales=(0.0,))
