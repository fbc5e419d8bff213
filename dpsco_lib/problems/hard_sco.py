r"""Lower-bound families of non-private stochastic convex optimization in the :math:`\ell_p` setups (Spec S1).

The minimax rates of the Nemirovski-Yudin table are lower bounds over classes of Lipschitz convex losses; they are
proved with linear losses :math:`f(x; z) = \langle z, x\rangle` whose mean :math:`\mathbb E z` hides a direction
that the records reveal only slowly (Nemirovski & Yudin 1983; Agarwal, Bartlett, Ravikumar & Wainwright 2012). This
module holds two such families, each with an exact population risk, a planted optimum and an exact excess risk, so
that an algorithm's worst case over the family's hardness parameter :math:`\gamma` can be measured. (The
:math:`p = 1` family is :func:`~dpsco_lib.problems.hard_linear.hard_linear`.)

**The** :math:`\ell_p` **ball,** :math:`1 < p \le 2` (:class:`PlantedLpLinear`, Le Cam's two-point
construction). With :math:`q = p/(p-1)`, weights :math:`w_1 = 2^{-1/q}` and :math:`w = (2(d-1))^{-1/q}`, a record
is :math:`z = (w_1\zeta_1, w\zeta_2, \dots, w\zeta_d)` with independent signs, :math:`\zeta_1 = -1` with
probability :math:`(1+\gamma)/2` and :math:`\zeta_j` Rademacher for :math:`j \ge 2`; so :math:`\|z\|_q = 1`
(:math:`L_0 = 1`) and :math:`\mathbb E z = -\gamma w_1 e_1`. Over the :math:`\ell_p` ball of radius :math:`r`,

.. math:: F(x) = -\gamma w_1 x_1,\qquad x^\star = r e_1,\qquad F(x) - F^\star = \gamma w_1 (r - x_1).

The members :math:`\pm\gamma` are two distributions at Kullback-Leibler divergence :math:`O(n\gamma^2)` over
:math:`n` records whose optima are :math:`\pm r e_1`, so no method tells them apart when
:math:`\gamma \lesssim 1/\sqrt n`, and every method has excess :math:`\gtrsim \gamma r` on one of them: the
:math:`1/\sqrt n` rate, free of the dimension. The other coordinates carry pure noise of :math:`\ell_q` norm
:math:`2^{-1/q}` per record, which a mirror-descent iterate has to average out. At :math:`p = 2` the records are
those of the Euclidean member of :func:`~dpsco_lib.problems.hard_linear.hard_linear` (same draws, same weights).

**The cube,** :math:`p = \infty` (:class:`PlantedCubeLinear`, Assouad's hypercube construction). Given signs
:math:`\sigma \in \{\pm1\}^d`, a record carries one coordinate: :math:`z = \zeta e_J` with :math:`J` uniform on
:math:`\{1, \dots, d\}` and :math:`\zeta = -\sigma_J` with probability :math:`(1+\gamma)/2`, else :math:`\sigma_J`.
So :math:`\|z\|_1 = 1` (:math:`L_0 = 1` in the dual of :math:`\ell_\infty`), :math:`\mathbb E z = -(\gamma/d)
\sigma` and over the cube :math:`[-r, r]^d`

.. math:: F(x) = -\frac{\gamma}{d}\langle\sigma, x\rangle,\qquad x^\star = r\sigma,\qquad F^\star = -\gamma r,
          \qquad F(x) - F^\star = \gamma\Big(r - \frac{\langle \sigma, x\rangle}{d}\Big).

Each coordinate is observed about :math:`n/d` times with bias :math:`\gamma`, so a sign :math:`\sigma_j` stays
undetermined while :math:`\gamma \lesssim \sqrt{d/n}`; a wrong or undecided coordinate costs
:math:`\gamma r/d`, and Assouad's lemma over the :math:`2^d` sign vectors gives excess
:math:`\gtrsim \gamma r \asymp r\sqrt{d/n}` for :math:`n \ge d`: the :math:`\sqrt{d/n}` rate of the table.

Sampling. ``gamma`` is stored as the exactly represented :math:`2k/2^{30} - 1` nearest to the requested value (the
coin is an integer draw :math:`u < k` out of :math:`2^{30}`), so the stated means hold exactly for the stored
``gamma``. Both samplers are :class:`~dpsco_lib.problems.stream.BlockSampler` s, so ``problem.stream`` holds one
block at a time.

The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpsco_lib._validation import check_array, check_in_range, check_positive, check_size
from dpsco_lib.geometry.norms import dual_exponent, lp_norm
from dpsco_lib.geometry.sets import LpBall
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.hard_linear import LinearPopulation
from dpsco_lib.problems.stream import BlockSampler, IntegerDraw

__all__ = ["PlantedCubeLinear", "PlantedLpLinear", "planted_cube_linear", "planted_lp_linear"]

#: Resolution of the coin: P(sign against the planted direction) = k / 2^30.
COIN_BITS = 30
_RTOL = 1e-9


def _coin(gamma: float) -> tuple[int, float]:
    """The integer threshold ``k`` of the coin and the exactly represented ``gamma = 2k/2^30 - 1``."""
    k = int(round((1.0 + gamma) / 2.0 * (1 << COIN_BITS)))
    return k, 2.0 * k / (1 << COIN_BITS) - 1.0


@dataclass(frozen=True)
class _WeightedSignSampler(BlockSampler):
    """``z_j = w zeta_j`` (Rademacher) for ``j >= 2`` and ``z_1 = -w_1`` iff ``u < threshold``."""

    d: int
    threshold: int
    w_first: float
    w_rest: float

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
        X[:, 1:] *= self.w_rest
        X[:, 0] *= self.w_first


@dataclass(frozen=True)
class _CoordinateSignSampler(BlockSampler):
    """``z = zeta e_J``: ``J`` uniform, ``zeta = -sigma_J`` iff ``u < threshold``, else ``sigma_J``."""

    sigma: np.ndarray = field(compare=False)
    threshold: int

    labelled = False

    def draws(self) -> tuple[IntegerDraw, ...]:
        return (IntegerDraw(0, self.sigma.size), IntegerDraw(0, 1 << COIN_BITS))

    def n_features(self) -> int:
        return int(self.sigma.size)

    def fill(self, raw: tuple[np.ndarray, ...], X: np.ndarray, y: np.ndarray | None) -> None:
        J, coin = raw
        X[...] = 0.0
        s = self.sigma[J]
        X[np.arange(J.size), J] = np.where(coin < self.threshold, -s, s)


class _LinearOracle(LinearPopulation):
    """:class:`~dpsco_lib.problems.hard_linear.LinearPopulation` with this module's samplers and the dual-norm bound
    ``||z||_q <= 1`` of the records."""

    sampler: BlockSampler
    needs_labels = False
    exact_population = True
    spec = "S1"

    def _sample(self, n: int, rng: np.random.Generator) -> Dataset:
        X, _ = self.sampler(n, rng)
        return Dataset(X, None)

    def _block_sampler(self) -> BlockSampler | None:
        return self.sampler

    def _row_violation(self, data: Dataset) -> np.ndarray:
        return lp_norm(data.X, self.q, axis=-1) > 1.0 + _RTOL

    def _clip_rows(self, data: Dataset, bad: np.ndarray) -> Dataset:
        """Scale every record into the unit ball of the dual norm ``||.||_q``."""
        nrm = np.maximum(lp_norm(data.X, self.q, axis=-1), 1.0)
        return Dataset(data.X / nrm[:, None], None)

    def _bounds_text(self) -> str:
        return f"||z||_{self.q:g} <= 1"

    @property
    def trivial_error(self) -> float:
        """Excess risk of the centre ``x = 0`` (the start of mirror descent): ``-F*``."""
        return -self._cache["opt"][1]


class PlantedLpLinear(_LinearOracle):
    r"""Le Cam's two-point family on the :math:`\ell_p` ball, :math:`1 < p \le 2` (module docstring; Spec S1).

    Parameters
    ----------
    d : int
        Dimension, ``>= 2``.
    gamma : float
        Hardness parameter in (0, 1]: :math:`\mathbb E z = -\gamma w_1 e_1`; stored as the nearest
        :math:`2k/2^{30} - 1` (attribute ``gamma``).
    p : float
        Setup exponent in (1, 2].
    radius : float
        ``r > 0``.

    Attributes
    ----------
    signal : float
        :math:`\gamma w_1`, the excess is ``signal (r - x_1)`` and the trivial excess ``signal r``.
    weights : tuple of float
        :math:`(w_1, w) = (2^{-1/q}, (2(d-1))^{-1/q})`.
    """

    def __init__(self, d: int, gamma: float, *, p: float, radius: float = 1.0) -> None:
        d = check_size(d, "d", lo=2)
        gamma = check_in_range(gamma, "gamma", 0.0, 1.0, lo_inclusive=False)
        self.p = check_in_range(p, "p", 1.0, 2.0, lo_inclusive=False)
        self.radius = check_positive(radius, "radius")
        q = dual_exponent(self.p)
        k, self.gamma = _coin(gamma)
        self.weights = (1.0 / 2.0 ** (1.0 / q), 1.0 / (2.0 * (d - 1)) ** (1.0 / q))
        self.feasible_set = LpBall(d, self.p, self.radius)
        self.sampler = _WeightedSignSampler(d, k, *self.weights)
        self.signal = self.gamma * self.weights[0]
        mu = np.zeros(d)
        mu[0] = -self.signal
        x_star = np.zeros(d)
        x_star[0] = self.radius
        self._set_linear(mu, x_star)

    def __repr__(self) -> str:
        return f"PlantedLpLinear(d={self.d}, gamma={self.gamma:.6g}, p={self.p:g}, radius={self.radius:g})"


class PlantedCubeLinear(_LinearOracle):
    r"""Assouad's hypercube family on the cube :math:`[-r, r]^d`, :math:`p = \infty` (module docstring; Spec S1).

    Parameters
    ----------
    d : int
        Dimension, ``>= 2``.
    gamma : float
        Hardness parameter in (0, 1], the bias of each record's sign: :math:`\mathbb E z = -(\gamma/d)\sigma`;
        stored as the nearest :math:`2k/2^{30} - 1` (attribute ``gamma``).
    signs : array (d,), optional
        The planted vertex direction :math:`\sigma \in \{\pm1\}^d` (default all ``+1``).
    radius : float
        ``r > 0``.
    """

    def __init__(self, d: int, gamma: float, *, signs: Any = None, radius: float = 1.0) -> None:
        d = check_size(d, "d", lo=2)
        gamma = check_in_range(gamma, "gamma", 0.0, 1.0, lo_inclusive=False)
        self.radius = check_positive(radius, "radius")
        sigma = np.ones(d) if signs is None else check_array(signs, "signs", ndim=1).astype(np.float64)
        if sigma.size != d or not np.all(np.abs(sigma) == 1.0):
            raise ValueError(f"signs must be a length-{d} vector of +-1 entries, got {sigma!r}")
        self.p = math.inf
        self.signs = sigma.copy()
        k, self.gamma = _coin(gamma)
        self.feasible_set = LpBall(d, math.inf, self.radius)
        self.sampler = _CoordinateSignSampler(self.signs, k)
        self.signal = self.gamma
        self._set_linear(-(self.gamma / d) * self.signs, self.radius * self.signs)

    def __repr__(self) -> str:
        return f"PlantedCubeLinear(d={self.d}, gamma={self.gamma:.6g}, radius={self.radius:g})"


def planted_lp_linear(d: int, gamma: float, *, p: float, radius: float = 1.0) -> PlantedLpLinear:
    """The member ``gamma`` of the two-point family on the l_p ball, ``1 < p <= 2`` (:class:`PlantedLpLinear`)."""
    return PlantedLpLinear(d, gamma, p=p, radius=radius)


def planted_cube_linear(d: int, gamma: float, *, signs: Any = None, radius: float = 1.0) -> PlantedCubeLinear:
    """The member ``gamma`` of the hypercube family on the cube (:class:`PlantedCubeLinear`)."""
    return PlantedCubeLinear(d, gamma, signs=signs, radius=radius)
