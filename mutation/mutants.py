"""The curated mutants of dpsco_lib: realistic single-line bugs an implementer could really write.

Each :class:`Mutant` names one exact source substring (``find``) of one library file and its replacement. The
substring must occur exactly once in the file: when a refactor moves or rewrites the code, :meth:`Mutant.apply`
raises :class:`StaleMutant` and the runner reports the mutant as *stale* (visible, never silently useless).

A mutant is a bug that makes the library *less private than it certifies* or *wrong in value*: a noise scale,
a sensitivity, a composition count, a sampling rate, the exponential mechanism's factor, a regularity constant
kappa, a dropped correction term, a step size, a projection radius, an accounting or relation rule. ``tests``
are the pytest node ids (or files) that should catch it, ``notebooks`` the smoke notebooks that should (number
prefixes such as ``"01"``), and ``fast`` marks the subset that ``tests/lib/test_mutation_fast.py`` runs inside
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
    "learns nothing",
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
_T_MECH = "tests/lib/privacy/test_mechanisms.py"
#: Library tests of the algorithms (one file per module of dpsco_lib.algorithms).
_T_ALGS = "tests/lib/algorithms/"
#: Every test of the accounting package (events, ledger, composition, RDP, GDP, budgets, accountants).
_T_ACC = "tests/lib/privacy/accounting"
_T_AUDIT = "tests/lib/privacy/test_audit.py"
_T_GEO = "tests/lib/geometry"
#: The library tests of the nonconvex methods, their problem and sensitivities, and the book tests of their
#: notebook-07 experiments.
_T_NONCONVEX = (_T_ALGS + "test_nonconvex.py", _T_ALGS + "test_vr_sensitivity.py",
                "tests/lib/problems/test_nonconvex.py", "tests/book/test_nonconvex_stationarity.py")
_CONTRACT = _T_ALGS + "test_registry.py"
#: The contract check every private algorithm must pass: its ledger certifies at most the target.
_CERT = f"{_CONTRACT}::test_certificate_at_most_target_at_theory_defaults"

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
        (_T_ACC + "/test_composition.py::test_orderings_kov_filter_drv_basic", _T_ACC), ("02",), fast=True,
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
        (_T_ACC + "/test_rdp.py::test_oracle_subsampled_gaussian_rdp_dp_accounting_test_values", _T_ACC), ("02", "14"),
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
        (_T_ACC + "/test_ledger.py::test_oracle_dpsgd_mnist_epsilon", _T_ACC), ("02",), fast=True,
    ),
    Mutant(
        "acc-rdp-zero-guard", _ACC + "rdp.py",
        "eps = np.where(delta**2 + np.expm1(-r) > 0, 0.0, eps)",
        "eps = np.where(delta + np.expm1(-r) > 0, 0.0, eps)",
        "accounting", "Bretagnolle-Huber shortcut with delta instead of delta^2: certifies eps = 0 too early",
        (_T_ACC, _T_ACC + "/test_rdp.py::test_rdp_certificate_never_below_the_exact_gaussian_curve"),
        ("02",),
    ),
    Mutant(
        "acc-gg-rdp-kappa", _ACC + "rdp.py",
        "return kappa * a**2 / (2 * _sq(m) * (a - 1))",
        "return a**2 / (2 * _sq(m) * (a - 1))",
        "kappa", "GG RDP bound without kappa: the ledger under-certifies every GG algorithm for q > 2",
        (_T_ACC, _T_ALGS + "test_gg_vr_sfw.py"), ("06",),
    ),
    Mutant(
        "acc-gdp-ledger-mu", _ACC + "ledger.py",
        "gdp_epsilon(math.sqrt(st.mu2), delta=delta)",
        "gdp_epsilon(st.mu2, delta=delta)",
        "accounting", "GDP certificate evaluated at mu^2 instead of mu (too small for mu < 1)",
        (_T_ACC,), ("02",),
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
        (_T_ACC + "/test_ledger.py::test_ledger_coalesces_repeated_records", _T_ACC, _CERT), ("02",), fast=True,
    ),
    Mutant(
        "acc-gauss-calibration-count", _ACC + "budget.py",
        "return SelfComposedEvent(GaussianEvent(m), k)",
        "return GaussianEvent(m)",
        "composition count", "Gaussian noise calibrated for one release while count releases are recorded",
        (_T_ACC, _T_ACC + "/test_budget.py", _T_ALGS + "test_mean_estimation.py"), ("14",),
    ),
    Mutant(
        "acc-calibrate-discrete-side", _ACC + "budget.py",
        "return float(a if increasing else b)",
        "return float(b if increasing else a)",
        "per-step budget", "discrete calibration returns the infeasible end of its bracket (one step too many)",
        (_T_ACC,), (),
    ),
    Mutant(
        "acc-parallel-kov-count", _ACC + "ledger.py",
        "kov_k=max(s.kov_k for s in parts),",
        "kov_k=min(s.kov_k for s in parts),",
        "composition count", "parallel block charged the KOV15 count of its shortest part instead of its longest",
        (_T_ACC, _T_ALGS + "test_vr_frank_wolfe.py"), ("05",),
    ),
    Mutant(
        "acc-kov-heterogeneous", _ACC + "ledger.py",
        "kov_ok = a.kov_ok and b.kov_ok and (a.kov_k == 0 or b.kov_k == 0 or a.kov_eps0 == b.kov_eps0)",
        "kov_ok = a.kov_ok and b.kov_ok",
        "accounting", "KOV15 (one eps0) applied to pure steps of different budgets: later, larger steps priced low",
        (_T_ACC,), ("02",),
    ),
    Mutant(
        "rel-conversion-delta-split", _ACC + "ledger.py",
        "d_conv = delta / 2.0 / len(conv) if rest else delta / len(conv)",
        "d_conv = delta / len(conv)",
        "relation", "relation-conversion blocks get all of delta although the rest of the run spends half of it",
        (_T_ACC, _T_ALGS + "test_dp_sgd.py",
         _T_ACC + "/test_ledger.py::test_conversion_blocks_and_the_rest_split_delta_in_half"), (),
    ),
    Mutant(
        "rel-group-of-two-delta", _ACC + "ledger.py",
        "if (1.0 + math.exp(min(e, 700.0))) * d_prime <= delta:",
        "if 2.0 * d_prime <= delta:",
        "relation", "group-of-two conversion with delta' (1 + 1) instead of delta' (1 + e^eps)",
        (_T_ACC, _T_ACC + "/test_events.py::test_group_of_two_conversion_is_sound"), (),
    ),
    Mutant(
        "acc-filter-log-term", _ACC + "composition.py",
        "self._log_term = 2 * math.log(1 / dp)",
        "self._log_term = math.log(1 / dp)",
        "dropped correction term", "WRRW23 filter spend sqrt(log(1/delta') S), factor 2 lost: admits too many steps",
        (_T_ACC, _T_ALGS + "test_bias_reduced_saddle.py", _T_ALGS + "test_sparse.py"), ("02",),
    ),
    Mutant(
        "acc-rdp-pure-constant", _ACC + "rdp.py",
        "loose = np.minimum(eps, a * _sq(eps) / 2)",
        "loose = np.minimum(eps, a * _sq(eps) / 8)",
        "accounting", "pure-DP RDP bound alpha eps^2/8 (the bounded-range constant) instead of alpha eps^2/2",
        (_T_ACC,), ("02",),
    ),
    Mutant(
        "acc-per-step-kind", _ACC + "budget.py",
        'cls = LaplaceEvent if mechanism == "pure" else ExponentialEvent',
        'cls = ExponentialEvent if mechanism == "pure" else LaplaceEvent',
        "per-step budget", "per-step budgets of pure (Laplace, noisy-max) steps priced as bounded-range draws",
        (_T_ACC, _T_ALGS + "test_poly_sfw.py", _CERT), ("05",),
    ),
    Mutant(
        "rel-group-of-two", _ACC + "ledger.py",
        "            return 2.0 * e\n",
        "            return e\n",
        "relation", "add/remove -> replace-one conversion forgets the group-of-two factor 2 on epsilon",
        (_T_ACC, _T_ALGS + "test_dp_sgd.py"), ("14",),
    ),
    Mutant(
        "rel-mixed-relations", _ACC + "events.py",
        "if len(rels) > 1:",
        "if len(rels) > 2:",
        "relation", "composed events under different neighbouring relations are accepted (off-by-one check)",
        (_T_ACC,), (),
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
        "audit-gg-loss-sign", _AUDIT,
        "return (_sq_norm(noise + (a - b), qq) - _sq_norm(noise, qq)) / (2.0 * sig * sig)",
        "return (_sq_norm(noise, qq) - _sq_norm(noise + (a - b), qq)) / (2.0 * sig * sig)",
        "audit", "GG privacy-loss samples with the sign flipped (ln q/p): Monte-Carlo delta vanishes, audits pass",
        (_T_AUDIT,), ("04",),
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
        ("tests/lib/geometry/test_norms.py::test_regularity_constant_closed_forms", _T_GEO), ("04",), fast=True,
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
        ("tests/lib/geometry/test_sets.py::test_project_simplex_batched_and_degenerate", _T_GEO), ("03",),
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
        "geo-l1-move-sign", _GEO + "sets.py",
        "x[j % d] += eta * (r if j < d else -r)",
        "x[j % d] += eta * (r if j <= d else -r)",
        "geometry", "Frank-Wolfe move toward vertex -r e_1 of the l1 ball adds +r e_1 (off-by-one at j = d)",
        (_T_GEO, "tests/lib/problems/test_least_squares.py", _T_ALGS + "test_smd.py", _T_ALGS + "test_poly_sfw.py",
         _T_ALGS + "test_vr_frank_wolfe.py"), ("05",),
    ),
    Mutant(
        "geo-entropic-sign", _GEO + "mirror.py",
        "gs = g - g.min(axis=-1, keepdims=True)",
        "gs = g.max(axis=-1, keepdims=True) - g",
        "step size", "entropic mirror step shifted by the max with the sign flipped: exponentiated ascent",
        ("tests/lib/geometry/test_mirror.py::test_entropic_step_matches_formula_and_extremes",
         _T_GEO), ("03",), fast=True,
    ),
    Mutant(
        "geo-entropic-inplace-sign", _GEO + "mirror.py",
        "np.subtract(log_x, gs, z)  # z = log_x - eta * gs",
        "np.add(log_x, gs, z)  # z = log_x - eta * gs",
        "step size", "in-place entropic step of the SMD loops adds eta g (ascent in the fast path only)",
        ("tests/lib/geometry/test_mirror.py", "tests/lib/problems/test_least_squares.py", _T_ALGS + "test_smd.py",
         _T_ALGS + "test_poly_sfw.py"), ("03",),
    ),
    Mutant(
        "geo-pnorm-step-sign", _GEO + "mirror.py",
        "        theta -= eta * g\n",
        "        theta += eta * g\n",
        "step size", "p-norm mirror step (1-D fast path) moves along +g",
        (_T_GEO,), ("03",),
    ),
)

# ---------------------------------------------------------------------------------------------------------------
# Private algorithms (one or more per registry record): each makes the run less private than its ledger certifies
# or its output wrong in value. Caught by the algorithm's own tests, the contract's certificate check, the fast-path
# reference tests, its audits and its smoke notebook.
# ---------------------------------------------------------------------------------------------------------------


def _alg(mid: str, module: str, find: str, replace: str, category: str, description: str, tests: tuple[str, ...],
         notebooks: tuple[str, ...], fast: bool = False) -> Mutant:
    return Mutant(mid, module if module.startswith("dpsco_lib/") else _ALG + module, find, replace, category,
                  description, tests, notebooks, fast)


_ALGORITHMS: tuple[Mutant, ...] = (
    # S2 noisy SGD
    _alg("alg-noisysgd-sensitivity", "noisy_sgd.py",
         "sigma = nu * 2.0 * L0_2 / b", "sigma = nu * L0_2 / b",
         "sensitivity", "noisy SGD noise for sensitivity L0/b (add/remove) where replace-one needs 2 L0/b",
         (_T_ALGS + "test_noisy_sgd.py", _CERT), ("05",)),
    _alg("alg-noisysgd-epochs", "noisy_sgd.py",
         "epochs = -(-T // per_epoch)", "epochs = T // per_epoch",
         "composition count", "noisy SGD epochs rounded down: a partial last epoch is run but never calibrated",
         (_T_ALGS + "test_noisy_sgd.py", _CERT), ("05",)),
    _alg("alg-noisysgd-batch-overlap", "noisy_sgd.py",
         "data[np.sort(perm[j * b : (j + 1) * b])]", "data[np.sort(perm[j * b : (j + 1) * b + 1])]",
         "sampling rate", "noisy SGD batches of b + 1 records overlap by one: a record enters two steps of an epoch",
         (_T_ALGS + "test_noisy_sgd.py", _CERT,
          _T_ALGS + "test_noisy_sgd.py::test_noisy_sgd_batches_are_disjoint_within_an_epoch"), ("05",)),
    _alg("alg-noisysgd-step", "noisy_sgd.py",
         "G = math.sqrt(L0_2**2 + d * sigma**2)", "G = math.sqrt(L0_2**2 + sigma**2)",
         "step size", "noisy SGD step size from the noise second moment without the dimension d (step too large)",
         (_T_ALGS + "test_noisy_sgd.py",), ("05",)),
    # D4 DP-SGD
    _alg("alg-dpsgd-clip-noise", "dp_sgd.py",
         "noise_std=sigma * C * factor", "noise_std=sigma * factor",
         "sensitivity", "DP-SGD noise std sigma instead of sigma C: the clipping norm (sensitivity) is forgotten",
         (_T_ALGS + "test_dp_sgd.py", _CERT,
          _T_ALGS + "test_dp_sgd.py::test_dp_sgd_canary_audit_with_clipping_norm_above_one"), ("14",)),
    _alg("alg-dpsgd-sampling", "dp_sgd.py",
         "mask = rng.random(n) < q", "mask = rng.random(n) > q",
         "sampling rate", "DP-SGD Poisson mask with the comparison reversed: records are kept at rate 1 - q",
         (_T_ALGS + "test_dp_sgd.py", _CERT), ("14",)),
    # F1 Poly-SFW
    _alg("alg-polysfw-scale", "poly_sfw.py",
         "scales = (2.0 / params.eps0) * noise_mult * sens", "scales = (1.0 / params.eps0) * noise_mult * sens",
         "noise scale", "Poly-SFW report-noisy-min with the monotone scale s/eps0 for non-monotone scores",
         (_T_ALGS + "test_poly_sfw.py", _CERT), ("05",)),
    _alg("alg-polysfw-vr-correction", "poly_sfw.py",
         "        add(grad, g_old, grad)\n        mul(grad, keep_arr, grad)",
         "        mul(grad, keep_arr, grad)",
         "dropped correction term", "Poly-SFW recursion without its variance-reduction correction g_new - g_old",
         (_T_ALGS + "test_poly_sfw.py::test_run_poly_sfw_matches_reference_loop", _T_ALGS + "test_poly_sfw.py",
          _T_ALGS + "test_poly_sfw.py::test_poly_sfw_fast_loop_matches_the_reference_when_the_scores_decide"), ("05",)),
    _alg("alg-polysfw-update-overlap", "poly_sfw.py",
         "    updates = data[m:]\n", "    updates = data[m - 1:]\n",
         "sensitivity", "Poly-SFW's first single-record update reuses the last record of the initial batch",
         (_T_ALGS + "test_poly_sfw.py::test_run_poly_sfw_matches_reference_loop", _T_ALGS + "test_poly_sfw.py",
          _T_ALGS + "test_poly_sfw.py::test_poly_sfw_fast_loop_matches_the_reference_when_the_scores_decide"), ("05",)),
    _alg("alg-polysfw-ledger-count", "poly_sfw.py",
         "ledger.record_pure(prm.eps0, count=prm.T + 1,", "ledger.record_pure(prm.eps0, count=prm.T,",
         "composition count", "Poly-SFW ledger records T selections while T + 1 ran (the initial one is lost)",
         (_T_ALGS + "test_poly_sfw.py", _CERT), ("05",)),
    _alg("alg-vrsens-L0", "vr_sensitivity.py",
         "eta * w * ((1.0 - eta) * L1 * D + L0) / b", "eta * w * ((1.0 - eta) * L1 * D) / b",
         "sensitivity", "variance-reduced sensitivity without the eta L0 term of the fresh gradient (F1, F3, N1)",
         (_T_ALGS + "test_poly_sfw.py", _T_ALGS + "test_gg_vr_sfw.py", *_T_NONCONVEX), ("05",)),
    # F2 tree-structured VR Frank-Wolfe
    _alg("alg-treefw-root-scale", "vr_frank_wolfe.py",
         "lam = 2.0 * (L0 * D / b) / eps_j[0]", "lam = (L0 * D / b) / eps_j[0]",
         "noise scale", "tree FW root selection with Laplace scale s/eps instead of 2 s/eps",
         (_T_ALGS + "test_vr_frank_wolfe.py", _CERT), ("05",)),
    _alg("alg-treefw-inherited-noise", "vr_frank_wolfe.py",
         "lam = max(need[j - 1], 2.0 * (L1 * D * dist / sizes[j]) / eps_j[j])",
         "lam = 2.0 * (L1 * D * dist / sizes[j]) / eps_j[j]",
         "noise scale", "tree FW leaf noise ignores the scale its ancestors' batches require (max dropped)",
         (_T_ALGS + "test_vr_frank_wolfe.py", _CERT), ("05",)),
    _alg("alg-treefw-vr-correction", "vr_frank_wolfe.py",
         "g = est[j - 1] + (mean_grad(x, batch) - mean_grad(parent, batch))",
         "g = est[j - 1] + mean_grad(x, batch)",
         "dropped correction term", "tree FW estimate adds the fresh gradient without subtracting the parent's",
         (_T_ALGS + "test_vr_frank_wolfe.py",), ("05",)),
    # F3 GG-VR-SFW (naive and tree)
    _alg("alg-gg-kappa", "gg_vr_sfw.py",
         "kappa = regularity_constant(q, d)", "kappa = regularity_constant(r, d)",
         "kappa", "GG-VR-SFW records kappa of the smooth norm r without the d^(2/r - 2/q) equivalence factor",
         (_T_ALGS + "test_gg_vr_sfw.py", _CERT), ("06",)),
    _alg("alg-gg-naive-count", "gg_vr_sfw.py",
         "ledger.record_gg(prm.noise_multiplier, prm.kappa, count=prm.T + 1,",
         "ledger.record_gg(prm.noise_multiplier, prm.kappa, count=prm.T,",
         "composition count", "GG-VR-SFW naive ledger records T releases while T + 1 ran",
         (_T_ALGS + "test_gg_vr_sfw.py", _CERT), ("06",)),
    _alg("alg-gg-naive-correction", "gg_vr_sfw.py",
         "grad = (1.0 - eta) * (grad + g_new - g_old) + eta * g_new",
         "grad = (1.0 - eta) * grad + eta * g_new",
         "dropped correction term", "GG-VR-SFW naive recursion without the correction g_new - g_old (biased)",
         (_T_ALGS + "test_gg_vr_sfw.py",
          _T_ALGS + "test_gg_vr_sfw.py::test_gg_vr_sfw_naive_estimate_is_exact_when_all_records_agree"),
         ("06",)),
    _alg("alg-gg-tree-root-sensitivity", "gg_vr_sfw.py",
         "            sens_t = 2.0 * st.L0 / b\n", "            sens_t = st.L0 / b\n",
         "sensitivity", "GG-VR-SFW tree root release with sensitivity L0/b instead of 2 L0/b (fast path)",
         (_T_ALGS + "test_gg_vr_sfw.py", _T_ALGS + "test_gg_vr_sfw.py"), ("06",)),
    # N1 (both methods)
    _alg("alg-n1-vrfw-scale", "nonconvex.py",
         "scales = (2.0 / prm.eps0) * noise_mult * sens", "scales = (1.0 / prm.eps0) * noise_mult * sens",
         "noise scale", "nonconvex VR-FW report-noisy-min with the monotone scale s/eps0",
         (*_T_NONCONVEX, _CERT,
          _T_ALGS + "test_nonconvex.py"
                    "::test_nonconvex_vr_fw_laplace_scales_are_the_general_report_noisy_min_scales"), ("07",)),
    _alg("alg-n1-vrfw-correction", "nonconvex.py",
         "grad = (1.0 - eta) * (grad + g_new - mean_grad(x_prev, batch)) + eta * g_new",
         "grad = (1.0 - eta) * grad + eta * g_new",
         "dropped correction term", "nonconvex VR-FW recursion without its variance-reduction correction",
         (*_T_NONCONVEX,
          _T_ALGS + "test_nonconvex.py"
                    "::test_nonconvex_vr_fw_selects_the_exact_gradient_vertex_when_all_records_agree"), ("07",)),
    _alg("alg-n1-prox-disjoint", "nonconvex.py",
         "batch = data[t * N:(t + 1) * N]", "batch = data[t:t + N]",
         "composition count", "proximal batches overlap (a sliding window) under a parallel-composition ledger",
         (*_T_NONCONVEX, _CERT,
          _T_ALGS + "test_nonconvex.py::test_proximal_weakly_convex_uses_each_record_in_one_subproblem_only"), ("07",)),
    _alg("alg-n1-prox-step", "nonconvex.py",
         "etas = 2.0 / (mu * (k_idx + 1.0))", "etas = 2.0 / (mu * k_idx)",
         "step size", "proximal subproblem step 2/(mu k) instead of 2/(mu (k + 1)) (first step twice too long)",
         (*_T_NONCONVEX,
          _T_ALGS + "test_nonconvex.py"
                    "::test_proximal_weakly_convex_first_subproblem_follows_its_documented_recursion"), ("07",)),
    # A1 private SMD for saddle points (Algorithm 1)
    _alg("alg-a1-eps-draw", "private_smd_saddle.py",
         "eps_draw=float(4.0 * eta_used * L0 / B)", "eps_draw=float(2.0 * eta_used * L0 / B)",
         "EM factor", "Algorithm 1 records each draw at 2 eta L0/B: the factor 2 of the exponential mechanism lost",
         (_T_ALGS + "test_private_smd_saddle.py", _CERT), ("09",)),
    _alg("alg-a1-batch-overlap", "private_smd_saddle.py",
         "(the output averages x~_1..x~_T)\n        batch = data[t * B : (t + 1) * B]",
         "(the output averages x~_1..x~_T)\n        batch = data[t * B : (t + 1) * B + 1]",
         "sensitivity", "Algorithm 1 batches of B + 1 records overlapping by one (each draw is charged for B)",
         (_T_ALGS + "test_private_smd_saddle.py", _CERT), ("09",)),
    _alg("alg-a1-ledger-count", "private_smd_saddle.py",
         'led.record_exponential(prm.eps_draw, count=prm.n_draws, label="Alg 1 vertex draws',
         'led.record_exponential(prm.eps_draw, count=prm.K * prm.T, label="Alg 1 vertex draws',
         "composition count", "Algorithm 1 ledger counts K T draws: the second player's draws are forgotten",
         (_T_ALGS + "test_private_smd_saddle.py", _CERT), ("09",)),
    # A3 bias-reduced SMD with a random stopping time
    _alg("alg-a3-combine-weight", "bias_reduced_saddle.py",
         "return g[..., 0, :] + corr / p[..., None]", "return g[..., 0, :] + corr",
         "dropped correction term", "Algorithm 2's multilevel correction not reweighted by 1/p_N (biased oracle)",
         (_T_ALGS + "test_bias_reduced_saddle.py",), ("10",)),
    _alg("alg-a3-draw-epsilon", "bias_reduced_saddle.py",
         "return float(4.0 * step_size * L0 * np.max((1.0 + 2.0 / p) / bn))",
         "return float(4.0 * step_size * L0 * np.max(1.0 / bn))",
         "sensitivity", "Algorithm 3 per-draw epsilon without the level weight w_N = 1 + 2/p_N",
         (_T_ALGS + "test_bias_reduced_saddle.py", _CERT), ("10",)),
    _alg("alg-a3-draw-count", "bias_reduced_saddle.py",
         "m_t = 2 * ((2 ** (N + 1)) * K_ + n_out)", "m_t = (2 ** (N + 1)) * K_ + n_out",
         "composition count", "Algorithm 3 offers one player's draws to the filter and the ledger (half of them)",
         (_T_ALGS + "test_bias_reduced_saddle.py", _CERT), ("10",)),
    # A4 boosting with private selection
    _alg("alg-a4-score-sensitivity", "boosted_saddle.py",
         'max(2.0 * float(np.max(r_i)) / split["n_gap"], _TINY)', 'max(float(np.max(r_i)) / split["n_gap"], _TINY)',
         "sensitivity", "Algorithm 4 gap-score sensitivity r/n_g instead of 2 r/n_g (replace-one)",
         (_T_ALGS + "test_boosted_saddle.py", _CERT,
          _T_ALGS + "test_boosted_saddle.py::test_boosted_selection_temperature_matches_its_recorded_budget"),
         ("11",)),
    _alg("alg-a4-selection-budget", "boosted_saddle.py",
         "select_candidate(gaps_hat, sensitivity=sens, epsilon=eps_aux, rng=rng)",
         "select_candidate(gaps_hat, sensitivity=sens, epsilon=eps, rng=rng)",
         "per-step budget", "Algorithm 4 selection spends the whole epsilon while the ledger records c epsilon",
         (_T_ALGS + "test_boosted_saddle.py", _CERT,
          _T_ALGS + "test_boosted_saddle.py::test_boosted_selection_temperature_matches_its_recorded_budget"),
         ("11",)),
    # A5 anytime online-to-batch SMD
    _alg("alg-a5-eps-draw", "anytime_smd.py",
         "eps_draw=float(4.0 * eta_used * T_ * L0 / B)", "eps_draw=float(4.0 * eta_used * L0 / B)",
         "sensitivity", "Algorithm 5 per-draw epsilon without the weight alpha_t <= T of the linear losses",
         (_T_ALGS + "test_anytime_smd.py", _CERT), ("12",)),
    _alg("alg-a5-anytime-weight", "anytime_smd.py",
         "x_avg += (2.0 / (t + 2)) * (w1 - x_avg)", "x_avg += (1.0 / (t + 1)) * (w1 - x_avg)",
         "step size", "Algorithm 5 averages uniformly instead of with the anytime weights alpha_t = t",
         (_T_ALGS + "test_anytime_smd.py",), ("12",)),
    # X1 query release, MWEM, X2 group-robust
    _alg("alg-x1-eps-draw", "applications.py",
         "eps_draw=float(2.0 * eta / B)", "eps_draw=float(eta / B)",
         "sensitivity", "query release records each y-draw at eta/B instead of 2 eta/B",
         (_T_ALGS + "test_applications.py", _CERT), ("13",)),
    _alg("alg-mwem-selection-budget", "mwem.py",
         "exponential_mechanism(np.abs(est - true), sensitivity=1.0, epsilon=eps0",
         "exponential_mechanism(np.abs(est - true), sensitivity=1.0, epsilon=2.0 * eps0",
         "per-step budget", "MWEM selection spends the round's whole budget 2 eps0 (recorded as eps0)",
         (_T_ALGS + "test_mwem.py", _CERT,
          _T_ALGS + "test_mwem.py::test_mwem_first_selection_is_the_exponential_mechanism_at_eps0"),
         ("13",)),
    _alg("alg-mwem-measure-scale", "mwem.py",
         "laplace_mechanism(true[j], sensitivity=1.0, epsilon=eps0",
         "laplace_mechanism(true[j], sensitivity=0.5, epsilon=eps0",
         "noise scale", "MWEM measurement noise for sensitivity 1/2 (half the Laplace scale a count needs)",
         (_T_ALGS + "test_mwem.py", _CERT,
          _T_ALGS + "test_mwem.py::test_mwem_measurements_have_laplace_noise_of_scale_one_over_eps0"),
         ("13",)),
    _alg("alg-mwem-mw-step", "mwem.py",
         "z = log_a + q * ((measured - est) / (2.0 * n))", "z = log_a + q * ((measured - est) / n)",
         "step size", "MWEM multiplicative-weights update with factor 1/n instead of HLM12's 1/(2n)",
         (_T_ALGS + "test_mwem.py", _T_ALGS + "test_mwem.py::test_mwem_one_round_is_the_hlm12_update"), ("13",)),
    _alg("alg-x2-lifted-L0", "dpsco_lib/problems/lifted.py",
         "L0=max(R * Ba, lmax) / pmin,", "L0=max(R * Ba, lmax),",
         "sensitivity", "group-robust lift without the 1/pi_min group weight in L0 (Algorithm 1 noise too small)",
         (_T_ALGS + "test_applications.py", _CERT), ("13",)),
    # R2 regularized exponential mechanism and its baselines
    _alg("alg-r2-mu-gdp", "regularized_exponential.py",
         "return 2.0 * G * math.sqrt(k) / (n * math.sqrt(mu))", "return G * math.sqrt(k) / (n * math.sqrt(mu))",
         "sensitivity", "regularized EM GDP parameter without the replace-one factor 2 (ledger under-reports)",
         (_T_ALGS + "test_regularized_exponential.py", _CERT), ("15",)),
    _alg("alg-r2-ledger-inverse", "regularized_exponential.py",
         'ledger.record_gaussian(1.0 / mu_gdp, label=', 'ledger.record_gaussian(mu_gdp, label=',
         "noise scale", "regularized EM recorded with noise multiplier mu_GDP instead of 1/mu_GDP",
         (_T_ALGS + "test_regularized_exponential.py", _CERT), ("15",)),
    _alg("alg-r2-pure-em-k", "regularized_exponential.py",
         "k = epsilon * n / (2.0 * G * D)", "k = epsilon * n / (G * D)",
         "EM factor", "pure exponential mechanism with k = eps n/(G D): the factor 2 of the EM lost (2 eps-DP)",
         (_T_ALGS + "test_regularized_exponential.py", _CERT), ("15",)),
    _alg("alg-r2-noisy-gd-count", "regularized_exponential.py",
         "sigma = gaussian_noise_multiplier(epsilon, delta, count=T, accountant=accountant).value",
         "sigma = gaussian_noise_multiplier(epsilon, delta, count=1, accountant=accountant).value",
         "composition count", "noisy GD noise calibrated for one step while T steps run and are recorded",
         (_T_ALGS + "test_regularized_exponential.py", _CERT), ("15",)),
    # Z2 output perturbation, Z3 bias-reduced DP-SGD
    _alg("alg-z2-sensitivity", "sparse.py",
         'out = {"l2": L / (lam * n)}', 'out = {"l2": L / (2.0 * lam * n)}',
         "sensitivity", "output perturbation sensitivity L/(2 lam n): the 2 lam strong convexity counted twice",
         (_T_ALGS + "test_sparse.py", _CERT), ("16",)),
    _alg("alg-z2-l1-sensitivity", "sparse.py",
         'out["l1"] = math.sqrt(2 * s) * L * (H + 2 * lam)', 'out["l1"] = math.sqrt(s) * L * (H + 2 * lam)',
         "sensitivity", "output perturbation l1 sensitivity with sqrt(s) where the two sparse gradients give sqrt(2 s)",
         (_T_ALGS + "test_sparse.py", _CERT), ("16",)),
    _alg("alg-z3-step-epsilon", "sparse.py",
         "return amp(2.0 * eps0, b / n) + amp(eps0, 1.0 / n)", "return amp(eps0, b / n) + amp(eps0, 1.0 / n)",
         "per-step budget", "bias-reduced DP-SGD charges eps0 for the batch part a record touches twice (2 eps0)",
         (_T_ALGS + "test_sparse.py", _CERT), ("16",)),
    _alg("alg-z3-correction", "sparse.py",
         "G = (GB - 0.5 * (GO + GE)) / p[k] + Gi", "G = (GB - 0.5 * (GO + GE)) + Gi",
         "dropped correction term", "bias-reduced gradient's multilevel correction not divided by p_k (biased)",
         (_T_ALGS + "test_sparse.py",), ("16",)),
)

# ---------------------------------------------------------------------------------------------------------------
# Red-team round: bugs written against the privacy-critical code without looking at the existing tests first (a
# noise draw reused, a clip in the wrong norm or after the sum, a count off by one in a filter or a ledger, a
# relation's factor 2 dropped, q vs 1 - q, the true count leaking into MWEM, a Maurey sample without replacement).
# ---------------------------------------------------------------------------------------------------------------
_T_MAUREY = "tests/lib/problems/test_maurey_functions.py"
_RED_TEAM: tuple[Mutant, ...] = (
    # mechanisms
    Mutant("mech-rnmin-no-negation", _MECH,
           "        -u, sensitivity=sensitivity, epsilon=epsilon, rng=rng, noise=noise, monotone=monotone, size=size",
           "        u, sensitivity=sensitivity, epsilon=epsilon, rng=rng, noise=noise, monotone=monotone, size=size",
           "geometry", "report-noisy-min forwards the scores unnegated: it reports the noisy max (ascent)",
           (_T_MECH,)),
    Mutant("mech-gumbel-unscaled", _MECH,
           "z = b * gen.gumbel(0.0, 1.0, size=(t1 - t0, j))", "z = gen.gumbel(0.0, 1.0, size=(t1 - t0, j))",
           "noise scale", "report-noisy-max with Gumbel noise of scale 1 instead of b = 2 Delta/eps",
           (_T_MECH,)),
    Mutant("mech-categorical-shared-uniforms", _MECH,
           "    u = gen.random((m, kk))\n", "    u = np.broadcast_to(gen.random((1, kk)), (m, kk))\n",
           "noise scale",
           "batched categorical sampler reuses one row of uniforms for every row (coupled draws: A1's two players)",
           (_T_MECH, _T_ALGS + "test_private_smd_saddle.py")),
    Mutant("mech-gg-shared-radius", _MECH,
           "r = sig * np.sqrt(gen.chisquare(dd, size=mm))", "r = sig * np.sqrt(gen.chisquare(dd))",
           "noise scale", "GG sampler draws one chi radius for all size draws (the releases share their norm)",
           (_T_MECH, _T_ALGS + "test_gg_vr_sfw.py")),
    Mutant("mech-gauss-eps-mu-inverted", _MECH,
           "    mu = sens / sig\n    if _gaussian_delta(mu, 0.0) <= dlt:",
           "    mu = sig / sens\n    if _gaussian_delta(mu, 0.0) <= dlt:",
           "noise scale", "analytic Gaussian epsilon evaluated at mu = sigma/Delta instead of Delta/sigma",
           (_T_MECH,)),
    Mutant("mech-gg-epsilon-log", _MECH,
           "    big_l = -math.log(dlt)\n", "    big_l = -math.log(1.25 * dlt)\n",
           "accounting", "GG epsilon with log(1/(1.25 delta)) (the classic Gaussian's 1.25 on the wrong side)",
           (_T_MECH, _T_ALGS + "test_gg_vr_sfw.py")),
    # accounting
    Mutant("acc-seq-rdp-max", _ACC + "ledger.py",
           "a.kov_k + b.kov_k, _add(a.mu2, b.mu2), a.rdp + b.rdp,",
           "a.kov_k + b.kov_k, _add(a.mu2, b.mu2), np.maximum(a.rdp, b.rdp),",
           "composition count", "sequential events composed like parallel parts in RDP (max instead of sum)",
           (_T_ACC,)),
    Mutant("acc-per-part-min", _ACC + "ledger.py",
           'out["per_part"] = max(min(', 'out["per_part"] = min(min(',
           "composition count", "a parallel block certified by its cheapest part instead of its worst",
           (_T_ACC,)),
    Mutant("acc-scale-rdp", _ACC + "ledger.py",
           "c * s.kov_k, mul(s.mu2), c * s.rdp,", "c * s.kov_k, mul(s.mu2), s.rdp,",
           "composition count", "self-composed non-pure events: the RDP curve is not multiplied by the count",
           (_T_ACC,)),
    Mutant("acc-pure-block-drv-s1", _ACC + "ledger.py",
           "return _Stats(c * e, c * e * e, c * e * expm1,", "return _Stats(c * e, c * e * e, e * expm1,",
           "composition count", "ledger's DRV10 term k eps0 (e^eps0 - 1) counted once for a block of k pure steps",
           (_T_ACC,)),
    Mutant("acc-record-selfcomposed-count", _ACC + "ledger.py",
           "count, event = count * event.repetitions, event.event", "count, event = count, event.event",
           "composition count", "recording a SelfComposedEvent (and merging ledgers) drops its repetitions",
           (_T_ACC,)),
    Mutant("acc-conversion-rest-delta", _ACC + "ledger.py",
           "base = _plain_epsilons(rest, delta / 2.0, a, wanted)", "base = _plain_epsilons(rest, delta, a, wanted)",
           "relation", "with relation-conversion blocks the rest of the run is certified at all of delta (1.5 delta)",
           (_T_ACC, _T_ACC + "/test_ledger.py::test_conversion_blocks_and_the_rest_split_delta_in_half")),
    Mutant("acc-group-of-two-pure", _ACC + "ledger.py",
           'return 2.0 * min(_plain_epsilons(events, 0.0, a, {"best"}).values())',
           'return min(_plain_epsilons(events, 0.0, a, {"best"}).values())',
           "relation", "pure add/remove -> replace-one conversion without the group-of-two factor 2",
           (_T_ACC,)),
    Mutant("acc-export-replace-factor", _ACC + "events.py",
           "        return de.GaussianDpEvent(event.noise_multiplier)\n",
           "        return de.GaussianDpEvent(2.0 * event.noise_multiplier)\n",
           "relation", "dp-accounting export of a Gaussian with its multiplier doubled (the replace-one to add/remove "
           "conversion applied the wrong way): the exported curve is below the certified one",
           (_T_ACC,)),
    Mutant("acc-rdp-conversion-classic-alpha", _ACC + "rdp.py",
           "eps = r + np.log1p(-1 / a) - (math.log(delta) + np.log(a)) / (a - 1)",
           "eps = r - math.log(delta) / a",
           "accounting", "RDP -> DP with log(1/delta)/alpha instead of the CKS20 formula (Mironov's alpha - 1 lost)",
           (_T_ACC,)),
    Mutant("acc-subsampled-q-swap", _ACC + "rdp.py",
           "i * math.log(q) + (alpha - i) * math.log1p(-q)", "i * math.log1p(-q) + (alpha - i) * math.log(q)",
           "sampling rate", "subsampled-Gaussian RDP (integer orders) with q and 1 - q swapped",
           (_T_ACC,)),
    Mutant("acc-rdp-pure-half", _ACC + "rdp.py",
           "- _log_cosh(np.float64(eps / 2))) / (a - 1)", "- _log_cosh(np.float64(eps))) / (a - 1)",
           "accounting", "tight pure-DP RDP curve subtracts log cosh(eps) instead of log cosh(eps/2)",
           (_T_ACC,)),
    Mutant("acc-filter-step-delta", _ACC + "composition.py",
           "return ok_eps and self.sum_delta + delta_m <= self.delta_slack",
           "return ok_eps and self.sum_delta <= self.delta_slack",
           "composition count", "WRRW23 filter checks the deltas spent so far without the offered step's own",
           (_T_ACC,)),
    Mutant("acc-filter-many-bisect", _ACC + "composition.py",
           "                j = lo\n", "                j = hi\n",
           "composition count", "filter's try_spend_many(count=...) admits the first refused step too (off by one)",
           (_T_ACC, _T_ALGS + "test_bias_reduced_saddle.py")),
    Mutant("acc-filter-many-prefix", _ACC + "composition.py",
           "j = 0 if all_or_nothing else int(np.argmin(ok))", "j = 0 if all_or_nothing else int(np.argmin(ok)) + 1",
           "composition count", "filter's try_spend_many(array) records one step beyond the admissible prefix",
           (_T_ACC,)),
    Mutant("acc-cor36-two", _ACC + "composition.py",
           "return epsilon / (2 * math.sqrt(2 * k * math.log(1 / delta)))",
           "return epsilon / math.sqrt(2 * k * math.log(1 / delta))",
           "per-step budget", "Cor 3.6 per-step rule without its factor 2 (each step twice the budget)",
           (_T_ACC,)),
    Mutant("acc-paper-rule-two", _ACC + "budget.py",
           "return epsilon / (2.0 * math.sqrt(2.0 * k * math.log(1.0 / delta)))",
           "return epsilon / math.sqrt(2.0 * k * math.log(1.0 / delta))",
           "per-step budget", "the papers' per-step rule (accountant='paper') without its factor 2",
           (_T_ACC, _T_ALGS + "test_poly_sfw.py")),
    Mutant("acc-max-steps-filter-log", _ACC + "composition.py",
           "return math.sqrt(2 * math.log(1 / delta) * s2) + 0.5 * s2 <= epsilon",
           "return math.sqrt(math.log(1 / delta) * s2) + 0.5 * s2 <= epsilon",
           "composition count", "max_composition_steps('filter') with log(1/delta) for 2 log(1/delta)",
           (_T_ACC,)),
    Mutant("acc-max-steps-basic-ceil", _ACC + "composition.py",
           "return int(math.floor(epsilon / eps0 * (1 + 1e-12)))",
           "return int(math.ceil(epsilon / eps0 * (1 - 1e-12)))",
           "composition count", "basic composition's step count rounded up (one step beyond the budget)",
           (_T_ACC + "/test_composition.py::test_basic_composition_step_count_is_the_largest_count_within_the_budget",
            _T_ACC), fast=True),
    Mutant("acc-kov-probability", _ACC + "composition.py",
           "+ (k - j) * eps0 - k * np.logaddexp(0.0, eps0)", "+ j * eps0 - k * np.logaddexp(0.0, eps0)",
           "accounting", "KOV15 sum weighs loss (k - 2j) eps0 with the probability of the mirrored outcome",
           (_T_ACC,)),
    Mutant("acc-parallel-kov-mixed", _ACC + "ledger.py",
           "kov_ok=all(s.kov_ok for s in parts) and len(eps0s) <= 1,", "kov_ok=all(s.kov_ok for s in parts),",
           "accounting", "KOV15 (one eps0) applied to parallel parts of different per-step budgets",
           (_T_ACC, _T_ALGS + "test_vr_frank_wolfe.py")),
    # algorithms
    _alg("alg-noisysgd-l2-constant", "noisy_sgd.py",
         "float(problem.d) ** max(0.0, 0.5 - inv_q)", "float(problem.d) ** max(0.0, inv_q - 0.5)",
         "sensitivity", "noisy SGD's l2 Lipschitz constant without the sqrt(d) of an l1 setup (wrong-norm bound)",
         (_T_ALGS + "test_noisy_sgd.py", _CERT), ()),
    _alg("alg-noisysgd-shared-noise", "noisy_sgd.py",
         "g += rng.normal(0.0, sigma, size=d)", "g += rng.normal(0.0, sigma)",
         "noise scale", "noisy SGD adds one scalar N(0, sigma^2) to every coordinate (the same draw d times)",
         (_T_ALGS + "test_noisy_sgd.py::test_noisy_sgd_noise_has_independent_coordinates",
          _T_ALGS + "test_noisy_sgd.py"), (), fast=True),
    _alg("alg-dpsgd-clip-linf", "dp_sgd.py",
         "            nrm = np.linalg.norm(G, axis=1)\n            n_clipped",
         "            nrm = np.abs(G).max(axis=1)\n            n_clipped",
         "sensitivity", "DP-SGD clips per-example gradients in l_inf (l2 norm up to sqrt(d) C)",
         (_T_ALGS + "test_dp_sgd.py::test_dp_sgd_clips_each_example_in_l2_before_summing",
          _T_ALGS + "test_dp_sgd.py"), ()),
    _alg("alg-dpsgd-clip-after-sum", "dp_sgd.py",
         "g_sum = (G * np.minimum(1.0, clip / np.maximum(nrm, 1e-300))[:, None]).sum(axis=0)",
         "g_sum = G.sum(axis=0) * min(1.0, clip / max(float(np.linalg.norm(G.sum(axis=0))), 1e-300))",
         "sensitivity", "DP-SGD clips the batch sum instead of each example (sensitivity 2C, not C)",
         (_T_ALGS + "test_dp_sgd.py::test_dp_sgd_clips_each_example_in_l2_before_summing",
          _T_ALGS + "test_dp_sgd.py"), (), fast=True),
    _alg("alg-dpsgd-ledger-std", "dp_sgd.py",
         "led.record_subsampled_gaussian(sigma, q, count=T,", "led.record_subsampled_gaussian(sigma * C, q, count=T,",
         "noise scale", "DP-SGD ledger records the noise std sigma C as its noise multiplier (wrong for C != 1)",
         (_T_ALGS + "test_dp_sgd.py::test_dp_sgd_ledger_records_the_noise_multiplier_whatever_the_clipping_norm",
          _T_ALGS + "test_dp_sgd.py"),
         ()),
    _alg("alg-dpsgd-advanced-step-delta", "dp_sgd.py",
         "d0 = (1 - f) * dlt / (q * T)", "d0 = (1 - f) * dlt / q",
         "composition count", "Thm 3.2 per-step delta not divided by T: the T steps spend T (1 - f) delta",
         (_T_ALGS + "test_dp_sgd.py",), ()),
    _alg("alg-vrsens-dual-two", "vr_sensitivity.py",
         'w = D if norm == "score" else 2.0', 'w = D if norm == "score" else 1.0',
         "sensitivity", "VR dual-norm sensitivity L0/m (add/remove) where replace-one needs 2 L0/m (GG-VR-SFW)",
         (_T_ALGS + "test_gg_vr_sfw.py", *_T_NONCONVEX), ()),
    _alg("alg-treefw-apriori-span", "vr_frank_wolfe.py",
         "out = np.minimum(D, D * (csum[t] - csum[t - span]))",
         "out = np.minimum(D, D * (csum[t] - csum[t - span + 1]))",
         "sensitivity", "a-priori distance bound sums the steps from t - 2^(k-j) + 1 (one step short)",
         (_T_ALGS + "test_vr_frank_wolfe.py", _T_ALGS + "test_gg_vr_sfw.py"), ()),
    _alg("alg-gg-naive-noise-reuse", "gg_vr_sfw.py",
         "        z = sigmas[t] * Z[t]\n", "        z = sigmas[t] * Z[t - 1]\n",
         "noise scale", "GG-VR-SFW naive step t uses the noise direction of step t - 1 (release 1 reuses release 0's)",
         (_T_ALGS + "test_gg_vr_sfw.py::test_gg_vr_sfw_naive_releases_carry_pairwise_distinct_noise",
          _T_ALGS + "test_gg_vr_sfw.py",
          _T_ALGS + "test_gg_vr_sfw.py"), ()),
    _alg("alg-gg-tree-batch-size", "gg_vr_sfw.py",
         "            sens_t = 2.0 * st.L1 * dist / sizes[j]\n", "            sens_t = 2.0 * st.L1 * dist / b\n",
         "sensitivity", "GG tree right-child sensitivity divided by the root batch b instead of b_j = b/2^j",
         (_T_ALGS + "test_gg_vr_sfw.py", _T_ALGS + "test_gg_vr_sfw.py"), ()),
    _alg("alg-n1-prox-noise-two", "nonconvex.py",
         "noise_std=2.0 * L0 * nu / Nc,", "noise_std=L0 * nu / Nc,",
         "sensitivity", "proximal subproblem noise for sensitivity L0/N (add/remove) instead of 2 L0/N",
         (_T_ALGS + "test_nonconvex.py"
                    "::test_proximal_weakly_convex_first_subproblem_replays_with_its_recorded_gaussian_noise",
          *_T_NONCONVEX, _CERT), ()),
    _alg("alg-n1-prox-shared-noise", "nonconvex.py",
         "g = mean_grad(y, batch) + bta * (y - x) + noise[k]", "g = mean_grad(y, batch) + bta * (y - x) + noise[0]",
         "noise scale", "proximal subproblem reuses its first Gaussian draw in all K inner steps",
         (_T_ALGS + "test_nonconvex.py"
                    "::test_proximal_weakly_convex_first_subproblem_replays_with_its_recorded_gaussian_noise",
          *_T_NONCONVEX), ()),
    _alg("alg-a1-y-ascent-sign", "private_smd_saddle.py",
         "G[:, 1, :dy] = -problem.grad_y(xt, yt, batch).mean(axis=1)",
         "G[:, 1, :dy] = problem.grad_y(xt, yt, batch).mean(axis=1)",
         "step size", "Algorithm 1's y player descends instead of ascending (sign of the mirror step)",
         (_T_ALGS + "test_private_smd_saddle.py",), ()),
    _alg("alg-a3-drawcap-own-step", "bias_reduced_saddle.py",
         "if self.used + count > self.cap:", "if self.used > self.cap:",
         "composition count", "Algorithm 3's draw cap admits a step without counting that step's own draws",
         (_T_ALGS + "test_bias_reduced_saddle.py", _CERT), ()),
    _alg("alg-a4-score-norm", "boosted_saddle.py",
         "r_i = problem.L0 * (lp_norm(X - x_hat, problem.p, axis=1)",
         "r_i = problem.L0 * (lp_norm(X - x_hat, 2.0, axis=1)",
         "sensitivity", "Algorithm 4's realized score range measures ||x - x^|| in l2 instead of the setup norm",
         (_T_ALGS + "test_boosted_saddle.py"
                    "::test_boosted_score_ranges_never_undercut_the_lipschitz_and_boundedness_bounds",
          _T_ALGS + "test_boosted_saddle.py", _CERT), ()),
    _alg("alg-a4-loss-bound", "boosted_saddle.py",
         "r_i = np.minimum(r_i, 2.0 * float(loss_bound))", "r_i = np.minimum(r_i, float(loss_bound))",
         "sensitivity", "Algorithm 4 caps the score range by M where two losses in [-M, M] differ by up to 2M",
         (_T_ALGS + "test_boosted_saddle.py"
                    "::test_boosted_score_ranges_never_undercut_the_lipschitz_and_boundedness_bounds",
          _T_ALGS + "test_boosted_saddle.py"), ()),
    _alg("alg-a4-split-overlap", "boosted_saddle.py",
         "    off = k * n_c\n", "    off = k * n_c - 1\n",
         "sensitivity", "Algorithm 4's first best-response part starts one record early (overlaps a candidate part)",
         (_T_ALGS + "test_boosted_saddle.py",), ()),
    _alg("alg-a5-lazy-count", "anytime_smd.py",
         "lazy = prm.K * (prm.n_resample - 1)", "lazy = prm.K * (prm.n_resample - 2)",
         "composition count", "Algorithm 5's ledger forgets one redraw cycle of K lazy draws",
         (_T_ALGS + "test_anytime_smd.py", _CERT), ()),
    _alg("alg-mwem-true-count", "mwem.py",
         "log_a = _mw_update(log_a, Q[j], mt, n)", "log_a = _mw_update(log_a, Q[j], true[j], n)",
         "dropped correction term", "MWEM's multiplicative-weights step uses the true count, not the measurement",
         (_T_ALGS + "test_mwem.py::test_mwem_one_round_is_the_hlm12_update", _T_ALGS + "test_mwem.py"), ()),
    _alg("alg-d1-laplace-l2-sensitivity", "mean_estimation.py",
         "scale = 2.0 * bound * d / (n * eps)", "scale = 2.0 * bound * math.sqrt(d) / (n * eps)",
         "sensitivity", "Laplace mean of [-B, B]^d calibrated to the l2 sensitivity 2 B sqrt(d)/n, not l1 2 B d/n",
         (_T_ALGS + "test_mean_estimation.py",), ()),
    _alg("alg-d1-gauss-replace-two", "mean_estimation.py",
         "    sens = 2.0 * bound * math.sqrt(d) / n\n    m = gaussian",
         "    sens = bound * math.sqrt(d) / n\n    m = gaussian",
         "sensitivity", "Gaussian mean with the add/remove sensitivity B sqrt(d)/n under replace-one",
         (_T_ALGS + "test_mean_estimation.py",), ()),
    _alg("alg-d2-central-range", "mean_estimation.py",
         "est = m + float(rng.laplace(0.0, 2.0 * c / (n * eps)))", "est = m + float(rng.laplace(0.0, c / (n * eps)))",
         "sensitivity", "central clipped mean with Laplace scale c/(n eps): the range [-c, c] has width 2c",
         (_T_ALGS + "test_mean_estimation.py",), ()),
    _alg("alg-z1-laplace-l2-sensitivity", "sparse.py",
         "scale, mult = 2.0 * L * math.sqrt(s) / (n * eps), math.nan", "scale, mult = 2.0 * L / (n * eps), math.nan",
         "sensitivity", "sparse Laplace mean calibrated to the l2 bound 2L/n instead of the l1 bound 2L sqrt(s)/n",
         (_T_ALGS + "test_sparse.py",), ()),
    _alg("alg-z1-cs-replace-two", "sparse.py",
         "sens = c * 2.0 * L / n", "sens = c * L / n",
         "sensitivity", "compressed-sensing sparse mean with sensitivity c L/n (add/remove) under replace-one",
         (_T_ALGS + "test_sparse.py::test_sparse_mean_cs_release_replays_with_noise_for_the_replace_one_sensitivity",
          _T_ALGS + "test_sparse.py"),
         ()),
    # geometry
    Mutant("geo-maurey-multinomial-order", _GEO + "sparsify.py",
           "counts[:, order] = rng.multinomial(K, prob[order], size=m)",
           "counts[:, order] = rng.multinomial(K, prob, size=m)",
           "geometry", "Maurey counts (K >= V) scattered with a permutation the probabilities were not given in",
           (_T_MAUREY, _T_GEO)),
    Mutant("geo-maurey-without-replacement", _GEO + "sparsify.py",
           "        idx = inverse_cdf_draws(prob, (m, K), rng)\n",
           "        idx = np.stack([rng.choice(v, size=K, replace=False, p=prob) for _ in range(m)])\n",
           "geometry", "Maurey sample (K < V) drawn without replacement: biased, not K i.i.d. exponential draws",
           (_T_MAUREY, _T_GEO)),
    Mutant("geo-center-radius-exponent", _GEO + "sets.py",
           "return self.radius * float(self.d) ** max(0.0, inv_s - inv_p)",
           "return self.radius * float(self.d) ** max(0.0, inv_p - inv_s)",
           "projection radius", "l_p ball radius in another norm with the equivalence exponent reversed",
           (_T_GEO,)),
    Mutant("geo-lp-lmo-exponent", _GEO + "sets.py",
           "    w = a ** (q - 1.0)\n", "    w = a ** (p - 1.0)\n",
           "geometry", "l_p-ball linear-minimization oracle with |g|^(p-1) where the dual exponent q belongs",
           (_T_GEO,)),
)

# ---------------------------------------------------------------------------------------------------------------
# Utility bugs the notebooks' claims must catch on their own (no unit test listed): an algorithm that returns its
# start point, that drops its variance reduction, or that runs with four times its noise. Each is private (the
# certificate stays true) and wrong only in value, so only a rate or learning claim can see it.
# ---------------------------------------------------------------------------------------------------------------
_CENTER = "np.asarray(problem.feasible_set.center(), dtype=np.float64)"
_UTILITY: tuple[Mutant, ...] = (
    _alg("util-polysfw-start-point", "poly_sfw.py",
         "    return Result(x=x, trace=tr, params=params, ledger=ledger, info=info)",
         f"    return Result(x={_CENTER}, trace=tr, params=params, ledger=ledger, info=info)",
         "learns nothing", "Poly-SFW returns its start point (the centre of the polytope) instead of x_{T+1}",
         (), ("05",)),
    _alg("util-treefw-start-point", "vr_frank_wolfe.py",
         '    return Result(x=out["x"], trace=tr,', f"    return Result(x={_CENTER}, trace=tr,",
         "learns nothing", "tree Frank-Wolfe returns its start point instead of its last iterate", (), ("05",)),
    _alg("util-noisysgd-start-point", "noisy_sgd.py",
         "return Result(x=x_sum / T, trace=tr,",
         "return Result(x=np.asarray(fset.center(), dtype=np.float64), trace=tr,",
         "learns nothing", "noisy SGD returns its start point instead of the iterate average", (), ("05",)),
    _alg("util-ggvr-start-point", "gg_vr_sfw.py",
         "    return Result(x=x, trace=tr, params=params, ledger=ledger, info=info)",
         f"    return Result(x={_CENTER}, trace=tr, params=params, ledger=ledger, info=info)",
         "learns nothing", "GG-VR-SFW returns its start point instead of its last iterate", (), ("06",)),
    _alg("util-alg1-start-point", "private_smd_saddle.py",
         "    return Result(x=x[0], y=y[0], trace=draws,",
         "    return Result(x=np.full_like(x[0], 1.0 / x[0].size), y=np.full_like(y[0], 1.0 / y[0].size), trace=draws,",
         "learns nothing", "Algorithm 1 returns its start point (the uniform pair) instead of the averaged iterates",
         (), ("09",)),
    _alg("util-alg5-start-point", "anytime_smd.py",
         "    return Result(x=xs[0], trace=tr,", "    return Result(x=np.full_like(xs[0], 1.0 / xs[0].size), trace=tr,",
         "learns nothing", "Algorithm 5 returns its start point (uniform weights) instead of its anytime average",
         (), ("12",)),
    _alg("util-noisysgd-4x-noise", "noisy_sgd.py",
         "    sigma, eta = params.sigma * noise_mult, params.step_size",
         "    sigma, eta = 4.0 * params.sigma * noise_mult, params.step_size",
         "noise scale", "noisy SGD draws four times its calibrated noise (private, and wrong in value)", (), ("05",)),
    _alg("util-polysfw-4x-noise", "poly_sfw.py",
         "    scales = (2.0 / params.eps0) * noise_mult * sens", "    scales = (8.0 / params.eps0) * noise_mult * sens",
         "noise scale", "Poly-SFW's report-noisy-min with four times its Laplace scale", (), ("05",)),
)

MUTANTS: tuple[Mutant, ...] = _MECHANISMS + _ACCOUNTING + _AUDITS + _GEOMETRY + _ALGORITHMS + _RED_TEAM + _UTILITY


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
