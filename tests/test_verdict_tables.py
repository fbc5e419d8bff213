"""The shared verdict, worst-case fit, calibration table and profile pieces of the notebooks."""

from __future__ import annotations

import numpy as np
import pytest

from dpsco_book.privacy_rule import delta_for_n
from dpsco_book.tables import noise_summary, show_table, table_html
from dpsco_lib.experiments import SlopeFit, Verdict, fit_loglog_slope, get_profile, worst_case_curve
from dpsco_lib.privacy.accounting import PrivacyLedger
from dpsco_lib.privacy.accounting.events import GaussianEvent, LaplaceEvent


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


def test_delta_rule() -> None:
    assert delta_for_n(10**6) == pytest.approx(10 ** -6.6)
    assert delta_for_n(100) < 1 / 100
    for bad, match in ((1, "n"), (10.5, "n")):
        with pytest.raises((ValueError, TypeError), match=match):
            delta_for_n(bad)
    with pytest.raises(ValueError, match="power"):
        delta_for_n(100, power=1.0)


def test_noise_summary_merges_repeated_mechanisms() -> None:
    lg = PrivacyLedger()
    lg.record(LaplaceEvent(0.01), 100)
    lg.record(LaplaceEvent(0.01), 1)
    lg.record(GaussianEvent(3.0), 2)
    assert noise_summary(lg) == "Laplace eps0 0.01 x 101; Gaussian sigma/Delta 3 x 2"


def test_show_table_text() -> None:
    text = show_table([{"a": 1.23456, "b": "x"}, {"a": 2.0, "c": 3}], caption="cap", floatfmt=".2f")
    assert text.splitlines() == ["cap", "a     b  c", "1.23  x   ", "2.00     3"]


def test_full_profile_defaults_to_paper_values() -> None:
    full, paper, smoke = get_profile("full"), get_profile("paper"), get_profile("smoke")
    assert full.pick(smoke=1, paper=2) == 2 and full.pick(smoke=1, paper=2, full=3) == 3
    assert paper.pick(smoke=1, paper=2, full=3) == 2 and smoke.pick(smoke=1, paper=2, full=3) == 1
    assert full.is_paper and full.n_seeds > paper.n_seeds


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


def test_table_html_pads_rules_and_groups_numbers() -> None:
    """Adjacent numbers never run together (padded, ruled cells), large integers are grouped, numbers are
    right-aligned and unbroken, text wraps, and the table sits in a box that scrolls sideways on its own."""
    import re

    html = table_html([{"n": 1414, "d": 512, "err": 0.0123449, "arm": "noisy SGD"}, {"n": 240_000, "d": 2}],
                      caption="S2 <worst case>")
    assert html.startswith('<div class="dpsco-table-scroll"') and "overflow-x:auto" in html.split(">", 1)[0]
    cells = re.findall(r'<td style="([^"]*)">([^<]*)</td>', html)
    assert [v for _, v in cells] == ["1414", "512", "0.01234", "noisy SGD", "240\u202f000", "2", "", ""]
    assert all("padding:" in st and "border-bottom:" in st for st, _ in cells)
    assert all("text-align:right" in st and "nowrap" in st for st, v in cells[:3])
    assert "text-align:left" in cells[3][0] and "nowrap" not in cells[3][0]
    assert "S2 &lt;worst case&gt;" in html
