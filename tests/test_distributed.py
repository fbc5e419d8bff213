"""Sweeps on a dask.distributed cluster give records bit-identical to the local joblib run."""

from __future__ import annotations

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
