"""Soundness of every accountant at every delta: a certificate is never below the exact privacy curve.

The exact curves are computed independently in mpmath (40 digits):

* k Gaussian mechanisms with noise multiplier m are exactly mu-GDP with mu = sqrt(k)/m (Dong-Roth-Su 2022), whose
  curve is delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (Balle-Wang 2018);
* k pure eps0-DP steps have the exact curve of Kairouz-Oh-Viswanath 2015 (k-fold randomized response):
  delta(eps) = (1 + e^eps0)^-k sum_i C(k, i) [e^((k-i) eps0) - e^(eps + i eps0)]_+.

A certificate eps_c at delta is sound iff delta_exact(eps_c) <= delta (delta_exact decreases in eps); the test
allows a 1e-9 relative slack for the float evaluation: delta_exact(eps_c (1 + 1e-9)) <= delta. Parameters are drawn at
test time; the seed is in every assertion message. The Poisson-subsampled Gaussian has no closed form: it is
checked against dp-accounting's pessimistic PLD on a twice finer grid, and at q = 1 against mu-GDP.
"""

from __future__ import annotations

import math
import os
import time

import mpmath as mp
import numpy as np
import pytest

from dpsco_lib.privacy.accounting.events import GaussianEvent, LaplaceEvent, SelfComposedEvent, SubsampledGaussianEvent
from dpsco_lib.privacy.accounting.ledger import certify_events, epsilons_of_events

mp.mp.dps = 40
SEED = int(os.environ.get("DPSCO_SOUNDNESS_SEED", time.time_ns() % 2**32))
REL = 1e-9


def gdp_delta_exact(mu: float, eps: float) -> mp.mpf:
    mu, eps = mp.mpf(mu), mp.mpf(eps)
    return mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)


def kov_delta_exact(eps0: float, k: int, eps: float) -> mp.mpf:
    """KOV15 exact curve; the positive terms are i <= i* = floor((k eps0 - eps) / (2 eps0)), summed from i*
    down until they are negligible (they decay geometrically away from the binomial mode's far side)."""
    e0, e = mp.mpf(eps0), mp.mpf(eps)
    i_star = int(mp.floor((k * e0 - e) / (2 * e0)))
    if i_star < 0:
        return mp.mpf(0)
    log_norm = -k * mp.log1p(mp.exp(e0))
    total, peak = mp.mpf(0), mp.mpf(0)
    for i in range(min(i_star, k), -1, -1):
        log_c = mp.loggamma(k + 1) - mp.loggamma(i + 1) - mp.loggamma(k - i + 1)
        term = mp.exp(log_c + (k - i) * e0 + log_norm) * -mp.expm1(e + (2 * i - k) * e0)
        total += term
        peak = max(peak, term)
        if term < peak * mp.mpf(10) ** -30 and i < i_star - 10:
            break
    return total


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _unsound(exact_delta, eps_c: float, delta: float) -> bool:
    return math.isfinite(eps_c) and exact_delta(eps_c * (1 + REL)) > delta


def _gaussian_cases(rng: np.random.Generator, n: int, mu_hi: float) -> list[tuple[float, int, float]]:
    out = []
    for _ in range(n):
        k = int(round(_log_uniform(rng, 1, 1e5)))
        mu = _log_uniform(rng, 0.05, mu_hi)
        out.append((math.sqrt(k) / mu, k, _log_uniform(rng, 1e-15, 1e-2)))
    return out


def _check_gaussian(cases, methods, seed: int) -> None:
    bad = []
    for m, k, delta in cases:
        events = [SelfComposedEvent(GaussianEvent(m), k)]
        mu = math.sqrt(k) / m
        for meth in methods:
            eps_c = certify_events(events, delta, meth)
            if _unsound(lambda e, mu=mu: gdp_delta_exact(mu, e), eps_c, delta):
                bad.append((meth, m, k, delta, eps_c))
    assert not bad, f"seed={seed}: unsound certificates (method, m, k, delta, eps) {bad}"


def _check_pure(cases, methods, seed: int) -> None:
    bad = []
    for e0, k, delta in cases:
        events = [SelfComposedEvent(LaplaceEvent(e0), k)]
        for meth in methods:
            eps_c = certify_events(events, delta, meth)
            if _unsound(lambda e, e0=e0, k=k: kov_delta_exact(e0, k, e), eps_c, delta):
                bad.append((meth, e0, k, delta, eps_c))
    assert not bad, f"seed={seed}: unsound certificates (method, eps0, k, delta, eps) {bad}"


def _pure_cases(rng: np.random.Generator, n: int, k_hi: float) -> list[tuple[float, int, float]]:
    out = []
    for _ in range(n):
        k = int(round(_log_uniform(rng, 1, k_hi)))
        e0 = _log_uniform(rng, 1e-3, 2.0) / math.sqrt(k)
        out.append((e0, k, _log_uniform(rng, 1e-15, 1e-2)))
    return out


def test_reproducers_are_sound() -> None:
    """Two of the three reported cases (the third is ``test_gaussian_pld_reproducer``): each certificate is at
    least the exact value."""
    d1 = 2.2628326918927094e-12
    ev1 = [SelfComposedEvent(SubsampledGaussianEvent(5.9191363355557725, 1.0), 6059)]
    mu1 = math.sqrt(6059) / 5.9191363355557725
    for meth in ("best", "pld", "rdp"):
        eps_c = certify_events(ev1, d1, meth)
        assert not _unsound(lambda e: gdp_delta_exact(mu1, e), eps_c, d1), (meth, eps_c)
    ev3 = [SelfComposedEvent(LaplaceEvent(0.01), 30000)]
    eps_c = certify_events(ev3, 1e-9, "pld")
    assert not _unsound(lambda e: kov_delta_exact(0.01, 30000, e), eps_c, 1e-9), eps_c


def test_gaussian_sound_every_accountant() -> None:
    """Gaussian compositions, counts up to 1e5, delta log-uniform in [1e-15, 1e-2]: gdp, rdp, best (cheap)."""
    rng = np.random.default_rng(SEED)
    _check_gaussian(_gaussian_cases(rng, 40, 30.0), ("best", "gdp", "rdp"), SEED)


def test_gaussian_sound_pld() -> None:
    """The PLD accountant on Gaussian compositions (a few cases: each PLD costs up to a second)."""
    rng = np.random.default_rng(SEED + 1)
    _check_gaussian(_gaussian_cases(rng, 3, 8.0), ("pld",), SEED + 1)


def test_pure_sound_every_accountant() -> None:
    """k-fold pure eps0-DP (Laplace), k up to 1e5 for the closed-form accountants and up to 3000 for the PLD."""
    rng = np.random.default_rng(SEED + 2)
    _check_pure(_pure_cases(rng, 12, 1e5), ("best", "basic", "advanced", "kov", "rdp"), SEED + 2)
    _check_pure(_pure_cases(rng, 3, 3e3), ("pld",), SEED + 2)


def test_subsampled_gaussian_sound() -> None:
    """q = 1 is the Gaussian (>= mu-GDP); q < 1 is never below dp-accounting's pessimistic PLD on a finer grid."""
    from dp_accounting.pld import privacy_loss_distribution as pld
    from dp_accounting.privacy_accountant import NeighboringRelation

    rng = np.random.default_rng(SEED + 3)
    bad = []
    for _ in range(2):
        k, mu = int(round(_log_uniform(rng, 1, 3000))), _log_uniform(rng, 0.1, 4.0)
        delta = _log_uniform(rng, 1e-15, 1e-2)
        m = math.sqrt(k) / mu
        ev = [SelfComposedEvent(SubsampledGaussianEvent(m, 1.0), k)]
        for meth, eps_c in epsilons_of_events(ev, delta, methods=("best", "rdp", "pld")).items():
            if _unsound(lambda e, mu=mu: gdp_delta_exact(mu, e), eps_c, delta):
                bad.append(("q=1", meth, m, k, delta, eps_c))
    for _ in range(3):
        m, q = _log_uniform(rng, 1.0, 5.0), _log_uniform(rng, 1e-3, 0.3)
        k, delta = int(round(_log_uniform(rng, 1, 300))), _log_uniform(rng, 1e-8, 1e-2)
        ref = pld.from_gaussian_mechanism(m, sampling_prob=q, value_discretization_interval=5e-5,
                                          pessimistic_estimate=True,
                                          neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE)
        ref_eps = ref.self_compose(k).get_epsilon_for_delta(delta)
        ev = [SelfComposedEvent(SubsampledGaussianEvent(m, q), k)]
        for meth, eps_c in epsilons_of_events(ev, delta, methods=("best", "rdp", "pld")).items():
            if eps_c < ref_eps * (1 - 1e-6):
                bad.append(("q<1", meth, m, q, k, delta, eps_c, ref_eps))
    assert not bad, f"seed={SEED + 3}: unsound certificates {bad}"


@pytest.mark.slow
def test_gaussian_pld_reproducer() -> None:
    """The reported PLD case of 40234 Gaussian steps (a PLD of 5e6 grid points: left out of ``make test``)."""
    ev2 = [SelfComposedEvent(GaussianEvent(6.8207), 40234)]
    eps_c = certify_events(ev2, 6.33e-9, "pld")
    assert not _unsound(lambda e: gdp_delta_exact(math.sqrt(40234) / 6.8207, e), eps_c, 6.33e-9), eps_c


@pytest.mark.slow
def test_sound_larger_sample() -> None:
    """The same checks on many more random cases (left out of ``make test``)."""
    rng = np.random.default_rng(SEED + 4)
    _check_gaussian(_gaussian_cases(rng, 400, 30.0), ("best", "gdp", "rdp"), SEED + 4)
    _check_gaussian(_gaussian_cases(rng, 20, 15.0), ("pld",), SEED + 4)
    _check_pure(_pure_cases(rng, 100, 1e5), ("best", "basic", "advanced", "kov", "rdp"), SEED + 4)
    _check_pure(_pure_cases(rng, 15, 2e4), ("pld",), SEED + 4)
