"""Tests of dpsco_lib.experiments.cache: a sweep's records round-trip through the cache, keyed on the library's
source.
"""

from __future__ import annotations

import numpy as np

from dpsco_lib.experiments import (
    cache,
    run_sweep,
)


def mean_error(*, rng: np.random.Generator, n: int, scale: float = 1.0) -> dict[str, float]:
    """|mean of n N(0, scale^2)|: its expectation is scale * sqrt(2 / (pi n))."""
    return {"err": float(abs(rng.normal(scale=scale, size=n).mean()))}


def test_sweep_cache_roundtrip(tmp_path, monkeypatch):
    monkeypatch.setenv("DPSCO_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("DPSCO_NO_CACHE", "0")
    first = run_sweep(mean_error, {"n": [10, 20]}, seeds=3, base_seed=3)
    files = list(tmp_path.rglob("*.pkl"))
    assert len(files) == 6
    again = run_sweep(mean_error, {"n": [10, 20]}, seeds=3, base_seed=3)
    assert again == first
    assert cache.library_fingerprint().startswith("0.")
