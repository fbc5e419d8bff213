"""Performance suite of dpsco-companion (``make bench``): writes ``benchmarks/results.json``.

Measured, every time in the same process:

1. **Algorithms vs the floor.** For each private algorithm (and the non-private SMD baseline) at
   ``(n, d)`` in ``DEFAULT_SIZES``: the wall time of one run at the theory defaults (minimum over repeats),
   the *floor* (one vectorized pass computing all ``n`` per-sample gradients of the same problem at a fixed
   point; :func:`bench_cases.floor_pass`), their ratio (also in process CPU time, which a shared machine
   inflates much less than wall time), the number of data passes the algorithm makes
   (gradient evaluations / ``n``) and the ratio per pass, and the peak traced memory (``tracemalloc``,
   one extra run) of the run.  Each problem also records the time of ``problem.validate_data`` (every
   algorithm checks the records against the declared bounds first).
2. **Accountant vs dp-accounting** on the same query (cold caches; minimum over repeats): the RDP
   composition of 1e5 Gaussian steps, and the RDP of 1e4 Poisson-subsampled Gaussian steps.
3. **Exact optima**: cvxpy + Clarabel time of the population optimum of a least-squares problem over the
   simplex against ``d``.
4. **Book build**: per-notebook execution times at the smoke and paper profiles, read from
   ``_build/executed/timings-<profile>.json`` written by ``dpsco reproduce`` (absent -> ``null``).
5. **Sweep scaling** (key ``sweep_scaling``): the wall time of one real paper sweep of the book (notebook 09's
   Algorithm 1 gap-vs-``n`` sweep, :func:`bench_cases.sweep_gap_vs_n`) through
   :func:`dpsco_lib.experiments.run_sweep` with ``n_jobs = 1`` and ``n_jobs = 2``, the result cache disabled; the
   speedup, a check that both runs give identical records, ``os.cpu_count()`` and the load averages around
   each run (target: speedup >= 1.7 on two cores).
6. **Build times** (key ``build_times``, only with ``--time-command``): the wall time of a command such as
   ``make test`` or ``make book``, run and timed here, with its exit status and the load averages.
7. **Streaming** (key ``streaming``, only with ``--only streaming``): Poly-SFW on ``n = 1e7`` records of
   dimension 100 read block by block from ``problem.stream`` (:func:`bench_cases.stream_poly_sfw`), each run in a
   fresh interpreter: wall and CPU seconds, peak RSS (``VmHWM``, :func:`bench_cases.peak_rss_mb`) against the
   1 GiB target, excess risk over the trivial one (several seeds and accountants with ``--stream-seeds`` /
   ``--stream-accountants``).

8. **Discrete samplers** (key ``discrete_samplers``, only with ``--only discrete_samplers``): samples per second
   of the exact discrete Laplace and discrete Gaussian samplers (Canonne-Kamath-Steinke 2020) against numpy's
   float samplers at the same scale (:func:`bench_cases.discrete_sampler_rates`).

The last four are merged into an existing results file, so ``--only sweep_scaling`` and ``--time-command`` add
their entry without removing the others (and a full run keeps them).

Usage::

    python benchmarks/run.py                       # the full grid (minutes; 8 GB of data at n=1e5, d=1e4)
    python benchmarks/run.py --sizes 1e4x1e2 --repeats 1 --out /tmp/r.json
    python benchmarks/run.py --algorithms poly_sfw,smd --no-accountant --no-cvxpy --no-sweep-scaling
    python benchmarks/run.py --only sweep_scaling  # just the sweep-scaling case (about two minutes)
    python benchmarks/run.py --time-command "make test"
    python benchmarks/run.py --only streaming      # Poly-SFW on a 1e7 x 100 stream (minutes, under 1 GiB)

Timings on a shared machine are inflated by contention; ratios measured in one process are steadier.
The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import functools
import gc
import hashlib
import json
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import bench_cases as bc  # noqa: E402

SCHEMA = "dpsco-bench/1"
DEFAULT_SIZES: tuple[tuple[int, int], ...] = ((10_000, 100), (100_000, 1_000), (100_000, 10_000))
DEFAULT_CVXPY_DIMS: tuple[int, ...] = (10, 100, 1000)
ACCEPTANCE = {"n": 100_000, "d": 1_000, "max_ratio": 5.0}
ROOT = HERE.parent
#: Issue 10: two workers give at least this speedup over one on a notebook's paper sweep.
SWEEP_TARGET_SPEEDUP = 1.7
#: Issue 10: wall-time targets (seconds) of the build commands on the two-core machine.
BUILD_TARGETS: dict[str, float] = {"make test": 15 * 60.0, "make book": 30 * 60.0}
#: Keys written by ``--only sweep_scaling`` / ``--time-command``; a results file may hold only these.
EXTRA_KEYS = ("sweep_scaling", "build_times", "streaming", "discrete_samplers")
#: Keys of one streamed run (:func:`bench_cases.stream_poly_sfw`).
STREAM_KEYS = ("n", "d", "block_size", "seed", "accountant", "seconds", "cpu_seconds", "peak_rss_mb", "excess_risk",
               "trivial_excess_risk", "ratio", "bounded_memory")

ALGO_KEYS = ("name", "spec", "problem", "n", "d", "status", "note", "seconds", "seconds_all", "floor_seconds",
             "ratio", "passes", "ratio_per_pass", "peak_mb", "cpu_seconds", "floor_cpu_seconds", "cpu_ratio",
             "cpu_ratio_per_pass")


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _mem_available_bytes() -> float:
    """MemAvailable from /proc/meminfo (inf where unknown)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return float(line.split()[1]) * 1024.0
    except OSError:
        pass
    return math.inf


@contextlib.contextmanager
def _frozen_heap() -> Iterator[None]:
    """Move every object alive now (the imported modules of the interpreter or notebook kernel) out of the
    collector's reach for the block: the ``gc.collect()`` before each timing then scans only what the runs
    allocate, not the whole heap (tens of milliseconds per call in a kernel with scipy, cvxpy and matplotlib)."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _min_time(fn: Any, repeats: int) -> tuple[float, list[float], Any]:
    times, out = [], None
    for _ in range(repeats):
        gc.collect()
        t, out = bc.timed(fn)
        times.append(t)
    return min(times), times, out


def _min_wall_cpu(fn: Any, repeats: int) -> tuple[float, list[float], float, Any]:
    """(min wall seconds, all wall seconds, min process CPU seconds, result) over ``repeats`` calls."""
    walls, cpus, out = [], [], None
    for _ in range(repeats):
        gc.collect()
        c0 = time.process_time()
        t, out = bc.timed(fn)
        cpus.append(time.process_time() - c0)
        walls.append(t)
    return min(walls), walls, min(cpus), out


def _peak_mb(fn: Any) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 2**20


def bench_algorithms(
    sizes: tuple[tuple[int, int], ...],
    names: tuple[str, ...] | None = None,
    repeats: int | None = None,
    memory: bool = True,
    seed: int = 0,
    max_data_fraction: float = 0.45,
    log: Any = print,
    on_size: Any = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Time every algorithm case against its floor at every size; returns (algorithm rows, floor rows).

    ``on_size(rows, floors)``, if given, is called after each size (the CLI saves partial results with it).
    """
    cases = [c for c in bc.ALGORITHMS if names is None or c.name in names or c.name.split(" ")[0] in names]
    order = {c.name: k for k, c in enumerate(cases)}
    rows: list[dict[str, Any]] = []
    floors: list[dict[str, Any]] = []
    for n, d in sizes:
        reps = repeats if repeats is not None else (3 if n * d <= 10**7 else 1)
        need = 8.0 * n * d
        avail = _mem_available_bytes()
        kinds = sorted({c.problem for c in cases}, key=bc.PROBLEMS.index)
        for kind in kinds:
            kind_cases = [c for c in cases if c.problem == kind]
            if need > max_data_fraction * avail:
                why = (f"skipped: the data ({need / 2**30:.1f} GB) exceeds {max_data_fraction:.0%} of the available "
                       f"memory ({avail / 2**30:.1f} GB)")
                log(f"[{n}x{d}] {kind}: {why}")
                rows += [_row(c, n, d, "skipped", why) for c in kind_cases]
                continue
            available = []
            for c in kind_cases:
                fn, why = bc.resolve(c)
                if fn is None:
                    rows.append(_row(c, n, d, "skipped", why))
                else:
                    available.append((c, fn))
            if not available:
                continue
            kind_rows, floor_row = _bench_problem(kind, available, n, d, reps, memory, seed, log)
            rows += kind_rows
            floors.append(floor_row)
            gc.collect()
        # rows of a size in the order of bc.ALGORITHMS, whatever problem each case runs on
        done = len(rows) - sum(1 for r in rows if (r["n"], r["d"]) == (n, d))
        rows[done:] = sorted(rows[done:], key=lambda r: order[r["name"]])
        if on_size is not None:
            on_size(rows, floors)
    return rows, floors


def _bench_problem(
    kind: str, available: list[tuple[bc.AlgorithmCase, Any]], n: int, d: int, reps: int, memory: bool, seed: int,
    log: Any,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Generate the data of one problem, time its floor, then every available algorithm on it."""
    t0 = time.perf_counter()
    problem, data = bc.make_problem(kind, n, d, seed)
    gen = time.perf_counter() - t0
    floor, floor_all, floor_cpu, _ = _min_wall_cpu(lambda: bc.floor_pass(problem, data), max(3, reps))
    # every algorithm first checks the records against the problem's declared bounds: its share of a run
    validate, _, _ = _min_time(lambda: problem.validate_data(data), max(3, reps))
    floor_row = {"problem": kind, "n": n, "d": d, "seconds": floor, "seconds_all": floor_all,
                 "cpu_seconds": floor_cpu, "validate_seconds": validate, "generate_seconds": gen,
                 "data_mb": data.X.nbytes / 2**20}
    log(f"[{n}x{d}] {kind}: data {gen:.2f} s, floor {floor:.4f} s, validation {validate:.4f} s")
    rows = []
    for c, fn in available:
        def call(c: bc.AlgorithmCase = c, fn: Any = fn, kw: dict[str, Any] | None = None) -> Any:
            return c.call(fn, problem, data, np.random.default_rng(seed + 1), **(kw or {}))

        try:
            call = functools.partial(call, kw=c.prepare(problem, data))
            sec, sec_all, cpu, res = _min_wall_cpu(call, reps)
            peak = _peak_mb(call) if memory else None
            passes = float(c.passes(res, n))
        except Exception as exc:  # noqa: BLE001 - a failing case is reported, not fatal
            rows.append(_row(c, n, d, "error", f"{type(exc).__name__}: {exc}"))
            log(f"[{n}x{d}] {c.name}: ERROR {type(exc).__name__}: {exc}")
            continue
        row = _row(c, n, d, "ok", c.note)
        row.update(seconds=sec, seconds_all=sec_all, floor_seconds=floor, ratio=sec / floor,
                   passes=passes, ratio_per_pass=sec / floor / max(passes, 1.0), peak_mb=peak,
                   cpu_seconds=cpu, floor_cpu_seconds=floor_cpu, cpu_ratio=cpu / floor_cpu,
                   cpu_ratio_per_pass=cpu / floor_cpu / max(passes, 1.0))
        rows.append(row)
        log(f"[{n}x{d}] {c.name}: {sec:.3f} s = {sec / floor:.1f} x floor (CPU {cpu / floor_cpu:.1f} x; "
            f"{passes:.2f} passes)"
            + (f", peak {peak:.1f} MB" if peak is not None else ""))
    return rows, floor_row


def _row(c: bc.AlgorithmCase, n: int, d: int, status: str, note: str) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(ALGO_KEYS)
    row.update(name=c.name, spec=c.spec, problem=c.problem, n=n, d=d, status=status, note=note)
    return row


def bench_accountant(repeats: int = 3) -> list[dict[str, Any]]:
    """Our accountant vs dp-accounting's RDP accountant on two queries (cold caches, minimum over repeats)."""
    from dpsco_lib.privacy.accounting import PrivacyLedger
    from dpsco_lib.privacy.accounting import ledger as _ledger_mod

    delta = 1e-6
    queries = [
        ("gaussian_composition_1e5_steps", {"kind": "gaussian", "sigma": 100.0, "q": None, "count": 100_000}),
        ("subsampled_gaussian_rdp_1e4_steps", {"kind": "subsampled_gaussian", "sigma": 1.0, "q": 0.01,
                                               "count": 10_000}),
    ]
    try:
        import dp_accounting as dpa
    except ImportError:  # pragma: no cover - dp-accounting is a test dependency
        dpa = None
    out = []
    for name, q in queries:
        def ours(q: dict[str, Any] = q) -> float:
            cache = getattr(_ledger_mod, "_rdp_of", None)
            if cache is not None and hasattr(cache, "cache_clear"):
                cache.cache_clear()
            led = PrivacyLedger()
            if q["kind"] == "gaussian":
                led.record_gaussian(q["sigma"], count=q["count"])
            else:
                led.record_subsampled_gaussian(q["sigma"], q["q"], count=q["count"])
            return led.epsilon(delta, "rdp")

        t_ours, _, e_ours = _min_time(ours, repeats)
        row: dict[str, Any] = {"query": name, "delta": delta, **{k: v for k, v in q.items() if k != "kind"},
                               "ours_seconds": t_ours, "ours_epsilon": e_ours,
                               "dp_accounting_seconds": None, "dp_accounting_epsilon": None, "ratio": None}
        if dpa is not None:
            def ref(q: dict[str, Any] = q) -> float:
                acc = dpa.rdp.RdpAccountant()
                ev = dpa.GaussianDpEvent(q["sigma"])
                if q["kind"] != "gaussian":
                    ev = dpa.PoissonSampledDpEvent(q["q"], ev)
                acc.compose(ev, q["count"])
                return float(acc.get_epsilon(delta))

            t_ref, _, e_ref = _min_time(ref, repeats)
            row.update(dp_accounting_seconds=t_ref, dp_accounting_epsilon=e_ref, ratio=t_ours / t_ref)
        out.append(row)
    return out


def bench_cvxpy(dims: tuple[int, ...], seed: int = 0) -> list[dict[str, Any]]:
    """cvxpy + Clarabel time of the exact population optimum of least squares over the simplex (rank-20 Sigma)."""
    from dpsco_lib.geometry.sets import Simplex
    from dpsco_lib.problems.least_squares import random_least_squares

    # warm-up: the first solve of a process pays cvxpy's and Clarabel's one-off set-up costs
    random_least_squares(Simplex(3), 1.0, np.random.default_rng(seed), k=2).cvxpy_optimum()
    out = []
    for d in dims:
        problem = random_least_squares(Simplex(d), 1.0, np.random.default_rng(seed), k=min(d, 20))
        t, (_, f_star) = bc.timed(problem.cvxpy_optimum)
        out.append({"problem": "random_least_squares(simplex, k=20)", "d": d, "seconds": t, "optimum": f_star})
    return out


def book_timings(root: Path = ROOT) -> dict[str, Any]:
    """Per-notebook execution seconds of the last ``dpsco reproduce`` at each profile (``None`` if absent)."""
    out: dict[str, Any] = {}
    for profile in ("smoke", "paper"):
        path = root / "_build" / "executed" / f"timings-{profile}.json"
        if not path.is_file():
            out[profile] = None
            continue
        try:
            per = {str(k): float(v) for k, v in json.loads(path.read_text()).items()}
        except (ValueError, AttributeError):
            out[profile] = None
            continue
        out[profile] = {"notebooks": per, "total_seconds": sum(per.values()),
                        "slowest_seconds": max(per.values()) if per else 0.0, "source": str(path.relative_to(root))}
    return out


def _loadavg() -> list[float] | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:  # pragma: no cover - not available on this platform
        return None


def _records_digest(records: list[dict[str, Any]]) -> str:
    """sha256 of the records' canonical JSON (sorted keys; numpy scalars as Python numbers; NaN as NaN)."""
    def default(obj: Any) -> Any:
        return obj.item() if hasattr(obj, "item") else repr(obj)

    return hashlib.sha256(json.dumps(records, sort_keys=True, default=default).encode()).hexdigest()


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _shutdown_workers() -> None:
    """Stop joblib's reusable loky workers, so the next parallel sweep starts fresh ones (with this environment)."""
    from joblib.externals.loky import get_reusable_executor

    get_reusable_executor().shutdown(wait=True)


def bench_sweep_scaling(
    n_grid: dict[str, tuple[int, ...]] | None = None,
    seeds: int | None = None,
    base_seed: int = bc.SWEEP_SEED,
    jobs: tuple[int, ...] = (1, 2),
    log: Any = print,
) -> dict[str, Any]:
    """Wall time of notebook 09's A1 paper sweep through ``run_sweep`` at each ``n_jobs`` in ``jobs``.

    The sweep is :func:`bench_cases.sweep_gap_vs_n` over :func:`bench_cases.sweep_grid` (default: the paper
    grid) with ``seeds`` replicates (default: the paper profile's ``n_seeds``) and ``base_seed`` (default: the
    notebook's seed), so it recomputes exactly the records of that notebook cell.  The result cache is disabled
    (``DPSCO_NO_CACHE=1``, and an empty temporary ``DPSCO_CACHE_DIR`` checked to stay empty) and joblib's
    workers are restarted before each parallel run, so no run reuses another's records; a dask scheduler
    (``DPSCO_SCHEDULER``) is ignored.  One untimed task first imports the algorithm in this process.

    ``speedup = seconds(n_jobs = jobs[0]) / seconds(n_jobs = jobs[-1])``.  Each run also records the process
    CPU seconds (this process plus its reaped workers) and the load averages before and after it: on a busy
    machine the speedup is lower than on an idle one, and the load averages show it.
    """
    from dpsco_lib.experiments import get_profile, run_sweep

    paper_seeds = get_profile("paper").n_seeds
    seeds = paper_seeds if seeds is None else int(seeds)
    grid = bc.sweep_grid(n_grid)
    paper = grid == bc.sweep_grid() and seeds == paper_seeds and base_seed == bc.SWEEP_SEED
    if len(jobs) < 2 or any(j < 1 for j in jobs):
        raise ValueError(f"jobs must hold at least two positive worker counts, got {jobs!r}")
    saved = {k: os.environ.get(k) for k in ("DPSCO_NO_CACHE", "DPSCO_CACHE_DIR", "DPSCO_SCHEDULER")}
    runs: list[dict[str, Any]] = []
    digests: list[str] = []
    load_before = _loadavg()
    with tempfile.TemporaryDirectory(prefix="dpsco-sweep-scaling-") as tmp:
        os.environ.update(DPSCO_NO_CACHE="1", DPSCO_CACHE_DIR=tmp)
        os.environ.pop("DPSCO_SCHEDULER", None)
        try:
            bc.sweep_gap_vs_n(rng=np.random.default_rng(0), **grid[0])  # warm-up: imports, not timed
            for n_jobs in jobs:
                _shutdown_workers()
                gc.collect()
                before, c0, k0 = _loadavg(), time.process_time(), _children_cpu()
                seconds, records = bc.timed(lambda n_jobs=n_jobs: run_sweep(
                    bc.sweep_gap_vs_n, grid, seeds=seeds, base_seed=base_seed, n_jobs=n_jobs, progress=False))
                _shutdown_workers()  # reaps the workers, so their CPU time is counted below
                cpu = time.process_time() - c0 + _children_cpu() - k0
                digests.append(_records_digest(records))
                runs.append({"n_jobs": n_jobs, "seconds": seconds, "cpu_seconds": cpu, "loadavg_before": before,
                             "loadavg_after": _loadavg(), "records": len(records)})
                log(f"sweep scaling: n_jobs={n_jobs}: {seconds:.1f} s wall, {cpu:.1f} s CPU, "
                    f"load {before} -> {runs[-1]['loadavg_after']}")
            leftovers = [p for p in Path(tmp).rglob("*") if p.is_file()]
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    if leftovers:
        raise RuntimeError(f"the result cache was not disabled: {len(leftovers)} files written to {tmp}")
    speedup = runs[0]["seconds"] / runs[-1]["seconds"]
    identical = len(set(digests)) == 1
    out = {
        "created_utc": _now(), "task": "bench_cases.sweep_gap_vs_n", "paper_sweep": paper,
        "reproduces": bc.SWEEP_SOURCE if paper else "a reduced version (not the paper sweep) of " + bc.SWEEP_SOURCE,
        "grid": grid, "seeds": seeds, "base_seed": base_seed, "tasks": len(grid) * seeds,
        "cache": "disabled (DPSCO_NO_CACHE=1, empty DPSCO_CACHE_DIR); workers restarted before each run",
        "runs": runs, "speedup": speedup, "target_speedup": SWEEP_TARGET_SPEEDUP,
        "records_identical": identical, "records_sha256": digests[0],
        "cpu_count": os.cpu_count(), "loadavg_before": load_before, "loadavg_after": _loadavg(),
        "machine": machine_info(),
    }
    log(f"sweep scaling: speedup {speedup:.2f}x with {jobs[-1]} workers over {jobs[0]} "
        f"(records identical: {identical}); load average {load_before} -> {out['loadavg_after']}, "
        f"{os.cpu_count()} cores")
    return out


def bench_streaming(
    n: int = bc.STREAM_N,
    block_size: int = bc.STREAM_BLOCK,
    seeds: tuple[int, ...] = (0,),
    accountants: tuple[str, ...] = ("best",),
    d: int = bc.STREAM_D,
    log: Any = print,
    step_constants: tuple[float | str, ...] = ("auto",),
    delta: float | None = None,
) -> dict[str, Any]:
    """Streamed Poly-SFW runs (:func:`bench_cases.stream_poly_sfw`), one at a time, each in a fresh interpreter.

    A fresh process per run makes ``peak_rss_mb`` (its ``VmHWM``) the memory of that run alone (plus the
    interpreter and imports, ``rss_before_mb``). Returns the runs, the largest peak against
    ``bench_cases.STREAM_TARGET_MB`` and the median excess-risk ratio per accountant and step constant
    (key ``"<accountant>"`` for the default ``c = "auto"``, ``"<accountant>, c=<c>"`` otherwise); ``delta`` defaults
    to ``n^-1.1``.
    """
    runs: list[dict[str, Any]] = []
    load_before = _loadavg()
    def key(accountant: str, c: float | str) -> str:
        return accountant if c == "auto" else f"{accountant}, c={c if isinstance(c, str) else format(c, 'g')}"

    for accountant, c in [(a, c if isinstance(c, str) else float(c)) for a in accountants for c in step_constants]:
        for seed in seeds:
            kw = {"n": int(n), "d": int(d), "block_size": int(block_size), "seed": int(seed), "accountant": accountant,
                  "step_constant": c, "delta": delta}
            code = (f"import json, sys; sys.path.insert(0, {str(HERE)!r}); import bench_cases as bc; "
                    f"print(json.dumps(bc.stream_poly_sfw(**{kw!r})))")
            proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise RuntimeError(f"streamed run {kw} failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
            run = json.loads(proc.stdout.strip().splitlines()[-1])
            runs.append(run)
            log(f"streaming n={n} d={d} block={block_size} {key(accountant, c)} seed {seed}: {run['seconds']:.1f} s, "
                f"peak RSS {run['peak_rss_mb']:.0f} MB, excess/trivial {run['ratio']:.3f}")
    peak = max(r["peak_rss_mb"] for r in runs)
    medians = {key(a, c): float(np.median([r["ratio"] for r in runs if r["accountant"] == a
                                           and r["step_constant_asked"] == str(c)]))
               for a in accountants for c in step_constants}
    return {"created_utc": _now(), "case": "bench_cases.stream_poly_sfw", "algorithm": "run_poly_sfw (Spec F1)",
            "problem": f'hard_least_squares(1.0, {d}, set_kind="l1ball").stream(n, rng, block_size)',
            "n": int(n), "d": int(d), "block_size": int(block_size), "epsilon": bc.STREAM_EPSILON,
            "delta": runs[0]["delta"], "runs": runs, "peak_rss_mb": peak, "target_peak_mb": bc.STREAM_TARGET_MB,
            "under_target": bool(peak < bc.STREAM_TARGET_MB), "median_ratio": medians,
            "loadavg_before": load_before, "loadavg_after": _loadavg(), "machine": machine_info()}


def time_command(command: str, label: str | None = None, root: Path = ROOT) -> dict[str, Any]:
    """Run ``command`` in a shell in ``root`` and measure it: wall seconds, CPU seconds of the process tree,
    exit status and the load averages before and after.

    Notebook timings files (``_build/executed/timings-<profile>.json``) that the command wrote are summarized
    (per-notebook seconds and their total), so ``make book`` also records what each notebook took.
    """
    if not command.strip():
        raise ValueError("command must be a non-empty shell command, got an empty string")
    label = label or command.strip()
    started_epoch = time.time()
    load_before, k0 = _loadavg(), _children_cpu()
    t0 = time.perf_counter()
    proc = subprocess.run(command, shell=True, cwd=root, check=False)  # noqa: S602 - the user's own command
    wall = time.perf_counter() - t0
    entry: dict[str, Any] = {
        "label": label, "command": command, "created_utc": _now(), "wall_seconds": wall,
        "cpu_seconds": _children_cpu() - k0, "returncode": proc.returncode,
        "target_seconds": BUILD_TARGETS.get(label), "cpu_count": os.cpu_count(),
        "loadavg_before": load_before, "loadavg_after": _loadavg(), "notebook_timings": {},
    }
    timings = book_timings(root)
    for profile, summary in timings.items():
        path = root / "_build" / "executed" / f"timings-{profile}.json"
        if summary is not None and path.stat().st_mtime >= started_epoch:
            entry["notebook_timings"][profile] = summary
    return entry


def read_results(path: Path) -> dict[str, Any]:
    """The JSON object stored at ``path`` (empty when the file does not exist)."""
    if not path.is_file():
        return {}
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path} must hold a JSON object, got {type(data).__name__}")
    return data


def merge_results(path: Path, updates: dict[str, Any]) -> dict[str, Any]:
    """Write ``{**existing, **updates}`` to ``path`` atomically (keys not in ``updates`` are kept) and return it."""
    merged = {**read_results(path), **updates}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        fh.write(json.dumps(merged, indent=1))
    os.replace(tmp, path)
    return merged


def machine_info() -> dict[str, Any]:
    import scipy

    from dpsco_lib import _version

    return {
        "python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__,
        "platform": platform.platform(), "cpu_count": os.cpu_count(), "dpsco_lib": _version.__version__,
        "threads": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")},
    }


def run_benchmarks(
    sizes: tuple[tuple[int, int], ...] = DEFAULT_SIZES,
    algorithms: tuple[str, ...] | None = None,
    repeats: int | None = None,
    accountant: bool = True,
    cvxpy_dims: tuple[int, ...] = DEFAULT_CVXPY_DIMS,
    memory: bool = True,
    seed: int = 0,
    log: Any = print,
    on_size: Any = None,
) -> dict[str, Any]:
    """Run the suite and return the results dictionary (schema ``dpsco-bench/1``; see :func:`validate_results`)."""
    started = time.perf_counter()
    with _frozen_heap():
        rows, floors = bench_algorithms(sizes, algorithms, repeats, memory, seed, log=log, on_size=on_size)
    for r in rows:
        if r["status"] == "ok" and (r["n"], r["d"]) == (ACCEPTANCE["n"], ACCEPTANCE["d"]):
            log(f"target at n={r['n']}, d={r['d']}: {r['name']} {r['ratio']:.2f} x floor wall, {r['cpu_ratio']:.2f} x "
                f"CPU (max {ACCEPTANCE['max_ratio']:g})")
    acc = bench_accountant() if accountant else []
    for r in acc:
        log(f"accountant {r['query']}: ours {r['ours_seconds']:.4f} s, dp-accounting "
            f"{r['dp_accounting_seconds']} s, ratio {r['ratio']}")
    cvx = bench_cvxpy(tuple(cvxpy_dims), seed) if cvxpy_dims else []
    for r in cvx:
        log(f"cvxpy d={r['d']}: {r['seconds']:.2f} s")
    return {
        "schema": SCHEMA,
        "created_utc": _now(),
        "machine": machine_info(),
        "settings": {"sizes": [list(s) for s in sizes], "epsilon": bc.EPSILON, "delta": bc.DELTA, "seed": seed,
                     "repeats": repeats, "floor_block_entries": bc.FLOOR_BLOCK_ENTRIES, "memory": memory,
                     "acceptance": ACCEPTANCE},
        "floors": floors,
        "algorithms": rows,
        "accountant": acc,
        "cvxpy": cvx,
        "book": book_timings(),
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "total_seconds": time.perf_counter() - started,
    }


def validate_extra(res: dict[str, Any]) -> None:
    """Raise ValueError unless the ``sweep_scaling`` and ``build_times`` entries of ``res`` (when present) are
    well formed."""
    sw = res.get("sweep_scaling")
    if sw is not None:
        for k in ("created_utc", "reproduces", "paper_sweep", "grid", "seeds", "runs", "speedup",
                  "records_identical", "cpu_count", "loadavg_before", "loadavg_after"):
            if k not in sw:
                raise ValueError(f"sweep_scaling lacks the key {k!r}")
        if len(sw["runs"]) < 2 or any(not (r["seconds"] > 0) for r in sw["runs"]):
            raise ValueError(f"sweep_scaling runs must be >= 2 with positive seconds, got {sw['runs']!r}")
        want = sw["runs"][0]["seconds"] / sw["runs"][-1]["seconds"]
        if not (math.isfinite(sw["speedup"]) and math.isclose(sw["speedup"], want, rel_tol=1e-9)):
            raise ValueError(f"sweep_scaling speedup must be seconds(first) / seconds(last) = {want}, "
                             f"got {sw['speedup']!r}")
        if not isinstance(sw["records_identical"], bool):
            raise ValueError(f"sweep_scaling records_identical must be a bool, got {sw['records_identical']!r}")
    for label, b in (res.get("build_times") or {}).items():
        for k in ("command", "wall_seconds", "returncode", "loadavg_before", "loadavg_after"):
            if k not in b:
                raise ValueError(f"build_times[{label!r}] lacks the key {k!r}")
        if not b["wall_seconds"] > 0:
            raise ValueError(f"build_times[{label!r}] wall_seconds must be positive, got {b['wall_seconds']!r}")
    ds = res.get("discrete_samplers")
    if ds is not None:
        for k in ("discrete_laplace_per_second", "discrete_gaussian_per_second", "float_laplace_per_second",
                  "float_gaussian_per_second", "laplace_slowdown", "gaussian_slowdown"):
            if not (isinstance(ds.get(k), float) and ds[k] > 0):
                raise ValueError(f"discrete_samplers[{k!r}] must be a positive float, got {ds.get(k)!r}")
    st = res.get("streaming")
    if st is not None:
        for k in ("created_utc", "n", "d", "block_size", "runs", "peak_rss_mb", "target_peak_mb", "under_target"):
            if k not in st:
                raise ValueError(f"streaming lacks the key {k!r}")
        for run in st["runs"] or [None]:
            missing = [k for k in STREAM_KEYS if not isinstance(run, dict) or k not in run]
            if missing or not (run["seconds"] > 0 and run["peak_rss_mb"] > 0):
                raise ValueError(f"streaming runs must hold {STREAM_KEYS} with positive seconds and memory, "
                                 f"got {run!r}")


def validate_results(res: dict[str, Any]) -> None:
    """Raise ValueError unless ``res`` follows schema ``dpsco-bench/1`` (the notebook and tests rely on it)."""
    if res.get("schema") != SCHEMA:
        raise ValueError(f"schema must be {SCHEMA!r}, got {res.get('schema')!r}")
    for key in ("created_utc", "machine", "settings", "floors", "algorithms", "accountant", "cvxpy", "book"):
        if key not in res:
            raise ValueError(f"results lack the key {key!r}")
    for row in res["algorithms"]:
        missing = [k for k in ALGO_KEYS if k not in row]
        if missing:
            raise ValueError(f"algorithm row {row.get('name')!r} lacks {missing}")
        if row["status"] not in ("ok", "skipped", "error"):
            raise ValueError(f"status must be ok/skipped/error, got {row['status']!r}")
        if row["status"] == "ok":
            for k in ("seconds", "floor_seconds", "ratio", "passes", "ratio_per_pass", "cpu_seconds",
                      "floor_cpu_seconds", "cpu_ratio", "cpu_ratio_per_pass"):
                v = row[k]
                if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                    raise ValueError(f"{row['name']}: {k} must be a positive number, got {v!r}")
    for row in res["floors"]:
        if not row["seconds"] > 0:
            raise ValueError(f"floor seconds must be positive, got {row['seconds']!r}")
    validate_extra(res)


def _parse_sizes(text: str) -> tuple[tuple[int, int], ...]:
    out = []
    for part in text.split(","):
        n, _, d = part.strip().lower().partition("x")
        out.append((int(float(n)), int(float(d))))
    return tuple(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default=",".join(f"{n}x{d}" for n, d in DEFAULT_SIZES),
                    help="comma-separated NxD list, e.g. 1e4x1e2,1e5x1e3")
    ap.add_argument("--algorithms", default="", help="comma-separated case names (default: all)")
    ap.add_argument("--repeats", type=int, default=None, help="timed repeats (default 3, 1 above 1e7 entries)")
    ap.add_argument("--no-accountant", action="store_true")
    ap.add_argument("--no-cvxpy", action="store_true")
    ap.add_argument("--no-memory", action="store_true", help="skip the tracemalloc run")
    ap.add_argument("--no-sweep-scaling", action="store_true", help="skip the sweep-scaling case")
    ap.add_argument("--cvxpy-dims", default=",".join(map(str, DEFAULT_CVXPY_DIMS)))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", choices=("sweep_scaling", "streaming", "discrete_samplers"), default=None,
                    help="run only this case and merge its entry into --out (other entries are kept)")
    ap.add_argument("--stream-n", default=str(bc.STREAM_N), help="records of the streaming case (default 1e7)")
    ap.add_argument("--stream-block", type=int, default=bc.STREAM_BLOCK, help="records per block (streaming case)")
    ap.add_argument("--stream-seeds", default="0", help="comma-separated seeds of the streaming case")
    ap.add_argument("--stream-accountants", default="best",
                    help="comma-separated accountants of the streaming case (e.g. advanced,best)")
    ap.add_argument("--stream-step-constants", default="auto",
                    help="comma-separated step constants c of the streaming case (eta = c ln(n/ln|V|)/T), or auto")
    ap.add_argument("--stream-delta", type=float, default=None, help="delta of the streaming case (default n^-1.1)")
    ap.add_argument("--time-command", default=None, metavar="CMD",
                    help='run and time a shell command (e.g. "make test"), merge it into build_times of --out; '
                         "exits with the command's status")
    ap.add_argument("--label", default=None, help="build_times key of --time-command (default: the command)")
    ap.add_argument("--out", default=str(HERE / "results.json"))
    args = ap.parse_args(argv)
    out = Path(args.out)
    if args.only and args.time_command:
        ap.error("--only and --time-command are separate runs: give one of them")

    if args.time_command is not None:
        entry = time_command(args.time_command, args.label)
        builds = dict(read_results(out).get("build_times") or {})
        builds[entry["label"]] = entry
        validate_extra({"build_times": builds})
        merge_results(out, {"build_times": builds})
        print(f"{entry['label']}: {entry['wall_seconds']:.0f} s wall (exit status {entry['returncode']}), load "
              f"{entry['loadavg_before']} -> {entry['loadavg_after']}; wrote {out}")
        return int(entry["returncode"])

    if args.only == "streaming":
        stream = bench_streaming(int(float(args.stream_n)), args.stream_block,
                                 tuple(int(s) for s in args.stream_seeds.split(",") if s.strip()),
                                 tuple(a.strip() for a in args.stream_accountants.split(",") if a.strip()),
                                 step_constants=tuple(c.strip() if c.strip() == "auto" else float(c)
                                                      for c in args.stream_step_constants.split(",") if c.strip()),
                                 delta=args.stream_delta)
        validate_extra({"streaming": stream})
        merge_results(out, {"streaming": stream})
        print(f"wrote streaming to {out}")
        return 0

    if args.only == "discrete_samplers":
        rates = bc.discrete_sampler_rates()
        validate_extra({"discrete_samplers": rates})
        merge_results(out, {"discrete_samplers": rates})
        print(f"discrete Laplace {rates['discrete_laplace_per_second']:.3g}/s ({rates['laplace_slowdown']:.3g} x "
              f"slower than float), discrete Gaussian {rates['discrete_gaussian_per_second']:.3g}/s "
              f"({rates['gaussian_slowdown']:.3g} x); wrote {out}")
        return 0

    if args.only == "sweep_scaling":
        sweep = bench_sweep_scaling()
        validate_extra({"sweep_scaling": sweep})
        merge_results(out, {"sweep_scaling": sweep})
        print(f"wrote sweep_scaling to {out}")
        return 0

    partial = out.with_suffix(".partial.json")

    def save_partial(rows: list[dict[str, Any]], floors: list[dict[str, Any]]) -> None:
        # the algorithm rows measured so far, so that an interrupted run of the largest size loses nothing
        partial.write_text(json.dumps({"schema": SCHEMA + "-partial", "created_utc": _now(), "floors": floors,
                                       "algorithms": rows}, indent=1))

    res = run_benchmarks(
        sizes=_parse_sizes(args.sizes),
        algorithms=tuple(a.strip() for a in args.algorithms.split(",") if a.strip()) or None,
        repeats=args.repeats,
        accountant=not args.no_accountant,
        cvxpy_dims=() if args.no_cvxpy else tuple(int(float(v)) for v in args.cvxpy_dims.split(",") if v),
        memory=not args.no_memory,
        seed=args.seed,
        on_size=save_partial,
    )
    if not args.no_sweep_scaling:
        res["sweep_scaling"] = bench_sweep_scaling()
    validate_results(res)
    merge_results(out, res)  # keeps entries this run did not measure (build_times, an earlier sweep_scaling)
    partial.unlink(missing_ok=True)
    print(f"wrote {out} ({res['total_seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
