"""Adding an algorithm touches exactly :data:`PLACES_TO_ADD_AN_ALGORITHM` places (``CONTRIBUTING.md``).

This file goes through them for a toy private algorithm, the Gaussian mechanism on the mean of clipped records
(Dwork-Roth 2014, Thm A.1, calibrated here by the library's budget path): (1) its module (the runner below
stands in for ``dpsco_lib/algorithms/<name>.py``), (2) one registry record (:meth:`Registry.register` on a copy of
the library's registry), (3) its tests (this file). The contract suite of ``tests/contract.py`` (the checks
``tests/lib/algorithms/test_registry.py`` runs on every registered algorithm) then runs on the new record unchanged.
The notebook and the benchmark case are optional and live on the book side.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsco_lib._validation import check_delta, check_epsilon, check_rng
from dpsco_lib.algorithms import Result
from dpsco_lib.algorithms.registry import REGISTRY, AlgorithmRecord, Example, Registry
from dpsco_lib.privacy.accounting import (
    DEFAULT_ACCOUNTANT,
    AccountantLike,
    PrivacyLedger,
    gaussian_accountant,
    gaussian_noise_multiplier,
)
from dpsco_lib.problems.base import Problem
from dpsco_lib.problems.least_squares import hard_least_squares
from tests import contract

#: (1) the module, (2) one registry record, (3) the tests.
PLACES_TO_ADD_AN_ALGORITHM = ("dpsco_lib/algorithms/<name>.py", "one AlgorithmRecord in the registry",
                              "tests/lib/algorithms/test_<name>.py")
CLIP = 1.0


# (1) the module ---------------------------------------------------------------------------------------------
def run_gaussian_mean(problem: Problem, data, *, epsilon: float, delta: float, rng: np.random.Generator,
                      accountant: AccountantLike = DEFAULT_ACCOUNTANT) -> Result:
    """Mean of the records clipped to l2 norm ``CLIP``, plus N(0, (m 2 CLIP/n)^2 I): (epsilon, delta)-DP under
    replace-one (sensitivity 2 CLIP/n), m the smallest noise multiplier the ledger certifies."""
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a dpsco_lib.problems.Problem, got {type(problem).__name__}")
    eps, dl = check_epsilon(epsilon), check_delta(delta, allow_zero=False)
    rng = check_rng(rng)
    name = gaussian_accountant(accountant).name
    data = problem.validate_data(data)
    X = np.asarray(data.X, dtype=np.float64)
    X = X / np.maximum(1.0, np.linalg.norm(X, axis=1) / CLIP)[:, None]
    m = gaussian_noise_multiplier(eps, dl, accountant=name).value
    ledger = PrivacyLedger()
    ledger.record_gaussian(m, label="Gaussian mean")
    x = X.mean(axis=0) + rng.normal(0.0, m * 2.0 * CLIP / data.n, size=X.shape[1])
    return Result(x=x, params={"noise_multiplier": m, "accountant": name}, ledger=ledger)


def _example(rng: np.random.Generator) -> Example:
    prob = hard_least_squares(2.0, 4)
    return Example((prob, prob.sample(100, rng)))


# (2) one registry record ------------------------------------------------------------------------------------
RECORD = AlgorithmRecord("T0 Gaussian mean", "T0", "Gaussian mechanism on the clipped mean", run_gaussian_mean,
                         None, (Problem,), "replace_one", "lecture", _example, accountant=DEFAULT_ACCOUNTANT)


# (3) its tests ----------------------------------------------------------------------------------------------
def test_the_places_are_three():
    assert len(PLACES_TO_ADD_AN_ALGORITHM) == 3


def test_register_returns_a_copy_and_refuses_a_taken_key():
    reg = REGISTRY.register(RECORD)
    assert isinstance(reg, Registry) and len(reg) == len(REGISTRY) + 1 and reg.get(RECORD.key) is RECORD
    assert RECORD.key not in {r.key for r in REGISTRY}  # the library's table is unchanged
    with pytest.raises(ValueError, match="unique"):
        reg.register(RECORD)


@pytest.mark.parametrize("check", contract.CHECKS, ids=lambda f: f.__name__)
def test_contract_checks_pass_on_the_new_record(check):
    rec = REGISTRY.register(RECORD).get(RECORD.key)
    check(rec, contract.example_of(rec))


def test_gaussian_mean_is_calibrated():
    ex = contract.example_of(RECORD)
    res = contract.call(RECORD, ex)
    assert res.certified_epsilon(ex.delta) <= ex.epsilon * (1 + 1e-12)
    assert res.certified_epsilon(ex.delta) == pytest.approx(ex.epsilon, rel=1e-9)
    assert res.params["accountant"] == "gdp"  # "best" is GDP for a Gaussian event
    assert math.isfinite(res.params["noise_multiplier"])


def test_a_broken_record_fails_the_contract():
    def leaky(problem, data, *, epsilon, delta, rng, accountant=DEFAULT_ACCOUNTANT):
        res = run_gaussian_mean(problem, data, epsilon=epsilon, delta=delta, rng=rng, accountant=accountant)
        res.ledger.record_gaussian(res.params["noise_multiplier"])  # spends twice the target
        return res

    rec = AlgorithmRecord("T0 leaky", "T0", "leaky", leaky, None, (Problem,), "replace_one", "lecture", _example,
                          accountant=DEFAULT_ACCOUNTANT)
    with pytest.raises(AssertionError):
        contract.check_certificate_at_most_target(rec, contract.example_of(rec))


def test_a_record_refers_to_functions_not_names():
    with pytest.raises(TypeError, match="theory_params"):
        AlgorithmRecord("T0 typo", "T0", "typo", run_gaussian_mean, "gaussian_mean_theory_parms", (Problem,),
                        "replace_one", "lecture", _example, accountant=DEFAULT_ACCOUNTANT)
    with pytest.raises(ImportError):
        from dpsco_lib.algorithms.poly_sfw import poly_sfw_theory_parms  # noqa: F401
    with pytest.raises(ValueError, match="accountant"):
        AlgorithmRecord("T0 no accountant", "T0", "x", run_gaussian_mean, None, (Problem,), "replace_one",
                        "lecture", _example)
    assert all(r.theory_params is None or callable(r.theory_params) for r in REGISTRY)
