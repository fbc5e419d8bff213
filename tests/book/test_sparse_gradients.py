"""Tests for dpsco_book.sparse_gradients (notebook 16)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsco_book import sparse_gradients as sc
from dpsco_lib.problems import Dataset


def test_bias_and_se_exact():
    G = np.array([[1.0, 0.0], [3.0, 0.0]])
    b, se = sc.bias_and_se(G, np.array([1.0, 1.0]))
    assert b == pytest.approx(math.sqrt(2.0))
    assert se == pytest.approx(1.0 / math.sqrt(2.0))


def test_bias_and_se_rejects_one_row():
    with pytest.raises(ValueError):
        sc.bias_and_se(np.ones((1, 3)), np.zeros(3))


def test_bias_gap_z_exact_and_bad_input():
    assert sc.bias_gap_z(0.5, 0.3, 0.1, 0.4) == pytest.approx(0.8)
    assert sc.bias_gap_z(0.1, 0.0, 0.5, 0.4) == pytest.approx(-1.0)
    with pytest.raises(ValueError):
        sc.bias_gap_z(0.5, -0.1, 0.1, 0.4)
    with pytest.raises(ValueError):
        sc.bias_gap_z(0.5, 0.0, 0.1, 0.0)


def test_linear_sparse_gradients_are_the_records():
    X = np.array([[1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
    lin, data = sc.LinearSparse(3), Dataset(X)
    x = np.array([2.0, 3.0, 4.0])
    np.testing.assert_array_equal(lin.grad(x, data), X)
    np.testing.assert_array_equal(lin.loss(x, data), [2.0, -3.0])
    np.testing.assert_array_equal(lin.mean_grad(x, data), [0.5, -0.5, 0.0])
    assert lin.feasible_set.radius == 2.0
    with pytest.raises(ValueError):
        sc.LinearSparse(0)


def test_z1_records_boundary_and_bad_label():
    Z = sc.z1_records(5, 20, 4, "boundary", np.random.default_rng(0)).toarray()
    assert np.all(Z == Z[0])
    assert np.count_nonzero(Z[0]) == 4
    assert np.abs(Z.mean(axis=0)).sum() == pytest.approx(2.0)  # ||z_bar||_1 = sqrt(s)
    with pytest.raises(ValueError):
        sc.z1_records(5, 20, 4, "middle", np.random.default_rng(0))


def test_z1_bound_and_exponent_range():
    b = 2.0 / 100.0  # Laplace scale 2 sqrt(s)/(n eps) at s = 1, n = 100
    assert sc.z1_bound(1, 100, 1, "laplace") == pytest.approx(min(b * math.sqrt(2.0), 2.0 * math.sqrt(b)))
    assert sc.z1_bound(4, 100, 1, "dense") == pytest.approx(2.0 * sc.z1_bound(1, 100, 1, "dense"))
    assert sc.z1_exponent_range([10, 100], 100, 1, "dense") == (0.5, 0.5)
    with pytest.raises(ValueError):
        sc.z1_bound(0, 100, 1, "laplace")


def test_worst_ratio_at_exact():
    recs = [{"m": "a", "label": "x", "error": e, "trivial": 2.0} for e in (1.0, 2.0, 3.0)]
    recs += [{"m": "a", "label": "y", "error": e, "trivial": 4.0} for e in (1.0, 1.0)]
    recs += [{"m": "b", "label": "x", "error": 100.0, "trivial": 1.0}]
    assert sc.worst_ratio_at(recs, {"m": "a"}) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        sc.worst_ratio_at(recs, {"m": "c"})


def test_z3_bias_draws_consistent():
    r = sc.z3_bias_draws(16, 10, 2, draws=40, eps0=1.0, seed=1)
    assert r["z"] == pytest.approx(sc.bias_gap_z(r["bias_1"], r["se_1"], r["bias_br"], r["se_br"]))
    assert r["draws"] == 40.0 and r["se_br"] > 0 and r["se_1"] > 0
    with pytest.raises(ValueError):
        sc.z3_bias_draws(16, 10, 2, draws=1, eps0=1.0, seed=1)


def test_z3_task_stays_within_budget_and_rows_summarize():
    recs = [{**sc.z3_task(rng=np.random.default_rng(k), n=256, eps0=0.3, data_seed=0, d=12, s=2), "n": 256}
            for k in range(3)]
    for r in recs:
        assert r["stopped_by_filter"] == 1.0 and r["steps"] >= 1
        assert r["filter_spent"] <= 1.0 and r["ledger_eps"] <= 1.0 + 1e-9
        assert r["trivial"] == pytest.approx(1.0 / np.sqrt(2), rel=1e-6) and 0.0 <= r["excess"] <= 2 * r["trivial"]
        assert r["bound"] > 0 and r["delta"] == pytest.approx(256**-1.1)
    (row,) = sc.z3_rows(recs)
    assert row["n"] == 256
    med = float(np.median([r["excess"] for r in recs]))
    assert row["median excess / trivial"] == round(med / recs[0]["trivial"], 3)


def test_z2_optimum_same_for_every_d_and_is_a_minimum():
    # z2_instance draws the same active columns and labels for every d, so the optimum is shared (and reused)
    (p1, s1), (p2, s2) = (sc.z2_instance(d, 300, lam=0.05, k0=6, data_seed=3) for d in (8, 40))
    f1 = sc.z2_optimum(p1, s1, 6, iters=300)
    assert sc.z2_optimum(p2, s2, 6, iters=300) == f1
    X, y = np.asarray(s1.X)[:, :6], np.asarray(s1.y)
    rng = np.random.default_rng(0)
    for _ in range(20):  # feasible points near the origin never do better than the returned minimum
        x = rng.normal(size=6) * 0.5
        assert float(np.mean(np.logaddexp(0.0, -y * (X @ x)))) >= f1 - 1e-9
    other = sc.z2_instance(8, 300, lam=0.05, k0=6, data_seed=4)
    assert sc.z2_optimum(*other, 6, iters=300) != f1
