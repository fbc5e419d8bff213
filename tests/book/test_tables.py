"""Tests of dpsco_book.tables: the calibration table of a ledger and the text form of a table."""

from __future__ import annotations

from dpsco_book.tables import noise_summary, show_table
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
