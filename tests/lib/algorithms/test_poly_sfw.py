"""Poly-SFW (Spec F1; BGN21): sensitivities, privacy certificate, canary audits, utility, determinism, inputs."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
from scipy import stats

import dpsco_lib.algorithms.poly_sfw as poly_sfw_mod
from dpsco_lib.algorithms.poly_sfw import (
    poly_sfw_auto_step_constant,
    poly_sfw_sensitivities,
    poly_sfw_theory_params,
    run_poly_sfw,
    run_poly_sfw_reference,
    standard_laplace,
)
from dpsco_lib.geometry.sets import L1Ball, Polytope, Simplex
from dpsco_lib.privacy.accounting import (
    advanced_composition_epsilon,
)
from dpsco_lib.problems import Dataset, random_least_squares
from dpsco_lib.problems.least_squares import LeastSquares, hard_least_squares
from dpsco_lib.problems.stream import DataStream
from dpsco_lib.testing import noise_scaled
from tests.audit_helpers import audit_honest_and_broken, simplex_canary_pair


def _ls_polytope(V: np.ndarray) -> LeastSquares:
    """hard l1 least squares moments, feasible set an explicit Polytope (for the generic vertex path)."""
    base = hard_least_squares(1.0, V.shape[1], set_kind="l1ball")
    return LeastSquares(
        Polytope(V), 1.0, feature_bound=1.0, label_bound=base.B_b, sigma_diag=base.sigma_diag, sigma_factor=None,
        mu=base.mu, s2=base.s2, sampler=base.sampler,
    )


# ---------------------------------------------------------------------------------------------------------
# sensitivity lemma and parameters
# ---------------------------------------------------------------------------------------------------------
def test_sensitivities_closed_form():
    s = poly_sfw_sensitivities(3, batch_size=5, step_size=0.2, L0=2.0, L1=1.0, D=2.0)
    first = 2.0 * 2.0 / 5 * 0.8 ** np.arange(4)
    floor = 0.2 * 2.0 * (0.8 * 1.0 * 2.0 + 2.0)
    np.testing.assert_allclose(s, [first[0], max(first[1], floor), max(first[2], floor), max(first[3], floor)])
    assert s[0] == pytest.approx(0.8)  # L0 D / m


def _worst_score_change(problem, data, i, record, eta, T, seed):
    """Empirical max_t of the half-range of <v, nabla_t(S) - nabla_t(S')> along a shared trajectory."""
    rng = np.random.default_rng(seed)
    S, Sp = data, data.replace_one(i, record)
    n = data.n
    T_ = n // 2
    m = n - T_
    fset = problem.feasible_set
    V = fset.vertices()
    x_prev = fset.center()
    g, gp = problem.mean_grad(x_prev, S[:m]), problem.mean_grad(x_prev, Sp[:m])
    out = [0.5 * np.ptp(V @ (g - gp))]
    x = (1 - eta) * x_prev + eta * V[rng.integers(len(V))]
    for t in range(1, T + 1):
        for G, D_ in ((g, S), (gp, Sp)):
            r = D_[m + t - 1]
            a, b = problem.grad(x, r)[0], problem.grad(x_prev, r)[0]
            G += a - b
            G *= 1 - eta
            G += eta * a
        out.append(0.5 * np.ptp(V @ (g - gp)))
        x_prev, x = x, (1 - eta) * x + eta * V[rng.integers(len(V))]
    return np.asarray(out)


@pytest.mark.parametrize("where", ["batch", "update"])
def test_sensitivity_bound_holds_on_adversarial_neighbours(where):
    # Replace a record by an extreme one (|b| = c, a = +-1 pattern) and track the score change along the run.
    d, n = 6, 12
    pr = hard_least_squares(1.0, d, set_kind="l1ball", c=3.0)
    rng = np.random.default_rng(0)
    data = pr.sample(n, rng)
    eta = 0.3
    D = pr.feasible_set.diameter(1.0)
    s = poly_sfw_sensitivities(n // 2, batch_size=n - n // 2, step_size=eta, L0=pr.L0, L1=pr.L1, D=D)
    worst = np.zeros_like(s)
    for trial in range(30):
        i = int(rng.integers(0, n - n // 2)) if where == "batch" else int(rng.integers(n - n // 2, n))
        a = rng.choice([-1.0, 1.0], size=d)
        rec = (a, float(rng.choice([-3.0, 3.0])))
        worst = np.maximum(worst, _worst_score_change(pr, data, i, rec, eta, n // 2, trial))
    assert np.all(worst <= s * (1 + 1e-12))
    if where == "batch":  # the batch term is nearly attained at t = 0 (a tight lemma, not a loose one)
        assert worst[0] >= 0.5 * s[0]


def test_theory_params_and_accountants():
    p = poly_sfw_theory_params(10_000, 200, 1.0, 1e-6, 3.0, 1.0, 2.0, accountant="advanced", step_constant=1.0)
    assert p.T == 5000 and p.batch_size == 5000 and p.n_selections == 5001 and p.accountant == "advanced"
    default = poly_sfw_theory_params(10_000, 200, 1.0, 1e-6, 3.0, 1.0, 2.0)
    assert default.accountant == "best"  # the default
    # the default step constant is "auto": the bound-minimizing c at the run's eps0 (clipped below at 1/ln(n/ln|V|))
    c_auto = poly_sfw_auto_step_constant(10_000, 200, default.eps0, 3.0, 1.0, 2.0)
    assert default.step_constant == c_auto
    assert default.step_size == pytest.approx(c_auto * math.log(10_000 / math.log(200)) / 5000)
    assert p.step_size == pytest.approx(math.log(10_000 / math.log(200)) / 5000)  # c = 1: the theorem's step
    assert p.as_dict()["eps0"] == p.eps0
    # advanced: the exact DRV solver meets the target with equality (to rounding) and never exceeds it
    e_adv = advanced_composition_epsilon(p.eps0, k=5001, delta_prime=1e-6)
    assert e_adv <= 1.0 and e_adv == pytest.approx(1.0, rel=1e-9)
    q = poly_sfw_theory_params(10_000, 200, 1.0, 1e-6, 3.0, 1.0, 2.0, accountant="paper")
    assert q.eps0 == pytest.approx(1.0 / (2 * math.sqrt(2 * 5001 * math.log(1e6))))
    assert q.eps0 < p.eps0
    k = poly_sfw_theory_params(10_000, 200, 1.0, 1e-6, 3.0, 1.0, 2.0, accountant="kov")
    assert k.eps0 > p.eps0
    b = poly_sfw_theory_params(10_000, 200, 1.0, 1e-6, 3.0, 1.0, 2.0, accountant="best")
    assert b.eps0 >= k.eps0 * (1 - 1e-12)  # the tightest valid accountant: the largest per-step budget
    z = poly_sfw_theory_params(100, 10, 2.0, 0.0, 3.0, 1.0, 2.0)
    assert z.eps0 == pytest.approx(2.0 / 51) and z.accountant == "basic"
    big = poly_sfw_theory_params(20, 200, 1.0, 1e-6, 3.0, 1.0, 2.0, step_constant=50.0)
    assert big.step_size == 1.0  # capped


@pytest.mark.parametrize("eps", [0.1, 1.0, 8.0])
@pytest.mark.parametrize("delta", [1e-8, 1e-5, 0.0])
@pytest.mark.parametrize("n", [2, 51, 400])
@pytest.mark.parametrize("accountant", ["advanced", "kov", "best"])
def test_ledger_certifies_target(eps, delta, n, accountant):
    pr = hard_least_squares(1.0, 5, set_kind="simplex")
    data = pr.sample(n, np.random.default_rng(n))
    res = run_poly_sfw(pr, data, epsilon=eps, delta=delta, rng=np.random.default_rng(1), accountant=accountant,
                       step_size=0.5 if n == 2 else None)
    led = res.ledger
    assert led.total_count == n // 2 + 1
    assert res.certified_epsilon(delta) <= eps
    assert res.certified_epsilon(delta, accountant=res.params["accountant"]) <= eps
    if accountant == "advanced" and delta > 0:
        assert led.epsilon(delta, method="advanced") == pytest.approx(eps, rel=1e-9)
        assert led.epsilon(delta, method="advanced") <= eps


def test_paper_rule_certified_and_rejected_when_invalid():
    pr = hard_least_squares(1.0, 5, set_kind="simplex")
    data = pr.sample(200, np.random.default_rng(0))
    res = run_poly_sfw(pr, data, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0), accountant="paper")
    assert res.certified_epsilon(1e-5, accountant="advanced") <= 1.0
    with pytest.raises(ValueError, match="delta"):
        run_poly_sfw(pr, data, epsilon=1.0, delta=0.0, rng=np.random.default_rng(0), accountant="paper")
    with pytest.raises(ValueError, match="paper"):  # eps far beyond 4 ln(1/delta): the rule fails
        run_poly_sfw(pr, data, epsilon=500.0, delta=0.1, rng=np.random.default_rng(0), accountant="paper")


def test_reference_loop_is_bit_identical_on_a_polytope():
    rng = np.random.default_rng(4)
    V = rng.standard_normal((7, 3))
    V /= np.abs(V).sum(axis=1, keepdims=True)
    poly = _ls_polytope(V)
    data = poly.sample(300, rng)
    a = run_poly_sfw(poly, data, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(1), trace=True)
    b = run_poly_sfw_reference(poly, data, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(1), trace=True)
    assert np.array_equal(a.x, b.x) and np.array_equal(a.trace["selected"], b.trace["selected"])


# ---------------------------------------------------------------------------------------------------------
# canary audits
# ---------------------------------------------------------------------------------------------------------
def _first_selection(pr, eps):
    def run(data, rng):
        res = run_poly_sfw(pr, data, epsilon=eps, delta=0.0, rng=rng, step_size=0.5, trace=True)
        return int(res.trace["selected"][0])

    return run


@pytest.mark.statistical
def test_canary_audit_honest_and_half_noise_caught():
    # Worst-case pair, d = 10 vertices so report-noisy-min is nearly tight (true log-ratio of the audited
    # event: 0.95 honest, 1.85 with half the noise, by Monte Carlo); delta = 0
    # gives eps0 = eps / 2 per selection (two selections). Audit the first selection (a post-processing of
    # the run) against (i) the run's certified eps and (ii) the ledger's per-step claim eps0.
    # False alarm: alpha = 1e-3 per audit (Clopper-Pearson, exact).
    # n = 2 (batch = the canary alone): the score half-range moves by 2c of the bound s_0 = L0 D / m = 2 (1 + c),
    # a realized fraction c/(1 + c) of the worst case.
    eps, c, n_runs = 2.0, 19.0, 2000
    pr, S, Sp = simplex_canary_pair(10, c, n=2)
    res = run_poly_sfw(pr, S, epsilon=eps, delta=0.0, rng=np.random.default_rng(0), step_size=0.5)
    eps0 = res.params["eps0"]
    assert eps0 == pytest.approx(1.0)
    certified = res.ledger.epsilon(0.0)
    assert certified <= eps

    def stat(v):
        return float(v == 0)

    honest, _ = audit_honest_and_broken(_first_selection(pr, eps), S, Sp, stat, n_runs, broken_factor=0.5,
                                        claimed_epsilon=eps0, delta=0.0, seeds=(11, 12), threshold=0.5)
    assert honest.epsilon_lower_bound <= eps0 <= certified
    assert honest.epsilon_lower_bound > 0.3  # the pair is informative: the audit sees a real privacy loss


# ---------------------------------------------------------------------------------------------------------
# utility, structure, determinism
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["simplex", "l1ball"])
def test_utility_converges_to_exact_optimum(kind):
    # Large eps (weak privacy noise): the run must approach the planted optimum e_1 (closed-form F*).
    pr = hard_least_squares(1.0, 20, set_kind=kind)
    gaps = []
    for n in (400, 20_000):
        data = pr.sample(n, np.random.default_rng(n))
        res = run_poly_sfw(pr, data, epsilon=2000.0, delta=1e-6, rng=np.random.default_rng(3))
        gaps.append(pr.excess_risk(res.x))
        assert pr.feasible_set.contains(res.x)
    start = pr.excess_risk(pr.feasible_set.center())
    assert gaps[1] < 0.01 * start
    assert gaps[1] < gaps[0]


def test_polytope_path_matches_l1_ball():
    # The generic Polytope vertex path and the O(d) l1-ball path are the same algorithm: with the vertices
    # listed in the same order, the same seed gives the same output.
    d = 4
    ball = hard_least_squares(1.0, d, set_kind="l1ball")
    poly = _ls_polytope(L1Ball(d).vertices())
    data = ball.sample(300, np.random.default_rng(0))
    a = run_poly_sfw(ball, data, epsilon=5.0, delta=1e-5, rng=np.random.default_rng(9))
    b = run_poly_sfw(poly, data, epsilon=5.0, delta=1e-5, rng=np.random.default_rng(9))
    np.testing.assert_allclose(a.x, b.x, atol=1e-12)


def test_determinism_and_trace():
    pr = hard_least_squares(1.0, 30, set_kind="l1ball")
    data = pr.sample(500, np.random.default_rng(0))
    r1 = run_poly_sfw(pr, data, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(42), trace=True)
    r2 = run_poly_sfw(pr, data, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(42), trace=True)
    r3 = run_poly_sfw(pr, data, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(43))
    assert np.array_equal(r1.x, r2.x) and not np.array_equal(r1.x, r3.x)
    assert np.array_equal(r1.trace["selected"], r2.trace["selected"])
    assert r1.trace["selected"].shape == (251,)
    assert r1.trace["x"].shape[1] == 30
    np.testing.assert_allclose(r1.trace["laplace_scale"], 2 * r1.trace["sensitivity"] / r1.params["eps0"])
    assert r1.info["gradient_evaluations"] == 250 + 2 * 250


# ---------------------------------------------------------------------------------------------------------
# invalid input
# ---------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small():
    pr = hard_least_squares(1.0, 5, set_kind="simplex")
    return pr, pr.sample(50, np.random.default_rng(0))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": math.inf}, "epsilon"),
        ({"delta": 1.0}, "delta"),
        ({"delta": -0.1}, "delta"),
        ({"step_size": 0.0}, "step_size"),
        ({"step_size": 1.5}, "step_size"),
        ({"step_constant": 0.0}, "step_constant"),
        ({"step_constant": "fast"}, "step_constant"),
        ({"accountant": "closed_form"}, "accountant"),
        ({"accountant": "gdp"}, "gdp"),
        ({"rng": 3}, "rng"),
    ],
)
def test_invalid_hyperparameters(small, kwargs, match):
    pr, data = small
    args = {"epsilon": 1.0, "delta": 1e-5, "rng": np.random.default_rng(0)} | kwargs
    with pytest.raises(ValueError, match=match):
        run_poly_sfw(pr, data, **args)


def test_invalid_data(small):
    pr, data = small
    X = np.array(data.X)
    X[3, 0] = 1.5  # ||a||_inf > 1: violates the declared L0
    with pytest.raises(ValueError, match="bounds"):
        run_poly_sfw(pr, Dataset(X, data.y), epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="n >= 2"):
        run_poly_sfw(pr, data[:1], epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="problem"):
        run_poly_sfw("ls", data, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0))


def test_non_polytope_rejected():
    pr = hard_least_squares(1.5, 5)  # l_1.5 ball: infinitely many extreme points
    data = pr.sample(10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="extreme points|polytope"):
        run_poly_sfw(pr, data, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0))


def test_simplex_set_type():
    assert isinstance(hard_least_squares(1.0, 5).feasible_set, Simplex)


# ---------------------------------------------------------------------------------------------------------
# the report-noisy-min noise (standard_laplace)
# ---------------------------------------------------------------------------------------------------------
def test_standard_laplace_blocks_equal_rows_and_stay_bounded():
    # elementwise on the generator's words: a block of rows drawn at once equals the rows drawn one by one, bit
    # for bit (what lets the fast loop draw a block of steps and the reference one step at a time)
    block = standard_laplace(np.random.default_rng(3), (6, 11))
    rng = np.random.default_rng(3)
    rows = np.stack([standard_laplace(rng, 11) for _ in range(6)])
    assert block.shape == (6, 11) and block.dtype == np.float64
    assert block.tobytes() == rows.tobytes()
    # one 64-bit word per draw, as Generator.random: both generators end in the same state
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    standard_laplace(a, 17)
    b.random(17)
    assert a.bit_generator.state == b.bit_generator.state
    z = standard_laplace(np.random.default_rng(0), 200_000)
    assert np.isfinite(z).all() and np.abs(z).max() <= 52 * math.log(2) + 1e-12


@pytest.mark.statistical
def test_standard_laplace_law():
    # Kolmogorov-Smirnov against Lap(1) and the sign balance; false alarm 1e-3 per check
    z = standard_laplace(np.random.default_rng(2026), 400_000)
    assert stats.kstest(z, stats.laplace.cdf).pvalue > 1e-3
    assert stats.binomtest(int((z > 0).sum()), z.size, 0.5).pvalue > 1e-3
    # the far tail (|Z| > 8: probability e^-8 = 3.4e-4) has its exact rate
    assert stats.binomtest(int((np.abs(z) > 8).sum()), z.size, math.exp(-8)).pvalue > 1e-3


def test_auto_step_constant_closed_form_and_limit():
    """c* = ln(l L0 D / A)/l with A = (l/T)(L1 D^2/2 + 4 D (L1 D + L0) ln|V|/eps0), clipped to [1/l, 1]; the
    resolved constant is what the run uses, and c* grows towards 1/2 with n (never above it for a privacy term)."""
    from dpsco_lib.algorithms.poly_sfw import poly_sfw_auto_step_constant

    n, nv, eps0, L0, L1, D = 10_000_000, 200, 1.6e-4, 3.0, 1.0, 2.0
    ell, T = math.log(n / math.log(nv)), n // 2
    A = (ell / T) * (L1 * D * D / 2 + 4 * D * (L1 * D + L0) * math.log(nv) / eps0)
    assert poly_sfw_auto_step_constant(n, nv, eps0, L0, L1, D) == pytest.approx(math.log(ell * L0 * D / A) / ell)
    assert poly_sfw_auto_step_constant(1000, nv, 1e-9, L0, L1, D) == pytest.approx(1 / math.log(1000 / math.log(nv)))
    assert poly_sfw_auto_step_constant(10**9, nv, 10.0, L0, 0.0, D) == 1.0  # a huge eps0: clipped at 1
    p = poly_sfw_theory_params(n, nv, 2.0, 1e-8, L0, L1, D, step_constant="auto")
    assert p.step_constant == pytest.approx(poly_sfw_auto_step_constant(n, nv, p.eps0, L0, L1, D))
    assert p.step_size == pytest.approx(p.step_constant * ell / T) and 0.15 < p.step_constant < 0.3
    cs = [poly_sfw_theory_params(int(m), nv, 1.0, 1 / m, L0, L1, D, step_constant="auto").step_constant
          for m in (1e5, 1e7, 1e9, 1e11)]
    assert all(a < b for a, b in zip(cs[:-1], cs[1:], strict=True)) and cs[-1] < 0.5
    assert math.isnan(poly_sfw_theory_params(n, nv, 2.0, 1e-8, L0, L1, D, step_constant="auto",
                                             step_size=0.01).step_constant)
    with pytest.raises(ValueError, match="eps0"):
        poly_sfw_auto_step_constant(n, nv, 0.0, L0, L1, D)


KW = {"epsilon": 1.0, "delta": 1e-6, "trace": True}


def _polytope_problem(d: int) -> LeastSquares:
    """hard l1 least squares moments over an explicit Polytope (the generic vertex path of the loop)."""
    base = hard_least_squares(1.0, d, set_kind="l1ball")
    V = np.random.default_rng(3).standard_normal((9, d))
    return LeastSquares(Polytope(V), 1.0, feature_bound=1.0, label_bound=base.B_b, sigma_diag=base.sigma_diag,
                        sigma_factor=None, mu=base.mu, s2=base.s2, sampler=base.sampler)


def _same(a, b) -> None:
    assert a.x.tobytes() == b.x.tobytes()
    for key in ("selected", "x", "t", "laplace_scale", "sensitivity"):
        assert a.trace[key].tobytes() == b.trace[key].tobytes(), key
    assert a.params == b.params
    assert a.ledger.epsilon(1e-6) == b.ledger.epsilon(1e-6)


@pytest.mark.parametrize("set_kind", ["l1ball", "simplex", "polytope"])
@pytest.mark.parametrize("chunk_rows", [5, None])  # 5: the initial-gradient chunks cross the stream's blocks
def test_stream_equals_in_memory_and_reference_bit_for_bit(set_kind, chunk_rows, monkeypatch):
    d, n = 7, 403  # m = 202 records for nabla_0, T = 201 updates
    if chunk_rows is not None:
        monkeypatch.setattr(poly_sfw_mod, "_GRAD_CHUNK_ENTRIES", chunk_rows * d)
    pr = _polytope_problem(d) if set_kind == "polytope" else hard_least_squares(1.0, d, set_kind=set_kind)
    data = pr.sample(n, np.random.default_rng(5))
    mem = run_poly_sfw(pr, data, rng=np.random.default_rng(9), **KW)
    ref = run_poly_sfw_reference(pr, data, rng=np.random.default_rng(9), **KW)
    _same(mem, ref)
    for block_size in (1, 3, 64, 202, 203, 401, 403, 10_000):  # 64, 401 do not divide n; 202 = m, 203 = m + 1
        stream = pr.stream(n, np.random.default_rng(5), block_size)
        assert stream.bounded_memory
        _same(run_poly_sfw(pr, stream, rng=np.random.default_rng(9), **KW), mem)
    # a stream over an in-memory dataset (row views) too
    _same(run_poly_sfw(pr, DataStream.from_dataset(data, 17), rng=np.random.default_rng(9), **KW), mem)


@pytest.mark.parametrize("block_size", [1, 4, 6, 11, 50])
def test_initial_gradient_and_update_records_do_not_depend_on_the_blocks(block_size, monkeypatch):
    # stronger than equal outputs (which depend on the gradients only through the noisy argmins): nabla_0 has the
    # same bits, and the update segments concatenate to data[m:]
    d, n, m = 3, 61, 31
    monkeypatch.setattr(poly_sfw_mod, "_GRAD_CHUNK_ENTRIES", 4 * d)
    pr = hard_least_squares(1.0, d, set_kind="l1ball")
    data = pr.sample(n, np.random.default_rng(1))
    x0 = np.full(d, 0.1)  # not the centre: the residuals <a, x0> - b are not just -b
    g_mem, seg_mem = poly_sfw_mod._records(pr, data, x0, m)
    g_str, seg_str = poly_sfw_mod._records(pr, pr.stream(n, np.random.default_rng(1), block_size), x0, m)
    assert g_str.tobytes() == g_mem.tobytes()
    np.testing.assert_allclose(g_mem, pr.mean_grad(x0, data[:m]), rtol=1e-13, atol=1e-15)
    rest = list(seg_str)
    k = m % block_size  # the first segment is the tail of the block holding record m - 1 (or the next block)
    assert rest[0].n == min(block_size - k if k else block_size, n - m)
    assert np.concatenate([s.X for s in rest]).tobytes() == next(seg_mem).X.tobytes() == data[m:].X.tobytes()
    assert np.concatenate([s.y for s in rest]).tobytes() == data[m:].y.tobytes()


def test_stream_run_holds_far_less_than_the_data():
    # n = 1e5 records of d = 100: the matrix alone is 76 MB. The streamed run holds a block (1.6 MB), buffers of
    # 2^18 float64 (the sampler's raw draws, a gradient chunk, a noise block: ~10 MB in all) and a few
    # length-(T + 1) arrays of per-step scalars (0.4 MB each); measured: ~12 MB
    n, d, block = 100_000, 100, 2_000
    pr = hard_least_squares(1.0, d, set_kind="l1ball")
    stream = pr.stream(n, np.random.default_rng(0), block)
    tracemalloc.start()
    try:
        res = run_poly_sfw(pr, stream, epsilon=2.0, delta=1e-8, rng=np.random.default_rng(1))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 0.25 * n * d * 8, f"peak {peak / 2**20:.1f} MB"
    assert res.x.shape == (d,) and res.certified_epsilon(1e-8) <= 2.0


def test_stream_of_the_wrong_dimension_is_refused_before_reading():
    pr = hard_least_squares(1.0, 5, set_kind="l1ball")
    other = hard_least_squares(1.0, 6, set_kind="l1ball").stream(100, np.random.default_rng(0), 10)
    with pytest.raises(ValueError, match="d = 5"):
        run_poly_sfw(pr, other, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(1))


@pytest.mark.parametrize("where", [3, 60, 99])  # a record of nabla_0's batch, the first block of updates, the last
def test_every_block_is_checked_against_the_declared_bounds(where):
    pr = hard_least_squares(1.0, 5, set_kind="l1ball")
    data = pr.sample(100, np.random.default_rng(0))
    bad = data.replace_one(where, (np.full(5, 10.0), 0.0))  # ||a||_inf = 10 > B_a
    lo = where // 8 * 8
    with pytest.raises(ValueError, match=rf"block of records \[{lo}, {min(lo + 8, 100)}\).*violates the declared"):
        run_poly_sfw(pr, DataStream.from_dataset(bad, 8), epsilon=1.0, delta=1e-6, rng=np.random.default_rng(1))
    unlabelled = DataStream.from_dataset(Dataset(data.X), 8)
    with pytest.raises(ValueError, match="labels"):
        run_poly_sfw(pr, unlabelled, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(1))


def test_stream_too_short_and_reference_refuses_streams():
    pr = hard_least_squares(1.0, 5, set_kind="l1ball")
    with pytest.raises(ValueError, match="n >= 2"):
        run_poly_sfw(pr, pr.stream(1, np.random.default_rng(0), 4), epsilon=1.0, delta=1e-6,
                     rng=np.random.default_rng(1))
    with pytest.raises(ValueError, match="Dataset for the reference"):
        run_poly_sfw_reference(pr, pr.stream(10, np.random.default_rng(0), 4), epsilon=1.0, delta=1e-6,
                               rng=np.random.default_rng(1))


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


@pytest.mark.parametrize("set_kind", ["simplex", "l1ball"])
def test_run_poly_sfw_matches_reference_loop(set_kind):
    rng = np.random.default_rng(5)
    d = 40
    fset = Simplex(d) if set_kind == "simplex" else L1Ball(d, 2.0)
    prob = random_least_squares(fset, 1.0, rng, k=4)
    data = prob.sample(1201, rng)
    res = run_poly_sfw(prob, data, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(9), trace=True)
    ref = run_poly_sfw_reference(prob, data, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(9), trace=True)
    assert np.array_equal(res.trace["selected"], ref.trace["selected"])
    assert _same_bits(res.x, ref.x)
    assert _same_bits(res.trace["x"], ref.trace["x"])


# ---------------------------------------------------------------------------------------------------------------
# Variance-reduced recursions (mutants alg-polysfw-vr-correction, alg-gg-naive-correction)
# ---------------------------------------------------------------------------------------------------------------
def test_poly_sfw_fast_loop_matches_the_reference_when_the_scores_decide():
    """The fast Poly-SFW loop reproduces the textbook loop bit for bit also with negligible noise, where every
    selection is decided by the variance-reduced estimate (at the theory noise the selections are noise-dominated
    and a wrong estimate can go unseen)."""
    rng = np.random.default_rng(5)
    for fset in (Simplex(20), L1Ball(20, 2.0)):
        prob = random_least_squares(fset, 1.0, rng, k=4)
        data = prob.sample(401, rng)
        kw = dict(epsilon=1.0, delta=1e-6, trace=True)
        with noise_scaled(1e-12):
            res = run_poly_sfw(prob, data, rng=np.random.default_rng(9), **kw)
            ref = run_poly_sfw_reference(prob, data, rng=np.random.default_rng(9), **kw)
        assert np.array_equal(res.trace["selected"], ref.trace["selected"])
        assert np.array_equal(res.x, ref.x)
