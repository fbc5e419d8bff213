"""GG-VR-SFW for 1 < p <= 2 (Spec F3; BGN21): sensitivities, calibration, ledger, audits, utility, inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpsco_lib.algorithms.gg_vr_sfw as gg
from dpsco_lib.algorithms import gg_vr_sfw
from dpsco_lib.algorithms.gg_vr_sfw import (
    _lp_ball_lmo_fast,
    gg_noise_multiplier,
    gg_vr_sfw_theory_params,
    run_gg_vr_sfw,
)
from dpsco_lib.algorithms.poly_sfw import poly_sfw_sensitivities
from dpsco_lib.algorithms.registry import get_algorithm
from dpsco_lib.algorithms.vr_sensitivity import vr_sensitivities
from dpsco_lib.geometry.norms import regularity_constant
from dpsco_lib.geometry.sets import LpBall
from dpsco_lib.privacy.audit import canary_audit, mu_gdp_lower_bound_from_counts
from dpsco_lib.privacy.mechanisms import (
    gg_epsilon,
    gg_sigma_exact,
)
from dpsco_lib.problems import Dataset, random_least_squares
from dpsco_lib.problems.least_squares import LeastSquares, hard_least_squares
from dpsco_lib.testing import noise_scaled


# ---------------------------------------------------------------------------------------------------------
# building blocks
# ---------------------------------------------------------------------------------------------------------
def naive_sensitivities(T, m, b, eta, L0, L1, D):
    return vr_sensitivities(T + 1, init_batch=m, batch_size=b, step_size=eta, L0=L0, L1=L1, D=D, norm="dual")


def test_naive_sensitivities_closed_form_and_poly_sfw_consistency():
    s = naive_sensitivities(3, 5, 4, 0.2, 2.0, 1.0, 2.0)
    first = 2 * 2.0 / 5 * 0.8 ** np.arange(4)
    floor = 2 * 0.2 * (0.8 * 1.0 * 2.0 + 2.0) / 4
    np.testing.assert_allclose(s, [first[0], max(first[1], floor), max(first[2], floor), max(first[3], floor)])
    # batch size 1: the dual-norm sensitivity is 2/D times Poly-SFW's score sensitivity (shift factor D/2)
    D = 2.0
    np.testing.assert_allclose(naive_sensitivities(50, 7, 1, 0.1, 3.0, 1.0, D), 2 / D * poly_sfw_sensitivities(
        50, batch_size=7, step_size=0.1, L0=3.0, L1=1.0, D=D))


@pytest.mark.parametrize("p", [1.1, 1.5, 2.0])
def test_fast_lmo_matches_lp_ball_lmo(p):
    rng = np.random.default_rng(0)
    ball = LpBall(40, p, radius=0.7)
    q = p / (p - 1)
    for g in list(rng.standard_normal((20, 40))) + [np.zeros(40), 1e-200 * rng.standard_normal(40)]:
        np.testing.assert_allclose(_lp_ball_lmo_fast(g, q, 0.7), ball.lmo(g), rtol=1e-12, atol=1e-15)


def test_theory_params_calibration():
    n, d, eps, delta = 10_000, 100, 1.0, 1e-6
    assert gg_vr_sfw_theory_params(n, d, 1.5, eps, delta, 3.0, 1.0, 2.0).accountant == "best"  # the default
    pn = gg_vr_sfw_theory_params(n, d, 1.5, eps, delta, 3.0, 1.0, 2.0, variant="naive", accountant="paper")
    assert pn.q == pytest.approx(3.0) and pn.r == pytest.approx(3.0) and pn.kappa == pytest.approx(2.0)
    assert pn.init_batch == 5000 and pn.batch_size == math.ceil(math.sqrt(5000)) and pn.T == 5000 // 71
    assert pn.accountant == "paper" and pn.as_dict()["noise_multiplier"] == pn.noise_multiplier
    K = pn.T + 1
    # K GG steps with multiplier m have the RDP of one with m/sqrt(K): the standard conversion gives exactly eps
    assert gg_epsilon(pn.noise_multiplier / math.sqrt(K), sensitivity=1.0, delta=delta, kappa=2.0) <= eps
    eps_k = gg_epsilon(pn.noise_multiplier / math.sqrt(K), sensitivity=1.0, delta=delta, kappa=2.0)
    assert eps_k == pytest.approx(eps, rel=1e-9)
    pt = gg_vr_sfw_theory_params(n, d, 1.5, eps, delta, 3.0, 1.0, 2.0, variant="tree", accountant="paper")
    assert pt.noise_multiplier == gg_sigma_exact(1.0, epsilon=eps, delta=delta, kappa=2.0)
    assert 2 ** pt.depth <= pt.batch_size and pt.records_used <= n
    # kappa = min(q - 1, ~ln d regime) via the library's smooth norm
    p11 = gg_vr_sfw_theory_params(n, 50, 1.05, eps, delta, 3.0, 1.0, 2.0)
    assert p11.kappa == pytest.approx(regularity_constant(21.0, 50)) and p11.r < 21.0


@pytest.mark.parametrize("variant", ["naive", "tree"])
def test_rdp_accountant_is_tighter_and_certifies(variant):
    pr = hard_least_squares(1.5, 20)
    data = pr.sample(3000, np.random.default_rng(0))
    runs = {a: run_gg_vr_sfw(pr, data, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(1), variant=variant,
                             accountant=a) for a in ("paper", "rdp", "best")}
    assert runs["best"].params["noise_multiplier"] == runs["rdp"].params["noise_multiplier"]
    assert runs["rdp"].params["noise_multiplier"] < runs["paper"].params["noise_multiplier"]
    for a, r in runs.items():
        assert r.certified_epsilon(1e-6) <= 1.0, a
    assert runs["rdp"].certified_epsilon(1e-6, accountant="rdp") == pytest.approx(1.0, rel=1e-9)
    assert gg_noise_multiplier(1.0, 1e-6, kappa=2.0, count=5) == gg_noise_multiplier(1.0, 1e-6, kappa=2.0, count=5)
    with pytest.raises(ValueError, match="accountant"):
        gg_noise_multiplier(1.0, 1e-6, kappa=2.0, accountant="advanced")


# ---------------------------------------------------------------------------------------------------------
# privacy
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", ["naive", "tree"])
@pytest.mark.parametrize("eps", [0.1, 1.0, 8.0])
@pytest.mark.parametrize("delta", [1e-9, 1e-5])
@pytest.mark.parametrize("n", [4, 100, 3000])
def test_ledger_certifies_target(variant, eps, delta, n):
    pr = hard_least_squares(1.5, 8)
    data = pr.sample(n, np.random.default_rng(n))
    res = run_gg_vr_sfw(pr, data, epsilon=eps, delta=delta, rng=np.random.default_rng(1), variant=variant)
    cert = res.ledger.epsilon(delta)
    assert cert <= eps
    assert cert >= 0.5 * eps  # the CKS20 conversion is tighter than the calibration's, but not by much
    kinds = {e.kind for e in res.ledger.events}
    assert kinds == ({"gg"} if variant == "naive" else {"parallel"})


def _canary_pair(d: int, c: float):
    """p = 2 (q = r = 2, kappa = 1: the GG noise is exactly Gaussian), tree of depth 1 over n = 4 (root batch 3).

    Canary record 0 of the root batch: z = (a, c), z' = (-a, c) with ||a||_2 = 1. At x_0 = 0 the root term changes
    by (-c a - c a)/3, of 2-norm 2c/3 = c/(1 + c) of the bound Delta_root = 2 L0 / b = 2(1 + c)/3.
    """
    pr = hard_least_squares(2.0, d, c=c)
    a = np.zeros(d)
    a[0] = 1.0
    X = np.stack([a, np.zeros(d), np.zeros(d), np.zeros(d)])
    S = Dataset(X, np.array([c, 0.0, 0.0, 0.0]))
    Sp = S.replace_one(0, (-a, c))
    return pr, S, Sp


def _leaf0_projection(pr, eps, delta, mult):
    def run(data, rng):
        with noise_scaled(mult):
            res = run_gg_vr_sfw(pr, data, epsilon=eps, delta=delta, rng=rng, variant="tree", depth=1, trace=True)
        return float(res.trace["estimate"][0][0])  # leaf 0's noisy estimate along the canary direction

    return run


@pytest.mark.statistical
def test_canary_audit_honest_and_half_noise_caught():
    # The root's release is a Gaussian mechanism with mu = (realized shift)/sigma <= 1/mult (mult = sigma/Delta):
    # the run is mu-GDP for the canary with mu_claim = 1/mult (post-processing), and (eps, delta)-DP by the
    # ledger. Audits at fixed seeds, alpha = 1e-3 each (exact Clopper-Pearson): the honest run's
    # eps-lower bound stays below the certificate and its mu-lower bound below mu_claim; the half-noise
    # variant (true mu = 2 * 0.95 / mult) is caught by the mu-GDP audit.
    eps, delta, c, n_runs = 4.0, 1e-5, 19.0, 1500
    pr, S, Sp = _canary_pair(4, c)
    res = run_gg_vr_sfw(pr, S, epsilon=eps, delta=delta, rng=np.random.default_rng(0), variant="tree", depth=1)
    assert res.params["batch_size"] == 3 and res.params["kappa"] == 1.0
    certified = res.certified_epsilon(delta)
    assert certified <= eps
    mu_claim = 1.0 / res.params["noise_multiplier"]
    shift = 2 * c / 3  # leaf-0 estimate mean: -c/3 (S) vs +c/3 (S')
    honest = canary_audit(_leaf0_projection(pr, eps, delta, 1.0), S, Sp, lambda v: v, n_runs, 1e-3,
                          np.random.default_rng(21), claimed_epsilon=certified, delta=delta)
    assert honest.epsilon_lower_bound <= certified and not honest.violation

    def gdp_audit(mult, seed):
        rng = np.random.default_rng(seed)
        run = _leaf0_projection(pr, eps, delta, mult)
        ts = np.array([run(S, rng) for _ in range(n_runs)])
        tp = np.array([run(Sp, rng) for _ in range(n_runs)])
        # mid-point threshold (fixed in advance from the known means): the optimal test for a Gaussian shift
        return mu_gdp_lower_bound_from_counts(int(np.sum(tp > 0)), int(np.sum(ts > 0)), n_runs, n_runs, 1e-3,
                                              threshold=0.0, claimed_mu=mu_claim)

    h = gdp_audit(1.0, 22)
    assert not h.violation and h.mu_lower_bound > 0.3 * mu_claim  # informative, below the claim
    assert h.mu_lower_bound <= shift / (2 * (1 + c) / 3) * mu_claim + 0.25  # near the truth 0.95 mu_claim
    b = gdp_audit(0.5, 23)
    assert b.violation, f"half-noise variant not caught: mu lower bound {b.mu_lower_bound:.3f} <= {mu_claim:.3f}"


# ---------------------------------------------------------------------------------------------------------
# utility, determinism
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", ["naive", "tree"])
@pytest.mark.parametrize("p", [1.5, 2.0])
def test_utility_converges_to_exact_optimum(variant, p):
    # planted optimum e_1 with closed-form F*; eps = 2, d = 10: excess drops from ~start to a small fraction
    pr = hard_least_squares(p, 10)
    start = pr.excess_risk(np.zeros(10))
    gaps = []
    for n in (300, 30_000):
        data = pr.sample(n, np.random.default_rng(n))
        res = run_gg_vr_sfw(pr, data, epsilon=2.0, delta=1e-6, rng=np.random.default_rng(5), variant=variant)
        assert pr.feasible_set.contains(res.x)
        gaps.append(pr.excess_risk(res.x))
    assert gaps[1] < gaps[0]
    assert gaps[1] < (0.3 if variant == "naive" else 0.02) * start


def test_a_priori_calibration_scales_exactly():
    # with the a-priori distances the noise scales do not depend on the data: the private term is the same
    # deterministic function of the noise draws, so doubling n at fixed depth halves every GG scale exactly
    pr = hard_least_squares(1.5, 20)
    scales = []
    for n, b in ((3000, 640), (6000, 1280)):  # b a multiple of 2^6: every b_j = b/2^j exactly
        data = pr.sample(n, np.random.default_rng(n))
        r = run_gg_vr_sfw(pr, data, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(0), variant="tree", depth=6,
                          batch_size=b, distance="a_priori", trace=True)
        scales.append(r.trace["sensitivity"] * b)
        assert r.params["distance"] == "a_priori"
    np.testing.assert_allclose(scales[0], scales[1], rtol=1e-12)  # sensitivity * b is n-independent


def test_tree_beats_naive_private_error():
    pr = hard_least_squares(1.5, 200)
    data = pr.sample(20_000, np.random.default_rng(0))
    errs = {v: run_gg_vr_sfw(pr, data, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(1), variant=v
                             ).info["private_error"] for v in ("naive", "tree")}
    assert errs["tree"] < 0.2 * errs["naive"]


def test_determinism_and_trace():
    pr = hard_least_squares(1.5, 12)
    data = pr.sample(600, np.random.default_rng(0))
    for v in ("naive", "tree"):
        r1 = run_gg_vr_sfw(pr, data, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(4), variant=v, trace=True)
        r2 = run_gg_vr_sfw(pr, data, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(4), variant=v, trace=True)
        r3 = run_gg_vr_sfw(pr, data, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(5), variant=v)
        assert np.array_equal(r1.x, r2.x) and not np.array_equal(r1.x, r3.x)
        assert np.array_equal(r1.trace["estimate"], r2.trace["estimate"])
        steps = r1.params["T"] + (1 if v == "naive" else 0)
        assert r1.trace["estimate"].shape == (steps, 12)
        w_sum = r1.trace["step_size"].shape[0]
        assert w_sum == steps


# ---------------------------------------------------------------------------------------------------------
# invalid input
# ---------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small():
    pr = hard_least_squares(1.5, 5)
    return pr, pr.sample(60, np.random.default_rng(0))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": math.nan}, "epsilon"),
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"variant": "fast"}, "variant"),
        ({"step_size": 0.0}, "step_size"),
        ({"step_constant": -1.0}, "step_constant"),
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": 31}, "batch_size"),
        ({"depth": 2}, "depth"),
        ({"variant": "tree", "depth": 6}, "batch_size"),
        ({"rng": None}, "rng"),
        ({"variant": "tree", "distance": "worst"}, "distance"),
        ({"accountant": "kov"}, "accountant"),
        ({"accountant": "closed_form"}, "accountant"),
    ],
)
def test_invalid_hyperparameters(small, kwargs, match):
    pr, data = small
    args = {"epsilon": 1.0, "delta": 1e-5, "rng": np.random.default_rng(0)} | kwargs
    with pytest.raises(ValueError, match=match):
        run_gg_vr_sfw(pr, data, **args)


def test_invalid_problems_and_data(small):
    pr, data = small
    X = np.array(data.X)
    X[0] *= 3.0
    with pytest.raises(ValueError, match="bounds"):
        run_gg_vr_sfw(pr, Dataset(X, data.y), epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="n >= 4"):
        run_gg_vr_sfw(pr, data[:3], epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0))
    for bad in (hard_least_squares(1.0, 5), hard_least_squares(math.inf, 5)):
        with pytest.raises(ValueError, match="LpBall"):
            run_gg_vr_sfw(bad, bad.sample(20, np.random.default_rng(0)), epsilon=1.0, delta=1e-5,
                          rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="problem"):
        run_gg_vr_sfw(object(), data, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0))


EPS, DELTA, DEPTH, N_RUNS, ALPHA = 2.0, 1e-5, 2, 1500, 1e-3


def _problem() -> LeastSquares:
    """1-D least squares f(x; (a, y)) = (a x - y)^2/2 on [-1, 1] (p = q = 2: the GG noise is Gaussian, kappa = 1);
    |a| <= 1, |y| <= 1, so L0 = 2, L1 = 1."""
    return LeastSquares(LpBall(1, 2.0), 2.0, feature_bound=1.0, label_bound=1.0, sigma_diag=[1.0], sigma_factor=None,
                        mu=[1.0], s2=1.0, sampler=None)


def _leaf1_canary_pair() -> tuple[Dataset, Dataset]:
    """Tree of depth 2 over n = 8 (root batch b = 4: records 0-3; leaf 1 = right child at depth 2, b_2 = 1:
    record 4). Root records (1, 1) push x_1 = LMO(g_0) to +-1 (x_0 = 0). The canary, record 4, is (1, 0) in S and
    (0, 0) in S': leaf 1's term is a^2 (x_1 - x_0) = x_1 versus 0, half of Delta_1 = 2 L1 |x_1|/b_2 = 2 (the
    factor 2 of the bound cannot be realized by convex losses)."""
    X = np.array([[1.0]] * 4 + [[1.0]] + [[0.0]] * 3)
    y = np.array([1.0] * 4 + [0.0] * 4)
    S = Dataset(X, y)
    return S, S.replace_one(4, (np.array([0.0]), 0.0))


def _leaf1_statistic(pr: LeastSquares, data: Dataset, rng: np.random.Generator) -> tuple[float, float]:
    """(release of the depth-2 vertex along sign(x_1), its sensitivity): (g_1 - g_0) sign(x_1), where
    x_1 = -sign(g_0) is the first Frank-Wolfe vertex (radius 1)."""
    res = gg_vr_sfw.run_gg_vr_sfw(pr, data, epsilon=EPS, delta=DELTA, rng=rng, variant="tree", depth=DEPTH,
                                  trace=True)
    g = res.trace["estimate"][:, 0]
    x1 = -1.0 if g[0] >= 0 else 1.0
    return float((g[1] - g[0]) * x1), float(res.trace["sensitivity"][1])


def _root_batch_everywhere(original):
    """The broken schedule: every vertex's sensitivity divides by the root batch b (offsets unchanged)."""
    def schedule(n, *, depth, batch_size=None):
        out = dict(original(n, depth=depth, batch_size=batch_size))
        out["batch_sizes"] = np.full_like(out["batch_sizes"], out["batch_size"])
        return out
    return schedule


def _audit(seed: int) -> tuple[object, float, float]:
    pr = _problem()
    S, Sp = _leaf1_canary_pair()
    rng = np.random.default_rng(seed)
    ts, sens = zip(*(_leaf1_statistic(pr, S, rng) for _ in range(N_RUNS)), strict=True)
    tp = [_leaf1_statistic(pr, Sp, rng)[0] for _ in range(N_RUNS)]
    mult = gg_vr_sfw.gg_noise_multiplier(EPS, DELTA, kappa=1.0, count=1, parts=DEPTH + 1, accountant="best")
    mu_claim = 1.0 / mult  # each vertex's release is Gaussian with shift/sigma <= 1/mult: mu-GDP, post-processing
    # threshold fixed in advance at the mid-point of the two means (1 and 0): the optimal test for a Gaussian shift
    res = mu_gdp_lower_bound_from_counts(int(np.sum(np.array(ts) > 0.5)), int(np.sum(np.array(tp) > 0.5)),
                                         N_RUNS, N_RUNS, ALPHA, threshold=0.5, claimed_mu=mu_claim)
    return res, mu_claim, float(np.median(sens))


@pytest.mark.statistical
def test_depth2_vertex_audit_passes_correct_code_and_catches_root_batch_sensitivity(monkeypatch):
    """False-alarm probability <= ALPHA = 1e-3 for the correct code (the mu-GDP lower bound from exact
    Clopper-Pearson intervals holds with probability >= 1 - 1e-3; the true mu is mu_claim/2). The broken variant
    has true mu = 2 mu_claim (noise 4 times too small at depth 2) and, at this fixed seed, is caught (power at
    N_RUNS = 1500 per world: the expected lower bound is about 1.5 mu_claim)."""
    honest, mu_claim, sens = _audit(seed=61)
    assert sens == pytest.approx(2.0)  # Delta_1 = 2 L1 |x_1 - x_0| / b_2 = 2
    assert not honest.violation and honest.mu_lower_bound <= mu_claim
    monkeypatch.setattr(gg_vr_sfw, "tree_batch_schedule", _root_batch_everywhere(gg_vr_sfw.tree_batch_schedule))
    broken, mu_claim_b, sens_b = _audit(seed=62)
    assert mu_claim_b == mu_claim and sens_b == pytest.approx(0.5)  # the mutant: 2 L1 / b = 0.5
    assert broken.violation, f"broken tree not caught: mu lower bound {broken.mu_lower_bound:.3f} <= {mu_claim:.3f}"


# ---------------------------------------------------------------------------------------------------------
# references (the unfused expressions)
# ---------------------------------------------------------------------------------------------------------
def _ref_lq(x: np.ndarray, q: float) -> float:
    a = np.abs(x)
    m = a.max()
    if m == 0 or not np.isfinite(m):
        return float(m)
    return float(m * np.sum((a / m) ** q) ** (1.0 / q))


def _ref_lmo(g: np.ndarray, q: float, radius: float) -> np.ndarray:
    a = np.abs(g)
    m = a.max()
    sgn = np.where(g >= 0, 1.0, -1.0)
    if m == 0:
        out = np.zeros_like(g)
        out[0] = -radius
        return out
    w = (a / m) ** (q - 1.0)
    p = q / (q - 1.0)
    return -radius * sgn * w / (np.sum(w**p) ** (1.0 / p))


def _vectors(rng: np.random.Generator, d: int, count: int = 12) -> list[np.ndarray]:
    out = [rng.standard_normal(d) * 10.0 ** rng.uniform(-150, 150) for _ in range(count)]
    tie = np.full(d, 0.3)
    tie[::2] = -0.3
    sparse = np.zeros(d)
    sparse[rng.integers(d)] = -2.5
    signed_zero = rng.standard_normal(d)
    signed_zero[::3] = -0.0
    return out + [np.zeros(d), tie, sparse, signed_zero, rng.integers(-3, 4, size=d).astype(float)]


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bitwise equality of float arrays (NaN payloads aside: equal_nan)."""
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=True) and np.array_equal(np.signbit(a), np.signbit(b))


# ---------------------------------------------------------------------------------------------------------
# GG-VR-SFW helpers
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("q", [1.5, 2.0, 3.0, 4.7, 11.0])
@pytest.mark.parametrize("d", [1, 7, 64, 1001])
def test_lq_and_lmo_fast_paths_are_bit_identical(q, d):
    rng = np.random.default_rng(int(10 * q) + d)
    for v in _vectors(rng, d):
        ref = _ref_lq(v, q)
        assert gg._lq(v, q) == ref or (math.isnan(ref) and math.isnan(gg._lq(v, q)))
        w = v.copy()
        assert gg._lq(w, q, overwrite=True) == ref or math.isnan(ref)
        if q > 1.0 and np.all(np.isfinite(v)):
            before = v.copy()
            assert _same(gg._lp_ball_lmo_fast(v, q, 0.7), _ref_lmo(v, q, 0.7))
            assert _same(v, before)  # the input is not written


def test_lq_of_non_finite_vectors_matches_reference():
    for v in (np.array([1.0, np.inf, 2.0]), np.array([-np.inf, 0.0]), np.array([np.nan, 1.0])):
        ref, got = _ref_lq(v, 3.0), gg._lq(v, 3.0)
        assert got == ref or (math.isnan(ref) and math.isnan(got))


@pytest.mark.parametrize("q", [2.0, 3.0, 6.2])
def test_lq_rows_and_deferred_norms_match_per_row_reference(q):
    rng = np.random.default_rng(3)
    for d in (1, 5, 1000, 8193):
        Z = rng.standard_normal((23, d)) * 10.0 ** rng.uniform(-100, 100, size=(23, 1))
        Z[4] = 0.0
        Z[9, 0] = np.inf
        ref = np.array([_ref_lq(z, q) for z in Z])
        assert _same(gg._lq_rows(Z, q), ref)
        # handed-out rows stay valid across block flushes (the tree keeps references to them)
        norms = gg._DeferredLqNorms(len(Z), d, q, block=4)
        rows = []
        for z in Z:
            slot = norms.slot()
            slot[:] = z
            rows.append(slot)
        got = norms.result()
        assert _same(got, ref)
        assert all(np.array_equal(r, z) for r, z in zip(rows, Z, strict=True))


@pytest.mark.parametrize("distance", ["realized", "a_priori"])
@pytest.mark.parametrize("p", [1.5, 2.0])
def test_tree_run_reproduces_the_reference_loop_bit_for_bit(p, distance):
    for seed, (problem, n) in enumerate([(hard_least_squares(p, 30), 3000),
                                         (random_least_squares(LpBall(25, p), p, np.random.default_rng(9)), 2500)]):
        data = problem.sample(n, np.random.default_rng(seed))
        for variant in ("tree", "naive"):
            kw = {"epsilon": 1.0, "delta": 1e-6, "variant": variant, "distance": distance, "trace": True}
            res = gg.run_gg_vr_sfw(problem, data, rng=np.random.default_rng(seed), **kw)
            ref = gg.run_gg_vr_sfw_reference(problem, data, rng=np.random.default_rng(seed), **kw)
            assert _same(res.x, ref.x)
            assert _same(res.trace["noise_norm"], ref.trace["noise_norm"])
            assert _same(res.trace["estimate"], ref.trace["estimate"])
            assert res.info["private_error"] == ref.info["private_error"]


def test_gg_vr_sfw_naive_estimate_is_exact_when_all_records_agree():
    """With n copies of one record every mini-batch gradient is the full gradient, so the variance-reduced estimate
    nabla_t = (1 - eta)(nabla_{t-1} + g_t(x_t) - g_t(x_{t-1})) + eta g_t(x_t) equals grad F(x_t) at every step
    (induction); with negligible noise the released estimates must be the gradients at the iterates they drive."""
    rec = get_algorithm("F3 GG-VR-SFW naive")
    ex = rec.example(np.random.default_rng(0))
    prob, data = ex.args[0], ex.args[1]
    same = Dataset(np.repeat(np.asarray(data.X)[:1], data.n, axis=0), np.repeat(np.asarray(data.y)[:1], data.n))
    with noise_scaled(1e-12):
        res = rec.runner(prob, same, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(1), trace=True,
                         **ex.kwargs)
    est, eta = res.trace["estimate"], float(res.params["step_size"])
    x = np.zeros(prob.d)  # the naive loop starts from x_0 = 0
    for t in range(est.shape[0]):
        np.testing.assert_allclose(est[t], prob.mean_grad(x, same), rtol=1e-7, atol=1e-9)
        x = (1.0 - eta) * x + eta * prob.feasible_set.lmo(est[t])


# ---------------------------------------------------------------------------------------------------------------
# GG-VR-SFW naive: a fresh GG noise vector for every release (mutant alg-gg-naive-noise-reuse)
# ---------------------------------------------------------------------------------------------------------------
def test_gg_vr_sfw_naive_releases_carry_pairwise_distinct_noise():
    """Each of the T + 1 releases nabla_t + Z_t is a GG mechanism only if Z_t is a fresh draw: with n copies of one
    record nabla_t = grad F(x_t) exactly (test_gg_vr_sfw_naive_estimate_is_exact_when_all_records_agree), so
    Z_t / sigma_t = (release_t - grad F(x_t)) / (mult s_t) are the unit-scale noise vectors, i.i.d. from a
    continuous law, hence pairwise distinct with probability one. A draw reused by two releases would let their
    difference cancel the noise."""
    from dpsco_lib.algorithms.registry import get_algorithm

    rec = get_algorithm("F3 GG-VR-SFW naive")
    ex = rec.example(np.random.default_rng(0))
    prob, data = ex.args[0], ex.args[1]
    same = Dataset(np.repeat(np.asarray(data.X)[:1], data.n, axis=0), np.repeat(np.asarray(data.y)[:1], data.n))
    res = rec.runner(prob, same, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(1), trace=True, **ex.kwargs)
    est, eta = res.trace["estimate"], float(res.params["step_size"])
    sigmas = float(res.params["noise_multiplier"]) * np.asarray(res.trace["sensitivity"])
    x, units = np.zeros(prob.d), []
    for t in range(est.shape[0]):
        units.append((est[t] - prob.mean_grad(x, same)) / sigmas[t])
        x = (1.0 - eta) * x + eta * prob.feasible_set.lmo(est[t])
    U = np.asarray(units)
    assert U.shape[0] >= 3
    norms = np.linalg.norm(U, axis=1)
    gaps = np.linalg.norm(U[:, None, :] - U[None, :, :], axis=2) + np.eye(U.shape[0]) * norms.max()
    assert gaps.min() > 1e-6 * norms.max(), "two releases carry the same noise vector"
