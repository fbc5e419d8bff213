"""Tests of dpsco_book.results: the results directory and its CSV files."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from dpsco_book.results import results_dir, write_csv


def test_results_dir_and_csv(tmp_path, monkeypatch):
    monkeypatch.setenv("DPSCO_RESULTS_DIR", str(tmp_path))
    out = results_dir("01_x")
    assert out == tmp_path / "01_x" and out.is_dir()
    path = write_csv([{"a": 1, "b": np.float64(2.5)}, {"a": 2, "c": "z"}], out / "t.csv")
    rows = list(csv.DictReader(path.open()))
    assert rows == [{"a": "1", "b": "2.5", "c": ""}, {"a": "2", "b": "", "c": "z"}]
    with pytest.raises(ValueError, match="plain notebook name"):
        results_dir("../escape")
