"""Property-based fuzz test of the public boundary: bad inputs must raise ValueError or TypeError.

Each case is a public function of the mechanisms, accountants, geometry or problem constructors with a valid
baseline call; hypothesis corrupts one parameter with a value outside its allowed set (NaN/inf, <= 0 where > 0
is required, delta outside [0, 1), wrong types, wrong shapes, non-Generator rng) and the call must raise
ValueError or TypeError: never return a number, never raise another exception type. Deterministic
(``derandomize=True``) for CI.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpsco_lib import geometry as G
from dpsco_lib import problems as P
from dpsco_lib.privacy import mechanisms as M
from dpsco_lib.privacy.accounting import composition as C
from dpsco_lib.privacy.accounting import gdp as GDP
from dpsco_lib.privacy.accounting import rdp as R

NAN, INF = math.nan, math.inf
_NOT_NUMBERS = ["1.0", None, True, False, [1.0, 2.0], {"a": 1}, 1 + 2j, b"1"]
_NEG = st.floats(max_value=-1e-300, allow_nan=False, allow_infinity=True)

BAD: dict[str, st.SearchStrategy] = {
    "pos": st.one_of(st.sampled_from([*_NOT_NUMBERS, NAN, INF, -INF, 0.0, -0.0]), _NEG),
    "nonneg": st.one_of(st.sampled_from([*_NOT_NUMBERS, NAN, INF, -INF]), _NEG),
    "delta_open": st.one_of(
        st.sampled_from([*_NOT_NUMBERS, NAN, INF, -INF, 0.0, 1.0]), _NEG, st.floats(min_value=1.0)
    ),
    "delta": st.one_of(st.sampled_from([*_NOT_NUMBERS, NAN, INF, -INF, 1.0]), _NEG, st.floats(min_value=1.0)),
    "prob": st.one_of(
        st.sampled_from([*_NOT_NUMBERS, NAN, INF, -INF]), _NEG, st.floats(min_value=1.0 + 1e-9, exclude_min=True)
    ),
    "kappa": st.one_of(
        st.sampled_from([*_NOT_NUMBERS, NAN, INF, -INF, 0.0]), _NEG, st.floats(0.0, 1.0, exclude_max=True)
    ),
    "eps_lt1": st.one_of(st.sampled_from([*_NOT_NUMBERS, NAN, INF, 0.0]), _NEG, st.floats(min_value=1.0 + 1e-9)),
    "int_pos": st.one_of(
        st.sampled_from([0, -1, 1.5, 2.0, NAN, INF, "3", None, True, [2]]), st.integers(max_value=0)
    ),
    "exponent": st.one_of(
        st.sampled_from([*_NOT_NUMBERS, NAN, -INF, 0.0]), st.floats(max_value=1.0, exclude_max=True)
    ),
    "arr": st.sampled_from(
        [[NAN, 1.0], [1.0, INF], [-INF, 0.5], [], "abc", None, [[[1.0, 2.0]]], [1.0, "a"], {"a": 1}]
    ),
    # any number of axes is valid (norms along one axis, projections along the last one)
    "arr_nd": st.sampled_from([[NAN, 1.0], [1.0, INF], [[-INF, 0.5]], [], "abc", None, 2.0, [1.0, "a"], {"a": 1}]),
    "pos_arr": st.sampled_from(
        [[0.1, -0.1], [0.0], [NAN], [INF], [], "abc", None, [[[0.1]]], [0.1, "a"]]
    ),
    "rng": st.sampled_from([None, 0, 42, "rng", np.random.RandomState(0), random.Random(0), 1.5]),
    "bool": st.sampled_from(["yes", "no", "", 1, 0, None, 1.0, [True]]),
    "orders": st.sampled_from([[1.0], [0.5, 2.0], [NAN], [], "abc", [[2.0]], [INF], [2.0, -3.0]]),
    "size": st.sampled_from([0, -1, 1.5, "2", True, NAN, [2]]),
    "logw": st.sampled_from([[NAN, 1.0], [INF, 0.0], [-INF, -INF], [], "abc", None, [[[1.0]]], [1.0, "a"]]),
    "rdp": st.sampled_from([[NAN, 1.0], [-0.5, 1.0], [], "abc", None, [[[1.0]]], [1.0], [1.0, "a"]]),
    "alpha": st.sampled_from([[NAN], [1.5], [-0.1], [INF], "abc", None, [[[0.1]]], [0.1, "a"]]),
    "fset": st.sampled_from([None, 3, "simplex", np.eye(2), [1.0, 2.0]]),
}


@dataclass(frozen=True)
class Case:
    fn: Callable[..., Any]
    params: tuple[tuple[str, str, Any], ...]  # (name, kind, valid value); the first ``n_pos`` are positional
    n_pos: int = 1

    def call(self, bad_name: str, bad_value: Any) -> Any:
        vals = {n: (bad_value if n == bad_name else v) for n, _, v in self.params}
        names = [n for n, _, _ in self.params]
        pos = [vals[n] for n in names[: self.n_pos]]
        kw = {n: vals[n] for n in names[self.n_pos :]}
        return self.fn(*pos, **kw)


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


_V = [0.5, -0.25, 1.0]
_S = [0.0, 1.0, 0.5]

MECHANISMS = [
    Case(M.laplace_mechanism, (("value", "arr", _V), ("sensitivity", "pos", 1.0), ("epsilon", "pos", 1.0),
                               ("rng", "rng", None), ("size", "size", 2))),
    Case(M.gaussian_mechanism, (("value", "arr", _V), ("sigma", "pos", 1.0), ("rng", "rng", None),
                                ("size", "size", 2))),
    Case(M.gaussian_sigma_classic, (("sensitivity", "pos", 1.0), ("epsilon", "eps_lt1", 0.5),
                                    ("delta", "delta_open", 1e-5))),
    Case(M.gaussian_delta_analytic, (("sigma", "pos", 1.0), ("sensitivity", "pos", 1.0), ("epsilon", "nonneg", 1.0))),
    Case(M.gaussian_epsilon_analytic, (("sigma", "pos", 1.0), ("sensitivity", "pos", 1.0),
                                       ("delta", "delta_open", 1e-5))),
    Case(M.gaussian_sigma_analytic, (("sensitivity", "pos", 1.0), ("epsilon", "pos", 1.0),
                                     ("delta", "delta_open", 1e-5))),
    Case(M.gg_sigma, (("sensitivity", "pos", 1.0), ("epsilon", "pos", 1.0), ("delta", "delta_open", 1e-5),
                      ("kappa", "kappa", 2.0))),
    Case(M.gg_sigma_exact, (("sensitivity", "pos", 1.0), ("epsilon", "pos", 1.0), ("delta", "delta_open", 1e-5),
                            ("kappa", "kappa", 2.0))),
    Case(M.gg_epsilon, (("sigma", "pos", 5.0), ("sensitivity", "pos", 1.0), ("delta", "delta_open", 1e-5),
                        ("kappa", "kappa", 2.0))),
    Case(M.exponential_mechanism, (("scores", "arr", _S), ("sensitivity", "pos", 1.0), ("epsilon", "pos", 1.0),
                                   ("rng", "rng", None), ("monotone", "bool", False), ("size", "size", 3))),
    Case(M.exponential_mechanism_log_probs, (("scores", "arr", _S), ("sensitivity", "pos", 1.0),
                                             ("epsilon", "pos", 1.0), ("monotone", "bool", True))),
    Case(M.report_noisy_max, (("scores", "arr", _S), ("sensitivity", "pos", 1.0), ("epsilon", "pos", 1.0),
                              ("rng", "rng", None), ("monotone", "bool", False), ("size", "size", 3))),
    Case(M.report_noisy_min, (("scores", "arr", _S), ("sensitivity", "pos", 1.0), ("epsilon", "pos", 1.0),
                              ("rng", "rng", None), ("monotone", "bool", False), ("size", "size", 3))),
    Case(M.sample_categorical_log, (("log_weights", "logw", _S), ("rng", "rng", None), ("size", "size", 3))),
    Case(M.generalized_gaussian_noise, (("d", "int_pos", 3), ("q", "exponent", 3.0), ("sigma", "pos", 1.0),
                                        ("rng", "rng", None), ("size", "size", 2))),
    Case(M.generalized_gaussian_mechanism, (("value", "arr", _V), ("q", "exponent", 3.0), ("sigma", "pos", 1.0),
                                            ("rng", "rng", None), ("size", "size", 2))),
]

ACCOUNTANTS = [
    Case(C.basic_composition, (("epsilons", "pos_arr", [0.1, 0.2]),)),
    Case(C.advanced_composition_epsilon, (("eps0", "pos", 0.1), ("k", "int_pos", 10),
                                          ("delta_prime", "delta_open", 1e-5))),
    Case(C.advanced_composition_epsilon_heterogeneous, (("epsilons", "pos_arr", [0.1, 0.2]),
                                                        ("delta_prime", "delta_open", 1e-5))),
    Case(C.advanced_composition_per_step_epsilon, (("eps_total", "pos", 1.0), ("delta_total", "delta_open", 1e-5),
                                                   ("k", "int_pos", 10), ("delta0", "delta", 0.0))),
    Case(C.cor36_per_step_epsilon, (("epsilon", "eps_lt1", 0.5), ("delta", "delta_open", 1e-5),
                                    ("k", "int_pos", 10))),
    Case(C.kov_delta, (("eps0", "pos", 0.1), ("k", "int_pos", 10), ("epsilon", "nonneg", 0.5))),
    Case(C.kov_epsilon, (("eps0", "pos", 0.1), ("k", "int_pos", 10), ("delta", "delta", 1e-5))),
    Case(C.kov_per_step_epsilon, (("eps_total", "pos", 1.0), ("delta_total", "delta", 1e-5), ("k", "int_pos", 10))),
    Case(C.filter_spend, (("epsilons", "pos_arr", [0.1, 0.2]), ("delta_prime", "delta_open", 1e-5))),
    Case(C.max_composition_steps, (("eps0", "pos", 0.1), ("epsilon", "pos", 1.0), ("delta", "delta_open", 1e-5))),
    Case(R.rdp_gaussian, (("noise_multiplier", "pos", 1.0), ("orders", "orders", [2.0, 3.0]))),
    Case(R.rdp_subsampled_gaussian, (("noise_multiplier", "pos", 1.0), ("sampling_rate", "prob", 0.1),
                                     ("orders", "orders", [2.0, 3.0]))),
    Case(R.rdp_pure, (("epsilon", "pos", 1.0), ("orders", "orders", [2.0, 3.0]), ("tight", "bool", True))),
    Case(R.rdp_bounded_range, (("epsilon", "pos", 1.0), ("orders", "orders", [2.0, 3.0]))),
    Case(R.rdp_generalized_gaussian, (("noise_multiplier", "pos", 1.0), ("kappa", "kappa", 2.0),
                                      ("orders", "orders", [2.0, 3.0]))),
    Case(R.rdp_to_epsilon, (("rdp", "rdp", [0.5, 0.7]), ("orders", "orders", [2.0, 3.0]), ("delta", "delta", 1e-5))),
    Case(GDP.gdp_delta, (("mu", "pos", 1.0), ("epsilon", "nonneg", 1.0))),
    Case(GDP.gdp_epsilon, (("mu", "pos", 1.0), ("delta", "delta", 1e-5))),
    Case(GDP.gdp_tradeoff, (("mu", "nonneg", 1.0), ("alpha", "alpha", [0.1, 0.5]))),
    Case(GDP.gdp_compose, (("mus", "pos_arr", [0.5, 1.0]),)),
    Case(GDP.amplify_by_subsampling, (("epsilon", "nonneg", 1.0), ("delta", "delta", 1e-5),
                                      ("sampling_rate", "prob", 0.1))),
]

GEOMETRY = [
    Case(G.lp_norm, (("x", "arr_nd", _V), ("p", "exponent", 3.0)), n_pos=2),
    Case(G.dual_exponent, (("p", "exponent", 3.0),)),
    Case(G.smooth_dual_exponent, (("p", "exponent", 1.5), ("d", "int_pos", 10)), n_pos=2),
    Case(G.regularity_constant, (("q", "exponent", 3.0), ("d", "int_pos", 10)), n_pos=2),
    Case(G.project_simplex, (("x", "arr_nd", _V), ("z", "pos", 1.0)), n_pos=2),
    Case(G.project_l1_ball, (("x", "arr_nd", _V), ("radius", "pos", 1.0)), n_pos=2),
    Case(G.entropic_step, (("log_x", "logw", [-1.0, -2.0, -0.5]), ("g", "arr", _V), ("eta", "pos", 0.5)), n_pos=3),
    Case(G.entropic_update, (("x", "arr", [0.2, 0.3, 0.5]), ("g", "arr", _V), ("eta", "pos", 0.5)), n_pos=3),
    Case(G.pnorm_psi, (("x", "arr_nd", _V), ("p", "exponent", 1.5)), n_pos=2),
    Case(G.pnorm_mirror_grad, (("x", "arr_nd", _V), ("p", "exponent", 1.5)), n_pos=2),
    Case(G.l1_lift, (("x", "arr", [0.2, -0.3]), ("radius", "pos", 1.0)), n_pos=2),
    Case(G.maurey_probabilities, (("x", "arr", [0.2, 0.3, 0.5]), ("log_weights", "bool", False))),
    Case(G.maurey_sample, (("x", "arr", [0.2, 0.3, 0.5]), ("K", "int_pos", 4), ("rng", "rng", None),
                           ("log_weights", "bool", False)), n_pos=3),
    Case(G.Simplex, (("d", "int_pos", 3),)),
    Case(G.L1Ball, (("d", "int_pos", 3), ("radius", "pos", 1.0)), n_pos=2),
    Case(G.LpBall, (("d", "int_pos", 3), ("p", "exponent", 1.5), ("radius", "pos", 1.0)), n_pos=3),
]

PROBLEMS = [
    Case(P.Dataset, (("X", "arr", [[0.1, 0.2], [0.3, 0.4]]),)),
    Case(P.hard_least_squares, (("p", "exponent", 1.0), ("d", "int_pos", 5)), n_pos=2),
    Case(P.random_least_squares, (("feasible_set", "fset", G.Simplex(4)), ("p", "exponent", 1.0),
                                  ("rng", "rng", None), ("w_norm", "pos", 2.0)), n_pos=3),
    Case(P.random_bilinear_game, (("dx", "int_pos", 3), ("dy", "int_pos", 4), ("rng", "rng", None),
                                  ("noise", "pos", 0.5)), n_pos=3),
    Case(P.random_quadratic_game, (("dx", "int_pos", 3), ("dy", "int_pos", 4), ("rng", "rng", None),
                                   ("lam_x", "pos", 1.0)), n_pos=3),
    Case(P.RobustRegression, (("d", "int_pos", 3), ("radius", "pos", 1.0), ("population_size", "int_pos", 200))),
]


def _fill_rng(case: Case) -> Case:
    return Case(case.fn, tuple((n, k, _rng() if k == "rng" else v) for n, k, v in case.params), case.n_pos)


@pytest.mark.parametrize("case", [*MECHANISMS, *ACCOUNTANTS, *GEOMETRY, *PROBLEMS], ids=lambda c: c.fn.__name__)
def test_valid_baseline_is_accepted(case: Case) -> None:
    """Sanity: every baseline call is valid, so a raise in the fuzz test is caused by the corrupted parameter."""
    case = _fill_rng(case)
    case.call("", None)


def _check(data: st.DataObject, cases: list[Case]) -> None:
    case = _fill_rng(data.draw(st.sampled_from(cases), label="case"))
    name, kind, _ = data.draw(st.sampled_from(case.params), label="param")
    bad = data.draw(BAD[kind], label=f"bad {name}")
    try:
        out = case.call(name, bad)
    except (ValueError, TypeError):
        return
    raise AssertionError(f"{case.fn.__name__}({name}={bad!r}) returned {out!r} instead of raising")


_FUZZ = settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@_FUZZ
@given(st.data())
def test_fuzz_mechanisms(data: st.DataObject) -> None:
    _check(data, MECHANISMS)


@_FUZZ
@given(st.data())
def test_fuzz_accountants(data: st.DataObject) -> None:
    _check(data, ACCOUNTANTS)


@_FUZZ
@given(st.data())
def test_fuzz_geometry(data: st.DataObject) -> None:
    _check(data, GEOMETRY)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_problem_constructors(data: st.DataObject) -> None:
    _check(data, PROBLEMS)
