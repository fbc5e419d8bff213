"""Tests of dpsco_lib.geometry.sparsify: Maurey sparsification counts, unbiasedness and bad input (Spec M1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpsco_lib.geometry import (
    maurey_counts,
    maurey_indices,
    maurey_sample,
)

# cvxpy's conic reformulation of ||.||_p (p not in {1, 2, inf}) triggers accuracy warnings; the tests
# compare at the accuracy cvxpy reaches there and use exact (KKT / Hölder) oracles for the tight checks.
pytestmark = pytest.mark.filterwarnings("ignore:Solution may be inaccurate", "ignore:pnorm with p=")


def test_maurey_counts_shapes_and_sums():
    rng = np.random.default_rng(13)
    x = rng.dirichlet(np.ones(50))
    for K in (1, 7, 49, 50, 500):  # both the inversion (K < V) and the multinomial path (K >= V)
        c = maurey_counts(x, K, rng, size=20)
        assert c.shape == (20, 50) and c.dtype == np.int64 and np.all(c.sum(axis=1) == K)
        assert maurey_counts(x, K, rng).sum() == K
        s = maurey_sample(x, K, rng)
        assert s.shape == (50,) and s.sum() == pytest.approx(1.0) and np.count_nonzero(s) <= K
    idx = maurey_indices(x, 9, rng, size=4)
    assert idx.shape == (4, 9) and idx.min() >= 0 and idx.max() < 50
    # zero-probability coordinates are never drawn
    z = np.zeros(1000)
    z[[3, 997]] = [0.25, 0.75]
    assert set(np.unique(maurey_indices(z, 5000, rng))) == {3, 997}
    # determinism
    a = maurey_sample(x, 5, np.random.default_rng(1), size=3)
    b = maurey_sample(x, 5, np.random.default_rng(1), size=3)
    np.testing.assert_array_equal(a, b)


@pytest.mark.statistical
@pytest.mark.parametrize("K", [3, 40])
def test_maurey_unbiased_chisquare(K):
    """Pooled counts of N independent K-samples are Multinomial(N K, x): chi-square test, level 1e-3."""
    rng = np.random.default_rng(14)
    x = rng.dirichlet(np.ones(20) * 0.7)
    x = np.maximum(x, 0.01)
    x /= x.sum()
    N = 3000
    counts = maurey_counts(x, K, rng, size=N).sum(axis=0)
    assert stats.chisquare(counts, N * K * x).pvalue > 1e-3
    # the averaged point: mean of N estimates within 5 standard errors of x in every coordinate
    est = maurey_sample(x, K, rng, size=N)
    se = np.sqrt(x * (1 - x) / (K * N))
    assert np.all(np.abs(est.mean(axis=0) - x) <= 5 * se)


@pytest.mark.statistical
def test_maurey_log_weights_and_polytope():
    rng = np.random.default_rng(15)
    logits = np.array([1e12, 1e12 - 1.0, 1e12 - 2.0, -1e12, -np.inf])
    p = np.exp(np.array([0.0, -1.0, -2.0]))
    p /= p.sum()
    c = maurey_counts(logits, 30000, rng, log_weights=True)
    assert c[3] == 0 and c[4] == 0
    assert stats.chisquare(c[:3], 30000 * p).pvalue > 1e-3
    V = rng.normal(size=(6, 3))
    w = rng.dirichlet(np.ones(6))
    est = maurey_sample(w, 4, rng, size=20000, vertices=V)
    assert est.shape == (20000, 3)
    se = est.std(axis=0) / math.sqrt(20000)
    assert np.all(np.abs(est.mean(axis=0) - w @ V) <= 5 * se)
    big = maurey_sample(np.zeros(10**6), 3, rng, log_weights=True)  # uniform over 1e6 coordinates
    assert big.shape == (10**6,) and big.sum() == pytest.approx(1.0)


def test_maurey_bad_input():
    rng = np.random.default_rng(0)
    x = np.array([0.2, 0.3, 0.5])
    for call in (
        lambda: maurey_sample(np.array([0.2, 0.3, 0.6]), 3, rng),
        lambda: maurey_sample(np.array([-0.2, 0.7, 0.5]), 3, rng),
        lambda: maurey_sample(x, 0, rng),
        lambda: maurey_sample(x, 2.5, rng),
        lambda: maurey_sample(x, 3, None),
        lambda: maurey_sample(np.array([0.2, np.nan, 0.8]), 3, rng),
        lambda: maurey_sample(x, 3, rng, vertices=np.ones((4, 2))),
        lambda: maurey_sample(np.full(3, -np.inf), 3, rng, log_weights=True),
        lambda: maurey_counts(x, 3, rng, size=0),
    ):
        with pytest.raises(ValueError):
            call()
