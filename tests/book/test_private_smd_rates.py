"""The A1/A5 experiment helpers of the book (dpsco_book.private_smd_rates): declared regimes, tasks, fits, predicted
ranges, margins and the shapes of the fitting helpers.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsco_book import private_smd_rates as sc
from dpsco_lib.experiments.analysis import SlopeFit
from dpsco_lib.problems import PlantedLinearSCO


def test_effective_n_and_declared_regimes():
    n = 10_000
    assert sc.effective_n(n, 1.0) == pytest.approx(n / math.sqrt(1.1 * math.log(n)))
    assert sc.a1_declared("second_order", 4, 1.0).L2 == 1.5 and sc.a1_declared("quadratic", 4, 1.0).L2 == 0.0
    assert sc.a5_declared("first_order", 4, 1.0).L1 == pytest.approx(0.15)
    with pytest.raises(ValueError, match="regime must be"):
        sc.a1_declared("third", 4, 1.0)
    with pytest.raises(ValueError, match="regime must be"):
        sc.a5_declared("quadratic", 4, 1.0)


def test_a1_task_long_format_fits_and_learning():
    kw = {"d": 4, "margins": [0.5, 1.0], "epsilon": 1.0, "runs": 2, "reps": 3}
    recs = [{"regime": "quadratic", "n": n, "reps": 3,
             **sc.a1_gap_task(rng=np.random.default_rng(n), regime="quadratic", n=n, **kw)} for n in (400, 1600)]
    assert all(r["certified"] <= 1.0 + 1e-12 for r in recs)
    long = sc.long_format(recs, kw["margins"])
    assert long["quadratic"]["y"].shape == (2 * 2 * 3,)
    fits = sc.exponent_fits(long, rng=np.random.default_rng(0), n_boot=200)
    assert fits["quadratic"].slope < 0
    rows = sc.learning_rows(long)
    assert rows[0]["n"] == 1600 and rows[0]["ratio"] == pytest.approx(rows[0]["median error"] / rows[0]["trivial"])


def test_a5_task_runs_and_certifies():
    out = sc.a5_excess_task(rng=np.random.default_rng(0), regime="second_order", n=800, d=4, margins=[1.0],
                            epsilon=1.0, runs=2, reps=2)
    assert out["certified"] <= 1.0 + 1e-12 and 0 <= out["gap_0_0"] <= out["trivial_0"] * 4 / 3 + 1e-12


def test_tasks_default_to_the_tightest_accountant_and_record_the_bound():
    from dpsco_lib.algorithms.private_smd_saddle import alg1_theory_params

    out = sc.a1_gap_task(rng=np.random.default_rng(0), regime="second_order", n=600, d=4, margins=[1.0],
                         epsilon=1.0, runs=1, reps=1)
    g = sc.a1_declared("second_order", 4, 1.0)
    p = alg1_theory_params(600, d=(4, 4), epsilon=1.0, delta=out["delta"], L0=g.L0, L1=g.L1, L2=g.L2,
                           regime="second_order", accountant="best")
    assert (out["K"], out["T"], out["eps0"], out["bound"]) == (p.K, p.T, p.eps0, p.bound)


def test_predicted_ranges_span_the_exponent_and_the_local_slope_of_the_bound():
    # bound = C m^-0.4 (1 + 2 m^-0.5): its least-squares local slope lies below -0.4, the range spans both
    ms = np.array([100.0, 400.0, 1600.0])
    recs = [{"regime": "r", "m": m, "bound": 3 * m**-0.4 * (1 + 2 / math.sqrt(m))} for m in ms for _ in range(2)]
    p = sc.predicted_ranges(recs, {"r": -0.4})["r"]
    local = np.polyfit(np.log(ms), np.log(3 * ms**-0.4 * (1 + 2 / np.sqrt(ms))), 1)[0]
    assert p["local"] == pytest.approx(local) and p["local"] < -0.4
    assert (p["lo"], p["hi"], p["asymptotic"]) == (p["local"], -0.4, -0.4)
    pure = sc.predicted_ranges([{"regime": "r", "m": m, "bound": m**-0.5} for m in ms], {"r": -0.5})["r"]
    assert pure["lo"] == pytest.approx(-0.5) and pure["hi"] == pytest.approx(-0.5)


def test_pairwise_separated():
    mk = lambda s, lo, hi: SlopeFit(s, 0.0, lo, hi, 0.95, 3, 100, "median")  # noqa: E731
    rows = sc.pairwise_separated({"a": mk(-0.5, -0.52, -0.48), "b": mk(-0.4, -0.41, -0.39), "c": mk(-0.38, -0.395,
                                                                                                      -0.37)})
    got = {(a, b): ok for a, b, ok, _ in rows}
    assert got == {("a", "b"): True, ("a", "c"): True, ("b", "c"): False}


def test_draw_counts_match_ledgers():
    """A broken variant whose ledger (or calibration) counts a different number of vertex draws than the run makes
    (e.g. K T instead of 2 K T) is caught: the draws actually made, read from the trace, equal the ledger's count
    for Algorithm 1 (2 K T) and Algorithm 5 (K (#redraws - 1) + K', the first redraw being data independent)."""
    from dpsco_lib.algorithms.anytime_smd import run_anytime_smd_sco
    from dpsco_lib.algorithms.private_smd_saddle import run_private_smd_saddle

    g = sc.a1_declared("first_order", 4, 1.0)
    res = run_private_smd_saddle(g, g.sample(3000, np.random.default_rng(0)), epsilon=1.0, delta=1e-4,
                                 rng=np.random.default_rng(1), regime="first_order", accountant="advanced", trace=True)
    made = res.trace["draws_x"].size + res.trace["draws_y"].size
    assert made == res.ledger.total_count == 2 * res.params["K"] * res.params["T"]
    p = sc.a5_declared("first_order", 4, 1.0)
    r5 = run_anytime_smd_sco(p, p.sample(3000, np.random.default_rng(2)), epsilon=1.0, delta=1e-4,
                             rng=np.random.default_rng(3), regime="first_order", accountant="advanced", trace=True)
    redraws = r5.trace["redraw_steps"].size
    made5 = r5.params["K"] * (redraws - 1) + int(r5.trace["output_counts"].sum())
    assert made5 == r5.ledger.total_count


def test_check_audit_pair_rows():
    from dpsco_book.private_smd_rates import check_audit_pair
    from dpsco_lib.experiments import Verdict

    ok = {"caught": False, "audited lower bound": 0.4, "claimed eps": 1.0}
    bad = {"caught": True, "audited lower bound": 1.7, "claimed eps": 1.0}
    v = Verdict("t")
    check_audit_pair(v, "A9", [ok, bad])
    assert [r.passed for r in v.rows] == [True, True]
    v2 = Verdict("t")
    check_audit_pair(v2, "A9", [bad, ok])  # a correct run flagged and a broken one missed: both rows fail
    assert [r.passed for r in v2.rows] == [False, False]
    with pytest.raises(ValueError, match="audit"):
        check_audit_pair(Verdict("t"), "A9", [ok])


def test_planted_noiseless_excess_is_algorithm_5_without_record_noise():
    """The closed form equals the excess of Algorithm 5's last anytime average x_{T+1} on a member with s = 0
    (an off-by-one in A_{t-1} or in the averaging weights t would miss it), whatever K, tau (the gradient of a
    linear loss does not depend on the vertex estimate)."""
    from dpsco_lib.algorithms.anytime_smd import run_anytime_smd_sco

    p = PlantedLinearSCO(5, 0.5, noise=0.0, L1=0.15, L2=0.15)
    data = p.sample(600, np.random.default_rng(0))
    for K, tau in ((1, 1), (3, 4)):
        r = run_anytime_smd_sco(p, data, epsilon=1.0, delta=1e-4, rng=np.random.default_rng(K), T=60, K=K, tau=tau,
                                K_out=5, step_size=0.002, enforce_privacy_cap=False, trace=True)
        assert p.excess_risk(r.trace["x_avg"][-1]) == pytest.approx(sc.planted_noiseless_excess(0.5, 5, 60, 0.002),
                                                                    rel=1e-12)


def test_planted_noiseless_excess_grows_to_the_regret_plateau():
    # first-order design at n = 4000 (T = 160, eta = 5.39e-4): the excess grows with the margin and the largest
    # margin sits within 1% of the log d/(eta A_T) term of the bound
    T, eta = 160, 5.391e-4
    vals = [sc.planted_noiseless_excess(m, 10, T, eta) for m in (0.0625, 0.125, 0.25, 0.5, 1.0)]
    assert np.all(np.diff(vals) > 0)
    assert vals[-1] == pytest.approx(math.log(10) / (eta * T * (T + 1) / 2), rel=0.01)
    # a tiny step learns nothing: the excess of the uniform point
    assert sc.planted_noiseless_excess(0.5, 10, 5, 1e-12) == pytest.approx(0.5 * 0.9, rel=1e-6)
    for kw, match in (({"margin": 0.0}, "margin"), ({"d": 1}, "d must"), ({"T": 0}, "T must"), ({"eta": -1.0}, "eta")):
        args = {"margin": 0.5, "d": 4, "T": 10, "eta": 0.1} | kw
        with pytest.raises(ValueError, match=match):
            sc.planted_noiseless_excess(**args)


def test_bound_ratio_rows_read_the_worst_member_and_the_design():
    # two n, two margins, three replicates: the worst member switches from 1.0 to 0.5; ratio = worst median/bound
    recs = [{"regime": "r", "n": n, "m": float(n), "d": 4, "T": T, "eta": 0.01, "bound": b, "reps": 3,
             "replicate": 0} for n, T, b in ((100, 10, 0.5), (400, 20, 0.25))]
    long = {"r": {"n": np.repeat([100, 400], 6), "m": np.repeat([100.0, 400.0], 6),
                  "y": np.array([0.1, 0.2, 0.3, 0.2, 0.3, 0.4, 0.1, 0.12, 0.14, 0.05, 0.06, 0.07]),
                  "trivial": np.ones(12), "label": np.tile(np.repeat([0.5, 1.0], 3), 2)}}
    rows = sc.bound_ratio_rows(long, recs)
    assert [(r["n"], r["worst margin"]) for r in rows] == [(100, 1.0), (400, 0.5)]
    assert rows[0]["median error"] == pytest.approx(0.3) and rows[0]["error/bound"] == pytest.approx(0.6)
    assert rows[1]["error/bound"] == pytest.approx(0.12 / 0.25)
    assert rows[1]["noiseless, largest margin"] == pytest.approx(sc.planted_noiseless_excess(1.0, 4, 20, 0.01))


def test_a5_margins_shrink_with_n_like_the_theorem_s_private_term():
    for regime, power, logpow in (("first_order", 0.4, 0.7), ("second_order", 0.5, 1.0)):
        small, large = (sc.a5_margins(regime, n, d=10, epsilon=1.0) for n in (4000, 160000))
        assert small[-1] == large[-1] == 1.0 and len(small) == 3 and small == sorted(small)
        m = sc.effective_n(160000, 1.0)
        assert large[0] == pytest.approx(math.log(10) ** logpow * m**-power)
        assert large[1] == pytest.approx(4 * large[0])
        # the shrinking members follow m^(-power) between the two sizes
        ratio = sc.effective_n(160000, 1.0) / sc.effective_n(4000, 1.0)
        assert large[0] / small[0] == pytest.approx(ratio**-power)
    with pytest.raises(ValueError, match="too small"):
        sc.a5_margins("first_order", 50, d=10, epsilon=1.0)
    with pytest.raises(ValueError, match="regime must be"):
        sc.a5_margins("quadratic", 4000, d=10, epsilon=1.0)


def test_a5_family_members_below_the_plateau_do_not_tie_with_the_largest_margin():
    # at the design's T and eta, the worst member is the largest margin and the shrinking ones stay >= 15% below it
    from dpsco_book.privacy_rule import delta_for_n
    from dpsco_lib.algorithms.anytime_smd import alg5_theory_params

    for regime in ("first_order", "second_order"):
        for n in (4000, 25000):
            p = alg5_theory_params(n, n_vertices=10, epsilon=1.0, delta=delta_for_n(n), L0=1.5, L1=0.15, L2=0.15,
                                   regime=regime)
            vals = [sc.planted_noiseless_excess(mg, 10, p.T, p.eta) for mg in sc.a5_margins(regime, n, d=10,
                                                                                             epsilon=1.0)]
            assert vals[0] < vals[1] < 0.85 * vals[2]
            assert vals[2] == pytest.approx(p.log_v / (p.eta * p.T * (p.T + 1) / 2), rel=0.01)


def test_long_format_reads_each_record_s_margins():
    recs = [{"regime": "r", "n": n, "m": float(n), "reps": 1, "margins": mg, "gap_0_0": 0.1, "gap_1_0": 0.2,
             "trivial_0": 0.5, "trivial_1": 0.9} for n, mg in ((100, [0.3, 1.0]), (400, [0.2, 1.0]))]
    long = sc.long_format(recs)["r"]
    assert long["label"].tolist() == [0.3, 1.0, 0.2, 1.0] and long["y"].tolist() == [0.1, 0.2, 0.1, 0.2]
    fixed = sc.long_format(recs, [0.5, 1.0])["r"]
    assert fixed["label"].tolist() == [0.5, 1.0, 0.5, 1.0]


def test_predicted_ranges_include_the_local_slope_of_an_attained_term():
    # bound = regret + bias; the regret term alone is steeper over the grid: the range spans it
    ms = np.array([100.0, 400.0, 1600.0])
    regret = ms**-0.45
    recs = [{"regime": "r", "m": m, "bound": g + 0.5 * m**-0.3, "regret_term": g}
            for m, g in zip(ms, regret, strict=True)]
    p = sc.predicted_ranges(recs, {"r": -0.4}, terms=("regret_term",))["r"]
    assert p["terms"]["regret_term"] == pytest.approx(-0.45)
    assert p["lo"] == pytest.approx(-0.45) and p["hi"] == pytest.approx(max(-0.4, p["local"]))
    plain = sc.predicted_ranges(recs, {"r": -0.4})["r"]
    assert plain["terms"] == {} and (plain["lo"], plain["hi"]) == (min(-0.4, plain["local"]), max(-0.4, plain["local"]))


def test_a5_task_records_the_regret_term_of_its_design():
    out = sc.a5_excess_task(rng=np.random.default_rng(0), regime="first_order", n=800, d=4, margins=[1.0],
                            epsilon=1.0, runs=1, reps=1)
    assert out["regret_term"] == pytest.approx(math.log(4) / (out["eta"] * out["T"] * (out["T"] + 1) / 2))


# ---------------------------------------------------------------------------------------------------------
# declared claims and the comparison with the Frank-Wolfe methods
# ---------------------------------------------------------------------------------------------------------
def test_hardness_lattice_is_fixed_and_spans_two_decades():
    lat = sc.HARDNESS_LATTICE
    assert isinstance(lat, tuple) and max(lat) / min(lat) >= 100 and max(lat) == 1.0
    assert list(lat) == sorted(set(lat))


def test_design_params_is_the_design_the_tasks_run():
    out = sc.a1_gap_task(rng=np.random.default_rng(0), regime="second_order", n=600, d=4, margins=[0.01, 1.0],
                         epsilon=1.0, runs=1, reps=1)
    p = sc.design_params("A1", "second_order", 600, d=4, epsilon=1.0)
    assert (p.K, p.T, p.eps0, p.bound) == (out["K"], out["T"], out["eps0"], out["bound"])
    out5 = sc.a5_excess_task(rng=np.random.default_rng(0), regime="first_order", n=800, d=4, margins=[1.0],
                             epsilon=1.0, runs=1, reps=1)
    p5 = sc.design_params("A5", "first_order", 800, d=4, epsilon=1.0)
    assert (p5.T, p5.K, p5.tau, p5.bound) == (out5["T"], out5["K"], out5["tau"], out5["bound"])
    with pytest.raises(ValueError, match="algorithm must be"):
        sc.design_params("A2", "first_order", 800, d=4, epsilon=1.0)


def test_declared_range_spans_the_exponent_and_the_local_slope_of_the_design_s_bound():
    grid = [1000, 4000, 16000]
    lo, hi = sc.declared_range("A1", "quadratic", grid, d=4, epsilon=1.0)
    lm = np.log([sc.effective_n(n, 1.0) for n in grid])
    lb = np.log([sc.design_params("A1", "quadratic", n, d=4, epsilon=1.0).bound for n in grid])
    local = np.polyfit(lm, lb, 1)[0]
    assert lo == pytest.approx(min(-0.5, local)) and hi == pytest.approx(max(-0.5, local))
    with pytest.raises(ValueError, match="at least two distinct"):
        sc.declared_range("A1", "quadratic", [1000, 1000], d=4, epsilon=1.0)
    with pytest.raises(ValueError, match="regime must be"):
        sc.declared_range("A5", "quadratic", grid, d=4, epsilon=1.0)


@pytest.mark.parametrize(("alg", "regime", "neighbour"), [("A1", "quadratic", -0.4), ("A1", "second_order", -1 / 3),
                                                          ("A5", "first_order", -1 / 3), ("A5", "second_order", -0.4)])
def test_rate_claim_takes_half_the_gap_to_the_neighbouring_regime(alg, regime, neighbour):
    grid = [1000, 4000, 16000]
    c = sc.rate_claim(alg, regime, grid, d=4, epsilon=1.0)
    lo, hi = c.bounds
    assert (lo, hi) == pytest.approx(sc.declared_range(alg, regime, grid, d=4, epsilon=1.0))
    assert c.neighbour == pytest.approx(neighbour)
    assert c.gap / 2 - 1e-3 <= c.tolerance <= c.gap / 2
    assert c.level == 0.95 and sc.rate_claim(alg, regime, grid, d=4, epsilon=1.0, level=0.99).level == 0.99


def test_rate_claim_accepts_the_predicted_decay_and_rejects_both_controls():
    grid = [1000, 4000, 16000, 64000]
    c = sc.rate_claim("A1", "quadratic", grid, d=4, epsilon=1.0)
    rng = np.random.default_rng(3)
    m = np.repeat([sc.effective_n(n, 1.0) for n in grid], 6)
    y = m ** np.mean(c.bounds) * np.exp(0.01 * rng.standard_normal(m.size))
    out = c.evaluate(m, y, trivial=np.full(m.size, 1.8), rng=rng, required=0.8, n_boot=200, n_resamples=50)
    assert out.accepted and out.power_trivial == 1.0 and out.power_regime >= 0.8 and out.passed
    flat = m ** c.neighbour * np.exp(0.01 * rng.standard_normal(m.size))
    assert not c.evaluate(m, flat, rng=rng, required=0.8, n_boot=200, n_resamples=50).accepted


def test_bound_claim_reads_the_design_s_bound_at_each_grid_point():
    grid = [1000, 4000]
    b = sc.bound_claim("A5", "second_order", grid, d=4, epsilon=1.0)
    for n in grid:
        assert b.bound(sc.effective_n(n, 1.0)) == sc.design_params("A5", "second_order", n, d=4, epsilon=1.0).bound
    with pytest.raises(ValueError, match="not a point of the declared grid"):
        b.bound(1.0)
    m = np.repeat([sc.effective_n(n, 1.0) for n in grid], 2)
    bounds = np.array([b.bound(v) for v in m])
    out = b.evaluate(m, 0.5 * bounds, trivial=2.0 * bounds, rng=np.random.default_rng(0), required=0.8,
                     n_resamples=20)
    assert out.accepted and out.power_trivial == 1.0


def test_claim_records_are_the_long_format_of_one_regime():
    long = {"r": {"m": np.ones(3), "y": np.arange(3.0), "label": np.zeros(3), "trivial": np.full(3, 2.0),
                  "n": np.ones(3)}}
    kw = sc.claim_records(long, "r")
    assert set(kw) == {"x", "y", "family", "trivial"} and kw["trivial"][0] == 2.0


def test_comparison_task_runs_every_method_on_the_same_members_and_certifies():
    out = sc.comparison_task(rng=np.random.default_rng(0), n=400, d=4, margins=[0.1, 1.0], epsilon=1.0, runs=1,
                             a5_runs=2)
    assert out["certified"] <= 1.0 + 1e-9
    for key in sc.COMPARED:
        for i, margin in enumerate([0.1, 1.0]):
            assert 0.0 <= out[f"{key}|{i}"] <= margin + 1e-12
    recs = [{**out, "n": 400, "replicate": 0}]
    rows = sc.comparison_rows(recs, [0.1, 1.0])
    assert len(rows) == len(sc.COMPARED)
    for row in rows:
        worst = max(out[f"{row['method']}|{i}"] for i in range(2))
        assert row["worst excess"] == pytest.approx(worst)
    with pytest.raises(ValueError, match="runs"):
        sc.comparison_task(rng=np.random.default_rng(0), n=400, d=4, margins=[1.0], epsilon=1.0, runs=0)
