"""Tests of the X1/X2 runners built on Algorithm 1 (dpsco_lib.algorithms.applications; Spec X1, X2)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsco_lib.algorithms.applications import (
    L1LiftedSaddle,
    exact_pooled_erm,
    lift_max_of_losses,
    query_release_params,
    run_alg1_query_release,
    run_group_blind_erm,
    run_group_robust_alg1,
    run_nonprivate_query_release,
)
from dpsco_lib.algorithms.private_smd_saddle import alg1_per_draw_budget, run_smd_saddle
from dpsco_lib.privacy.accounting import advanced_composition_epsilon, certify_events
from dpsco_lib.privacy.accounting.events import ExponentialEvent, SelfComposedEvent
from dpsco_lib.problems.applications import LinearQueryGame, MaxOfLosses, linear_query_game_from_sklearn
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.games import random_bilinear_game

DELTA = 1e-6


@pytest.fixture(scope="module")
def game() -> LinearQueryGame:
    return linear_query_game_from_sklearn("breast_cancer", n_attributes=4, way=2)


def _big_game(game: LinearQueryGame, n: int, seed: int = 0) -> LinearQueryGame:
    rec = np.random.default_rng(seed).choice(game.N, size=n, p=game.histogram)
    return LinearQueryGame(game.Q, rec)


@pytest.fixture(scope="module")
def mol() -> MaxOfLosses:
    r = np.random.default_rng(5)
    n, d = 120, 3
    A = np.clip(r.normal(size=(n, d)) / 2, -1, 1)
    g = np.repeat(np.arange(3), n // 3)
    w = np.array([1.5, -1.0, 0.5])
    b = np.where(r.random(n) < 1 / (1 + np.exp(-(A @ w + (g - 1)))), 1.0, -1.0)
    return MaxOfLosses(A, b, g, radius=2.0)


# ---------------------------------------------------------------------------------------------- X1
def test_query_release_params_privacy_and_balance() -> None:
    n, N, m, eps = 20_000, 64, 60, 1.0
    p = query_release_params(n, N=N, m=m, epsilon=eps, delta=DELTA)  # default: the tightest valid accountant
    assert p.B == n // p.T and p.n_draws == p.K * p.T and p.accountant == "best"
    assert p.eps0 == alg1_per_draw_budget(eps, delta=DELTA, n_draws=p.K * p.T, accountant="best")
    assert p.eta <= p.eta_cap * (1 + 1e-12) and p.eta_cap == pytest.approx(p.eps0 * p.B / 2)
    assert p.eps_draw == pytest.approx(2 * p.eta / p.B) and p.eps_draw <= p.eps0
    draws = SelfComposedEvent(ExponentialEvent(p.eps_draw), p.n_draws)
    assert certify_events((draws,), DELTA, "best") <= eps * (1 + 1e-12)
    # balance: the cap still dominates the unconstrained step at T, not at T + 1
    l = math.log(N) + math.log(2 * m)
    # (the search for T prices eps0 with RDP, a cheap valid accountant; the run's eps0 is the tightest one's)
    nxt = alg1_per_draw_budget(eps, delta=DELTA, n_draws=p.T + 1, accountant="rdp") * (n // (p.T + 1)) / 2
    assert p.eta_cap >= math.sqrt(l / p.T) and nxt < math.sqrt(l / (p.T + 1))
    with pytest.raises(ValueError, match="privacy cap"):
        query_release_params(n, N=N, m=m, epsilon=eps, delta=DELTA, T=p.T, step_size=2 * p.eta_cap)
    # DRV10 (the calibration of earlier versions) certifies its own, smaller per-draw budget
    adv = query_release_params(n, N=N, m=m, epsilon=eps, delta=DELTA, T=p.T, accountant="advanced")
    assert adv.accountant == "advanced" and adv.eps0 < p.eps0 and adv.eta_cap < p.eta_cap
    assert advanced_composition_epsilon(adv.eps_draw, k=adv.n_draws, delta_prime=DELTA) <= eps * (1 + 1e-12)


@pytest.mark.parametrize("variant", ["structured", "generic"])
def test_query_release_certificate_and_output(game: LinearQueryGame, variant: str) -> None:
    g = _big_game(game, 3000)
    res = run_alg1_query_release(g, epsilon=1.0, delta=DELTA, rng=np.random.default_rng(0), variant=variant)
    assert "certified_epsilon" not in res.info and res.info["accountant"] == "best"
    assert res.certified_epsilon(DELTA) <= 1.0 * (1 + 1e-12)
    adv = run_alg1_query_release(g, epsilon=1.0, delta=DELTA, rng=np.random.default_rng(0), variant=variant,
                                 accountant="advanced")
    assert adv.certified_epsilon(DELTA, accountant="advanced") <= 1.0 * (1 + 1e-12)
    assert np.all(res.x >= 0) and res.x.sum() == pytest.approx(1.0)
    assert res.info["max_query_error"] == pytest.approx(g.max_query_error(res.x))
    # max query error = max_y F(x, y) (the game value at x)
    assert res.info["max_query_error"] == pytest.approx(g.best_response_y(res.x)[1], abs=1e-12)


def test_structured_ledger_counts_only_y_draws(game: LinearQueryGame) -> None:
    g = _big_game(game, 3000)
    res = run_alg1_query_release(g, epsilon=2.0, delta=DELTA, rng=np.random.default_rng(0), K=3)
    ev = res.ledger.events
    assert len(ev) == 1 and ev[0].kind == "exponential"
    assert ev[0].count == 3 * res.params["T"] and ev[0].epsilon == pytest.approx(2 * res.params["eta"] /
                                                                                  res.params["B"])


def test_query_release_accuracy_improves(game: LinearQueryGame) -> None:
    g = _big_game(game, 5000, seed=1)
    errs = {eps: np.median([run_alg1_query_release(g, epsilon=eps, delta=DELTA, rng=np.random.default_rng(s))
                            .info["max_query_error"] for s in range(3)]) for eps in (0.25, 4.0, 1e3)}
    assert errs[1e3] < errs[4.0] < errs[0.25]
    assert errs[1e3] < 0.03  # essentially the non-private SMD error
    ref = run_nonprivate_query_release(g, rng=np.random.default_rng(0))
    assert ref.ledger is None and ref.info["max_query_error"] < 0.03


def test_nonprivate_matches_generic_smd(game: LinearQueryGame) -> None:
    """The structured non-private loop is the same iteration as run_smd_saddle on the one-hot records."""
    g = _big_game(game, 400)
    a = run_nonprivate_query_release(g, rng=np.random.default_rng(4), T=100)
    rec = g.records[np.random.default_rng(4).permutation(400)]
    b = run_smd_saddle(g, Dataset(np.eye(g.N)[rec]), rng=np.random.default_rng(0), T=100)
    np.testing.assert_allclose(a.x, b.x, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(a.y, b.y, rtol=1e-10, atol=1e-13)


def test_query_release_determinism_and_synthetic(game: LinearQueryGame) -> None:
    g = _big_game(game, 2000)
    a = run_alg1_query_release(g, epsilon=1.0, delta=DELTA, rng=np.random.default_rng(3), synthetic_size=500)
    b = run_alg1_query_release(g, epsilon=1.0, delta=DELTA, rng=np.random.default_rng(3), synthetic_size=500)
    assert np.array_equal(a.x, b.x)
    assert np.array_equal(np.round(a.x * 500), a.x * 500) and a.trace["synthetic_records"].shape == (500,)


def test_query_release_bad_inputs(game: LinearQueryGame) -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="problem"):
        run_alg1_query_release(random_bilinear_game(3, 3, rng), epsilon=1.0, delta=DELTA, rng=rng)
    with pytest.raises(ValueError, match="accountant"):
        run_alg1_query_release(game, epsilon=1.0, delta=DELTA, rng=rng, accountant="cor36")
    with pytest.raises(ValueError, match="epsilon"):
        run_alg1_query_release(game, epsilon=math.nan, delta=DELTA, rng=rng)
    with pytest.raises(ValueError, match="variant"):
        run_alg1_query_release(game, epsilon=1.0, delta=DELTA, rng=rng, variant="fast")
    with pytest.raises(ValueError, match="delta"):
        run_alg1_query_release(game, epsilon=1.0, delta=0.0, rng=rng)
    with pytest.raises(ValueError, match="epsilon"):
        run_alg1_query_release(game, epsilon=-1.0, delta=DELTA, rng=rng)
    with pytest.raises(ValueError, match="synthetic_size"):
        run_alg1_query_release(game, epsilon=1.0, delta=DELTA, rng=rng, synthetic_size=0)


# ---------------------------------------------------------------------------------------------- X2
def test_lift_gradients_values_constants(mol: MaxOfLosses) -> None:
    L = lift_max_of_losses(mol)
    assert L.dx == 2 * mol.dx and L.dy == mol.dy and L.data_dim == mol.dx
    r = np.random.default_rng(0)
    data = mol.population
    W = r.dirichlet(np.ones(L.dx), size=20)
    Y = r.dirichlet(np.ones(L.dy), size=20)
    gx, gy = L.grad_x(W, Y, data), L.grad_y(W, Y, data)
    assert np.max(np.abs(gx)) <= L.L0 and np.max(np.abs(gy)) <= L.L0
    # chain rule against central finite differences of the lifted loss
    w, y, h = W[0], Y[0], 1e-6
    e = np.zeros(L.dx)
    e[1] = h
    fd = (L.loss(w + e, y, data) - L.loss(w - e, y, data)) / (2 * h)
    np.testing.assert_allclose(L.grad_x(w, y, data)[:, 1], fd, rtol=1e-5, atol=1e-8)
    # values and the saddle point are those of the base problem
    x = L.unlift(w)
    assert L.population_value(w, y) == pytest.approx(mol.population_value(x, y), rel=1e-12)
    ws, ys, v = L.saddle_point()
    assert v == pytest.approx(mol.saddle_point()[2]) and ws.sum() == pytest.approx(1.0)
    assert L.duality_gap(ws, ys) == pytest.approx(0.0, abs=1e-5)
    # the tight lifted constants are no larger than the safe generic scaling
    G = L1LiftedSaddle(mol)
    assert L.L0 <= G.L0 and L.L1 <= G.L1 and L.L2 <= G.L2


def test_lift_bad_base() -> None:
    with pytest.raises(ValueError, match="l1 ball"):
        L1LiftedSaddle(random_bilinear_game(3, 3, np.random.default_rng(0)))


def test_exact_pooled_vs_robust(mol: MaxOfLosses) -> None:
    xp, glp = exact_pooled_erm(mol)
    xs, _, v = mol.saddle_point()
    gls = mol.group_losses(xs)
    assert gls.max() == pytest.approx(v, abs=1e-6)
    assert gls.max() <= glp.max() + 1e-7  # the minimax point has the smaller worst-group loss
    assert mol.pi @ glp <= mol.pi @ gls + 1e-7  # and the pooled minimizer the smaller pooled loss


def test_group_robust_and_blind_runners(mol: MaxOfLosses) -> None:
    rng = np.random.default_rng(0)
    data = mol.sample(4000, rng)
    for eps in (1.0, 8.0):
        r = run_group_robust_alg1(mol, data, epsilon=eps, delta=DELTA, rng=rng)
        assert r.certified_epsilon(DELTA) <= eps and "certified_epsilon" not in r.info
        assert np.abs(r.x).sum() <= mol.radius * (1 + 1e-9)
        assert r.info["worst_group_loss"] == pytest.approx(mol.group_losses(r.x).max())
        assert r.info["worst_group_loss"] >= mol.saddle_point()[2] - 1e-9
        b = run_group_blind_erm(mol, data, epsilon=eps, delta=DELTA, rng=rng)
        assert b.certified_epsilon(DELTA) <= eps and "certified_epsilon" not in b.info
        assert b.info["worst_group_loss"] >= mol.saddle_point()[2] - 1e-9
    a1 = run_group_robust_alg1(mol, data, epsilon=2.0, delta=DELTA, rng=np.random.default_rng(9))
    a2 = run_group_robust_alg1(mol, data, epsilon=2.0, delta=DELTA, rng=np.random.default_rng(9))
    assert np.array_equal(a1.x, a2.x)


def test_x2_bad_inputs(mol: MaxOfLosses, game: LinearQueryGame) -> None:
    rng = np.random.default_rng(0)
    data = mol.sample(100, rng)
    with pytest.raises(ValueError, match="MaxOfLosses"):
        run_group_robust_alg1(game, data, epsilon=1.0, delta=DELTA, rng=rng)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Dataset"):
        run_group_blind_erm(mol, data.X, epsilon=1.0, delta=DELTA, rng=rng)  # type: ignore[arg-type]
    bad = Dataset(data.X * 10, data.y, {"group": data.extras["group"]})
    with pytest.raises(ValueError, match="bounds"):
        run_group_robust_alg1(mol, bad, epsilon=1.0, delta=DELTA, rng=rng)
    with pytest.raises(ValueError, match="epsilon"):
        run_group_robust_alg1(mol, data, epsilon=0.0, delta=DELTA, rng=rng)


# ---------------------------------------------------------------------------------------------- family, core, audits
def test_query_release_instance_family(game: LinearQueryGame) -> None:
    from dpsco_lib.problems.applications import QUERY_RELEASE_FAMILY, query_release_instance

    rng = np.random.default_rng(0)
    for lab, support in zip(QUERY_RELEASE_FAMILY, (None, 1, 2, 8), strict=True):
        g = query_release_instance(game, 64, lab, rng)
        assert g.records.size == 64 and np.array_equal(g.Q, game.Q)
        if support is not None:
            counts = np.bincount(g.records, minlength=g.N)[g.histogram > 0]
            assert np.unique(g.records).size == support and np.ptp(counts) <= 1
    with pytest.raises(ValueError, match="instance"):
        query_release_instance(game, 10, "dense", rng)
    with pytest.raises(TypeError, match="rng"):
        query_release_instance(game, 10, "point-mass", 0)  # type: ignore[arg-type]


def test_group_robust_breast_cancer() -> None:
    from dpsco_lib.problems.applications import group_robust_breast_cancer

    P = group_robust_breast_cancer()
    assert P.dx == 5 and P.m == 3 and P.B_a <= 1.0 and P.radius == 2.0
    assert np.allclose(P.pi, 1 / 3, atol=0.01)


def test_structured_core_matches_runner_and_loss_replay(game: LinearQueryGame) -> None:
    from dpsco_lib.algorithms.applications import query_release_privacy_loss, structured_query_release

    g = _big_game(game, 600)
    prm = query_release_params(600, N=g.N, m=g.n_queries, epsilon=1.0, delta=DELTA)
    x, draws = structured_query_release(g, g.records, prm, np.random.default_rng(1))
    assert draws.shape == (prm.T - 1, prm.K) and x.sum() == pytest.approx(1.0)
    assert query_release_privacy_loss(g, g.records, g.records, prm, draws) == 0.0
    nb = g.records.copy()
    nb[0] = (nb[0] + 1) % g.N
    # E_P[exp(-L)] = 1 for the exact privacy loss (importance-sampling identity), the loss is small at eps = 1
    L = np.array([query_release_privacy_loss(g, g.records, nb, prm,
                                             structured_query_release(g, g.records, prm, np.random.default_rng(s))[1])
                  for s in range(200)])
    assert np.mean(np.exp(-L)) == pytest.approx(1.0, abs=0.02) and np.max(np.abs(L)) < 1.0
    with pytest.raises(ValueError, match="draws"):
        query_release_privacy_loss(g, g.records, nb, prm, draws[1:])
    with pytest.raises(ValueError, match="neighbour"):
        query_release_privacy_loss(g, g.records, nb[:10], prm, draws)


@pytest.mark.statistical
def test_x1_privacy_loss_audit_catches_draws_counted_once() -> None:
    """Exact privacy-loss replay of the structured X1 variant on a worst-case pair (fixed seed).

    The lower confidence bound on delta(eps) is exact (Clopper-Pearson, alpha = 1e-3): correct code is flagged
    with probability <= 5e-4.  The broken variant (per-draw budget of one round's K draws instead of K T, T
    re-balanced) has a privacy loss of order 1 per run and is flagged with probability > 0.999 at these sizes.
    """
    from dpsco_book import synthetic_data_and_fairness as ac
    from dpsco_book.privacy_rule import delta_for_n

    n = 100
    dl, g = delta_for_n(n), ac.x1_base_game()
    ok = query_release_params(n, N=g.N, m=g.n_queries, epsilon=1.0, delta=dl)
    br = ac.broken_query_release_params(n, N=g.N, m=g.n_queries, epsilon=1.0, delta=dl)
    rows = [ac.audit_row(lab, ac.x1_privacy_loss_samples(p, n=n, runs=runs, rng=np.random.default_rng(7)),
                         epsilon=1.0, delta=dl, certified=1.0)
            for lab, p, runs in (("correct", ok, 300), ("draws counted once", br, 60))]
    assert not rows[0]["violation detected"] and rows[1]["violation detected"]


@pytest.mark.statistical
def test_x2_sensitivity_audit_catches_under_priced_draws() -> None:
    """Exact recomputation of the gradient sensitivity behind the X2 ledger (fixed seed, false-alarm probability 0:
    the lifted constants bound every gradient).  Caught: the constants scaled by 1/2 (the step size doubled for the
    same ledger, i.e. the sampling noise halved) and by pi_min = 1/3 (importance weights forgotten)."""
    from dpsco_book import synthetic_data_and_fairness as ac

    rows = [ac.x2_sensitivity_audit(n=5000, epsilon=1.0, rng=np.random.default_rng(3), constant_factor=f)
            for f in (1.0, 0.5, 1 / 3)]
    assert not rows[0]["violation detected"]
    assert rows[0]["largest gradient recomputed"] <= rows[0]["L0 the ledger prices"]
    assert rows[1]["violation detected"] and rows[2]["violation detected"]
    assert all(r["ledger certifies eps"] <= 1 + 1e-9 for r in rows)  # the broken ledgers claim the target


# ---------------------------------------------------------------------------------------------- X2 hard family
def test_planted_group_losses_exact_optimum_excess_and_gap() -> None:
    from dpsco_lib.problems.hard_groups import MaxOfLinearLosses, PlantedGroupLosses

    P = PlantedGroupLosses(6, 3, 0.25, decoy=1.5)
    assert P.A_bound == 1.5 and P.L0 == P.L1 == pytest.approx(4.5) and P.L2 == 0.0
    generic = MaxOfLinearLosses(P.C, noise=0.5)  # the same game, optimum by the cvxpy LP
    xs, ys, v = generic.saddle_point()
    assert v == pytest.approx(P.saddle_point()[2], abs=1e-7) == 1.0 - 0.25
    assert xs[0] == pytest.approx(1.0, abs=1e-6)
    r = np.random.default_rng(0)
    for x in r.dirichlet(np.ones(6), size=20):
        assert P.worst_group_excess(x) == pytest.approx(generic.worst_group_excess(x), abs=1e-7)
        y = r.dirichlet(np.ones(3))
        gap = max(0.25, 1.5 * (1 - y[0])) - 0.25 * x[0]  # closed form of the module docstring
        assert P.duality_gap(x, y) == pytest.approx(gap, abs=1e-12)
    assert P.trivial_excess() == pytest.approx(0.25 * (1 - 1 / 6))
    assert np.array_equal(P.pooled_point(), np.eye(6)[1]) and P.worst_group_excess(P.pooled_point()) == 0.25
    # the best response of the decision player switches from the decoy e_2 to e_1 at y_1 = 1 - Delta/kappa
    assert P.best_response_x(np.full(3, 1 / 3))[0][1] == 1.0 and P.best_response_x(np.eye(3)[0])[0][0] == 1.0


def test_planted_group_losses_records_and_gradients() -> None:
    from dpsco_lib.problems.hard_groups import PlantedGroupLosses

    P = PlantedGroupLosses(5, 3, 0.5, shares=[0.2, 0.4, 0.4])
    assert P.L0 == pytest.approx(1.5 / 0.2)
    data = P.sample(60_000, np.random.default_rng(1))
    g = np.asarray(data.extras["group"])
    assert np.allclose(np.bincount(g, minlength=3) / g.size, P.pi, atol=0.01)
    assert np.allclose(data.X[g == 1].mean(axis=0), P.C[:, 1], atol=0.02)
    assert np.max(np.abs(data.X)) <= P.A_bound and P.validate_data(data) is data
    r = np.random.default_rng(2)
    X, Y = r.dirichlet(np.ones(5), size=4), r.dirichlet(np.ones(3), size=4)
    gx, gy = P.grad_x(X, Y, data[:200]), P.grad_y(X, Y, data[:200])
    assert gx.shape == (4, 200, 5) and gy.shape == (4, 200, 3)
    assert np.max(np.abs(gx)) <= P.L0 and np.max(np.abs(gy)) <= P.L0
    # unbiased: E f(x, y; z) = F(x, y) = x^T C y (importance weights 1/pi_g)
    assert P.loss(X[0], Y[0], data).mean() == pytest.approx(P.population_value(X[0], Y[0]), abs=0.02)
    np.testing.assert_allclose(P.mean_grad_x(X[0], Y[0], data), P.C @ Y[0], atol=0.03)
    bad = Dataset(data.X[:3] * 2, None, {"group": g[:3]})
    with pytest.raises(ValueError, match="bounds"):
        P.validate_data(bad)


def test_planted_group_losses_bad_inputs() -> None:
    from dpsco_lib.problems.hard_groups import MaxOfLinearLosses, PlantedGroupLosses, planted_group_family

    with pytest.raises(ValueError, match="margin"):
        PlantedGroupLosses(5, 3, 1.5)
    with pytest.raises(ValueError, match="margin \\+ decoy"):
        PlantedGroupLosses(5, 3, 0.75, decoy=1.5)
    with pytest.raises(ValueError, match="d"):
        PlantedGroupLosses(2, 3, 0.5)
    with pytest.raises(ValueError, match="shares"):
        PlantedGroupLosses(5, 3, 0.5, shares=[0.5, 0.5, 0.5])
    with pytest.raises(ValueError, match="m"):
        MaxOfLinearLosses(np.ones((4, 1)))
    with pytest.raises(ValueError, match="margins"):
        planted_group_family(5, 3, [])
    fam = planted_group_family(5, 3, [0.125, 0.5])
    assert sorted(fam) == [0.125, 0.5] and len({(m.L0, m.L1, m.L2) for m in fam.values()}) == 1
