"""Algorithms 2 and 3 of GGP24 (Spec A2, A3): the multilevel oracle's exact mean, its second moment, the filter-
guarded run (ledger, stopping, determinism), a canary audit with a correct and a broken accountant, bad inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

import dpsco_lib.algorithms.bias_reduced_saddle as brs
from dpsco_lib.algorithms.bias_reduced_saddle import (
    alg3_batch_sizes,
    alg3_draw_epsilon,
    alg3_theory_params,
    bias_reduced_estimate,
    bias_reduced_exact_mean,
    bias_reduced_gradient,
    estimate_oracle_second_moment,
    run_bias_reduced_smd_saddle,
    run_bias_reduced_smd_saddle_many,
    truncated_geometric_probabilities,
)
from dpsco_lib.privacy.accounting import filter_spend, max_composition_steps
from dpsco_lib.privacy.accounting.budget import filter_per_step_epsilon
from dpsco_lib.privacy.audit import canary_audit
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.games import BilinearGame, random_bilinear_game, random_quadratic_game, random_softmax_game
from dpsco_lib.problems.maurey_functions import LogSumExpFunction, maurey_exact_mean


@pytest.fixture(scope="module")
def game():
    rng = np.random.default_rng(5)
    g = random_bilinear_game(6, 5, rng)
    return g, g.sample(3000, rng)


@pytest.fixture(scope="module")
def lse():
    C = np.random.default_rng(11).uniform(-1, 1, size=(4, 3))
    return LogSumExpFunction(C, tau=0.3), np.array([0.5, 0.3, 0.2])


# ------------------------------------------------------------------ level law and batch rule
def test_truncated_geometric_exact():
    np.testing.assert_allclose(truncated_geometric_probabilities(3), np.array([8, 4, 2, 1]) / 15.0, rtol=0, atol=1e-15)
    assert truncated_geometric_probabilities(0).tolist() == [1.0]
    for nm in (1, 5, 20):
        p = truncated_geometric_probabilities(nm)
        assert abs(p.sum() - 1) < 1e-14 and np.allclose(p[:-1] / p[1:], 2.0)


@pytest.mark.parametrize("B", [1, 3, 22, 1000])
@pytest.mark.parametrize("N_max", [0, 1, 4, 9])
def test_batch_rule_keeps_sensitivity(B, N_max):
    """w_N/B_N <= w_0/B for every level, B_0 = B, and B_N is the smallest such integer."""
    p = truncated_geometric_probabilities(N_max)
    w = 1 + 2 / p
    bn = alg3_batch_sizes(B, N_max=N_max)
    assert bn[0] == B
    assert np.all(w / bn <= w[0] / B * (1 + 1e-15))
    assert np.all((bn - 1) * w[0] < B * w + 1e-9 * B * w)  # minimality (up to float)
    assert alg3_draw_epsilon(0.1, B=B, L0=2.0, N_max=N_max) == pytest.approx(4 * 0.1 * 2.0 * np.max(w / bn), rel=1e-15)
    assert alg3_draw_epsilon(0.1, B=B, L0=2.0, N_max=N_max) <= 4 * 0.1 * 2.0 * w[0] / B * (1 + 1e-15)


def test_batch_sizes_exact_small():
    # N_max = 1: p = (2/3, 1/3), w = (4, 7); B = 4 -> B_1 = ceil(28/4) = 7
    assert alg3_batch_sizes(4, N_max=1).tolist() == [4, 7]
    assert alg3_batch_sizes(1, N_max=2).tolist() == [1, 2, 4]  # p = (4, 2, 1)/7, w = (4.5, 8, 15)


# ------------------------------------------------------------------ Algorithm 2: exact mean and moments
@pytest.mark.parametrize(("K", "N_max"), [(1, 0), (1, 3), (2, 2)])
def test_exact_mean_telescopes(lse, K, N_max):
    """The law-of-total-expectation mean equals the plain Maurey mean with 2^{N_max+1} K vertices, and its bias
    is much smaller than that of plain sampling with the same expected number of draws."""
    f, x = lse
    ex = bias_reduced_exact_mean(f.grad, x=x, K=K, N_max=N_max)
    top = maurey_exact_mean(f.grad, x, K * 2 ** (N_max + 1))
    np.testing.assert_allclose(ex["mean"], top, rtol=0, atol=1e-12)
    grad = f.grad(x)
    bias = np.max(np.abs(ex["mean"] - grad))
    assert bias <= 2 * f.L2 / (K * 2 ** (N_max + 1))  # Cor 2.4
    m_eq = max(1, round(2 * K * (N_max + 1) / (2 - 2.0**-N_max)))  # E(#draws) = 2K(N_max+1)/Z
    bias_plain = np.max(np.abs(maurey_exact_mean(f.grad, x, m_eq) - grad))
    if N_max >= 2:
        assert bias < 0.5 * bias_plain


def test_bias_halves_per_level(lse):
    """Exact bias of Algorithm 2 against N_max: log2 slope -1 (bias ~ c/2^{N_max}) within 0.1 for N_max 3..7."""
    f, x = lse
    grad = f.grad(x)
    nm = np.arange(3, 8)
    b = [np.max(np.abs(bias_reduced_exact_mean(f.grad, x=x, K=1, N_max=int(k))["mean"] - grad)) for k in nm]
    slope = np.polyfit(nm, np.log2(b), 1)[0]
    assert abs(slope + 1) < 0.1, slope


@pytest.mark.statistical
@pytest.mark.parametrize("level", [None, 0, 2])
def test_sampler_matches_exact_mean(lse, level):
    """Monte Carlo mean of the implemented oracle vs the exact (conditional) mean: per-coordinate z-tests,
    Bonferroni over coordinates, false alarm 1e-3."""
    f, x = lse
    N_max, K, M = 3, 1, 60_000
    est, levels = bias_reduced_estimate(f.grad, x=x, K=K, N_max=N_max, rng=np.random.default_rng(7), size=M,
                                        level=level)
    ex = bias_reduced_exact_mean(f.grad, x=x, K=K, N_max=N_max)
    if level is None:
        target = ex["mean"]
        p = truncated_geometric_probabilities(N_max)
        assert stats.chisquare(np.bincount(levels, minlength=N_max + 1), M * p).pvalue > 1e-3
    else:
        b, p = ex["b"], ex["p"]
        target = b[K] + (b[K * 2 ** (level + 1)] - b[K * 2**level]) / p[level]
        assert np.all(levels == level)
    z = (est.mean(axis=0) - target) / (est.std(axis=0, ddof=1) / math.sqrt(M))
    assert np.max(np.abs(z)) < stats.norm.isf(1e-3 / (2 * z.size)), z


@pytest.mark.statistical
def test_second_moment_within_bound_and_linear(lse):
    """E||G - grad||_inf^2 stays below the Lemma-3.15-type bound used by alg3_theory_params and grows at most
    linearly in N_max (ratio N_max = 6 vs 0 at most 7 = (6+1)/(0+1))."""
    f, x = lse
    grad = f.grad(x)
    m2 = {}
    for N_max in (0, 3, 6):
        est, _ = bias_reduced_estimate(f.grad, x=x, K=1, N_max=N_max, rng=np.random.default_rng(N_max), size=40_000)
        m2[N_max] = float(np.mean(np.max(np.abs(est - grad), axis=1) ** 2))
        Z = 2 - 2.0**-N_max
        bound = 24 * Z * f.L1**2 * (math.log(f.d) + 0.5 * math.log(2)) * (N_max + 1)
        assert m2[N_max] <= bound
    assert m2[6] <= 7 * m2[0]


def test_saddle_oracle_bilinear_is_first_point_gradient(game):
    """Bilinear games have affine gradients, so the correction vanishes: G = g(first K) exactly (K = 1: the gradient
    at a pair of vertices), for every level."""
    g, data = game
    batch = data[:50]
    x, y = np.full(6, 1 / 6), np.full(5, 1 / 5)
    Gx_all = g.mean_grad_x(np.repeat(np.eye(6), 5, axis=0), np.tile(np.eye(5), (6, 1)), batch)  # (30, 6)
    for lev in (0, 3):
        o = bias_reduced_gradient(g, batch=batch, x=x, y=y, K=1, N_max=3, rng=np.random.default_rng(lev), level=lev,
                                  n_out=2)
        assert o.level == lev and o.n_draws == 2 ** (lev + 1) + 2
        assert o.p_level == pytest.approx(2.0**-lev / (2 - 2.0**-3))
        assert np.min(np.max(np.abs(Gx_all - o.gx), axis=1)) < 1e-12
        assert o.out_x is not None and np.isclose(o.out_x.sum(), 1) and set(np.unique(o.out_x * 2)) <= {0, 1, 2}


# ------------------------------------------------------------------ Algorithm 3: privacy accounting
@pytest.mark.parametrize("eps", [0.5, 2.0, 8.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-8])
@pytest.mark.parametrize("n", [400, 3000])
def test_ledger_certifies_target_and_filter_bound(game, eps, delta, n):
    g, data = game
    res = run_bias_reduced_smd_saddle(g, data[:n], epsilon=eps, delta=delta, rng=np.random.default_rng(n),
                                      accountant="filter")
    led, info, tr = res.ledger, res.info, res.trace
    D = info["n_draws"]
    assert D == int(tr["draws_per_step"].sum()) == led.total_count
    assert info["steps"] == tr["levels"].size and info["records_used"] == int(tr["batch_sizes"].sum()) <= n
    assert "certified_epsilon" not in info and info["filter_spent"] <= eps
    assert res.certified_epsilon(delta) == led.epsilon(delta) <= eps
    assert D == 0 or led.epsilon(delta, "kov") <= info["filter_spent"]
    eps_draw = res.params["eps_draw"]
    if D:
        assert info["filter_spent"] == pytest.approx(filter_spend(np.full(D, eps_draw), delta_prime=delta), rel=1e-12)
        # the filter never admits more draws than fixed-k composition at the same target
        assert D <= max_composition_steps(eps_draw, epsilon=eps, delta=delta, method="filter")
        assert D <= max_composition_steps(eps_draw, epsilon=eps, delta=delta, method="kov")
    if info["stopped_by"] == "filter":
        assert D + info["refused_draws"] > max_composition_steps(eps_draw, epsilon=eps, delta=delta, method="filter")
    else:
        assert info["stopped_by"] == "data" and info["refused_draws"] == 0
    # per-step batch sizes follow the level rule
    np.testing.assert_array_equal(tr["batch_sizes"], np.asarray(res.params["batch_sizes"])[tr["levels"]])
    np.testing.assert_array_equal(tr["draws_per_step"], 2 * (2 ** (tr["levels"] + 1) * res.params["K"] + 1))


@pytest.mark.parametrize("accountant", ["best", "rdp", "kov", "advanced", "basic", "paper"])
def test_fixed_count_accountants_stop_at_their_certified_draw_cap(game, accountant):
    """With a fixed-count accountant the run stops before its draws exceed the largest count that accountant
    certifies (the realized number of draws is data-independent, so ordinary composition applies)."""
    g, data = game
    kw = {"epsilon": 2.0, "delta": 1e-6, "N_max": 2, "B": 20}  # one design: eps0 compares accountants, not designs
    res = run_bias_reduced_smd_saddle(g, data, rng=np.random.default_rng(3), accountant=accountant, **kw)
    filt = run_bias_reduced_smd_saddle(g, data, rng=np.random.default_rng(3), accountant="filter", **kw)
    info, prm = res.info, res.params
    method = "advanced" if accountant == "paper" else accountant
    assert prm["accountant"] == info["accountant"] == accountant and "filter_spent" not in info
    assert info["n_draws"] <= info["draw_cap"] and res.certified_epsilon(1e-6, method) <= 2.0
    assert res.certified_epsilon(1e-6) <= 2.0
    if info["stopped_by"] == "filter":
        assert info["n_draws"] + info["refused_draws"] > info["draw_cap"]
    if accountant in ("best", "rdp", "kov"):  # at least as tight as the filter: a larger design budget
        assert prm["eps0"] >= filt.params["eps0"]


def test_large_eta_is_still_private(game):
    """Privacy does not rely on the step size: a huge eta makes every draw expensive and the filter stops early."""
    g, data = game
    res = run_bias_reduced_smd_saddle(g, data, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(1),
                                      step_size=5.0)
    assert res.info["stopped_by"] == "filter" and res.certified_epsilon(1e-6) <= 1.0
    assert res.params["eps_draw"] == pytest.approx(alg3_draw_epsilon(5.0, B=res.params["B"], L0=g.L0,
                                                                     N_max=res.params["N_max"]))


def test_filter_budget_and_theory_params():
    for eps, dl, k in [(1.0, 1e-6, 100), (8.0, 1e-8, 12345), (0.1, 1e-5, 1)]:
        e0 = filter_per_step_epsilon(eps, dl, k)
        assert max_composition_steps(e0, epsilon=eps, delta=dl, method="filter") >= k
        assert max_composition_steps(e0 * (1 + 1e-6), epsilon=eps, delta=dl, method="filter") < k + 1 + k * 1e-5
    prm = alg3_theory_params(50_000, (10, 10), 2.0, 1e-6, 2.0, 2.0, 10.0)
    assert prm.K == 1 and prm.batch_sizes[-1] <= 50_000 / 4 and prm.N_max <= math.ceil(math.log2(50_000) / 2)
    assert prm.step_size <= prm.step_size_cap * (1 + 1e-12) and prm.eps_draw <= prm.eps0 * (1 + 1e-12)
    assert prm.second_moment == prm.second_moment_bound
    p = truncated_geometric_probabilities(prm.N_max)
    assert prm.expected_batch == pytest.approx(float(p @ np.asarray(prm.batch_sizes)))
    assert prm.expected_draws == pytest.approx(2 * (2 * (prm.N_max + 1) / (2 - 2.0**-prm.N_max) + 1))
    assert prm.bias_term == pytest.approx(8 * 10.0 / 2 ** (prm.N_max + 1))
    # a smaller instance second moment gives a larger step and fewer, larger... never a different privacy rule
    prm2 = alg3_theory_params(50_000, (10, 10), 2.0, 1e-6, 2.0, 2.0, 10.0, N_max=prm.N_max, second_moment=4.0)
    assert prm2.step_size > prm.step_size and prm2.second_moment_bound == prm.second_moment_bound
    fixed = alg3_theory_params(5000, 7, 1.0, 1e-6, 1.0, 1.0, 0.0, K=2, N_max=3, B=10, step_size=0.01)
    assert (fixed.K, fixed.N_max, fixed.B, fixed.step_size) == (2, 3, 10, 0.01)
    assert fixed.eps_draw == pytest.approx(alg3_draw_epsilon(0.01, B=10, L0=1.0, N_max=3))


def test_softmax_game_runs_and_improves():
    g = random_softmax_game(6, 6, np.random.default_rng(2))
    data = g.sample(20_000, np.random.default_rng(3))
    M2 = estimate_oracle_second_moment(g, K=1, N_max=4, B=50, rng=np.random.default_rng(4), n_rep=200)
    assert 0 < M2 < 2 * g.L0**2 + 1e-12 + 10 * g.L0**2
    res = run_bias_reduced_smd_saddle(g, data, epsilon=8.0, delta=1e-6, rng=np.random.default_rng(5), second_moment=M2)
    u = np.full(6, 1 / 6)
    assert res.info["steps"] > 0 and res.certified_epsilon(1e-6) <= 8.0
    assert g.duality_gap(res.x, res.y) < g.duality_gap(u, u)


# ------------------------------------------------------------------ determinism and output
def test_determinism(game):
    g, data = game
    kw = {"epsilon": 2.0, "delta": 1e-6, "trace": True, "accountant": "filter"}
    a = run_bias_reduced_smd_saddle(g, data, rng=np.random.default_rng(9), **kw)
    b = run_bias_reduced_smd_saddle(g, data, rng=np.random.default_rng(9), **kw)
    c = run_bias_reduced_smd_saddle(g, data, rng=np.random.default_rng(10), **kw)
    assert np.array_equal(a.x, b.x) and np.array_equal(a.y, b.y)
    for k in ("levels", "batch_sizes", "draws_per_step", "filter_spent"):
        assert np.array_equal(a.trace[k], b.trace[k])
    assert all(np.array_equal(u, v) for u, v in zip(a.trace["draws"], b.trace["draws"], strict=True))
    assert a.info == b.info
    assert not (np.array_equal(a.x, c.x) and np.array_equal(a.trace["levels"], c.trace["levels"]))
    # the output is the average of the per-step output draws (last n_out = 1 column of each step's draws)
    T = a.info["steps"]
    xs = np.mean([np.eye(6)[d[0, -1]] for d in a.trace["draws"]], axis=0)
    np.testing.assert_allclose(a.x, xs, atol=1e-14)
    assert T == len(a.trace["draws"])
    assert all(d.shape == (2, 2 ** (lv + 1) + 1) for d, lv in zip(a.trace["draws"], a.trace["levels"], strict=True))


def test_many_replicas_match_single_run(game):
    """One replica of the vectorized runner is the single run, bit for bit; replicas share levels and stopping."""
    g, data = game
    kw = {"epsilon": 2.0, "delta": 1e-6}
    one = run_bias_reduced_smd_saddle(g, data, rng=np.random.default_rng(4), trace=True, **kw)
    many1 = run_bias_reduced_smd_saddle_many(g, data, n_runs=1, rng=np.random.default_rng(4), **kw)
    assert np.array_equal(one.x, many1["x"][0]) and np.array_equal(one.y, many1["y"][0])
    assert all(np.array_equal(a, b[0]) for a, b in zip(one.trace["draws"], many1["draws"], strict=True))
    assert one.info == many1["info"]
    many = run_bias_reduced_smd_saddle_many(g, data, n_runs=7, rng=np.random.default_rng(5), **kw)
    assert many["x"].shape == (7, 6) and many["y"].shape == (7, 5)
    assert np.allclose(many["x"].sum(axis=1), 1) and len({tuple(r) for r in many["x"]}) > 1
    assert all(d.shape == (7, 2, 2 ** (lv + 1) + 1) for d, lv in zip(many["draws"], many["levels"], strict=True))
    assert many["ledger"].total_count == many["info"]["n_draws"]


def test_max_steps_and_no_step(game):
    g, data = game
    res = run_bias_reduced_smd_saddle(g, data, epsilon=2.0, delta=1e-6, rng=np.random.default_rng(0), max_steps=3)
    assert res.info["steps"] == 3 and res.info["stopped_by"] == "max_steps"
    tiny = run_bias_reduced_smd_saddle(g, data, epsilon=1e-3, delta=1e-6, rng=np.random.default_rng(0),
                                       step_size=10.0)
    assert tiny.info["steps"] == 0 and tiny.ledger.total_count == 0 and tiny.certified_epsilon(1e-6) == 0.0
    assert tiny.ledger.epsilon(1e-6) == 0.0
    np.testing.assert_allclose(tiny.x, np.full(6, 1 / 6))


@pytest.mark.statistical
def test_step_levels_are_truncated_geometric(game):
    """With neither the filter nor the data binding, the executed levels are i.i.d. TruncGeom(N_max): chi-square,
    false alarm 1e-3."""
    g, data = game
    big = Dataset(np.tile(data.X, (40, 1)))
    res = run_bias_reduced_smd_saddle(g, big, epsilon=1e4, delta=1e-6, rng=np.random.default_rng(8), K=1, N_max=3,
                                      B=1, step_size=1e-3, max_steps=3000)
    assert res.info["stopped_by"] == "max_steps"
    counts = np.bincount(res.trace["levels"], minlength=4)
    assert stats.chisquare(counts, 3000 * truncated_geometric_probabilities(3)).pvalue > 1e-3


# ------------------------------------------------------------------ canary audit
class _CanaryGame(BilinearGame):
    """A = 0, s = 1 (L0 = 1) with the x-gradient multiplied by phi(x) = +1 if the first half of x has mass >= 1/2,
    else -1 (|phi| = 1 keeps L0; convexity is irrelevant to privacy).  At K = 1, N_max = 0 the step-1 draws
    (i1, i2) give G = g(e_i1)/2 + g((e_i1 + e_i2)/2) - g(e_i2)/2; when i1 is in the first half and i2 in the second,
    phi = (+1, +1, -1) and G = 2u for the canary record (u, 1): the multilevel correction doubles the
    influence of the record -- the worst case the sensitivity factor w_0 = 3 is there for (2 of 3 attained)."""

    def _grad_x(self, x, y, data):
        h = self.dx // 2
        phi = np.where(x[:, :h].sum(axis=1) >= 0.5 - 1e-12, 1.0, -1.0)
        return phi[:, None, None] * self._bil_grad_x(x, y, data)


def _audit(broken: bool, n_runs: int, seed: int, monkeypatch):
    d, eta = 20, 0.5
    g = _CanaryGame(np.zeros((d, d)), noise=1.0)
    u = -np.ones(d)
    u[0] = 1.0
    S = Dataset(np.vstack([np.concatenate([u, np.ones(d)]), np.zeros(2 * d)]))
    S2 = S.replace_one(0, (np.concatenate([-u, np.ones(d)]), None))
    if broken:  # the accountant forgets the multilevel factor w_N = 1 + 2/p_N; the sampler is unchanged
        def forgetful(eta_, *, B, L0, N_max):
            return float(4.0 * eta_ * L0 / B)

        monkeypatch.setattr(brs, "alg3_draw_epsilon", forgetful)
    kw = {"epsilon": 400.0, "delta": 1e-6, "K": 1, "N_max": 0, "B": 1, "step_size": eta}
    ref = run_bias_reduced_smd_saddle(g, S, rng=np.random.default_rng(0), trace=True, **kw)
    assert ref.info["steps"] == 2 and ref.certified_epsilon(1e-6) <= 400.0
    claimed = ref.ledger.events[0].epsilon  # per-draw epsilon the ledger charges

    def run_many(data, rng, m):
        dr = run_bias_reduced_smd_saddle_many(g, data, n_runs=m, rng=rng, **kw)["draws"]  # N_max = 0: i.i.d. runs
        i1, i2 = dr[0][:, 0, 0], dr[0][:, 0, 1]
        return ((i1 < d // 2) & (i2 >= d // 2) & (dr[1][:, 0, 2] == 0)).astype(float)  # pattern, then e_1 at step 2

    res = canary_audit(None, S, S2, lambda t: np.asarray(t), n_runs, 1e-3, np.random.default_rng(seed),
                       threshold=0.5, claimed_epsilon=claimed, delta=0.0, run_many=run_many, statistic_vectorized=True)
    exact = float(logsumexp(-2 * eta * u) - logsumexp(2 * eta * u) + 4 * eta)  # log P'(e_1)/P(e_1) given the pattern
    return res, exact, claimed


@pytest.mark.statistical
def test_canary_audit_correct_and_broken(monkeypatch):
    """Correct accountant: the exact loss of the audited draw is <= the claimed 4 eta L0 w_0/B and the audited
    lower bound stays below the claim.  Broken accountant (ignores w_N): the claim falls below the exact loss and
    the audit catches it.  False alarm of each bound 1e-3 (exact Clopper-Pearson, fixed threshold)."""
    res, exact, claimed = _audit(False, 40_000, 1, monkeypatch)
    assert claimed == pytest.approx(4 * 0.5 * 1.0 * 3.0)
    assert exact <= claimed and exact > 0.5 * claimed
    assert not res.violation and res.epsilon_lower_bound <= claimed
    bad, exact_b, claimed_b = _audit(True, 40_000, 2, monkeypatch)
    assert claimed_b == pytest.approx(2.0) and exact_b > claimed_b
    assert bad.violation, f"broken accountant not caught: lb {bad.epsilon_lower_bound} vs claimed {claimed_b}"


# ------------------------------------------------------------------ bad inputs
@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"epsilon": 0.0}, "epsilon must be"),
        ({"delta": 0.0}, "delta must lie"),
        ({"delta": 1.5}, "delta must lie"),
        ({"K": 0}, "K must be"),
        ({"N_max": -1}, "N_max must be"),
        ({"N_max": 31}, "N_max must be"),
        ({"B": 0}, "B must be"),
        ({"B": 10**6}, "B must be"),
        ({"step_size": 0.0}, "step_size must be"),
        ({"step_size": -1.0}, "step_size must be"),
        ({"n_out": 0}, "n_out must be"),
        ({"max_steps": 0}, "max_steps must be"),
        ({"trace": "yes"}, "trace"),
        ({"accountant": "optimal"}, "accountant must be"),
        ({"second_moment": -1.0}, "second_moment must be"),
        ({"rng": 0}, "rng"),
    ],
)
def test_bad_inputs(game, kw, match):
    g, data = game
    args = {"epsilon": 1.0, "delta": 1e-6, "rng": np.random.default_rng(0)} | kw
    with pytest.raises((ValueError, TypeError), match=match):
        run_bias_reduced_smd_saddle(g, data, **args)


def test_bad_problem_data_and_oracle_inputs(game, lse):
    g, data = game
    with pytest.raises(ValueError, match="SaddleProblem"):
        run_bias_reduced_smd_saddle(object(), data, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="Dataset"):
        run_bias_reduced_smd_saddle(g, np.zeros((10, 11)), epsilon=1.0, delta=1e-6, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="bounds"):
        run_bias_reduced_smd_saddle(g, Dataset(2 * np.ones((10, 11))), epsilon=1.0, delta=1e-6,
                                    rng=np.random.default_rng(0))
    x, y = np.full(6, 1 / 6), np.full(5, 1 / 5)
    with pytest.raises(ValueError, match="level must be"):
        bias_reduced_gradient(g, batch=data[:5], x=x, y=y, K=1, N_max=2, rng=np.random.default_rng(0), level=3)
    with pytest.raises(ValueError, match="sizes"):
        bias_reduced_gradient(g, batch=data[:5], x=y, y=x, K=1, N_max=2, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="sum to 1"):
        bias_reduced_gradient(g, batch=data[:5], x=2 * x, y=y, K=1, N_max=2, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="batch must be"):
        bias_reduced_gradient(g, batch=np.zeros((5, 11)), x=x, y=y, K=1, N_max=2, rng=np.random.default_rng(0))
    f, xf = lse
    with pytest.raises(ValueError, match="size must be"):
        bias_reduced_estimate(f.grad, x=xf, K=1, N_max=2, rng=np.random.default_rng(0), size=0)
    with pytest.raises(ValueError, match="d must be"):
        alg3_theory_params(100, (3, 4, 5), 1.0, 1e-6, 1.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="L0 must be"):
        alg3_theory_params(100, 3, 1.0, 1e-6, 0.0, 1.0, 0.0)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bitwise equality of float arrays (NaN payloads aside: equal_nan)."""
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=True) and np.array_equal(np.signbit(a), np.signbit(b))


# ---------------------------------------------------------------------------------------------------------
# Algorithms 2 and 3
# ---------------------------------------------------------------------------------------------------------
def test_level_draws_with_a_precomputed_table_consume_and_return_the_same():
    p = brs.truncated_geometric_probabilities(6)
    r1, r2 = np.random.default_rng(8), np.random.default_rng(8)
    cdf = brs._level_cdf(p)
    for _ in range(200):
        assert np.array_equal(brs._draw_levels(p, r1, 1), brs._draw_levels(p, r2, 1, cdf))
    assert np.array_equal(brs._draw_levels(p, r1, 500), brs._draw_levels(p, r2, 500, cdf))
    assert r1.random() == r2.random()  # the same stream position afterwards


def test_batch_mean_equals_ndarray_mean():
    rng = np.random.default_rng(2)
    for shape in ((4, 1, 3), (4, 17, 9), (8, 1000, 5), (4, 3, 1)):
        g = rng.standard_normal(shape) * 10.0 ** rng.uniform(-50, 50, size=shape)
        assert _same(brs._batch_mean(g), g.mean(axis=1))


@pytest.mark.parametrize("make", [random_bilinear_game, random_quadratic_game])
def test_saddle_oracle_matches_the_checked_oracle_calls(make):
    rng = np.random.default_rng(6)
    problem = make(7, 9, rng)
    batch = problem.sample(150, rng)
    m_rep, dm = 3, 9
    log_state = np.full((m_rep, 2, dm), -np.inf)
    log_state[:, 0, :7] = np.log(rng.dirichlet(np.ones(7), m_rep))
    log_state[:, 1, :9] = np.log(rng.dirichlet(np.ones(9), m_rep))
    for level in (0, 2, 4):
        pl = 0.3
        Gx, Gy, idx, out = brs._saddle_oracle(problem, batch, log_state, 2, level, pl, 3, np.random.default_rng(level))
        # reference: the same vertex draws through the public, checked oracles and ndarray.mean
        m = (2 ** (level + 1)) * 2
        pts = brs._multilevel_points(idx.reshape(2 * m_rep, -1)[:, :m], 2, dm).reshape(m_rep, 2, 4, dm)
        X = pts[:, 0, :, :7].reshape(4 * m_rep, 7)
        Y = pts[:, 1, :, :9].reshape(4 * m_rep, 9)
        gx = problem.grad_x(X, Y, batch).mean(axis=1).reshape(m_rep, 4, 7)
        gy = problem.grad_y(X, Y, batch).mean(axis=1).reshape(m_rep, 4, 9)
        assert _same(Gx, brs._combine(gx, pl)) and _same(Gy, brs._combine(gy, pl))
        assert out.shape == (m_rep, 2, dm)


@pytest.mark.parametrize(("make", "dims", "accountant"), [(random_bilinear_game, (6, 6), "filter"),
                                                          (random_quadratic_game, (7, 7), "filter"),
                                                          (random_bilinear_game, (5, 8), "best")])
def test_alg3_run_reproduces_the_reference_loop(make, dims, accountant):
    """The vectorized Algorithm 3 equals the library's readable loop: bit for bit when dx = dy, to 1e-12 when the
    fast path pads the smaller player (a different shift of the entropic step)."""
    problem = make(*dims, np.random.default_rng(4))
    data = problem.sample(2500, np.random.default_rng(5))
    kw = {"epsilon": 3.0, "delta": 1e-6, "N_max": 3, "accountant": accountant}
    fast = brs.run_bias_reduced_smd_saddle(problem, data, rng=np.random.default_rng(6), **kw)
    ref = brs.run_bias_reduced_smd_saddle_reference(problem, data, rng=np.random.default_rng(6), **kw)
    assert fast.info["steps"] == ref.info["steps"] > 0 and fast.info["n_draws"] == ref.info["n_draws"]
    assert fast.ledger.events == ref.ledger.events
    if dims[0] == dims[1]:
        assert _same(fast.x, ref.x) and _same(fast.y, ref.y)
    else:
        np.testing.assert_allclose(fast.x, ref.x, rtol=0, atol=1e-12)
        np.testing.assert_allclose(fast.y, ref.y, rtol=0, atol=1e-12)
