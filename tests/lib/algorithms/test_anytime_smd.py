"""Algorithm 5 of GGP24 (Spec A5): theory parameters, ledger, averaging weights, determinism, audits, bad inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from dpsco_lib.algorithms.anytime_smd import (
    REGIMES,
    alg5_resample_steps,
    alg5_theory_params,
    run_anytime_smd_sco,
    run_anytime_smd_sco_many,
)
from dpsco_lib.geometry.sets import L1Ball, LpBall, Simplex
from dpsco_lib.privacy.accounting.budget import per_step_epsilon
from dpsco_lib.problems import Dataset, hard_least_squares, random_least_squares
from dpsco_lib.testing import step_scaled
from tests.audit_helpers import audit_honest_and_broken


@pytest.fixture(scope="module")
def ls():
    prob = hard_least_squares(1.0, 12, c=2.0)
    return prob, prob.sample(3000, np.random.default_rng(1))


# ------------------------------------------------------------------ schedule and theory parameters
def test_resample_steps_exact():
    assert alg5_resample_steps(10, t0=3, tau=4).tolist() == [1, 2, 3, 7]
    assert alg5_resample_steps(10, t0=20, tau=4).tolist() == list(range(1, 11))
    assert alg5_resample_steps(12, t0=2, tau=5).tolist() == [1, 2, 7, 12]
    assert alg5_resample_steps(5, t0=1, tau=1).tolist() == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("regime", REGIMES)
@pytest.mark.parametrize("n", [20, 3000, 200_000, 5_000_000])
@pytest.mark.parametrize("accountant", ["best", "advanced", "paper"])
def test_theory_params_properties(regime, n, accountant):
    p = alg5_theory_params(n, n_vertices=40, epsilon=0.7, delta=1e-6, L0=3.0, L1=1.0, L2=2.0, regime=regime,
                           accountant=accountant)
    assert p.accountant == accountant
    assert 1 <= p.T <= n and p.B == n // p.T and p.B >= 1
    assert 1 <= p.tau <= p.T and p.t0 == min(p.T, 2 * p.tau)
    assert p.n_resample == alg5_resample_steps(p.T, t0=p.t0, tau=p.tau).size
    assert p.n_draws == p.K * (p.n_resample - 1) + p.K_out
    assert p.eps0 == per_step_epsilon(0.7, 1e-6, p.n_draws, accountant=accountant, mechanism="exponential").value
    assert p.eta_cap == pytest.approx(p.eps0 * p.B / (4 * p.T * 3.0), rel=1e-14)
    assert p.eta <= p.eta_cap * (1 + 1e-12)
    assert p.eps_draw == pytest.approx(4 * p.eta * p.T * 3.0 / p.B, rel=1e-14)
    assert p.eps_draw <= p.eps0  # the step size is lowered by the rounding of the cap if needed
    assert p.bound == pytest.approx(p.eg_term + p.bias_term + p.drift_term + p.lazy_term + p.output_term
                                    + p.stat_term)
    assert p.exponent == (0.4 if regime == "first_order" else 0.5)


@pytest.mark.parametrize(("regime", "expo"), [("first_order", -0.4), ("second_order", -0.5)])
def test_theory_bound_private_term_exponent(regime, expo):
    """The modelled private term decays like (n eps)^(-2/5) resp. (n eps)^(-1/2) once the lazy redraws pay."""
    ns = np.array([1e7, 1e8, 1e9])
    kw = {"n_vertices": 50, "epsilon": 1.0, "delta": 1e-5, "L0": 1.0, "L1": 1.0, "L2": 1.0, "regime": regime}
    priv = [alg5_theory_params(int(n), **kw).bound - alg5_theory_params(int(n), **kw).stat_term for n in ns]
    slope = np.polyfit(np.log(ns), np.log(priv), 1)[0]
    assert abs(slope - expo) < 0.06, slope
    # the lazy schedule is used at large n (tau > 1)
    assert alg5_theory_params(10**9, **kw).tau > 1


def test_best_accountant_is_tighter_and_certifies(ls):
    prob, data = ls
    kw = {"epsilon": 1.0, "delta": 1e-6, "T": 30, "K": 3, "K_out": 5, "tau": 4}
    best = run_anytime_smd_sco(prob, data, rng=np.random.default_rng(0), **kw)  # the default
    adv = run_anytime_smd_sco(prob, data, rng=np.random.default_rng(0), accountant="advanced", **kw)
    assert best.info["accountant"] == "best" and adv.info["accountant"] == "advanced"
    assert best.params["eps0"] > adv.params["eps0"] and best.params["eta_cap"] > adv.params["eta_cap"]
    assert best.certified_epsilon(1e-6) <= 1.0 and adv.certified_epsilon(1e-6, accountant="advanced") <= 1.0


# ------------------------------------------------------------------ privacy ledger
@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0])
@pytest.mark.parametrize("delta", [1e-8, 1e-5])
@pytest.mark.parametrize("n", [200, 3000])
@pytest.mark.parametrize("regime", REGIMES)
def test_ledger_within_target(ls, eps, delta, n, regime):
    prob, data = ls
    res = run_anytime_smd_sco(prob, data[:n], epsilon=eps, delta=delta, rng=np.random.default_rng(0), regime=regime)
    p = res.params
    # the default accountant "best" calibrates eps0 and certifies the ledger at most the target
    cert = res.ledger.epsilon(delta)
    assert cert <= eps * (1 + 1e-12) and res.info["accountant"] == "best"
    assert p["eps0"] == per_step_epsilon(eps, delta, p["n_draws"], accountant="best", mechanism="exponential").value
    assert "certified_epsilon" not in res.info and res.certified_epsilon(delta) == cert
    assert res.ledger.total_count == p["n_draws"]
    assert all(ev.kind == "exponential" and ev.epsilon == p["eps_draw"] for ev in res.ledger.events)
    assert prob.feasible_set.contains(res.x, 1e-12)
    assert np.allclose(res.x * p["K_out"], np.round(res.x * p["K_out"]))  # a K'-vertex average


def test_ledger_events_are_the_draws_made(ls):
    prob, data = ls
    res = run_anytime_smd_sco(prob, data, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(2), T=30, K=3, K_out=5,
                              tau=4, t0=6, trace=True)
    steps = alg5_resample_steps(30, t0=6, tau=4)
    assert res.trace["redraw_steps"].tolist() == steps.tolist()
    counts = [e.count for e in res.ledger.events]
    assert counts == [3 * (steps.size - 1), 5]  # the t = 1 draws (uniform w_1) are data independent
    assert all(math.isclose(e.epsilon, res.params["eps_draw"]) for e in res.ledger.events)


def test_eta_above_cap_rejected_or_charged(ls):
    prob, data = ls
    ref = run_anytime_smd_sco(prob, data, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(0), T=20, K=2, K_out=2,
                              tau=2)
    big = 3 * ref.params["eta_cap"]
    with pytest.raises(ValueError, match="privacy cap"):
        run_anytime_smd_sco(prob, data, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(0), T=20, K=2, K_out=2,
                            tau=2, step_size=big)
    res = run_anytime_smd_sco(prob, data, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(0), T=20, K=2, K_out=2,
                              tau=2, step_size=big, enforce_privacy_cap=False)
    assert res.ledger.epsilon(1e-6) > 1.0  # the default accountant ("best") charges it


# ------------------------------------------------------------------ the iteration, exactly
def test_averaging_weights_and_eg_recursion_exact(ls):
    prob, data = ls
    T = 25
    res = run_anytime_smd_sco(prob, data, epsilon=2.0, delta=1e-6, rng=np.random.default_rng(4), T=T, K=4, K_out=3,
                              tau=3, t0=5, trace=True)
    tr, eta = res.trace, res.params["eta"]
    assert tr["alpha"].tolist() == list(range(1, T + 1))
    w = np.exp(tr["log_w"])  # w_1 .. w_{T+1}
    assert np.allclose(w.sum(axis=1), 1.0, atol=1e-13)
    s = np.arange(1, T + 2, dtype=float)
    for t in range(1, T + 2):  # x_t = sum_{s<=t} s w_s / (t (t+1)/2)
        xt = (s[:t, None] * w[:t]).sum(axis=0) / (t * (t + 1) / 2)
        np.testing.assert_allclose(tr["x_avg"][t - 1], xt, rtol=0, atol=1e-14)
    # w_{t+1}(i) prop. to exp(-eta sum_{s<=t} s g_s(i))
    cum = np.cumsum(tr["alpha"][:, None] * tr["grad_weights"], axis=0)
    lw = -eta * cum
    lw -= logsumexp(lw, axis=1, keepdims=True)
    np.testing.assert_allclose(tr["log_w"][1:], lw, rtol=0, atol=1e-11)
    # lazy: the gradient point only changes at redraw steps; the released point is a 4-vertex average
    assert np.allclose(tr["x_tilde_weights"] * 4, np.round(tr["x_tilde_weights"] * 4))
    grads_at = [prob.mean_grad(tr["x_tilde_weights"][np.searchsorted(tr["redraw_steps"], t, side="right") - 1],
                               data[(t - 1) * res.params["B"]: t * res.params["B"]]) for t in range(1, T + 1)]
    np.testing.assert_allclose(tr["grad_weights"], np.array(grads_at), rtol=0, atol=1e-13)
    assert tr["output_counts"].sum() == 3


def test_l1_ball_vertex_representation():
    rng = np.random.default_rng(5)
    r = 2.0
    prob = random_least_squares(L1Ball(6, r), 1.0, rng)
    data = prob.sample(400, rng)
    res = run_anytime_smd_sco(prob, data, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(1), T=10, K=2, K_out=4,
                              tau=2, trace=True)
    assert res.params["n_vertices"] == 12 and res.params["set_kind"] == "l1_ball"
    assert res.params["L0w"] == pytest.approx(r * prob.L0) and res.params["L1w"] == pytest.approx(r * r * prob.L1)
    g = res.trace["grad_weights"]
    np.testing.assert_allclose(g[:, :6], -g[:, 6:], rtol=0, atol=0)
    c = res.trace["output_counts"]
    np.testing.assert_allclose(res.x, r * (c[:6] - c[6:]) / 4, rtol=0, atol=1e-15)
    assert np.abs(res.x).sum() <= r * (1 + 1e-12)


# ------------------------------------------------------------------ determinism and convergence
def test_determinism(ls):
    prob, data = ls
    kw = {"epsilon": 1.0, "delta": 1e-6, "regime": "second_order"}
    a = run_anytime_smd_sco(prob, data, rng=np.random.default_rng(11), **kw)
    b = run_anytime_smd_sco(prob, data, rng=np.random.default_rng(11), **kw)
    c = run_anytime_smd_sco(prob, data, rng=np.random.default_rng(12), **kw)
    assert np.array_equal(a.x, b.x) and a.params == b.params
    assert not np.array_equal(a.x, c.x)
    m1 = run_anytime_smd_sco_many(prob, data, n_runs=50, rng=np.random.default_rng(3), T=20, K=2, K_out=2, tau=2, **kw)
    m2 = run_anytime_smd_sco_many(prob, data, n_runs=50, rng=np.random.default_rng(3), T=20, K=2, K_out=2, tau=2, **kw)
    assert np.array_equal(m1["x"], m2["x"])


@pytest.mark.parametrize(("regime", "tol"), [("first_order", 0.15), ("second_order", 0.05)])
def test_non_private_limit_converges(regime, tol):
    """eps = 2000 (nearly non-private): the anytime average converges; the excess at the uniform start is
    (c - 1/2)(1 - 1/d) = 1.4625, and the error at n = 8000 is below tol and below half of that at n = 500."""
    prob = hard_least_squares(1.0, 40, c=2.0)
    data = prob.sample(8000, np.random.default_rng(7))
    ex = []
    for n in (500, 8000):
        res = run_anytime_smd_sco(prob, data[:n], epsilon=2000.0, delta=1e-6, rng=np.random.default_rng(1),
                                  regime=regime)
        ex.append(prob.excess_risk(res.x))
    assert ex[1] < tol and ex[1] < 0.5 * ex[0], ex


# ------------------------------------------------------------------ privacy: exact loss and audits
C_AUD, D_AUD, CLAIM = 100.0, 30, 2.0


def _canary(d: int = D_AUD, c: float = C_AUD):
    """hard_least_squares records (a, b), ||a||_inf <= 1, |b| <= c (L0 = 1 + c): a = u = (+1, -1, ..., -1),
    b = +c versus -c.  The gradient (<u, x~> - b) u is about -/+ c u: the worst case of the exponential
    mechanism on coordinate 1."""
    prob = hard_least_squares(1.0, d, c=c)
    u = -np.ones(d)
    u[0] = 1.0
    S = Dataset(u[None, :], np.array([c]))
    return prob, S, S.replace_one(0, (u, -c)), u


def _audit_kw():
    prob, _, _, _ = _canary()
    eta = CLAIM / (4 * prob.L0)  # T = 1, B = 1: eps_draw = 4 eta T L0/B = CLAIM
    return {"epsilon": 1.0, "delta": 1e-5, "T": 1, "K": 1, "K_out": 1, "tau": 1, "t0": 1, "step_size": eta,
            "enforce_privacy_cap": False}


def _exact_output_law(prob, u, b, eta):
    """Law of the output vertex for T = 1: x~_1 = e_i uniform, g = (u_i - b) u, x_2 = (w_1 + 2 w_2)/3."""
    d = u.size
    law = np.zeros(d)
    for i in range(d):
        lw = -eta * (u[i] - b) * u
        law += ((1.0 / d) + 2.0 * np.exp(lw - logsumexp(lw))) / 3.0 / d
    return law


@pytest.mark.statistical
def test_output_law_exact_and_exact_loss():
    """Chi-square (false alarm 1e-3) of the output vertex against its exact law, for the single-run and the
    vectorized paths; the exact privacy loss of the draw is <= the claim, and > the claim when the sampler uses
    2 eta (the broken variant)."""
    prob, S, S2, u = _canary()
    kw = _audit_kw()
    eta = kw["step_size"]
    law = _exact_output_law(prob, u, C_AUD, eta)
    many = run_anytime_smd_sco_many(prob, S, n_runs=20_000, rng=np.random.default_rng(8), **kw)
    cnt = many["output_counts"].sum(axis=0)
    assert stats.chisquare(cnt, cnt.sum() * law).pvalue > 1e-3
    single = np.array([run_anytime_smd_sco(prob, S, rng=np.random.default_rng(s), **kw).x.argmax()
                       for s in range(1000)])
    # pool the d - 1 symmetric coordinates: cells {0}, {1..d-1}
    c0 = int(np.sum(single == 0))
    assert stats.binomtest(c0, 1000, law[0]).pvalue > 1e-3
    loss = np.max(np.abs(np.log(law / _exact_output_law(prob, u, -C_AUD, eta))))
    res = run_anytime_smd_sco(prob, S, rng=np.random.default_rng(0), **kw)
    claimed = res.ledger.epsilon(1e-5)
    assert res.params["eps_draw"] == pytest.approx(CLAIM)
    assert loss <= claimed
    bad = np.max(np.abs(np.log(_exact_output_law(prob, u, C_AUD, 2 * eta) / _exact_output_law(prob, u, -C_AUD,
                                                                                                2 * eta))))
    assert bad > claimed


@pytest.mark.statistical
def test_canary_audit_correct_and_broken():
    """Whole-run canary audit (T = 1, fixed threshold on the output vertex, Clopper-Pearson, alpha = 1e-3):
    the correct run stays below the claimed epsilon, the run whose sampler uses 2 eta under the same ledger is
    caught.  (The Prop 4.3 bound is loose by ~1.6x on every pair because x_2 mixes in the data-independent
    w_1, so doubling only exceeds the claim by ~0.3 and the audit needs 6e4 runs per world.)"""
    prob, S, S2, _ = _canary()
    kw = _audit_kw()
    claimed = run_anytime_smd_sco(prob, S, rng=np.random.default_rng(0), **_audit_kw()).ledger.epsilon(1e-5)

    def run_many(data, rng, m):
        return run_anytime_smd_sco_many(prob, data, n_runs=m, rng=rng, **kw)["x"]

    audit_honest_and_broken(run_many, S, S2, lambda xs: np.asarray(xs)[:, 0], 60_000, broken_factor=2.0,
                            claimed_epsilon=claimed, delta=1e-5, seeds=([5, 1], [5, 2]), threshold=0.5,
                            scale=step_scaled, vectorized=True)


# ------------------------------------------------------------------ bad inputs
@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"regime": "quadratic"}, "regime"),
        ({"accountant": "cor36"}, "accountant"),
        ({"accountant": "gdp"}, "does not apply"),
        ({"epsilon": math.nan}, "epsilon"),
        ({"epsilon": math.inf}, "epsilon"),
        ({"delta": math.nan}, "delta"),
        ({"K": 0}, "K must be"),
        ({"K_out": 0}, "K_out must be"),
        ({"T": 0}, "T must be"),
        ({"T": 10**6}, "T must be"),
        ({"T": 10, "tau": 11}, "tau must be"),
        ({"tau": 0}, "tau must be"),
        ({"tau": 10**6}, "tau must be"),
        ({"t0": 0}, "t0 must be"),
        ({"step_size": -1.0}, "step_size must be"),
        ({"trace": 1}, "trace"),
        ({"enforce_privacy_cap": "yes"}, "enforce_privacy_cap"),
    ],
)
def test_bad_inputs(ls, kw, match):
    prob, data = ls
    base = {"epsilon": 1.0, "delta": 1e-6, "rng": np.random.default_rng(0)}
    base.update(kw)
    with pytest.raises((ValueError, TypeError), match=match):
        run_anytime_smd_sco(prob, data, **base)


def test_bad_problem_and_data(ls):
    prob, data = ls
    rng = np.random.default_rng(0)
    l2 = random_least_squares(LpBall(5, 2.0), 2.0, rng)
    with pytest.raises(ValueError, match="l1 setup"):
        run_anytime_smd_sco(l2, l2.sample(50, rng), epsilon=1.0, delta=1e-6, rng=rng)
    with pytest.raises(ValueError, match="Problem"):
        run_anytime_smd_sco("not a problem", data, epsilon=1.0, delta=1e-6, rng=rng)
    with pytest.raises(ValueError, match="Dataset"):
        run_anytime_smd_sco(prob, np.zeros((10, 12)), epsilon=1.0, delta=1e-6, rng=rng)
    bad = Dataset(np.full((5, 12), 3.0), np.zeros(5))  # ||a||_inf = 3 > 1
    with pytest.raises(ValueError, match="bounds"):
        run_anytime_smd_sco(prob, bad, epsilon=1.0, delta=1e-6, rng=rng)
    with pytest.raises((ValueError, TypeError), match="rng"):
        run_anytime_smd_sco(prob, data, epsilon=1.0, delta=1e-6, rng=0)
    with pytest.raises(ValueError, match="n_runs"):
        run_anytime_smd_sco_many(prob, data, n_runs=0, epsilon=1.0, delta=1e-6, rng=rng)
    with pytest.raises(ValueError, match="n_vertices"):
        alg5_theory_params(100, n_vertices=1, epsilon=1.0, delta=1e-6, L0=1.0, L1=1.0, L2=1.0, regime="first_order")
    with pytest.raises(ValueError, match="finite L2"):
        alg5_theory_params(100, n_vertices=10, epsilon=1.0, delta=1e-6, L0=1.0, L1=1.0, L2=math.inf,
                           regime="second_order")
    assert isinstance(prob.feasible_set, Simplex)


def test_design_table_rdp_16_nodes_per_decade_interpolates_the_exact_budget():
    """The design search reads RDP's per-draw budget from 16 nodes per decade (the others 64): log-log
    interpolation between nodes stays within 1e-3 of the exact calibration; the run's eps0 is exact."""
    import dpsco_lib.algorithms.anytime_smd as am

    lk, le = am._eps0_table(1.0, 1e-5, "rdp", 3)
    assert lk.size <= 3 * 16 + 1 and am._eps0_table(1.0, 1e-5, "advanced", 3)[0].size > 3 * 16 + 1
    for k in (7, 55, 333):
        exact = per_step_epsilon(1.0, 1e-5, k, accountant="rdp", mechanism="exponential").value
        assert math.exp(float(np.interp(math.log(k), lk, le))) == pytest.approx(exact, rel=1e-3)
