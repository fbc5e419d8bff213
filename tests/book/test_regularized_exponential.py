"""Tests of dpsco_book.regularized_exponential (Spec R1, R2 experiment helpers of notebook 15)."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from dpsco_book import regularized_exponential as rc
from dpsco_lib.algorithms.regularized_exponential import (
    gdp_mu_star,
    linear_loss_data,
    regularized_exp_mu_gdp,
    regularized_exp_theory_params,
    sample_regularized_exponential,
)
from dpsco_lib.experiments import SlopeFit, Verdict
from dpsco_lib.privacy.accounting import gdp_epsilon


def _fit(slope: float, lo: float, hi: float) -> SlopeFit:
    return SlopeFit(slope=slope, intercept=0.0, ci_low=lo, ci_high=hi, level=0.95, n_points=5, n_boot=10,
                    statistic="mean")


def test_classical_gaussian_mu_is_the_textbook_rule_and_refuses_eps_above_one():
    assert rc.classical_gaussian_mu(1.0, 1e-5) == 1.0 / math.sqrt(2.0 * math.log(125_000.0))
    assert rc.classical_gaussian_mu(0.5, 1e-3) == 0.5 / math.sqrt(2.0 * math.log(1250.0))
    with pytest.raises(ValueError, match="epsilon"):
        rc.classical_gaussian_mu(1.5, 1e-5)
    with pytest.raises(ValueError, match="delta"):
        rc.classical_gaussian_mu(1.0, 0.0)


def test_rem_params_for_mu_is_exactly_mu_star_gdp_with_the_closed_form_bound():
    p = rc.rem_params_for_mu(0.5, n=100, d=8)
    assert p["k"] == pytest.approx(math.sqrt(8) * 100 * 0.5 / math.sqrt(2), rel=1e-15)  # = 100
    assert p["k"] == pytest.approx(100.0, rel=1e-14)
    assert p["mu"] == pytest.approx(4 * 100.0 / (100**2 * 0.25), rel=1e-14)  # = 0.16
    assert regularized_exp_mu_gdp(n=100, G=1.0, k=p["k"], mu=p["mu"]) == pytest.approx(0.5, rel=1e-14)
    assert p["excess bound"] == pytest.approx(2 * math.sqrt(16) / (100 * 0.5), rel=1e-14)  # = 0.16
    with pytest.raises(ValueError, match="mu_star"):
        rc.rem_params_for_mu(0.0, n=100, d=8)
    with pytest.raises(ValueError, match="n"):
        rc.rem_params_for_mu(0.5, n=0, d=8)


def test_calibration_table_rows():
    rows = rc.calibration_table(1.0, 1e-5, n=400, d=32)
    a, b = rows
    assert a["mu*"] == rc.classical_gaussian_mu(1.0, 1e-5)
    assert b["mu*"] == gdp_mu_star(1.0, delta=1e-5)
    exact = regularized_exp_theory_params(400, 32, 1.0, 2.0, 1.0, 1e-5, radius=1.0)
    assert (b["k"], b["mu"], b["excess bound"]) == (exact.k, exact.mu, exact.excess_bound)
    assert a["certified eps"] == gdp_epsilon(a["mu*"], delta=1e-5)
    assert 0.74 < a["certified eps"] < 0.76  # the classical rule is conservative at its boundary eps = 1
    assert 1.0 - 1e-9 < b["certified eps"] <= 1.0
    assert a["excess bound"] / b["excess bound"] == pytest.approx(b["mu*"] / a["mu*"], rel=1e-9)
    with pytest.raises(ValueError, match="d"):
        rc.calibration_table(1.0, 1e-5, n=400, d=0)
    with pytest.raises(ValueError, match="epsilon"):
        rc.calibration_table(2.0, 1e-5, n=400, d=4)


def test_excess_linear_and_the_trivial_error():
    zbar = np.array([0.3, -0.4])
    assert rc.excess_linear(np.zeros(2), zbar)[0] == 0.5
    assert rc.excess_linear(-zbar / 0.5, zbar)[0] == pytest.approx(0.0, abs=1e-15)
    rec = rc.compare_trial(rng=np.random.default_rng(3), d=2, method="noisy GD", chains=2, em_steps=2, ngd_runs=2)
    z = linear_loss_data(400, 2, np.random.default_rng(3))
    assert rec["trivial"] == float(np.linalg.norm(z.mean(axis=0)))
    assert 0.0 <= rec["excess"] <= 2 * rec["trivial"] and rec["drift"] == 0.0
    with pytest.raises(ValueError, match="method"):
        rc.compare_trial(rng=np.random.default_rng(0), d=2, method="EM", chains=2, em_steps=2, ngd_runs=2)
    with pytest.raises(ValueError, match="chains"):
        rc.compare_trial(rng=np.random.default_rng(0), d=2, method="pure EM", chains=1, em_steps=2, ngd_runs=2)


def test_tasks_pickle_and_have_a_stable_repr():
    task = rc.CompareTask(chains=48, em_steps=150, ngd_runs=8)
    assert repr(task) == "CompareTask(chains=48, em_steps=150, ngd_runs=8, epsilon=1.0, delta=1e-05, n=400)"
    assert pickle.loads(pickle.dumps(task)) == task
    assert pickle.loads(pickle.dumps(rc.UtilityTask(chains=4))) == rc.UtilityTask(chains=4)


def test_learns_values_are_medians_at_one_dimension():
    recs = [{"method": m, "d": d, "excess": e, "trivial": t}
            for m, d, e, t in [("regularized EM", 4, 0.1, 0.5), ("regularized EM", 4, 0.3, 0.4),
                               ("regularized EM", 4, 0.2, 0.6), ("noisy GD", 4, 9.0, 9.0),
                               ("regularized EM", 2, 5.0, 5.0)]]
    assert rc.learns_values(recs, 4) == (0.2, 0.5)
    with pytest.raises(ValueError, match="d"):
        rc.learns_values(recs, 8)


def test_tradeoff_rows_are_above_the_bound_and_attain_it_for_linear_losses():
    cases = rc.tradeoff_cases()
    assert [c.mu_gdp for c in cases[:2]] == [1.0, 2.0]
    summary, curves = rc.tradeoff_rows(cases, np.linspace(0.0, 1.0, 101))
    assert len(curves) == 3 * 101
    assert all(r["min_gap"] >= -1e-7 for r in summary)
    assert summary[0]["max_gap"] < 0.02 and summary[0]["below_half_mu_bound"] < -0.05
    assert summary[2]["max_gap"] > 0.1  # logistic: strictly above the bound
    with pytest.raises(ValueError, match="alpha"):
        rc.tradeoff_rows(cases, np.array([0.5]))


def test_audit_pair_input_checks():
    cases = rc.tradeoff_cases()
    with pytest.raises(ValueError, match="case"):
        rc.audit_pair(cases[2], 100, 0)
    with pytest.raises(ValueError, match="n_audit"):
        rc.audit_pair(cases[0], 5, 0)
    with pytest.raises(ValueError, match="seed"):
        rc.audit_pair(cases[0], 100, -1)


def test_verdict_rows_keep_their_names_and_can_fail():
    summary = [{"min_gap": 0.0, "max_gap": 0.01, "below_half_mu_bound": -0.2}, {"min_gap": -1e-6}]
    v = Verdict("t")

    class Audit:
        def __init__(self, mu: float) -> None:
            self.mu_lower_bound = mu

    rc.check_privacy(v, summary, 11, 1.0, Audit(0.9), Audit(1.5), power=0.97, false_alarm=0.0, required=0.95)
    util = [{"gap": 0.01, "gap_se": 0.001, "bound": 0.02}, {"gap": 0.05, "gap_se": 0.001, "bound": 0.04}]
    rc.check_utility(v, util, _fit(1.0, 0.9, 1.1))
    rows = [{"method": m, "d": d, "excess_mean": e} for m, d, e in
            [("regularized EM", 4, 0.1), ("noisy GD", 4, 0.2), ("pure EM", 4, 0.3)]]
    fits = {"pure EM": _fit(0.9, 0.8, 1.0), "regularized EM": _fit(0.5, 0.4, 0.6), "noisy GD": _fit(0.5, 0.4, 0.6)}
    rc.check_comparison(v, rows, [{"method": "pure EM", "drift": 5.0}], fits, [2, 4])
    assert [(c.name, c.passed) for c in v.rows] == [
        ("R1: exact trade-off >= G_mu on the grid", False),
        ("R1: bound attained by linear losses", True),
        ("R1: audited mu lower bound <= claimed mu", True),
        ("R1: broken variant (k x 1.44, mu x 1.2) caught", True),
        ("R2: E F - min F <= d/k (+3 SE)", False),
        ("R2: slope of E F - min F in d at fixed k", True),
        ("R2: regularized EM < pure EM for d >= 4", True),
        ("R2: regularized EM <= noisy GD for d >= 4", True),
        ("R2: pure EM grows faster in d than regularized EM", True),
        ("pure-EM sampler converged (N/2 vs N steps)", False),
    ]


def test_broken_variant_row_needs_the_power():
    class Audit:
        def __init__(self, mu: float) -> None:
            self.mu_lower_bound = mu

    summary = [{"min_gap": 0.0, "max_gap": 0.01, "below_half_mu_bound": -0.2}]
    for power, bad_lb, ok in ((0.9, 1.5, False), (0.99, 0.95, False), (0.99, 1.05, True)):
        v = Verdict("t")
        rc.check_privacy(v, summary, 11, 1.0, Audit(0.9), Audit(bad_lb), power=power, false_alarm=0.0,
                         required=0.95)
        assert v.rows[-1].passed is ok


def test_audit_event_probabilities_exact():
    case = rc.tradeoff_cases()[0]  # mu_GDP = 1: two Gaussians 1 sd apart, mildly truncated to [-1, 1]
    p_s, p_sp = rc.audit_event_probabilities(case)
    assert case.mu_gdp == pytest.approx(1.0)
    assert p_s == pytest.approx(1 - p_sp, abs=1e-5)  # symmetric around the threshold up to the truncation
    assert p_s == pytest.approx(0.3085, abs=2e-3)  # Phi(-mu/2) up to the truncation at +-1
    x = sample_regularized_exponential(case.problem, case.data, k=case.k * 1.44, mu=case.mu,
                                          rng=np.random.default_rng(0), n_samples=40_000)[:, 0]
    q = rc.audit_event_probabilities(case, 1.44)[0]
    assert abs(np.mean(x > rc.audit_threshold(case)) - q) < 4.5 * math.sqrt(q * (1 - q) / 40_000)


def test_mu_lower_bounds_match_the_library_and_power():
    from dpsco_lib.privacy.audit import mu_gdp_lower_bound_from_counts

    pairs = [(3000, 7000), (0, 10_000), (10_000, 0), (5000, 5000), (6900, 3100)]
    got = rc.mu_lower_bounds(np.array([a for a, _ in pairs]), np.array([b for _, b in pairs]), 10_000, 1e-3)
    want = [mu_gdp_lower_bound_from_counts(a, b, 10_000, 10_000, 1e-3).mu_lower_bound for a, b in pairs]
    assert got == pytest.approx(want, abs=1e-8)
    case = rc.tradeoff_cases()[0]
    rng = np.random.default_rng(1)
    assert rc.audit_power(case, 10_000, 1.0, rng=rng, n_sim=2000) <= 0.005
    assert rc.audit_power(case, 10_000, 1.44, rng=rng, n_sim=2000) >= 0.95
    assert rc.audit_power(case, 1_000, 1.44, rng=rng, n_sim=2000) < 0.5  # too few draws: the variant is missed
    with pytest.raises(ValueError, match="case"):
        rc.audit_event_probabilities(rc.tradeoff_cases()[2])


def test_utility_slope_interval_only_when_asked():
    """A fit 0.972 with interval [0.937, 0.998]: within 0.15 of 1 but its interval misses 1, so it fails the
    interval check (paper) and passes the point-estimate check (smoke)."""
    util = [{"gap": 0.01, "gap_se": 0.001, "bound": 0.02}]
    v = Verdict("t")
    rc.check_utility(v, util, _fit(0.972, 0.937, 0.998))
    assert [c.passed for c in v.rows] == [True, False]
    v = Verdict("t")
    rc.check_utility(v, util, _fit(0.972, 0.937, 0.998), interval=False)
    assert [c.passed for c in v.rows] == [True, True]
    v = Verdict("t")
    rc.check_utility(v, util, _fit(0.80, 0.75, 0.85), interval=False)  # point estimate off by 0.2: fails
    assert [c.passed for c in v.rows] == [True, False]
