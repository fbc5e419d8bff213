"""The crossover table (dpsco_book.crossover): estimator, fit, validation, reproducibility, a tiny grid."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from dpsco_book import crossover as xo


def _strip(records: list[dict]) -> list[dict]:
    """The records without their timings (the only outputs that vary between identical runs)."""
    return [{k: v for k, v in r.items() if k not in ("seconds", "cpu_seconds")} for r in records]


def _records(table: dict[int, list[float]], algorithm: str = "F2 tree FW", d: int = 10) -> list[dict]:
    return [{"algorithm": algorithm, "d": d, "n": n, "ratio": r} for n, rs in table.items() for r in rs]


# ---------------------------------------------------------------------------------------------------------------
# The estimator on synthetic records (exact values)
# ---------------------------------------------------------------------------------------------------------------
def test_required_n_interpolates_in_log_n():
    # medians 0.8 at n = 100 and 0.3 at n = 1000: t = (0.8 - 0.5)/(0.8 - 0.3) = 0.6, n = 100 * 10^0.6
    est = xo.required_n(_records({100: [0.9, 0.8, 0.7], 1000: [0.2, 0.3, 0.4], 10_000: [0.1, 0.1, 0.1]}))
    (e,) = est
    assert e.status == "reached"
    assert e.n_grid == (100, 1000, 10_000)
    assert e.median_ratio == pytest.approx((0.8, 0.3, 0.1))
    assert e.n_grid_required == 1000
    assert e.n_required == pytest.approx(100 * 10**0.6, rel=1e-12)
    assert e.ci_low == e.ci_high == e.n_required  # no bootstrap
    assert e.label() == "400 [400, 400]"


def test_required_n_takes_the_first_crossing_and_other_fractions():
    recs = _records({100: [0.6], 200: [0.4], 400: [0.7], 800: [0.2]})
    (e,) = xo.required_n(recs)
    assert e.n_grid_required == 200
    assert e.n_required == pytest.approx(100 * 2 ** 0.5)  # t = (0.6 - 0.5)/(0.6 - 0.4) = 1/2
    (e,) = xo.required_n(recs, fraction=0.25)
    assert e.n_grid_required == 800
    assert e.n_required == pytest.approx(math.exp(math.log(400) + (0.45 / 0.5) * math.log(2)))


def test_required_n_not_reached_and_first_point():
    (e,) = xo.required_n(_records({100: [0.9], 1000: [0.6]}))
    assert e.status == "not reached" and math.isinf(e.n_required) and e.n_grid_required is None
    assert e.label() == "> 1e3"
    (e,) = xo.required_n(_records({300: [0.4, 0.5, 0.6], 1000: [0.1]}))
    assert e.status == "at first point" and e.n_required == 300 and e.n_grid_required == 300
    assert e.label() == "<= 300"


def test_required_n_groups_by_algorithm_and_dimension():
    recs = _records({100: [0.9], 1000: [0.1]}, d=10) + _records({100: [0.9], 1000: [0.7]}, d=100)
    recs += _records({100: [0.2], 1000: [0.1]}, algorithm="D4 DP-SGD", d=10)
    est = xo.required_n(recs)
    assert [(e.algorithm, e.d, e.status) for e in est] == [
        ("F2 tree FW", 10, "reached"), ("F2 tree FW", 100, "not reached"), ("D4 DP-SGD", 10, "at first point")]


def test_bootstrap_interval_is_exact_when_replicates_agree_and_covers_otherwise():
    (e,) = xo.required_n(_records({100: [0.8] * 5, 1000: [0.3] * 5}), rng=np.random.default_rng(0), n_boot=200)
    assert e.ci_low == pytest.approx(e.n_required) and e.ci_high == pytest.approx(e.n_required)
    assert e.boot.shape == (200,)
    noisy = {100: [0.95, 0.9, 0.8, 0.7, 0.6], 1000: [0.45, 0.4, 0.3, 0.2, 0.1]}
    (e,) = xo.required_n(_records(noisy), rng=np.random.default_rng(1), n_boot=500)
    assert 100 <= e.ci_low <= e.n_required <= e.ci_high <= 1000
    # a resample whose median stays above the fraction at the last point never crosses: +inf draws
    edge = {100: [0.9] * 5, 1000: [0.2, 0.3, 0.45, 0.6, 0.7]}
    (e,) = xo.required_n(_records(edge), rng=np.random.default_rng(2), n_boot=500)
    assert np.isinf(e.boot).any() and math.isinf(e.ci_high)


def test_bootstrap_is_reproducible():
    noisy = _records({100: [0.95, 0.9, 0.8, 0.7, 0.6], 1000: [0.45, 0.4, 0.3, 0.2, 0.1]})
    a = xo.required_n(noisy, rng=np.random.default_rng(5), n_boot=300)[0]
    b = xo.required_n(noisy, rng=np.random.default_rng(5), n_boot=300)[0]
    np.testing.assert_array_equal(a.boot, b.boot)


# ---------------------------------------------------------------------------------------------------------------
# The fit of n_req against d
# ---------------------------------------------------------------------------------------------------------------
def _est(d: float, n_req: float, boot: np.ndarray | None = None) -> xo.CrossoverEstimate:
    b = np.full(200, n_req) if boot is None else boot
    return xo.CrossoverEstimate("D4 DP-SGD", int(d), 0.5, (10, 10**8), (0.9, 0.1), n_req, 10**8, "reached",
                                float(b.min()), float(b.max()), 0.95, b)


def test_fit_required_n_recovers_power_and_polylog_exactly():
    fit = xo.fit_required_n([_est(d, 7.0 * d**0.8) for d in (100, 1000, 10_000)])
    assert fit.slope == pytest.approx(0.8) and fit.ci_low == pytest.approx(0.8) and fit.ci_high == pytest.approx(0.8)
    assert fit.predict(1000.0) == pytest.approx(7.0 * 1000**0.8)
    fit = xo.fit_required_n([_est(d, 50.0 * math.log(d) ** 2) for d in (100, 1000, 10_000)], against="log d")
    assert fit.slope == pytest.approx(2.0) and fit.n_points == 3 and fit.statistic == "median"


def test_fit_required_n_interval_from_joint_draws_and_infinite_draws():
    rng = np.random.default_rng(3)
    ests = [_est(d, 10.0 * d, 10.0 * d * np.exp(0.1 * rng.standard_normal(400))) for d in (100, 1000)]
    fit = xo.fit_required_n(ests)
    assert fit.slope == pytest.approx(1.0) and fit.ci_low < 1.0 < fit.ci_high and fit.n_boot == 400
    boot = np.full(400, 1e4)
    boot[:50] = np.inf  # 12.5% of the draws never cross at d = 1000: the interval is open on both sides
    fit = xo.fit_required_n([_est(100, 1e3, np.full(400, 1e3)), _est(1000, 1e4, boot)])
    assert fit.slope == pytest.approx(1.0) and math.isinf(fit.ci_high)


def test_fit_required_n_uses_reached_dimensions_only():
    miss = xo.CrossoverEstimate("D4 DP-SGD", 10_000, 0.5, (10, 100), (0.9, 0.8), math.inf, None, "not reached",
                                math.inf, math.inf, 0.95, np.full(200, np.inf))
    fit = xo.fit_required_n([_est(100, 1e3), _est(1000, 1e4), miss])
    assert fit.n_points == 2 and fit.slope == pytest.approx(1.0)
    with pytest.raises(ValueError, match="estimates"):
        xo.fit_required_n([_est(100, 1e3), miss])


def test_exponent_bounds_with_censored_crossings():
    lo_e = xo.CrossoverEstimate("D4 DP-SGD", 100, 0.5, (10, 10**8), (0.9, 0.1), 1e3, 10**8, "reached", 900.0, 1100.0,
                                0.95, np.full(10, 1e3))
    hi_e = xo.CrossoverEstimate("D4 DP-SGD", 1000, 0.5, (10, 10**8), (0.9, 0.1), 1e4, 10**8, "reached", 9e3, 1.1e4,
                                0.95, np.full(10, 1e4))
    lo, hi = xo.exponent_bounds(lo_e, hi_e)
    assert lo == pytest.approx(math.log10(9e3 / 1100)) and hi == pytest.approx(math.log10(1.1e4 / 900))
    miss = xo.CrossoverEstimate("D4 DP-SGD", 1000, 0.5, (10, 2e4), (0.9, 0.8), math.inf, None, "not reached",
                                math.inf, math.inf, 0.95, np.full(10, np.inf))
    lo, hi = xo.exponent_bounds(lo_e, miss)  # the crossing lies above n_max = 2e4
    assert lo == pytest.approx(math.log10(2e4 / 1100)) and math.isinf(hi)
    first = xo.CrossoverEstimate("D4 DP-SGD", 100, 0.5, (500, 1000), (0.2, 0.1), 500.0, 500, "at first point",
                                 500.0, 500.0, 0.95, np.full(10, 500.0))
    lo, hi = xo.exponent_bounds(first, hi_e)  # n_req <= 500 at d = 100: no upper bound on the exponent
    assert lo == pytest.approx(math.log10(9e3 / 500)) and math.isinf(hi)
    with pytest.raises(ValueError, match="low and high"):
        xo.exponent_bounds(hi_e, lo_e)


# ---------------------------------------------------------------------------------------------------------------
# Bad input: ValueError naming the parameter
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("call", "name"), [
    (lambda: xo.required_n(_records({100: [0.1]}), fraction=1.5), "fraction"),
    (lambda: xo.required_n(_records({100: [0.1]}), fraction=0.0), "fraction"),
    (lambda: xo.required_n(_records({100: [0.1]}), n_boot=50, rng=np.random.default_rng(0)), "n_boot"),
    (lambda: xo.required_n(_records({100: [0.1]}), n_boot=200), "rng"),
    (lambda: xo.required_n(_records({100: [0.1]}), level=1.0), "level"),
    (lambda: xo.required_n([]), "records"),
    (lambda: xo.required_n([{"algorithm": "F2 tree FW", "d": 10, "n": 100}]), "ratio"),
    (lambda: xo.required_n(_records({100: [float("nan")]})), "ratio"),
    (lambda: xo.fit_required_n([_est(100, 1e3), _est(1000, 1e4)], against="n"), "against"),
    (lambda: xo.geometric_n_grid(1000, 100), "n_max"),
    (lambda: xo.geometric_n_grid(1, 100), "n_min"),
    (lambda: xo.geometric_n_grid(100, 1000, per_decade=0), "per_decade"),
    (lambda: xo.crossover_problem(100, geometry="l2"), "geometry"),
    (lambda: xo.crossover_problem(2), "d"),
    (lambda: xo.crossover_delta(1), "n"),
    (lambda: xo.crossover_grid("huge"), "profile"),
    (lambda: xo.crossover_task(rng=np.random.default_rng(0), algorithm="S1 SMD", d=10, n=100), "algorithm"),
    (lambda: xo.crossover_task(rng=np.random.default_rng(0), algorithm="F2 tree FW", d=10, n=8), "n"),
    (lambda: xo.crossover_task(rng=np.random.default_rng(0), algorithm="F1 Poly-SFW", d=10, n=100, block_size=0),
     "block_size"),
    (lambda: xo.crossover_sweep({}, seeds=1, base_seed=0), "grids"),
    (lambda: xo.crossover_sweep({("F2 tree FW", 10): (100,)}, seeds=1, base_seed=0, fraction=2.0), "fraction"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_task_requires_a_generator():
    with pytest.raises(TypeError, match="rng"):
        xo.crossover_task(rng=0, algorithm="F2 tree FW", d=10, n=100)


# ---------------------------------------------------------------------------------------------------------------
# The shared problem, the privacy of every run, reproducibility
# ---------------------------------------------------------------------------------------------------------------
def test_lp_problem_shares_data_loss_and_optimum_with_the_l1_problem():
    d = 8
    l1, lp = xo.crossover_problem(d), xo.crossover_problem(d, geometry="lp")
    assert lp.p == pytest.approx(1 + 1 / math.log(d)) and lp.feasible_set.p == lp.p
    x_cv, f_cv = lp.cvxpy_optimum()  # cvxpy + Clarabel over the l_p ball: the planted e_1
    assert f_cv == pytest.approx(l1.population_optimum()[1], abs=1e-6)
    assert np.abs(x_cv - np.eye(d)[0]).max() < 1e-4
    a = l1.sample(50, np.random.default_rng(4))
    b = lp.sample(50, np.random.default_rng(4))
    np.testing.assert_array_equal(a.X, b.X)
    lp.validate_data(b)  # records within the declared l_q bound d^(1/q)
    x = np.random.default_rng(5).uniform(-0.1, 0.1, d)
    assert l1.excess_risk(x) == pytest.approx(lp.excess_risk(x))
    assert l1.excess_risk(np.zeros(d)) == pytest.approx(1.5)


FAST = ("F1 Poly-SFW", "F2 tree FW", "F3 GG-VR-SFW tree", "S2 noisy SGD")


@pytest.mark.parametrize("algorithm", FAST)
def test_task_is_reproducible_and_certified_replace_one(algorithm):
    run = lambda: xo.crossover_task(rng=np.random.default_rng(11), algorithm=algorithm, d=20, n=400)  # noqa: E731
    a, b = run(), run()
    assert _strip([a]) == _strip([b])
    assert a["relation"] == a["native_relation"] == "replace_one"
    assert a["eps_certified"] <= xo.CROSSOVER_EPSILON * (1 + 1e-9)
    assert a["delta"] == pytest.approx(400**-1.1) and a["delta"] == xo.crossover_delta(400)
    assert a["trivial"] == pytest.approx(1.5) and a["ratio"] == pytest.approx(a["excess"] / 1.5)


def test_dp_sgd_is_converted_to_a_replace_one_certificate_of_one():
    out = xo.crossover_task(rng=np.random.default_rng(2), algorithm="D4 DP-SGD", d=20, n=400)
    assert out["native_relation"] == "add_remove" and out["relation"] == "replace_one"
    assert 0.99 <= out["eps_certified"] <= 1.0 + 1e-9
    hyper = xo.dp_sgd_crossover_hyper(400, 20)
    assert hyper["epsilon"] == 0.5 and hyper["delta"] == pytest.approx(400**-1.1 / (1 + math.exp(0.5)))
    assert hyper["clip"] == pytest.approx(3 * math.sqrt(20))


def test_poly_sfw_stream_equals_in_memory_run():
    from dpsco_lib.algorithms.poly_sfw import run_poly_sfw

    out = xo.crossover_task(rng=np.random.default_rng(6), algorithm="F1 Poly-SFW", d=20, n=400, block_size=64)
    rng = np.random.default_rng(6)
    prob = xo.crossover_problem(20)
    res = run_poly_sfw(prob, prob.sample(400, rng), epsilon=1.0, delta=400**-1.1, rng=rng, accountant="best")
    assert out["excess"] == prob.excess_risk(res.x)


def test_format_and_rows():
    assert [xo.format_n(v) for v in (398.1, 300, 1000, 22_000, 23_456, 1e7, math.inf)] == [
        "400", "300", "1e3", "2.2e4", "2.3e4", "1e7", "inf"]
    (e,) = xo.required_n(_records({100: [0.8], 1000: [0.3]}))
    row = e.as_row()
    assert row["status"] == "reached" and row["n_min"] == 100 and row["n_max"] == 1000
    assert row["median_ratios"] == "100:0.8 1000:0.3"


def test_grids_respect_caps():
    grids = xo.crossover_grid("paper")
    for (alg, d), grid in grids.items():
        max_nd, max_n = xo.PROFILE_GRIDS["paper"]["caps"][alg]
        assert all(n * d <= max_nd and n <= max_n for n in grid)
        assert list(grid) == sorted(grid)
    assert xo.geometric_n_grid(1000, 10**4) == (1000, 2200, 4600, 10_000)
    assert xo.geometric_n_grid(200, 1000, per_decade=2) == (320, 1000)


# ---------------------------------------------------------------------------------------------------------------
# A tiny end-to-end grid
# ---------------------------------------------------------------------------------------------------------------
def test_tiny_end_to_end_grid():
    grids = {("F2 tree FW", 10): (200, 1000, 5000, 25_000), ("F2 tree FW", 40): (200, 1000, 5000, 25_000),
             ("S2 noisy SGD", 10): (200, 1000)}
    recs = xo.crossover_sweep(grids, seeds=3, base_seed=7, extra=1, n_jobs=1, progress=False)
    again = xo.crossover_sweep(grids, seeds=3, base_seed=7, extra=1, n_jobs=1, progress=False)
    assert _strip(recs) == _strip(again)
    est = xo.required_n(recs, rng=np.random.default_rng(0), n_boot=200)
    by = {(e.algorithm, e.d): e for e in est}
    for key, e in by.items():
        assert e.n_grid == grids[key][: len(e.n_grid)]  # walked upwards from the first point
        if e.n_grid_required is not None:  # stopped one point after the first crossing (or at the grid's end)
            k = e.n_grid.index(e.n_grid_required)
            assert len(e.n_grid) == min(k + 2, len(grids[key]))
    assert all(r["eps_certified"] <= 1.0 + 1e-9 for r in recs)
    rows = xo.crossover_table(est, fits_d={"F2 tree FW": "x"}, algorithms=["F2 tree FW", "S2 noisy SGD", "D4 DP-SGD"])
    assert [r["algorithm"] for r in rows] == ["F2 tree FW", "S2 noisy SGD", "D4 DP-SGD"]
    assert rows[0]["b in d^b"] == "x" and rows[0]["k in ln^k d"] == "-" and rows[0]["theory: n_req ~"] == "ln d"
    assert rows[2]["d = 10"] == "-" and rows[1]["d = 40"] == "-"
    ax = xo.plot_required_n(est)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
