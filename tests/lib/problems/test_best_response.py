"""Tests of dpsco_lib.problems.best_response: exact best responses against scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize

from dpsco_lib.geometry.sets import Simplex
from dpsco_lib.problems import (
    linear_query_game_from_sklearn,
    max_of_losses_from_sklearn,
    random_bilinear_game,
    random_quadratic_game,
    random_softmax_game,
)


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
