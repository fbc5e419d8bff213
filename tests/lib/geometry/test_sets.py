"""Tests of dpsco_lib.geometry.sets: linear minimization oracles, projections, diameters, vertices and sampling of the
feasible sets (Spec S1, F1).
"""

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
    dual_exponent,
    lp_norm,
    project_l1_ball,
    project_simplex,
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


# bad input that was once accepted: each must raise naming the parameter -------------------------------------
def test_project_simplex_rejects_negative_mass() -> None:
    # returned [0, 0]
    with pytest.raises(ValueError, match=r"z must be > 0, got -1\.0"):
        project_simplex([0.3, 0.2], -1.0)


def test_project_l1_ball_rejects_negative_radius() -> None:
    # returned [0, 0]
    with pytest.raises(ValueError, match=r"radius must be > 0, got -1\.0"):
        project_l1_ball([0.3, 0.2], -1.0)


def test_project_simplex_rejects_nan() -> None:
    # returned NaN silently
    with pytest.raises(ValueError, match=r"x must be finite, got 1 non-finite entries"):
        project_simplex([math.nan, 1.0])
