r"""Linear losses over the l1 ball with a planted vertex: the hard instance family of Spec F1, F2, S2.

The family (one instance per hardness parameter ``gamma``). Records ``z in {-1, +1}^d`` with independent
coordinates, ``z_1 = -1`` with probability ``(1 + gamma)/2`` and ``z_j`` Rademacher for ``j >= 2``, so
``E z = -gamma e_1``; the loss is linear, ``f(x; z) = <z, x>``, over the l1 ball of radius ``r``:

.. math:: F(x) = \mathbb E_z \langle z, x\rangle = -\gamma x_1,\qquad x^\star = r e_1,\qquad F^\star = -\gamma r,
          \qquad F(x) - F^\star = \gamma\,(r - x_1).

Constants in the l1 setup (gradients in l_inf): ``||grad f||_inf = ||z||_inf = 1`` so ``L0 = 1``; the gradient
does not depend on ``x``, so ``L1 = L2 = 0``; ``D = 2r`` and ``|V| = 2d``. The trivial output (the centre 0)
has excess ``gamma r``.

Why it is hard (the lower-bound construction for l1 DP-SCO). Every selection rule must tell the vertex
``r e_1`` apart from the ``2d - 1`` others from the records alone. The score gap is ``gamma r`` while the
empirical scores of the other vertices fluctuate by ``sqrt(2 ln(2d)/n)`` (the statistical scale) and a private
selection adds noise at its own scale (``~ ln|V| / (eps n)`` for a single pure-DP selection, more for an
iterative method that composes many selections); an algorithm's excess at ``gamma`` is ``gamma`` times the
weight it puts on wrong vertices, which is large while ``gamma`` is below its scale. The worst case over
``gamma`` therefore sits at ``gamma`` of the order of the algorithm's error scale and shrinks with ``n`` like
the minimax rate, as in the lower-bound constructions of Asi, Feldman, Koren and Talwar (ICML 2021) and
Bassily, Guzmán and Nandi (COLT 2021). A rate check measures the worst case over a grid of ``gamma`` that
brackets that scale at every ``n``.

The Euclidean member (``p = 2``, the hard case of noisy SGD, Spec S2). The same signs, weighted so that every record
has unit l2 norm: ``x_rec = (z_1 / sqrt 2, z_2 w, ..., z_d w)`` with ``w = 1/sqrt(2(d - 1))``, over the l2 ball of
radius ``r``: ``F(x) = -(gamma/sqrt 2) x_1``, ``x* = r e_1``, excess ``(gamma/sqrt 2)(r - x_1)``, trivial error
``gamma r/sqrt 2``; ``L0 = 1`` in l2, ``D = 2r``. A Euclidean method privatizes the gradient with isotropic noise in
all ``d`` coordinates, so its error at the worst ``gamma`` grows like the norm of that noise, ``sqrt d``.

Sampling. ``gamma`` is stored as the exactly represented ``2 k / 2^30 - 1`` closest to the requested value
(the coin of ``z_1`` is an integer draw ``u < k`` out of ``2^30``), so ``E z = -gamma e_1`` holds exactly for
the stored ``gamma``. The sampler is a :class:`~dpsco_lib.problems.stream.BlockSampler`, so
``problem.stream(n, rng, block_size)`` holds one block at a time.

The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpsco_lib._validation import check_in_range, check_int, check_positive, check_size
from dpsco_lib.geometry.sets import L1Ball, LpBall
from dpsco_lib.problems.base import Problem
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.stream import BlockSampler, IntegerDraw

__all__ = ["HardLinear", "LinearPopulation", "SparseHardLinear", "hard_linear"]

#: Resolution of the coin of the first coordinate: P(z_1 = -1) = k / 2^30.
COIN_BITS = 30
_RTOL = 1e-9


@dataclass(frozen=True)
class _PlantedSignSampler(BlockSampler):
    """``z_j`` Rademacher for ``j >= 2`` and ``z_1 = -1`` iff ``u < threshold`` (``u`` uniform in [0, 2^30))."""

    d: int
    threshold: int
    w_first: float = 1.0
    w_rest: float = 1.0

    labelled = False

    def draws(self) -> tuple[IntegerDraw, ...]:
        return (IntegerDraw(0, 2, self.d), IntegerDraw(0, 1 << COIN_BITS))

    def n_features(self) -> int:
        return self.d

    def fill(self, raw: tuple[np.ndarray, ...], X: np.ndarray, y: np.ndarray | None) -> None:
        signs, coin = raw
        np.multiply(signs, 2.0, out=X)
        X -= 1.0
        X[:, 0] = np.where(coin < self.threshold, -1.0, 1.0)
        if self.w_rest != 1.0:
            X[:, 1:] *= self.w_rest
        if self.w_first != 1.0:
            X[:, 0] *= self.w_first


class LinearPopulation(Problem):
    r"""Linear losses ``f(x; z) = <z, x>`` with an exact population ``F(x) = <mu, x>`` and a known minimizer.

    The shared oracle of the linear lower-bound families (this module and :mod:`dpsco_lib.problems.hard_sco`): the
    gradient ``z`` does not depend on ``x`` (``L1 = L2 = 0``), the records have dual norm at most 1 (``L0 = 1``),
    and a subclass states ``mu`` and the minimizer ``x*`` over its feasible set with :meth:`_set_linear`.
    """

    mu: np.ndarray

    def _set_linear(self, mu: np.ndarray, x_star: np.ndarray) -> None:
        self.L0, self.L1, self.L2 = 1.0, 0.0, 0.0
        self.exact_population = True
        self.mu = mu
        self._cache = {"opt": (x_star, float(mu @ x_star))}

    def _loss(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return data.X @ x

    def _grad(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return np.array(data.X, dtype=np.float64, copy=True)

    def _mean_grad(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return data.X.mean(axis=0)

    def _population_risk(self, x: np.ndarray) -> float:
        return float(self.mu @ x)

    def _population_grad(self, x: np.ndarray) -> np.ndarray:
        return self.mu.copy()

    def _cvxpy_population(self, var: Any) -> Any:
        return self.mu @ var


class _PlantedLinear(LinearPopulation):
    """The planted-vertex members: ``E z = -signal e_1``, ``x* = radius e_1``."""

    signal: float
    radius: float

    def _plant(self, d: int, spec: str) -> None:
        self.spec = spec
        mu = np.zeros(d)
        mu[0] = -self.signal
        x_star = np.zeros(d)
        x_star[0] = self.radius
        self._set_linear(mu, x_star)


class HardLinear(_PlantedLinear):
    r"""``f(x; z) = <z, x>`` over the l1 ball of radius ``r``, ``E z = -gamma e_1`` (module docstring).

    Parameters
    ----------
    d : int
        Dimension, ``>= 2``.
    gamma : float
        Hardness parameter in (0, 1]: the mean of ``-z_1`` and the score gap of the optimal vertex (per unit
        radius). Stored as the nearest ``2 k/2^30 - 1`` (attribute ``gamma``).
    radius : float
        ``r > 0``.
    p : float
        ``1`` (the l1 ball, records in ``{-1, 1}^d``) or ``2`` (the l2 ball, records of unit l2 norm; module
        docstring).

    Attributes
    ----------
    gamma : float
        The exact hardness parameter of the sampled distribution.
    L0, L1, L2 : float
        ``1, 0, 0`` (gradients in the dual norm: l_inf for ``p = 1``, l2 for ``p = 2``).
    signal : float
        ``||E x_rec|| = gamma w_1`` (``w_1 = 1`` for ``p = 1``, ``1/sqrt 2`` for ``p = 2``): the excess is
        ``signal (r - x_1)``.
    """

    needs_labels = False

    def __init__(self, d: int, gamma: float, *, radius: float = 1.0, p: float = 1.0) -> None:
        d = check_size(d, "d", lo=2)
        gamma = check_in_range(gamma, "gamma", 0.0, 1.0, lo_inclusive=False)
        self.radius = check_positive(radius, "radius")
        if p not in (1, 2):
            raise ValueError(f"p must be 1 or 2, got {p!r}")
        self.p = float(p)
        k = int(round((1.0 + gamma) / 2.0 * (1 << COIN_BITS)))
        self.gamma = 2.0 * k / (1 << COIN_BITS) - 1.0
        if self.p == 1.0:
            self.weights = (1.0, 1.0)
            self.feasible_set = L1Ball(d, self.radius)
        else:
            self.weights = (1.0 / math.sqrt(2.0), 1.0 / math.sqrt(2.0 * (d - 1)))
            self.feasible_set = LpBall(d, 2.0, self.radius)
        self.sampler = _PlantedSignSampler(d, k, *self.weights)
        self.signal = self.gamma * self.weights[0]
        self._plant(d, "F1, F2, S2")

    def __repr__(self) -> str:
        return f"HardLinear(d={self.d}, gamma={self.gamma:.6g}, radius={self.radius:g}, p={self.p:g})"

    @property
    def trivial_error(self) -> float:
        """Excess risk of the centre ``x = 0``: ``signal r`` (``gamma r`` for ``p = 1``)."""
        return self.signal * self.radius

    def _bounds_text(self) -> str:
        return "||z||_inf <= 1" if self.p == 1.0 else "||z||_2 <= 1"

    # ---- data
    def _sample(self, n: int, rng: np.random.Generator) -> Dataset:
        X, _ = self.sampler(n, rng)
        return Dataset(X, None)

    def _block_sampler(self) -> BlockSampler | None:
        return self.sampler

    def _row_violation(self, data: Dataset) -> np.ndarray:
        if self.p == 1.0:
            return np.any(np.abs(data.X) > 1.0 + _RTOL, axis=1)
        return np.linalg.norm(data.X, axis=1) > 1.0 + _RTOL

    def _clip_rows(self, data: Dataset, bad: np.ndarray) -> Dataset:
        """Clip to the declared bound: every coordinate to [-1, 1] (``p = 1``), the rows to the unit l2 ball."""
        if self.p == 1.0:
            return Dataset(np.clip(data.X, -1.0, 1.0), None)
        nrm = np.maximum(np.linalg.norm(data.X, axis=1, keepdims=True), 1.0)
        return Dataset(data.X / nrm, None)



def hard_linear(d: int, gamma: float, *, radius: float = 1.0, p: float = 1.0) -> HardLinear:
    """The instance of the hard linear family with hardness ``gamma`` (:class:`HardLinear`; Spec F1, F2, S2);
    ``p = 2``: its Euclidean member (unit-norm records over the l2 ball)."""
    return HardLinear(d, gamma, radius=radius, p=p)


class SparseHardLinear(_PlantedLinear):
    r"""The sparse member of the hard linear family: ``s``-sparse records of unit l2 norm (Spec Z3).

    A record has ``z_1 = -1/sqrt(s)`` with probability ``(1 + gamma)/2`` (else ``+1/sqrt(s)``) and ``s - 1``
    further entries ``+-1/sqrt(s)`` (independent signs) on a uniformly random support among coordinates
    ``2, ..., d``; so every per-sample gradient of ``f(x; z) = <z, x>`` is ``s``-sparse with ``||z||_2 = 1``, and

    .. math:: \mathbb E z = -\frac{\gamma}{\sqrt s} e_1,\qquad F(x) = -\frac{\gamma}{\sqrt s} x_1,\qquad
              x^\star = r e_1,\qquad F(x) - F^\star = \frac{\gamma}{\sqrt s}(r - x_1)

    over the l1 ball of radius ``r``. The trivial output 0 has excess ``gamma r/sqrt(s)``. As in
    :class:`HardLinear`, an algorithm must single out the planted vertex ``r e_1`` among ``2d`` from noisy
    gradient information whose signal is ``gamma/sqrt(s)`` per record.

    Parameters
    ----------
    d : int
        Dimension, ``>= 2``.
    gamma : float
        Hardness parameter in (0, 1]; stored as the nearest ``2k/2^30 - 1`` (exact mean).
    sparsity : int
        ``s`` in ``[1, d]``.
    radius : float
        ``r > 0``.
    """

    needs_labels = False

    def __init__(self, d: int, gamma: float, *, sparsity: int, radius: float = 1.0) -> None:
        d = check_size(d, "d", lo=2)
        gamma = check_in_range(gamma, "gamma", 0.0, 1.0, lo_inclusive=False)
        self.sparsity = check_int(sparsity, "sparsity", lo=1, hi=d)
        self.radius = check_positive(radius, "radius")
        self._k = int(round((1.0 + gamma) / 2.0 * (1 << COIN_BITS)))
        self.gamma = 2.0 * self._k / (1 << COIN_BITS) - 1.0
        self.p = 2.0
        self.feasible_set = L1Ball(d, self.radius)
        self.signal = self.gamma / math.sqrt(self.sparsity)
        self._plant(d, "Z3")

    def __repr__(self) -> str:
        return f"SparseHardLinear(d={self.d}, gamma={self.gamma:.6g}, sparsity={self.sparsity}, radius={self.radius:g})"

    @property
    def trivial_error(self) -> float:
        """Population excess risk of the centre ``x = 0``: ``gamma r/sqrt(s)``."""
        return self.signal * self.radius

    def _bounds_text(self) -> str:
        return f"||z||_2 <= 1 and ||z||_0 <= {self.sparsity}"

    def _sample(self, n: int, rng: np.random.Generator) -> Dataset:
        d, s = self.d, self.sparsity
        X = np.zeros((n, d))
        coin = rng.integers(0, 1 << COIN_BITS, size=n)
        X[:, 0] = np.where(coin < self._k, -1.0, 1.0)
        if s > 1:
            cols = 1 + np.argsort(rng.random((n, d - 1)), axis=1)[:, : s - 1]
            np.put_along_axis(X, cols, 2.0 * rng.integers(0, 2, size=(n, s - 1)) - 1.0, axis=1)
        X /= math.sqrt(s)
        return Dataset(X, None)

    def _row_violation(self, data: Dataset) -> np.ndarray:
        X = data.X
        return (np.linalg.norm(X, axis=1) > 1.0 + _RTOL) | (np.count_nonzero(X, axis=1) > self.sparsity)

    def _clip_rows(self, data: Dataset, bad: np.ndarray) -> Dataset:
        """Keep each bad row's ``s`` largest entries in magnitude, then scale it into the unit l2 ball."""
        X = np.array(data.X, dtype=np.float64, copy=True)
        s = self.sparsity
        if s < self.d:
            small = np.argsort(-np.abs(X), axis=1)[:, s:]
            np.put_along_axis(X, small, 0.0, axis=1)
        X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
        return Dataset(np.where(bad[:, None], X, data.X), None)
