"""The testing seam (:mod:`dpsco_lib.testing`): factor 1 is the runner itself; other factors break it."""

from __future__ import annotations

import numpy as np
import pytest

from dpsco_lib.algorithms.anytime_smd import run_anytime_smd_sco
from dpsco_lib.algorithms.poly_sfw import run_poly_sfw
from dpsco_lib.algorithms.registry import get_algorithm
from dpsco_lib.testing import noise_scale, noise_scaled, step_scale, step_scaled


def _poly(**over):
    rec = get_algorithm("F1 Poly-SFW")
    ex = rec.example(np.random.default_rng(3))
    return run_poly_sfw(*ex.args, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(4), trace=True, **over)


def test_factor_one_is_the_same_bits_and_the_block_restores_it():
    plain = _poly()
    with noise_scaled(1.0) as f:
        assert f == 1.0 and noise_scale() == 1.0
        same = _poly()
    np.testing.assert_array_equal(plain.x, same.x)
    assert noise_scale() == 1.0 and step_scale() == 1.0


def test_noise_scaled_changes_the_noise_not_the_ledger():
    plain = _poly()
    with noise_scaled(0.5):
        broken = _poly()
    np.testing.assert_allclose(broken.trace["laplace_scale"], 0.5 * plain.trace["laplace_scale"], rtol=1e-15)
    assert broken.ledger.epsilon(1e-5) == plain.ledger.epsilon(1e-5)
    assert broken.info["noise_multiplier_hook"] == 0.5


def test_step_scaled_changes_the_step_not_the_ledger():
    rec = get_algorithm("A5 anytime SMD")
    ex = rec.example(np.random.default_rng(3))

    def run():
        return run_anytime_smd_sco(*ex.args, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(4))

    plain = run()
    with step_scaled(2.0):
        broken = run()
    assert broken.info["eta_multiplier_hook"] == 2.0 and plain.info["eta_multiplier_hook"] == 1.0
    assert broken.ledger.epsilon(1e-5) == plain.ledger.epsilon(1e-5)


@pytest.mark.parametrize("factor", [-1.0, float("nan"), "0.5"])
def test_bad_factors_are_refused(factor):
    with pytest.raises((ValueError, TypeError), match="factor"), noise_scaled(factor):
        pass  # pragma: no cover
    with pytest.raises((ValueError, TypeError), match="factor"), step_scaled(factor):
        pass  # pragma: no cover


def test_a_runner_that_needs_noise_refuses_zero():
    with noise_scaled(0.0), pytest.raises(ValueError, match="noise_scale"):
        _poly()
