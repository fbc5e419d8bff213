"""Small tables for the notebooks: the privacy rule of an experiment, the calibration of a run under the
papers' rule and under the tightest accountant, and a renderer that shows them as HTML in a notebook.

The privacy level of every theorem check in the book is ``epsilon <= 2`` with ``delta = n^-1.1 <= 1/n``
(:func:`delta_for_n`): a delta above ``1/n`` would allow releasing one record in the clear.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from dpsco_lib._validation import check_int, check_positive
from dpsco_lib.privacy.accounting.events import (
    ComposedEvent,
    DpEvent,
    ExponentialEvent,
    GaussianEvent,
    GeneralizedGaussianEvent,
    LaplaceEvent,
    ParallelEvent,
    ReplaceOneFromAddRemove,
    SelfComposedEvent,
    SubsampledGaussianEvent,
)

__all__ = ["DELTA_POWER", "calibration_rows", "delta_for_n", "noise_summary", "show_table"]

DELTA_POWER = 1.1


def delta_for_n(n: int, power: float = DELTA_POWER) -> float:
    r"""The book's delta rule, :math:`\delta = n^{-\text{power}}` (default ``n^-1.1``), so :math:`\delta < 1/n`.

    Parameters
    ----------
    n : int
        Number of records (>= 2).
    power : float
        Exponent, > 1 (a delta of order 1/n or larger is not a meaningful guarantee).
    """
    n = check_int(n, "n", lo=2)
    power = check_positive(power, "power")
    if power <= 1:
        raise ValueError(f"power must exceed 1 so that delta < 1/n, got {power!r}")
    return float(math.exp(-power * math.log(n)))


def _leaves(event: DpEvent, count: int = 1) -> list[tuple[DpEvent, int]]:
    """The basic mechanisms of an event with their repetition counts (parallel parts listed once each)."""
    if isinstance(event, SelfComposedEvent):
        return _leaves(event.event, count * event.repetitions)
    if isinstance(event, ComposedEvent | ReplaceOneFromAddRemove):
        return [leaf for e in event.events for leaf in _leaves(e, count)]
    if isinstance(event, ParallelEvent):
        return [leaf for part in event.parts for e in part for leaf in _leaves(e, count)]
    return [(event, count)]


def _describe(event: DpEvent) -> str:
    if isinstance(event, SubsampledGaussianEvent):
        return f"subsampled Gaussian sigma/C {event.noise_multiplier:.4g}, q {event.sampling_rate:.3g}"
    if isinstance(event, GeneralizedGaussianEvent):
        return f"GG(kappa {event.kappa:g}) sigma/Delta {event.noise_multiplier:.4g}"
    if isinstance(event, GaussianEvent):
        return f"Gaussian sigma/Delta {event.noise_multiplier:.4g}"
    if isinstance(event, ExponentialEvent):
        return f"exponential mechanism eps0 {event.epsilon:.4g}"
    if isinstance(event, LaplaceEvent):
        return f"{type(event).__name__.removesuffix('Event')} eps0 {event.epsilon:.4g}"
    return type(event).__name__


def noise_summary(ledger: Any, *, max_kinds: int = 3) -> str:
    """One line naming the mechanisms a ledger recorded, their noise parameter and how often they ran.

    Repeated identical mechanisms are merged (``"Laplace eps0 0.00501 x 101"``); at most ``max_kinds``
    distinct ones are listed, then ``"..."``.
    """
    counts: dict[str, int] = {}
    for ev in ledger.events:
        for leaf, k in _leaves(ev):
            key = _describe(leaf)
            counts[key] = counts.get(key, 0) + k
    items = [f"{key} x {k}" for key, k in counts.items()]
    return "; ".join(items[:max_kinds]) + ("; ..." if len(items) > max_kinds else "")


def calibration_rows(results: Mapping[str, Any], delta: float) -> list[dict[str, Any]]:
    """Compare runs of one algorithm calibrated by different accountants (e.g. the papers' rule vs ``"best"``).

    Parameters
    ----------
    results : mapping of label -> Result
        The same algorithm at the same (epsilon, delta, n), one run per accountant.
    delta : float
        The target delta at which every certificate is evaluated.

    Returns
    -------
    list of dict
        Per run: ``calibration`` (the label), ``noise`` (:func:`noise_summary`), ``certified eps`` (the
        tightest certificate of that run's ledger) and ``relation`` (the neighbouring relation it holds
        under). Same noise bits are never assumed: each row reads its own ledger.
    """
    if not results:
        raise ValueError("results must name at least one run")
    rows = []
    for label, res in results.items():
        if getattr(res, "ledger", None) is None:
            raise ValueError(f"results[{label!r}] has no privacy ledger (not a private run)")
        rows.append({"calibration": str(label), "noise": noise_summary(res.ledger),
                     "certified eps": float(res.certified_epsilon(delta)), "delta": float(delta),
                     "relation": res.relation})
    return rows


def _fmt(v: Any, floatfmt: str) -> str:
    if isinstance(v, float):
        return format(v, floatfmt)
    return str(v)


def show_table(rows: Sequence[Mapping[str, Any]], *, caption: str = "", floatfmt: str = ".4g") -> str:
    """Show dict rows as a table: HTML in a notebook (text fallback), printed text elsewhere; returns the text.

    Columns are the union of the rows' keys in first-seen order; floats use ``floatfmt``.
    """
    cols: list[str] = []
    for r in rows:
        cols.extend(k for k in r if k not in cols)
    cells = [[_fmt(r.get(c, ""), floatfmt) for c in cols] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    lines = ([caption] if caption else []) + ["  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    text = "\n".join(lines)
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is None or not hasattr(shell, "kernel"):
        print(text)
        return text
    from html import escape

    from IPython.display import display

    head = "".join(f"<th>{escape(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{escape(v)}</td>" for v in row) + "</tr>" for row in cells)
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    display({"text/html": f'<table class="dpsco-table">{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody>'
             "</table>", "text/plain": text}, raw=True)
    return text
