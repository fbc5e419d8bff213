"""Tests for Spec Z1-Z3 (dpsco_lib.algorithms.sparse)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from dpsco_lib.algorithms.sparse import (
    SparseLogisticSampler,
    bias_reduced_gradient,
    bias_reduced_second_moment,
    gaussian_matrix_sparse_norm_bound,
    level_probabilities,
    output_perturbation_sensitivity,
    regularized_erm,
    run_bias_reduced_dp_sgd,
    run_output_perturbation,
    sample_sparse_vectors,
    sparse_mean_estimate,
    sparse_mean_estimate_cs,
)
from dpsco_lib.geometry.sets import L1Ball, project_l1_ball
from dpsco_lib.privacy.accounting.budget import gaussian_noise_multiplier
from dpsco_lib.privacy.audit import audit_mechanism, mu_gdp_lower_bound
from dpsco_lib.privacy.mechanisms import gaussian_sigma_analytic
from dpsco_lib.problems import Dataset, LogisticRegression


def _logistic(d=30, s=3, lam=0.1, seed=0, pop=2000):
    w = np.zeros(d)
    w[:s] = 2.0
    R = math.sqrt(s) / (2 * lam)
    return LogisticRegression(L1Ball(d, R), 2.0, feature_bound=1.0, sampler=SparseLogisticSampler(w, s),
                              population_size=pop, population_seed=seed)


# ---------------------------------------------------------------- Z1
def test_z1_laplace_is_projection_of_noisy_mean_and_error_bound():
    rng = np.random.default_rng(0)
    Z = sample_sparse_vectors(40, 500, 3, 2.0, rng)
    r = sparse_mean_estimate(Z, sparsity=3, norm_bound=2.0, epsilon=0.7, rng=np.random.default_rng(9))
    scale = 2 * 2.0 * math.sqrt(3) / (40 * 0.7)
    assert r.params["noise_scale"] == pytest.approx(scale, rel=1e-15)
    xi = np.random.default_rng(9).laplace(0, scale, size=500)
    zbar = np.asarray(Z.mean(axis=0)).ravel()
    R = 2.0 * math.sqrt(3)
    np.testing.assert_array_equal(r.x, project_l1_ball(zbar + xi, R))
    assert np.abs(r.x).sum() <= R * (1 + 1e-12)
    # deterministic bound ||zhat - zbar||^2 <= 4 R ||xi||_inf
    assert np.sum((r.x - zbar) ** 2) <= 4 * R * np.abs(xi).max()
    assert r.ledger.epsilon(0.0, "basic") == 0.7
    # dense input gives the same output (up to the summation order of the mean)
    r2 = sparse_mean_estimate(Z.toarray(), sparsity=3, norm_bound=2.0, epsilon=0.7, rng=np.random.default_rng(9))
    np.testing.assert_allclose(r.x, r2.x, rtol=0, atol=1e-13)


def test_z1_gaussian_calibration_and_certificate():
    Z = sample_sparse_vectors(30, 100, 2, 1.0, np.random.default_rng(1))
    r = sparse_mean_estimate(Z, sparsity=2, norm_bound=1.0, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(0))
    assert r.params["noise_scale"] == pytest.approx(gaussian_sigma_analytic(2.0 / 30, epsilon=1.0, delta=1e-6),
                                                    rel=1e-12)
    assert r.params["noise_scale"] == (2.0 / 30) * gaussian_noise_multiplier(1.0, 1e-6).value
    assert r.certified_epsilon(1e-6) <= 1.0
    with pytest.raises(ValueError, match="accountant"):
        sparse_mean_estimate(Z, sparsity=2, norm_bound=1.0, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(0),
                             accountant="optimal")


@pytest.mark.parametrize(
    "Z, kw, name",
    [
        (np.ones((3, 5)), {}, "sparsity"),
        (np.array([[3.0, 0, 0, 0, 0]]), {}, "norm"),
        (sp.csr_matrix(np.array([[np.inf, 0, 0, 0, 0]])), {}, "finite"),
        (np.zeros((3, 5)), {"epsilon": -1.0}, "epsilon"),
        (np.zeros((3, 5)), {"delta": 1.0}, "delta"),
        (np.zeros((3, 5)), {"sparsity": 0}, "sparsity"),
        (np.zeros((3, 5)), {"norm_bound": 0.0}, "norm_bound"),
    ],
)
def test_z1_bad_inputs(Z, kw, name):
    base = dict(sparsity=2, norm_bound=1.0, epsilon=1.0, rng=np.random.default_rng(0))
    base.update(kw)
    with pytest.raises(ValueError, match=name):
        sparse_mean_estimate(Z, **base)


def test_z1_explicit_zeros_in_sparse_input_are_not_counted():
    M = sp.csr_matrix((np.array([0.5, 0.0, 0.0]), np.array([0, 1, 2]), np.array([0, 3])), shape=(1, 4))
    r = sparse_mean_estimate(M, sparsity=1, norm_bound=1.0, epsilon=1.0, rng=np.random.default_rng(0))
    assert r.x.shape == (4,)


@pytest.mark.statistical
def test_z1_laplace_audit_and_broken_variant():
    # d = 2, s = 1, L = 1, n = 5: replace -e1 by +e1 (l1 change 2 = 2 L sqrt(s)). alpha = 0.05 per audit.
    S = np.zeros((5, 2))
    S[0, 0] = -1.0
    Sp = S.copy()
    Sp[0, 0] = 1.0

    def mech(eps_run):
        def run(Z, rng, size):
            return np.array([sparse_mean_estimate(Z, sparsity=1, norm_bound=1.0, epsilon=eps_run, rng=rng).x[0]
                             for _ in range(size)])

        return run

    ok = audit_mechanism(mech(1.0), S, Sp, np.asarray, 6000, 0.05, np.random.default_rng(3), claimed_epsilon=1.0)
    assert not ok.violation
    bad = audit_mechanism(mech(2.0), S, Sp, np.asarray, 6000, 0.05, np.random.default_rng(4), claimed_epsilon=1.0)
    assert bad.violation, bad.epsilon_lower_bound


@pytest.mark.statistical
def test_z1_gaussian_mu_audit_and_broken_variant():
    S = np.zeros((4, 3))
    S[0, 0] = -1.0
    Sp = S.copy()
    Sp[0, 0] = 1.0
    eps, delta = 1.0, 1e-5
    mu = (2 / 4) / gaussian_sigma_analytic(2 / 4, epsilon=eps, delta=delta)

    def mech(scale):
        def run(Z, rng, size):
            out = []
            for _ in range(size):
                r = sparse_mean_estimate(Z, sparsity=1, norm_bound=1.0, epsilon=eps, delta=delta, rng=rng)
                if scale == 1.0:
                    out.append(r.x[0])
                else:  # broken variant: half the noise, same projection (radius 1 is never reached here)
                    m = r.info["empirical_mean"]
                    noise = rng.normal(0, r.params["noise_scale"] * scale, size=3)
                    out.append(project_l1_ball(m + noise, 1.0)[0])
            return np.array(out)

        return run

    ok = mu_gdp_lower_bound(mech(1.0), Sp, S, np.asarray, 0.0, 4000, 0.05, np.random.default_rng(5), claimed_mu=mu)
    assert not ok.violation
    bad = mu_gdp_lower_bound(mech(0.5), Sp, S, np.asarray, 0.0, 4000, 0.05, np.random.default_rng(6), claimed_mu=mu)
    assert bad.violation, (bad.mu_lower_bound, mu)


# ---------------------------------------------------------------- Z1, compressed sensing
def test_sparse_norm_bound_monotone():
    c1 = gaussian_matrix_sparse_norm_bound(50, 1000, 4, 1e-6)
    assert gaussian_matrix_sparse_norm_bound(100, 1000, 4, 1e-6) < c1
    assert gaussian_matrix_sparse_norm_bound(50, 10_000, 4, 1e-6) > c1
    assert gaussian_matrix_sparse_norm_bound(50, 1000, 4, 1e-3) < c1
    assert c1 > 1.0
    with pytest.raises(ValueError, match="k"):
        gaussian_matrix_sparse_norm_bound(50, 10, 11, 1e-3)


@pytest.mark.statistical
def test_sparse_norm_bound_holds_monte_carlo():
    # d = 8, k = 2, m = 6: compute sup over all 28 supports exactly; with fail_prob = 0.05 the number of
    # violations in 300 draws is Binomial(300, <= 0.05): P(count > 27) < 1e-3 (false alarm level).
    m, d, k = 6, 8, 2
    c = gaussian_matrix_sparse_norm_bound(m, d, k, 0.05)
    rng = np.random.default_rng(0)
    viol = 0
    for _ in range(300):
        A = rng.normal(0, 1 / math.sqrt(m), size=(m, d))
        top = max(np.linalg.norm(A[:, list(S)], 2) for S in itertools.combinations(range(d), k))
        viol += top > c
    assert viol <= stats.binom.ppf(1 - 1e-3, 300, 0.05)


def test_cs_variant_recovers_and_certifies():
    Z = sample_sparse_vectors(4000, 300, 3, 1.0, np.random.default_rng(2), spread=0.0)
    r = sparse_mean_estimate_cs(Z, sparsity=3, norm_bound=1.0, epsilon=2.0, delta=1e-5, rng=np.random.default_rng(0))
    zbar = r.info["empirical_mean"]
    assert r.params["n_measurements"] == math.ceil(4 * 3 * math.log(100))
    assert np.linalg.norm(r.x - zbar) < 0.1 * np.linalg.norm(zbar)
    assert r.info["matrix_failure"] == 5e-6
    assert r.ledger.epsilon(r.info["mechanism_delta"]) <= 2.0 * (1 + 1e-9)
    with pytest.raises(ValueError, match="matrix_failure"):
        sparse_mean_estimate_cs(Z, sparsity=3, norm_bound=1.0, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0),
                                matrix_failure=1e-5)


# ---------------------------------------------------------------- Z2
def test_output_perturbation_sensitivity_holds_empirically():
    prob = _logistic(d=30, s=3, lam=0.1)
    rng = np.random.default_rng(1)
    n, lam = 60, 0.1
    data = prob.sample(n, rng)
    x, gn = regularized_erm(prob, data, lam)
    assert gn < 1e-8
    sens = output_perturbation_sensitivity(n, lam, prob.L0, sparsity=3, smoothness=prob.L1)
    assert sens["l2"] == pytest.approx(1 / (0.1 * 60))
    assert sens["l1"] == pytest.approx(math.sqrt(6) * (0.25 + 0.2) / (2 * 0.01 * 60))
    assert np.abs(x).sum() <= sens["radius_l1"] + 1e-9
    other = prob.sample(20, rng)
    for j in range(20):
        Xp, yp = np.array(data.X), np.array(data.y)
        Xp[j], yp[j] = other.X[j], -other.y[j]
        from dpsco_lib.problems import Dataset

        xp, _ = regularized_erm(prob, Dataset(Xp, yp), lam)
        assert np.linalg.norm(x - xp) <= sens["l2"] + 1e-8
        assert np.abs(x - xp).sum() <= sens["l1"] + 1e-8


def test_output_perturbation_runs_and_certifies():
    prob = _logistic(d=20, s=2, lam=0.2)
    data = prob.sample(100, np.random.default_rng(0))
    for delta in (0.0, 1e-5):
        r = run_output_perturbation(prob, data, epsilon=1.0, delta=delta, lam=0.2, sparsity=2,
                                    rng=np.random.default_rng(3))
        assert np.abs(r.x).sum() <= r.params["radius_l1"] * (1 + 1e-12)
        assert r.certified_epsilon(delta) <= 1.0
    with pytest.raises(ValueError, match="sparsity"):
        run_output_perturbation(prob, data, epsilon=1.0, delta=0.0, lam=0.2, sparsity=1, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="lam"):
        run_output_perturbation(prob, data, epsilon=1.0, delta=0.0, lam=0.0, sparsity=2, rng=np.random.default_rng(0))


def test_sparse_runners_validate_their_public_boundary():
    from dataclasses import replace

    from dpsco_lib.problems import Dataset
    from dpsco_lib.problems.games import random_bilinear_game

    prob = _logistic(d=20, s=2, lam=0.2)
    data = prob.sample(100, np.random.default_rng(0))
    kw = dict(epsilon=1.0, delta=1e-5, sparsity=2)
    runs = [lambda p, d, **o: run_output_perturbation(p, d, **{**kw, "rng": np.random.default_rng(0), "lam": 0.2,
                                                               **o}),
            lambda p, d, **o: run_bias_reduced_dp_sgd(p, d, **{**kw, "rng": np.random.default_rng(0), "step_size": 0.1,
                                                             "eps0": 0.2, "max_steps": 5, **o})]
    bad_X = np.array(data.X)
    bad_X[0, 0] = np.nan
    for run in runs:
        with pytest.raises(TypeError, match="problem"):
            run(random_bilinear_game(3, 3, np.random.default_rng(0)), data)
        with pytest.raises(ValueError, match="data"):
            run(prob, bad_X)
        with pytest.raises(ValueError, match="bound"):
            run(prob, replace(data, X=np.asarray(data.X) * 10.0))
        with pytest.raises(TypeError, match="rng"):
            run(prob, data, rng=0)
        for eps in (0.0, math.nan, math.inf):
            with pytest.raises(ValueError, match="epsilon"):
                run(prob, data, epsilon=eps)
        for dl in (-0.1, 1.0, math.nan):
            with pytest.raises(ValueError, match="delta"):
                run(prob, data, delta=dl)
    with pytest.raises(ValueError, match="accountant"):
        runs[0](prob, data, accountant="optimal")
    a = runs[0](prob, data, accountant="best")
    b = runs[0](prob, data)
    np.testing.assert_array_equal(a.x, b.x)  # "best" is GDP for one Gaussian event
    assert isinstance(data, Dataset) and "certified_epsilon" not in b.info


# ---------------------------------------------------------------- Z3
def test_level_probabilities():
    p = level_probabilities(1000)
    assert p.size == 9 and 2 ** (p.size) <= 1000  # largest batch 2^(K+1) = 512 <= n
    assert p.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(p[1:] / p[:-1], 0.5)
    with pytest.raises(ValueError, match="n"):
        level_probabilities(1)


@pytest.mark.statistical
def test_bias_reduced_gradient_unbiased_when_noise_negligible():
    # eps0 huge: Z1 noise ~ 0 and the projection is inactive (means of unit-norm s-sparse rows lie in the
    # l1 ball), so E[G] = full gradient. 3000 draws; each coordinate checked with a 5-sigma z-test
    # (Bonferroni over d = 10: false alarm < 1e-5).
    prob = _logistic(d=10, s=2, lam=0.1)
    data = prob.sample(64, np.random.default_rng(0))
    x = np.full(10, 0.1)
    rng = np.random.default_rng(1)
    Gs = np.array([bias_reduced_gradient(prob, data, x, sparsity=2, eps0=1e9, rng=rng)[0] for _ in range(3000)])
    full = prob.mean_grad(x, data)
    se = Gs.std(axis=0) / math.sqrt(3000)
    assert np.all(np.abs(Gs.mean(0) - full) <= 5 * se + 1e-12)


def test_bias_reduced_step_epsilon_formula():
    prob = _logistic(d=10, s=2, lam=0.1)
    data = prob.sample(64, np.random.default_rng(0))
    _, e, k = bias_reduced_gradient(prob, data, np.zeros(10), sparsity=2, eps0=0.5, rng=np.random.default_rng(0),
                                    level=3)
    b = 16
    assert k == 3
    assert e == pytest.approx(math.log1p(b / 64 * math.expm1(1.0)) + math.log1p(math.expm1(0.5) / 64), rel=1e-14)


def test_bias_reduced_sgd_stops_by_filter_and_certifies():
    prob = _logistic(d=10, s=2, lam=0.1)
    data = prob.sample(256, np.random.default_rng(0))
    r = run_bias_reduced_dp_sgd(prob, data, epsilon=1.0, delta=1e-5, sparsity=2, step_size=0.1, eps0=0.2,
                                rng=np.random.default_rng(2))
    steps = r.info["steps"]
    assert r.info["stopped_by_filter"] and steps >= 1
    assert r.ledger.total_count == steps == r.info["levels"].size
    budgets = r.info["step_epsilons"]
    spend = math.sqrt(2 * math.log(1e5) * np.sum(budgets**2)) + 0.5 * np.sum(budgets**2)
    assert spend <= 1.0 and r.info["filter_spent"] == pytest.approx(spend)
    assert r.ledger.epsilon(1e-5) <= 1.0
    # same seed -> same run
    r2 = run_bias_reduced_dp_sgd(prob, data, epsilon=1.0, delta=1e-5, sparsity=2, step_size=0.1, eps0=0.2,
                                 rng=np.random.default_rng(2))
    np.testing.assert_array_equal(r.x, r2.x)
    with pytest.raises(ValueError, match="eps0"):
        run_bias_reduced_dp_sgd(prob, data, epsilon=1.0, delta=1e-5, sparsity=2, step_size=0.1, eps0=0.0,
                                rng=np.random.default_rng(2))
    with pytest.raises(ValueError, match="delta"):
        run_bias_reduced_dp_sgd(prob, data, epsilon=1.0, delta=0.0, sparsity=2, step_size=0.1, eps0=0.1,
                                rng=np.random.default_rng(2))


def test_bias_reduced_second_moment_matches_the_estimator_on_constant_records():
    # Records all equal to e_1: the function's per-level decomposition must agree with direct draws of G
    # (4000 draws; heavy tails, so a 15% relative tolerance; the exact value is deterministic).
    from dpsco_lib.problems import SparseHardLinear

    n, d, s, e0 = 256, 12, 2, 0.5
    prob = SparseHardLinear(d, 0.5, sparsity=s)
    X = np.zeros((n, d))
    X[:, 0] = 1.0
    data = prob.validate_data(Dataset(X, None))
    rng = np.random.default_rng(3)
    G = np.array([bias_reduced_gradient(prob, data, np.zeros(d), sparsity=s, eps0=e0, rng=rng)[0] for _ in range(4000)])
    m = bias_reduced_second_moment(n, d, sparsity=s, norm_bound=1.0, eps0=e0, draws=4000)
    assert m == pytest.approx(float(np.mean(np.sum(G**2, axis=1))), rel=0.15)
    # telescoping: E G = E of the Z1 release on the largest batch (2^(K+1) = 256 records), nearly e_1, while a
    # single-record release is shrunk towards 0; 5-sigma z-test on the first coordinate (false alarm < 1e-6)
    big = project_l1_ball(X[0] + rng.laplace(0.0, 2 * math.sqrt(s) / (n * e0), size=(4000, d)), math.sqrt(s))
    se = math.hypot(G[:, 0].std(), big[:, 0].std()) / math.sqrt(4000)
    assert abs(G[:, 0].mean() - big[:, 0].mean()) <= 5 * se
    assert m == bias_reduced_second_moment(n, d, sparsity=s, norm_bound=1.0, eps0=e0, draws=4000)
    assert bias_reduced_second_moment(n, d, sparsity=s, norm_bound=1.0, eps0=2 * e0) < m
    for kw, name in (({"eps0": 0.0}, "eps0"), ({"draws": 1}, "draws"), ({"norm_bound": -1.0}, "norm_bound")):
        with pytest.raises(ValueError, match=name):
            bias_reduced_second_moment(n, d, **{"sparsity": s, "norm_bound": 1.0, "eps0": e0, **kw})


def test_bias_reduced_sgd_auto_step_and_data_independent_stopping_time():
    from dpsco_lib.problems import SparseHardLinear

    prob = SparseHardLinear(12, 1.0, sparsity=2, radius=2.0)
    kw = {"epsilon": 1.0, "delta": 1e-5, "sparsity": 2, "eps0": 0.2}
    r = run_bias_reduced_dp_sgd(prob, prob.sample(512, np.random.default_rng(0)), step_size="auto",
                                rng=np.random.default_rng(4), **kw)
    T = r.info["steps"]
    sig2 = bias_reduced_second_moment(512, 12, sparsity=2, norm_bound=1.0, eps0=0.2)
    assert r.params["step_rule"] == "auto"
    assert r.params["step_size"] == pytest.approx(2.0 / math.sqrt(sig2 * T), rel=1e-12)
    # the levels, hence T, depend on the rng only: another data set of the same size gives the same sequence
    r2 = run_bias_reduced_dp_sgd(prob, prob.sample(512, np.random.default_rng(9)), step_size="auto",
                                 rng=np.random.default_rng(4), **kw)
    np.testing.assert_array_equal(r.info["levels"], r2.info["levels"])
    with pytest.raises(ValueError, match="step_size"):
        run_bias_reduced_dp_sgd(prob, prob.sample(64, np.random.default_rng(0)), step_size="fast",
                                rng=np.random.default_rng(4), **kw)
    with pytest.raises(ValueError, match="step_size"):
        run_bias_reduced_dp_sgd(prob, prob.sample(64, np.random.default_rng(0)), step_size=0.0,
                                rng=np.random.default_rng(4), **kw)


def test_z1_of_groups_is_bit_identical_to_the_reference_releases():
    # the batched releases of the bias-reduced gradient against four calls of the readable one-release path
    from dpsco_lib.algorithms import sparse as sp_mod

    G = np.random.default_rng(0).normal(size=(17, 9))
    for b in (2, 4, 16):
        ref_rng, fast_rng = np.random.default_rng(b), np.random.default_rng(b)
        ref = [sp_mod._z1_of_rows(G[lo:hi], 3, 1.0, 0.4, ref_rng)
               for lo, hi in ((0, b), (0, b // 2), (b // 2, b), (b, b + 1))]
        fast = sp_mod._z1_of_groups(G[: b + 1], b, 3, 1.0, 0.4, fast_rng)
        np.testing.assert_array_equal(np.stack(ref), fast)


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
