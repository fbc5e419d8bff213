r"""Declared claims: a theorem's prediction, frozen before the run, tested together with its negative controls.

A *claim* states what a theorem predicts for a statistic of a run (the exponent of the worst-case error in
``n``, or the error over a bound), computed from the theorem and the run's own parameters only, with a tolerance
fixed in advance. It is tested on the measured records **and on two negative controls run through the same
pipeline, grid and replicates**:

(a) *learns nothing*: the same statistic of a trivial output (``x = 0``, the start point, a uniform vertex)
    measured on the same instances;
(b) *wrong regime*: the measured records with their exponent moved to the nearest neighbouring regime,
    :math:`y_i \mapsto y_i\, x_i^{\beta' - \hat\beta}` (:math:`\hat\beta` the measured exponent,
    :math:`\beta'` the neighbour's): the same noise, the other regime's decay.

The *power* against a control is the probability that the claim rejects it, estimated by re-running the whole
test (point estimate and bootstrap interval) on resampled experiments: every (x, instance) cell's replicates
are resampled with replacement, which imitates a fresh run of the experiment with its variability. The same
resampling of the real records estimates the claim's false-alarm probability. A claim whose control passes
too often is a claim that cannot fail, and :meth:`ClaimOutcome.passed` requires both powers to reach the
profile's requirement (0.95 in the paper profile, 0.8 at smoke).

A tolerance may be at most half the gap between the predicted exponent (or range) and the neighbouring regime:
:class:`RateClaim` refuses a wider one, so no window can admit the neighbour.

With one replicate per cell (an exact expectation, computed in closed form or by enumeration) the test has no
sampling variability: it reads the point estimate only, and each power is 0 or 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpsco_lib._validation import check_array, check_int, check_rng

__all__ = ["BoundClaim", "ClaimOutcome", "RateClaim", "required_power", "worst_case_cells"]

#: Required power against each control, by profile (the paper profile also serves ``full``).
_REQUIRED_POWER = {"smoke": 0.8, "paper": 0.95, "full": 0.95}


def required_power(profile: str) -> float:
    """The power a claim must have against each negative control at ``profile`` (0.8 smoke, 0.95 paper)."""
    if profile not in _REQUIRED_POWER:
        raise ValueError(f"profile must be one of {sorted(_REQUIRED_POWER)}, got {profile!r}")
    return _REQUIRED_POWER[profile]


@dataclass(frozen=True)
class ClaimOutcome:
    """The result of testing one claim: the measurement, the verdict, and the power against each control.

    ``power_trivial`` and ``power_regime`` are the estimated probabilities that the claim rejects the
    learns-nothing and the wrong-regime control (``None`` when the claim has no such control);
    ``false_alarm`` the estimated probability that it rejects the real records; ``accepted`` whether the
    real records meet the prediction. ``passed`` requires acceptance and both powers at ``required``.
    """

    claim_id: str
    statement: str
    window: str
    measured: str
    accepted: bool
    power_trivial: float | None
    power_regime: float | None
    false_alarm: float
    required: float
    resamples: int
    cite: str

    @property
    def passed(self) -> bool:
        """Accepted, and each control rejected with at least the required power."""
        powers = [p for p in (self.power_trivial, self.power_regime) if p is not None]
        return self.accepted and all(p >= self.required for p in powers)

    def row(self) -> dict[str, Any]:
        """One row of a claims table (CSV-ready)."""
        return {"claim": self.claim_id, "statement": self.statement, "window": self.window,
                "measured": self.measured, "accepted": self.accepted,
                "power_learns_nothing": self.power_trivial, "power_wrong_regime": self.power_regime,
                "false_alarm": self.false_alarm, "required_power": self.required,
                "resamples": self.resamples, "passed": self.passed, "cite": self.cite}


def worst_case_cells(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray,
                     family: Sequence[Any] | np.ndarray | None = None) -> tuple[np.ndarray, list[list[np.ndarray]]]:
    """Group records into cells: the distinct x values and, per x, one replicate array per family member.

    Raises ``ValueError`` unless x and y are positive, finite, of one length, with at least two distinct x, and
    every cell has the same number of replicates per x (1 for exact quantities, at least 2 otherwise).
    """
    xa, ya = check_array(x, "x", ndim=1), check_array(y, "y", ndim=1)
    if xa.shape != ya.shape:
        raise ValueError(f"x and y must have the same length, got {xa.size} and {ya.size}")
    if np.any(xa <= 0) or np.any(ya <= 0):
        raise ValueError("x and y must be positive for a log-log claim")
    fam = np.zeros(xa.size) if family is None else np.asarray(family)
    if fam.shape != xa.shape:
        raise ValueError(f"family must have the length of x ({xa.size}), got {fam.size}")
    ux = np.unique(xa)
    if ux.size < 2:
        raise ValueError("x must contain at least two distinct values")
    cells = [[ya[(xa == xv) & (fam == g)] for g in np.unique(fam[xa == xv])] for xv in ux]
    sizes = {c.size for cell in cells for c in cell}
    if 1 in sizes and sizes != {1}:
        raise ValueError(f"every cell needs the same kind of data: one value (exact) or >= 2 replicates, got {sizes}")
    return ux, cells


def _stat(a: np.ndarray, statistic: str, axis: int) -> np.ndarray:
    return np.mean(a, axis=axis) if statistic == "mean" else np.median(a, axis=axis)


def _slopes(lx: np.ndarray, ly: np.ndarray) -> np.ndarray:
    """OLS slopes of ``ly[..., i]`` on ``lx[i]`` along the last axis."""
    cx = lx - lx.mean()
    return ((ly - ly.mean(axis=-1, keepdims=True)) * cx).sum(axis=-1) / float(cx @ cx)


def _resampled_curves(cells: list[list[np.ndarray]], statistic: str, rng: np.random.Generator,
                      outer: int, inner: int) -> tuple[np.ndarray, np.ndarray]:
    """Worst-case log curves of resampled experiments and of the bootstrap of each.

    Returns ``(point, boot)`` of shapes ``(outer, k)`` and ``(outer, inner, k)`` for the k x values. With
    ``outer = 0`` the data themselves are the one experiment (no outer resampling): shapes ``(1, k)`` and
    ``(1, inner, k)``.
    """
    o = max(outer, 1)
    point = np.empty((o, len(cells)))
    boot = np.empty((o, inner, len(cells)))
    for j, members in enumerate(cells):
        pm, bm = [], []
        for vals in members:
            m = vals.size
            data = vals[rng.integers(0, m, (o, m))] if outer else np.broadcast_to(vals, (1, m))
            pm.append(_stat(data, statistic, 1))
            idx = rng.integers(0, m, (o, inner, m))
            bm.append(_stat(np.take_along_axis(data[:, None, :], idx, axis=2), statistic, 2))
        point[:, j] = np.log(np.max(pm, axis=0))
        boot[:, :, j] = np.log(np.max(bm, axis=0))
    return point, boot


@dataclass(frozen=True)
class RateClaim:
    r"""A predicted exponent: the worst case over a family of :math:`\operatorname{stat}(y)` scales as
    :math:`x^{\beta}` with :math:`\beta` in ``exponent`` (a number, or a range when the theorem's bound is a sum
    of terms with different exponents or carries logarithms over the run's grid).

    The test: the least-squares slope of the log worst-case curve lies within ``tolerance`` of the prediction
    and its bootstrap interval (``level``) meets the prediction. With one value per cell (an exact quantity)
    only the point estimate is read.

    Parameters
    ----------
    claim_id : str
        The theorem's ID and a short label, e.g. ``"F1 exponent in n"``.
    statement : str
        What the theorem says, in a line.
    exponent : float or (float, float)
        The prediction, computed from the theorem and the run's parameters before the run.
    neighbour : float
        The exponent of the nearest neighbouring regime (the wrong-regime control); outside the prediction.
    tolerance : float
        At most half the gap between the prediction and ``neighbour``.
    cite : str
        The paper and result.
    statistic : {"mean", "median"}
        Per-cell statistic (an expected error is a mean).
    level : float
        Confidence level of the bootstrap interval.
    """

    claim_id: str
    statement: str
    exponent: float | tuple[float, float]
    neighbour: float
    tolerance: float
    cite: str
    statistic: str = "mean"
    level: float = 0.95

    def __post_init__(self) -> None:
        lo, hi = self.bounds
        if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
            raise ValueError(f"exponent must be a finite number or a range (lo, hi) with lo <= hi, "
                             f"got {self.exponent!r}")
        if not (isinstance(self.tolerance, int | float) and math.isfinite(self.tolerance) and self.tolerance > 0):
            raise ValueError(f"tolerance must be a positive finite number, got {self.tolerance!r}")
        if not math.isfinite(self.neighbour) or lo <= self.neighbour <= hi:
            raise ValueError(f"neighbour must be a finite exponent outside the prediction [{lo:g}, {hi:g}], "
                             f"got {self.neighbour!r}")
        if self.tolerance > self.gap / 2 + 1e-12:
            raise ValueError(f"tolerance must be at most half the gap to the neighbouring regime "
                             f"({self.gap:.4f} / 2 = {self.gap / 2:.4f}), got {self.tolerance!r}")
        if self.statistic not in ("mean", "median"):
            raise ValueError(f"statistic must be 'mean' or 'median', got {self.statistic!r}")
        if not 0 < self.level < 1:
            raise ValueError(f"level must lie in (0, 1), got {self.level!r}")

    @property
    def bounds(self) -> tuple[float, float]:
        """The predicted exponent as a range ``(lo, hi)``."""
        e = self.exponent
        if isinstance(e, tuple | list):
            if len(e) != 2:
                raise ValueError(f"exponent must be a number or a pair (lo, hi), got {e!r}")
            return float(e[0]), float(e[1])
        return float(e), float(e)

    @property
    def gap(self) -> float:
        """Distance from the prediction to the neighbouring regime."""
        lo, hi = self.bounds
        return lo - self.neighbour if self.neighbour < lo else self.neighbour - hi

    @property
    def window(self) -> str:
        """The accepted slopes, e.g. ``[-0.583, -0.417] (predicted -0.500 +- 0.083; neighbour -0.333)``."""
        lo, hi = self.bounds
        pred = f"{lo:+.3f}" if lo == hi else f"[{lo:+.3f}, {hi:+.3f}]"
        return (f"[{lo - self.tolerance:+.3f}, {hi + self.tolerance:+.3f}] "
                f"(predicted {pred} +- {self.tolerance:.3g}; neighbour {self.neighbour:+.3f})")

    def _accepts(self, slope: np.ndarray, ci_low: np.ndarray, ci_high: np.ndarray, exact: bool) -> np.ndarray:
        lo, hi = self.bounds
        dist = np.maximum(np.maximum(lo - slope, slope - hi), 0.0)
        ok = np.isfinite(slope) & (dist <= self.tolerance + 1e-12)
        return ok if exact else ok & (ci_low <= hi + 1e-9) & (lo - 1e-9 <= ci_high)

    def _run(self, lx: np.ndarray, cells: list[list[np.ndarray]], rng: np.random.Generator, outer: int,
             inner: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        exact = all(c.size == 1 for cell in cells for c in cell)
        point, boot = _resampled_curves(cells, self.statistic, rng, 0 if exact else outer, 2 if exact else inner)
        slope = _slopes(lx, point)
        q = np.quantile(_slopes(lx, boot), [(1 - self.level) / 2, (1 + self.level) / 2], axis=1)
        return slope, q[0], q[1], exact

    def wrong_regime(self, x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray,
                     measured_slope: float) -> np.ndarray:
        r"""The control (b): every record rescaled by :math:`(x/x_{\min})^{\beta' - \hat\beta}`, which moves the
        measured exponent :math:`\hat\beta` to the neighbouring regime's :math:`\beta'` and keeps the noise."""
        xa, ya = check_array(x, "x", ndim=1), check_array(y, "y", ndim=1)
        return ya * (xa / xa.min()) ** (self.neighbour - float(measured_slope))

    def evaluate(self, x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, *,
                 rng: np.random.Generator, required: float, family: Sequence[Any] | np.ndarray | None = None,
                 trivial: Sequence[float] | np.ndarray | None = None, n_boot: int = 1000,
                 n_resamples: int = 200) -> ClaimOutcome:
        """Test the claim on the records and on both controls.

        ``x``, ``y`` and ``family`` are the run's records (one per replicate); ``trivial`` the learns-nothing
        control's values on the same records (same length), or ``None`` when the claim has no trivial output.
        ``required`` is the power each control must be rejected with (:func:`required_power`). ``n_boot``
        bootstrap resamples give the interval of each test, and ``n_resamples`` resampled experiments give the
        powers and the false-alarm probability.
        """
        rng = check_rng(rng)
        n_boot = check_int(n_boot, "n_boot", lo=100)
        n_resamples = check_int(n_resamples, "n_resamples", lo=20)
        if not 0 < required <= 1:
            raise ValueError(f"required must lie in (0, 1], got {required!r}")
        ux, cells = worst_case_cells(x, y, family)
        lx = np.log(ux)
        slope, ci_lo, ci_hi, exact = self._run(lx, cells, rng, 0, n_boot)
        accepted = bool(self._accepts(slope, ci_lo, ci_hi, exact)[0])
        sim = self._run(lx, cells, rng, n_resamples, max(100, n_boot // 5))
        false_alarm = float(1.0 - self._accepts(*sim).mean())

        def power(values: np.ndarray) -> float:
            return float(1.0 - self._accepts(*self._run(lx, worst_case_cells(x, values, family)[1], rng,
                                                         n_resamples, max(100, n_boot // 5))).mean())

        p_triv = None if trivial is None else power(check_array(trivial, "trivial", ndim=1))
        p_reg = power(self.wrong_regime(x, y, float(slope[0])))
        pct = round(100 * self.level)
        measured = (f"slope {slope[0]:+.3f}" if exact
                    else f"slope {slope[0]:+.3f} ({pct}% CI [{ci_lo[0]:+.3f}, {ci_hi[0]:+.3f}])")
        return ClaimOutcome(self.claim_id, self.statement, self.window, measured, accepted, p_triv, p_reg,
                            false_alarm, float(required), n_resamples, self.cite)


@dataclass(frozen=True)
class BoundClaim:
    r"""The worst-case error is at most ``constant`` times the theorem's bound at every x of the grid.

    The statistic is :math:`\max_x \max_g \operatorname{stat}\{y : x, g\} / \mathrm{bound}(x)`; the claim holds
    iff it is at most ``constant`` (the theorem's constant where the proof gives one, otherwise a stated cap on
    the fitted constant). The learns-nothing control must exceed it; with ``regime_shift`` the wrong-regime
    control (the records rescaled by :math:`(x/x_{\min})^{\text{shift}}`) must exceed it too.

    Parameters
    ----------
    claim_id, statement, cite : str
    bound : callable
        ``bound(x) -> float``, the theorem's bound at the run's parameters, without the constant.
    bound_text : str
        The bound as a formula, for the table.
    constant : float
        The constant (or cap).
    regime_shift : float, optional
        Exponent change of the wrong-regime control.
    statistic : {"mean", "median"}
    """

    claim_id: str
    statement: str
    bound: Callable[[float], float]
    bound_text: str
    constant: float
    cite: str
    regime_shift: float | None = None
    statistic: str = "mean"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.constant) and self.constant > 0):
            raise ValueError(f"constant must be a positive finite number, got {self.constant!r}")
        if self.regime_shift is not None and not (math.isfinite(self.regime_shift) and self.regime_shift > 0):
            raise ValueError(f"regime_shift must be a positive finite exponent change, got {self.regime_shift!r}")
        if self.statistic not in ("mean", "median"):
            raise ValueError(f"statistic must be 'mean' or 'median', got {self.statistic!r}")

    @property
    def window(self) -> str:
        return f"<= {self.constant:g} x {self.bound_text}"

    def _ratios(self, ux: np.ndarray, cells: list[list[np.ndarray]], rng: np.random.Generator,
                outer: int) -> np.ndarray:
        b = np.array([float(self.bound(float(v))) for v in ux])
        if not np.all(np.isfinite(b) & (b > 0)):
            raise ValueError(f"bound must be positive and finite on the grid, got {b}")
        exact = all(c.size == 1 for cell in cells for c in cell)
        point, _ = _resampled_curves(cells, self.statistic, rng, 0 if exact else outer, 1)
        return np.max(np.exp(point) / b, axis=1)

    def evaluate(self, x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, *,
                 rng: np.random.Generator, required: float, family: Sequence[Any] | np.ndarray | None = None,
                 trivial: Sequence[float] | np.ndarray | None = None, n_resamples: int = 200) -> ClaimOutcome:
        """Test the claim on the records and on its controls (see :meth:`RateClaim.evaluate`)."""
        rng = check_rng(rng)
        n_resamples = check_int(n_resamples, "n_resamples", lo=20)
        if not 0 < required <= 1:
            raise ValueError(f"required must lie in (0, 1], got {required!r}")
        ux, cells = worst_case_cells(x, y, family)
        ratio = float(self._ratios(ux, cells, rng, 0)[0])
        false_alarm = float(np.mean(self._ratios(ux, cells, rng, n_resamples) > self.constant))

        def power(values: np.ndarray) -> float:
            return float(np.mean(self._ratios(ux, worst_case_cells(x, values, family)[1], rng, n_resamples)
                                 > self.constant))

        p_triv = None if trivial is None else power(check_array(trivial, "trivial", ndim=1))
        p_reg = None
        if self.regime_shift is not None:
            xa = check_array(x, "x", ndim=1)
            p_reg = power(check_array(y, "y", ndim=1) * (xa / xa.min()) ** self.regime_shift)
        return ClaimOutcome(self.claim_id, self.statement, self.window, f"max ratio {ratio:.3g}",
                            ratio <= self.constant, p_triv, p_reg, false_alarm, float(required), n_resamples,
                            self.cite)
