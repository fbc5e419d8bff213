"""Streaming data: a problem's records in seeded blocks, without holding all n of them (streaming data).

``problem.stream(n, rng, block_size)`` returns a :class:`DataStream`: n records in consecutive blocks of at
most ``block_size`` records (every block full except possibly the last), each block a :class:`Dataset`.

Guarantees (checked by tests/lib/problems/test_stream.py):

- **bit-identity**: the blocks, concatenated, equal ``problem.sample(n, rng2)`` bit for bit, where ``rng2`` is
  a generator in the same state as ``rng`` when ``stream`` was called, for every block size;
- **the caller's rng**: ``stream`` leaves ``rng`` in exactly the state ``sample(n, rng)`` leaves it in (the
  same ``bit_generator.state`` dict), at once, before any block is read; so code that draws from ``rng``
  after taking a stream draws the same bits as after ``sample``, however it interleaves with the blocks;
- **re-iterable**: the records come from a private copy of the rng state taken at construction; every
  iteration starts again from that copy, so two passes yield identical blocks;
- **memory**: when ``bounded_memory`` is True (the problem declares a :class:`BlockSampler`) a pass holds
  O(block_size x d) memory: one block plus O(2^18) entries of raw draws;
- randomness comes only from the numpy ``Generator`` passed in;
- a memory-bounded stream pickles (it holds the sampler and the rng snapshot), so it can go to a worker.

How bit-identity is achieved.  A :class:`BlockSampler` draws its randomness as a fixed sequence of integer
calls (:class:`IntegerDraw`: ``rng.integers(low, high, size=(n,) or (n, width))``) and builds each record
from its own row of every call with row-wise float64 operations.  numpy's ``Generator.integers`` consumes
the bit stream value by value (one 32-bit word per value, plus Lemire rejections, for ranges below 2^32),
so ``integers(size=n)`` equals the concatenation of ``integers(size=b_k)`` for any split of n, and leaves
the same state.  A sampler whose calls come one after the other (all n values of call 1, then all of call
2) is streamed with one cursor per call: a copy of the generator advanced past the earlier calls.
Advancing is exact and O(1) for PCG64 / PCG64DXSM when the range is a power of two (no rejection: the
``advance`` jump plus the 32-bit buffer bookkeeping); otherwise the values are drawn and discarded in
chunks (O(block) memory).

Families without a block sampler (or whose records are not a row-wise function of the draws, such as
``random_least_squares``, whose features are a BLAS matrix product with row-count-dependent rounding) are
streamed by sampling all n records at construction (``bounded_memory`` False): still bit-identical and
re-iterable, but O(n d) memory.

The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dpsco_lib._validation import ParameterTypeError, check_int, check_rng, check_size
from dpsco_lib.problems.dataset import Dataset

__all__ = ["DEFAULT_BLOCK_ENTRIES", "BlockSampler", "DataStream", "IntegerDraw", "problem_stream"]

#: ``block_size=None`` means max(1, DEFAULT_BLOCK_ENTRIES // d) records per block (8 MiB of float64 features).
DEFAULT_BLOCK_ENTRIES = 1 << 20
#: Raw draws are made in row chunks of at most this many entries inside a block (2 MiB of int64 each).
_CHUNK_ENTRIES = 1 << 18
#: Bit generators whose ``advance`` jumps over 64-bit outputs and whose 32-bit draws use the one-word buffer
#: ``has_uint32`` / ``uinteger`` of their state (checked against real draws by the tests).
_ADVANCEABLE = (np.random.PCG64, np.random.PCG64DXSM)


def _skip_uint32(bitgen: Any, m: int) -> None:
    """Advance ``bitgen`` exactly as m calls of its 32-bit draw would (PCG64 / PCG64DXSM only).

    The 32-bit draw returns the buffered upper half of the previous 64-bit output when there is one, else
    draws a 64-bit output, returns its lower half and buffers the upper half.  The final state, including the
    (possibly stale) buffered word, is rebuilt exactly, so ``bitgen.state`` compares equal.
    """
    if m == 0:
        return
    state = bitgen.state
    has, word = state["has_uint32"], state["uinteger"]
    if has:
        m, has = m - 1, 0
    if m > 0:
        state["has_uint32"] = 0
        bitgen.state = state
        outputs = (m + 1) // 2
        if outputs > 1:
            bitgen.advance(outputs - 1)
        word, has = int(bitgen.random_raw()) >> 32, m % 2
    state = bitgen.state
    state["has_uint32"], state["uinteger"] = has, word
    bitgen.state = state


@dataclass(frozen=True)
class IntegerDraw:
    """One sampler call ``rng.integers(low, high, size=(rows,))`` (``width`` None) or ``size=(rows, width)``.

    The default int64 dtype is part of the contract: it fixes how many 32-bit words each value consumes.
    """

    low: int
    high: int
    width: int | None = None

    def __post_init__(self) -> None:
        check_int(self.low, "low")
        check_int(self.high, "high", lo=self.low + 1)
        if self.width is not None:
            check_int(self.width, "width", lo=1)

    def shape(self, rows: int) -> tuple[int, ...]:
        return (rows,) if self.width is None else (rows, self.width)

    def __call__(self, rng: np.random.Generator, rows: int) -> np.ndarray:
        """The raw values for ``rows`` records (int64)."""
        return rng.integers(self.low, self.high, size=self.shape(rows))

    def skip(self, rng: np.random.Generator, rows: int) -> None:
        """Advance ``rng`` exactly as ``self(rng, rows)`` would, in O(chunk) memory (O(1) time when exact)."""
        span = self.high - self.low
        count = rows * (self.width or 1)
        if span == 1 or count == 0:
            return  # a one-value range consumes no randomness
        exact = span & (span - 1) == 0 and span <= 1 << 32  # power of two: one 32-bit word per value
        if exact and type(rng.bit_generator) in _ADVANCEABLE:
            _skip_uint32(rng.bit_generator, count)
            return
        step = max(1, _CHUNK_ENTRIES // (self.width or 1))
        for lo in range(0, rows, step):
            self(rng, min(step, rows - lo))


class BlockSampler(ABC):
    """A record sampler whose draws are row-sequential, so that its records can be streamed bit for bit.

    Contract: the randomness of n records is exactly the calls ``draw(rng, n)`` for ``draw`` in
    :meth:`draws`, in that order, and :meth:`fill` builds the records of some rows from those rows of each
    call's values with row-wise float64 operations only (the result for a row never depends on other rows or
    on how many rows are filled at once).  ``sampler(n, rng)`` returns ``(X, y)`` (y None when
    ``labelled`` is False), as the ``sampler`` of :class:`~dpsco_lib.problems.LeastSquares`.
    """

    labelled: ClassVar[bool] = True

    @abstractmethod
    def draws(self) -> tuple[IntegerDraw, ...]:
        """The integer calls of one sample, in order."""

    @abstractmethod
    def n_features(self) -> int:
        """d, the number of feature columns of a record."""

    @abstractmethod
    def fill(self, raw: tuple[np.ndarray, ...], X: np.ndarray, y: np.ndarray | None) -> None:
        """Write the records of the rows whose raw values are ``raw`` into ``X`` (rows, d) and ``y`` (rows,)."""

    def __call__(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray | None]:
        raw = tuple(draw(rng, n) for draw in self.draws())
        X = np.empty((n, self.n_features()))
        y = np.empty(n) if self.labelled else None
        self.fill(raw, X, y)
        return X, y

    def skip(self, n: int, rng: np.random.Generator) -> None:
        """Advance ``rng`` exactly as ``self(n, rng)`` would, without building the records."""
        for draw in self.draws():
            draw.skip(rng, n)

    def blocks(self, n: int, block_size: int, rng: np.random.Generator) -> Iterator[Dataset]:
        """The n records of ``self(n, rng)`` in blocks of ``block_size`` (last one shorter); consumes ``rng``.

        One cursor per call: cursor k is a copy of ``rng`` advanced past calls 0..k-1 for all n rows.
        """
        draws = self.draws()
        cursors = []
        for k, draw in enumerate(draws):
            cursors.append(rng if k == len(draws) - 1 else copy.deepcopy(rng))
            if k < len(draws) - 1:
                draw.skip(rng, n)
        d = self.n_features()
        chunk = max(1, _CHUNK_ENTRIES // max([d, *(draw.width or 1 for draw in draws)]))
        for start in range(0, n, block_size):
            rows = min(block_size, n - start)
            X = np.empty((rows, d))
            y = np.empty(rows) if self.labelled else None
            for lo in range(0, rows, chunk):
                hi = min(rows, lo + chunk)
                raw = tuple(draw(cur, hi - lo) for draw, cur in zip(draws, cursors, strict=True))
                self.fill(raw, X[lo:hi], None if y is None else y[lo:hi])
            yield Dataset(X, y)


class DataStream:
    """n records in blocks of at most ``block_size`` (streaming data); see the module docstring.

    Iterating yields the blocks; a stream can be iterated any number of times and every pass yields the same
    blocks. ``n_blocks`` is ceil(n / block_size). Build one with ``problem.stream(n, rng, block_size)``
    (:func:`problem_stream`) or :meth:`from_dataset`.

    Parameters
    ----------
    n, d, block_size : int
        Number of records, feature columns, and records per block (every block but the last is full).
    blocks : callable () -> iterator of Dataset
        Starts one pass; every call must yield the same blocks (the stream checks their sizes).
    bounded_memory : bool
        True when a pass holds O(block_size x d) memory, False when the records are held in memory.
    """

    __slots__ = ("_blocks", "_block_size", "_bounded", "_d", "_n")

    def __init__(
        self, n: int, d: int, block_size: int, blocks: Callable[[], Iterator[Dataset]], *, bounded_memory: bool
    ) -> None:
        self._n = check_int(n, "n", lo=1)
        self._d = check_size(d, "d", lo=1)
        self._block_size = check_int(block_size, "block_size", lo=1)
        if not callable(blocks):
            raise TypeError(f"blocks must be a callable returning an iterator of Datasets, got {type(blocks).__name__}")
        self._blocks = blocks
        self._bounded = bool(bounded_memory)

    @classmethod
    def from_dataset(cls, data: Dataset, block_size: int) -> DataStream:
        """The records of ``data`` in blocks (row views, no copy); ``bounded_memory`` is False."""
        if not isinstance(data, Dataset):
            raise TypeError(f"data must be a dpsco_lib.problems.Dataset, got {type(data).__name__}")
        block_size = check_int(block_size, "block_size", lo=1)
        return cls(data.n, data.d, block_size, _DatasetBlocks(data, block_size), bounded_memory=False)

    @property
    def n(self) -> int:
        """Number of records."""
        return self._n

    @property
    def d(self) -> int:
        """Number of feature columns of a record."""
        return self._d

    @property
    def block_size(self) -> int:
        """Records per block (the last block may hold fewer)."""
        return self._block_size

    @property
    def n_blocks(self) -> int:
        """ceil(n / block_size)."""
        return -(-self._n // self._block_size)

    @property
    def bounded_memory(self) -> bool:
        """True when a pass holds O(block_size x d) memory rather than all n records."""
        return self._bounded

    def __iter__(self) -> Iterator[Dataset]:
        seen = 0
        for block in self._blocks():
            want = min(self._block_size, self._n - seen)
            if block.n != want or block.d != self._d:
                raise RuntimeError(f"stream block {block!r} after {seen} records: expected {want} x {self._d}")
            seen += block.n
            yield block
        if seen != self._n:
            raise RuntimeError(f"stream ended after {seen} of {self._n} records")

    def materialize(self) -> Dataset:
        """All n records as one Dataset (O(n d) memory: for tests and small n)."""
        X = np.empty((self._n, self._d))
        ys: list[np.ndarray] = []
        extras: dict[str, list[np.ndarray]] = {}
        lo = 0
        for block in self:
            X[lo:lo + block.n] = block.X
            lo += block.n
            if block.y is not None:
                ys.append(block.y)
            for key, val in block.extras.items():
                extras.setdefault(key, []).append(val)
        y = np.concatenate(ys) if ys else None
        return Dataset(X, y, {k: np.concatenate(v) for k, v in extras.items()})

    def __repr__(self) -> str:
        return (f"DataStream(n={self._n}, d={self._d}, block_size={self._block_size}, "
                f"n_blocks={self.n_blocks}, bounded_memory={self._bounded})")


def _block_size(block_size: int | None, d: int) -> int:
    if block_size is None:
        return max(1, DEFAULT_BLOCK_ENTRIES // max(1, d))
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)):
        raise ParameterTypeError(f"block_size must be an integer >= 1 or None, got {block_size!r}")
    return check_int(block_size, "block_size", lo=1)


def problem_stream(problem: Any, n: int, rng: np.random.Generator, block_size: int | None = None) -> DataStream:
    """The stream of ``problem.sample(n, rng)`` in blocks (the body of ``Problem.stream`` / ``SaddleProblem.stream``).

    Parameters
    ----------
    problem : Problem or SaddleProblem
        Uses ``problem._block_sampler()`` (a :class:`BlockSampler`, or None) and ``problem.sample``.
    n : int
        Number of records, >= 1 (ValueError otherwise).
    rng : numpy.random.Generator
        Advanced at once exactly as ``problem.sample(n, rng)`` would advance it (ParameterTypeError if not a
        Generator).
    block_size : int or None
        Records per block, >= 1 (ValueError; a non-integer raises ParameterTypeError, both a TypeError and a
        ValueError); None means
        max(1, DEFAULT_BLOCK_ENTRIES // d).

    Returns
    -------
    DataStream
        Bit-identical to ``problem.sample(n, copy_of_rng)`` block by block and re-iterable;
        ``bounded_memory`` True when the problem has a block sampler, else the n records were sampled at once.
    """
    n = check_int(n, "n", lo=1)
    rng = check_rng(rng)
    sampler = problem._block_sampler()
    d = sampler.n_features() if sampler is not None else None
    block_size = _block_size(block_size, d if d is not None else _data_dim(problem))
    if sampler is None:
        return DataStream.from_dataset(problem.sample(n, rng), block_size)
    snapshot = copy.deepcopy(rng)
    sampler.skip(n, rng)
    return DataStream(n, d, block_size, _SamplerBlocks(sampler, n, block_size, snapshot), bounded_memory=True)


@dataclass(frozen=True)
class _SamplerBlocks:
    """One pass of a block sampler from a private copy of the rng snapshot (picklable, unlike a closure)."""

    sampler: BlockSampler
    n: int
    block_size: int
    snapshot: np.random.Generator

    def __call__(self) -> Iterator[Dataset]:
        return self.sampler.blocks(self.n, self.block_size, copy.deepcopy(self.snapshot))


@dataclass(frozen=True)
class _DatasetBlocks:
    """One pass over an in-memory dataset: row views of at most ``block_size`` records."""

    data: Dataset
    block_size: int

    def __call__(self) -> Iterator[Dataset]:
        for lo in range(0, self.data.n, self.block_size):
            yield self.data[lo:lo + self.block_size]


def _data_dim(problem: Any) -> int:
    """Feature columns of a record: ``data_dim`` for saddle problems, ``d`` for convex programs."""
    return int(getattr(problem, "data_dim", None) or problem.d)
