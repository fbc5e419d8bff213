"""The accounting package's public surface (dpsco_lib.privacy.accounting): its exports, and bad input across its
modules.
"""

from __future__ import annotations

import pytest

from dpsco_lib.privacy import accounting as acc
from dpsco_lib.privacy.accounting import (
    AdvancedCompositionFilter,
    PrivacyLedger,
    advanced_composition_epsilon,
    advanced_composition_per_step_epsilon,
    amplify_by_subsampling,
    basic_composition,
    cor36_per_step_epsilon,
    gdp_compose,
    gdp_delta,
    gdp_epsilon,
    gdp_tradeoff,
    kov_epsilon,
    kov_per_step_epsilon,
    max_composition_steps,
    rdp_gaussian,
    rdp_generalized_gaussian,
    rdp_subsampled_gaussian,
    rdp_to_epsilon,
)


# ------------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "call",
    [
        lambda: advanced_composition_epsilon(0.0, k=10, delta_prime=1e-5),
        lambda: advanced_composition_epsilon(0.1, k=0, delta_prime=1e-5),
        lambda: advanced_composition_epsilon(0.1, k=10, delta_prime=0.0),
        lambda: advanced_composition_epsilon(0.1, k=2.5, delta_prime=1e-5),
        lambda: kov_epsilon(0.1, k=10, delta=1.0),
        lambda: kov_epsilon(float("nan"), k=10, delta=1e-5),
        lambda: kov_per_step_epsilon(-1.0, delta_total=1e-5, k=10),
        lambda: advanced_composition_per_step_epsilon(1.0, delta_total=1e-5, k=10, delta0=2e-6),
        lambda: cor36_per_step_epsilon(1.5, delta=1e-6, k=10),
        lambda: cor36_per_step_epsilon(0.5, delta=0.0, k=10),
        lambda: rdp_gaussian(0.0),
        lambda: rdp_subsampled_gaussian(1.0, sampling_rate=1.5),
        lambda: rdp_gaussian(1.0, orders=[0.5, 2.0]),
        lambda: rdp_generalized_gaussian(1.0, kappa=0.5),
        lambda: rdp_to_epsilon([0.1, 0.2], orders=[2.0], delta=1e-5),
        lambda: rdp_to_epsilon([-0.1], orders=[2.0], delta=1e-5),
        lambda: gdp_delta(-1.0, epsilon=1.0),
        lambda: gdp_epsilon(1.0, delta=1.0),
        lambda: gdp_tradeoff(1.0, alpha=1.5),
        lambda: gdp_compose([]),
        lambda: amplify_by_subsampling(1.0, delta=1e-5, sampling_rate=1.2),
        lambda: basic_composition([0.1, float("inf")]),
        lambda: AdvancedCompositionFilter(1.0, 0.0),
        lambda: AdvancedCompositionFilter(1.0, 1e-5, delta_prime=1e-4),
        lambda: AdvancedCompositionFilter(1.0, 1e-5).try_spend(-0.1),
        lambda: PrivacyLedger().record_pure(0.0),
        lambda: PrivacyLedger().record_gaussian(1.0, count=0),
        lambda: PrivacyLedger().record_subsampled_gaussian(1.0, 0.0),
        lambda: PrivacyLedger().record_gg(1.0, kappa=0.5),
        lambda: PrivacyLedger().epsilon(1e-5, method="magic"),
        lambda: PrivacyLedger().epsilon(1.5),
        lambda: PrivacyLedger().merge("not a ledger"),  # type: ignore[arg-type]
        lambda: PrivacyLedger.parallel(),
        lambda: max_composition_steps(0.1, epsilon=1.0, delta=1e-5, method="magic"),
    ],
)
def test_invalid_inputs_raise_value_error(call):
    with pytest.raises(ValueError):
        call()


def test_module_exports_exist():
    for name in acc.__all__:
        assert hasattr(acc, name), name
