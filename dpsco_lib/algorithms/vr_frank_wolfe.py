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
per depth; all vertices of one depth have identical parts). The per-depth budgets are
``eps_j(theta) = max(theta/m_j, eps_adv(theta, delta, m_j))`` (``eps_adv`` = the exact DRV10 per-step
solver), and ``theta`` is the largest value (bisection) for which ``ledger.epsilon(delta) <= epsilon``: the
calibration comes from the accountant, and the ledger certifies the target. ``delta = 0``:
``eps_j = epsilon/m_j`` (basic composition, pure DP).

Rate (AFKT21, as stated in seed 000): ``O((L0 D + L1 D^2) sqrt(ln|V|/n) ln n + L1 D^2 (ln|V| ln^2 n
ln(1/delta)/(eps n))^{2/3})`` with ``T ~ (eps n / (ln|V| sqrt(ln(1/delta))))^{2/3}`` leaves (the default).

The tree and batch schedule (:func:`tree_batch_schedule`) is shared with the GG version (Spec F3,
:mod:`dpsco_lib.algorithms.gg_vr_sfw`). For a linear-in-``x`` objective (``L1 = 0``, Algorithm 4's private
best responses) the corrections are data-independent (``s_u = 0``), so only the root's batch matters.

The library works in the idealized real-arithmetic model with float64 noise from a non-cryptographic RNG.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpsco_lib._validation import check_delta, check_epsilon, check_in_range, check_int, check_positive, check_rng
from dpsco_lib.algorithms._result import Result
from dpsco_lib.geometry.norms import lp_norm
from dpsco_lib.geometry.sets import vertex_oracle
from dpsco_lib.privacy.accounting import PrivacyLedger, advanced_composition_per_step_epsilon
from dpsco_lib.problems.base import Problem
from dpsco_lib.problems.dataset import Dataset

__all__ = [
    "DISTANCES",
    "a_priori_distances",
    "fw_weights",
    "records_used",
    "run_private_vr_frank_wolfe",
    "tree_batch_schedule",
    "tree_depth_budgets",
    "tree_ledger",
    "vr_frank_wolfe_theory_params",
]


# ---------------------------------------------------------------------------------------------------------
# tree schedule (shared with Spec F3)
# ---------------------------------------------------------------------------------------------------------
def records_used(depth: int, batch_size: int) -> int:
    """Records consumed by a tree of depth ``k`` with root batch ``b``: ``b + sum_j 2^(j-1) floor(b/2^j)``."""
    return batch_size + sum((1 << (j - 1)) * (batch_size >> j) for j in range(1, depth + 1))


def _max_depth(n: int) -> int:
    """Largest k >= 1 with 2^k <= floor(n / (1 + k/2)) (every batch non-empty), or 0 if none."""
    best = 0
    for k in range(1, 64):
        b = int(n / (1.0 + k / 2.0))
        if (1 << k) > b:
            break
        best = k
    return best


def tree_batch_schedule(n: int, depth: int, batch_size: int | None = None) -> dict[str, Any]:
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
        Root batch ``b`` (default: the largest ``b`` with ``records_used(k, b) <= n``). Needs
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
        while b < n and records_used(k, b + 1) <= n:
            b += 1
        while b > 0 and records_used(k, b) > n:
            b -= 1
    else:
        b = check_int(batch_size, "batch_size", lo=1)
    if b < (1 << k):
        raise ValueError(
            f"batch_size must be >= 2^depth = {1 << k} so that every vertex batch floor(b/2^j) is non-empty; got "
            f"batch_size={b} (n={n}, depth={k}); use a smaller depth (largest feasible for this n: {_max_depth(n)})"
        )
    used = records_used(k, b)
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
def tree_ledger(depth_epsilons: np.ndarray, depth: int) -> PrivacyLedger:
    """Ledger of the tree: parallel composition over depths of ``m_j = 2^(k-j)`` pure ``eps_j`` selections."""
    parts = []
    for j, e in enumerate(np.asarray(depth_epsilons, dtype=np.float64)):
        led = PrivacyLedger()
        led.record_pure(float(e), count=1 << (depth - j),
                        label=f"report-noisy-min at the 2^{depth - j} leaves below a depth-{j} batch (Spec F2)")
        parts.append(led)
    return PrivacyLedger.parallel(*parts, label="disjoint tree batches (Spec F2): worst depth")


def _depth_eps(theta: float, delta: float, depth: int) -> np.ndarray:
    out = np.empty(depth + 1)
    for j in range(depth + 1):
        m = 1 << (depth - j)
        e = theta / m
        if delta > 0 and m > 1:
            e = max(e, advanced_composition_per_step_epsilon(theta, delta_total=delta, k=m))
        out[j] = e
    return out


def tree_depth_budgets(epsilon: float, delta: float, depth: int) -> tuple[np.ndarray, float]:
    r"""Per-depth per-selection budgets ``eps_j`` of Spec F2 and the certified epsilon of the run.

    ``eps_j(theta) = max(theta/m_j, eps_adv(theta, delta, m_j))``, ``m_j = 2^(k - j)``; ``theta`` is the largest
    value (bisection, 60 halvings) with ``tree_ledger(eps(theta)).epsilon(delta) <= epsilon``. With
    ``delta = 0`` this is ``eps_j = epsilon / m_j`` exactly.

    Returns
    -------
    (eps_j for j = 0..k, certified epsilon)
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    k = check_int(depth, "depth", lo=0, hi=62)

    def cert(theta: float) -> float:
        return tree_ledger(_depth_eps(theta, delta, k), k).epsilon(delta)

    if delta == 0:
        e = _depth_eps(epsilon, 0.0, k)
        return e, cert(epsilon)
    lo, hi = 0.0, epsilon
    if cert(hi) <= epsilon:
        lo = hi
    else:
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if cert(mid) <= epsilon:
                lo = mid
            else:
                hi = mid
    if lo <= 0:  # pragma: no cover - cert(theta) -> 0 as theta -> 0, so a positive theta always exists
        raise RuntimeError("could not find a per-depth budget meeting the target")
    e = _depth_eps(lo, delta, k)
    return e, cert(lo)


# ---------------------------------------------------------------------------------------------------------
# parameters
# ---------------------------------------------------------------------------------------------------------
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
) -> dict[str, Any]:
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

    Returns
    -------
    dict
        ``depth``, ``T``, ``batch_size``, ``batch_sizes``, ``records_used``, ``depth_epsilons`` (eps_j),
        ``selections_per_record`` (m_j), ``certified_epsilon``, ``step_size`` (None = decaying),
        ``sensitivity_root`` (L0 D/b), ``laplace_scale_root``, ``rate_bound``.
    """
    n = check_int(n, "n", lo=4)
    nv = check_int(num_vertices, "num_vertices", lo=2)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    L0 = check_positive(L0, "L0")
    L1 = check_positive(L1, "L1", allow_zero=True)
    D = check_positive(D, "D")
    if step_size is not None:
        step_size = check_in_range(step_size, "step_size", 0.0, 1.0, lo_inclusive=False)
    log_v = math.log(nv)
    log_delta = math.log(1.0 / delta) if delta > 0 else 1.0
    kmax = _max_depth(n)
    if kmax < 1:
        raise ValueError(f"n={n} is too small for a tree of depth >= 1 (need n >= 4)")
    if depth is None:
        t_star = (epsilon * n / (log_v * math.sqrt(log_delta))) ** (2.0 / 3.0)
        k = int(min(max(round(math.log2(max(t_star, 2.0))), 1), kmax))
        if batch_size is not None:
            k = max(1, min(k, int(math.floor(math.log2(check_int(batch_size, "batch_size", lo=2))))))
    else:
        k = check_int(depth, "depth", lo=1, hi=62)
    sched = tree_batch_schedule(n, k, batch_size)
    eps_j, cert = tree_depth_budgets(epsilon, delta, k)
    b = sched["batch_size"]
    s_root = L0 * D / b
    rate = (L0 * D + L1 * D * D) * math.sqrt(log_v / n) * math.log(n) + L1 * D * D * (
        log_v * math.log(n) ** 2 * log_delta / (epsilon * n)
    ) ** (2.0 / 3.0)
    return {
        "depth": k,
        "T": sched["T"],
        "batch_size": b,
        "batch_sizes": sched["batch_sizes"],
        "records_used": sched["records_used"],
        "depth_epsilons": eps_j,
        "selections_per_record": np.array([1 << (k - j) for j in range(k + 1)], dtype=np.int64),
        "certified_epsilon": cert,
        "step_size": step_size,
        "sensitivity_root": s_root,
        "laplace_scale_root": 2.0 * s_root / float(eps_j[0]),
        "rate_bound": rate,
    }


def _step_sizes(T: int, step_size: float | None) -> np.ndarray:
    if step_size is None:
        return 2.0 / (np.arange(T, dtype=np.float64) + 2.0)
    return np.full(T, float(step_size))


DISTANCES = ("realized", "a_priori")


def a_priori_distances(etas: np.ndarray, leaf_depth: np.ndarray, depth: int, D: float) -> np.ndarray:
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
    trace: bool = False,
    _noise_multiplier: float = 1.0,
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
    trace : bool
        Record the selected vertices and the Laplace scale of every leaf.
    _noise_multiplier : float
        Private test hook: multiplies every Laplace scale while the ledger keeps the certified budget (the
        privacy tests use ``0.5`` to build a broken variant that audits must catch). Never pass it otherwise.

    Returns
    -------
    Result
        ``x = x_T``; ``params`` from :func:`vr_frank_wolfe_theory_params` (plus ``n``); ``ledger`` (parallel over
        depths; ``ledger.epsilon(delta) <= epsilon``); ``info`` with the Laplace scales, the FW-weighted
        selection error ``sum_t w_t (<nabla_t, v_t> - min_v <nabla_t, v>)``, the measured privacy term
        ``private_error = sum_t w_t 2 lambda_t max_v |L_{t,v}|`` (the selection error can never exceed twice the
        sup-norm of the score noise, whatever the scores: the p = 1 analogue of ``D ||Z||_q``, Spec F3) and
        gradient-evaluation counts.
    """
    if not isinstance(problem, Problem):
        raise ValueError(f"problem must be a dpsco_lib.problems.Problem, got {type(problem).__name__}")
    rng = check_rng(rng)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    noise_mult = check_positive(_noise_multiplier, "_noise_multiplier")
    data = problem.validate_data(data)
    n = data.n
    if n < 4:
        raise ValueError(f"data must hold n >= 4 records for a tree of depth >= 1, got {n}")
    fset = problem.feasible_set
    n_vertices, scores_of, move = vertex_oracle(fset)
    D = float(fset.diameter(problem.p))
    L0, L1 = float(problem.L0), float(problem.L1)
    params = vr_frank_wolfe_theory_params(
        n, n_vertices, epsilon, delta, L0, L1, D, depth=depth, batch_size=batch_size, step_size=step_size
    )
    k, T, b = params["depth"], params["T"], params["batch_size"]
    sched = tree_batch_schedule(n, k, b)
    sizes, leaf_depth, offsets = sched["batch_sizes"], sched["leaf_depth"], sched["offsets"]
    eps_j = params["depth_epsilons"]
    etas = _step_sizes(T, params["step_size"])
    if distance not in DISTANCES:
        raise ValueError(f"distance must be one of {DISTANCES}, got {distance!r}")
    prior_dist = a_priori_distances(etas, leaf_depth, k, D)
    mean_grad = problem._mean_grad  # records validated above; iterates feasible by construction
    p = problem.p

    x = np.asarray(fset.center(), dtype=np.float64).copy()
    est: list[np.ndarray] = [np.zeros(0)] * (k + 1)
    start: list[np.ndarray] = [x] * (k + 1)
    need: list[float] = [0.0] * (k + 1)  # required Laplace scale from the data vertices down to depth j
    scales = np.empty(T)
    selected = np.empty(T, dtype=np.int64)
    sel_err = np.empty(T)
    noise_max = np.empty(T)  # 2 lambda_t max_v |L_{t,v}|: the sup-norm of the score noise, doubled
    dists = np.zeros(T)
    noise = rng.laplace(0.0, 1.0, size=(min(T, max(1, 4_000_000 // n_vertices)), n_vertices))
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
            dist = float(lp_norm(x - parent, p)) if distance == "realized" else float(prior_dist[t])
            dists[t] = dist
            lam = max(need[j - 1], 2.0 * (L1 * D * dist / sizes[j]) / eps_j[j])
        snapshot = x.copy()
        for jj in range(j, k + 1):  # the vertex entered and its left descendants share estimate and start
            est[jj] = g
            start[jj] = snapshot
            need[jj] = lam
        r = t % block
        if r == 0 and t > 0:
            noise = rng.laplace(0.0, 1.0, size=(min(block, T - t), n_vertices))
        sc = scores_of(g)
        lam_used = noise_mult * lam
        idx = int(np.argmin(sc + lam_used * noise[r])) if lam_used > 0 else int(np.argmin(sc))
        selected[t] = idx
        scales[t] = lam_used
        sel_err[t] = float(sc[idx] - sc.min())
        noise_max[t] = 2.0 * lam_used * float(np.abs(noise[r]).max())
        move(x, idx, float(etas[t]))

    ledger = tree_ledger(eps_j, k)
    w = fw_weights(etas)
    params = dict(params)
    params["n"] = n
    params["distance"] = distance
    info = {
        "method": "private_vr_frank_wolfe",
        "spec": "F2",
        "paper": "AFKT21",
        "n_vertices": n_vertices,
        "diameter": D,
        "laplace_scale_max": float(scales.max()),
        "laplace_scale_last": float(scales[-1]),
        "selection_error": float(w @ sel_err),
        "private_error": float(w @ noise_max),
        "noise_multiplier_hook": noise_mult,
        "gradient_evaluations": int(sched["records_used"] + (sched["records_used"] - b)),
    }
    tr = None
    if trace:
        tr = {"selected": selected, "laplace_scale": scales, "distance": dists, "step_size": etas}
    return Result(x=x, trace=tr, params=params, ledger=ledger, info=info)
