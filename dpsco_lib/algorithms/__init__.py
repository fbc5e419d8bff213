"""Private (and reference non-private) optimization algorithms; each returns a
:class:`~dpsco_lib.algorithms._result.Result` whose ``ledger`` certifies its privacy.

Convex programs: :func:`run_smd` (S1, non-private l_p mirror descent), :func:`run_noisy_sgd` (S2, l2
baseline), :func:`run_poly_sfw` (F1), :func:`run_private_vr_frank_wolfe` (F2), :func:`run_gg_vr_sfw` (F3),
:func:`run_dp_sgd` (D4). Nonconvex (N1): :func:`run_private_vr_fw_nonconvex`,
:func:`run_private_proximal_weakly_convex`. Saddle points: :func:`run_private_smd_saddle` (Algorithm 1, A1),
:func:`run_bias_reduced_smd_saddle` (Algorithms 2-3, A2, A3), :func:`run_boosted_saddle` (Algorithm 4, A4),
:func:`run_anytime_smd_sco` (Algorithm 5, A5). Applications: :func:`run_alg1_query_release` and
:func:`run_mwem` (X1), :func:`run_group_robust_alg1` (X2). Lecture topics: mean estimation (D1, D2), the
regularized exponential mechanism (R1, R2), sparse methods (Z1-Z3) in their modules.

Import a submodule for its theory-parameter helpers (e.g. ``from dpsco_lib.algorithms.poly_sfw import
poly_sfw_theory_params``).
"""

from dpsco_lib.algorithms._result import Result
from dpsco_lib.algorithms.anytime_smd import run_anytime_smd_sco
from dpsco_lib.algorithms.applications import run_alg1_query_release, run_group_blind_erm, run_group_robust_alg1
from dpsco_lib.algorithms.bias_reduced_saddle import run_bias_reduced_smd_saddle
from dpsco_lib.algorithms.boosted_saddle import run_boosted_saddle
from dpsco_lib.algorithms.dp_sgd import run_dp_sgd
from dpsco_lib.algorithms.gg_vr_sfw import run_gg_vr_sfw
from dpsco_lib.algorithms.mwem import run_mwem
from dpsco_lib.algorithms.noisy_sgd import run_noisy_sgd
from dpsco_lib.algorithms.nonconvex import run_private_proximal_weakly_convex, run_private_vr_fw_nonconvex
from dpsco_lib.algorithms.poly_sfw import run_poly_sfw
from dpsco_lib.algorithms.private_smd_saddle import run_private_smd_saddle, run_smd_saddle
from dpsco_lib.algorithms.regularized_exponential import run_regularized_exponential_mechanism
from dpsco_lib.algorithms.smd import run_smd
from dpsco_lib.algorithms.vr_frank_wolfe import run_private_vr_frank_wolfe

__all__ = [
    "Result",
    "run_alg1_query_release",
    "run_anytime_smd_sco",
    "run_bias_reduced_smd_saddle",
    "run_boosted_saddle",
    "run_dp_sgd",
    "run_gg_vr_sfw",
    "run_group_blind_erm",
    "run_group_robust_alg1",
    "run_mwem",
    "run_noisy_sgd",
    "run_poly_sfw",
    "run_private_proximal_weakly_convex",
    "run_private_smd_saddle",
    "run_private_vr_frank_wolfe",
    "run_private_vr_fw_nonconvex",
    "run_regularized_exponential_mechanism",
    "run_smd",
    "run_smd_saddle",
]
