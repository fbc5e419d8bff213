"""Tests of dpsco_book.tables: the calibration table of a ledger and the text form of a table."""

from __future__ import annotations

from dpsco_book.tables import noise_summary, show_table, table_html
from dpsco_lib.privacy.accounting import PrivacyLedger
from dpsco_lib.privacy.accounting.events import GaussianEvent, LaplaceEvent


def test_noise_summary_merges_repeated_mechanisms() -> None:
    lg = PrivacyLedger()
    lg.record(LaplaceEvent(0.01), 100)
    lg.record(LaplaceEvent(0.01), 1)
    lg.record(GaussianEvent(3.0), 2)
    assert noise_summary(lg) == "Laplace eps0 0.01 x 101; Gaussian sigma/Delta 3 x 2"


def test_show_table_text() -> None:
    text = show_table([{"a": 1.23456, "b": "x"}, {"a": 2.0, "c": 3}], caption="cap", floatfmt=".2f")
    assert text.splitlines() == ["cap", "a     b  c", "1.23  x   ", "2.00     3"]


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
