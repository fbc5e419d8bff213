"""Tests of the notebook-13 experiment module (dpsco_lib.experiments.applications_checks; Spec X1, X2)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsco_lib.algorithms.applications import query_release_params
from dpsco_lib.experiments import applications_checks as ac
from dpsco_lib.experiments import delta_for_n
from dpsco_lib.problems import QUERY_RELEASE_FAMILY


def test_x1_task_outputs_and_certificates() -> None:
    r = ac.x1_task(rng=np.random.default_rng(0), n=2000, epsilon=1.0, instance="point-mass")
    assert r["trivial"] == pytest.approx(1 - 1 / 8)  # a point mass: 3-way marginals of uniform answer 1/8
    assert 0 <= r["err_alg1"] < r["trivial"] and r["same_relation"]
    assert r["cert_alg1"] <= 1 + 1e-9 and r["cert_mwem_best"] <= 1 + 1e-9
    assert r["cert_mwem_basic"] == pytest.approx(1.0)


def test_rate_and_exponent() -> None:
    ns = np.array([1e3, 1e4, 1e5])
    assert ac.rate_exponent(ns, ns**-0.5) == pytest.approx(-0.5)
    e = ac.rate_exponent(ns, ac.x1_rate(ns, 1.0))
    assert -0.5 < e < -0.45  # the sqrt(log(1/delta)) factor with delta = n^-1.1 flattens it slightly
    assert ac.x1_rate(4e4, 1.0) == pytest.approx(ac.x1_rate(1e4, 4.0) * math.sqrt(
        math.sqrt(math.log(4e4) / math.log(1e4))))
    with pytest.raises(ValueError, match="positive"):
        ac.rate_exponent([1.0], [1.0])


def test_worst_instance_values_and_ratio() -> None:
    recs = [{"n": n, "instance": f, "e": v, "t": 1.0} for n, f, v in
            [(1, "a", 1.0), (1, "a", 3.0), (1, "b", 2.5), (2, "a", 0.1), (2, "b", 0.4), (2, "b", 0.2)]]
    xs, vals, lab = ac.worst_instance_values(recs, "n", "e")
    assert list(xs) == [1.0, 2.0] and lab == ["b", "b"] and list(vals[1]) == [0.4, 0.2]
    assert ac.median_ratio_at(recs, "n", 2, "e", "t") == pytest.approx(0.3)
    with pytest.raises(ValueError, match="no record"):
        ac.median_ratio_at(recs, "n", 3, "e", "t")


def test_broken_params_count_the_draws_once() -> None:
    g = ac.x1_base_game()
    n, dl = 500, delta_for_n(500)
    ok = query_release_params(n, N=g.N, m=g.n_queries, epsilon=1.0, delta=dl)
    br = ac.broken_query_release_params(n, N=g.N, m=g.n_queries, epsilon=1.0, delta=dl)
    assert br.n_draws == br.K == 1 and br.eps0 > 10 * ok.eps0 and br.T > ok.T
    assert br.eps_draw == pytest.approx(2 * br.eta / br.B) and br.eps_draw <= br.eps0 * (1 + 1e-12)


def test_audit_row_formula() -> None:
    L = np.array([0.0] * 90 + [5.0] * 10)
    row = ac.audit_row("x", L, epsilon=1.0, delta=1e-3, certified=1.0, alpha=0.01, margin=1.0)
    lo = (1 - math.exp(-1)) * float(__import__("scipy").stats.beta.ppf(0.005, 10, 91))
    assert row["lower bound delta(eps)"] == pytest.approx(lo) and row["violation detected"]
    assert row["MC delta(eps)"] == pytest.approx(0.1 * (1 - math.exp(-4)))
    quiet = ac.audit_row("x", np.zeros(100), epsilon=1.0, delta=1e-3, certified=1.0)
    assert quiet["lower bound delta(eps)"] == 0.0 and not quiet["violation detected"]


def test_x2_reference_design_and_task() -> None:
    ref = ac.x2_reference()
    assert ref["trivial_excess"] == pytest.approx(math.log(2) - ref["opt"])
    assert 0 < ref["pooled_excess"] < ref["trivial_excess"]
    K, T, bound = ac.x2_design(20_000, 1.0)
    r = ac.x2_task(rng=np.random.default_rng(0), n=20_000, epsilon=1.0, K=K, T=T)
    assert 0 <= r["excess_robust"] <= r["bound"] == pytest.approx(bound) and r["cert_robust"] <= 1 + 1e-9


def test_family_is_exported() -> None:
    assert QUERY_RELEASE_FAMILY[0] == "breast-cancer" and len(QUERY_RELEASE_FAMILY) == 4


def test_verdict_rows_and_certificate_ratio() -> None:
    from dpsco_lib.experiments import SlopeFit, Verdict

    rec_n = [{"n": n, "epsilon": 1.0, "instance": f, "err_alg1": 0.5 / math.sqrt(n), "err_mwem_best": 1 / n ** (1 / 3),
              "trivial": 0.4, "same_relation": True, "cert_mwem_basic": 1.0, "cert_alg1": 0.99,
              "cert_mwem_best": 1.0} for n in (1000, 4000) for f in ("a", "b")]
    fit = SlopeFit(-0.5, 0.0, -0.55, -0.45, 0.99, 2, 100, "median")
    v = Verdict("t")
    ac.x1_verdict_checks(v, rec_n, rec_n, {("n", "err_alg1"): fit, ("epsilon", "err_alg1"): fit}, -0.48)
    rec2 = [{"n": 10, "epsilon": 1.0, "excess_robust": 0.01, "bound": 1.0, "cert_robust": 0.5}]
    ac.x2_verdict_checks(v, rec2, {"trivial_excess": 0.1, "pooled_excess": 0.05})
    assert [c.passed for c in v.rows] == [True] * 8
    assert ac.certificate_ratio(rec_n, [], rec2) == pytest.approx(1.0)
    v2 = Verdict("t")
    ac.x2_verdict_checks(v2, [dict(rec2[0], excess_robust=0.07)], {"trivial_excess": 0.1, "pooled_excess": 0.05})
    assert [c.passed for c in v2.rows] == [False, False, True]


def test_x2_design_task_matches_design() -> None:
    r = ac.x2_design_task(rng=np.random.default_rng(0), n=20_000, epsilon=1.0)
    assert (r["K"], r["T"], r["bound"]) == ac.x2_design(20_000, 1.0)


def test_calibration_runs_paper_rule_vs_tightest() -> None:
    a1, mw = ac.x1_calibration(2000, 1.0, np.random.default_rng(0))
    dl = delta_for_n(2000)
    assert a1["tightest"].params["eps0"] > a1["paper rule"].params["eps0"]
    runs = (*a1.values(), *mw.values())
    assert all(r.certified_epsilon(dl) <= 1 + 1e-9 and r.relation == "replace_one" for r in runs)
    assert mw["HLM12 rule (basic, pure DP)"].certified_epsilon(0.0, accountant="basic") == pytest.approx(1.0)
    c2 = ac.x2_calibration(20_000, 1.0, np.random.default_rng(0))
    assert c2["tightest"].params["eps0"] > c2["paper rule"].params["eps0"]
    assert all(r.certified_epsilon(delta_for_n(20_000)) <= 1 + 1e-9 for r in c2.values())
