"""Checks added for the red-team round of the mutation suite (``mutation/mutants.py``, block ``_RED_TEAM``).

The red-team mutants were written against the privacy-critical code (mechanisms, accountants, private algorithms,
geometry) before looking at the tests; these are the checks for the ones the existing tests let survive. Each test
checks the property the bug violates (an exact value against a closed form, a bit-for-bit replay of the documented
recursion with the run's own noise, or a statistical test with a stated false-alarm probability), never the source
text. The mutant each one catches is named in its docstring; ``make mutants`` runs them against it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpsco_lib.algorithms.dp_sgd import run_dp_sgd
from dpsco_lib.algorithms.noisy_sgd import run_noisy_sgd
from dpsco_lib.geometry.sets import LpBall
from dpsco_lib.privacy.accounting.composition import max_composition_steps
from dpsco_lib.problems import Dataset
from dpsco_lib.problems.base import Problem
from dpsco_lib.testing import noise_scaled


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
# Basic composition's step count (mutant acc-max-steps-basic-ceil)
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("eps0", [0.3, 0.07, 1.0 / 3.0, 0.25, 0.011, 2.5])
def test_basic_composition_step_count_is_the_largest_count_within_the_budget(eps0):
    """Basic composition certifies k eps0-DP steps at k eps0: the count for a budget epsilon is the largest k with
    k eps0 <= epsilon (exact multiples admitted), so one more step would exceed the budget."""
    for epsilon in (1.0, 0.5, 2.0, 7.3):
        k = max_composition_steps(eps0, epsilon=epsilon, delta=0.0, method="basic")
        assert k * eps0 <= epsilon * (1 + 1e-12), (eps0, epsilon, k)
        assert (k + 1) * eps0 > epsilon, (eps0, epsilon, k)


# ---------------------------------------------------------------------------------------------------------------
# Noisy SGD: i.i.d. Gaussian noise on every coordinate (mutant alg-noisysgd-shared-noise)
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.statistical
@pytest.mark.parametrize("seed", [1, 2])
def test_noisy_sgd_noise_has_independent_coordinates(seed):
    """The Gaussian mechanism of noisy SGD adds N(0, sigma^2 I_d). With zero gradients, one full-batch step from the
    centre of a huge ball with step 1 releases x = -Z, so -x/sigma must look like d = 400 i.i.d. N(0, 1)
    draws (Kolmogorov-Smirnov, false-alarm probability 1e-4 per seed). One scalar draw added to every coordinate
    (the same noise released d times) leaves the directions orthogonal to (1, ..., 1) noiseless and is rejected."""
    d = 400
    data = Dataset(np.zeros((50, d)))
    res = run_noisy_sgd(_LinearD(d), data, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(seed), steps=1,
                        batch_size=50, step_size=1.0)
    z = -np.asarray(res.x) / res.params["sigma"]
    assert stats.kstest(z, "norm").pvalue > 1e-4


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


# ---------------------------------------------------------------------------------------------------------------
# GG-VR-SFW naive: a fresh GG noise vector for every release (mutant alg-gg-naive-noise-reuse)
# ---------------------------------------------------------------------------------------------------------------
def test_gg_vr_sfw_naive_releases_carry_pairwise_distinct_noise():
    """Each of the T + 1 releases nabla_t + Z_t is a GG mechanism only if Z_t is a fresh draw: with n copies of one
    record nabla_t = grad F(x_t) exactly (see test_mutation_catches), so Z_t / sigma_t = (release_t - grad F(x_t)) /
    (mult s_t) are the unit-scale noise vectors, i.i.d. from a continuous law, hence pairwise distinct with
    probability one. A draw reused by two releases would let their difference cancel the noise."""
    from dpsco_lib.algorithms.registry import get_algorithm

    rec = get_algorithm("F3 GG-VR-SFW naive")
    ex = rec.example(np.random.default_rng(0))
    prob, data = ex.args[0], ex.args[1]
    same = Dataset(np.repeat(np.asarray(data.X)[:1], data.n, axis=0), np.repeat(np.asarray(data.y)[:1], data.n))
    res = rec.runner(prob, same, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(1), trace=True, **ex.kwargs)
    est, eta = res.trace["estimate"], float(res.params["step_size"])
    sigmas = float(res.params["noise_multiplier"]) * np.asarray(res.trace["sensitivity"])
    x, units = np.zeros(prob.d), []
    for t in range(est.shape[0]):
        units.append((est[t] - prob.mean_grad(x, same)) / sigmas[t])
        x = (1.0 - eta) * x + eta * prob.feasible_set.lmo(est[t])
    U = np.asarray(units)
    assert U.shape[0] >= 3
    norms = np.linalg.norm(U, axis=1)
    gaps = np.linalg.norm(U[:, None, :] - U[None, :, :], axis=2) + np.eye(U.shape[0]) * norms.max()
    assert gaps.min() > 1e-6 * norms.max(), "two releases carry the same noise vector"


# ---------------------------------------------------------------------------------------------------------------
# Proximal method: the Gaussian noise of every inner step, at the recorded multiplier and sensitivity 2 L0/N
# (mutants alg-n1-prox-noise-two, alg-n1-prox-shared-noise)
# ---------------------------------------------------------------------------------------------------------------
def test_proximal_weakly_convex_first_subproblem_replays_with_its_recorded_gaussian_noise():
    """The first subproblem runs K noisy projected subgradient steps y <- Proj(y - 2/(mu (k + 1)) (grad f_S(y) +
    beta (y - x_0) + xi_k)) with fresh xi_k ~ N(0, sigma^2 I) and sigma = (2 L0/N) nu: the replace-one sensitivity
    2 L0/N of a mean subgradient over N records times the multiplier nu the ledger records. Replaying the run's own
    generator (tau first, then the K x d standard normals) must reproduce the first outer iterate."""
    from dpsco_lib.algorithms.registry import get_algorithm

    rec = get_algorithm("N1 proximal weakly convex")
    ex = rec.example(np.random.default_rng(0))
    prob, data = ex.args[0], ex.args[1]
    res = rec.runner(prob, data, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(1), trace=True, **ex.kwargs)
    prm = res.params
    K, N, T, beta, mu = prm["inner_steps"], prm["batch_size"], prm["T"], prm["beta"], prm["mu"]
    (block,) = res.ledger.events
    nu = {e.noise_multiplier for part in block.parts for e in part}
    assert len(nu) == 1
    sigma = 2.0 * float(prob.lipschitz_l2) / N * nu.pop()
    replay = np.random.default_rng(1)
    replay.integers(0, T)  # the output index tau is drawn first
    xi = replay.standard_normal((K, prob.d)) * sigma
    x0 = np.asarray(prob.feasible_set.center(), dtype=np.float64)
    k = np.arange(1, K + 1, dtype=np.float64)
    w = k / k.sum()
    y, avg = x0.copy(), np.zeros_like(x0)
    for i in range(K):
        avg += w[i] * y
        g = prob.mean_grad(y, data[:N]) + beta * (y - x0) + xi[i]
        y = prob.feasible_set.project(y - 2.0 / (mu * (k[i] + 1.0)) * g)
    np.testing.assert_allclose(res.trace["x"][1], avg, rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------------------------------------------------------
# Algorithm 4: the score range bounds the change of a gap estimate (mutants alg-a4-score-norm, alg-a4-loss-bound)
# ---------------------------------------------------------------------------------------------------------------
def test_boosted_score_ranges_never_undercut_the_lipschitz_and_boundedness_bounds():
    """A record moves f(x_i, y^_i; z) - f(x^_i, y_i; z) within [-r_i, r_i] only for r_i at least the smaller of the two
    bounds the module proves: L0 (||x_i - x^_i||_p + ||y^_i - y_i||_1) (Lipschitz in the setup norms: l_p for x, l_1
    on the y simplex) and 2M when every loss lies in [-M, M] (two losses differ by at most 2M). A smaller r_i would
    calibrate the selection to a sensitivity the proof does not give. Checked with and without a loss bound M (the
    bilinear game's losses lie in [-a, a], a = max |A| + s)."""
    from dpsco_lib.algorithms.registry import get_algorithm
    from dpsco_lib.geometry.norms import lp_norm

    rec = get_algorithm("A4 boosted")
    ex = rec.example(np.random.default_rng(0))
    prob = ex.args[0]
    for M in (None, float(prob.a_max)):
        res = rec.runner(*ex.args, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(1), loss_bound=M, **ex.kwargs)
        info = res.info
        lip = prob.L0 * (lp_norm(info["candidates_x"] - info["best_responses_x"], prob.p, axis=1)
                         + lp_norm(info["best_responses_y"] - info["candidates_y"], 1.0, axis=1))
        bound = lip if M is None else np.minimum(lip, 2.0 * M)
        assert np.all(np.asarray(info["score_ranges"]) >= bound * (1 - 1e-12))
        sens = 2.0 * float(np.max(bound)) / info["split"]["n_gap"]
        assert res.params["score_sensitivity_used"] >= sens * (1 - 1e-12)


# ---------------------------------------------------------------------------------------------------------------
# Compressed-sensing sparse mean: noise for the replace-one sensitivity 2 c L/n (mutant alg-z1-cs-replace-two)
# ---------------------------------------------------------------------------------------------------------------
def test_sparse_mean_cs_release_replays_with_noise_for_the_replace_one_sensitivity():
    """Replacing one record moves the mean by a 2s-sparse vector of l2 norm <= 2L/n, hence A z_bar by <= c 2L/n
    (c = gaussian_matrix_sparse_norm_bound(m, d, 2s, beta)), so the Gaussian noise on b = A z_bar + xi has std
    sigma = (2 c L/n) nu with nu the multiplier the ledger records. Replaying the run's generator (A, then xi) with
    that sigma and re-solving the documented recovery min ||z||_1 s.t. ||A z - b||_2 <= eta must give the output."""
    import cvxpy as cp

    from dpsco_lib.algorithms.sparse import (
        gaussian_matrix_sparse_norm_bound,
        sample_sparse_vectors,
        sparse_mean_estimate_cs,
    )

    n, d, s, L = 400, 40, 2, 1.0
    Z = sample_sparse_vectors(n, d, s, L, np.random.default_rng(2), spread=0.0)
    res = sparse_mean_estimate_cs(Z, sparsity=s, norm_bound=L, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(4))
    m, beta = res.params["n_measurements"], res.info["matrix_failure"]
    (event,) = res.ledger.events
    sigma = 2.0 * gaussian_matrix_sparse_norm_bound(m, d, 2 * s, beta) * L / n * event.noise_multiplier
    replay = np.random.default_rng(4)
    A = replay.normal(0.0, 1.0 / math.sqrt(m), size=(m, d))
    b = A @ res.info["empirical_mean"] + replay.normal(0.0, sigma, size=m)
    lg = math.log(1.0 / 0.05)
    eta = sigma * math.sqrt(m + 2.0 * math.sqrt(m * lg) + 2.0 * lg)
    assert res.params["eta"] == pytest.approx(eta, rel=1e-12)
    z = cp.Variable(d)
    cp.Problem(cp.Minimize(cp.norm1(z)), [cp.norm2(A @ z - b) <= eta]).solve(solver=cp.CLARABEL)
    np.testing.assert_allclose(res.x, z.value, rtol=1e-6, atol=1e-8)
