"""Notebook 03 helpers (dpsco_book.mirror_descent_rates): the lower-bound families of S1, the sweep task, the
worst case over the members, its fits and the verdict rows (which must fail on realistic wrong curves)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsco_book import mirror_descent_rates as mc
from dpsco_lib.experiments import Verdict
from dpsco_lib.problems import HardLinear, PlantedCubeLinear, PlantedLpLinear


def _phi(c):
    """Scaled excess of a member c = gamma / s: ~c (learns nothing) for small c, ~1/c for large c, peak 1/2 at 1."""
    return c / (1.0 + c * c)


def _synthetic(regime, cells, *, n_expo=-0.5, d_shape=None, reps=10, seed=0, noise=0.1, bound_mult=0.62):
    """Records on the (d, n) ``cells`` of the lattice: member gamma has excess s phi(gamma / s) with the scale
    s = n^n_expo d_shape(d), lognormal replicate noise, the start point's excess gamma and the bound
    ``bound_mult s``."""
    rng = np.random.default_rng(seed)
    d_shape = d_shape or (lambda d: 1.0)
    recs = []
    for d, n in dict.fromkeys(cells):
        s = 2.0 * n**n_expo * d_shape(d)
        for g in mc.GAMMAS:
            for r in range(reps):
                recs.append({"regime": regime, "d": d, "n": n, "gamma": g, "replicate": r, "trivial": g,
                             "excess": s * _phi(g / s) * math.exp(noise * rng.standard_normal()),
                             "bound": bound_mult * s})
    return recs


def test_the_lattice_is_fixed_and_spans_two_decades():
    assert mc.GAMMAS[0] == 1.0 and mc.GAMMAS[-1] <= 0.01 and len(mc.GAMMAS) == 8
    assert mc.minimax_scale("p=1", 100, 10) == pytest.approx(math.sqrt(2 * math.log(20) / 100))
    assert mc.minimax_scale("p=2", 400, 10) == pytest.approx(0.05)
    assert mc.minimax_scale("p=inf", 400, 16) == pytest.approx(0.2)
    assert isinstance(mc.family_member("p=1", 5, 0.2), HardLinear)
    assert isinstance(mc.family_member("p=1.5", 5, 0.2), PlantedLpLinear)
    assert isinstance(mc.family_member("p=inf", 5, 0.2), PlantedCubeLinear)
    assert mc.family_member("p=2", 5, 0.2).p == 2.0
    grid = mc.sweep_grid({"p=inf": (4, [1024, 4096])}, {"p=inf": (4096, [4, 16])}, ["p=inf"])
    assert sorted({(p["d"], p["n"]) for p in grid}) == [(4, 1024), (4, 4096), (16, 4096)]
    # the same members at every grid point, whatever n and d
    assert all(sorted(p["gamma"] for p in grid if (p["d"], p["n"]) == c) == sorted(mc.GAMMAS)
               for c in [(4, 1024), (16, 4096)])
    with pytest.raises(ValueError, match="regime"):
        mc.minimax_scale("p=3", 100, 10)


def test_smd_lattice_task_returns_exact_excess_and_the_start_points_excess():
    for regime, d in (("p=1", 6), ("p=1.5", 6), ("p=2", 6), ("p=inf", 3)):
        out = mc.smd_lattice_task(rng=np.random.default_rng(0), regime=regime, d=d, n=300, gamma=0.25)
        assert "gamma" not in out and 0.0 < out["excess"] <= 2 * out["trivial"] and out["bound"] > 0
    out = mc.smd_lattice_task(rng=np.random.default_rng(0), regime="p=1", d=6, n=256, gamma=0.5)
    assert out["trivial"] == pytest.approx(0.5)  # x = 0: excess gamma (1 - 0)
    out = mc.smd_lattice_task(rng=np.random.default_rng(0), regime="p=2", d=6, n=256, gamma=0.5)
    assert out["bound"] == pytest.approx(1 / 16)  # G sqrt(2B/n) with B = 1/2, G = 1
    with pytest.raises(ValueError, match="gamma"):
        mc.smd_lattice_task(rng=np.random.default_rng(0), regime="p=inf", d=8, n=100, gamma=2.0)


def test_worst_fit_and_rows_read_the_worst_member_of_the_lattice():
    recs = _synthetic("p=2", [(100, n) for n in (256, 1024, 4096)])
    fit = mc.worst_fit(recs, regime="p=2", vary="n", at=100, seed=0, n_boot=200)
    assert fit.slope == pytest.approx(-0.5, abs=0.06) and fit.ci_low < -0.5 < fit.ci_high
    rows = mc.worst_rows(recs, regime="p=2", vary="n", at=100)
    assert [r["n"] for r in rows] == [256, 1024, 4096] and [r["gamma"] for r in rows] == [0.125, 0.0625, 0.03125]
    assert all(r["interior"] and r["members"] == len(mc.GAMMAS) for r in rows)
    with pytest.raises(ValueError, match="axis"):
        mc.worst_fit(recs, regime="p=2", vary="n", at=100, seed=0, n_boot=200, axis="lnd")
    with pytest.raises(ValueError, match="fewer than two"):
        mc.worst_fit(recs, regime="p=2", vary="n", at=7, seed=0, n_boot=200)


def test_bound_margin_flags_a_cell_whose_mean_is_well_above_the_bound():
    recs = _synthetic("p=inf", [(4, 1024), (4, 4096)])
    ratio, z = mc.bound_margin(recs)
    assert ratio < 1.0 and z < 0
    bad = [r | {"bound": r["bound"] / 3} if r["n"] == 4096 else r for r in recs]  # bound a third too small
    ratio_bad, z_bad = mc.bound_margin(bad)
    assert ratio_bad > 1.5 and z_bad > 3.0


SWEEP_N = {"p=1": (100, [256, 1024, 4096]), "p=1.5": (100, [256, 1024, 4096]), "p=2": (100, [256, 1024, 4096]),
           "p=inf": (4, [1024, 4096, 16384])}
SWEEP_D = {"p=1": (512, [8, 64, 512, 4096]), "p=1.5": (512, [8, 64, 512, 4096]),
           "p=2": (512, [8, 64, 512, 4096]), "p=inf": (16384, [16, 64, 256, 1024])}


def _all_records(*, n_expo=-0.5, inf_d_shape=math.sqrt, flat_d_shape=lambda d: 1.0, p1_shape=None):
    recs = []
    for i, regime in enumerate(mc.REGIMES):
        (d0, ns), (n0, ds) = SWEEP_N[regime], SWEEP_D[regime]
        shape = {"p=1": p1_shape or (lambda d: math.sqrt(math.log(d))), "p=inf": inf_d_shape}.get(regime,
                                                                                                 flat_d_shape)
        # the d sweeps are scaled so that the worst member stays inside the lattice
        recs += _synthetic(regime, [(d0, n) for n in ns], n_expo=n_expo, seed=i)
        recs += _synthetic(regime, [(d, n0) for d in ds], n_expo=n_expo, seed=10 + i,
                           d_shape=lambda d, f=shape, d1=ds[0]: f(d) / f(d1))
    return recs


def _claims(recs, sweep_n=SWEEP_N, sweep_d=SWEEP_D):
    v = Verdict("test")
    outs = mc.s1_claims(v, recs, sweep_n, sweep_d, rng=np.random.default_rng(0), required=0.8, n_boot=200,
                        n_resamples=40)
    return {o.claim_id: o for o in outs}, v


def test_claims_pass_on_the_predicted_curves_and_reject_both_controls():
    outs, v = _claims(_all_records())
    assert len(outs) == 4 + 3 + 4 and all(o.passed for o in outs.values()), [o.row() for o in outs.values()]
    assert all(r.passed for r in v.rows)
    n1 = outs["S1 p=1 exponent in n"]
    assert n1.power_trivial == 1.0 and n1.power_regime >= 0.8
    assert outs["S1 p=2 exponent in ln d"].power_trivial is None  # the start point is dimension-free too


def test_the_learns_nothing_output_fails_every_n_claim():
    recs = _all_records()
    for regime, (d0, ns) in SWEEP_N.items():
        x, _, fam, triv = mc.claim_records(recs, regime=regime, vary="n", at=d0, values=ns)
        out = mc.n_claim(regime).evaluate(x, triv, family=fam, trivial=triv, rng=np.random.default_rng(1),
                                          required=0.8, n_boot=200, n_resamples=40)
        assert not out.accepted and not out.passed


def test_claims_fail_on_an_n_to_the_minus_one_third_decay():
    outs, _ = _claims(_all_records(n_expo=-1 / 3), sweep_d={})
    assert not any(outs[f"S1 {r} exponent in n"].accepted for r in mc.REGIMES)


def test_claims_fail_without_d_dependence_at_p_inf_and_with_log_growth_at_p_2():
    outs, _ = _claims(_all_records(inf_d_shape=lambda d: 1.0), sweep_n={})
    assert not outs["S1 p=inf exponent in d"].accepted
    outs, _ = _claims(_all_records(inf_d_shape=lambda d: math.sqrt(math.log(d))), sweep_n={})
    assert not outs["S1 p=inf exponent in d"].accepted  # logarithmic growth is the neighbouring regime
    outs, _ = _claims(_all_records(flat_d_shape=lambda d: math.sqrt(math.log(d))), sweep_n={})
    assert not outs["S1 p=2 exponent in ln d"].accepted and not outs["S1 p=1.5 exponent in ln d"].accepted
    outs, _ = _claims(_all_records(p1_shape=lambda d: 1.0), sweep_n={})
    assert not outs["S1 p=1 exponent in ln d"].accepted


def test_bound_claim_fails_when_the_bound_is_too_small():
    recs = _synthetic("p=2", [(100, n) for n in (256, 1024, 4096)])
    x, y, fam, triv = mc.claim_records(recs, regime="p=2", vary="n", at=100)
    ok = mc.bound_claim(recs, "p=2", 100).evaluate(x, y, family=fam, trivial=triv, rng=np.random.default_rng(2),
                                                   required=0.8, n_resamples=40)
    assert ok.passed and ok.power_trivial == 1.0
    bad = [r | {"bound": r["bound"] / 3} for r in recs]
    out = mc.bound_claim(bad, "p=2", 100).evaluate(x, y, family=fam, trivial=triv, rng=np.random.default_rng(2),
                                                   required=0.8, n_resamples=40)
    assert not out.accepted
    with pytest.raises(ValueError, match="no cell"):
        mc.bound_claim(recs, "p=1", 100)


def test_windows_are_at_most_half_the_gap_to_the_neighbouring_regime():
    assert mc.TOL_N <= (mc.N_NEIGHBOUR + 0.5) / 2
    c = mc.d_claim("p=inf", [16, 64, 256, 1024])
    assert c.neighbour == pytest.approx(mc.sqrt_log_exponent([16, 64, 256, 1024])) and 0.05 < c.neighbour < 0.15
    assert c.tolerance <= c.gap / 2 + 1e-12
    short = mc.d_claim("p=inf", [2, 4, 16])  # sqrt(ln d) looks like d^0.33 there: a narrow window
    assert short.tolerance < 0.1
    lo, hi = mc.d_claim("p=1", [8, 64, 512, 4096]).bounds
    assert lo == 0.5 and hi < 0.6 and mc.d_claim("p=1", [8, 64, 512, 4096]).tolerance <= (1.0 - hi) / 2


def test_ordering_check_reads_separated_intervals():
    recs = _all_records()
    v = Verdict("test")
    assert mc.ordering_check(v, mc.s1_fits(recs, SWEEP_D, seed=0, n_boot=200))
    flat = _all_records(inf_d_shape=lambda d: 1.0)
    assert not mc.ordering_check(Verdict("test"), mc.s1_fits(flat, SWEEP_D, seed=0, n_boot=200))


def test_exact_optima_rows_match_cvxpy():
    rows = mc.exact_optima_rows(5)
    assert [r["regime"] for r in rows] == list(mc.REGIMES)
    assert max(r["abs_diff"] for r in rows) <= 1e-7 and max(r["max_abs_dx"] for r in rows) <= 1e-5


def test_expected_max_gaussian_matches_closed_forms_and_monte_carlo():
    assert mc.expected_max_gaussian(1) == pytest.approx(0.0, abs=1e-9)
    assert mc.expected_max_gaussian(2) == pytest.approx(1.0 / math.sqrt(math.pi), rel=1e-9)
    assert mc.expected_max_gaussian(3) == pytest.approx(1.5 / math.sqrt(math.pi), rel=1e-9)
    draws = np.random.default_rng(0).standard_normal((20_000, 127)).max(axis=1)
    assert mc.expected_max_gaussian(127) == pytest.approx(draws.mean(), abs=4 * draws.std() / math.sqrt(20_000))
    with pytest.raises(ValueError, match="k"):
        mc.expected_max_gaussian(0)


def test_lnd_exponent_range_lies_above_one_half_and_shrinks_towards_it_as_d_grows():
    lo, hi = mc.lnd_exponent_range([8, 64, 512, 4096])
    assert lo == 0.5 and 0.55 < hi < 0.6  # sqrt(2 ln 2d) minus its ln ln d / sqrt(ln d) correction
    _, far = mc.lnd_exponent_range([10**6, 10**8, 10**10])
    assert 0.5 < far < hi
    with pytest.raises(ValueError, match="ds"):
        mc.lnd_exponent_range([8, 8])
