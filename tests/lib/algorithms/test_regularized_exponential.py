"""Regularized exponential mechanism (Spec R1, R2): sampler vs quadrature, exact GDP trade-off, audit, utility.

Statistical tests run at fixed seeds; each states its false-alarm level (the probability that a correct
implementation fails it, were the seed random). Every check can fail: the sampler tests detect a wrong
stationary law (e.g. ignoring the constraint or the regularizer), the trade-off tests compare with the
closed-form Gaussian curve, and the audit catches a mechanism whose k is 4x too large for its claimed mu.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpsco_lib.algorithms.regularized_exponential import (
    LinearLossProblem,
    LogisticRegressionProblem,
    exact_tradeoff_curve_1d,
    gdp_mu_star,
    logistic_regression_data,
    noisy_gd_theory_params,
    pure_exp_theory_params,
    regularized_exp_mu_gdp,
    regularized_exp_theory_params,
    run_noisy_gradient_descent,
    run_pure_exponential_mechanism,
    run_regularized_exponential_mechanism,
    sample_regularized_exponential,
)
from dpsco_lib.algorithms.samplers import proximal_sampler_steps
from dpsco_lib.privacy.accounting import gdp_delta, gdp_tradeoff
from dpsco_lib.privacy.audit import mu_gdp_lower_bound

P_MIN = 1e-3  # false-alarm level of each goodness-of-fit test


@pytest.fixture(scope="module")
def logistic_1d():
    rng = np.random.default_rng(11)
    prob = LogisticRegressionProblem(d=1, radius=1.0)
    return prob, logistic_regression_data(30, 1, rng, signal=3.0)


@pytest.fixture(scope="module")
def logistic_2d():
    rng = np.random.default_rng(12)
    prob = LogisticRegressionProblem(d=2, radius=1.0)
    return prob, logistic_regression_data(40, 2, rng, signal=2.0)


def _potential(prob, data, k, mu):
    def u(x):
        x = np.atleast_2d(x)
        return k * (prob.objective(x, data) + 0.5 * mu * np.sum(x * x, axis=1))

    return u


# ---------------------------------------------------------------------------------------------------------
# the sampler against numerical integration
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.statistical
def test_sampler_matches_quadrature_d1(logistic_1d):
    """KS and binned chi-square against the density normalized by scipy.integrate.quad (d = 1).

    k = 20, mu = 0.5 on [-1, 1]: the constrained optimum lies near the boundary, so a sampler that
    mishandled the constraint or the regularizer would fail.
    """
    prob, data = logistic_1d
    k, mu = 20.0, 0.5
    x = sample_regularized_exponential(prob, data, k=k, mu=mu, rng=np.random.default_rng(1), n_samples=20_000)
    u = _potential(prob, data, k, mu)
    u0 = float(u(np.array([[0.0]]))[0])
    dens = lambda t: math.exp(-(float(u(np.array([[t]]))[0]) - u0))  # noqa: E731
    Z = integrate.quad(dens, -1.0, 1.0, epsabs=0, epsrel=1e-11)[0]
    edges = np.linspace(-1.0, 1.0, 41)
    cell = np.array(
        [integrate.quad(dens, a, b, epsabs=0, epsrel=1e-11)[0] for a, b in zip(edges[:-1], edges[1:], strict=True)]
    )
    assert abs(cell.sum() / Z - 1) < 1e-9
    cdf_pts = np.concatenate([[0.0], np.cumsum(cell)]) / Z
    # KS against the exact CDF on a fine grid (quad on 800 cells, linear interpolation)
    fine = np.linspace(-1.0, 1.0, 801)
    sub = np.array(
        [integrate.quad(dens, a, b, epsabs=0, epsrel=1e-10)[0] for a, b in zip(fine[:-1], fine[1:], strict=True)]
    )
    fine_cdf = np.concatenate([[0.0], np.cumsum(sub)]) / Z
    ks = stats.kstest(x[:, 0], lambda t: np.interp(t, fine, fine_cdf))
    assert ks.pvalue > P_MIN, ks
    counts = np.histogram(x[:, 0], edges)[0]
    probs = np.diff(cdf_pts)
    keep = probs * x.shape[0] >= 5
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(probs[keep], probs[~keep].sum()) * x.shape[0]
    obs, exp = obs[exp > 0], exp[exp > 0]
    chi = stats.chisquare(obs, exp * obs.sum() / exp.sum())
    assert chi.pvalue > P_MIN, chi


@pytest.mark.statistical
def test_sampler_matches_quadrature_d2(logistic_2d):
    """Chi-square on 24 polar cells of the disc, cell probabilities by scipy.integrate.dblquad (d = 2)."""
    prob, data = logistic_2d
    k, mu = 15.0, 0.3
    x = sample_regularized_exponential(prob, data, k=k, mu=mu, rng=np.random.default_rng(2), n_samples=20_000)
    assert np.all(np.linalg.norm(x, axis=1) <= 1.0 + 1e-12)
    u = _potential(prob, data, k, mu)
    u0 = float(u(np.zeros((1, 2)))[0])

    def dens_polar(r, th):
        p = np.array([[r * math.cos(th), r * math.sin(th)]])
        return math.exp(-(float(u(p)[0]) - u0)) * r

    r_edges = np.array([0.0, 0.5, 0.8, 1.0])
    t_edges = np.linspace(-math.pi, math.pi, 9)
    probs = np.array(
        [
            integrate.dblquad(dens_polar, t0, t1, r0, r1, epsabs=0, epsrel=1e-8)[0]
            for r0, r1 in zip(r_edges[:-1], r_edges[1:], strict=True)
            for t0, t1 in zip(t_edges[:-1], t_edges[1:], strict=True)
        ]
    )
    probs /= probs.sum()
    r = np.linalg.norm(x, axis=1)
    th = np.arctan2(x[:, 1], x[:, 0])
    ri = np.clip(np.searchsorted(r_edges, r, side="right") - 1, 0, 2)
    ti = np.clip(np.searchsorted(t_edges, th, side="right") - 1, 0, 7)
    counts = np.bincount(ri * 8 + ti, minlength=24)
    exp = probs * x.shape[0]
    keep = exp >= 5
    obs = np.append(counts[keep], counts[~keep].sum())
    ex = np.append(exp[keep], exp[~keep].sum())
    obs, ex = obs[ex > 0], ex[ex > 0]
    chi = stats.chisquare(obs, ex * obs.sum() / ex.sum())
    assert chi.pvalue > P_MIN, chi


@pytest.mark.statistical
def test_sampler_linear_loss_is_truncated_gaussian():
    """Linear loss: nu is N(-G zbar/mu, 1/(k mu)) truncated to [-R, R]; KS against scipy.stats.truncnorm."""
    prob = LinearLossProblem(d=1, radius=0.5)
    z = np.array([[1.0], [0.8], [0.9], [-0.2]])
    k, mu = 30.0, 1.0
    x = sample_regularized_exponential(prob, z, k=k, mu=mu, rng=np.random.default_rng(3), n_samples=20_000)
    loc, sd = -z.mean() / mu, 1 / math.sqrt(k * mu)
    ks = stats.kstest(x[:, 0], stats.truncnorm((-0.5 - loc) / sd, (0.5 - loc) / sd, loc=loc, scale=sd).cdf)
    assert ks.pvalue > P_MIN, ks


@pytest.mark.statistical
def test_sampler_on_a_box_is_product_of_truncated_gaussians():
    """K = [-0.4, 0.4]^2 (a non-ball FeasibleSet, corners and faces): for linear losses nu is a product of
    truncated normals; KS per coordinate (Bonferroni, each at P_MIN / 2) and independence (correlation)."""
    from dpsco_lib.geometry.sets import LpBall

    K = LpBall(2, math.inf, 0.4)
    prob = LinearLossProblem(d=2, feasible_set=K)
    z = np.array([[0.6, -0.7], [0.9, 0.1], [0.5, -0.5]])
    k, mu = 20.0, 1.0
    x = sample_regularized_exponential(prob, z, k=k, mu=mu, rng=np.random.default_rng(4), n_samples=20_000)
    assert np.all(np.abs(x) <= 0.4)
    sd = 1 / math.sqrt(k * mu)
    for j in range(2):
        loc = -z[:, j].mean() / mu
        law = stats.truncnorm((-0.4 - loc) / sd, (0.4 - loc) / sd, loc=loc, scale=sd)
        ks = stats.kstest(x[:, j], law.cdf)
        assert ks.pvalue > P_MIN / 2, (j, ks)
    assert abs(np.corrcoef(x.T)[0, 1]) < 4 / math.sqrt(x.shape[0])


def test_sampler_is_deterministic(logistic_1d):
    prob, data = logistic_1d
    a = sample_regularized_exponential(prob, data, k=5.0, mu=0.5, rng=np.random.default_rng(7), n_samples=50)
    b = sample_regularized_exponential(prob, data, k=5.0, mu=0.5, rng=np.random.default_rng(7), n_samples=50)
    np.testing.assert_array_equal(a, b)


def test_proximal_sampler_steps_closed_form():
    # eta = 1/(d (L - m)) = 1/(2*3); LSI: log(osc/(2 tau^2)) / (2 log(1 + eta m)) beats the Poincare route
    # (pi^2/D^2 < m for D = 10); with m = 0 only the Poincare route applies
    st = proximal_sampler_steps(m=1.0, L=4.0, d=2, diameter=10.0, osc_bound=10.0, tv_target=1e-2)
    assert st.step_size == pytest.approx(1 / 6)
    n_lsi = math.log(10.0 / (2e-4)) / (2 * math.log1p(1 / 6))
    assert st.route == "lsi" and st.n_steps == math.ceil(n_lsi)
    pure = proximal_sampler_steps(m=0.0, L=4.0, d=2, diameter=2.0, osc_bound=10.0, tv_target=1e-2)
    n_pi = (10.0 + math.log(1 / (4e-4))) / (2 * math.log1p(pure.step_size * math.pi**2 / 4))
    assert pure.route == "poincare" and pure.n_steps == math.ceil(n_pi)


# ---------------------------------------------------------------------------------------------------------
# privacy: exact trade-off curve (d = 1) vs the mu-GDP bound, and an audit
# ---------------------------------------------------------------------------------------------------------

ALPHA = np.linspace(0.0, 1.0, 401)


def test_exact_tradeoff_gaussian_oracle():
    """K much wider than the spread: the two laws are Gaussians shifted by mu_GDP sd, T = G_mu (closed form)."""
    prob = LinearLossProblem(d=1, radius=40.0)
    z = np.array([[1.0], [0.5], [0.0], [-0.5], [0.3]])
    zp = z.copy()
    zp[0] = -1.0
    k, mu = 25.0, 1.0
    mu_gdp = regularized_exp_mu_gdp(n=5, G=1.0, k=k, mu=mu)
    assert mu_gdp == pytest.approx(2 * math.sqrt(25) / 5)
    t = exact_tradeoff_curve_1d(prob, z, zp, k=k, mu=mu, alpha=ALPHA, n_grid=400_001)
    np.testing.assert_allclose(t, gdp_tradeoff(mu_gdp, alpha=ALPHA), atol=2e-6)


@pytest.mark.parametrize("kind", ["linear", "logistic"])
def test_tradeoff_curve_above_gdp_bound(kind):
    """Seed 003 Thm 1/3: T(nu_D || nu_D') >= G_{mu_GDP} on the whole alpha grid (both orders of the pair).

    Linear losses are the worst case (the curve nearly equals the bound, so the check is sharp); the curve
    must also fall below G_{mu_GDP/2}, i.e. a claim with mu twice too small is refuted.
    """
    n, k, mu = 8, 40.0, 2.0
    if kind == "linear":
        prob = LinearLossProblem(d=1, radius=1.0)
        z = np.array([[1.0], [0.2], [-0.4], [0.9], [0.1], [-1.0], [0.5], [0.3]])
        zp = z.copy()
        zp[0] = -1.0
    else:
        prob = LogisticRegressionProblem(d=1, radius=1.0)
        a = np.array([[1.0], [0.4], [-0.7], [0.9], [0.2], [-1.0], [0.6], [0.3]])
        b = np.array([1.0, 1.0, -1.0, 1.0, -1.0, 1.0, 1.0, -1.0])
        z, zp = (a, b), (a.copy(), b.copy())
        zp[0][0], zp[1][0] = -1.0, 1.0
        zp = (zp[0], zp[1])
    mu_gdp = regularized_exp_mu_gdp(n=n, G=prob.lipschitz, k=k, mu=mu)
    bound = gdp_tradeoff(mu_gdp, alpha=ALPHA)
    for p, q in ((z, zp), (zp, z)):
        t = exact_tradeoff_curve_1d(prob, p, q, k=k, mu=mu, alpha=ALPHA)
        assert np.all(t >= bound - 1e-7), float(np.min(t - bound))
    if kind == "linear":
        t = exact_tradeoff_curve_1d(prob, z, zp, k=k, mu=mu, alpha=ALPHA)
        assert np.max(t - bound) < 0.02  # nearly tight
        assert np.min(t - gdp_tradeoff(mu_gdp / 2, alpha=ALPHA)) < -0.05  # a 2x-too-small claim is violated


@pytest.mark.statistical
def test_gdp_audit_passes_and_catches_broken_variant():
    """mu_gdp_lower_bound on sampler outputs (alpha = 1e-3): <= claimed mu for the mechanism; a variant
    sampling with k 4x too large (true mu_GDP twice the claim) is caught."""
    prob = LinearLossProblem(d=1, radius=1.0)
    z = np.array([[1.0], [0.2], [-0.4], [0.9], [0.1], [-1.0], [0.5], [0.3], [0.0], [-0.3]])
    zp = z.copy()
    zp[0] = -1.0
    n, k, mu = 10, 25.0, 1.0
    claimed = regularized_exp_mu_gdp(n=n, G=1.0, k=k, mu=mu)
    assert claimed == pytest.approx(1.0)

    def mech(k_used):
        def run(data, rng, m):
            return sample_regularized_exponential(prob, data, k=k_used, mu=mu, rng=rng, n_samples=m)[:, 0]

        return run

    t_mid = float(-(z.mean() + zp.mean()) / (2 * mu))  # midpoint of the two (untruncated) means -zbar/mu
    good = mu_gdp_lower_bound(
        mech(k), z, zp, lambda o: o, t_mid, 20_000, 1e-3, np.random.default_rng(5), claimed_mu=claimed
    )
    assert 0.8 < good.mu_lower_bound <= claimed and not good.violation, good
    bad = mu_gdp_lower_bound(
        mech(4 * k), z, zp, lambda o: o, t_mid, 20_000, 1e-3, np.random.default_rng(6), claimed_mu=claimed
    )
    assert bad.violation and bad.mu_lower_bound > 1.5, bad


# ---------------------------------------------------------------------------------------------------------
# utility (Spec R2)
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.statistical
@pytest.mark.parametrize("d", [1, 3])
def test_utility_at_most_d_over_k(d):
    """Lemma 2: E_nu f_mu - min_K f_mu <= d/k for f_mu = f + mu||x||^2/2 (mean of 2000 draws - 4 SE), and
    E f - min f <= d/k + mu R^2/2. In this (interior, well-curved) regime the value is close to d/(2k)
    (Laplace), which shows the bound is not vacuous."""
    rng = np.random.default_rng(20 + d)
    prob = LogisticRegressionProblem(d=d, radius=2.0)
    data = logistic_regression_data(100, d, rng, signal=0.5)
    k, mu = 400.0, 0.2
    x = sample_regularized_exponential(prob, data, k=k, mu=mu, rng=rng, n_samples=2000)
    f = prob.objective(x, data)
    fmu = f + 0.5 * mu * np.sum(x * x, axis=1)
    _, fmu_star = prob.minimize(data, mu)
    _, f_star = prob.minimize(data, 0.0)
    gap = fmu - fmu_star
    assert np.all(gap >= -1e-7)
    se = gap.std(ddof=1) / math.sqrt(gap.size)
    assert gap.mean() - 4 * se <= d / k
    assert gap.mean() + 4 * se >= 0.25 * d / k
    assert f.mean() - f_star <= d / k + mu * 2.0**2 / 2


# ---------------------------------------------------------------------------------------------------------
# theory parameters, mechanisms, ledgers
# ---------------------------------------------------------------------------------------------------------


def test_theory_params_closed_form():
    eps, delta = 1.0, 1e-5
    m_star = gdp_mu_star(eps, delta=delta)
    assert gdp_delta(m_star, epsilon=eps) <= delta
    assert gdp_delta(m_star * (1 + 1e-9), epsilon=eps) > delta
    assert gdp_mu_star(eps, delta=delta, accountant="best") == m_star  # "best" resolves to exact GDP
    assert gdp_mu_star(eps, delta=delta, accountant="rdp") < m_star
    with pytest.raises(TypeError):
        gdp_mu_star(eps, delta)  # keyword-only after epsilon
    n, d, G, D = 1000, 10, 1.0, 2.0
    tp = regularized_exp_theory_params(n, d, G, D, eps, delta, radius=1.0)
    assert tp.k == pytest.approx(math.sqrt(d) * n * m_star / math.sqrt(2))
    assert tp.mu_gdp == pytest.approx(m_star, rel=1e-12)
    assert tp.excess_bound == pytest.approx(2 * math.sqrt(2 * d) * G * 1.0 / (n * m_star), rel=1e-12)
    tp_seed = regularized_exp_theory_params(n, d, G, D, eps, delta)  # R = D (seed 003 Thm 3)
    assert tp_seed.excess_bound == pytest.approx(2 * math.sqrt(2 * d) * G * D / (n * m_star), rel=1e-12)
    assert pure_exp_theory_params(n, G, D, eps).k == pytest.approx(eps * n / (2 * G * D))
    ngd = noisy_gd_theory_params(n, d, G, D, eps, delta)
    assert ngd.T == math.ceil(n**2 * m_star**2 / (4 * d))
    assert math.sqrt(ngd.T) / ngd.noise_multiplier == pytest.approx(m_star, rel=1e-12)
    assert ngd.mu_gdp == pytest.approx(m_star, rel=1e-12)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ngd.T = 3  # type: ignore[misc]


def test_run_mechanism_certifies_target():
    rng = np.random.default_rng(30)
    prob = LogisticRegressionProblem(d=2, radius=1.0)
    data = logistic_regression_data(100, 2, rng)
    eps, delta = 1.0, 1e-5
    res = run_regularized_exponential_mechanism(prob, data, epsilon=eps, delta=delta, rng=np.random.default_rng(1))
    assert res.x.shape == (2,) and np.linalg.norm(res.x) <= 1.0 + 1e-12
    assert res.ledger.epsilon(res.info["delta_mechanism"], method="gdp") <= eps
    assert res.certified_epsilon(res.info["delta_mechanism"]) <= eps
    assert "certified_epsilon" not in res.info
    assert res.info["delta_mechanism"] + res.info["delta_sampler"] == pytest.approx(delta)
    assert res.info["mu_gdp"] == pytest.approx(
        regularized_exp_mu_gdp(n=100, G=1.0, k=res.params["k"], mu=res.params["mu"])
    )
    again = run_regularized_exponential_mechanism(prob, data, epsilon=eps, delta=delta, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(res.x, again.x)
    # explicit (k, mu) that overspend are refused
    with pytest.raises(ValueError, match="not"):
        run_regularized_exponential_mechanism(prob, data, epsilon=eps, delta=delta, rng=rng, k=1e6, mu=1e-3)


def test_baselines_certify_target():
    rng = np.random.default_rng(31)
    prob = LogisticRegressionProblem(d=2, radius=1.0)
    data = logistic_regression_data(200, 2, rng)
    eps, delta = 1.0, 1e-5
    ngd = run_noisy_gradient_descent(prob, data, epsilon=eps, delta=delta, rng=rng)
    assert ngd.ledger.epsilon(delta, method="gdp") <= eps
    assert ngd.certified_epsilon(delta) <= eps
    assert np.linalg.norm(ngd.x) <= 1.0 + 1e-12
    pem = run_pure_exponential_mechanism(prob, data, epsilon=eps, rng=rng, n_steps=20)
    assert pem.ledger.epsilon(0.0, method="basic") == pytest.approx(eps)
    assert pem.params["k"] == pytest.approx(eps * 200 / (2 * 1.0 * 2.0))


# ---------------------------------------------------------------------------------------------------------
# bad inputs
# ---------------------------------------------------------------------------------------------------------


def test_bad_inputs(logistic_1d):
    prob, data = logistic_1d
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="epsilon"):
        run_regularized_exponential_mechanism(prob, data, epsilon=0.0, delta=1e-5, rng=rng)
    with pytest.raises(ValueError, match="delta"):
        run_regularized_exponential_mechanism(prob, data, epsilon=1.0, delta=1.0, rng=rng)
    with pytest.raises(ValueError, match="delta"):
        run_regularized_exponential_mechanism(prob, data, epsilon=1.0, delta=0.0, rng=rng)
    with pytest.raises(ValueError, match="both"):
        run_regularized_exponential_mechanism(prob, data, epsilon=1.0, delta=1e-5, rng=rng, k=3.0)
    with pytest.raises(ValueError, match="k"):
        sample_regularized_exponential(prob, data, k=-1.0, mu=1.0, rng=rng)
    with pytest.raises(ValueError, match="mu"):
        sample_regularized_exponential(prob, data, k=1.0, mu=-1.0, rng=rng)
    with pytest.raises(ValueError, match="rng"):
        sample_regularized_exponential(prob, data, k=1.0, mu=1.0, rng=0)
    with pytest.raises(ValueError, match="norm bound"):
        sample_regularized_exponential(prob, (data[0] * 2, data[1]), k=1.0, mu=1.0, rng=rng)
    with pytest.raises(ValueError, match="labels"):
        sample_regularized_exponential(prob, (data[0], data[1] * 0.5), k=1.0, mu=1.0, rng=rng)
    with pytest.raises(ValueError, match="shape"):
        sample_regularized_exponential(prob, (data[0], data[1][:-1]), k=1.0, mu=1.0, rng=rng)
    with pytest.raises(ValueError, match="finite"):
        sample_regularized_exponential(prob, (np.full_like(data[0], np.nan), data[1]), k=1.0, mu=1.0, rng=rng)
    with pytest.raises(ValueError, match="d = 1"):
        exact_tradeoff_curve_1d(LinearLossProblem(d=2), np.zeros((3, 2)), np.zeros((3, 2)), k=1.0, mu=1.0, alpha=ALPHA)
    with pytest.raises(ValueError, match="alpha"):
        exact_tradeoff_curve_1d(prob, data, data, k=1.0, mu=1.0, alpha=np.array([1.5]))
    with pytest.raises(ValueError, match="problem"):
        sample_regularized_exponential(object(), data, k=1.0, mu=1.0, rng=rng)
    with pytest.raises(ValueError, match="tv_target"):
        sample_regularized_exponential(prob, data, k=1.0, mu=1.0, rng=rng, tv_target=0.0)
    with pytest.raises(ValueError, match="L must be"):
        proximal_sampler_steps(m=2.0, L=1.0, d=1, diameter=1.0, osc_bound=1.0)
    with pytest.raises(ValueError, match="d"):
        LogisticRegressionProblem(d=0)


def test_runners_validate_boundary_and_accountant():
    """The three R2 runners refuse bad privacy parameters, rng, problem, data and accountant; a Dataset is
    accepted as data (features X, labels y) and gives the same bits as the tuple."""
    from dpsco_lib.problems import Dataset

    rng = np.random.default_rng(32)
    prob = LogisticRegressionProblem(d=2, radius=1.0)
    a, b = logistic_regression_data(40, 2, rng)
    def kw(**o):
        return {"epsilon": 1.0, "delta": 1e-5, "rng": np.random.default_rng(0), **o}

    runs = [lambda p, d, **o: run_regularized_exponential_mechanism(p, d, **kw(**o)),
            lambda p, d, **o: run_pure_exponential_mechanism(p, d, **kw(n_steps=20, **o)),
            lambda p, d, **o: run_noisy_gradient_descent(p, d, **kw(n_steps=10, **o))]
    nan_a = a.copy()
    nan_a[0, 0] = np.nan
    for run in runs:
        np.testing.assert_array_equal(run(prob, (a, b)).x, run(prob, Dataset(a, b), rng=np.random.default_rng(0)).x)
        assert "certified_epsilon" not in run(prob, (a, b)).info
        with pytest.raises(ValueError, match="problem"):
            run("not a problem", (a, b))
        with pytest.raises(ValueError, match="finite"):
            run(prob, (nan_a, b))
        with pytest.raises(ValueError, match="bound"):
            run(prob, (3.0 * a, b))
        with pytest.raises(ValueError, match="rng"):
            run(prob, (a, b), rng=0)
        for eps in (0.0, math.nan, math.inf):
            with pytest.raises(ValueError, match="epsilon"):
                run(prob, (a, b), epsilon=eps)
        for dl in (-0.1, 1.0, math.nan):
            with pytest.raises(ValueError, match="delta"):
                run(prob, (a, b), delta=dl)
    for run in (runs[0], runs[2]):
        with pytest.raises(ValueError, match="accountant"):
            run(prob, (a, b), accountant="optimal")
        with pytest.raises(ValueError, match="accountant"):
            run(prob, (a, b), accountant="basic")
        best, gdp = run(prob, (a, b), accountant="best"), run(prob, (a, b))
        np.testing.assert_array_equal(best.x, gdp.x)  # "best" resolves to exact GDP for Gaussian events
        rdp = run(prob, (a, b), accountant="rdp")
        assert rdp.certified_epsilon(1e-5) <= 1.0
