r"""Hard matrix games on simplices for the rate checks of Algorithms 3 and 4 of [GGP24] (Spec A3, A4).

The hidden-vertex game.  For d >= 2, a hardness parameter 0 < gamma <= L0 and hidden vertices i*, j*,

    f(x, y; (u, v)) = x^T (A_gamma + s u v^T) y,   A_gamma = gamma (1 e_{j*}^T - e_{i*} 1^T),   s = L0 - gamma,

with records (u, v) uniform on {-1, 1}^d x {-1, 1}^d.  On the simplices x^T A_gamma y = gamma (y_{j*} - x_{i*}),
so the population game decouples into min_x -gamma x_{i*} and max_y gamma y_{j*}: two copies of the linear
DP-SCO problem over the simplex with E z = -gamma e_{i*}, the construction of the lower bounds in the l1 setting
(the solver does not know which vertex is good; gamma sets how hard it is to find).  Exact quantities:

    Gap(x, y) = gamma (2 - x_{i*} - y_{j*}),   saddle point (e_{i*}, e_{j*}) with value 0,
    Gap(uniform, uniform) = 2 gamma (1 - 1/d).

Every member has ||grad_x f||_inf, ||grad_y f||_inf <= gamma + s = L0 (the same Lipschitz class for the whole
family), L1 = L0 and L2 = 0 (bilinear).  A solver's gap on member gamma is at most 2 gamma (the trivial
output) and, once gamma exceeds the solver's resolution, about its optimization error: the worst case over a
grid of gamma that brackets the rate is the minimax-type quantity a rate bound speaks about.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpsco_lib._validation import check_int, check_positive, check_size
from dpsco_lib.problems.games import BilinearGame

__all__ = ["HiddenVertexGame", "hidden_vertex_family", "hidden_vertex_game"]


class HiddenVertexGame(BilinearGame):
    """The hidden-vertex matrix game (module docstring): a :class:`BilinearGame` with its closed-form gap."""

    def __init__(self, d: int, gamma: float, *, L0: float = 1.0, i_star: int = 0, j_star: int = 0) -> None:
        d = check_size(d, "d", lo=2)
        L0 = check_positive(L0, "L0")
        gamma = check_positive(gamma, "gamma")
        if gamma > L0:
            raise ValueError(f"gamma must lie in (0, L0 = {L0}], got {gamma!r}")
        self.i_star = check_int(i_star, "i_star", lo=0, hi=d - 1)
        self.j_star = check_int(j_star, "j_star", lo=0, hi=d - 1)
        A = np.zeros((d, d))
        A[:, self.j_star] += gamma
        A[self.i_star, :] -= gamma
        super().__init__(A, noise=L0 - gamma, spec="A3")
        self.gamma = gamma
        self.L0 = L0  # |A| <= gamma entrywise (the entry (i*, j*) is 0), so gamma + s = L0 bounds the gradients
        self.L1 = L0

    def gap_closed_form(self, x: Any, y: Any) -> float:
        """gamma (2 - x_{i*} - y_{j*}) (equal to :meth:`duality_gap`; a cross-check)."""
        x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        return float(self.gamma * (2.0 - x[self.i_star] - y[self.j_star]))

    def uniform_gap(self) -> float:
        """Gap of the uniform pair (the trivial output, the start of mirror descent): 2 gamma (1 - 1/d)."""
        return 2.0 * self.gamma * (1.0 - 1.0 / self.dx)


def hidden_vertex_game(d: int, gamma: float, *, L0: float = 1.0, i_star: int = 0, j_star: int = 0
                       ) -> HiddenVertexGame:
    """One member of the family (module docstring)."""
    return HiddenVertexGame(d, gamma, L0=L0, i_star=i_star, j_star=j_star)


def hidden_vertex_family(d: int, gammas: Any, *, L0: float = 1.0) -> dict[float, HiddenVertexGame]:
    """The family {gamma: hidden_vertex_game(d, gamma)} over a grid of hardness parameters in (0, L0]."""
    gs = [float(g) for g in np.atleast_1d(np.asarray(gammas, dtype=np.float64))]
    if not gs:
        raise ValueError("gammas must hold at least one value")
    return {g: hidden_vertex_game(d, g, L0=L0) for g in gs}
