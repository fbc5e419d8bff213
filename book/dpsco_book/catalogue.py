"""Which notebook of the book checks which algorithm of the library.

The library's registry (:data:`dpsco_lib.algorithms.registry.REGISTRY`) knows nothing of the book; this table maps
every registry key to the notebook that checks its theorem. The API page's algorithm table and the book's tests
read it, and a test fails when a registered algorithm has no notebook here.
"""

from __future__ import annotations

__all__ = ["NOTEBOOK_OF", "notebook_of"]

NOTEBOOK_OF: dict[str, str] = {
    "S1 SMD": "03_mirror_descent_lp",
    "S2 noisy SGD": "05_polyhedral_frank_wolfe",
    "D4 DP-SGD": "14_lecture_topics_mean_and_dpsgd",
    "F1 Poly-SFW": "05_polyhedral_frank_wolfe",
    "F2 tree FW": "05_polyhedral_frank_wolfe",
    "F3 GG-VR-SFW naive": "06_lp_frank_wolfe_lower_bound",
    "F3 GG-VR-SFW tree": "06_lp_frank_wolfe_lower_bound",
    "N1 VR-FW nonconvex": "07_nonconvex_stationarity",
    "N1 proximal weakly convex": "07_nonconvex_stationarity",
    "A1 private SMD saddle": "09_private_smd_saddle",
    "A1 SMD saddle (non-private)": "09_private_smd_saddle",
    "A3 bias-reduced SMD": "10_bias_reduced_smd",
    "A4 boosted": "11_boosted_saddle_high_probability",
    "A5 anytime SMD": "12_anytime_online_to_batch",
    "X1 query release": "13_applications_synthetic_data_and_fairness",
    "X1 MWEM": "13_applications_synthetic_data_and_fairness",
    "X2 group-robust": "13_applications_synthetic_data_and_fairness",
    "X2 group-blind ERM": "13_applications_synthetic_data_and_fairness",
    "R2 regularized EM": "15_regularized_exponential_mechanism",
    "R2 pure EM": "15_regularized_exponential_mechanism",
    "R2 noisy GD": "15_regularized_exponential_mechanism",
    "Z2 output perturbation": "16_sparse_gradients",
    "Z3 bias-reduced DP-SGD": "16_sparse_gradients",
}


def notebook_of(key: str) -> str:
    """The notebook (file stem under ``notebooks/``) that checks the registry record ``key``."""
    if key not in NOTEBOOK_OF:
        raise ValueError(f"key must be a registry key with a notebook, one of {sorted(NOTEBOOK_OF)}, got {key!r}")
    return NOTEBOOK_OF[key]
