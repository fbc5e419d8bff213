"""Best responses of a saddle-point problem as convex problems (Spec A4, step 2; used by Algorithm 4).

``best_response_problem(problem, player="y", other=x0)`` is min_{w in Y} -F(x0, w),
``best_response_problem(problem, player="x", other=y0)`` is min_{w in X} F(w, y0): convex
:class:`~dpsco_lib.problems.base.Problem` instances over the saddle problem's records, solved privately by
the Frank-Wolfe of Spec F2 in :mod:`~dpsco_lib.algorithms.boosted_saddle`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpsco_lib._validation import check_positive
from dpsco_lib.problems.base import Problem, SaddleProblem
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.games import BilinearGame

__all__ = ["BestResponseProblem", "best_response_problem", "partial_smoothness"]


class BestResponseProblem(Problem):
    """w -> -f(x0, w; z) over Y (player "y") or w -> f(w, y0; z) over X (player "x"), as a convex Problem.

    Records are those of the saddle problem (validated by it).  L0 is the saddle problem's L0 (the partial
    gradient is one block of the joint gradient); L1 is the smoothness of the partial function.
    """

    exact_population = True
    convex = True

    def __init__(self, saddle: SaddleProblem, player: str, other: np.ndarray, L1: float) -> None:
        self.saddle = saddle
        self.player = player
        self.other = other
        if player == "y":
            self.feasible_set, self.p = saddle.y_set, 1.0
        else:
            self.feasible_set, self.p = saddle.x_set, float(saddle.p)
        self.L0, self.L1, self.L2 = float(saddle.L0), float(L1), float(saddle.L2)
        self.needs_labels = saddle.needs_labels
        self.spec = "A4"
        self._cache: dict[Any, Any] = {}

    def _data(self, data: Any) -> Dataset:
        return self.saddle._data(data)

    def _pair(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (self.other, w) if self.player == "y" else (w, self.other)

    def _loss(self, w: np.ndarray, data: Dataset) -> np.ndarray:
        x, y = self._pair(w)
        v = self.saddle._loss(x, y, data)
        return -v if self.player == "y" else v

    def _grad(self, w: np.ndarray, data: Dataset) -> np.ndarray:
        x, y = self._pair(w)
        if self.player == "y":
            return -self.saddle._grad_y(x[None], y[None], data)[0]
        return self.saddle._grad_x(x[None], y[None], data)[0]

    def _sample(self, n: int, rng: np.random.Generator) -> Dataset:
        return self.saddle._sample(n, rng)

    def _row_violation(self, data: Dataset) -> np.ndarray:
        return self.saddle._row_violation(data)

    def _clip_rows(self, data: Dataset, bad: np.ndarray) -> Dataset:
        return self.saddle._clip_rows(data, bad)

    def _population_risk(self, w: np.ndarray) -> float:
        x, y = self._pair(w)
        v = float(self.saddle._population_value(x, y))
        return -v if self.player == "y" else v

    def _population_grad(self, w: np.ndarray) -> np.ndarray:  # pragma: no cover - not needed by Spec F2
        raise NotImplementedError("the population gradient of a best-response problem is not available")


def partial_smoothness(problem: SaddleProblem, *, value: float | None = None) -> float:
    """L1 of the partial functions of ``problem``: ``value`` if given, 0 for a bilinear game, else problem.L1."""
    if value is not None:
        return check_positive(value, "best_response_L1", allow_zero=True)
    # f(x, .; z) and f(., y; z) are linear for a bilinear game: the partial functions have L1 = 0 exactly
    return 0.0 if isinstance(problem, BilinearGame) else float(problem.L1)


def best_response_problem(problem: SaddleProblem, *, player: str, other: Any, L1: float | None = None) -> Problem:
    """The convex problem whose minimizer is a best response (Spec A4, step 2).

    ``player="y"``: min_{w in Y} -F(x0, w) (records z give -f(x0, w; z)), ``other`` = x0;
    ``player="x"``: min_{w in X} F(w, y0), ``other`` = y0.  Constants: L0 of the saddle problem; ``L1`` the
    smoothness of the partial function (default: 0 for :class:`BilinearGame`, whose partial functions are
    linear, else the saddle problem's L1, always a valid bound).
    """
    if not isinstance(problem, SaddleProblem):
        raise ValueError(f"problem must be a SaddleProblem, got {type(problem).__name__}")
    if player == "y":
        o = problem._feasible(problem._pt(other, problem.dx, "other"), problem.x_set, "other")
    elif player == "x":
        o = problem._feasible(problem._pt(other, problem.dy, "other"), problem.y_set, "other")
    else:
        raise ValueError(f"player must be 'x' or 'y', got {player!r}")
    return BestResponseProblem(problem, player, o, partial_smoothness(problem, value=L1))
