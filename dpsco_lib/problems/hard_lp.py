r"""The lower-bound construction of the :math:`\ell_p` setup, :math:`1 < p \le 2` (results F3 and L1; BGN21).

Linear losses over the unit :math:`\ell_p` ball with fingerprinting data: the hard family of the private
lower bound for DP-SCO in :math:`\ell_p`, with the exact optimum and the exact excess risk.

Construction. Let :math:`q = p/(p - 1) \ge 2`, :math:`s = d^{-1/q}` and :math:`\mathcal X = \{\|x\|_p \le 1\}`
(:math:`D = 2`). A record is :math:`z = s\xi` with :math:`\xi \in \{\pm 1\}^d` or :math:`z = 0`, so
:math:`\|z\|_q \le 1`, and the loss is :math:`f(x; z) = -\langle x, z\rangle` (convex, :math:`L_0 = 1` in
:math:`\|\cdot\|_q`, :math:`L_1 = 0`).
Given the *means* :math:`m \in [-1, 1]^d` (drawn from the prior :math:`m_j \sim U[-1, 1]` i.i.d.,
:func:`fingerprint_prior`) and the hardness parameter :math:`\alpha \in (0, 1]`, a record is *informative* with
probability :math:`\alpha` (then :math:`\xi_j = \pm 1` independently with mean :math:`m_j`) and the zero record
:math:`z = 0` otherwise: the padding of the fingerprinting argument. The population risk is exact,

.. math:: F(x) = -s\alpha\langle m, x\rangle,\qquad F^* = -s\alpha\|m\|_q,\qquad
          x^* = \mathrm{sign}(m)|m|^{q-1}/\|m\|_q^{q-1},

and the output :math:`x = 0` has the *trivial* excess :math:`s\alpha\|m\|_q \le \alpha`.

Lower bound (:func:`fingerprint_lower_bound`). For every :math:`(\varepsilon, \delta)`-DP algorithm (replace-one)
that sees :math:`n` records, with :math:`m` drawn from the prior,

.. math:: \mathbb E[F(x) - F^*] \ge \alpha\Big(\frac12 - \frac{n\alpha\, c_{\varepsilon,\delta}}{2 d^{1/q}}\Big),
          \qquad c_{\varepsilon,\delta} = e^\varepsilon - 1 + 4\delta d^{1/q},

maximal at :math:`\alpha^* = \min(1, d^{1/q}/(2 n c_{\varepsilon,\delta}))`, where it is
:math:`d^{1/q}/(8 n c_{\varepsilon,\delta})` (if :math:`\alpha^* < 1`). Proof (the fingerprinting argument).
(i) Fix which records are informative (the others are 0, independent of :math:`m`); the algorithm is
then :math:`(\varepsilon, \delta)`-DP in the :math:`k` informative rows :math:`X_i`. (ii) Fingerprinting identity:
for :math:`m_j \sim U[-1, 1]` and any bounded :math:`g` of the data, :math:`\mathbb E[g\sum_{i}(X_{ij} - m_j)] =
2\,\mathbb E[m_j g]` (the score of a :math:`\pm 1` variable with mean :math:`m` is :math:`(X - m)/(1 - m^2)`;
integrate :math:`(1 - m^2)\partial_m \mathbb E[g \mid m]` by parts, the boundary terms vanish). With
:math:`g = x_j` and summing over :math:`j`: :math:`2\mathbb E\langle m, x\rangle = \sum_i \mathbb E Z_i`,
:math:`Z_i = \langle x, X_i - m\rangle`. (iii) DP: with :math:`Z_i'` computed from the output on the data whose row
:math:`i` is replaced by an independent draw, :math:`\mathbb E Z_i' = 0`, :math:`\mathbb E|Z_i'| \le
(\mathbb E\|x'\|_2^2)^{1/2} \le 1` (as :math:`\|x\|_2 \le \|x\|_p \le 1` for :math:`p \le 2`) and
:math:`|Z_i| \le \|x\|_p\|X_i - m\|_q \le 2d^{1/q}`, so :math:`\mathbb E Z_i \le (e^\varepsilon - 1)\mathbb
E|Z_i'| + 2\delta\cdot 2d^{1/q}`. Hence :math:`\mathbb E\langle m, x\rangle \le \mathbb E[k]\, c/2 = n\alpha c/2`.
(iv) :math:`\mathbb E\|m\|_q \ge d^{1/q - 1}\mathbb E\|m\|_1 = d^{1/q}/2`, and the excess is
:math:`s\alpha(\|m\|_q - \langle m, x\rangle)`.

This explicit bound grows like :math:`d^{1/q} = d^{(p-1)/p}`: :math:`\sqrt d` at :math:`p = 2`, dimension-free as
:math:`p \to 1`, the transition of result L1. The theorem's sharper :math:`(p - 1)\sqrt d/(\varepsilon n)` for
:math:`p < 2` needs the uniform convexity of the :math:`\ell_p` ball in addition [BGN21].

The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpsco_lib._validation import (
    check_array,
    check_delta,
    check_epsilon,
    check_in_range,
    check_int,
    check_rng,
    check_size,
)
from dpsco_lib.geometry.norms import dual_exponent, lp_norm
from dpsco_lib.geometry.sets import LpBall
from dpsco_lib.problems.base import Problem
from dpsco_lib.problems.dataset import Dataset

__all__ = ["FingerprintLinearLp", "fingerprint_lower_bound", "fingerprint_prior"]


def fingerprint_prior(d: int, rng: np.random.Generator) -> np.ndarray:
    """The prior of the construction: ``d`` means ``m_j ~ U[-1, 1]`` i.i.d. (module docstring)."""
    d = check_size(d, "d", lo=1)
    return check_rng(rng).uniform(-1.0, 1.0, d)


def fingerprint_lower_bound(n: int, d: int, p: float, epsilon: float, delta: float,
                            alpha: float | None = None) -> float:
    r"""The explicit lower bound on the Bayes excess risk of any (eps, delta)-DP algorithm (module docstring).

    Parameters
    ----------
    n, d : int
        Records and dimension.
    p : float
        Setup exponent, ``1 < p <= 2``.
    epsilon, delta : float
        Privacy target (replace-one).
    alpha : float, optional
        Hardness parameter in (0, 1]; None: the maximizing ``alpha* = min(1, d^(1/q)/(2 n c))``.

    Returns
    -------
    float
        ``max(0, alpha (1/2 - n alpha c/(2 d^(1/q))))`` with ``c = e^eps - 1 + 4 delta d^(1/q)``.
    """
    n = check_int(n, "n", lo=1)
    d = check_size(d, "d", lo=1)
    p = check_in_range(p, "p", 1.0, 2.0, lo_inclusive=False)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    root = d ** (1.0 / dual_exponent(p))
    c = math.expm1(epsilon) + 4.0 * delta * root
    if alpha is None:
        alpha = min(1.0, root / (2.0 * n * c))
    alpha = check_in_range(alpha, "alpha", 0.0, 1.0, lo_inclusive=False)
    return max(0.0, alpha * (0.5 - n * alpha * c / (2.0 * root)))


class FingerprintLinearLp(Problem):
    r"""Linear losses over the unit :math:`\ell_p` ball with fingerprinting data (module docstring).

    Parameters
    ----------
    p : float
        ``1 < p <= 2``.
    means : array (d,)
        ``m`` in ``[-1, 1]^d`` (a draw of :func:`fingerprint_prior`).
    alpha : float
        Probability that a record is informative, in (0, 1] (the hardness parameter).
    """

    spec = "F3, L1"
    needs_labels = False
    exact_population = True

    def __init__(self, p: float, means: Any, alpha: float) -> None:
        self.p = check_in_range(p, "p", 1.0, 2.0, lo_inclusive=False)
        m = check_array(means, "means", ndim=1)
        if np.any(np.abs(m) > 1.0):
            raise ValueError(f"means must lie in [-1, 1], got max |m_j| = {float(np.max(np.abs(m)))!r}")
        self.means = m.copy()
        self.alpha = check_in_range(alpha, "alpha", 0.0, 1.0, lo_inclusive=False)
        d = m.size
        self.feasible_set = LpBall(d, self.p, radius=1.0)
        self.scale = float(d ** (-1.0 / dual_exponent(self.p)))
        self.L0, self.L1, self.L2 = 1.0, 0.0, 0.0
        self._mu = self.scale * self.alpha * self.means  # E z
        self._cache = {"opt": (self._optimum_point(), -float(lp_norm(self._mu, dual_exponent(self.p))))}

    def _optimum_point(self) -> np.ndarray:
        if not np.any(self._mu):
            return np.zeros(self.d)
        return self.feasible_set.lmo(-self._mu)

    def trivial_excess(self) -> float:
        """Excess risk of the data-independent output ``x = 0``: ``s alpha ||m||_q``."""
        return -self._cache["opt"][1]

    def _bounds_text(self) -> str:
        return f"a record is 0 or has every entry equal to +-d^(-1/q) = +-{self.scale:.6g}"

    def _loss(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return -(data.X @ x)

    def _grad(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return -np.asarray(data.X, dtype=np.float64)

    def _mean_grad(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        return -data.X.mean(axis=0)

    def _sample(self, n: int, rng: np.random.Generator) -> Dataset:
        informative = np.flatnonzero(rng.random(n) < self.alpha)
        X = np.zeros((n, self.d))
        # an informative entry is +1 with probability (1 + m_j)/2
        u = rng.random((informative.size, self.d))
        X[informative] = np.where(u < 0.5 * (1.0 + self.means), self.scale, -self.scale)
        return Dataset(X)

    def _row_violation(self, data: Dataset) -> np.ndarray:
        a = np.abs(data.X)
        zero = ~np.any(a, axis=1)
        off = np.any(a != self.scale, axis=1)  # the sampler writes +-scale exactly
        if np.any(off & ~zero):
            off = np.any(np.abs(a - self.scale) > 1e-12 * self.scale, axis=1)
        return off & ~zero

    def _clip_rows(self, data: Dataset, bad: np.ndarray) -> Dataset:
        X = np.array(data.X)
        X[bad] = np.where(X[bad] >= 0, self.scale, -self.scale)  # a bad record becomes its sign pattern
        return Dataset(X)

    def _population_risk(self, x: np.ndarray) -> float:
        return -float(self._mu @ x)

    def _population_grad(self, x: np.ndarray) -> np.ndarray:
        return -self._mu.copy()

    def _cvxpy_population(self, var: Any) -> Any:
        return -(self._mu @ var)
