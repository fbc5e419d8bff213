"""Summaries, rate fitting and verdicts for the theorem-check notebooks."""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dpsco_lib._validation import check_array, check_int, check_rng
from dpsco_lib.experiments.cache import project_root

__all__ = ["SlopeFit", "Verdict", "fit_loglog_slope", "results_dir", "summarize", "write_csv"]

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


def fit_loglog_slope(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    *,
    rng: np.random.Generator,
    statistic: str = "mean",
    n_boot: int = 2000,
    level: float = 0.95,
) -> SlopeFit:
    """Fit the exponent of ``y ~ C x^slope`` on log-log axes, with a percentile bootstrap interval.

    With replicates (repeated x values) the fit is to the log of the per-x ``statistic`` (mean or
    median: an expected error is a mean) and the bootstrap resamples replicates within each x, which
    is the sampling variability of the experiment. Without replicates it resamples (x, y) pairs.

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
    agg = np.mean if statistic == "mean" else np.median
    ux, inverse = np.unique(xa, return_inverse=True)
    if ux.size < 2:
        raise ValueError("x must contain at least two distinct values")
    groups = [ya[inverse == i] for i in range(ux.size)]
    lx = np.log(ux)
    replicated = any(g.size > 1 for g in groups)
    if replicated:
        slope, intercept = _ols(lx, np.log([agg(g) for g in groups]))
        boots = np.empty(n_boot)
        for b in range(n_boot):
            ly = np.log([agg(g[rng.integers(0, g.size, g.size)]) for g in groups])
            boots[b] = _ols(lx, ly)[0]
    else:
        lxa, lya = np.log(xa), np.log(ya)
        slope, intercept = _ols(lxa, lya)
        boots = []
        while len(boots) < n_boot:
            idx = rng.integers(0, xa.size, xa.size)
            if np.unique(lxa[idx]).size >= 2:
                boots.append(_ols(lxa[idx], lya[idx])[0])
        boots = np.asarray(boots)
    lo, hi = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2])
    return SlopeFit(slope, intercept, float(lo), float(hi), level, int(ux.size), n_boot, statistic)


@dataclass
class Verdict:
    """The theorem check at the end of a notebook.

    Collect checks with :meth:`check`, then call :meth:`finish`, which prints a table and a one-line
    summary and raises ``AssertionError`` naming every failed check, so a failed prediction fails the
    notebook, the book build and CI.
    """

    notebook: str
    checks: list[tuple[str, bool, str]] = field(default_factory=list)

    def check(self, name: str, passed: bool, detail: str = "") -> bool:
        passed = bool(passed)
        self.checks.append((name, passed, detail))
        return passed

    def check_slope(self, name: str, fit: SlopeFit, expected: float, tol: float) -> bool:
        """Pass when the fitted slope is within ``tol`` of ``expected``."""
        ok = math.isfinite(fit.slope) and abs(fit.slope - expected) <= tol
        return self.check(name, ok, f"{fit}; expected {expected:+.3f} +- {tol}")

    def finish(self) -> None:
        if not self.checks:
            raise AssertionError(f"verdict of {self.notebook} has no checks: a verdict must assert something")
        width = max(len(n) for n, _, _ in self.checks)
        for name, passed, detail in self.checks:
            print(f"  [{'PASS' if passed else 'FAIL'}] {name.ljust(width)}  {detail}")
        failed = [n for n, ok, _ in self.checks if not ok]
        total = len(self.checks)
        if failed:
            line = f"VERDICT {self.notebook}: FAIL ({len(failed)} of {total} checks failed: {', '.join(failed)})"
            print(line)
            raise AssertionError(line)
        print(f"VERDICT {self.notebook}: PASS ({total}/{total} checks)")


def results_dir(notebook: str) -> Path:
    """``results/<notebook>/`` under the project root (or ``$DPSCO_RESULTS_DIR``), created if needed."""
    if not notebook or "/" in notebook or notebook.startswith("."):
        raise ValueError(f"notebook must be a plain notebook name like '01_mechanisms', got {notebook!r}")
    base = Path(os.environ["DPSCO_RESULTS_DIR"]) if os.environ.get("DPSCO_RESULTS_DIR") else project_root() / "results"
    out = base / notebook
    out.mkdir(parents=True, exist_ok=True)
    return out


def write_csv(records: Iterable[Mapping[str, Any]], path: str | Path) -> Path:
    """Write records (dicts) as CSV with the union of their keys as columns, in first-seen order."""
    rows = [dict(r) for r in records]
    cols: list[str] = []
    for r in rows:
        cols.extend(k for k in r if k not in cols)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=cols)
        writer.writeheader()
        for r in rows:
            writer.writerow({k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()})
    return path
