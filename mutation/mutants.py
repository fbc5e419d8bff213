"""The curated mutants of dpsco_lib: realistic single-line bugs an implementer could really write.

Each :class:`Mutant` names one exact source substring (``find``) of one library file and its replacement. The
substring must occur exactly once in the file: when a refactor moves or rewrites the code, :meth:`Mutant.apply`
raises :class:`StaleMutant` and the runner reports the mutant as *stale* (visible, never silently useless).

A mutant is a bug that makes the library *less private than it certifies* or *wrong in value*: a noise scale,
a sensitivity, a composition count, a sampling rate, the exponential mechanism's factor, a regularity constant
kappa, a dropped correction term, a step size, a projection radius, an accounting or relation rule. ``tests``
are the pytest node ids (or files) that should catch it, ``notebooks`` the smoke notebooks that should (number
prefixes such as ``"01"``), and ``fast`` marks the subset that ``tests/test_mutation_fast.py`` runs inside
``make test`` (each caught by one quick test).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["CATEGORIES", "MUTANTS", "Mutant", "StaleMutant", "get_mutant"]

#: The categories a mutant may declare (the issue's list plus the accounting/audit/geometry families).
CATEGORIES = (
    "noise scale",
    "sensitivity",
    "composition count",
    "sampling rate",
    "EM factor",
    "kappa",
    "dropped correction term",
    "step size",
    "projection radius",
    "per-step budget",
    "accounting",
    "relation",
    "audit",
    "geometry",
)


class StaleMutant(ValueError):
    """The mutant's ``find`` string does not occur exactly once in its file: the code moved, update the mutant."""


@dataclass(frozen=True)
class Mutant:
    """One realistic bug: replace the unique substring ``find`` of ``file`` by ``replace``.

    Attributes
    ----------
    id : str
        Unique short name (``"mech-laplace-scale"``).
    file : str
        Path of the mutated file, relative to the repository root.
    find, replace : str
        The exact source text (it must occur exactly once in ``file``) and its replacement.
    category : str
        One of :data:`CATEGORIES`.
    description : str
        One line: the bug as an implementer would write it, and what it breaks.
    tests : tuple of str
        Pytest node ids or test files that should catch it.
    notebooks : tuple of str
        Smoke notebooks (number prefixes) that should catch it; may be empty.
    fast : bool
        Part of the fast subset run inside ``make test``.
    """

    id: str
    file: str
    find: str
    replace: str
    category: str
    description: str
    tests: tuple[str, ...]
    notebooks: tuple[str, ...] = field(default=())
    fast: bool = False

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"{self.id}: category must be one of {CATEGORIES}, got {self.category!r}")
        if self.find == self.replace or not self.find:
            raise ValueError(f"{self.id}: find must be non-empty and differ from replace")
        if not self.tests and not self.notebooks:
            raise ValueError(f"{self.id}: name at least one test or notebook that should catch it")

    def apply(self, source: str) -> str:
        """The mutated source; :class:`StaleMutant` unless ``find`` occurs exactly once in ``source``."""
        n = source.count(self.find)
        if n != 1:
            raise StaleMutant(
                f"mutant {self.id}: the find string occurs {n} times in {self.file} (must be exactly once); "
                f"the code moved or changed: update mutation/mutants.py. find = {self.find!r}"
            )
        return source.replace(self.find, self.replace)


_MECH = "dpsco_lib/privacy/mechanisms.py"
_ACC = "dpsco_lib/privacy/accounting/"
_AUDIT = "dpsco_lib/privacy/audit.py"
_GEO = "dpsco_lib/geometry/"
_ALG = "dpsco_lib/algorithms/"
_T_MECH = "tests/test_mechanisms.py"
_T_ACC = "tests/test_accounting.py"
_T_EVB = "tests/test_events_budget.py"
_T_AUDIT = "tests/test_audit.py"
_T_GEO = "tests/test_geometry.py"
_CONTRACT = "tests/test_algorithm_contract.py"

# ---------------------------------------------------------------------------------------------------------------
# Mechanisms (Spec P1, P2, P4, G1)
# ---------------------------------------------------------------------------------------------------------------
_MECHANISMS = (
    Mutant(
        "mech-laplace-scale", _MECH,
        "    b = sens / eps\n    return v + gen.laplace",
        "    b = 1.0 / eps\n    return v + gen.laplace",
        "sensitivity", "Laplace scale 1/eps: the sensitivity is forgotten (too little noise when Delta_1 > 1)",
        (f"{_T_MECH}::test_laplace_ks", _T_AUDIT), ("01",), fast=True,
    ),
    Mutant(
        "mech-gauss-classic-constant", _MECH,
        "math.sqrt(2.0 * math.log(1.25 / dlt)) / eps",
        "math.sqrt(2.0 * math.log(1.0 / dlt)) / eps",
        "noise scale", "classic Gaussian sigma with ln(1/delta) instead of Dwork-Roth's ln(1.25/delta)",
        (f"{_T_MECH}::test_classic_sigma_exact_formula_and_dominates_analytic", _T_MECH), ("01",), fast=True,
    ),
    Mutant(
        "mech-gauss-analytic-term", _MECH,
        "    b = eps + float(log_ndtr(-eps / mu - mu / 2.0))",
        "    b = float(log_ndtr(-eps / mu - mu / 2.0))",
        "dropped correction term",
        "Balle-Wang delta(eps) without the e^eps factor of its second term: analytic sigma and epsilon are wrong",
        (_T_MECH,), ("01",),
    ),
    Mutant(
        "mech-rnm-scale", _MECH,
        "else 2.0 * sens / eps",
        "else sens / eps",
        "noise scale", "report-noisy-max uses the monotone scale Delta/eps for general scores (2x too little noise)",
        (f"{_T_MECH}::test_rnm_laplace_two_candidates_exact_law", _T_AUDIT), ("01",), fast=True,
    ),
    Mutant(
        "mech-em-factor", _MECH,
        "return epsilon / (sensitivity if monotone else 2.0 * sensitivity)",
        "return epsilon / sensitivity",
        "EM factor", "exponential mechanism factor eps/Delta instead of eps/(2 Delta) for general scores (2 eps-DP)",
        (f"{_T_MECH}::test_em_log_probs_exact_values", _T_MECH, _T_AUDIT), ("01",), fast=True,
    ),
    Mutant(
        "mech-gg-sampler-shape", _MECH,
        "gen.gamma(1.0 + 1.0 / qq, 1.0, size=(mm, dd))",
        "gen.gamma(1.0 / qq, 1.0, size=(mm, dd))",
        "noise scale", "GG direction sampler: Gamma(1/q) where the U^(1/a) identity needs Gamma(1 + 1/q)",
        (_T_MECH,), ("04",),
    ),
    Mutant(
        "mech-gg-epsilon-kappa", _MECH,
        "c = kap * sens * sens / (2.0 * sig * sig)",
        "c = sens * sens / (2.0 * sig * sig)",
        "kappa", "GG privacy map without the regularity constant kappa (epsilon under-reported for q > 2)",
        (_T_MECH,), ("04",),
    ),
)

# ---------------------------------------------------------------------------------------------------------------
# Accounting (Spec P3, P5, P6)
# ---------------------------------------------------------------------------------------------------------------
_ACCOUNTING = (
    Mutant(
        "acc-drv-count", _ACC + "composition.py",
        "return _drv_from_sums(k * eps0 * eps0, k * eps0 * _expm1_or_inf(eps0), delta_prime)",
        "return _drv_from_sums((k - 1) * eps0 * eps0, k * eps0 * _expm1_or_inf(eps0), delta_prime)",
        "composition count", "advanced composition counts k - 1 steps in the sqrt term (off by one)",
        (_T_ACC,), ("02",),
    ),
    Mutant(
        "acc-drv-term", _ACC + "composition.py",
        "return math.sqrt(2 * math.log(1 / delta_prime) * s2) + s1",
        "return math.sqrt(2 * math.log(1 / delta_prime) * s2)",
        "dropped correction term", "DRV10 bound without its k eps0 (e^eps0 - 1) term (under-reports epsilon)",
        (f"{_T_ACC}::test_orderings_kov_filter_drv_basic", _T_ACC), ("02",), fast=True,
    ),
    Mutant(
        "acc-kov-range", _ACC + "composition.py",
        "j_max = math.ceil((k - epsilon / eps0) / 2)",
        "j_max = math.floor((k - epsilon / eps0) / 2)",
        "composition count", "KOV15 sum stops one term early between grid points (delta under-reported)",
        (_T_ACC,), ("02",),
    ),
    Mutant(
        "acc-rdp-subsampled-sigma", _ACC + "rdp.py",
        "log_coef + (i * i - i) / (2 * _sq(sigma))))",
        "log_coef + (i * i - i) / (2 * sigma)))",
        "noise scale", "subsampled-Gaussian RDP (integer orders) with sigma where sigma^2 belongs",
        (f"{_T_ACC}::test_oracle_subsampled_gaussian_rdp_dp_accounting_test_values", _T_ACC), ("02", "14"),
        fast=True,
    ),
    Mutant(
        "acc-amplification-rate", _ACC + "gdp.py",
        "return float(math.log1p(q * math.expm1(epsilon))), q * delta",
        "return float(q * epsilon), q * delta",
        "sampling rate", "amplification by subsampling as (q eps, q delta), the invalid folklore form",
        (_T_ACC,), ("02",),
    ),
    Mutant(
        "acc-rdp-conversion-term", _ACC + "rdp.py",
        "eps = r + np.log1p(-1 / a) - (math.log(delta) + np.log(a)) / (a - 1)",
        "eps = r + np.log1p(-1 / a) - math.log(delta) / (a - 1) - np.log(a)",
        "dropped correction term", "CKS20 RDP->DP conversion with log(alpha) outside the 1/(alpha-1) factor",
        (f"{_T_ACC}::test_oracle_dpsgd_mnist_epsilon", _T_ACC), ("02",), fast=True,
    ),
    Mutant(
        "acc-rdp-zero-guard", _ACC + "rdp.py",
        "eps = np.where(delta**2 + np.expm1(-r) > 0, 0.0, eps)",
        "eps = np.where(delta + np.expm1(-r) > 0, 0.0, eps)",
        "accounting", "Bretagnolle-Huber shortcut with delta instead of delta^2: certifies eps = 0 too early",
        (_T_ACC,), ("02",),
    ),
    Mutant(
        "acc-gg-rdp-kappa", _ACC + "rdp.py",
        "return kappa * a**2 / (2 * _sq(m) * (a - 1))",
        "return a**2 / (2 * _sq(m) * (a - 1))",
        "kappa", "GG RDP bound without kappa: the ledger under-certifies every GG algorithm for q > 2",
        (_T_ACC, "tests/test_gg_vr_sfw.py"), ("06",),
    ),
    Mutant(
        "acc-gdp-ledger-mu", _ACC + "ledger.py",
        "gdp_epsilon(math.sqrt(st.mu2), delta=delta)",
        "gdp_epsilon(st.mu2, delta=delta)",
        "accounting", "GDP certificate evaluated at mu^2 instead of mu (too small for mu < 1)",
        (_T_ACC, _T_EVB), ("02",),
    ),
    Mutant(
        "acc-gdp-compose", _ACC + "gdp.py",
        "return float(math.sqrt(np.sum(arr**2)))",
        "return float(math.sqrt(np.sum(arr)))",
        "composition count", "mu-GDP composition sqrt(sum mu_i) instead of sqrt(sum mu_i^2)",
        (_T_ACC,), ("02",),
    ),
    Mutant(
        "acc-ledger-merge-count", _ACC + "ledger.py",
        "SelfComposedEvent(event, last.repetitions + count)",
        "SelfComposedEvent(event, last.repetitions + 1)",
        "composition count", "ledger merge of a repeated record adds 1 instead of its count (steps lost)",
        (f"{_T_ACC}::test_ledger_coalesces_repeated_records", _T_ACC, _CONTRACT), ("02",), fast=True,
    ),
    Mutant(
        "acc-gauss-calibration-count", _ACC + "budget.py",
        "return SelfComposedEvent(GaussianEvent(m), k)",
        "return GaussianEvent(m)",
        "composition count", "Gaussian noise calibrated for one release while count releases are recorded",
        (_T_EVB, "tests/test_budget_lecture.py", "tests/test_mean_estimation.py"), ("14",),
    ),
    Mutant(
        "acc-calibrate-discrete-side", _ACC + "budget.py",
        "return float(a if increasing else b)",
        "return float(b if increasing else a)",
        "per-step budget", "discrete calibration returns the infeasible end of its bracket (one step too many)",
        (_T_EVB,), (),
    ),
    Mutant(
        "rel-group-of-two", _ACC + "ledger.py",
        "            return 2.0 * e\n",
        "            return e\n",
        "relation", "add/remove -> replace-one conversion forgets the group-of-two factor 2 on epsilon",
        (_T_EVB, "tests/test_dp_sgd.py"), ("14",),
    ),
    Mutant(
        "rel-mixed-relations", _ACC + "events.py",
        "if len(rels) > 1:",
        "if len(rels) > 2:",
        "relation", "composed events under different neighbouring relations are accepted (off-by-one check)",
        (_T_EVB,), (),
    ),
)

# ---------------------------------------------------------------------------------------------------------------
# Audits
# ---------------------------------------------------------------------------------------------------------------
_AUDITS = (
    Mutant(
        "audit-cp-direction", _AUDIT,
        "lr(lo_s, hi_p),  # E = {T > t}, S over S'",
        "lr(hi_s, lo_p),  # E = {T > t}, S over S'",
        "audit", "Clopper-Pearson ends swapped (upper bound in the numerator): the audit over-claims a violation",
        (_T_AUDIT,), ("01",),
    ),
    Mutant(
        "audit-bonferroni", _AUDIT,
        "    lo_s, hi_s = clopper_pearson(k, n, a / 2.0)\n    lo_p, hi_p = clopper_pearson(k2, n2, a / 2.0)\n"
        "    cand =",
        "    lo_s, hi_s = clopper_pearson(k, n, a)\n    lo_p, hi_p = clopper_pearson(k2, n2, a)\n    cand =",
        "audit", "threshold audit without the Bonferroni split over the two worlds (level 1 - 2 alpha)",
        (_T_AUDIT,), (),
    ),
    Mutant(
        "audit-mu-direction", _AUDIT,
        "m1 = float(ndtri(lo_s) - ndtri(hi_p))",
        "m1 = float(ndtri(hi_s) - ndtri(lo_p))",
        "audit", "mu-GDP audit plugs in the optimistic ends of the intervals (not a lower bound)",
        (_T_AUDIT,), ("01",),
    ),
    Mutant(
        "audit-mc-upper-tail", _AUDIT,
        "float(stats.beta.ppf(1.0 - a, k + 1, n - k))",
        "float(stats.beta.ppf(a, k + 1, n - k))",
        "audit", "Monte-Carlo delta's exact upper bound uses the lower Beta quantile",
        (_T_AUDIT,), ("04",),
    ),
)

# ---------------------------------------------------------------------------------------------------------------
# Geometry
# ---------------------------------------------------------------------------------------------------------------
_GEOMETRY = (
    Mutant(
        "geo-kappa-equivalence", _GEO + "norms.py",
        "return (r - 1.0) * float(d) ** (2.0 / r - 2.0 * inv_q)",
        "return (r - 1.0) * float(d) ** (1.0 / r - inv_q)",
        "kappa", "regularity constant with the unsquared norm-equivalence factor d^(1/r - 1/q)",
        (f"{_T_GEO}::test_regularity_constant_closed_forms", _T_GEO), ("04",), fast=True,
    ),
    Mutant(
        "geo-l1-radius", _GEO + "sets.py",
        "return project_l1_ball(x, r)",
        "return project_l1_ball(x)",
        "projection radius", "l1-ball projection ignores the ball's radius (projects onto the unit ball)",
        (_T_GEO,), ("16",),
    ),
    Mutant(
        "geo-l2-radius", _GEO + "sets.py",
        "np.minimum(1.0, r / np.maximum(nrm, 1e-300))",
        "np.minimum(1.0, 1.0 / np.maximum(nrm, 1e-300))",
        "projection radius", "l2-ball projection rescales to norm 1 instead of the radius",
        (_T_GEO,), (),
    ),
    Mutant(
        "geo-simplex-threshold", _GEO + "sets.py",
        "/ (rho[..., None] + 1.0)",
        "/ np.maximum(rho[..., None], 1.0)",
        "geometry", "simplex projection threshold divides by the 0-based index rho instead of rho + 1",
        (f"{_T_GEO}::test_project_simplex_batched_and_degenerate", _T_GEO), ("03",),
    ),
    Mutant(
        "geo-simplex-lmo", _GEO + "sets.py",
        "idx = np.argmin(g, axis=-1)",
        "idx = np.argmax(g, axis=-1)",
        "geometry", "simplex linear-minimization oracle returns the argmax vertex (ascent)",
        (_T_GEO,), (),
    ),
    Mutant(
        "geo-lp-lmo-sign", _GEO + "sets.py",
        "return -r * sgn * w",
        "return r * sgn * w",
        "geometry", "l_p-ball linear-minimization oracle with the wrong sign (maximizes <g, v>)",
        (_T_GEO,), ("06",),
    ),
    Mutant(
        "geo-entropic-sign", _GEO + "mirror.py",
        "gs = g - g.min(axis=-1, keepdims=True)",
        "gs = g.max(axis=-1, keepdims=True) - g",
        "step size", "entropic mirror step shifted by the max with the sign flipped: exponentiated ascent",
        (f"{_T_GEO}::test_entropic_step_matches_formula_and_extremes", _T_GEO), ("03",), fast=True,
    ),
    Mutant(
        "geo-entropic-inplace-sign", _GEO + "mirror.py",
        "np.subtract(log_x, gs, z)  # z = log_x - eta * gs",
        "np.add(log_x, gs, z)  # z = log_x - eta * gs",
        "step size", "in-place entropic step of the SMD loops adds eta g (ascent in the fast path only)",
        ("tests/test_speed_paths.py", "tests/test_smd.py"), ("03",),
    ),
    Mutant(
        "geo-pnorm-step-sign", _GEO + "mirror.py",
        "        theta -= eta * g\n",
        "        theta += eta * g\n",
        "step size", "p-norm mirror step (1-D fast path) moves along +g",
        (_T_GEO,), ("03",),
    ),
)

_ALGORITHMS: tuple[Mutant, ...] = ()

MUTANTS: tuple[Mutant, ...] = _MECHANISMS + _ACCOUNTING + _AUDITS + _GEOMETRY + _ALGORITHMS


def get_mutant(mutant_id: str) -> Mutant:
    """The mutant with this id; ``KeyError`` naming the known ids otherwise."""
    for m in MUTANTS:
        if m.id == mutant_id:
            return m
    raise KeyError(f"no mutant {mutant_id!r}; known: {[m.id for m in MUTANTS]}")


def _check_unique_ids() -> None:
    ids = [m.id for m in MUTANTS]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"duplicate mutant ids: {dup}")


_check_unique_ids()
