"""Tests of dpsco_lib.problems.dataset: length, slicing, replace-one neighbours and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from dpsco_lib.problems import (
    Dataset,
)


def test_dataset_len_slicing_replace_one() -> None:
    X = np.arange(12.0).reshape(4, 3)
    data = Dataset(X, np.array([1.0, -1.0, 1.0, -1.0]), {"group": np.array([0, 1, 0, 1])})
    assert len(data) == 4 and data.d == 3
    sub = data[1:3]
    assert isinstance(sub, Dataset) and sub.n == 2
    np.testing.assert_array_equal(sub.X, X[1:3])
    np.testing.assert_array_equal(sub.extras["group"], [1, 0])
    np.testing.assert_array_equal(data[np.array([3, 0])].y, [-1.0, 1.0])
    assert data[2].n == 1
    nb = data.replace_one(2, (np.array([9.0, 9.0, 9.0]), -1.0, {"group": 1}))
    np.testing.assert_array_equal(nb.X[2], [9.0, 9.0, 9.0])
    assert nb.y[2] == -1.0 and nb.extras["group"][2] == 1
    np.testing.assert_array_equal(data.X[2], X[2])  # original untouched
    assert np.sum(np.any(nb.X != data.X, axis=1)) == 1  # neighbouring: exactly one record differs
    nb2 = data.replace_one(0, data[3])
    np.testing.assert_array_equal(nb2.X[0], X[3])
    with pytest.raises(ValueError):
        data.X[0, 0] = 5.0  # read-only


@pytest.mark.parametrize(
    "kwargs",
    [
        {"X": np.ones(3)},
        {"X": np.array([[1.0, np.nan]])},
        {"X": np.ones((3, 2)), "y": np.ones(2)},
        {"X": np.ones((3, 2)), "y": np.array([1.0, np.inf, 0.0])},
        {"X": np.ones((3, 2)), "extras": {"g": np.ones(4)}},
    ],
)
def test_dataset_rejects_bad_input(kwargs) -> None:
    with pytest.raises(ValueError):
        Dataset(**kwargs)


def test_dataset_replace_one_bad_input() -> None:
    data = Dataset(np.zeros((3, 2)), np.zeros(3))
    with pytest.raises(ValueError):
        data.replace_one(3, (np.zeros(2), 0.0))
    with pytest.raises(ValueError):
        data.replace_one(0, (np.zeros(3), 0.0))
    with pytest.raises(ValueError):
        data.replace_one(0, (np.zeros(2), None))
    with pytest.raises(ValueError):
        data.replace_one(0, (np.array([np.nan, 0.0]), 0.0))
