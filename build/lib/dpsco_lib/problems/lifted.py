"""Problems derived from the group-robust application of [GGP24] Section 1.4 (Spec X2; notebook 13).

:class:`L1LiftedSaddle` lifts a saddle problem over (l1 ball) x (simplex) to (Delta_{2d}) x (simplex), the setting
of Algorithm 1: x = R (w[:d] - w[d:]) with w in Delta_{2d}, grad_w f = R [g, -g].  With pi_min the smallest group
frequency and l_max = log(1 + e^{B_a R}), the constants of a lifted
:class:`~dpsco_lib.problems.applications.MaxOfLosses` w.r.t. ||w||_1 + ||y||_1 (gradients in l_inf) are

    L0 = max(R B_a, l_max)/pi_min,  L1 = max(R^2 B_a^2/4, R B_a)/pi_min,
    L2 = max(R^3 B_a^3/(6 sqrt 3), R^2 B_a^2/4)/pi_min

(:func:`lift_max_of_losses`).  :func:`pooled_logistic_problem` is the group-blind problem: the logistic loss on the
pooled records over the same l1 ball.

The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpsco_lib._validation import check_positive
from dpsco_lib.geometry.mirror import l1_lift, l1_unlift
from dpsco_lib.geometry.sets import L1Ball, Simplex
from dpsco_lib.problems.applications import MaxOfLosses
from dpsco_lib.problems.base import SaddleProblem
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.logistic import LogisticRegression

__all__ = ["L1LiftedSaddle", "RowSampler", "check_max_of_losses", "lift_max_of_losses", "pooled_logistic_problem"]


class L1LiftedSaddle(SaddleProblem):
    """A saddle problem over (l1 ball) x (simplex) lifted to (Delta_{2d}) x (simplex) for Algorithm 1 (Spec X2).

    x = R (w[:d] - w[d:]); grad_w f = R [grad_x f, -grad_x f]; values, best responses and the saddle point are
    those of the base problem (best responses and saddle points are lifted with
    :func:`~dpsco_lib.geometry.mirror.l1_lift`).  The constants are given explicitly (see
    :func:`lift_max_of_losses` for MaxOfLosses); by default the safe scaling max(R, 1)^k L_k of the base.

    Parameters
    ----------
    base : SaddleProblem
        With ``x_set`` an L1Ball of radius R.
    L0, L1, L2 : float, optional
    """

    def __init__(self, base: SaddleProblem, *, L0: float | None = None, L1: float | None = None,
                 L2: float | None = None) -> None:
        if not isinstance(base, SaddleProblem) or not isinstance(base.x_set, L1Ball) or base.x_set.p != 1.0:
            raise ValueError("base must be a SaddleProblem whose x_set is an l1 ball (L1Ball)")
        self.base = base
        self.radius = float(base.x_set.radius)
        self.d = base.dx
        self.x_set = Simplex(2 * self.d)
        self.y_set = base.y_set
        s = max(self.radius, 1.0)
        self.L0 = float(base.L0 * s if L0 is None else check_positive(L0, "L0"))
        self.L1 = float(base.L1 * s**2 if L1 is None else check_positive(L1, "L1", allow_zero=True))
        self.L2 = float(base.L2 * s**3 if L2 is None else check_positive(L2, "L2", allow_zero=True))
        self.exact_population = base.exact_population
        self.spec = base.spec
        self.needs_labels = base.needs_labels
        self._extras = base._extras
        self._cache = {}

    @property
    def data_dim(self) -> int:
        return self.base.data_dim

    def unlift(self, w: Any) -> np.ndarray:
        return l1_unlift(w, self.radius)

    def _loss(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        return self.base._loss(self.unlift(x), y, data)

    def _grad_x(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        g = self.base._grad_x(self.unlift(x), y, data)
        return self.radius * np.concatenate([g, -g], axis=-1)

    def _grad_y(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        return self.base._grad_y(self.unlift(x), y, data)

    def _sample(self, n: int, rng: np.random.Generator) -> Dataset:
        return self.base._sample(n, rng)

    def _row_violation(self, data: Dataset) -> np.ndarray:
        return self.base._row_violation(data)

    def _clip_rows(self, data: Dataset, bad: np.ndarray) -> Dataset:
        return self.base._clip_rows(data, bad)

    def _base_x(self, w: np.ndarray) -> np.ndarray:
        return self.base.x_set.project(self.unlift(w))  # rounding only: ||unlift(w)||_1 <= R exactly in reals

    def _population_value(self, x: np.ndarray, y: np.ndarray) -> float:
        return float(self.base._population_value(self._base_x(x), y))

    def _best_response_x(self, y: np.ndarray) -> tuple[np.ndarray, float]:
        xb, v = self.base._best_response_x(y)
        return l1_lift(xb, self.radius), v

    def _best_response_y(self, x: np.ndarray) -> tuple[np.ndarray, float]:
        return self.base._best_response_y(self._base_x(x))

    def _saddle_point(self) -> tuple[np.ndarray, np.ndarray, float]:
        xb, yb, v = self.base.saddle_point()
        return l1_lift(xb, self.radius), yb, v


def check_max_of_losses(problem: Any) -> MaxOfLosses:
    """``problem`` if it is a :class:`~dpsco_lib.problems.applications.MaxOfLosses`, else ``ValueError``."""
    if not isinstance(problem, MaxOfLosses):
        raise ValueError(f"problem must be a MaxOfLosses, got {type(problem).__name__}")
    return problem


def lift_max_of_losses(problem: MaxOfLosses) -> L1LiftedSaddle:
    """The 2d-vertex lift of a MaxOfLosses problem with its exact lifted constants (Spec X2; module docstring)."""
    P = check_max_of_losses(problem)
    R, Ba, pmin = P.radius, P.B_a, float(P.pi.min())
    lmax = math.log1p(math.exp(Ba * R))
    return L1LiftedSaddle(
        P,
        L0=max(R * Ba, lmax) / pmin,
        L1=max(R**2 * Ba**2 / 4.0, R * Ba) / pmin,
        L2=max(R**3 * Ba**3 / (6.0 * math.sqrt(3.0)), R**2 * Ba**2 / 4.0) / pmin,
    )


@dataclass(frozen=True)
class RowSampler:
    """(n, rng) -> n rows drawn uniformly with replacement from a fixed table (the population)."""

    X: np.ndarray
    y: np.ndarray

    def __call__(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        idx = rng.integers(0, self.X.shape[0], size=n)
        return self.X[idx], self.y[idx]


def pooled_logistic_problem(problem: MaxOfLosses) -> LogisticRegression:
    """The group-blind problem: logistic loss on the pooled records over the same l1 ball (Spec X2).

    Constants in the l1 setup (gradients in l_inf): L0 = B_a, L1 = B_a^2/4.  Its ``population`` attribute is a
    resample of the table; use :func:`exact_pooled_erm` for the exact pooled optimum.
    """
    P = check_max_of_losses(problem)
    pop = P.population
    return LogisticRegression(L1Ball(P.dx, P.radius), 1.0, feature_bound=P.B_a,
                              sampler=RowSampler(np.asarray(pop.X), np.asarray(pop.y)),
                              population_size=pop.n, spec="X2", name="pooled logistic")
