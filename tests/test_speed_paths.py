"""The internal fast paths of the single-pass loops are bit-identical to their reference forms (issue 10).

SMD (Spec S1) and Poly-SFW (Spec F1) update preallocated buffers in place, read least-squares gradients
from the raw arrays instead of one-record Datasets, and enter ``np.errstate`` once per run.  Every check
here compares float64 bit patterns (``view(np.int64)``), so a fast path that changed any rounding, the sign
of a zero or the order of a summation would fail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsco_lib.algorithms.poly_sfw import run_poly_sfw, run_poly_sfw_reference
from dpsco_lib.algorithms.smd import run_smd, run_smd_reference
from dpsco_lib.geometry.mirror import EntropicStepInplace, entropic_step_with_weights
from dpsco_lib.geometry.sets import L1Ball, LpBall, Polytope, Simplex
from dpsco_lib.problems.least_squares import (
    LeastSquares,
    hard_least_squares,
    random_least_squares,
    row_grad_oracle,
)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


# ---------------------------------------------------------------------------------------------------------
# entropic step
# ---------------------------------------------------------------------------------------------------------
def _step_cases(rng: np.random.Generator):
    for d in (1, 2, 3, 8, 129, 1000, 2001):
        log_x = np.log(rng.dirichlet(np.full(d, 0.3)))
        yield log_x, rng.standard_normal(d) * 10.0 ** rng.uniform(-3, 3), float(10.0 ** rng.uniform(-4, 2))
    d = 50
    lx = np.full(d, -math.log(d))
    lx[::3] = -np.inf  # zero weights stay zero
    yield lx, rng.standard_normal(d), 0.7
    g = np.zeros(d)
    g[::2] = -0.0  # +-0 ties at the minimum
    g[5] = 3.0
    yield np.full(d, -math.log(d)), g, 0.5
    yield np.full(d, -math.log(d)), rng.standard_normal(d), 1e308  # every score overflows: the limit branch
    yield np.full(d, -math.log(d)), rng.standard_normal(d) * 1e300, 1e10
    yield np.full(d, -math.log(d)), np.full(d, 2.5), 1.0  # constant gradient
    yield np.array([-0.0]), np.array([-0.0]), 1.0


def test_entropic_inplace_step_is_bit_identical():
    rng = np.random.default_rng(20261123)
    n_cases = 0
    for log_x, g, eta in _step_cases(rng):
        with np.errstate(over="ignore", invalid="ignore"):
            ref_lx, ref_w = entropic_step_with_weights(log_x.copy(), g.copy(), eta)
        state, w, gg = log_x.copy(), np.empty_like(log_x), g.copy()
        with np.errstate(over="ignore", invalid="ignore"):
            EntropicStepInplace(log_x.size, eta).step(state, gg, w)
        assert _same_bits(state, ref_lx), (log_x.size, eta)
        assert _same_bits(w, ref_w), (log_x.size, eta)
        assert _same_bits(gg, g)  # the gradient is only read
        n_cases += 1
    assert n_cases == 13


def test_entropic_inplace_chain_matches_reference_chain():
    # 300 successive steps from the uniform point, the way SMD uses the step (state fed back each time)
    rng = np.random.default_rng(7)
    d, eta = 400, 0.05
    ref_lx = np.full(d, -math.log(d))
    state = ref_lx.copy()
    w = np.full(d, 1.0 / d)
    stepper = EntropicStepInplace(d, eta)
    for _ in range(300):
        g = rng.standard_normal(d) * 5.0
        ref_lx, ref_w = entropic_step_with_weights(ref_lx, g, eta)
        with np.errstate(over="ignore", invalid="ignore"):
            stepper.step(state, g, w)
        assert _same_bits(state, ref_lx)
        assert _same_bits(w, ref_w)


# ---------------------------------------------------------------------------------------------------------
# least-squares row oracle
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["simplex", "l1ball", "p1.5", "random"])
def test_row_gradient_is_bit_identical_to_grad(kind):
    rng = np.random.default_rng(3)
    d = 257
    if kind == "random":
        prob = random_least_squares(L1Ball(d, 2.0), 1.0, rng, k=7)
    elif kind == "p1.5":
        prob = hard_least_squares(1.5, d)
    else:
        prob = hard_least_squares(1.0, d, set_kind=kind)
    data = prob.sample(300, rng)
    row = row_grad_oracle(prob)
    assert row is not None
    out = np.empty(d)
    for t in range(data.n):
        x = rng.standard_normal(d) * 10.0 ** rng.uniform(-8, 2)
        ref = prob._grad(x, data[t:t + 1])[0]
        got = row(x, data.X, data.y, t, out)
        assert got is out
        assert _same_bits(got, ref), t


def test_row_oracle_only_for_unmodified_least_squares():
    class Doubled(LeastSquares):
        def _grad(self, x, data):
            return 2.0 * super()._grad(x, data)

    kw = dict(feature_bound=1.0, label_bound=1.0, sigma_diag=np.ones(5), sigma_factor=None, mu=np.zeros(5),
              s2=1.0, sampler=None)
    assert row_grad_oracle(LeastSquares(Simplex(5), 1.0, **kw)) is not None
    assert row_grad_oracle(Doubled(Simplex(5), 1.0, **kw)) is None
    assert row_grad_oracle(object()) is None


# ---------------------------------------------------------------------------------------------------------
# whole runs against the straightforward (allocating) loops the fast paths replaced
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("lift_l1", [False, True])
def test_run_smd_matches_reference_loop(lift_l1):
    rng = np.random.default_rng(11)
    d = 60
    fset = L1Ball(d, 1.5) if lift_l1 else Simplex(d)
    prob = random_least_squares(fset, 1.0, rng, k=4)
    data = prob.sample(1500, rng)
    res = run_smd(prob, data, rng=np.random.default_rng(0), trace=True, trace_every=100)
    assert res.info["method"] == ("entropic_lift" if lift_l1 else "entropic")
    ref = run_smd_reference(prob, data, rng=np.random.default_rng(0), trace=True, trace_every=100)
    assert _same_bits(res.x, ref.x)
    assert _same_bits(res.trace["x_avg"], ref.trace["x_avg"])
    assert res.params == ref.params and res.info == ref.info


@pytest.mark.parametrize("kind", ["polytope", "pnorm", "euclidean", "last", "suffix"])
def test_run_smd_matches_reference_loop_other_geometries(kind):
    """The library's reference loop (run_smd_reference) against the fast run_smd on the other geometries."""
    rng = np.random.default_rng(12)
    d = 25
    setup = {"polytope": (Polytope(rng.standard_normal((9, d))), 2.0, 1.0), "pnorm": (LpBall(d, 1.5, 0.7), 1.5, None),
             "euclidean": (LpBall(d, 2.0, 1.0), 2.0, None)}
    fset, setup_p, mirror_p = setup.get(kind, (L1Ball(d, 2.0), 1.0, None))
    prob = random_least_squares(fset, setup_p, rng, k=3)
    data = prob.sample(600, rng)
    avg = kind if kind in ("last", "suffix") else "uniform"
    res = run_smd(prob, data, rng=np.random.default_rng(0), p=mirror_p, averaging=avg)
    ref = run_smd_reference(prob, data, rng=np.random.default_rng(0), p=mirror_p, averaging=avg)
    assert _same_bits(res.x, ref.x)


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
