"""Experiment machinery for the theorem-check notebooks: profiles, seeded sweeps (joblib or
dask.distributed), an on-disk cache, log-log rate fitting with bootstrap intervals and verdicts."""

from dpsco_lib.experiments.analysis import (
    Check,
    SlopeFit,
    Verdict,
    fit_loglog_slope,
    results_dir,
    summarize,
    worst_case_curve,
    write_csv,
)
from dpsco_lib.experiments.profiles import PROFILES, Profile, get_profile
from dpsco_lib.experiments.sweep import expand_grid, run_sweep, task_rng
from dpsco_lib.experiments.tables import calibration_rows, delta_for_n, noise_summary, show_table

__all__ = [
    "Check",
    "PROFILES",
    "Profile",
    "SlopeFit",
    "Verdict",
    "calibration_rows",
    "delta_for_n",
    "expand_grid",
    "fit_loglog_slope",
    "get_profile",
    "noise_summary",
    "results_dir",
    "run_sweep",
    "show_table",
    "summarize",
    "task_rng",
    "worst_case_curve",
    "write_csv",
]
