"""Tests for Spec D4 (dpsco_lib.algorithms.dp_sgd)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsco_lib.algorithms.dp_sgd import (
    clip_rows,
    dp_sgd_epsilon_advanced,
    dp_sgd_epsilon_pld,
    dp_sgd_epsilon_rdp,
    dp_sgd_epsilons,
    dp_sgd_noise_multiplier,
    run_dp_sgd,
)
from dpsco_lib.geometry.sets import LpBall
from dpsco_lib.privacy.audit import mu_gdp_lower_bound
from dpsco_lib.privacy.mechanisms import gaussian_epsilon_analytic
from dpsco_lib.problems import Dataset
from dpsco_lib.problems.base import Problem
from dpsco_lib.testing import noise_scaled


class _Toy(Problem):
    """Unlabelled toy problems over the l2 ball of radius R, no declared data bound (DP-SGD clips)."""

    p, L0, L1, L2, exact_population, needs_labels = 2.0, 1.0, 1.0, 0.0, False, False

    def __init__(self, d, R):
        self.feasible_set = LpBall(d, 2.0, R)
        self._cache = {}

    def _loss(self, x, data):  # pragma: no cover - not used
        raise NotImplementedError

    def _sample(self, n, rng):  # pragma: no cover - not used
        raise NotImplementedError

    def _row_violation(self, data):
        return np.zeros(data.n, dtype=bool)

    def _clip_rows(self, data, bad):  # pragma: no cover - no bound
        return data

    def _population_risk(self, x):  # pragma: no cover - not used
        raise NotImplementedError

    def _population_grad(self, x):  # pragma: no cover - not used
        raise NotImplementedError


class _Quadratic(_Toy):
    """f(x; z) = ||x - z||^2 / 2 over the l2 ball of radius R (gradients x - z)."""

    def __init__(self, d, R=10.0):
        super().__init__(d, R)

    def _grad(self, x, data):
        return x[None, :] - data.X


class _Linear(_Toy):
    """f(x; z) = -<x, z>: constant gradients -z (the canary audit problem)."""

    def __init__(self, d, R=1e6):
        super().__init__(d, R)

    def _grad(self, x, data):
        return -np.asarray(data.X)


def test_dp_sgd_converges_with_negligible_noise_and_is_deterministic():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3)) * 0.3
    prob, data = _Quadratic(3), Dataset(X)
    kw = dict(epsilon=1e8, delta=1e-5, sampling_rate=1.0, steps=300, clip=2.0, step_size=0.5, average=False)
    r1 = run_dp_sgd(prob, data, rng=np.random.default_rng(1), **kw)
    r2 = run_dp_sgd(prob, data, rng=np.random.default_rng(1), **kw)
    assert np.array_equal(r1.x, r2.x)
    np.testing.assert_allclose(r1.x, X.mean(0), atol=1e-3)
    assert r1.ledger.events[0].kind == "subsampled_gaussian" and r1.ledger.total_count == 300
    assert r1.info["mean_batch_size"] == 50
    assert r1.relation == "add_remove" and "certified_epsilon" not in r1.info


def test_clipping_counts_and_rows():
    G = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    C = clip_rows(G, 1.0)
    np.testing.assert_allclose(np.linalg.norm(C, axis=1), [1.0, 0.5, 0.0])
    prob, data = _Linear(2), Dataset(G)
    r = run_dp_sgd(prob, data, epsilon=1.0, delta=1e-5, sampling_rate=1.0, steps=4, clip=1.0, step_size=0.1,
                   rng=np.random.default_rng(0))
    assert r.info["n_clipped"] == 4


def test_ledger_matches_rdp_function_and_dp_accounting_rdp():
    import dp_accounting as dpa

    q, T, sigma, delta = 150 / 60000, 6000, 1.3, 1e-5
    eps = dp_sgd_epsilon_rdp(sigma, sampling_rate=q, steps=T, delta=delta)
    acc = dpa.rdp.RdpAccountant()
    acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), T)
    assert eps == pytest.approx(acc.get_epsilon(delta), rel=2e-3)
    prob, data = _Linear(2), Dataset(np.zeros((10, 2)))
    r = run_dp_sgd(prob, data, epsilon=1.0, delta=delta, sampling_rate=0.3, steps=7, clip=1.0, step_size=0.1,
                   rng=np.random.default_rng(0))
    m = r.params["noise_multiplier"]
    assert r.certified_epsilon(delta, "rdp") == pytest.approx(dp_sgd_epsilon_rdp(m, sampling_rate=0.3, steps=7,
                                                                                  delta=delta), rel=1e-12)


@pytest.mark.parametrize("accountant", ["rdp", "best"])
def test_calibration_and_certificate_are_one_code_path(accountant):
    # the noise multiplier is calibrated by inverting the ledger's certify_events: the run certifies its target
    # under the calibrating accountant, tightly; "best" (PLD) needs less noise than RDP
    prob, data = _Linear(2), Dataset(np.zeros((20, 2)))
    kw = dict(epsilon=1.0, delta=1e-5, sampling_rate=0.05, steps=200, clip=1.0, step_size=0.1)
    r = run_dp_sgd(prob, data, rng=np.random.default_rng(0), accountant=accountant, **kw)
    cert = r.certified_epsilon(1e-5, accountant)
    assert cert <= 1.0 and cert == pytest.approx(1.0, rel=1e-9)
    assert r.certified_epsilon(1e-5) <= 1.0
    m = dp_sgd_noise_multiplier(1.0, delta=1e-5, sampling_rate=0.05, steps=200, accountant=accountant)
    assert r.params["noise_multiplier"] == m and r.params["accountant"] == accountant
    if accountant == "best":  # the default; PLD needs less noise than the moments accountant
        assert m == dp_sgd_noise_multiplier(1.0, delta=1e-5, sampling_rate=0.05, steps=200)
        assert m < dp_sgd_noise_multiplier(1.0, delta=1e-5, sampling_rate=0.05, steps=200, accountant="rdp")
        assert run_dp_sgd(prob, data, rng=np.random.default_rng(0), **kw).params["noise_multiplier"] == m


def test_advanced_composition_hand_computed():
    sigma, q, T, delta = 2.0, 0.01, 100, 1e-5
    best = math.inf
    for f in (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95):
        e0 = gaussian_epsilon_analytic(sigma, sensitivity=1.0, delta=(1 - f) * delta / (q * T))
        es = math.log(1 + q * (math.exp(e0) - 1))
        best = min(best, T * es, math.sqrt(2 * T * math.log(1 / (f * delta))) * es + T * es * (math.exp(es) - 1))
    assert dp_sgd_epsilon_advanced(sigma, sampling_rate=q, steps=T, delta=delta) == pytest.approx(best, rel=1e-12)


def test_three_ways_ordering_tf_privacy_example():
    # n = 60000, batch 150, sigma 1.3, 15 epochs, delta 1e-5 (PLD at 1e-3 discretization for speed: pessimistic).
    q, T = 150 / 60000, 15 * 400
    kw = dict(sampling_rate=q, steps=T, delta=1e-5)
    adv = dp_sgd_epsilon_advanced(1.3, **kw)
    rdp = dp_sgd_epsilon_rdp(1.3, **kw)
    pld = dp_sgd_epsilon_pld(1.3, discretization=1e-3, **kw)
    assert pld < rdp < adv
    assert rdp == pytest.approx(0.7242, abs=2e-3)
    assert 0.6 < pld < 0.66


def test_epsilons_dict_and_noise_solver():
    out = dp_sgd_epsilons(1.0, sampling_rate=0.01, steps=50, delta=1e-5, pld=False)
    assert set(out) == {"advanced", "rdp"}
    kw = dict(sampling_rate=0.01, steps=500, delta=1e-5)
    s = dp_sgd_noise_multiplier(1.0, accountant="rdp", **kw)  # the moments accountant, solved to its boundary
    assert dp_sgd_epsilon_rdp(s, **kw) <= 1.0
    assert dp_sgd_epsilon_rdp(s * (1 - 1e-9), **kw) > 1.0
    with pytest.raises(ValueError, match="accountant"):
        dp_sgd_noise_multiplier(1.0, accountant="exact", **kw)


@pytest.mark.parametrize(
    "kw, name",
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"delta": 0.0}, "delta"),
        ({"sampling_rate": 0.0}, "sampling_rate"),
        ({"sampling_rate": 1.5}, "sampling_rate"),
        ({"steps": 0}, "steps"),
        ({"clip": -1.0}, "clip"),
        ({"step_size": 0.0}, "step_size"),
        ({"rng": 3}, "rng"),
        ({"normalizer": 0.0}, "normalizer"),
        ({"accountant": "exact"}, "accountant"),
        ({"accountant": "kov"}, "kov"),
        ({"trace": 1}, "trace"),
        ({"trace_every": 0}, "trace_every"),
        ({"average": "yes"}, "average"),
    ],
)
def test_bad_inputs(kw, name):
    base = dict(epsilon=1.0, delta=1e-5, sampling_rate=0.5, steps=2, clip=1.0, step_size=0.1,
                rng=np.random.default_rng(0))
    base.update(kw)
    with pytest.raises((ValueError, TypeError), match=name):
        run_dp_sgd(_Linear(2), Dataset(np.zeros((4, 2))), **base)


def test_bad_problem_and_data():
    base = dict(epsilon=1.0, delta=1e-5, sampling_rate=0.5, steps=2, clip=1.0, step_size=0.1,
                rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="problem"):
        run_dp_sgd(object(), Dataset(np.zeros((4, 2))), **base)
    with pytest.raises(ValueError, match="data"):
        run_dp_sgd(_Linear(2), np.zeros((4, 2)), **base)
    with pytest.raises(ValueError, match="x0"):
        run_dp_sgd(_Linear(2), Dataset(np.zeros((4, 2))), x0=np.zeros(3), **base)


@pytest.mark.statistical
def test_canary_mu_gdp_audit_and_broken_variant():
    # One full-batch step (q = 1) under add/remove: D = 4 zero records, D' = D + canary with gradient norm C = 1.
    # The release is the Gaussian mechanism with mu = 1/sigma, sigma calibrated to (eps, delta) = the exact
    # Gaussian curve of sigma = 1 (so sigma ~ 1). 8000 runs per world, alpha = 0.05.
    delta = 1e-5
    eps = gaussian_epsilon_analytic(1.0, sensitivity=1.0, delta=delta)
    kw = dict(epsilon=eps, delta=delta, sampling_rate=1.0, steps=1, clip=1.0, step_size=1.0, normalizer=1.0,
              x0=np.zeros(1), accountant="pld")
    D = Dataset(np.zeros((4, 1)))
    Dp = Dataset(np.vstack([np.zeros((4, 1)), [[1.0]]]))
    sigma = run_dp_sgd(_Linear(1), D, rng=np.random.default_rng(0), **kw).params["noise_multiplier"]
    assert sigma == pytest.approx(1.0, rel=1e-2)

    def mech(factor):
        def run(data, rng, size):
            with noise_scaled(factor):
                return np.array([run_dp_sgd(_Linear(1), data, rng=rng, **kw).x[0] for _ in range(size)])

        return run

    ok = mu_gdp_lower_bound(mech(1.0), Dp, D, np.asarray, 0.5, 8000, 0.05, np.random.default_rng(1),
                            claimed_mu=1 / sigma)
    assert not ok.violation
    bad = mu_gdp_lower_bound(mech(0.5), Dp, D, np.asarray, 0.5, 8000, 0.05, np.random.default_rng(2),
                             claimed_mu=1 / sigma)
    assert bad.violation, bad.mu_lower_bound


@pytest.mark.statistical
def test_subsampled_step_audit_catches_halved_noise_and_doubled_sampling_rate():
    """One Poisson-subsampled DP-SGD step (q = 1/2, clip 1, add/remove): D = 4 zero records, D' = D + a canary of
    gradient norm 1, so the release is N(0, sigma^2) against (1/2) N(0, sigma^2) + (1/2) N(1, sigma^2). A threshold
    audit (event {x > 1.5}, 6000 runs per world, Clopper-Pearson, false-alarm probability 1e-3 per audit) at
    delta = 0.05 stays below the run's certificate there; the audit catches a step whose noise is half the
    calibrated one, and a step that samples at rate 1 while its ledger (and noise) certify q = 1/2."""
    from dpsco_lib.privacy.audit import epsilon_lower_bound

    q, delta_audit = 0.5, 0.05
    eps = dp_sgd_epsilon_pld(1.0, sampling_rate=q, steps=1, delta=1e-5)
    kw = dict(epsilon=eps, delta=1e-5, steps=1, clip=1.0, step_size=1.0, normalizer=1.0, x0=np.zeros(1),
              accountant="pld")
    D, Dp = Dataset(np.zeros((4, 1))), Dataset(np.vstack([np.zeros((4, 1)), [[1.0]]]))
    ref = run_dp_sgd(_Linear(1), D, rng=np.random.default_rng(0), sampling_rate=q, **kw)
    sigma, claim = ref.params["noise_multiplier"], ref.certified_epsilon(delta_audit)
    assert sigma == pytest.approx(1.0, rel=1e-2) and ref.relation == "add_remove"
    sigma_rate1 = run_dp_sgd(_Linear(1), D, rng=np.random.default_rng(0), sampling_rate=1.0, **kw).params[
        "noise_multiplier"]

    def mech(rate, factor):
        def run(data, rng, size):
            with noise_scaled(factor):
                return np.array([run_dp_sgd(_Linear(1), data, rng=rng, sampling_rate=rate, **kw).x[0]
                                 for _ in range(size)])

        return run

    def audit(rate, factor, s):
        return epsilon_lower_bound(mech(rate, factor), Dp, D, np.asarray, 1.5, 6_000, 1e-3,
                                   np.random.default_rng(s), delta=delta_audit, claimed_epsilon=claim)

    ok = audit(q, 1.0, 1)
    assert not ok.violation, (ok.epsilon_lower_bound, claim)
    half = audit(q, 0.5, 2)
    assert half.violation, (half.epsilon_lower_bound, claim)
    rate = audit(1.0, sigma / sigma_rate1, 3)  # samples at 2q with the noise calibrated for q
    assert rate.violation, (rate.epsilon_lower_bound, claim)


# ---------------------------------------------------------------------------------------------------------------
# DP-SGD: the noise scales with the clipping norm (mutant alg-dpsgd-clip-noise)
# ---------------------------------------------------------------------------------------------------------------
class _Linear1(Problem):
    """f(x; z) = -<x, z> on the real line (constant gradients -z), in a huge l2 ball; no declared data bound."""

    p, L0, L1, L2, exact_population, needs_labels = 2.0, 1.0, 0.0, 0.0, False, False

    def __init__(self) -> None:
        self.feasible_set = LpBall(1, 2.0, 1e6)
        self._cache = {}

    def _grad(self, x, data):
        return -np.asarray(data.X)

    def _row_violation(self, data):
        return np.zeros(data.n, dtype=bool)

    def _clip_rows(self, data, bad):  # pragma: no cover - no bound
        return data

    def _loss(self, x, data):  # pragma: no cover - not used
        raise NotImplementedError

    def _sample(self, n, rng):  # pragma: no cover - not used
        raise NotImplementedError

    def _population_risk(self, x):  # pragma: no cover - not used
        raise NotImplementedError

    def _population_grad(self, x):  # pragma: no cover - not used
        raise NotImplementedError


@pytest.mark.statistical
def test_dp_sgd_canary_audit_with_clipping_norm_above_one():
    """One full-batch DP-SGD step with clip C = 4: the canary (gradient norm >= C, clipped to C) moves the output by
    C, the noise has std sigma C, so the release is exactly (1/sigma)-GDP. A mu-GDP audit (4000 runs per world,
    false-alarm probability alpha = 1e-3) finds no violation of the claim 1/sigma; with noise sigma instead of
    sigma C (mutant ``alg-dpsgd-clip-noise``) the mechanism is (C/sigma)-GDP and the audit sees it."""
    C = 4.0
    delta = 1e-5
    eps = gaussian_epsilon_analytic(1.0, sensitivity=1.0, delta=delta)
    kw = dict(epsilon=eps, delta=delta, sampling_rate=1.0, steps=1, clip=C, step_size=1.0, normalizer=1.0,
              x0=np.zeros(1), accountant="pld")
    D = Dataset(np.zeros((4, 1)))
    Dp = Dataset(np.vstack([np.zeros((4, 1)), [[2.0 * C]]]))  # canary gradient -2C, clipped to norm C
    sigma = run_dp_sgd(_Linear1(), D, rng=np.random.default_rng(0), **kw).params["noise_multiplier"]

    def mech(data, rng, size):
        return np.array([run_dp_sgd(_Linear1(), data, rng=rng, **kw).x[0] for _ in range(size)])

    res = mu_gdp_lower_bound(mech, Dp, D, np.asarray, C / 2.0, 4000, 1e-3, np.random.default_rng(1),
                             claimed_mu=1.0 / sigma)
    assert not res.violation, (res.mu_lower_bound, 1.0 / sigma)


class _LinearD(Problem):
    """f(x; z) = -<x, z> in R^d over a huge l2 ball (constant per-record gradients -z); no declared data bound.

    Every step of a first-order method on it is an explicit function of the records and of the noise, which lets a
    test read the noise and the (clipped) gradient sum off the output.
    """

    p, L0, L1, L2, exact_population, needs_labels = 2.0, 1.0, 0.0, 0.0, False, False

    def __init__(self, d: int) -> None:
        self.feasible_set = LpBall(d, 2.0, 1e6)
        self._cache = {}

    def _grad(self, x, data):
        return -np.asarray(data.X, dtype=np.float64)

    def _row_violation(self, data):
        return np.zeros(data.n, dtype=bool)

    def _clip_rows(self, data, bad):  # pragma: no cover - no bound
        return data

    def _loss(self, x, data):  # pragma: no cover - not used
        raise NotImplementedError

    def _sample(self, n, rng):  # pragma: no cover - not used
        raise NotImplementedError

    def _population_risk(self, x):  # pragma: no cover - not used
        raise NotImplementedError

    def _population_grad(self, x):  # pragma: no cover - not used
        raise NotImplementedError


# ---------------------------------------------------------------------------------------------------------------
# DP-SGD: per-example clipping in l2 (mutants alg-dpsgd-clip-linf, alg-dpsgd-clip-after-sum)
# ---------------------------------------------------------------------------------------------------------------
def test_dp_sgd_clips_each_example_in_l2_before_summing():
    """Sensitivity C of DP-SGD's noisy sum holds because every per-example gradient is scaled to l2 norm <= C
    *before* the sum. One full-batch step (q = 1, normalizer 1, step 1, negligible noise) from 0 on f(x; z) =
    -<x, z> moves x to sum_i clip_C(z_i): with C = 1 and z = (3, 4, 0), (0, 0, 10), (0.1, 0.2, 0.2) that is
    (0.6, 0.8, 0) + (0, 0, 1) + (0.1, 0.2, 0.2). Clipping in l_inf, or clipping the sum, gives other points."""
    Z = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 10.0], [0.1, 0.2, 0.2]])
    with noise_scaled(1e-12):
        res = run_dp_sgd(_LinearD(3), Dataset(Z), epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0),
                         sampling_rate=1.0, steps=1, clip=1.0, step_size=1.0, normalizer=1.0, x0=np.zeros(3),
                         accountant="rdp")
    np.testing.assert_allclose(res.x, [0.7, 1.0, 1.2], rtol=0, atol=1e-9)
    assert res.info["n_clipped"] == 2


@pytest.mark.parametrize("clip", [0.25, 4.0])
def test_dp_sgd_ledger_records_the_noise_multiplier_whatever_the_clipping_norm(clip):
    """The noise std of DP-SGD is sigma C for sensitivity C, so the ledger's subsampled Gaussian events carry the
    multiplier sigma (not the std sigma C), and the run certifies exactly the target it was calibrated for (within
    the calibration's relative 1e-9), for a clipping norm below and above 1."""
    rng = np.random.default_rng(3)
    Z = rng.standard_normal((200, 3))
    eps, delta = 1.0, 1e-5
    res = run_dp_sgd(_LinearD(3), Dataset(Z), epsilon=eps, delta=delta, rng=np.random.default_rng(0),
                     sampling_rate=0.1, steps=20, clip=clip, step_size=0.1, accountant="rdp")
    (event,) = res.ledger.events
    assert event.noise_multiplier == res.params["noise_multiplier"]
    assert event.count == 20 and event.sampling_rate == 0.1
    assert res.certified_epsilon(delta, "rdp") == pytest.approx(eps, rel=1e-9)
