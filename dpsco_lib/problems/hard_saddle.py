r"""Planted-vertex instance families: the lower-bound construction behind Algorithms 1 and 5 (Spec A1, A5).

The lower bounds for private stochastic optimization over the simplex (Asi, Feldman, Koren, Talwar 2021;
Bassily, Guzmán, Nandi 2021) use *linear* losses whose mean vector favours one planted vertex by a margin
``Delta``: an algorithm must find the planted coordinate, and no algorithm can do so when ``Delta`` is below the
statistical/private resolution.  Entropic mirror descent started at the uniform point pays its full Bregman budget
on these instances: with step ``eta`` and ``T`` steps the weight off the planted vertex at step ``t`` is about
``(d - 1) exp(-eta t Delta)/(1 + (d - 1) exp(-eta t Delta))``, whose average over ``t`` times ``Delta`` is
``min(Delta, log d/(eta T))`` up to a constant: once ``eta T Delta >~ log d`` the error is ``log d/(eta T)``
whatever ``Delta``, i.e. the ``log d/(eta T)`` term of the mirror-descent bound is attained.  The worst case
over a grid of margins is therefore the bound's own ``log d/(eta T)``, the term through which privacy enters
(the privacy cap on ``eta``).

Two families, both with exact optima in closed form and the same declared constants for every margin (so a
parameter rule treats all members alike):

- :class:`PlantedMatrixGame` (Spec A1): the matrix game ``x^T (A + s u v^T) y`` with
  ``A = (c - Delta) 1 1^T + a 1^T + 1 b^T``, ``a = Delta (1 - e_1)``, ``b = -Delta (1 - e_1)``; on the simplices
  ``x^T A y = (c - Delta) + <a, x> + <b, y>``, so the game separates into two planted linear problems and
  ``Gap(x, y) = Delta (1 - x_1) + Delta (1 - y_1)`` exactly; the saddle point is ``(e_1, e_1)``.  Entries of
  ``A`` lie in ``[c - 2 Delta, c]``, so ``L0 = L1 = c + s`` for every ``Delta <= c``.
- :class:`PlantedLinearSCO` (Spec A5): ``f(x; u) = <a + s u, x>`` on ``Delta_d``, ``a = c 1 - Delta e_1``,
  ``u`` Rademacher; ``F(x) - F* = Delta (1 - x_1)``; ``L0 = c + s``.

Declared smoothness constants.  A linear (or bilinear) loss is ``L1``- and ``L2``-smooth for *every*
``L1, L2 >= 0``, so each family member belongs to the first-order class with any declared ``L1`` and to the
second-order class with any declared ``L2``: the regime's parameter rule (which reads the declared constants)
is run on a member of the class its theorem covers.  The vertex-sampling bias is zero on these members, so
what they measure is the privacy-capped mirror-descent term of the theorem with the regime's ``K`` and ``T``.

References: González, Guzmán & Paquette (2024), "Mirror descent algorithms with nearly dimension-independent
rates for differentially-private stochastic saddle-point problems", Sections 3 and 4; Asi, Feldman, Koren &
Talwar (2021), "Private stochastic convex optimization: optimal rates in l1 geometry".

The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpsco_lib._validation import check_positive, check_size
from dpsco_lib.geometry.sets import Simplex
from dpsco_lib.problems.base import Problem
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.games import BilinearGame

__all__ = ["PlantedLinearSCO", "PlantedMatrixGame", "planted_game_family", "planted_sco_family"]


def _check_margin(margin: Any, scale: float) -> float:
    m = check_positive(margin, "margin")
    if m > scale:
        raise ValueError(f"margin must lie in (0, scale = {scale}], got {m!r}")
    return m


class PlantedMatrixGame(BilinearGame):
    r"""Separable planted matrix game on ``Delta_d x Delta_d`` (Spec A1; see the module docstring).

    Parameters
    ----------
    d : int
        Dimension of both simplices (>= 2).
    margin : float
        ``Delta`` in (0, scale]: the advantage of the planted vertex ``e_1`` for each player.
    scale : float
        ``c``: entries of the mean matrix lie in ``[c - 2 Delta, c]``.
    noise : float
        ``s``: per-record matrix ``A + s u v^T`` with ``u, v`` Rademacher.
    L1, L2 : float, optional
        Declared smoothness constants (valid for any value >= 0 on a bilinear loss); ``L1`` defaults to
        ``c + s``, ``L2`` to 0 (the quadratic regime of Thm 3.1 needs ``L2 = 0``).
    """

    def __init__(self, d: int, margin: float, *, scale: float = 1.0, noise: float = 0.5, L1: float | None = None,
                 L2: float = 0.0) -> None:
        d = check_size(d, "d", lo=2)
        scale = check_positive(scale, "scale")
        margin = _check_margin(margin, scale)
        a = np.full(d, margin)
        a[0] = 0.0
        super().__init__((scale - margin) + a[:, None] - a[None, :], noise)
        self.margin = margin
        self.L1 = float(self.a_max if L1 is None else check_positive(L1, "L1", allow_zero=True))
        self.L2 = float(check_positive(L2, "L2", allow_zero=True))

    def duality_gap(self, x: Any, y: Any, method: str = "closed_form") -> float:
        """``Delta (1 - x_1) + Delta (1 - y_1)`` (``"closed_form"``, equal to the matrix-game formula) or cvxpy."""
        if method != "closed_form":
            return super().duality_gap(x, y, method=method)
        x = self._feasible(self._pt(x, self.dx, "x"), self.x_set, "x")
        y = self._feasible(self._pt(y, self.dy, "y"), self.y_set, "y")
        return float(self.margin * ((1.0 - x[0]) + (1.0 - y[0])))

    def trivial_gap(self) -> float:
        """The gap of the uniform pair, ``2 Delta (1 - 1/d)``: what an algorithm that learns nothing outputs."""
        return 2.0 * self.margin * (1.0 - 1.0 / self.dx)


class PlantedLinearSCO(Problem):
    r"""Planted linear loss ``f(x; u) = <c 1 - Delta e_1 + s u, x>`` on ``Delta_d`` (Spec A5; module docstring).

    Records are unlabelled rows ``u`` in ``{-1, +1}^d`` (declared bound ``||u||_inf <= 1``).  Exact population:
    ``F(x) = c - Delta x_1``, ``x* = e_1``, ``F* = c - Delta``.

    Parameters
    ----------
    d : int
        Dimension (>= 2).
    margin, scale, noise : float
        ``Delta`` in (0, scale], ``c``, ``s``; ``L0 = c + s``.
    L1, L2 : float
        Declared smoothness constants (valid for any value >= 0 on a linear loss).
    """

    p = 1.0
    exact_population = True
    needs_labels = False
    spec = "A5"

    def __init__(self, d: int, margin: float, *, scale: float = 1.0, noise: float = 0.5, L1: float = 0.0,
                 L2: float = 0.0) -> None:
        d = check_size(d, "d", lo=2)
        self.scale = check_positive(scale, "scale")
        self.margin = _check_margin(margin, self.scale)
        self.s = check_positive(noise, "noise", allow_zero=True)
        self.feasible_set = Simplex(d)
        self.a = np.full(d, self.scale)
        self.a[0] -= self.margin
        self.L0 = self.scale + self.s
        self.L1 = float(check_positive(L1, "L1", allow_zero=True))
        self.L2 = float(check_positive(L2, "L2", allow_zero=True))
        self._cache = {"opt": (np.eye(d)[0], self.scale - self.margin)}

    def _loss(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return (self.a + self.s * data.X) @ x

    def _grad(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return self.a + self.s * data.X

    def _mean_grad(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return self.a + self.s * data.X.mean(axis=0)

    def _sample(self, n: int, rng: np.random.Generator) -> Dataset:
        return Dataset(2.0 * rng.integers(0, 2, size=(n, self.d)) - 1.0)

    def _row_violation(self, data: Dataset) -> np.ndarray:
        return np.max(np.abs(data.X), axis=1) > 1.0

    def _clip_rows(self, data: Dataset, bad: np.ndarray) -> Dataset:
        return Dataset(np.clip(data.X, -1.0, 1.0))

    def _bounds_text(self) -> str:
        return "every entry of a record in [-1, 1]"

    def _population_risk(self, x: np.ndarray) -> float:
        return float(self.a @ x)

    def _population_grad(self, x: np.ndarray) -> np.ndarray:
        return self.a.copy()

    def _cvxpy_population(self, var: Any) -> Any:
        return self.a @ var

    def trivial_excess(self) -> float:
        """Excess risk of the uniform point, ``Delta (1 - 1/d)``."""
        return self.margin * (1.0 - 1.0 / self.d)


def planted_game_family(d: int, margins: Any, **kw: Any) -> dict[float, PlantedMatrixGame]:
    """``{margin: PlantedMatrixGame(d, margin, **kw)}`` for every margin (same declared constants)."""
    return {float(m): PlantedMatrixGame(d, float(m), **kw) for m in margins}


def planted_sco_family(d: int, margins: Any, **kw: Any) -> dict[float, PlantedLinearSCO]:
    """``{margin: PlantedLinearSCO(d, margin, **kw)}`` for every margin (same declared constants)."""
    return {float(m): PlantedLinearSCO(d, float(m), **kw) for m in margins}
