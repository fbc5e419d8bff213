"""Shared pytest configuration: headless plotting, no stale cache, fixed hash seed."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

os.environ.setdefault("MPLBACKEND", "Agg")
# Tests measure the current code: never reuse cached sweep results.
os.environ["DPSCO_NO_CACHE"] = "1"
os.environ["DPSCO_ROOT"] = str(ROOT)
# The profile of a launched notebook (Binder's start script sets it): tests choose their profiles themselves.
os.environ.pop("DPSCO_PROFILE", None)


# The smoke notebooks are most of `make test`'s time. Run them first, longest first: the Makefile's
# `--dist worksteal` then lets the other worker take the short tests from the end of the queue, instead of a
# long notebook starting last while the other worker idles (measured on 2 cores: 748 s -> 413 s).
SLOWEST_NOTEBOOKS_FIRST = ("16_", "03_", "19_", "06_", "17_", "13_", "05_", "14_", "18_", "12_", "09_", "10_")


# In the book phase (`-m book`) the tests that run Sphinx builds of their own (tests/book/test_cli.py) go first: the
# worker that takes them runs them while the other builds the shared smoke book (`built_html`), instead of waiting
# for that build and running them after it.
OWN_BUILDS_FIRST = ("test_partial_build_of_two_notebooks_that_reference_pages_left_out",
                    "test_build_refuses_a_failed_notebook")


def _schedule_rank(item: pytest.Item) -> tuple[int, int]:
    name = getattr(item, "originalname", "")
    if name in OWN_BUILDS_FIRST:
        return (0, -len(OWN_BUILDS_FIRST) + OWN_BUILDS_FIRST.index(name))
    if name != "test_notebook_smoke":
        return (1, 0)
    stem = item.callspec.params["notebook"].stem
    ranks = [i for i, prefix in enumerate(SLOWEST_NOTEBOOKS_FIRST) if stem.startswith(prefix)]
    return (0, ranks[0] if ranks else len(SLOWEST_NOTEBOOKS_FIRST))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Own Sphinx builds, then smoke notebooks, the slowest first (a stable sort: every other test keeps its order)."""
    items.sort(key=_schedule_rank)


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def built_html(tmp_path_factory) -> Path:
    """The HTML book built once per run, shared by the xdist workers (tests marked ``book``: tests/book/test_book.py,
    test_links.py, test_browser.py).

    ``DPSCO_BUILT_HTML=_build/html`` checks an existing build instead, e.g. the paper-profile book of
    ``make book``: ``DPSCO_BUILT_HTML=_build/html .venv/bin/python -m pytest -m book tests``.
    """
    from ._bookbuild import build_smoke_book

    given = os.environ.get("DPSCO_BUILT_HTML")
    if given:
        html = Path(given) if Path(given).is_absolute() else ROOT / given
        assert (html / "index.html").is_file(), f"DPSCO_BUILT_HTML={given}: no index.html there"
        return html

    if not os.environ.get("PYTEST_XDIST_WORKER"):  # one process: build into its own temporary directory
        return build_smoke_book(ROOT, tmp_path_factory.mktemp("book"))
    # Under xdist the first worker builds into the run's shared temporary root while holding a lock; the others
    # wait for it and read the same build (two builds would also stage into the same smoke tree at once).
    shared = tmp_path_factory.getbasetemp().parent / "smoke-book"
    with open(shared.with_name("smoke-book.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        html = shared / "_build" / "html"
        if not (html / "index.html").is_file():
            build_smoke_book(ROOT, shared)
    return html
