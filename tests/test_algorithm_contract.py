"""Contract tests over the algorithm registry (in the style of scikit-learn's ``parametrize_with_checks``).

Every registered algorithm, on its small example instance, must: refuse a bad epsilon, delta, rng, problem kind,
NaN data and data outside the declared bound with a ValueError/TypeError naming the parameter; give the same bits
for the same seed; certify at most its target at its theory defaults; and return a Result with typed fields.
The checks themselves live in ``tests/contract.py`` and take any record (``tests/test_add_algorithm.py`` runs
them on a new one); here they are parametrized over :data:`~dpsco_lib.algorithms.registry.REGISTRY`.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

import dpsco_lib.algorithms as algorithms
from dpsco_book.catalogue import NOTEBOOK_OF, notebook_of
from dpsco_lib.algorithms import Result
from dpsco_lib.algorithms.registry import REGISTRY, AlgorithmRecord, Example, get_algorithm

from . import contract as c

ROOT = Path(__file__).resolve().parents[1]
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



def test_the_books_notebook_table_names_only_registered_algorithms():
    assert set(NOTEBOOK_OF) == {r.key for r in REGISTRY}
