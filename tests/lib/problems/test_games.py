"""Tests of dpsco_lib.problems.games: bilinear games, their closed-form gaps against cvxpy and a known saddle point."""

from __future__ import annotations

import numpy as np
import pytest

from dpsco_lib.problems import (
    BilinearGame,
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
