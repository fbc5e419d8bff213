"""Audit of the GG noise inside the tree of GG-VR-SFW (result F3, tree variant; BGN21 with the tree of AFKT21).

The audited release is a *correction* vertex at depth 2, not the root: a right child's term
``mean_{B_u}[grad f(x_u; z) - grad f(x_parent; z)]`` released with GG noise of scale ``mult * Delta_u``,
``Delta_u = 2 L1 ||x_u - x_parent||_p / b_j``. The broken variant computes that sensitivity with the root batch
``b`` instead of the vertex's own ``b_j = b/2^j`` (its noise is ``2^j`` times too small at depth ``j``); the
audit must catch it and must not flag the correct code.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpsco_lib.algorithms import gg_vr_sfw
from dpsco_lib.geometry.sets import LpBall
from dpsco_lib.privacy.audit import mu_gdp_lower_bound_from_counts
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.least_squares import LeastSquares

EPS, DELTA, DEPTH, N_RUNS, ALPHA = 2.0, 1e-5, 2, 1500, 1e-3


def _problem() -> LeastSquares:
    """1-D least squares f(x; (a, y)) = (a x - y)^2/2 on [-1, 1] (p = q = 2: the GG noise is Gaussian, kappa = 1);
    |a| <= 1, |y| <= 1, so L0 = 2, L1 = 1."""
    return LeastSquares(LpBall(1, 2.0), 2.0, feature_bound=1.0, label_bound=1.0, sigma_diag=[1.0], sigma_factor=None,
                        mu=[1.0], s2=1.0, sampler=None)


def _canary_pair() -> tuple[Dataset, Dataset]:
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
    S, Sp = _canary_pair()
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
