"""The performance harness (benchmarks/run.py) at tiny sizes, and the speed paths it motivated.

No timing assertions: the tests check that the harness runs every case, writes JSON of the documented schema,
rejects malformed results, and that the fast paths (blocked validation, SMD's unvalidated oracle) give exactly
the same answers as the plain ones.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from dpsco_lib.algorithms.smd import run_smd
from dpsco_lib.problems import base as problem_base
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.games import random_bilinear_game
from dpsco_lib.problems.least_squares import hard_least_squares
from tests.conftest import ROOT

CORE = ("noisy_sgd", "poly_sfw", "private_vr_frank_wolfe", "gg_vr_sfw_naive", "gg_vr_sfw_tree",
        "private_smd_saddle", "dp_sgd", "smd (non-private)")


def _load(name: str, file: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / file)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def bench():
    return _load("dpsco_bench_run", "run.py")


@pytest.fixture(scope="module")
def tiny(bench):
    return bench.run_benchmarks(sizes=((300, 6),), repeats=1, cvxpy_dims=(4,), seed=3, log=lambda *a: None)


def test_tiny_run_has_schema_and_every_case(bench, tiny):
    bench.validate_results(tiny)
    again = json.loads(json.dumps(tiny))  # JSON-serializable as written by main()
    bench.validate_results(again)
    names = [r["name"] for r in tiny["algorithms"]]
    import bench_cases

    assert sorted(names) == sorted(c.name for c in bench_cases.ALGORITHMS)
    for row in tiny["algorithms"]:
        assert (row["n"], row["d"]) == (300, 6)
        if row["name"] in CORE:
            assert row["status"] == "ok", row
            assert row["ratio"] == pytest.approx(row["seconds"] / row["floor_seconds"])
            assert row["ratio_per_pass"] == pytest.approx(row["ratio"] / max(row["passes"], 1.0))
            assert row["cpu_ratio"] == pytest.approx(row["cpu_seconds"] / row["floor_cpu_seconds"])
            assert row["cpu_ratio_per_pass"] == pytest.approx(row["cpu_ratio"] / max(row["passes"], 1.0))
            assert row["peak_mb"] >= 0
        else:
            assert row["status"] in ("ok", "skipped", "error")
            if row["status"] != "ok":
                assert row["note"]  # a skipped or failing case always says why
    kinds = {f["problem"] for f in tiny["floors"]}
    assert {"ls_simplex", "ls_lp", "bilinear"} <= kinds
    assert all(f["seconds"] > 0 and f["data_mb"] > 0 for f in tiny["floors"])


def test_frozen_heap_is_released_even_on_error(bench):
    import gc

    before = gc.get_freeze_count()
    with pytest.raises(RuntimeError), bench._frozen_heap():
        assert gc.get_freeze_count() >= before
        raise RuntimeError("boom")
    assert gc.get_freeze_count() == 0


def test_tiny_run_accountant_cvxpy_book(tiny):
    acc = {r["query"]: r for r in tiny["accountant"]}
    assert set(acc) == {"gaussian_composition_1e5_steps", "subsampled_gaussian_rdp_1e4_steps"}
    for r in acc.values():
        assert r["ours_seconds"] > 0 and r["dp_accounting_seconds"] > 0
        assert r["ratio"] == pytest.approx(r["ours_seconds"] / r["dp_accounting_seconds"])
        # both RDP accountants answer the same query: epsilons agree up to their different order grids
        assert r["ours_epsilon"] == pytest.approx(r["dp_accounting_epsilon"], rel=0.05)
    # 1e5 Gaussian steps with multiplier 100 is exactly sqrt(10)-GDP; RDP is an upper bound on its epsilon
    from dpsco_lib.privacy.accounting.gdp import gdp_epsilon

    exact = gdp_epsilon(math.sqrt(1e5) / 100.0, delta=1e-6)
    assert acc["gaussian_composition_1e5_steps"]["ours_epsilon"] >= exact
    assert [r["d"] for r in tiny["cvxpy"]] == [4] and tiny["cvxpy"][0]["seconds"] > 0
    assert set(tiny["book"]) == {"smoke", "paper"}


def test_validate_results_rejects_malformed(bench, tiny):
    bad = json.loads(json.dumps(tiny))
    bad["schema"] = "other"
    with pytest.raises(ValueError, match="schema"):
        bench.validate_results(bad)
    bad = json.loads(json.dumps(tiny))
    del bad["accountant"]
    with pytest.raises(ValueError, match="accountant"):
        bench.validate_results(bad)
    bad = json.loads(json.dumps(tiny))
    bad["algorithms"][0]["status"] = "fine"
    with pytest.raises(ValueError, match="status"):
        bench.validate_results(bad)
    bad = json.loads(json.dumps(tiny))
    ok = next(r for r in bad["algorithms"] if r["status"] == "ok")
    ok["ratio"] = -1.0
    with pytest.raises(ValueError, match="ratio"):
        bench.validate_results(bad)
    bad = json.loads(json.dumps(tiny))
    del bad["algorithms"][0]["peak_mb"]
    with pytest.raises(ValueError, match="peak_mb"):
        bench.validate_results(bad)


def test_cli_writes_json_and_filters(bench, tmp_path):
    out = tmp_path / "r.json"
    kept = {"make book": {"command": "make book", "wall_seconds": 12.0, "returncode": 0, "loadavg_before": None,
                          "loadavg_after": None}}
    out.write_text(json.dumps({"build_times": kept}))
    assert bench.main(["--sizes", "300x6", "--algorithms", "poly_sfw,smd", "--repeats", "1", "--no-accountant",
                       "--no-cvxpy", "--no-memory", "--no-sweep-scaling", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    bench.validate_results(res)
    assert res["build_times"] == kept  # a full run keeps the entries it did not measure
    assert "sweep_scaling" not in res
    assert [r["name"] for r in res["algorithms"]] == ["poly_sfw", "smd (non-private)"]
    assert res["algorithms"][0]["peak_mb"] is None and res["accountant"] == [] and res["cvxpy"] == []
    assert bench._parse_sizes("1e4x1e2, 100000x1000") == ((10_000, 100), (100_000, 1_000))


def test_memory_guard_skips_with_a_note(bench, monkeypatch):
    monkeypatch.setattr(bench, "_mem_available_bytes", lambda: 1.0)
    rows, floors = bench.bench_algorithms(((300, 6),), ("poly_sfw",), 1, False, log=lambda *a: None)
    assert floors == [] and rows[0]["status"] == "skipped" and "memory" in rows[0]["note"]


def test_book_timings_reads_reproduce_output(bench, tmp_path):
    ex = tmp_path / "_build" / "executed"
    ex.mkdir(parents=True)
    (ex / "timings-smoke.json").write_text(json.dumps({"notebooks/01_a.ipynb": 2.5, "notebooks/02_b.ipynb": 4.0}))
    out = bench.book_timings(tmp_path)
    assert out["paper"] is None
    assert out["smoke"]["total_seconds"] == 6.5 and out["smoke"]["slowest_seconds"] == 4.0


# ------------------------------------------------------------------------------------------ sweep scaling
TINY_SWEEP = {"n_grid": {"quadratic": (300, 600), "first_order": (400,)}, "seeds": 2}


def test_sweep_scaling_tiny_grid_structure(bench):
    res = bench.bench_sweep_scaling(**TINY_SWEEP, log=lambda *a: None)
    bench.validate_extra({"sweep_scaling": res})
    assert [r["n_jobs"] for r in res["runs"]] == [1, 2]
    assert all(r["records"] == 6 and r["seconds"] > 0 for r in res["runs"])
    assert res["tasks"] == 6 and res["grid"] == [{"regime": "quadratic", "n": 300}, {"regime": "quadratic", "n": 600},
                                                 {"regime": "first_order", "n": 400}]
    # the records of the serial and the two-worker run are bit-identical (seeding is per task)
    assert res["records_identical"] is True
    assert res["speedup"] == pytest.approx(res["runs"][0]["seconds"] / res["runs"][1]["seconds"])
    assert res["paper_sweep"] is False and res["reproduces"].startswith("a reduced version")
    import os

    assert res["cpu_count"] == os.cpu_count()
    assert len(res["loadavg_before"]) == 3 and len(res["runs"][1]["loadavg_after"]) == 3
    assert json.loads(json.dumps(res))["records_sha256"] == res["records_sha256"]
    bad = json.loads(json.dumps(res))
    bad["speedup"] = 1.0 + bad["speedup"]
    with pytest.raises(ValueError, match="speedup"):
        bench.validate_extra({"sweep_scaling": bad})
    bad = json.loads(json.dumps(res))
    del bad["loadavg_after"]
    with pytest.raises(ValueError, match="loadavg_after"):
        bench.validate_extra({"sweep_scaling": bad})


def test_sweep_scaling_restores_environment(bench, monkeypatch, tmp_path):
    monkeypatch.setenv("DPSCO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("DPSCO_NO_CACHE", raising=False)
    bench.bench_sweep_scaling(n_grid={"quadratic": (200,)}, seeds=1, jobs=(1, 1), log=lambda *a: None)
    import os

    assert os.environ["DPSCO_CACHE_DIR"] == str(tmp_path / "cache") and "DPSCO_NO_CACHE" not in os.environ
    assert not (tmp_path / "cache").exists()  # nothing was cached
    with pytest.raises(ValueError, match="jobs"):
        bench.bench_sweep_scaling(n_grid={"quadratic": (200,)}, seeds=1, jobs=(2,))


def test_records_digest_sees_one_bit(bench):
    rec = [{"regime": "quadratic", "n": 10, "gap": 0.1}]
    other = [{"regime": "quadratic", "n": 10, "gap": np.nextafter(0.1, 1.0)}]
    assert bench._records_digest(rec) == bench._records_digest([dict(reversed(list(rec[0].items())))])
    assert bench._records_digest(rec) != bench._records_digest(other)


def test_sweep_case_is_notebook_09_gap_vs_n(bench, monkeypatch, tmp_path):
    """The benchmark task, grid and seed are notebook 09's sweep: its own cell code, run here, gives the same grid
    points (with the notebook's constants) and the task gives the same records from the same generator."""
    import bench_cases

    monkeypatch.setenv("DPSCO_RESULTS_DIR", str(tmp_path))
    monkeypatch.setenv("DPSCO_NO_CACHE", "1")
    nb = json.loads((ROOT / "notebooks" / "09_private_smd_saddle.ipynb").read_text())
    code = ["".join(c["source"]) for c in nb["cells"]
            if c["cell_type"] == "code" and "launch" not in c["metadata"].get("tags", [])]  # not the Colab set-up
    ns: dict = {}
    exec(code[0], ns)  # the parameters cell: profile = "paper", seed, n_jobs
    assert ns["profile"] == "paper" and ns["seed"] == bench_cases.SWEEP_SEED
    exec(code[1], ns)  # imports and the profile
    cell = next(c for c in code if "run_sweep(sc.a1_gap_task" in c)
    exec(cell[:cell.index("\nrec = ")], ns)  # MARGINS, N_GRID, REPS, grid (not the sweep)
    call = cell[cell.index("\nrec = "):].splitlines()[1]
    assert "run_sweep(sc.a1_gap_task, grid, seeds=REPS, base_seed=seed" in call
    full = [{**p, **bench_cases.SWEEP_POINT} for p in bench_cases.sweep_grid()]
    assert sorted(ns["grid"], key=str) == sorted(full, key=str) and ns["REPS"] == bench_cases.SWEEP_SEEDS
    assert tuple(ns["N_GRID"]) == bench_cases.SWEEP_N and tuple(ns["sc"].A1_EXPONENTS) == bench_cases.SWEEP_REGIMES
    for p in bench_cases.sweep_grid({"quadratic": (300,), "second_order": (500,), "first_order": (400,)}):
        mine = bench_cases.sweep_gap_vs_n(rng=np.random.default_rng(7), **p)
        theirs = ns["sc"].a1_gap_task(rng=np.random.default_rng(7), **p, **bench_cases.SWEEP_POINT)
        assert bench._records_digest([mine]) == bench._records_digest([theirs])
    with pytest.raises(ValueError, match="regime"):
        bench_cases.sweep_gap_vs_n(rng=np.random.default_rng(0), regime="cubic", n=10)


def test_cli_only_sweep_scaling_merges(bench, tmp_path, monkeypatch):
    import functools

    out = tmp_path / "r.json"
    out.write_text(json.dumps({"schema": "dpsco-bench/1", "algorithms": [{"name": "x"}], "note": "kept"}))
    monkeypatch.setattr(bench, "bench_sweep_scaling",
                        functools.partial(bench.bench_sweep_scaling, **TINY_SWEEP, log=lambda *a: None))
    assert bench.main(["--only", "sweep_scaling", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["note"] == "kept" and res["algorithms"] == [{"name": "x"}]
    assert res["sweep_scaling"]["records_identical"] is True
    bench.validate_extra(res)
    with pytest.raises(SystemExit):
        bench.main(["--only", "sweep_scaling", "--time-command", "true", "--out", str(out)])


def test_cli_only_streaming_runs_a_tiny_stream_and_merges(bench, tmp_path):
    # the streaming case (Poly-SFW on problem.stream, one fresh interpreter per run) at n = 3000, d = 100
    out = tmp_path / "r.json"
    out.write_text(json.dumps({"note": "kept"}))
    assert bench.main(["--only", "streaming", "--stream-n", "3000", "--stream-block", "700", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    st = res["streaming"]
    assert res["note"] == "kept" and st["n"] == 3000 and st["d"] == 100 and st["block_size"] == 700
    (run,) = st["runs"]
    assert run["bounded_memory"] is True and run["accountant"] == "best" and run["seed"] == 0
    assert run["delta"] == pytest.approx(3000**-1.1) and run["certified_epsilon"] <= run["epsilon"] * (1 + 1e-9)
    assert run["seconds"] > 0 and 0 < run["peak_rss_mb"] == st["peak_rss_mb"] and st["under_target"] is True
    assert run["trivial_excess_risk"] > 0
    assert math.isclose(run["ratio"], run["excess_risk"] / run["trivial_excess_risk"])
    bench.validate_extra(res)
    del st["runs"][0]["peak_rss_mb"]
    with pytest.raises(ValueError, match="streaming runs"):
        bench.validate_extra(res)


def test_time_command_measures_and_merges(bench, tmp_path):
    out = tmp_path / "r.json"
    assert bench.main(["--time-command", "sleep 0.3; exit 3", "--label", "make test", "--out", str(out)]) == 3
    assert bench.main(["--time-command", "true", "--label", "make book", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    t = res["build_times"]["make test"]
    assert t["wall_seconds"] >= 0.3 and t["returncode"] == 3 and t["target_seconds"] == 15 * 60
    assert res["build_times"]["make book"]["target_seconds"] == 30 * 60  # both labels kept
    assert len(t["loadavg_before"]) == 3 and t["cpu_count"] >= 1
    bench.validate_extra(res)
    # notebook timings written by the command are summarized with it; older ones are not
    ex = tmp_path / "_build" / "executed"
    ex.mkdir(parents=True)
    (ex / "timings-smoke.json").write_text(json.dumps({"notebooks/01_a.ipynb": 1.0}))
    cmd = "sleep 0.05; printf '{\"notebooks/01_a.ipynb\": 2.5}' > _build/executed/timings-paper.json"
    entry = bench.time_command(cmd, root=tmp_path)
    assert entry["label"] == cmd and entry["target_seconds"] is None
    assert set(entry["notebook_timings"]) == {"paper"}
    assert entry["notebook_timings"]["paper"]["total_seconds"] == 2.5
    with pytest.raises(ValueError, match="command"):
        bench.time_command("  ")


def test_make_problem_and_floor(bench):
    import bench_cases

    for kind in bench_cases.PROBLEMS:
        problem, data = bench_cases.make_problem(kind, 257, 6, seed=1)
        assert data.X.shape == (257, 6)
        assert problem.validate_data(data) is data  # generated in blocks, still inside the declared bounds
        assert math.isfinite(bench_cases.floor_pass(problem, data))
    with pytest.raises(ValueError, match="kind"):
        bench_cases.make_problem("nope", 10, 3, seed=0)
    # the floor's blocks cover every record: its checksum equals the unblocked sum of first coordinates
    problem, data = bench_cases.make_problem("ls_simplex", 1000, 5, seed=2)
    x = problem.feasible_set.center()
    want = float(problem.grad(x, data)[:, 0].sum())
    old = bench_cases.FLOOR_BLOCK_ENTRIES
    try:
        bench_cases.FLOOR_BLOCK_ENTRIES = 35  # 7 rows per block
        assert bench_cases.floor_pass(problem, data) == pytest.approx(want, rel=1e-12, abs=1e-12)
    finally:
        bench_cases.FLOOR_BLOCK_ENTRIES = old


# ------------------------------------------------------------------------------------------ speed paths
def test_blocked_validation_finds_the_same_records(monkeypatch):
    problem = hard_least_squares(1.0, 4)
    data = problem.sample(103, np.random.default_rng(0))
    X = np.array(data.X)
    X[[0, 37, 38, 102], 1] = 5.0  # outside ||a||_inf <= 1
    bad = Dataset(X, data.y)
    monkeypatch.setattr(problem_base, "_VALIDATION_BLOCK_ENTRIES", 12)  # 3 rows per block
    blocked = problem_base._blocked_row_violation(problem._row_violation, bad)
    assert blocked.shape == (103,)
    assert np.flatnonzero(blocked).tolist() == [0, 37, 38, 102]
    with pytest.raises(ValueError, match=r"in 4 of 103 records \(first: record 0\)"):
        problem.validate_data(bad)
    clipped = problem.validate_data(bad, clip=True)
    assert clipped.n_clipped == 4
    game = random_bilinear_game(3, 2, np.random.default_rng(1))
    gd = game.sample(50, np.random.default_rng(2))
    G = np.array(gd.X)
    G[49, 0] = 1.5
    with pytest.raises(ValueError, match=r"in 1 of 50 records \(first: record 49\)"):
        game.validate_data(Dataset(G))


class _DuckProblem:
    """A problem seen only through the public, validated ``grad`` (SMD's generic path)."""

    def __init__(self, inner):
        self._inner = inner
        self.feasible_set, self.p, self.L0 = inner.feasible_set, inner.p, inner.L0

    def grad(self, x, data):
        return self._inner.grad(x, data)


@pytest.mark.parametrize("p, kind", [(1.0, "simplex"), (1.0, "l1ball"), (1.5, None)])
def test_smd_fast_oracle_is_bit_identical(p, kind):
    problem = hard_least_squares(p, 9, set_kind=kind) if kind else hard_least_squares(p, 9)
    data = problem.sample(400, np.random.default_rng(4))
    fast = run_smd(problem, data, rng=np.random.default_rng(0), trace=True, trace_every=50)
    slow = run_smd(_DuckProblem(problem), data, rng=np.random.default_rng(0), trace=True, trace_every=50)
    assert fast.x.tobytes() == slow.x.tobytes()
    assert fast.trace["x_avg"].tobytes() == slow.trace["x_avg"].tobytes()


def test_smd_fast_oracle_still_rejects_wrong_width():
    problem = hard_least_squares(1.0, 5)
    other = hard_least_squares(1.0, 6).sample(10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="d = 5"):
        run_smd(problem, other, rng=np.random.default_rng(0))


def test_report_measures_live_without_a_results_file(tmp_path):
    """Notebook 18's loader: with no results file it measures a reduced suite and Poly-SFW at d = 1e3 live, says
    so in its provenance, and the verdict rows check Poly-SFW's ratio; without a stored streaming entry it streams
    a smaller n live (fresh interpreter) and checks its peak memory and certificate."""
    from dpsco_lib.experiments import Verdict

    rp = _load("dpsco_bench_report", "report.py")
    res, source = rp.load_results(tmp_path / "absent.json", live_sizes=((300, 6),), live_poly_sfw=(800, 1000),
                                  seed=1, cvxpy_dims=(4,))
    rp.bench.validate_results(res)
    assert "measured live" in source and "Poly-SFW at 8e+02x1e+03" in source
    assert any(r["name"] == "poly_sfw" and (r["n"], r["d"]) == (800, 1000) for r in res["algorithms"])
    st, st_source = rp.load_streaming(res, live_n=3000, seed=0)
    assert "measured live" in st_source and st["n"] == 3000 and st["runs"][0]["accountant"] == "best"
    v = Verdict("t")
    rp.check_floor(v, res, {})
    rp.check_rest(v, res, st)
    names = [c.name for c in v.rows]
    assert any(n.startswith("poly_sfw: CPU time / (passes x floor) at n=8e+02, d=1e+03") for n in names)
    assert any(n.startswith("streaming: peak RSS") for n in names)
    assert "| 3e+03 | 100 |" in rp.streaming_table(st) and "poly_sfw" in rp.floor_table(res)
    stored, src = rp.load_streaming({"streaming": st}, live_n=10, seed=0)
    assert stored is st and "stored by" in src


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="VmHWM is read from Linux's /proc")
def test_child_peak_rss_is_its_own_not_the_parents():
    """A streamed run is measured in a fresh interpreter. Its peak must not inherit the parent's: ``ru_maxrss``
    does across fork/exec (a notebook kernel holding 1.2 GB made a 200 MB run report 1.2 GB); ``VmHWM`` does not."""
    import subprocess

    big = np.ones(80_000_000)  # 640 MB resident in this process
    big[::512] = 2.0
    code = (f"import sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); import bench_cases as bc; "
            "import resource; print(bc.peak_rss_mb(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    own, inherited = float(out[0]), float(out[1])
    assert 0 < own < 400, f"the child's own peak should be its interpreter and imports, got {own} MB"
    assert inherited >= own  # ru_maxrss is never below the child's own peak (and usually carries the parent's)
    del big
