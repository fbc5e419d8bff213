r"""Minimizing the maximal group loss with linear group losses: the hard family of X2 (Spec X2; GGP24 Sec. 1.4).

The problem.  ``m`` groups with public population shares ``pi_g`` and linear group losses
``L_g(x) = <c_g, x>`` on the simplex ``Delta_d`` (the vertex set of any polytope; Algorithm 1 works on it directly).
A record is ``z = (a, g)``: its group ``g ~ Cat(pi)`` and its loss vector ``a = c_g + s u`` with ``u`` Rademacher,
so ``E[a | g] = c_g``.  As in the group-robust application (:class:`~dpsco_lib.problems.applications.MaxOfLosses`)
the per-record saddle loss weights the record's group by ``1/pi_g``,

    f(x, y; (a, g)) = y_g <a, x>/pi_g,    F(x, y) = E f = sum_g y_g L_g(x) = x^T C y,   C = [c_1, ..., c_m],

so ``min_x max_g L_g(x) = min_x max_{y in Delta_m} F(x, y)``: a bilinear game whose max player is the group
simplex.  With ``A = max |C| + s`` bounding every entry of a record (``||a||_inf <= A``, the declared bound),
``||grad_x f||_inf = y_g |a|_inf/pi_g <= A/pi_min`` and ``||grad_y f||_inf = |<a, x>|/pi_g <= A/pi_min``, so
``L0 = L1 = A/pi_min`` w.r.t. ``||x||_1 + ||y||_1`` (gradients in l_inf) and ``L2 = 0``: the quadratic regime
(7) of Thm 3.1, rate ``L0 (sqrt(log d/n) + rho^{1/2})``.  The importance weight ``1/pi_g`` is where the group
structure enters the privacy proof: one record moves one group's score by up to ``A/(pi_g B)`` per step.

The planted family (:class:`PlantedGroupLosses`).  The lower bounds for private linear optimization over the
simplex plant one vertex that beats the others by a margin ``Delta`` (Asi, Feldman, Koren & Talwar 2021; Bassily,
Guzmán & Nandi 2021); here it is planted in the group structure.  With scale ``c``, decoy ``kappa`` and margin
``Delta``,

    c_1 = c 1 - Delta e_1                      (group 1: only vertex 1 serves it),
    c_g = c 1 - Delta e_1 - kappa e_2,  g >= 2 (the other groups: vertex 2 serves them better).

Every ``L_g <= L_1`` on the simplex, so ``max_g L_g(x) = c - Delta x_1``: the optimum is ``x* = e_1`` with value
``c - Delta`` and the worst-group excess of any ``x`` is exactly ``Delta (1 - x_1)``.  The best response of the
``x`` player changes with ``y``: ``argmin_i (C y)_i`` is ``e_2`` while ``kappa (1 - y_1) > Delta`` and ``e_1``
beyond, so an algorithm must find the worst group before it can find the planted vertex; the pooled (group-blind)
minimizer ``argmin_i (C pi)_i`` is ``e_2`` when ``(1 - pi_1) kappa > Delta`` and has the largest possible
worst-group excess ``Delta``.  Saddle points: ``{e_1} x {y : y_1 >= 1 - Delta/kappa}``, value ``c - Delta``;
``Gap(x, y) = max(Delta, kappa (1 - y_1)) - Delta x_1``.  Entries of ``C`` lie in ``[c - Delta - kappa, c]``, so
every member with ``Delta + kappa <= 2 c`` has the same ``A = c + s`` and the same declared constants: a
parameter rule treats the whole family alike, and the worst case over a grid of margins is the minimax-type
quantity a rate bound speaks about (for entropic mirror descent, about ``min(Delta, log d/(eta T))``).

References: González, Guzmán & Paquette (2024), arXiv 2403.02912, Sections 1.4 and 3.1; Asi, Feldman, Koren &
Talwar (2021), "Private stochastic convex optimization: optimal rates in l1 geometry".

The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpsco_lib._optional import require
from dpsco_lib._validation import check_array, check_int, check_positive, check_size
from dpsco_lib.geometry.sets import Simplex
from dpsco_lib.problems.base import SaddleProblem, solve_cvxpy
from dpsco_lib.problems.dataset import Dataset

__all__ = ["MaxOfLinearLosses", "PlantedGroupLosses", "planted_group_family"]


def _shares(shares: Any, m: int) -> np.ndarray:
    pi = check_array(shares, "shares", shape=(m,))
    if np.any(pi <= 0) or abs(float(pi.sum()) - 1.0) > 1e-9:
        raise ValueError(f"shares must be {m} positive numbers summing to 1, got {pi.tolist()!r}")
    return pi / pi.sum()


class MaxOfLinearLosses(SaddleProblem):
    r"""``min_{x in Delta_d} max_g <c_g, x>`` with group-weighted records ``(a, g)`` (Spec X2; module docstring).

    Records are rows ``a`` of ``X`` (the loss vector, ``||a||_inf <= A``) with ``extras["group"]``.

    Parameters
    ----------
    C : array (d, m)
        Column ``g`` is the mean loss vector ``c_g`` of group ``g`` (m >= 2 groups, d >= 2 vertices).
    shares : array (m,), optional
        Population shares ``pi_g`` (public; default uniform).
    noise : float
        ``s >= 0``: a record's loss vector is ``c_g + s u``, ``u`` Rademacher.
    """

    spec = "X2"
    needs_labels = False
    _extras = ("group",)
    exact_population = True

    def __init__(self, C: Any, shares: Any = None, *, noise: float = 0.5) -> None:
        self.C = check_array(C, "C", ndim=2)
        d, m = self.C.shape
        check_int(d, "d (rows of C)", lo=2)
        self.m = check_int(m, "m (columns of C)", lo=2)
        self.pi = _shares(np.full(m, 1.0 / m) if shares is None else shares, m)
        self.s = check_positive(noise, "noise", allow_zero=True)
        self.x_set, self.y_set = Simplex(d), Simplex(m)
        self.A_bound = float(np.max(np.abs(self.C))) + self.s
        self.L0 = self.L1 = self.A_bound / float(self.pi.min())
        self.L2 = 0.0
        self._cache = {}

    def _groups(self, data: Dataset) -> np.ndarray:
        return np.asarray(data.extras["group"]).astype(np.int64)

    def _loss(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        g = self._groups(data)
        return y[g] * (data.X @ x) / self.pi[g]

    def _grad_x(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        g = self._groups(data)
        return (y[:, g] / self.pi[g])[:, :, None] * data.X[None]  # (k, n, d)

    def _grad_y(self, x: np.ndarray, y: np.ndarray, data: Dataset) -> np.ndarray:
        g = self._groups(data)
        out = np.zeros((x.shape[0], data.n, self.m))
        out[:, np.arange(data.n), g] = (x @ data.X.T) / self.pi[g]  # (k, n)
        return out

    def _sample(self, n: int, rng: np.random.Generator) -> Dataset:
        g = rng.choice(self.m, size=n, p=self.pi)
        u = 2.0 * rng.integers(0, 2, size=(n, self.dx)) - 1.0
        return Dataset(self.C.T[g] + self.s * u, None, {"group": g.astype(np.int64)})

    def _row_violation(self, data: Dataset) -> np.ndarray:
        g = np.asarray(data.extras["group"])
        return (np.max(np.abs(data.X), axis=1) > self.A_bound * (1 + 1e-9)) | (g < 0) | (g >= self.m)

    def _clip_rows(self, data: Dataset, bad: np.ndarray) -> Dataset:
        """Clip loss vectors to ``[-A, A]`` and groups to ``[0, m)``."""
        g = np.clip(np.asarray(data.extras["group"]), 0, self.m - 1)
        return Dataset(np.clip(data.X, -self.A_bound, self.A_bound), None, {"group": g})

    def _bounds_text(self) -> str:
        return f"every entry of a loss vector in [-{self.A_bound:g}, {self.A_bound:g}], groups in [0, {self.m})"

    def group_losses(self, x: Any) -> np.ndarray:
        """``(L_1(x), ..., L_m(x)) = C^T x`` (exact population group losses)."""
        return self._pt(x, self.dx, "x") @ self.C

    def worst_group_excess(self, x: Any) -> float:
        """``max_g L_g(x) - min_x' max_g L_g(x')`` (exact)."""
        return float(np.max(self.group_losses(x)) - self.saddle_point()[2])

    def pooled_point(self) -> np.ndarray:
        """The group-blind population minimizer ``argmin_{x in Delta} sum_g pi_g L_g(x)`` (a vertex; the first
        on ties)."""
        return np.eye(self.dx)[int(np.argmin(self.C @ self.pi))]

    def _population_value(self, x: np.ndarray, y: np.ndarray) -> float:
        return float(x @ self.C @ y)

    def _best_response_x(self, y: np.ndarray) -> tuple[np.ndarray, float]:
        v = self.C @ y
        i = int(np.argmin(v))
        return np.eye(self.dx)[i], float(v[i])

    def _best_response_y(self, x: np.ndarray) -> tuple[np.ndarray, float]:
        v = x @ self.C
        j = int(np.argmax(v))
        return np.eye(self.m)[j], float(v[j])

    def _saddle_point(self) -> tuple[np.ndarray, np.ndarray, float]:
        cp = require("cvxpy")

        x, t = cp.Variable(self.dx), cp.Variable()
        cons = [self.C.T @ x <= t, *self.x_set.cvxpy_constraints(x)]
        solve_cvxpy(cp.Problem(cp.Minimize(t), cons), "the max-of-linear-losses LP")
        xs, ys = (np.maximum(np.asarray(v, dtype=np.float64).ravel(), 0.0) for v in (x.value, cons[0].dual_value))
        xs, ys = xs / xs.sum(), ys / ys.sum()
        return xs, ys, float(np.max(xs @ self.C))


class PlantedGroupLosses(MaxOfLinearLosses):
    r"""The planted max-of-linear-losses instance (module docstring): closed-form optimum and excess.

    Parameters
    ----------
    d, m : int
        Vertices (>= 3: vertex 1 planted, vertex 2 the decoy) and groups (>= 2).
    margin : float
        ``Delta`` in (0, scale]: how much vertex 1 lowers group 1's loss (the hardness parameter).
    decoy : float
        ``kappa >= 0``, with ``margin + decoy <= 2 scale``: how much vertex 2 lowers the other groups' losses.
    scale, noise : float
        ``c`` and ``s``; every member with ``margin + decoy <= 2 c`` has ``A = c + s``.
    shares : array (m,), optional
        Public group shares (default uniform).
    """

    def __init__(self, d: int, m: int, margin: float, *, decoy: float = 1.5, scale: float = 1.0,
                 noise: float = 0.5, shares: Any = None) -> None:
        d, m = check_size(d, "d", lo=3), check_int(m, "m", lo=2)
        c = check_positive(scale, "scale")
        delta = check_positive(margin, "margin")
        if delta > c:
            raise ValueError(f"margin must lie in (0, scale = {c}], got {delta!r}")
        kappa = check_positive(decoy, "decoy", allow_zero=True)
        if delta + kappa > 2 * c:
            raise ValueError(f"margin + decoy must be <= 2 scale = {2 * c}, got {delta + kappa!r}")
        C = np.full((d, m), c)
        C[0, :] -= delta
        C[1, 1:] -= kappa
        super().__init__(C, shares, noise=noise)
        self.margin, self.decoy, self.scale = delta, kappa, c
        self._cache["saddle"] = (np.eye(d)[0], np.eye(m)[0], c - delta)

    def worst_group_excess(self, x: Any) -> float:
        """``Delta (1 - x_1)`` (closed form; equal to the generic ``max_g L_g(x) - (c - Delta)``)."""
        return float(self.margin * (1.0 - self._pt(x, self.dx, "x")[0]))

    def trivial_excess(self) -> float:
        """Worst-group excess of the uniform point (the start of mirror descent): ``Delta (1 - 1/d)``."""
        return self.margin * (1.0 - 1.0 / self.dx)


def planted_group_family(d: int, m: int, margins: Any, **kw: Any) -> dict[float, PlantedGroupLosses]:
    """``{margin: PlantedGroupLosses(d, m, margin, **kw)}`` over a grid of margins (same declared constants when
    every ``margin + decoy <= 2 scale``)."""
    ms = [float(v) for v in np.atleast_1d(np.asarray(margins, dtype=np.float64))]
    if not ms:
        raise ValueError("margins must hold at least one value")
    return {v: PlantedGroupLosses(d, m, v, **kw) for v in ms}
