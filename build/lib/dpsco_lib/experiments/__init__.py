"""Experiment machinery for the theorem-check notebooks: profiles, seeded sweeps (joblib or
dask.distributed), an on-disk cache, log-log rate fitting with bootstrap intervals, verdicts and the crossover
table (required sample size against the dimension)."""

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
from dpsco_lib.experiments.crossover import (
    CrossoverEstimate,
    crossover_grid,
    crossover_problem,
    crossover_sweep,
    crossover_table,
    crossover_task,
    exponent_bounds,
    fit_required_n,
    plot_required_n,
    required_n,
)
from dpsco_lib.experiments.profiles import PROFILES, Profile, get_profile
from dpsco_lib.experiments.sweep import expand_grid, run_sweep, task_rng
from dpsco_lib.experiments.tables import calibration_rows, delta_for_n, noise_summary, show_table

__all__ = [
    "Check",
    "CrossoverEstimate",
    "PROFILES",
    "Profile",
    "SlopeFit",
    "Verdict",
    "calibration_rows",
    "crossover_grid",
    "crossover_problem",
    "crossover_sweep",
    "crossover_table",
    "crossover_task",
    "delta_for_n",
    "expand_grid",
    "exponent_bounds",
    "fit_loglog_slope",
    "fit_required_n",
    "get_profile",
    "noise_summary",
    "plot_required_n",
    "required_n",
    "results_dir",
    "run_sweep",
    "show_table",
    "summarize",
    "task_rng",
    "worst_case_curve",
    "write_csv",
]
