"""Summaries, rate fitting and verdicts for the theorem-check notebooks."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpsco_lib._validation import check_array, check_int, check_rng

__all__ = ["Check", "SlopeFit", "Verdict", "fit_loglog_slope", "summarize", "worst_case_curve"]

_STATS = {
    "mean": np.mean,
    "median": np.median,
    "std": lambda a: np.std(a, ddof=1) if a.size > 1 else 0.0,
    "min": np.min,
    "max": np.max,
    "q10": lambda a: np.quantile(a, 0.10),
    "q25": lambda a: np.quantile(a, 0.25),
    "q75": lambda a: np.quantile(a, 0.75),
    "q90": lambda a: np.quantile(a, 0.90),
    "q99": lambda a: np.quantile(a, 0.99),
    "count": lambda a: a.size,
}


def summarize(
    records: Iterable[Mapping[str, Any]],
    *,
    by: Sequence[str],
    value: str,
    stats: Sequence[str] = ("median", "mean", "q10", "q90"),
) -> list[dict[str, Any]]:
    """Group records by the keys ``by`` and summarise the column ``value``.

    Returns one dict per group (in first-seen order) with the group keys and ``<value>_<stat>``.
    Available stats: mean, median, std, min, max, q10, q25, q75, q90, q99, count.
    """
    unknown = [s for s in stats if s not in _STATS]
    if unknown:
        raise ValueError(f"stats must be among {sorted(_STATS)}, got {unknown}")
    groups: dict[tuple, list[float]] = {}
    for rec in records:
        try:
            key = tuple(rec[k] for k in by)
            groups.setdefault(key, []).append(float(rec[value]))
        except KeyError as exc:
            raise ValueError(f"record lacks column {exc.args[0]!r}; it has {sorted(rec)}") from exc
    rows = []
    for key, vals in groups.items():
        arr = np.asarray(vals)
        row = dict(zip(by, key, strict=True))
        for s in stats:
            row[f"{value}_{s}"] = float(_STATS[s](arr))
        rows.append(row)
    return rows


@dataclass(frozen=True)
class SlopeFit:
    """Least-squares fit ``log y = intercept + slope * log x`` with a bootstrap interval."""

    slope: float
    intercept: float
    ci_low: float
    ci_high: float
    level: float
    n_points: int
    n_boot: int
    statistic: str

    def predict(self, x: np.ndarray | float) -> np.ndarray:
        return np.exp(self.intercept) * np.asarray(x, dtype=float) ** self.slope

    def __str__(self) -> str:
        pct = round(100 * self.level)
        return f"slope {self.slope:+.3f} ({pct}% CI [{self.ci_low:+.3f}, {self.ci_high:+.3f}])"


def _ols(lx: np.ndarray, ly: np.ndarray) -> tuple[float, float]:
    slope, intercept = np.polyfit(lx, ly, 1)
    return float(slope), float(intercept)


def _cell_groups(xa: np.ndarray, ya: np.ndarray, fam: np.ndarray | None) -> tuple[np.ndarray, list[list[np.ndarray]]]:
    """Distinct x values and, per x, the replicate arrays of each instance of the family (one without it)."""
    ux, inverse = np.unique(xa, return_inverse=True)
    if ux.size < 2:
        raise ValueError("x must contain at least two distinct values")
    cells: list[list[np.ndarray]] = []
    for i in range(ux.size):
        at = inverse == i
        if fam is None:
            cells.append([ya[at]])
        else:
            members = np.unique(fam[at])
            cells.append([ya[at & (fam == g)] for g in members])
    return ux, cells


def worst_case_curve(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    family: Sequence[Any] | np.ndarray,
    *,
    statistic: str = "median",
) -> list[dict[str, Any]]:
    r"""The worst case over an instance family: per x, :math:`\max_g \operatorname{stat}\{y : x, g\}`.

    A rate is an upper bound over a class of problems, so it is checked on the worst instance of a family
    whose hardness parameter ``g`` is chosen as in the theorem's lower-bound construction, not on one easy
    instance. Returns one row per distinct x: ``x``, ``worst`` (the largest per-instance statistic), ``argmax``
    (the instance attaining it) and ``instances`` (how many were measured).
    """
    if statistic not in ("mean", "median"):
        raise ValueError(f"statistic must be 'mean' or 'median', got {statistic!r}")
    xa, ya = check_array(x, "x", ndim=1), check_array(y, "y", ndim=1)
    fam = np.asarray(family)
    if fam.shape != xa.shape or ya.shape != xa.shape:
        raise ValueError(f"x, y and family must have the same length, got {xa.size}, {ya.size} and {fam.size}")
    agg = np.mean if statistic == "mean" else np.median
    rows = []
    for xv in np.unique(xa):
        at = xa == xv
        members = np.unique(fam[at])
        stats = [float(agg(ya[at & (fam == g)])) for g in members]
        k = int(np.argmax(stats))
        rows.append({"x": float(xv), "worst": stats[k], "argmax": members[k].item(), "instances": len(members)})
    return rows


def fit_loglog_slope(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    *,
    rng: np.random.Generator,
    statistic: str = "mean",
    n_boot: int = 2000,
    level: float = 0.95,
    worst_over: Sequence[Any] | np.ndarray | None = None,
) -> SlopeFit:
    r"""Fit the exponent of ``y ~ C x^slope`` on log-log axes, with a percentile bootstrap interval.

    With replicates (repeated x values) the fit is to the log of the per-x ``statistic`` (mean or
    median: an expected error is a mean) and the bootstrap resamples replicates within each x, which
    is the sampling variability of the experiment. Without replicates it resamples (x, y) pairs.

    With ``worst_over`` (the instance label of each record) the per-x value is the worst case over the
    family, :math:`\max_g \operatorname{stat}\{y : x, g\}` (:func:`worst_case_curve`), and the bootstrap
    resamples the replicates of every (x, instance) cell and takes the maximum again, so the interval
    includes the variability of which instance is worst.

    Parameters
    ----------
    x, y : array_like
        Positive, finite, same length; at least two distinct x values.
    rng : numpy.random.Generator
        Drives the bootstrap.
    statistic : {"mean", "median"}
    n_boot : int
        Bootstrap resamples (>= 100).
    level : float
        Confidence level of the interval, in (0, 1).
    worst_over : array_like, optional
        Instance labels, same length as ``x``.
    """
    rng = check_rng(rng)
    xa = check_array(x, "x", ndim=1)
    ya = check_array(y, "y", ndim=1)
    if xa.shape != ya.shape:
        raise ValueError(f"x and y must have the same length, got {xa.size} and {ya.size}")
    if np.any(xa <= 0) or np.any(ya <= 0):
        raise ValueError("x and y must be positive for a log-log fit")
    if statistic not in ("mean", "median"):
        raise ValueError(f"statistic must be 'mean' or 'median', got {statistic!r}")
    n_boot = check_int(n_boot, "n_boot", lo=100)
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    fam = None
    if worst_over is not None:
        fam = np.asarray(worst_over)
        if fam.shape != xa.shape:
            raise ValueError(f"worst_over must have the length of x ({xa.size}), got {fam.size}")
    agg = np.mean if statistic == "mean" else np.median
    ux, cells = _cell_groups(xa, ya, fam)
    lx = np.log(ux)
    if fam is not None or any(g.size > 1 for c in cells for g in c):
        slope, intercept = _ols(lx, np.log([max(agg(g) for g in c) for c in cells]))
        boots = np.empty(n_boot)
        for b in range(n_boot):
            ly = np.log([max(agg(g[rng.integers(0, g.size, g.size)]) for g in c) for c in cells])
            boots[b] = _ols(lx, ly)[0]
    else:
        slope, intercept, boots = _pairs_bootstrap(xa, ya, rng, n_boot)
    lo, hi = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2])
    return SlopeFit(slope, intercept, float(lo), float(hi), level, int(ux.size), n_boot, statistic)


def _pairs_bootstrap(xa: np.ndarray, ya: np.ndarray, rng: np.random.Generator,
                     n_boot: int) -> tuple[float, float, np.ndarray]:
    """OLS on (log x, log y) pairs and its pairs-bootstrap slopes (resamples with two distinct x)."""
    lxa, lya = np.log(xa), np.log(ya)
    slope, intercept = _ols(lxa, lya)
    boots: list[float] = []
    while len(boots) < n_boot:
        idx = rng.integers(0, xa.size, xa.size)
        if np.unique(lxa[idx]).size >= 2:
            boots.append(_ols(lxa[idx], lya[idx])[0])
    return slope, intercept, np.asarray(boots)


@dataclass(frozen=True)
class Check:
    """One row of a verdict: what was checked, what was measured, what the theory predicts, pass or fail."""

    name: str
    passed: bool
    measured: str = ""
    predicted: str = ""
    controls: str = ""


@dataclass
class Verdict:
    """The theorem check at the end of a notebook.

    Collect checks with :meth:`check` (or :meth:`check_exponent`, :meth:`check_at_most`), then call
    :meth:`finish`, which shows a table (check, measured, predicted, pass/fail) and a one-line summary and
    raises ``AssertionError`` naming every failed check, so a failed prediction fails the notebook, the book
    build and CI.
    """

    notebook: str
    rows: list[Check] = field(default_factory=list)
    outcomes: list[Any] = field(default_factory=list)

    @property
    def checks(self) -> list[tuple[str, bool, str]]:
        """``(name, passed, measured)`` per check."""
        return [(c.name, c.passed, c.measured) for c in self.rows]

    def check(self, name: str, passed: bool, detail: str = "", *, predicted: str = "") -> bool:
        """Record one check; ``detail`` is what was measured, ``predicted`` what the theorem says."""
        passed = bool(passed)
        self.rows.append(Check(str(name), passed, str(detail), str(predicted)))
        return passed

    def claim(self, outcome: Any) -> bool:
        """Record a declared claim's outcome (:class:`~dpsco_lib.experiments.claims.ClaimOutcome`): the row shows
        its window, its measurement and its power against each negative control; it passes iff the records meet
        the prediction and every control is rejected with the required power."""
        def fmt(p: float | None) -> str:
            return "n/a" if p is None else f"{p:.2f}"

        self.outcomes.append(outcome)
        controls = (f"learns nothing {fmt(outcome.power_trivial)}, wrong regime {fmt(outcome.power_regime)} "
                    f"(need >= {outcome.required:g}); false alarm {outcome.false_alarm:.2f}")
        self.rows.append(Check(f"{outcome.claim_id}: {outcome.statement}", bool(outcome.passed), outcome.measured,
                               outcome.window, controls))
        return bool(outcome.passed)

    def claim_rows(self) -> list[dict[str, Any]]:
        """The claims of this verdict as table rows (CSV-ready), with the notebook's name."""
        return [{"notebook": self.notebook, **o.row()} for o in self.outcomes]

    def check_slope(self, name: str, fit: SlopeFit, expected: float, tol: float) -> bool:
        """Two-sided exponent check; the same as :meth:`check_exponent` (an alias)."""
        return self.check_exponent(name, fit, expected, tol)

    def check_exponent(self, name: str, fit: SlopeFit, expected: float | tuple[float, float], tol: float, *,
                       interval: bool = True) -> bool:
        r"""Two-sided exponent check that reads the bootstrap interval.

        ``expected`` is the predicted exponent, or a range ``(lo, hi)`` when the theorem's bound is a sum of
        terms with different exponents (e.g. :math:`n^{-1/2} + (\log d/(\varepsilon n))^{2/3}`: over a finite
        grid its local slope lies between the two) or carries logarithmic factors (the range between the pure
        power and the local slope of the bound with its logarithms over the grid). Passes iff the point
        estimate is within ``tol`` of the prediction **and** the interval ``[fit.ci_low, fit.ci_high]`` meets
        it (contains the exponent, or intersects the range): a faster or a slower decay fails, and so does a
        point estimate that lands near the prediction while the data exclude it.

        ``interval=False`` drops the interval condition (the check stays two-sided on the point estimate) and says
        so in the verdict's predicted column. It is for exact expectations, computed by enumeration or in closed
        form on a finite grid, whose local slope differs from the asymptotic exponent by the theorem's
        lower-order terms while their "interval" has no sampling width to absorb that.
        """
        tol = float(tol)
        if not (math.isfinite(tol) and tol > 0):
            raise ValueError(f"tol must be a positive finite number, got {tol!r}")
        if isinstance(expected, tuple | list):
            if len(expected) != 2 or not float(expected[0]) <= float(expected[1]):
                raise ValueError(f"expected must be a number or a range (lo, hi) with lo <= hi, got {expected!r}")
            lo, hi = float(expected[0]), float(expected[1])
        else:
            lo = hi = float(expected)
        dist = max(lo - fit.slope, fit.slope - hi, 0.0)
        meets = fit.ci_low <= hi and lo <= fit.ci_high
        ok = math.isfinite(fit.slope) and dist <= tol and (meets or not interval)
        pred = f"{lo:+.3f}" if lo == hi else f"in [{lo:+.3f}, {hi:+.3f}]"
        how = "interval meets it" if interval else "point estimate (exact quantity)"
        return self.check(name, ok, str(fit), predicted=f"{pred} +- {tol:g}, {how}")

    def check_at_most(self, name: str, measured: float, limit: float, *, what: str = "",
                      fmt: str = ".3g") -> bool:
        """Pass iff ``measured <= limit`` (finite); ``what`` names the limit (e.g. ``"0.5 x trivial"``)."""
        m, lim = float(measured), float(limit)
        ok = math.isfinite(m) and m <= lim
        return self.check(name, ok, format(m, fmt), predicted=f"<= {format(lim, fmt)}" + (f" ({what})" if what else ""))

    def check_at_least(self, name: str, measured: float, limit: float, *, what: str = "",
                       fmt: str = ".3g") -> bool:
        """Pass iff ``measured >= limit`` (finite); ``what`` names the limit."""
        m, lim = float(measured), float(limit)
        ok = math.isfinite(m) and m >= lim
        return self.check(name, ok, format(m, fmt), predicted=f">= {format(lim, fmt)}" + (f" ({what})" if what else ""))

    def table_text(self) -> str:
        """The checks as plain text, one per line (the fallback of the HTML table)."""
        width = max((len(c.name) for c in self.rows), default=0)
        return "\n".join(
            f"  [{'PASS' if c.passed else 'FAIL'}] {c.name.ljust(width)}  {c.measured}"
            + (f"  | predicted {c.predicted}" if c.predicted else "")
            + (f"  | power: {c.controls}" if c.controls else "")
            for c in self.rows
        )

    def summary(self) -> str:
        """``VERDICT <notebook>: PASS (k/k checks)`` or ``... FAIL (j of k checks failed: names)``."""
        failed = [c.name for c in self.rows if not c.passed]
        total = len(self.rows)
        if failed:
            return f"VERDICT {self.notebook}: FAIL ({len(failed)} of {total} checks failed: {', '.join(failed)})"
        return f"VERDICT {self.notebook}: PASS ({total}/{total} checks)"

    def table_html(self) -> str:
        """The checks as an HTML table that wraps its text (fixed layout, full width: no sideways scrolling)."""
        from html import escape

        colours = {True: ("#137333", "#e6f4ea", "pass"), False: ("#a50e0e", "#fce8e6", "fail")}
        cell = (
            "padding:0.3em 0.5em;border-bottom:1px solid #d0d0d0;vertical-align:top;overflow-wrap:anywhere;"
            "word-break:break-word;"
        )
        mono = f'{cell}font-family:monospace;font-size:0.85em;'
        rows = []
        for c in self.rows:
            fg, bg, word = colours[c.passed]
            rows.append(
                f'<tr class="dpsco-verdict-{word}" style="background:{bg};">'
                f'<td style="{cell}">{escape(c.name)}</td><td style="{mono}">{escape(c.measured)}</td>'
                f'<td style="{mono}">{escape(c.predicted)}'
                + (f'<br><span style="font-size:0.9em;">power: {escape(c.controls)}</span>' if c.controls else "")
                + "</td>"
                f'<td style="{cell}color:{fg};font-weight:bold;">{word.upper()}</td></tr>'
            )
        ok = all(c.passed for c in self.rows)
        fg, _, _ = colours[ok]
        head = "padding:0.3em 0.5em;text-align:left;border-bottom:2px solid #999;"
        return (
            '<table class="dpsco-verdict" style="table-layout:fixed;width:100%;max-width:100%;'
            'border-collapse:collapse;margin:0.5em 0;">'
            f'<caption style="caption-side:top;text-align:left;font-weight:bold;color:{fg};">'
            f"{escape(self.summary())}</caption>"
            '<colgroup><col style="width:30%"><col style="width:33%"><col><col style="width:4.5em"></colgroup>'
            f'<thead><tr><th style="{head}">check</th><th style="{head}">measured</th>'
            f'<th style="{head}">predicted</th><th style="{head}">result</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>'
        )

    def _show_table(self) -> None:
        """In a notebook kernel: the HTML table (text fallback) with the verdict as output metadata; else print."""
        shell = None
        try:
            from IPython import get_ipython

            shell = get_ipython()
        except ImportError:
            pass
        if shell is None or not hasattr(shell, "kernel"):
            print(self.table_text())
            return
        from IPython.display import display

        meta = {"dpsco": {"verdict": "PASS" if all(c.passed for c in self.rows) else "FAIL",
                          "summary": self.summary(), "claims": self.claim_rows()}}
        display({"text/html": self.table_html(), "text/plain": self.table_text()}, raw=True, metadata=meta)

    def finish(self) -> None:
        if not self.rows:
            raise AssertionError(f"verdict of {self.notebook} has no checks: a verdict must assert something")
        self._show_table()
        line = self.summary()
        print(line)
        if any(not c.passed for c in self.rows):
            raise AssertionError(line)
