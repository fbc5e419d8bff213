r"""Algorithm 4 of [GGP24]: a high-probability duality gap by boosting a private saddle-point solver (Spec A4).

Problem (the l1 setting of Spec A1): min_{x in X} max_{y in Delta_dy} F(x, y) = E_z f(x, y; z), f(., .; z)
convex-concave and L0-Lipschitz w.r.t. ||x||_p + ||y||_1 (gradients in the dual norms), X a polytope
(a simplex in the paper).  Gap(x, y) = max_y' F(x, y') - min_x' F(x', y).

Algorithm 4 (seed 001, Section 3.3).  The n records are cut, *by position* (a data-independent partition),
into 3k + 1 disjoint parts:

1. candidates: parts S_1, ..., S_k of n_c records each; (x^i, y^i) = inner(S_i) where ``inner`` is an
   (eps, delta)-DP saddle-point solver (default Algorithm 3, see :func:`default_inner`);
2. private best responses: parts S'_{2i}, S'_{2i+1} of n_b records each;
   y^^i ~ argmax_y F(x^i, y) and x^^i ~ argmin_x F(x, y^i), each computed by the private variance-reduced
   Frank-Wolfe of AFKT21 (Spec F2, :func:`~dpsco_lib.algorithms.vr_frank_wolfe.run_private_vr_frank_wolfe`) on
   the convex problems w -> -f(x^i, w; z) over Delta_dy and w -> f(w, y^i; z) over X
   (:func:`best_response_problem`);
3. gap estimates on a fresh part S'' of n_g records (the remaining ones):
   G^_i = (1/n_g) sum_{z in S''} [f(x^i, y^^i; z) - f(x^^i, y^i; z)] (:func:`estimate_gaps`);
4. selection: index j drawn by the exponential mechanism P(j) prop. to exp(-eps_sel G^_j/(2 Delta)), in log
   space (:func:`~dpsco_lib.privacy.mechanisms.exponential_mechanism_log_probs`); output (x^j, y^j).

Privacy (Prop. 3.21; derived here for the replace-one relation). Treat the whole transcript (all candidates, best
responses and the selected index) as the output; the returned pair is a post-processing of it. A record lies in
exactly one part. (a) In S_i: only candidate i depends on it, and (eps, delta)-DP by the inner solver; steps 2-4
only read candidate i and *other* records, so they are post-processing. (b) In a best-response part: only that
Frank-Wolfe run depends on it ((eps_fw, delta)-DP given candidate i); the estimate and the selection are
post-processing. (c) In S'': the candidates and best responses do not depend on it; the score u_i = -G^_i changes
by at most Delta = 2 r/n_g, where r bounds |f(x^i, y^^i; z) - f(x^^i, y^i; z)| for every record z. By Lipschitz
continuity r_i = L0 (||x^i - x^^i||_p + ||y^^i - y^i||_1) <= L0 (D_x + D_y) = 4 L0 (l1 diameter 2 of each simplex),
and with a declared bound |f| <= M also r_i <= 2 M. Since r_i is a function of released quantities it may be used
as the sensitivity (``score_sensitivity="realized"``, the default: Delta = 2 max_i r_i/n_g), or the
data-independent a-priori value 2 min(L0 (D_x + D_y), 2 M)/n_g (``"a_priori"``). The exponential mechanism with the
general (non-monotone) calibration is then eps_sel-DP (Thm 3.4, DR14 Thm 3.10). So every record's part is (max(eps,
eps_fw, eps_sel), delta)-DP and by parallel composition (McSherry 2009) so is the run. The ledger records exactly
this: one :class:`~dpsco_lib.privacy.accounting.ParallelEvent` with the k inner ledgers, the 2k Frank-Wolfe ledgers
and the selection (an eps_sel exponential mechanism).

Budget of steps 2 and 4 (split, calibrate, record).  The ledger certifies a parallel block by each accountant's
*worst part* (maximum of the per-method statistics: DRV sums, RDP curves), which can exceed the maximum of the
parts' individual certificates when different parts are tight for different accountants (e.g. the inner solver by
DRV, the selection by the pure-DP bound).  To keep ``result.certified_epsilon(delta) <= epsilon`` the Frank-Wolfe
runs and the selection use eps_fw = eps_sel = c * epsilon with c the largest value in a fixed grid
(1, 0.995, 0.99, 0.98, 0.96, ...) for which the parallel block of the exact events the run records (the inner
ledgers, the Frank-Wolfe ledgers their theory parameters plan, the selection) certifies the target under
``accountant`` (default ``"best"``, the tightest valid accountant and the one the ledger is read with): one
:func:`~dpsco_lib.privacy.accounting.budget.calibrate` over the grid index (c = 0.93-1 in the tests and
notebook 11).  Choosing c after the inner runs is valid because their ledgers (what ran) depend on public
parameters and the solvers' internal randomness only, not on the data (true for Algorithms 1 and 3).  The
parallel-composition bound, the maximum over parts of each part's own certificate, is at most the ledger's.
Accountants that do not apply to a heterogeneous parallel block (``"kov"``, ``"gdp"``, ``"pld"``) raise
``ValueError``.

Accuracy (Thm 3.20; the derivation behind :func:`alg4_theory_params`).  Four events, each failing with
probability at most beta/4:

* E1: some candidate has Gap(x^i, y^i) <= g_1 := 2 E[Gap of the inner solver on n_c records].  By Markov a
  run fails with probability <= 1/2 (more generally 1 - p_s), independently over the disjoint parts, so
  k = ceil(ln(4/beta)/ln(1/(1 - p_s))) = ceil(log2(4/beta)) runs suffice.
* E2: all 2k best responses are within (8k/beta) E[FW error] of optimal (Markov + union bound); for linear
  partial objectives (bilinear games) the report-noisy-min error has exponential tails and this factor is
  O(log(k/beta)).
* E3: |G^_i - (F(x^i, y^^i) - F(x^^i, y^i))| <= H := r sqrt(2 ln(8k/beta)/n_g) for all i (Hoeffding with
  values in [-r, r], union over k).
* E4: the selected score is within S := (2 Delta/eps_sel)(ln k + ln(4/beta)) of the best (DR14 Thm 3.11).

On E2-E4, with e_i >= 0 the two best-response errors of candidate i and Gap_i = F(x^i, y^^i) - F(x^^i, y^i) +
e_i, the selected j satisfies Gap_j <= G^_j + H + e_j <= G^_{i*} + S + H + e_j <= Gap_{i*} + S + 2H + e_j, so
with probability >= 1 - beta

    Gap(x^j, y^j) <= min_i Gap(x^i, y^i) + 2 H + S + e_j.

With n_c = n/(2k), n_b = n/(8k), n_g >= n/4 (default fractions 1/2, 1/4, 1/4) and the rate of Thm 3.14 for
min_i Gap_i this is O(log d/sqrt n + log d/sqrt(n eps)) up to polylog(1/beta) factors (Thm 3.20).

The library works in the idealized real-arithmetic model (float64 noise, non-cryptographic RNG).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from dpsco_lib._validation import (
    check_delta,
    check_epsilon,
    check_int,
    check_positive,
    check_probability,
    check_rng,
)
from dpsco_lib.algorithms._result import Result
from dpsco_lib.algorithms.vr_frank_wolfe import (
    run_private_vr_frank_wolfe,
    tree_ledger,
    vr_frank_wolfe_theory_params,
)
from dpsco_lib.geometry.norms import lp_norm
from dpsco_lib.geometry.sets import vertex_oracle
from dpsco_lib.privacy.accounting.budget import calibrate, check_accountant
from dpsco_lib.privacy.accounting.events import DpEvent
from dpsco_lib.privacy.accounting.ledger import PrivacyLedger, certify_events
from dpsco_lib.privacy.mechanisms import exponential_mechanism_log_probs, sample_categorical_log
from dpsco_lib.problems.base import SaddleProblem
from dpsco_lib.problems.best_response import BestResponseProblem, best_response_problem, partial_smoothness
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.games import check_saddle_data

__all__ = [
    "SCORE_SENSITIVITIES",
    "Alg4Params",
    "alg4_split",
    "alg4_theory_params",
    "best_response_problem",
    "default_inner",
    "estimate_gaps",
    "run_boosted_saddle",
    "select_candidate",
]

SCORE_SENSITIVITIES = ("realized", "a_priori")
DEFAULT_FRACTIONS = (0.5, 0.25, 0.25)
#: budget fractions c tried (in order) for the Frank-Wolfe runs and the selection (see the module docstring)
_C_GRID = (1.0, 0.995, 0.99, 0.98, 0.96, 0.93, 0.9, 0.85, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1)
_TINY = np.finfo(np.float64).tiny

InnerSolver = Callable[..., Result]


# ---------------------------------------------------------------------------------------------------------
# the inner solver
# ---------------------------------------------------------------------------------------------------------
def default_inner() -> InnerSolver:
    """The default inner solver of Algorithm 4: Algorithm 3 (Spec A3), ``run_bias_reduced_smd_saddle``.

    Imported lazily.  There is no silent fallback: if Algorithm 3 is not importable an ``ImportError`` says so
    and the caller must pass ``inner=`` explicitly (e.g. Algorithm 1,
    :func:`~dpsco_lib.algorithms.private_smd_saddle.run_private_smd_saddle`).
    """
    try:
        from dpsco_lib.algorithms.bias_reduced_saddle import run_bias_reduced_smd_saddle
    except ImportError as exc:  # pragma: no cover - depends on the tree
        raise ImportError(
            "the default inner solver of Algorithm 4 is Algorithm 3 "
            "(dpsco_lib.algorithms.bias_reduced_saddle.run_bias_reduced_smd_saddle), which could not be imported; "
            "pass inner=... explicitly (e.g. dpsco_lib.algorithms.private_smd_saddle.run_private_smd_saddle)"
        ) from exc
    return run_bias_reduced_smd_saddle


# ---------------------------------------------------------------------------------------------------------
# parameters
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Alg4Params:
    """Hyperparameters of Algorithm 4 and the terms of its high-probability bound (Spec A4, Thm 3.20).

    Attributes
    ----------
    n, k : int
        Records and number of candidates.
    beta, inner_success : float
        Target failure probability and the success probability p_s assumed per inner run.
    fractions : tuple of float
        Shares (candidates, best responses, gap estimate) of the records.
    n_candidate, n_best_response, n_gap : int
        Records per inner run, per Frank-Wolfe run (2k runs) and in the gap part (the remainder).
    score_range : float
        r with |f(x, y^; z) - f(x^, y; z)| <= r for every record: min(L0 (D_x + D_y), 2 M) (M = ``loss_bound``;
        D_x + D_y = 4 for two simplices).
    score_sensitivity : float
        The a-priori sensitivity 2 r/n_g of a gap estimate.
    hoeffding_term : float
        H = r sqrt(2 ln(8k/beta)/n_g).
    selection_term : float
        S = (2 Delta/eps)(ln k + ln(4/beta)) at the a-priori Delta and the full epsilon.
    fw_markov_factor : float
        8k/beta (event E2 by Markov's inequality).
    """

    n: int
    k: int
    beta: float
    inner_success: float
    fractions: tuple[float, float, float]
    n_candidate: int
    n_best_response: int
    n_gap: int
    score_range: float
    score_sensitivity: float
    hoeffding_term: float
    selection_term: float
    fw_markov_factor: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check_fractions(fractions: Any) -> tuple[float, float, float]:
    try:
        fr = tuple(float(f) for f in fractions)
    except TypeError as exc:
        raise ValueError(f"fractions must be three positive numbers summing to 1, got {fractions!r}") from exc
    if len(fr) != 3 or any(not math.isfinite(f) or f <= 0 for f in fr) or abs(sum(fr) - 1.0) > 1e-9:
        raise ValueError(f"fractions must be three positive numbers summing to 1, got {fractions!r}")
    return fr  # type: ignore[return-value]


def alg4_split(n: int, *, k: int, fractions: Any = DEFAULT_FRACTIONS) -> dict[str, Any]:
    """The data-independent partition of positions 0..n-1 used by Algorithm 4 (Spec A4).

    ``n_c = floor(f_c n/k)`` records per candidate, ``n_b = floor(f_b n/(2k))`` per best-response run, the
    remaining ``n_g = n - k n_c - 2k n_b`` (>= floor(f_g n)) for the gap estimates, in this order.

    Returns
    -------
    dict
        ``candidate``: list of k (start, stop); ``best_response``: list of 2k (start, stop) (entry 2i for y^^i,
        2i + 1 for x^^i); ``gap``: (start, stop); and the sizes ``n_candidate``, ``n_best_response``, ``n_gap``.
    """
    n = check_int(n, "n", lo=1)
    k = check_int(k, "k", lo=1)
    fc, fb, _ = _check_fractions(fractions)
    n_c = int(math.floor(fc * n / k))
    n_b = int(math.floor(fb * n / (2 * k)))
    n_g = n - k * n_c - 2 * k * n_b
    if n_c < 1 or n_b < 4 or n_g < 1:
        need = max(math.ceil(k / fc), math.ceil(8 * k / fb), 2)
        raise ValueError(
            f"n = {n} is too small for k = {k} candidates with fractions {fractions!r}: needs >= 1 record per "
            f"candidate, >= 4 per best-response run and >= 1 for the gap (got {n_c}, {n_b}, {n_g}); use n >= {need}"
        )
    cand = [(i * n_c, (i + 1) * n_c) for i in range(k)]
    off = k * n_c
    br = [(off + i * n_b, off + (i + 1) * n_b) for i in range(2 * k)]
    off += 2 * k * n_b
    return {"candidate": cand, "best_response": br, "gap": (off, n), "n_candidate": n_c, "n_best_response": n_b,
            "n_gap": n_g}


def alg4_theory_params(
    n: int,
    epsilon: float,
    L0: float,
    *,
    beta: float = 0.05,
    k: int | None = None,
    inner_success: float = 0.5,
    fractions: Any = DEFAULT_FRACTIONS,
    loss_bound: float | None = None,
    diameter_sum: float = 4.0,
) -> Alg4Params:
    r"""k, the split sizes and the bound terms of Algorithm 4 (Spec A4, Thm 3.20 of [GGP24]).

    Derivation (see the module docstring for the four events, each failing with probability <= beta/4):

    * k: the inner runs are independent (disjoint data, independent randomness), each with
      P(Gap <= 2 E Gap) >= p_s (p_s = 1/2 by Markov); all k fail with probability (1 - p_s)^k <= beta/4 iff
      k >= ln(4/beta)/ln(1/(1 - p_s)), so k = ceil(log2(4/beta)) = O(log(1/beta)) (k = 7 at beta = 0.05).
    * split sizes: n_c = floor(n/(2k)), n_b = floor(n/(8k)), n_g = the rest (>= n/4) by default: every term of
      the bound then loses only constant and O(k) = O(log(1/beta)) factors relative to using all n records.
    * score sensitivity: |f(x, y^; z) - f(x^, y; z)| <= L0 (||x - x^||_p + ||y^ - y||_1) <= 4 L0 (and <= 2 M if
      |f| <= M), so replacing one of the n_g records moves a gap estimate by <= 2 r/n_g with r = min(4 L0, 2 M).
    * H = r sqrt(2 ln(8k/beta)/n_g) (Hoeffding, union over k) and S = (2 Delta/eps)(ln k + ln(4/beta))
      (DR14 Thm 3.11); both are O(sqrt(log(k/beta)/n) + log(k/beta)/(eps n)), below the inner rate.

    Parameters
    ----------
    n : int
        Records.
    epsilon : float
        Target epsilon (only the selection term uses it).
    L0 : float
        Lipschitz constant (l1 setting).
    beta : float
        Failure probability in (0, 1).
    k : int, optional
        Override the number of candidates.
    inner_success : float
        p_s in (0, 1): the probability that one inner run attains twice its expected gap.
    fractions : three positive floats summing to 1
        Shares of the candidate, best-response and gap parts.
    loss_bound : float, optional
        M with |f(x, y; z)| <= M for all feasible points and records (tightens r).
    diameter_sum : float
        D_x + D_y, the diameters of X (in its norm p) and Y (l1); 4 for two simplices (the paper's setting).
        Then r = min(L0 (D_x + D_y), 2 M).
    """
    n = check_int(n, "n", lo=1)
    eps = check_epsilon(epsilon)
    L0 = check_positive(L0, "L0")
    beta = check_probability(beta, "beta", open_left=True, open_right=True)
    p_s = check_probability(inner_success, "inner_success", open_left=True, open_right=True)
    fr = _check_fractions(fractions)
    if k is None:
        k = max(1, math.ceil(math.log(4.0 / beta) / math.log(1.0 / (1.0 - p_s)) - 1e-12))
    else:
        k = check_int(k, "k", lo=1)
    r = check_positive(diameter_sum, "diameter_sum") * L0
    if loss_bound is not None:
        r = min(r, 2.0 * check_positive(loss_bound, "loss_bound"))
    split = alg4_split(n, k=k, fractions=fr)
    n_g = split["n_gap"]
    sens = 2.0 * r / n_g
    return Alg4Params(
        n=n, k=int(k), beta=beta, inner_success=p_s, fractions=fr, n_candidate=split["n_candidate"],
        n_best_response=split["n_best_response"], n_gap=n_g, score_range=r, score_sensitivity=sens,
        hoeffding_term=r * math.sqrt(2.0 * math.log(8.0 * k / beta) / n_g),
        selection_term=(2.0 * sens / eps) * (math.log(k) + math.log(4.0 / beta)),
        fw_markov_factor=8.0 * k / beta,
    )


def estimate_gaps(
    problem: SaddleProblem,
    *,
    xs: np.ndarray,
    ys: np.ndarray,
    x_hat: np.ndarray,
    y_hat: np.ndarray,
    data: Dataset,
) -> np.ndarray:
    """G^_i = (1/m) sum_z [f(x_i, y^_i; z) - f(x^_i, y_i; z)] for each candidate (Spec A4, step 3).

    An unbiased estimate of F(x_i, y^_i) - F(x^_i, y_i) <= Gap(x_i, y_i) when the records are fresh.
    """
    xs, ys = np.atleast_2d(xs), np.atleast_2d(ys)
    x_hat, y_hat = np.atleast_2d(x_hat), np.atleast_2d(y_hat)
    data = problem.validate_data(data)
    if data.n < 1:
        raise ValueError("data must hold at least one record")
    k = xs.shape[0]
    if not (ys.shape[0] == x_hat.shape[0] == y_hat.shape[0] == k):
        raise ValueError(f"xs, ys, x_hat, y_hat must have the same number of rows, got "
                         f"{xs.shape[0]}, {ys.shape[0]}, {x_hat.shape[0]}, {y_hat.shape[0]}")
    out = np.empty(k)
    for i in range(k):  # k = O(log(1/beta)) candidates; each term is vectorized over the records
        out[i] = float(np.mean(problem.loss(xs[i], y_hat[i], data) - problem.loss(x_hat[i], ys[i], data)))
    return out


def select_candidate(
    estimated_gaps: np.ndarray,
    *,
    sensitivity: float,
    epsilon: float,
    rng: np.random.Generator,
) -> tuple[int, np.ndarray]:
    r"""Step 4 of Algorithm 4: the exponential mechanism on the scores u_i = -G^_i (Spec A4, P4).

    P(j) = exp(-eps G^_j/(2 Delta)) / sum_i exp(-eps G^_i/(2 Delta)) (general, non-monotone calibration), computed
    in log space by :func:`~dpsco_lib.privacy.mechanisms.exponential_mechanism_log_probs` and sampled exactly by
    :func:`~dpsco_lib.privacy.mechanisms.sample_categorical_log`; eps-DP when every G^_i has sensitivity
    <= Delta.  Returns (selected index, log-probabilities).
    """
    g = np.asarray(estimated_gaps, dtype=np.float64)
    if g.ndim != 1 or g.size == 0 or not np.all(np.isfinite(g)):
        raise ValueError(f"estimated_gaps must be a non-empty finite 1-D array, got shape {g.shape}")
    logp = exponential_mechanism_log_probs(-g, sensitivity=sensitivity, epsilon=epsilon)
    return int(sample_categorical_log(logp, rng=check_rng(rng))), logp


# ---------------------------------------------------------------------------------------------------------
# privacy: split, calibrate, record
# ---------------------------------------------------------------------------------------------------------
@lru_cache(maxsize=1024)
def _fw_plan(n_b: int, n_vertices: int, epsilon: float, delta: float, L0: float, L1: float, D: float,
             depth: int | None, batch_size: int | None, step_size: float | None,
             accountant: str | None) -> tuple[int, tuple[float, ...]]:
    """(depth, per-depth budgets) that :func:`run_private_vr_frank_wolfe` will use (its ledger, without running)."""
    acc = {} if accountant is None else {"accountant": accountant}  # None: the Frank-Wolfe default
    prm = vr_frank_wolfe_theory_params(n_b, n_vertices, epsilon, delta, L0, L1, D, depth=depth,
                                       batch_size=batch_size, step_size=step_size, **acc)
    get = prm.__getitem__ if isinstance(prm, Mapping) else prm.__getattribute__
    return int(get("depth")), tuple(float(e) for e in get("depth_epsilons"))


def _selection_ledger(eps_sel: float) -> PrivacyLedger:
    led = PrivacyLedger()
    led.record_exponential(eps_sel, label="Alg 4 selection: exponential mechanism on -estimated gaps")
    return led


def _combine(inner: list[PrivacyLedger], fw: list[PrivacyLedger], sel: PrivacyLedger) -> PrivacyLedger:
    return PrivacyLedger.parallel(*inner, *fw, sel, label="Algorithm 4: disjoint parts (parallel composition)")


def _split_fraction(inner: list[PrivacyLedger], fw_ledgers: Callable[[float], list[PrivacyLedger]], eps: float,
                    dl: float, accountant: str) -> float:
    """The fraction c of epsilon for the Frank-Wolfe runs and the selection: the largest c in :data:`_C_GRID`
    whose parallel block (the exact events the run records) ``accountant`` certifies at (eps, dl) (``"paper"``:
    DRV10, the composition of the papers' proofs).

    :func:`~dpsco_lib.privacy.accounting.budget.calibrate` solves over the grid index (discrete; the certificate
    decreases along the grid)."""

    def make_event(j: float) -> DpEvent:
        c = _C_GRID[min(max(int(j), 0), len(_C_GRID) - 1)]
        return _combine(inner, fw_ledgers(c * eps), _selection_ledger(c * eps)).events[0]

    method = "advanced" if accountant == "paper" else accountant  # the papers' proofs compose by DRV10

    def certified(j: int) -> float:
        return certify_events((make_event(j),), dl, method)

    if certified(0) <= eps:
        return _C_GRID[0]
    if certified(len(_C_GRID) - 1) > eps:
        raise RuntimeError(
            "the inner ledgers already combine to more than epsilon in the ledger's parallel rule (max of "
            f"per-method statistics); max over inner parts = {max(lg.epsilon(dl, accountant) for lg in inner)!r}"
        )
    cal = calibrate(make_event, epsilon=eps, delta=dl, accountant=method,
                    bracket=(1.0, float(len(_C_GRID) - 1)), increasing=False, discrete=True)
    return _C_GRID[int(cal.value)]


# ---------------------------------------------------------------------------------------------------------
# the algorithm
# ---------------------------------------------------------------------------------------------------------
_FW_KEYS = ("depth", "batch_size", "step_size", "distance", "accountant")


def run_boosted_saddle(
    problem: SaddleProblem,
    data: Dataset,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    k: int | None = None,
    beta: float = 0.05,
    inner: InnerSolver | None = None,
    inner_kwargs: Mapping[str, Any] | None = None,
    fractions: Any = DEFAULT_FRACTIONS,
    best_response_kwargs: Mapping[str, Any] | None = None,
    best_response_L1: float | None = None,
    loss_bound: float | None = None,
    score_sensitivity: str = "realized",
    accountant: str = "best",
) -> Result:
    r"""Algorithm 4 of [GGP24]: (eps, delta)-DP saddle point with a high-probability gap (Spec A4, Thm 3.20).

    See the module docstring for the algorithm, its privacy proof and the accuracy derivation.

    Parameters
    ----------
    problem : SaddleProblem
        Convex-concave problem over a polytope X and the simplex Y (l1 setting).
    data : Dataset
        n records within the problem's bounds; cut by position into the 3k + 1 parts of :func:`alg4_split`.
    epsilon, delta : float
        Target; delta in (0, 1) (the inner solvers need delta > 0).
    rng : numpy.random.Generator
        The only source of randomness (consumed in a fixed order: inner runs, best responses, selection).
    k : int, optional
        Number of candidates (default :func:`alg4_theory_params` at ``beta``: ceil(log2(4/beta))).
    beta : float
        Target failure probability (only used for the default k).
    inner : callable, optional
        The inner solver, with the signature of
        :func:`~dpsco_lib.algorithms.private_smd_saddle.run_private_smd_saddle`:
        ``inner(problem, data, *, epsilon, delta, rng, **inner_kwargs) -> Result`` with ``x``, ``y`` and a
        ``ledger``.  Default (``None``): Algorithm 3 via :func:`default_inner` (ImportError if unavailable; no
        silent fallback).
    inner_kwargs : mapping, optional
        Extra keyword arguments of every inner run (e.g. ``{"regime": "quadratic"}`` for Algorithm 1, or
        ``{"accountant": "best"}`` to calibrate the inner runs with the tightest accountant).
    fractions : three positive floats summing to 1
        Shares of the candidate, best-response and gap parts (default 1/2, 1/4, 1/4).
    best_response_kwargs : mapping, optional
        ``depth``, ``batch_size``, ``step_size``, ``distance``, ``accountant`` of the Frank-Wolfe runs (defaults:
        Spec F2 theory parameters, except ``depth = 1`` when the partial functions are linear, ``best_response_L1 = 0``:
        the Frank-Wolfe optimization error L1 D^2/T then vanishes and every further leaf only splits the
        budget, so the shallowest tree, T = 2 selections, is the best choice).
    best_response_L1 : float, optional
        Smoothness of the partial functions (default: see :func:`best_response_problem`).
    loss_bound : float, optional
        M with |f| <= M on feasible points and valid records (tightens the score sensitivity).
    score_sensitivity : {"realized", "a_priori"}
        Sensitivity of the gap estimates: 2 max_i r_i/n_g from the released candidates and best responses, or
        the data-independent 2 min(L0 (D_x + D_y), 2 M)/n_g.
    accountant : str
        One of :data:`~dpsco_lib.privacy.accounting.budget.ACCOUNTANTS`: the accountant that certifies the
        parallel block when the budget fraction c of the Frank-Wolfe runs and the selection is calibrated
        (module docstring, "Budget of steps 2 and 4").  Default ``"best"``, the tightest valid accountant (the
        minimum over the applicable ones), which is also how the ledger is read by default; the inner runs and
        the Frank-Wolfe runs calibrate their own noise with their own defaults (set them with ``inner_kwargs``
        and ``best_response_kwargs``).

    Returns
    -------
    Result
        ``x, y`` the selected candidate; ``params`` (Alg4Params fields plus the budgets used); ``ledger`` (one
        parallel block; ``result.certified_epsilon(delta) <= epsilon``); ``info`` with every candidate, best
        response, gap estimate, the selection log-probabilities and the selected index.
    """
    data, prm, eps, dl = _check_run(problem, data, epsilon, delta, rng, k, beta, fractions, loss_bound,
                                    score_sensitivity)
    accountant = check_accountant(accountant)
    solver = default_inner() if inner is None else inner
    if not callable(solver):
        raise ValueError(f"inner must be callable, got {type(solver).__name__}")
    L1_br = partial_smoothness(problem, value=best_response_L1)
    bkw = _fw_kwargs(best_response_kwargs, L1_br)
    split = alg4_split(data.n, k=prm.k, fractions=prm.fractions)
    # 1. candidates on disjoint parts
    X, Y, inner_ledgers, inner_info = _candidates(problem, data, split, solver, dict(inner_kwargs or {}), eps, dl, rng)
    # split and calibrate: budget c * epsilon of the Frank-Wolfe runs and of the selection
    fw_geom = tuple((vertex_oracle(s)[0], float(s.diameter(p)))
                    for s, p in ((problem.y_set, 1.0), (problem.x_set, float(problem.p))))

    def fw_ledgers(eps_fw: float) -> list[PrivacyLedger]:
        return _planned_fw_ledgers(problem, split, fw_geom, eps_fw, dl, L1_br, bkw, prm.k)

    c_used = _split_fraction(inner_ledgers, fw_ledgers, eps, dl, accountant)
    eps_aux = c_used * eps
    # 2. private best responses (Spec F2) on disjoint parts
    x_hat, y_hat, fw_led = _best_responses(problem, data, split, X, Y, L1_br, bkw, eps_aux, dl, rng)
    # 3. gap estimates on the fresh part, 4. exponential-mechanism selection
    ga, gb = split["gap"]
    gaps_hat = estimate_gaps(problem, xs=X, ys=Y, x_hat=x_hat, y_hat=y_hat, data=data[ga:gb])
    r_i, sens = _score_sensitivity(problem, X, Y, x_hat, y_hat, loss_bound, score_sensitivity, split, prm)
    j_sel, logp = select_candidate(gaps_hat, sensitivity=sens, epsilon=eps_aux, rng=rng)
    # record: one parallel block over the disjoint parts
    ledger = _combine(inner_ledgers, fw_led, _selection_ledger(eps_aux))
    params = prm.as_dict()
    params.update({"epsilon_best_response": eps_aux, "epsilon_selection": eps_aux, "budget_fraction": c_used,
                   "score_sensitivity_used": sens, "score_sensitivity_mode": score_sensitivity,
                   "best_response_L1": L1_br, "accountant": accountant,
                   "inner_params": inner_info[0] if inner_info else {}})
    info = {
        "method": "Algorithm 4 (GGP24): boosting by private gap estimation and exponential-mechanism selection",
        "inner": getattr(solver, "__name__", repr(solver)), "target_epsilon": eps, "delta": dl,
        "selected": j_sel, "candidates_x": X, "candidates_y": Y, "best_responses_x": x_hat,
        "best_responses_y": y_hat, "estimated_gaps": gaps_hat, "score_ranges": r_i, "selection_log_probs": logp,
        "split": split,
    }
    return Result(x=X[j_sel].copy(), y=Y[j_sel].copy(), params=params, ledger=ledger, info=info)


def _check_run(problem: Any, data: Any, epsilon: Any, delta: Any, rng: Any, k: Any, beta: Any, fractions: Any,
               loss_bound: Any, score_sensitivity: Any) -> tuple[Dataset, Alg4Params, float, float]:
    """The public-boundary checks of :func:`run_boosted_saddle` and its theory parameters."""
    eps = check_epsilon(epsilon)
    dl = check_delta(delta, allow_zero=False)
    check_rng(rng)
    data = check_saddle_data(problem, data)
    if score_sensitivity not in SCORE_SENSITIVITIES:
        raise ValueError(f"score_sensitivity must be one of {SCORE_SENSITIVITIES}, got {score_sensitivity!r}")
    d_sum = float(problem.x_set.diameter(problem.p)) + float(problem.y_set.diameter(1.0))
    prm = alg4_theory_params(data.n, eps, problem.L0, beta=beta, k=k, fractions=fractions, loss_bound=loss_bound,
                             diameter_sum=d_sum)
    return data, prm, eps, dl


def _fw_kwargs(best_response_kwargs: Mapping[str, Any] | None, L1_br: float) -> dict[str, Any]:
    bkw = dict(best_response_kwargs or {})
    unknown = set(bkw) - set(_FW_KEYS)
    if unknown:
        raise ValueError(f"best_response_kwargs accepts only {_FW_KEYS}, got {sorted(unknown)}")
    if L1_br == 0.0 and "depth" not in bkw:
        # linear partial functions: no Frank-Wolfe optimization error, every extra leaf only splits the budget
        bkw["depth"] = 1
    return bkw


def _candidates(problem: SaddleProblem, data: Dataset, split: dict[str, Any], solver: InnerSolver,
                ikw: dict[str, Any], eps: float, dl: float, rng: np.random.Generator
                ) -> tuple[np.ndarray, np.ndarray, list[PrivacyLedger], list[dict[str, Any]]]:
    """Step 1: the k inner runs on the candidate parts (in order, from the one ``rng``)."""
    xs, ys, ledgers, infos = [], [], [], []
    for a, b in split["candidate"]:
        res = solver(problem, data[a:b], epsilon=eps, delta=dl, rng=rng, **ikw)
        if res.y is None or res.ledger is None:
            raise ValueError("inner must return a Result with both players (x, y) and a PrivacyLedger")
        xs.append(np.asarray(res.x, dtype=np.float64))
        ys.append(np.asarray(res.y, dtype=np.float64))
        ledgers.append(res.ledger)
        infos.append({key: v for key, v in res.params.items() if np.isscalar(v)})
    return np.vstack(xs), np.vstack(ys), ledgers, infos


def _planned_fw_ledgers(problem: SaddleProblem, split: dict[str, Any], fw_geom: tuple[tuple[int, float], ...],
                        eps_fw: float, dl: float, L1_br: float, bkw: dict[str, Any], k: int) -> list[PrivacyLedger]:
    """The ledgers the 2k Frank-Wolfe runs at budget ``eps_fw`` will record (order y^, x^ per candidate)."""
    out = []
    for nv, D in fw_geom:
        depth, eps_j = _fw_plan(split["n_best_response"], nv, eps_fw, dl, float(problem.L0), L1_br, D,
                                bkw.get("depth"), bkw.get("batch_size"), bkw.get("step_size"), bkw.get("accountant"))
        out.append(tree_ledger(np.array(eps_j), depth=depth))
    return out * k  # identical ledgers for all candidates


def _best_responses(problem: SaddleProblem, data: Dataset, split: dict[str, Any], X: np.ndarray, Y: np.ndarray,
                    L1_br: float, bkw: dict[str, Any], eps_aux: float, dl: float, rng: np.random.Generator
                    ) -> tuple[np.ndarray, np.ndarray, list[PrivacyLedger]]:
    """Step 2: y^^i and x^^i by the private Frank-Wolfe of Spec F2 on the best-response parts."""
    x_hat, y_hat, fw_led = np.empty_like(X), np.empty_like(Y), []
    for i in range(X.shape[0]):
        for player, j in (("y", 2 * i), ("x", 2 * i + 1)):
            a, b = split["best_response"][j]
            br = BestResponseProblem(problem, player, X[i] if player == "y" else Y[i], L1_br)
            res = run_private_vr_frank_wolfe(br, data[a:b], epsilon=eps_aux, delta=dl, rng=rng, **bkw)
            (y_hat if player == "y" else x_hat)[i] = res.x
            fw_led.append(res.ledger)
    return x_hat, y_hat, fw_led


def _score_sensitivity(problem: SaddleProblem, X: np.ndarray, Y: np.ndarray, x_hat: np.ndarray, y_hat: np.ndarray,
                       loss_bound: float | None, mode: str, split: dict[str, Any], prm: Alg4Params
                       ) -> tuple[np.ndarray, float]:
    """(r_i, Delta): the realized score ranges and the sensitivity the selection uses (module docstring)."""
    r_i = problem.L0 * (lp_norm(X - x_hat, problem.p, axis=1) + lp_norm(y_hat - Y, 1.0, axis=1))
    if loss_bound is not None:
        r_i = np.minimum(r_i, 2.0 * float(loss_bound))
    if mode == "realized":
        return r_i, max(2.0 * float(np.max(r_i)) / split["n_gap"], _TINY)
    return r_i, prm.score_sensitivity
