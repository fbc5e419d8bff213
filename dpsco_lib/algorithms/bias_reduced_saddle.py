r"""Algorithms 2 and 3 of [GGP24]: the bias-reduced vertex-sampling gradient oracle and private SMD with
bias-reduced sampling and a random stopping time (Spec A2, A3; [GGP24] Section 3.2).

Setting: the l1 setting of Spec A1, min_{x in Delta_dx} max_{y in Delta_dy} F(x, y) = E_z f(x, y; z),
||grad_x f||_inf, ||grad_y f||_inf <= L0, L1-smooth w.r.t. ||.||_1, and (for the bias bound) second-order smooth
with constant L2.

Algorithm 2 (bias-reduced gradient oracle, Spec A2, after Blanchet-Glynn [BG15]).  Levels are truncated
geometric, P(N = k) = p_k = 2^{-k}/Z for k = 0..N_max, Z = 2 - 2^{-N_max}.  At (x, y) with a data batch S:
draw N, then m = 2^{N+1} K i.i.d. vertices i_1..i_m of Cat(x) (and, independently, of Cat(y)), all in *one*
vectorized call; with bar(J) the average of the vertices indexed by J and g(J) = grad f_S(bar(J)) (the x- and
y-points built from the same index positions J),

    G = g(first K) + [ g(all m) - (g(O) + g(E))/2 ] / p_N,    O = odd positions i_1, i_3, ...,  E = even ones.

Given N, O and E are i.i.d. Maurey estimates with 2^N K vertices and "all" one with 2^{N+1} K, so with
b(k) := E grad f_S(x~_k) (x~_k a k-vertex Maurey estimate),

    E G = b(K) + sum_{N=0}^{N_max} p_N [b(2^{N+1} K) - b(2^N K)]/p_N = b(2^{N_max+1} K)     (telescoping),

i.e. Algorithm 2 has exactly the bias of plain sampling with 2^{N_max+1} K vertices, 2 L2/(2^{N_max+1} K) in
l_inf for second-order-smooth f (Cor 2.4; Lemma 3.15), while it draws only E m = 2 K (N_max+1)/Z ~ K (N_max+1)
vertices on average.  Its second moment grows at most linearly in N_max (Lemma 3.15; see
:func:`alg3_theory_params` for the explicit bound used).

Algorithm 3 (Spec A3).  Algorithm 1 (:mod:`~dpsco_lib.algorithms.private_smd_saddle`) with the gradient of
step t from Algorithm 2 on a fresh disjoint batch S_t whose size depends on the level drawn:
B_t = B_N := ceil(B w_N/w_0) with w_N = 1 + 2/p_N.  In each step one also draws ``n_out`` vertices of x_t and of
y_t (Line 8 of the paper's Algorithm 3); the output is the average over the executed steps of these output
estimates.  The loop is a ``while`` loop with a *random stopping time*: before step t runs, its level N_t is
drawn (independently of the data); the step is executed only if its B_{N_t} records are still available and the
fully adaptive composition filter (WRRW23, :class:`~dpsco_lib.privacy.accounting.AdvancedCompositionFilter`,
WRRW23 as stated in GGP24 Thm 3.5) admits all of its 2 (2^{N_t+1} K + n_out) vertex draws; otherwise the run stops.

Privacy (Prop 3.17, derived here for the replace-one relation).  Unrolling the entropic steps,
log x_t(i) = u_i - logsumexp(u) with u_i = -eta sum_{s<t} G^x_s(i), so every vertex draw of step t is an
exponential mechanism with score u given the released past (the past draws fix every point at which gradients
were taken; the levels are data-independent).  Replacing one record changes one batch S_s, hence only G_s; each
of the four batch-mean gradients in G_s moves by at most 2 L0/B_s in l_inf, so
||Delta G_s||_inf <= (2 L0/B_s)(1 + 1/p_N + 1/(2 p_N) + 1/(2 p_N)) = 2 L0 w_N/B_s.  The batch rule makes
w_N/B_N <= w_0/B for every level, so the score has sensitivity Delta <= 2 eta L0 max_N(w_N/B_N) and each draw is
eps_draw = 2 Delta = 4 eta L0 max_N(w_N/B_N) <= 4 eta L0 w_0/B -DP (the factor 2 of the exponential mechanism is
included, as in Alg 1).  The number of draws per step is random but predictable (the level is drawn before the
step runs and does not depend on the data), which is exactly the situation of fully adaptive composition: the
filter stops the run before sqrt(2 log(1/delta) sum eps_m^2) + sum eps_m^2/2 would exceed epsilon, and then the
whole run is (epsilon, delta)-DP (WRRW23).

Why the ledger's ordinary composition certifies the run.  The run's number of draws D is random, but it is a
function of the level sequence N_1, N_2, ... only (the levels are drawn from uniforms that neither the data nor the
vertex draws influence, the batch sizes and the draws per step are functions of the level, and both stopping rules
below read nothing else), so D is independent of the data.  Conditionally on the level sequence -- which the run
releases in ``result.trace["levels"]`` at no privacy cost -- the run is an ordinary adaptive composition of a
*fixed* number D of pure eps_draw-DP exponential-mechanism draws, and any fixed-count accountant certifies it; a
guarantee that holds conditionally on every value of a data-independent variable, with the variable released,
holds for the run.  The ledger therefore records exactly the D realized draws
(``SelfComposedEvent(ExponentialEvent(eps_draw), D)``) and ``result.certified_epsilon(delta)`` (the ledger,
``accountant="best"``: KOV15, RDP with the bounded-range curve of the exponential mechanism, PLD) is a valid
certificate of the run.  It is at most epsilon: the filter never admits more draws than the fixed-k bound of its
own spend function, which is a valid fixed-k bound (advanced composition in its eps^2/2 form, at least the
optimal KOV15 value), and "best" is at most that.  (Were D data-dependent, only the filter's fully adaptive
statement would hold.)  ``info["filter_spent"]`` is the filter's own statement, not the certificate.

Accountants (``accountant=``).  Because D is data-independent, any fixed-count accountant of
:data:`~dpsco_lib.privacy.accounting.accountants.ACCOUNTANTS` may stop the run: eps0 is then the per-step budget of the
design number of draws under that accountant (:func:`~dpsco_lib.privacy.accounting.budget.per_step_epsilon`,
``mechanism="exponential"``, the events the ledger records) and the run stops before its draws exceed the largest
count k_max that the accountant certifies at (epsilon, delta) (:func:`~dpsco_lib.privacy.accounting.budget.calibrate`,
discrete).  The default is ``"best"``, the tightest valid accountant (the largest eps0 and step-size cap, about
1.6-2.4 times the filter's at the book's settings).  ``"filter"`` is Algorithm 3's own accountant in the paper: the
WRRW23 fully adaptive filter stops the run and
:func:`~dpsco_lib.privacy.accounting.budget.filter_per_step_epsilon` calibrates eps0 from its admission test.

Indexing.  Spec A2 (and this module) draw 2^{N+1} K vertices at level N = 0..N_max; drawing 2^N vertices at
levels N = 1..N_max+1 (K = 1) is the same estimator with the level shifted by one.

Code sharing.  :func:`dpsco_lib.algorithms.sparse.bias_reduced_gradient` (Spec Z3) applies the same multilevel
idea to *data* batches (levels from :func:`~dpsco_lib.algorithms.sparse.level_probabilities`, whose N_max is
tied to n, and Laplace-privatized sparse means); here the levels index *vertex-sample* sizes with a free N_max
and the noise is the exponential mechanism, so the two share no code beyond the idea; this module is
independent.

The library works in the idealized real-arithmetic model (float64 iterates, float64 probabilities and a
non-cryptographic RNG).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from dpsco_lib._validation import (
    check_bool,
    check_delta,
    check_epsilon,
    check_int,
    check_positive,
    check_rng,
)
from dpsco_lib.algorithms._result import Result
from dpsco_lib.geometry.mirror import entropic_step, entropic_step_unchecked
from dpsco_lib.geometry.sparsify import maurey_probabilities
from dpsco_lib.privacy.accounting.accountants import DEFAULT_ACCOUNTANT, FILTER, AccountantLike, get_accountant
from dpsco_lib.privacy.accounting.budget import (
    calibrate,
    check_accountant,
    filter_per_step_epsilon,
    per_step_epsilon,
)
from dpsco_lib.privacy.accounting.composition import AdvancedCompositionFilter
from dpsco_lib.privacy.accounting.events import ExponentialEvent, SelfComposedEvent
from dpsco_lib.privacy.accounting.ledger import PrivacyLedger, certify_events
from dpsco_lib.privacy.mechanisms import sample_categorical_log
from dpsco_lib.problems.base import SaddleProblem
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.games import check_saddle_data, saddle_dims

__all__ = [
    "Alg3Params",
    "BiasReducedGradient",
    "alg3_batch_sizes",
    "alg3_draw_epsilon",
    "alg3_needed_n",
    "alg3_second_moment_bound",
    "alg3_theory_params",
    "bias_reduced_estimate",
    "bias_reduced_exact_mean",
    "bias_reduced_gradient",
    "estimate_oracle_second_moment",
    "run_bias_reduced_smd_saddle",
    "run_bias_reduced_smd_saddle_many",
    "run_bias_reduced_smd_saddle_reference",
    "truncated_geometric_probabilities",
]

_MAX_LEVEL = 30  # 2^31 K vertices at the top level: far beyond any useful N_max


# ---------------------------------------------------------------------------------------------------------
# Algorithm 2: the bias-reduced oracle
# ---------------------------------------------------------------------------------------------------------
def truncated_geometric_probabilities(N_max: int) -> np.ndarray:
    r"""p_k = 2^{-k}/Z, k = 0..N_max, Z = sum_k 2^{-k} = 2 - 2^{-N_max} (TruncGeom(N_max), Spec A2)."""
    N_max = check_int(N_max, "N_max", lo=0, hi=_MAX_LEVEL)
    w = 2.0 ** -np.arange(N_max + 1)
    return w / w.sum()


def _level_cdf(p: np.ndarray) -> np.ndarray:
    """The normalized cumulative law of the levels (the inversion table of :func:`_draw_levels`)."""
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    return cdf


def _draw_levels(p: np.ndarray, rng: np.random.Generator, size: int, cdf: np.ndarray | None = None) -> np.ndarray:
    """i.i.d. levels by inversion of the cumulative law (one uniform each); ``cdf`` = ``_level_cdf(p)`` if given
    (loops pass it once instead of recomputing it per draw: same table, same uniforms, same levels)."""
    if cdf is None:
        cdf = _level_cdf(p)
    return np.minimum(np.searchsorted(cdf, rng.random(size), side="right"), p.size - 1)


def _batch_mean(g: np.ndarray) -> np.ndarray:
    """``g.mean(axis=1)`` for a float64 array, without the wrapper: the same sum (``add.reduce`` along axis 1)
    divided by the same count, hence the same bits."""
    return np.true_divide(np.add.reduce(g, axis=1), g.shape[1])


def _multilevel_points(idx: np.ndarray, K: int, dm: int) -> np.ndarray:
    """For vertex draws idx (R, m): the averages (R, 4, dm) over [first K, all m, odd positions, even positions]."""
    R = idx.shape[0]
    off = (dm * np.arange(R))[:, None]
    out = np.empty((R, 4, dm))
    for j, sub in enumerate((idx[:, :K], idx, idx[:, 0::2], idx[:, 1::2])):
        out[:, j] = np.bincount((sub + off).ravel(), minlength=R * dm).reshape(R, dm) / sub.shape[1]
    return out


def _combine(g: np.ndarray, p_level: np.ndarray | float) -> np.ndarray:
    """G = g(first K) + [g(all) - (g(O) + g(E))/2]/p_N along axis -2 (of length 4)."""
    p = np.asarray(p_level, dtype=np.float64)
    corr = g[..., 1, :] - 0.5 * (g[..., 2, :] + g[..., 3, :])
    return g[..., 0, :] + corr / p[..., None]


@dataclass(frozen=True)
class BiasReducedGradient:
    """One draw of the Algorithm 2 oracle at (x, y) (Spec A2).

    Attributes
    ----------
    gx, gy : ndarray (dx,), (dy,)
        The bias-reduced estimates of grad_x F_S(x, y) and grad_y F_S(x, y).
    level : int
        The level N drawn (or forced).
    p_level : float
        P(N = level) = 2^{-N}/Z.
    n_draws : int
        Vertex draws per player for the gradient, 2^{N+1} K (plus ``n_out`` output draws if requested).
    out_x, out_y : ndarray or None
        Averages of the ``n_out`` extra output draws (Line 8 of Algorithm 3), or None when ``n_out = 0``.
    """

    gx: np.ndarray
    gy: np.ndarray
    level: int
    p_level: float
    n_draws: int
    out_x: np.ndarray | None = None
    out_y: np.ndarray | None = None


def _saddle_oracle(problem: SaddleProblem, batch: Dataset, log_state: np.ndarray, K: int, level: int,
                   p_level: float, n_out: int, rng: np.random.Generator
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Unchecked core of Algorithm 2 on padded log-states (m, 2, dm) of m replicas of (x, y) at one level:
    returns Gx (m, dx), Gy (m, dy), the draws (m, 2, 2^{N+1} K + n_out) and the output averages (m, 2, dm)
    (zeros if n_out = 0).  All 2 m (2^{N+1} K + n_out) vertex draws are one call."""
    dx, dy = problem.dx, problem.dy
    m_rep, _, dm = log_state.shape
    m = (2 ** (level + 1)) * K
    idx = np.asarray(sample_categorical_log(log_state.reshape(2 * m_rep, dm), rng=rng, size=m + n_out))
    pts = _multilevel_points(idx[:, :m], K, dm).reshape(m_rep, 2, 4, dm)
    X = pts[:, 0, :, :dx].reshape(4 * m_rep, dx)
    Y = pts[:, 1, :, :dy].reshape(4 * m_rep, dy)
    # X, Y are finite float64 batches of simplex points built above and ``batch`` was checked by the caller, so the
    # unchecked per-record oracles are called directly (what grad_x / grad_y do after their checks)
    gx = _batch_mean(problem._grad_x(X, Y, batch)).reshape(m_rep, 4, dx)
    gy = _batch_mean(problem._grad_y(X, Y, batch)).reshape(m_rep, 4, dy)
    Gx = _combine(gx, p_level)
    Gy = _combine(gy, p_level)
    if n_out > 0:
        R = 2 * m_rep
        off = (dm * np.arange(R))[:, None]
        out = np.bincount((idx[:, m:] + off).ravel(), minlength=R * dm).reshape(m_rep, 2, dm) / n_out
    else:
        out = np.zeros((m_rep, 2, dm))
    return Gx, Gy, idx.reshape(m_rep, 2, m + n_out), out


def _padded_log_state(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    dm = max(x.size, y.size)
    ls = np.full((2, dm), -np.inf)
    with np.errstate(divide="ignore"):
        ls[0, : x.size] = np.log(x)
        ls[1, : y.size] = np.log(y)
    return ls


def bias_reduced_gradient(
    problem: SaddleProblem,
    *,
    batch: Dataset,
    x: Any,
    y: Any,
    K: int,
    N_max: int,
    rng: np.random.Generator,
    level: int | None = None,
    n_out: int = 0,
) -> BiasReducedGradient:
    r"""Algorithm 2 of [GGP24]: one bias-reduced estimate of (grad_x F_S, grad_y F_S) at (x, y) (Spec A2).

    Draw N ~ TruncGeom(N_max) (:func:`truncated_geometric_probabilities`), m = 2^{N+1} K vertices of Cat(x) and of
    Cat(y) in one vectorized call, and return

    .. math:: G = g(\text{first } K) + \big[g(\text{all}) - \tfrac12 (g(O) + g(E))\big]/p_N

    where g(J) is the batch-mean gradient of ``batch`` at the Maurey averages of the draws at positions J and
    O, E are the odd and even positions.  E G = E grad f_S(x~_{2^{N_max+1} K}, y~_{2^{N_max+1} K}) exactly
    (telescoping; module docstring).

    Parameters
    ----------
    problem : SaddleProblem
    batch : Dataset
        The records the gradient averages over (validated against the problem's bounds).
    x, y : array
        Points of the two simplices (non-negative, summing to 1).
    K : int
        Base number of vertices (>= 1).
    N_max : int
        Largest level (0 <= N_max <= 30).
    rng : numpy.random.Generator
    level : int, optional
        Force N (for tests and conditional studies); the estimate is then the conditional one given N.
    n_out : int
        Extra vertex draws per player returned as ``out_x``, ``out_y`` (Line 8 of Algorithm 3).
    """
    rng = check_rng(rng)
    if not isinstance(problem, SaddleProblem):
        raise ValueError(f"problem must be a SaddleProblem, got {type(problem).__name__}")
    if not isinstance(batch, Dataset):
        raise ValueError(f"batch must be a dpsco_lib.problems.Dataset, got {type(batch).__name__}")
    batch = problem.validate_data(batch)
    K = check_int(K, "K", lo=1)
    p = truncated_geometric_probabilities(N_max)
    n_out = check_int(n_out, "n_out", lo=0)
    px = maurey_probabilities(np.asarray(x, dtype=np.float64))
    py = maurey_probabilities(np.asarray(y, dtype=np.float64))
    if px.size != problem.dx or py.size != problem.dy:
        raise ValueError(f"x and y must have sizes ({problem.dx}, {problem.dy}), got ({px.size}, {py.size})")
    N = int(_draw_levels(p, rng, 1)[0]) if level is None else check_int(level, "level", lo=0, hi=p.size - 1)
    Gx, Gy, _, out = _saddle_oracle(problem, batch, _padded_log_state(px, py)[None], K, N, float(p[N]), n_out, rng)
    ox = out[0, 0, : problem.dx] if n_out else None
    oy = out[0, 1, : problem.dy] if n_out else None
    return BiasReducedGradient(gx=Gx[0], gy=Gy[0], level=N, p_level=float(p[N]), n_draws=(2 ** (N + 1)) * K + n_out,
                               out_x=ox, out_y=oy)


def bias_reduced_estimate(
    grad_fn: Callable[[np.ndarray], np.ndarray],
    *,
    x: Any,
    K: int,
    N_max: int,
    rng: np.random.Generator,
    size: int,
    level: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""``size`` independent Algorithm 2 estimates of grad_fn(x) for a function on one simplex (Spec A2).

    The single-player form of :func:`bias_reduced_gradient` used to study the oracle:
    ``grad_fn`` maps points (r, d) to gradients (r, k) (e.g.
    :meth:`~dpsco_lib.problems.maurey_functions.SmoothTestFunction.grad`).  Repetitions that share a level are
    drawn together, one vectorized vertex-sampling call per level.

    Returns
    -------
    (estimates (size, k), levels (size,))
    """
    rng = check_rng(rng)
    K = check_int(K, "K", lo=1)
    p = truncated_geometric_probabilities(N_max)
    size = check_int(size, "size", lo=1)
    px = maurey_probabilities(np.asarray(x, dtype=np.float64))
    d = px.size
    if level is None:
        levels = _draw_levels(p, rng, size)
    else:
        levels = np.full(size, check_int(level, "level", lo=0, hi=p.size - 1))
    with np.errstate(divide="ignore"):
        logx = np.log(px)
    out: np.ndarray | None = None
    for N in np.unique(levels):
        rows = np.flatnonzero(levels == N)
        m = (2 ** (int(N) + 1)) * K
        idx = np.asarray(sample_categorical_log(logx, rng=rng, size=rows.size * m)).reshape(rows.size, m)
        pts = _multilevel_points(idx, K, d)  # (r, 4, d)
        g = np.asarray(grad_fn(pts.reshape(-1, d)), dtype=np.float64).reshape(rows.size, 4, -1)
        est = _combine(g, p[N])
        if out is None:
            out = np.empty((size, est.shape[1]))
        out[rows] = est
    return out, levels  # type: ignore[return-value]


def bias_reduced_exact_mean(grad_fn: Callable[[np.ndarray], np.ndarray], *, x: Any, K: int, N_max: int,
                            chunk: int = 200_000) -> dict[str, Any]:
    r"""Exact E G of Algorithm 2 for small d, from the exact multinomial laws (Spec A2, Lemma 3.15).

    With b(k) = E grad_fn(x~_k) computed by :func:`~dpsco_lib.problems.maurey_functions.maurey_exact_mean` for
    k = K, 2K, ..., 2^{N_max+1} K, the law of total expectation over the level gives
    E G = b(K) + sum_N p_N [b(2^{N+1} K) - b(2^N K)]/p_N (evaluated term by term, *not* simplified), which
    telescopes to b(2^{N_max+1} K).  Returns ``{"mean": E G, "b": {k: b(k)}, "p": p}``.
    """
    from dpsco_lib.problems.maurey_functions import maurey_exact_mean

    K = check_int(K, "K", lo=1)
    p = truncated_geometric_probabilities(N_max)
    b = {K * 2**j: np.atleast_1d(np.asarray(maurey_exact_mean(grad_fn, x, K * 2**j, chunk=chunk)))
         for j in range(p.size + 1)}
    mean = b[K].copy()
    for N in range(p.size):
        mean = mean + p[N] * (b[K * 2 ** (N + 1)] - b[K * 2**N]) / p[N]
    return {"mean": mean, "b": b, "p": p}


# ---------------------------------------------------------------------------------------------------------
# Algorithm 3: parameters
# ---------------------------------------------------------------------------------------------------------
def alg3_batch_sizes(B: int, *, N_max: int) -> np.ndarray:
    """B_N = ceil(B w_N/w_0), w_N = 1 + 2/p_N (int64, length N_max + 1; B_0 = B).  Guarantees w_N/B_N <= w_0/B."""
    B = check_int(B, "B", lo=1)
    p = truncated_geometric_probabilities(N_max)
    w = 1.0 + 2.0 / p
    bn = np.ceil(B * w / w[0]).astype(np.int64)
    bn[0] = B
    # guard the float ceil: enforce B_N w_0 >= B w_N in float64 as well
    bn = np.where(bn * w[0] < B * w, bn + 1, bn)
    return bn


def alg3_draw_epsilon(step_size: float, *, B: int, L0: float, N_max: int) -> float:
    """Per-draw epsilon of Algorithm 3: 4 eta L0 max_N(w_N/B_N) (<= 4 eta L0 w_0/B; Prop 3.17, module docstring)."""
    step_size = check_positive(step_size, "step_size")
    L0 = check_positive(L0, "L0")
    p = truncated_geometric_probabilities(N_max)
    bn = alg3_batch_sizes(B, N_max=N_max)
    return float(4.0 * step_size * L0 * np.max((1.0 + 2.0 / p) / bn))


def _check_a3_accountant(accountant: AccountantLike) -> str:
    """The name of Algorithm 3's accountant: the fully adaptive filter or a fixed-count accountant (module
    docstring, "Privacy"); ``ValueError`` naming every accountant otherwise."""
    acc = get_accountant(accountant)
    return acc.name if acc is FILTER else check_accountant(acc)


def _eps0(eps: float, dl: float, n_draws: int, accountant: str) -> float:
    """Design per-draw budget: ``n_draws`` draws admitted by the filter, or certified by ``accountant``."""
    if accountant == "filter":
        return filter_per_step_epsilon(eps, dl, n_draws)
    return per_step_epsilon(eps, dl, n_draws, accountant=accountant, mechanism="exponential").value


def _draws_event(eps_draw: float, count: int) -> SelfComposedEvent:
    """The event a run with ``count`` vertex draws records (the ledger of :func:`run_bias_reduced_smd_saddle`)."""
    return SelfComposedEvent(ExponentialEvent(eps_draw, label="Alg 3 vertex draws (Prop 3.17)"), count)


@lru_cache(maxsize=4096)
def _draw_cap(eps_draw: float, eps: float, dl: float, accountant: str, hint: int) -> int:
    """Largest k whose k draws of ``eps_draw`` the fixed-count ``accountant`` certifies at (eps, dl) (0 if none)."""
    method = get_accountant(accountant).method  # the papers' rule is certified by DRV10
    if certify_events((_draws_event(eps_draw, 1),), dl, method) > eps:
        return 0
    cal = calibrate(lambda k: _draws_event(eps_draw, max(1, int(k))), epsilon=eps, delta=dl, accountant=method,
                    bracket=(max(1.0, hint / 2.0), max(2.0, 2.0 * hint)), increasing=True, discrete=True)
    return int(cal.value)


@dataclass(frozen=True)
class Alg3Params:
    """Hyperparameters of Algorithm 3 and the terms of the bound they minimize (Spec A3, Thm 3.14).

    Attributes
    ----------
    K, N_max, B, n_out : int
        Base vertices, largest level, base batch size (level-0 batch), output draws per player per step.
    step_size : float
        The step size eta.
    step_size_cap : float
        Design cap eps0 B/(4 L0 w_0): the step at which the accountant is expected to bind when the data run out.
    accountant : str
        How the run is stopped and eps0 calibrated: ``"filter"`` (the WRRW23 filter) or a fixed-count accountant.
    eps0 : float
        Design per-draw budget: the accountant admits ``n_draws_design`` draws of eps0.
    eps_draw : float
        4 eta L0 max_N(w_N/B_N), the per-draw epsilon actually charged (<= eps0 iff eta <= step_size_cap).
    batch_sizes : tuple of int
        B_N per level.
    level_probs : tuple of float
        p_N.
    expected_batch, expected_draws : float
        E B_N and E[2 (2^{N+1} K + n_out)] (draws of both players per step).
    T_expected : float
        n/E B_N, the expected number of steps before the data run out.
    n_draws_design : int
        round(T_expected * expected_draws).
    log_d : float
        l = log dx + log dy.
    second_moment : float
        The value of E||G||_inf^2 used for eta (the bound below unless an instance value was given).
    second_moment_bound : float
        M2 = 2 L0^2 + 24 Z L1^2 (log d_max + log(2)/2)(N_max + 1)/K, the worst-case bound of Lemma 3.15's form.
    smd_term, bias_term, stat_term, bound : float
        l/(eta T) + eta M2, 4 * 2 L2/(2^{N_max+1} K), L0 sqrt(l/n) and their sum.
    rate : float
        log(d_max) (1/sqrt n + 1/sqrt(n eps)), the rate of Thm 3.14 without constants.
    """

    K: int
    N_max: int
    B: int
    n_out: int
    step_size: float
    step_size_cap: float
    accountant: str
    eps0: float
    eps_draw: float
    batch_sizes: tuple[int, ...]
    level_probs: tuple[float, ...]
    expected_batch: float
    expected_draws: float
    T_expected: float
    n_draws_design: int
    log_d: float
    second_moment: float
    second_moment_bound: float
    smd_term: float
    bias_term: float
    stat_term: float
    bound: float
    rate: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _design(n: int, B: int, K: int, N_max: int, n_out: int, eps: float, dl: float, L0: float, log_d: float,
            M2: float, eta: float | None, accountant: str = "filter", eps0_scale: float = 1.0) -> dict[str, Any]:
    p = truncated_geometric_probabilities(N_max)
    bn = alg3_batch_sizes(B, N_max=N_max)
    w0 = 1.0 + 2.0 / p[0]
    eb = float(p @ bn)
    ed = float(2.0 * (K * (p @ (2.0 ** (np.arange(p.size) + 1))) + n_out))
    T_e = n / eb
    D = max(1, round(T_e * ed))
    eps0 = _eps0(eps, dl, D, accountant) * eps0_scale
    # the cap uses max_N(w_N/B_N) (= w_0/B up to the ceil) so that eta = eta_cap gives eps_draw = eps0 exactly
    ratio = float(np.max((1.0 + 2.0 / p) / bn))
    cap = eps0 / (4.0 * L0 * ratio)
    stat = math.sqrt(log_d / (max(T_e, 1e-300) * M2))
    e = min(cap, stat) if eta is None else eta
    smd = log_d / (e * T_e) + e * M2 if T_e >= 1 else math.inf
    return {"p": p, "bn": bn, "eb": eb, "ed": ed, "T_e": T_e, "D": D, "eps0": eps0, "cap": cap, "eta": e,
            "smd": smd, "w0": w0}


def alg3_theory_params(
    n: int,
    d: int | tuple[int, int],
    epsilon: float,
    delta: float,
    L0: float,
    L1: float,
    L2: float,
    *,
    K: int | None = None,
    N_max: int | None = None,
    B: int | None = None,
    step_size: float | None = None,
    n_out: int = 1,
    second_moment: float | None = None,
    accountant: AccountantLike = DEFAULT_ACCOUNTANT,
) -> Alg3Params:
    r"""K, N_max, B, eta (``step_size``) of Algorithm 3 for the rate of Thm 3.14 [GGP24] (Spec A3, Prop 3.17).

    Derivation (constants made explicit where the paper leaves them out).  Let l = log dx + log dy, d = max(dx, dy),
    Z = 2 - 2^{-N_max}, w_N = 1 + 2/p_N.

    1. Oracle (Lemma 3.15).  Bias: E G = E grad f(x~_{2^{N_max+1} K}), so by Cor 2.4 the bias is at most
       2 L2/(2^{N_max+1} K) in l_inf.  Second moment: with c = g(all) - (g(O) + g(E))/2 one has
       ||c||_inf <= (||g(all) - g(O)|| + ||g(all) - g(E)||)/2, and a k-vertex estimate satisfies
       E||grad f(x~_k) - grad f(x)||_inf^2 <= C_k = 4 L1^2 (log d + log(2)/2)/k (bounded differences 2 L1/k per
       vertex, McDiarmid, as in :func:`~dpsco_lib.problems.maurey_functions.second_moment_bound`; the O(1/k^2)
       bias is neglected).  Hence E||c||^2 <= 3 C_{2^N K} and
       E||G||^2 <= 2 L0^2 + 2 sum_N 3 C_{2^N K}/p_N = 2 L0^2 + 24 Z L1^2 (log d + log(2)/2)(N_max + 1)/K =: M2,
       linear in N_max: the price of the bias reduction is a log factor.  If L2 = 0 (quadratic objectives, e.g.
       bilinear games) the gradient is affine, c = 0 identically and M2 = L0^2 holds surely
       (:func:`alg3_second_moment_bound`); this is the bound used then.
    2. Cost.  A step at level N uses B_N ~ B w_N/w_0 records and 2 (2^{N+1} K + n_out) vertex draws, so
       E B_N ~ B (1 + 2(N_max+1))/w_0 and E draws = 2 (2 K (N_max+1)/Z + n_out): the data run out after about
       T = n/E B_N steps, having used D = T E(draws) draws.
    3. Privacy (Prop 3.17).  Each draw is eps_draw = 4 eta L0 max_N(w_N/B_N)-DP; the filter admits D draws of
       eps0 iff D eps0^2 <= s* = (sqrt(2 log(1/delta) + 2 eps) - sqrt(2 log(1/delta)))^2
       (:func:`~dpsco_lib.privacy.accounting.budget.filter_per_step_epsilon`), so the design cap is
       eta_cap = eps0/(4 L0 max_N(w_N/B_N)) ~ eps0 B/(4 L0 w_0) with eps0 ~ eps/sqrt(2 D log(1/delta)).  With a
       fixed-count ``accountant`` eps0 is instead the per-step budget of D exponential-mechanism draws
       (:func:`~dpsco_lib.privacy.accounting.budget.per_step_epsilon`, ``mechanism="exponential"``); B is still
       chosen with the filter's closed form (the search evaluates ~100 designs), then eps0 and the step size are
       recomputed for the chosen design with ``accountant``.
    4. SMD (Lemma 3.8 with the entropy) on the product of simplices with a bias-reduced oracle:
       E Gap <~ l/(eta T) + eta M2 + 4 * 2 L2/(2^{N_max+1} K) + L0 sqrt(l/n).  The unconstrained best step is
       eta_stat = sqrt(l/(T M2)); the privacy cap eta_cap ~ B/sqrt(T) ~ n/T^{3/2}; B (hence T) is chosen to
       minimize l/(eta T) + eta M2 with eta = min(eta_cap, eta_stat) (a geometric grid over B in [1, n], then
       the neighbours of its best point), which balances the two as in Alg 1 and gives
       E Gap ~ sqrt(l M2/T*) with T* ~ eps n/(L0 w_0 ... ), i.e. log d (1/sqrt n + 1/sqrt(n eps)) up to polylog
       factors (N_max and log(1/delta)) -- the rate of Thm 3.14.  Markov's inequality turns the expectation
       into the constant-probability statement of the theorem (the notebook reports quantiles over seeds).
    5. Levels and K.  K = 1 (the multilevel correction, not K, removes the bias).  N_max is the smallest level
       whose bias term 8 L2/(2^{N_max+1} K) is at most the statistical term L0 sqrt(l/n) (the condition the proof
       of Thm 3.14 needs; 0 when L2 = 0, where the oracle has no bias at all), capped at the largest level
       <= ceil(log2(n)/2) whose batch B_{N_max} ~ B 2^{N_max} 4/5 is at most n/4 (B re-optimized for each
       candidate).  Every extra level costs privacy (a level-N step spends 2^{N+1} K draws and a batch ~ w_N).
       At ceil(log2(n)/2) the bias 8 L2/2^{N_max+1} is <= 4 L2/sqrt n, below the statistical term; the paper
       takes N_max ~ log n, which only adds a log factor to M2 -- but a level whose batch
       exceeds the remaining data ends the run (random stopping), so levels with batches beyond a quarter of
       the data would make the stopping time, not the optimization, dominate the gap.  Pass ``N_max`` to
       use another value.

    Parameters
    ----------
    n : int
    d : int or (dx, dy)
    epsilon, delta : float
        Target; delta in (0, 1).
    L0, L1, L2 : float
        Constants w.r.t. ||.||_1 (L2 = 0: quadratic, no bias and M2 = L0^2; L2 = inf: not second-order smooth).
    K, N_max, B, step_size : optional
        Fix some parameters (the others are chosen as above).
    n_out : int
        Output vertex draws per player per step (default 1, Line 8 of the paper's Algorithm 3).
    accountant : str
        ``"best"`` (default) or another fixed-count accountant, or ``"filter"`` (module docstring).
    second_moment : float, optional
        Replace the worst-case bound M2 of step 1 by an instance value (e.g. from
        :func:`estimate_oracle_second_moment`, which uses the problem's distribution, not the private data).  The
        worst-case bound is valid for the whole class but, through its L1^2 log d (N_max + 1) term, typically
        orders of magnitude above the oracle's actual second moment (~L0^2 on the hidden-vertex games), which
        makes the default step size very conservative.
    """
    n = check_int(n, "n", lo=1)
    dx, dy = saddle_dims(d)
    eps = check_epsilon(epsilon)
    dl = check_delta(delta, allow_zero=False)
    L0 = check_positive(L0, "L0")
    L1 = check_positive(L1, "L1", allow_zero=True)
    L2 = check_positive(L2, "L2", allow_zero=True, allow_inf=True)
    accountant = _check_a3_accountant(accountant)
    K = 1 if K is None else check_int(K, "K", lo=1)
    if N_max is not None:
        N_max = check_int(N_max, "N_max", lo=0, hi=_MAX_LEVEL)
    n_out = check_int(n_out, "n_out", lo=0)
    eta = None if step_size is None else check_positive(step_size, "step_size")
    if second_moment is not None:
        second_moment = check_positive(second_moment, "second_moment")
    if B is not None:
        B = check_int(B, "B", lo=1, hi=n)
    log_d = max(math.log(dx) + math.log(dy), 1e-12)
    dmax = max(dx, dy)
    fixed = (n, K, n_out, eps, dl, L0, log_d, eta)
    stat = L0 * math.sqrt(log_d / n)
    if N_max is None:
        # largest level <= ceil(log2(n)/2) whose batch fits in a quarter of the data (item 5 of the derivation)
        for cap_nm in range(max(0, math.ceil(math.log2(n) / 2)), -1, -1):
            M2 = _m2_bound(L0, L1, L2, dmax, K, cap_nm) if second_moment is None else second_moment
            B_nm = B if B is not None else _best_B(*fixed, cap_nm, M2)
            if cap_nm == 0 or alg3_batch_sizes(B_nm, N_max=cap_nm)[-1] <= n / 4:
                break
        # ... and below it the smallest level whose bias bound is below the statistical term (item 5)
        N_max = next(nm for nm in range(cap_nm + 1) if nm == cap_nm or _bias_bound(L2, K, nm) <= stat)
    M2_bound = _m2_bound(L0, L1, L2, dmax, K, N_max)
    M2 = M2_bound if second_moment is None else second_moment
    B = B if B is not None else _best_B(*fixed, N_max, M2, accountant)
    dz = _design(n, B, K, N_max, n_out, eps, dl, L0, log_d, M2, eta, accountant)
    if dz["T_e"] < 1:
        raise ValueError(f"B = {B} is too large: the expected level-N batch {dz['eb']:.1f} exceeds n = {n}")
    e = float(dz["eta"])
    bias = _bias_bound(L2, K, N_max)
    rate = math.log(max(dmax, 2)) * (1.0 / math.sqrt(n) + 1.0 / math.sqrt(n * eps))
    return Alg3Params(
        K=int(K), N_max=int(N_max), B=int(B), n_out=int(n_out), step_size=e, step_size_cap=float(dz["cap"]),
        accountant=accountant, eps0=float(dz["eps0"]), eps_draw=alg3_draw_epsilon(e, B=B, L0=L0, N_max=N_max),
        batch_sizes=tuple(int(b) for b in dz["bn"]), level_probs=tuple(float(q) for q in dz["p"]),
        expected_batch=float(dz["eb"]), expected_draws=float(dz["ed"]), T_expected=float(dz["T_e"]),
        n_draws_design=int(dz["D"]), log_d=float(log_d), second_moment=float(M2),
        second_moment_bound=float(M2_bound), smd_term=float(dz["smd"]),
        bias_term=float(bias), stat_term=float(stat), bound=float(dz["smd"] + bias + stat), rate=float(rate),
    )


def _bias_bound(L2: float, K: int, nm: int) -> float:
    """The bias term 4 * 2 L2/(2^{N_max+1} K) of item 4 of :func:`alg3_theory_params` (0 when L2 = 0)."""
    return 0.0 if L2 == 0 else 4.0 * 2.0 * L2 / (2 ** (nm + 1) * K)


def alg3_second_moment_bound(L0: float, L1: float, L2: float, d: int, *, K: int, N_max: int) -> float:
    r"""A valid bound M2 >= E||G||_inf^2 on the Algorithm 2 oracle, for the step size of Algorithm 3 (Spec A3).

    * L2 = 0 (quadratic objectives, e.g. bilinear games): the gradient is affine in the point, and the average
      of all 2^{N+1} K draws is the mean of the averages over the odd and the even positions, so the correction
      g(all) - (g(O) + g(E))/2 vanishes identically and G = g(first K): ||G||_inf <= L0 surely, M2 = L0^2.
    * otherwise: M2 = 2 L0^2 + 24 Z L1^2 (log d + log(2)/2)(N_max + 1)/K, the worst-case bound of Lemma 3.15's
      form (item 1 of :func:`alg3_theory_params`); ``L2 = inf`` (not second-order smooth) uses it too.
    """
    L0 = check_positive(L0, "L0")
    L1 = check_positive(L1, "L1", allow_zero=True)
    L2 = check_positive(L2, "L2", allow_zero=True, allow_inf=True)
    return _m2_bound(L0, L1, L2, check_int(d, "d", lo=1), check_int(K, "K", lo=1),
                     check_int(N_max, "N_max", lo=0, hi=_MAX_LEVEL))


def _m2_bound(L0: float, L1: float, L2: float, dmax: int, K: int, nm: int) -> float:
    """The second-moment bound of :func:`alg3_second_moment_bound` (unchecked)."""
    if L2 == 0:
        return L0**2
    Z = 2.0 - 2.0**-nm
    return 2.0 * L0**2 + 24.0 * Z * L1**2 * (math.log(dmax) + 0.5 * math.log(2.0)) * (nm + 1) / K


def _best_B(n: int, K: int, n_out: int, eps: float, dl: float, L0: float, log_d: float, eta: float | None,
            nm: int, M2: float, accountant: str = "filter") -> int:
    """The base batch minimizing the SMD term (item 4): a geometric grid over [1, n], then its best point's
    neighbourhood.  Priced with the filter's closed form times a constant r = eps0_acc/eps0_filter (r = 1 for the
    filter), r measured at the filter-optimal design and the search repeated once with it: the per-draw budget of
    a fixed-count accountant scales like that of the filter (~ 1/sqrt(D)) up to a slowly varying factor, so the
    search stays fast (one accountant calibration) and the final design is re-priced exactly by the accountant."""

    def search(r: float) -> int:
        def val(b: int) -> float:
            return _design(n, b, K, nm, n_out, eps, dl, L0, log_d, M2, eta, eps0_scale=r)["smd"]

        grid = sorted({max(1, round(v)) for v in np.geomspace(1, n, 60)})
        vals = [val(b) for b in grid]
        i = int(np.argmin(vals))
        lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
        cand = sorted(set(np.unique(np.geomspace(lo, hi, 24).round().astype(int)).tolist()))
        return min(cand, key=lambda b: (val(b), b))

    b0 = search(1.0)
    if accountant == "filter":
        return b0
    D = _design(n, b0, K, nm, n_out, eps, dl, L0, log_d, M2, eta)["D"]
    return search(_eps0(eps, dl, D, accountant) / _eps0(eps, dl, D, "filter"))


def estimate_oracle_second_moment(
    problem: SaddleProblem,
    *,
    K: int,
    N_max: int,
    B: int,
    rng: np.random.Generator,
    n_rep: int = 2000,
    points: tuple[tuple[Any, Any], ...] | None = None,
) -> float:
    """Monte Carlo estimate of max over ``points`` of E max(||G^x||_inf, ||G^y||_inf)^2 for Algorithm 2 (Spec A3).

    Batches of B records are drawn from the problem's *distribution* (:meth:`SaddleProblem.sample`), never from
    the private data, so using the estimate to set the step size costs no privacy (it is an instance constant,
    like L0).  Default points: the uniform pair (the start of Algorithm 3) and the exact saddle point.
    """
    rng = check_rng(rng)
    if not isinstance(problem, SaddleProblem):
        raise ValueError(f"problem must be a SaddleProblem, got {type(problem).__name__}")
    K = check_int(K, "K", lo=1)
    B = check_int(B, "B", lo=1)
    n_rep = check_int(n_rep, "n_rep", lo=1)
    p = truncated_geometric_probabilities(N_max)
    if points is None:
        xs, ys, _ = problem.saddle_point()
        points = ((np.full(problem.dx, 1.0 / problem.dx), np.full(problem.dy, 1.0 / problem.dy)), (xs, ys))
    best = 0.0
    for x, y in points:
        ls = _padded_log_state(maurey_probabilities(np.asarray(x, dtype=np.float64)),
                               maurey_probabilities(np.asarray(y, dtype=np.float64)))
        levels = _draw_levels(p, rng, n_rep)
        acc = 0.0
        for N in levels:
            Gx, Gy, _, _ = _saddle_oracle(problem, problem.sample(B, rng), ls[None], K, int(N), float(p[N]), 0, rng)
            acc += max(float(np.max(np.abs(Gx))), float(np.max(np.abs(Gy)))) ** 2
        best = max(best, acc / n_rep)
    return best


# ---------------------------------------------------------------------------------------------------------
# Algorithm 3: the run
# ---------------------------------------------------------------------------------------------------------
def run_bias_reduced_smd_saddle(
    problem: SaddleProblem,
    data: Dataset,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    K: int | None = None,
    N_max: int | None = None,
    B: int | None = None,
    step_size: float | None = None,
    n_out: int = 1,
    second_moment: float | None = None,
    max_steps: int | None = None,
    accountant: AccountantLike = DEFAULT_ACCOUNTANT,
    trace: bool = False,
) -> Result:
    r"""Algorithm 3 of [GGP24]: (eps, delta)-DP SMD with bias-reduced vertex sampling and random stopping (Spec A3).

    While the data last and the privacy filter admits the step: draw the level N_t ~ TruncGeom(N_max), take the
    next B_{N_t} records as the batch S_t, get (G^x_t, G^y_t) from Algorithm 2 at (x_t, y_t) on S_t (2^{N_t+1} K
    vertices per player) together with ``n_out`` output vertices per player, and take the entropic steps
    x_{t+1} prop. to x_t exp(-eta G^x_t), y_{t+1} prop. to y_t exp(+eta G^y_t) (log space).  Output the averages
    over the executed steps of the output estimates.  See the module docstring for the privacy proof and
    :func:`alg3_theory_params` for the defaults; :func:`run_bias_reduced_smd_saddle_reference` is the same
    algorithm as a plain loop.

    Parameters
    ----------
    problem : SaddleProblem
    data : Dataset
        n records within the problem's bounds (checked).
    epsilon, delta : float
        Target; delta in (0, 1).  Every run is (epsilon, delta)-DP whatever the hyperparameters: the filter
        charges the per-draw epsilon 4 eta L0 max_N(w_N/B_N) actually spent.
    rng : numpy.random.Generator
    K, N_max, B, step_size : optional
        Override the theory parameters (``step_size`` is eta).
    n_out : int
        Output vertex draws per player per step (>= 1).
    second_moment : float, optional
        Instance value of E||G||_inf^2 for the step size (see :func:`alg3_theory_params`); privacy does not depend
        on it.
    max_steps : int, optional
        Hard cap on the number of steps (default: none besides the filter and the data).
    accountant : str
        ``"best"`` (default: the tightest valid fixed-count accountant, the largest step-size cap) or another of
        :data:`~dpsco_lib.privacy.accounting.accountants.ACCOUNTANTS`: eps0 is the per-step budget of the design
        number of draws under that accountant and the run stops before its draws exceed the largest count the
        accountant certifies at (epsilon, delta) (valid because the number of draws is data-independent; module
        docstring, "Privacy"); or ``"filter"``, the paper's own accountant: the WRRW23 fully adaptive filter stops
        the run and calibrates eps0 (about half the per-draw budget of ``"best"``).
    trace : bool
        Also store every step's vertex draws in ``result.trace["draws"]`` (a list of (2, 2^{N_t+1} K + n_out)
        int arrays: row 0 for x, row 1 for y; the last ``n_out`` columns are the output draws).

    Returns
    -------
    Result
        x, y: averaged output estimates (uniform points if no step ran); params: the Alg3Params fields; ledger:
        the realized D exponential-mechanism draws at eps_draw (``result.certified_epsilon(delta)`` certifies the
        run, module docstring); trace: ``levels``, ``batch_sizes``, ``draws_per_step`` (both players),
        ``filter_spent`` after each step (filter accountant only; and ``draws`` if asked); info: the realized
        stopping time ``steps``, ``stopped_by`` in {"filter", "data", "max_steps"} ("filter": the privacy
        accountant refused the next step), ``records_used``, ``n_draws``, ``refused_draws`` (draws of the step
        that was refused, else 0), ``refused_level`` (level of the step that was not run, -1 after
        ``max_steps``), ``filter_spent`` (the filter's own statement, <= epsilon; filter accountant only) or
        ``draw_cap`` (the largest certified number of draws; fixed-count accountants), ``target_epsilon``,
        ``delta``.
    """
    rng = check_rng(rng)
    data, prm, eps, dl = _resolve(problem, data, epsilon, delta, K, N_max, B, step_size, n_out, second_moment,
                                  max_steps, accountant)
    trace = check_bool(trace, "trace")
    core = _run_core(problem, data, prm, eps, dl, rng, 1, max_steps, trace)
    tr: dict[str, Any] = {k: core[k] for k in ("levels", "batch_sizes", "draws_per_step", "filter_spent")
                          if k in core}
    if trace:
        tr["draws"] = [d[0] for d in core["draws"]]
    return Result(x=core["x"][0], y=core["y"][0], trace=tr, params=prm.as_dict(), ledger=core["ledger"],
                  info=core["info"])


def run_bias_reduced_smd_saddle_many(
    problem: SaddleProblem,
    data: Dataset,
    *,
    n_runs: int,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    K: int | None = None,
    N_max: int | None = None,
    B: int | None = None,
    step_size: float | None = None,
    n_out: int = 1,
    second_moment: float | None = None,
    max_steps: int | None = None,
    accountant: AccountantLike = DEFAULT_ACCOUNTANT,
) -> dict[str, Any]:
    """``n_runs`` replicas of Algorithm 3 on the same data, vectorized, sharing one level sequence (for audits).

    The levels N_1, N_2, ... are data-independent, so the privacy guarantee holds conditionally on them and an
    audit may condition on one level sequence: the replicas draw it once and then run independently given it
    (same batches, same stopping time; independent vertex draws).  With ``N_max = 0`` the level sequence is
    deterministic and the replicas are exactly i.i.d. runs of :func:`run_bias_reduced_smd_saddle`.

    Returns a dict with ``x`` (n_runs, dx), ``y`` (n_runs, dy), ``draws`` (list over steps of int arrays
    (n_runs, 2, 2^{N_t+1} K + n_out)), ``levels``, ``batch_sizes``, ``draws_per_step``, ``params``, ``ledger``
    (shared by every replica) and ``info`` (as in :func:`run_bias_reduced_smd_saddle`).
    """
    rng = check_rng(rng)
    n_runs = check_int(n_runs, "n_runs", lo=1)
    data, prm, eps, dl = _resolve(problem, data, epsilon, delta, K, N_max, B, step_size, n_out, second_moment,
                                  max_steps, accountant)
    core = _run_core(problem, data, prm, eps, dl, rng, n_runs, max_steps, True)
    core["params"] = prm.as_dict()
    return core


def _resolve(problem: Any, data: Any, epsilon: float, delta: float, K: Any, N_max: Any, B: Any, step_size: Any,
             n_out: Any, second_moment: Any, max_steps: Any, accountant: Any
             ) -> tuple[Dataset, Alg3Params, float, float]:
    eps = check_epsilon(epsilon)
    dl = check_delta(delta, allow_zero=False)
    data = check_saddle_data(problem, data)
    n = data.n
    accountant = _check_a3_accountant(accountant)
    n_out = check_int(n_out, "n_out", lo=1)
    if max_steps is not None:
        check_int(max_steps, "max_steps", lo=1)
    if B is not None:
        B = check_int(B, "B", lo=1)
        if B > n:
            raise ValueError(f"B must be <= n = {n} (the level-0 batch), got {B}")
    prm = alg3_theory_params(n, (problem.dx, problem.dy), eps, dl, problem.L0, problem.L1, float(problem.L2), K=K,
                             N_max=N_max, B=B, step_size=step_size, n_out=n_out, second_moment=second_moment,
                             accountant=accountant)
    return data, prm, eps, dl


class _DrawCap:
    """The stopping rule of a fixed-count accountant: admit steps while the total draws stay <= ``cap``.

    The interface of :class:`~dpsco_lib.privacy.accounting.AdvancedCompositionFilter` used by the loop."""

    def __init__(self, cap: int) -> None:
        self.cap, self.used = cap, 0

    def try_spend_many(self, eps_m: float, *, count: int, all_or_nothing: bool) -> int:
        if self.used + count > self.cap:
            return 0
        self.used += count
        return count


def _stopping_rule(prm: Alg3Params, eps: float, dl: float) -> AdvancedCompositionFilter | _DrawCap:
    """The filter (``accountant="filter"``) or the draw cap of a fixed-count accountant (module docstring)."""
    if prm.accountant == "filter":
        return AdvancedCompositionFilter(eps, dl)
    return _DrawCap(_draw_cap(prm.eps_draw, eps, dl, prm.accountant, prm.n_draws_design))


def _initial_state(problem: SaddleProblem, m: int) -> np.ndarray:
    """Log-states (m, 2, dm) of the uniform pair (x_1, y_1), padded with -inf to dm = max(dx, dy)."""
    dx, dy = problem.dx, problem.dy
    log_state = np.full((m, 2, max(dx, dy)), -np.inf)
    log_state[:, 0, :dx] = -math.log(dx)
    log_state[:, 1, :dy] = -math.log(dy)
    return log_state


def _run_core(problem: SaddleProblem, data: Dataset, prm: Alg3Params, eps: float, dl: float,
              rng: np.random.Generator, m: int, max_steps: int | None, keep_draws: bool) -> dict[str, Any]:
    """The while loop of Algorithm 3 for m replicas sharing the level sequence (m = 1: one run)."""
    n, K_, eta_, n_out = data.n, prm.K, prm.step_size, prm.n_out
    p = np.asarray(prm.level_probs)
    bn = np.asarray(prm.batch_sizes, dtype=np.int64)
    dx, dy = problem.dx, problem.dy
    log_state = _initial_state(problem, m)
    G = np.zeros_like(log_state)
    sum_out = np.zeros_like(log_state)
    stop = _stopping_rule(prm, eps, dl)
    levels: list[int] = []
    sizes: list[int] = []
    draws_count: list[int] = []
    spent: list[float] = []
    draws: list[np.ndarray] = []
    used, stopped_by, refused_draws, refused_level = 0, "max_steps", 0, -1
    cdf = _level_cdf(p)
    while max_steps is None or len(levels) < max_steps:
        N = int(_draw_levels(p, rng, 1, cdf)[0])
        b = int(bn[N])
        if used + b > n:
            stopped_by, refused_level = "data", N
            break
        m_t = 2 * ((2 ** (N + 1)) * K_ + n_out)
        # the step's m_t eps_draw-DP draws are offered to the filter all or nothing (O(1): equal steps)
        if not stop.try_spend_many(prm.eps_draw, count=m_t, all_or_nothing=True):
            stopped_by, refused_draws, refused_level = "filter", m_t, N
            break
        batch = data[used : used + b]
        used += b
        Gx, Gy, idx, out = _saddle_oracle(problem, batch, log_state, K_, N, float(p[N]), n_out, rng)
        sum_out += out
        G[:, 0, :dx] = Gx
        G[:, 1, :dy] = -Gy  # ascent in y
        log_state = entropic_step_unchecked(log_state, G, eta_)
        levels.append(N)
        sizes.append(b)
        draws_count.append(m_t)
        if isinstance(stop, AdvancedCompositionFilter):
            spent.append(stop.spent)
        if keep_draws:
            draws.append(idx)
    T = len(levels)
    if T:
        x, y = sum_out[:, 0, :dx] / T, sum_out[:, 1, :dy] / T
    else:
        x, y = np.full((m, dx), 1.0 / dx), np.full((m, dy), 1.0 / dy)
    info = _run_info(prm, stop, eps, dl, T, stopped_by, used, sum(draws_count), refused_draws, refused_level)
    out = {"x": x, "y": y, "draws": draws, "levels": np.asarray(levels, dtype=np.int64),
           "batch_sizes": np.asarray(sizes, dtype=np.int64), "draws_per_step": np.asarray(draws_count, dtype=np.int64),
           "ledger": _run_ledger(prm.eps_draw, info["n_draws"]), "info": info}
    if isinstance(stop, AdvancedCompositionFilter):
        out["filter_spent"] = np.asarray(spent)
    return out


def _run_ledger(eps_draw: float, n_draws: int) -> PrivacyLedger:
    """What ran: the D realized vertex draws, each an eps_draw-DP exponential mechanism (Prop 3.17)."""
    led = PrivacyLedger()
    if n_draws:
        led.record(_draws_event(eps_draw, n_draws))
    return led


def _run_info(prm: Alg3Params, stop: AdvancedCompositionFilter | _DrawCap, eps: float, dl: float, T: int,
              stopped_by: str, used: int, n_draws: int, refused_draws: int, refused_level: int) -> dict[str, Any]:
    info: dict[str, Any] = {
        "method": "Algorithm 3 (GGP24), SMD with bias-reduced vertex sampling and random stopping",
        "steps": T,
        "stopped_by": stopped_by,
        "records_used": used,
        "n_draws": int(n_draws),
        "refused_draws": refused_draws,
        "refused_level": refused_level,
        "target_epsilon": eps,
        "delta": dl,
        "accountant": prm.accountant,
    }
    if isinstance(stop, AdvancedCompositionFilter):
        # the filter's own statement sqrt(2 log(1/delta) D eps_draw^2) + D eps_draw^2/2 <= epsilon (WRRW23); the
        # certificate is the ledger's (result.certified_epsilon(delta))
        info["filter_spent"] = stop.spent
    else:
        info["draw_cap"] = stop.cap
    return info


# ---------------------------------------------------------------------------------------------------------
# Algorithm 3: the readable reference loop
# ---------------------------------------------------------------------------------------------------------
def run_bias_reduced_smd_saddle_reference(
    problem: SaddleProblem,
    data: Dataset,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    K: int | None = None,
    N_max: int | None = None,
    B: int | None = None,
    step_size: float | None = None,
    n_out: int = 1,
    second_moment: float | None = None,
    max_steps: int | None = None,
    accountant: AccountantLike = DEFAULT_ACCOUNTANT,
) -> Result:
    r"""Algorithm 3 written as the paper states it, one step at a time (the reference of the fast path, Spec A3).

    Same arguments, same random stream and same output as :func:`run_bias_reduced_smd_saddle` (bit for bit when
    dx = dy; the fast loop pads both players to max(dx, dy), which may change the last bits otherwise): the
    level is drawn by inversion of its cumulative law, the vertices of x and of y by the checked
    :func:`~dpsco_lib.privacy.mechanisms.sample_categorical_log`, the gradients by the checked
    ``grad_x``/``grad_y`` and ``ndarray.mean``, and the step by the checked
    :func:`~dpsco_lib.geometry.mirror.entropic_step`.  No vectorization over replicas.  ``result.trace`` is None.
    """
    rng = check_rng(rng)
    data, prm, eps, dl = _resolve(problem, data, epsilon, delta, K, N_max, B, step_size, n_out, second_moment,
                                  max_steps, accountant)
    K, n_out, eta = prm.K, prm.n_out, prm.step_size
    p = np.asarray(prm.level_probs)
    cdf = np.cumsum(p) / np.cumsum(p)[-1]
    log_x, log_y = np.full(problem.dx, -math.log(problem.dx)), np.full(problem.dy, -math.log(problem.dy))
    sum_x, sum_y = np.zeros(problem.dx), np.zeros(problem.dy)
    stop, used, T, n_draws = _stopping_rule(prm, eps, dl), 0, 0, 0
    while max_steps is None or T < max_steps:
        N = min(int(np.searchsorted(cdf, rng.random(1), side="right")[0]), p.size - 1)  # N ~ TruncGeom(N_max)
        b = prm.batch_sizes[N]
        m = (2 ** (N + 1)) * K
        if used + b > data.n or not stop.try_spend_many(prm.eps_draw, count=2 * (m + n_out), all_or_nothing=True):
            break
        batch, used, T, n_draws = data[used : used + b], used + b, T + 1, n_draws + 2 * (m + n_out)
        ix = sample_categorical_log(log_x, rng=rng, size=m + n_out)
        iy = sample_categorical_log(log_y, rng=rng, size=m + n_out)

        def maurey(idx: np.ndarray, d: int) -> np.ndarray:  # the average of the vertices e_i, i in idx
            return np.bincount(idx, minlength=d) / idx.size

        positions = (slice(0, K), slice(0, m), slice(0, m, 2), slice(1, m, 2))  # first K, all, odd, even
        X = np.stack([maurey(ix[s], problem.dx) for s in positions])
        Y = np.stack([maurey(iy[s], problem.dy) for s in positions])
        gx = problem.grad_x(X, Y, batch).mean(axis=1)  # (4, dx): g(first K), g(all), g(O), g(E)
        gy = problem.grad_y(X, Y, batch).mean(axis=1)
        Gx = gx[0] + (gx[1] - 0.5 * (gx[2] + gx[3])) / p[N]
        Gy = gy[0] + (gy[1] - 0.5 * (gy[2] + gy[3])) / p[N]
        sum_x += maurey(ix[m:], problem.dx)
        sum_y += maurey(iy[m:], problem.dy)
        log_x, log_y = entropic_step(log_x, Gx, eta), entropic_step(log_y, -Gy, eta)
    x = sum_x / T if T else np.full(problem.dx, 1.0 / problem.dx)
    y = sum_y / T if T else np.full(problem.dy, 1.0 / problem.dy)
    return Result(x=x, y=y, params=prm.as_dict(), ledger=_run_ledger(prm.eps_draw, n_draws),
                  info={"steps": T, "records_used": used, "n_draws": n_draws})


def alg3_needed_n(
    d: int | tuple[int, int],
    epsilon: float,
    L0: float,
    L1: float,
    L2: float,
    *,
    target: float,
    delta_power: float,
    accountant: AccountantLike = DEFAULT_ACCOUNTANT,
    second_moment: float | None = None,
    n_max: int = 10**9,
    rtol: float = 0.02,
) -> int:
    r"""The smallest n at which the bound of Thm 3.14 with this module's constants reaches ``target`` (Spec A3).

    The bound is ``alg3_theory_params(n, d, epsilon, n^-delta_power, ...).bound`` = l/(eta T) + eta M2 (SMD with
    the privacy-capped step and M2 of :func:`alg3_second_moment_bound`, or ``second_moment``) + the bias term +
    L0 sqrt(l/n): an upper bound on E Gap.  By Markov's inequality the median gap is at most 2 E Gap, so
    ``target`` = half the level one wants the median below is the conservative choice; the caller decides.  The
    bound decreases in n (both SMD terms ~ n^{-1/2}), so a bisection on log n finds the crossing to relative
    accuracy ``rtol``.  Returns ``n_max + 1`` if even n_max does not reach ``target``.
    """
    target = check_positive(target, "target")
    n_max = check_int(n_max, "n_max", lo=16)
    delta_power = check_positive(delta_power, "delta_power")
    if delta_power <= 1:
        raise ValueError(f"delta_power must exceed 1 (delta = n^-delta_power < 1/n), got {delta_power!r}")

    def bound(n: int) -> float:
        prm = alg3_theory_params(n, d, epsilon, float(n ** -delta_power), L0, L1, L2, accountant=accountant,
                                 second_moment=second_moment)
        return prm.bound

    lo, hi = 16, n_max
    if bound(hi) > target:
        return n_max + 1
    if bound(lo) <= target:
        return lo
    while hi / lo > 1 + check_positive(rtol, "rtol"):
        mid = int(round(math.sqrt(lo * hi)))
        if bound(mid) <= target:
            hi = mid
        else:
            lo = mid
    return hi
