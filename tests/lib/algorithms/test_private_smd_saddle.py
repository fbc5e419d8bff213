"""Algorithm 1 of GGP24 (Spec A1): theory parameters, privacy ledger, determinism, audits, bad inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from dpsco_lib.algorithms.private_smd_saddle import (
    REGIMES,
    alg1_eta_cap,
    alg1_per_draw_budget,
    alg1_theory_params,
    run_private_smd_saddle,
    run_private_smd_saddle_many,
    run_smd_saddle,
)
from dpsco_lib.privacy.accounting import advanced_composition_per_step_epsilon, cor36_per_step_epsilon
from dpsco_lib.privacy.accounting.budget import per_step_epsilon
from dpsco_lib.privacy.audit import epsilon_lower_bound_from_counts
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.games import BilinearGame, random_bilinear_game, random_softmax_game

CONST = {"first_order": (2.0, 2.0, 0.0), "second_order": (2.0, 2.0, 10.0), "quadratic": (2.0, 2.0, 0.0)}


@pytest.fixture(scope="module")
def game():
    rng = np.random.default_rng(3)
    g = random_bilinear_game(8, 6, rng)
    return g, g.sample(4000, rng)


# ------------------------------------------------------------------ theory parameters
@pytest.mark.parametrize("regime", REGIMES)
@pytest.mark.parametrize("accountant", ["best", "advanced", "paper"])
@pytest.mark.parametrize("n", [50, 3000, 200_000])
def test_theory_params_properties(regime, accountant, n):
    L0, L1, L2 = CONST[regime]
    p = alg1_theory_params(n, d=(30, 20), epsilon=0.8, delta=1e-6, L0=L0, L1=L1, L2=L2, regime=regime,
                           accountant=accountant)
    assert 1 <= p.T <= n and p.B == n // p.T and p.B >= 1
    assert p.n_draws == 2 * p.K * p.T
    assert p.accountant == accountant
    assert p.eps0 == per_step_epsilon(0.8, 1e-6, p.n_draws, accountant=accountant, mechanism="exponential").value
    if accountant == "advanced":
        assert p.eps0 == advanced_composition_per_step_epsilon(0.8, delta_total=1e-6, k=p.n_draws)
    elif accountant == "paper":
        assert p.eps0 == pytest.approx(cor36_per_step_epsilon(0.8, delta=1e-6, k=p.n_draws), rel=1e-15)
    else:  # the tightest valid accountant allows at least DRV10's per-draw budget
        assert p.eps0 >= advanced_composition_per_step_epsilon(0.8, delta_total=1e-6, k=p.n_draws)
    assert p.eta_cap == pytest.approx(p.eps0 * p.B / (4 * L0), rel=1e-14)
    assert p.eta <= p.eta_cap * (1 + 1e-12)
    assert p.eps_draw == pytest.approx(4 * p.eta * L0 / p.B, rel=1e-14)
    assert p.eps_draw <= p.eps0  # the step size is lowered by the rounding of the cap if needed
    assert p.log_d == pytest.approx(math.log(30) + math.log(20))
    if regime == "quadratic":
        assert p.K == 1 and p.bias_term == 0.0


@pytest.mark.parametrize("regime", REGIMES)
def test_theory_params_balance_T(regime):
    """T is where the capped and the unconstrained SMD step sizes cross (unless T = n)."""
    L0, L1, L2 = CONST[regime]
    n, eps, delta = 100_000, 1.0, 1e-6
    p = alg1_theory_params(n, d=40, epsilon=eps, delta=delta, L0=L0, L1=L1, L2=L2, regime=regime)
    eta_stat = math.sqrt(p.log_d / p.T) / L0
    assert p.eta_cap >= eta_stat  # the cap does not bind at T ...
    T1 = p.T + 1
    cap1 = alg1_per_draw_budget(eps, delta=delta, n_draws=2 * p.K * T1) * (n // T1) / (4 * L0)
    assert cap1 < math.sqrt(p.log_d / T1) / L0  # ... and binds at T + 1
    assert p.eta == pytest.approx(eta_stat)


@pytest.mark.parametrize(("regime", "exponent", "k_exp"), [("first_order", 1 / 3, 2 / 3),
                                                          ("second_order", 2 / 5, 2 / 5), ("quadratic", 1 / 2, 0.0)])
def test_theory_params_rates(regime, exponent, k_exp):
    """The bound at the theory parameters decays like n^-exponent (Thm 3.1) and K grows like rho^(-k_exp)."""
    L0, L1, L2 = CONST[regime]
    ns = np.array([1e5, 1e6, 1e7, 1e8])
    ps = [alg1_theory_params(int(n), d=(50, 50), epsilon=1.0, delta=1e-6, L0=L0, L1=L1, L2=L2, regime=regime)
          for n in ns]
    priv = np.array([p.smd_term + p.bias_term for p in ps])
    slope = np.polyfit(np.log(ns), np.log(priv), 1)[0]
    assert slope == pytest.approx(-exponent, abs=0.02)
    ks = np.array([p.K for p in ps], dtype=float)
    assert np.polyfit(np.log(ns), np.log(ks), 1)[0] == pytest.approx(k_exp, abs=0.03)
    # the private term scales like rho^exponent: the ratio is constant over the range
    r = priv / np.array([p.rho for p in ps]) ** exponent
    assert r.max() / r.min() < 1.2


QUAD = {"d": 10, "epsilon": 1.0, "delta": 1e-5, "L0": 1.0, "L1": 1.0, "L2": 0.0, "regime": "quadratic"}


def test_theory_params_fixed_values_and_cap():
    p = alg1_theory_params(10_000, K=3, T=100, **QUAD)
    assert (p.K, p.T, p.B) == (3, 100, 100) and p.accountant == "best"
    eps0 = per_step_epsilon(1.0, 1e-5, 600, accountant="best", mechanism="exponential").value
    assert p.eps0 == eps0 and p.eta_cap == pytest.approx(eps0 * 100 / 4)
    adv = alg1_theory_params(10_000, K=3, T=100, accountant="advanced", **QUAD)  # DRV10's closed form, pinned
    assert adv.eta_cap == pytest.approx(advanced_composition_per_step_epsilon(1.0, delta_total=1e-5, k=600) * 100 / 4)
    assert p.eta == pytest.approx(min(p.eta_cap, math.sqrt(2 * math.log(10) / 100)))
    with pytest.raises(ValueError, match="privacy cap"):
        alg1_theory_params(10_000, K=3, T=100, step_size=2 * p.eta_cap, **QUAD)
    q = alg1_theory_params(10_000, K=3, T=100, step_size=2 * p.eta_cap, enforce_privacy_cap=False, **QUAD)
    assert q.eps_draw == pytest.approx(2 * p.eps0)
    assert alg1_eta_cap(0.1, B=10, L0=2.0) == pytest.approx(0.125)
    with pytest.raises(TypeError):
        alg1_eta_cap(0.1, 10, 2.0)  # keyword-only after the first argument


def test_best_accountant_is_tighter_and_certifies():
    """accountant="best" gives a larger per-draw budget (a larger cap) and still certifies the target."""
    best = alg1_theory_params(5000, K=2, T=50, **QUAD)  # the default
    adv = alg1_theory_params(5000, K=2, T=50, accountant="advanced", **QUAD)
    assert best.accountant == "best" and adv.accountant == "advanced"
    assert best.eps0 > adv.eps0 and best.eta_cap > adv.eta_cap
    assert per_step_epsilon(1.0, 1e-5, best.n_draws, accountant="best", mechanism="exponential").certified_epsilon <= 1
    with pytest.raises(ValueError, match="accountant must be one of"):
        alg1_theory_params(5000, accountant="cor36", **QUAD)


# ------------------------------------------------------------------ ledger
@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 4.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-9])
@pytest.mark.parametrize("regime", REGIMES)
@pytest.mark.parametrize("accountant", ["best", "advanced", "paper"])
def test_ledger_certifies_target(game, eps, delta, regime, accountant):
    g, data = game
    if accountant == "paper" and eps > 1:
        try:  # the rule holds under DRV for moderate eps; where it does not, the budget path says so
            per_step_epsilon(eps, delta, 8, accountant="paper", mechanism="exponential")
        except ValueError as e:
            assert "papers' rule" in str(e)
            return
    res = run_private_smd_saddle(g, data[:500], epsilon=eps, delta=delta, rng=np.random.default_rng(0),
                                 regime=regime, accountant=accountant, K=None if regime != "first_order" else 4)
    led = res.ledger
    assert led.total_count == 2 * res.params["K"] * res.params["T"]
    assert led.events[0].kind == "exponential"
    assert led.events[0].epsilon == pytest.approx(4 * res.params["eta"] * g.L0 / res.params["B"])
    assert "certified_epsilon" not in res.info and res.info["accountant"] == accountant
    if accountant != "best":  # "paper" is certified by DRV10
        assert res.certified_epsilon(delta, accountant="advanced") <= eps
        assert led.epsilon(delta, method="advanced") <= eps
    assert led.epsilon(delta) <= eps * (1 + 1e-12)  # the tightest certificate: at most the calibrating one


def test_broken_cap_is_reflected_in_ledger(game):
    g, data = game
    base = run_private_smd_saddle(g, data, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(1), regime="quadratic")
    eta = 3 * base.params["eta_cap"]
    with pytest.raises(ValueError, match="privacy cap"):
        run_private_smd_saddle(g, data, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(1), regime="quadratic",
                               T=base.params["T"], step_size=eta)
    res = run_private_smd_saddle(g, data, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(1), regime="quadratic",
                                 T=base.params["T"], step_size=eta, enforce_privacy_cap=False)
    assert res.certified_epsilon(1e-6) > 1.0  # the default accountant ("best") charges it
    assert res.ledger.events[0].epsilon == pytest.approx(4 * eta * g.L0 / res.params["B"])
    assert res.info["privacy_cap_enforced"] is False


# ------------------------------------------------------------------ behaviour
def test_determinism_and_output_lattice(game):
    g, data = game
    kw = {"epsilon": 1.0, "delta": 1e-6, "regime": "first_order", "K": 5, "T": 40}
    a = run_private_smd_saddle(g, data, rng=np.random.default_rng(7), **kw)
    b = run_private_smd_saddle(g, data, rng=np.random.default_rng(7), **kw)
    c = run_private_smd_saddle(g, data, rng=np.random.default_rng(8), **kw)
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.y, b.y)
    assert not np.array_equal(a.x, c.x)
    # average of T K-vertex estimates: every entry is a multiple of 1/(K T), the point is on the simplex
    for v in (a.x, a.y):
        assert abs(v.sum() - 1) < 1e-12 and v.min() >= 0
        np.testing.assert_allclose(v * 200, np.round(v * 200), atol=1e-9)
    many = run_private_smd_saddle_many(g, data, n_runs=1, rng=np.random.default_rng(7), **kw)
    np.testing.assert_array_equal(many["x"][0], a.x)


def test_trace_draws_match_output(game):
    g, data = game
    r = run_private_smd_saddle(g, data, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(2), K=3, T=20,
                               regime="quadratic", trace=True)
    assert r.trace["draws_x"].shape == (20, 3)
    counts = np.bincount(r.trace["draws_x"].ravel(), minlength=g.dx) / 60
    np.testing.assert_allclose(counts, r.x)


def test_converges_on_bilinear_game():
    """With a generous budget the private gap falls well below the gap at the uniform start (fixed seed)."""
    rng = np.random.default_rng(11)
    g = random_bilinear_game(10, 10, rng)
    data = g.sample(20_000, rng)
    u = np.full(10, 0.1)
    gap0 = g.duality_gap(u, u)
    res = run_private_smd_saddle(g, data, epsilon=8.0, delta=1e-6, rng=rng, regime="quadratic")
    assert g.duality_gap(res.x, res.y) < 0.5 * gap0
    base = run_smd_saddle(g, data, rng=rng, T=2000)
    assert g.duality_gap(base.x, base.y) < 0.25 * gap0


def test_rectangular_and_softmax_game_second_order():
    rng = np.random.default_rng(5)
    g = random_softmax_game(7, 3, rng)
    data = g.sample(3000, rng)
    res = run_private_smd_saddle(g, data, epsilon=2.0, delta=1e-6, rng=rng, regime="second_order")
    assert res.x.shape == (7,) and res.y.shape == (3,)
    assert np.isfinite(g.duality_gap(res.x, res.y))
    with pytest.raises(ValueError, match="L2 = 0"):
        run_private_smd_saddle(g, data, epsilon=2.0, delta=1e-6, rng=rng, regime="quadratic")


# ------------------------------------------------------------------ audits
def _canary_pair(d: int):
    """A = 0, s = 1 (L0 = 1): the canary's x-gradient is u (v = 1, so v . y~ = 1 for every vertex y~); its
    neighbour has -u.  u = +1 on coordinate 0, -1 elsewhere: the worst case of the exponential mechanism."""
    g = BilinearGame(np.zeros((d, d)), noise=1.0)
    u = -np.ones(d)
    u[0] = 1.0
    rec = np.concatenate([u, np.ones(d)])
    other = np.zeros(2 * d)
    S = Dataset(np.vstack([rec, other]))
    S2 = S.replace_one(0, (np.concatenate([-u, np.ones(d)]), None))
    return g, S, S2, u


@pytest.mark.statistical
def test_step_two_draw_law_is_exact():
    """Chi-square of the step-2 draws against softmax(-eta u) (false alarm 1e-3)."""
    d = 6
    g, S, _, u = _canary_pair(d)
    out = run_private_smd_saddle_many(g, S, n_runs=20_000, epsilon=2.0, delta=1e-6, rng=np.random.default_rng(3),
                                      regime="quadratic", K=1, T=2)
    eta = out["params"]["eta"]
    p = np.exp(-eta * u - logsumexp(-eta * u))
    counts = np.bincount(out["draws_x"][:, 1, 0], minlength=d)
    assert stats.chisquare(counts, 20_000 * p).pvalue > 1e-3
    # step-1 draws are uniform
    assert stats.chisquare(np.bincount(out["draws_x"][:, 0, 0], minlength=d)).pvalue > 1e-3


def _single_draw_audit(eta_factor: float, n_runs: int, seed: int):
    d = 10
    g, S, S2, u = _canary_pair(d)
    kw = {"epsilon": 2.0, "delta": 1e-6, "regime": "quadratic", "K": 1, "T": 2}
    ref = alg1_theory_params(2, d=(d, d), epsilon=2.0, delta=1e-6, L0=g.L0, L1=g.L1, L2=g.L2, regime="quadratic",
                             K=1, T=2)
    claimed = ref.eps_draw
    eta = ref.eta * eta_factor
    rng = np.random.default_rng(seed)
    a = run_private_smd_saddle_many(g, S, n_runs=n_runs, rng=rng, step_size=eta, enforce_privacy_cap=False, **kw)
    b = run_private_smd_saddle_many(g, S2, n_runs=n_runs, rng=rng, step_size=eta, enforce_privacy_cap=False, **kw)
    ca = int(np.sum(a["draws_x"][:, 1, 0] == 0))
    cb = int(np.sum(b["draws_x"][:, 1, 0] == 0))
    res = epsilon_lower_bound_from_counts(ca, cb, n_runs, n_runs, 1e-3, claimed_epsilon=claimed)
    # exact privacy loss of the draw: log-probabilities softmax(-eta u) vs softmax(+eta u)
    lp = -eta * u - logsumexp(-eta * u)
    lq = eta * u - logsumexp(eta * u)
    return res, float(np.max(np.abs(lp - lq))), claimed


@pytest.mark.statistical
def test_single_draw_audit_correct_and_broken():
    """Correct: exact loss <= claimed 4 eta L0/B and the audit lower bound stays below it; the factor-2 of the
    exponential mechanism is needed (the exact loss exceeds half the claim).  Broken (sensitivity halved, i.e.
    eta doubled under the same claim): caught.  False alarm of each bound 1e-3."""
    res, exact, claimed = _single_draw_audit(1.0, 40_000, 1)
    assert exact <= claimed * (1 + 1e-12)
    assert exact > 0.75 * claimed
    assert not res.violation and res.epsilon_lower_bound <= claimed
    bad, exact_bad, _ = _single_draw_audit(2.0, 40_000, 2)
    assert exact_bad > claimed
    assert bad.violation, f"broken variant not caught: lb {bad.epsilon_lower_bound} vs claimed {claimed}"


# ------------------------------------------------------------------ bad inputs
@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"K": 0}, "K must be"),
        ({"T": 10_000}, "T must be"),
        ({"T": 0}, "T must be"),
        ({"step_size": -1.0}, "step_size must be"),
        ({"step_size": 0.0}, "step_size must be"),
        ({"regime": "third_order"}, "regime must be"),
        ({"accountant": "cor36"}, "accountant must be"),
        ({"accountant": "gdp"}, "does not apply"),
        ({"epsilon": 0.0}, "epsilon must be"),
        ({"epsilon": math.nan}, "epsilon"),
        ({"epsilon": math.inf}, "epsilon"),
        ({"delta": math.nan}, "delta"),
        ({"delta": 0.0}, "delta must lie"),
        ({"delta": 1.5}, "delta must lie"),
        ({"enforce_privacy_cap": "no"}, "enforce_privacy_cap"),
    ],
)
def test_bad_inputs(game, kw, match):
    g, data = game
    args = {"epsilon": 1.0, "delta": 1e-6, "rng": np.random.default_rng(0), "regime": "quadratic"} | kw
    with pytest.raises((ValueError, TypeError), match=match):
        run_private_smd_saddle(g, data, **args)


def test_bad_problem_and_data(game):
    g, data = game
    with pytest.raises(ValueError, match="SaddleProblem"):
        run_private_smd_saddle(object(), data, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="Dataset"):
        run_private_smd_saddle(g, np.zeros((10, 14)), epsilon=1.0, delta=1e-6, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="feature columns"):
        run_private_smd_saddle(g, Dataset(np.zeros((10, 3))), epsilon=1.0, delta=1e-6, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="bounds"):
        run_private_smd_saddle(g, Dataset(2 * np.ones((10, 14))), epsilon=1.0, delta=1e-6,
                               rng=np.random.default_rng(0))
    with pytest.raises((ValueError, TypeError), match="rng"):
        run_private_smd_saddle(g, data, epsilon=1.0, delta=1e-6, rng=0)
    nan = data.X.copy()
    nan[3, 0] = math.nan
    with pytest.raises(ValueError):
        run_private_smd_saddle(g, Dataset(nan), epsilon=1.0, delta=1e-6, rng=np.random.default_rng(0))
    kw = {"epsilon": 1.0, "delta": 1e-6, "L0": 1.0, "L1": 1.0}
    with pytest.raises(ValueError, match="d must be"):
        alg1_theory_params(100, d=(3, 4, 5), L2=0.0, regime="quadratic", **kw)
    with pytest.raises(ValueError, match="finite L2"):
        alg1_theory_params(100, d=3, L2=math.inf, regime="second_order", **kw)


def test_certificate_is_the_ledger_and_meets_the_target(game):
    g, data = game
    res = run_private_smd_saddle(g, data, epsilon=0.7, delta=1e-7, rng=np.random.default_rng(4), regime="first_order")
    assert "certified_epsilon" not in res.info and res.info["accountant"] == "best"
    assert res.certified_epsilon(1e-7) == res.ledger.epsilon(1e-7) <= 0.7 * (1 + 1e-12)
    k = res.params["n_draws"]
    assert res.params["eps0"] == per_step_epsilon(0.7, 1e-7, k, accountant="best", mechanism="exponential").value
    assert res.relation == "replace_one"
