"""Tests of dpsco_lib.experiments.analysis: rate fits, worst-case curves, summaries and verdicts."""

from __future__ import annotations

import numpy as np
import pytest

from dpsco_lib.experiments import (
    SlopeFit,
    Verdict,
    fit_loglog_slope,
    run_sweep,
    summarize,
    worst_case_curve,
)


def mean_error(*, rng: np.random.Generator, n: int, scale: float = 1.0) -> dict[str, float]:
    """|mean of n N(0, scale^2)|: its expectation is scale * sqrt(2 / (pi n))."""
    return {"err": float(abs(rng.normal(scale=scale, size=n).mean()))}


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


def _fit(slope: float, lo: float, hi: float) -> SlopeFit:
    return SlopeFit(slope, 0.0, lo, hi, 0.95, 5, 1000, "median")


@pytest.mark.parametrize(
    ("slope", "lo", "hi", "ok"),
    [
        (-0.50, -0.60, -0.40, True),
        (-0.55, -0.58, -0.52, False),  # within tol but the interval excludes -1/2
        (-1.30, -1.40, -1.20, False),  # faster than the theorem: fails (no one-sided pass)
        (-0.20, -0.30, -0.10, False),  # slower
        (-0.42, -0.52, -0.32, True),
        (-0.39, -0.52, -0.30, False),  # point estimate outside tol although the interval contains -1/2
    ],
)
def test_check_exponent_is_two_sided_and_reads_the_interval(slope: float, lo: float, hi: float, ok: bool) -> None:
    v = Verdict("t")
    assert v.check_exponent("rate", _fit(slope, lo, hi), -0.5, 0.1) is ok
    assert v.rows[0].predicted.startswith("-0.500 +- 0.1")
    assert v.check_slope("rate", _fit(slope, lo, hi), -0.5, 0.1) is ok


def test_check_exponent_rejects_bad_tolerance() -> None:
    with pytest.raises(ValueError, match="tol"):
        Verdict("t").check_exponent("r", _fit(-0.5, -0.6, -0.4), -0.5, 0.0)


def test_verdict_table_has_predicted_column_and_fails_loudly() -> None:
    v = Verdict("nb")
    v.check_at_most("excess / trivial", 0.31, 0.5, what="learns")
    v.check_at_least("lower bound", 0.2, 0.5)
    html = v.table_html()
    assert "predicted" in html and "&lt;= 0.5 (learns)" in html
    assert v.checks == [("excess / trivial", True, "0.31"), ("lower bound", False, "0.2")]
    with pytest.raises(AssertionError, match="1 of 2 checks failed: lower bound"):
        v.finish()
    assert Verdict("nb").check_at_most("nan", float("nan"), 1.0) is False


def test_worst_case_curve_takes_the_max_over_the_family_of_the_median() -> None:
    x = [10, 10, 10, 10, 10, 10, 20, 20, 20, 20]
    g = [1, 1, 1, 2, 2, 2, 1, 1, 2, 2]
    y = [1.0, 2.0, 9.0, 3.0, 3.0, 0.0, 5.0, 7.0, 1.0, 1.0]
    rows = worst_case_curve(x, y, g)
    assert rows == [{"x": 10.0, "worst": 3.0, "argmax": 2, "instances": 2},
                    {"x": 20.0, "worst": 6.0, "argmax": 1, "instances": 2}]
    with pytest.raises(ValueError, match="same length"):
        worst_case_curve(x, y, g[:-1])


def test_worst_case_fit_recovers_a_minimax_slope() -> None:
    # the worst instance changes with n: gamma ~ n^-1/2 attains error ~ n^-1/2, the others decay faster
    rng = np.random.default_rng(3)
    xs, ys, gs = [], [], []
    for n in (1e3, 4e3, 1.6e4, 6.4e4):
        for k, gamma in enumerate((0.3, 0.1, 0.03, 0.01)):
            err = min(gamma, 1 / np.sqrt(n)) * np.exp(0.05 * rng.standard_normal(30))
            xs += [n] * 30
            ys += list(err)
            gs += [k] * 30
    fit = fit_loglog_slope(xs, ys, rng=np.random.default_rng(0), statistic="median", worst_over=gs, n_boot=300)
    assert abs(fit.slope + 0.5) < 0.05 and fit.ci_low <= -0.5 <= fit.ci_high
    best_single = fit_loglog_slope(np.array(xs)[np.array(gs) == 0], np.array(ys)[np.array(gs) == 0],
                                   rng=np.random.default_rng(0), statistic="median", n_boot=300)
    assert abs(best_single.slope + 0.5) < 0.05  # gamma = 0.3 is the worst at every n here
    with pytest.raises(ValueError, match="worst_over"):
        fit_loglog_slope(xs, ys, rng=np.random.default_rng(0), worst_over=gs[:-1])


@pytest.mark.parametrize(
    ("slope", "lo", "hi", "expected", "ok"),
    [
        (-0.535, -0.583, -0.514, (-2 / 3, -0.5), True),  # between the two terms' exponents
        (-0.391, -0.403, -0.378, (-0.5, -0.368), True),  # near the log-corrected end
        (-0.45, -0.47, -0.43, (-0.5, -0.48), False),  # interval misses the range although within tol
        (-0.80, -0.90, -0.60, (-2 / 3, -0.5), False),  # point estimate beyond tol of the range
    ],
)
def test_check_exponent_with_a_predicted_range(slope: float, lo: float, hi: float,
                                               expected: tuple[float, float], ok: bool) -> None:
    v = Verdict("t")
    assert v.check_exponent("rate", _fit(slope, lo, hi), expected, 0.1) is ok
    with pytest.raises(ValueError, match="range"):
        v.check_exponent("rate", _fit(slope, lo, hi), (-0.4, -0.5), 0.1)


def test_check_exponent_without_interval_is_still_two_sided() -> None:
    v = Verdict("t")
    assert v.check_exponent("exact", _fit(-0.992, -0.997, -0.987), -1.0, 0.1, interval=False) is True
    assert "point estimate" in v.rows[-1].predicted
    assert v.check_exponent("exact", _fit(-0.85, -0.86, -0.84), -1.0, 0.1, interval=False) is False
    assert v.check_exponent("exact", _fit(-1.15, -1.16, -1.14), -1.0, 0.1, interval=False) is False
