"""Benchmark cases: the problems, the per-sample-gradient floor and one call per private algorithm.

The *floor* of a problem at a fixed point is one vectorized pass computing all ``n`` per-sample gradients at the
centre of the feasible set: for least squares the raw numpy expression ``(A @ x - b)[:, None] * A`` (not the
library's gradient function), for the other problems ``problem._grad(x, data)`` (a
:class:`~dpsco_lib.problems.Problem`) or ``_grad_x`` and ``_grad_y`` (a :class:`~dpsco_lib.problems.SaddleProblem`).
It is computed in row blocks of at most ``FLOOR_BLOCK_ENTRIES`` entries so that the ``(n, d)`` gradient matrix
(8 GB at ``n = 1e5``, ``d = 1e4``) is never materialized; a least-squares block's gradients are summed over the
records (the batch gradient, accumulated across blocks), the other blocks reduced to a checksum, so the work
cannot be optimized away.
Every single-pass algorithm must at least read each record and form its gradient once, so
``wall time / floor`` measures the algorithm's overhead over the cheapest possible pass over the data.

Problems (records are generated in row blocks into one preallocated float64 matrix):

* ``ls_simplex``: :func:`~dpsco_lib.problems.least_squares.hard_least_squares` with ``p = 1`` over the simplex
  (VR Frank-Wolfe, SMD, noisy SGD, DP-SGD, anytime SMD);
* ``ls_l1ball``: the same with ``p = 1`` over the unit l1 ball, ``2d`` vertices (Poly-SFW, Spec F1: its ``n |V| / 2``
  report-noisy-min draws make it the harder of the two polytopes);
* ``ls_lp``: the same family with ``p = 1.5`` over the unit ``l_1.5`` ball (GG-VR-SFW, Spec F3);
* ``bilinear``: :func:`~dpsco_lib.problems.games.random_bilinear_game` with ``dx = d // 2``, ``dy = d - dx``
  (records of length ``d``; Algorithm 1 and the other saddle-point algorithms).

The *sweep-scaling* case reproduces one real paper sweep of the book, the Algorithm 1 gap-vs-``n`` sweep of
``notebooks/09_private_smd_saddle.ipynb`` (Spec A1, Thm 3.1 of [GGP24]): :func:`sweep_gap_vs_n` is that
notebook's task (``smd_checks.a1_gap_task`` with the notebook's constants, one replicate per task) and
:func:`sweep_grid` its paper grid (15 points); the notebook runs ``SWEEP_SEEDS`` replicates from ``SWEEP_SEED``.

The *streaming* case (:func:`stream_poly_sfw`) runs Poly-SFW on ``STREAM_N = 1e7`` records of dimension 100 read
from ``problem.stream`` in blocks (never all in memory) and measures its wall time, peak RSS and excess risk.

Algorithms whose module is absent (written by other helpers) are reported as skipped, never silently dropped.
"""

from __future__ import annotations

import importlib
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpsco_lib.problems.base import Problem, SaddleProblem
from dpsco_lib.problems.dataset import Dataset

__all__ = [
    "ALGORITHMS",
    "FLOOR_BLOCK_ENTRIES",
    "PROBLEMS",
    "AlgorithmCase",
    "floor_pass",
    "make_problem",
    "resolve",
    "discrete_sampler_rates",
    "stream_poly_sfw",
    "sweep_gap_vs_n",
    "sweep_grid",
]

#: Largest block (rows x columns) of per-sample gradients the floor forms at once (16 MB of float64).
FLOOR_BLOCK_ENTRIES = 2_000_000
#: Rows per block when generating data (bounds the sampler's temporaries).
_GEN_BLOCK_ENTRIES = 5_000_000

EPSILON = 1.0
DELTA = 1e-6

PROBLEMS = ("ls_simplex", "ls_l1ball", "ls_lp", "bilinear")


def make_problem(kind: str, n: int, d: int, seed: int) -> tuple[Any, Dataset]:
    """(problem, n records) of the benchmark problem ``kind`` in dimension ``d`` (records of length ``d``)."""
    from dpsco_lib.problems.games import random_bilinear_game
    from dpsco_lib.problems.least_squares import hard_least_squares

    rng = np.random.default_rng(seed)
    if kind == "ls_simplex":
        problem: Any = hard_least_squares(1.0, d)
    elif kind == "ls_l1ball":
        problem = hard_least_squares(1.0, d, set_kind="l1ball")
    elif kind == "ls_lp":
        problem = hard_least_squares(1.5, d)
    elif kind == "bilinear":
        problem = random_bilinear_game(d // 2, d - d // 2, rng)
    else:
        raise ValueError(f"kind must be one of {PROBLEMS}, got {kind!r}")
    rows = max(1, _GEN_BLOCK_ENTRIES // d)
    X = np.empty((n, d))
    y = None
    for lo in range(0, n, rows):
        part = problem.sample(min(rows, n - lo), rng)
        X[lo:lo + part.n] = part.X
        if part.y is not None:
            if y is None:
                y = np.empty(n)
            y[lo:lo + part.n] = part.y
    return problem, Dataset(X, y)


def _center_point(problem: Any) -> Any:
    if isinstance(problem, SaddleProblem):
        x, y = problem.x_set.center(), problem.y_set.center()
        return np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    return np.asarray(problem.feasible_set.center(), dtype=np.float64)


def floor_pass(problem: Any, data: Dataset) -> float:
    """One pass computing every per-sample gradient at the centre, in row blocks; returns a checksum.

    For least squares each block's gradients ``(A @ x - b)[:, None] * A`` are formed in raw numpy and summed over
    the records (the checksum is the first coordinate of the batch gradient sum); for a saddle problem both partial
    gradients ``grad_x`` and ``grad_y`` of every record are formed.
    """
    from dpsco_lib.problems.least_squares import LeastSquares

    n = data.n
    point = _center_point(problem)
    width = problem.dx + problem.dy if isinstance(problem, SaddleProblem) else problem.d
    rows = max(1, FLOOR_BLOCK_ENTRIES // width)
    total = 0.0
    if isinstance(problem, LeastSquares):
        A, b = data.X, data.y
        acc = np.zeros(width)
        for lo in range(0, n, rows):
            blk = A[lo:lo + rows]
            acc += ((blk @ point - b[lo:lo + rows])[:, None] * blk).sum(axis=0)
        return float(acc[0])
    for lo in range(0, n, rows):
        block = data[lo:lo + rows]
        if isinstance(problem, SaddleProblem):
            x, y = point
            gx = problem._grad_x(x[None], y[None], block)
            gy = problem._grad_y(x[None], y[None], block)
            total += float(gx[0, :, 0].sum() + gy[0, :, 0].sum())
        else:
            g = problem._grad(point, block)
            total += float(g[:, 0].sum())
    return total


@dataclass(frozen=True)
class AlgorithmCase:
    """One private (or baseline) algorithm run at its theory defaults on a benchmark problem.

    ``prepare(problem, data)`` computes, untimed, the keyword arguments that are calibration rather than the run
    (DP-SGD's noise multiplier); ``call(fn, problem, data, rng, **prepared)`` runs it; ``passes(result, n)`` is
    the number of per-sample gradient evaluations divided by ``n`` (so ``ratio / passes`` is the overhead per
    data pass).
    """

    name: str
    module: str
    function: str
    problem: str
    spec: str
    call: Callable[..., Any]
    passes: Callable[[Any, int], float] = field(default=lambda res, n: 1.0)
    note: str = ""
    prepare: Callable[[Any, Dataset], dict[str, Any]] = field(default=lambda problem, data: {})


def _private(fn: Callable[..., Any], problem: Any, data: Dataset, rng: np.random.Generator, **kw: Any) -> Any:
    return fn(problem, data, epsilon=EPSILON, delta=DELTA, rng=rng, **kw)


def _dp_sgd_prepare(problem: Any, data: Dataset) -> dict[str, Any]:
    # One expected epoch: Poisson rate q = 1/sqrt(n), T = ceil(1/q) steps; clip at the l2 Lipschitz bound; the
    # runner calibrates the noise multiplier meeting (EPSILON, DELTA) by its default accountant ("best": the PLD,
    # 5-15 s): warm its cache here (calibration, not timed).
    from dpsco_lib.algorithms.dp_sgd import dp_sgd_noise_multiplier
    from dpsco_lib.algorithms.noisy_sgd import l2_constants

    q = 1.0 / math.sqrt(data.n)
    steps = math.ceil(1.0 / q)
    L0_2, D_2 = l2_constants(problem)
    dp_sgd_noise_multiplier(EPSILON, delta=DELTA, sampling_rate=q, steps=steps)
    return {"sampling_rate": q, "steps": steps, "clip": L0_2, "step_size": D_2 / (L0_2 * math.sqrt(steps))}


def _dp_sgd(fn: Callable[..., Any], problem: Any, data: Dataset, rng: np.random.Generator, **kw: Any) -> Any:
    return fn(problem, data, epsilon=EPSILON, delta=DELTA, rng=rng, **kw)


def _grad_evals(key: str) -> Callable[[Any, int], float]:
    def passes(res: Any, n: int) -> float:
        return float(res.info.get(key, n)) / n

    return passes


def _case(name: str, problem: str, call: Callable[..., Any], *rest: Any, **kw: Any) -> AlgorithmCase:
    """A case whose module, function and spec come from the algorithm registry (its ``benchmark`` field)."""
    from dpsco_lib.algorithms.registry import REGISTRY

    rec = next((r for r in REGISTRY if r.benchmark == name), None)
    if rec is None:
        raise ValueError(f"no registered algorithm has benchmark={name!r}")
    return AlgorithmCase(name, rec.runner.__module__, rec.runner.__name__, problem, rec.spec, call, *rest, **kw)


ALGORITHMS: tuple[AlgorithmCase, ...] = (
    _case("noisy_sgd", "ls_simplex",
          lambda f, p, d, r: _private(f, p, d, r), _grad_evals("gradient_evaluations"),
          "BFTT19 defaults: T*b gradient evaluations (several epochs over the data)"),
    _case("poly_sfw", "ls_l1ball",
          lambda f, p, d, r: _private(f, p, d, r), _grad_evals("gradient_evaluations"),
          "l1 ball: n/2 sequential single-record steps, n|V|/2 = n d Laplace draws"),
    _case("private_vr_frank_wolfe", "ls_simplex", lambda f, p, d, r: _private(f, p, d, r),
          _grad_evals("gradient_evaluations")),
    _case("gg_vr_sfw_naive", "ls_lp",
          lambda f, p, d, r: _private(f, p, d, r, variant="naive")),
    _case("gg_vr_sfw_tree", "ls_lp",
          lambda f, p, d, r: _private(f, p, d, r, variant="tree")),
    _case("private_smd_saddle", "bilinear", lambda f, p, d, r: _private(f, p, d, r, regime="quadratic")),
    _case("dp_sgd", "ls_simplex", _dp_sgd,
          lambda res, n: res.info["mean_batch_size"] * res.params["steps"] / n,
          "one expected epoch: q = 1/sqrt(n), T = sqrt(n) steps", _dp_sgd_prepare),
    _case("smd (non-private)", "ls_simplex",
          lambda f, p, d, r: f(p, d, rng=r), _grad_evals("n_grad_evals"),
          "entropic SMD, n sequential single-record steps"),
    _case("bias_reduced_smd_saddle", "bilinear", lambda f, p, d, r: _private(f, p, d, r)),
    _case("boosted_saddle", "bilinear",
          lambda f, p, d, r: _private(f, p, d, r)),
    _case("anytime_smd_sco", "ls_simplex",
          lambda f, p, d, r: _private(f, p, d, r), _grad_evals("gradient_evaluations")),
)


def resolve(case: AlgorithmCase) -> tuple[Callable[..., Any] | None, str]:
    """(the algorithm function, "") or (None, why it is unavailable)."""
    try:
        mod = importlib.import_module(case.module)
    except ImportError as exc:
        return None, f"module {case.module} not available ({exc})"
    fn = getattr(mod, case.function, None)
    if fn is None:
        return None, f"{case.module} has no {case.function}"
    return fn, ""


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """(wall seconds, result) of one call."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def is_problem(obj: Any) -> bool:
    return isinstance(obj, (Problem, SaddleProblem))


# ------------------------------------------------------------------------------------------ sweep scaling
#: The default ``seed`` of notebook 09's parameters cell (its sweep's ``base_seed``).
SWEEP_SEED = 20261122
#: Notebook 09's regimes, in its order (``smd_checks.A1_EXPONENTS``).
SWEEP_REGIMES: tuple[str, ...] = ("quadratic", "second_order", "first_order")
#: Notebook 09's paper ``N_GRID`` (the same for every regime).
SWEEP_N: tuple[int, ...] = (4000, 10000, 25000, 64000, 160000)
#: regime -> sample sizes (every regime runs the whole ``SWEEP_N``).
SWEEP_N_GRID: dict[str, tuple[int, ...]] = {r: SWEEP_N for r in SWEEP_REGIMES}
#: The constant entries of every grid point of notebook 09's sweep: ``D``, ``MARGINS``, ``EPS``, runs per
#: replicate and one replicate per task (the replicates are the sweep's seeds).
SWEEP_POINT: dict[str, Any] = {"d": 10, "margins": [0.01, 0.1, 1.0], "epsilon": 1.0, "runs": 8, "reps": 1}
#: Notebook 09's paper ``REPS``: the sweep's ``seeds``.
SWEEP_SEEDS = 5
SWEEP_SOURCE = ("notebooks/09_private_smd_saddle.ipynb, sweep 'gap vs n' (Spec A1): Algorithm 1 at eps = 1, "
                "delta = n^-1.1 on the planted-vertex family (three margins, 8 runs per replicate), three regimes, "
                "paper grid, paper replicates")


def sweep_gap_vs_n(*, rng: np.random.Generator, regime: str, n: int, d: int = 10,
                   margins: Any = (0.01, 0.1, 1.0), epsilon: float = 1.0, runs: int = 8,
                   reps: int = 1) -> dict[str, Any]:
    r"""Notebook 09's sweep task: one replicate of :func:`~dpsco_book.private_smd_rates.a1_gap_task`.

    Draws ``n`` fresh records of the planted matrix game (Spec A1; Thm 3.1 of [GGP24]), runs Algorithm 1 in
    ``regime`` at ``eps = 1``, ``delta = n^-1.1`` under the default accountant on every margin of the family
    (``runs`` independent runs each) and returns the exact duality gaps with the parameters the notebook
    records.  The defaults are notebook 09's grid constants (``SWEEP_POINT``).
    """
    if regime not in SWEEP_REGIMES:
        raise ValueError(f"regime must be one of {list(SWEEP_REGIMES)}, got {regime!r}")
    from dpsco_book.private_smd_rates import a1_gap_task

    return a1_gap_task(rng=rng, regime=regime, n=n, d=d, margins=list(margins), epsilon=epsilon, runs=runs,
                       reps=reps)


def sweep_grid(n_grid: dict[str, tuple[int, ...]] | None = None) -> list[dict[str, Any]]:
    """The sweep's grid points ``{"regime", "n"}`` (default: notebook 09's paper grid), regime by regime.

    The notebook's grid points are these with the constant entries ``SWEEP_POINT`` (the defaults of
    :func:`sweep_gap_vs_n`), ordered largest ``n`` first: the same tasks, with other random streams (a task's
    generator depends on its grid point).
    """
    n_grid = SWEEP_N_GRID if n_grid is None else n_grid
    bad = sorted(set(n_grid) - set(SWEEP_REGIMES))
    if bad:
        raise ValueError(f"n_grid regimes must be among {list(SWEEP_REGIMES)}, got {bad}")
    return [{"regime": r, "n": int(n)} for r in SWEEP_REGIMES if r in n_grid for n in n_grid[r]]


# ------------------------------------------------------------------------------------------ streaming
#: The streaming case of the issue "streaming data": Poly-SFW (Spec F1) on ``STREAM_N`` records of
#: ``hard_least_squares(1.0, STREAM_D, set_kind="l1ball")`` streamed in blocks of ``STREAM_BLOCK`` records, at
#: ``(STREAM_EPSILON, n^-1.1)`` by the accountant ``"best"``; acceptance: peak memory under ``STREAM_TARGET_MB``.
STREAM_N = 10_000_000
STREAM_D = 100
STREAM_BLOCK = 65_536
STREAM_EPSILON = 2.0
STREAM_TARGET_MB = 1024.0


def peak_rss_mb() -> float:
    """Peak resident memory (MB) of this process's own address space.

    Linux: ``VmHWM`` of ``/proc/self/status``, the high-water mark of the current memory map, which starts afresh
    at ``exec``. ``ru_maxrss`` does not: the kernel carries the parent's peak into a child across ``fork``/``exec``,
    so a run started from a notebook kernel that already held 1.2 GB reported 1.2 GB whatever it used. Elsewhere
    ``ru_maxrss`` (KB on Linux, bytes on macOS) is the fallback.
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return float(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024.0 * 1024.0) if sys.platform == "darwin" else peak / 1024.0


def stream_poly_sfw(*, n: int = STREAM_N, d: int = STREAM_D, block_size: int = STREAM_BLOCK, seed: int = 0,
                    accountant: str = "best", epsilon: float = STREAM_EPSILON,
                    delta: float | None = None, step_constant: float | str = "auto") -> dict[str, Any]:
    """One streamed Poly-SFW run in this process, measured: wall and CPU seconds, peak RSS, excess risk.

    ``delta`` defaults to the book's rule ``n^-1.1`` (:func:`dpsco_book.privacy_rule.delta_for_n`); the accountant
    to the library's default ``"best"``; ``step_constant`` is ``c`` in the step ``eta = c ln(n/ln|V|)/T``: the
    library's default ``"auto"`` minimizes the bound model
    (:func:`dpsco_lib.algorithms.poly_sfw.poly_sfw_auto_step_constant`), ``1`` is the theorem's step as stated
    (``c >= 1/2`` keeps the Frank-Wolfe contraction ``(ln|V|/n)^c`` within the theorem's ``n^-1/2`` rate).
    ``step_constant`` in the record is the constant used, ``step_constant_asked`` what was asked.

    The records are ``problem.stream(n, default_rng(seed), block_size)`` (never all in memory), the algorithm's
    generator is ``default_rng(seed + 1000)``. ``seconds`` covers the stream's construction and the run;
    ``peak_rss_mb`` is the process's peak resident set after the run (:func:`peak_rss_mb`; ``rss_before_mb`` before
    it: the interpreter and
    imports), so run it in a fresh process. ``ratio`` = excess risk / the trivial excess risk of ``x = 0``.
    """
    from dpsco_book.privacy_rule import delta_for_n
    from dpsco_lib.algorithms.poly_sfw import run_poly_sfw
    from dpsco_lib.problems.least_squares import hard_least_squares

    delta = delta_for_n(n) if delta is None else float(delta)
    problem = hard_least_squares(1.0, d, set_kind="l1ball")
    trivial = problem.excess_risk(problem.feasible_set.center())  # solves the population optimum (untimed)
    before = peak_rss_mb()
    c0 = time.process_time()
    seconds, (stream, res) = timed(lambda: _stream_run(run_poly_sfw, problem, n, block_size, seed, accountant,
                                                       epsilon, delta, step_constant))
    cpu = time.process_time() - c0
    peak = peak_rss_mb()
    excess = problem.excess_risk(res.x)
    return {"n": n, "d": d, "block_size": block_size, "seed": seed, "accountant": accountant, "epsilon": epsilon,
            "delta": delta, "step_constant": float(res.params["step_constant"]),
            "step_constant_asked": str(step_constant if isinstance(step_constant, str) else float(step_constant)),
            "bounded_memory": stream.bounded_memory,
            "seconds": seconds, "cpu_seconds": cpu,
            "peak_rss_mb": peak, "rss_before_mb": before, "excess_risk": excess, "trivial_excess_risk": trivial,
            "ratio": excess / trivial, "rate_bound": res.params["rate_bound"], "eps0": res.params["eps0"],
            "certified_epsilon": res.certified_epsilon(delta)}


def _stream_run(run: Callable[..., Any], problem: Any, n: int, block_size: int, seed: int, accountant: str,
                epsilon: float, delta: float, step_constant: float | str = "auto") -> tuple[Any, Any]:
    stream = problem.stream(n, np.random.default_rng(seed), block_size)
    return stream, run(problem, stream, epsilon=epsilon, delta=delta, rng=np.random.default_rng(seed + 1000),
                       accountant=accountant, step_constant=step_constant)


def discrete_sampler_rates(n: int = 3000, seed: int = 0, scale: float = 10.0) -> dict[str, Any]:
    """Samples per second of the exact discrete samplers (CKS20; :mod:`dpsco_lib.privacy.discrete`) against
    numpy's float Laplace and normal samplers, at noise scale ``scale`` (grid steps), in this process."""
    from dpsco_lib.privacy.discrete import discrete_gaussian, discrete_laplace

    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {"n": int(n), "seed": int(seed), "scale": float(scale)}
    for name, draw, m in (("discrete_laplace", lambda k: discrete_laplace(scale, rng=rng, size=k), n),
                          ("discrete_gaussian", lambda k: discrete_gaussian(scale, rng=rng, size=k), n),
                          ("float_laplace", lambda k: rng.laplace(0.0, scale, size=k), 1000 * n),
                          ("float_gaussian", lambda k: rng.normal(0.0, scale, size=k), 1000 * n)):
        t0 = time.perf_counter()
        draw(m)
        out[f"{name}_per_second"] = m / (time.perf_counter() - t0)
    out["laplace_slowdown"] = out["float_laplace_per_second"] / out["discrete_laplace_per_second"]
    out["gaussian_slowdown"] = out["float_gaussian_per_second"] / out["discrete_gaussian_per_second"]
    return out
