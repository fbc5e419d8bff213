"""Mirror maps, mirror steps and Bregman divergences for the l_p setups (Spec S1, A1, A5).

Three mirror maps psi (each 1-strongly convex w.r.t. the norm of its setup):

- **entropy** on the simplex, psi(x) = sum_i x_i ln x_i, 1-strongly convex w.r.t. ||.||_1 (Pinsker);
  the mirror step is the exponentiated-gradient update x+ prop. to x exp(-eta g), carried out in log
  space (``entropic_step``) so that no exponential of a raw score is ever formed;
- the **p-norm map** psi(x) = ||x||_p^2 / (2 (p - 1)), 1 < p <= 2, 1-strongly convex w.r.t. ||.||_p
  [Ball-Carlen-Lieb; Nemirovski-Yudin NY83]; its gradient is inverted by the gradient of the conjugate
  psi*(theta) = ||theta||_q^2 / (2 (q - 1)) = (p - 1) ||theta||_q^2 / 2;
- **Euclidean** psi(x) = ||x||_2^2 / 2 (projected SGD).

The l1 ball of radius R is handled by the 2d-vertex lift x = R (w[:d] - w[d:]) with w in the simplex
Delta_{2d} (Spec S1), and a general polytope conv(V) by x = V^T w with w in Delta_{|V|}.

The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import logsumexp, rel_entr

from dpsco_lib._validation import check_array, check_in_range, check_positive
from dpsco_lib.geometry.norms import abs_norm_keepdims, dual_exponent, lp_norm
from dpsco_lib.geometry.sets import FeasibleSet, LpBall

__all__ = [
    "bregman_divergence",
    "entropic_step",
    "entropic_update",
    "kl_divergence",
    "l1_lift",
    "l1_unlift",
    "pnorm_conjugate_grad",
    "pnorm_mirror_grad",
    "pnorm_mirror_step",
    "pnorm_psi",
]


# ---------------------------------------------------------------------------------------------
# entropy
# ---------------------------------------------------------------------------------------------


def entropic_step_unchecked(log_x: np.ndarray, g: np.ndarray, eta: float) -> np.ndarray:
    """Log-space exponentiated gradient along the last axis (no validation; used in hot loops)."""
    # The update is invariant to adding a constant to g, so shift g by its minimum: the scores
    # z = log_x - eta (g - min g) are <= log_x <= 0, never +inf, and no inf - inf can occur.
    gs = g - g.min(axis=-1, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore"):
        z = log_x - eta * gs
    zmax = z.max(axis=-1, keepdims=True)
    if np.all(np.isfinite(zmax)):
        z = z - zmax  # max entry 0: the sum below lies in [1, d], exp never overflows
        return z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))
    return _entropic_limit(log_x, g, eta, z)


def entropic_step_with_weights(log_x: np.ndarray, g: np.ndarray, eta: float) -> tuple[np.ndarray, np.ndarray]:
    """1-D fast path: (log x+, x+) with a single exponential per step (internal, used by the SMD loops)."""
    gs = g - g.min()
    with np.errstate(over="ignore", invalid="ignore"):
        z = log_x - eta * gs
    zmax = float(z.max())
    if not math.isfinite(zmax):
        lx = _entropic_limit(log_x[None], g[None], eta, z[None])[0]
        return lx, np.exp(lx)
    z -= zmax
    ez = np.exp(z)
    tot = float(ez.sum())
    return z - math.log(tot), ez / tot


_min_reduce = np.minimum.reduce
_sum_reduce = np.add.reduce


class EntropicStepInplace:
    """In-place variant of ``entropic_step_with_weights`` for the single-pass loops (internal).

    ``step(log_x, g, w)`` overwrites ``log_x`` with log x+ and ``w`` with x+ = exp(log x+) for a fixed step
    ``eta``, using preallocated scratch (two length-``size`` vectors and 0-d scalars: a 0-d float64 operand
    skips the per-call conversion of a Python scalar).  All arrays are 1-D float64 of length ``size``;
    ``log_x`` and ``w`` are distinct, ``g`` is only read (it may alias ``w``).  The caller must hold
    ``np.errstate(over="ignore", invalid="ignore")``, entered once around its loop instead of once per step.

    Every float64 operation is the one of ``entropic_step_with_weights`` in the same order: ndarray.sum of a
    1-D array is ``np.add.reduce`` (the same pairwise summation); the minimum and maximum are read at
    ``argmin``/``argmax`` (the value of ndarray.min/max; a NaN falls back to the reduction; a +0/-0 tie may
    pick the other zero, which can flip only the sign of a zero intermediate, never log x+ or x+);
    ``eta * gs`` and ``gs * eta`` are the same IEEE product; elementwise IEEE arithmetic does not depend on
    whether the scalar operand is a Python float or a 0-d array.  The results are bit-identical;
    tests/lib/geometry/test_mirror.py checks this.
    """

    __slots__ = ("eta", "gs", "z", "lo", "hi", "tot", "lse")

    def __init__(self, size: int, eta: float) -> None:
        self.eta = np.array(float(eta))
        self.gs = np.empty(size)
        self.z = np.empty(size)
        self.lo = np.empty(())
        self.hi = np.empty(())
        self.tot = np.empty(())
        self.lse = np.empty(())

    def step(self, log_x: np.ndarray, g: np.ndarray, w: np.ndarray) -> None:
        gs, z, lo, hi = self.gs, self.z, self.lo, self.hi
        gmin = g[g.argmin()]
        if gmin != gmin:  # NaN: keep the reduction's NaN
            gmin = _min_reduce(g)
        lo[()] = gmin
        np.subtract(g, lo, gs)  # gs = g - g.min()
        np.multiply(gs, self.eta, gs)  # eta * gs
        np.subtract(log_x, gs, z)  # z = log_x - eta * gs
        zmax = z[z.argmax()]
        if not math.isfinite(zmax):
            lx = _entropic_limit(log_x[None], g[None], float(self.eta), z[None])[0]
            log_x[...] = lx
            w[...] = np.exp(lx)
            return
        hi[()] = zmax
        np.subtract(z, hi, z)  # z -= zmax
        np.exp(z, w)  # ez
        tot = _sum_reduce(w, 0, None, self.tot)  # ez.sum()
        self.lse[()] = math.log(tot)
        np.subtract(z, self.lse, log_x)  # z - log(tot)
        np.divide(w, tot, w)  # ez / tot


def _entropic_limit(log_x: np.ndarray, g: np.ndarray, eta: float, z: np.ndarray) -> np.ndarray:
    """Rows where every score overflowed to -inf: return the eta -> limit, uniform on the argmax of
    (log_x - eta g) computed at a rescaled magnitude (only reached for |eta g| ~ 1e308)."""
    out = np.array(z, dtype=np.float64, copy=True)
    zmax = z.max(axis=-1, keepdims=True)
    good = np.isfinite(zmax)
    if np.any(good):
        zg = np.where(good, z - np.where(good, zmax, 0.0), -np.inf)
        lse = logsumexp(zg, axis=-1, keepdims=True)
        out = np.where(good, zg - np.where(good, lse, 0.0), out)
    scale = np.maximum(np.abs(g).max(axis=-1, keepdims=True), 1.0)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        u = (log_x / scale) / eta - g / scale
    u = np.where(np.isnan(u), -np.inf, u)
    umax = u.max(axis=-1, keepdims=True)
    hit = u == umax
    cnt = hit.sum(axis=-1, keepdims=True)
    lim = np.where(hit, -np.log(cnt), -np.inf)
    return np.where(good, out, lim)


def entropic_step(log_x: Any, g: Any, eta: float) -> np.ndarray:
    """Entropic mirror (exponentiated-gradient) step in log space (Spec S1, A1, A5).

    x+_i = x_i exp(-eta g_i) / sum_j x_j exp(-eta g_j), i.e.
    log x+ = log x - eta g - logsumexp(log x - eta g), computed after shifting g by min_i g_i (the
    update is invariant to constant shifts), so the scores never overflow upwards.  Works along the
    last axis of (..., d) arrays; entries log x_i = -inf (x_i = 0) stay -inf.  Finite for any finite
    g and eta, including |eta g| ~ 1e300 (the limit point is returned when all scores overflow).

    Parameters
    ----------
    log_x : array (..., d)
        Log of a point of the simplex (entries <= 0, -inf allowed, at least one finite per row).
    g : array (..., d)
        Gradient (finite).
    eta : float
        Step size > 0.
    """
    lx = check_array(log_x, "log_x", finite=False)
    if np.any(np.isnan(lx)) or np.any(lx == np.inf):
        raise ValueError("log_x must not contain NaN or +inf")
    if np.any(np.all(np.isneginf(lx), axis=-1)):
        raise ValueError("log_x must have at least one finite entry per row (a point of the simplex)")
    gg = check_array(g, "g")
    if gg.shape[-1] != lx.shape[-1]:
        raise ValueError(f"g must have last dimension {lx.shape[-1]} (that of log_x), got shape {gg.shape}")
    eta = check_positive(eta, "eta")
    lx, gg = np.broadcast_arrays(lx, gg)
    return entropic_step_unchecked(lx, gg, eta)


def entropic_update(x: Any, g: Any, eta: float) -> np.ndarray:
    """Entropic mirror step on a point x of the simplex: returns x+ prop. to x exp(-eta g) (log space inside)."""
    xx = check_array(x, "x")
    if np.any(xx < 0):
        raise ValueError("x must be non-negative (a point of the simplex)")
    with np.errstate(divide="ignore"):
        lx = np.log(xx)
    return np.exp(entropic_step(lx, g, eta))


def kl_divergence(x: Any, y: Any) -> np.ndarray | float:
    """Generalized KL divergence sum_i x_i ln(x_i / y_i) - x_i + y_i along the last axis.

    Equals KL(x || y) on the simplex; 0 ln 0 = 0; +inf if x_i > 0 = y_i.  It is the Bregman divergence
    of psi(x) = sum_i x_i ln x_i on the non-negative orthant.
    """
    xx = check_array(x, "x")
    yy = check_array(y, "y")
    if xx.shape[-1] != yy.shape[-1]:
        raise ValueError(f"x and y must have the same last dimension, got {xx.shape} and {yy.shape}")
    if np.any(xx < 0) or np.any(yy < 0):
        raise ValueError("x and y must be non-negative for the KL divergence")
    out = np.sum(rel_entr(xx, yy) - xx + yy, axis=-1)
    return float(out) if np.ndim(out) == 0 else out


# ---------------------------------------------------------------------------------------------
# p-norm map
# ---------------------------------------------------------------------------------------------


def _check_mirror_p(p: float) -> float:
    return check_in_range(p, "p", 1.0, 2.0, lo_inclusive=False, hi_inclusive=True)


def pnorm_psi(x: Any, p: float) -> np.ndarray | float:
    """psi(x) = ||x||_p^2 / (2 (p - 1)) for 1 < p <= 2 (along the last axis)."""
    p = _check_mirror_p(p)
    xx = check_array(x, "x")
    out = np.asarray(lp_norm(xx, p)) ** 2 / (2.0 * (p - 1.0))
    return float(out) if out.ndim == 0 else out


def _pgrad(x: np.ndarray, p: float) -> np.ndarray:
    # grad psi(x) = ||x||_p^(2-p) sign(x) |x|^(p-1) / (p-1) = N sign(x) (|x|/N)^(p-1) / (p-1), N = ||x||_p
    a = np.abs(x)
    n = abs_norm_keepdims(a, p)
    if np.all(n > 0):
        return n * np.sign(x) * (a / n) ** (p - 1.0) / (p - 1.0)
    safe = np.where(n > 0, n, 1.0)
    return np.where(n > 0, n * np.sign(x) * (a / safe) ** (p - 1.0) / (p - 1.0), 0.0)


def _qgrad(theta: np.ndarray, p: float) -> np.ndarray:
    # grad psi*(theta) = (p-1) ||theta||_q^(2-q) sign(theta) |theta|^(q-1) = (p-1) M sign (|theta|/M)^(q-1)
    q = dual_exponent(p)
    a = np.abs(theta)
    m = abs_norm_keepdims(a, q)
    safe = np.where(m > 0, m, 1.0)
    with np.errstate(under="ignore"):
        out = (p - 1.0) * m * np.sign(theta) * (a / safe) ** (q - 1.0)
    return out if np.all(m > 0) else np.where(m > 0, out, 0.0)


def pnorm_mirror_grad(x: Any, p: float) -> np.ndarray:
    """Gradient of psi(x) = ||x||_p^2/(2(p-1)): ||x||_p^(2-p) sign(x) |x|^(p-1) / (p-1) (1 < p <= 2)."""
    return _pgrad(check_array(x, "x"), _check_mirror_p(p))


def pnorm_conjugate_grad(theta: Any, p: float) -> np.ndarray:
    """Inverse of ``pnorm_mirror_grad``: the gradient of psi*(theta) = ||theta||_q^2 / (2 (q - 1)),
    i.e. (p - 1) ||theta||_q^(2-q) sign(theta) |theta|^(q-1) with q = p/(p - 1).  Computed with the
    entries scaled by ||theta||_q, so large q (p near 1) does not overflow."""
    return _qgrad(check_array(theta, "theta"), _check_mirror_p(p))


def pnorm_mirror_step(x: Any, g: Any, eta: float, p: float, feasible_set: FeasibleSet | None = None) -> np.ndarray:
    """One p-norm mirror-descent step with Bregman projection onto an l_p ball (Spec S1).

    x+ = argmin_{u in X} eta <g, u> + D_psi(u, x) with psi(u) = ||u||_p^2/(2(p - 1)), 1 < p <= 2:
    theta = grad psi(x) - eta g, u = grad psi*(theta) (unconstrained minimizer), then the Bregman
    projection onto X = {||u||_p <= R} (an ``LpBall`` with the same p, centred at 0).

    The projection is exact and radial: the objective psi(u) - <theta, u> depends on u only through
    s = ||u||_p and <theta, u> <= s ||theta||_q (Hölder, equality along the direction of u), so it
    reduces to s^2/(2(p - 1)) - s ||theta||_q, minimized over s <= R at s = min(R, (p - 1)||theta||_q);
    i.e. u is rescaled by min(1, R/||u||_p).  ``feasible_set=None`` means no constraint.
    """
    p = _check_mirror_p(p)
    xx = check_array(x, "x")
    gg = check_array(g, "g", shape=xx.shape)
    eta = check_positive(eta, "eta")
    if feasible_set is not None:
        if not isinstance(feasible_set, LpBall) or feasible_set.p != p:
            raise ValueError(
                f"pnorm_mirror_step projects exactly only onto an LpBall with the same p = {p}; got {feasible_set!r}"
            )
        if feasible_set.d != xx.shape[-1]:
            raise ValueError(f"x has dimension {xx.shape[-1]} but feasible_set has d = {feasible_set.d}")
    radius = None if feasible_set is None else feasible_set.radius
    return pnorm_step_unchecked(xx, gg, eta, p, radius)


def _pnorm_step_1d(x: np.ndarray, g: np.ndarray, eta: float, p: float, radius: float | None) -> np.ndarray:
    """Fast path of one p-norm mirror step for a finite 1-D x: two fractional powers per step.

    With a = |x|/max|x|: ||x||_p = max|x| (sum a * a^(p-1))^(1/p), reusing a^(p-1) for grad psi(x);
    likewise for theta with q.  The unconstrained point u = grad psi*(theta) has ||u||_p = (p - 1)||theta||_q
    exactly (as |u_i|^p is proportional to |theta_i|^q), so the radial Bregman projection needs no
    further norm evaluation.
    """
    q = p / (p - 1.0) if p < 2.0 else 2.0
    a = np.abs(x)
    mx = float(a.max())
    if mx > 0.0:
        a /= mx
        ap1 = a ** (p - 1.0)
        n = mx * float(a @ ap1) ** (1.0 / p)
        theta = ((n / (p - 1.0)) * (mx / n) ** (p - 1.0)) * np.sign(x) * ap1
        theta -= eta * g
    else:
        theta = -eta * g
    b = np.abs(theta)
    mb = float(b.max())
    if mb == 0.0:
        return np.zeros_like(x)
    b /= mb
    with np.errstate(under="ignore"):
        bq1 = b ** (q - 1.0)
    m = mb * float(b @ bq1) ** (1.0 / q)  # ||theta||_q
    s = (p - 1.0) * m  # = ||u||_p
    if radius is not None and s > radius:
        s = radius
    # u = (p-1) m sign(theta) (|theta|/m)^(q-1) rescaled to norm s: s sign(theta) (b mb/m)^(q-1)
    return (s * (mb / m) ** (q - 1.0)) * np.sign(theta) * bq1


def pnorm_step_unchecked(x: np.ndarray, g: np.ndarray, eta: float, p: float, radius: float | None) -> np.ndarray:
    if x.ndim == 1 and np.isfinite(x).all():
        return _pnorm_step_1d(x, g, eta, p, radius)
    u = _qgrad(_pgrad(x, p) - eta * g, p)
    if radius is None:
        return u
    n = abs_norm_keepdims(np.abs(u), p)
    return u * np.minimum(1.0, radius / np.maximum(n, 1e-300))


# ---------------------------------------------------------------------------------------------
# Bregman divergences
# ---------------------------------------------------------------------------------------------


def bregman_divergence(kind: str, x: Any, y: Any, *, p: float | None = None) -> np.ndarray | float:
    """Bregman divergence D_psi(x, y) = psi(x) - psi(y) - <grad psi(y), x - y> (along the last axis).

    kind: ``"euclidean"`` (||x - y||_2^2 / 2), ``"kl"`` or ``"entropy"`` (generalized KL, see
    ``kl_divergence``), ``"pnorm"`` (psi = ||.||_p^2/(2(p-1)), requires 1 < p <= 2).
    """
    if kind in ("kl", "entropy"):
        return kl_divergence(x, y)
    xx = check_array(x, "x")
    yy = check_array(y, "y")
    if xx.shape[-1] != yy.shape[-1]:
        raise ValueError(f"x and y must have the same last dimension, got {xx.shape} and {yy.shape}")
    if kind == "euclidean":
        out = 0.5 * np.sum((xx - yy) ** 2, axis=-1)
    elif kind == "pnorm":
        if p is None:
            raise ValueError("bregman_divergence(kind='pnorm') needs p in (1, 2]")
        p = _check_mirror_p(p)
        c = 1.0 / (2.0 * (p - 1.0))
        nx = np.asarray(lp_norm(xx, p))
        ny = np.asarray(lp_norm(yy, p))
        out = c * nx**2 - c * ny**2 - np.sum(_pgrad(yy, p) * (xx - yy), axis=-1)
        out = np.maximum(out, 0.0)  # clip rounding below 0 (D_psi >= 0 by convexity)
    else:
        raise ValueError(f"kind must be one of 'euclidean', 'kl', 'entropy', 'pnorm', got {kind!r}")
    return float(out) if np.ndim(out) == 0 else out


# ---------------------------------------------------------------------------------------------
# l1-ball lift
# ---------------------------------------------------------------------------------------------


def l1_lift(x: Any, radius: float = 1.0) -> np.ndarray:
    """A point w of Delta_{2d} with radius * (w[:d] - w[d:]) = x, for ||x||_1 <= radius (Spec S1).

    w[:d] = max(x, 0)/R + s/(2d), w[d:] = max(-x, 0)/R + s/(2d), s = 1 - ||x||_1/R (the slack is split
    evenly, so x = 0 maps to the uniform point, the entropic starting point).
    """
    radius = check_positive(radius, "radius")
    xx = check_array(x, "x")
    d = xx.shape[-1]
    n1 = np.abs(xx).sum(axis=-1, keepdims=True)
    if np.any(n1 > radius * (1 + 1e-9)):
        raise ValueError(f"x must lie in the l1 ball of radius {radius}; largest ||x||_1 is {float(n1.max())!r}")
    s = np.maximum(1.0 - n1 / radius, 0.0)
    return np.concatenate(
        [np.maximum(xx, 0.0) / radius + s / (2 * d), np.maximum(-xx, 0.0) / radius + s / (2 * d)], axis=-1
    )


def l1_unlift(w: Any, radius: float = 1.0) -> np.ndarray:
    """x = radius * (w[:d] - w[d:]) for w of (last) dimension 2d."""
    radius = check_positive(radius, "radius")
    ww = check_array(w, "w")
    if ww.shape[-1] % 2:
        raise ValueError(f"w must have an even last dimension 2d, got shape {ww.shape}")
    d = ww.shape[-1] // 2
    return radius * (ww[..., :d] - ww[..., d:])
