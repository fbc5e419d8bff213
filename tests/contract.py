"""The contract checks of a private algorithm record, callable on any :class:`AlgorithmRecord`.

``tests/lib/algorithms/test_registry.py`` parametrizes them over the library's registry (in the style of
scikit-learn's ``parametrize_with_checks``); ``tests/lib/test_add_algorithm.py`` runs them on a record registered
in a copy of the registry. Every check takes the record and its example instance and raises ``AssertionError``
(through ``pytest``) when the runner breaks the contract.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from dpsco_lib.algorithms import Result
from dpsco_lib.algorithms.registry import AlgorithmRecord, Example
from dpsco_lib.privacy.accounting import PrivacyLedger
from dpsco_lib.problems import Dataset

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_SEED = 20261124
BAD_EPSILONS = (0.0, -1.0, math.nan, math.inf, "1")
BAD_DELTAS = (-0.1, 1.0, 1.5, math.nan)
BAD_RNGS = (0, None, "seed")


def example_of(rec: AlgorithmRecord) -> Example:
    """The record's example instance at the contract's seed."""
    return rec.example(np.random.default_rng(EXAMPLE_SEED))


def has_param(rec: AlgorithmRecord, name: str) -> bool:
    return name in inspect.signature(rec.runner).parameters


def call(rec: AlgorithmRecord, ex: Example, args: tuple | None = None, **over):
    """``rec.runner`` on ``ex`` with the record's accountant, seed 0, and the keyword overrides ``over``."""
    kwargs = dict(ex.kwargs)
    if rec.private:
        kwargs.update(epsilon=ex.epsilon, delta=ex.delta)
        if not has_param(rec, "delta"):  # a pure eps-DP mechanism
            kwargs.pop("delta")
        if has_param(rec, "accountant"):
            kwargs["accountant"] = rec.accountant
    kwargs["rng"] = np.random.default_rng(0)
    kwargs.update(over)
    return rec.runner(*(ex.args if args is None else args), **kwargs)


def check_record(rec: AlgorithmRecord, ex: Example) -> None:
    """The record is well formed."""
    assert rec.theory_params is None or callable(rec.theory_params)
    assert (rec.relation is None) == (not rec.private) == (rec.accountant is None)


def check_bad_epsilon_refused(rec: AlgorithmRecord, ex: Example) -> None:
    for epsilon in BAD_EPSILONS if rec.private else ():
        with pytest.raises((ValueError, TypeError), match="epsilon"):
            call(rec, ex, epsilon=epsilon)


def check_bad_delta_refused(rec: AlgorithmRecord, ex: Example) -> None:
    for delta in BAD_DELTAS if rec.private and has_param(rec, "delta") else ():
        with pytest.raises((ValueError, TypeError), match="delta"):
            call(rec, ex, delta=delta)


def check_non_generator_rng_refused(rec: AlgorithmRecord, ex: Example) -> None:
    for rng in (*BAD_RNGS, np.random.RandomState(0)):
        with pytest.raises((TypeError, ValueError), match="rng"):
            call(rec, ex, rng=rng)


def check_unknown_accountant_refused(rec: AlgorithmRecord, ex: Example) -> None:
    if has_param(rec, "accountant"):
        with pytest.raises(ValueError, match="accountant"):
            call(rec, ex, accountant="optimal")


def _wrong_kind(rec: AlgorithmRecord):
    from dpsco_lib.problems.base import SaddleProblem
    from dpsco_lib.problems.games import random_bilinear_game
    from dpsco_lib.problems.least_squares import hard_least_squares

    if rec.problem_kinds and issubclass(rec.problem_kinds[0], SaddleProblem):
        return hard_least_squares(1.0, 5)
    if rec.problem_kinds:
        return random_bilinear_game(3, 3, np.random.default_rng(0))
    return "not a problem"


def check_wrong_problem_kind_refused(rec: AlgorithmRecord, ex: Example) -> None:
    first = next(iter(inspect.signature(rec.runner).parameters))
    with pytest.raises((TypeError, ValueError), match=f"{first}|problem"):
        call(rec, ex, args=(_wrong_kind(rec), *ex.args[1:]))


def _with(ex: Example, value) -> tuple:
    args = list(ex.args)
    args[ex.data_index] = value  # type: ignore[index]
    return tuple(args)


def check_nan_data_refused(rec: AlgorithmRecord, ex: Example) -> None:
    if ex.data_index is None:
        return
    data = ex.args[ex.data_index]
    raw = data.X if isinstance(data, Dataset) else (data[0] if isinstance(data, tuple) else data)
    X = np.array(raw, dtype=float)
    X.flat[0] = np.nan
    bad = (X, *data[1:]) if isinstance(data, tuple) else X
    with pytest.raises((ValueError, TypeError), match="data|X|finite|NaN"):
        call(rec, ex, args=_with(ex, bad))
    if isinstance(data, Dataset):  # the public container refuses it too
        with pytest.raises(ValueError, match="X"):
            dataclasses.replace(data, X=X)


def check_data_outside_bound_refused(rec: AlgorithmRecord, ex: Example) -> None:
    if ex.scale_out_of_bound is None or ex.data_index is None:
        return
    data = ex.args[ex.data_index]
    big = dataclasses.replace(data, X=np.asarray(data.X) * ex.scale_out_of_bound)
    with pytest.raises(ValueError, match="bound|norm|violat"):
        call(rec, ex, args=_with(ex, big))


def check_same_seed_same_bits(rec: AlgorithmRecord, ex: Example, first: Result | None = None) -> None:
    a, b = first if first is not None else call(rec, ex), call(rec, ex)
    np.testing.assert_array_equal(a.x, b.x)
    if a.y is not None:
        np.testing.assert_array_equal(a.y, b.y)


def check_certificate_at_most_target(rec: AlgorithmRecord, ex: Example, res: Result | None = None) -> None:
    if not rec.private:
        return
    res = res if res is not None else call(rec, ex)
    delta = ex.delta if has_param(rec, "delta") else 0.0
    assert res.certified_epsilon(delta) <= ex.epsilon * (1 + 1e-12)
    assert res.certified_epsilon(delta, rec.accountant) <= ex.epsilon * (1 + 1e-12)
    assert res.relation == rec.relation
    assert "certified_epsilon" not in res.info, "the ledger is the only certificate"


def check_result_has_typed_fields(rec: AlgorithmRecord, ex: Example, res: Result | None = None) -> None:
    res = res if res is not None else call(rec, ex)
    assert isinstance(res, Result)
    assert isinstance(res.x, np.ndarray) and res.x.dtype == np.float64 and np.all(np.isfinite(res.x))
    assert isinstance(res.params, dict) and isinstance(res.info, dict)
    if rec.private:
        assert isinstance(res.ledger, PrivacyLedger) and res.ledger.total_count >= 1
    else:
        assert res.ledger is None
        with pytest.raises(ValueError, match="ledger"):
            res.certified_epsilon(1e-6)


#: Every contract check, in the order :func:`check_all` runs them.
CHECKS: tuple[Callable[[AlgorithmRecord, Example], None], ...] = (
    check_record,
    check_bad_epsilon_refused,
    check_bad_delta_refused,
    check_non_generator_rng_refused,
    check_unknown_accountant_refused,
    check_wrong_problem_kind_refused,
    check_nan_data_refused,
    check_data_outside_bound_refused,
    check_same_seed_same_bits,
    check_certificate_at_most_target,
    check_result_has_typed_fields,
)


def check_all(rec: AlgorithmRecord) -> None:
    """Run every check of :data:`CHECKS` on ``rec`` and its example instance."""
    ex = example_of(rec)
    for check in CHECKS:
        check(rec, ex)
