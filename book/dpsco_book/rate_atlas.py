r"""The rate atlas: every algorithm of the book on shared problems, with its predicted exponent (notebook 17).

A registry of :class:`AtlasEntry` objects. Each entry fixes one algorithm (a ``run_<name>`` of
:mod:`dpsco_lib.algorithms`), one problem (a fixed instance or a family of instances), a privacy level, a grid of
sample sizes ``n``, the exponent (or range of exponents) that the algorithm's theorem predicts for the measured
error in ``n`` over that grid, and a *runner* ``runner(n, d, rng, member) -> dict`` returning the exact error of
one run with its privacy certificate. The notebook stays glue: it sweeps :func:`atlas_task` over the entries
with :func:`~dpsco_lib.experiments.run_sweep`, then :func:`atlas_table` tests each entry's declared claim
(:func:`rate_claim`, a :class:`~dpsco_lib.experiments.claims.RateClaim` fixed from the grid before the run, with
the learns-nothing control, the records' ``trivial`` errors, and the wrong-regime control, the entry's
``neighbour``) and :func:`atlas_verdict` records the outcomes (:meth:`~dpsco_lib.experiments.Verdict.claim`).

Privacy. Every private entry runs at ``epsilon <= 2`` with ``delta = n^-1.1``
(:func:`~dpsco_book.privacy_rule.delta_for_n`) under the tightest accountant (``"best"``). All algorithms are
private under **replace-one** adjacency except DP-SGD, whose Poisson-subsampled analysis is **add/remove**: its
entry is calibrated for the replace-one target through the explicit group-of-two conversion
(:func:`~dpsco_book.privacy_rule.replace_one_target`) and certified through it
(:func:`~dpsco_book.privacy_rule.replace_one_certificate`); its native add/remove certificate is
reported as well. The relation is part of every certificate the atlas prints.

Problems (all with exact population objectives, so every error below is exact):

* ``simplex LS`` / ``l1-ball LS``: :func:`~dpsco_lib.problems.least_squares.hard_least_squares` with ``p = 1``,
  ``c = 2`` (``L0 = 3``, ``L1 = 1``), minimizer the vertex ``e_1`` (notebooks 03 and 12);
* ``hard linear``: the hard linear family :func:`~dpsco_lib.problems.hard_linear.hard_linear` on the l1 ball over
  the fixed lattice :data:`GAMMA_LATTICE` (``gamma = 2^-k``, two decades, independent of ``n`` and ``d``;
  notebook 05, :mod:`~dpsco_book.frank_wolfe_rates`): the worst case over the members is claimed;
* ``fingerprint lp``: the lower-bound construction of result F3 on the ``l_1.5`` ball, members
  ``alpha = 2^-k`` (two decades; notebook 06, :mod:`~dpsco_book.lp_frank_wolfe_lower_bound`), worst case claimed;
* ``matrix game``: :func:`~dpsco_lib.problems.games.random_bilinear_game` on simplices with rank-one Rademacher
  noise (notebook 09); closed-form population gap.

Predictions in ``n`` (each a claim, two-sided, with the nearest neighbouring regime's exponent as the wrong-regime
control and a tolerance of at most half the gap; a bound that is a sum of terms with different exponents, or
carries logarithmic factors, has a local slope between them over a finite grid):

- S1 ``run_smd``: ``L0 sqrt(2 ln d / n)``: -1/2 (neighbour -1/3).
- S2 ``run_noisy_sgd``, D4 ``run_dp_sgd``: ``L D2 (1/sqrt n + sqrt(d ln 1/delta)/(eps n))``: [-1, -1/2]
  (neighbour -1/3).
- F1 ``run_poly_sfw``: worst case over the family, the local slope of the privacy term
  (:func:`~dpsco_book.frank_wolfe_rates.poly_sfw_exponent_range`); reported, not claimed (the range contains
  the neighbouring -1/3 over an affordable grid).
- F2 ``run_private_vr_frank_wolfe``: worst case over the family, [-2/3, -1/2] (neighbour -1/3).
- F3 ``run_gg_vr_sfw`` (tree): worst case over the family, the private term ``n^-1`` times the ``delta_n``
  factor of the calibration (:func:`~dpsco_book.lp_frank_wolfe_lower_bound.private_rate_range`; neighbour -3/4).
- A1 ``run_private_smd_saddle`` (``L2 = 0``): ``sqrt(log d/n) + rho^{1/2}``: from -1/2 to the local slope of
  ``rho^{1/2}`` (``rho = log^{3/2} d sqrt(log 1/delta_n)/(n eps)``; neighbour -2/5).
- A3 ``run_bias_reduced_smd_saddle``: Thm 3.14's bound with this library's constants
  (:func:`~dpsco_lib.algorithms.bias_reduced_saddle.alg3_theory_params`): from -1/2 to its local slope
  (neighbour -1/3).
- A4 ``run_boosted_saddle``: A3's bound on the candidates' records, same range; reported, not claimed (its
  two-point grid cannot reject the neighbouring -1/3 with the required power).
- A5 ``run_anytime_smd_sco`` (second-order regime), worst case over the planted family of notebook 12: from -1/2
  to the local slope of Thm 4.2's bound model
  (:func:`~dpsco_lib.algorithms.anytime_smd.alg5_theory_params`; neighbour -2/5).

Exponents in ``d`` at fixed ``n`` (:func:`d_claim`): polylogarithmic methods (S1, A1) the local slopes of
``ln^k d``, ``1/4 <= k <= 1`` (neighbour 1/2); Euclidean ones (S2, D4) [1/2, 1] (neighbour 0).

An entry whose median error at the largest ``n`` is not below half its trivial error reports the ``n`` it needs:
from its theorem's bound with constants (:func:`needed_n_bound`) and from the measured curve
(:func:`needed_n_extrapolated`); it is tested by its claim like every other entry, never asserted to fail.

The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpsco_book.privacy_rule import DELTA_RULE, delta_for_n, replace_one_certificate, replace_one_target
from dpsco_lib._validation import check_int, check_positive, check_rng
from dpsco_lib.experiments.analysis import Verdict, fit_loglog_slope
from dpsco_lib.experiments.claims import RateClaim, required_power

__all__ = [
    "ATLAS",
    "AtlasEntry",
    "PROBLEMS",
    "atlas_grid",
    "atlas_table",
    "atlas_task",
    "atlas_verdict",
    "GAMMA_LATTICE",
    "d_claim",
    "polylog_range",
    "rate_claim",
    "d_exponent",
    "d_table",
    "entry_row",
    "get_entry",
    "needed_n_bound",
    "plot_atlas",
    "table_rows",
    "needed_n_extrapolated",
    "run_on_shared_problem",
]

#: Seed of the fixed game instances (the task's rng only draws the data and drives the algorithm).
INSTANCE_SEED = 20261122
#: Adjacency relations.
REPLACE_ONE = "replace-one"
#: The fixed hardness lattice of the hard linear families (S1, F1, F2): ``gamma = 2^-k``, ``k = 0, ..., 7``, from 1
#: down to 1/128 (2.1 decades), the same at every ``n`` and ``d``. At each ``n`` the worst member is the one at the
#: scale of the theorem's bound; the lattice does not move with the bound, so an output that learns nothing (error
#: ``gamma`` on member ``gamma``) has the constant worst case 1 and cannot pass a rate claim.
GAMMA_LATTICE: tuple[float, ...] = tuple(2.0 ** -k for k in range(8))
#: The fingerprinting family of F3: ``alpha = 2^-k``, ``k = 0, ..., 7`` (1 down to 1/128, 2.1 decades).
ALPHA_LATTICE: tuple[float, ...] = tuple(2.0 ** -k for k in range(8))

Runner = Callable[..., dict[str, float]]
Prediction = Callable[[Sequence[int]], tuple[float, float]]


@dataclass(frozen=True)
class AtlasEntry:
    """One row of the atlas: an algorithm on a shared problem with its predicted exponent in ``n``.

    Attributes
    ----------
    key : str
        Unique short name, e.g. ``"S1 SMD"``.
    spec : str
        Catalogue ID of the theorem (``"S1"``, ``"F1"``, ...).
    algorithm : str
        Name of the library function run.
    problem : str
        The shared problem and its size.
    measure : str
        ``"excess risk"`` or ``"duality gap"``.
    epsilon : float or None
        Target epsilon (None: non-private); ``delta = n^-1.1``.
    d : int
        Dimension of the sweep in ``n`` (for games: ``d_x = d_y = d``).
    n_smoke, n_paper : tuple of int
        Sample sizes of the two profiles.
    prediction : tuple of float or callable
        ``(lo, hi)``, the predicted exponent range in ``n``, or ``ns -> (lo, hi)`` when it depends on the grid
        (local slope of the bound with its logarithms and its ``delta = n^-1.1``).
    rate : str
        The theorem's rate, as text.
    regime : str
        Which term governs this regime and why the prediction is what it is on this instance.
    runner : callable
        ``runner(n, d, rng, member) -> {"value", "eps_certified", "trivial", ...}``.
    neighbour : float or None
        Exponent in ``n`` of the nearest neighbouring regime (the wrong-regime control of the entry's
        :class:`~dpsco_lib.experiments.claims.RateClaim`, justified in ``regime``); None: the entry's exponent is
        reported, not claimed (its prediction cannot be told apart from a neighbour over an affordable grid).
    tol : tuple of float
        Exponent tolerance ``(smoke, paper)`` of the claim, frozen before the run: at most half the gap between
        the prediction and ``neighbour`` (:class:`~dpsco_lib.experiments.claims.RateClaim` refuses a wider one).
    statistic : str
        Per-cell statistic of the claim: ``"mean"`` (a bound on the expected error) or ``"median"`` (a bound that
        holds with constant probability).
    cite : str
        The paper and result of the claim.
    paper_only : bool
        The entry runs at the paper profile only (its smoke grid is empty): smoke cannot afford the replicates
        its claim needs.
    relation : str
        Adjacency relation of the certificate column ("" when non-private).
    family : tuple of float
        Members of an instance family (empty: one fixed instance); the worst case over them is fitted.
    family_name : str
        What a member is (``"mult"``, ``"alpha"``).
    rep_factor : tuple of int
        ``(smoke, paper)``: replicates of this entry per ``n`` (and member) are ``rep_factor`` times the notebook's
        (coverage of a claim with a narrow window at the smoke profile's few replicates, and for heavy-tailed
        or discrete-valued errors, whose bootstrap intervals are too narrow with few replicates).
    needed_n : callable, optional
        ``() -> n`` at which the theorem's bound with constants reaches half the trivial error (median).
    label : str or None
        Existing theorem label of the book (``"thm-S1"``), if any.
    d_smoke, d_paper, n_for_d, d_shape, d_shape_text, d_range, d_runner, d_problem
        The sweep in ``d`` at ``n_for_d`` (empty grids: none); ``d_shape`` is the predicted polylogarithmic
        ``d``-dependence (:func:`d_exponent`), ``d_range`` the exponents of a polynomial one.
    d_neighbour, d_tol
        Exponent in ``d`` of the neighbouring regime (polylogarithmic: the polynomial ``1/2``; polynomial: the
        polylogarithmic ``0``) and the tolerance of the claim in ``d`` (at most half the gap).
    d_claim_smoke : bool
        Whether the claim in ``d`` is tested at the smoke profile (False: paper only; the sweep still runs at smoke
        for the figure and the ordering check).
    """

    key: str
    spec: str
    algorithm: str
    problem: str
    measure: str
    epsilon: float | None
    d: int
    n_smoke: tuple[int, ...]
    n_paper: tuple[int, ...]
    prediction: tuple[float, float] | Prediction
    rate: str
    regime: str
    runner: Runner
    neighbour: float | None = None
    tol: tuple[float, float] = (0.08, 0.08)
    statistic: str = "mean"
    cite: str = ""
    paper_only: bool = False
    relation: str = REPLACE_ONE
    family: tuple[float, ...] = ()
    family_name: str = ""
    rep_factor: tuple[int, int] = (1, 1)
    needed_n: Callable[[], float] | None = None
    label: str | None = None
    d_smoke: tuple[int, ...] = ()
    d_paper: tuple[int, ...] = ()
    n_for_d: int = 0
    d_shape: Callable[[float], float] | None = None
    d_shape_text: str = ""
    d_range: tuple[float, float] | None = None
    d_runner: Runner | None = None
    d_problem: str = ""
    d_neighbour: float | None = None
    d_tol: float = 0.15
    d_claim_smoke: bool = True

    @property
    def private(self) -> bool:
        return self.epsilon is not None

    def n_grid(self, profile: str) -> tuple[int, ...]:
        """The ``n`` grid of a profile (``"smoke"`` or ``"paper"``; empty at smoke for a paper-only entry)."""
        if profile == "smoke":
            return () if self.paper_only else self.n_smoke
        return self.n_paper

    def d_grid(self, profile: str) -> tuple[int, ...]:
        """The ``d`` grid of a profile (empty when the entry has no sweep in ``d``, or at smoke when paper-only)."""
        if profile == "smoke":
            return () if self.paper_only else self.d_smoke
        return self.d_paper

    def predicted(self, ns: Sequence[int]) -> tuple[float, float]:
        """The predicted exponent range ``(lo, hi)`` over the grid ``ns``."""
        lo, hi = self.prediction(ns) if callable(self.prediction) else self.prediction
        return float(min(lo, hi)), float(max(lo, hi))

    def reps(self, profile: str) -> int:
        """Replicate factor of a profile."""
        return self.rep_factor[0] if profile == "smoke" else self.rep_factor[1]

    def tolerance(self, profile: str) -> float:
        """Exponent tolerance of a profile."""
        return self.tol[0] if profile == "smoke" else self.tol[1]


# ---------------------------------------------------------------------------------------------------------
# Runners (module level, so they pickle to joblib workers)
# ---------------------------------------------------------------------------------------------------------
def _ls(p: float, d: int, set_kind: str = "simplex", c: float = 2.0) -> Any:
    from dpsco_lib.problems.least_squares import hard_least_squares

    return hard_least_squares(p, d, c=c, set_kind=set_kind)


def _game(d: int) -> Any:
    from dpsco_lib.problems.games import random_bilinear_game

    return random_bilinear_game(d, d, np.random.default_rng([INSTANCE_SEED, d, len("bilinear")]))


def _rect_game(d: int) -> Any:
    """The d x 10 matrix game of notebook 09's sweep in d."""
    from dpsco_lib.problems.games import random_bilinear_game

    return random_bilinear_game(d, 10, np.random.default_rng([INSTANCE_SEED, d, 99]))


#: The shared fixed instances: name -> d -> instance.
PROBLEMS: dict[str, Callable[[int], Any]] = {
    "simplex LS": lambda d: _ls(1.0, d, "simplex"),
    "l1-ball LS": lambda d: _ls(1.0, d, "l1ball"),
    "matrix game": _game,
    "matrix game d x 10": _rect_game,
}


def _error_and_trivial(problem: Any, res: Any) -> tuple[float, float]:
    """Exact excess population risk (convex programs) or duality gap (games), and that of the start point."""
    if getattr(problem, "dy", None) is not None and res.y is not None:
        uniform = (np.full(problem.dx, 1.0 / problem.dx), np.full(problem.dy, 1.0 / problem.dy))
        return float(problem.duality_gap(res.x, res.y)), float(problem.duality_gap(*uniform))
    return float(problem.excess_risk(res.x)), float(problem.excess_risk(problem.feasible_set.center()))


def _sgd_params(n: int, d: int, epsilon: float, delta: float) -> dict[str, Any]:
    from dpsco_lib.algorithms.noisy_sgd import l2_constants, noisy_sgd_theory_params

    L0_2, D_2 = l2_constants(_ls(1.0, d, "l1ball"))
    prm = noisy_sgd_theory_params(n, d=d, epsilon=epsilon, delta=delta, L0_2=L0_2, D_2=D_2)
    return prm.as_dict() if hasattr(prm, "as_dict") else dict(prm)


def dp_sgd_hyper(n: int, d: int, epsilon: float) -> dict[str, Any]:
    """DP-SGD (D4) with the BFTT19 steps, batch size and step size of S2, Poisson rate ``q = b/n``, calibrated
    (smallest noise multiplier, accountant ``"best"``) for the add/remove target whose group-of-two conversion is
    the replace-one target ``(epsilon, n^-1.1)``."""
    eps_ar, delta_ar = replace_one_target(epsilon, delta_for_n(n))
    prm = _sgd_params(n, d, epsilon, delta_for_n(n))
    return {"epsilon": eps_ar, "delta": delta_ar, "sampling_rate": prm["batch_size"] / n, "steps": prm["T"],
            "clip": prm["L0_2"], "step_size": prm["step_size"]}


def run_on_shared_problem(n: int, d: int, rng: np.random.Generator, member: float = 0.0, *, algorithm: str,
                          problem: str, epsilon: float | None, hyper: tuple[tuple[str, Any], ...] = (),
                          hyper_fn: Callable[[int, int, float], dict[str, Any]] | None = None) -> dict[str, float]:
    """Run registered ``algorithm`` once on ``n`` fresh records of the fixed instance ``problem`` in dimension ``d``.

    ``member`` is unused (fixed instance). Returns ``value`` (the exact error), ``eps_certified`` (replace-one
    certificate at ``delta = n^-1.1`` by accountant ``"best"``; NaN when non-private) and ``trivial`` (the error of
    the start point). ``hyper`` are fixed keyword arguments; ``hyper_fn(n, d, epsilon)`` computes the privacy and
    size-dependent ones of an add/remove algorithm (DP-SGD), whose ledger is then certified through the
    group-of-two conversion (``eps_add_remove`` reports its native certificate at its own ``delta``).
    """
    from dpsco_lib.algorithms.registry import get_algorithm

    rec = get_algorithm(algorithm)
    prob = PROBLEMS[problem](d)
    delta = delta_for_n(n)
    kwargs: dict[str, Any] = dict(hyper)
    if hyper_fn is not None:
        kwargs.update(hyper_fn(n, d, epsilon))  # type: ignore[arg-type]
    elif rec.private:
        kwargs.update(epsilon=epsilon, delta=delta)
    res = rec.runner(prob, prob.sample(n, rng), rng=rng, **kwargs)
    value, trivial = _error_and_trivial(prob, res)
    out = {"value": value, "trivial": trivial, "eps_certified": math.nan}
    if res.ledger is not None and hyper_fn is not None:
        out["eps_certified"] = replace_one_certificate(res, delta)
        out["eps_add_remove"] = float(res.certified_epsilon(kwargs["delta"]))
    elif res.ledger is not None:
        out["eps_certified"] = float(res.certified_epsilon(delta))
    return out


def run_hard_linear(n: int, d: int, rng: np.random.Generator, member: float = 1.0, *, alg: str,
                    epsilon: float) -> dict[str, float]:
    """One run of ``alg`` (``"poly_sfw"`` or ``"tree_fw"``) on the hard linear family member ``gamma = member`` (a
    point of :data:`GAMMA_LATTICE`, independent of ``n`` and ``d``;
    :func:`~dpsco_book.frank_wolfe_rates.hard_linear_task`, ``delta = n^-1.1``)."""
    from dpsco_book.frank_wolfe_rates import hard_linear_task

    out = hard_linear_task(rng=rng, alg=alg, n=n, d=d, eps=epsilon, gamma=float(member))
    return {"value": out["excess"], "trivial": out["trivial"], "eps_certified": out["eps_certified"]}


def run_smd_family(n: int, d: int, rng: np.random.Generator, member: float = 1.0) -> dict[str, float]:
    """One run of SMD (non-private) on the hard linear family member ``gamma = member`` (a point of
    :data:`GAMMA_LATTICE`, independent of ``n`` and ``d``): a Le Cam family for the l1 ball, whose worst member at
    each ``n`` sits at the scale of Thm S1's bound ``sqrt(2 ln(2d)/n)`` (``L0 = 1``, ``|V| = 2d``)."""
    from dpsco_lib.algorithms.smd import run_smd
    from dpsco_lib.problems.hard_linear import hard_linear

    prob = hard_linear(d, min(1.0, float(member)))
    res = run_smd(prob, prob.sample(n, rng), rng=rng)
    return {"value": max(float(prob.excess_risk(res.x)), 1e-12), "trivial": float(prob.trivial_error),
            "eps_certified": math.nan}


def run_fingerprint_lp(n: int, d: int, rng: np.random.Generator, member: float = 1.0, *,
                       epsilon: float) -> dict[str, float]:
    """One run of GG-VR-SFW (tree) on the F3 lower-bound construction with ``alpha = member`` on the
    ``l_1.5`` ball (:func:`~dpsco_book.lp_frank_wolfe_lower_bound.f3_family_run`, ``delta = n^-1.1``)."""
    from dpsco_book.lp_frank_wolfe_lower_bound import f3_family_run

    out = f3_family_run(rng=rng, variant="tree", n=n, d=d, p=1.5, alpha=member, epsilon=epsilon)
    return {"value": out["excess"], "trivial": out["trivial"], "eps_certified": out["certified_eps"]}


def run_a5_planted(n: int, d: int, rng: np.random.Generator, member: float = 1.0, *,
                   epsilon: float) -> dict[str, float]:
    """One run of Algorithm 5 (second-order regime) on the planted linear family member with margin ``member``
    (:func:`~dpsco_book.private_smd_rates.a5_declared`, notebook 12), ``delta = n^-1.1``."""
    from dpsco_book.private_smd_rates import a5_declared
    from dpsco_lib.algorithms.anytime_smd import run_anytime_smd_sco

    prob = a5_declared("second_order", d, member)
    delta = delta_for_n(n)
    res = run_anytime_smd_sco(prob, prob.sample(n, rng), epsilon=epsilon, delta=delta, rng=rng,
                              regime="second_order")
    return {"value": max(float(prob.excess_risk(res.x)), 1e-12), "trivial": float(prob.trivial_excess()),
            "eps_certified": float(res.ledger.epsilon(delta))}


def _runner(algorithm: str, problem: str, epsilon: float | None, **kw: Any) -> Runner:
    """A picklable runner ``(n, d, rng, member) -> dict`` of :func:`run_on_shared_problem`."""
    return functools.partial(run_on_shared_problem, algorithm=algorithm, problem=problem, epsilon=epsilon, **kw)


# ---------------------------------------------------------------------------------------------------------
# Predictions (local slopes of the theorems' bounds over a grid) and the n an entry needs
# ---------------------------------------------------------------------------------------------------------
def _slope(ns: Sequence[int], values: Sequence[float]) -> float:
    return float(np.polyfit(np.log(np.asarray(ns, float)), np.log(np.asarray(values, float)), 1)[0])


def _a1_range(ns: Sequence[int], *, d: int, epsilon: float) -> tuple[float, float]:
    """From -1/2 to the local slope of ``rho^{1/2}``, ``rho = log^{3/2} d sqrt(log 1/delta_n)/(n eps)``."""
    rho = [math.log(d) ** 1.5 * math.sqrt(math.log(1.0 / delta_for_n(n))) / (n * epsilon) for n in ns]
    return -0.5, _slope(ns, np.sqrt(rho))


def _game_constants() -> tuple[float, float, float]:
    g = _game(20)
    return float(g.L0), float(g.L1), float(g.L2)


def a3_bound(n: int, epsilon: float = 1.0) -> float:
    """Thm 3.14's bound on the expected gap of Algorithm 3 on the 20 x 20 matrix game, ``delta = n^-1.1``."""
    from dpsco_lib.algorithms.bias_reduced_saddle import alg3_theory_params

    return float(alg3_theory_params(n, 20, epsilon, delta_for_n(n), *_game_constants()).bound)


def a4_bound(n: int, epsilon: float = 1.0) -> float:
    """High-probability gap bound of Algorithm 4 (Thm 3.20) on the same game: each candidate has gap at most twice
    A3's expected-gap bound on its ``n_candidate`` records with probability >= 1/2 (Markov), and the private
    selection adds at most twice the Hoeffding and selection terms of :func:`alg4_theory_params`."""
    from dpsco_lib.algorithms.boosted_saddle import alg4_theory_params

    prm = alg4_theory_params(n, epsilon, _game_constants()[0])
    return 2.0 * a3_bound(int(prm.n_candidate), epsilon) + 2.0 * (prm.hoeffding_term + prm.selection_term)


def a5_bound(n: int, epsilon: float = 1.0) -> float:
    """Thm 4.2's bound model of Algorithm 5 on the planted linear family (d = 10, second-order regime, the
    declared ``L0 = 3/2``, ``L1 = L2 = 0.15`` of :func:`~dpsco_book.private_smd_rates.a5_declared`)."""
    from dpsco_book.private_smd_rates import a5_declared
    from dpsco_lib.algorithms.anytime_smd import alg5_theory_params

    p = a5_declared("second_order", 10, 1.0)
    return float(alg5_theory_params(n, n_vertices=10, epsilon=epsilon, delta=delta_for_n(n), L0=p.L0, L1=p.L1,
                                    L2=p.L2, regime="second_order").bound)


def _bound_range(bound: Callable[[int], float]) -> Prediction:
    def pred(ns: Sequence[int]) -> tuple[float, float]:
        return -0.5, _slope(ns, [bound(int(n)) for n in ns])
    return pred


def needed_n_bound(bound: Callable[[int], float], target: float, *, n_max: float = 1e10) -> float:
    """Smallest ``n`` (to 2%) with ``bound(n) <= target`` (bisection on ``log n``; the bounds decrease in ``n``);
    ``inf`` if not reached by ``n_max``."""
    target = check_positive(target, "target")
    lo, hi = 1000.0, float(n_max)
    if bound(int(hi)) > target:
        return math.inf
    if bound(int(lo)) <= target:
        return lo
    while hi / lo > 1.02:
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if bound(int(mid)) > target else (lo, mid)
    return hi


def needed_n_extrapolated(n_last: float, ratio_last: float, exponent: float, target: float = 0.5) -> float:
    """``n`` at which the measured median error / trivial reaches ``target``, extrapolated from ``(n_last,
    ratio_last)`` along ``n^exponent`` (``exponent < 0``)."""
    if not exponent < 0:
        return math.inf
    if ratio_last <= target:
        return float(n_last)
    log_n = math.log(n_last) + math.log(target / ratio_last) / exponent
    return math.exp(log_n) if log_n < 700 else math.inf


def _trivial_game() -> float:
    g = _game(20)
    return float(g.duality_gap(np.full(20, 0.05), np.full(20, 0.05)))


def _a3_needed() -> float:
    """Markov: median <= 2 E Gap, so E Gap <= trivial/4 puts the median below trivial/2."""
    return needed_n_bound(a3_bound, _trivial_game() / 4)


def _a4_needed() -> float:
    """A4's bound holds with probability 1 - beta >= 1/2, so bound <= trivial/2 puts the median below it."""
    return needed_n_bound(a4_bound, _trivial_game() / 2)


def _f1_range(ns: Sequence[int]) -> tuple[float, float]:
    from dpsco_book.frank_wolfe_rates import poly_sfw_exponent_range

    return poly_sfw_exponent_range(ns, d=100, eps=2.0)


def _f3_range(ns: Sequence[int]) -> tuple[float, float]:
    from dpsco_book.lp_frank_wolfe_lower_bound import private_rate_range

    return private_rate_range(ns, 1.0, 1.0, kappa=2.0)

# ---------------------------------------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------------------------------------
_D_SGD = (40, 80)
_SGD_REGIME = ("both terms matter: the l2 constants of an l1 problem (L = sqrt(d) L0, D2 = 2) at eps = 1; "
               "Sigma = I makes the instance strongly convex, which the measured range must still fit. Neighbour: "
               "-1/3, the slowest rate of the neighbouring private regimes (a Frank-Wolfe or first-order smooth "
               "saddle method pays (1/(eps n))^(1/3)); in d the neighbour is the polylogarithmic 0")
_F_FAMILY = ("worst case over the hard linear family on the fixed lattice gamma = 2^-k (k = 0..7; 1 down to 1/128, "
             "the same at every n and d): at each n the worst member is the one at the scale where the algorithm "
             "cannot tell the optimal vertex apart (notebook 05)")
_A_SECOND = ("; neighbour -2/5: the second-order smooth regime of Algorithm 1, rho^(2/5) with rho ~ 1/n, the next "
             "regime of the same theorem")

ATLAS: tuple[AtlasEntry, ...] = (
    AtlasEntry(
        key="S1 SMD", spec="S1", algorithm="run_smd", problem="hard linear family, l1 ball, d = 200 (non-private)",
        measure="excess risk", epsilon=None, d=200, n_smoke=(256, 1024, 4096), n_paper=(256, 1024, 4096, 16_384),
        prediction=(-0.5, -0.5), relation="", family=GAMMA_LATTICE, family_name="gamma",
        rate="L0 sqrt(2 ln|V| / n)", label="thm-S1", neighbour=-1.0 / 3.0, tol=(0.08, 0.08), rep_factor=(2, 1),
        cite="NY83, JNLS09 (SMD, Thm S1)",
        regime="non-private; worst case over the fixed lattice gamma = 2^-k (k = 0..7) of the hard linear family "
               "(a Le Cam family): the worst member at n has gamma ~ sqrt(2 ln(2d)/n). Neighbour -1/3: the "
               "exponent of the private Frank-Wolfe and first-order smooth regimes, the nearest slower rate",
        runner=run_smd_family, d_runner=_runner("S1 SMD", "simplex LS", None),
        d_smoke=(10, 100, 1000), d_paper=(10, 100, 1000, 10_000), n_for_d=1024,
        d_shape=lambda d: math.sqrt(math.log(d)), d_shape_text="sqrt(ln d)", d_problem="simplex LS, n = 1024",
        d_neighbour=0.5, d_tol=0.12,
    ),
    AtlasEntry(
        key="S2 noisy SGD", spec="S2", algorithm="run_noisy_sgd", problem="l1-ball LS, d = 10",
        measure="excess risk", epsilon=1.0, d=10, n_smoke=(1000, 4000, 16_000),
        n_paper=(1000, 2000, 4000, 8000, 16_000), prediction=(-1.0, -0.5), neighbour=-1.0 / 3.0, tol=(0.08, 0.08),
        rate="L D2 (1/sqrt n + sqrt(d ln(1/delta))/(eps n))", label="thm-S2", regime=_SGD_REGIME,
        cite="BFTT19 (noisy SGD, Thm S2)", runner=_runner("S2 noisy SGD", "l1-ball LS", 1.0),
        d_smoke=_D_SGD, d_paper=_D_SGD, n_for_d=16_000, d_range=(0.5, 1.0), d_neighbour=0.0, d_tol=0.25,
        d_claim_smoke=False,
        d_shape_text="sqrt(d) (statistical, L = sqrt(d) L0) to d (private term)", d_problem="l1-ball LS, n = 16000",
    ),
    AtlasEntry(
        key="D4 DP-SGD", spec="D4", algorithm="run_dp_sgd", problem="l1-ball LS, d = 10",
        measure="excess risk", epsilon=1.0, d=10, n_smoke=(1000, 4000, 16_000),
        n_paper=(1000, 4000, 16_000), prediction=(-1.0, -0.5), neighbour=-1.0 / 3.0, tol=(0.08, 0.08),
        rate="as S2 (Poisson subsampling)", label="thm-D4", cite="ACGMMTZ16, BFTT19 (DP-SGD, Thm D4)",
        regime="as S2 (same T, batch and step size; same neighbours); add/remove calibrated for the replace-one "
               "target", paper_only=True,
        relation="replace-one (add/remove x group of 2)",
        runner=_runner("D4 DP-SGD", "l1-ball LS", 1.0, hyper_fn=dp_sgd_hyper),
        d_smoke=_D_SGD, d_paper=_D_SGD, n_for_d=16_000, d_range=(0.5, 1.0), d_neighbour=0.0, d_tol=0.25,
        d_claim_smoke=False,
        d_shape_text="sqrt(d) (statistical, L = sqrt(d) L0) to d (private term)", d_problem="l1-ball LS, n = 16000",
    ),
    AtlasEntry(
        key="F1 Poly-SFW", spec="F1", algorithm="run_poly_sfw", problem="hard linear family, l1 ball, d = 100",
        measure="excess risk", epsilon=2.0, d=100, n_smoke=(20_000, 80_000), n_paper=(20_000, 80_000),
        prediction=_f1_range, family=GAMMA_LATTICE, family_name="gamma", paper_only=True,
        rate="(L1 D^2 + L0 D) ln|V| ln(n/ln|V|) sqrt(ln 1/delta)/(eps sqrt n)", label="thm-F1",
        cite="BGN21 (Poly-SFW, Thm F1)",
        regime=_F_FAMILY + "; the privacy term's local slope under the run's calibration. Reported, not claimed: "
               "over an affordable grid the local slope of ln(n) sqrt(ln 1/delta_n)/sqrt(n) reaches -0.31, so the "
               "prediction contains the neighbouring -1/3, and at d = 100 the bound is above the trivial error "
               "up to n ~ 10^6",
        runner=functools.partial(run_hard_linear, alg="poly_sfw", epsilon=2.0),
    ),
    AtlasEntry(
        key="F2 tree FW", spec="F2", algorithm="run_private_vr_frank_wolfe",
        problem="hard linear family, l1 ball, d = 10", measure="excess risk", epsilon=1.0, d=10,
        n_smoke=(10_000, 30_000, 100_000), n_paper=(10_000, 30_000, 100_000), prediction=(-2.0 / 3.0, -0.5),
        family=GAMMA_LATTICE, family_name="gamma", neighbour=-1.0 / 3.0, tol=(0.08, 0.08),
        rate="(L0 D + L1 D^2) sqrt(ln|V|/n) ln n + (L0 D + L1 D^2) (ln|V| ln^2 n ln(1/delta)/(eps n))^(2/3)",
        cite="AFKT21 (tree-structured private Frank-Wolfe, F2)",
        regime=_F_FAMILY + "; both terms matter. Neighbour -1/3: the private term of a one-pass Frank-Wolfe "
               "without the tree's variance reduction",
        runner=functools.partial(run_hard_linear, alg="tree_fw", epsilon=1.0),
    ),
    AtlasEntry(
        key="F3 GG-VR-SFW tree", spec="F3", algorithm="run_gg_vr_sfw", problem="fingerprint lp, l_1.5 ball, d = 400",
        measure="excess risk", epsilon=1.0, d=400, n_smoke=(2000, 8000), n_paper=(2000, 4000, 8000),
        prediction=_f3_range, family=ALPHA_LATTICE, family_name="alpha", neighbour=-0.75, tol=(0.08, 0.08),
        rate="sqrt(kappa/n) + kappa sqrt d/(eps n)", label="thm-F3", cite="BGN21 (GG-VR-SFW, Thm F3)",
        regime="worst case over the lower-bound construction (notebook 06), alpha = 2^-k (k = 0..7): the private "
               "term n^-1 with the delta_n factor of one GG release. Neighbour -3/4: the naive variant without "
               "the tree, whose private term decays like n^(-3/4)",
        runner=functools.partial(run_fingerprint_lp, epsilon=1.0),
    ),
    AtlasEntry(
        key="A1 SMD saddle", spec="A1", algorithm="run_private_smd_saddle", problem="matrix game 20 x 20",
        measure="duality gap", epsilon=1.0, d=20, n_smoke=(4000, 16_000, 64_000),
        n_paper=(4000, 8000, 16_000, 32_000, 64_000), prediction=functools.partial(_a1_range, d=20, epsilon=1.0),
        neighbour=-0.4, tol=(0.035, 0.035), rep_factor=(3, 1), cite="GGP24 (Algorithm 1, Thm A1)",
        rate="L0 (sqrt(log d/n) + rho^(1/2)), rho = log^(3/2) d sqrt(log 1/delta)/(n eps)", label="thm-A1",
        regime="quadratic regime (L2 = 0, K = 1): the private term rho^(1/2) dominates (notebook 09)" + _A_SECOND,
        runner=_runner("A1 private SMD saddle", "matrix game", 1.0, hyper=(("regime", "quadratic"),)),
        d_smoke=(10, 1000), d_paper=(10, 100, 1000), n_for_d=8000,
        d_shape=lambda d: math.log(10 * d) ** 0.75, d_shape_text="log^(3/4)(d d_y)", d_neighbour=0.5, d_tol=0.12,
        d_runner=_runner("A1 private SMD saddle", "matrix game d x 10", 1.0, hyper=(("regime", "quadratic"),)),
        d_problem="matrix game d x 10, n = 8000",
    ),
    AtlasEntry(
        key="A3 bias-reduced SMD", spec="A3", algorithm="run_bias_reduced_smd_saddle", problem="matrix game 20 x 20",
        measure="duality gap", epsilon=1.0, d=20, n_smoke=(32_000, 64_000, 128_000),
        n_paper=(32_000, 64_000, 128_000), prediction=_bound_range(a3_bound), rep_factor=(2, 2),
        neighbour=-1.0 / 3.0, tol=(0.065, 0.065), statistic="median", cite="GGP24 (Algorithm 3, Thm 3.14)",
        paper_only=True,
        rate="log(d)/sqrt n + log(d)/sqrt(n eps) (constant probability, Thm 3.14)",
        regime="default parameters (accountant best, M2 = L0^2 as L2 = 0); the private term dominates; the grid "
               "starts where the bound falls to the trivial gap (below it the median gap is near or above it). "
               "Neighbour -1/3: Algorithm 1's first-order smooth rate rho^(1/3), which bias reduction improves",
        needed_n=_a3_needed, runner=_runner("A3 bias-reduced SMD", "matrix game", 1.0),
    ),
    AtlasEntry(
        key="A4 boosted", spec="A4", algorithm="run_boosted_saddle", problem="matrix game 20 x 20",
        measure="duality gap", epsilon=1.0, d=20, n_smoke=(512_000, 1_024_000), n_paper=(512_000, 1_024_000),
        prediction=_bound_range(a4_bound), tol=(0.065, 0.065), statistic="median", paper_only=True,
        cite="GGP24 (Algorithm 4, Thm 3.20)",
        rate="log(d)/sqrt n + log(d)/sqrt(n eps) with probability 1 - beta (Thm 3.20, beta = 0.05)",
        regime="boosts Algorithm 3 run on n/(2k) records per candidate (k = 7); at smaller n the selection of the "
               "best of k poor, spread-out candidates gains a factor that shrinks with n, which flattens the curve."
               " Reported, not claimed: on its two-point grid (where the bound's exponent governs) the 95% interval"
               " of the exponent is about +-0.12 wide, wider than half the gap to the neighbouring -1/3, and more n"
               " (each run at n >= 4e6 takes seconds) is beyond the paper budget",
        needed_n=_a4_needed, runner=_runner("A4 boosted", "matrix game", 1.0),
    ),
    AtlasEntry(
        key="A5 anytime SMD", spec="A5", algorithm="run_anytime_smd_sco", problem="planted linear family, d = 10",
        measure="excess risk", epsilon=1.0, d=10, n_smoke=(4000, 16_000, 64_000),
        n_paper=(4000, 16_000, 64_000), prediction=_bound_range(a5_bound),
        family=(0.25, 0.5, 1.0), family_name="margin", neighbour=-0.4, tol=(0.035, 0.035), paper_only=True,
        cite="GGP24 (Algorithm 5, Thm 4.2)",
        rate="sqrt(log d/n) + log d/sqrt(n eps) (second-order smooth)",
        regime="worst case over the planted family of notebook 12 (declared L1 = L2 = L0/10, so the lazy redraws "
               "are active over the grid); both terms decay like n^(-1/2) up to the bound model's lower-order terms"
               + _A_SECOND,
        runner=functools.partial(run_a5_planted, epsilon=1.0),
    ),
)


def get_entry(key: str) -> AtlasEntry:
    """The entry with this key; ``ValueError`` naming the known keys otherwise."""
    for e in ATLAS:
        if e.key == key:
            return e
    raise ValueError(f"key must be one of {[e.key for e in ATLAS]}, got {key!r}")


def atlas_grid(profile: str, sweep: str = "n") -> list[dict[str, Any]]:
    """Task parameters of :func:`atlas_task` for every entry (and family member) of a profile's grid."""
    if sweep == "d":
        return [{"key": e.key, "n": e.n_for_d, "d": d, "sweep": "d", "member": 0.0}
                for e in ATLAS for d in e.d_grid(profile)]
    return [{"key": e.key, "n": n, "d": e.d, "sweep": "n", "member": float(m), "rep": k} for e in ATLAS
            for n in e.n_grid(profile) for m in (e.family or (0.0,)) for k in range(e.reps(profile))]


def atlas_task(*, rng: np.random.Generator, key: str, n: int, d: int, sweep: str = "n",
               member: float = 0.0, rep: int = 0) -> dict[str, float]:
    """Sweep function of the atlas: run entry ``key`` once on ``n`` fresh records in dimension ``d``.

    ``sweep="d"`` uses the entry's ``d_runner`` when it has one; ``member`` selects the family member of a family
    entry; ``rep`` only tells extra replicates of an entry with ``rep_factor > 1`` apart (their grid points, hence
    their generators, differ). Returns ``value`` (exact excess risk or duality gap), ``eps_certified`` and
    ``eps_target`` (NaN if non-private), ``delta`` (``n^-1.1``), ``trivial`` (error of the start point, or of
    ``x = 0`` on a family member) and any entry-specific diagnostics.
    """
    rng = check_rng(rng)
    entry = get_entry(key)
    n = check_int(n, "n", lo=4)
    d = check_int(d, "d", lo=2)
    if sweep not in ("n", "d"):
        raise ValueError(f"sweep must be 'n' or 'd', got {sweep!r}")
    if sweep == "n" and entry.family and not member > 0:
        raise ValueError(f"entry {key!r} is a family: member must be one of {entry.family}, got {member!r}")
    runner = entry.d_runner if (sweep == "d" and entry.d_runner is not None) else entry.runner
    out = dict(runner(n, d, rng, member))
    out["eps_target"] = math.nan if entry.epsilon is None else float(entry.epsilon)
    out["delta"] = delta_for_n(n)
    return out


def _worst_median(records: Sequence[dict[str, Any]], n: int) -> float:
    """Median error of the worst family member (largest median) at ``n`` (of the instance, for a fixed one)."""
    cells: dict[float, list[float]] = {}
    for r in records:
        if r["n"] == n:
            cells.setdefault(float(r["member"]), []).append(float(r["value"]))
    return max(float(np.median(v)) for v in cells.values())


def _top_ratio(records: Sequence[dict[str, Any]], n: int) -> float:
    """Median error / trivial error at ``n`` of the fixed instance, or of the largest member of a family (the
    instance with the largest trivial error, the one whose learning the family's theorem is about)."""
    top = max(float(r["member"]) for r in records)
    return float(np.median([r["value"] / r["trivial"] for r in records if r["n"] == n and r["member"] == top]))


def rate_claim(entry: AtlasEntry, ns: Sequence[int], profile: str) -> RateClaim | None:
    """The declared claim of an entry's exponent in ``n`` over the grid ``ns``, frozen before the run.

    The prediction is :meth:`AtlasEntry.predicted` on the grid (the theorem's exponent, or the range of local
    slopes of its bound with the run's ``delta = n^-1.1``), the wrong-regime control is the entry's ``neighbour``
    and the tolerance the profile's (at most half the gap; :class:`~dpsco_lib.experiments.claims.RateClaim`
    refuses a wider one). None for an entry whose exponent is reported, not claimed (``neighbour`` None).
    """
    if entry.neighbour is None:
        return None
    return RateClaim(f"{entry.spec} exponent in n", f"{entry.key}: {entry.measure} ~ {entry.rate}",
                     entry.predicted(ns), float(entry.neighbour), entry.tolerance(profile),
                     entry.cite or entry.spec, statistic=entry.statistic)


def polylog_range(ds: Sequence[int]) -> tuple[float, float]:
    """The exponents in ``d`` of a power ``ln^k d``, ``1/4 <= k <= 1``, over the grid ``ds``: ``k`` times the local
    slope of ``ln d`` (least squares of ``log ln d`` on ``log d``). The bounds' shapes ``sqrt(ln d)`` (S1) and
    ``log^(3/4)(d d_y)`` (A1) lie inside, with a factor 2 in the power of the logarithm either way for the
    instance's constants; an error that does not grow with ``d`` (slope 0) lies outside."""
    x = np.log(np.asarray(ds, dtype=float))
    if x.size < 2 or np.any(x <= 0):
        raise ValueError(f"ds must hold at least two dimensions >= 2, got {list(ds)}")
    s = float(np.polyfit(x, np.log(x), 1)[0])
    return s / 4.0, s


def d_claim(entry: AtlasEntry, ds: Sequence[int]) -> RateClaim:
    """The declared claim of an entry's exponent in ``d`` at fixed ``n``, with the entry's ``d_tol``.

    Polynomial (Euclidean) methods: ``d_range``, the exponents of the bound's terms (``sqrt d`` to ``d`` once
    ``L = sqrt(d) L0``); the neighbour is the polylogarithmic 0. Polylogarithmic methods: :func:`polylog_range`,
    the local slopes of ``ln^k d``, ``1/4 <= k <= 1``, over the grid, which contain the local slope of the bound's
    own shape ``d_shape`` (``sqrt(ln d)``, ``log^(3/4)(d d_y)``) and allow the instance's constants (a random game
    per ``d``) their logarithmic drift; the neighbour is the polynomial ``1/2``.
    """
    if entry.d_neighbour is None:
        raise ValueError(f"entry {entry.key!r} has no claim in d")
    pred = entry.d_range if entry.d_range is not None else polylog_range(ds)
    return RateClaim(f"{entry.spec} exponent in d", f"{entry.key}: error at n = {entry.n_for_d} ~ {entry.d_shape_text}",
                     pred, float(entry.d_neighbour), float(entry.d_tol), entry.cite or entry.spec,
                     statistic=entry.statistic)


def _evaluate(claim: RateClaim | None, records: Sequence[dict[str, Any]], x: str, family: bool, profile: str,
              rng: np.random.Generator, n_boot: int) -> Any:
    """Test ``claim`` on the records (x against the exact error, worst case over the members of a family), with
    the records' own ``trivial`` errors as the learns-nothing control."""
    if claim is None:
        return None
    return claim.evaluate([r[x] for r in records], [max(float(r["value"]), 1e-12) for r in records],
                          family=[r["member"] for r in records] if family else None,
                          trivial=[float(r["trivial"]) for r in records], rng=rng,
                          required=required_power("smoke" if profile == "smoke" else "paper"), n_boot=n_boot,
                          n_resamples=200)


def entry_row(entry: AtlasEntry, records: Sequence[dict[str, Any]], profile: str, *, rng: np.random.Generator,
              n_boot: int) -> dict[str, Any]:
    """Fit, prediction, claim outcome and summary of one entry's sweep in ``n`` (``records`` of this entry only).

    ``claim`` is the outcome of :func:`rate_claim` (declared from the grid before the records are read) on the
    records, with both negative controls; ``fit`` is the exponent of the per-``n`` median (worst member for a
    family; 95% percentile bootstrap) shown in the figure. ``ratio_first``/``ratio_last``: median error / trivial
    at the smallest and largest ``n`` (of the largest member for a family). When ``ratio_last >= 1/2`` the entry
    reports ``needs_n_bound`` (its theorem's bound with constants, if it has one) and ``needs_n_curve`` (the
    measured median extrapolated at the fitted exponent).
    """
    ns = sorted({int(r["n"]) for r in records})
    claim = rate_claim(entry, ns, profile)
    fit = fit_loglog_slope([r["n"] for r in records], [r["value"] for r in records], rng=rng, statistic="median",
                           n_boot=n_boot, worst_over=[r["member"] for r in records] if entry.family else None)
    lo, hi = entry.predicted(ns)
    row: dict[str, Any] = {
        "entry": entry.key, "spec": entry.spec, "algorithm": entry.algorithm, "problem": entry.problem,
        "measure": entry.measure, "n_min": ns[0], "n_max": ns[-1], "pred_lo": lo, "pred_hi": hi,
        "tol": entry.tolerance(profile), "neighbour": entry.neighbour, "fit": fit, "measured": fit.slope,
        "ci_low": fit.ci_low, "ci_high": fit.ci_high, "ratio_first": _top_ratio(records, ns[0]),
        "ratio_last": _top_ratio(records, ns[-1]),
        "claim": _evaluate(claim, records, "n", bool(entry.family), profile, rng, n_boot),
        "eps_target": entry.epsilon if entry.private else math.nan, "relation": entry.relation or "non-private",
        "eps_certified": max(float(r["eps_certified"]) for r in records) if entry.private else math.nan,
        "delta": DELTA_RULE if entry.private else "", "needs_n_bound": math.nan, "needs_n_curve": math.nan}
    if "eps_add_remove" in records[0]:
        row["eps_add_remove"] = max(float(r["eps_add_remove"]) for r in records)
    row["learns"] = row["ratio_last"] < 0.5
    if not row["learns"]:
        row["needs_n_curve"] = needed_n_extrapolated(ns[-1], row["ratio_last"], min(fit.slope, -1e-9))
        row["needs_n_bound"] = entry.needed_n() if entry.needed_n is not None else math.nan
    return row


def atlas_table(records: Sequence[dict[str, Any]], profile: str, *, seed: int, n_boot: int) -> list[dict[str, Any]]:
    """:func:`entry_row` of every entry with records, in registry order."""
    return [entry_row(e, [r for r in records if r["key"] == e.key], profile, rng=np.random.default_rng([seed, i]),
                      n_boot=n_boot) for i, e in enumerate(ATLAS) if any(r["key"] == e.key for r in records)]


def d_table(records: Sequence[dict[str, Any]], profile: str, *, seed: int, n_boot: int) -> list[dict[str, Any]]:
    """Fit and claim outcome (:func:`d_claim`, the records' ``trivial`` as the learns-nothing control) of the
    error against ``d`` at fixed ``n`` per entry with a sweep in ``d``: ``d_range`` (polynomial methods) or the
    local slope of ``d_shape`` (polylogarithmic ones)."""
    rows = []
    for i, e in enumerate(ATLAS):
        rr = [r for r in records if r["key"] == e.key]
        if not rr:
            continue
        ds = sorted({int(r["d"]) for r in rr})
        claim = d_claim(e, ds) if (e.d_claim_smoke or profile != "smoke") else None
        rng = np.random.default_rng([seed, 50 + i])
        fit = fit_loglog_slope([r["d"] for r in rr], [r["value"] for r in rr], statistic="median", rng=rng,
                               n_boot=n_boot)
        lo, hi = d_claim(e, ds).bounds
        ratios = [float(np.median([r["value"] / r["trivial"] for r in rr if r["d"] == d])) for d in ds]
        rows.append({"entry": e.key, "problem": e.d_problem, "shape": e.d_shape_text, "pred_lo": lo, "pred_hi": hi,
                     "fit": fit, "measured": fit.slope, "ci_low": fit.ci_low, "ci_high": fit.ci_high,
                     "polylog": e.d_range is None, "max_ratio": max(ratios), "tol": e.d_tol,
                     "neighbour": e.d_neighbour,
                     "claim": _evaluate(claim, [{**r, "member": 0.0} for r in rr], "d", False, profile, rng, n_boot),
                     "eps_ok": all(not (r["eps_certified"] > r["eps_target"] * (1 + 1e-9)) for r in rr)})
    return rows


def _fmt_n(n: float) -> str:
    return "inf" if not math.isfinite(n) else f"{n:.2g}"


def atlas_verdict(verdict: Verdict, table: Sequence[dict[str, Any]], table_d: Sequence[dict[str, Any]]) -> None:
    """The atlas's verdict rows: per entry its declared claim in ``n`` (:meth:`~dpsco_lib.experiments.Verdict.claim`:
    the window, the measured exponent with its interval, the power against the learns-nothing and the wrong-regime
    control, the false alarm), learning (median error at the largest ``n`` below half the trivial error) or, for
    an entry that has not learned yet, a strictly decreasing median with the ``n`` it needs in the row's text; the
    certificate (with its relation); then the sweep in ``d``: each entry's claim in ``d``, every polylogarithmic
    method's 95% interval of the exponent in ``d`` below every polynomial one's, and the ledgers. Every profile
    runs the same logic (point estimate, interval and both controls)."""
    for t in table:
        if t.get("claim") is not None:
            verdict.claim(t["claim"])
        if t["learns"]:
            verdict.check_at_most(f"{t['entry']}: learns at n = {t['n_max']} (median / trivial)", t["ratio_last"],
                                  0.5, fmt=".3f")
        else:
            need = f"needs n ~ {_fmt_n(t['needs_n_curve'])} (measured curve extrapolated)"
            if math.isfinite(t["needs_n_bound"]):
                need += f", {_fmt_n(t['needs_n_bound'])} (theorem's bound with constants)"
            verdict.check(f"{t['entry']}: median / trivial decreases over the grid (not yet learned)",
                          t["ratio_last"] < t["ratio_first"], f"{t['ratio_first']:.3f} -> {t['ratio_last']:.3f}",
                          predicted=f"decreasing; {need}")
        if t["eps_target"] == t["eps_target"]:
            verdict.check_at_most(f"{t['entry']}: certified eps ({t['relation']}, delta = {t['delta']})",
                                  t["eps_certified"], t["eps_target"] * (1 + 1e-9), what="target", fmt=".4f")
    if not table_d:
        return
    for t in table_d:
        if t["claim"] is not None:
            verdict.claim(t["claim"])
    poly = [t["ci_low"] for t in table_d if not t["polylog"]]
    logs = [t["ci_high"] for t in table_d if t["polylog"]]
    if poly and logs:
        verdict.check("polylog methods below polynomial ones in d", max(logs) < min(poly),
                      f"max CI high (polylog) {max(logs):+.3f}", predicted=f"< min CI low (Euclidean) {min(poly):+.3f}")
    verdict.check("d-sweep ledgers certify their targets", all(t["eps_ok"] for t in table_d), "all runs")


def d_exponent(entry: AtlasEntry, ds: Any) -> float:
    """Predicted exponent in ``d``: least-squares slope of ``log d_shape(d)`` against ``log d`` over ``ds``
    (for ``sqrt(d)`` exactly 1/2; for logarithmic shapes the local slope over the grid)."""
    if entry.d_shape is None:
        raise ValueError(f"entry {entry.key!r} has no dimension sweep")
    ds = np.asarray(ds, dtype=float)
    if ds.size < 2:
        raise ValueError("ds must contain at least two dimensions")
    return float(np.polyfit(np.log(ds), np.log([entry.d_shape(float(d)) for d in ds]), 1)[0])


# ---------------------------------------------------------------------------------------------------------
# Figure
# ---------------------------------------------------------------------------------------------------------
_PALETTE = ("#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#000000", "#882255", "#999933",
            "#44AA99", "#332288")


def _style(key: str) -> dict[str, Any]:
    i = [e.key for e in ATLAS].index(key)
    return {"color": _PALETTE[i % len(_PALETTE)], "marker": "os^vDP<>*hX"[i % 11]}


def _curve(records: Sequence[dict[str, Any]], x: str, family: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per ``x``: the median of ``value`` (of the worst member for a family)."""
    xs = sorted({r[x] for r in records})
    if family:
        return np.array(xs, float), np.array([_worst_median(records, n) for n in xs])
    return np.array(xs, float), np.array([np.median([r["value"] for r in records if r[x] == v]) for v in xs])


def plot_atlas(axes: Any, rec_n: Sequence[dict[str, Any]], table: Sequence[dict[str, Any]],
               rec_d: Sequence[dict[str, Any]], table_d: Sequence[dict[str, Any]]) -> None:
    """The atlas figure on a 2 x 2 grid: (a) excess risk and (b) duality gap against ``n`` (median, worst member
    for families) with the predicted slope as a dashed guide, (c) error against ``d``, (d) fitted exponents with
    their 95% intervals against the predicted range (dark) and the tolerance (light)."""
    panels = {"excess risk": axes[0, 0], "duality gap": axes[0, 1]}
    for t in table:
        e, st = get_entry(t["entry"]), _style(t["entry"])
        ns, med = _curve([r for r in rec_n if r["key"] == e.key], "n", bool(e.family))
        ax = panels[e.measure]
        ax.plot(ns, med, label=f"{e.key} ({t['measured']:+.2f})", **st)
        ax.plot(ns, med[0] * (ns / ns[0]) ** t["pred_hi"], ls="--", lw=1, color=st["color"])
    for (name, ax), title in zip(panels.items(), ("(a) convex programs", "(b) saddle points"), strict=True):
        ax.set(xscale="log", yscale="log", xlabel="$n$", ylabel=f"{name} (median; worst member)", title=title)
        ax.legend(fontsize=7, title="entry (measured slope); dashed: predicted", title_fontsize=7)
    ax = axes[1, 0]
    for t in table_d:
        ds, med = _curve([r for r in rec_d if r["key"] == t["entry"]], "d", False)
        st = _style(t["entry"])
        ax.plot(ds, med, label=f"{t['entry']} ({t['measured']:+.2f})", **st)
        ax.plot(ds, med[0] * (ds / ds[0]) ** t["pred_lo"], ls="--", lw=1, color=st["color"])
    ax.set(xscale="log", yscale="log", xlabel="$d$", ylabel="error at fixed $n$ (median)",
           title="(c) error vs d at fixed n (dashed: predicted, lower end)")
    ax.legend(fontsize=7, loc="lower right")
    ax = axes[1, 1]
    ys = np.arange(len(table))[::-1]
    for y, t in zip(ys, table, strict=True):
        ax.plot([t["pred_lo"] - t["tol"], t["pred_hi"] + t["tol"]], [y, y], color="0.85", lw=9, solid_capstyle="butt")
        pad = 0.01 if t["pred_hi"] - t["pred_lo"] < 0.02 else 0.0
        ax.plot([t["pred_lo"] - pad, t["pred_hi"] + pad], [y, y], color="0.45", lw=9, solid_capstyle="butt")
        ax.errorbar(t["measured"], y, xerr=[[t["measured"] - t["ci_low"]], [t["ci_high"] - t["measured"]]],
                    fmt="o", color=_style(t["entry"])["color"], capsize=3)
    ax.set_yticks(ys, [t["entry"] for t in table], fontsize=8)
    ax.set(xlabel="exponent in $n$", title="(d) measured (95% CI) vs predicted (dark), tolerance (light)")
    ax.grid(axis="y", visible=False)


def table_rows(table: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The atlas table for display: one row per entry (``claim``: its outcome, with the power against the
    learns-nothing and the wrong-regime control)."""
    out = []
    for t in table:
        pred = f"{t['pred_lo']:+.2f}" if t["pred_hi"] - t["pred_lo"] < 0.005 else \
            f"[{t['pred_lo']:+.2f}, {t['pred_hi']:+.2f}]"
        eps = "non-private" if t["eps_target"] != t["eps_target"] else \
            f"{t['eps_certified']:.3f} / {t['eps_target']:g}, delta = {t['delta']}, {t['relation']}"
        if "eps_add_remove" in t:
            eps += f" (add/remove: {t['eps_add_remove']:.3f})"
        need = "learns" if t["learns"] else f"needs n ~ {_fmt_n(t['needs_n_curve'])} (curve)" + (
            f", {_fmt_n(t['needs_n_bound'])} (bound)" if math.isfinite(t["needs_n_bound"]) else "")
        c = t.get("claim")
        claim = "reported" if c is None else (
            f"{'passed' if c.passed else 'FAILED'} (controls rejected {c.power_trivial:.2f}, {c.power_regime:.2f})")
        nb = "" if t.get("neighbour") is None else f"; neighbour {t['neighbour']:+.2f}"
        out.append({"entry": t["entry"], "algorithm": t["algorithm"], "problem": t["problem"],
                    "n": f"{t['n_min']}-{t['n_max']}", "predicted": f"{pred} +- {t['tol']:g}{nb}", "claim": claim,
                    "measured [95% CI]": f"{t['measured']:+.2f} [{t['ci_low']:+.2f}, {t['ci_high']:+.2f}]",
                    "median / trivial": f"{t['ratio_first']:.2f} -> {t['ratio_last']:.2f}", "at n_max": need,
                    "certified eps / target": eps})
    return out
