"""Notebook 02 helpers (dpsco_book.composition_accounting): composition curves (P3, P5, P6), per-step budgets,
the WRRW23 filter, subsampling and DP-SGD accounting, Gaussian DP, and the verdict rows."""

from __future__ import annotations

import math

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from scipy import stats

from dpsco_book import composition_accounting as cc
from dpsco_lib.experiments import Verdict
from dpsco_lib.privacy.accounting import gdp_delta, gdp_epsilon

matplotlib.use("Agg")

EPS0 = 2.0**-7
DELTA = 1e-6


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# composition curves ------------------------------------------------------------------------------------
def test_pure_curve_point_exact_values_at_one_and_four_steps():
    r1 = cc.pure_curve_point(rng=_rng(), k=1, eps0=EPS0, delta=DELTA, interval=EPS0 / 64)
    L = math.log(1 / DELTA)
    assert r1["basic"] == EPS0
    assert r1["drv"] == pytest.approx(math.sqrt(2 * L) * EPS0 + EPS0 * math.expm1(EPS0), rel=1e-12)
    assert r1["filter_fixed_k"] == pytest.approx(math.sqrt(2 * L * EPS0**2) + EPS0**2 / 2, rel=1e-12)
    # one randomized-response step: delta(eps) = (e^eps0 - e^eps) / (1 + e^eps0) for eps < eps0
    exact = math.log(math.exp(EPS0) - DELTA * (1 + math.exp(EPS0)))
    assert r1["kov"] == pytest.approx(exact, rel=1e-9)
    assert r1["pld"] == pytest.approx(exact, rel=1e-6)
    assert r1["rdp"] >= r1["kov"]
    r4 = cc.pure_curve_point(rng=_rng(), k=4, eps0=EPS0, delta=DELTA, interval=EPS0 / 64)
    assert r4["basic"] == 4 * EPS0
    assert r4["filter_fixed_k"] == pytest.approx(math.sqrt(2 * L * 4 * EPS0**2) + 2 * EPS0**2, rel=1e-12)
    assert r4["kov"] <= min(r4["drv"], r4["basic"], r4["filter_fixed_k"])
    assert r4["pld"] == pytest.approx(r4["kov"], rel=1e-6)


def test_gauss_curve_point_is_exact_gdp_inside_pld_sandwich():
    r = cc.gauss_curve_point(rng=_rng(), k=16, sigma=20.0, delta=DELTA, interval=1e-3)
    assert r["gdp"] == pytest.approx(gdp_epsilon(math.sqrt(16) / 20.0, delta=DELTA), rel=1e-9)
    assert r["pld_opt"] - cc.FP <= r["gdp"] <= r["pld_pess"] + cc.FP
    assert r["gdp"] <= r["rdp"]


def test_pure_curve_table_formats_every_row():
    rows = [{"k": 1, "basic": 0.5, "drv": 0.6, "filter_fixed_k": 0.55, "rdp": 0.7, "kov": 0.25, "pld": 0.25}]
    lines = cc.pure_curve_table(rows).splitlines()
    assert len(lines) == 2 and lines[0].split() == ["k", "basic", "DRV", "WRRW", "k", "RDP", "KOV", "PLD"]
    assert lines[1].split() == ["1", "0.5000", "0.6000", "0.5500", "0.7000", "0.25000000", "0.25000000"]


# per-step budget ---------------------------------------------------------------------------------------
def test_per_step_budget_rows_exact_values():
    rows = cc.per_step_budget_rows([1, 100], target=1.0, delta=DELTA)
    assert [r["k"] for r in rows] == [1, 100]
    for r in rows:
        assert r["cor36"] == pytest.approx(1.0 / (2 * math.sqrt(2 * r["k"] * math.log(1 / DELTA))), rel=1e-14)
        assert r["basic"] == 1.0 / r["k"]
        assert r["cor36"] <= r["drv"] <= r["kov"]
    # one step: the exact KOV15 solution is eps0 = target (delta is not needed)
    assert rows[0]["kov"] == pytest.approx(1.0, abs=1e-3)
    assert "KOV/Cor3.6 = " in cc.per_step_budget_summary(rows)


# the filter ------------------------------------------------------------------------------------------------
def test_filter_run_first_budget_is_base_eps_and_is_reproducible():
    one = cc.filter_run(rng=_rng(3), base_eps=0.01, eps=1.0, delta=DELTA, max_steps=1)
    assert one["n_filter"] == 1 and one["mean_budget"] == 0.01  # y = 0 before the first release: b = base_eps
    assert one["n_basic_prefix"] == 1 and one["n_drv_prefix"] == 1 and one["filter_prefix_ok"]
    full = cc.filter_run(rng=_rng(3), base_eps=0.02, eps=1.0, delta=DELTA, max_steps=100_000)
    assert full == cc.filter_run(rng=_rng(3), base_eps=0.02, eps=1.0, delta=DELTA, max_steps=100_000)
    assert 0 < full["n_filter"] < 100_000 and full["spent"] <= 1.0 and full["filter_prefix_ok"]
    assert full["n_drv_prefix"] <= full["n_filter"]
    assert 0.02 <= full["mean_budget"] <= 0.02 * 1.8


def test_homogeneous_filter_rows_exact_counts():
    (row,) = cc.homogeneous_filter_rows([0.1], epsilon=1.0, delta=DELTA)
    assert row == {"eps0": 0.1, "filter_adaptive": 3, "basic": 10, "advanced": 3, "filter": 3, "kov": 10}
    table = cc.homogeneous_table([row]).splitlines()
    assert table[1].split() == ["0.1", "3", "10", "3", "3", "10"]


def test_filter_summary_means_per_base_eps():
    recs = [{"base_eps": 0.01, "n_filter": n, "mean_budget": 0.012, "n_drv_prefix": n - 2, "n_basic_prefix": 70}
            for n in (170, 172)]
    assert cc.filter_summary(recs) == ("base eps 0.01: filter admits 171 steps (mean budget 0.0120); DRV would "
                                       "certify a prefix of 169, basic 70")


# subsampling -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("eps", [0.5, 2.0])
@pytest.mark.parametrize("q", [0.0, 0.01, 0.3, 1.0])
def test_subsampled_rr_epsilon_equals_bbg18(eps, q):
    assert cc.subsampled_rr_epsilon(eps, q) == pytest.approx(math.log1p(q * math.expm1(eps)), abs=1e-14)


def test_amplification_rows():
    rows = cc.amplification_rows([1.0], [0.5, 1.0])
    assert [r["q"] for r in rows] == [0.5, 1.0]
    assert rows[1]["bbg18"] == pytest.approx(1.0) and rows[1]["linear_q_eps"] == 1.0
    assert rows[0]["bbg18"] == pytest.approx(math.log(1 + 0.5 * (math.e - 1)), rel=1e-12)
    assert rows[0]["bbg18"] > rows[0]["linear_q_eps"]


def test_dpsgd_rows_one_epoch():
    (row,) = cc.dpsgd_rows([1], n=60_000, batch=150, noise_multiplier=1.3, delta=1e-5)
    assert row["steps"] == 400
    assert row["rdp_lib"] == pytest.approx(row["rdp_dp_accounting"], rel=1e-4)
    assert row["pld"] <= row["rdp_lib"] < row["amplify_then_drv"]
    assert cc.dpsgd_summary([row]).startswith("1 epochs: RDP (library) ")


# Gaussian DP --------------------------------------------------------------------------------------------
def test_tradeoff_rows_exact_values():
    rows = cc.tradeoff_rows([1.0], [0.0, 0.5, 1.0])
    assert [r["G"] for r in rows][0] == pytest.approx(1.0, abs=1e-15)
    assert rows[1]["G"] == pytest.approx(stats.norm.cdf(-1.0), rel=1e-12)
    assert rows[2]["G"] == pytest.approx(0.0, abs=1e-15)


def test_dual_delta_matches_closed_form():
    assert cc.dual_delta(1.0, 1.0) == pytest.approx(0.126937, rel=1e-4)
    assert cc.dual_delta(1.0, 1.0) == pytest.approx(gdp_delta(1.0, epsilon=1.0), abs=1e-9)
    assert cc.duality_error([0.5, 2.0], [0.0, 2.0]) < 1e-9


def test_gdp_composition_rows_exact_at_eps_zero():
    rows = cc.gdp_composition_rows([4], [0.0, 1.0], noise_multiplier=10.0)
    assert rows[0]["mu"] == 0.2
    # delta_mu(0) = Phi(mu/2) - Phi(-mu/2)
    assert rows[0]["gdp"] == pytest.approx(stats.norm.cdf(0.1) - stats.norm.cdf(-0.1), rel=1e-12)
    assert all(r["pld"] >= r["gdp"] - cc.FP and abs(r["pld"] - r["gdp"]) < 1e-3 for r in rows)


# figures -----------------------------------------------------------------------------------------------
def test_plots_draw_every_series():
    pure = [{"k": k, "basic": k * 0.1, "drv": 0.2, "filter_fixed_k": 0.2, "rdp": 0.2, "kov": 0.1, "pld": 0.1}
            for k in (1, 10)]
    gauss = [{"k": k, "rdp": 0.3, "gdp": 0.2, "pld_opt": 0.19, "pld_pess": 0.21} for k in (1, 10)]
    fig, axes = plt.subplots(1, 2)
    cc.plot_composition_curves(axes, pure, gauss, sigma=20.0)
    assert len(axes[0].lines) == 6 and len(axes[1].lines) == 2
    fig2, axes2 = plt.subplots(1, 2)
    trade = [{"mu": mu, "alpha": a, "G": 1 - a} for mu in (0.5, 1.0) for a in (0.0, 1.0)]
    gdp = [{"k": k, "mu": math.sqrt(k) / 10, "eps": e, "gdp": 0.1, "pld": 0.1} for k in (1, 4) for e in (0.0, 1.0)]
    cc.plot_gdp(axes2, trade, gdp)
    assert len(axes2[0].lines) == 3 and len(axes2[1].lines) == 4
    plt.close(fig)
    plt.close(fig2)


# verdict rows -------------------------------------------------------------------------------------------
EXPECTED_ROWS = [
    "P3 KOV <= min(DRV, basic, WRRW fixed-k)", "P3 WRRW fixed-k <= DRV", "P3 DRV <= basic exactly when k >= k*",
    "P3 KOV closed form = exact PLD", "P5 RDP >= exact composition (KOV = PLD)",
    "P6 exact GDP composition inside PLD sandwich, <= RDP", "P3 Cor 3.6 rule <= DRV solve <= KOV solve",
    "P3 filter never overspends", "P3 filter admits fixed-k count (eps^2/2 form) <= KOV",
    "P3 filter admits >= DRV10 count", "P5 DP-SGD oracle eps = 0.724 (15 epochs)",
    "P5 RDP = dp-accounting RdpAccountant", "P5 MTZ19 oracle (sigma 2.5, q 0.01, 50 steps)",
    "P5 PLD <= moments accountant < amplification+DRV", "P5 BBG18 amplification tight (subsampled RR)",
    "P5 exact amplification >= q eps (Lemma 3.3 as stated is optimistic)", "P6 gdp_delta(1, 1) = 0.126937",
    "P6 trade-off / privacy-curve duality", "P6 composition sqrt(k)/sigma-GDP = PLD",
]


def _records():
    pure = [cc.pure_curve_point(rng=_rng(), k=k, eps0=EPS0, delta=DELTA, interval=EPS0 / 64) | {"k": k}
            for k in (1, 32, 100)]
    gauss = [cc.gauss_curve_point(rng=_rng(), k=k, sigma=20.0, delta=DELTA, interval=1e-3) | {"k": k}
             for k in (1, 100)]
    budget = cc.per_step_budget_rows([1, 1000], target=1.0, delta=DELTA)
    filt = [cc.filter_run(rng=_rng(s), base_eps=0.02, eps=1.0, delta=DELTA, max_steps=100_000) | {"base_eps": 0.02}
            for s in range(2)]
    hom = cc.homogeneous_filter_rows([0.03, 0.1], epsilon=1.0, delta=DELTA)
    sgd = [{"epochs": 15, "rdp_lib": 0.724223, "rdp_dp_accounting": 0.724223, "pld": 0.6401,
            "amplify_then_drv": 109.2}]
    amp = cc.amplification_rows([0.5, 1.0], [0.01, 0.5, 1.0])
    gdp = cc.gdp_composition_rows([1, 4], [0.0, 1.0])
    return pure, gauss, budget, filt, hom, sgd, amp, gdp


def _verdict(pure, gauss, budget, filt, hom, sgd, amp, gdp, dual_err=1e-14):
    v = Verdict("test")
    cc.curve_checks(v, pure, gauss, eps0=EPS0, delta=DELTA, sigma=20.0)
    cc.budget_filter_checks(v, budget, filt, hom)
    cc.subsampling_checks(v, sgd, amp)
    cc.gdp_checks(v, dual_err, gdp)
    return v


def test_verdict_rows_pass_on_true_records_with_the_notebook_names():
    v = _verdict(*_records())
    assert [c.name for c in v.rows] == EXPECTED_ROWS
    assert all(c.passed for c in v.rows), v.table_text()
    assert v.rows[0].measured == "all 3 k in [1, 100]"
    assert v.rows[2].measured == "k* = 2 ln(1/delta)/(2 - e^eps0)^2 = 28.1"


def test_verdict_rows_fail_on_broken_records():
    pure, gauss, budget, filt, hom, sgd, amp, gdp = _records()
    pure[1] = pure[1] | {"kov": pure[1]["drv"] * 1.01}  # KOV above DRV: contradicts optimality
    sgd = [sgd[0] | {"rdp_lib": 0.726}]  # off the oracle by 2e-3
    amp = amp + [{"eps": 1.0, "q": 0.5, "bbg18": 0.1, "subsampled_rr_exact": 0.2, "linear_q_eps": 0.5}]
    v = _verdict(pure, gauss, budget, filt, hom, sgd, amp, gdp, dual_err=1e-8)
    failed = {c.name for c in v.rows if not c.passed}
    assert failed == {"P3 KOV <= min(DRV, basic, WRRW fixed-k)", "P3 KOV closed form = exact PLD",
                      "P5 RDP >= exact composition (KOV = PLD)",
                      "P5 DP-SGD oracle eps = 0.724 (15 epochs)", "P5 RDP = dp-accounting RdpAccountant",
                      "P5 BBG18 amplification tight (subsampled RR)",
                      "P5 exact amplification >= q eps (Lemma 3.3 as stated is optimistic)",
                      "P6 trade-off / privacy-curve duality"}


# bad inputs ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, name", [
    (lambda: cc.pure_curve_point(rng=_rng(), k=0, eps0=EPS0, delta=DELTA, interval=EPS0 / 64), "k"),
    (lambda: cc.pure_curve_point(rng=_rng(), k=1, eps0=EPS0, delta=DELTA, interval=0.0), "interval"),
    (lambda: cc.gauss_curve_point(rng=_rng(), k=1, sigma=-1.0, delta=DELTA, interval=1e-3), "sigma"),
    (lambda: cc.gauss_curve_point(rng=_rng(), k=1, sigma=1.0, delta=0.0, interval=1e-3), "delta"),
    (lambda: cc.per_step_budget_rows([], target=1.0, delta=DELTA), "k_grid"),
    (lambda: cc.per_step_budget_rows([1], target=-1.0, delta=DELTA), "target"),
    (lambda: cc.filter_run(rng=_rng(), base_eps=0.01, eps=1.0, delta=DELTA, max_steps=0), "max_steps"),
    (lambda: cc.filter_run(rng=_rng(), base_eps=0.0, eps=1.0, delta=DELTA, max_steps=5), "base_eps"),
    (lambda: cc.homogeneous_filter_rows([0.1], epsilon=1.0, delta=1.5), "delta"),
    (lambda: cc.homogeneous_filter_rows([-0.1], epsilon=1.0, delta=DELTA), "eps0_grid"),
    (lambda: cc.subsampled_rr_epsilon(1.0, 1.5), "q"),
    (lambda: cc.subsampled_rr_epsilon(-1.0, 0.5), "epsilon"),
    (lambda: cc.dpsgd_rows([1], n=100, batch=200, noise_multiplier=1.0, delta=1e-5), "batch"),
    (lambda: cc.dpsgd_rows([1], n=100, batch=10, noise_multiplier=0.0, delta=1e-5), "noise_multiplier"),
    (lambda: cc.dual_delta(0.0, 1.0), "mu"),
    (lambda: cc.gdp_composition_rows([1], [0.0], noise_multiplier=0.0), "noise_multiplier"),
    (lambda: cc.gdp_composition_rows([0], [0.0]), "ks"),
    (lambda: cc.tradeoff_rows([-1.0], [0.5]), "mus"),
    (lambda: cc.pure_curve_table([]), "records"),
    (lambda: cc.curve_checks(Verdict("t"), [], [{}], eps0=EPS0, delta=DELTA, sigma=20.0), "rec_pure"),
    (lambda: cc.budget_filter_checks(Verdict("t"), [{}], [{}], []), "rec_hom"),
    (lambda: cc.gdp_checks(Verdict("t"), "small", [{}]), "dual_err"),
])
def test_bad_inputs_raise_value_error_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()
