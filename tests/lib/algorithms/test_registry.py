"""Contract tests over the algorithm registry (in the style of scikit-learn's ``parametrize_with_checks``).

Every registered algorithm, on its small example instance, must: refuse a bad epsilon, delta, rng, problem kind,
NaN data and data outside the declared bound with a ValueError/TypeError naming the parameter; give the same bits
for the same seed; certify at most its target at its theory defaults; and return a Result with typed fields.
The checks themselves live in ``tests/contract.py`` and take any record (``tests/lib/test_add_algorithm.py`` runs
them on a new one); here they are parametrized over :data:`~dpsco_lib.algorithms.registry.REGISTRY`.
"""

from __future__ import annotations

import inspect
import math
from functools import cache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpsco_lib.algorithms as algorithms
from dpsco_book.catalogue import notebook_of
from dpsco_lib.algorithms import Result
from dpsco_lib.algorithms.registry import REGISTRY, AlgorithmRecord, Example, get_algorithm
from tests import contract as c
from tests.conftest import ROOT

IDS = [r.key for r in REGISTRY]


PRIVATE = list(REGISTRY.private())


PRIVATE_IDS = [r.key for r in PRIVATE]


@cache
def _example(key: str) -> Example:
    return c.example_of(get_algorithm(key))


@cache
def _run(key: str) -> Result:
    return c.call(get_algorithm(key), _example(key))


# ---------------------------------------------------------------------------------------------------------------
# the registry itself
# ---------------------------------------------------------------------------------------------------------------
def test_registry_keys_unique_and_every_exported_runner_registered():
    assert len(IDS) == len(set(IDS))
    exported = {n for n in algorithms.__all__ if n.startswith("run_")}
    registered = {r.runner.__name__ for r in REGISTRY}
    assert exported == registered, f"exported but not registered: {exported - registered}; " \
                                   f"registered but not exported: {registered - exported}"


@pytest.mark.parametrize("rec", REGISTRY, ids=IDS)
def test_record_is_well_formed_and_checked_by_a_notebook(rec: AlgorithmRecord):
    c.check_record(rec, _example(rec.key))
    notebook = notebook_of(rec.key)  # the book's table: every registered algorithm has a notebook
    assert (ROOT / "notebooks" / f"{notebook}.ipynb").is_file(), notebook


def test_benchmark_cases_exist():
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("bench_cases_contract", ROOT / "benchmarks" / "bench_cases.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses resolve their module while the file executes
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    names = {case.name for case in mod.ALGORITHMS}
    missing = {r.benchmark for r in REGISTRY if r.benchmark} - names
    assert not missing, f"registry names benchmark cases that do not exist: {missing}"


# ---------------------------------------------------------------------------------------------------------------
# bad inputs
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rec", PRIVATE, ids=PRIVATE_IDS)
def test_bad_epsilon_is_refused(rec: AlgorithmRecord):
    c.check_bad_epsilon_refused(rec, _example(rec.key))


@pytest.mark.parametrize("rec", PRIVATE, ids=PRIVATE_IDS)
def test_bad_delta_is_refused(rec: AlgorithmRecord):
    c.check_bad_delta_refused(rec, _example(rec.key))


@pytest.mark.parametrize("rec", REGISTRY, ids=IDS)
def test_non_generator_rng_is_refused(rec: AlgorithmRecord):
    c.check_non_generator_rng_refused(rec, _example(rec.key))


@pytest.mark.parametrize("rec", REGISTRY, ids=IDS)
def test_unknown_accountant_is_refused(rec: AlgorithmRecord):
    c.check_unknown_accountant_refused(rec, _example(rec.key))


@pytest.mark.parametrize("rec", REGISTRY, ids=IDS)
def test_wrong_problem_kind_is_refused(rec: AlgorithmRecord):
    c.check_wrong_problem_kind_refused(rec, _example(rec.key))


@pytest.mark.parametrize("rec", REGISTRY, ids=IDS)
def test_nan_data_is_refused(rec: AlgorithmRecord):
    c.check_nan_data_refused(rec, _example(rec.key))


@pytest.mark.parametrize("rec", REGISTRY, ids=IDS)
def test_data_outside_declared_bound_is_refused(rec: AlgorithmRecord):
    c.check_data_outside_bound_refused(rec, _example(rec.key))


def test_mwem_refuses_nan_histogram():
    rec = get_algorithm("X1 MWEM")
    ex = _example(rec.key)
    h = np.array(ex.args[0], dtype=float)
    h[0] = np.nan
    with pytest.raises(ValueError, match="histogram"):
        c.call(rec, ex, args=(h, ex.args[1]))


# ---------------------------------------------------------------------------------------------------------------
# reproducibility, certificate, result fields
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rec", REGISTRY, ids=IDS)
def test_same_seed_same_bits(rec: AlgorithmRecord):
    c.check_same_seed_same_bits(rec, _example(rec.key), _run(rec.key))


@pytest.mark.parametrize("rec", PRIVATE, ids=PRIVATE_IDS)
def test_certificate_at_most_target_at_theory_defaults(rec: AlgorithmRecord):
    c.check_certificate_at_most_target(rec, _example(rec.key), _run(rec.key))


@pytest.mark.parametrize("rec", REGISTRY, ids=IDS)
def test_result_has_typed_fields(rec: AlgorithmRecord):
    c.check_result_has_typed_fields(rec, _example(rec.key), _run(rec.key))


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
def _fuzz_example(key: str) -> Example:
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
    ex = _fuzz_example(rec.key)
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
