"""Checks added for mutants of the mutation suite (``mutation/``) that the rest of the tests let survive.

Each test is a real check of the library's behaviour (an exact value, an ordering that a theorem guarantees, or a
statistical test with a stated false-alarm probability), never a test of source text. The mutant each one catches is
named in its docstring; ``make mutants`` runs them against it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpsco_lib.algorithms.dp_sgd import run_dp_sgd
from dpsco_lib.algorithms.mwem import run_mwem
from dpsco_lib.algorithms.poly_sfw import run_poly_sfw, run_poly_sfw_reference
from dpsco_lib.algorithms.registry import get_algorithm
from dpsco_lib.algorithms.vr_sensitivity import vr_sensitivities
from dpsco_lib.geometry.sets import L1Ball, LpBall, Simplex, vertex_oracle
from dpsco_lib.privacy.accounting import (
    GaussianEvent,
    SelfComposedEvent,
    SubsampledGaussianEvent,
    certify_events,
    gdp_epsilon,
    rdp_to_epsilon,
    to_replace_one,
)
from dpsco_lib.privacy.accounting.rdp import rdp_gaussian
from dpsco_lib.privacy.audit import mu_gdp_lower_bound
from dpsco_lib.privacy.mechanisms import exponential_mechanism_log_probs, gaussian_epsilon_analytic
from dpsco_lib.problems import Dataset, random_least_squares
from dpsco_lib.problems.base import Problem
from dpsco_lib.testing import noise_scaled


@pytest.mark.parametrize("delta", [1e-5, 1e-3, 0.1])
@pytest.mark.parametrize("noise_multiplier", [0.5, 1.0, 10.0, 100.0, 300.0, 1000.0, 3000.0])
def test_rdp_certificate_never_below_the_exact_gaussian_curve(noise_multiplier, delta):
    """RDP -> (eps, delta) is an upper bound: never below the tight mu-GDP curve of the same Gaussian mechanism.

    At delta = 1e-5 the exact epsilon is positive for every multiplier here (delta(0) = 2 Phi(1/(2m)) - 1 > delta).
    Large noise multipliers make the RDP curve tiny (alpha/(2 m^2) < delta at small orders), where a wrong
    Bretagnolle-Huber shortcut (``delta`` for ``delta**2``) certifies eps = 0 (mutant ``acc-rdp-zero-guard``).
    """
    eps_rdp, _ = rdp_to_epsilon(rdp_gaussian(noise_multiplier), orders=None, delta=delta)
    eps_exact = gdp_epsilon(1.0 / noise_multiplier, delta=delta)
    assert eps_rdp >= eps_exact * (1 - 1e-9)
    assert np.isfinite(eps_rdp)


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
# Algorithm 4: the selection is the exponential mechanism at the recorded budget and sensitivity
# (mutants alg-a4-score-sensitivity, alg-a4-selection-budget)
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("accountant", ["best", "advanced"])
def test_boosted_selection_temperature_matches_its_recorded_budget(accountant):
    """Algorithm 4 selects with P(j) prop. to exp(-eps_sel G_j / (2 Delta)), Delta = 2 max_i r_i / n_gap the
    replace-one sensitivity of a gap estimate, eps_sel the selection budget the ledger records. The realized
    log-probabilities reveal the inverse temperature; it must not exceed eps_sel / (2 Delta)."""
    rec = get_algorithm("A4 boosted")
    ex = rec.example(np.random.default_rng(0))
    # the inner Algorithm 1 runs are calibrated by the same accountant (its default "best" draws more per-draw
    # budget than DRV10 certifies)
    kwargs = {**ex.kwargs, "inner_kwargs": {**ex.kwargs["inner_kwargs"], "accountant": accountant}}
    res = rec.runner(*ex.args, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(1), accountant=accountant,
                     **kwargs)
    info, prm = res.info, res.params
    g, logp = np.asarray(info["estimated_gaps"]), np.asarray(info["selection_log_probs"])
    i, j = int(np.argmin(g)), int(np.argmax(g))
    assert g[j] > g[i]
    inv_temperature = (logp[i] - logp[j]) / (g[j] - g[i])
    delta_sens = 2.0 * float(np.max(info["score_ranges"])) / info["split"]["n_gap"]
    assert prm["score_sensitivity_used"] >= delta_sens * (1 - 1e-12)
    assert inv_temperature <= prm["epsilon_selection"] / (2.0 * delta_sens) * (1 + 1e-9)
    assert res.certified_epsilon(1e-5) <= 1.0 + 1e-12


# ---------------------------------------------------------------------------------------------------------------
# MWEM: the multiplicative-weights step and the selection law (mutants alg-mwem-mw-step, alg-mwem-selection-budget)
# ---------------------------------------------------------------------------------------------------------------
def _mwem_instance():
    r = np.random.default_rng(9)
    Q = (r.random((6, 8)) < 0.5).astype(np.float64)
    h = np.bincount(r.integers(0, 8, size=12), minlength=8).astype(np.float64)
    return h, Q


def test_mwem_one_round_is_the_hlm12_update():
    """T = 1, no extra passes, last iterate: x prop. to exp(q_j (m - n <q_j, u>)/(2n)) from the uniform u (HLM12)."""
    h, Q = _mwem_instance()
    res = run_mwem(h, Q, epsilon=1.0, rng=np.random.default_rng(3), T=1, passes=0, output="last")
    j, m = int(res.trace["selected"][0]), float(res.trace["measurements"][0])
    n, N = h.sum(), h.size
    est = n * float(Q[j] @ np.full(N, 1.0 / N))
    w = np.exp(Q[j] * (m - est) / (2.0 * n))
    np.testing.assert_allclose(res.x, w / w.sum(), rtol=1e-12)


@pytest.mark.statistical
def test_mwem_first_selection_is_the_exponential_mechanism_at_eps0():
    """The first selection of MWEM is the exponential mechanism on |n <q, u> - <q, h>| with sensitivity 1 and the
    recorded per-mechanism budget eps0. Chi-square goodness of fit of 6000 first selections against that law
    (false-alarm probability 1e-3); the law at 2 eps0 is rejected by the same test."""
    h, Q = _mwem_instance()
    n, N = h.sum(), h.size
    eps = 4.0
    first = run_mwem(h, Q, epsilon=eps, rng=np.random.default_rng(0), T=1)
    eps0 = first.params["eps_per_mechanism"]
    scores = np.abs(n * (Q @ np.full(N, 1.0 / N)) - Q @ h)
    law = np.exp(exponential_mechanism_log_probs(scores, sensitivity=1.0, epsilon=eps0))
    law2 = np.exp(exponential_mechanism_log_probs(scores, sensitivity=1.0, epsilon=2.0 * eps0))
    seeds = np.random.default_rng(11).integers(0, 2**63, size=6000)
    sel = np.array([int(run_mwem(h, Q, epsilon=eps, rng=np.random.default_rng(int(s)), T=1).trace["selected"][0])
                    for s in seeds])
    counts = np.bincount(sel, minlength=Q.shape[0])
    keep = law * sel.size >= 5  # chi-square cells with enough expected counts; the rest pooled
    obs = np.append(counts[keep], counts[~keep].sum())
    exp_ = np.append(law[keep], law[~keep].sum()) * sel.size
    exp2 = np.append(law2[keep], law2[~keep].sum()) * sel.size
    obs, exp_, exp2 = obs[exp_ > 0], exp_[exp_ > 0], exp2[exp_ > 0]
    assert stats.chisquare(obs, exp_).pvalue > 1e-3
    assert stats.chisquare(obs, exp2 * exp_.sum() / exp2.sum()).pvalue < 1e-3  # power against the 2 eps0 law


# ---------------------------------------------------------------------------------------------------------------
# Variance-reduced recursions (mutants alg-polysfw-vr-correction, alg-gg-naive-correction)
# ---------------------------------------------------------------------------------------------------------------
def test_poly_sfw_fast_loop_matches_the_reference_when_the_scores_decide():
    """The fast Poly-SFW loop reproduces the textbook loop bit for bit also with negligible noise, where every
    selection is decided by the variance-reduced estimate (at the theory noise the selections are noise-dominated
    and a wrong estimate can go unseen)."""
    rng = np.random.default_rng(5)
    for fset in (Simplex(20), L1Ball(20, 2.0)):
        prob = random_least_squares(fset, 1.0, rng, k=4)
        data = prob.sample(401, rng)
        kw = dict(epsilon=1.0, delta=1e-6, trace=True)
        with noise_scaled(1e-12):
            res = run_poly_sfw(prob, data, rng=np.random.default_rng(9), **kw)
            ref = run_poly_sfw_reference(prob, data, rng=np.random.default_rng(9), **kw)
        assert np.array_equal(res.trace["selected"], ref.trace["selected"])
        assert np.array_equal(res.x, ref.x)


def test_gg_vr_sfw_naive_estimate_is_exact_when_all_records_agree():
    """With n copies of one record every mini-batch gradient is the full gradient, so the variance-reduced estimate
    nabla_t = (1 - eta)(nabla_{t-1} + g_t(x_t) - g_t(x_{t-1})) + eta g_t(x_t) equals grad F(x_t) at every step
    (induction); with negligible noise the released estimates must be the gradients at the iterates they drive."""
    rec = get_algorithm("F3 GG-VR-SFW naive")
    ex = rec.example(np.random.default_rng(0))
    prob, data = ex.args[0], ex.args[1]
    same = Dataset(np.repeat(np.asarray(data.X)[:1], data.n, axis=0), np.repeat(np.asarray(data.y)[:1], data.n))
    with noise_scaled(1e-12):
        res = rec.runner(prob, same, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(1), trace=True,
                         **ex.kwargs)
    est, eta = res.trace["estimate"], float(res.params["step_size"])
    x = np.zeros(prob.d)  # the naive loop starts from x_0 = 0
    for t in range(est.shape[0]):
        np.testing.assert_allclose(est[t], prob.mean_grad(x, same), rtol=1e-7, atol=1e-9)
        x = (1.0 - eta) * x + eta * prob.feasible_set.lmo(est[t])


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


# ---------------------------------------------------------------------------------------------------------------
# Relation conversion: group privacy of two and its delta (mutants rel-group-of-two-delta, rel-conversion-delta-split)
# ---------------------------------------------------------------------------------------------------------------
def _subsampled_block():
    return to_replace_one(SelfComposedEvent(SubsampledGaussianEvent(1.2, 0.05), 200))


@pytest.mark.parametrize("delta", [1e-6, 1e-3])
def test_group_of_two_conversion_is_sound(delta):
    """(eps, d')-DP under add/remove gives (2 eps, (1 + e^eps) d') under replace-one: the replace-one certificate c
    of a converted block must come from an add/remove certificate c/2 valid at d' = delta/(1 + e^(c/2))."""
    block = _subsampled_block()
    # method "rdp" names the accountant of the (empty) rest; the block itself is certified by its best accountant
    c = certify_events((block,), delta, "rdp")
    d_prime = delta / (1.0 + math.exp(c / 2.0))
    assert certify_events(block.events, d_prime) <= c / 2.0 * (1 + 1e-9)


def test_conversion_blocks_and_the_rest_split_delta_in_half():
    """A run with a conversion block and other events: basic composition of the block at delta/2 and of the rest at
    delta/2 (module docstring of the ledger); both parts at their share, never the block at all of delta."""
    delta = 1e-5
    block, rest = _subsampled_block(), SelfComposedEvent(GaussianEvent(8.0), 20)
    total = certify_events((block, rest), delta, "rdp")
    expected = certify_events((block,), delta / 2.0, "rdp") + certify_events((rest,), delta / 2.0, "rdp")
    assert total == pytest.approx(expected, rel=1e-9)


# ---------------------------------------------------------------------------------------------------------------
# Noisy SGD: disjoint batches of exactly b records per epoch (mutant alg-noisysgd-batch-overlap)
# ---------------------------------------------------------------------------------------------------------------
def test_noisy_sgd_batches_are_disjoint_within_an_epoch():
    """Each epoch's Gaussian mechanism has sensitivity 2 L0/b only if its batches hold b records each and no record
    twice: the gradient oracle sees exactly b records per step, and within an epoch the records it sees are a
    sub-multiset of the data."""
    rec = get_algorithm("S2 noisy SGD")
    ex = rec.example(np.random.default_rng(0))
    prob, data = ex.args[0], ex.args[1]
    calls: list[np.ndarray] = []
    original = prob._mean_grad

    def recording(x, batch):
        calls.append(np.column_stack([np.asarray(batch.X), np.asarray(batch.y)]))
        return original(x, batch)

    prob._mean_grad = recording
    try:
        res = rec.runner(prob, data, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(1), **ex.kwargs)
    finally:
        del prob._mean_grad
    b, per_epoch = res.params["batch_size"], res.params["batches_per_epoch"]
    assert len(calls) == res.params["T"]
    assert all(c.shape[0] == b for c in calls)
    rows = np.column_stack([np.asarray(data.X), np.asarray(data.y)])
    have, n_have = np.unique(rows, axis=0, return_counts=True)
    avail = {r.tobytes(): c for r, c in zip(have, n_have, strict=True)}
    for e in range(0, len(calls), per_epoch):
        used, n_used = np.unique(np.concatenate(calls[e:e + per_epoch]), axis=0, return_counts=True)
        assert all(c <= avail.get(r.tobytes(), 0) for r, c in zip(used, n_used, strict=True)), f"epoch at step {e}"


@pytest.mark.statistical
def test_mwem_measurements_have_laplace_noise_of_scale_one_over_eps0():
    """Each MWEM measurement is the Laplace mechanism on a count of sensitivity 1 at the recorded eps0: the
    measurement errors of 4000 one-round runs follow Laplace(1/eps0) (Kolmogorov-Smirnov, false-alarm probability
    1e-3; noise of half that scale is rejected by the same test)."""
    h, Q = _mwem_instance()
    eps = 1.0
    eps0 = run_mwem(h, Q, epsilon=eps, rng=np.random.default_rng(0), T=1).params["eps_per_mechanism"]
    true = Q @ h
    seeds = np.random.default_rng(12).integers(0, 2**63, size=4000)
    err = []
    for s in seeds:
        tr = run_mwem(h, Q, epsilon=eps, rng=np.random.default_rng(int(s)), T=1).trace
        err.append(tr["measurements"][0] - true[int(tr["selected"][0])])
    err = np.asarray(err)
    assert stats.kstest(err, stats.laplace(scale=1.0 / eps0).cdf).pvalue > 1e-3
    assert stats.kstest(err, stats.laplace(scale=0.5 / eps0).cdf).pvalue < 1e-3


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
