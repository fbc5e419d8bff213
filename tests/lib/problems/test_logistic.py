"""Tests of dpsco_lib.problems.logistic: logistic regression against scipy, the robust regression constants, planted
optimum and population risk.
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
from dpsco_lib.problems.logistic import PHI_D1_MAX, PHI_D2_MAX, PHI_D3_MAX, RobustRegression

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
