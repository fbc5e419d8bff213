"""Exact discrete Laplace / discrete Gaussian samplers (Canonne-Kamath-Steinke 2020) and the ``sampler=
"discrete"`` option of the Laplace and Gaussian mechanisms.

Distribution checks are chi-square goodness-of-fit tests against the exact pmf at a fixed seed; each is
asserted at level 1e-4, so a correct sampler fails one of them with probability at most 1e-4 per test (for the
fixed seed the outcome is deterministic)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpsco_lib.privacy import mechanisms as M
from dpsco_lib.privacy.discrete import bernoulli_exp, discrete_gaussian, discrete_laplace

ALPHA = 1e-4


def _chi2_pvalue(x: np.ndarray, pmf, support: int) -> float:
    """Bins {-support..support} plus the two tails merged into one bin; expected counts from the exact pmf."""
    ks = np.arange(-support, support + 1)
    p = np.array([pmf(int(k)) for k in ks])
    obs = np.array([np.sum(x == k) for k in ks], dtype=float)
    obs_tail, p_tail = float(np.sum(np.abs(x) > support)), 1.0 - p.sum()
    return float(stats.chisquare(np.append(obs, obs_tail), len(x) * np.append(p, p_tail)).pvalue)


def _dlap_pmf(scale: float):
    a = math.exp(-1.0 / scale)
    return lambda k: (1 - a) / (1 + a) * a ** abs(k)


def _dgauss_pmf(sigma: float):
    ys = np.arange(-int(40 * sigma) - 40, int(40 * sigma) + 41)
    z = float(np.sum(np.exp(-ys.astype(float) ** 2 / (2 * sigma**2))))
    return lambda k: math.exp(-k * k / (2 * sigma**2)) / z


@pytest.mark.parametrize("scale", [0.6, Fraction(7, 3), 4.0])
def test_discrete_laplace_pmf(scale) -> None:
    x = discrete_laplace(scale, rng=np.random.default_rng(1), size=6000)
    support = int(3 * float(scale)) + 1
    assert _chi2_pvalue(x, _dlap_pmf(float(scale)), support) > ALPHA


@pytest.mark.parametrize("sigma", [0.7, Fraction(5, 2), 6.0])
def test_discrete_gaussian_pmf(sigma) -> None:
    x = discrete_gaussian(sigma, rng=np.random.default_rng(2), size=5000)
    support = int(2.5 * float(sigma)) + 1
    assert _chi2_pvalue(x, _dgauss_pmf(float(sigma)), support) > ALPHA


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2)])
def test_bernoulli_exp_frequency(gamma: Fraction) -> None:
    rng = np.random.default_rng(3)
    n = 4000
    hits = sum(bernoulli_exp(gamma, rng) for _ in range(n))
    assert stats.binomtest(hits, n, math.exp(-float(gamma))).pvalue > ALPHA


def test_discrete_mechanisms_release_on_the_grid_with_the_right_noise() -> None:
    rng = np.random.default_rng(4)
    gam = 0.125
    out = M.laplace_mechanism(np.array([0.3, -1.1]), sensitivity=0.5, epsilon=1.0, rng=rng, size=2000,
                              sampler="discrete", gamma=gam)
    assert out.shape == (2000, 2)
    assert np.all(out / gam == np.round(out / gam))
    # Delta_Z = floor(0.5 / 0.125) + 2 = 6 grid steps: scale 6 steps = 0.75; centred on round(v / gamma) gamma
    centre = np.array([0.25, -1.125])
    x = np.rint((out - centre) / gam).astype(int).ravel()
    assert _chi2_pvalue(x, _dlap_pmf(6.0), 18) > ALPHA
    g = M.gaussian_mechanism(0.3, sigma=0.5, rng=rng, size=3000, sampler="discrete", gamma=0.1)
    z = np.rint((g - 0.3) / 0.1).astype(int)
    assert _chi2_pvalue(z, _dgauss_pmf(5.0), 12) > ALPHA
    scalar = M.gaussian_mechanism(0.3, sigma=0.5, rng=rng, sampler="discrete", gamma=0.1)
    assert scalar.shape == ()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"sampler": "exact"}, "sampler must be 'float' or 'discrete'"),
     ({"sampler": "discrete"}, "gamma .* is required with sampler='discrete'"),
     ({"gamma": 0.1}, "gamma applies to sampler='discrete' only"),
     ({"sampler": "discrete", "gamma": 0.0}, "gamma must be > 0"),
     ({"sampler": "discrete", "gamma": math.nan}, "gamma must be finite")],
)
def test_mechanism_sampler_validation(kwargs, match: str) -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=match):
        M.laplace_mechanism(0.0, sensitivity=1.0, epsilon=1.0, rng=rng, **kwargs)
    with pytest.raises(ValueError, match=match):
        M.gaussian_mechanism(0.0, sigma=1.0, rng=rng, **kwargs)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf, "1", None, True])
def test_sampler_parameter_validation(bad) -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="scale"):
        discrete_laplace(bad, rng=rng)
    with pytest.raises(ValueError, match="sigma"):
        discrete_gaussian(bad, rng=rng)


def test_sampler_size_and_rng_validation() -> None:
    with pytest.raises(ValueError, match="size"):
        discrete_laplace(1.0, rng=np.random.default_rng(0), size=-1)
    with pytest.raises(ValueError, match="size"):
        discrete_gaussian(1.0, rng=np.random.default_rng(0), size=10**15)
    with pytest.raises(TypeError, match="rng"):
        discrete_laplace(1.0, rng=0)
    assert discrete_gaussian(1.0, rng=np.random.default_rng(0), size=0).shape == (0,)


def test_chi_square_detects_a_wrong_scale() -> None:
    """The goodness-of-fit check has power: samples of scale 4 are rejected against the scale-3.5 pmf."""
    x = discrete_laplace(4.0, rng=np.random.default_rng(1), size=6000)
    assert _chi2_pvalue(x, _dlap_pmf(3.5), 13) < ALPHA
