"""Declared claims: frozen windows, negative controls, and their power."""

from __future__ import annotations

import numpy as np
import pytest

from dpsco_lib.experiments import BoundClaim, RateClaim, Verdict, required_power

NS = np.array([1_000, 3_000, 10_000, 30_000, 100_000])
LATTICE = (0.01, 0.03, 0.1, 0.3, 1.0)  # fixed hardness lattice: two decades, independent of n


def _records(rng: np.random.Generator, exponent: float = -0.5, *, scaled: bool = False, reps: int = 6,
             noise: float = 0.1) -> tuple[list[float], list[float], list[float], list[float]]:
    """Excess min(gamma, 2 n^exponent) with log-normal noise on a family; the trivial output's excess is gamma.

    ``scaled`` makes the family move with the bound (gamma = c x n^-1/2), the construction whose trivial
    output decays like the bound itself.
    """
    x, y, fam, triv = [], [], [], []
    for n in NS:
        for g in LATTICE:
            gamma = g * 4 * n ** -0.5 if scaled else g
            for _ in range(reps):
                x.append(float(n))
                y.append(min(gamma, 2 * n**exponent) * float(np.exp(noise * rng.standard_normal())))
                fam.append(g)
                triv.append(gamma)
    return x, y, fam, triv


F1 = RateClaim("F1 exponent in n", "worst-case excess ~ n^-1/2", -0.5, -1 / 3, 0.08, "BGN21")


def test_a_tolerance_wider_than_half_the_gap_is_refused():
    with pytest.raises(ValueError, match="half the gap"):
        RateClaim("F1", "s", -0.5, -1 / 3, 0.09, "c")
    with pytest.raises(ValueError, match="neighbour"):
        RateClaim("F2", "s", (-2 / 3, -0.5), -0.55, 0.01, "c")
    with pytest.raises(ValueError, match="tolerance"):
        RateClaim("F1", "s", -0.5, -1 / 3, 0.0, "c")
    assert RateClaim("F2", "s", (-0.7, -0.6), -0.5, 0.05, "c").gap == pytest.approx(0.1)


def test_the_real_rate_is_accepted_and_both_controls_rejected():
    rng = np.random.default_rng(1)
    x, y, fam, triv = _records(rng)
    out = F1.evaluate(x, y, family=fam, trivial=triv, rng=rng, required=0.95, n_boot=500, n_resamples=100)
    assert out.accepted and out.passed
    assert out.power_trivial == 1.0 and out.power_regime >= 0.95
    assert out.false_alarm < 0.3


def test_the_neighbouring_regime_is_rejected():
    rng = np.random.default_rng(2)
    x, y, fam, triv = _records(rng, exponent=-1 / 3)
    out = F1.evaluate(x, y, family=fam, trivial=triv, rng=rng, required=0.95, n_boot=500, n_resamples=100)
    assert not out.accepted and not out.passed


def test_a_family_scaled_by_the_bound_lets_the_trivial_output_pass_and_the_claim_says_so():
    # The trivial output's error on a family gamma = c n^-1/2 decays like the bound: the claim accepts it,
    # so its power against learning nothing is ~0 and the claim does not pass.
    rng = np.random.default_rng(3)
    x, y, fam, triv = _records(rng, scaled=True)
    out = F1.evaluate(x, y, family=fam, trivial=triv, rng=rng, required=0.8, n_boot=500, n_resamples=100)
    assert out.power_trivial < 0.2
    assert not out.passed


def test_exact_values_read_the_point_estimate_and_powers_are_zero_or_one():
    x = [float(n) for n in NS]
    y = [2 * n**-0.5 for n in NS]
    out = F1.evaluate(x, y, trivial=[1.0] * len(x), rng=np.random.default_rng(4), required=0.95)
    assert out.accepted and out.passed and out.false_alarm == 0.0
    assert out.power_trivial == 1.0 and out.power_regime == 1.0
    assert "CI" not in out.measured


def test_bound_claim_rejects_the_trivial_output_and_the_slower_decay():
    rng = np.random.default_rng(5)
    x, y, fam, triv = _records(rng)
    claim = BoundClaim("F1 bound", "excess <= C n^-1/2", lambda n: n**-0.5, "n^-1/2", 3.0, "BGN21",
                       regime_shift=1 / 6)
    out = claim.evaluate(x, y, family=fam, trivial=triv, rng=rng, required=0.95, n_resamples=100)
    assert out.accepted and out.passed and out.power_trivial == 1.0 and out.power_regime >= 0.95
    big = BoundClaim("F1 bound", "s", lambda n: n**-0.5, "n^-1/2", 1.0, "c")
    assert not big.evaluate(x, y, family=fam, rng=rng, required=0.95, n_resamples=50).accepted


def test_verdict_row_fails_when_a_control_passes_and_shows_the_power():
    rng = np.random.default_rng(6)
    x, y, fam, triv = _records(rng, scaled=True)
    v = Verdict("demo")
    out = F1.evaluate(x, y, family=fam, trivial=triv, rng=rng, required=0.8, n_boot=200, n_resamples=50)
    assert not v.claim(out)
    assert "learns nothing" in v.table_text() and "wrong regime" in v.table_html()
    assert v.claim_rows()[0]["notebook"] == "demo" and v.claim_rows()[0]["passed"] is False
    with pytest.raises(AssertionError, match="F1 exponent in n"):
        v.finish()


def test_bad_inputs_name_the_parameter():
    rng = np.random.default_rng(7)
    x, y, fam, triv = _records(rng)
    with pytest.raises(ValueError, match="required"):
        F1.evaluate(x, y, family=fam, rng=rng, required=1.5)
    with pytest.raises(ValueError, match="family"):
        F1.evaluate(x, y, family=fam[:-1], rng=rng, required=0.9)
    with pytest.raises(ValueError, match="positive"):
        F1.evaluate(x, [-v for v in y], rng=rng, required=0.9)
    with pytest.raises(ValueError, match="profile"):
        required_power("huge")
    assert required_power("smoke") == 0.8 and required_power("paper") == 0.95
