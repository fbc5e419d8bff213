"""Tests of dpsco_lib.geometry: norms, feasible sets, mirror maps, Maurey sparsification (Spec S1, G1, M1)."""

from __future__ import annotations

import itertools
import math

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from dpsco_lib.geometry import (
    L1Ball,
    LpBall,
    Polytope,
    Simplex,
    bregman_divergence,
    dual_exponent,
    entropic_step,
    entropic_update,
    kl_divergence,
    l1_lift,
    l1_unlift,
    lp_norm,
    maurey_counts,
    maurey_indices,
    maurey_sample,
    pnorm_conjugate_grad,
    pnorm_mirror_grad,
    pnorm_mirror_step,
    pnorm_psi,
    project_simplex,
    regularity_constant,
    smooth_dual_exponent,
)

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


def _cvx_project(fset, x: np.ndarray) -> np.ndarray:
    v = cp.Variable(fset.d)
    _solve(cp.Problem(cp.Minimize(cp.sum_squares(v - x)), fset.cvxpy_constraints(v)))
    return np.asarray(v.value)


SETS = [
    Simplex(6),
    L1Ball(6, 2.0),
    LpBall(6, 1.5, 1.3),
    LpBall(6, 2.0, 0.7),
    LpBall(6, 3.0, 1.1),
    LpBall(6, math.inf, 0.5),
]


# ------------------------------------------------------------------------------------------ norms


@pytest.mark.parametrize("p", [1.0, 1.5, 2.0, 3.0, 7.5, math.inf])
def test_lp_norm_matches_numpy(p):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 7))
    assert np.allclose(lp_norm(x, p), np.linalg.norm(x, ord=p, axis=1), rtol=1e-13)
    assert np.allclose(lp_norm(x, p, axis=0), np.linalg.norm(x, ord=p, axis=0), rtol=1e-13)
    assert lp_norm(np.zeros(4), p) == 0.0
    big = np.array([1e300, -1e300, 3e299])
    val = lp_norm(big, p)
    assert np.isfinite(val) and val >= 1e300


def test_dual_exponent_and_bad_exponents():
    assert dual_exponent(1) == math.inf
    assert dual_exponent(math.inf) == 1.0
    assert dual_exponent(2) == 2.0
    assert dual_exponent(1.5) == pytest.approx(3.0, rel=1e-15)
    for bad in (0.5, -1, float("nan"), "2", True):
        with pytest.raises(ValueError):
            dual_exponent(bad)


def test_regularity_constant_closed_forms():
    d = 10_000
    L = math.log(d)
    assert regularity_constant(3.0) == 2.0
    assert regularity_constant(2.0, d) == 1.0
    assert regularity_constant(5.0, d) == 4.0  # 5 <= ln 1e4 = 9.21
    # q = inf: r = ln d, kappa = (ln d - 1) d^(2/ln d) = e^2 (ln d - 1)
    assert regularity_constant(math.inf, d) == pytest.approx(math.e**2 * (L - 1.0), rel=1e-12)
    q = 20.0
    assert regularity_constant(q, d) == pytest.approx((L - 1.0) * d ** (2 / L - 2 / q), rel=1e-12)
    assert regularity_constant(1.5, 100) == pytest.approx(100 ** (1 / 3), rel=1e-12)
    assert regularity_constant(math.inf, 5) == pytest.approx(5.0, rel=1e-12)  # r = 2 floor: d^(2/2)
    with pytest.raises(ValueError):
        regularity_constant(math.inf)
    with pytest.raises(ValueError):
        regularity_constant(1.5)
    with pytest.raises(ValueError):
        regularity_constant(0.5, 10)


def test_smooth_dual_exponent_rule_and_equivalence():
    d = 10_000
    assert smooth_dual_exponent(1.0, d) == pytest.approx(math.log(d))
    assert smooth_dual_exponent(1.5, d) == pytest.approx(3.0)
    assert smooth_dual_exponent(1.05, d) == pytest.approx(math.log(d))  # q = 21 > ln d
    assert smooth_dual_exponent(3.0, d) == 2.0
    assert smooth_dual_exponent(1.0, 5) == 2.0
    # equivalence ||x||_q <= ||x||_r <= d^(1/r - 1/q) ||x||_q, factor <= e for r = ln d
    rng = np.random.default_rng(1)
    r = smooth_dual_exponent(1.0, d)
    x = rng.standard_t(2, size=(50, d))
    nq, nr = lp_norm(x, math.inf), lp_norm(x, r)
    assert np.all(nq <= nr * (1 + 1e-12)) and np.all(nr <= math.e * nq * (1 + 1e-12))
    ones = np.ones(d)
    assert lp_norm(ones, r) == pytest.approx(math.e, rel=1e-12)  # the factor is attained


# ------------------------------------------------------------------------------------------ sets


def _brute_lmo(fset, g):
    V = fset.vertices()
    return V[np.argmin(V @ g)]


@pytest.mark.parametrize(
    "fset",
    [Simplex(7), L1Ball(7, 2.5), LpBall(6, math.inf, 0.3), Polytope(np.random.default_rng(3).normal(size=(9, 5)))],
    ids=["simplex", "l1", "cube", "polytope"],
)
def test_lmo_matches_brute_force_over_vertices(fset):
    rng = np.random.default_rng(4)
    G = rng.normal(size=(40, fset.d))
    batched = fset.lmo(G)
    assert batched.shape == G.shape
    for g, v in zip(G, batched, strict=True):
        vb = _brute_lmo(fset, g)
        assert g @ v == pytest.approx(g @ vb, abs=1e-12)
        np.testing.assert_allclose(fset.lmo(g), v)
        assert fset.contains(v)


@pytest.mark.parametrize("p", [1.2, 1.5, 2.0, 3.0, 6.0])
def test_lp_ball_lmo_vs_cvxpy_and_holder(p):
    rng = np.random.default_rng(5)
    fset = LpBall(8, p, 1.7)
    q = dual_exponent(p)
    for g in rng.normal(size=(4, 8)):
        v = fset.lmo(g)
        assert g @ v == pytest.approx(-1.7 * lp_norm(g, q), rel=1e-12)  # Hölder equality
        assert lp_norm(v, p) == pytest.approx(1.7, rel=1e-12)
        var = cp.Variable(8)
        _solve(cp.Problem(cp.Minimize(g @ var), fset.cvxpy_constraints(var)))
        np.testing.assert_allclose(v, var.value, atol=2e-5)
    # g = 0 gives a boundary point, large q does not overflow
    assert lp_norm(fset.lmo(np.zeros(8)), p) == pytest.approx(1.7)
    v = LpBall(8, 1.001, 1.0).lmo(rng.normal(size=8) * 1e200)
    assert np.all(np.isfinite(v)) and lp_norm(v, 1.001) == pytest.approx(1.0, rel=1e-9)


@pytest.mark.parametrize("fset", SETS, ids=repr)
def test_projection_matches_cvxpy(fset):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(6, fset.d)) * 2.0
    X[0] = fset.random_point(rng)  # an interior point is its own projection
    batched = fset.project(X)
    exact_cone = not (isinstance(fset, LpBall) and fset.p not in (1.0, 2.0, math.inf))
    for x, y in zip(X, batched, strict=True):
        y_ref = _cvx_project(fset, x)
        np.testing.assert_allclose(y, y_ref, atol=1e-8 if exact_cone else 2e-5)
        if not exact_cone and lp_norm(x, fset.p) > fset.radius:
            # exact oracle: KKT of min ||y - x||^2 s.t. ||y||_p^p <= r^p: x - y = lam sign(y)|y|^(p-1), lam >= 0
            n = np.sign(y) * np.abs(y) ** (fset.p - 1)
            lam = (x - y) @ n / (n @ n)
            assert lam >= 0 and np.max(np.abs(x - y - lam * n)) <= 1e-10
            assert lp_norm(y, fset.p) == pytest.approx(fset.radius, rel=1e-13)
        np.testing.assert_allclose(fset.project(x), y, atol=1e-14)
        assert fset.contains(y)
    np.testing.assert_allclose(batched[0], X[0], atol=1e-12)


def test_polytope_projection_and_containment():
    # the l1 ball as a polytope: projection must agree with the sort-based one
    V = L1Ball(5, 1.5).vertices()
    poly = Polytope(V)
    rng = np.random.default_rng(7)
    for x in rng.normal(size=(3, 5)):
        np.testing.assert_allclose(poly.project(x), L1Ball(5, 1.5).project(x), atol=1e-9)
    assert poly.contains(np.array([0.5, -0.5, 0.2, 0.0, 0.1]))
    assert not poly.contains(np.array([1.0, -0.6, 0.0, 0.0, 0.0]))
    assert poly.n_vertices == 10
    np.testing.assert_allclose(poly.center(), np.zeros(5), atol=1e-15)


@pytest.mark.parametrize("s", [1.0, 1.5, 2.0, 3.0, math.inf])
def test_diameters_exact(s):
    d = 6
    # simplex, l1 ball, cube: brute force over vertex pairs equals the closed form
    for fset in (Simplex(d), L1Ball(d, 2.0), LpBall(d, math.inf, 0.5)):
        V = fset.vertices()
        brute = max(lp_norm(u - v, s) for u, v in itertools.combinations(V, 2))
        assert fset.diameter(s) == pytest.approx(brute, rel=1e-13)
        assert Polytope(V).diameter(s) == pytest.approx(brute, rel=1e-13)
        cr = max(lp_norm(v - fset.center(), s) for v in V)
        assert fset.center_radius(s) == pytest.approx(cr, rel=1e-13)
    assert Simplex(d).diameter(s) == pytest.approx(1.0 if math.isinf(s) else 2 ** (1 / s))
    # l_p ball, 1 < p < inf: the closed form is attained and never exceeded by random points
    for p in (1.5, 3.0):
        ball = LpBall(d, p, 1.2)
        inv_s = 0.0 if math.isinf(s) else 1 / s
        if inv_s > 1 / p:
            x = 1.2 * d ** (-1 / p) * np.ones(d)
        else:
            x = 1.2 * np.eye(d)[0]
        assert lp_norm(2 * x, s) == pytest.approx(ball.diameter(s), rel=1e-12)
        pts = ball.random_point(np.random.default_rng(8), size=2000)
        assert np.max(lp_norm(pts, s)) <= ball.center_radius(s) * (1 + 1e-12)


@HYP
@given(x=finite_vec, y=finite_vec, k=st.integers(0, len(SETS) - 1))
def test_projection_idempotent_and_nonexpansive(x, y, k):
    fset = SETS[k]
    px, py = fset.project(x), fset.project(y)
    assert fset.contains(px, tol=1e-8)
    np.testing.assert_allclose(fset.project(px), px, atol=1e-9)
    assert np.linalg.norm(px - py) <= np.linalg.norm(x - y) * (1 + 1e-9) + 1e-9
    # variational inequality of the projection: <x - Px, u - Px> <= 0 for u in X (use vertices / lmo points)
    u = fset.lmo(np.asarray(x) - px)
    assert (x - px) @ (u - px) <= 1e-7 * (1 + np.linalg.norm(x))


def test_project_simplex_batched_and_degenerate():
    X = np.array([[0.0, 0.0, 0.0], [1e9, -1e9, 0.0], [0.2, 0.3, 0.5]])
    P = project_simplex(X)
    np.testing.assert_allclose(P, [[1 / 3, 1 / 3, 1 / 3], [1.0, 0.0, 0.0], [0.2, 0.3, 0.5]], atol=1e-15)


def test_vertices_and_sampling():
    rng = np.random.default_rng(9)
    assert L1Ball(4).n_vertices == 8
    assert LpBall(4, math.inf).n_vertices == 16
    assert LpBall(4, math.inf, 2.0).vertices().shape == (16, 4)
    for bad in (lambda: LpBall(4, 1.5).vertices(), lambda: LpBall(4, 3.0).n_vertices):
        with pytest.raises(ValueError):
            bad()
    with pytest.raises(ValueError):
        LpBall(30, math.inf).vertices()
    for fset in (Simplex(5), L1Ball(5, 2.0), LpBall(5, math.inf, 0.5), Polytope(rng.normal(size=(7, 5)))):
        V = fset.vertices()
        S = fset.sample_uniform_vertex(rng, size=50)
        assert S.shape == (50, 5)
        assert all(np.any(np.all(np.isclose(V, s), axis=1)) for s in S)
        assert fset.sample_uniform_vertex(rng).shape == (5,)
        assert np.all(fset.contains(fset.random_point(rng, size=30)))
        assert fset.contains(fset.center())
    # cvxpy constraints model the same set: min <c, x> over them equals the lmo value
    for fset in SETS + [Polytope(rng.normal(size=(7, 6)))]:
        c = rng.normal(size=fset.d)
        var = cp.Variable(fset.d)
        _solve(cp.Problem(cp.Minimize(c @ var), fset.cvxpy_constraints(var)))
        assert c @ var.value == pytest.approx(c @ fset.lmo(c), abs=2e-5)


@pytest.mark.statistical
def test_uniform_vertex_and_ball_sampling_distributions():
    """Chi-square (vertex frequencies) and KS (radial law P(||x||_p <= s r) = s^d) at level 1e-3 each."""
    rng = np.random.default_rng(10)
    S = L1Ball(4, 1.0).sample_uniform_vertex(rng, size=8000)
    idx = np.argmax(np.abs(S), axis=1) + 4 * (S[np.arange(len(S)), np.argmax(np.abs(S), axis=1)] < 0)
    assert stats.chisquare(np.bincount(idx, minlength=8)).pvalue > 1e-3
    for p in (1.0, 1.5, 3.0):
        ball = LpBall(3, p, 2.0)
        radii = lp_norm(ball.random_point(rng, size=4000), p) / 2.0
        assert stats.kstest(radii, lambda s: np.clip(s, 0, 1) ** 3).pvalue > 1e-3


def test_sets_reject_bad_input():
    for ctor in (
        lambda: Simplex(0),
        lambda: Simplex(2.5),
        lambda: LpBall(3, 0.5),
        lambda: LpBall(3, float("nan")),
        lambda: LpBall(3, 2.0, 0.0),
        lambda: L1Ball(3, -1.0),
        lambda: L1Ball(3, float("nan")),
        lambda: Polytope(np.array([[0.0, np.nan]])),
        lambda: Polytope(np.zeros(3)),
    ):
        with pytest.raises(ValueError):
            ctor()
    s = Simplex(3)
    for call in (
        lambda: s.lmo(np.ones(4)),
        lambda: s.project(np.array([0.1, np.nan, 0.2])),
        lambda: s.contains(np.ones((2, 5))),
        lambda: s.diameter(0.5),
        lambda: s.random_point(np.random),
        lambda: s.sample_uniform_vertex(np.random.default_rng(0), size=0),
        lambda: LpBall(3, 1.5).project(np.array([1.0, np.inf, 0.0])),
    ):
        with pytest.raises(ValueError):
            call()


# ------------------------------------------------------------------------------------------ mirror


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


# ------------------------------------------------------------------------------------------ Maurey


def test_maurey_counts_shapes_and_sums():
    rng = np.random.default_rng(13)
    x = rng.dirichlet(np.ones(50))
    for K in (1, 7, 49, 50, 500):  # both the inversion (K < V) and the multinomial path (K >= V)
        c = maurey_counts(x, K, rng, size=20)
        assert c.shape == (20, 50) and c.dtype == np.int64 and np.all(c.sum(axis=1) == K)
        assert maurey_counts(x, K, rng).sum() == K
        s = maurey_sample(x, K, rng)
        assert s.shape == (50,) and s.sum() == pytest.approx(1.0) and np.count_nonzero(s) <= K
    idx = maurey_indices(x, 9, rng, size=4)
    assert idx.shape == (4, 9) and idx.min() >= 0 and idx.max() < 50
    # zero-probability coordinates are never drawn
    z = np.zeros(1000)
    z[[3, 997]] = [0.25, 0.75]
    assert set(np.unique(maurey_indices(z, 5000, rng))) == {3, 997}
    # determinism
    a = maurey_sample(x, 5, np.random.default_rng(1), size=3)
    b = maurey_sample(x, 5, np.random.default_rng(1), size=3)
    np.testing.assert_array_equal(a, b)


@pytest.mark.statistical
@pytest.mark.parametrize("K", [3, 40])
def test_maurey_unbiased_chisquare(K):
    """Pooled counts of N independent K-samples are Multinomial(N K, x): chi-square test, level 1e-3."""
    rng = np.random.default_rng(14)
    x = rng.dirichlet(np.ones(20) * 0.7)
    x = np.maximum(x, 0.01)
    x /= x.sum()
    N = 3000
    counts = maurey_counts(x, K, rng, size=N).sum(axis=0)
    assert stats.chisquare(counts, N * K * x).pvalue > 1e-3
    # the averaged point: mean of N estimates within 5 standard errors of x in every coordinate
    est = maurey_sample(x, K, rng, size=N)
    se = np.sqrt(x * (1 - x) / (K * N))
    assert np.all(np.abs(est.mean(axis=0) - x) <= 5 * se)


@pytest.mark.statistical
def test_maurey_log_weights_and_polytope():
    rng = np.random.default_rng(15)
    logits = np.array([1e12, 1e12 - 1.0, 1e12 - 2.0, -1e12, -np.inf])
    p = np.exp(np.array([0.0, -1.0, -2.0]))
    p /= p.sum()
    c = maurey_counts(logits, 30000, rng, log_weights=True)
    assert c[3] == 0 and c[4] == 0
    assert stats.chisquare(c[:3], 30000 * p).pvalue > 1e-3
    V = rng.normal(size=(6, 3))
    w = rng.dirichlet(np.ones(6))
    est = maurey_sample(w, 4, rng, size=20000, vertices=V)
    assert est.shape == (20000, 3)
    se = est.std(axis=0) / math.sqrt(20000)
    assert np.all(np.abs(est.mean(axis=0) - w @ V) <= 5 * se)
    big = maurey_sample(np.zeros(10**6), 3, rng, log_weights=True)  # uniform over 1e6 coordinates
    assert big.shape == (10**6,) and big.sum() == pytest.approx(1.0)


def test_maurey_bad_input():
    rng = np.random.default_rng(0)
    x = np.array([0.2, 0.3, 0.5])
    for call in (
        lambda: maurey_sample(np.array([0.2, 0.3, 0.6]), 3, rng),
        lambda: maurey_sample(np.array([-0.2, 0.7, 0.5]), 3, rng),
        lambda: maurey_sample(x, 0, rng),
        lambda: maurey_sample(x, 2.5, rng),
        lambda: maurey_sample(x, 3, None),
        lambda: maurey_sample(np.array([0.2, np.nan, 0.8]), 3, rng),
        lambda: maurey_sample(x, 3, rng, vertices=np.ones((4, 2))),
        lambda: maurey_sample(np.full(3, -np.inf), 3, rng, log_weights=True),
        lambda: maurey_counts(x, 3, rng, size=0),
    ):
        with pytest.raises(ValueError):
            call()
