"""Tests of dpsco_lib.geometry.norms: l_p norms, dual exponents and the regularity constant kappa (Spec G1), and the
fast norm helpers against their reference forms.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsco_lib.geometry import (
    dual_exponent,
    lp_norm,
    regularity_constant,
    smooth_dual_exponent,
)
from dpsco_lib.geometry.norms import abs_norm_keepdims, lp_norms_exceed
from dpsco_lib.problems import hard_least_squares

# cvxpy's conic reformulation of ||.||_p (p not in {1, 2, inf}) triggers accuracy warnings; the tests
# compare at the accuracy cvxpy reaches there and use exact (KKT / Hölder) oracles for the tight checks.
pytestmark = pytest.mark.filterwarnings("ignore:Solution may be inaccurate", "ignore:pnorm with p=")


@pytest.mark.parametrize("p", [1.0, 1.5, 2.0, 3.0, 7.5, math.inf])
def test_lp_norm_matches_numpy(p):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 7))
    assert np.allclose(lp_norm(x, p), np.linalg.norm(x, ord=p, axis=1), rtol=1e-13)
    assert np.allclose(lp_norm(x, p, axis=0), np.linalg.norm(x, ord=p, axis=0), rtol=1e-13)
    assert lp_norm(np.zeros(4), p) == 0.0
    big = np.array([1e300, -1e300, 3e299])
    val = lp_norm(big, p)
    assert np.isfinite(val) and val >= 1e300


def test_dual_exponent_and_bad_exponents():
    assert dual_exponent(1) == math.inf
    assert dual_exponent(math.inf) == 1.0
    assert dual_exponent(2) == 2.0
    assert dual_exponent(1.5) == pytest.approx(3.0, rel=1e-15)
    for bad in (0.5, -1, float("nan"), "2", True):
        with pytest.raises(ValueError):
            dual_exponent(bad)


def test_regularity_constant_closed_forms():
    d = 10_000
    L = math.log(d)
    assert regularity_constant(3.0) == 2.0
    assert regularity_constant(2.0, d) == 1.0
    assert regularity_constant(5.0, d) == 4.0  # 5 <= ln 1e4 = 9.21
    # q = inf: r = ln d, kappa = (ln d - 1) d^(2/ln d) = e^2 (ln d - 1)
    assert regularity_constant(math.inf, d) == pytest.approx(math.e**2 * (L - 1.0), rel=1e-12)
    q = 20.0
    assert regularity_constant(q, d) == pytest.approx((L - 1.0) * d ** (2 / L - 2 / q), rel=1e-12)
    assert regularity_constant(1.5, 100) == pytest.approx(100 ** (1 / 3), rel=1e-12)
    assert regularity_constant(math.inf, 5) == pytest.approx(5.0, rel=1e-12)  # r = 2 floor: d^(2/2)
    with pytest.raises(ValueError):
        regularity_constant(math.inf)
    with pytest.raises(ValueError):
        regularity_constant(1.5)
    with pytest.raises(ValueError):
        regularity_constant(0.5, 10)


def test_smooth_dual_exponent_rule_and_equivalence():
    d = 10_000
    assert smooth_dual_exponent(1.0, d) == pytest.approx(math.log(d))
    assert smooth_dual_exponent(1.5, d) == pytest.approx(3.0)
    assert smooth_dual_exponent(1.05, d) == pytest.approx(math.log(d))  # q = 21 > ln d
    assert smooth_dual_exponent(3.0, d) == 2.0
    assert smooth_dual_exponent(1.0, 5) == 2.0
    # equivalence ||x||_q <= ||x||_r <= d^(1/r - 1/q) ||x||_q, factor <= e for r = ln d
    rng = np.random.default_rng(1)
    r = smooth_dual_exponent(1.0, d)
    x = rng.standard_t(2, size=(50, d))
    nq, nr = lp_norm(x, math.inf), lp_norm(x, r)
    assert np.all(nq <= nr * (1 + 1e-12)) and np.all(nr <= math.e * nq * (1 + 1e-12))
    ones = np.ones(d)
    assert lp_norm(ones, r) == pytest.approx(math.e, rel=1e-12)  # the factor is attained


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


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bitwise equality of float arrays (NaN payloads aside: equal_nan)."""
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=True) and np.array_equal(np.signbit(a), np.signbit(b))


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


# bad input that was once accepted: each must raise naming the parameter -------------------------------------
def test_lp_norm_rejects_nan() -> None:
    # returned 0.0
    with pytest.raises(ValueError, match=r"x must be finite, got 1 non-finite entries"):
        lp_norm([math.nan, 1.0], 2)
