"""The lower-bound families of Spec S1 (dpsco_lib.problems.hard_sco): records, exact risks, optima, streams."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsco_lib.algorithms.smd import run_smd
from dpsco_lib.problems import (
    Dataset,
    PlantedCubeLinear,
    PlantedLpLinear,
    hard_linear,
    planted_cube_linear,
    planted_lp_linear,
)


@pytest.mark.parametrize("p", [1.25, 1.5, 2.0])
def test_lp_member_records_have_unit_dual_norm_and_the_declared_mean(p):
    prob = planted_lp_linear(9, 0.4, p=p)
    q = p / (p - 1)
    data = prob.sample(100_000, np.random.default_rng(0))
    assert np.allclose(np.sum(np.abs(data.X) ** q, axis=1), 1.0) and prob.L0 == 1.0 and data.y is None
    w1, w = prob.weights
    assert w1 == pytest.approx(2 ** (-1 / q)) and w == pytest.approx((2 * 8) ** (-1 / q))
    mean = data.X.mean(axis=0)
    assert abs(mean[0] + prob.signal) < 5 * w1 / math.sqrt(100_000)  # E z = -gamma w1 e1, 5 standard deviations
    assert np.all(np.abs(mean[1:]) < 5 * w / math.sqrt(100_000))
    prob.validate_data(data)


def test_lp_member_exact_risk_optimum_and_trivial_error():
    prob = planted_lp_linear(6, 0.3, p=1.5, radius=2.0)
    x_cf, f_cf = prob.population_optimum()
    x_cv, f_cv = prob.cvxpy_optimum()
    assert abs(f_cf - f_cv) <= 1e-7 and np.abs(x_cf - x_cv).max() <= 1e-6
    assert np.allclose(x_cf, [2.0, 0, 0, 0, 0, 0]) and f_cf == pytest.approx(-2.0 * prob.signal)
    x = np.array([0.5, -0.5, 0.2, 0.0, 0.0, 0.1])
    assert prob.excess_risk(x) == pytest.approx(prob.signal * (2.0 - 0.5), abs=1e-15)
    assert prob.trivial_error == pytest.approx(2.0 * prob.gamma * 2 ** (-1 / 3)) and abs(prob.gamma - 0.3) < 1e-9
    data = prob.sample(200_000, np.random.default_rng(1))  # the closed form is the expectation of the loss
    assert prob.empirical_risk(x, data) == pytest.approx(prob.population_risk(x), abs=5 * 1.0 / math.sqrt(200_000))


def test_p2_member_has_the_records_of_the_euclidean_hard_linear_member():
    a = planted_lp_linear(11, 0.35, p=2.0).sample(500, np.random.default_rng(3)).X
    b = hard_linear(11, 0.35, p=2).sample(500, np.random.default_rng(3)).X
    assert np.allclose(a, b, rtol=1e-15, atol=0.0)


def test_cube_member_records_carry_one_coordinate_with_the_planted_bias():
    signs = np.array([1.0, -1.0, 1.0, -1.0, -1.0])
    prob = planted_cube_linear(5, 0.5, signs=signs)
    data = prob.sample(200_000, np.random.default_rng(4))
    assert np.all(np.count_nonzero(data.X, axis=1) == 1) and set(np.unique(data.X)) == {-1.0, 0.0, 1.0}
    counts = np.count_nonzero(data.X, axis=0)
    assert np.all(np.abs(counts - 40_000) < 5 * math.sqrt(200_000 * 0.2 * 0.8))  # J uniform
    mean = data.X.mean(axis=0)
    assert np.all(np.abs(mean + 0.5 * signs / 5) < 5 / math.sqrt(200_000))  # E z = -(gamma/d) sigma
    assert prob.p == math.inf and prob.q == 1.0 and prob.L0 == 1.0
    prob.validate_data(data)


def test_cube_member_exact_optimum_excess_and_cvxpy():
    signs = np.array([-1.0, 1.0, 1.0, -1.0])
    prob = PlantedCubeLinear(4, 0.6, signs=signs, radius=0.5)
    x_cf, f_cf = prob.population_optimum()
    x_cv, f_cv = prob.cvxpy_optimum()
    assert np.allclose(x_cf, 0.5 * signs) and f_cf == pytest.approx(-prob.gamma * 0.5)
    assert abs(f_cf - f_cv) <= 1e-7 and np.abs(x_cf - x_cv).max() <= 1e-6
    x = np.array([0.1, 0.5, -0.2, 0.0])
    assert prob.excess_risk(x) == pytest.approx(prob.gamma * (0.5 - (-0.1 + 0.5 - 0.2) / 4), abs=1e-15)
    assert prob.trivial_error == pytest.approx(0.5 * prob.gamma)


@pytest.mark.parametrize("make", [lambda: planted_lp_linear(7, 0.2, p=1.5), lambda: planted_cube_linear(7, 0.2)])
def test_streams_are_bit_identical_to_samples(make):
    prob = make()
    whole = prob.sample(1000, np.random.default_rng(5))
    stream = prob.stream(1000, np.random.default_rng(5), block_size=77)
    assert stream.bounded_memory
    assert np.array_equal(np.concatenate([b.X for b in stream]), whole.X)


def test_records_outside_the_dual_ball_are_refused_or_clipped():
    lp = planted_lp_linear(4, 0.5, p=1.5)
    X = np.array(lp.sample(3, np.random.default_rng(0)).X)
    X[1] *= 1.5
    with pytest.raises(ValueError, match="declared bounds"):
        lp.validate_data(Dataset(X, None))
    cube = planted_cube_linear(3, 0.5)
    Y = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5]])
    with pytest.raises(ValueError, match=r"\|\|z\|\|_1"):
        cube.validate_data(Dataset(Y, None))
    clipped = cube.validate_data(Dataset(Y, None), clip=True)
    assert clipped.n_clipped == 1 and np.abs(clipped.X).sum(axis=1) == pytest.approx([1.0, 1.0])


@pytest.mark.parametrize("kw", [{"d": 1, "gamma": 0.5, "p": 1.5}, {"d": 4, "gamma": 0.0, "p": 1.5},
                                {"d": 4, "gamma": 1.5, "p": 1.5}, {"d": 4, "gamma": 0.5, "p": 1.0},
                                {"d": 4, "gamma": 0.5, "p": 3.0}, {"d": 4, "gamma": 0.5, "p": 1.5, "radius": 0.0}])
def test_lp_bad_parameters_raise(kw):
    with pytest.raises(ValueError):
        PlantedLpLinear(**kw)


@pytest.mark.parametrize("kw", [{"d": 1, "gamma": 0.5}, {"d": 3, "gamma": 1.2}, {"d": 3, "gamma": 0.5, "signs": [1, 1]},
                                {"d": 3, "gamma": 0.5, "signs": [1, 0, -1]}])
def test_cube_bad_parameters_raise(kw):
    with pytest.raises(ValueError):
        PlantedCubeLinear(**kw)


def test_smd_on_the_cube_family_stays_below_its_bound_and_learns_the_signs():
    """The theorem's bound sqrt(d/n) holds in mean at a member of the hard scale, and a strong signal is learned."""
    prob = planted_cube_linear(4, 1.5 * math.sqrt(4 / 1024))
    ex = []
    for s in range(30):
        rng = np.random.default_rng(s)
        res = run_smd(prob, prob.sample(1024, rng), rng=rng)
        ex.append(prob.excess_risk(res.x))
    assert res.info["rate_bound"] == pytest.approx(math.sqrt(4 / 1024))
    assert 0.5 * res.info["rate_bound"] < np.mean(ex) < res.info["rate_bound"]
    strong = planted_cube_linear(4, 0.9)
    rng = np.random.default_rng(0)
    res = run_smd(strong, strong.sample(1024, rng), rng=rng)
    assert strong.excess_risk(res.x) < 0.1 * strong.trivial_error
