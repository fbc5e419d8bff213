"""Tests of the hard linear family (dpsco_lib.problems.hard_linear; Spec F1, F2, S2): exact optima, declared constants,
streams, bad input.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsco_lib.problems import Dataset, HardLinear, hard_linear


def test_exact_optimum_matches_cvxpy_and_excess_is_gamma_times_gap():
    prob = hard_linear(6, 0.3)
    x_cf, f_cf = prob.population_optimum()
    x_cv, f_cv = prob.cvxpy_optimum()
    assert abs(f_cf - f_cv) <= 1e-7 and np.abs(x_cf - x_cv).max() <= 1e-6
    x = np.array([0.25, -0.5, 0.0, 0.0, 0.1, 0.0])
    assert prob.excess_risk(x) == pytest.approx(prob.gamma * (1.0 - 0.25), abs=1e-15)
    assert prob.trivial_error == pytest.approx(prob.gamma) and abs(prob.gamma - 0.3) < 1e-9


def test_sample_has_the_declared_mean_and_bounds():
    prob = hard_linear(5, 0.4)
    data = prob.sample(200_000, np.random.default_rng(0))
    assert set(np.unique(data.X)) == {-1.0, 1.0} and data.y is None
    mean = data.X.mean(axis=0)
    assert abs(mean[0] + prob.gamma) < 5 * 1 / math.sqrt(200_000)  # 5 standard deviations
    assert np.all(np.abs(mean[1:]) < 5 / math.sqrt(200_000))
    prob.validate_data(data)


def test_constants_are_true_bounds_and_gradient_is_the_record():
    prob = hard_linear(4, 0.5)
    data = prob.sample(50, np.random.default_rng(1))
    g = prob.grad(np.zeros(4), data)
    assert np.array_equal(g, data.X) and np.abs(g).max() <= prob.L0
    assert prob.L1 == 0.0 and prob.constants()["D"] == pytest.approx(2.0)
    assert np.allclose(prob.loss(np.eye(4)[1], data), data.X[:, 1])


def test_stream_is_bit_identical_to_sample():
    prob = hard_linear(7, 0.2)
    whole = prob.sample(1000, np.random.default_rng(3))
    blocks = list(prob.stream(1000, np.random.default_rng(3), block_size=77))
    assert np.array_equal(np.concatenate([b.X for b in blocks]), whole.X)


@pytest.mark.parametrize("kw", [{"d": 1, "gamma": 0.5}, {"d": 4, "gamma": 0.0}, {"d": 4, "gamma": 1.5}])
def test_bad_parameters_raise(kw):
    with pytest.raises(ValueError):
        HardLinear(**kw)


def test_records_outside_the_cube_are_refused():
    prob = hard_linear(3, 0.5)
    X = np.array(prob.sample(4, np.random.default_rng(0)).X)
    X[2, 1] = 1.5
    data = Dataset(X, None)
    with pytest.raises(ValueError, match="declared bounds"):
        prob.validate_data(data)


def test_euclidean_member_unit_norm_records_exact_optimum_and_stream():
    prob = hard_linear(9, 0.6, p=2)
    data = prob.sample(100_000, np.random.default_rng(4))
    assert np.allclose(np.linalg.norm(data.X, axis=1), 1.0) and prob.L0 == 1.0
    assert abs(data.X[:, 0].mean() + prob.signal) < 5 / math.sqrt(2 * 100_000)
    assert prob.signal == pytest.approx(prob.gamma / math.sqrt(2)) and prob.trivial_error == pytest.approx(prob.signal)
    x_cf, f_cf = prob.population_optimum()
    assert abs(f_cf - prob.cvxpy_optimum()[1]) <= 1e-7 and prob.constants()["D"] == pytest.approx(2.0)
    blocks = list(prob.stream(1000, np.random.default_rng(5), block_size=99))
    assert np.array_equal(np.concatenate([b.X for b in blocks]), prob.sample(1000, np.random.default_rng(5)).X)
    X = np.array(data.X[:3])
    X[0] *= 1.5
    with pytest.raises(ValueError, match="declared bounds"):
        prob.validate_data(Dataset(X, None))
    with pytest.raises(ValueError, match="p must be"):
        HardLinear(4, 0.5, p=3)


def test_sparse_hard_linear_records_mean_and_excess():
    from dpsco_lib.problems import SparseHardLinear

    prob = SparseHardLinear(20, 0.6, sparsity=3, radius=2.0)
    X = prob.sample(40_000, np.random.default_rng(0)).X
    assert np.all(np.count_nonzero(X, axis=1) == 3) and np.allclose(np.linalg.norm(X, axis=1), 1.0)
    assert np.all(X[:, 0] != 0.0)
    # E z = -(gamma/sqrt s) e_1: 5-sigma z-tests per coordinate (sd <= 1/sqrt(3) per entry)
    se = 1.0 / math.sqrt(3 * 40_000)
    target = np.zeros(20)
    target[0] = -prob.gamma / math.sqrt(3)
    assert np.all(np.abs(X.mean(axis=0) - target) <= 5 * se)
    x = np.zeros(20)
    x[0] = 0.5
    assert prob.excess_risk(x) == pytest.approx(prob.signal * 1.5, rel=1e-12)
    assert prob.trivial_error == pytest.approx(0.6 / math.sqrt(3) * 2.0, rel=1e-6)
    dense = Dataset(np.full((2, 20), 0.1), None)
    with pytest.raises(ValueError):
        prob.validate_data(dense)
    clipped = prob.validate_data(dense, clip=True)
    assert np.all(np.count_nonzero(clipped.X, axis=1) <= 3) and np.all(np.linalg.norm(clipped.X, axis=1) <= 1 + 1e-12)
    for kw, name in (({"sparsity": 0}, "sparsity"), ({"sparsity": 21}, "sparsity"), ({"gamma": 0.0}, "gamma")):
        with pytest.raises(ValueError, match=name):
            SparseHardLinear(**{"d": 20, "gamma": 0.6, "sparsity": 3, **kw})
