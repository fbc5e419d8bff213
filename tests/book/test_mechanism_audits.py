"""Notebook 01 helpers (dpsco_book.mechanism_audits): sweep tasks, tables, exact privacy losses and the
verdict rows of P1, P2, P4 and the audits."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pytest

from dpsco_book import mechanism_audits as mc
from dpsco_lib.experiments import SlopeFit, Verdict
from dpsco_lib.privacy.mechanisms import gaussian_sigma_analytic

matplotlib.use("Agg")


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _fit(slope: float, lo: float, hi: float) -> SlopeFit:
    return SlopeFit(slope, 0.0, lo, hi, 0.95, 3, 100, "mean")


# P1 ------------------------------------------------------------------------------------------------------
def test_gaussian_expected_norm_exact_values():
    assert mc.gaussian_expected_norm(1.0, 1) == pytest.approx(math.sqrt(2 / math.pi), rel=1e-14)
    assert mc.gaussian_expected_norm(2.0, 2) == pytest.approx(2 * math.sqrt(math.pi / 2), rel=1e-14)
    assert mc.gaussian_expected_norm(1.0, 3) == pytest.approx(2 * math.sqrt(2 / math.pi), rel=1e-14)


def test_gaussian_error_task_and_rows():
    rec = mc.gaussian_error_task(rng=_rng(), d=50, m=400, epsilon=1.0, delta=1e-5)
    assert rec["sigma"] == gaussian_sigma_analytic(1.0, epsilon=1.0, delta=1e-5)
    assert rec["exact"] == mc.gaussian_expected_norm(rec["sigma"], 50)
    assert rec["err"] == pytest.approx(rec["exact"], rel=0.02)
    # same generator state -> bit-identical record
    assert mc.gaussian_error_task(rng=_rng(), d=50, m=400, epsilon=1.0, delta=1e-5) == rec
    # rows: exact null variance sigma^2 d - E^2 over m * replicates draws
    recs = [{"d": 4, "sigma": 1.0, "exact": 1.5, "err": e} for e in (1.6, 1.8)]
    (row,) = mc.gaussian_error_rows(recs, m=10)
    assert row["exact"] == 1.5 and row["rel_dev"] == pytest.approx(1.7 / 1.5 - 1)
    assert row["z"] == pytest.approx(0.2 / math.sqrt((4 - 2.25) / 20))


def test_gaussian_sigma_rows():
    rows = mc.gaussian_sigma_rows([0.1, 0.5, 2.0], delta=1e-5)
    assert [r["epsilon"] for r in rows] == [0.1, 0.5, 2.0]
    assert math.isnan(rows[2]["sigma_classic"]) and math.isnan(rows[2]["delta_at_classic"])
    assert rows[0]["sigma_classic"] == pytest.approx(math.sqrt(2 * math.log(1.25 / 1e-5)) / 0.1)
    for r in rows[:2]:
        assert r["sigma_analytic"] < r["sigma_classic"] and r["delta_at_classic"] <= 1e-5
    assert all(r["delta_at_analytic"] <= 1e-5 for r in rows)


# P2, P4 --------------------------------------------------------------------------------------------------
def test_rnm_excess_task_exact_at_zero_gap():
    # J = 2: g_J = (2 Delta/eps) ln 1 = 0, so every selection has excess exactly 0
    for noise in ("laplace", "gumbel"):
        assert mc.rnm_excess_task(rng=_rng(), J=2, noise=noise, K=50, epsilon=1.0) == {"excess": 0.0}
    # the exponential mechanism's exact expected excess ln(J - 1) Delta/eps
    rec = mc.rnm_excess_task(rng=_rng(1), J=64, noise="gumbel", K=20_000, epsilon=1.0)
    assert rec["excess"] == pytest.approx(math.log(63), rel=0.05)


def test_noisy_max_rows_and_slope():
    recs = [{"J": J, "noise": nz, "replicate": k, "excess": a * math.log(J)}
            for nz, a in (("laplace", 0.9), ("gumbel", 1.0)) for J in (4, 16, 64) for k in range(3)]
    rows = mc.noisy_max_rows(recs, epsilon=2.0, sensitivity=1.0)
    lap16 = next(r for r in rows if r["noise"] == "laplace" and r["J"] == 16)
    assert lap16["bound"] == pytest.approx(4 / 2.0 * (math.log(16) + 1))
    gum16 = next(r for r in rows if r["noise"] == "gumbel" and r["J"] == 16)
    assert gum16["bound"] == pytest.approx(2 / 2.0 * (math.log(16) + 1))
    assert gum16["exact_em"] == pytest.approx(math.log(15) / 2.0) and gum16["se"] == 0.0
    s, lo, hi = mc.excess_slope(recs, rows, "laplace", rng=_rng(), n_boot=50)
    assert (s, lo, hi) == pytest.approx((0.9, 0.9, 0.9))


def test_em_tail_task_exact_and_rows():
    # J = 2, t = 0: G = 2 ln 2, w = exp(-ln 2) = 1/2, p_t = 1/3
    rec = mc.em_tail_task(rng=_rng(), J=2, t=0.0, n=30_000, epsilon=1.0)
    assert rec["exact"] == pytest.approx(1 / 3, rel=1e-14)
    assert rec["k"] / 30_000 == pytest.approx(1 / 3, abs=0.015)
    (row,) = mc.em_tail_rows([{"J": 2, "t": 1.0, "n": 1000, "k": 250, "exact": 0.25}])
    assert row["p_hat"] == 0.25 and row["bound"] == math.exp(-1.0)
    assert row["ci_low"] < 0.25 < row["ci_high"] and row["ci_high"] - row["ci_low"] < 0.1


# Audits ------------------------------------------------------------------------------------------------
def test_exact_log_ratios():
    assert mc.em_log_ratio(2.0, 1) == pytest.approx(0.0, abs=1e-15)
    assert mc.em_log_ratio(2.0, 2) == pytest.approx(math.log(2 * math.e / (math.e + 1 / math.e)))
    assert mc.em_log_ratio(1.0, 10**9) == pytest.approx(1.0, abs=1e-8)
    assert mc.noisy_max_log_ratio(1.0, 1) == pytest.approx(0.0, abs=1e-9)
    assert 0.9 < mc.noisy_max_log_ratio(1.0, 100) <= 1.0 + 1e-9


@pytest.mark.parametrize("mechanism", list(mc.AUDIT_MECHANISMS))
def test_audit_task_catches_broken_variant(mechanism):
    n = 20_000 if mechanism in ("laplace", "noisy_max", "exponential") else 60_000
    ok = mc.audit_task(rng=_rng(), mechanism=mechanism, variant="correct", n=n)
    bad = mc.audit_task(rng=_rng(), mechanism=mechanism, variant="broken", n=n)
    assert ok["lower_bound"] <= ok["claimed"] and bad["true"] > bad["claimed"]
    if mechanism == "gaussian_mu":
        assert bad["true"] == pytest.approx(2 * ok["true"]) and ok["true"] == pytest.approx(ok["claimed"])
    if mechanism == "exponential":
        assert bad["true"] == pytest.approx(mc.em_log_ratio(2.0, mc.AUDIT_CANDIDATES))


def test_audit_checks_rows():
    recs = [{"mechanism": "laplace", "variant": "correct", "lower_bound": 0.9, "claimed": 1.0},
            {"mechanism": "laplace", "variant": "broken", "lower_bound": 0.95, "claimed": 1.0},
            {"mechanism": "gaussian_mu", "variant": "correct", "lower_bound": 0.2, "claimed": 0.268}]
    v = Verdict("test")
    mc.audit_checks(v, recs)
    assert [(c.name, c.passed) for c in v.rows] == [("audit laplace: lb <= claimed", True),
                                                    ("audit laplace broken: lb > claimed", False),
                                                    ("audit gaussian_mu: lb <= claimed", True)]
    assert v.rows[2].measured.startswith("mu_lb = 0.200")


# Verdict rows --------------------------------------------------------------------------------------------
def _p1_inputs(z: float):
    dims = (10, 100, 1000)
    error_rows = [{"d": d, "exact": math.sqrt(d - 0.5), "z": z, "rel_dev": 1e-3} for d in dims]
    sigma_rows = mc.gaussian_sigma_rows([0.1, 0.5, 2.0], delta=1e-5)
    return error_rows, sigma_rows


def test_p1_checks_pass_and_fail():
    error_rows, sigma_rows = _p1_inputs(1.0)
    v = Verdict("test")
    mc.p1_checks(v, _fit(0.501, 0.499, 0.503), error_rows, sigma_rows, delta=1e-5, slope_tol=0.05)
    assert [c.passed for c in v.rows] == [True] * 4, v.table_text()
    error_rows, _ = _p1_inputs(4.5)
    v2 = Verdict("test")
    mc.p1_checks(v2, _fit(0.62, 0.61, 0.63), error_rows, sigma_rows, delta=1e-5, slope_tol=0.05)
    assert [c.name for c in v2.rows if not c.passed] == ["P1 Gaussian error slope 1/2",
                                                         "P1 mean error = exact E||Z||_2"]


def test_p2_p4_checks_pass_and_fail():
    rows = [{"noise": nz, "J": J, "excess_mean": 0.5 * b, "bound": b, "exact_em": 0.5 * b, "se": 0.1}
            for nz in ("laplace", "gumbel") for J, b in ((4, 5.0), (16, 8.0))]
    tail = [{"t": 1.0, "ci_low": 0.2, "ci_high": 0.3, "bound": math.exp(-1.0), "exact": 0.25}]
    v = Verdict("test")
    mc.p2_p4_checks(v, rows, tail, epsilon=1.0)
    assert len(v.rows) == 5 and all(c.passed for c in v.rows), v.table_text()
    bad = [r | {"excess_mean": 1.1 * r["bound"]} for r in rows]
    v2 = Verdict("test")
    mc.p2_p4_checks(v2, bad, tail, epsilon=1.0)
    assert [c.name for c in v2.rows if not c.passed] == ["P2 RNM excess <= 4 Delta (ln J + 1)/eps",
                                                         "P4 EM excess <= 2 Delta (ln J + 1)/eps",
                                                         "P4 EM excess = exact Delta ln(J-1)/eps"]


def test_rnm_first_probability_exact_values():
    # J = 2, Laplace: P(Z1 - Z0 < g) with P(Z1 - Z0 > t) = e^{-t/b}(2 + t/b)/4 for t >= 0
    for g, b in ((0.0, 1.0), (1.3, 2.0), (5.0, 0.7)):
        assert mc.rnm_first_probability(2, g, b, "laplace") == pytest.approx(
            1 - math.exp(-g / b) * (2 + g / b) / 4, abs=1e-10)
    assert mc.rnm_first_probability(7, 0.0, 1.0, "laplace") == pytest.approx(1 / 7, abs=1e-10)
    assert mc.rnm_first_probability(10, 2.0, 1.0, "gumbel") == pytest.approx(1 / (1 + 9 * math.exp(-2.0)))
    with pytest.raises(ValueError, match="noise"):
        mc.rnm_first_probability(4, 1.0, 1.0, "cauchy")


@pytest.mark.parametrize("factor", [1.0, 2.0, 0.5])
def test_rnm_exact_excess_matches_sampler(factor):
    g, q = mc.rnm_exact_excess([64], epsilon=1.0, noise_factor=factor)
    assert g[0] == pytest.approx(2 * math.log(63))
    rec = mc.rnm_excess_task(rng=_rng(3), J=64, noise="laplace", K=40_000, epsilon=1.0, noise_factor=factor)
    se = g[0] * math.sqrt(q[0] * (1 - q[0]) / 40_000)
    assert abs(rec["excess"] - g[0] * q[0]) < 4.5 * se
    # the exponential mechanism's closed form at factor 1: q = 1/2
    assert mc.rnm_exact_excess([64], epsilon=1.0, noise="gumbel")[1][0] == pytest.approx(0.5)


def test_p2_statistics_and_power():
    J = [4, 16, 64, 256]
    g, q = mc.rnm_exact_excess(J, epsilon=1.0)
    zmax, zs = mc.p2_statistics(g * q, np.full(4, 100), J, g, q)
    assert zmax == 0.0 and zs == 0.0
    s = g * np.sqrt(q * (1 - q) / 100)
    zmax, _ = mc.p2_statistics(g * q + np.array([0, 3, 0, 0]) * s, np.full(4, 100), J, g, q)
    assert zmax == pytest.approx(3.0)
    false_alarm = mc.p2_power(J, [1200] * 4, epsilon=1.0, noise_factor=1.0, rng=_rng(), n_sim=2000)
    assert max(false_alarm) < 0.01
    assert mc.p2_power(J, [1200] * 4, epsilon=1.0, noise_factor=2.0, rng=_rng(), n_sim=2000) == (1.0, 1.0)
    # too few runs: the halved noise is missed most of the time
    weak = mc.p2_power(J, [3] * 4, epsilon=1.0, noise_factor=0.5, rng=_rng(), n_sim=2000)
    assert max(weak) < 0.5


def _p2_records(factor: float, K: int = 300, reps: int = 2) -> list[dict]:
    return [mc.rnm_excess_task(rng=_rng(100 * k + J), J=J, noise="laplace", K=K, epsilon=1.0, noise_factor=factor)
            | {"J": J, "noise": "laplace", "K": K, "noise_factor": factor}
            for J in (4, 16, 64) for k in range(reps)]


def test_p2_checks_pass_and_fail():
    recs = _p2_records(1.0) + _p2_records(2.0) + _p2_records(0.5)
    rows = mc.p2_rows(recs, epsilon=1.0)
    assert {r["noise_factor"] for r in rows} == {0.5, 1.0, 2.0} and all(r["draws"] == 600 for r in rows)
    powers = {f: mc.p2_power([4, 16, 64], [600] * 3, epsilon=1.0, noise_factor=f, rng=_rng()) for f in
              (1.0, 2.0, 0.5)}
    v = Verdict("test")
    mc.p2_checks(v, rows, powers, required=0.95)
    assert len(v.rows) == 4 and all(c.passed for c in v.rows), v.table_text()
    # the mechanism's records replaced by the twice-noisy ones: the claim rows fail
    swapped = [r | {"noise_factor": 1.0} for r in rows if r["noise_factor"] == 2.0]
    v2 = Verdict("test")
    mc.p2_checks(v2, swapped, powers, required=0.95)
    assert [c.passed for c in v2.rows] == [False, False]
    # a power below the requirement fails the claim row even when the records pass
    v3 = Verdict("test")
    mc.p2_checks(v3, rows, powers | {0.5: (0.5, 0.9)}, required=0.95)
    assert [c.passed for c in v3.rows] == [False, False, True, True]
    with pytest.raises(ValueError, match="powers"):
        mc.p2_checks(Verdict("t"), rows, {1.0: (0.0, 0.0)}, required=0.95)


def test_plots_draw():
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3)
    rows = mc.gaussian_sigma_rows([0.1, 2.0], delta=1e-5)
    mc.plot_gaussian_sigma(axes[0], rows, delta=1e-5)
    tail = mc.em_tail_rows([{"J": 10, "t": t, "n": 100, "k": 10, "exact": 0.1} for t in (0.0, 1.0)])
    mc.plot_em_tail(axes[1], tail)
    recs = [{"mechanism": m, "variant": v, "lower_bound": 0.5, "claimed": 1.0, "true": 1.0}
            for m in mc.AUDIT_MECHANISMS for v in ("correct", "broken")]
    mc.plot_audits(axes[2], recs)
    assert axes[0].get_title() == "Gaussian noise scale at delta=1e-05" and "J = 10" in axes[1].get_title()
    plt.close(fig)


# Bad inputs ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("call", "name"), [
    (lambda: mc.gaussian_expected_norm(0.0, 3), "sigma"),
    (lambda: mc.gaussian_expected_norm(1.0, 0), "d"),
    (lambda: mc.gaussian_error_task(rng=_rng(), d=0, m=1, epsilon=1.0, delta=1e-5), "d"),
    (lambda: mc.gaussian_error_task(rng=_rng(), d=3, m=0, epsilon=1.0, delta=1e-5), "m"),
    (lambda: mc.gaussian_error_rows([], m=1), "records"),
    (lambda: mc.gaussian_sigma_rows([0.5], delta=0.0), "delta"),
    (lambda: mc.gaussian_sigma_rows([-0.5], delta=1e-5), "eps_grid"),
    (lambda: mc.rnm_excess_task(rng=_rng(), J=1, noise="laplace", K=1, epsilon=1.0), "J"),
    (lambda: mc.rnm_excess_task(rng=_rng(), J=4, noise="gauss", K=1, epsilon=1.0), "noise"),
    (lambda: mc.rnm_excess_task(rng=_rng(), J=4, noise="gumbel", K=0, epsilon=1.0), "K"),
    (lambda: mc.noisy_max_rows([], epsilon=0.0), "epsilon"),
    (lambda: mc.excess_slope([], [], "cauchy", rng=_rng(), n_boot=10), "noise"),
    (lambda: mc.excess_slope([], [], "laplace", rng=_rng(), n_boot=0), "n_boot"),
    (lambda: mc.em_tail_task(rng=_rng(), J=10, t=-1.0, n=10, epsilon=1.0), "t"),
    (lambda: mc.em_tail_task(rng=_rng(), J=10, t=1.0, n=0, epsilon=1.0), "n"),
    (lambda: mc.em_tail_rows([], confidence=1.0), "confidence"),
    (lambda: mc.em_log_ratio(0.0, 10), "epsilon"),
    (lambda: mc.noisy_max_log_ratio(1.0, 0), "n_candidates"),
    (lambda: mc.audit_task(rng=_rng(), mechanism="cauchy", variant="correct", n=10), "mechanism"),
    (lambda: mc.audit_task(rng=_rng(), mechanism="laplace", variant="half", n=10), "variant"),
    (lambda: mc.audit_task(rng=_rng(), mechanism="laplace", variant="correct", n=0), "n"),
    (lambda: mc.p1_checks(Verdict("t"), _fit(0.5, 0.4, 0.6), [], [], delta=1e-5, slope_tol=0.0),
     "slope_tol"),
])
def test_bad_inputs_raise_value_error_naming_parameter(call, name):
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        call()
