"""The canary-audit scaffolding shared by the algorithm tests (dpsco_lib.privacy.audit.canary_audit).

A canary audit runs a private algorithm many times on two neighbouring datasets that differ in one worst-case
record and lower-bounds epsilon from the counts of one event (exact Clopper-Pearson). The tests audit each
algorithm twice: the honest run must stay below its claim, and a broken variant (less noise, or a larger step,
through :mod:`dpsco_lib.testing`) under the *same* ledger claim must be caught.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from dpsco_lib.privacy.audit import AuditResult, canary_audit
from dpsco_lib.problems import Dataset, hard_least_squares
from dpsco_lib.problems.least_squares import LeastSquares
from dpsco_lib.testing import noise_scaled

Release = Callable[[Any, np.random.Generator], Any]
ReleaseMany = Callable[[Any, np.random.Generator, int], Sequence[Any]]


def simplex_canary_pair(d: int, c: float, n: int) -> tuple[LeastSquares, Dataset, Dataset]:
    """Hard least squares on the simplex in R^d (label bound ``c``) and a neighbouring pair of ``n`` records.

    Record 0 is the canary: z = (a, c) in S, z' = (a, -c) in S', with a = (1, -1, ..., -1); the other records are
    (1, ..., 1) with label 0. At the simplex centre <a, x_0> = (2 - d)/d, so grad f(x_0, z) - grad f(x_0, z') =
    -2c a: vertex 1's score falls by 2c while every other score rises by 2c, a fraction c/(1 + c) of the score
    bound L0 D = 2(1 + c) (before dividing by the batch size).
    """
    pr = hard_least_squares(1.0, d, set_kind="simplex", c=c)
    a = -np.ones(d)
    a[0] = 1.0
    X = np.stack([a] + [np.ones(d)] * (n - 1))
    S = Dataset(X, np.array([c] + [0.0] * (n - 1)))
    return pr, S, S.replace_one(0, (a, -c))


def scaled(release: Callable[..., Any], factor: float,
           scale: Callable[[float], AbstractContextManager] = noise_scaled) -> Callable[..., Any]:
    """``release`` run inside ``scale(factor)`` (``noise_scaled`` or ``step_scaled``): factor 1 is the runner."""
    def run(*args: Any) -> Any:
        with scale(factor):
            return release(*args)

    return run


def audit_honest_and_broken(release: Release | ReleaseMany, data: Any, data_prime: Any,
                            statistic: Callable[[Any], Any], n_runs: int, *, broken_factor: float,
                            claimed_epsilon: float, delta: float, seeds: Sequence[Any],
                            threshold: float | None = None, alpha: float = 1e-3,
                            scale: Callable[[float], AbstractContextManager] = noise_scaled,
                            vectorized: bool = False) -> tuple[AuditResult, AuditResult]:
    """Canary-audit the honest release and its broken variant against the same claim; (honest, broken).

    ``release(data, rng)`` computes one run's output (``release(data, rng, m)``: ``m`` runs at once when
    ``vectorized``; it is then passed as ``run_many`` with ``statistic_vectorized``). The honest audit runs it
    inside ``scale(1)`` (the runner itself), the broken one inside ``scale(broken_factor)``; ``seeds[0]`` and
    ``seeds[1]`` seed their generators. Asserts that the honest lower bound is at most the claim without a
    violation and that the broken variant is caught (false alarm ``alpha`` per audit, exact Clopper-Pearson).
    """
    kw: dict[str, Any] = {"claimed_epsilon": claimed_epsilon, "delta": delta}
    if threshold is not None:
        kw["threshold"] = threshold
    results = []
    for factor, seed in ((1.0, seeds[0]), (broken_factor, seeds[1])):
        run = scaled(release, factor, scale)
        if vectorized:
            kw.update(run_many=run, statistic_vectorized=True)
            run = None
        results.append(canary_audit(run, data, data_prime, statistic, n_runs, alpha, np.random.default_rng(seed),
                                    **kw))
    honest, broken = results
    assert not honest.violation and honest.epsilon_lower_bound <= claimed_epsilon, honest
    assert broken.violation, (f"variant scaled by {broken_factor} not caught: lower bound "
                              f"{broken.epsilon_lower_bound:.3f} <= claimed {claimed_epsilon}")
    return honest, broken
