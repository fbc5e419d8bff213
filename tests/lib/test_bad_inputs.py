"""Bad input to the accounting API, the size-bounded constructors and Dataset: ValueError or TypeError naming
the parameter, the value and what is allowed; never an AttributeError, MemoryError or a silent conversion.
Regression tests (one per reported case) and a hypothesis fuzz of ``certify_events``'s event lists and
``calibrate``'s arguments (the pattern of ``tests/test_fuzz_bad_inputs.py``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpsco_lib._validation import MAX_ENTRIES
from dpsco_lib.geometry.sets import LpBall, Simplex
from dpsco_lib.privacy import mechanisms as M
from dpsco_lib.privacy.accounting import calibrate
from dpsco_lib.privacy.accounting.events import GaussianEvent, LaplaceEvent
from dpsco_lib.privacy.accounting.ledger import certify_events
from dpsco_lib.problems import hard_least_squares, random_bilinear_game
from dpsco_lib.problems.dataset import Dataset

HUGE = 10**15


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: Simplex(d=HUGE), "d"),
        (lambda: LpBall(HUGE, 2.0), "d"),
        (lambda: M.laplace_mechanism(0.0, sensitivity=1.0, epsilon=1.0, rng=np.random.default_rng(0), size=HUGE),
         "size"),
        (lambda: M.generalized_gaussian_noise(HUGE, q=2.0, sigma=1.0, rng=np.random.default_rng(0)), "d"),
        (lambda: M.generalized_gaussian_noise(2**20, q=2.0, sigma=1.0, rng=np.random.default_rng(0), size=2**20),
         "size"),
        (lambda: hard_least_squares(2.0, HUGE), "d"),
        (lambda: random_bilinear_game(HUGE, 3, np.random.default_rng(0)), "dx"),
        (lambda: random_bilinear_game(2**20, 2**20, np.random.default_rng(0)), "dy"),
    ],
)
def test_sizes_are_capped(call, name: str) -> None:
    with pytest.raises(ValueError, match=rf"{name} must be an integer in \[\d+, \d+\].*{MAX_ENTRIES} float64"):
        call()


def test_dataset_rejects_complex() -> None:
    with pytest.raises(ValueError, match="X must be real"):
        Dataset(X=np.ones((4, 3), dtype=complex), y=np.ones(4))
    with pytest.raises(ValueError, match="y must be real"):
        Dataset(X=np.ones((4, 3)), y=np.ones(4) + 1j)


def test_dataset_empty_x_is_named() -> None:
    with pytest.raises(ValueError, match=r"X is empty \(shape \(0, 3\)\) while y has 4 labels"):
        Dataset(X=np.zeros((0, 3)), y=np.ones(4))


@pytest.mark.parametrize(
    ("events", "match"),
    [([1.0], r"events\[0\] must be a DpEvent.*1\.0 of type float"),
     ("ab", r"events must be a list or tuple of DpEvent.*'ab'"),
     (None, r"events must be a list or tuple of DpEvent.*None"),
     (GaussianEvent(2.0), r"events must be a list or tuple"),
     ([GaussianEvent(2.0), "x"], r"events\[1\] must be a DpEvent")],
)
def test_certify_events_names_events(events, match: str) -> None:
    with pytest.raises(TypeError, match=match):
        certify_events(events=events, delta=1e-6)


def test_calibrate_bracket_and_make_event() -> None:
    with pytest.raises(ValueError, match=r"bracket must be a pair \(lo, hi\).*\(1\.0,\)"):
        calibrate(lambda m: GaussianEvent(m), epsilon=1.0, delta=1e-6, increasing=False, bracket=(1.0,))
    with pytest.raises(TypeError, match=r"make_event must return a DpEvent, got 1\.0 of type float"):
        calibrate(lambda m: 1.0, epsilon=1.0, delta=1e-6)
    with pytest.raises(TypeError, match="make_event must be a callable"):
        calibrate(3.0, epsilon=1.0, delta=1e-6)


_BAD_EVENT = st.one_of(st.sampled_from([1.0, 0, None, "a", b"x", math.nan, [GaussianEvent(1.0)], {"e": 1}, object()]),
                       st.floats(allow_nan=True), st.text(max_size=3))
_BAD_EVENTS = st.one_of(
    st.sampled_from([None, "ab", "", 1.0, 3, GaussianEvent(1.0), {"a": 1}, b"ab"]),
    st.lists(_BAD_EVENT, min_size=1, max_size=3),
    st.lists(_BAD_EVENT, min_size=1, max_size=2).map(lambda xs: [LaplaceEvent(0.1), *xs]),
)
_FUZZ = settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@_FUZZ
@given(_BAD_EVENTS, st.sampled_from(["best", "rdp", "basic", "gdp"]))
def test_fuzz_certify_events_lists(events, method: str) -> None:
    with pytest.raises(TypeError, match="events"):
        certify_events(events, 1e-6, method)


_NOT_PAIR = st.one_of(
    st.sampled_from([(1.0,), (), (1.0, 2.0, 3.0), None, 1.0, "ab", (2.0, 1.0), (0.0, 1.0), (math.nan, 1.0),
                     (1.0, math.inf), ("a", "b"), (-1.0, 1.0), (1.0, 1.0)]),
    st.tuples(st.floats(max_value=0.0), st.floats(min_value=1.0, max_value=2.0)),
)
_BAD_MAKE = st.sampled_from([lambda m: 1.0, lambda m: None, lambda m: "g", lambda m: [GaussianEvent(m)], 3.0, None,
                             "make"])


@_FUZZ
@given(st.data())
def test_fuzz_calibrate_arguments(data: st.DataObject) -> None:
    kw = {"epsilon": 1.0, "delta": 1e-6, "increasing": False, "bracket": (0.5, 2.0)}
    which = data.draw(st.sampled_from(["bracket", "make_event", "epsilon", "delta", "increasing", "accountant"]))
    make = lambda m: GaussianEvent(m)  # noqa: E731
    if which == "bracket":
        kw["bracket"] = data.draw(_NOT_PAIR)
    elif which == "make_event":
        make = data.draw(_BAD_MAKE)
    elif which in ("epsilon", "delta"):
        kw[which] = data.draw(st.sampled_from([math.nan, -1.0, 0.0 if which == "epsilon" else 1.0, "1", None]))
    elif which == "increasing":
        kw["increasing"] = data.draw(st.sampled_from(["yes", 1, None]))
    else:
        kw["accountant"] = data.draw(st.sampled_from(["nope", 3, None]))
    with pytest.raises((ValueError, TypeError)):
        calibrate(make, **kw)
