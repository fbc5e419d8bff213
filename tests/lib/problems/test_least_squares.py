"""Tests of dpsco_lib.problems.least_squares: closed-form optima against cvxpy and scipy, population risk, and the row-
gradient fast path against the reference gradient.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from dpsco_lib.geometry.sets import L1Ball, LpBall, Simplex
from dpsco_lib.problems import (
    hard_least_squares,
    random_least_squares,
    random_logistic,
)
from dpsco_lib.problems.least_squares import LeastSquares, row_grad_oracle
from dpsco_lib.problems.logistic import RobustRegression

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


def _feasible_points(fset, rng: np.random.Generator, k: int) -> np.ndarray:
    """Random feasible points, half of them on the boundary (vertices / sphere), half inside."""
    inside = fset.random_point(rng, size=k)
    if isinstance(fset, LpBall) and 1 < fset.p < math.inf:
        g = rng.standard_normal((k, fset.d))
        boundary = fset.lmo(g)
    else:
        boundary = fset.sample_uniform_vertex(rng, size=k)
    return np.concatenate([inside, boundary])


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


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


# ---------------------------------------------------------------------------------------------------------
# least-squares row oracle
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["simplex", "l1ball", "p1.5", "random"])
def test_row_gradient_is_bit_identical_to_grad(kind):
    rng = np.random.default_rng(3)
    d = 257
    if kind == "random":
        prob = random_least_squares(L1Ball(d, 2.0), 1.0, rng, k=7)
    elif kind == "p1.5":
        prob = hard_least_squares(1.5, d)
    else:
        prob = hard_least_squares(1.0, d, set_kind=kind)
    data = prob.sample(300, rng)
    row = row_grad_oracle(prob)
    assert row is not None
    out = np.empty(d)
    for t in range(data.n):
        x = rng.standard_normal(d) * 10.0 ** rng.uniform(-8, 2)
        ref = prob._grad(x, data[t:t + 1])[0]
        got = row(x, data.X, data.y, t, out)
        assert got is out
        assert _same_bits(got, ref), t


def test_row_oracle_only_for_unmodified_least_squares():
    class Doubled(LeastSquares):
        def _grad(self, x, data):
            return 2.0 * super()._grad(x, data)

    kw = dict(feature_bound=1.0, label_bound=1.0, sigma_diag=np.ones(5), sigma_factor=None, mu=np.zeros(5),
              s2=1.0, sampler=None)
    assert row_grad_oracle(LeastSquares(Simplex(5), 1.0, **kw)) is not None
    assert row_grad_oracle(Doubled(Simplex(5), 1.0, **kw)) is None
    assert row_grad_oracle(object()) is None
