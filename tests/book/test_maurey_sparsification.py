"""Notebook 08 helpers (dpsco_book.maurey_sparsification): exact-bias task, second-moment task, fits, tables,
figures and verdict rows (Spec M1-M3)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pytest

from dpsco_book import maurey_sparsification as mc
from dpsco_lib.experiments import Verdict
from dpsco_lib.problems.maurey_functions import second_moment_bound

X0 = np.array([0.4, 0.3, 0.2, 0.1])


def _functions():
    return mc.bias_test_functions(X0, np.random.default_rng(0))


def test_bias_test_functions_draw_order_and_kink():
    fns = _functions()
    r = np.random.default_rng(0)
    C, M = r.uniform(-1.0, 1.0, size=(5, 4)), r.uniform(-1.0, 1.0, size=(4, 4))
    np.testing.assert_array_equal(fns["lse"].C, C)
    np.testing.assert_array_equal(fns["quad"].Q, (M + M.T) / 2)
    assert fns["hinge"].c == pytest.approx(0.245, abs=1e-15)  # <a, x0>: x0 on the kink
    assert fns["lse"].tau == 0.5


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"x0": [0.5, 0.6, 0.0, 0.0]}, "x0"),
    ({"x0": [1.2, -0.2, 0.0, 0.0]}, "x0"),
    ({"hinge_direction": [1.0, 2.0]}, "hinge_direction"),
])
def test_bias_test_functions_bad_input(kwargs, name):
    args = {"x0": X0} | kwargs
    x0 = args.pop("x0")
    with pytest.raises(ValueError, match=name):
        mc.bias_test_functions(x0, np.random.default_rng(0), **args)


def test_exact_bias_task_at_one_vertex_is_exact():
    fns = _functions()
    r = mc.exact_bias_task(rng=np.random.default_rng(1), K=1, functions=fns, x0=X0)
    # K = 1: x~ = e_i with probability x_i, so every expectation is a finite sum over the vertices
    E = np.eye(4)
    lse_mean = sum(X0[i] * fns["lse"].value(E[i]) for i in range(4))
    assert r["lse_value"] == pytest.approx(abs(lse_mean - fns["lse"].value(X0)), rel=1e-12)
    # hinge at its kink: E grad f(e_i) - 0 = sum_i x_i max(0, a_i - c) a, sup norm with max|a| = 1
    assert r["hinge_grad"] == pytest.approx(0.4 * 0.755 + 0.2 * 0.105, rel=1e-12)
    assert r["quad_value"] == pytest.approx(r["quad_value_closed_form"], abs=1e-15)
    assert r["quad_grad"] <= 1e-15
    assert r["bound_value_lse"] == pytest.approx(2 * fns["lse"].L1)
    assert r["bound_grad_hinge"] == pytest.approx(4 * fns["hinge"].L1)  # 4 L1/sqrt(1), L1 = max|a|^2 = 1
    r4 = mc.exact_bias_task(rng=np.random.default_rng(1), K=4, functions=fns, x0=X0)
    assert r4["bound_grad_lse"] == pytest.approx(2 * fns["lse"].L2 / 4)
    assert r4["bound_grad_hinge"] == pytest.approx(2.0)


def test_exact_bias_task_bad_input():
    fns = _functions()
    with pytest.raises(ValueError, match=r"^K must"):
        mc.exact_bias_task(rng=np.random.default_rng(1), K=0, functions=fns, x0=X0)
    with pytest.raises(ValueError, match="functions"):
        mc.exact_bias_task(rng=np.random.default_rng(1), K=2, functions={"lse": fns["lse"]}, x0=X0)
    with pytest.raises(ValueError, match="x0"):
        mc.exact_bias_task(rng=np.random.default_rng(1), K=2, functions=fns, x0=[0.9, 0.9, 0.0, 0.0])


def _bias_records(ks=(1, 2, 4, 8, 16, 32), scale=1.0):
    out = []
    for k in ks:
        out.append({"K": k, "lse_value": 0.1 / k, "lse_grad": 0.05 / k, "hinge_grad": 0.3 / math.sqrt(k),
                    "quad_value": 0.02 / k, "quad_value_closed_form": 0.02 / k, "quad_grad": 0.0,
                    "bound_value_lse": scale * 2.0 / k, "bound_grad_lse": 30.0 / k, "bound_value_quad": 2.0 / k,
                    "bound_grad_hinge": 4.0 / math.sqrt(k)})
    return out


def test_bias_fits_exact_power_laws_and_rng_untouched():
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    fits = mc.bias_fits(_bias_records(), k_min=2, rng=rng, n_boot=100)
    assert list(fits) == list(mc.BIAS_FIT_KEYS)
    assert fits["lse_value"].slope == pytest.approx(-1.0, abs=1e-12)
    assert fits["hinge_grad"].slope == pytest.approx(-0.5, abs=1e-12)
    assert fits["lse_grad"].n_points == 5  # K >= 2 only
    assert rng.bit_generator.state == state
    with pytest.raises(ValueError, match="k_min"):
        mc.bias_fits(_bias_records(), k_min=32, rng=rng, n_boot=100)
    with pytest.raises(ValueError, match="records"):
        mc.bias_fits([], k_min=2, rng=rng, n_boot=100)


def test_bias_table_text():
    lines = mc.bias_table(_bias_records(ks=(1, 4))).split("\n")
    assert len(lines) == 3 and lines[0].split()[:3] == ["K", "lse", "value"]
    assert lines[2] == ("   4   2.500e-02     0.500   1.250e-02    7.500   1.500e-01     2.000   5.000e-03"
                        "   5.000e-03")


def test_m1_m2_rows_pass_and_fail():
    recs = _bias_records()
    fits = mc.bias_fits(recs, k_min=1, rng=np.random.default_rng(0), n_boot=100)
    v = Verdict("test")
    mc.m1_m2_checks(v, fits, recs, 0.1)
    assert len(v.rows) == 8 and all(c.passed for c in v.rows), v.table_text()
    bad = _bias_records(scale=0.01)  # the log-sum-exp value bias exceeds a 100x smaller bound
    v2 = Verdict("test")
    mc.m1_m2_checks(v2, fits, bad, 0.1)
    assert [c.name for c in v2.rows if not c.passed] == ["M1 |E f(x~) - f(x)| <= 2 L1/K at every K"]
    biased = [r | {"quad_grad": 1e-6} for r in recs]
    v3 = Verdict("test")
    mc.m1_m2_checks(v3, fits, biased, 0.1)
    assert [c.name for c in v3.rows if not c.passed] == ["M2 quadratic (L2 = 0): gradient unbiased"]
    with pytest.raises(ValueError, match="tol"):
        mc.m1_m2_checks(Verdict("test"), fits, recs, 0.0)


def test_rademacher_instance_and_second_moment_task():
    Q, x = mc.rademacher_instance(6, np.random.default_rng([5, 6]))
    np.testing.assert_array_equal(Q, Q.T)
    assert set(np.unique(Q)) == {-1.0, 1.0} and x.sum() == pytest.approx(1.0) and np.all(x > 0)
    inst = {8: np.random.default_rng([5, 8])}
    state = inst[8].bit_generator.state
    a = mc.grad_second_moment_task(rng=np.random.default_rng(9), d=8, K=4, instance_rngs=inst, m=50)
    b = mc.grad_second_moment_task(rng=np.random.default_rng(9), d=8, K=4, instance_rngs=inst, m=50)
    assert a == b and inst[8].bit_generator.state == state  # the same instance on every call
    assert 0.0 < a["m2"] <= 4.0  # |Q_ij| = 1: every coordinate of the error lies in [-2, 2]
    assert a["bound"] == second_moment_bound(8, 4)
    assert a["K_m2_over_logd"] == pytest.approx(a["m2"] * 4 / math.log(8), rel=1e-15)
    with pytest.raises(ValueError, match="instance_rngs"):
        mc.grad_second_moment_task(rng=np.random.default_rng(9), d=16, K=4, instance_rngs=inst, m=50)
    with pytest.raises(ValueError, match=r"^m must"):
        mc.grad_second_moment_task(rng=np.random.default_rng(9), d=8, K=4, instance_rngs=inst, m=0)
    with pytest.raises(ValueError, match=r"^d must"):
        mc.rademacher_instance(0, np.random.default_rng(0))


def _m3_records(growth=lambda d: math.log(d)):
    return [{"d": d, "K": k, "replicate": r, "m2": growth(d) / k}
            for d in (8, 64, 512) for k in (4, 16, 64, 256) for r in range(2)]


def test_second_moment_rows_interval_and_table():
    recs = [{"d": 8, "K": 4, "m2": 1.0}, {"d": 8, "K": 4, "m2": 3.0}]
    (row,) = mc.second_moment_rows(recs)
    assert row["m2_mean"] == 2.0 and row["ci_low"] == pytest.approx(0.04) and row["ci_high"] == pytest.approx(3.96)
    assert row["bound"] == second_moment_bound(8, 4)
    line = mc.second_moment_table([row]).split("\n")[1]
    assert line == f"     8    4  2.0000e+00 [4.000e-02, 3.960e+00] {row['bound']:8.4f} {8 / math.log(8):9.3f}"
    with pytest.raises(ValueError, match="records"):
        mc.second_moment_rows(recs[:1])


def test_second_moment_fits_and_m3_rows():
    recs = _m3_records()
    fits = mc.second_moment_fits(recs, rng=np.random.default_rng(0), n_boot=100)
    assert fits.d_grid == [8, 64, 512] and fits.k_top == 256
    assert fits.slopes[64].n_points == 2  # K >= 4 log 64 = 16.6: K = 64, 256
    assert all(f.slope == pytest.approx(-1.0, abs=1e-12) for f in fits.slopes.values())
    np.testing.assert_allclose(fits.km2, fits.logd, rtol=1e-12)  # K E||.||^2 = log d exactly
    assert fits.fit_logd.slope == pytest.approx(1.0, abs=1e-12)
    rows = mc.second_moment_rows(recs)
    v = Verdict("test")
    mc.m3_checks(v, fits, rows, 0.1)
    assert len(v.rows) == 5 and all(c.passed for c in v.rows), v.table_text()
    poly = _m3_records(growth=lambda d: 0.2 * math.sqrt(d))  # a polynomial factor d^(1/2) is no log d
    fp = mc.second_moment_fits(poly, rng=np.random.default_rng(0), n_boot=100)
    v2 = Verdict("test")
    mc.m3_checks(v2, fp, mc.second_moment_rows(poly), 0.1)
    assert "M3 growth in d is logarithmic" in [c.name for c in v2.rows if not c.passed]
    with pytest.raises(ValueError, match="tol"):
        mc.m3_checks(Verdict("test"), fits, rows, -1.0)


def test_figures_have_two_panels():
    recs = _m3_records()
    figs = [mc.plot_exact_bias(_bias_records()),
            mc.plot_second_moment(mc.second_moment_rows(recs),
                                  mc.second_moment_fits(recs, rng=np.random.default_rng(0), n_boot=100))]
    try:
        assert [len(f.axes) for f in figs] == [2, 2]
        assert figs[1].axes[1].get_title() == r"M3: the $\log d$ factor"
    finally:
        for f in figs:
            plt.close(f)
