"""Optional dependencies: the exact-optimum solver (cvxpy with Clarabel) and the figure style (matplotlib).

The core install (numpy, scipy, dp-accounting) runs every mechanism, accountant, audit and algorithm. Exact optima,
best responses and duality gaps need the ``exact`` extra, :mod:`dpsco_lib.plotting` the ``plot`` extra; both come
with the ``book`` and ``test`` extras. Each is imported where it is first needed, and a missing one raises
``ImportError`` naming the command that installs it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["EXTRAS", "require"]

#: Module -> (extra that installs it, what needs it).
EXTRAS: dict[str, tuple[str, str]] = {
    "cvxpy": ("exact", "exact optima, best responses and duality gaps"),
    "matplotlib": ("plot", "dpsco_lib.plotting"),
}


def require(module: str) -> ModuleType:
    """Import an optional dependency, or raise ``ImportError`` naming the extra that installs it.

    Parameters
    ----------
    module : str
        ``"cvxpy"`` or ``"matplotlib"``.

    Returns
    -------
    module
        The imported module.
    """
    if module not in EXTRAS:
        raise ValueError(f"module must be one of {sorted(EXTRAS)}, got {module!r}")
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        extra, what = EXTRAS[module]
        raise ImportError(
            f"{what} need(s) {module}, which the core install leaves out: pip install 'dpsco-lib[{extra}]'"
        ) from exc
