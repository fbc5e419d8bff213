"""The lower-bound construction of the l_p setup (dpsco_lib.problems.hard_lp; results F3, L1; BGN21): constants, exact
optimum, sampler, closed-form bound, bad input.
"""

from __future__ import annotations

import itertools
import math

import matplotlib

matplotlib.use("Agg")




import numpy as np  # noqa: E402
import pytest  # noqa: E402
from scipy.integrate import quad  # noqa: E402

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


def test_linear_tree_releases_one_estimate():
    """For a linear loss every leaf of the tree sees the root's estimate (the corrections are exactly zero), so the
    run is the linear minimizer of one noisy mean gradient: the basis of the noise-free counterpart."""
    from dpsco_lib.algorithms.gg_vr_sfw import run_gg_vr_sfw

    rng = np.random.default_rng(4)
    pr = FingerprintLinearLp(1.5, fingerprint_prior(30, rng), 0.3)
    data = pr.sample(3000, rng)
    res = run_gg_vr_sfw(pr, data, epsilon=1.0, delta=1e-4, rng=rng, variant="tree", depth=3, trace=True)
    est = np.asarray(res.trace["estimate"])
    assert est.shape[0] == 8 and np.all(est == est[0])
    assert np.allclose(res.x, pr.feasible_set.lmo(est[0]), atol=1e-12)
