"""The problem contract (dpsco_lib.problems.base) over every convex and saddle problem: declared constants, exact optima
and gaps, population values, validation and solvers.

Exact optima and gaps are checked against closed forms and an independent solver (scipy SLSQP); population values
against Monte Carlo at fixed seeds.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpsco_lib.geometry import lp_norm
from dpsco_lib.geometry.sets import L1Ball, LpBall, Simplex
from dpsco_lib.problems import (
    BilinearGame,
    Dataset,
    hard_least_squares,
    linear_query_game_from_sklearn,
    max_of_losses_from_sklearn,
    random_bilinear_game,
    random_least_squares,
    random_logistic,
    random_quadratic_game,
    random_softmax_game,
    solve_cvxpy,
)
from dpsco_lib.problems.logistic import RobustRegression

HYP = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


PS = [1.0, 1.5, 2.0, math.inf]


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


# bad input that was once accepted: each must raise naming the parameter -------------------------------------
def test_solve_cvxpy_falls_back_and_raises_runtime_error() -> None:
    from scipy import optimize

    cp = pytest.importorskip("cvxpy")
    # Clarabel raised a bare cvxpy SolverError on this well-posed instance
    P = max_of_losses_from_sklearn("breast_cancer", n_groups=4, radius=3.16)
    x, y, value = P.saddle_point()
    assert np.abs(x).sum() <= 3.16 * (1 + 1e-9) and y.sum() == pytest.approx(1.0)
    # independent check: scipy SLSQP on min t s.t. L_k(u - w) <= t, sum(u + w) <= R, u, w >= 0
    d = P.dx
    cons = [
        {"type": "ineq", "fun": lambda z: z[-1] - P.group_losses(z[:d] - z[d : 2 * d])},
        {"type": "ineq", "fun": lambda z: 3.16 - z[: 2 * d].sum()},
    ]
    z0 = np.r_[np.zeros(2 * d), 1.0]
    ref = optimize.minimize(
        lambda z: z[-1], z0, jac=lambda z: np.r_[np.zeros(2 * d), 1.0], constraints=cons,
        bounds=[(0, None)] * (2 * d) + [(None, None)], method="SLSQP", options={"maxiter": 1000, "ftol": 1e-12},
    )
    assert ref.success
    assert value == pytest.approx(ref.fun, abs=1e-6)
    assert P.group_losses(x).max() == pytest.approx(ref.fun, abs=1e-6)

    # a genuinely failing solve raises the documented RuntimeError (not SolverError)
    v = cp.Variable(2)
    infeasible = cp.Problem(cp.Minimize(cp.sum(v)), [v >= 1, v <= 0])
    with pytest.raises(RuntimeError, match=r"cvxpy failed to solve the test LP .*solvers tried: CLARABEL"):
        solve_cvxpy(infeasible, "the test LP")

    class _AlwaysFails(cp.Problem):
        def solve(self, *args, **kwargs):
            raise cp.error.SolverError("solver crashed")

    broken = _AlwaysFails(cp.Minimize(cp.sum(v)), [v >= 0])
    with pytest.raises(RuntimeError, match=r"solvers tried: CLARABEL \(tight\): SolverError .*SCS: SolverError"):
        solve_cvxpy(broken, "a broken problem")
