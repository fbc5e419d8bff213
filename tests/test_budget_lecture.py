"""budget.gaussian_noise_multiplier: the one calibration path of the lecture mechanisms (D1, Z1, Z2, R1, R2).

The calibrated noise multiplier must certify at most the target with the ledger's own engine (certify_events on
the events a run records), sit on the boundary (a slightly smaller multiplier fails), agree with the closed or
analytic forms it replaced (Balle-Wang analytic Gaussian; sqrt(T)/mu* for T GDP steps), and refuse accountants
that do not apply to Gaussian events.
"""

from __future__ import annotations

import math

import pytest

from dpsco_lib.privacy.accounting import PrivacyLedger, gdp_delta
from dpsco_lib.privacy.accounting.budget import Calibration, gaussian_noise_multiplier
from dpsco_lib.privacy.accounting.events import GaussianEvent, SelfComposedEvent
from dpsco_lib.privacy.accounting.ledger import certify_events
from dpsco_lib.privacy.mechanisms import gaussian_sigma_analytic


@pytest.mark.parametrize("accountant", ["gdp", "best", "rdp", "pld"])
@pytest.mark.parametrize(("epsilon", "delta", "count"), [(1.0, 1e-6, 1), (0.2, 1e-5, 1), (1.0, 1e-5, 360),
                                                         (4.0, 1e-3, 10)])
def test_certifies_target_with_the_ledger_engine_and_is_tight(epsilon, delta, count, accountant):
    cal = gaussian_noise_multiplier(epsilon, delta, count=count, accountant=accountant)
    assert isinstance(cal, Calibration)
    led = PrivacyLedger()
    led.record_gaussian(cal.value, count=count)
    method = "gdp" if accountant == "best" else accountant
    assert led.epsilon(delta, method) <= epsilon
    assert led.epsilon(delta, method) == cal.certified_epsilon
    smaller = SelfComposedEvent(GaussianEvent(cal.value * (1 - 1e-9)), count)
    assert certify_events((smaller,), delta, method) > epsilon  # on the boundary: less noise fails


@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 1e-6), (0.5, 1e-5), (0.2, 1e-5), (3.0, 1e-8)])
def test_gdp_equals_the_analytic_gaussian_it_replaced(epsilon, delta):
    m = gaussian_noise_multiplier(epsilon, delta).value
    assert m == pytest.approx(gaussian_sigma_analytic(1.0, epsilon=epsilon, delta=delta), rel=1e-12)
    assert gdp_delta(1.0 / m, epsilon=epsilon) <= delta * (1 + 1e-12)
    assert gaussian_noise_multiplier(epsilon, delta, accountant="best").value == m  # best resolves to exact GDP
    assert gaussian_noise_multiplier(epsilon, delta, accountant="rdp").value > m  # RDP is looser for a Gaussian


def test_t_steps_compose_as_sqrt_t_under_gdp():
    m1 = gaussian_noise_multiplier(1.0, 1e-5).value
    mT = gaussian_noise_multiplier(1.0, 1e-5, count=360).value
    assert mT == pytest.approx(math.sqrt(360) * m1, rel=1e-12)


def test_cached_and_validated():
    assert gaussian_noise_multiplier(1.0, 1e-5) is gaussian_noise_multiplier(1.0, 1e-5)
    for bad in ("basic", "advanced", "kov", "paper", "optimal"):
        with pytest.raises(ValueError, match="accountant"):
            gaussian_noise_multiplier(1.0, 1e-5, accountant=bad)
    with pytest.raises(ValueError, match="epsilon"):
        gaussian_noise_multiplier(0.0, 1e-5)
    with pytest.raises(ValueError, match="delta"):
        gaussian_noise_multiplier(1.0, 0.0)
    with pytest.raises(ValueError, match="count"):
        gaussian_noise_multiplier(1.0, 1e-5, count=0)
    with pytest.raises(TypeError):
        gaussian_noise_multiplier(1.0, 1e-5, 3)  # count is keyword-only
