"""Tests of MWEM (Spec X1 baseline; Hardt, Ligett & McSherry 2012)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpsco_lib.algorithms.mwem import mwem_per_round_epsilon, mwem_theory_T, run_mwem
from dpsco_lib.privacy.accounting import (
    advanced_composition_epsilon,
)
from dpsco_lib.privacy.audit import epsilon_lower_bound
from dpsco_lib.privacy.mechanisms import exponential_mechanism_log_probs


def _tiny(seed: int = 0, N: int = 8, m: int = 12, n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    r = np.random.default_rng(seed)
    Q = (r.random((m, N)) < 0.5).astype(np.float64)
    h = np.bincount(r.choice(N, size=n, p=r.dirichlet(np.full(N, 0.5))), minlength=N).astype(np.float64)
    return h, Q


def test_noiseless_limit_meets_hlm12_bound() -> None:
    """eps -> inf: exact selection and measurement; HLM12 Thm 2.2 gives max error <= 2 sqrt(log N / T)."""
    h, Q = _tiny()
    for T in (10, 50, 200):
        res = run_mwem(h, Q, epsilon=1e12, T=T, rng=np.random.default_rng(1))
        assert res.info["max_query_error"] <= 2 * math.sqrt(math.log(h.size) / T)
        assert res.x.shape == (h.size,) and np.all(res.x >= 0) and res.x.sum() == pytest.approx(1.0)
    # and it converges to the true answers: the last iterate with extra passes is essentially exact
    res = run_mwem(h, Q, epsilon=1e12, T=60, rng=np.random.default_rng(1), passes=1, output="last")
    assert res.info["max_query_error"] < 0.02


def test_noiseless_selection_is_the_worst_query() -> None:
    """With eps = 1e12 the first selected query is the one with the largest error at the uniform start."""
    h, Q = _tiny(3)
    res = run_mwem(h, Q, epsilon=1e12, T=1, rng=np.random.default_rng(0))
    err = np.abs(Q @ np.full(h.size, h.sum() / h.size) - Q @ h)
    assert res.trace["selected"][0] == int(np.argmax(err))
    assert res.trace["measurements"][0] == pytest.approx(float(Q[res.trace["selected"][0]] @ h), abs=1e-8)


@pytest.mark.parametrize("T", [1, 7, 40])
def test_ledger_basic_is_exactly_epsilon(T: int) -> None:
    h, Q = _tiny()
    eps = 1.3
    res = run_mwem(h, Q, epsilon=eps, T=T, rng=np.random.default_rng(0), delta=1e-6, accountant="basic")
    eps0 = res.params["eps_per_mechanism"]
    assert eps0 == pytest.approx(eps / (2 * T), rel=1e-14)  # eps/(2T), rounded down if the float sum needs it
    assert res.ledger.total_count == 2 * T
    basic = res.ledger.epsilon(0.0, method="basic")
    assert basic == T * eps0 + T * eps0  # T selections + T measurements at eps/(2T)
    assert basic == pytest.approx(eps, rel=1e-14) and basic <= eps
    assert "certified_epsilon" not in res.info and res.info["accountant"] == "basic"
    # the default ("best") at the default delta = 0 is the same pure-DP run, bit for bit
    pure = run_mwem(h, Q, epsilon=eps, T=T, rng=np.random.default_rng(0))
    assert pure.info["accountant"] == "best" and pure.params["eps_per_mechanism"] == eps0
    assert np.array_equal(pure.x, res.x) and pure.certified_epsilon(0.0) == basic
    # at delta > 0 the default is the tightest valid accountant: at least basic composition's budget
    approx = run_mwem(h, Q, epsilon=eps, T=T, rng=np.random.default_rng(0), delta=1e-6)
    assert approx.params["eps_per_mechanism"] >= eps0 and approx.certified_epsilon(1e-6) <= eps * (1 + 1e-12)
    if T > 1:
        assert approx.params["eps_per_mechanism"] > eps0
    assert res.certified_epsilon(1e-6, accountant="basic") == basic
    expected = advanced_composition_epsilon(eps0, k=2 * T, delta_prime=1e-6)
    assert res.certified_epsilon(1e-6, accountant="advanced") == pytest.approx(expected, rel=1e-12)


def test_advanced_composition_variant() -> None:
    h, Q = _tiny()
    eps, dl, T = 1.0, 1e-6, 200
    res = run_mwem(h, Q, epsilon=eps, T=T, rng=np.random.default_rng(0), delta=dl, accountant="advanced")
    eps0 = res.params["eps_per_mechanism"]
    assert eps0 == mwem_per_round_epsilon(eps, T=T, delta=dl, accountant="advanced")
    assert eps0 > eps / (2 * T)  # advanced composition buys a larger per-round budget at large T
    assert res.certified_epsilon(dl, accountant="advanced") == res.ledger.epsilon(dl, method="advanced") <= eps
    best = mwem_per_round_epsilon(eps, T=T, delta=dl, accountant="best")
    assert best > eps0  # the tightest accountant (RDP: the selections are bounded-range) buys more
    tight = run_mwem(h, Q, epsilon=eps, T=T, rng=np.random.default_rng(0), delta=dl, accountant="best")
    assert tight.certified_epsilon(dl) <= eps
    assert res.ledger.epsilon(0.0, method="basic") > eps  # not pure eps-DP any more


def test_determinism() -> None:
    h, Q = _tiny()
    a = run_mwem(h, Q, epsilon=0.5, T=20, rng=np.random.default_rng(42), passes=1)
    b = run_mwem(h, Q, epsilon=0.5, T=20, rng=np.random.default_rng(42), passes=1)
    assert np.array_equal(a.x, b.x)
    assert np.array_equal(a.trace["selected"], b.trace["selected"])
    c = run_mwem(h, Q, epsilon=0.5, T=20, rng=np.random.default_rng(43), passes=1)
    assert not np.array_equal(a.x, c.x)


def test_extreme_scores_no_overflow() -> None:
    """Huge n and tiny eps: log-space weights, no NaN."""
    h, Q = _tiny(n=10)
    h = h * 10**9
    for eps in (1e-9, 1e9):
        res = run_mwem(h, Q, epsilon=eps, T=5, rng=np.random.default_rng(0))
        assert np.all(np.isfinite(res.x)) and res.x.sum() == pytest.approx(1.0)


def test_theory_T() -> None:
    t = mwem_theory_T(10_000, N=64, m=60, epsilon=1.0)
    assert t == round((1.0 * 10_000 * math.sqrt(math.log(64)) / (10 * math.log(60))) ** (2 / 3))
    assert mwem_theory_T(1, N=2, m=1, epsilon=1e-9) == 1


def test_bad_inputs() -> None:
    h, Q = _tiny()
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="histogram"):
        run_mwem(-h, Q, epsilon=1.0, T=2, rng=rng)
    with pytest.raises(ValueError, match="histogram"):
        run_mwem(h + 0.5, Q, epsilon=1.0, T=2, rng=rng)
    with pytest.raises(ValueError, match="histogram"):
        run_mwem(np.zeros_like(h), Q, epsilon=1.0, T=2, rng=rng)
    with pytest.raises(ValueError, match="queries"):
        run_mwem(h, Q[:, :-1], epsilon=1.0, T=2, rng=rng)
    with pytest.raises(ValueError, match="queries"):
        run_mwem(h, 2 * Q, epsilon=1.0, T=2, rng=rng)
    with pytest.raises(ValueError, match="epsilon"):
        run_mwem(h, Q, epsilon=0.0, T=2, rng=rng)
    with pytest.raises(ValueError, match="T"):
        run_mwem(h, Q, epsilon=1.0, T=0, rng=rng)
    with pytest.raises(ValueError, match="accountant"):
        run_mwem(h, Q, epsilon=1.0, T=2, rng=rng, accountant="cor36")
    with pytest.raises(ValueError, match="delta"):
        run_mwem(h, Q, epsilon=1.0, T=2, rng=rng, accountant="advanced")
    with pytest.raises(ValueError, match="epsilon"):
        run_mwem(h, Q, epsilon=math.nan, T=2, rng=rng)
    with pytest.raises(ValueError, match="delta"):
        run_mwem(h, Q, epsilon=1.0, T=2, rng=rng, delta=1.0)
    with pytest.raises(ValueError, match="output"):
        run_mwem(h, Q, epsilon=1.0, T=2, rng=rng, output="best")
    with pytest.raises((ValueError, TypeError), match="rng"):
        run_mwem(h, Q, epsilon=1.0, T=2, rng=0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="passes"):
        run_mwem(h, Q, epsilon=1.0, T=2, rng=rng, passes=-1)


@pytest.mark.statistical
def test_audit_one_round() -> None:
    """Audit one MWEM round (T = 1) on a worst-case neighbouring pair; false-alarm level 0.05 (Clopper-Pearson).

    One query q = e_1 (the selection is then trivial), h = (n, 0) vs h' = (n - 1, 1): the measured count moves by
    exactly the sensitivity 1.  The round claims epsilon = 2 (eps_meas = 1): the audited lower bound must not
    exceed it, and must exceed a mis-calibrated claim of epsilon/4 (a ledger that under-reports by 4x is caught).
    """
    Q = np.array([[1.0, 0.0]])
    S, S2 = np.array([50.0, 0.0]), np.array([49.0, 1.0])
    eps = 2.0

    def mech(h: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        return np.array([run_mwem(h, Q, epsilon=eps, T=1, rng=rng).trace["measurements"][0] for _ in range(size)])

    res = epsilon_lower_bound(mech, S, S2, lambda t: t, 50.0, 3_000, 0.05, np.random.default_rng(7),
                              claimed_epsilon=eps)
    claimed = run_mwem(S, Q, epsilon=eps, T=1, rng=np.random.default_rng(0)).ledger.epsilon(0.0, "basic")
    assert claimed == pytest.approx(eps)
    assert res.epsilon_lower_bound <= claimed
    assert not res.violation
    assert res.epsilon_lower_bound > eps / 4  # the broken claim (eps/4) would be caught


# ---------------------------------------------------------------------------------------------------------------
# MWEM: the multiplicative-weights step and the selection law (mutants alg-mwem-mw-step, alg-mwem-selection-budget)
# ---------------------------------------------------------------------------------------------------------------
def _mwem_instance():
    r = np.random.default_rng(9)
    Q = (r.random((6, 8)) < 0.5).astype(np.float64)
    h = np.bincount(r.integers(0, 8, size=12), minlength=8).astype(np.float64)
    return h, Q


def test_mwem_one_round_is_the_hlm12_update():
    """T = 1, no extra passes, last iterate: x prop. to exp(q_j (m - n <q_j, u>)/(2n)) from the uniform u (HLM12)."""
    h, Q = _mwem_instance()
    res = run_mwem(h, Q, epsilon=1.0, rng=np.random.default_rng(3), T=1, passes=0, output="last")
    j, m = int(res.trace["selected"][0]), float(res.trace["measurements"][0])
    n, N = h.sum(), h.size
    est = n * float(Q[j] @ np.full(N, 1.0 / N))
    w = np.exp(Q[j] * (m - est) / (2.0 * n))
    np.testing.assert_allclose(res.x, w / w.sum(), rtol=1e-12)


@pytest.mark.statistical
def test_mwem_first_selection_is_the_exponential_mechanism_at_eps0():
    """The first selection of MWEM is the exponential mechanism on |n <q, u> - <q, h>| with sensitivity 1 and the
    recorded per-mechanism budget eps0. Chi-square goodness of fit of 6000 first selections against that law
    (false-alarm probability 1e-3); the law at 2 eps0 is rejected by the same test."""
    h, Q = _mwem_instance()
    n, N = h.sum(), h.size
    eps = 4.0
    first = run_mwem(h, Q, epsilon=eps, rng=np.random.default_rng(0), T=1)
    eps0 = first.params["eps_per_mechanism"]
    scores = np.abs(n * (Q @ np.full(N, 1.0 / N)) - Q @ h)
    law = np.exp(exponential_mechanism_log_probs(scores, sensitivity=1.0, epsilon=eps0))
    law2 = np.exp(exponential_mechanism_log_probs(scores, sensitivity=1.0, epsilon=2.0 * eps0))
    seeds = np.random.default_rng(11).integers(0, 2**63, size=6000)
    sel = np.array([int(run_mwem(h, Q, epsilon=eps, rng=np.random.default_rng(int(s)), T=1).trace["selected"][0])
                    for s in seeds])
    counts = np.bincount(sel, minlength=Q.shape[0])
    keep = law * sel.size >= 5  # chi-square cells with enough expected counts; the rest pooled
    obs = np.append(counts[keep], counts[~keep].sum())
    exp_ = np.append(law[keep], law[~keep].sum()) * sel.size
    exp2 = np.append(law2[keep], law2[~keep].sum()) * sel.size
    obs, exp_, exp2 = obs[exp_ > 0], exp_[exp_ > 0], exp2[exp_ > 0]
    assert stats.chisquare(obs, exp_).pvalue > 1e-3
    assert stats.chisquare(obs, exp2 * exp_.sum() / exp2.sum()).pvalue < 1e-3  # power against the 2 eps0 law


@pytest.mark.statistical
def test_mwem_measurements_have_laplace_noise_of_scale_one_over_eps0():
    """Each MWEM measurement is the Laplace mechanism on a count of sensitivity 1 at the recorded eps0: the
    measurement errors of 4000 one-round runs follow Laplace(1/eps0) (Kolmogorov-Smirnov, false-alarm probability
    1e-3; noise of half that scale is rejected by the same test)."""
    h, Q = _mwem_instance()
    eps = 1.0
    eps0 = run_mwem(h, Q, epsilon=eps, rng=np.random.default_rng(0), T=1).params["eps_per_mechanism"]
    true = Q @ h
    seeds = np.random.default_rng(12).integers(0, 2**63, size=4000)
    err = []
    for s in seeds:
        tr = run_mwem(h, Q, epsilon=eps, rng=np.random.default_rng(int(s)), T=1).trace
        err.append(tr["measurements"][0] - true[int(tr["selected"][0])])
    err = np.asarray(err)
    assert stats.kstest(err, stats.laplace(scale=1.0 / eps0).cdf).pvalue > 1e-3
    assert stats.kstest(err, stats.laplace(scale=0.5 / eps0).cdf).pvalue < 1e-3
