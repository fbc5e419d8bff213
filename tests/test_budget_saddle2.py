"""The fully adaptive filter's per-step budget (Spec P3, A3): budget.filter_per_step_epsilon."""

from __future__ import annotations

import math

import pytest

from dpsco_lib.privacy.accounting.budget import filter_per_step_epsilon
from dpsco_lib.privacy.accounting.composition import AdvancedCompositionFilter, max_composition_steps


@pytest.mark.parametrize(("eps", "dl", "k"), [(1.0, 1e-6, 1), (1.0, 1e-6, 500), (32.0, 1e-6, 1700),
                                              (0.1, 1e-9, 10**6), (4.0, 0.01, 37)])
def test_filter_admits_exactly_count_steps_of_its_budget(eps, dl, k):
    e0 = filter_per_step_epsilon(eps, dl, k)
    # the filter's own admission test: k steps admitted, one more step or a slightly larger budget refused
    assert AdvancedCompositionFilter(eps, dl).try_spend_many(e0, count=k, all_or_nothing=True) == k
    assert AdvancedCompositionFilter(eps, dl).try_spend_many(e0 * (1 + 1e-9), count=k, all_or_nothing=True) == 0
    assert AdvancedCompositionFilter(eps, dl).try_spend_many(e0, count=k + max(1, k // 10**4),
                                                             all_or_nothing=True) == 0
    # the closed form sqrt(s*/k), s* = (sqrt(2 log(1/delta) + 2 eps) - sqrt(2 log(1/delta)))^2, rounded down
    a = 2 * math.log(1 / dl)
    assert e0 == pytest.approx(math.sqrt((math.sqrt(a + 2 * eps) - math.sqrt(a)) ** 2 / k), rel=1e-11)
    assert max_composition_steps(e0, epsilon=eps, delta=dl, method="filter") >= k


def test_filter_budget_is_cached_and_validated():
    assert filter_per_step_epsilon(1.0, 1e-6, 100) == filter_per_step_epsilon(1.0, 1e-6, 100)
    for bad, match in (((0.0, 1e-6, 5), "epsilon"), ((math.nan, 1e-6, 5), "epsilon"), ((1.0, 0.0, 5), "delta"),
                       ((1.0, 1.0, 5), "delta"), ((1.0, 1e-6, 0), "count")):
        with pytest.raises(ValueError, match=match):
            filter_per_step_epsilon(*bad)
