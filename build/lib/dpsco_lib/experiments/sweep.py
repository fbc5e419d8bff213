"""Seeded sweeps: a grid of parameters times independent replicates -> a tidy list of records.

Every task ``(params, replicate)`` gets its own generator, derived only from ``base_seed``, the
parameters and the replicate index::

    SeedSequence(base_seed, spawn_key=(hash(params), replicate))

so a record does not depend on the backend (serial, joblib processes, a dask cluster), on the number
of workers or on the order tasks run in: the same seed gives bit-identical records everywhere.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from tqdm import tqdm

from dpsco_lib._validation import check_int
from dpsco_lib.experiments import cache

__all__ = ["expand_grid", "run_sweep", "task_rng"]

Record = dict[str, Any]


def expand_grid(grid: Mapping[str, Sequence[Any]] | Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A dict of lists becomes its cartesian product (in key order); a list of dicts is kept as is."""
    if isinstance(grid, Mapping):
        keys = list(grid)
        for k in keys:
            if isinstance(grid[k], str | bytes) or not isinstance(grid[k], Iterable):
                raise ValueError(f"grid[{k!r}] must be a list of values, got {grid[k]!r}")
        return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(list(grid[k]) for k in keys))]
    points = [dict(p) for p in grid]
    for p in points:
        if "replicate" in p or "seed" in p:
            raise ValueError("grid points must not define 'replicate' or 'seed'; run_sweep sets them")
    return points


def _params_hash(params: Mapping[str, Any]) -> int:
    return int.from_bytes(hashlib.sha256(cache.canonical(params).encode()).digest()[:4], "little")


def task_rng(base_seed: int, params: Mapping[str, Any], replicate: int) -> np.random.Generator:
    """The generator of one task (exposed so a single record can be recomputed by hand)."""
    seq = np.random.SeedSequence(int(base_seed), spawn_key=(_params_hash(params), int(replicate)))
    return np.random.default_rng(seq)


_FROM_ENV = "env"  # _run_task's cache location: the process's own DPSCO_CACHE_DIR / DPSCO_NO_CACHE


def _run_task(fn: Callable[..., Mapping[str, Any]], params: dict[str, Any], base_seed: int, replicate: int,
              fingerprint: str, cache_location: str | None = _FROM_ENV) -> Record:
    """One task. ``cache_location`` is a directory, ``None`` (no cache) or the environment's setting: dask
    workers get the submitting process's absolute cache directory, whatever their own working directory."""
    key = cache.task_key(fingerprint, params, base_seed, replicate)
    folder = None if cache_location == _FROM_ENV else cache_location
    use_cache = cache.cache_enabled() if cache_location == _FROM_ENV else cache_location is not None
    hit = cache.load(key, folder) if use_cache else None
    if hit is not None:
        return hit
    out = fn(rng=task_rng(base_seed, params, replicate), **params)
    if not isinstance(out, Mapping):
        raise TypeError(f"sweep function {fingerprint.split(':')[0]} must return a dict, got {type(out).__name__}")
    clash = set(out) & (set(params) | {"replicate"})
    if clash:
        raise ValueError(f"sweep function output keys {sorted(clash)} clash with parameter names")
    record: Record = {**params, "replicate": replicate, **dict(out)}
    if use_cache:
        cache.store(key, record, folder)
    return record


class _ProgressFile:
    """Sweep progress for the ``dpsco`` command: ``$DPSCO_PROGRESS_DIR/<pid>.json``, at most twice a second.

    The command draws its progress bar from these files, so a sweep inside a notebook kernel reports its
    progress without printing anything into the executed notebook.
    """

    def __init__(self, label: str, total: int) -> None:
        folder = os.environ.get("DPSCO_PROGRESS_DIR")
        self.path = os.path.join(folder, f"{os.getpid()}.json") if folder else None
        self.label, self.total, self.last = label, total, 0.0
        self.update(0, force=True)

    def update(self, done: int, force: bool = False) -> None:
        if self.path is None:
            return
        now = time.time()
        if not force and done < self.total and now - self.last < 0.5:
            return
        self.last = now
        try:
            tmp = f"{self.path}.tmp"
            with open(tmp, "w") as fh:
                json.dump({"label": self.label, "done": done, "total": self.total, "time": now}, fh)
            os.replace(tmp, self.path)
        except OSError:  # progress is a courtesy: never fail a sweep over it
            self.path = None


def _tracked(items: Iterable[Any], label: str, total: int, show: bool) -> list[Any]:
    """Consume ``items`` with a tqdm bar (when ``show``) and the progress file; return them as a list."""
    report = _ProgressFile(label, total)
    out = []
    for item in tqdm(items, total=total, desc=label, disable=not show):
        out.append(item)
        report.update(len(out))
    return out


def _show_progress(progress: bool | None) -> bool:
    if progress is not None:
        return progress
    if os.environ.get("DPSCO_PROGRESS", "").strip() in {"1", "true", "yes"}:
        return True
    return sys.stderr.isatty()


def run_sweep(
    fn: Callable[..., Mapping[str, Any]],
    grid: Mapping[str, Sequence[Any]] | Iterable[Mapping[str, Any]],
    *,
    seeds: int,
    base_seed: int,
    n_jobs: int = 1,
    scheduler: str | Any | None = None,
    progress: bool | None = None,
    desc: str | None = None,
) -> list[Record]:
    """Run ``fn(rng=..., **params)`` for every grid point and replicate; return tidy records.

    Parameters
    ----------
    fn : callable
        ``fn(*, rng, **params) -> dict`` of scalar outputs. Must be picklable (module level or defined
        in a notebook; joblib and dask ship notebook functions with cloudpickle).
    grid : dict of lists or list of dicts
        The parameter points (a dict of lists is expanded to its cartesian product).
    seeds : int
        Replicates per grid point (>= 1).
    base_seed : int
        Root of every task's generator (see the module docstring).
    n_jobs : int
        1 runs in this process; k > 1 uses k joblib worker processes; -1 all cores.
    scheduler : str or distributed.Client, optional
        Address (``tcp://host:port``) of a running dask.distributed scheduler, or a client: tasks are
        sent there instead of joblib. Records are identical to the local run. Defaults to the
        environment variable ``DPSCO_SCHEDULER`` when set.
    progress : bool, optional
        Show a tqdm bar (default: when stderr is a terminal or ``DPSCO_PROGRESS=1``).

    Returns
    -------
    list of dict
        One record per (grid point, replicate), ordered by grid point then replicate:
        the parameters, ``replicate`` and ``fn``'s outputs.
    """
    seeds = check_int(seeds, "seeds", lo=1)
    base_seed = check_int(base_seed, "base_seed", lo=0)
    n_jobs = check_int(n_jobs, "n_jobs", lo=-1)
    if n_jobs == 0:
        raise ValueError("n_jobs must be -1 (all cores) or a positive integer, got 0")
    points = expand_grid(grid)
    if not points:
        raise ValueError("grid must contain at least one point")
    fingerprint = cache.function_fingerprint(fn)
    tasks = [(p, r) for p in points for r in range(seeds)]
    show = _show_progress(progress)
    label = desc or getattr(fn, "__name__", "sweep")

    if scheduler is None and os.environ.get("DPSCO_SCHEDULER"):
        # `dpsco reproduce --scheduler ADDRESS` reaches the sweeps inside notebooks this way.
        scheduler = os.environ["DPSCO_SCHEDULER"]
    if scheduler is not None:
        return _run_dask(fn, tasks, base_seed, fingerprint, scheduler, show, label)
    if n_jobs == 1:
        return _tracked((_run_task(fn, p, base_seed, r, fingerprint) for p, r in tasks), label, len(tasks), show)

    from joblib import Parallel, delayed

    parallel = Parallel(n_jobs=n_jobs, return_as="generator", batch_size="auto")
    gen = parallel(delayed(_run_task)(fn, p, base_seed, r, fingerprint) for p, r in tasks)
    return _tracked(gen, label, len(tasks), show)


def worker_timeout() -> float:
    """Seconds a distributed sweep waits while no worker is alive: ``$DPSCO_WORKER_TIMEOUT``, default 60."""
    try:
        value = float(os.environ.get("DPSCO_WORKER_TIMEOUT", "60"))
    except ValueError:
        value = 60.0
    return value if value > 0 else 60.0


def _alive_workers(client: Any) -> int:
    try:
        return len(client.nthreads())
    except Exception:  # the scheduler itself is gone: no worker either
        return 0


def _run_dask(fn, tasks, base_seed, fingerprint, scheduler, show, label) -> list[Record]:
    try:
        from distributed import Client, wait
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        msg = "scheduler given but dask.distributed is not installed: pip install 'dpsco-lib[dist]'"
        raise ValueError(msg) from exc
    own = isinstance(scheduler, str)
    try:
        client = Client(scheduler, timeout=30) if own else scheduler
    except Exception as exc:
        raise RuntimeError(f"cannot reach the dask scheduler at {scheduler!r}: {exc}") from exc
    # Workers cache into the submitting process's directory (absolute), not into their own working directory.
    location = str(cache.cache_dir().resolve()) if cache.cache_enabled() else None
    patience = worker_timeout()
    try:
        futures = [
            client.submit(_run_task, fn, p, base_seed, r, fingerprint, location, pure=False) for p, r in tasks
        ]
        report = _ProgressFile(label, len(futures))
        bar = tqdm(total=len(futures), desc=label, disable=not show)
        no_worker_since: float | None = None
        try:
            while True:
                try:
                    wait(futures, timeout=2.0)
                    break
                except TimeoutError:
                    pass
                done = sum(f.done() for f in futures)
                bar.update(done - bar.n)
                report.update(done)
                if _alive_workers(client) > 0:
                    no_worker_since = None
                    continue
                now = time.monotonic()
                no_worker_since = no_worker_since or now
                if now - no_worker_since >= patience:
                    client.cancel(futures)
                    raise RuntimeError(
                        f"no dask worker alive at {getattr(client, 'scheduler', None) and client.scheduler.address}"
                        f" for {patience:g} s, {len(futures) - done} of {len(futures)} tasks of sweep {label!r}"
                        " unfinished: restart the workers (dask worker ADDRESS) or run without a scheduler"
                        " (DPSCO_WORKER_TIMEOUT sets this wait)"
                    )
            bar.update(len(futures) - bar.n)
            report.update(len(futures), force=True)
        finally:
            bar.close()
        return client.gather(futures)
    finally:
        if own:
            client.close()
