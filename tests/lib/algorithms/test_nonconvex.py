"""Tests for Spec N1 (dpsco_lib.algorithms.nonconvex): the private nonconvex methods (VR Frank-Wolfe, proximal
method for weakly convex losses): theory parameters, ledgers, determinism, convergence, canary audits, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from dpsco_lib.algorithms.nonconvex import (
    fw_iterates,
    proximal_weakly_convex_bound,
    proximal_weakly_convex_theory_params,
    run_private_proximal_weakly_convex,
    run_private_vr_fw_nonconvex,
    vr_fw_nonconvex_bound,
    vr_fw_nonconvex_theory_params,
)
from dpsco_lib.algorithms.registry import get_algorithm
from dpsco_lib.algorithms.vr_sensitivity import vr_sensitivities
from dpsco_lib.geometry.sets import L1Ball, vertex_oracle
from dpsco_lib.privacy.accounting.budget import per_step_epsilon
from dpsco_lib.problems import Dataset, hard_least_squares
from dpsco_lib.problems.nonconvex import NonconvexRegression, random_nonconvex_regression
from dpsco_lib.testing import noise_scaled
from tests.audit_helpers import audit_honest_and_broken


@pytest.fixture(scope="module")
def smooth_pr():
    return random_nonconvex_regression(6, 80, np.random.default_rng(0), kind="smooth", sparsity=1,
                                       outlier_fraction=0.2)


@pytest.fixture(scope="module")
def nonsmooth_pr():
    return random_nonconvex_regression(4, 60, np.random.default_rng(1), kind="nonsmooth", sparsity=1)


_TP = dict(num_vertices=40, d=20, L0=1.0, L1=1.0, D=2.0)


def test_vr_fw_theory_params_closed_form():
    p = vr_fw_nonconvex_theory_params(100_000, epsilon=2.0, delta=1e-6, **_TP)
    scale = 2.0 * 100_000 / (np.log(40) * np.sqrt(np.log(1e6)))
    assert p.T == round(scale ** (2 / 3))
    assert p.step_size == pytest.approx(min(p.T ** -0.5, 100_000 ** (1 / 3) / p.T))
    assert p.records_used <= 100_000 and p.init_batch == 50_000
    terms = vr_fw_nonconvex_bound(100_000, num_vertices=40, d=20, eps0=p.eps0, L0=1.0, L1=1.0, D=2.0, T=p.T,
                                  eta=p.step_size)
    assert p.rate_bound == pytest.approx(float(terms["total"]))
    assert p.as_dict()["eps0"] == p.eps0 and p.accountant == "best"
    # non-private limit: T = n/2 + 1, eta ~ n^(-2/3)
    q = vr_fw_nonconvex_theory_params(8000, epsilon=1e12, delta=1e-6, **_TP)
    assert q.T == 4001 and q.step_size == pytest.approx(8000 ** (1 / 3) / 4001)
    # the bound decreases like the rate in the privacy regime
    b1 = vr_fw_nonconvex_theory_params(10**6, epsilon=1.0, delta=1e-6, **_TP).rate_bound
    b2 = vr_fw_nonconvex_theory_params(8 * 10**6, epsilon=1.0, delta=1e-6, **_TP).rate_bound
    assert 0.4 < b2 / b1 < 0.65  # 8^(-1/3) = 0.5


@pytest.mark.parametrize("n", [2000, 128_000])
def test_vr_fw_selection_budget_comes_from_the_budget_path(n):
    # default "best": the tightest valid accountant; "advanced": DRV10 floored at basic composition (the rule of
    # earlier versions), never more than "best"
    kw = dict(epsilon=4.0, delta=1e-6, steps_constant=0.05, **_TP)
    p = vr_fw_nonconvex_theory_params(n, **kw)
    assert p.accountant == "best" and p.eps0 == per_step_epsilon(4.0, 1e-6, p.T, accountant="best").value
    adv = vr_fw_nonconvex_theory_params(n, accountant="advanced", **kw)
    assert adv.T == p.T and adv.eps0 == max(4.0 / p.T, per_step_epsilon(4.0, 1e-6, p.T, accountant="advanced").value)
    assert p.eps0 >= adv.eps0
    paper = vr_fw_nonconvex_theory_params(n, accountant="paper", **kw)
    assert paper.eps0 == pytest.approx(4.0 / (2 * np.sqrt(2 * p.T * np.log(1e6))))


@pytest.mark.parametrize("eps", [0.1, 1.0, 8.0])
@pytest.mark.parametrize("delta", [0.0, 1e-8, 1e-5])
@pytest.mark.parametrize("n", [8, 500, 5000])
def test_vr_fw_ledger_certifies_target(smooth_pr, eps, delta, n):
    data = smooth_pr.sample(n, np.random.default_rng(n))
    res = run_private_vr_fw_nonconvex(smooth_pr, data, epsilon=eps, delta=delta, rng=np.random.default_rng(1))
    assert res.certified_epsilon(delta) <= eps
    assert "certified_epsilon" not in res.info and res.relation == "replace_one"
    # eps0 is tight for the default accountant that chose it ("best"; basic composition when delta = 0)
    assert res.params["accountant"] == "best" and res.certified_epsilon(delta) == pytest.approx(eps, rel=1e-6)
    assert res.params["records_used"] <= n
    assert smooth_pr.feasible_set.contains(res.x)


def test_vr_fw_deterministic_and_output_is_an_iterate(smooth_pr):
    data = smooth_pr.sample(3000, np.random.default_rng(0))
    kw = dict(epsilon=2.0, delta=1e-6, trace=True, steps_constant=0.2)
    a = run_private_vr_fw_nonconvex(smooth_pr, data, rng=np.random.default_rng(9), **kw)
    b = run_private_vr_fw_nonconvex(smooth_pr, data, rng=np.random.default_rng(9), **kw)
    assert np.array_equal(a.x, b.x) and np.array_equal(a.trace["selected"], b.trace["selected"])
    it = fw_iterates(smooth_pr, selected=a.trace["selected"], step_size=a.params["step_size"])
    np.testing.assert_allclose(it[a.params["tau"]], a.x, atol=1e-14)
    np.testing.assert_allclose(it[-1], a.info["x_last"], atol=1e-14)


def test_vr_fw_converges_in_the_non_private_limit(smooth_pr):
    pr = smooth_pr
    gap0 = pr.frank_wolfe_gaps(pr.feasible_set.center())[0]
    means = []
    for n in (2000, 16000):
        vals = []
        for s in range(2):
            data = pr.sample(n, np.random.default_rng(100 + s))
            res = run_private_vr_fw_nonconvex(pr, data, epsilon=1e12, delta=1e-6, rng=np.random.default_rng(s),
                                              trace=True)
            it = fw_iterates(pr, selected=res.trace["selected"], step_size=res.params["step_size"])
            vals.append(pr.frank_wolfe_gaps(it[:-1]).mean())
        means.append(np.mean(vals))
    assert means[1] < 0.75 * means[0]  # 8^(-1/3) = 0.5 predicted
    assert means[1] < 0.4 * gap0


def test_vr_fw_bad_inputs(smooth_pr, nonsmooth_pr):
    data = smooth_pr.sample(100, np.random.default_rng(0))
    rng = np.random.default_rng(0)
    for kw, msg in [
        ({"epsilon": 0.0, "delta": 1e-6}, "epsilon"),
        ({"epsilon": 1.0, "delta": 1.0}, "delta"),
        ({"epsilon": 1.0, "delta": 1e-6, "n_steps": 1}, "n_steps"),
        ({"epsilon": 1.0, "delta": 1e-6, "n_steps": 52}, "n_steps"),
        ({"epsilon": 1.0, "delta": 1e-6, "step_size": 1.0}, "step_size"),
        ({"epsilon": 1.0, "delta": 1e-6, "accountant": "magic"}, "accountant"),
        ({"epsilon": 1.0, "delta": 1e-6, "accountant": "gdp"}, "gdp"),
        ({"epsilon": 1.0, "delta": 1e-6, "steps_constant": 0.0}, "steps_constant"),
    ]:
        with pytest.raises(ValueError, match=msg):
            run_private_vr_fw_nonconvex(smooth_pr, data, rng=rng, **kw)
    with pytest.raises(ValueError, match="smooth"):
        run_private_vr_fw_nonconvex(nonsmooth_pr, nonsmooth_pr.sample(50, rng), epsilon=1.0, delta=1e-6, rng=rng)
    with pytest.raises(ValueError, match="n >= 4"):
        run_private_vr_fw_nonconvex(smooth_pr, data[:3], epsilon=1.0, delta=1e-6, rng=rng)
    with pytest.raises(ValueError, match="rng"):
        run_private_vr_fw_nonconvex(smooth_pr, data, epsilon=1.0, delta=1e-6, rng=1)
    with pytest.raises(ValueError, match="declared bounds"):
        run_private_vr_fw_nonconvex(smooth_pr, Dataset(data.X * 10, data.y), epsilon=1.0, delta=1e-6, rng=rng)


# ---------------------------------------------------------------------------------------------------------
# proximal method: parameters, privacy, determinism, convergence
# ---------------------------------------------------------------------------------------------------------
_PP = dict(d=10, epsilon=1.0, delta=1e-6, L0=3.0, rho=2.0, D=2.0)


def test_prox_theory_params_minimize_the_bound():
    from dpsco_lib.privacy.mechanisms import gaussian_sigma_analytic

    p = proximal_weakly_convex_theory_params(4000, **_PP)
    T = np.arange(1, 2001)
    N = np.floor(4000 / T)
    G = 3.0 + 4.0 * 2.0
    nu1 = p.nu1
    assert nu1 == pytest.approx(gaussian_sigma_analytic(1.0, epsilon=1.0, delta=1e-6), rel=1e-10)
    K = np.maximum(1, np.ceil(G**2 / (9.0 * (1 / N + 40 * nu1**2 / N**2)) - 1))
    tot = proximal_weakly_convex_bound(4000, d=10, nu1=nu1, L0=3.0, rho=2.0, D=2.0, T=T, K=K, beta=4.0)["total_sq"]
    assert p.T == int(T[np.argmin(tot)]) and p.inner_steps == int(K[np.argmin(tot)])
    assert p.rate_bound == pytest.approx(np.sqrt(tot.min()))
    assert p.noise_multiplier == pytest.approx(nu1 * np.sqrt(p.inner_steps), rel=1e-10)
    assert p.accountant == "gdp" and p.as_dict()["T"] == p.T
    q = proximal_weakly_convex_theory_params(4000, inner_constant=0.1, **_PP)
    assert q.T == p.T and q.inner_steps < p.inner_steps
    # RDP is looser than the exact GDP for Gaussian events: more noise; "best" is GDP
    assert proximal_weakly_convex_theory_params(4000, accountant="rdp", **_PP).noise_multiplier > p.noise_multiplier
    assert proximal_weakly_convex_theory_params(4000, accountant="best", **_PP).noise_multiplier == pytest.approx(
        p.noise_multiplier, rel=1e-9)


@pytest.mark.parametrize("eps", [0.2, 1.0, 8.0])
@pytest.mark.parametrize("delta", [1e-8, 1e-5])
def test_prox_ledger_certifies_target(nonsmooth_pr, eps, delta):
    data = nonsmooth_pr.sample(300, np.random.default_rng(3))
    res = run_private_proximal_weakly_convex(nonsmooth_pr, data, epsilon=eps, delta=delta,
                                             rng=np.random.default_rng(0), inner_constant=0.05)
    cert = res.certified_epsilon(delta)
    assert cert <= eps * (1 + 1e-12)
    assert cert >= 0.99 * eps
    assert nonsmooth_pr.feasible_set.contains(res.x)


def test_prox_deterministic_and_output_is_an_iterate(nonsmooth_pr):
    data = nonsmooth_pr.sample(400, np.random.default_rng(0))
    kw = dict(epsilon=1.0, delta=1e-6, trace=True, inner_constant=0.05)
    a = run_private_proximal_weakly_convex(nonsmooth_pr, data, rng=np.random.default_rng(5), **kw)
    b = run_private_proximal_weakly_convex(nonsmooth_pr, data, rng=np.random.default_rng(5), **kw)
    assert np.array_equal(a.trace["x"], b.trace["x"]) and np.array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.trace["x"][a.params["tau"]], a.x)


def test_prox_converges_in_the_non_private_limit(nonsmooth_pr):
    pr = nonsmooth_pr
    g0 = pr.moreau_gradient_norm(pr.feasible_set.center())
    data = pr.sample(2000, np.random.default_rng(1))
    res = run_private_proximal_weakly_convex(pr, data, epsilon=1e8, delta=1e-6, rng=np.random.default_rng(2),
                                             inner_constant=0.1, trace=True)
    assert res.params["T"] >= 5
    assert pr.moreau_gradient_norm(res.info["x_last"]) < 0.1 * g0


def test_prox_bad_inputs(nonsmooth_pr):
    data = nonsmooth_pr.sample(50, np.random.default_rng(0))
    rng = np.random.default_rng(0)
    for kw, msg in [
        ({"epsilon": -1.0, "delta": 1e-6}, "epsilon"),
        ({"epsilon": 1.0, "delta": 0.0}, "delta"),
        ({"epsilon": 1.0, "delta": 1e-6, "n_outer": 26}, "n_outer"),
        ({"epsilon": 1.0, "delta": 1e-6, "inner_steps": 0}, "inner_steps"),
        ({"epsilon": 1.0, "delta": 1e-6, "beta": 0.5 * nonsmooth_pr.rho}, "beta"),
        ({"epsilon": 1.0, "delta": 1e-6, "inner_constant": 0.0}, "inner_constant"),
        ({"epsilon": 1.0, "delta": 1e-6, "accountant": "magic"}, "accountant"),
        ({"epsilon": 1.0, "delta": 1e-6, "accountant": "kov"}, "accountant"),
    ]:
        with pytest.raises(ValueError, match=msg):
            run_private_proximal_weakly_convex(nonsmooth_pr, data, rng=rng, **kw)
    ls = hard_least_squares(1.0, 4, set_kind="l1ball")
    with pytest.raises(ValueError, match="rho"):
        run_private_proximal_weakly_convex(ls, ls.sample(20, rng), epsilon=1.0, delta=1e-6, rng=rng)


# ---------------------------------------------------------------------------------------------------------
# canary audits (false alarm alpha = 1e-3 per audit, exact Clopper-Pearson)
# ---------------------------------------------------------------------------------------------------------
def _fw_canary():
    """d = 1, l1 ball of radius 1 (vertices +1, -1), n = 4, T = 2, delta = 0: eps0 = eps/2 per selection.

    Records (a, b) = (1, 0) have zero gradient at x_0 = 0; the canary (1, 1) vs (1, -1) has gradient
    phi'(-1) = -1 vs +1 (rho0 = 0, tau = 1/2: |phi'| = G = 1), so the score change after the shift argument
    is exactly the bound s_0 = L0 D/m = 1 (worst case). With two vertices the relative score moves from -1 to +1,
    and the general report-noisy-min scale 2 s/eps0 = 2 makes the exact privacy loss of the event
    {select vertex 1} ln((1 - q)/q) = 0.49 with q = P(W > 1/2) = e^{-1/2}(1 + 1/4)/2 (W a difference of two
    standard Laplace): half of eps0 = 1, the price of the non-monotone scale. A quarter of the noise gives
    ln((1 - q')/q') = 1.86 > eps0 with q' = P(W > 2) = e^{-2}(1 + 1)/2.
    """
    pr = NonconvexRegression(np.ones((2, 1)), np.array([1.0, 0.0]), L1Ball(1, 1.0), kind="smooth", tau=0.5,
                             rho0=0.0, label_bound=1.0)
    S = Dataset(np.ones((4, 1)), np.array([1.0, 0.0, 0.0, 0.0]))
    return pr, S, S.replace_one(0, (np.ones(1), -1.0))


@pytest.mark.statistical
def test_vr_fw_canary_audit_honest_and_quarter_noise_caught():
    eps, n_runs = 2.0, 2000
    pr, S, Sp = _fw_canary()
    res = run_private_vr_fw_nonconvex(pr, S, epsilon=eps, delta=0.0, rng=np.random.default_rng(0), n_steps=2)
    eps0 = res.params["eps0"]
    assert eps0 == pytest.approx(1.0) and res.params["sensitivity_first"] == pytest.approx(1.0)

    def run(data, rng):
        r = run_private_vr_fw_nonconvex(pr, data, epsilon=eps, delta=0.0, rng=rng, n_steps=2, trace=True)
        return int(r.trace["selected"][0])

    def stat(v):
        return float(v == 1)  # vertex index 1 = -e_1, favoured when the gradient is positive (data_prime)

    honest, _ = audit_honest_and_broken(run, S, Sp, stat, n_runs, broken_factor=0.25, claimed_epsilon=eps0,
                                        delta=0.0, seeds=(11, 12), threshold=0.5)
    assert honest.epsilon_lower_bound <= eps0 <= res.certified_epsilon(0.0)
    assert honest.epsilon_lower_bound > 0.25  # informative: the exact loss of this event is 0.49


def _prox_canary():
    """d = 1, l1 ball of radius 100, nonsmooth kind with rho0 = 0.01 (so G = 1, rho = 0.01), one subproblem of
    N = 100 records, K = 2 inner steps.

    Records (1, 0) have subgradient 0 at x_0 = 0; the canary (1, 5) vs (1, -5) has subgradient -0.95 vs +0.95,
    95% of the bound: the batch-mean subgradient moves by 1.9/N against the l2 sensitivity 2 L0/N. The first
    outer iterate is x_1 = (2/3) y_2 = -(2/3) eta_1 (g + sigma xi) (the projection is inactive with
    overwhelming probability), a Gaussian mechanism; its noise multiplier is ``sqrt 2`` larger than the one
    the ledger charges (the second step's noise never reaches x_1), so the honest audit is loose by that
    factor and the broken variant removes 90% of the noise.
    """
    pr = NonconvexRegression(np.ones((2, 1)), np.array([5.0, 0.0]), L1Ball(1, 100.0), kind="nonsmooth",
                             rho0=0.01, label_bound=5.0)
    y = np.zeros(100)
    y[0] = 5.0
    S = Dataset(np.ones((100, 1)), y)
    return pr, S, S.replace_one(0, (np.ones(1), -5.0))


@pytest.mark.statistical
def test_prox_canary_audit_honest_and_tenth_noise_caught():
    eps, delta, n_runs = 1.0, 1e-5, 1500
    pr, S, Sp = _prox_canary()
    kw = dict(epsilon=eps, delta=delta, n_outer=1, inner_steps=2, trace=True)

    def run(data, rng):
        r = run_private_proximal_weakly_convex(pr, data, rng=rng, **kw)
        return float(r.trace["x"][1, 0])

    res = run_private_proximal_weakly_convex(pr, S, rng=np.random.default_rng(0), **kw)
    cert = res.certified_epsilon(delta)
    assert cert <= eps * (1 + 1e-9)
    audit_honest_and_broken(run, S, Sp, lambda v: v, n_runs, broken_factor=0.1, claimed_epsilon=cert, delta=delta,
                            seeds=(21, 22))


# ---------------------------------------------------------------------------------------------------------------
# Nonconvex VR Frank-Wolfe: report-noisy-min scale 2 s_t / eps0 (mutant alg-n1-vrfw-scale)
# ---------------------------------------------------------------------------------------------------------------
def test_nonconvex_vr_fw_laplace_scales_are_the_general_report_noisy_min_scales():
    """Every selection of the nonconvex VR-FW method is report-noisy-min over non-monotone scores, eps0-DP only with
    the Laplace scale 2 s_t / eps0 (s_t the variance-reduced score sensitivity of step t); s_t/eps0 would be
    2 eps0-DP per step."""
    rec = get_algorithm("N1 VR-FW nonconvex")
    ex = rec.example(np.random.default_rng(0))
    res = rec.runner(*ex.args, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(1), trace=True, **ex.kwargs)
    prm, prob = res.params, ex.args[0]
    D = float(prob.feasible_set.diameter(1.0))
    sens = vr_sensitivities(prm["T"], init_batch=prm["init_batch"], batch_size=max(prm["batch_size"], 1),
                            step_size=prm["step_size"], L0=float(prob.L0), L1=float(prob.L1), D=D)
    np.testing.assert_allclose(res.trace["laplace_scale"], 2.0 * sens / prm["eps0"], rtol=1e-12)
    assert res.certified_epsilon(1e-5) <= 1.0


# ---------------------------------------------------------------------------------------------------------------
# Proximal method for weakly convex losses: disjoint batches (mutant alg-n1-prox-disjoint)
# ---------------------------------------------------------------------------------------------------------------
def test_proximal_weakly_convex_uses_each_record_in_one_subproblem_only():
    """The ledger composes the T subproblems in parallel, which is valid only if their batches are disjoint: every
    record reaches the gradient oracle in one outer iteration at most."""
    rec = get_algorithm("N1 proximal weakly convex")
    ex = rec.example(np.random.default_rng(0))
    prob, data = ex.args[0], ex.args[1]
    seen: list[tuple[int, np.ndarray]] = []
    outer = {"t": -1, "last": None}
    original = prob._mean_grad

    def recording(x, batch):
        key = batch.X.tobytes()
        if key != outer["last"]:  # a new batch: the next subproblem (the K inner steps share one batch)
            outer["t"] += 1
            outer["last"] = key
            seen.append((outer["t"], np.asarray(batch.X).copy()))
        return original(x, batch)

    prob._mean_grad = recording
    try:
        res = rec.runner(prob, data, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(1), **ex.kwargs)
    finally:
        del prob._mean_grad
    rows = np.concatenate([X for _, X in seen])
    assert len(seen) == res.params["T"]
    # the records may repeat in the data (a finite feature pool): compare multisets, not sets
    used, n_used = np.unique(rows, axis=0, return_counts=True)
    have, n_have = np.unique(np.asarray(data.X), axis=0, return_counts=True)
    avail = {r.tobytes(): c for r, c in zip(have, n_have, strict=True)}
    over = [c - avail.get(r.tobytes(), 0) for r, c in zip(used, n_used, strict=True) if c > avail.get(r.tobytes(), 0)]
    assert not over, f"records entered more subproblems than they occur in the data ({sum(over)} extra uses)"


# ---------------------------------------------------------------------------------------------------------------
# Proximal method for weakly convex losses: the inner step sizes 2/(mu (k + 1)) (mutant alg-n1-prox-step)
# ---------------------------------------------------------------------------------------------------------------
def test_proximal_weakly_convex_first_subproblem_follows_its_documented_recursion():
    """Without noise, the first outer iterate is the k-weighted average of K projected subgradient steps
    y <- Proj(y - 2/(mu (k + 1)) (grad f_S(y) + beta (y - x_0))), k = 1..K, on the first batch of N records."""
    rec = get_algorithm("N1 proximal weakly convex")
    ex = rec.example(np.random.default_rng(0))
    prob, data = ex.args[0], ex.args[1]
    with noise_scaled(1e-15):
        res = rec.runner(prob, data, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(1), trace=True,
                         **ex.kwargs)
    prm = res.params
    K, N, beta, mu = prm["inner_steps"], prm["batch_size"], prm["beta"], prm["mu"]
    x0 = np.asarray(prob.feasible_set.center(), dtype=np.float64)
    batch = data[:N]
    k = np.arange(1, K + 1, dtype=np.float64)
    w = k / k.sum()
    y, avg = x0.copy(), np.zeros_like(x0)
    for i in range(K):
        avg += w[i] * y
        y = prob.feasible_set.project(y - 2.0 / (mu * (k[i] + 1.0)) * (prob.mean_grad(y, batch) + beta * (y - x0)))
    np.testing.assert_allclose(res.trace["x"][0], x0)
    np.testing.assert_allclose(res.trace["x"][1], avg, rtol=1e-9, atol=1e-12)


def test_nonconvex_vr_fw_selects_the_exact_gradient_vertex_when_all_records_agree():
    """With n copies of one record the variance-reduced estimate of the nonconvex VR-FW method equals grad F(x_t) at
    every step (induction, as for GG-VR-SFW), so with negligible noise every selection is the linear-minimization
    vertex of the exact gradient at the current iterate (mutant ``alg-n1-vrfw-correction`` selects with a momentum
    average of past gradients instead)."""
    rec = get_algorithm("N1 VR-FW nonconvex")
    ex = rec.example(np.random.default_rng(0))
    prob, data = ex.args[0], ex.args[1]
    y = None if data.y is None else np.repeat(np.asarray(data.y)[:1], data.n)
    same = Dataset(np.repeat(np.asarray(data.X)[:1], data.n, axis=0), y)
    with noise_scaled(1e-12):
        res = rec.runner(prob, same, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(1), trace=True,
                         **ex.kwargs)
    _, scores_of, move = vertex_oracle(prob.feasible_set)
    eta = float(res.params["step_size"])
    x = np.asarray(prob.feasible_set.center(), dtype=np.float64).copy()
    for j in res.trace["selected"]:
        sc = scores_of(prob.mean_grad(x, same))  # ties are possible: the selected score must be a minimal one
        assert sc[int(j)] <= sc.min() + 1e-9 * max(1.0, abs(sc.min()))
        move(x, int(j), eta)


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
