"""Broken variants for audits and mutation tests: never use them to release data.

A privacy audit must show that it catches a mechanism whose noise is too small, and a utility check that it
catches a wrong step size. This module is the one seam through which the library's runners can be run so
broken: inside :func:`noise_scaled` every runner that draws calibrated noise multiplies its noise scale by
``factor`` while its ledger still records the calibrated (certified) events, so the ledger over-states the
privacy of what ran; inside :func:`step_scaled` the runners with a privacy-capped step size (Algorithm 5) use
``factor`` times it. Outside these blocks both factors are exactly 1.0 and every runner computes the same bits
as without this module.

The factors live in :class:`contextvars.ContextVar` objects, so they are local to the thread (and asyncio task)
that set them and are not inherited by worker processes: call the runner inside the ``with`` block in the
process that runs it.

Examples
--------
>>> from dpsco_lib.testing import noise_scale, noise_scaled
>>> with noise_scaled(0.5):
...     noise_scale()
0.5
>>> noise_scale()
1.0
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from dpsco_lib._validation import check_positive

__all__ = ["noise_scale", "noise_scaled", "step_scale", "step_scaled"]

_NOISE: ContextVar[float] = ContextVar("dpsco_lib_noise_scale", default=1.0)
_STEP: ContextVar[float] = ContextVar("dpsco_lib_step_scale", default=1.0)


def noise_scale() -> float:
    """The factor runners multiply their calibrated noise scale by: 1.0 except inside :func:`noise_scaled`."""
    return _NOISE.get()


def step_scale() -> float:
    """The factor runners multiply their privacy-capped step size by: 1.0 except inside :func:`step_scaled`."""
    return _STEP.get()


@contextmanager
def noise_scaled(factor: float) -> Iterator[float]:
    """Run the runners called in the block with their noise scaled by ``factor`` (>= 0; a broken variant when
    below 1). Their ledgers keep the calibrated events, so certificates no longer describe what ran."""
    factor = check_positive(factor, "factor", allow_zero=True)
    token = _NOISE.set(factor)
    try:
        yield factor
    finally:
        _NOISE.reset(token)


@contextmanager
def step_scaled(factor: float) -> Iterator[float]:
    """Run the runners called in the block with their privacy-capped step size scaled by ``factor`` (> 0; a
    broken variant when above 1: each draw then spends more than the ledger records)."""
    factor = check_positive(factor, "factor")
    token = _STEP.set(factor)
    try:
        yield factor
    finally:
        _STEP.reset(token)
