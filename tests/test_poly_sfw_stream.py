"""Poly-SFW (Spec F1) on a DataStream: the same bits as the in-memory run for every block size, one pass in
bounded memory, validation of every block (issue "streaming data")."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import dpsco_lib.algorithms.poly_sfw as poly_sfw_mod
from dpsco_lib.algorithms.poly_sfw import run_poly_sfw, run_poly_sfw_reference
from dpsco_lib.geometry.sets import Polytope
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.least_squares import LeastSquares, hard_least_squares
from dpsco_lib.problems.stream import DataStream

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
