"""Contract tests over the algorithm registry (in the style of scikit-learn's ``parametrize_with_checks``).

Every registered algorithm, on its small example instance, must: refuse a bad epsilon, delta, rng, problem kind,
NaN data and data outside the declared bound with a ValueError/TypeError naming the parameter; give the same bits
for the same seed; certify at most its target at its theory defaults; and return a Result with typed fields.
These replace per-algorithm copies of the same tables.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from functools import cache
from pathlib import Path

import numpy as np
import pytest

import dpsco_lib.algorithms as algorithms
from dpsco_lib.algorithms import Result
from dpsco_lib.algorithms.registry import REGISTRY, AlgorithmRecord, Example, get_algorithm
from dpsco_lib.privacy.accounting import PrivacyLedger
from dpsco_lib.problems import Dataset

ROOT = Path(__file__).resolve().parents[1]
IDS = [r.key for r in REGISTRY]
PRIVATE = [r for r in REGISTRY if r.private]
PRIVATE_IDS = [r.key for r in PRIVATE]


@cache
def _example(key: str) -> Example:
    return get_algorithm(key).example(np.random.default_rng(20261124))


def _call(rec: AlgorithmRecord, ex: Example, args: tuple | None = None, **over):
    kwargs = dict(ex.kwargs)
    if rec.private:
        kwargs.update(epsilon=ex.epsilon, delta=ex.delta)
        if "delta" not in inspect.signature(rec.runner).parameters:  # a pure eps-DP mechanism
            kwargs.pop("delta")
    kwargs["rng"] = np.random.default_rng(0)
    kwargs.update(over)
    return rec.runner(*(ex.args if args is None else args), **kwargs)


@cache
def _run(key: str) -> Result:
    rec = get_algorithm(key)
    return _call(rec, _example(key))


def _first_param(rec: AlgorithmRecord) -> str:
    return next(iter(inspect.signature(rec.runner).parameters))


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
def test_record_points_at_real_notebook_and_theory_params(rec: AlgorithmRecord):
    assert (ROOT / "notebooks" / f"{rec.notebook}.ipynb").is_file()
    assert rec.theory_params is None or callable(rec.theory_params)
    assert (rec.relation is None) == (not rec.private)


def test_benchmark_cases_exist():
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("bench_cases_contract", ROOT / "benchmarks" / "bench_cases.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses resolve their module while the file executes
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    names = {c.name for c in mod.ALGORITHMS}
    missing = {r.benchmark for r in REGISTRY if r.benchmark} - names
    assert not missing, f"registry names benchmark cases that do not exist: {missing}"


# ---------------------------------------------------------------------------------------------------------------
# bad privacy parameters and rng
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("epsilon", [0.0, -1.0, math.nan, math.inf, "1"])
@pytest.mark.parametrize("rec", PRIVATE, ids=PRIVATE_IDS)
def test_bad_epsilon_is_refused(rec: AlgorithmRecord, epsilon):
    with pytest.raises((ValueError, TypeError), match="epsilon"):
        _call(rec, _example(rec.key), epsilon=epsilon)


WITH_DELTA = [r for r in PRIVATE if "delta" in inspect.signature(r.runner).parameters]


@pytest.mark.parametrize("delta", [-0.1, 1.0, 1.5, math.nan])
@pytest.mark.parametrize("rec", WITH_DELTA, ids=[r.key for r in WITH_DELTA])
def test_bad_delta_is_refused(rec: AlgorithmRecord, delta):
    with pytest.raises((ValueError, TypeError), match="delta"):
        _call(rec, _example(rec.key), delta=delta)


@pytest.mark.parametrize("rng", [0, None, "seed"], ids=["int", "None", "str"])
@pytest.mark.parametrize("rec", REGISTRY, ids=IDS)
def test_non_generator_rng_is_refused(rec: AlgorithmRecord, rng):
    with pytest.raises((TypeError, ValueError), match="rng"):
        _call(rec, _example(rec.key), rng=rng)


def test_legacy_random_state_is_refused():
    rec = get_algorithm("F1 Poly-SFW")
    with pytest.raises(TypeError, match="rng"):
        _call(rec, _example(rec.key), rng=np.random.RandomState(0))


@pytest.mark.parametrize("rec", [r for r in REGISTRY if "accountant" in inspect.signature(r.runner).parameters],
                         ids=lambda r: r.key)
def test_unknown_accountant_is_refused(rec: AlgorithmRecord):
    with pytest.raises(ValueError, match="accountant"):
        _call(rec, _example(rec.key), accountant="optimal")


# ---------------------------------------------------------------------------------------------------------------
# bad problem and data
# ---------------------------------------------------------------------------------------------------------------
def _wrong_kind(rec: AlgorithmRecord):
    from dpsco_lib.problems.base import SaddleProblem
    from dpsco_lib.problems.games import random_bilinear_game
    from dpsco_lib.problems.least_squares import hard_least_squares

    if rec.problem_kinds and issubclass(rec.problem_kinds[0], SaddleProblem):
        return hard_least_squares(1.0, 5)
    if rec.problem_kinds:
        return random_bilinear_game(3, 3, np.random.default_rng(0))
    return "not a problem"


@pytest.mark.parametrize("rec", REGISTRY, ids=IDS)
def test_wrong_problem_kind_is_refused(rec: AlgorithmRecord):
    ex = _example(rec.key)
    args = (_wrong_kind(rec), *ex.args[1:])
    with pytest.raises((TypeError, ValueError), match=f"{_first_param(rec)}|problem"):
        _call(rec, ex, args=args)


def _with(ex: Example, value) -> tuple:
    args = list(ex.args)
    args[ex.data_index] = value  # type: ignore[index]
    return tuple(args)


@pytest.mark.parametrize("rec", [r for r in REGISTRY if _example(r.key).data_index is not None], ids=lambda r: r.key)
def test_nan_data_is_refused(rec: AlgorithmRecord):
    ex = _example(rec.key)
    data = ex.args[ex.data_index]  # type: ignore[index]
    raw = data.X if isinstance(data, Dataset) else (data[0] if isinstance(data, tuple) else data)
    X = np.array(raw, dtype=float)
    X.flat[0] = np.nan
    bad = (X, *data[1:]) if isinstance(data, tuple) else X
    with pytest.raises((ValueError, TypeError), match="data|X|finite|NaN"):
        _call(rec, ex, args=_with(ex, bad))
    if isinstance(data, Dataset):  # the public container refuses it too
        with pytest.raises(ValueError, match="X"):
            dataclasses.replace(data, X=X)


@pytest.mark.parametrize("rec", [r for r in REGISTRY if _example(r.key).scale_out_of_bound is not None
                                 and _example(r.key).data_index is not None], ids=lambda r: r.key)
def test_data_outside_declared_bound_is_refused(rec: AlgorithmRecord):
    ex = _example(rec.key)
    data = ex.args[ex.data_index]  # type: ignore[index]
    big = dataclasses.replace(data, X=np.asarray(data.X) * ex.scale_out_of_bound)
    with pytest.raises(ValueError, match="bound|norm|violat"):
        _call(rec, ex, args=_with(ex, big))


def test_mwem_refuses_nan_histogram():
    rec = get_algorithm("X1 MWEM")
    ex = _example(rec.key)
    h = np.array(ex.args[0], dtype=float)
    h[0] = np.nan
    with pytest.raises(ValueError, match="histogram"):
        _call(rec, ex, args=(h, ex.args[1]))


# ---------------------------------------------------------------------------------------------------------------
# reproducibility, certificate, result fields
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rec", REGISTRY, ids=IDS)
def test_same_seed_same_bits(rec: AlgorithmRecord):
    a, b = _run(rec.key), _call(rec, _example(rec.key))
    np.testing.assert_array_equal(a.x, b.x)
    if a.y is not None:
        np.testing.assert_array_equal(a.y, b.y)


@pytest.mark.parametrize("rec", PRIVATE, ids=PRIVATE_IDS)
def test_certificate_at_most_target_at_theory_defaults(rec: AlgorithmRecord):
    ex = _example(rec.key)
    res = _run(rec.key)
    delta = ex.delta if "delta" in inspect.signature(rec.runner).parameters else 0.0
    assert res.certified_epsilon(delta) <= ex.epsilon * (1 + 1e-12)
    assert res.relation == rec.relation
    assert "certified_epsilon" not in res.info, "the ledger is the only certificate"


@pytest.mark.parametrize("rec", REGISTRY, ids=IDS)
def test_result_has_typed_fields(rec: AlgorithmRecord):
    res = _run(rec.key)
    assert isinstance(res, Result)
    assert isinstance(res.x, np.ndarray) and res.x.dtype == np.float64 and np.all(np.isfinite(res.x))
    assert isinstance(res.params, dict) and isinstance(res.info, dict)
    if rec.private:
        assert isinstance(res.ledger, PrivacyLedger) and res.ledger.total_count >= 1
    else:
        assert res.ledger is None
        with pytest.raises(ValueError, match="ledger"):
            res.certified_epsilon(1e-6)
