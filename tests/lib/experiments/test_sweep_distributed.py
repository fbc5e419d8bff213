"""Sweeps (dpsco_lib.experiments.sweep) on a dask.distributed cluster give records bit-identical to the local joblib
run; a cluster that misbehaves (no worker alive) fails loudly, and workers cache where they should."""

from __future__ import annotations

import time

import numpy as np
import pytest

from dpsco_lib.experiments import run_sweep

distributed = pytest.importorskip("distributed", reason="the 'dist' extra (dask.distributed) is not installed")


def noisy_norm(*, rng: np.random.Generator, d: int, sigma: float) -> dict[str, float]:
    z = rng.normal(scale=sigma, size=d)
    return {"norm": float(np.linalg.norm(z)), "first": float(z[0])}


@pytest.fixture(scope="module")
def cluster():
    # Loopback only, two worker processes, no dashboard.
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as lc:
        yield lc


def test_dask_records_identical_to_joblib(cluster, monkeypatch):
    monkeypatch.setenv("DPSCO_NO_CACHE", "1")
    grid = {"d": [1, 10, 100], "sigma": [0.5, 2.0]}
    local = run_sweep(noisy_norm, grid, seeds=4, base_seed=99, n_jobs=2)
    remote = run_sweep(noisy_norm, grid, seeds=4, base_seed=99, scheduler=cluster.scheduler_address)
    assert remote == local
    with distributed.Client(cluster) as client:
        via_client = run_sweep(noisy_norm, grid, seeds=4, base_seed=99, scheduler=client)
    assert via_client == local


def test_scheduler_from_environment(cluster, monkeypatch):
    monkeypatch.setenv("DPSCO_NO_CACHE", "1")
    monkeypatch.setenv("DPSCO_SCHEDULER", cluster.scheduler_address)
    remote = run_sweep(noisy_norm, {"d": [3], "sigma": [1.0]}, seeds=3, base_seed=5)
    monkeypatch.delenv("DPSCO_SCHEDULER")
    assert remote == run_sweep(noisy_norm, {"d": [3], "sigma": [1.0]}, seeds=3, base_seed=5)


def draw(*, rng: np.random.Generator, k: int) -> dict[str, float]:
    return {"z": float(rng.normal()) + k}


def test_no_worker_alive_times_out_with_a_message(monkeypatch):
    monkeypatch.setenv("DPSCO_NO_CACHE", "1")
    monkeypatch.setenv("DPSCO_WORKER_TIMEOUT", "3")
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster:
        start = time.monotonic()
        with pytest.raises(RuntimeError, match="no dask worker alive .* for 3 s, 2 of 2 tasks"):
            run_sweep(draw, {"k": [1, 2]}, seeds=1, base_seed=0, scheduler=cluster.scheduler_address)
        assert time.monotonic() - start < 30


def test_workers_cache_into_the_submitters_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("DPSCO_NO_CACHE", raising=False)
    monkeypatch.setenv("DPSCO_CACHE_DIR", str(tmp_path / "cache"))
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        remote = run_sweep(draw, {"k": [1, 2]}, seeds=2, base_seed=3, scheduler=cluster.scheduler_address)
    assert len(list((tmp_path / "cache").rglob("*.pkl"))) == 4
    monkeypatch.setenv("DPSCO_NO_CACHE", "1")
    assert remote == run_sweep(draw, {"k": [1, 2]}, seeds=2, base_seed=3)


def test_sweep_progress_file(tmp_path, monkeypatch):
    import json
    import os

    monkeypatch.setenv("DPSCO_NO_CACHE", "1")
    monkeypatch.setenv("DPSCO_PROGRESS_DIR", str(tmp_path))
    run_sweep(draw, {"k": [1, 2, 3]}, seeds=2, base_seed=0, desc="demo")
    rec = json.loads((tmp_path / f"{os.getpid()}.json").read_text())
    assert rec["label"] == "demo" and rec["done"] == rec["total"] == 6
