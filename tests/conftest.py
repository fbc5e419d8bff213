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


@pytest.fixture(scope="session")
def built_html(tmp_path_factory) -> Path:
    """The HTML book built once per session (tests marked ``book``: test_book, test_links, test_browser).

    ``DPSCO_BUILT_HTML=_build/html`` checks an existing build instead, e.g. the paper-profile book of
    ``make book``: ``DPSCO_BUILT_HTML=_build/html .venv/bin/python -m pytest -m book tests``.
    """
    from ._bookbuild import build_smoke_book

    given = os.environ.get("DPSCO_BUILT_HTML")
    if given:
        html = Path(given) if Path(given).is_absolute() else ROOT / given
        assert (html / "index.html").is_file(), f"DPSCO_BUILT_HTML={given}: no index.html there"
        return html

    return build_smoke_book(ROOT, tmp_path_factory.mktemp("book"))
