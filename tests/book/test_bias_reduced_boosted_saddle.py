"""Spec A3, A4: the hidden-vertex games, the second-moment bound and the needed-n of Algorithm 3, the diagnosis tasks
and the audit of Algorithm 4's exponential-mechanism selection (dpsco_book.bias_reduced_boosted_saddle)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsco_book import bias_reduced_boosted_saddle as sc
from dpsco_book.privacy_rule import DELTA_POWER
from dpsco_lib.algorithms.bias_reduced_saddle import (
    alg3_needed_n,
    alg3_second_moment_bound,
    alg3_theory_params,
    bias_reduced_gradient,
)
from dpsco_lib.problems import hidden_vertex_family, hidden_vertex_game


def test_hidden_vertex_game_closed_form_and_constants():
    g = hidden_vertex_game(6, 0.3, i_star=2, j_star=4)
    rng = np.random.default_rng(0)
    for _ in range(5):
        x, y = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
        assert g.duality_gap(x, y) == pytest.approx(g.gap_closed_form(x, y), abs=1e-12)
    u = np.full(6, 1 / 6)
    assert g.duality_gap(u, u) == pytest.approx(g.uniform_gap()) == pytest.approx(2 * 0.3 * 5 / 6)
    assert g.duality_gap(np.eye(6)[2], np.eye(6)[4]) == pytest.approx(0.0, abs=1e-12)
    data = g.sample(200, rng)
    gx = g.grad_x(np.stack([u, np.eye(6)[0]]), np.stack([u, np.eye(6)[3]]), data)
    assert np.max(np.abs(gx)) <= g.L0 + 1e-12 and g.L2 == 0.0
    fam = hidden_vertex_family(4, [0.1, 0.5])
    assert set(fam) == {0.1, 0.5} and all(m.L0 == 1.0 for m in fam.values())
    with pytest.raises(ValueError, match="gamma"):
        hidden_vertex_game(4, 1.5)


def test_second_moment_bound_quadratic_is_sure():
    """L2 = 0: the correction vanishes, so ||G||_inf <= L0 surely (M2 = L0^2); L2 > 0 keeps the worst case."""
    g = hidden_vertex_game(5, 0.5)
    rng = np.random.default_rng(1)
    batch = g.sample(50, rng)
    x, y = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
    for lev in range(4):
        o = bias_reduced_gradient(g, batch=batch, x=x, y=y, K=1, N_max=3, rng=rng, level=lev)
        assert max(np.max(np.abs(o.gx)), np.max(np.abs(o.gy))) <= g.L0 + 1e-9
    assert alg3_second_moment_bound(1.0, 1.0, 0.0, 5, K=1, N_max=3) == 1.0
    assert alg3_second_moment_bound(1.0, 1.0, 2.0, 5, K=1, N_max=3) > 50
    assert alg3_second_moment_bound(1.0, 1.0, math.inf, 5, K=1, N_max=3) > 50


def test_level_rule_and_needed_n():
    p0 = alg3_theory_params(64_000, (10, 10), 1.0, 64_000**-1.1, 1.0, 1.0, 0.0)
    assert p0.N_max == 0 and p0.second_moment == 1.0 and p0.accountant == "best" and p0.bias_term == 0.0
    pinf = alg3_theory_params(64_000, (10, 10), 1.0, 64_000**-1.1, 1.0, 1.0, math.inf)
    assert pinf.N_max >= 6
    n_need = alg3_needed_n((10, 10), 1.0, 1.0, 1.0, 0.0, target=0.3, delta_power=DELTA_POWER, rtol=0.05)
    b = alg3_theory_params(n_need, (10, 10), 1.0, n_need**-1.1, 1.0, 1.0, 0.0).bound
    b_lo = alg3_theory_params(int(n_need / 1.1), (10, 10), 1.0, int(n_need / 1.1) ** -1.1, 1.0, 1.0, 0.0).bound
    assert b <= 0.3 < b_lo
    assert alg3_needed_n((10, 10), 1.0, 1.0, 1.0, 0.0, target=1e-6, delta_power=DELTA_POWER, n_max=1000) == 1001


def test_tasks_return_measured_gaps():
    r = sc.a3_family_gap(rng=np.random.default_rng(0), n=4000, gamma=0.4)
    assert 0 <= r["gap"] <= 2 * 0.4 + 1e-12 and r["certified_eps"] <= 1.0 + 1e-9
    kw = sc.a3_cause_kwargs("before", 4000, (10, 10), 1.0, 1.0, 1.0)
    assert kw["accountant"] == "filter" and kw["second_moment"] > 10 and kw["N_max"] >= 1
    assert sc.a3_cause_kwargs("all three (defaults)", 4000, (10, 10), 1.0, 1.0, 1.0) == {
        "accountant": "best", "second_moment": 1.0, "N_max": 0}
    with pytest.raises(ValueError, match="cause"):
        sc.a3_cause_kwargs("nothing", 4000, (10, 10), 1.0, 1.0, 1.0)
    reg = sc.a3_regime(16_000, (10, 10), 1.0, 1.0, 1.0, 0.0)
    assert reg["eta"] == pytest.approx(min(reg["eta_cap"], reg["eta_stat"]))
    b = sc.alg4_bound(32_000, (10, 10), 1.0, beta=0.1, loss_bound=1.0)
    assert b["k"] == 6 and b["bound"] == pytest.approx(b["g1"] + 2 * b["H"] + b["S"])


def test_alg4_tail_run_and_tables():
    recs = [dict(sc.alg4_tail_run(rng=np.random.default_rng(s), n=6000, beta=0.25), n=6000) for s in range(3)]
    r = recs[0]
    assert r["certified_alg4"] <= 1.0 + 1e-9 and r["gap_alg4"] >= r["gap_best_candidate"] - 1e-12
    assert r["fw_error_selected"] >= -1e-12
    rows = sc.alg4_quantile_rows(recs)
    assert [q["runs"] for q in rows] == [3, 3, 3 * r["k"], 3]
    ci = sc.alg4_boost_ci(recs, 0.9, rng=np.random.default_rng(0), n_boot=100)
    assert ci["minus_candidate_lo"] <= ci["minus_candidate_hi"] and ci["factor"] == pytest.approx(math.sqrt(2 * r["k"]))


@pytest.mark.statistical
def test_alg4_selection_audit_catches_halved_sensitivity():
    """Audit of Algorithm 4's exponential-mechanism selection on a worst-case neighbouring pair of gap parts.

    False-alarm probability: the correct mechanism (exact loss 0.951 < eps = 1) is flagged only if a two-sided
    Clopper-Pearson interval at level 1e-3 fails, probability <= 1e-3.  The broken variant (sensitivity halved,
    i.e. exp(eps u/Delta); exact loss 1.99) escapes only if its lower bound falls below 1, i.e. the counts
    (~1850 and ~13200 of 2e6) miss their means by more than 25 standard deviations: probability < 1e-12.
    Fixed seed.
    """
    good = sc.alg4_selection_audit(epsilon=1.0, rng=np.random.default_rng(20261122))
    bad = sc.alg4_selection_audit(epsilon=1.0, rng=np.random.default_rng(20261123), sensitivity_factor=0.5)
    assert 0.5 < good["exact_loss"] <= 1.0 and good["epsilon_lower_bound"] <= good["exact_loss"]
    assert not good["caught"]
    assert bad["exact_loss"] > 1.9 and bad["caught"]


@pytest.mark.statistical
def test_a3_canary_audit_catches_broken_claims():
    """Canary audit of one vertex draw of Algorithm 3 (false alarm <= 0.05 by Clopper-Pearson; fixed seed)."""
    aud = sc.a3_canary_audit("correct", n_runs=20_000, rng=np.random.default_rng(5))
    assert aud["lower_bound"] <= aud["claims"]["correct"]
    lb, claims = aud["lower_bound"], aud["claims"]
    assert lb > claims["sensitivity halved"] and lb > claims["ignores w_N"]
    with pytest.raises(ValueError, match="variant"):
        sc.a3_canary_audit("other", n_runs=10, rng=np.random.default_rng(0))


def _lattice_records(rng: np.random.Generator, exponent: float, ns=(4000, 16000, 64000), reps: int = 6):
    """Gaps min(2 gamma, c n^exponent) with 5% multiplicative noise on the lattice; the trivial gap is 2 gamma."""
    x, y, fam, triv = [], [], [], []
    for n in ns:
        for g in sc.A3_LATTICE:
            for _ in range(reps):
                x.append(float(n))
                y.append(min(2 * g, 30.0 * n**exponent) * float(np.exp(0.05 * rng.standard_normal())))
                fam.append(g)
                triv.append(2 * g)
    return x, y, fam, triv


def test_a3_rate_claim_is_frozen_from_the_bound_and_has_power():
    ns = [4000, 16000, 64000]
    s = sc.a3_bound_slope(ns)
    claim = sc.a3_rate_claim(ns)
    assert -0.5 < s < -0.44 and claim.bounds == pytest.approx((-0.5, s))
    assert claim.neighbour == sc.A3_NEIGHBOUR == -0.4 and claim.statistic == "mean"
    assert claim.tolerance == sc.A3_TOLERANCE <= claim.gap / 2
    rng = np.random.default_rng(4)
    x, y, fam, triv = _lattice_records(rng, -0.49)
    out = claim.evaluate(x, y, family=fam, trivial=triv, rng=rng, required=0.8, n_boot=200, n_resamples=40)
    assert out.accepted and out.passed and out.power_trivial == 1.0
    x, y, fam, _ = _lattice_records(rng, -0.4)  # the neighbouring regime's decay must fail the claim
    assert not claim.evaluate(x, y, family=fam, rng=rng, required=0.8, n_boot=200, n_resamples=20).accepted
    with pytest.raises(ValueError, match="two distinct"):
        sc.a3_bound_slope([4000, 4000])


def test_a3_bound_claim_constant_one():
    claim = sc.a3_bound_claim()
    rng = np.random.default_rng(5)
    ns = [4000, 16000]
    b = {n: claim.bound(n) for n in ns}
    x = [n for n in ns for _ in range(4)]
    below = claim.evaluate(x, [0.7 * b[n] for n in x], rng=rng, required=0.8, n_resamples=20)
    above = claim.evaluate(x, [1.3 * b[n] for n in x], rng=rng, required=0.8, n_resamples=20)
    assert claim.constant == 1.0 and below.accepted and not above.accepted
    inner = sc.alg4_inner_bound_claim(32_000)
    n_c = 32_000 // 12
    assert inner.bound(n_c) == pytest.approx(
        alg3_theory_params(n_c, (10, 10), 1.0, 32_000**-1.1, 1.0, 1.0, 0.0).bound)
    x = [n_c] * 4 + [32_000] * 4
    out = inner.evaluate(x, [0.8 * inner.bound(v) for v in x], trivial=[1.44] * 8, rng=rng, required=0.8,
                         n_resamples=20)
    assert out.accepted and out.power_trivial == 1.0


def test_gap_tail_separates_light_and_heavy_tails():
    rng = np.random.default_rng(6)
    light = sc.gap_tail(1.0 + 0.05 * rng.standard_normal(4000))
    heavy = sc.gap_tail(rng.pareto(2.5, size=4000) + 0.1)
    assert abs(light["excess kurtosis"]) < 0.5 and light["cv"] == pytest.approx(0.05, rel=0.1)
    assert light["q90/q50"] == pytest.approx(1 + 0.05 * 1.2816, rel=0.01)
    assert heavy["excess kurtosis"] > 5 and heavy["max/q50"] > 10
    with pytest.raises(ValueError, match="values"):
        sc.gap_tail([0.1, 0.2])


def test_smooth_game_activates_the_multilevel_correction():
    g = sc.smooth_game()
    assert g.L2 > 0 and g.dx == g.dy == 5
    r = sc.alg4_smooth_run(rng=np.random.default_rng(7), n=4000, beta=0.25)
    assert r["N_max"] >= 1 and 0 <= r["top_level"] <= r["N_max"] and r["steps"] >= 1
    assert r["certified_alg3"] <= 1.0 + 1e-9 and r["certified_alg4"] <= 1.0 + 1e-9
    assert 0 <= r["gap_alg3"] and 0 <= r["gap_alg4"] and r["k"] == 4
    assert r["trivial"] == pytest.approx(g.duality_gap(np.full(5, 0.2), np.full(5, 0.2)))


def test_alg4_needed_n_brackets_the_crossing():
    kw = {"beta": 0.01, "L0": 1.0, "L1": 1.0, "L2": 0.0}
    n = sc.alg4_needed_n((10, 10), 1.0, target=0.5, **kw)
    assert sc.alg4_bound(int(n), (10, 10), 1.0, **kw)["bound"] <= 0.5
    assert sc.alg4_bound(int(n / 1.06), (10, 10), 1.0, **kw)["bound"] > 0.5
    assert sc.alg4_needed_n((10, 10), 1.0, target=1e-6, n_max=1e6, **kw) == math.inf
