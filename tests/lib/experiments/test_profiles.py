"""Tests of dpsco_lib.experiments.profiles: the smoke, default and full profiles."""

from __future__ import annotations

import pytest

from dpsco_lib.experiments import (
    get_profile,
)


def test_profiles():
    smoke, paper = get_profile("smoke"), get_profile("paper")
    assert smoke.pick(smoke=1, paper=2) == 1 and paper.pick(smoke=1, paper=2) == 2
    assert paper.n_seeds >= 20 > smoke.n_seeds
    with pytest.raises(ValueError, match="profile must be one of"):
        get_profile("huge")


def test_full_profile_defaults_to_paper_values() -> None:
    full, paper, smoke = get_profile("full"), get_profile("paper"), get_profile("smoke")
    assert full.pick(smoke=1, paper=2) == 2 and full.pick(smoke=1, paper=2, full=3) == 3
    assert paper.pick(smoke=1, paper=2, full=3) == 2 and smoke.pick(smoke=1, paper=2, full=3) == 1
    assert full.is_paper and full.n_seeds > paper.n_seeds
