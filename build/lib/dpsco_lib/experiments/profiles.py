"""Run profiles: how large a notebook's experiment is.

Three profiles exist. ``smoke`` is what CI executes: each notebook in well under a minute on two cores,
still large enough that its verdict cell asserts something that can fail. ``paper`` reproduces the
figures of the book (each notebook under five minutes on two cores). ``full`` is for a dask cluster
(``dpsco reproduce --profile full --scheduler tcp://...``): larger n (to 10^8 where a notebook's grid
allows) and more replicates; a notebook that sets no ``full`` value runs its paper value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

__all__ = ["PROFILES", "Profile", "get_profile"]

T = TypeVar("T")


@dataclass(frozen=True)
class Profile:
    """A named experiment size.

    Parameters
    ----------
    name : str
        ``"smoke"``, ``"paper"`` or ``"full"``.
    n_seeds : int
        Default number of independent replicates per grid point.
    n_boot : int
        Default number of bootstrap resamples for confidence intervals.
    """

    name: str
    n_seeds: int
    n_boot: int

    def pick(self, *, smoke: T, paper: T, full: T | None = None) -> T:
        """Return the value for this profile: ``prof.pick(smoke=2_000, paper=100_000, full=10**8)``.

        ``full`` defaults to the ``paper`` value."""
        if self.name == "smoke":
            return smoke
        if self.name == "full" and full is not None:
            return full
        return paper

    @property
    def is_paper(self) -> bool:
        """True for the profiles that reproduce the book's figures (``paper`` and the larger ``full``)."""
        return self.name in ("paper", "full")


PROFILES: dict[str, Profile] = {
    "smoke": Profile(name="smoke", n_seeds=6, n_boot=500),
    "paper": Profile(name="paper", n_seeds=24, n_boot=2000),
    "full": Profile(name="full", n_seeds=64, n_boot=4000),
}


def get_profile(name: str) -> Profile:
    """Look up a profile by name; raises ``ValueError`` naming the allowed values."""
    if not isinstance(name, str) or name not in PROFILES:
        raise ValueError(f"profile must be one of {sorted(PROFILES)}, got {name!r}")
    return PROFILES[name]
