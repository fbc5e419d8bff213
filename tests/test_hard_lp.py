"""The lower-bound construction of the l_p setup (results F3, L1; BGN21) and the experiments of notebook 06."""

from __future__ import annotations

import itertools
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from scipy.integrate import quad  # noqa: E402

from dpsco_lib.experiments import Verdict  # noqa: E402
from dpsco_lib.experiments import lp_checks as lp  # noqa: E402
from dpsco_lib.geometry.norms import lp_norm  # noqa: E402
from dpsco_lib.problems import FingerprintLinearLp, fingerprint_lower_bound, fingerprint_prior  # noqa: E402


@pytest.mark.parametrize("p", [1.25, 1.5, 2.0])
def test_construction_constants_and_exact_optimum(p):
    rng = np.random.default_rng(0)
    d = 12
    pr = FingerprintLinearLp(p, fingerprint_prior(d, rng), 0.3)
    q = p / (p - 1)
    data = pr.sample(500, rng)
    norms = lp_norm(pr.grad(np.zeros(d), data), q, axis=1)
    assert np.all(np.isclose(norms, 1.0) | (norms == 0)) and np.any(norms > 0)  # ||grad f||_q in {0, L0 = 1}
    assert pr.L0 == 1.0 and pr.L1 == 0.0 and pr.validate_data(data) is data
    x_star, f_star = pr.population_optimum()
    assert f_star == pytest.approx(-pr.scale * 0.3 * lp_norm(pr.means, q), rel=1e-12)
    assert pr.trivial_excess() == pytest.approx(-f_star) and pr.excess_risk(np.zeros(d)) == pytest.approx(-f_star)
    x_cvx, f_cvx = pr.cvxpy_optimum()
    assert f_cvx == pytest.approx(f_star, abs=1e-7) and np.allclose(x_cvx, x_star, atol=1e-4)
    for _ in range(20):
        x = pr.feasible_set.project(rng.standard_normal(d))
        assert pr.excess_risk(x) >= -1e-12
        assert pr.population_risk(x) == pytest.approx(-pr.scale * 0.3 * pr.means @ x)


def test_sampler_mean_is_the_padded_fingerprint_mean():
    rng = np.random.default_rng(1)
    m = np.array([0.9, -0.5, 0.0, 0.3])
    pr = FingerprintLinearLp(1.5, m, 0.4)
    X = pr.sample(200_000, rng).X
    assert set(np.unique(np.abs(X))) == {0.0, pr.scale}
    assert np.mean(np.any(X != 0, axis=1)) == pytest.approx(0.4, abs=0.01)  # informative share alpha
    # E z = s alpha m; 5 standard errors
    assert np.all(np.abs(X.mean(axis=0) - pr.scale * 0.4 * m) <= 5 * pr.scale / math.sqrt(200_000))
    # rows are informative together: the zero rows are exactly the non-informative ones
    pr2 = FingerprintLinearLp(2.0, np.array([1.0, 1.0]), 0.5)
    X2 = pr2.sample(100_000, rng).X
    assert np.all((X2[:, 0] == 0) == (X2[:, 1] == 0)) and np.all(X2[X2[:, 0] != 0] > 0)


def test_invalid_inputs():
    with pytest.raises(ValueError, match="means"):
        FingerprintLinearLp(1.5, [1.5, 0.0], 0.5)
    with pytest.raises(ValueError, match="alpha"):
        FingerprintLinearLp(1.5, [0.5, 0.0], 0.0)
    with pytest.raises(ValueError, match="p"):
        FingerprintLinearLp(1.0, [0.5, 0.0], 0.5)
    pr = FingerprintLinearLp(1.5, [0.5, 0.0], 0.5)
    from dpsco_lib.problems import Dataset

    with pytest.raises(ValueError, match="violates"):
        pr.validate_data(Dataset(np.array([[0.1, 0.2]])))
    with pytest.raises(ValueError, match="alpha"):
        fingerprint_lower_bound(100, 10, 1.5, 1.0, 1e-6, alpha=1.5)
    with pytest.raises(ValueError, match="p"):
        fingerprint_lower_bound(100, 10, 2.5, 1.0, 1e-6)


def test_lower_bound_closed_form():
    n, d, p, eps, delta = 4000, 100, 1.5, 1.0, 1e-4
    root = d ** (1 / 3)
    c = math.expm1(eps) + 4 * delta * root
    a_star = root / (2 * n * c)
    assert fingerprint_lower_bound(n, d, p, eps, delta) == pytest.approx(root / (8 * n * c))
    assert fingerprint_lower_bound(n, d, p, eps, delta, alpha=a_star) == pytest.approx(root / (8 * n * c))
    grid = np.geomspace(1e-6, 1, 200)
    assert max(fingerprint_lower_bound(n, d, p, eps, delta, alpha=a) for a in grid) <= root / (8 * n * c) * (1 + 1e-12)
    assert fingerprint_lower_bound(n, d, p, eps, delta, alpha=1.0) == 0.0
    assert fingerprint_lower_bound(2, 10**6, 2.0, 0.01, 0.0) == pytest.approx(0.5 * (1 - 2 * math.expm1(0.01) / 1e3))


@pytest.mark.parametrize("g", [lambda s, k: np.sign(s) if s else 0.5, lambda s, k: np.clip(2 * s / k, -1, 1),
                               lambda s, k: 0.3])
def test_fingerprinting_identity_exact(g):
    """E[g(X) sum_i (X_i - m)] = 2 E[m g(X)] for m ~ U[-1, 1] and X_i = +-1 with mean m (the key step of the
    lower bound), by exact enumeration over X and quadrature over m."""
    k = 3

    def cond(m, weight_m):
        tot = 0.0
        for xs in itertools.product((-1.0, 1.0), repeat=k):
            pr = np.prod([(1 + x * m) / 2 for x in xs])
            val = g(sum(xs), k)
            tot += pr * val * (sum(x - m for x in xs) if not weight_m else m)
        return tot

    lhs = quad(lambda m: cond(m, False), -1, 1)[0] / 2
    rhs = 2 * quad(lambda m: cond(m, True), -1, 1)[0] / 2
    assert lhs == pytest.approx(rhs, abs=1e-12)


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
    assert set(out) == {"excess", "trivial", "lower_bound", "certified_eps", "kappa"}
    assert out["certified_eps"] <= 1.0 + 1e-12 and 0 < out["excess"] <= 2 * out["trivial"] + 1e-12
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


def test_check_f3_rates_passes_the_rate_and_fails_another():
    expected = lp.private_rate_exponent([1000, 2000, 4000, 8000], 1.0, 1.0)  # kappa 2 (the default) is used
    v = Verdict("t")
    fit = lp.check_f3_rates(v, _synthetic(expected), variant="tree", epsilon=1.0, rng=np.random.default_rng(0),
                            n_boot=200)
    assert fit.slope == pytest.approx(expected) and all(c.passed for c in v.rows)
    v2 = Verdict("t")
    lp.check_f3_rates(v2, _synthetic(-0.5), variant="tree", epsilon=1.0, rng=np.random.default_rng(0), n_boot=200)
    assert not v2.rows[0].passed and all(c.passed for c in v2.rows[1:])
    xs, reps, worst = lp.worst_case_replicates(_synthetic(-1.0))
    assert xs == [1000.0, 2000.0, 4000.0, 8000.0] and worst == [0.5] * 4 and all(r.size == 5 for r in reps)


def _lb_records(scale):
    recs = []
    for p in (1.5, 2.0):
        for a in lp.alpha_family(6, tail=(12, 14, 16)):
            for r in range(4):
                lb = fingerprint_lower_bound(4000, 100, p, 1.0, 4000**-1.1, alpha=a)
                recs.append({"p": p, "alpha": a, "n": 4000, "d": 100, "epsilon": 1.0, "replicate": r,
                             "lower_bound": lb, "excess": scale * max(0.6 * a, 1e-12) * (p - 0.4)})
    return recs


def test_check_lower_bound_and_rows():
    v = Verdict("t")
    lp.check_lower_bound(v, _lb_records(1.0), rng=np.random.default_rng(0), n_boot=200)
    rows = lp.lower_bound_rows(_lb_records(1.0))
    assert [r["p"] for r in rows] == [1.5, 2.0] and all(r["cells"] >= 1 for r in rows)
    assert all(c.passed for c in v.rows), v.table_text()
    v2 = Verdict("t")  # an excess below the bound where it is nearly tight is caught
    lp.check_lower_bound(v2, _lb_records(0.5), rng=np.random.default_rng(0), n_boot=200)
    assert not v2.rows[1].passed


def test_plots_draw():
    fig, (a1, a2) = plt.subplots(1, 2)
    recs = _synthetic(-1.0)
    fit = lp.check_f3_rates(Verdict("t"), recs, variant="tree", epsilon=1.0, rng=np.random.default_rng(0),
                            n_boot=200)
    lp.plot_worst_case(a1, recs, variant="tree", fit=fit, expected=-1.0, color="C0")
    lp.plot_lower_bound(a2, _lb_records(1.0))
    assert len(a1.lines) >= 3 and len(a2.lines) == 4
    plt.close(fig)
