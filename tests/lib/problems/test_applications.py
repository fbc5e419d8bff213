"""Tests of dpsco_lib.problems.applications: the exact structure of the linear query game (Spec X1)."""

from __future__ import annotations

import numpy as np
import pytest

from dpsco_lib.problems import (
    LinearQueryGame,
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
