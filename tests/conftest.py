"""Shared pytest configuration: headless plotting, no stale cache, fixed hash seed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

os.environ.setdefault("MPLBACKEND", "Agg")
# Tests measure the current code: never reuse cached sweep results.
os.environ["DPSCO_NO_CACHE"] = "1"
os.environ["DPSCO_ROOT"] = str(ROOT)


@pytest.fixture
def root() -> Path:
    return ROOT
