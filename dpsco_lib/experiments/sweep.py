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
import os
import sys
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


def _run_task(fn: Callable[..., Mapping[str, Any]], params: dict[str, Any], base_seed: int, replicate: int,
              fingerprint: str) -> Record:
    key = cache.task_key(fingerprint, params, base_seed, replicate)
    hit = cache.load(key)
    if hit is not None:
        return hit
    out = fn(rng=task_rng(base_seed, params, replicate), **params)
    if not isinstance(out, Mapping):
        raise TypeError(f"sweep function {fingerprint.split(':')[0]} must return a dict, got {type(out).__name__}")
    clash = set(out) & (set(params) | {"replicate"})
    if clash:
        raise ValueError(f"sweep function output keys {sorted(clash)} clash with parameter names")
    record: Record = {**params, "replicate": replicate, **dict(out)}
    cache.store(key, record)
    return record


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
        return [_run_task(fn, p, base_seed, r, fingerprint) for p, r in tqdm(tasks, desc=label, disable=not show)]

    from joblib import Parallel, delayed

    parallel = Parallel(n_jobs=n_jobs, return_as="generator", batch_size="auto")
    gen = parallel(delayed(_run_task)(fn, p, base_seed, r, fingerprint) for p, r in tasks)
    return list(tqdm(gen, total=len(tasks), desc=label, disable=not show))


def _run_dask(fn, tasks, base_seed, fingerprint, scheduler, show, label) -> list[Record]:
    try:
        from distributed import Client
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        msg = "scheduler given but dask.distributed is not installed: pip install 'dpsco-lib[dist]'"
        raise ValueError(msg) from exc
    own = isinstance(scheduler, str)
    client = Client(scheduler) if own else scheduler
    try:
        futures = [
            client.submit(_run_task, fn, p, base_seed, r, fingerprint, pure=False) for p, r in tasks
        ]
        if show:
            from distributed import as_completed

            for _ in tqdm(as_completed(futures), total=len(futures), desc=label):
                pass
        return client.gather(futures)
    finally:
        if own:
            client.close()
