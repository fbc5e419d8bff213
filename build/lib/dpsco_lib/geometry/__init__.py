"""Geometry of the l_p setups: norms, feasible sets, mirror maps, Maurey sparsification (Spec S1, G1, M1)."""

from dpsco_lib.geometry.mirror import (
    bregman_divergence,
    entropic_step,
    entropic_update,
    kl_divergence,
    l1_lift,
    l1_unlift,
    pnorm_conjugate_grad,
    pnorm_mirror_grad,
    pnorm_mirror_step,
    pnorm_psi,
)
from dpsco_lib.geometry.norms import (
    check_exponent,
    dual_exponent,
    lp_norm,
    regularity_constant,
    smooth_dual_exponent,
)
from dpsco_lib.geometry.sets import (
    FeasibleSet,
    L1Ball,
    LpBall,
    Polytope,
    Simplex,
    project_l1_ball,
    project_simplex,
)
from dpsco_lib.geometry.sparsify import maurey_counts, maurey_indices, maurey_probabilities, maurey_sample

__all__ = [
    "FeasibleSet",
    "L1Ball",
    "LpBall",
    "Polytope",
    "Simplex",
    "bregman_divergence",
    "check_exponent",
    "dual_exponent",
    "entropic_step",
    "entropic_update",
    "kl_divergence",
    "l1_lift",
    "l1_unlift",
    "lp_norm",
    "maurey_counts",
    "maurey_indices",
    "maurey_probabilities",
    "maurey_sample",
    "pnorm_conjugate_grad",
    "pnorm_mirror_grad",
    "pnorm_mirror_step",
    "pnorm_psi",
    "project_l1_ball",
    "project_simplex",
    "regularity_constant",
    "smooth_dual_exponent",
]
