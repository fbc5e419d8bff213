"""Bit-identity of the fast paths of GG-VR-SFW (Spec F3), Algorithms 2-3 (Spec A2, A3) and the l_p norm helpers.

Every fast helper is compared with ``np.array_equal`` (or ``==`` on floats) against a reference written out here
in the textbook form the library used before the fast paths (the same formulas, one temporary per operation), on
random inputs that include zeros, ties, extreme scales and non-finite entries.  The reference tree loop at the end
re-runs the whole tree variant of GG-VR-SFW step by step and must reproduce every output bit for a fixed seed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpsco_lib.algorithms.bias_reduced_saddle as brs
import dpsco_lib.algorithms.gg_vr_sfw as gg
from dpsco_lib.geometry.norms import abs_norm_keepdims, lp_norm, lp_norms_exceed
from dpsco_lib.geometry.sets import LpBall
from dpsco_lib.problems.games import random_bilinear_game, random_quadratic_game
from dpsco_lib.problems.least_squares import hard_least_squares, random_least_squares


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


def _ref_abs_norm_keepdims(a: np.ndarray, p: float, axis: int = -1) -> np.ndarray:
    if p == 1.0:
        return a.sum(axis=axis, keepdims=True)
    if p == math.inf:
        return a.max(axis=axis, keepdims=True)
    m = a.max(axis=axis, keepdims=True)
    if not (np.all(m > 0) and np.all(m < math.inf)):
        with np.errstate(invalid="ignore", divide="ignore"):
            good = (m > 0) & (m < math.inf)
            scaled = np.where(good, a / np.where(good, m, 1.0), 0.0)
            core = (
                np.sum(scaled * scaled, axis=axis, keepdims=True) ** 0.5
                if p == 2.0
                else (np.sum(scaled**p, axis=axis, keepdims=True) ** (1.0 / p))
            )
            return np.where(m == math.inf, math.inf, np.where(m > 0, m * core, 0.0))
    scaled = a / m
    if p == 2.0:
        return m * np.sqrt(np.sum(scaled * scaled, axis=axis, keepdims=True))
    return m * np.sum(scaled**p, axis=axis, keepdims=True) ** (1.0 / p)


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


# ---------------------------------------------------------------------------------------------------------
# l_p norms
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [1.0, 1.5, 2.0, 3.0, 4.0, 7.25, math.inf])
def test_abs_norm_keepdims_overwrite_and_lp_norm_match_reference(p):
    rng = np.random.default_rng(int(p * 10) if math.isfinite(p) else 99)
    X = rng.standard_normal((40, 300)) * 10.0 ** rng.uniform(-150, 150, size=(40, 1))
    Xbad = X.copy()
    Xbad[2] = 0.0
    Xbad[5, 7] = np.inf
    for A in (X, Xbad):
        for axis in (-1, 0):
            a = np.abs(A)
            ref = _ref_abs_norm_keepdims(a, p, axis)
            assert _same(abs_norm_keepdims(a, p, axis), ref)
            assert _same(a, np.abs(A))  # overwrite=False leaves the input alone
            assert _same(abs_norm_keepdims(np.abs(A), p, axis, overwrite=True), ref)
            if np.all(np.isfinite(A)):
                assert _same(np.asarray(lp_norm(A, p, axis=axis)), np.squeeze(ref, axis=axis))
            else:  # the public norm refuses non-finite input; the kernel above still handles it
                with pytest.raises(ValueError, match="finite"):
                    lp_norm(A, p, axis=axis)
        assert lp_norm(A[0], p) == float(np.squeeze(_ref_abs_norm_keepdims(np.abs(A[0]), p)))


@pytest.mark.parametrize("p", [2.0, 3.0, 4.0, 5.0, 8.0, 1.5, 2.5, 1.0, math.inf])
def test_lp_norms_exceed_equals_the_exact_comparison(p):
    rng = np.random.default_rng(17)
    for trial in range(60):
        n, d = int(rng.integers(1, 90)), int(rng.integers(1, 2500))
        X = rng.standard_normal((n, d)) * 10.0 ** rng.uniform(-110, 110, size=(n, 1))
        if trial % 4 == 0:
            X[rng.integers(n), rng.integers(d)] = rng.choice([np.inf, -np.inf, np.nan, 0.0])
        if trial % 7 == 0:
            X[0] = 0.0
        with np.errstate(all="ignore"):  # the reference loop (lp_norm itself refuses NaN and inf input)
            nrm = np.squeeze(_ref_abs_norm_keepdims(np.abs(X), p, -1), axis=-1)
        finite = nrm[np.isfinite(nrm) & (nrm > 0)]
        ref_row = float(finite[0]) if finite.size else 1.0
        # bounds exactly at, one ulp around and a relative 1e-9 above a row's norm, plus unrelated scales
        for bound in (ref_row, np.nextafter(ref_row, np.inf), np.nextafter(ref_row, 0.0), ref_row * (1 + 1e-9),
                      1.0, 1e200, 1e-200):
            if not np.all(np.isfinite(X)):  # a record with NaN or inf is refused, never compared
                with pytest.raises(ValueError, match="finite"):
                    lp_norms_exceed(X, p, float(bound))
                continue
            with np.errstate(all="ignore"):
                assert np.array_equal(lp_norms_exceed(X, p, float(bound)), nrm > bound)


def test_lp_norms_exceed_on_planted_records_near_the_bound():
    # hard least squares with q = 3 (p = 1.5): every record has ||a||_3 = 1 up to rounding; scale some rows to
    # straddle the validation threshold 1 + 1e-9 by a few ulps
    problem = hard_least_squares(1.5, 200)
    X = problem.sample(400, np.random.default_rng(1)).X.copy()
    bound = 1.0 * (1 + 1e-9)
    nrm = np.asarray(lp_norm(X, 3.0, axis=-1))
    for i, ulps in enumerate(range(-6, 7)):
        X[i] *= np.nextafter(bound, np.inf if ulps > 0 else 0.0) / nrm[i] if ulps else bound / nrm[i]
    assert np.array_equal(lp_norms_exceed(X, 3.0, bound), np.asarray(lp_norm(X, 3.0, axis=-1)) > bound)


def test_lp_norms_exceed_rejects_non_matrices():
    with pytest.raises(ValueError, match="2-D"):
        lp_norms_exceed(np.ones(3), 3.0, 1.0)


# ---------------------------------------------------------------------------------------------------------
# Algorithms 2 and 3
# ---------------------------------------------------------------------------------------------------------
def test_level_draws_with_a_precomputed_table_consume_and_return_the_same():
    p = brs.truncated_geometric_probabilities(6)
    r1, r2 = np.random.default_rng(8), np.random.default_rng(8)
    cdf = brs._level_cdf(p)
    for _ in range(200):
        assert np.array_equal(brs._draw_levels(p, r1, 1), brs._draw_levels(p, r2, 1, cdf))
    assert np.array_equal(brs._draw_levels(p, r1, 500), brs._draw_levels(p, r2, 500, cdf))
    assert r1.random() == r2.random()  # the same stream position afterwards


def test_batch_mean_equals_ndarray_mean():
    rng = np.random.default_rng(2)
    for shape in ((4, 1, 3), (4, 17, 9), (8, 1000, 5), (4, 3, 1)):
        g = rng.standard_normal(shape) * 10.0 ** rng.uniform(-50, 50, size=shape)
        assert _same(brs._batch_mean(g), g.mean(axis=1))


@pytest.mark.parametrize("make", [random_bilinear_game, random_quadratic_game])
def test_saddle_oracle_matches_the_checked_oracle_calls(make):
    rng = np.random.default_rng(6)
    problem = make(7, 9, rng)
    batch = problem.sample(150, rng)
    m_rep, dm = 3, 9
    log_state = np.full((m_rep, 2, dm), -np.inf)
    log_state[:, 0, :7] = np.log(rng.dirichlet(np.ones(7), m_rep))
    log_state[:, 1, :9] = np.log(rng.dirichlet(np.ones(9), m_rep))
    for level in (0, 2, 4):
        pl = 0.3
        Gx, Gy, idx, out = brs._saddle_oracle(problem, batch, log_state, 2, level, pl, 3, np.random.default_rng(level))
        # reference: the same vertex draws through the public, checked oracles and ndarray.mean
        m = (2 ** (level + 1)) * 2
        pts = brs._multilevel_points(idx.reshape(2 * m_rep, -1)[:, :m], 2, dm).reshape(m_rep, 2, 4, dm)
        X = pts[:, 0, :, :7].reshape(4 * m_rep, 7)
        Y = pts[:, 1, :, :9].reshape(4 * m_rep, 9)
        gx = problem.grad_x(X, Y, batch).mean(axis=1).reshape(m_rep, 4, 7)
        gy = problem.grad_y(X, Y, batch).mean(axis=1).reshape(m_rep, 4, 9)
        assert _same(Gx, brs._combine(gx, pl)) and _same(Gy, brs._combine(gy, pl))
        assert out.shape == (m_rep, 2, dm)


@pytest.mark.parametrize(("make", "dims", "accountant"), [(random_bilinear_game, (6, 6), "filter"),
                                                          (random_quadratic_game, (7, 7), "filter"),
                                                          (random_bilinear_game, (5, 8), "best")])
def test_alg3_run_reproduces_the_reference_loop(make, dims, accountant):
    """The vectorized Algorithm 3 equals the library's readable loop: bit for bit when dx = dy, to 1e-12 when the
    fast path pads the smaller player (a different shift of the entropic step)."""
    problem = make(*dims, np.random.default_rng(4))
    data = problem.sample(2500, np.random.default_rng(5))
    kw = {"epsilon": 3.0, "delta": 1e-6, "N_max": 3, "accountant": accountant}
    fast = brs.run_bias_reduced_smd_saddle(problem, data, rng=np.random.default_rng(6), **kw)
    ref = brs.run_bias_reduced_smd_saddle_reference(problem, data, rng=np.random.default_rng(6), **kw)
    assert fast.info["steps"] == ref.info["steps"] > 0 and fast.info["n_draws"] == ref.info["n_draws"]
    assert fast.ledger.events == ref.ledger.events
    if dims[0] == dims[1]:
        assert _same(fast.x, ref.x) and _same(fast.y, ref.y)
    else:
        np.testing.assert_allclose(fast.x, ref.x, rtol=0, atol=1e-12)
        np.testing.assert_allclose(fast.y, ref.y, rtol=0, atol=1e-12)
