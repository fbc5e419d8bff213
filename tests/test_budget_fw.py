"""budget.parallel_per_step_epsilons: the per-part budgets of a parallel composition of pure blocks (Spec F2)."""

from __future__ import annotations

import numpy as np
import pytest

from dpsco_lib.privacy.accounting.budget import parallel_per_step_epsilons, per_step_epsilon
from dpsco_lib.privacy.accounting.events import LaplaceEvent, ParallelEvent, SelfComposedEvent
from dpsco_lib.privacy.accounting.ledger import certify_events


def _event(eps, counts):
    return ParallelEvent(tuple((SelfComposedEvent(LaplaceEvent(e), m),) for e, m in zip(eps, counts, strict=True)))


@pytest.mark.parametrize("accountant", ["best", "rdp", "basic", "advanced"])
@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 1e-5), (4.0, 1e-8), (0.1, 1e-6)])
def test_parallel_budgets_certify_the_target_tightly(accountant, epsilon, delta):
    counts = (16, 8, 4, 2, 1)
    eps, cal = parallel_per_step_epsilons(counts, epsilon=epsilon, delta=delta, accountant=accountant)
    cert = certify_events((_event(eps, counts),), delta, accountant)
    assert cert == cal.certified_epsilon
    assert cert <= epsilon and cert >= 0.999 * epsilon  # never above the target, and not wasteful
    assert all(a <= b for a, b in zip(eps, eps[1:], strict=False))  # fewer steps -> larger per-step budget
    # each part alone certifies theta by basic or DRV composition (the split rule)
    theta = cal.value
    for e, m in zip(eps, counts, strict=True):
        basic = per_step_epsilon(theta, delta, m, accountant="basic").value
        assert e >= basic


def test_parallel_budgets_pure_dp_and_cache():
    eps, cal = parallel_per_step_epsilons((4, 2, 1), epsilon=2.0, delta=0.0, accountant="basic")
    np.testing.assert_allclose(eps, [0.5, 1.0, 2.0], rtol=1e-12)
    again = parallel_per_step_epsilons((4, 2, 1), epsilon=2.0, delta=0.0, accountant="basic")
    assert again[0] is eps  # cached


def test_parallel_budgets_reject_bad_input():
    with pytest.raises(ValueError, match="paper"):
        parallel_per_step_epsilons((2, 1), epsilon=1.0, delta=1e-5, accountant="paper")
    with pytest.raises(ValueError, match="accountant"):
        parallel_per_step_epsilons((2, 1), epsilon=1.0, delta=1e-5, accountant="drv")
    with pytest.raises(ValueError, match="epsilon"):
        parallel_per_step_epsilons((2, 1), epsilon=0.0, delta=1e-5)
    with pytest.raises(ValueError, match="delta"):
        parallel_per_step_epsilons((2, 1), epsilon=1.0, delta=1.0)
    with pytest.raises(TypeError, match="counts"):
        parallel_per_step_epsilons([2, 1], epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="counts"):
        parallel_per_step_epsilons((2, 0), epsilon=1.0, delta=1e-5)
