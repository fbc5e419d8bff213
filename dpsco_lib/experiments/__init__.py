"""Experiment machinery for the theorem-check notebooks: profiles, seeded sweeps (joblib or
dask.distributed), an on-disk cache, log-log rate fitting with bootstrap intervals and verdicts."""

from dpsco_lib.experiments.analysis import SlopeFit, Verdict, fit_loglog_slope, results_dir, summarize, write_csv
from dpsco_lib.experiments.profiles import PROFILES, Profile, get_profile
from dpsco_lib.experiments.sweep import expand_grid, run_sweep, task_rng

__all__ = [
    "PROFILES",
    "Profile",
    "SlopeFit",
    "Verdict",
    "expand_grid",
    "fit_loglog_slope",
    "get_profile",
    "results_dir",
    "run_sweep",
    "summarize",
    "task_rng",
    "write_csv",
]
