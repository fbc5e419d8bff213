"""Property-based fuzz test over the algorithm registry: generated bad inputs never yield a number.

For every registered runner, hypothesis draws one public parameter (epsilon, delta, rng, or the runner's
own problem/data arguments) and a bad value for it; the call must raise ``ValueError`` or ``TypeError``
(never return, never raise anything else). Deterministic (``derandomize=True``), so CI sees the same inputs.
"""

from __future__ import annotations

import inspect
import math
from functools import cache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpsco_lib.algorithms.registry import REGISTRY, AlgorithmRecord, Example

N_EXAMPLES = 320  # generated bad inputs in total (the public-function fuzz test adds 510 more)

_bad_numbers = st.one_of(
    st.sampled_from([0.0, -1.0, -1e-300, math.nan, math.inf, -math.inf, 1e308 * 10]),
    st.floats(max_value=0.0, allow_nan=False),
)
_bad_types = st.sampled_from(["1.0", None, [1.0], {"epsilon": 1.0}, b"1", 1j])
_bad_delta = st.one_of(
    st.floats(min_value=1.0, allow_nan=False, allow_infinity=True),
    st.floats(max_value=-1e-300, allow_nan=False),
    st.just(math.nan),
    _bad_types,
)
_bad_rng = st.one_of(st.integers(), st.sampled_from([None, "seed", np.random.RandomState(0), 1.5, object()]))


@cache
def _example(key: str) -> Example:
    rec = next(r for r in REGISTRY if r.key == key)
    return rec.example(np.random.default_rng(11))


def _kwargs(rec: AlgorithmRecord, ex: Example) -> dict:
    kw = dict(ex.kwargs)
    params = inspect.signature(rec.runner).parameters
    if rec.private:
        kw["epsilon"] = ex.epsilon
        if "delta" in params:
            kw["delta"] = ex.delta
    kw["rng"] = np.random.default_rng(0)
    return kw


def _fuzz_case(draw_fn) -> tuple[AlgorithmRecord, tuple, dict]:
    rec = draw_fn(st.sampled_from(REGISTRY))
    ex = _example(rec.key)
    kw = _kwargs(rec, ex)
    args = list(ex.args)
    choices = ["rng", "first"] + (["epsilon"] if rec.private else []) + (["delta"] if "delta" in kw else [])
    if ex.data_index is not None:
        choices.append("data")
    which = draw_fn(st.sampled_from(choices))
    if which == "epsilon":
        kw["epsilon"] = draw_fn(st.one_of(_bad_numbers, _bad_types))
    elif which == "delta":
        kw["delta"] = draw_fn(_bad_delta)
    elif which == "rng":
        kw["rng"] = draw_fn(_bad_rng)
    elif which == "first":
        args[0] = draw_fn(st.one_of(_bad_types, st.integers(), st.just(np.zeros(3))))
    else:
        args[ex.data_index] = draw_fn(st.one_of(_bad_types, st.just(np.full((4, 3), np.nan)), st.integers()))
    return rec, tuple(args), kw


@settings(max_examples=N_EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_registry_runners_refuse_generated_bad_inputs(data):
    rec, args, kw = _fuzz_case(data.draw)
    with pytest.raises((ValueError, TypeError)):
        rec.runner(*args, **kw)
