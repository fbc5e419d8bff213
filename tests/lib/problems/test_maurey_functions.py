"""Maurey sparsification bounds M1-M3 (GGP24 Section 2) on the test functions of maurey_functions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsco_lib.geometry.sparsify import maurey_sample
from dpsco_lib.problems.maurey_functions import (
    LogSumExpFunction,
    QuadraticFunction,
    SquaredHingeFunction,
    compositions,
    maurey_exact_mean,
    maurey_law,
    second_moment_bound,
)

X4 = np.array([0.4, 0.3, 0.2, 0.1])


def test_compositions_exhaustive():
    c = compositions(5, 4)
    assert c.shape == (math.comb(8, 3), 4)
    assert np.all(c.sum(axis=1) == 5) and np.all(c >= 0)
    assert len({tuple(r) for r in c}) == c.shape[0]
    assert compositions(0, 3).tolist() == [[0, 0, 0]]
    with pytest.raises(ValueError, match="exceed"):
        compositions(400, 6)


@pytest.mark.parametrize("K", [1, 3, 10])
def test_maurey_law_moments(K):
    pts, w = maurey_law(X4, K)
    assert w.sum() == pytest.approx(1.0, abs=1e-13)
    np.testing.assert_allclose(w @ pts, X4, atol=1e-13)
    cov = (pts - X4).T @ ((pts - X4) * w[:, None])
    np.testing.assert_allclose(cov, (np.diag(X4) - np.outer(X4, X4)) / K, atol=1e-13)
    # zero-probability coordinates never appear
    pts0, _ = maurey_law(np.array([0.5, 0.0, 0.5]), K)
    assert np.all(pts0[:, 1] == 0)


def test_quadratic_value_bias_closed_form():
    rng = np.random.default_rng(0)
    M = rng.uniform(-1, 1, (4, 4))
    f = QuadraticFunction((M + M.T) / 2)
    for K in (1, 2, 7, 20):
        exact = maurey_exact_mean(f.value, X4, K) - f.value(X4)
        assert exact == pytest.approx(f.exact_value_bias(X4, K), abs=1e-13)
        assert abs(exact) <= 2 * f.L1 / K  # Cor 2.3
        # the gradient of a quadratic is linear: no bias (L2 = 0)
        np.testing.assert_allclose(maurey_exact_mean(f.grad, X4, K), f.grad(X4), atol=1e-13)


@pytest.fixture(scope="module")
def lse():
    return LogSumExpFunction(np.random.default_rng(1).uniform(-1, 1, (5, 4)), tau=0.5)


def test_lse_constants_are_bounds(lse):
    rng = np.random.default_rng(2)
    X = rng.dirichlet(np.ones(4), 2000)
    Y = rng.dirichlet(np.ones(4), 2000)
    l1 = np.abs(X - Y).sum(axis=1)
    assert np.all(np.abs(lse.grad(X) - lse.grad(Y)).max(axis=1) <= lse.L1 * l1 + 1e-12)
    assert np.all(np.abs(lse.grad(X)).max(axis=1) <= lse.L0 + 1e-12)
    # second-order: each partial derivative is L2-smooth (finite-difference Hessian rows)
    h = 1e-5
    for i in range(4):
        e = np.zeros(4)
        e[i] = h
        HX = (lse.grad(X + e) - lse.grad(X - e)) / (2 * h)
        HY = (lse.grad(Y + e) - lse.grad(Y - e)) / (2 * h)
        assert np.all(np.abs(HX - HY).max(axis=1) <= lse.L2 * l1 + 1e-6)


def test_lse_value_and_gradient_bias(lse):
    """Cor 2.3 and Cor 2.4 exactly: |E f(x~) - f(x)| <= 2 L1/K, ||E grad f(x~) - grad f(x)||_inf <= 2 L2/K,
    and both are Theta(1/K) (K times the bias converges)."""
    kb_v, kb_g = [], []
    for K in (1, 4, 16, 64, 128):
        v = abs(maurey_exact_mean(lse.value, X4, K) - lse.value(X4))
        g = np.abs(maurey_exact_mean(lse.grad, X4, K) - lse.grad(X4)).max()
        assert v <= 2 * lse.L1 / K and g <= 2 * lse.L2 / K
        kb_v.append(K * v)
        kb_g.append(K * g)
    assert kb_v[-1] == pytest.approx(kb_v[-2], rel=0.02)
    assert kb_g[-1] == pytest.approx(kb_g[-2], rel=0.02)


def test_hinge_gradient_bias_is_order_one_over_sqrt_k():
    """At a point on the kink the bias is E[max(0, <a, x~ - x>)] a ~ sigma ||a||_inf/sqrt(2 pi K) (CLT),
    within Cor 2.6's 4 L1/sqrt K."""
    a = np.array([1.0, -0.7, 0.35, -0.15])
    f = SquaredHingeFunction(a, float(a @ X4))
    sigma = math.sqrt(X4 @ a**2 - (X4 @ a) ** 2)
    for K in (1, 8, 64, 128):
        bias = np.abs(maurey_exact_mean(f.grad, X4, K) - f.grad(X4)).max()
        assert bias <= 4 * f.L1 / math.sqrt(K)
    assert math.sqrt(128) * bias == pytest.approx(sigma / math.sqrt(2 * math.pi), rel=0.03)
    assert f.L2 == math.inf


@pytest.mark.statistical
def test_second_moment_log_d_over_k():
    """E||grad f(x~) - grad f(x)||_inf^2 for f = x^T Q x/2, Q Rademacher: below 4(log d + log(2)/2)/K and growing
    with d (Monte Carlo, 400 estimates; the bound holds with a large margin)."""
    rng = np.random.default_rng(4)
    vals = {}
    for d in (8, 512):
        R = rng.choice([-1.0, 1.0], size=(d, d))
        Q = np.triu(R) + np.triu(R, 1).T
        f = QuadraticFunction(Q)
        x = rng.dirichlet(np.ones(d))
        K = 16
        xt = maurey_sample(x, K, rng, size=400)
        m2 = float(np.mean(np.abs(f.grad(xt) - f.grad(x)).max(axis=1) ** 2))
        assert m2 <= second_moment_bound(d, K)
        vals[d] = m2
    assert vals[512] > 1.5 * vals[8]


def test_bad_inputs():
    with pytest.raises(ValueError, match="symmetric"):
        QuadraticFunction(np.array([[0.0, 1.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="last dimension"):
        LogSumExpFunction(np.ones((2, 3))).value(np.ones(4) / 4)
    with pytest.raises(ValueError, match="sum to 1"):
        maurey_law(np.array([0.5, 0.6]), 3)
    with pytest.raises(ValueError, match="K must be"):
        maurey_law(X4, 0)
    with pytest.raises(ValueError, match="tau"):
        LogSumExpFunction(np.ones((2, 3)), tau=0.0)
    with pytest.raises(ValueError):
        second_moment_bound(0, 3)
