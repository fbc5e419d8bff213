r"""Private variance-reduced Frank-Wolfe with tree-structured batches (Spec F2; AFKT21).

Setting (spec/frank-wolfe.md). ``X = conv(V)`` for a finite vertex set ``V`` (Simplex, L1Ball, Polytope),
``f(., z)`` convex, ``L0``-Lipschitz and ``L1``-smooth in the setup norm ``||.||_p`` (gradients in the dual
norm ``||.||_q``), ``D = max_{x, y in X} ||x - y||_p``. Replace-one neighbours ``S ~ S'``.

Algorithm (Asi, Feldman, Koren and Talwar, ICML 2021, Alg. 2). A complete binary tree of depth ``k`` whose
``T = 2^k`` leaves are the Frank-Wolfe iterations ``t = 0, ..., T - 1`` in left-to-right (depth-first) order.
Every vertex ``u`` carries a start point ``x_u`` (the iterate when the depth-first traversal enters ``u``)
and a gradient estimate ``nabla_u``:

* the root (depth 0) takes a fresh batch ``B_root`` of ``b`` records and sets
  ``nabla_root = (1/b) sum_{z in B_root} grad f(x_0; z)``;
* a left child has the start point of its parent (it is entered first), so it inherits ``nabla_parent``
  and needs no data;
* a right child ``u`` at depth ``j`` takes a fresh batch ``B_u`` of ``b_j = floor(b / 2^j)`` records and
  corrects its parent ``w``: ``nabla_u = nabla_w + (1/b_j) sum_{z in B_u} (grad f(x_u; z) - grad f(x_w; z))``;
* leaf ``t`` uses the estimate of its deepest vertex, selects
  ``v_t = argmin_{v in V} <v, nabla_t> + Lap(lambda_t)`` (report noisy min, Spec P2) and steps
  ``x_{t+1} = (1 - eta_t) x_t + eta_t v_t`` with ``eta_t = 2/(t + 2)`` (or a constant ``step_size``).

Leaf ``t >= 1`` enters exactly one new right child, at depth ``j_t = k - tz(t)`` (``tz`` = number of trailing
zero bits), so batches are consumed in the order of the leaves and **every record is used in one vertex
only**: ``b + sum_{j=1}^k 2^{j-1} floor(b/2^j) <= b (1 + k/2)`` records in all. Output ``x_T``.

Sensitivity of each vertex's term (derived here). Condition on the released selections ``v_0, ..., v_{t-1}``:
they determine every start point before leaf ``t``, so both runs share the iterates and a changed record
changes only the term of the one vertex ``u`` whose batch holds it. Let ``delta_u`` be the change of that
term (hence of ``nabla_t`` for every leaf ``t`` below ``u``, and of no other leaf):

* root: ``||delta_root||_q = ||grad f(x_0; z) - grad f(x_0; z')||_q / b <= 2 L0 / b``;
* right child at depth ``j``: ``||delta_u||_q = ||(grad f(x_u; z) - grad f(x_w; z)) - (grad f(x_u; z') -
  grad f(x_w; z'))||_q / b_j <= 2 L1 ||x_u - x_w||_p / b_j``. The distance ``||x_u - x_w||_p`` is a function of
  the released selections (public given the past), so it is computed from the run; it is at most
  ``min(D, D sum_{s in [t_w, t_u)} eta_s)``, which shrinks like ``2^{k-j}/t_u`` for the decaying step.
  ``distance="realized"`` (default) uses the realized distance; ``distance="a_priori"`` uses this
  data-independent bound (:func:`a_priori_distances`), as the papers' analysis does, so that the noise scales
  do not depend on the trajectory (noisier trajectories would otherwise also get larger sensitivities).

For the report-noisy-min scores ``<v, nabla_t>`` the shift argument of Spec F1 (the argmin is invariant to a
common shift of all scores) gives the score sensitivity ``s_u = (1/2) max_{v, w in V} <v - w, delta_u> <=
(D/2) ||delta_u||_q``, i.e.

.. math:: s_{root} = \frac{L_0 D}{b}, \qquad s_u = \frac{L_1 D\,\|x_u - x_w\|_p}{b_j}.

Noise per depth and privacy. A record in the root's batch influences all ``m_0 = 2^k`` selections; a record in
a right child at depth ``j`` influences exactly the ``m_j = 2^{k-j}`` selections of the leaves below it, and
no other step depends on it (given the past). With a per-step budget ``eps_j`` for depth ``j``, leaf ``t``
uses the Laplace scale

.. math:: \lambda_t = \max_{u \in \mathrm{path}(t),\ u \text{ holds data}} \frac{2 s_u}{\varepsilon_{j(u)}},

so for every record (in vertex ``u`` at depth ``j``) each of its ``m_j`` selections is ``eps_j``-DP given the
past (report noisy min with the general, non-monotone scale ``2 s/eps``), and the other selections cost
nothing. The run is therefore a *parallel* composition over the disjoint batches of sequential compositions
of ``m_j`` pure ``eps_j`` steps; the ledger records exactly that (:meth:`PrivacyLedger.parallel`, one part
per depth; all vertices of one depth have identical parts). The per-depth budgets come from the budget path,
:func:`~dpsco_lib.privacy.accounting.budget.parallel_per_step_epsilons`: ``eps_j(theta) = max(theta/m_j,
eps_DRV(theta, m_j))`` (the budget with which depth ``j`` alone certifies ``theta`` by basic or DRV10
composition), and ``theta`` is the largest value for which the run's ledger certifies ``epsilon`` under the
chosen ``accountant`` (``"best"`` by default: the tightest valid accountant of the parallel event, which is also
the accountant the library has always certified this tree with; ``"rdp"``, ``"advanced"``, ``"basic"``,
``"kov"`` certify with that one alone, usually with a smaller ``theta``; ``"paper"`` has no closed form here and
raises). ``delta = 0``: ``eps_j = epsilon/m_j`` (basic composition, pure DP).

Rate (AFKT21, as stated in Bassily-Guzmán-Nandi 2021): ``O((L0 D + L1 D^2) sqrt(ln|V|/n) ln n + L1 D^2 (ln|V| ln^2 n
ln(1/delta)/(eps n))^{2/3})`` with ``T ~ (eps n / (ln|V| sqrt(ln(1/delta))))^{2/3}`` leaves (the default).

The tree and batch schedule (:func:`tree_batch_schedule`) is shared with the GG version (Spec F3,
:mod:`dpsco_lib.algorithms.gg_vr_sfw`). For a linear-in-``x`` objective (``L1 = 0``, Algorithm 4's private
best responses) the corrections are data-independent (``s_u = 0``), so only the root's batch matters.

The library works in the idealized real-arithmetic model with float64 noise from a non-cryptographic RNG.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from dpsco_lib._validation import (
    check_bool,
    check_delta,
    check_epsilon,
    check_in_range,
    check_int,
    check_positive,
    check_rng,
)
from dpsco_lib.algorithms._result import Result
from dpsco_lib.geometry.norms import lp_norm
from dpsco_lib.geometry.sets import vertex_oracle
from dpsco_lib.privacy.accounting import PrivacyLedger
from dpsco_lib.privacy.accounting.accountants import DEFAULT_ACCOUNTANT, AccountantLike
from dpsco_lib.privacy.accounting.budget import check_accountant, parallel_per_step_epsilons
from dpsco_lib.problems.base import Problem
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.empirical import require_problem
from dpsco_lib.testing import noise_scale

__all__ = [
    "DISTANCES",
    "VrFrankWolfeParams",
    "a_priori_distances",
    "fw_weights",
    "max_tree_depth",
    "records_used",
    "run_private_vr_frank_wolfe",
    "tree_batch_schedule",
    "tree_depth_epsilons",
    "tree_ledger",
    "vr_frank_wolfe_theory_params",
]


# ---------------------------------------------------------------------------------------------------------
# tree schedule (shared with Spec F3)
# ---------------------------------------------------------------------------------------------------------
def records_used(depth: int, *, batch_size: int) -> int:
    """Records consumed by a tree of depth ``k`` with root batch ``b``: ``b + sum_j 2^(j-1) floor(b/2^j)``."""
    return batch_size + sum((1 << (j - 1)) * (batch_size >> j) for j in range(1, depth + 1))


def max_tree_depth(n: int) -> int:
    """Largest k >= 1 with 2^k <= floor(n / (1 + k/2)) (every batch non-empty), or 0 if none."""
    best = 0
    for k in range(1, 64):
        b = int(n / (1.0 + k / 2.0))
        if (1 << k) > b:
            break
        best = k
    return best


def tree_batch_schedule(n: int, *, depth: int, batch_size: int | None = None) -> dict[str, Any]:
    r"""Batch layout of the tree of Spec F2/F3 over ``n`` records.

    Leaf ``t = 0`` uses the root's batch (records ``[0, b)``); leaf ``t >= 1`` enters the right child at depth
    ``j_t = k - tz(t)`` whose batch of ``b_j = floor(b/2^j)`` records follows the previous one.

    Parameters
    ----------
    n : int
        Number of records available.
    depth : int
        ``k >= 1`` (``T = 2^k`` leaves).
    batch_size : int, optional
        Root batch ``b`` (default: the largest ``b`` with ``records_used(k, batch_size=b) <= n``). Needs
        ``b >= 2^k`` so that every batch is non-empty.

    Returns
    -------
    dict
        ``depth``, ``T``, ``batch_size`` (b), ``batch_sizes`` (array ``b_j``, j = 0..k), ``leaf_depth``
        (array: ``j_t`` for t >= 1, 0 for t = 0), ``offsets`` (array of length T + 1: leaf t's batch is
        ``[offsets[t], offsets[t+1])``), ``records_used``.
    """
    n = check_int(n, "n", lo=1)
    k = check_int(depth, "depth", lo=1, hi=62)
    if batch_size is None:
        b = int(n / (1.0 + k / 2.0))
        while b < n and records_used(k, batch_size=b + 1) <= n:
            b += 1
        while b > 0 and records_used(k, batch_size=b) > n:
            b -= 1
    else:
        b = check_int(batch_size, "batch_size", lo=1)
    if b < (1 << k):
        raise ValueError(
            f"batch_size must be >= 2^depth = {1 << k} so that every vertex batch floor(b/2^j) is non-empty; got "
            f"batch_size={b} (n={n}, depth={k}); use a smaller depth (largest feasible for this n: {max_tree_depth(n)})"
        )
    used = records_used(k, batch_size=b)
    if used > n:
        raise ValueError(
            f"the tree with depth={k} and batch_size={b} needs {used} records (b + sum_j 2^(j-1) floor(b/2^j)), "
            f"but n={n}"
        )
    T = 1 << k
    t = np.arange(1, T)
    tz = np.log2(t & -t).astype(np.int64)
    leaf_depth = np.concatenate([[0], k - tz])
    sizes = np.array([b >> j for j in range(k + 1)], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes[leaf_depth])])
    return {
        "depth": k,
        "T": T,
        "batch_size": b,
        "batch_sizes": sizes,
        "leaf_depth": leaf_depth,
        "offsets": offsets,
        "records_used": int(offsets[-1]),
    }


# ---------------------------------------------------------------------------------------------------------
# privacy: per-depth budgets and the ledger
# ---------------------------------------------------------------------------------------------------------
def tree_ledger(depth_epsilons: np.ndarray, *, depth: int) -> PrivacyLedger:
    """Ledger of the tree: parallel composition over depths of ``m_j = 2^(k-j)`` pure ``eps_j`` selections."""
    parts = []
    for j, e in enumerate(np.asarray(depth_epsilons, dtype=np.float64)):
        led = PrivacyLedger()
        led.record_pure(float(e), count=1 << (depth - j),
                        label=f"report-noisy-min at the 2^{depth - j} leaves below a depth-{j} batch (Spec F2)")
        parts.append(led)
    return PrivacyLedger.parallel(*parts, label="disjoint tree batches (Spec F2): worst depth")


def tree_depth_epsilons(
    epsilon: float, *, delta: float, depth: int, accountant: AccountantLike = DEFAULT_ACCOUNTANT
) -> np.ndarray:
    r"""Per-depth per-selection budgets ``eps_j``, ``j = 0..k``, of the tree of Spec F2 (module docstring).

    Depth ``j`` runs ``m_j = 2^(k - j)`` selections per record; the budgets are
    :func:`~dpsco_lib.privacy.accounting.budget.parallel_per_step_epsilons` of the counts ``m_j``, so that
    ``tree_ledger(eps_j, depth=k).epsilon(delta, accountant) <= epsilon`` (``delta = 0``: ``eps_j = epsilon/m_j``, basic
    composition, for every accountant).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    k = check_int(depth, "depth", lo=0, hi=62)
    accountant = check_accountant(accountant)
    counts = tuple(1 << (k - j) for j in range(k + 1))
    eps_j, _ = parallel_per_step_epsilons(counts, epsilon=epsilon, delta=delta,
                                          accountant="basic" if delta == 0 else accountant)
    return np.array(eps_j, dtype=np.float64)


# ---------------------------------------------------------------------------------------------------------
# parameters
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class VrFrankWolfeParams:
    """Hyperparameters of the tree Frank-Wolfe of Spec F2 (:func:`vr_frank_wolfe_theory_params`).

    Attributes
    ----------
    depth, T : int
        Tree depth ``k`` and number of leaves (selections) ``T = 2^k``.
    batch_size : int
        Root batch ``b``.
    batch_sizes : ndarray of int
        ``b_j = floor(b/2^j)``, ``j = 0..k``.
    records_used : int
        ``b + sum_j 2^(j-1) b_j``.
    depth_epsilons : ndarray
        Per-selection budget ``eps_j`` of a record in a depth-``j`` batch (:func:`tree_depth_epsilons`).
    selections_per_record : ndarray of int
        ``m_j = 2^(k-j)``.
    step_size : float or None
        Constant ``eta``, or None for the decaying ``2/(t + 2)``.
    accountant : str
        The accountant that calibrated ``depth_epsilons`` (``"basic"`` when delta = 0).
    sensitivity_root, laplace_scale_root : float
        ``L0 D / b`` and ``2 L0 D / (b eps_0)``.
    rate_bound : float
        The AFKT21 bound (module docstring), constant 1.
    """

    depth: int
    T: int
    batch_size: int
    batch_sizes: np.ndarray
    records_used: int
    depth_epsilons: np.ndarray
    selections_per_record: np.ndarray
    step_size: float | None
    accountant: str
    sensitivity_root: float
    laplace_scale_root: float
    rate_bound: float

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (``Result.params`` of a run)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def vr_frank_wolfe_theory_params(
    n: int,
    num_vertices: int,
    epsilon: float,
    delta: float,
    L0: float,
    L1: float,
    D: float,
    *,
    depth: int | None = None,
    batch_size: int | None = None,
    step_size: float | None = None,
    accountant: AccountantLike = DEFAULT_ACCOUNTANT,
) -> VrFrankWolfeParams:
    r"""Hyperparameters of the private VR Frank-Wolfe of Spec F2 (AFKT21) and its rate bound.

    Default depth: ``k = round(log2 T*)`` with ``T* = (eps n / (ln|V| sqrt(ln(1/delta))))^{2/3}`` (the balance
    of the optimization error ``L1 D^2 / T`` with the noisy-max error of the root, whose budget is spread over
    ``T`` selections), clipped to ``[1, k_max(n)]`` where ``k_max`` is the deepest tree whose batches are all
    non-empty. Default root batch: the largest ``b`` with ``b + sum_j 2^(j-1) floor(b/2^j) <= n``.

    Parameters
    ----------
    n, num_vertices : int
        Records (``>= 4``) and ``|V|`` (``>= 2``).
    epsilon, delta : float
        Target; ``delta`` in [0, 1).
    L0, L1, D : float
        Lipschitz / smoothness constants (dual norm) and the ``p``-diameter of ``X``.
    depth, batch_size : int, optional
        Override the tree depth ``k`` and root batch ``b``.
    step_size : float, optional
        Constant ``eta`` in (0, 1]; default the decaying ``eta_t = 2/(t + 2)``.
    accountant : str
        The accountant that calibrates the per-depth budgets and certifies the run (module docstring):
        ``"best"`` (default; the tightest valid accountant), ``"rdp"``, ``"advanced"``, ``"kov"``, ``"basic"``.

    Returns
    -------
    VrFrankWolfeParams
    """
    n = check_int(n, "n", lo=4)
    nv = check_int(num_vertices, "num_vertices", lo=2)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    L0 = check_positive(L0, "L0")
    L1 = check_positive(L1, "L1", allow_zero=True)
    D = check_positive(D, "D")
    accountant = check_accountant(accountant)
    if step_size is not None:
        step_size = check_in_range(step_size, "step_size", 0.0, 1.0, lo_inclusive=False)
    log_v = math.log(nv)
    log_delta = math.log(1.0 / delta) if delta > 0 else 1.0
    kmax = max_tree_depth(n)
    if kmax < 1:
        raise ValueError(f"n={n} is too small for a tree of depth >= 1 (need n >= 4)")
    if depth is None:
        t_star = (epsilon * n / (log_v * math.sqrt(log_delta))) ** (2.0 / 3.0)
        k = int(min(max(round(math.log2(max(t_star, 2.0))), 1), kmax))
        if batch_size is not None:
            k = max(1, min(k, int(math.floor(math.log2(check_int(batch_size, "batch_size", lo=2))))))
    else:
        k = check_int(depth, "depth", lo=1, hi=62)
    sched = tree_batch_schedule(n, depth=k, batch_size=batch_size)
    eps_j = tree_depth_epsilons(epsilon, delta=delta, depth=k, accountant=accountant)
    b = sched["batch_size"]
    s_root = L0 * D / b
    rate = (L0 * D + L1 * D * D) * math.sqrt(log_v / n) * math.log(n) + L1 * D * D * (
        log_v * math.log(n) ** 2 * log_delta / (epsilon * n)
    ) ** (2.0 / 3.0)
    return VrFrankWolfeParams(
        depth=k, T=sched["T"], batch_size=b, batch_sizes=sched["batch_sizes"], records_used=sched["records_used"],
        depth_epsilons=eps_j, selections_per_record=np.array([1 << (k - j) for j in range(k + 1)], dtype=np.int64),
        step_size=step_size, accountant="basic" if delta == 0 else accountant, sensitivity_root=s_root,
        laplace_scale_root=2.0 * s_root / float(eps_j[0]), rate_bound=rate,
    )


def _step_sizes(T: int, step_size: float | None) -> np.ndarray:
    if step_size is None:
        return 2.0 / (np.arange(T, dtype=np.float64) + 2.0)
    return np.full(T, float(step_size))


DISTANCES = ("realized", "a_priori")


def a_priori_distances(etas: np.ndarray, *, leaf_depth: np.ndarray, depth: int, D: float) -> np.ndarray:
    r"""Data-independent bounds on ``||x_u - x_parent||_p`` for the right child entered at each leaf (Spec F2/F3).

    The right child entered at leaf ``t`` (depth ``j = leaf_depth[t]``) has its parent's start at leaf
    ``t - 2^(k-j)``, and ``||x_{s+1} - x_s||_p = eta_s ||v_s - x_s||_p <= eta_s D``, so
    ``||x_t - x_{t - 2^(k-j)}||_p <= min(D, D sum_{s = t - 2^(k-j)}^{t-1} eta_s)``. Entry 0 (the root) is 0.
    """
    etas = np.asarray(etas, dtype=np.float64)
    csum = np.concatenate([[0.0], np.cumsum(etas)])
    t = np.arange(len(leaf_depth))
    span = np.where(t > 0, 1 << (depth - np.asarray(leaf_depth)), 0)
    out = np.minimum(D, D * (csum[t] - csum[t - span]))
    out[0] = 0.0
    return out


def fw_weights(etas: np.ndarray) -> np.ndarray:
    """Weights ``w_t = eta_t prod_{s > t} (1 - eta_s)`` of ``v_t`` in ``x_T`` for ``x_{t+1} = (1-eta_t) x_t +
    eta_t v_t`` (the weight of ``x_0`` is ``prod_s (1 - eta_s)``)."""
    etas = np.asarray(etas, dtype=np.float64)
    keep = np.concatenate([np.cumprod((1.0 - etas)[::-1])[::-1][1:], [1.0]])
    return etas * keep


# ---------------------------------------------------------------------------------------------------------
# the algorithm
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Setup:
    data: Dataset
    n_vertices: int
    scores_of: Any
    move: Any
    D: float
    params: VrFrankWolfeParams
    sched: dict[str, Any]
    etas: np.ndarray
    noise_mult: float


def _setup(problem: Problem, data: Dataset, epsilon: float, delta: float, rng: Any, depth: int | None,
           batch_size: int | None, step_size: float | None, accountant: str, distance: str, trace: bool,
           noise_multiplier: float) -> _Setup:
    require_problem(problem)  # a Problem, or a TypeError saying how to build one from arrays (from_data)
    check_rng(rng)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    accountant = check_accountant(accountant)
    check_bool(trace, "trace")
    noise_mult = check_positive(noise_multiplier, "noise_scale()")
    if distance not in DISTANCES:
        raise ValueError(f"distance must be one of {DISTANCES}, got {distance!r}")
    try:
        n_vertices, scores_of, move = vertex_oracle(problem.feasible_set)
    except (ValueError, TypeError, NotImplementedError) as exc:
        raise ValueError(f"problem must have a polytope feasible set with a vertex oracle: {exc}") from exc
    data = problem.validate_data(data)
    if data.n < 4:
        raise ValueError(f"data must hold n >= 4 records for a tree of depth >= 1, got {data.n}")
    D = float(problem.feasible_set.diameter(problem.p))
    params = vr_frank_wolfe_theory_params(
        data.n, n_vertices, epsilon, delta, float(problem.L0), float(problem.L1), D, depth=depth,
        batch_size=batch_size, step_size=step_size, accountant=accountant,
    )
    sched = tree_batch_schedule(data.n, depth=params.depth, batch_size=params.batch_size)
    etas = _step_sizes(params.T, params.step_size)
    return _Setup(data, n_vertices, scores_of, move, D, params, sched, etas, noise_mult)


def _tree_loop(problem: Problem, st: _Setup, rng: np.random.Generator, distance: str) -> dict[str, Any]:
    """The depth-first traversal of the tree: one report-noisy-min selection and one FW step per leaf."""
    prm, data, D = st.params, st.data, st.D
    k, T, b, eps_j = prm.depth, prm.T, prm.batch_size, prm.depth_epsilons
    sizes, leaf_depth, offsets = st.sched["batch_sizes"], st.sched["leaf_depth"], st.sched["offsets"]
    L0, L1 = float(problem.L0), float(problem.L1)
    prior_dist = a_priori_distances(st.etas, leaf_depth=leaf_depth, depth=k, D=D)
    mean_grad = problem._mean_grad  # records validated above; iterates feasible by construction
    x = np.asarray(problem.feasible_set.center(), dtype=np.float64).copy()
    est: list[np.ndarray] = [np.zeros(0)] * (k + 1)
    start: list[np.ndarray] = [x] * (k + 1)
    need: list[float] = [0.0] * (k + 1)  # required Laplace scale from the data vertices down to depth j
    out = {"scales": np.empty(T), "selected": np.empty(T, dtype=np.int64), "sel_err": np.empty(T),
           "noise_max": np.empty(T), "dists": np.zeros(T)}  # noise_max: 2 lambda_t max_v |L_{t,v}|
    noise = rng.laplace(0.0, 1.0, size=(min(T, max(1, 4_000_000 // st.n_vertices)), st.n_vertices))
    block = noise.shape[0]
    for t in range(T):
        j = int(leaf_depth[t])
        batch = data[int(offsets[t]):int(offsets[t + 1])]
        if t == 0:
            g = mean_grad(x, batch)
            lam = 2.0 * (L0 * D / b) / eps_j[0]
        else:
            parent = start[j - 1]
            g = est[j - 1] + (mean_grad(x, batch) - mean_grad(parent, batch))
            dist = float(lp_norm(x - parent, problem.p)) if distance == "realized" else float(prior_dist[t])
            out["dists"][t] = dist
            lam = max(need[j - 1], 2.0 * (L1 * D * dist / sizes[j]) / eps_j[j])
        snapshot = x.copy()
        for jj in range(j, k + 1):  # the vertex entered and its left descendants share estimate and start
            est[jj] = g
            start[jj] = snapshot
            need[jj] = lam
        r = t % block
        if r == 0 and t > 0:
            noise = rng.laplace(0.0, 1.0, size=(min(block, T - t), st.n_vertices))
        sc = st.scores_of(g)
        lam_used = st.noise_mult * lam
        idx = int(np.argmin(sc + lam_used * noise[r])) if lam_used > 0 else int(np.argmin(sc))
        out["selected"][t] = idx
        out["scales"][t] = lam_used
        out["sel_err"][t] = float(sc[idx] - sc.min())
        out["noise_max"][t] = 2.0 * lam_used * float(np.abs(noise[r]).max())
        st.move(x, idx, float(st.etas[t]))
    out["x"] = x
    return out


def run_private_vr_frank_wolfe(
    problem: Problem,
    data: Dataset,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    depth: int | None = None,
    batch_size: int | None = None,
    step_size: float | None = None,
    distance: str = "realized",
    accountant: AccountantLike = DEFAULT_ACCOUNTANT,
    trace: bool = False,
) -> Result:
    r"""Private variance-reduced Frank-Wolfe with tree-structured batches (Spec F2; AFKT21); ``(eps, delta)``-DP.

    See the module docstring for the tree, the sensitivity of every vertex's term, the noise per leaf and the
    ledger. Works for any :class:`~dpsco_lib.problems.Problem` over a Simplex, L1Ball or Polytope (scores
    through the vertex structure, ``O(d)`` per leaf for the simplex and l1 ball).

    Parameters
    ----------
    problem : Problem
        Convex problem over a polytope; ``L0``, ``L1`` in its setup norm ``p``.
    data : Dataset
        ``n >= 4`` records inside the problem's declared bounds; records beyond ``records_used`` are unused.
    epsilon, delta : float
        Target (``delta = 0``: pure DP by basic composition).
    rng : numpy.random.Generator
        The only source of randomness.
    depth, batch_size : int, optional
        Tree depth ``k`` and root batch ``b`` (defaults: :func:`vr_frank_wolfe_theory_params`).
    step_size : float, optional
        Constant ``eta`` in (0, 1]; default ``eta_t = 2/(t + 2)``.
    distance : {"realized", "a_priori"}
        Which ``||x_u - x_parent||_p`` enters a right child's sensitivity: the realized one (a function of the
        released past, so valid, and smaller) or the data-independent bound of :func:`a_priori_distances`
        (the calibration of the papers' analysis: noise scales that do not depend on the trajectory).
    accountant : str
        The accountant that calibrates the per-depth budgets and certifies the run: ``"best"`` (default, the
        tightest valid accountant; the calibration of the notebooks), ``"rdp"``, ``"advanced"``, ``"kov"``,
        ``"basic"`` (module docstring; ``"paper"`` raises ``ValueError``: no closed form for the tree).
    trace : bool
        Record the selected vertices and the Laplace scale of every leaf.

    Returns
    -------
    Result
        ``x = x_T``; ``params`` = :func:`vr_frank_wolfe_theory_params` ``.as_dict()`` plus ``n`` and ``distance``;
        ``ledger`` (parallel over depths; ``result.certified_epsilon(delta, accountant) <= epsilon``); ``info`` with
        the Laplace scales, the FW-weighted selection error ``sum_t w_t (<nabla_t, v_t> - min_v <nabla_t, v>)``,
        the measured privacy term ``private_error = sum_t w_t 2 lambda_t max_v |L_{t,v}|`` (the selection error
        can never exceed twice the sup-norm of the score noise, whatever the scores: the p = 1 analogue of
        ``D ||Z||_q``, Spec F3) and gradient-evaluation counts.
    """
    st = _setup(problem, data, epsilon, delta, rng, depth, batch_size, step_size, accountant, distance, trace,
                noise_scale())
    out = _tree_loop(problem, st, rng, distance)
    prm, scales = st.params, out["scales"]
    w = fw_weights(st.etas)
    params = prm.as_dict()
    params["n"] = st.data.n
    params["distance"] = distance
    used = int(st.sched["records_used"])
    info = {
        "method": "private_vr_frank_wolfe",
        "spec": "F2",
        "paper": "AFKT21",
        "n_vertices": st.n_vertices,
        "diameter": st.D,
        "laplace_scale_max": float(scales.max()),
        "laplace_scale_last": float(scales[-1]),
        "selection_error": float(w @ out["sel_err"]),
        "private_error": float(w @ out["noise_max"]),
        "noise_multiplier_hook": st.noise_mult,
        "gradient_evaluations": used + (used - prm.batch_size),
    }
    tr = None
    if trace:
        tr = {"selected": out["selected"], "laplace_scale": scales, "distance": out["dists"], "step_size": st.etas}
    return Result(x=out["x"], trace=tr, params=params, ledger=tree_ledger(prm.depth_epsilons, depth=prm.depth),
                  info=info)
