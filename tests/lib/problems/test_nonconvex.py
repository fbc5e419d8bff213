"""Tests of the nonconvex robust regression problem (dpsco_lib.problems.nonconvex; Spec N1).

Its constants are true bounds; population gradients, Frank-Wolfe gaps and Moreau envelopes are exact; bad input
is refused.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from dpsco_lib.geometry.sets import L1Ball, LpBall, Simplex
from dpsco_lib.problems import Dataset
from dpsco_lib.problems.nonconvex import NonconvexRegression, phi_derivative_bound, random_nonconvex_regression


@pytest.fixture(scope="module")
def smooth_pr():
    return random_nonconvex_regression(6, 80, np.random.default_rng(0), kind="smooth", sparsity=1,
                                       outlier_fraction=0.2)


# ---------------------------------------------------------------------------------------------------------
# the problem: constants are true bounds, measures are exact
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["smooth", "nonsmooth"])
def test_phi_derivative_bound_is_the_maximum(kind):
    for tau, rho0, t_max in [(0.3, 0.2, 2.0), (0.5, 0.9, 3.0), (2.0, 0.1, 1.0), (0.1, 0.0, 1.0)]:
        pr = NonconvexRegression(np.ones((1, 1)), np.zeros(1), L1Ball(1, 1.0), kind=kind, tau=tau, rho0=rho0,
                                 label_bound=t_max - 1.0)
        t = np.linspace(1e-12, t_max, 200_001)
        brute = float(np.max(np.abs(pr.dphi(t))))
        assert phi_derivative_bound(kind, tau, rho0, t_max) == pytest.approx(brute, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("kind", ["smooth", "nonsmooth"])
def test_constants_are_true_bounds(kind):
    pr = random_nonconvex_regression(5, 50, np.random.default_rng(2), kind=kind)
    rng = np.random.default_rng(3)
    data = pr.sample(400, rng)
    X = pr.feasible_set.random_point(rng, size=60)
    Y = pr.feasible_set.random_point(rng, size=60)
    for x, y in zip(X, Y, strict=True):
        gx, gy = pr.grad(x, data), pr.grad(y, data)
        assert np.max(np.abs(gx)) <= pr.L0 * (1 + 1e-12)
        assert np.max(np.linalg.norm(gx, axis=1)) <= pr.lipschitz_l2 * (1 + 1e-12)
        fx, fy = pr.loss(x, data), pr.loss(y, data)
        # weak convexity: f(y) >= f(x) + <g(x), y - x> - rho/2 ||y - x||^2 (subgradient inequality of f + rho/2||.||^2)
        assert np.all(fy >= fx + gx @ (y - x) - 0.5 * pr.rho * np.sum((y - x) ** 2) - 1e-12)
        if kind == "smooth":
            lhs = np.max(np.abs(gx - gy), axis=1)
            assert np.all(lhs <= pr.L1 * np.abs(x - y).sum() * (1 + 1e-12))
    if kind == "nonsmooth":
        assert pr.L1 == np.inf
    assert pr.rho_population <= pr.rho


def test_population_gradient_matches_finite_differences(smooth_pr):
    x = smooth_pr.feasible_set.random_point(np.random.default_rng(4)) * 0.5
    g = smooth_pr.population_grad(x)
    h = 1e-6
    fd = np.array([(smooth_pr.population_risk(x + h * e) - smooth_pr.population_risk(x - h * e)) / (2 * h)
                   for e in np.eye(smooth_pr.d)])
    np.testing.assert_allclose(g, fd, atol=1e-7)
    # the population is the atoms: the mean loss over them
    assert smooth_pr.population_risk(x) == pytest.approx(float(np.mean(smooth_pr.phi(
        smooth_pr.atoms_X @ x - smooth_pr.atoms_y))), rel=1e-14)


@pytest.mark.parametrize("set_kind", ["l1ball", "simplex"])
def test_frank_wolfe_gap_against_vertex_enumeration(set_kind):
    pr = random_nonconvex_regression(3, 30, np.random.default_rng(5), kind="smooth", set_kind=set_kind)
    X = pr.feasible_set.random_point(np.random.default_rng(6), size=25)
    V = pr.feasible_set.vertices()
    gaps = pr.frank_wolfe_gaps(X)
    for x, gap in zip(X, gaps, strict=True):
        g = pr.population_grad(x)
        brute = max(float(g @ (x - v)) for v in V)
        assert gap == pytest.approx(brute, abs=1e-13)
        assert gap == pytest.approx(pr.frank_wolfe_gap(x), abs=1e-13)  # base-class path (lmo)
        assert gap >= -1e-13


@pytest.mark.parametrize("kind", ["smooth", "nonsmooth"])
def test_moreau_prox_against_brute_force(kind):
    # d = 2: minimize F(y) + beta/2 ||y - x||^2 over the l1 ball by a fine grid + Nelder-Mead polish.
    pr = random_nonconvex_regression(2, 25, np.random.default_rng(7), kind=kind, sparsity=1)
    beta = pr.default_beta()
    grid = np.linspace(-1, 1, 401)
    G = np.array(list(itertools.product(grid, grid)))
    G = G[np.abs(G).sum(axis=1) <= 1.0]
    R = G @ pr.atoms_X.T - pr.atoms_y
    Fg = pr.phi(R).mean(axis=1)
    for x in [np.array([0.3, -0.2]), np.array([-0.5, 0.5]), np.zeros(2)]:
        obj = Fg + 0.5 * beta * np.sum((G - x) ** 2, axis=1)
        y0 = G[int(np.argmin(obj))]

        def f(y, x=x):
            pen = 1e3 * max(0.0, np.abs(y).sum() - 1.0)
            yp = pr.feasible_set.project(y)
            return pr.population_risk(yp) + 0.5 * beta * float(np.sum((yp - x) ** 2)) + pen

        brute = minimize(f, y0, method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-14}).x
        prox = pr.moreau_prox(x)
        np.testing.assert_allclose(prox, pr.feasible_set.project(brute), atol=2e-5)
        assert pr.moreau_gradient_norm(x) == pytest.approx(beta * np.linalg.norm(x - prox), rel=1e-12)
        assert pr.moreau_envelope(x) <= pr.population_risk(x) + 1e-9


def test_moreau_gradient_vanishes_at_a_stationary_point(smooth_pr):
    # run exact (population) projected gradient to a stationary point; both measures must be ~0 there
    pr = smooth_pr
    x = pr.feasible_set.center()
    for _ in range(3000):
        x = pr.feasible_set.project(x - 0.1 * pr.population_grad(x))
    assert pr.moreau_gradient_norm(x) < 1e-5
    assert pr.frank_wolfe_gaps(x)[0] < 1e-5


def test_problem_validation():
    A, b = np.ones((3, 2)), np.zeros(3)
    with pytest.raises(ValueError, match="feasible_set"):
        NonconvexRegression(A, b, LpBall(2, 2.0))
    with pytest.raises(ValueError, match="kind"):
        NonconvexRegression(A, b, L1Ball(2), kind="cubic")
    with pytest.raises(ValueError, match="rho0"):
        NonconvexRegression(A, b, L1Ball(2), rho0=-1.0)
    with pytest.raises(ValueError, match="atoms_X"):
        NonconvexRegression(np.ones((3, 4)), b, L1Ball(2))
    with pytest.raises(ValueError, match="declared bounds"):
        NonconvexRegression(2 * A, b, L1Ball(2), feature_bound=1.0)
    pr = NonconvexRegression(A, b, Simplex(2))
    with pytest.raises(ValueError, match="declared bounds"):
        pr.validate_data(Dataset(5 * A, b))
    with pytest.raises(ValueError, match="beta"):
        pr.moreau_prox(np.array([0.5, 0.5]), beta=0.5 * pr.rho_population)
    with pytest.raises(ValueError, match="feasible set"):
        pr.frank_wolfe_gaps(np.array([2.0, 2.0]))
    with pytest.raises(ValueError, match="set_kind"):
        random_nonconvex_regression(3, 5, np.random.default_rng(0), set_kind="cube")
