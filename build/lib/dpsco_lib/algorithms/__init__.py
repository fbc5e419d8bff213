"""Private (and reference non-private) optimization algorithms; each returns a
:class:`~dpsco_lib.algorithms._result.Result` whose ``ledger`` certifies its privacy.

Every algorithm has one record in :data:`~dpsco_lib.algorithms.registry.REGISTRY` (spec ID, runner,
theory-parameter function, problem kinds, neighbouring relation, notebook, benchmark case); this package
exports exactly the registered runners, so a new algorithm is exported by registering it.

Convex programs: ``run_smd`` (S1, non-private l_p mirror descent), ``run_noisy_sgd`` (S2, l2 baseline),
``run_poly_sfw`` (F1), ``run_private_vr_frank_wolfe`` (F2), ``run_gg_vr_sfw`` (F3), ``run_dp_sgd`` (D4).
Nonconvex (N1): ``run_private_vr_fw_nonconvex``, ``run_private_proximal_weakly_convex``. Saddle points:
``run_private_smd_saddle`` (Algorithm 1, A1), ``run_bias_reduced_smd_saddle`` (Algorithms 2-3, A2, A3),
``run_boosted_saddle`` (Algorithm 4, A4), ``run_anytime_smd_sco`` (Algorithm 5, A5). Applications:
``run_alg1_query_release`` and ``run_mwem`` (X1), ``run_group_robust_alg1`` (X2). Lecture topics: the
regularized exponential mechanism (R2), sparse methods (Z2, Z3); mean estimation (D1-D3) and sparse mean
estimation (Z1) are mechanisms in their modules.

Import a submodule for its theory-parameter helpers (e.g. ``from dpsco_lib.algorithms.poly_sfw import
poly_sfw_theory_params``). All guarantees hold in the idealized real-arithmetic model (float64 noise from a
non-cryptographic generator).
"""

from typing import Any

from dpsco_lib.algorithms._result import Result as Result

_REGISTRY_NAMES = ("REGISTRY", "AlgorithmRecord", "get_algorithm", "private_algorithms")


def _runners() -> dict[str, Any]:
    from dpsco_lib.algorithms.registry import REGISTRY

    return {rec.runner.__name__: rec.runner for rec in REGISTRY}


def __getattr__(name: str) -> Any:
    # PEP 562: the registry (and with it every algorithm module) loads on first use, so importing one
    # submodule (``dpsco_lib.algorithms.poly_sfw``) does not import all the others.
    if name == "__all__":
        return ["Result", *_REGISTRY_NAMES, *sorted(_runners())]
    if name in _REGISTRY_NAMES:
        from dpsco_lib.algorithms import registry

        return getattr(registry, name)
    runners = _runners()
    if name in runners:
        return runners[name]
    raise AttributeError(f"module 'dpsco_lib.algorithms' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__getattr__("__all__")})
