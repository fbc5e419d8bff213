"""Tests of streaming data (dpsco_lib.problems.stream): ``problem.stream(n, rng, block_size)``.

Checked: the blocks concatenate to ``problem.sample(n, rng2)`` bit for bit for every block size (1, a prime,
n, more than n, and a hypothesis sweep over small (n, block_size)); the caller's rng is left in exactly the
state ``sample`` leaves it in; blocks have the promised number and sizes; passes repeat; the exact PCG64 jump
matches real draws; families without a block sampler fall back to an in-memory stream; a pass holds one block
of memory; bad n, rng and block_size raise errors naming the parameter.  Does not import dpsco_lib.algorithms.
"""

from __future__ import annotations

import math
import pickle
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpsco_lib.geometry.sets import Simplex
from dpsco_lib.problems import (
    BlockSampler,
    Dataset,
    DataStream,
    IntegerDraw,
    LeastSquares,
    hard_least_squares,
    random_bilinear_game,
    random_least_squares,
    random_quadratic_game,
    random_softmax_game,
)
from dpsco_lib.problems.stream import _skip_uint32

HYP = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

FAMILIES = {
    "ls_p1_simplex": lambda: hard_least_squares(1.0, 6, set_kind="simplex"),
    "ls_p1_l1ball": lambda: hard_least_squares(1.0, 5, set_kind="l1ball", c=3.0),
    "ls_p1.5_lp": lambda: hard_least_squares(1.5, 7),
    "ls_p2_lp": lambda: hard_least_squares(2.0, 4),
    "ls_pinf_box": lambda: hard_least_squares(math.inf, 6, seed=3),
    "bilinear": lambda: random_bilinear_game(3, 4, np.random.default_rng(0)),
    "quadratic": lambda: random_quadratic_game(4, 3, np.random.default_rng(1)),
    "softmax": lambda: random_softmax_game(5, 2, np.random.default_rng(2)),
}
N = 53
BLOCKS = [1, 2, 7, 13, N - 1, N, N + 9]  # 1, primes, n - 1, n, more than n


def _same(a: Dataset, b: Dataset) -> bool:
    """Bit-identical features and labels (tobytes compares the float64 bit patterns, -0.0 and NaN included)."""
    if a.X.shape != b.X.shape or a.X.tobytes() != b.X.tobytes():
        return False
    if a.y is None or b.y is None:
        return a.y is None and b.y is None
    return a.y.tobytes() == b.y.tobytes()


def _frozen(value: object) -> object:
    """A state dict with its numpy arrays (Philox, MT19937 keys and buffers) as comparable tuples."""
    if isinstance(value, dict):
        return {k: _frozen(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape, tuple(value.ravel().tolist()))
    return value


def _state(rng: np.random.Generator) -> object:
    return _frozen(rng.bit_generator.state)


@pytest.mark.parametrize("block_size", BLOCKS)
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_blocks_concatenate_to_sample_bit_for_bit(family: str, block_size: int) -> None:
    problem = FAMILIES[family]()
    rng, rng2 = np.random.default_rng(11), np.random.default_rng(11)
    stream = problem.stream(N, rng, block_size)
    expected = problem.sample(N, rng2)
    assert stream.bounded_memory
    assert _state(rng) == _state(rng2), "stream() must advance rng exactly as sample() at once"
    assert _same(stream.materialize(), expected)
    assert _state(rng) == _state(rng2), "reading the stream must not touch the caller's rng"


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_block_count_sizes_and_repeatable_passes(family: str) -> None:
    problem = FAMILIES[family]()
    stream = problem.stream(N, np.random.default_rng(4), 7)
    assert (stream.n, stream.block_size, stream.n_blocks) == (N, 7, 8)
    assert stream.d == problem.sample(1, np.random.default_rng(0)).d
    first, second = list(stream), list(stream)
    assert [b.n for b in first] == [7] * 7 + [4]
    assert all(_same(a, b) for a, b in zip(first, second, strict=True))
    assert all(not b.X.flags.writeable for b in first)
    assert all((b.y is None) == (first[0].y is None) for b in first)


def test_rng_interleaving_matches_the_in_memory_path() -> None:
    """Draws from rng after stream() equal draws after sample(), however they interleave with the blocks."""
    problem = hard_least_squares(1.0, 9)
    rng, rng2 = np.random.default_rng(7), np.random.default_rng(7)
    stream = problem.stream(40, rng, 6)
    data = problem.sample(40, rng2)
    got = []
    for lo, block in zip(range(0, 40, 6), stream, strict=True):
        assert _same(block, data[lo:lo + 6])
        got.append(rng.standard_normal(3))
    want = [rng2.standard_normal(3) for _ in range(stream.n_blocks)]
    assert np.array_equal(np.concatenate(got), np.concatenate(want))


@pytest.mark.parametrize("bitgen", [np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64,
                                    np.random.MT19937])
@pytest.mark.parametrize("family", ["ls_p1_simplex", "ls_pinf_box", "quadratic"])
def test_every_bit_generator(bitgen: type, family: str) -> None:
    """The exact jump (PCG64, PCG64DXSM) and the draw-and-discard path (the others) give the same bits."""
    problem = FAMILIES[family]()
    for pre in (0, 1):  # an odd number of earlier 32-bit draws leaves a buffered half word
        rng, rng2 = np.random.Generator(bitgen(5)), np.random.Generator(bitgen(5))
        rng.integers(0, 2, size=pre)
        rng2.integers(0, 2, size=pre)
        stream = problem.stream(31, rng, 4)
        assert _same(stream.materialize(), problem.sample(31, rng2))
        assert _state(rng) == _state(rng2)


@pytest.mark.parametrize("bitgen", [np.random.PCG64, np.random.PCG64DXSM])
def test_skip_uint32_matches_real_draws(bitgen: type) -> None:
    for pre in range(3):
        for m in [0, 1, 2, 3, 4, 5, 10, 11, 1001]:
            g1, g2 = np.random.Generator(bitgen(9)), np.random.Generator(bitgen(9))
            g1.integers(0, 2, size=pre)
            g2.integers(0, 2, size=pre)
            g1.integers(0, 4, size=m)  # a power-of-two range: one 32-bit word per value
            _skip_uint32(g2.bit_generator, m)
            assert _state(g1) == _state(g2), (pre, m)
            assert np.array_equal(g1.integers(0, 2, size=5), g2.integers(0, 2, size=5))


@pytest.mark.parametrize("draw", [IntegerDraw(0, 2), IntegerDraw(0, 2, 3), IntegerDraw(0, 7), IntegerDraw(-3, 10, 2),
                                  IntegerDraw(0, 1, 4), IntegerDraw(0, 1 << 32), IntegerDraw(0, (1 << 32) + 5)])
def test_integer_draw_skip_is_exact(draw: IntegerDraw) -> None:
    for rows in (0, 1, 5, 70_000):
        g1, g2 = np.random.default_rng(3), np.random.default_rng(3)
        draw(g1, rows)
        draw.skip(g2, rows)
        assert _state(g1) == _state(g2), (draw, rows)


def test_integer_draws_are_block_invariant() -> None:
    """The numpy fact the design rests on: integers(size=n) is the concatenation of integers(size=b_k)."""
    for low, high, width in [(0, 2, None), (0, 2, 5), (0, 7, None), (0, 100, 3)]:
        draw = IntegerDraw(low, high, width)
        g1, g2 = np.random.default_rng(1), np.random.default_rng(1)
        whole = draw(g1, 23)
        parts = np.concatenate([draw(g2, k) for k in (1, 5, 2, 11, 4)])
        assert np.array_equal(whole, parts) and _state(g1) == _state(g2)


def _old_planted(n: int, rng: np.random.Generator, d: int, q: float, alpha: float, beta: float, c: float):
    """The committed planted-vertex sampler before streaming (reference for 'sample() bits unchanged')."""
    scale = 1.0 if math.isinf(q) else (d - 1) ** (-1.0 / q)
    r1 = 2.0 * rng.integers(0, 2, size=n) - 1.0
    X = (2.0 * rng.integers(0, 2, size=(n, d)) - 1.0) * (beta * scale)
    X[:, 0] = alpha
    X *= r1[:, None]
    return X, c * r1


def _old_signed(n: int, rng: np.random.Generator, sigma: np.ndarray, c: float):
    d = sigma.size
    J = rng.integers(0, d, size=n)
    s = 2.0 * rng.integers(0, 2, size=n) - 1.0
    X = np.zeros((n, d))
    X[np.arange(n), J] = s
    return X, c * s * sigma[J]


@pytest.mark.parametrize("p", [1.0, 1.5, 2.0, math.inf])
def test_sample_bits_unchanged_by_the_block_samplers(p: float) -> None:
    problem = hard_least_squares(p, 11, c=2.5)
    for n in (1, 2, 333):
        rng, rng2 = np.random.default_rng(n), np.random.default_rng(n)
        new = problem.sample(n, rng)
        if math.isinf(p):
            X, y = _old_signed(n, rng2, problem.mu * 11 / 2.5, 2.5)
        else:
            q = p / (p - 1) if p > 1 else math.inf
            ab = 1.0 if math.isinf(q) else 2.0 ** (-1.0 / q)
            X, y = _old_planted(n, rng2, 11, q, ab, ab, 2.5)
        assert _same(new, Dataset(X, y)) and _state(rng) == _state(rng2)


@pytest.mark.parametrize("family", ["bilinear", "quadratic", "softmax"])
def test_game_sample_bits_unchanged(family: str) -> None:
    problem = FAMILIES[family]()
    rng, rng2 = np.random.default_rng(8), np.random.default_rng(8)
    want = 2.0 * rng2.integers(0, 2, size=(17, problem.data_dim)) - 1.0
    assert _same(problem.sample(17, rng), Dataset(want))


def test_families_without_a_block_sampler_fall_back_in_memory() -> None:
    """random_least_squares (features are a BLAS product whose rounding depends on the row count) and
    subclasses that override _sample stream the in-memory sample: still bit-identical, not memory-bounded."""
    base = hard_least_squares(1.0, 5)

    class Shifted(LeastSquares):
        def _sample(self, n: int, rng: np.random.Generator) -> Dataset:
            X, y = self.sampler(n, rng)
            return Dataset(X, y + 0.0 * rng.random(n))

    shifted = Shifted(base.feasible_set, 1.0, feature_bound=1.0, label_bound=2.0, sigma_diag=base.sigma_diag,
                      sigma_factor=None, mu=base.mu, s2=base.s2, sampler=base.sampler)
    for problem in (random_least_squares(Simplex(6), 1.0, np.random.default_rng(0)), shifted):
        rng, rng2 = np.random.default_rng(2), np.random.default_rng(2)
        stream = problem.stream(29, rng, 4)
        assert not stream.bounded_memory
        assert _same(stream.materialize(), problem.sample(29, rng2)) and _state(rng) == _state(rng2)
        assert [b.n for b in stream] == [4] * 7 + [1]


@given(n=st.integers(1, 40), block_size=st.integers(1, 50), seed=st.integers(0, 2**32 - 1),
       family=st.sampled_from(sorted(FAMILIES)))
@HYP
def test_property_stream_equals_sample(n: int, block_size: int, seed: int, family: str) -> None:
    problem = FAMILIES[family]()
    rng, rng2 = np.random.default_rng(seed), np.random.default_rng(seed)
    stream = problem.stream(n, rng, block_size)
    blocks = list(stream)
    assert len(blocks) == stream.n_blocks == -(-n // block_size)
    assert all(b.n == block_size for b in blocks[:-1]) and 1 <= blocks[-1].n <= block_size
    assert _same(stream.materialize(), problem.sample(n, rng2))
    assert _state(rng) == _state(rng2)


def test_a_pass_holds_one_block_of_memory() -> None:
    """200 000 records at d = 50 (80 MB in memory) streamed in blocks of 1000: traced peak below 4 MB."""
    problem = hard_least_squares(1.0, 50)
    stream = problem.stream(200_000, np.random.default_rng(0), 1000)
    tracemalloc.start()
    try:
        total = 0
        for block in stream:
            total += block.n
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert total == 200_000
    assert peak < 4 * 2**20, f"peak traced memory {peak / 2**20:.1f} MiB"


def test_default_block_size() -> None:
    problem = hard_least_squares(1.0, 100)
    stream = problem.stream(5, np.random.default_rng(0))
    assert stream.block_size == (1 << 20) // 100


@pytest.mark.parametrize("family", ["ls_p1_simplex", "bilinear"])
@pytest.mark.parametrize(("kwargs", "exc", "word"), [
    ({"n": 0}, ValueError, "n"),
    ({"n": -3}, ValueError, "n"),
    ({"n": 2.5}, ValueError, "n"),
    ({"n": True}, ValueError, "n"),
    ({"block_size": 0}, ValueError, "block_size"),
    ({"block_size": -1}, ValueError, "block_size"),
    ({"block_size": 2.0}, TypeError, "block_size"),
    ({"block_size": "4"}, TypeError, "block_size"),
    ({"block_size": True}, TypeError, "block_size"),
    ({"rng": None}, TypeError, "rng"),
    ({"rng": 3}, TypeError, "rng"),
    ({"rng": np.random.RandomState(0)}, TypeError, "rng"),
])
def test_validation_names_the_parameter(family: str, kwargs: dict, exc: type, word: str) -> None:
    problem = FAMILIES[family]()
    args = {"n": 10, "rng": np.random.default_rng(0), "block_size": 3, **kwargs}
    with pytest.raises(exc, match=rf"\b{word}\b"):
        problem.stream(args["n"], args["rng"], block_size=args["block_size"])


def test_datastream_construction_and_source_checks() -> None:
    data = hard_least_squares(2.0, 3).sample(10, np.random.default_rng(0))
    stream = DataStream.from_dataset(data, 4)
    assert [b.n for b in stream] == [4, 4, 2] and _same(stream.materialize(), data)
    assert "n_blocks=3" in repr(stream)
    with pytest.raises(TypeError, match="data"):
        DataStream.from_dataset(data.X, 4)
    with pytest.raises(ValueError, match="block_size"):
        DataStream(10, 3, 0, lambda: iter(()), bounded_memory=True)
    with pytest.raises(TypeError, match="blocks"):
        DataStream(10, 3, 4, None, bounded_memory=True)
    short = DataStream(10, 3, 4, lambda: iter([data[0:4]]), bounded_memory=True)
    with pytest.raises(RuntimeError, match="ended after 4 of 10"):
        list(short)
    wrong = DataStream(10, 3, 4, lambda: iter([data[0:3]]), bounded_memory=True)
    with pytest.raises(RuntimeError, match="expected 4 x 3"):
        list(wrong)


def test_block_sampler_is_the_least_squares_sampler_protocol() -> None:
    problem = hard_least_squares(1.5, 4)
    assert isinstance(problem.sampler, BlockSampler)
    X, y = problem.sampler(3, np.random.default_rng(0))
    assert X.shape == (3, 4) and y.shape == (3,)
    problem.validate_data(problem.stream(500, np.random.default_rng(1), 64).materialize())


@pytest.mark.parametrize("family", ["ls_p1_simplex", "ls_pinf_box", "softmax"])
def test_streams_pickle_and_replay(family: str) -> None:
    """A block-sampler stream can be sent to a worker process (joblib / dask) and yields the same blocks there
    (an in-memory fallback stream holds a Dataset, which does not pickle: its extras are a mappingproxy)."""
    stream = FAMILIES[family]().stream(20, np.random.default_rng(6), 3)
    copy = pickle.loads(pickle.dumps(stream))
    assert (copy.n, copy.d, copy.block_size, copy.bounded_memory) == (20, stream.d, 3, True)
    assert _same(copy.materialize(), stream.materialize())
