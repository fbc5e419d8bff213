"""Input validation shared by every public function of :mod:`dpsco_lib`.

Every check raises :class:`ValueError` whose message names the parameter, the offending value and
what is allowed, so that bad input never produces a silently wrong number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral, Real

import numpy as np

__all__ = [
    "ParameterTypeError",
    "check_array",
    "check_bool",
    "check_delta",
    "check_epsilon",
    "check_in_range",
    "check_int",
    "check_norm_bound",
    "check_positive",
    "check_probability",
    "check_rng",
    "check_size",
    "MAX_ENTRIES",
]

#: The largest number of float64 entries (2**28, 2 GiB) one public call may allocate: dimensions and sample
#: sizes beyond it are rejected with a ValueError before any allocation (a raw MemoryError otherwise).
MAX_ENTRIES = 2**28


def _fmt(value: object) -> str:
    return repr(value) if not isinstance(value, np.ndarray) else f"array of shape {value.shape}"


def check_bool(value: object, name: str) -> bool:
    """Return ``bool(value)`` if it is a real boolean (``True``/``False`` or a numpy bool); raise TypeError otherwise.

    Truthy stand-ins such as ``"yes"``, ``"no"``, ``1`` or ``None`` are rejected: ``bool("no")`` is True, so
    accepting them would silently select the wrong branch.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool (True or False), got {_fmt(value)} of type {type(value).__name__}")
    return bool(value)


def check_positive(value: float, name: str, *, allow_zero: bool = False, allow_inf: bool = False) -> float:
    """Return ``float(value)`` if it is a real number > 0 (>= 0 with ``allow_zero``)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a real number, got {_fmt(value)}")
    v = float(value)
    if math.isnan(v) or (math.isinf(v) and not allow_inf):
        raise ValueError(f"{name} must be finite, got {v!r}")
    if v < 0 or (v == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {bound}, got {v!r}")
    return v


def check_epsilon(epsilon: float, name: str = "epsilon", *, allow_inf: bool = False) -> float:
    """Privacy parameter epsilon: a finite real number > 0."""
    return check_positive(epsilon, name, allow_inf=allow_inf)


def check_delta(delta: float, name: str = "delta", *, allow_zero: bool = True) -> float:
    """Privacy parameter delta in [0, 1) (or (0, 1) when ``allow_zero`` is False)."""
    if isinstance(delta, bool) or not isinstance(delta, Real):
        raise ValueError(f"{name} must be a real number in [0, 1), got {_fmt(delta)}")
    v = float(delta)
    lo_ok = v >= 0 if allow_zero else v > 0
    if math.isnan(v) or not lo_ok or v >= 1:
        allowed = "[0, 1)" if allow_zero else "(0, 1)"
        raise ValueError(f"{name} must lie in {allowed}, got {v!r}")
    return v


def check_probability(value: float, name: str, *, open_left: bool = False, open_right: bool = False) -> float:
    """A probability in [0, 1] (endpoints excluded on request)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a real number in [0, 1], got {_fmt(value)}")
    v = float(value)
    bad = math.isnan(v) or v < 0 or v > 1 or (open_left and v == 0) or (open_right and v == 1)
    if bad:
        lb = "(" if open_left else "["
        rb = ")" if open_right else "]"
        raise ValueError(f"{name} must lie in {lb}0, 1{rb}, got {v!r}")
    return v


def check_in_range(
    value: float,
    name: str,
    lo: float = -math.inf,
    hi: float = math.inf,
    *,
    lo_inclusive: bool = True,
    hi_inclusive: bool = True,
) -> float:
    """A finite real number in the interval between ``lo`` and ``hi``."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a real number, got {_fmt(value)}")
    v = float(value)
    ok = not math.isnan(v)
    ok = ok and (v >= lo if lo_inclusive else v > lo) and (v <= hi if hi_inclusive else v < hi)
    if not ok:
        lb = "[" if lo_inclusive else "("
        rb = "]" if hi_inclusive else ")"
        raise ValueError(f"{name} must lie in {lb}{lo}, {hi}{rb}, got {v!r}")
    return v


def check_int(value: int, name: str, lo: int | None = None, hi: int | None = None) -> int:
    """An integer (numpy integers accepted, bools rejected) in [lo, hi]."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{name} must be an integer, got {_fmt(value)}")
    v = int(value)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        lo_s = "-inf" if lo is None else str(lo)
        hi_s = "inf" if hi is None else str(hi)
        raise ValueError(f"{name} must be an integer in [{lo_s}, {hi_s}], got {v}")
    return v


def check_size(value: int, name: str, lo: int = 1, *, per_entry: int = 1) -> int:
    """A dimension or sample size: an integer in [lo, MAX_ENTRIES / per_entry].

    ``per_entry`` is the number of float64 entries allocated per unit of ``value`` (the other dimension of a
    matrix), so that ``value * per_entry <= MAX_ENTRIES`` (2**28 float64 entries, 2 GiB).
    """
    hi = max(lo, MAX_ENTRIES // max(1, int(per_entry)))
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{name} must be an integer, got {_fmt(value)}")
    v = int(value)
    if v < lo or v > hi:
        raise ValueError(
            f"{name} must be an integer in [{lo}, {hi}] (at most {MAX_ENTRIES} float64 entries per call), got {v}"
        )
    return v


def check_array(
    value: object,
    name: str,
    *,
    ndim: int | Sequence[int] | None = None,
    shape: Sequence[int | None] | None = None,
    finite: bool = True,
    min_size: int = 1,
) -> np.ndarray:
    """Convert to a float64 array and check its dimension, shape and finiteness.

    ``shape`` may contain ``None`` for a free axis, e.g. ``(None, d)`` for an ``(n, d)`` data matrix.
    """
    try:
        if np.iscomplexobj(value):
            raise ValueError(f"{name} must be real (float64), got complex entries")
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        if "complex" in str(exc):
            raise
        raise ValueError(f"{name} must be convertible to a float64 array, got {_fmt(value)}") from exc
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            raise ValueError(f"{name} must have ndim in {allowed}, got shape {arr.shape}")
    if shape is not None:
        if arr.ndim != len(shape) or any(s is not None and s != a for s, a in zip(shape, arr.shape, strict=False)):
            want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
            raise ValueError(f"{name} must have shape {want}, got {arr.shape}")
    if arr.size < min_size:
        raise ValueError(f"{name} must have at least {min_size} entries, got {arr.size}")
    if finite and not np.all(np.isfinite(arr)):
        bad = int(np.sum(~np.isfinite(arr)))
        raise ValueError(f"{name} must be finite, got {bad} non-finite entries (NaN or inf)")
    return arr


def check_norm_bound(rows: np.ndarray, name: str, p: float, bound: float, *, rtol: float = 1e-9) -> None:
    """Reject rows whose l_p norm exceeds ``bound`` (up to a relative tolerance for rounding)."""
    norms = np.linalg.norm(np.atleast_2d(rows), ord=p, axis=1)
    worst = float(norms.max()) if norms.size else 0.0
    if worst > bound * (1 + rtol):
        raise ValueError(
            f"{name} violates the declared l_{p} norm bound {bound}: the largest row norm is {worst!r}"
            " (clip explicitly if that is what you want)"
        )


class ParameterTypeError(TypeError, ValueError):
    """A parameter of the wrong type. Both a ``TypeError`` (what it is) and a ``ValueError`` (what callers that
    validate values catch), as scikit-learn's ``NotFittedError`` is both a ``ValueError`` and an
    ``AttributeError``."""


def check_rng(rng: object, name: str = "rng") -> np.random.Generator:
    """Require an explicit ``numpy.random.Generator`` (no global or legacy random state).

    Raises :class:`ParameterTypeError` (a ``TypeError`` and a ``ValueError``) naming the parameter otherwise.
    """
    if not isinstance(rng, np.random.Generator):
        raise ParameterTypeError(
            f"{name} must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed)), got {type(rng).__name__}"
        )
    return rng
