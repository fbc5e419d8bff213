"""The common return type of every ``run_<name>`` algorithm (DESIGN.md section 3)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Result"]


@dataclass(frozen=True, eq=False)
class Result:
    """Output of an algorithm run.

    Attributes
    ----------
    x : ndarray (d,)
        The output point (the minimizer candidate; the x-player for saddle-point problems).
    y : ndarray, optional
        Second output point (the y-player of a saddle-point problem), else None.
    trace : dict of ndarray, optional
        Optional per-iteration record (e.g. ``{"t": ..., "x_avg": ...}``), else None.
    params : dict
        Hyperparameters actually used (step size, iterations, batch sizes, noise scales, ...).
    ledger : PrivacyLedger, optional
        Record of every privacy mechanism invoked (``ledger.epsilon(delta)`` certifies the guarantee);
        None for non-private algorithms.
    info : dict
        Anything else worth reporting (theoretical bound, method name, number of gradient calls, ...). Never a
        certificate: :meth:`certified_epsilon` reads the ledger, the only certificate.
    """

    x: np.ndarray
    y: np.ndarray | None = None
    trace: dict[str, np.ndarray] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    ledger: Any = None
    info: dict[str, Any] = field(default_factory=dict)

    def certified_epsilon(self, delta: float, accountant: str = "best") -> float:
        """The run's certified epsilon at ``delta``: ``ledger.epsilon(delta, accountant)``.

        The ledger is the only certificate; it holds under ``self.relation`` neighbours. Raises ``ValueError``
        for a non-private run (no ledger).
        """
        if self.ledger is None:
            raise ValueError("this Result has no privacy ledger (the algorithm is not private)")
        return float(self.ledger.epsilon(delta, accountant))

    @property
    def relation(self) -> str | None:
        """The neighbouring relation the certificate holds under (None for a non-private run)."""
        return None if self.ledger is None else (self.ledger.relation or "replace_one")
