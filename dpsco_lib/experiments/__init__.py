"""Experiment machinery: profiles, seeded sweeps (joblib or dask.distributed), an on-disk cache, log-log rate
fitting with bootstrap intervals, worst-case curves, declared claims with negative controls, and verdicts."""

from dpsco_lib.experiments.analysis import (
    Check,
    SlopeFit,
    Verdict,
    fit_loglog_slope,
    summarize,
    worst_case_curve,
)
from dpsco_lib.experiments.claims import BoundClaim, ClaimOutcome, RateClaim, required_power
from dpsco_lib.experiments.profiles import PROFILES, Profile, get_profile
from dpsco_lib.experiments.sweep import expand_grid, run_sweep, task_rng

__all__ = [
    "BoundClaim",
    "ClaimOutcome",
    "RateClaim",
    "required_power",
    "Check",
    "PROFILES",
    "Profile",
    "SlopeFit",
    "Verdict",
    "expand_grid",
    "fit_loglog_slope",
    "get_profile",
    "run_sweep",
    "summarize",
    "task_rng",
    "worst_case_curve",
]
