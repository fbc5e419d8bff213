"""Planted-vertex families (dpsco_lib.problems.hard_saddle): exact gaps against independent formulas and cvxpy, declared
constants, bad input.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpsco_lib.problems import PlantedLinearSCO, PlantedMatrixGame, planted_game_family, planted_sco_family


def _simplex_point(rng, d):
    v = rng.random(d)
    return v / v.sum()


@pytest.mark.parametrize("margin", [0.1, 0.5, 1.0])
def test_planted_game_gap_is_exact(margin):
    g = PlantedMatrixGame(6, margin)
    rng = np.random.default_rng(0)
    for _ in range(5):
        x, y = _simplex_point(rng, 6), _simplex_point(rng, 6)
        closed = margin * ((1 - x[0]) + (1 - y[0]))
        assert g.duality_gap(x, y) == pytest.approx(closed, abs=1e-12)
        assert BilinearFormula(g).gap(x, y) == pytest.approx(closed, abs=1e-12)
        assert g.duality_gap(x, y, method="cvxpy") == pytest.approx(closed, abs=1e-6)
    assert g.duality_gap(np.eye(6)[0], np.eye(6)[0]) == 0.0
    assert g.trivial_gap() == pytest.approx(g.duality_gap(np.full(6, 1 / 6), np.full(6, 1 / 6)))
    assert g.L0 == pytest.approx(1.5) and g.L1 == pytest.approx(1.5) and g.L2 == 0.0


class BilinearFormula:
    """The matrix-game gap max_j (A^T x)_j - min_i (A y)_i, independent of the class's closed form."""

    def __init__(self, g):
        self.A = g.A

    def gap(self, x, y):
        return float(np.max(x @ self.A) - np.min(self.A @ y))


def test_planted_game_constants_same_across_family_and_data_bounds():
    fam = planted_game_family(5, [0.25, 0.5, 1.0], L2=1.5)
    assert {g.L0 for g in fam.values()} == {1.5} and {g.L2 for g in fam.values()} == {1.5}
    g = fam[0.5]
    data = g.sample(50, np.random.default_rng(1))
    assert np.all(np.abs(data.X) == 1.0)
    grads = g.grad_x(np.full(5, 0.2), np.full(5, 0.2), data)
    assert np.max(np.abs(grads)) <= g.L0 + 1e-12


@pytest.mark.parametrize("margin", [0.2, 1.0])
def test_planted_sco_excess_is_exact(margin):
    p = PlantedLinearSCO(7, margin, L1=0.15, L2=0.15)
    rng = np.random.default_rng(2)
    x = _simplex_point(rng, 7)
    assert p.excess_risk(x) == pytest.approx(margin * (1 - x[0]), abs=1e-12)
    xs, fs = p.cvxpy_optimum()
    assert fs == pytest.approx(1.0 - margin, abs=1e-6) and xs[0] == pytest.approx(1.0, abs=1e-5)
    assert p.trivial_excess() == pytest.approx(p.excess_risk(np.full(7, 1 / 7)))
    data = p.sample(40, rng)
    assert np.allclose(p.mean_grad(x, data), p.grad(x, data).mean(axis=0))
    assert np.max(np.abs(p.grad(x, data))) <= p.L0
    assert set(planted_sco_family(3, [0.5, 1.0])) == {0.5, 1.0}


@pytest.mark.parametrize(
    ("cls", "kw", "match"),
    [
        (PlantedMatrixGame, {"d": 1, "margin": 0.5}, "d must be"),
        (PlantedMatrixGame, {"d": 4, "margin": 0.0}, "margin must be"),
        (PlantedMatrixGame, {"d": 4, "margin": 2.0}, "margin must lie"),
        (PlantedMatrixGame, {"d": 4, "margin": 0.5, "L2": -1.0}, "L2 must be"),
        (PlantedLinearSCO, {"d": 4, "margin": 1.5}, "margin must lie"),
        (PlantedLinearSCO, {"d": 4, "margin": 0.5, "noise": -1.0}, "noise must be"),
    ],
)
def test_bad_inputs(cls, kw, match):
    with pytest.raises(ValueError, match=match):
        cls(**kw)
