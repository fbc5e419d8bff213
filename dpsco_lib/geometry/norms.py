"""l_p norms, dual exponents and the regularity constant of (R^d, ||.||_q) (Spec S1, G1).

Setup (spec/frank-wolfe.md): the primal space is (R^d, ||.||_p), gradients live in the dual
(R^d, ||.||_q) with 1/p + 1/q = 1. The generalized Gaussian mechanism (Spec G1, [BGN21]) needs a
*smooth* norm equivalent to ||.||_q; this module states which one is used and its regularity constant.

Regularity (Juditsky-Nemirovski).  A normed space (R^d, ||.||) is kappa-regular if there are
kappa_+ in [1, kappa] and a norm ||.||_+ with

    ||x||^2 <= ||x||_+^2 <= (kappa / kappa_+) ||x||^2          (equivalence)
    ||x + h||_+^2 <= ||x||_+^2 + <grad ||x||_+^2, h> + kappa_+ ||h||_+^2   (smoothness)

For 2 <= r < inf the l_r norm satisfies the smoothness inequality with kappa_+ = r - 1 (the function
(1/2)||.||_r^2 is (r - 1)-smooth w.r.t. ||.||_r), so (R^d, ||.||_q) is (q - 1)-regular with
||.||_+ = ||.||_q.  For q large this is poor (and q = inf is not smooth at all); the classical fix is
to use ||.||_r with r = ln d < q.  Since ||x||_q <= ||x||_r <= d^(1/r - 1/q) ||x||_q,

    kappa = (r - 1) * d^(2/r - 2/q),     and with r = ln d:   kappa = (ln d - 1) * e^(2 - 2 ln d / q)
                                                                     <= e^2 (ln d - 1)   (q = inf).

(The equivalence factor is d^(2/r - 2/q) <= d^(2/r) = e^2 for r = ln d.)  The rule used everywhere
in the library ("min(q, ln d)", Spec G1) is r = q if q <= max(2, ln d), else r = max(2, ln d); the
floor 2 is needed because l_r is smooth only for r >= 2 and matters only for d < e^2 ~ 7.4.
For q < 2 (p > 2) the Euclidean norm is used: ||x||_q >= ||x||_2 >= d^(1/2 - 1/q) ||x||_q, giving
kappa = d^(2/q - 1) with kappa_+ = 1.

Remark: the minimizer of r -> (r - 1) d^(2/r) is r* = ln d + sqrt(ln^2 d - 2 ln d) ~ 2 ln d, which
improves the q = inf constant from e^2 ln d to about 2e ln d; the library keeps the spec's r = ln d.

The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

from dpsco_lib._validation import check_int

__all__ = [
    "check_exponent",
    "dual_exponent",
    "lp_norm",
    "regularity_constant",
    "smooth_dual_exponent",
]


def check_exponent(p: float, name: str = "p") -> float:
    """Validate a norm exponent p in [1, inf] and return it as a float."""
    if isinstance(p, bool) or not isinstance(p, Real):
        raise ValueError(f"{name} must be a real number in [1, inf], got {p!r}")
    v = float(p)
    if math.isnan(v) or v < 1:
        raise ValueError(f"{name} must lie in [1, inf], got {v!r}")
    return v


def lp_norm(x: np.ndarray, p: float, axis: int = -1) -> np.ndarray | float:
    """The l_p norm ``(sum_i |x_i|^p)^(1/p)`` along ``axis`` (p in [1, inf]), vectorized.

    Computed as ``m * ||x / m||_p`` with ``m = max_i |x_i|`` so that neither overflow (entries up to
    1e300) nor underflow (large p) occurs.  Returns a float for a 1-D input, else an array.  ``x`` must be
    finite: NaN or inf entries raise ``ValueError`` (a NaN entry used to give the norm 0).
    """
    p = check_exponent(p)
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"x must be a real array (convertible to float64), got {type(x).__name__}") from exc
    if arr.ndim == 0:
        raise ValueError(f"x must have at least one axis, got a scalar {x!r}")
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not -arr.ndim <= axis < arr.ndim:
        raise ValueError(
            f"axis must be an integer in [{-arr.ndim}, {arr.ndim - 1}] for x of shape {arr.shape}, got {axis!r}"
        )
    a = np.abs(arr)
    out = np.squeeze(abs_norm_keepdims(a, p, axis, overwrite=True), axis=axis)  # ``a`` is our own copy
    # NaN propagates to the norm (see abs_norm_keepdims) and inf entries give inf, so only a non-finite norm
    # needs the O(size) scan of the input (a finite input whose norm overflows float64 keeps its inf)
    if not np.all(np.isfinite(out)) and not np.all(np.isfinite(arr)):
        bad = int(np.sum(~np.isfinite(arr)))
        raise ValueError(f"x must be finite, got {bad} non-finite entries (NaN or inf)")
    if np.ndim(out) == 0:
        return float(out)
    return out


def abs_norm_keepdims(a: np.ndarray, p: float, axis: int = -1, *, overwrite: bool = False) -> np.ndarray:
    """l_p norm of a non-negative array along ``axis`` with keepdims (p validated; internal, fast).

    ``overwrite=True`` lets the finite, non-zero path reuse ``a`` as its scratch buffer (the caller owns ``a`` and
    does not read it afterwards): the same ufuncs on the same values in the same order, hence bit-identical
    results, without two full-size temporaries (the record-bound checks of ``validate_data`` run this on
    ``(rows, d)`` blocks).
    """
    if p == 1.0:
        return a.sum(axis=axis, keepdims=True)
    if p == math.inf:
        return a.max(axis=axis, keepdims=True)
    m = np.maximum.reduce(a, axis=axis, keepdims=True)  # == a.max(axis, keepdims=True)
    if not (np.all(m > 0) and np.all(m < math.inf)):
        with np.errstate(invalid="ignore", divide="ignore"):
            good = (m > 0) & (m < math.inf)
            scaled = np.where(good, a / np.where(good, m, 1.0), 0.0)
            core = (
                np.sum(scaled * scaled, axis=axis, keepdims=True) ** 0.5
                if p == 2.0
                else (np.sum(scaled**p, axis=axis, keepdims=True) ** (1.0 / p))
            )
            # NaN entries (m is NaN: np.maximum propagates it) give a NaN norm, never a silent 0
            return np.where(m == math.inf, math.inf, np.where(m > 0, m * core, np.where(np.isnan(m), math.nan, 0.0)))
    scaled = np.divide(a, m, out=a) if overwrite else a / m
    if p == 2.0:
        sq = np.multiply(scaled, scaled, out=scaled if overwrite else None)
        return m * np.sqrt(np.add.reduce(sq, axis=axis, keepdims=True))
    if overwrite:
        scaled **= p  # in-place ``**``: the same power loop (and scalar fast paths) as ``scaled**p``
        return m * np.add.reduce(scaled, axis=axis, keepdims=True) ** (1.0 / p)
    return m * np.add.reduce(scaled**p, axis=axis, keepdims=True) ** (1.0 / p)


#: Relative band around the bound inside which :func:`lp_norms_exceed` recomputes a row with :func:`lp_norm`.
#: Both evaluations are within ~(log2 d + p + 24) ulp (< 1e-13 for d < 2^60) of the true norm, so a row decided
#: outside the band gets the same answer from both.
_EXCEED_BAND = 1e-11
#: Largest integer exponent evaluated by repeated multiplication in :func:`lp_norms_exceed`.
_EXCEED_MAX_INT_P = 8
#: Entries per sub-block of :func:`lp_norms_exceed` (two 256 KB scratch arrays).
_EXCEED_CHUNK_ENTRIES = 1 << 15


def lp_norms_exceed(x: np.ndarray, p: float, bound: float) -> np.ndarray:
    """``lp_norm(x, p, axis=-1) > bound`` for the rows of a 2-D float64 array (internal; the same booleans).

    For the record-bound checks of ``validate_data`` (``||a_i||_q <= B (1 + rtol)``), where only the comparison
    is used.  For an integer ``p`` in ``[2, 8]`` each row's ``sum_j |x_ij|^p`` is formed by ``p - 1`` exact-order
    multiplications instead of ``pow``, on cache-sized row sub-blocks with preallocated scratch (about four times
    faster than :func:`lp_norm` on ``(rows, d)`` blocks; the fast norm may differ from ``lp_norm`` in the last
    bits, by far less than ``_EXCEED_BAND``); every row whose fast norm lies within the
    relative band ``_EXCEED_BAND`` of ``bound``, or is not finite, is recomputed with :func:`lp_norm` itself.
    Hence the result equals ``lp_norm(x, p, axis=-1) > bound`` row for row (tests/lib/geometry/test_norms.py).
    Other exponents, and bounds that are not positive or whose ``p``-th power leaves ``[1e-250, 1e250]`` (near
    float64 under/overflow), go to :func:`lp_norm` directly.
    """
    p = check_exponent(p)
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"x must be a 2-D array of rows, got shape {a.shape}")
    bound = float(bound)
    k = int(p) if (p.is_integer() and 2 <= p <= _EXCEED_MAX_INT_P) else 0
    # bound^k must stay far from the float64 under- and overflow thresholds (1e-250 < bound^k < 1e250)
    if not k or not (math.isfinite(bound) and bound > 0 and abs(k * math.log10(bound)) < 250) or a.shape[1] == 0:
        return np.asarray(lp_norm(a, p, axis=-1)) > bound
    n, d = a.shape
    rows = max(1, _EXCEED_CHUNK_ENTRIES // d)  # sub-blocks that stay in cache through abs, powers and the sum
    buf_abs = np.empty((min(rows, n), d))
    buf_pow = np.empty((min(rows, n), d))
    total = np.empty(n)
    with np.errstate(over="ignore", invalid="ignore"):  # rows with huge / non-finite entries are redone below
        for lo in range(0, n, rows):
            blk = a[lo:lo + rows]
            r = blk.shape[0]
            acc = np.abs(blk, out=buf_abs[:r])
            power = np.multiply(acc, acc, out=buf_pow[:r])
            for _ in range(k - 2):
                np.multiply(power, acc, out=power)
            np.add.reduce(power, axis=-1, out=total[lo:lo + r])
        fast = total ** (1.0 / k)
    out = fast > bound
    undecided = ~np.isfinite(fast) | (np.abs(fast - bound) <= _EXCEED_BAND * bound)
    if np.any(undecided):
        redo = np.flatnonzero(undecided)
        out[redo] = np.asarray(lp_norm(a[redo], p, axis=-1)) > bound
    return out


def dual_exponent(p: float) -> float:
    """Hölder conjugate q of p: 1/p + 1/q = 1 (p = 1 -> inf, p = inf -> 1)."""
    p = check_exponent(p)
    if p == 1.0:
        return math.inf
    if math.isinf(p):
        return 1.0
    return p / (p - 1.0)


def _ln_d_exponent(d: int) -> float:
    return max(2.0, math.log(d))


def smooth_dual_exponent(p: float, d: int) -> float:
    """Exponent r of the smooth norm ||.||_r used for noise in the dual of (R^d, ||.||_p) (Spec G1).

    With q the dual exponent of p:  r = q if 2 <= q <= max(2, ln d);  r = max(2, ln d) if q > max(2, ln d)
    (including q = inf, i.e. p = 1);  r = 2 if q < 2 (p > 2).  See the module docstring for why
    ||.||_r is then (r - 1)-smooth and equivalent to ||.||_q up to the factor d^(1/r - 1/q) <= e.
    """
    q = dual_exponent(p)
    d = check_int(d, "d", lo=1)
    if q < 2.0:
        return 2.0
    return min(q, _ln_d_exponent(d))


def regularity_constant(q: float, d: int | None = None) -> float:
    """Regularity constant kappa of (R^d, ||.||_q) with the library's smooth norm (Spec G1).

    - 2 <= q <= max(2, ln d) (or any finite q >= 2 when ``d`` is None):  kappa = q - 1 (||.||_+ = ||.||_q).
    - q > max(2, ln d), q = inf included:  ||.||_+ = ||.||_r, r = max(2, ln d), and
      kappa = (r - 1) d^(2/r - 2/q); for d >= e^2 and q = inf this is e^2 (ln d - 1).
    - 1 <= q < 2: ||.||_+ = ||.||_2, kappa = d^(2/q - 1) (requires d).

    Parameters
    ----------
    q : float
        Exponent of the (dual) norm, in [1, inf].
    d : int, optional
        Dimension; required for q = inf and q < 2.
    """
    q = check_exponent(q, "q")
    if d is None:
        if math.isinf(q) or q < 2.0:
            raise ValueError(f"regularity_constant needs the dimension d for q = {q!r} (q < 2 or q = inf)")
        return q - 1.0
    d = check_int(d, "d", lo=1)
    if q < 2.0:
        return float(d) ** (2.0 / q - 1.0)
    r = _ln_d_exponent(d)
    if q <= r:
        return q - 1.0
    inv_q = 0.0 if math.isinf(q) else 1.0 / q
    return (r - 1.0) * float(d) ** (2.0 / r - 2.0 * inv_q)
