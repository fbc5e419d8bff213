"""Tests of dpsco_lib.problems: datasets, declared constants, exact optima, gaps and validation.

Exact optima and gaps are checked against closed forms and an independent solver (scipy SLSQP);
declared constants (L0, L1) are checked by hypothesis on random data and random pairs of points;
closed-form population moments are checked against Monte-Carlo averages at fixed seeds (5-sigma
bands: false-alarm probability below 1e-6 per check).
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import optimize

from dpsco_lib.geometry.norms import lp_norm
from dpsco_lib.geometry.sets import L1Ball, LpBall, Simplex
from dpsco_lib.problems import (
    BilinearGame,
    Dataset,
    LinearQueryGame,
    hard_least_squares,
    linear_query_game_from_sklearn,
    max_of_losses_from_sklearn,
    random_bilinear_game,
    random_least_squares,
    random_logistic,
    random_quadratic_game,
    random_softmax_game,
)
from dpsco_lib.problems.logistic import PHI_D1_MAX, PHI_D2_MAX, PHI_D3_MAX, RobustRegression

HYP = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PS = [1.0, 1.5, 2.0, math.inf]


# ----------------------------------------------------------------------------------------------
# fixtures: one instance of every family (module scope: cvxpy solves are cached on the instance)
# ----------------------------------------------------------------------------------------------


def _convex_problems() -> dict[str, object]:
    rng = np.random.default_rng(7)
    probs: dict[str, object] = {f"hard_p{p:g}": hard_least_squares(p, 12) for p in PS}
    probs["hard_l1ball"] = hard_least_squares(1.0, 12, set_kind="l1ball")
    probs["rand_simplex"] = random_least_squares(Simplex(8), 1.0, rng)
    probs["rand_l1"] = random_least_squares(L1Ball(8, 2.0), 1.0, rng, k=5)
    probs["rand_lp15"] = random_least_squares(LpBall(8, 1.5), 1.5, rng)
    probs["rand_box"] = random_least_squares(LpBall(6, math.inf), math.inf, rng)
    probs["logistic"] = random_logistic(Simplex(6), 1.0, rng, population_size=3000)
    probs["robust"] = RobustRegression(10, population_size=3000)
    return probs


CONVEX = _convex_problems()


def _saddle_problems() -> dict[str, object]:
    rng = np.random.default_rng(11)
    return {
        "bilinear": random_bilinear_game(7, 9, rng),
        "quadratic": random_quadratic_game(6, 8, rng),
        "softmax": random_softmax_game(6, 5, rng, k=4, tau=0.3),
        "linear_query": linear_query_game_from_sklearn("breast_cancer", n_attributes=4, way=2),
        "max_of_losses": max_of_losses_from_sklearn("breast_cancer", n_groups=3),
    }


SADDLE = _saddle_problems()


def _feasible_points(fset, rng: np.random.Generator, k: int) -> np.ndarray:
    """Random feasible points, half of them on the boundary (vertices / sphere), half inside."""
    inside = fset.random_point(rng, size=k)
    if isinstance(fset, LpBall) and 1 < fset.p < math.inf:
        g = rng.standard_normal((k, fset.d))
        boundary = fset.lmo(g)
    else:
        boundary = fset.sample_uniform_vertex(rng, size=k)
    return np.concatenate([inside, boundary])


# ----------------------------------------------------------------------------------------------
# Dataset
# ----------------------------------------------------------------------------------------------


def test_dataset_len_slicing_replace_one() -> None:
    X = np.arange(12.0).reshape(4, 3)
    data = Dataset(X, np.array([1.0, -1.0, 1.0, -1.0]), {"group": np.array([0, 1, 0, 1])})
    assert len(data) == 4 and data.d == 3
    sub = data[1:3]
    assert isinstance(sub, Dataset) and sub.n == 2
    np.testing.assert_array_equal(sub.X, X[1:3])
    np.testing.assert_array_equal(sub.extras["group"], [1, 0])
    np.testing.assert_array_equal(data[np.array([3, 0])].y, [-1.0, 1.0])
    assert data[2].n == 1
    nb = data.replace_one(2, (np.array([9.0, 9.0, 9.0]), -1.0, {"group": 1}))
    np.testing.assert_array_equal(nb.X[2], [9.0, 9.0, 9.0])
    assert nb.y[2] == -1.0 and nb.extras["group"][2] == 1
    np.testing.assert_array_equal(data.X[2], X[2])  # original untouched
    assert np.sum(np.any(nb.X != data.X, axis=1)) == 1  # neighbouring: exactly one record differs
    nb2 = data.replace_one(0, data[3])
    np.testing.assert_array_equal(nb2.X[0], X[3])
    with pytest.raises(ValueError):
        data.X[0, 0] = 5.0  # read-only


@pytest.mark.parametrize(
    "kwargs",
    [
        {"X": np.ones(3)},
        {"X": np.array([[1.0, np.nan]])},
        {"X": np.ones((3, 2)), "y": np.ones(2)},
        {"X": np.ones((3, 2)), "y": np.array([1.0, np.inf, 0.0])},
        {"X": np.ones((3, 2)), "extras": {"g": np.ones(4)}},
    ],
)
def test_dataset_rejects_bad_input(kwargs) -> None:
    with pytest.raises(ValueError):
        Dataset(**kwargs)


def test_dataset_replace_one_bad_input() -> None:
    data = Dataset(np.zeros((3, 2)), np.zeros(3))
    with pytest.raises(ValueError):
        data.replace_one(3, (np.zeros(2), 0.0))
    with pytest.raises(ValueError):
        data.replace_one(0, (np.zeros(3), 0.0))
    with pytest.raises(ValueError):
        data.replace_one(0, (np.zeros(2), None))
    with pytest.raises(ValueError):
        data.replace_one(0, (np.array([np.nan, 0.0]), 0.0))


# ----------------------------------------------------------------------------------------------
# exact optima: closed forms, cvxpy and an independent solver
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("p", PS)
def test_hard_least_squares_closed_form_optimum_matches_cvxpy(p) -> None:
    prob = hard_least_squares(p, 12)
    x_cf, f_cf = prob.population_optimum()
    x_cv, f_cv = prob.cvxpy_optimum()
    assert abs(f_cv - f_cf) <= 1e-7
    np.testing.assert_allclose(x_cv, x_cf, atol=1e-4)
    alpha = 1.0 if p == 1.0 else (2.0 ** (-(p - 1) / p) if not math.isinf(p) else 1.0)
    f_expected = (2.0 - 1.0) ** 2 / 2 if math.isinf(p) else (2.0 - alpha) ** 2 / 2
    assert abs(f_cf - f_expected) <= 1e-12
    assert abs(prob.excess_risk(x_cv)) <= 1e-7


def _slsqp_simplex(fun, grad, d: int) -> tuple[np.ndarray, float]:
    """Independent check: SLSQP from several starts on the simplex."""
    best = None
    for x0 in (np.full(d, 1.0 / d), *np.eye(d)[:3] * 0.9 + 0.1 / d):
        res = optimize.minimize(
            fun, x0, jac=grad, method="SLSQP", bounds=[(0.0, 1.0)] * d,
            constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1.0, "jac": lambda x: np.ones_like(x)}],
            options={"ftol": 1e-15, "maxiter": 1000},
        )
        if best is None or res.fun < best.fun:
            best = res
    return best.x, float(best.fun)


@pytest.mark.parametrize("seed", range(4))
def test_least_squares_cvxpy_matches_scipy_slsqp(seed) -> None:
    rng = np.random.default_rng(100 + seed)
    d = 10
    prob = random_least_squares(Simplex(d), 1.0, rng, w_norm=1.5 + seed)
    x_cv, f_cv = prob.population_optimum()
    S, mu = prob.sigma_dense(), prob.mu
    x_sq, f_sq = _slsqp_simplex(lambda x: 0.5 * (x @ S @ x - 2 * mu @ x + prob.s2), lambda x: S @ x - mu, d)
    assert abs(f_cv - f_sq) <= 1e-7
    assert prob.excess_risk(x_cv) <= 1e-7 and prob.excess_risk(x_cv) >= -1e-7
    # cvxpy is never worse than the independent solver beyond tolerance
    assert f_cv <= f_sq + 1e-9


def test_logistic_cvxpy_matches_scipy_slsqp() -> None:
    prob = CONVEX["logistic"]
    x_cv, f_cv = prob.population_optimum()
    P = prob.population
    x_sq, f_sq = _slsqp_simplex(
        lambda x: float(np.mean(np.logaddexp(0, -P.y * (P.X @ x)))), lambda x: prob.population_grad(x), prob.d
    )
    assert abs(f_cv - f_sq) <= 1e-7
    assert abs(prob.excess_risk(x_cv)) <= 1e-7
    assert prob.exact_population is False


@pytest.mark.parametrize("name", sorted(CONVEX))
def test_excess_risk_nonnegative_and_zero_at_optimum(name) -> None:
    prob = CONVEX[name]
    x_star, f_star = prob.population_optimum()
    assert abs(prob.excess_risk(x_star)) <= 1e-7
    rng = np.random.default_rng(3)
    for x in _feasible_points(prob.feasible_set, rng, 10):
        assert prob.excess_risk(x) >= -1e-7


def test_cvxpy_solve_time_d1000_quadratic_over_simplex(capsys) -> None:
    """Reports the time of one exact solve (no assertion on time)."""
    prob = random_least_squares(Simplex(1000), 1.0, np.random.default_rng(5), k=1000)
    t0 = time.perf_counter()
    x, f = prob.population_optimum()
    elapsed = time.perf_counter() - t0
    with capsys.disabled():
        print(f"\n[cvxpy/Clarabel] dense d = 1000 quadratic over the simplex: {elapsed:.2f} s")
    g = prob.population_grad(x)  # KKT: on the support the gradient is minimal (up to solver tolerance)
    assert np.min(g[x > 1e-6]) - np.min(g) <= 1e-6 and np.max(g[x > 1e-6]) - np.min(g) <= 1e-6


# ----------------------------------------------------------------------------------------------
# closed-form population moments against Monte Carlo
# ----------------------------------------------------------------------------------------------


@pytest.mark.statistical
@pytest.mark.parametrize("name", ["hard_p1", "hard_p1.5", "hard_p2", "hard_pinf", "rand_lp15", "rand_box"])
def test_least_squares_population_risk_matches_monte_carlo(name) -> None:
    prob = CONVEX[name]
    rng = np.random.default_rng(21)
    data = prob.sample(200_000, rng)
    for x in _feasible_points(prob.feasible_set, rng, 2):
        losses = prob.loss(x, data)
        se = losses.std() / math.sqrt(data.n)
        assert abs(losses.mean() - prob.population_risk(x)) <= 5 * se + 1e-12
        G = prob.grad(x, data)
        se_g = G.std(axis=0) / math.sqrt(data.n)
        assert np.all(np.abs(G.mean(axis=0) - prob.population_grad(x)) <= 5 * se_g + 1e-12)


@pytest.mark.statistical
@pytest.mark.parametrize("name", ["bilinear", "quadratic", "softmax", "linear_query", "max_of_losses"])
def test_saddle_population_value_matches_monte_carlo(name) -> None:
    prob = SADDLE[name]
    rng = np.random.default_rng(22)
    data = prob.sample(100_000, rng)
    for _ in range(2):
        x, y = prob.x_set.random_point(rng), prob.y_set.random_point(rng)
        vals = prob.loss(x, y, data)
        assert abs(vals.mean() - prob.population_value(x, y)) <= 5 * vals.std() / math.sqrt(data.n) + 1e-12


# ----------------------------------------------------------------------------------------------
# saddle points and duality gaps
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SADDLE))
def test_duality_gap_of_exact_saddle_point(name) -> None:
    prob = SADDLE[name]
    x, y, v = prob.saddle_point()
    assert prob.x_set.contains(x) and prob.y_set.contains(y)
    assert prob.duality_gap(x, y) <= 1e-7
    assert abs(prob.population_value(x, y) - v) <= 1e-12
    rng = np.random.default_rng(4)
    for _ in range(5):  # saddle inequalities F(x*, y') <= F(x*, y*) <= F(x', y*)
        xr, yr = prob.x_set.random_point(rng), prob.y_set.random_point(rng)
        assert prob.population_value(x, yr) <= v + 1e-7
        assert prob.population_value(xr, y) >= v - 1e-7
        assert prob.duality_gap(xr, yr) >= -1e-9


def test_bilinear_gap_closed_form_matches_cvxpy() -> None:
    prob = SADDLE["bilinear"]
    rng = np.random.default_rng(8)
    for _ in range(5):
        x, y = prob.x_set.random_point(rng), prob.y_set.random_point(rng)
        closed = prob.duality_gap(x, y)
        assert closed == pytest.approx(np.max(x @ prob.A) - np.min(prob.A @ y), abs=1e-15)
        assert abs(closed - prob.duality_gap(x, y, method="cvxpy")) <= 1e-7
    with pytest.raises(ValueError):
        prob.duality_gap(x, y, method="nope")


def test_bilinear_saddle_known_game() -> None:
    """Matching pennies: value 0, unique saddle point (1/2, 1/2)."""
    game = BilinearGame(np.array([[1.0, -1.0], [-1.0, 1.0]]), noise=0.0)
    x, y, v = game.saddle_point()
    np.testing.assert_allclose(x, [0.5, 0.5], atol=1e-8)
    np.testing.assert_allclose(y, [0.5, 0.5], atol=1e-8)
    assert abs(v) <= 1e-9
    assert game.duality_gap([1.0, 0.0], [1.0, 0.0]) == pytest.approx(2.0)


def _to_simplex(v: np.ndarray) -> np.ndarray:
    """Renormalize an SLSQP iterate (which may step a hair outside the bounds) onto the simplex."""
    v = np.clip(v, 0.0, None)
    return v / max(v.sum(), 1e-12)


@pytest.mark.parametrize("name", ["quadratic", "softmax", "max_of_losses"])
def test_best_responses_match_scipy(name) -> None:
    """cvxpy best responses against SLSQP on the simplex (the y-player always lives on a simplex)."""
    prob = SADDLE[name]
    rng = np.random.default_rng(9)
    x = prob.x_set.random_point(rng)
    _, vmax = prob.best_response_y(x)
    _, f_sq = _slsqp_simplex(lambda yy: -prob.population_value(x, _to_simplex(yy)), None, prob.dy)
    assert abs(vmax + f_sq) <= 1e-6
    if isinstance(prob.x_set, Simplex):
        y = prob.y_set.random_point(rng)
        _, vmin = prob.best_response_x(y)
        _, f_sq = _slsqp_simplex(lambda xx: prob.population_value(_to_simplex(xx), y), None, prob.dx)
        assert abs(vmin - f_sq) <= 1e-6


def test_linear_query_game_exact_structure() -> None:
    game = SADDLE["linear_query"]
    assert isinstance(game, LinearQueryGame)
    h = game.histogram
    assert game.duality_gap(h, np.full(game.dy, 1.0 / game.dy)) == pytest.approx(0.0, abs=1e-12)
    rng = np.random.default_rng(2)
    p = game.x_set.random_point(rng)
    _, vmax = game.best_response_y(p)
    assert vmax == pytest.approx(game.max_query_error(p), abs=1e-12)
    assert game.max_query_error(h) == 0.0
    # queries of a 2-way marginal game on 4 attributes: C(4,2) * 4 = 24 queries, N = 16
    assert game.n_queries == 24 and game.N == 16
    data = game.dataset()
    assert data.n == 569 and game.validate_data(data) is data


# ----------------------------------------------------------------------------------------------
# declared constants are true bounds (hypothesis)
# ----------------------------------------------------------------------------------------------


@HYP
@given(seed=st.integers(0, 2**32 - 1), name=st.sampled_from(sorted(CONVEX)))
def test_convex_L0_and_L1_hold(seed, name) -> None:
    prob = CONVEX[name]
    rng = np.random.default_rng(seed)
    data = prob.sample(64, rng)
    xs = _feasible_points(prob.feasible_set, rng, 3)
    q, p = prob.q, prob.p
    G = [prob.grad(x, data) for x in xs]
    for g in G:
        assert np.max(lp_norm(g, q, axis=-1)) <= prob.L0 * (1 + 1e-9)
    for i in range(len(xs)):
        for j in range(i + 1, len(xs)):
            dx = float(lp_norm(xs[i] - xs[j], p))
            dg = np.max(lp_norm(G[i] - G[j], q, axis=-1))
            assert dg <= prob.L1 * dx * (1 + 1e-9) + 1e-12


@HYP
@given(seed=st.integers(0, 2**32 - 1), name=st.sampled_from(sorted(SADDLE)))
def test_saddle_L0_and_L1_hold(seed, name) -> None:
    prob = SADDLE[name]
    rng = np.random.default_rng(seed)
    data = prob.sample(32, rng)
    k = 4
    xs = np.concatenate([prob.x_set.random_point(rng, size=k - 1), prob.x_set.sample_uniform_vertex(rng, size=1)])
    ys = np.concatenate([prob.y_set.random_point(rng, size=k - 1), prob.y_set.sample_uniform_vertex(rng, size=1)])
    gx, gy = prob.grad_x(xs, ys, data), prob.grad_y(xs, ys, data)  # batched (k, n, d)
    np.testing.assert_allclose(gx[1], prob.grad_x(xs[1], ys[1], data), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gy[2], prob.grad_y(xs[2], ys[2], data), rtol=1e-12, atol=1e-12)
    assert np.max(np.abs(gx)) <= prob.L0 * (1 + 1e-9)
    assert np.max(np.abs(gy)) <= prob.L0 * (1 + 1e-9)
    for i in range(k):
        for j in range(i + 1, k):
            dist = np.abs(xs[i] - xs[j]).sum() + np.abs(ys[i] - ys[j]).sum()
            assert np.max(np.abs(gx[i] - gx[j])) <= prob.L1 * dist * (1 + 1e-9) + 1e-12
            assert np.max(np.abs(gy[i] - gy[j])) <= prob.L1 * dist * (1 + 1e-9) + 1e-12


@HYP
@given(seed=st.integers(0, 2**32 - 1))
def test_saddle_gradients_match_finite_differences(seed) -> None:
    rng = np.random.default_rng(seed)
    for prob in SADDLE.values():
        data = prob.sample(3, rng)
        x, y = prob.x_set.random_point(rng), prob.y_set.random_point(rng)
        h = 1e-6
        ex = rng.standard_normal(prob.dx)
        ey = rng.standard_normal(prob.dy)
        fd_x = (prob.loss(x + h * ex, y, data) - prob.loss(x - h * ex, y, data)) / (2 * h)
        fd_y = (prob.loss(x, y + h * ey, data) - prob.loss(x, y - h * ey, data)) / (2 * h)
        np.testing.assert_allclose(fd_x, prob.grad_x(x, y, data) @ ex, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(fd_y, prob.grad_y(x, y, data) @ ey, rtol=1e-5, atol=1e-6)


@HYP
@given(seed=st.integers(0, 2**32 - 1))
def test_softmax_game_L2_holds(seed) -> None:
    """Second-order smoothness: the Hessian of lx tau lse(Cx/tau), (lx/tau) C^T (diag s - s s^T) C with
    s = softmax(Cx/tau), changes by at most L2 ||x - x'||_1 entrywise (the bilinear part has constant
    second derivatives; the y block is symmetric)."""
    prob = SADDLE["softmax"]
    rng = np.random.default_rng(seed)
    C, tau, lam = prob.C, prob.tau, prob.lam_x

    def hess(x: np.ndarray) -> np.ndarray:
        s = np.exp(C @ x / tau - np.max(C @ x / tau))
        s /= s.sum()
        return lam / tau * C.T @ (np.diag(s) - np.outer(s, s)) @ C

    xs = np.concatenate([prob.x_set.random_point(rng, size=3), prob.x_set.sample_uniform_vertex(rng, size=2)])
    for i in range(len(xs)):
        for j in range(i + 1, len(xs)):
            diff = np.max(np.abs(hess(xs[i]) - hess(xs[j])))
            assert diff <= prob.L2 * np.abs(xs[i] - xs[j]).sum() * (1 + 1e-9)


def test_robust_regression_phi_constants_are_true_bounds() -> None:
    t = np.linspace(-50, 50, 2_000_001)
    d1 = 2 * t / (1 + t * t) ** 2
    d2 = (2 - 6 * t * t) / (1 + t * t) ** 3
    d3 = 24 * t * (t * t - 1) / (1 + t * t) ** 4
    assert np.max(np.abs(d1)) <= PHI_D1_MAX and np.max(np.abs(d1)) >= PHI_D1_MAX * (1 - 1e-9)
    assert np.max(np.abs(d2)) <= PHI_D2_MAX and np.max(np.abs(d2)) >= PHI_D2_MAX * (1 - 1e-9)
    assert np.max(np.abs(d3)) <= PHI_D3_MAX and np.max(np.abs(d3)) >= PHI_D3_MAX * (1 - 1e-6)


def test_robust_regression_planted_optimum() -> None:
    prob = CONVEX["robust"]
    x_star, f_star = prob.population_optimum()
    assert f_star == pytest.approx(1 - math.atan(prob.noise) / prob.noise, abs=1e-15)
    assert prob.population_risk(x_star) == pytest.approx(f_star, abs=1e-14)
    assert prob.frank_wolfe_gap(x_star) <= 1e-12
    rng = np.random.default_rng(12)
    for x in prob.feasible_set.random_point(rng, size=20):
        assert prob.population_risk(x) >= f_star - 1e-14
        assert prob.frank_wolfe_gap(x) >= -1e-12


@pytest.mark.statistical
def test_robust_regression_population_risk_matches_monte_carlo() -> None:
    prob = CONVEX["robust"]
    rng = np.random.default_rng(13)
    data = prob.sample(100_000, rng)
    x = prob.feasible_set.random_point(rng)
    losses = prob.loss(x, data)
    # the population is itself a 3000-sample average over features: both errors enter
    se = losses.std() * math.sqrt(1 / data.n + 1 / 3000)
    assert abs(losses.mean() - prob.population_risk(x)) <= 5 * se


# ----------------------------------------------------------------------------------------------
# validation: bounds, clipping, bad input
# ----------------------------------------------------------------------------------------------


def test_data_outside_bound_rejected_and_clip_recorded() -> None:
    prob = CONVEX["hard_p1.5"]
    data = prob.sample(10, np.random.default_rng(0))
    assert prob.validate_data(data) is data
    X = np.array(data.X)
    X[3] *= 1.5
    bad = Dataset(X, data.y)
    with pytest.raises(ValueError, match="bound"):
        prob.validate_data(bad)
    fixed = prob.validate_data(bad, clip=True)
    assert fixed.n_clipped == 1
    assert np.max(lp_norm(fixed.X, prob.q, axis=-1)) <= prob.B_a * (1 + 1e-12)
    np.testing.assert_array_equal(fixed.X[:3], data.X[:3])
    y = np.array(data.y)
    y[0] = 10.0
    with pytest.raises(ValueError):
        prob.validate_data(Dataset(data.X, y))
    assert prob.validate_data(Dataset(data.X, y), clip=True).n_clipped == 1


@pytest.mark.parametrize("name", sorted(SADDLE))
def test_saddle_data_outside_bound_rejected(name) -> None:
    prob = SADDLE[name]
    data = prob.sample(5, np.random.default_rng(1))
    assert prob.validate_data(data) is data
    X = np.array(data.X)
    X[2, 0] = 7.0
    bad = Dataset(X, data.y, dict(data.extras))
    with pytest.raises(ValueError):
        prob.validate_data(bad)
    fixed = prob.validate_data(bad, clip=True)
    assert fixed.n_clipped == 1
    assert prob.validate_data(fixed) is fixed


def test_convex_bad_inputs_raise() -> None:
    prob = CONVEX["rand_simplex"]
    data = prob.sample(4, np.random.default_rng(0))
    x = prob.feasible_set.center()
    with pytest.raises(ValueError):
        prob.grad(np.ones(prob.d + 1) / (prob.d + 1), data)  # wrong dimension
    with pytest.raises(ValueError):
        prob.loss(np.full(prob.d, np.nan), data)  # NaN point
    with pytest.raises(ValueError):
        prob.population_risk(np.ones(prob.d))  # infeasible where feasibility is required
    with pytest.raises(ValueError):
        prob.excess_risk(-x)
    with pytest.raises(ValueError):
        prob.grad(x, Dataset(np.ones((2, prob.d + 1)), np.ones(2)))  # wrong data width
    with pytest.raises(ValueError):
        prob.grad(x, Dataset(np.ones((2, prob.d))))  # missing labels
    with pytest.raises(ValueError):
        prob.grad(x, np.ones((2, prob.d)))  # not a Dataset
    with pytest.raises(ValueError):
        prob.sample(0, np.random.default_rng(0))
    with pytest.raises(ValueError):
        prob.sample(3, 42)  # not a Generator
    with pytest.raises(ValueError):
        hard_least_squares(3.0, 10)
    with pytest.raises(ValueError):
        hard_least_squares(1.0, 10, c=0.5)
    with pytest.raises(ValueError):
        hard_least_squares(1.0, 10, set_kind="cube")


def test_saddle_bad_inputs_raise() -> None:
    prob = SADDLE["quadratic"]
    data = prob.sample(4, np.random.default_rng(0))
    x, y = prob.x_set.center(), prob.y_set.center()
    with pytest.raises(ValueError):
        prob.grad_x(x[:-1], y, data)
    with pytest.raises(ValueError):
        prob.grad_y(x, np.full(prob.dy, np.nan), data)
    with pytest.raises(ValueError):
        prob.grad_x(np.stack([x, x]), y, data)  # batch sizes differ
    with pytest.raises(ValueError):
        prob.population_value(2 * x, y)  # infeasible
    with pytest.raises(ValueError):
        prob.duality_gap(x, -y)
    with pytest.raises(ValueError):
        prob.loss(x, y, Dataset(np.ones((2, 3))))
    with pytest.raises(ValueError):
        random_quadratic_game(0, 3, np.random.default_rng(0))
    with pytest.raises(ValueError):
        BilinearGame(np.array([[np.nan]]))


def test_sampling_is_deterministic_given_the_seed() -> None:
    for prob in (*CONVEX.values(), *SADDLE.values()):
        a = prob.sample(20, np.random.default_rng(99))
        b = prob.sample(20, np.random.default_rng(99))
        np.testing.assert_array_equal(a.X, b.X)
        if a.y is not None:
            np.testing.assert_array_equal(a.y, b.y)
