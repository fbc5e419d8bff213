"""The book's catalogue (dpsco_book.catalogue): every registered algorithm has exactly one notebook."""

from __future__ import annotations

from dpsco_book.catalogue import NOTEBOOK_OF
from dpsco_lib.algorithms.registry import REGISTRY


def test_the_books_notebook_table_names_only_registered_algorithms():
    assert set(NOTEBOOK_OF) == {r.key for r in REGISTRY}
