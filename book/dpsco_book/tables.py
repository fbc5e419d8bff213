"""Small tables for the notebooks: the calibration of a run under the papers' rule and under the tightest
accountant, the noise of a run's mechanisms, and a renderer that shows them as HTML in a notebook.

The privacy rule of the experiments (``epsilon <= 2``, ``delta = n^-1.1``) is :mod:`dpsco_book.privacy_rule`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

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

__all__ = ["calibration_rows", "noise_summary", "show_table", "table_html"]


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


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _fmt_html(v: Any, floatfmt: str) -> str:
    """A cell of the HTML table: integers of five digits or more grouped by threes with a narrow no-break space
    (``240\u202f000``), floats in ``floatfmt``, anything else as text."""
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 10_000:
        return f"{v:,}".replace(",", "\u202f")
    return _fmt(v, floatfmt)


#: Inline styles of :func:`table_html` (the notebook shows them without the book's stylesheet too).
_CELL = "padding:0.25em 0.75em;border-bottom:1px solid #d0d0d0;vertical-align:top;"
_NUM = _CELL + "text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums;"
_TEXT = _CELL + "text-align:left;overflow-wrap:break-word;min-width:8em;"
_HEAD = "padding:0.3em 0.75em;border-bottom:2px solid #999;vertical-align:bottom;"


def table_html(rows: Sequence[Mapping[str, Any]], *, caption: str = "", floatfmt: str = ".4g") -> str:
    """The rows as an HTML table in a box that scrolls sideways when the table is wider than the text column.

    Columns are the union of the rows' keys in first-seen order. Every cell is padded and ruled, so adjacent
    numbers never run together; numbers are right-aligned and never broken, text cells wrap.
    """
    from html import escape

    cols: list[str] = []
    for r in rows:
        cols.extend(k for k in r if k not in cols)
    numeric = [all(_is_number(r[c]) for r in rows if c in r) for c in cols]
    head = "".join(f'<th style="{_HEAD}text-align:{"right" if num else "left"};">{escape(c)}</th>'
                   for c, num in zip(cols, numeric, strict=True))
    body = "".join(
        "<tr>" + "".join(f'<td style="{_NUM if num else _TEXT}">{escape(_fmt_html(r.get(c, ""), floatfmt))}</td>'
                         for c, num in zip(cols, numeric, strict=True)) + "</tr>"
        for r in rows
    )
    cap = (f'<caption style="caption-side:top;text-align:left;font-weight:bold;padding-bottom:0.3em;">'
           f"{escape(caption)}</caption>") if caption else ""
    return ('<div class="dpsco-table-scroll" style="max-width:100%;overflow-x:auto;">'
            '<table class="dpsco-table" style="border-collapse:collapse;margin:0.5em 0;font-size:0.875em;">'
            f"{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")


def show_table(rows: Sequence[Mapping[str, Any]], *, caption: str = "", floatfmt: str = ".4g") -> str:
    """Show dict rows as a table: HTML in a notebook (:func:`table_html`, text fallback), printed text elsewhere;
    returns the text.

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
    from IPython.display import display

    display({"text/html": table_html(rows, caption=caption, floatfmt=floatfmt), "text/plain": text}, raw=True)
    return text
