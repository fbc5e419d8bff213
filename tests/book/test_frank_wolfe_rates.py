"""Notebook-05 experiment helpers (Spec F1, F2, S2): grids without capped members, worst-case fits, calibration
runs, the Euclidean member of the hard linear family in the noisy-SGD task, and S2 on the fingerprinting family
(the l2 lower-bound construction): task, cross grid, predicted ranges, verdict rows (which fail on wrong curves)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsco_book import frank_wolfe_rates as fc
from dpsco_book.frank_wolfe_rates import (
    bound_exponent,
    bound_terms,
    calibration_runs,
    fit_worst,
    gamma_for,
    hard_linear_task,
    n_needed,
    rate_grid,
    worst_case_values,
)
from dpsco_lib.experiments import BoundClaim, Verdict


def test_rate_grid_drops_capped_values():
    grid, dropped = rate_grid("poly_sfw", [1000, 60_000], vary="n", d=2, eps=2.0, mults=[1, 3])
    assert dropped == [1000] and {g["n"] for g in grid} == {60_000} and len(grid) == 2
    assert all(gamma_for("poly_sfw", g["n"], 2, 2.0, g["mult"]) < 1 for g in grid)
    grid_d, dropped_d = rate_grid("noisy_sgd", [64, 10**6], vary="d", n=2000, eps=1.0, mults=[1], p=2)
    assert dropped_d == [10**6] and grid_d[0]["d"] == 64 and grid_d[0]["p"] == 2
    with pytest.raises(ValueError, match="vary"):
        rate_grid("poly_sfw", [10], vary="eps", eps=1.0, mults=[1])


def test_gamma_for_euclidean_member_scales_the_signal():
    b = sum(bound_terms("noisy_sgd", 2000, 64, 1.0, p=2))
    assert b == pytest.approx(2 / np.sqrt(2000) + 2 * np.sqrt(64 * 1.1 * np.log(2000)) / 2000)
    assert gamma_for("noisy_sgd", 2000, 64, 1.0, 1.0, p=2) == pytest.approx(b * np.sqrt(2))


def test_fit_worst_reads_the_worst_member():
    recs = [{"n": n, "mult": m, "excess": (m * n ** -0.5 if m == 2 else 0.1 * n ** -0.5)} for n in (100, 400, 1600)
            for m in (1, 2) for _ in range(3)]
    fit = fit_worst(recs, "n", rng=np.random.default_rng(0), n_boot=200)
    assert fit.slope == pytest.approx(-0.5) and fit.ci_low == pytest.approx(-0.5)


def test_noisy_sgd_task_on_the_euclidean_member_measures_the_nonprivate_error():
    out = hard_linear_task(rng=np.random.default_rng(0), alg="noisy_sgd", n=400, d=16, eps=1.0, mult=1.0, p=2)
    assert out["trivial"] == pytest.approx(out["gamma"] / np.sqrt(2)) and not out["capped"]
    assert 0 < out["excess_nonprivate"] <= out["trivial"] and out["eps_certified"] <= 1.0 + 1e-9
    with pytest.raises(ValueError, match="p = 2"):
        hard_linear_task(rng=np.random.default_rng(0), alg="poly_sfw", n=400, d=16, eps=1.0, mult=1.0, p=2)


@pytest.mark.parametrize("alg", ["poly_sfw", "tree_fw"])
def test_calibration_runs_certify_and_gain(alg):
    runs, gain = calibration_runs(alg, 4000, 3, 1.0, np.random.default_rng(1))
    delta = 4000 ** -1.1
    paper, best = runs.values()
    assert best.certified_epsilon(delta) <= 1.0 + 1e-9 and paper.certified_epsilon(delta) <= 1.0 + 1e-9
    assert gain > 1.0
    with pytest.raises(ValueError, match="alg"):
        calibration_runs("noisy_sgd", 4000, 3, 1.0, np.random.default_rng(1))


def test_poly_sfw_exponent_range_brackets_the_closed_form_bound() -> None:
    ns = [6e4, 1.2e5, 2.4e5, 4.8e5]
    lo, hi = fc.poly_sfw_exponent_range(ns, d=2, eps=2.0)
    closed = fc.bound_exponent("poly_sfw", ns, vary="n", d=2, eps=2.0)
    assert lo == -0.5 and closed <= hi < -0.3  # the closed form is one member of the family; all decay
    narrow = fc.poly_sfw_exponent_range(ns, d=2, eps=2.0, log_scales=(1.0,), accountants=("paper",))[1]
    assert abs(narrow - closed) < 0.01  # the paper's eps0 reproduces the closed form's slope
    with pytest.raises(ValueError, match="ns"):
        fc.poly_sfw_exponent_range([1e4], d=2, eps=2.0)
    with pytest.raises(ValueError, match="log_scales"):
        fc.poly_sfw_exponent_range(ns, d=2, eps=2.0, log_scales=(0.0,))


# --- S2 on the fingerprinting family (the l2 lower-bound construction) ---------------------------------------------

N_S2, D_S2, DS_S2, NS_S2 = 2000, 512, (256, 512, 1024), (1414, 2000, 2828)


def _private_term(n, d):
    return np.sqrt(d * 1.1 * np.log(n)) / n


def _synthetic_s2(err, *, nonprivate=0.2, peak=0.35, seed=0):
    """Records of the S2 cross grid whose per-member error is ``err(n, d) x shape(alpha)`` (maximal at ``peak``),
    with 2% replicate noise; the non-private error is ``nonprivate`` times the worst private one."""
    rng = np.random.default_rng(seed)
    recs = []
    for g in fc.s2_grid(n=N_S2, ds=DS_S2, d=D_S2, ns=NS_S2):
        shape = (g["alpha"] / peak) * np.exp(1.0 - g["alpha"] / peak)
        for _ in range(3):
            e = err(g["n"], g["d"]) * shape * np.exp(0.02 * rng.standard_normal())
            recs.append(dict(g, excess=e, trivial=0.58 * g["alpha"], ratio=e / (0.58 * g["alpha"]), steps=10,
                             batch_bftt19=100, excess_bftt19_batch=3 * e,
                             excess_nonprivate=nonprivate * err(g["n"], g["d"]) * shape))
    return recs


def _s2_verdict(recs):
    v = Verdict("test")
    f1 = fc.bound_exponent("poly_sfw", DS_S2, vary="d", n=480_000, eps=1.0)
    claims = fc.s2_claims(n=N_S2, d=D_S2, ds=DS_S2, ns=NS_S2, eps=1.0, neighbour_d=f1)
    fc.check_s2(v, recs, claims, n=N_S2, d=D_S2, f1_slope=f1, rng=np.random.default_rng(1), required=0.8,
                n_boot=200, n_resamples=50)
    return {name: ok for name, ok, _ in v.checks}


def test_bound_exponent_range_spans_the_bound_and_its_privacy_term():
    lo, hi = fc.bound_exponent_range("noisy_sgd", [1024, 2048, 4096, 8192], vary="d", n=4000, eps=1.0, p=2)
    assert hi == pytest.approx(0.5) and lo == pytest.approx(
        fc.bound_exponent("noisy_sgd", [1024, 2048, 4096, 8192], vary="d", n=4000, eps=1.0, p=2))
    assert 0.3 < lo < 0.4  # the statistical term 2/sqrt(n) still weighs at n = 4000
    ns = [2828, 4000, 5657, 8000]
    lo, hi = fc.bound_exponent_range("noisy_sgd", ns, vary="n", d=2048, eps=1.0, p=2)
    priv = np.polyfit(np.log(ns), np.log([_private_term(n, 2048) for n in ns]), 1)[0]
    assert lo == pytest.approx(priv) and -0.95 < lo < -0.93  # -1 plus the slope of sqrt(1.1 ln n)
    assert hi == pytest.approx(fc.bound_exponent("noisy_sgd", ns, vary="n", d=2048, eps=1.0, p=2)) and hi < -0.7
    with pytest.raises(ValueError, match="term"):
        fc.bound_exponent("noisy_sgd", ns, vary="n", d=2048, eps=1.0, p=2, term="statistical")


def test_fingerprint_sgd_task_checks_the_full_batch_run_on_the_l2_construction():
    from dpsco_lib.algorithms.noisy_sgd import run_noisy_sgd
    from dpsco_lib.problems.hard_lp import FingerprintLinearLp, fingerprint_prior

    out = fc.fingerprint_sgd_task(rng=np.random.default_rng(3), n=600, d=64, alpha=0.5)
    rng = np.random.default_rng(3)  # the same draws, in the task's order
    prob = FingerprintLinearLp(2.0, fingerprint_prior(64, rng), 0.5)
    data = prob.sample(600, rng)
    full = run_noisy_sgd(prob, data, epsilon=1.0, delta=600**-1.1, rng=rng, batch_size=600)
    assert out["excess"] == pytest.approx(prob.excess_risk(full.x)) and out["trivial"] == prob.trivial_excess()
    assert out["steps"] == full.params["T"] and out["batch_bftt19"] < 600
    assert out["eps_certified"] <= 1.0 + 1e-9 and out["delta"] == pytest.approx(600**-1.1)
    assert 0 < out["excess_nonprivate"] < out["trivial"] and 0 < out["excess"] < out["trivial"]
    with pytest.raises(ValueError, match="alpha"):
        fc.fingerprint_sgd_task(rng=np.random.default_rng(0), n=600, d=64, alpha=1.5)


def test_s2_grid_is_a_cross_through_the_shared_point():
    grid = fc.s2_grid(n=N_S2, ds=DS_S2, d=D_S2, ns=NS_S2, alphas=[1.0, 0.5, 0.25])
    points = {(g["n"], g["d"]) for g in grid}
    assert points == {(2000, 256), (2000, 512), (2000, 1024), (1414, 512), (2828, 512)} and len(grid) == 15
    assert len(fc.S2_ALPHAS) == 9 and fc.S2_ALPHAS[0] == 1.0 and fc.S2_ALPHAS[-1] == pytest.approx(1 / 16)
    with pytest.raises(ValueError, match="both arms"):
        fc.s2_grid(n=4000, ds=DS_S2, d=D_S2, ns=NS_S2)
    with pytest.raises(ValueError, match="alphas"):
        fc.s2_grid(n=N_S2, ds=DS_S2, d=D_S2, ns=NS_S2, alphas=[1.0, 0.5])


def test_check_s2_passes_on_the_privacy_term():
    ok = _s2_verdict(_synthetic_s2(_private_term))
    assert all(ok.values()), ok


@pytest.mark.parametrize(("err", "row"), [
    (lambda n, d: 1.0 / n, "exponent in d"),                        # no d-dependence (a dimension-free error)
    (lambda n, d: np.log(2 * d) / n, "exponent in d"),              # a ln|V| growth
    (lambda n, d: d**0.25 / np.sqrt(n), "exponent in n"),           # the statistical regime in n
])
def test_check_s2_fails_on_a_wrong_curve(err, row):
    ok = _s2_verdict(_synthetic_s2(err))
    assert not next(v for k, v in ok.items() if row in k), ok


def test_check_s2_fails_outside_the_regime_or_at_the_cap():
    ok = _s2_verdict(_synthetic_s2(_private_term, nonprivate=0.7))
    assert not next(v for k, v in ok.items() if "regime" in k)
    ok = _s2_verdict(_synthetic_s2(_private_term, peak=3.0))  # error increasing in alpha: worst at alpha = 1
    assert not next(v for k, v in ok.items() if "inside the family" in k)


def test_s2_table_and_figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recs = _synthetic_s2(_private_term)
    rows = fc.s2_table(recs)
    assert len(rows) == 5 and all(r["worst alpha"] == pytest.approx(0.3536, abs=1e-3) for r in rows)
    assert all(r["non-private / private"] == pytest.approx(0.2, rel=0.1) for r in rows)
    fits = fc.s2_fits(recs, n=N_S2, d=D_S2, eps=1.0, rng=np.random.default_rng(0), n_boot=100)
    assert fits["d"][0].slope == pytest.approx(0.5, abs=0.03) and fits["d"][1][1] == pytest.approx(0.5)
    fig, axes = plt.subplots(1, 2)
    fc.plot_s2(axes, recs, fits, n=N_S2, d=D_S2)
    assert len(axes[0].lines) >= 5 and axes[1].get_xlabel() == "$n$"
    plt.close(fig)


def test_bound_terms_and_exponents():
    stat, priv = bound_terms("poly_sfw", 1e5, 10, 1.0)
    assert stat == 0.0 and priv == pytest.approx(2 * math.log(20) * math.log(1e5 / math.log(20))
                                                 * math.sqrt(1.1 * math.log(1e5)) / math.sqrt(1e5))
    s, p = bound_terms("noisy_sgd", 1e4, 100, 2.0)
    assert s == pytest.approx(20 / 100) and p == pytest.approx(20 * math.sqrt(100 * 1.1 * math.log(1e4)) / 2e4)
    assert -0.5 < bound_exponent("poly_sfw", [1e4, 1e5, 1e6], vary="n", d=10, eps=1.0) < -0.3
    assert 0.0 < bound_exponent("noisy_sgd", [10, 100], vary="d", n=1e4, eps=1.0) < 1.0
    assert gamma_for("tree_fw", 100, 10, 1.0, 8.0) == 1.0
    with pytest.raises(ValueError):
        bound_terms("sgd", 100, 2, 1.0)
    with pytest.raises(ValueError):
        bound_exponent("poly_sfw", [10], vary="n", d=2, eps=1.0)


def test_n_needed_inverts_the_bound():
    n = n_needed(0.5, 10, 2.0, L0=1.0, L1=0.0, D=2.0)
    assert bound_terms("poly_sfw", n, 10, 2.0)[1] == pytest.approx(0.5, rel=1e-6)
    assert n_needed(1e-9, 10, 1.0, L0=1.0, L1=0.0, D=2.0, n_max=1e6) == math.inf


def test_task_and_worst_case_values():
    recs = []
    for alg in ("poly_sfw", "tree_fw", "noisy_sgd"):
        out = hard_linear_task(rng=np.random.default_rng(0), alg=alg, n=400, d=3, eps=2.0, gamma=0.5)
        assert 0 < out["excess"] <= 2 * out["trivial"] + 1e-12 and out["eps_certified"] <= 2.0 * (1 + 1e-9)
        recs.append({"n": 400, "mult": alg, **out})
    xs, vals, worst = worst_case_values(recs, "n")
    assert xs.tolist() == [400.0] and vals[0][0] == max(r["excess"] for r in recs)
    assert worst[0] == max(recs, key=lambda r: r["excess"])["mult"]


# --- declared claims on the fixed lattice (F1, F2) and S2's claims -----------------------------------------------


def test_lattice_is_fixed_and_spans_two_decades():
    grid = fc.lattice_grid("poly_sfw", [60_000, 120_000], vary="n", d=2, eps=2.0)
    by_n = {n: sorted(g["gamma"] for g in grid if g["n"] == n) for n in (60_000, 120_000)}
    assert by_n[60_000] == by_n[120_000] == sorted(fc.GAMMAS) and max(fc.GAMMAS) / min(fc.GAMMAS) >= 100
    grid_d = fc.lattice_grid("tree_fw", [10, 1000], vary="d", n=10_000, eps=1.0)
    assert {g["n"] for g in grid_d} == {10_000} and {g["d"] for g in grid_d} == {10, 1000}
    with pytest.raises(ValueError, match="two decades"):
        fc.lattice_grid("poly_sfw", [100, 200], vary="n", d=2, eps=1.0, gammas=[0.1, 1.0])
    with pytest.raises(ValueError, match="vary"):
        fc.lattice_grid("poly_sfw", [100, 200], vary="eps", eps=1.0)


def test_log_factor_is_the_bounds_logarithms():
    n, d = 1e5, 10
    assert fc.log_factor("poly_sfw", n, d) * 2 / (1.0 * math.sqrt(n)) == pytest.approx(
        bound_terms("poly_sfw", n, d, 1.0)[1])
    assert fc.log_factor("tree_fw", n, d) * 2 * n ** (-2 / 3) == pytest.approx(bound_terms("tree_fw", n, d, 1.0)[1])
    with pytest.raises(ValueError, match="alg"):
        fc.log_factor("noisy_sgd", n, d)


def _f1_records(exponent, *, reps=3, seed=0, noise=0.03):
    """Hard-linear records on the fixed lattice: excess min(gamma, K x logs x n^exponent) with replicate noise."""
    rng = np.random.default_rng(seed)
    recs = []
    for n in (60_000, 120_000, 240_000, 480_000):
        scale = 0.25 * fc.log_factor("poly_sfw", n, 2) / fc.log_factor("poly_sfw", 60_000, 2) * (n / 6e4) ** exponent
        for g in fc.GAMMAS:
            for _ in range(reps):
                e = min(g, scale) * math.exp(noise * rng.standard_normal())
                recs.append({"n": n, "d": 2, "gamma": g, "excess": e, "trivial": g})
    return recs


def _evaluate(claim, recs, **kw):
    x, y, fam, triv = fc.claim_records(recs, "n", **kw)
    boot = {} if isinstance(claim, BoundClaim) else {"n_boot": 200}
    return claim.evaluate(x, y, family=fam, trivial=triv, rng=np.random.default_rng(5), required=0.95,
                          n_resamples=60, **boot)


def test_f1_claim_accepts_the_rate_and_rejects_the_trivial_output_and_the_neighbour():
    claim = fc.f1_rate_claim([60_000, 480_000], d=2, eps=2.0)
    assert claim.tolerance <= claim.gap / 2 and claim.neighbour == pytest.approx(-1 / 3)
    assert claim.bounds[1] == -0.5 and 0.08 < -0.5 - claim.bounds[0] < 0.16  # the logarithms' local slope
    out = _evaluate(claim, _f1_records(-0.5), divide_logs="poly_sfw")
    assert out.accepted and out.passed and out.power_trivial == 1.0
    # the trivial output (excess gamma) run through the claim as if it were the algorithm: it fails
    trivial = [dict(r, excess=r["trivial"]) for r in _f1_records(-0.5)]
    assert not _evaluate(claim, trivial, divide_logs="poly_sfw").accepted
    assert not _evaluate(claim, _f1_records(-1 / 3), divide_logs="poly_sfw").accepted


def test_f1_bound_claim_has_a_stated_cap_and_rejects_the_trivial_output():
    claim = fc.f1_bound_claim(d=2, eps=2.0)
    assert claim.constant == fc.F1_CAP and "cap" in claim.statement
    out = _evaluate(claim, _f1_records(-0.5))
    assert out.accepted and out.power_trivial == 1.0
    trivial = [dict(r, excess=r["trivial"]) for r in _f1_records(-0.5)]
    assert not _evaluate(claim, trivial).accepted


def test_f2_claim_window_and_controls():
    ns = (10_000, 30_000, 100_000)
    claim = fc.f2_rate_claim(ns, d=10, eps=1.0)
    s = np.polyfit(np.log(ns), np.log([fc.log_factor("tree_fw", n, 10) for n in ns]), 1)[0]
    assert claim.bounds == pytest.approx((-2 / 3 - s, -2 / 3)) and 0.15 < s < 0.25
    assert claim.neighbour == -0.5 and claim.tolerance <= claim.gap / 2
    rng = np.random.default_rng(2)

    def records(logs_power, exponent=-2 / 3):  # an error carrying logs_power of the theorem's logarithms
        scale = {n: 0.3 * fc.log_factor("tree_fw", n, 10) ** logs_power * n**exponent
                 / fc.log_factor("tree_fw", 1e4, 10) ** (logs_power - 1) for n in ns}
        return [{"n": n, "d": 10, "gamma": g, "trivial": g,  # peaked in gamma at the noise scale, as measured
                 "excess": g * math.exp(-g / scale[n]) * math.exp(0.03 * rng.normal())}
                for n in ns for g in fc.GAMMAS for _ in range(3)]

    for power in (0.75, 0.5, 0.25):  # the measured error carries part of the logarithms
        out = _evaluate(claim, records(power), divide_logs="tree_fw")
        assert out.passed and out.power_trivial == 1.0, (power, out)
    trivial = [dict(r, excess=r["trivial"]) for r in records(1.0)]
    assert not _evaluate(claim, trivial, divide_logs="tree_fw").accepted
    assert not _evaluate(claim, records(1.0, -0.5), divide_logs="tree_fw").accepted  # n^-1/2 with the logs
    with pytest.raises(ValueError, match="half the gap"):
        fc.f2_rate_claim(ns, d=10, eps=1.0, tol=0.1)


def test_worst_ratio_reads_the_worst_cases():
    recs = [{"n": n, "gamma": g, "excess": g * (1 if g < 0.5 else 0.1), "excess_nonprivate": 0.2 * g}
            for n in (1, 2) for g in (0.1, 0.4, 1.0) for _ in range(2)]
    assert fc.worst_ratio(recs, "n", num="excess_nonprivate") == pytest.approx(0.2 / 0.4)


def test_tree_task_measures_its_statistical_error():
    out = hard_linear_task(rng=np.random.default_rng(0), alg="tree_fw", n=4000, d=3, eps=1.0, gamma=0.5)
    assert "gamma" not in out and 0 < out["excess_nonprivate"] <= 2 * out["trivial"]
    assert out["excess_nonprivate"] <= out["excess"] + 1e-12


def test_s2_claims_respect_half_the_gap_to_their_neighbours():
    f1 = fc.bound_exponent("poly_sfw", DS_S2, vary="d", n=480_000, eps=1.0)
    claims = fc.s2_claims(n=N_S2, d=D_S2, ds=DS_S2, ns=NS_S2, eps=1.0, neighbour_d=f1)
    assert claims["d"].neighbour == f1 and claims["n"].neighbour == -0.5
    assert claims["d"].bounds[1] == pytest.approx(0.5)
    for c in claims.values():
        assert c.tolerance <= c.gap / 2 + 1e-12


def test_check_s2_claims_reject_the_trivial_output():
    recs = _synthetic_s2(_private_term)
    v = Verdict("test")
    f1 = fc.bound_exponent("poly_sfw", DS_S2, vary="d", n=480_000, eps=1.0)
    claims = fc.s2_claims(n=N_S2, d=D_S2, ds=DS_S2, ns=NS_S2, eps=1.0, neighbour_d=f1)
    fc.check_s2(v, recs, claims, n=N_S2, d=D_S2, f1_slope=f1, rng=np.random.default_rng(1), required=0.8,
                n_boot=200, n_resamples=50)
    assert all(o.passed and o.power_trivial == 1.0 for o in v.outcomes)
    v2 = Verdict("test")  # the trivial output as the algorithm: both exponent claims fail
    fc.check_s2(v2, [dict(r, excess=r["trivial"]) for r in recs], claims, n=N_S2, d=D_S2, f1_slope=f1,
                rng=np.random.default_rng(1), required=0.8, n_boot=200, n_resamples=50)
    assert not any(o.accepted for o in v2.outcomes)


def test_lattice_n_needed_matches_the_bound_at_the_reference_point():
    n = fc.lattice_n_needed(100, 1.0, like=(60_000, 2, 2.0))
    assert bound_terms("poly_sfw", n, 100, 1.0)[1] == pytest.approx(bound_terms("poly_sfw", 60_000, 2, 2.0)[1],
                                                                     rel=1e-6)
    assert n > 1e6 and fc.lattice_n_needed(100, 2.0, like=(60_000, 2, 2.0)) < n
    assert fc.lattice_n_needed(1000, 1.0, like=(60_000, 2, 2.0)) > n
