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
    assert set(out) == {"excess", "trivial", "excess_erm", "lower_bound", "certified_eps", "kappa"}
    assert out["certified_eps"] <= 1.0 + 1e-12 and 0 < out["excess"] <= 2 * out["trivial"] + 1e-12
    assert 0 < out["excess_erm"] < out["trivial"]  # 1000 informative records: the ERM learns
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


def test_f3_rate_claims_are_fixed_before_the_run_with_half_the_gap_to_the_neighbour():
    naive = lp.f3_rate_claim("naive", [64_000, 128_000, 256_000], epsilon=1.0, kappa=2.0)
    tree = lp.f3_rate_claim("tree", [2_000, 4_000, 8_000], epsilon=1.0, kappa=2.0)
    assert naive.neighbour == -0.5 and tree.neighbour == -0.75  # the nearest other regime of each
    for c in (naive, tree):
        assert c.tolerance <= c.gap / 2 and c.tolerance > 0.08
        lo, hi = c.bounds
        assert lo - c.tolerance > -1.05 and hi + c.tolerance < -0.55 and c.statistic == "median"
    assert naive.bounds[0] - naive.tolerance > -0.95 and tree.bounds[1] + tree.tolerance < -0.75  # n^-1, n^-3/4
    with pytest.raises(ValueError, match="variant"):
        lp.f3_rate_claim("x", [1000, 2000], epsilon=1.0, kappa=2.0)


def test_check_f3_rates_passes_the_rate_and_fails_another():
    expected = lp.private_rate_exponent([1000, 2000, 4000, 8000], 1.0, 1.0)  # kappa 2 (the default) is used
    v = Verdict("t")
    fit = lp.check_f3_rates(v, _synthetic(expected), variant="tree", epsilon=1.0, rng=np.random.default_rng(0),
                            n_boot=200, required=0.95, n_resamples=50)
    assert fit.slope == pytest.approx(expected) and all(c.passed for c in v.rows), v.table_text()
    o = v.outcomes[0]
    assert o.accepted and o.power_trivial == 1.0 and o.power_regime == 1.0
    for wrong in (-0.5, -0.75):  # the statistical term and the naive variant's private term
        v2 = Verdict("t")
        lp.check_f3_rates(v2, _synthetic(wrong), variant="tree", epsilon=1.0, rng=np.random.default_rng(0),
                          n_boot=200, required=0.95, n_resamples=50)
        assert not v2.rows[0].passed and all(c.passed for c in v2.rows[1:])
    # the trivial output x = 0 (flat in n) is accepted by no claim: a family scaled with the bound would be
    flat = [{**r, "excess": r["trivial"]} for r in _synthetic(expected)]
    v3 = Verdict("t")
    lp.check_f3_rates(v3, flat, variant="tree", epsilon=1.0, rng=np.random.default_rng(0), n_boot=200,
                      required=0.95, n_resamples=50)
    assert not v3.outcomes[0].accepted
    xs, reps, worst = lp.worst_case_replicates(_synthetic(-1.0))
    assert xs == [1000.0, 2000.0, 4000.0, 8000.0] and worst == [0.5] * 4 and all(r.size == 5 for r in reps)


def _lb_records(scale, erm=1e-6):
    recs = []
    for p in (1.5, 2.0):
        for a in lp.alpha_family(6, tail=(12, 14, 16)):
            for r in range(4):
                lb = fingerprint_lower_bound(4000, 100, p, 1.0, 4000**-1.1, alpha=a)
                recs.append({"p": p, "alpha": a, "n": 4000, "d": 100, "epsilon": 1.0, "replicate": r,
                             "lower_bound": lb, "excess": scale * max(0.6 * a, 1e-12) * (p - 0.4),
                             "excess_erm": erm * (1 + 0.1 * r)})
    return recs


def test_check_lower_bound_and_rows():
    v = Verdict("t")
    lp.check_lower_bound(v, _lb_records(1.0), rng=np.random.default_rng(0), n_boot=200, required=0.95,
                         n_resamples=50)
    rows = lp.lower_bound_rows(_lb_records(1.0))
    assert [r["p"] for r in rows] == [1.5, 2.0] and all(r["cells"] >= 1 for r in rows)
    assert all(c.passed for c in v.rows), v.table_text()
    assert v.outcomes[0].claim_id == "L1 bound" and v.outcomes[0].power_trivial == 1.0
    v2 = Verdict("t")  # an excess below the bound where it is nearly tight is caught
    lp.check_lower_bound(v2, _lb_records(0.5), rng=np.random.default_rng(0), n_boot=200, required=0.95,
                         n_resamples=50)
    assert not v2.rows[2].passed
    v3 = Verdict("t")  # a control that does not fall below the bound: the claim cannot fail, and does not pass
    lp.check_lower_bound(v3, _lb_records(1.0, erm=1.0), rng=np.random.default_rng(0), n_boot=200,
                         required=0.95, n_resamples=50)
    assert v3.outcomes[0].accepted and v3.outcomes[0].power_trivial == 0.0 and not v3.rows[0].passed


def test_lower_bound_claim_reads_the_worst_member_of_every_cell():
    claim = lp.theorem_bound_claim()
    assert claim.constant == lp.THEOREM_CONSTANT and "(p - 1) sqrt(d)" in claim.window
    bound = 0.5 * 10 / 4000  # (p - 1) sqrt(d)/(eps n) at p = 1.5, d = 100, n = 4000

    def recs(level, ctrl):
        return [{"p": 1.5, "d": 100, "n": 4000, "epsilon": 1.0, "alpha": a, "excess": level * a * (1 + 0.01 * r),
                 "excess_erm": ctrl * (1 + 0.01 * r)} for a in (1.0, 0.5) for r in range(3)]

    ok = claim.evaluate(recs(0.1 * bound, 0.01 * bound), rng=np.random.default_rng(0), required=0.95,
                        n_resamples=50)
    assert ok.accepted and ok.passed and ok.false_alarm == 0.0 and ok.power_regime is None
    assert "min ratio 0.101 " in ok.measured  # the worst member (alpha = 1), not the mean over the family
    low = claim.evaluate(recs(0.05 * bound, 0.01 * bound), rng=np.random.default_rng(0), required=0.95,
                         n_resamples=50)
    assert not low.accepted and low.false_alarm == 1.0
    with pytest.raises(ValueError, match="replicates"):
        claim.evaluate(recs(1.0, 1.0)[:1] + recs(1.0, 1.0)[3:], rng=np.random.default_rng(0), required=0.95)
    with pytest.raises(ValueError, match="constant"):
        lp.theorem_bound_claim(0.0)


def test_plots_draw():
    fig, (a1, a2) = plt.subplots(1, 2)
    recs = _synthetic(-1.0)
    fit = lp.check_f3_rates(Verdict("t"), recs, variant="tree", epsilon=1.0, rng=np.random.default_rng(0),
                            n_boot=200, required=0.8, n_resamples=20)
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
    assert len([g for g in grid if g["p"] == 2.0]) == (2 + 1) * 8  # alpha = 1 .. 1/128, one per octave
    assert len([g for g in grid if g["p"] == 1.0]) == (2 + 1) * 17  # gamma = 1 .. 1/8 (4 per octave) .. 1/128
    assert min(g["hardness"] for g in grid) == 2.0**-7  # a fixed lattice over more than two decades
    assert {g["block"] for g in grid if g["d"] == 50} == {0, 1} and {g["block"] for g in grid if g["d"] == 200} == {0}
    assert len({tuple(sorted(g.items())) for g in grid}) == len(grid)  # distinct tasks (distinct seeds)
    scale = lp.poly_sfw_selection_scale(5000, [50, 800])
    assert 1.0 < scale[0] < scale[1]  # the theorem's step cannot find the planted vertex at n = 5000, eps = 1
    assert lp.poly_sfw_selection_scale(10**7, [50])[0] < scale[0] / 5


def _dim_records(*, slope_p2=0.5, slope_p15=0.5, growth_l1=None, scale=1.0, free=0.01, edge=False):
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


def test_dimension_claims_separate_the_theorem_from_the_explicit_bound():
    ds = [50, 100, 200, 400, 800]
    for p in (2.0, 1.5):
        c = lp.dimension_claim(p, ds, n=5000)
        assert c.bounds == pytest.approx((0.5, 0.5)) and c.neighbour == pytest.approx(1 / 3)
        assert c.tolerance == 0.08 <= c.gap / 2  # d^(1/2) and d^(1/3) windows apart
    c1 = lp.dimension_claim(1.0, ds, n=5000)
    assert c1.bounds == lp.log_factor_slope_range(ds) and c1.tolerance <= c1.gap / 2
    assert c1.bounds[1] + c1.tolerance < 1 / 3 and c1.bounds[0] - c1.tolerance > 0  # neither d^(1/3) nor flat
    with pytest.raises(ValueError, match="ds"):
        lp.dimension_claim(1.5, [50, 50], n=5000)


def _check_dim(recs, n_resamples=50):
    v = Verdict("t")
    fits = lp.check_dimension_transition(v, recs, rng=np.random.default_rng(0), n_boot=100, required=0.95,
                                         n_resamples=n_resamples)
    return v, fits


def test_check_dimension_transition_passes_and_catches_wrong_curves():
    v, fits = _check_dim(_dim_records())
    assert all(c.passed for c in v.rows), v.table_text()
    assert [o.claim_id for o in v.outcomes] == ["L1 d-exponent, p = 2", "L1 d-exponent, p = 1.5",
                                                "L1 d-exponent, p = 1"]
    assert all(o.power_trivial == 1.0 and o.power_regime == 1.0 for o in v.outcomes)
    assert fits[2.0].slope == pytest.approx(0.5, abs=1e-6) and fits[1.0].slope < 0.25
    names = [c.name for c in v.rows]

    def failed(**kw):
        v2, _ = _check_dim(_dim_records(**kw), n_resamples=20)
        return {names[i].split(":")[0] if "d-exponent" in names[i] else names[i] for i, c in enumerate(v2.rows)
                if not c.passed}

    flat = failed(slope_p2=0.0)  # no growth in d at p = 2: the polynomial regime is missing
    assert "L1 d-exponent, p = 2" in flat and any("transition" in f for f in flat)
    root = failed(growth_l1=math.sqrt)  # sqrt(d) growth at p = 1: no transition
    assert "L1 d-exponent, p = 1" in root and any("transition" in f for f in root)
    assert "L1 d-exponent, p = 1.5" in failed(slope_p15=1 / 3)  # the explicit bound's d^(1/q): p in the exponent
    assert "L1 d-exponent, p = 1" in failed(growth_l1=lambda d: d ** (1 / 3))
    assert any("lower bound" in f for f in failed(scale=0.003))  # an error below the explicit bound
    assert any("inside the family" in f for f in failed(edge=True))
    assert any("regime" in f for f in failed(free=0.6))
    v15, _ = _check_dim([r for r in _dim_records() if r["p"] == 1.5])  # one p: no transition row
    assert all(c.passed for c in v15.rows) and not any("transition" in c.name for c in v15.rows)
    assert len(v15.outcomes) == 1 and not any("F2" in c.name for c in v15.rows)


def test_dimension_rows_and_plot():
    rows = lp.dimension_rows(_dim_records())
    assert [r["p"] for r in rows[:5]] == [2.0] * 5 and [r["d"] for r in rows[:5]] == [50, 100, 200, 400, 800]
    assert all(r["worst hardness"] == 0.25 for r in rows)
    assert all(r["mean / bound"] > 1 for r in rows if r["p"] > 1) and all(math.isnan(r["lower bound"])
                                                                           for r in rows if r["p"] == 1)
    assert rows[0]["noise-free / private"] == pytest.approx(0.01 / 1.025, rel=0.01)  # worst mean 1.025 x level
    fig, ax = plt.subplots()
    recs = _dim_records()
    _, fits = _check_dim(recs)
    lp.plot_dimension(ax, recs, fits)
    assert len(ax.lines) >= 8
    plt.close(fig)
