"""Datasets: a frozen container of n records (features, optional labels, optional extra arrays).

A record i is the triple (X[i], y[i], {k: extras[k][i]}).  Neighbouring datasets (differ in one
record) are built with :meth:`Dataset.replace_one`, which the privacy audits use.  Arrays are stored
as read-only views so that a frozen dataset cannot be mutated in place by accident.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from dpsco_lib._validation import check_array, check_int

__all__ = ["Dataset"]


def _readonly(arr: np.ndarray) -> np.ndarray:
    view = arr.view()
    view.flags.writeable = False
    return view


@dataclass(frozen=True, eq=False)
class Dataset:
    """n records: features ``X`` (n, d) float64, labels ``y`` (n,) or None, extra per-record arrays.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Feature matrix (finite float64).
    y : array_like, shape (n,), optional
        Labels / responses (finite float64).
    extras : mapping of str to array_like, optional
        Further per-record arrays whose first axis has length n (e.g. group ids).
    n_clipped : int
        How many records :meth:`Problem.validate_data` clipped to the declared norm bound
        (0 for data that was never clipped).  Recorded so that clipping is never silent.
    """

    X: np.ndarray
    y: np.ndarray | None = None
    extras: Mapping[str, np.ndarray] = field(default_factory=dict)
    n_clipped: int = 0

    def __post_init__(self) -> None:
        X = check_array(self.X, "X", ndim=2, min_size=0)
        n = X.shape[0]
        object.__setattr__(self, "X", _readonly(X))
        if self.y is not None:
            y_len = np.shape(self.y)[0] if np.ndim(self.y) >= 1 else None
            if n == 0 and y_len:
                raise ValueError(f"X is empty (shape {X.shape}) while y has {y_len} labels: X needs one row per label")
            y = check_array(self.y, "y", shape=(n,), min_size=0)
            object.__setattr__(self, "y", _readonly(y))
        ex: dict[str, np.ndarray] = {}
        for key, val in dict(self.extras).items():
            arr = np.asarray(val)
            if arr.ndim == 0 or arr.shape[0] != n:
                raise ValueError(f"extras[{key!r}] must have first dimension n = {n}, got shape {arr.shape}")
            if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
                raise ValueError(f"extras[{key!r}] must be finite (NaN or inf found)")
            ex[key] = _readonly(arr)
        object.__setattr__(self, "extras", MappingProxyType(ex))
        object.__setattr__(self, "n_clipped", check_int(self.n_clipped, "n_clipped", lo=0, hi=n))

    @property
    def n(self) -> int:
        """Number of records."""
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        """Feature dimension."""
        return int(self.X.shape[1])

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, idx: Any) -> Dataset:
        """Rows ``idx`` (a slice, an index array or a boolean mask) as a new Dataset.

        An integer index returns the one-record dataset ``data[i:i+1]`` (records stay 2-D).
        """
        if isinstance(idx, (int, np.integer)):
            i = int(idx)
            if not -self.n <= i < self.n:
                raise ValueError(f"record index must lie in [-{self.n}, {self.n}), got {i}")
            i = i % self.n
            idx = slice(i, i + 1)
        if isinstance(idx, slice):
            # fast path (used once per step by the single-pass algorithms): rows of a validated
            # dataset are valid, so the views are taken without re-validation.
            out = object.__new__(Dataset)
            object.__setattr__(out, "X", self.X[idx])
            object.__setattr__(out, "y", None if self.y is None else self.y[idx])
            object.__setattr__(out, "extras", MappingProxyType({k: v[idx] for k, v in self.extras.items()}))
            object.__setattr__(out, "n_clipped", 0)
            return out
        y = None if self.y is None else self.y[idx]
        extras = {k: v[idx] for k, v in self.extras.items()}
        return Dataset(self.X[idx], y, extras)

    def replace_one(self, i: int, record: Dataset | tuple[Any, ...]) -> Dataset:
        """The neighbouring dataset with record ``i`` replaced by ``record``.

        ``record`` is a one-record :class:`Dataset` or a tuple ``(x, y)`` / ``(x, y, extras_dict)``
        (``y`` None when the dataset has no labels).  The original dataset is unchanged.
        """
        i = check_int(i, "i", lo=0, hi=self.n - 1)
        if isinstance(record, Dataset):
            if record.n != 1:
                raise ValueError(f"record must hold exactly one record, got {record.n}")
            x_new, y_new, ex_new = record.X[0], None if record.y is None else record.y[0], dict(record.extras)
            ex_new = {k: v[0] for k, v in ex_new.items()}
        else:
            if not isinstance(record, tuple) or len(record) not in (2, 3):
                raise ValueError("record must be a one-record Dataset or a tuple (x, y[, extras])")
            x_new, y_new = record[0], record[1]
            ex_new = dict(record[2]) if len(record) == 3 else {}
        x_new = check_array(x_new, "record features", shape=(self.d,))
        X = np.array(self.X, dtype=np.float64)
        X[i] = x_new
        y = None
        if self.y is not None:
            if y_new is None:
                raise ValueError("record must carry a label: this dataset has labels")
            y = np.array(self.y)
            y[i] = check_array(y_new, "record label", shape=()).item()
        elif y_new is not None:
            raise ValueError("record carries a label but this dataset has none")
        if set(ex_new) != set(self.extras):
            raise ValueError(f"record extras must have keys {sorted(self.extras)}, got {sorted(ex_new)}")
        extras = {}
        for k, v in self.extras.items():
            arr = np.array(v)
            arr[i] = ex_new[k]
            extras[k] = arr
        return Dataset(X, y, extras)

    def __repr__(self) -> str:
        lab = "none" if self.y is None else "yes"
        return f"Dataset(n={self.n}, d={self.d}, labels={lab}, extras={sorted(self.extras)}, clipped={self.n_clipped})"
