"""Notebook 03 helpers (dpsco_lib.experiments.mirror_checks): sweep task, cell table, d-spread and verdict rows."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsco_lib.experiments import Verdict
from dpsco_lib.experiments import mirror_checks as mc


def _rec(regime, d, n, excess, bound):
    return {"regime": regime, "d": d, "n": n, "excess": excess, "bound": bound, "scaled": excess * math.sqrt(n) / 3}


def test_smd_excess_task_below_bound():
    r = mc.smd_excess(rng=np.random.default_rng(0), regime="p=2", d=20, n=256)
    assert 0.0 <= r["excess"] <= r["bound"] and r["step_size"] > 0
    assert r["scaled"] == pytest.approx(r["excess"] * 16 / 3)


def test_cell_table_spread_and_two_term_fit():
    recs = [_rec("p=inf", d, 100, 0.1 * math.sqrt(d) * k, 0.2 * math.sqrt(d)) for d in (4, 16) for k in (0.9, 1.1)]
    rows = mc.cell_table(recs)
    assert [r["d"] for r in rows] == [4, 16] and rows[0]["mean"] == pytest.approx(0.2)
    assert rows[0]["ratio"] == pytest.approx(0.5) and rows[1]["ratio"] == pytest.approx(0.5)
    assert mc.d_spread(rows, "p=inf") == pytest.approx((0.5, 1.0))
    flat = mc.cell_table([_rec("p=inf", d, 100, 0.1, 0.2 * math.sqrt(d)) for d in (4, 64)])
    assert mc.d_spread(flat, "p=inf")[1] == pytest.approx(4.0)  # a d-free error fails the spread check
    ds = (10, 100, 1000, 10000)  # exact A sqrt(ln d) + B / sqrt(ln d) is recovered
    p1 = [{"regime": "p=1", "d": d, "s_mean": 0.4 * math.sqrt(math.log(d)) + 0.2 / math.sqrt(math.log(d))}
          for d in ds]
    a, b, e = mc.lnd_two_term(p1)
    assert (a, b) == pytest.approx((0.4, 0.2)) and 0 < e < 0.5


def test_verdict_rows_pass_and_fail():
    recs = []
    for regime, dexp in (("p=1", 0.1), ("p=1.5", 0.0), ("p=2", 0.0), ("p=inf", 0.5)):
        for d in (4, 16, 64):
            for k in (0.99, 1.0, 1.01):
                e = d ** dexp * k
                recs.append(_rec(regime, d, 100, e, 2 * d ** dexp))
    fits = mc.fit_by_regime(recs, "d", seed=0, n_boot=200)
    assert fits["p=inf"].slope == pytest.approx(0.5, abs=0.02)
    v = Verdict("test")
    mc.s1_d_checks(v, fits, mc.cell_table(recs), 0.1)
    assert all(c.passed for c in v.rows) and len(v.rows) == 7, v.table_text()
    bad = [r | {"bound": 2 * r["d"]} if r["regime"] == "p=inf" else r for r in recs]  # bound too steep
    v2 = Verdict("test")
    mc.s1_d_checks(v2, fits, mc.cell_table(bad), 0.1)
    assert [c.name for c in v2.rows if not c.passed] == ["S1 p=inf: d-dependence of the bound attained"]
    v3 = Verdict("test")
    mc.s1_n_checks(v3, {"p=2": fits["p=inf"]}, mc.cell_table(recs), 0.1)
    assert [c.passed for c in v3.rows] == [False, True]  # slope +0.5 is no n^-1/2
