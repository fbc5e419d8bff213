"""Tests of the experiment machinery: profiles, seeded sweeps, cache, rate fits, verdicts."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from dpsco_book.results import results_dir, write_csv
from dpsco_lib.experiments import (
    Verdict,
    cache,
    expand_grid,
    fit_loglog_slope,
    get_profile,
    run_sweep,
    summarize,
    task_rng,
)


def mean_error(*, rng: np.random.Generator, n: int, scale: float = 1.0) -> dict[str, float]:
    """|mean of n N(0, scale^2)|: its expectation is scale * sqrt(2 / (pi n))."""
    return {"err": float(abs(rng.normal(scale=scale, size=n).mean()))}


def test_profiles():
    smoke, paper = get_profile("smoke"), get_profile("paper")
    assert smoke.pick(smoke=1, paper=2) == 1 and paper.pick(smoke=1, paper=2) == 2
    assert paper.n_seeds >= 20 > smoke.n_seeds
    with pytest.raises(ValueError, match="profile must be one of"):
        get_profile("huge")


def test_expand_grid_cartesian_and_list():
    assert expand_grid({"a": [1, 2], "b": ["x"]}) == [{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]
    assert expand_grid([{"a": 1}, {"a": 5}]) == [{"a": 1}, {"a": 5}]
    with pytest.raises(ValueError, match="grid\\['a'\\]"):
        expand_grid({"a": 3})
    with pytest.raises(ValueError, match="replicate"):
        expand_grid([{"replicate": 1}])


def test_sweep_is_deterministic_and_backend_independent(monkeypatch):
    monkeypatch.setenv("DPSCO_NO_CACHE", "1")
    grid = {"n": [10, 100, 1000], "scale": [1.0, 2.0]}
    serial = run_sweep(mean_error, grid, seeds=5, base_seed=7, n_jobs=1)
    parallel = run_sweep(mean_error, grid, seeds=5, base_seed=7, n_jobs=2)
    assert serial == parallel
    assert len(serial) == 30
    assert [r["replicate"] for r in serial[:5]] == [0, 1, 2, 3, 4]
    other = run_sweep(mean_error, grid, seeds=5, base_seed=8, n_jobs=1)
    assert serial != other
    # A record can be recomputed by hand from its generator.
    rec = serial[7]
    params = {"n": rec["n"], "scale": rec["scale"]}
    assert mean_error(rng=task_rng(7, params, rec["replicate"]), **params)["err"] == rec["err"]


def test_sweep_tasks_are_independent_of_grid_order(monkeypatch):
    monkeypatch.setenv("DPSCO_NO_CACHE", "1")
    a = run_sweep(mean_error, [{"n": 10}, {"n": 20}], seeds=2, base_seed=1)
    b = run_sweep(mean_error, [{"n": 20}, {"n": 10}], seeds=2, base_seed=1)
    assert a[:2] == b[2:] and a[2:] == b[:2]


def test_sweep_cache_roundtrip(tmp_path, monkeypatch):
    monkeypatch.setenv("DPSCO_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("DPSCO_NO_CACHE", "0")
    first = run_sweep(mean_error, {"n": [10, 20]}, seeds=3, base_seed=3)
    files = list(tmp_path.rglob("*.pkl"))
    assert len(files) == 6
    again = run_sweep(mean_error, {"n": [10, 20]}, seeds=3, base_seed=3)
    assert again == first
    assert cache.library_fingerprint().startswith("0.")


def test_sweep_rejects_bad_input():
    with pytest.raises(ValueError, match="seeds"):
        run_sweep(mean_error, {"n": [1]}, seeds=0, base_seed=0)
    with pytest.raises(ValueError, match="n_jobs"):
        run_sweep(mean_error, {"n": [1]}, seeds=1, base_seed=0, n_jobs=0)
    with pytest.raises(ValueError, match="base_seed"):
        run_sweep(mean_error, {"n": [1]}, seeds=1, base_seed=-1)
    with pytest.raises(ValueError, match="at least one point"):
        run_sweep(mean_error, [], seeds=1, base_seed=0)


def test_fit_recovers_known_exponent_with_replicates(monkeypatch):
    monkeypatch.setenv("DPSCO_NO_CACHE", "1")
    recs = run_sweep(mean_error, {"n": [100, 400, 1600, 6400, 25600]}, seeds=200, base_seed=11)
    fit = fit_loglog_slope([r["n"] for r in recs], [r["err"] for r in recs], rng=np.random.default_rng(0))
    assert fit.ci_low < -0.5 < fit.ci_high
    assert abs(fit.slope + 0.5) < 0.05
    # The intercept is the constant sqrt(2/pi) of E|mean|.
    assert np.exp(fit.intercept) == pytest.approx(np.sqrt(2 / np.pi), rel=0.15)


def test_fit_exact_power_law_without_replicates():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    fit = fit_loglog_slope(x, 3 * x**-0.75, rng=np.random.default_rng(1))
    assert fit.slope == pytest.approx(-0.75, abs=1e-12)
    assert fit.predict(16.0) == pytest.approx(3 * 16**-0.75)
    with pytest.raises(ValueError, match="positive"):
        fit_loglog_slope([1, 2], [0, 1], rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="two distinct"):
        fit_loglog_slope([1, 1], [1, 2], rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng"):
        fit_loglog_slope([1, 2], [1, 2], rng=0)


def test_summarize():
    recs = [{"n": 1, "v": 1.0}, {"n": 1, "v": 3.0}, {"n": 2, "v": 5.0}]
    rows = summarize(recs, by=("n",), value="v", stats=("mean", "count"))
    assert rows == [{"n": 1, "v_mean": 2.0, "v_count": 2.0}, {"n": 2, "v_mean": 5.0, "v_count": 1.0}]
    with pytest.raises(ValueError, match="stats"):
        summarize(recs, by=("n",), value="v", stats=("mode",))
    with pytest.raises(ValueError, match="lacks column"):
        summarize(recs, by=("m",), value="v")


def test_verdict_passes_and_fails(capsys):
    ok = Verdict("nb")
    ok.check("a", True, "fine")
    ok.finish()
    assert "VERDICT nb: PASS (1/1 checks)" in capsys.readouterr().out
    bad = Verdict("nb")
    bad.check("a", True)
    bad.check("slope", False, "slope -0.3")
    with pytest.raises(AssertionError, match="1 of 2 checks failed: slope"):
        bad.finish()
    with pytest.raises(AssertionError, match="no checks"):
        Verdict("empty").finish()


def test_results_dir_and_csv(tmp_path, monkeypatch):
    monkeypatch.setenv("DPSCO_RESULTS_DIR", str(tmp_path))
    out = results_dir("01_x")
    assert out == tmp_path / "01_x" and out.is_dir()
    path = write_csv([{"a": 1, "b": np.float64(2.5)}, {"a": 2, "c": "z"}], out / "t.csv")
    rows = list(csv.DictReader(path.open()))
    assert rows == [{"a": "1", "b": "2.5", "c": ""}, {"a": "2", "b": "", "c": "z"}]
    with pytest.raises(ValueError, match="plain notebook name"):
        results_dir("../escape")
