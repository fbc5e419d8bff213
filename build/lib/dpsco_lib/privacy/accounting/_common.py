"""Shared helpers of the accounting subpackage: input checks, the default Renyi orders, conservative roots."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import optimize

from dpsco_lib._validation import check_array

#: Renyi orders used by default: the grid of dp-accounting's ``RdpAccountant`` (good coverage for Gaussian
#: mechanisms in the usual regime); the CKS20 conversion is optimized over it.
DEFAULT_RDP_ORDERS: tuple[float, ...] = tuple(
    [1 + x / 10.0 for x in range(1, 100)] + [float(a) for a in range(11, 64)] + [128.0, 256.0, 512.0, 1024.0]
)


def _sq(x: float) -> float:
    """``x**2`` (the same float64 bits) without the OverflowError of Python's float power: ``inf`` past 1e154."""
    return x**2 if abs(x) < 1e154 else math.inf


def _expm1_or_inf(x: float) -> float:
    """``math.expm1(x)``, or ``inf`` where it overflows float64 (x beyond ~709.78) instead of an OverflowError."""
    try:
        return math.expm1(x)
    except OverflowError:
        return math.inf


def _check_epsilons(epsilons: Sequence[float] | np.ndarray, name: str = "epsilons") -> np.ndarray:
    arr = check_array(epsilons, name, ndim=1)
    if np.any(arr <= 0):
        raise ValueError(f"{name} must all be > 0, got minimum {float(arr.min())!r}")
    return arr


def _check_orders(orders: Sequence[float] | np.ndarray | None) -> np.ndarray:
    if orders is None:
        return np.asarray(DEFAULT_RDP_ORDERS, dtype=np.float64)
    arr = check_array(orders, "orders", ndim=1)
    if np.any(arr <= 1):
        raise ValueError(f"orders must all be > 1 (Renyi orders), got minimum {float(arr.min())!r}")
    return arr


def _conservative_root(fn, lo: float, hi: float, *, feasible_below: bool) -> float:
    """Root of a monotone ``fn`` on [lo, hi] by brentq, nudged to the feasible side (fn <= 0)."""
    root = optimize.brentq(fn, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    step = max(abs(root), 1e-300) * 1e-14
    for _ in range(200):
        if fn(root) <= 0:
            # tighten by a few ulps while staying feasible (brentq may stop a little inside)
            toward = math.inf if feasible_below else -math.inf
            for _ in range(8):
                nxt = math.nextafter(root, toward)
                if fn(nxt) > 0:
                    break
                root = nxt
            return float(root)
        root = root - step if feasible_below else root + step
        step *= 2
    raise RuntimeError("could not round the root to the feasible side")  # pragma: no cover
