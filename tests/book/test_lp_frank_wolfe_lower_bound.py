"""The experiments of notebook 06 (dpsco_book.lp_frank_wolfe_lower_bound; results F3, L1; BGN21): families, calibration
pairs, rate and lower-bound checks, the dimension transition, rows and plots.
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")


import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from dpsco_book import lp_frank_wolfe_lower_bound as lp  # noqa: E402
from dpsco_lib.experiments import Verdict  # noqa: E402
from dpsco_lib.problems import fingerprint_lower_bound  # noqa: E402


def test_alpha_family_and_rate_exponent():
    assert lp.alpha_family(2) == [1.0, 0.5, 0.25]
    assert lp.alpha_family(1, tail=(4, 3)) == [1.0, 0.5, 0.125, 0.0625]
    assert lp.alpha_family(1, per_octave=2) == pytest.approx([1.0, 2**-0.5, 0.5])
    with pytest.raises(ValueError):
        lp.alpha_family(2, tail=(1,))
    e = lp.private_rate_exponent([1000, 4000, 16000], 1.0, 1.0)
    assert -1.0 < e < -0.9
    assert lp.private_rate_exponent([10**4, 10**5], 0.75, 1.0) > -0.75
    with pytest.raises(ValueError):
        lp.private_rate_exponent([1000], 1.0, 1.0)
    lo, hi = lp.private_rate_range([2000, 4000, 8000], 1.0, 1.0, 2.0)
    assert lo <= lp.private_rate_exponent([2000, 4000, 8000], 1.0, 1.0) <= hi and hi - lo < 0.05


@pytest.mark.parametrize("variant", ["naive", "tree"])
def test_f3_family_run_and_calibration_pair(variant):
    out = lp.f3_family_run(rng=np.random.default_rng(0), variant=variant, n=4000, d=10, p=1.5, alpha=0.25)
    assert set(out) == {"excess", "trivial", "lower_bound", "certified_eps", "kappa"}
    assert out["certified_eps"] <= 1.0 + 1e-12 and 0 < out["excess"] <= 2 * out["trivial"] + 1e-12
    hyper = {"depth": 3} if variant == "tree" else {}
    pair = lp.calibration_pair(variant, n=4000, d=10, p=1.5, epsilon=1.0, rng=np.random.default_rng(1), **hyper)
    m_paper, m_best = (pair[k].params["noise_multiplier"] for k in ("paper rule", "tightest"))
    assert m_best < m_paper and pair["tightest"].params["accountant"] == "best"
    with pytest.raises(ValueError, match="variant"):
        lp.f3_family_run(rng=np.random.default_rng(0), variant="x", n=100, d=4, p=1.5, alpha=0.5)


def _synthetic(slope, ns=(1000, 2000, 4000, 8000), alphas=(1.0, 0.5, 0.25, 0.125)):
    """Records whose worst case (at alpha = 0.5) decays like n^slope."""
    recs = []
    for n in ns:
        for a in alphas:
            for r in range(5):
                level = n**slope * (1.0 if a == 0.5 else 0.5) * (1 + 0.01 * r)
                recs.append({"variant": "tree", "n": n, "alpha": a, "replicate": r, "excess": level,
                             "trivial": 0.6 * a, "certified_eps": 1.0})
    return recs


def test_check_f3_rates_passes_the_rate_and_fails_another():
    expected = lp.private_rate_exponent([1000, 2000, 4000, 8000], 1.0, 1.0)  # kappa 2 (the default) is used
    v = Verdict("t")
    fit = lp.check_f3_rates(v, _synthetic(expected), variant="tree", epsilon=1.0, rng=np.random.default_rng(0),
                            n_boot=200)
    assert fit.slope == pytest.approx(expected) and all(c.passed for c in v.rows)
    v2 = Verdict("t")
    lp.check_f3_rates(v2, _synthetic(-0.5), variant="tree", epsilon=1.0, rng=np.random.default_rng(0), n_boot=200)
    assert not v2.rows[0].passed and all(c.passed for c in v2.rows[1:])
    xs, reps, worst = lp.worst_case_replicates(_synthetic(-1.0))
    assert xs == [1000.0, 2000.0, 4000.0, 8000.0] and worst == [0.5] * 4 and all(r.size == 5 for r in reps)


def _lb_records(scale):
    recs = []
    for p in (1.5, 2.0):
        for a in lp.alpha_family(6, tail=(12, 14, 16)):
            for r in range(4):
                lb = fingerprint_lower_bound(4000, 100, p, 1.0, 4000**-1.1, alpha=a)
                recs.append({"p": p, "alpha": a, "n": 4000, "d": 100, "epsilon": 1.0, "replicate": r,
                             "lower_bound": lb, "excess": scale * max(0.6 * a, 1e-12) * (p - 0.4)})
    return recs


def test_check_lower_bound_and_rows():
    v = Verdict("t")
    lp.check_lower_bound(v, _lb_records(1.0), rng=np.random.default_rng(0), n_boot=200)
    rows = lp.lower_bound_rows(_lb_records(1.0))
    assert [r["p"] for r in rows] == [1.5, 2.0] and all(r["cells"] >= 1 for r in rows)
    assert all(c.passed for c in v.rows), v.table_text()
    v2 = Verdict("t")  # an excess below the bound where it is nearly tight is caught
    lp.check_lower_bound(v2, _lb_records(0.5), rng=np.random.default_rng(0), n_boot=200)
    assert not v2.rows[1].passed


def test_plots_draw():
    fig, (a1, a2) = plt.subplots(1, 2)
    recs = _synthetic(-1.0)
    fit = lp.check_f3_rates(Verdict("t"), recs, variant="tree", epsilon=1.0, rng=np.random.default_rng(0),
                            n_boot=200)
    lp.plot_worst_case(a1, recs, variant="tree", fit=fit, expected=-1.0, color="C0")
    lp.plot_lower_bound(a2, _lb_records(1.0))
    assert len(a1.lines) >= 3 and len(a2.lines) == 4
    plt.close(fig)


# ---- the transition against the dimension (result L1)
@pytest.mark.parametrize("p", [1.0, 1.5])
def test_dimension_run_outputs_and_noise_free_counterpart(p):
    out = lp.dimension_run(rng=np.random.default_rng(3), n=2000, d=20, p=p, hardness=0.5, depth=3)
    assert set(out) == {"excess", "excess_nonprivate", "trivial", "lower_bound", "certified_eps"}
    assert out["certified_eps"] <= 1.0 + 1e-12 and 0 < out["excess"] <= 2 * out["trivial"] + 1e-12
    assert 0 < out["excess_nonprivate"] <= 2 * out["trivial"] + 1e-12
    if p == 1.0:  # the root batch (2000/2.5 records) finds the planted vertex at gamma = 0.5: exact optimum
        assert math.isnan(out["lower_bound"]) and out["excess_nonprivate"] == lp.EXCESS_FLOOR
        assert out["trivial"] == pytest.approx(0.5, abs=1e-8)
    else:
        assert out["lower_bound"] == pytest.approx(fingerprint_lower_bound(2000, 20, 1.5, 1.0, 2000**-1.1, 0.5))
    with pytest.raises(ValueError, match="hardness"):
        lp.dimension_run(rng=np.random.default_rng(0), n=100, d=4, p=p, hardness=0.0)
    with pytest.raises(ValueError, match="block"):
        lp.dimension_run(rng=np.random.default_rng(0), n=100, d=4, p=p, hardness=0.5, block=-1)
    with pytest.raises(ValueError, match="p"):
        lp.dimension_run(rng=np.random.default_rng(0), n=100, d=4, p=0.5, hardness=0.5)


def test_log_factor_and_dimension_exponent_ranges():
    ds = [50, 800]
    lo, hi = lp.log_factor_slope_range(ds)
    assert hi == pytest.approx(math.log(math.log(200) / math.log(12.5)) / math.log(16))  # ln(|V|/8) = ln(d/4)
    assert lo == pytest.approx(0.5 * math.log(math.log(12800) / math.log(800)) / math.log(16))  # ln(8|V|)^(1/2)
    assert 0.06 < lo < hi < 0.28
    lo4, hi4 = lp.log_factor_slope_range(ds, powers=(1.0, 1.0), scales=(0.25, 4.0))
    assert lo < lo4 < hi4 < hi
    assert lp.dimension_exponent_range(ds, n=5000, p=1.0) == (lo, hi)
    lo2, hi2 = lp.dimension_exponent_range([50, 100, 200, 400, 800], n=5000, p=2.0)
    assert hi2 == pytest.approx(0.5) and 0.49 < lo2 <= hi2  # sqrt(d) on both sides at p = 2
    lo15, hi15 = lp.dimension_exponent_range([50, 100, 200, 400, 800], n=5000, p=1.5)
    assert lo15 == pytest.approx(1 / 3, abs=0.003) and hi15 == pytest.approx(0.5)  # d^(1/q) and kappa sqrt(d)
    with pytest.raises(ValueError, match="ds"):
        lp.log_factor_slope_range([50])
    with pytest.raises(ValueError, match="ln"):
        lp.log_factor_slope_range([4, 8])
    with pytest.raises(ValueError, match="ds"):
        lp.dimension_exponent_range([50, 50], n=5000, p=2.0)


def test_p_trend_range_brackets_the_bounds():
    lo, hi = lp.p_trend_range([1.1, 1.25, 1.5, 1.75, 2.0], n=4000, d=100)
    assert -1.2 < lo < -0.9 and 0.7 < hi < 0.9  # kappa ~ 1/(p - 1) (capped), d^((p-1)/p) at d = 100
    lo2, hi2 = lp.p_trend_range([1.5, 2.0], n=4000, d=100)
    assert lo2 == pytest.approx(-1.0)  # kappa = q - 1 = 2, 1
    assert hi2 == pytest.approx(math.log(100 ** 0.5 / 100 ** (1 / 3)) / math.log(2), rel=0.01)
    with pytest.raises(ValueError, match="ps"):
        lp.p_trend_range([1.5], n=4000, d=100)


def test_dimension_grid_and_selection_scale():
    grid = lp.dimension_grid([50, 200], n=5000, per_octave=1)
    assert {g["p"] for g in grid} == {2.0, 1.5, 1.0} and all(g["depth"] == 5 for g in grid)
    assert len([g for g in grid if g["p"] == 2.0]) == (2 + 1) * 7  # alpha = 1 .. 1/64, one per octave
    assert len([g for g in grid if g["p"] == 1.0]) == (2 + 1) * 17  # gamma = 1 .. 1/16, four per octave
    assert {g["block"] for g in grid if g["d"] == 50} == {0, 1} and {g["block"] for g in grid if g["d"] == 200} == {0}
    assert len({tuple(sorted(g.items())) for g in grid}) == len(grid)  # distinct tasks (distinct seeds)
    scale = lp.poly_sfw_selection_scale(5000, [50, 800])
    assert 1.0 < scale[0] < scale[1]  # the theorem's step cannot find the planted vertex at n = 5000, eps = 1
    assert lp.poly_sfw_selection_scale(10**7, [50])[0] < scale[0] / 5


def _dim_records(*, slope_p2=0.5, slope_p15=0.45, growth_l1=None, scale=1.0, free=0.01, edge=False):
    """Synthetic sweep: per (p, d) a family of 5 members whose middle one is worst (the last one with
    ``edge``); worst level ``c d^slope`` for p > 1 and ``c ln(2d)`` (or ``growth_l1(d)``) at p = 1."""
    recs, n = [], 5000
    fam = [1.0, 0.5, 0.25, 0.125, 0.0625]
    for p in (2.0, 1.5, 1.0):
        for d in (50, 100, 200, 400, 800):
            if p == 1.0:
                level = 0.05 * (growth_l1(d) if growth_l1 else math.log(2 * d))
            else:
                level = 0.0015 * scale * d ** (slope_p2 if p == 2.0 else slope_p15)
            for h in fam:
                worst = h == (fam[-1] if edge else fam[2])
                for r in range(6):
                    ex_ = level * (1.0 if worst else 0.6) * (1 + 0.01 * r)
                    recs.append({"p": p, "d": d, "n": n, "epsilon": 1.0, "hardness": h, "replicate": r,
                                 "excess": ex_, "excess_nonprivate": free * level, "trivial": h,
                                 "certified_eps": 1.0})
    return recs


def test_check_dimension_transition_passes_and_catches_wrong_curves():
    v = Verdict("t")
    fits = lp.check_dimension_transition(v, _dim_records(), rng=np.random.default_rng(0), n_boot=200)
    assert all(c.passed for c in v.rows), v.table_text()
    assert fits[2.0].slope == pytest.approx(0.5, abs=1e-6) and fits[1.0].slope < 0.25
    names = [c.name for c in v.rows]

    def failed(**kw):
        v2 = Verdict("t")
        lp.check_dimension_transition(v2, _dim_records(**kw), rng=np.random.default_rng(0), n_boot=200)
        return {names[i].split(":")[0] if "L1, p" in names[i] else names[i] for i, c in enumerate(v2.rows)
                if not c.passed}

    flat = failed(slope_p2=0.0)  # no growth in d at p = 2: the polynomial regime is missing
    assert "L1, p = 2" in flat and any("transition" in f for f in flat)
    root = failed(growth_l1=math.sqrt)  # sqrt(d) growth at p = 1: no transition
    assert "L1, p = 1" in root and any("transition" in f for f in root)
    assert "L1, p = 1.5" in failed(slope_p15=0.2)  # below the explicit bound's d^(1/q)
    assert any("lower bound" in f for f in failed(scale=0.003))  # an error below the explicit bound
    assert any("inside the family" in f for f in failed(edge=True))
    assert any("regime" in f for f in failed(free=0.6))
    with pytest.raises(ValueError, match="p = 1"):
        lp.check_dimension_transition(Verdict("t"), [r for r in _dim_records() if r["p"] != 1.0],
                                      rng=np.random.default_rng(0), n_boot=200)


def test_dimension_rows_and_plot():
    rows = lp.dimension_rows(_dim_records())
    assert [r["p"] for r in rows[:5]] == [2.0] * 5 and [r["d"] for r in rows[:5]] == [50, 100, 200, 400, 800]
    assert all(r["worst hardness"] == 0.25 for r in rows)
    assert all(r["mean / bound"] > 1 for r in rows if r["p"] > 1) and all(math.isnan(r["lower bound"])
                                                                           for r in rows if r["p"] == 1)
    assert rows[0]["noise-free / private"] == pytest.approx(0.01 / 1.025, rel=0.01)  # worst mean 1.025 x level
    fig, ax = plt.subplots()
    recs = _dim_records()
    fits = lp.check_dimension_transition(Verdict("t"), recs, rng=np.random.default_rng(0), n_boot=200)
    lp.plot_dimension(ax, recs, fits)
    assert len(ax.lines) >= 8
    plt.close(fig)
