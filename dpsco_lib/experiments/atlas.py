r"""The rate atlas: every algorithm of the book on shared problems, with its predicted exponent (notebook 17).

A registry of :class:`AtlasEntry` objects. Each entry fixes one algorithm (a ``run_<name>`` of
:mod:`dpsco_lib.algorithms`), one problem instance and privacy level, a grid of sample sizes ``n``, the
exponent that the algorithm's theorem predicts for the measured error in ``n`` in that regime, and a *runner*
``runner(n, d, rng) -> dict`` returning the exact error of one run together with its privacy certificate. The
notebook stays glue: it sweeps :func:`atlas_task` over the entries with :func:`~dpsco_lib.experiments.run_sweep`,
fits the exponents and checks them with :func:`classify_exponent`.

Shared problems (all with exact population objectives, so every error below is exact):

* ``simplex LS`` / ``l1-ball LS``: :func:`~dpsco_lib.problems.least_squares.hard_least_squares` with ``p = 1``,
  ``c = 2`` (so ``L0 = 3``, ``L1 = 1``); the minimizer is the vertex ``e_1`` (notebooks 03 and 05);
* ``l_1.5-ball LS``: the same family at ``p = 1.5`` (boundary optimum ``e_1``; notebook 06);
* ``matrix game`` / ``quadratic game``: :func:`~dpsco_lib.problems.games.random_bilinear_game` and
  :func:`~dpsco_lib.problems.games.random_quadratic_game` on simplices with rank-one Rademacher noise (the
  instances of notebook 09); the population gap is closed form (matrix game) or solved by cvxpy (quadratic).

Predicted exponents in ``n`` (Spec IDs; ``rho = log^{3/2} d sqrt(log 1/delta)/(n eps)`` for A1). Each entry stores
the exponent of the term that governs its regime and the interval spanned by the rate's terms:

- S1 ``run_smd``: ``L0 sqrt(2 ln d / n)``: -1/2.
- S2 ``run_noisy_sgd``, D4 ``run_dp_sgd``: ``L D2 (1/sqrt n + sqrt(d ln 1/delta)/(eps n))``: [-1, -1/2].
- F1 ``run_poly_sfw``: ``ln|V| ln(n/ln|V|) sqrt(ln 1/delta)/(eps sqrt n)``: -1/2 (up to logs).
- F2 ``run_private_vr_frank_wolfe``: ``sqrt(ln|V|/n) ln n + (ln|V| ln^2 n ln(1/delta)/(eps n))^{2/3}``: [-2/3, -1/2].
- F3 ``run_gg_vr_sfw`` (tree): ``sqrt(kappa/n) + kappa sqrt d/(eps n)``: [-1, -1/2].
- A1 ``run_private_smd_saddle``: ``sqrt(log d/n) + rho^{1/2}`` (``L2 = 0``): -1/2; ``+ rho^{1/3}`` (first-order
  smooth): [-1/2, -1/3].
- A3 ``run_bias_reduced_smd_saddle``, A4 ``run_boosted_saddle``: ``log(d)/sqrt n + log(d)/sqrt(n eps)``: -1/2
  (both saturated on the shared matrix game with their default parameters; see ``saturated_note``).
- A5 ``run_anytime_smd_sco``: ``sqrt(log d/n) + log d/sqrt(n eps)`` (second-order smooth): -1/2.

A theorem's rate is an upper bound over a class. On one fixed instance the error can decay *faster*: the
Frank-Wolfe methods converge to a vertex (or boundary) optimum with a score gap, so once the noise is below the
gap wrong selections become rare (notebook 05); such entries carry an explanation in ``faster_note``, and
:func:`classify_exponent` accepts a faster decay for them instead of asserting the exponent.

The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpsco_lib._validation import check_int, check_positive, check_rng
from dpsco_lib.experiments.analysis import SlopeFit

__all__ = [
    "ATLAS",
    "AtlasEntry",
    "DELTA",
    "PROBLEMS",
    "atlas_task",
    "run_on_shared_problem",
    "classify_exponent",
    "d_exponent",
    "get_entry",
]

#: delta of every private entry.
DELTA = 1e-6
#: Seed of the fixed game instances (the task's rng only draws the data and drives the algorithm).
INSTANCE_SEED = 20261122

Runner = Callable[[int, int, np.random.Generator], dict[str, float]]


@dataclass(frozen=True)
class AtlasEntry:
    """One row of the atlas: an algorithm on a shared problem with its predicted exponent in ``n``.

    Attributes
    ----------
    key : str
        Unique short name, e.g. ``"S1 SMD"``.
    spec : str
        Spec ID of the theorem (``"S1"``, ``"F1"``, ...).
    algorithm : str
        Name of the library function run.
    problem : str
        The shared problem and its size.
    measure : str
        ``"excess risk"`` or ``"duality gap"``.
    epsilon : float or None
        Target epsilon (None: non-private); ``delta`` is :data:`DELTA`.
    d : int
        Dimension of the sweep in ``n`` (for games: ``d_x = d_y = d``).
    n_smoke, n_paper : tuple of int
        Sample sizes of the two profiles.
    exponent : float
        Predicted exponent of the measured error in ``n`` (negative): that of the term of the rate that governs
        this regime.
    exponent_range : tuple of float
        ``(lo, hi)``, the smallest and largest exponent in ``n`` among the rate's terms: in a regime where two
        terms are comparable the measured exponent lies between them.
    rate : str
        The theorem's rate, as text.
    regime : str
        Which term of the rate governs the predicted exponent here, and why.
    faster_note : str or None
        Why a faster decay than ``exponent`` is expected on this instance (None: not expected).
    label : str or None
        Existing theorem label of the book (``"thm-S1"``), if any.
    runner : callable
        ``runner(n, d, rng) -> {"value", "eps_certified", "trivial"}`` (``eps_certified`` is NaN when
        non-private; ``trivial`` is the error of the starting point, i.e. of learning nothing).
    d_smoke, d_paper : tuple of int
        Dimensions of the sweep in ``d`` at ``n_for_d`` (empty: no sweep in ``d``).
    n_for_d : int
        Sample size of the sweep in ``d``.
    d_shape : callable or None
        ``d -> predicted d-dependence`` of the error (its local log-log slope over the grid is the predicted
        exponent in ``d``, see :func:`d_exponent`).
    d_shape_text : str
        The predicted ``d``-dependence, as text.
    d_range : tuple of float, optional
        ``(lo, hi)`` exponents in ``d`` of the rate's terms (for two-term rates such as S2's); None for a single
        (polylogarithmic) shape, whose local slope :func:`d_exponent` is the prediction.
    d_runner : callable, optional
        Runner of the sweep in ``d`` when it uses another instance family than the sweep in ``n``.
    d_problem : str
        The problem of the sweep in ``d``.
    d_epsilon : float, optional
        Target epsilon of ``d_runner`` when it differs from ``epsilon``.
    saturated_note : str, optional
        Set when the algorithm, with its theory parameters, is *saturated* on this instance over the affordable
        range of ``n`` (its error stays near the trivial error), with the reason: its exponent and monotonicity
        are then reported, not asserted (its privacy certificate still is).
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
    exponent: float
    exponent_range: tuple[float, float]
    rate: str
    regime: str
    runner: Runner
    faster_note: str | None = None
    label: str | None = None
    d_smoke: tuple[int, ...] = ()
    d_paper: tuple[int, ...] = ()
    n_for_d: int = 0
    d_shape: Callable[[float], float] | None = None
    d_shape_text: str = ""
    d_range: tuple[float, float] | None = None
    d_runner: Runner | None = None
    d_problem: str = ""
    d_epsilon: float | None = None
    saturated_note: str | None = None

    @property
    def private(self) -> bool:
        return self.epsilon is not None

    def n_grid(self, profile: str) -> tuple[int, ...]:
        """The ``n`` grid of a profile (``"smoke"`` or ``"paper"``)."""
        return self.n_smoke if profile == "smoke" else self.n_paper

    def d_grid(self, profile: str) -> tuple[int, ...]:
        """The ``d`` grid of a profile (empty when the entry has no sweep in ``d``)."""
        return self.d_smoke if profile == "smoke" else self.d_paper


# ---------------------------------------------------------------------------------------------------------
# One generic runner: a registered algorithm on a shared problem (module level, so it pickles to joblib workers)
# ---------------------------------------------------------------------------------------------------------
def _ls(p: float, d: int, set_kind: str = "simplex", c: float = 2.0) -> Any:
    from dpsco_lib.problems.least_squares import hard_least_squares

    return hard_least_squares(p, d, c=c, set_kind=set_kind)


def _game(kind: str, d: int) -> Any:
    from dpsco_lib.problems.games import random_bilinear_game, random_quadratic_game

    r = np.random.default_rng([INSTANCE_SEED, d, len(kind)])
    if kind == "bilinear":
        return random_bilinear_game(d, d, r)
    if kind == "quadratic":
        return random_quadratic_game(d, d, r)
    raise ValueError(f"kind must be 'bilinear' or 'quadratic', got {kind!r}")


def _rect_game(d: int) -> Any:
    """The d x 10 matrix game of notebook 09's sweep in d."""
    from dpsco_lib.problems.games import random_bilinear_game

    return random_bilinear_game(d, 10, np.random.default_rng([INSTANCE_SEED, d, 99]))


#: The shared problems: name -> d -> instance.
PROBLEMS: dict[str, Callable[[int], Any]] = {
    "simplex LS": lambda d: _ls(1.0, d, "simplex"),
    "l1-ball LS": lambda d: _ls(1.0, d, "l1ball"),
    "l1-ball LS, c = 1": lambda d: _ls(1.0, d, "l1ball", c=1.0),
    "l_1.5-ball LS": lambda d: _ls(1.5, d),
    "matrix game": lambda d: _game("bilinear", d),
    "quadratic game": lambda d: _game("quadratic", d),
    "matrix game d x 10": _rect_game,
}


def _error_and_trivial(problem: Any, res: Any) -> tuple[float, float]:
    """Exact excess population risk (convex programs) or duality gap (games), and that of the start point."""
    if getattr(problem, "dy", None) is not None and res.y is not None:
        uniform = (np.full(problem.dx, 1.0 / problem.dx), np.full(problem.dy, 1.0 / problem.dy))
        return float(problem.duality_gap(res.x, res.y)), float(problem.duality_gap(*uniform))
    return float(problem.excess_risk(res.x)), float(problem.excess_risk(problem.feasible_set.center()))


def _sgd_params(n: int, d: int, epsilon: float) -> dict[str, Any]:
    from dpsco_lib.algorithms.noisy_sgd import l2_constants, noisy_sgd_theory_params

    L0_2, D_2 = l2_constants(_ls(1.0, d, "l1ball"))
    prm = noisy_sgd_theory_params(n, d=d, epsilon=epsilon, delta=DELTA, L0_2=L0_2, D_2=D_2)
    return prm.as_dict() if hasattr(prm, "as_dict") else dict(prm)


def dp_sgd_hyper(n: int, d: int, epsilon: float) -> dict[str, Any]:
    """DP-SGD (D4) with the BFTT19 steps, batch size and step size of S2, Poisson rate ``q = b/n``; the runner
    calibrates the smallest noise multiplier whose certificate by its default accountant (``"best"``: the PLD,
    tighter than the RDP moments accountant) meets the target."""
    prm = _sgd_params(n, d, epsilon)
    q = prm["batch_size"] / n
    return {"epsilon": epsilon, "delta": DELTA, "sampling_rate": q, "steps": prm["T"], "clip": prm["L0_2"],
            "step_size": prm["step_size"]}


def run_on_shared_problem(n: int, d: int, rng: np.random.Generator, *, algorithm: str, problem: str,
                          epsilon: float | None, certify: str = "best", hyper: tuple[tuple[str, Any], ...] = (),
                          hyper_fn: Callable[[int, int, float], dict[str, Any]] | None = None,
                          extra: tuple[tuple[str, str], ...] = ()) -> dict[str, float]:
    """Run registered ``algorithm`` once on ``n`` fresh records of shared ``problem`` in dimension ``d``.

    Returns ``value`` (the exact error), ``eps_certified`` (the ledger's certificate by accountant ``certify``;
    NaN when non-private), ``trivial`` (the error of the start point, i.e. of learning nothing) and, for each
    ``(key, info_key)`` of ``extra``, the Result's ``info[info_key]`` under ``key``. ``hyper`` are fixed keyword
    arguments; ``hyper_fn(n, d, epsilon)`` computes size-dependent ones (when it is given, the runner takes its
    privacy through them, not epsilon/delta).
    """
    from dpsco_lib.algorithms.registry import get_algorithm

    rec = get_algorithm(algorithm)
    prob = PROBLEMS[problem](d)
    kwargs: dict[str, Any] = dict(hyper)
    if hyper_fn is not None:
        kwargs.update(hyper_fn(n, d, epsilon))  # type: ignore[arg-type]
    elif rec.private:
        kwargs.update(epsilon=epsilon, delta=DELTA)
    res = rec.runner(prob, prob.sample(n, rng), rng=rng, **kwargs)
    value, trivial = _error_and_trivial(prob, res)
    eps = res.certified_epsilon(DELTA, certify) if res.ledger is not None else math.nan
    out = {"value": value, "eps_certified": eps, "trivial": trivial}
    out.update({k: float(res.info[i]) for k, i in extra})
    return out


def _runner(algorithm: str, problem: str, epsilon: float | None, **kw: Any) -> Runner:
    """A picklable runner ``(n, d, rng) -> dict`` of :func:`run_on_shared_problem`."""
    return functools.partial(run_on_shared_problem, algorithm=algorithm, problem=problem, epsilon=epsilon, **kw)


# ---------------------------------------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------------------------------------
_VERTEX_NOTE = (
    "the optimum is the vertex e_1 with a score gap of order 1: once the selection noise is below the gap, wrong "
    "vertex selections become rare and the error falls faster than any fixed power until the Frank-Wolfe step "
    "floor (notebook 05); the theorem's n^(-1/2) is the worst case over the class"
)
_STRONGLY_CONVEX_NOTE = (
    "on the l1-ball instance Sigma = I, so F is 1-strongly convex in l2 and averaged SGD beats the Lipschitz-class "
    "rate; the rate's private term (exponent -1) is also comparable to the statistical one here"
)
_D_SGD = (10, 20, 40, 80)

ATLAS: tuple[AtlasEntry, ...] = (
    AtlasEntry(
        key="S1 SMD", spec="S1", algorithm="run_smd", problem="simplex LS, d = 200 (non-private)",
        measure="excess risk", epsilon=None, d=200, n_smoke=(256, 1024, 4096),
        n_paper=(256, 512, 1024, 2048, 4096, 8192), exponent=-0.5, exponent_range=(-0.5, -0.5),
        rate="L0 sqrt(2 ln d / n)", label="thm-S1",
        regime="non-private; the hard instance realizes the Nemirovski-Yudin rate (notebook 03)",
        runner=_runner("S1 SMD", "simplex LS", None),
        d_smoke=(10, 100, 1000), d_paper=(10, 100, 1000, 10_000), n_for_d=1024,
        d_shape=lambda d: math.sqrt(math.log(d)), d_shape_text="sqrt(ln d)", d_problem="simplex LS, n = 1024",
    ),
    AtlasEntry(
        key="S2 noisy SGD", spec="S2", algorithm="run_noisy_sgd", problem="l1-ball LS, d = 10, eps = 1",
        measure="excess risk", epsilon=1.0, d=10, n_smoke=(1000, 4000, 16_000),
        n_paper=(1000, 2000, 4000, 8000, 16_000), exponent=-0.5, exponent_range=(-1.0, -0.5),
        rate="L D2 (1/sqrt n + sqrt(d ln(1/delta))/(eps n))", label="thm-S2",
        regime="both terms: the l2 constants L = sqrt(d) L0, D2 = 2 of an l1 problem; noise constants are large",
        faster_note=_STRONGLY_CONVEX_NOTE, runner=_runner("S2 noisy SGD", "l1-ball LS", 1.0),
        d_smoke=(10, 40), d_paper=_D_SGD, n_for_d=16_000, d_range=(0.5, 1.0),
        d_shape_text="sqrt(d) (statistical, L = sqrt(d) L0) to d (private term)", d_problem="l1-ball LS, n = 16000",
    ),
    AtlasEntry(
        key="D4 DP-SGD", spec="D4", algorithm="run_dp_sgd", problem="l1-ball LS, d = 10, eps = 1",
        measure="excess risk", epsilon=1.0, d=10, n_smoke=(1000, 4000, 16_000),
        n_paper=(1000, 2000, 4000, 8000, 16_000), exponent=-0.5, exponent_range=(-1.0, -0.5),
        rate="as S2 (Poisson subsampling, PLD accountant)", label="thm-D4",
        regime="as S2 (same T, batch and step size); accounting with amplification (PLD) gives less noise",
        faster_note=_STRONGLY_CONVEX_NOTE,
        runner=_runner("D4 DP-SGD", "l1-ball LS", 1.0, hyper_fn=dp_sgd_hyper),
        d_smoke=(10, 40), d_paper=_D_SGD, n_for_d=16_000, d_range=(0.5, 1.0),
        d_shape_text="sqrt(d) (statistical, L = sqrt(d) L0) to d (private term)", d_problem="l1-ball LS, n = 16000",
    ),
    AtlasEntry(
        key="F1 Poly-SFW", spec="F1", algorithm="run_poly_sfw", problem="l1-ball LS, d = 100, eps = 300",
        measure="excess risk", epsilon=300.0, d=100, n_smoke=(1000, 4000, 16_000),
        n_paper=(1000, 2000, 4000, 8000, 16_000, 32_000), exponent=-0.5, exponent_range=(-0.5, -0.5),
        rate="(L1 D^2 + L0 D) ln|V| ln(n/ln|V|) sqrt(ln 1/delta)/(eps sqrt n)", label="thm-F1",
        regime="private term (eps = 300 puts the selections above the noise in this range of n; notebook 05)",
        faster_note=_VERTEX_NOTE, runner=_runner("F1 Poly-SFW", "l1-ball LS", 300.0),
        d_smoke=(10, 100, 1000), d_paper=(10, 100, 1000, 10_000), n_for_d=4000,
        d_shape=lambda d: math.log(2 * d) * math.log(4000 / math.log(2 * d)), d_shape_text="ln|V| ln(n/ln|V|)",
        d_problem="l1-ball LS, n = 4000, eps = 300",
    ),
    AtlasEntry(
        key="F2 tree FW", spec="F2", algorithm="run_private_vr_frank_wolfe",
        problem="l1-ball LS with c = 1, d = 100, eps = 10", measure="excess risk", epsilon=10.0, d=100,
        n_smoke=(1000, 4000, 16_000), n_paper=(1000, 2000, 4000, 8000, 16_000, 32_000, 64_000),
        exponent=-2.0 / 3.0, exponent_range=(-2.0 / 3.0, -0.5),
        rate="(L0 D + L1 D^2) sqrt(ln|V|/n) ln n + L1 D^2 (ln|V| ln^2 n ln(1/delta)/(eps n))^(2/3)",
        regime="private term (eps n)^(-2/3) (up to ln n); the statistical term decays like n^(-1/2)",
        faster_note=(
            "with c = 1 the population gradient vanishes at the vertex optimum e_1 (F - F* = ||x - e_1||_2^2/2), "
            "so the excess is quadratic in the noise-driven displacement of the iterate; with c = 2 (a sharp "
            "vertex) the selections become exact and the excess is 0 beyond n ~ 10^4 (no power law to fit)"
        ),
        runner=_runner("F2 tree FW", "l1-ball LS, c = 1", 10.0),
    ),
    AtlasEntry(
        key="F3 GG-VR-SFW tree", spec="F3", algorithm="run_gg_vr_sfw", problem="l_1.5-ball LS, d = 100, eps = 1",
        measure="excess risk", epsilon=1.0, d=100, n_smoke=(4000, 16_000, 32_000),
        n_paper=(4000, 8000, 16_000, 32_000), exponent=-1.0, exponent_range=(-1.0, -0.5),
        rate="sqrt(kappa/n) + kappa sqrt d/(eps n)", label="thm-F3",
        regime="private term kappa sqrt d/(eps n) (its measured size exceeds sqrt(kappa/n) here; notebook 06)",
        faster_note=(
            "the optimum e_1 is a boundary point of the l_1.5 ball where the population gradient is normal to the "
            "boundary: a feasible point displaced by s along the boundary costs only O(s^p + s^2) with p = 1.5, not "
            "O(s), so the excess decays 1.5 to 2 times faster than the n^(-1) private term, which is checked "
            "separately (notebook 06 asserts the same private-term exponent)"
        ),
        runner=_runner("F3 GG-VR-SFW tree", "l_1.5-ball LS", 1.0, hyper=(("variant", "tree"),),
                       extra=(("private_term", "private_error"),)),
    ),
    AtlasEntry(
        key="A1 quadratic regime", spec="A1", algorithm="run_private_smd_saddle",
        problem="matrix game 20 x 20, eps = 1", measure="duality gap", epsilon=1.0, d=20,
        n_smoke=(4000, 16_000, 64_000), n_paper=(4000, 8000, 16_000, 32_000, 64_000),
        exponent=-0.5, exponent_range=(-0.5, -0.5),
        rate="L0 (sqrt(log d/n) + rho^(1/2)), rho = log^(3/2) d sqrt(log 1/delta)/(n eps)", label="thm-A1",
        regime="private term rho^(1/2) (K = 1; the gap is >= 2x the statistical term, notebook 09)",
        runner=_runner("A1 private SMD saddle", "matrix game", 1.0,
                       hyper=(("regime", "quadratic"),)),
        d_smoke=(10, 100, 1000), d_paper=(10, 100, 1000, 10_000), n_for_d=4000,
        d_shape=lambda d: math.log(10 * d) ** 0.75, d_shape_text="log^(3/4)(d d_y)",
        d_runner=_runner("A1 private SMD saddle", "matrix game d x 10", 8.0,
                         hyper=(("regime", "quadratic"),)), d_epsilon=8.0,
        d_problem="matrix game d x 10, n = 4000, eps = 8",
    ),
    AtlasEntry(
        key="A1 first-order regime", spec="A1", algorithm="run_private_smd_saddle",
        problem="quadratic game 10 x 10, eps = 16", measure="duality gap", epsilon=16.0, d=10,
        n_smoke=(16_000, 64_000), n_paper=(16_000, 32_000, 64_000, 128_000),
        exponent=-1.0 / 3.0, exponent_range=(-0.5, -1.0 / 3.0),
        rate="(L0 + L1)(sqrt(log d/n) + rho^(1/3))", label="thm-A1",
        regime="private term rho^(1/3) (vertex-sampling bias 16 L1/sqrt K balanced; notebook 09)",
        runner=_runner("A1 private SMD saddle", "quadratic game", 16.0,
                       hyper=(("regime", "first_order"),)),
    ),
    AtlasEntry(
        key="A3 bias-reduced SMD", spec="A3", algorithm="run_bias_reduced_smd_saddle",
        problem="matrix game 20 x 20, eps = 1", measure="duality gap", epsilon=1.0, d=20,
        n_smoke=(4000, 16_000), n_paper=(4000, 8000, 16_000, 32_000, 64_000),
        exponent=-0.5, exponent_range=(-0.5, -0.5),
        rate="log(d)/sqrt n + log(d)/sqrt(n eps) (constant probability, Thm 3.14)",
        regime="saturated: the default parameters give eta T ~ 1.5 (A1: 8-33), too little mirror-descent progress",
        saturated_note=(
            "with alg3_theory_params at n <= 64000, eps = 1 the batch is B = 2-3 and the privacy cap keeps "
            "eta ~ 1e-3, so eta T ~ 1.5 and the gap stays at or above the gap of the uniform start; the "
            "rate's regime needs much larger n eps (notebook 10 runs it at eps = 32 on a 10 x 10 softmax game, with "
            "the instance's oracle second moment instead of the worst-case bound; here even that leaves the gap "
            "at n = 64000, eps = 1 between 0.33 and 0.61, against 0.44 at the uniform start)"
        ),
        runner=_runner("A3 bias-reduced SMD", "matrix game", 1.0),
    ),
    AtlasEntry(
        key="A4 boosted", spec="A4", algorithm="run_boosted_saddle", problem="matrix game 20 x 20, eps = 1",
        measure="duality gap", epsilon=1.0, d=20, n_smoke=(4000, 16_000),
        n_paper=(4000, 8000, 16_000, 32_000, 64_000), exponent=-0.5, exponent_range=(-0.5, -0.5),
        rate="log(d)/sqrt n + log(d)/sqrt(n eps) with probability 1 - beta (Thm 3.20)",
        regime="saturated: boosts Algorithm 3 (inner solver), which is saturated here",
        saturated_note=(
            "its candidates come from Algorithm 3 on n/(3k+1) records each, which is saturated at these n (see "
            "A3); the selection then approaches the gap of the uniform start from above"
        ),
        runner=_runner("A4 boosted", "matrix game", 1.0),
    ),
    AtlasEntry(
        key="A5 anytime SMD", spec="A5", algorithm="run_anytime_smd_sco",
        problem="simplex LS, d = 50, eps = 1", measure="excess risk", epsilon=1.0, d=50,
        n_smoke=(4000, 16_000, 64_000), n_paper=(4000, 8000, 16_000, 32_000, 64_000),
        exponent=-0.5, exponent_range=(-0.5, -0.5),
        rate="sqrt(log d/n) + log d/sqrt(n eps) (second-order smooth; L2 = 0 for least squares)",
        regime="second-order parameters; both terms decay like n^(-1/2) (the instance of notebook 12)",
        runner=_runner("A5 anytime SMD", "simplex LS", 1.0,
                       hyper=(("regime", "second_order"),)),
    ),
)


def get_entry(key: str) -> AtlasEntry:
    """The entry with this key; ``ValueError`` naming the known keys otherwise."""
    for e in ATLAS:
        if e.key == key:
            return e
    raise ValueError(f"key must be one of {[e.key for e in ATLAS]}, got {key!r}")


def atlas_task(*, rng: np.random.Generator, key: str, n: int, d: int, sweep: str = "n") -> dict[str, float]:
    """Sweep function of the atlas: run entry ``key`` once on ``n`` fresh records in dimension ``d``.

    ``sweep="d"`` uses the entry's ``d_runner`` when it has one (another instance family for the sweep in
    ``d``). Returns ``value`` (exact excess risk or duality gap), ``eps_certified`` (NaN if non-private),
    ``eps_target`` (NaN if non-private), ``trivial`` (error of the start point) and any entry-specific
    diagnostics.
    """
    rng = check_rng(rng)
    entry = get_entry(key)
    n = check_int(n, "n", lo=4)
    d = check_int(d, "d", lo=2)
    if sweep not in ("n", "d"):
        raise ValueError(f"sweep must be 'n' or 'd', got {sweep!r}")
    use_d = sweep == "d" and entry.d_runner is not None
    runner = entry.d_runner if use_d else entry.runner
    out = dict(runner(n, d, rng))  # type: ignore[misc]
    target = entry.d_epsilon if (use_d and entry.d_epsilon is not None) else entry.epsilon
    out["eps_target"] = math.nan if target is None else float(target)
    return out


def classify_exponent(
    fit: SlopeFit, predicted: tuple[float, float] | float, tol: float, *, faster_allowed: bool
) -> tuple[bool, str]:
    """Compare a fitted exponent with the prediction.

    ``predicted`` is an exponent or an interval ``(lo, hi)`` (the exponents of a rate's terms: in a regime
    where both matter the measured exponent lies between them). Returns ``(passed, status)``:
    ``"consistent"`` when ``lo - tol <= slope <= hi + tol``; ``"faster"`` when ``slope < lo - tol`` (passes only
    if ``faster_allowed``, i.e. the entry explains why its instance is easier than the worst case of the class);
    ``"slower"`` when ``slope > hi + tol`` (always a failure: the upper bound's exponent is violated).
    """
    tol = check_positive(tol, "tol")
    lo, hi = (float(predicted), float(predicted)) if np.isscalar(predicted) else map(float, predicted)  # type: ignore[arg-type]
    if lo > hi:
        raise ValueError(f"predicted interval must have lo <= hi, got ({lo}, {hi})")
    if not math.isfinite(fit.slope):
        return False, "not finite"
    if lo - tol <= fit.slope <= hi + tol:
        return True, "consistent"
    if fit.slope < lo - tol:
        return bool(faster_allowed), "faster"
    return False, "slower"


def d_exponent(entry: AtlasEntry, ds: Any) -> float:
    """Predicted exponent in ``d``: least-squares slope of ``log d_shape(d)`` against ``log d`` over ``ds``
    (for ``sqrt(d)`` exactly 1/2; for logarithmic shapes the local slope over the grid)."""
    if entry.d_shape is None:
        raise ValueError(f"entry {entry.key!r} has no dimension sweep")
    ds = np.asarray(ds, dtype=float)
    if ds.size < 2:
        raise ValueError("ds must contain at least two dimensions")
    return float(np.polyfit(np.log(ds), np.log([entry.d_shape(float(d)) for d in ds]), 1)[0])
