"""Tests of dpsco_book.privacy_rule: the book's delta rule."""

from __future__ import annotations

import pytest

from dpsco_book.privacy_rule import delta_for_n


def test_delta_rule() -> None:
    assert delta_for_n(10**6) == pytest.approx(10 ** -6.6)
    assert delta_for_n(100) < 1 / 100
    for bad, match in ((1, "n"), (10.5, "n")):
        with pytest.raises((ValueError, TypeError), match=match):
            delta_for_n(bad)
    with pytest.raises(ValueError, match="power"):
        delta_for_n(100, power=1.0)
