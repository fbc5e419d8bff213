"""Tests of dpsco_lib.geometry.mirror: entropic and p-norm mirror steps, Bregman divergences, the l1 lift (Spec S1), and
the in-place entropic step against its reference.
"""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpsco_lib.geometry import (
    LpBall,
    bregman_divergence,
    entropic_step,
    entropic_update,
    kl_divergence,
    l1_lift,
    l1_unlift,
    pnorm_conjugate_grad,
    pnorm_mirror_grad,
    pnorm_mirror_step,
    pnorm_psi,
)
from dpsco_lib.geometry.mirror import EntropicStepInplace, entropic_step_with_weights

# cvxpy's conic reformulation of ||.||_p (p not in {1, 2, inf}) triggers accuracy warnings; the tests
# compare at the accuracy cvxpy reaches there and use exact (KKT / Hölder) oracles for the tight checks.
pytestmark = pytest.mark.filterwarnings("ignore:Solution may be inaccurate", "ignore:pnorm with p=")


TIGHT = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}


HYP = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


finite_vec = arrays(np.float64, 6, elements=st.floats(-50, 50, allow_nan=False, allow_infinity=False))


def _solve(prob: cp.Problem) -> None:
    prob.solve(solver=cp.CLARABEL, **TIGHT)
    # cvxpy represents ||.||_p (p not in {1, 2, inf}) by SOC / power cones; Clarabel then reaches
    # only ~1e-6 accuracy ("optimal_inaccurate"), which is why those comparisons use 2e-5.
    assert prob.status in ("optimal", "optimal_inaccurate")


def test_entropic_step_matches_formula_and_extremes():
    rng = np.random.default_rng(11)
    x = rng.dirichlet(np.ones(8))
    g = rng.normal(size=8)
    ref = x * np.exp(-0.3 * g)
    ref /= ref.sum()
    np.testing.assert_allclose(np.exp(entropic_step(np.log(x), g, 0.3)), ref, rtol=1e-13)
    np.testing.assert_allclose(entropic_update(x, g, 0.3), ref, rtol=1e-13)
    # extreme gradients: no NaN, stays in the simplex, mass on the argmin
    for scale, eta in ((1e12, 1.0), (1e300, 1.0), (1e300, 1e300), (1.0, 1e308)):
        out = entropic_step(np.log(x), g * scale, eta)
        assert not np.any(np.isnan(out))
        w = np.exp(out)
        assert w.sum() == pytest.approx(1.0, abs=1e-12)
        assert np.argmax(w) == np.argmin(g)
    # zeros stay zero, batched rows
    x0 = np.array([0.0, 0.5, 0.5])
    assert entropic_update(x0, np.array([-1e6, 0.0, 0.0]), 1.0)[0] == 0.0
    B = entropic_step(np.log(rng.dirichlet(np.ones(4), size=3)), rng.normal(size=(3, 4)), 0.1)
    np.testing.assert_allclose(np.exp(B).sum(axis=1), 1.0, atol=1e-14)


@HYP
@given(
    g=arrays(np.float64, 5, elements=st.floats(-1e15, 1e15, allow_nan=False)),
    eta=st.floats(1e-6, 1e6),
    w=arrays(np.float64, 5, elements=st.floats(1e-6, 1.0)),
)
def test_entropic_step_stays_in_simplex(g, eta, w):
    x = w / w.sum()
    out = np.exp(entropic_step(np.log(x), g, eta))
    assert np.all(out >= 0) and out.sum() == pytest.approx(1.0, abs=1e-12)


def test_entropic_step_bad_input():
    for call in (
        lambda: entropic_step(np.log(np.ones(3) / 3), np.ones(4), 1.0),
        lambda: entropic_step(np.log(np.ones(3) / 3), np.ones(3), 0.0),
        lambda: entropic_step(np.log(np.ones(3) / 3), np.array([1.0, np.nan, 0.0]), 1.0),
        lambda: entropic_step(np.full(3, -np.inf), np.ones(3), 1.0),
        lambda: entropic_update(np.array([-0.1, 0.6, 0.5]), np.ones(3), 1.0),
    ):
        with pytest.raises(ValueError):
            call()


@pytest.mark.parametrize("p", [1.05, 1.3, 1.5, 2.0])
def test_pnorm_map_inverse_and_step_vs_cvxpy(p):
    rng = np.random.default_rng(12)
    z = rng.normal(size=7)
    np.testing.assert_allclose(pnorm_conjugate_grad(pnorm_mirror_grad(z, p), p), z, rtol=1e-10, atol=1e-12)
    # gradient check of psi by finite differences
    h = 1e-6
    fd = np.array([(pnorm_psi(z + h * e, p) - pnorm_psi(z - h * e, p)) / (2 * h) for e in np.eye(7)])
    np.testing.assert_allclose(pnorm_mirror_grad(z, p), fd, rtol=1e-6)
    ball = LpBall(7, p, 0.8)
    x = ball.random_point(rng)
    for eta, g in ((0.05, rng.normal(size=7)), (3.0, rng.normal(size=7))):
        out = pnorm_mirror_step(x, g, eta, p, ball)
        assert ball.contains(out, tol=1e-12)
        u = cp.Variable(7)
        obj = eta * g @ u + cp.square(cp.pnorm(u, p)) / (2 * (p - 1)) - pnorm_mirror_grad(x, p) @ u
        _solve(cp.Problem(cp.Minimize(obj), ball.cvxpy_constraints(u)))
        np.testing.assert_allclose(out, u.value, atol=2e-5)
        # exact first-order optimality of the Bregman projection: <grad psi(out) - theta, z - out> >= 0 on X
        theta = pnorm_mirror_grad(x, p) - eta * g
        Z = np.vstack([ball.random_point(rng, size=200), ball.lmo(rng.normal(size=(200, 7)))])
        assert np.min((Z - out) @ (pnorm_mirror_grad(out, p) - theta)) >= -1e-10
    if p == 2.0:  # Euclidean case: projected gradient step
        g = rng.normal(size=7)
        np.testing.assert_allclose(pnorm_mirror_step(x, g, 0.7, 2.0, ball), ball.project(x - 0.7 * g), atol=1e-13)
    with pytest.raises(ValueError):
        pnorm_mirror_step(x, g, 0.1, p, LpBall(7, 3.0))
    with pytest.raises(ValueError):
        pnorm_mirror_step(x, g, 0.1, 2.5)


@HYP
@given(x=finite_vec, y=finite_vec, p=st.sampled_from([1.1, 1.5, 2.0]))
def test_bregman_nonnegative(x, y, p):
    assert bregman_divergence("pnorm", x, y, p=p) >= 0.0
    assert bregman_divergence("pnorm", x, x, p=p) == pytest.approx(0.0, abs=1e-9 * (1 + np.sum(x**2)))
    assert bregman_divergence("euclidean", x, y) == pytest.approx(0.5 * np.sum((x - y) ** 2))
    a, b = np.abs(x) + 1e-3, np.abs(y) + 1e-3
    a, b = a / a.sum(), b / b.sum()
    assert bregman_divergence("kl", a, b) >= -1e-15


def test_bregman_closed_forms_and_bad_kind():
    x = np.array([0.5, 0.5])
    y = np.array([0.25, 0.75])
    assert kl_divergence(x, y) == pytest.approx(0.5 * math.log(2) + 0.5 * math.log(2 / 3), rel=1e-14)
    assert kl_divergence(np.array([1.0, 0.0]), np.array([0.0, 1.0])) == math.inf
    z = np.array([1.0, -2.0, 0.5])
    w = np.array([0.3, 0.1, -0.4])
    assert bregman_divergence("pnorm", z, w, p=2.0) == pytest.approx(bregman_divergence("euclidean", z, w))
    with pytest.raises(ValueError):
        bregman_divergence("hellinger", x, y)
    with pytest.raises(ValueError):
        bregman_divergence("pnorm", x, y)


@HYP
@given(x=finite_vec, r=st.floats(0.1, 10.0))
def test_l1_lift_round_trip(x, r):
    x = x / max(1.0, np.abs(x).sum()) * r * 0.999
    w = l1_lift(x, r)
    assert w.shape == (12,) and np.all(w >= 0) and w.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(l1_unlift(w, r), x, atol=1e-12 * r)


def test_l1_lift_center_and_bad_input():
    np.testing.assert_allclose(l1_lift(np.zeros(3), 2.0), np.full(6, 1 / 6))
    with pytest.raises(ValueError):
        l1_lift(np.array([2.0, 1.0]), 2.0)
    with pytest.raises(ValueError):
        l1_unlift(np.ones(3), 1.0)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


# ---------------------------------------------------------------------------------------------------------
# entropic step
# ---------------------------------------------------------------------------------------------------------
def _step_cases(rng: np.random.Generator):
    for d in (1, 2, 3, 8, 129, 1000, 2001):
        log_x = np.log(rng.dirichlet(np.full(d, 0.3)))
        yield log_x, rng.standard_normal(d) * 10.0 ** rng.uniform(-3, 3), float(10.0 ** rng.uniform(-4, 2))
    d = 50
    lx = np.full(d, -math.log(d))
    lx[::3] = -np.inf  # zero weights stay zero
    yield lx, rng.standard_normal(d), 0.7
    g = np.zeros(d)
    g[::2] = -0.0  # +-0 ties at the minimum
    g[5] = 3.0
    yield np.full(d, -math.log(d)), g, 0.5
    yield np.full(d, -math.log(d)), rng.standard_normal(d), 1e308  # every score overflows: the limit branch
    yield np.full(d, -math.log(d)), rng.standard_normal(d) * 1e300, 1e10
    yield np.full(d, -math.log(d)), np.full(d, 2.5), 1.0  # constant gradient
    yield np.array([-0.0]), np.array([-0.0]), 1.0


def test_entropic_inplace_step_is_bit_identical():
    rng = np.random.default_rng(20261123)
    n_cases = 0
    for log_x, g, eta in _step_cases(rng):
        with np.errstate(over="ignore", invalid="ignore"):
            ref_lx, ref_w = entropic_step_with_weights(log_x.copy(), g.copy(), eta)
        state, w, gg = log_x.copy(), np.empty_like(log_x), g.copy()
        with np.errstate(over="ignore", invalid="ignore"):
            EntropicStepInplace(log_x.size, eta).step(state, gg, w)
        assert _same_bits(state, ref_lx), (log_x.size, eta)
        assert _same_bits(w, ref_w), (log_x.size, eta)
        assert _same_bits(gg, g)  # the gradient is only read
        n_cases += 1
    assert n_cases == 13


def test_entropic_inplace_chain_matches_reference_chain():
    # 300 successive steps from the uniform point, the way SMD uses the step (state fed back each time)
    rng = np.random.default_rng(7)
    d, eta = 400, 0.05
    ref_lx = np.full(d, -math.log(d))
    state = ref_lx.copy()
    w = np.full(d, 1.0 / d)
    stepper = EntropicStepInplace(d, eta)
    for _ in range(300):
        g = rng.standard_normal(d) * 5.0
        ref_lx, ref_w = entropic_step_with_weights(ref_lx, g, eta)
        with np.errstate(over="ignore", invalid="ignore"):
            stepper.step(state, g, w)
        assert _same_bits(state, ref_lx)
        assert _same_bits(w, ref_w)
