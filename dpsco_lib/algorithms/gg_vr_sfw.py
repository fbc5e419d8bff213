r"""Noisy variance-reduced stochastic Frank-Wolfe with generalized Gaussian noise, 1 < p <= 2 (Spec F3; BGN21).

Setting (spec/frank-wolfe.md). ``X = {||x||_p <= D/2}`` (an :class:`~dpsco_lib.geometry.sets.LpBall`),
``1 < p <= 2``, ``f(., z)`` convex, ``L0``-Lipschitz and ``L1``-smooth w.r.t. ``||.||_p`` (gradients in the
dual norm ``||.||_q``, ``q = p/(p - 1) >= 2``). Replace-one neighbours.

Privatization (Spec G1). A gradient estimate ``nabla`` with ``||.||_q``-sensitivity ``Delta`` is released as
``nabla + Z`` with ``Z ~ exp(-||z||_r^2/(2 sigma^2))`` in the smooth norm ``||.||_r``, ``r =``
:func:`~dpsco_lib.geometry.norms.smooth_dual_exponent` ``(p, d)`` (``r = q`` when ``q <= max(2, ln d)``), and
regularity ``kappa =`` :func:`~dpsco_lib.geometry.norms.regularity_constant` ``(q, d)`` (``kappa = q - 1 =
1/(p - 1)`` in that case): by [BGN21] ``D_alpha <= kappa alpha^2 Delta^2 / (2 sigma^2 (alpha - 1))``, i.e. the
release is recorded as ``record_gg(sigma/Delta, kappa)``. The linear step is solved exactly,
``argmin_{||v||_p <= D/2} <g, v> = -(D/2) sign(g) |g|^(q-1)/||g||_q^(q-1)`` (``LpBall.lmo``).

``variant="naive"`` (noise every step). Poly-SFW's recursion (Spec F1) with minibatches: ``x_0 = 0``;
``B_0`` = the first ``m = floor(n/2)`` records, ``nabla_0 = mean_{B_0} grad f(x_0; z)``; then ``T`` steps,
step ``t`` with a fresh batch ``B_t`` of ``b`` records (default ``b = ceil(sqrt(n - m))``,
``T = floor((n - m)/b)``):

.. math:: \nabla_t = (1 - \eta)\big(\nabla_{t-1} + \mathrm{mean}_{B_t}[\nabla f(x_t; z) - \nabla f(x_{t-1}; z)]\big)
          + \eta\, \mathrm{mean}_{B_t} \nabla f(x_t; z),

release ``g_t = nabla_t + Z_t``, ``v_t = lmo(g_t)``, ``x_{t+1} = (1 - eta) x_t + eta v_t`` for
``t = 0, ..., T``; output ``x_{T+1}``. (The noise is not fed back into the recursion: ``nabla_t`` is a function
of the data and the released iterates.) Constant ``eta = min(1, c ln(n)/T)``.

*Sensitivity* (as in Spec F1, in the dual norm, with batches). Given the past, a record in ``B_0`` changes
``nabla_t`` by ``(1 - eta)^t (grad f(x_0; z) - grad f(x_0; z'))/m``; a record in ``B_k`` changes ``nabla_k`` by at
most ``(2 (1 - eta) eta L1 D + 2 eta L0)/b`` (``||x_k - x_{k-1}||_p = eta ||v_{k-1} - x_{k-1}||_p <= eta D``),
which then decays by ``(1 - eta)`` per step. Hence

.. math:: \Delta_0 = \frac{2L_0}{m},\qquad \Delta_t = \max\Big\{\frac{2L_0}{m}(1-\eta)^t,\
          \frac{2\eta((1-\eta)L_1 D + L_0)}{b}\Big\}

(:func:`~dpsco_lib.algorithms.vr_sensitivity.vr_sensitivities` with ``norm="dual"``; for ``b = 1`` this is
``2/D`` times Poly-SFW's score sensitivity, the shift factor ``D/2`` being specific to scores). *Privacy*:
``sigma_t = mult Delta_t``; every record's privacy loss is at most the composition of the ``K = T + 1`` GG steps,
each with RDP ``kappa alpha^2/(2 mult^2 (alpha - 1))``; the ledger records
``SelfComposedEvent(GeneralizedGaussianEvent(mult, kappa), K)`` and ``mult`` comes from the budget path
(``accountant=``, below). *Rate* [BGN21]: with ``b ~ sqrt n``, ``T ~ sqrt n`` the optimization and sampling
errors are ``O(kappa/sqrt n)`` (up to logs) and the noise is ``||Z_t||_q ~ sigma_t sqrt d ~ eta sqrt(T kappa d)/
(b eps)``, i.e. ``O(kappa/sqrt n + kappa sqrt d/(eps n^{3/4}))``; ``eta T`` fixed removes the log factor.

``variant="tree"`` (tree aggregation). The tree of Spec F2 (:func:`~dpsco_lib.algorithms.vr_frank_wolfe.
tree_batch_schedule`; root batch ``b``, right child at depth ``j`` with ``floor(b/2^j)`` records, corrections
``grad f(x_u) - grad f(x_parent)`` on its batch, ``T = 2^k`` leaves, ``eta_t = 2/(t + 2)``), but **each vertex
releases its own term with GG noise** and a leaf's estimate is the sum of the noisy terms on its path.
Sensitivities (derived in :mod:`~dpsco_lib.algorithms.vr_frank_wolfe`): ``Delta_root = 2 L0/b`` and
``Delta_u = 2 L1 ||x_u - x_parent||_p / b_j`` (the distance is public given the past; ``distance="a_priori"``
replaces it by the data-independent bound ``min(D, D sum eta_s)``). Every record lies in
one vertex's batch, so it enters *one* GG release and everything else is post-processing: with
``sigma_u = mult Delta_u`` each record's loss is a single GG mechanism and the run is the parallel composition
over the disjoint batches (ledger: one GG event per depth, in parallel).
*Rate* [BGN21]: the leaf noise is a sum of ``<= k + 1`` GG vectors of size ``~ (L0 + L1 D) sqrt(kappa d)/(b eps)``
after FW weighting, so ``O(sqrt(kappa/n) + kappa sqrt d/(eps n))`` up to ``log n`` factors, in one pass.

*Calibration* (``accountant=``). ``"best"`` (the default; the tightest valid accountant, for GG events RDP) or
``"rdp"``: :func:`~dpsco_lib.privacy.accounting.budget.calibrate` over the recorded events, about 15% less noise
than ``"paper"`` (the ledger's RDP conversion is tighter than the closed form). ``"paper"``:
the closed form of the standard RDP conversion (Mironov 2017 at the optimal order),
``mult = sqrt(K) sigma_1`` with ``sigma_1 = sqrt(2 kappa (ln(1/delta) + eps))/eps``
(:func:`~dpsco_lib.privacy.mechanisms.gg_sigma_exact`; ``K = 1`` for the tree), verified by the ledger's RDP
accountant (``ValueError`` if it did not certify). The other accountants do not apply to GG noise
(``ValueError``).

``info["private_error"]`` is the measured privacy term of the Frank-Wolfe analysis,
``D sum_t w_t ||Z_t||_q`` (``w_t`` = weight of ``v_t`` in the output, ``Z_t`` = total noise in leaf/step ``t``'s
estimate), which upper-bounds the excess risk the noise can cause.

The library works in the idealized real-arithmetic model with float64 noise from a non-cryptographic RNG.
:func:`run_gg_vr_sfw_reference` is the same algorithm as plain loops with the textbook norm and linear
minimization (the tests compare it with :func:`run_gg_vr_sfw` bit for bit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any

import numpy as np

from dpsco_lib._validation import (
    ParameterTypeError,
    check_bool,
    check_delta,
    check_epsilon,
    check_in_range,
    check_int,
    check_positive,
    check_rng,
)
from dpsco_lib.algorithms._result import Result
from dpsco_lib.algorithms.vr_frank_wolfe import (
    DISTANCES,
    a_priori_distances,
    fw_weights,
    max_tree_depth,
    tree_batch_schedule,
)
from dpsco_lib.algorithms.vr_sensitivity import vr_sensitivities
from dpsco_lib.geometry.norms import dual_exponent, regularity_constant, smooth_dual_exponent
from dpsco_lib.geometry.sets import LpBall
from dpsco_lib.privacy.accounting import PrivacyLedger
from dpsco_lib.privacy.accounting.accountants import DEFAULT_ACCOUNTANT, PAPER, AccountantLike, get_accountant
from dpsco_lib.privacy.accounting.budget import calibrate, check_accountant
from dpsco_lib.privacy.accounting.events import DpEvent, GeneralizedGaussianEvent, ParallelEvent, SelfComposedEvent
from dpsco_lib.privacy.accounting.ledger import certify_events
from dpsco_lib.privacy.mechanisms import generalized_gaussian_noise, gg_sigma_exact
from dpsco_lib.problems.base import Problem
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.testing import noise_scale

__all__ = [
    "VARIANTS",
    "GgVrSfwParams",
    "gg_noise_multiplier",
    "gg_vr_sfw_theory_params",
    "run_gg_vr_sfw",
    "run_gg_vr_sfw_reference",
]

VARIANTS = ("naive", "tree")


def _gg_event(multiplier: float, kappa: float, count: int, parts: int) -> DpEvent:
    # The events a run records: K releases in sequence (naive), or one release per depth in parallel (tree).
    ev = GeneralizedGaussianEvent(multiplier, kappa)
    if parts == 0:
        return SelfComposedEvent(ev, count)
    return ParallelEvent(tuple((SelfComposedEvent(ev, 1),) for _ in range(parts)))


@lru_cache(maxsize=1024)
def gg_noise_multiplier(epsilon: float, delta: float, *, kappa: float, count: int = 1, parts: int = 0,
                        accountant: AccountantLike = DEFAULT_ACCOUNTANT) -> float:
    r"""Noise multiplier ``sigma/Delta`` of the GG releases of Spec F3 for a target (module docstring).

    Parameters
    ----------
    epsilon, delta : float
        Target, ``delta`` in (0, 1).
    kappa : float
        Regularity constant of the noise norm (``>= 1``).
    count : int
        ``K`` adaptive releases in sequence (naive variant).
    parts : int
        ``0`` for the sequence of ``count`` releases; ``k + 1 >= 1`` for the tree (one release per depth, in
        parallel; ``count`` must then be 1).
    accountant : {"best", "rdp", "paper"}
        ``"best"`` (default)/``"rdp"``: the smallest multiplier whose recorded events certify ``epsilon``;
        ``"paper"``: the closed form ``sqrt(K) gg_sigma_exact(1, eps, delta, kappa)``, certified by the ledger's
        RDP accountant.

    Returns
    -------
    float
        The multiplier; ``certify_events`` of the recorded events is ``<= epsilon``. Cached.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    kappa = check_positive(kappa, "kappa")
    count = check_int(count, "count", lo=1)
    parts = check_int(parts, "parts", lo=0)
    if parts and count != 1:
        raise ValueError(f"count must be 1 for a parallel (tree) event, got count={count}")
    accountant = check_accountant(accountant)
    if accountant != PAPER.name and not get_accountant(accountant).supports((GeneralizedGaussianEvent(1.0, kappa),),
                                                                            delta):
        raise ValueError(f"accountant must be 'paper' or one that supports generalized Gaussian events ('rdp', "
                         f"'best'), got {accountant!r}")
    closed = math.sqrt(count) * gg_sigma_exact(1.0, epsilon=epsilon, delta=delta, kappa=kappa)
    if accountant == "paper":
        cert = certify_events((_gg_event(closed, kappa, count, parts),), delta, "rdp")
        if cert > epsilon:  # pragma: no cover - the ledger's RDP conversion is tighter than the closed form
            raise ValueError(f"the closed-form GG calibration certifies {cert!r} > epsilon={epsilon!r}; use 'rdp'")
        return closed
    cal = calibrate(lambda m: _gg_event(m, kappa, count, parts), epsilon=epsilon, delta=delta,
                    accountant=accountant, bracket=(closed / 4.0, closed), increasing=False, guess=closed)
    return cal.value


@dataclass(frozen=True)
class GgVrSfwParams:
    """Hyperparameters of Spec F3 (:func:`gg_vr_sfw_theory_params`); variant-specific fields are None otherwise.

    Attributes
    ----------
    variant : {"naive", "tree"}
    p, q, r, kappa : float
        Setup exponent, its dual, the smooth noise norm and its regularity constant.
    T : int
        naive: update steps (``T + 1`` releases); tree: leaves ``2^k``.
    batch_size : int
        naive: per-step batch ``b``; tree: root batch.
    records_used : int
        Records consumed.
    noise_multiplier : float
        ``sigma/Delta`` of every release (:func:`gg_noise_multiplier`).
    accountant : str
        The accountant that calibrated ``noise_multiplier``.
    step_size : float or None
        naive: the constant ``eta``; tree: the constant step, or None for ``2/(t + 2)``.
    step_constant : float
        naive: ``c`` in the default ``eta = min(1, c ln(n)/T)``.
    init_batch, n_releases : int or None
        naive only: ``m = floor(n/2)`` and ``K = T + 1``.
    depth : int or None
        tree only: ``k``.
    batch_sizes : ndarray or None
        tree only: ``b_j``.
    rate_bound : float
        The BGN21 bound of the variant (module docstring), constant 1.
    """

    variant: str
    p: float
    q: float
    r: float
    kappa: float
    T: int
    batch_size: int
    records_used: int
    noise_multiplier: float
    accountant: str
    step_size: float | None
    step_constant: float
    init_batch: int | None
    n_releases: int | None
    depth: int | None
    batch_sizes: np.ndarray | None
    rate_bound: float

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (``Result.params`` of a run)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def gg_vr_sfw_theory_params(
    n: int,
    d: int,
    p: float,
    epsilon: float,
    delta: float,
    L0: float,
    L1: float,
    D: float,
    *,
    variant: str = "naive",
    batch_size: int | None = None,
    depth: int | None = None,
    step_size: float | None = None,
    step_constant: float = 1.0,
    accountant: AccountantLike = DEFAULT_ACCOUNTANT,
) -> GgVrSfwParams:
    r"""Hyperparameters of Spec F3 (BGN21) for either variant, the GG calibration and the rate bound.

    Parameters
    ----------
    n, d : int
        Records (``>= 4``) and dimension.
    p : float
        Setup exponent, ``1 < p <= 2``.
    epsilon, delta : float
        Target; ``delta`` in (0, 1) (GG noise needs ``delta > 0``).
    L0, L1, D : float
        Constants in the dual norm and the ``p``-diameter of the ball.
    variant : {"naive", "tree"}
    batch_size : int, optional
        naive: per-step batch ``b`` (default ``ceil(sqrt(n - floor(n/2)))``); tree: root batch.
    depth : int, optional
        tree only: depth ``k`` (default: the deepest tree with non-empty batches, ``T = 2^k <= b``).
    step_size : float, optional
        naive: constant ``eta`` (default ``min(1, step_constant ln(n)/T)``); tree: constant ``eta`` instead of
        ``2/(t + 2)``.
    step_constant : float
        naive: ``c`` in the default step.
    accountant : {"best", "rdp", "paper"}
        The GG calibration (module docstring); ``"best"`` (default) is the tightest valid accountant (RDP for GG
        noise), ``"paper"`` the closed form.

    Returns
    -------
    GgVrSfwParams
    """
    n = check_int(n, "n", lo=4)
    d = check_int(d, "d", lo=1)
    p = check_in_range(p, "p", 1.0, 2.0, lo_inclusive=False)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    L0 = check_positive(L0, "L0")
    L1 = check_positive(L1, "L1", allow_zero=True)
    D = check_positive(D, "D")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    accountant = check_accountant(accountant)
    q = dual_exponent(p)
    r = smooth_dual_exponent(p, d)
    kappa = regularity_constant(q, d)
    common = {"variant": variant, "p": p, "q": q, "r": r, "kappa": kappa, "accountant": accountant,
              "step_constant": float(step_constant)}
    if variant == "naive":
        return _naive_params(n, d, epsilon, delta, batch_size, depth, step_size, step_constant, common)
    if step_size is not None:
        step_size = check_in_range(step_size, "step_size", 0.0, 1.0, lo_inclusive=False)
    if depth is None:
        k = max_tree_depth(n)
        if k < 1:
            raise ValueError(f"n={n} is too small for a tree of depth >= 1")
        if batch_size is not None:
            bb = check_int(batch_size, "batch_size", lo=2)
            k = max(1, min(k, int(math.floor(math.log2(bb)))))
    else:
        k = check_int(depth, "depth", lo=1, hi=62)
    sched = tree_batch_schedule(n, depth=k, batch_size=batch_size)
    mult = gg_noise_multiplier(epsilon, delta, kappa=kappa, count=1, parts=k + 1, accountant=accountant)
    rate = math.sqrt(kappa / n) + kappa * math.sqrt(d) / (epsilon * n)
    return GgVrSfwParams(T=sched["T"], batch_size=sched["batch_size"], records_used=sched["records_used"],
                         noise_multiplier=mult, step_size=step_size, init_batch=None, n_releases=None, depth=k,
                         batch_sizes=sched["batch_sizes"], rate_bound=rate, **common)


def _naive_params(n: int, d: int, epsilon: float, delta: float, batch_size: int | None, depth: int | None,
                  step_size: float | None, step_constant: float, common: dict[str, Any]) -> GgVrSfwParams:
    if depth is not None:
        raise ValueError("depth applies to variant='tree' only")
    m = n // 2
    b = math.ceil(math.sqrt(n - m)) if batch_size is None else check_int(batch_size, "batch_size", lo=1)
    T = (n - m) // b
    if T < 1:
        raise ValueError(f"batch_size={b} leaves no update step with n={n} (need batch_size <= n - floor(n/2))")
    if step_size is None:
        c = check_positive(step_constant, "step_constant")
        eta = min(1.0, c * math.log(n) / T)
    else:
        eta = check_in_range(step_size, "step_size", 0.0, 1.0, lo_inclusive=False)
    K = T + 1
    kappa = common["kappa"]
    mult = gg_noise_multiplier(epsilon, delta, kappa=kappa, count=K, parts=0, accountant=common["accountant"])
    rate = kappa / math.sqrt(n) + kappa * math.sqrt(d) / (epsilon * n**0.75)
    return GgVrSfwParams(T=T, batch_size=b, records_used=m + T * b, noise_multiplier=mult, step_size=eta,
                         init_batch=m, n_releases=K, depth=None, batch_sizes=None, rate_bound=rate, **common)


def _lq(x: np.ndarray, q: float, overwrite: bool = False) -> float:
    """||x||_q of a 1-D array (internal, unvalidated; scaled by max|x_i| against overflow; ``overwrite=True``
    uses ``x``, a temporary of the caller, as the scratch array).

    ``m (sum_i (|x_i|/m)^q)^(1/q)``, ``m = max_i |x_i|``, evaluated in one scratch array (the same ufuncs in the
    same order as the textbook expression, so the same bits; tests/lib/algorithms/test_gg_vr_sfw.py checks it).
    """
    a = np.abs(x, out=x) if overwrite else np.abs(x)
    m = np.maximum.reduce(a)
    if m == 0 or not math.isfinite(m):
        return float(m)
    np.divide(a, m, out=a)
    a **= q
    return float(m * np.add.reduce(a) ** (1.0 / q))


def _lp_ball_lmo_fast(g: np.ndarray, q: float, radius: float) -> np.ndarray:
    """argmin_{||v||_p <= radius} <g, v> = -radius sign(g) |g|^(q-1)/||g||_q^(q-1) (same convention as
    ``LpBall.lmo``: sign(0) = +1, g = 0 -> -radius e_1; the tests cross-check the two).

    Evaluated as ``((-radius sign(g)) w) / (sum_i w_i^p)^(1/p)`` with ``w = (|g|/max|g|)^(q-1)``, in place;
    ``-radius sign(g)`` is exact, so the bits equal those of the unfused expression.
    """
    a = np.abs(g)
    m = np.maximum.reduce(a)
    if m == 0:
        out = np.zeros_like(g)
        out[0] = -radius
        return out
    out = np.where(g >= 0, -radius, radius)  # == -radius * sign(g) exactly
    np.divide(a, m, out=a)
    a **= q - 1.0  # w (in-place ``**`` takes the same power loop and scalar fast paths as ``**``)
    p = q / (q - 1.0)
    den = np.add.reduce(a**p) ** (1.0 / p)
    out *= a
    out /= den
    return out


def _lq_rows(Z: np.ndarray, q: float) -> np.ndarray:
    """``[_lq(z, q) for z in Z]`` for a 2-D array, vectorized over the rows: the same elementwise ufuncs, one
    pairwise ``add.reduce`` per row and the final scalar power per row, hence the same bits as :func:`_lq`
    (tests/lib/algorithms/test_gg_vr_sfw.py compares the two with ``np.array_equal``)."""
    a = np.abs(Z)
    m = np.maximum.reduce(a, axis=1)
    ok = (m != 0) & np.isfinite(m)
    np.divide(a, np.where(ok, m, 1.0)[:, None], out=a)
    a **= q
    s = np.add.reduce(a, axis=1)
    inv = 1.0 / q
    return np.array([float(m[i] * s[i] ** inv) if ok[i] else float(m[i]) for i in range(Z.shape[0])],
                    dtype=np.float64)


class _DeferredLqNorms:
    """``||z_t||_q`` of vectors produced one per step, computed per block of rows by :func:`_lq_rows`.

    :meth:`slot` hands out the next row of the current block for the caller to fill; a full block is normed and
    replaced by a *new* block, so rows handed out earlier stay valid (the tree keeps references to them).
    """

    def __init__(self, count: int, d: int, q: float, block: int = 256) -> None:
        self.out = np.empty(count)
        self.d, self.q = d, q
        self.block = max(1, min(block, count))
        self.lo = self.fill = 0
        self.buf = np.empty((self.block, d))

    def slot(self) -> np.ndarray:
        if self.fill == self.block:
            self._flush()
        row = self.buf[self.fill]
        self.fill += 1
        return row

    def _flush(self) -> None:
        self.out[self.lo:self.lo + self.fill] = _lq_rows(self.buf[:self.fill], self.q)
        self.lo += self.fill
        self.fill = 0
        self.buf = np.empty((self.block, self.d))

    def result(self) -> np.ndarray:
        if self.fill:
            self._flush()
        return self.out


class _UnitGG:
    """Unit-scale GG vectors in the norm ||.||_r, drawn in blocks (<= 2M entries) and read row by row."""

    def __init__(self, d: int, r: float, count: int, rng: np.random.Generator) -> None:
        self.d, self.r, self.count, self.rng = d, r, count, rng
        self.block = max(1, min(count, 2_000_000 // d))
        self.lo = 0
        self.buf = generalized_gaussian_noise(d, q=r, sigma=1.0, rng=rng, size=self.block)

    def __getitem__(self, t: int) -> np.ndarray:
        if t >= self.lo + self.block:
            self.lo = t - t % self.block
            self.buf = generalized_gaussian_noise(
                self.d, q=self.r, sigma=1.0, rng=self.rng, size=min(self.block, self.count - self.lo)
            )
        return self.buf[t - self.lo]


def _check_problem(problem: Problem) -> tuple[LpBall, float]:
    if not isinstance(problem, Problem):
        raise ParameterTypeError(f"problem must be a dpsco_lib.problems.Problem, got {type(problem).__name__}")
    fset = problem.feasible_set
    p = float(problem.p)
    if not isinstance(fset, LpBall) or not (1.0 < fset.p <= 2.0) or fset.p != p:
        raise ValueError(
            "GG-VR-SFW (Spec F3) needs an LpBall feasible set with 1 < p <= 2 equal to the setup exponent; got "
            f"problem with {fset!r} and problem.p={p!r} (use Poly-SFW / the tree FW of Spec F2 for p = 1)"
        )
    return fset, p


@dataclass(frozen=True)
class _Setup:
    fset: LpBall
    p: float
    data: Dataset
    D: float
    L0: float
    L1: float
    params: GgVrSfwParams
    noise_mult: float


def _setup(problem: Problem, data: Dataset, epsilon: float, delta: float, rng: Any, hyper: dict[str, Any]
           ) -> _Setup:
    fset, p = _check_problem(problem)
    check_rng(rng)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    noise_mult = check_positive(noise_scale(), "noise_scale()")
    check_bool(hyper["trace"], "trace")
    if hyper["variant"] not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {hyper['variant']!r}")
    if hyper["distance"] not in DISTANCES:
        raise ValueError(f"distance must be one of {DISTANCES}, got {hyper['distance']!r}")
    data = problem.validate_data(data)
    if data.n < 4:
        raise ValueError(f"data must hold n >= 4 records, got {data.n}")
    D = float(fset.diameter(p))
    L0, L1 = float(problem.L0), float(problem.L1)
    params = gg_vr_sfw_theory_params(
        data.n, problem.d, p, epsilon, delta, L0, L1, D, variant=hyper["variant"], batch_size=hyper["batch_size"],
        depth=hyper["depth"], step_size=hyper["step_size"], step_constant=hyper["step_constant"],
        accountant=hyper["accountant"],
    )
    return _Setup(fset, p, data, D, L0, L1, params, noise_mult)


def _naive_loop(problem: Problem, st: _Setup, rng: np.random.Generator, trace: bool, lq: Any, lmo: Any
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray], np.ndarray]:
    """The naive variant: ``T + 1`` GG releases of the variance-reduced estimate (``lq``, ``lmo``: the norm and
    linear minimization, fast or textbook)."""
    prm, data, d = st.params, st.data, problem.d
    T, m, b, eta = prm.T, prm.init_batch, prm.batch_size, prm.step_size
    sens = vr_sensitivities(T + 1, init_batch=m, batch_size=b, step_size=eta, L0=st.L0, L1=st.L1, D=st.D,
                            norm="dual")
    sigmas = st.noise_mult * prm.noise_multiplier * sens
    Z = _UnitGG(d, prm.r, T + 1, rng)  # unit scale, scaled per step: sigma * Z is GG with scale sigma
    znorm = np.empty(T + 1)
    znorm[0] = sigmas[0] * lq(Z[0], prm.q)
    mean_grad = problem._mean_grad  # records validated above; iterates feasible by construction
    x_prev = np.zeros(d)
    grad = mean_grad(x_prev, data[:m])
    released = [grad + sigmas[0] * Z[0]]
    x = (1.0 - eta) * x_prev + eta * lmo(released[0])
    for t in range(1, T + 1):
        batch = data[m + (t - 1) * b: m + t * b]
        g_new = mean_grad(x, batch)
        g_old = mean_grad(x_prev, batch)
        grad = (1.0 - eta) * (grad + g_new - g_old) + eta * g_new
        z = sigmas[t] * Z[t]
        znorm[t] = lq(z, prm.q)
        g_rel = grad + z
        if trace:
            released.append(g_rel)
        v = lmo(g_rel)
        x_prev = x
        x = (1.0 - eta) * x + eta * v
    return x, znorm, np.full(T + 1, eta), released, sens


def _tree_etas(prm: GgVrSfwParams) -> np.ndarray:
    if prm.step_size is None:
        return 2.0 / (np.arange(prm.T, dtype=np.float64) + 2.0)
    return np.full(prm.T, prm.step_size)


def _tree_loop(problem: Problem, st: _Setup, rng: np.random.Generator, trace: bool, distance: str
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray], np.ndarray]:
    """The tree variant, optimized: deferred block norms, in-place sums, the fused LMO (same bits as
    :func:`_tree_loop_reference`)."""
    prm, data, d, p, q = st.params, st.data, problem.d, st.p, st.params.q
    k, T, b = prm.depth, prm.T, prm.batch_size
    sched = tree_batch_schedule(data.n, depth=k, batch_size=b)
    sizes, leaf_depth, offsets = sched["batch_sizes"], sched["leaf_depth"], sched["offsets"]
    etas = _tree_etas(prm)
    prior_dist = a_priori_distances(etas, leaf_depth=leaf_depth, depth=k, D=st.D)
    Zu = _UnitGG(d, prm.r, T, rng)
    mean_grad = problem._mean_grad  # records validated above; iterates feasible by construction
    x = np.zeros(d)
    released = []
    est: list[np.ndarray] = [x] * (k + 1)
    tot: list[np.ndarray] = [x] * (k + 1)  # total noise on the path (for the measured private error)
    start: list[np.ndarray] = [x] * (k + 1)
    znorms = _DeferredLqNorms(T, d, q)
    sens_out = np.zeros(T)
    # Python scalars for the per-step bookkeeping (the same float64 values as the arrays' entries)
    depth_l, offsets_l, etas_l = leaf_depth.tolist(), offsets.tolist(), etas.tolist()
    for t in range(T):
        j = int(depth_l[t])
        batch = data[int(offsets_l[t]):int(offsets_l[t + 1])]
        if t == 0:
            term = mean_grad(x, batch)
            sens_t = 2.0 * st.L0 / b
            prev_est, prev_tot = np.zeros(d), np.zeros(d)
        else:
            parent = start[j - 1]
            term = mean_grad(x, batch) - mean_grad(parent, batch)
            dist = _lq(x - parent, p, overwrite=True) if distance == "realized" else float(prior_dist[t])
            sens_t = 2.0 * st.L1 * dist / sizes[j]
            prev_est, prev_tot = est[j - 1], tot[j - 1]
        # a data-independent term (L1 = 0 or x_u = x_parent) needs no noise
        z = st.noise_mult * prm.noise_multiplier * sens_t * Zu[t] if sens_t > 0 else np.zeros(d)
        sens_out[t] = sens_t
        # (prev_est + term) + z; for t > 0 in the fresh difference ``term`` (at t = 0 ``term`` is the oracle's)
        g = np.add(prev_est, term, out=term if t else None)
        g += z
        zt = np.add(prev_tot, z, out=znorms.slot())  # its norm is taken with the block's (same bits)
        snapshot = x  # x is rebound (never written in place) below, so no copy is needed
        for jj in range(j, k + 1):
            est[jj], tot[jj], start[jj] = g, zt, snapshot
        if trace:
            released.append(g)
        x = (1.0 - etas_l[t]) * x + etas_l[t] * _lp_ball_lmo_fast(g, q, st.fset.radius)
    return x, znorms.result(), etas, released, sens_out


def _tree_loop_reference(problem: Problem, st: _Setup, rng: np.random.Generator, trace: bool, distance: str
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray], np.ndarray]:
    """The tree variant step by step with the textbook norm and LMO (no fused operations)."""
    prm, data, d, q = st.params, st.data, problem.d, st.params.q
    k, T, b = prm.depth, prm.T, prm.batch_size
    sched = tree_batch_schedule(data.n, depth=k, batch_size=b)
    sizes, leaf_depth, offsets = sched["batch_sizes"], sched["leaf_depth"], sched["offsets"]
    etas = _tree_etas(prm)
    prior = a_priori_distances(etas, leaf_depth=leaf_depth, depth=k, D=st.D)
    Zu = _UnitGG(d, prm.r, T, rng)
    x = np.zeros(d)
    est, tot, start = [x] * (k + 1), [x] * (k + 1), [x] * (k + 1)
    znorm, released, sens_out = np.empty(T), [], np.zeros(T)
    for t in range(T):
        j = int(leaf_depth[t])
        batch = data[int(offsets[t]):int(offsets[t + 1])]
        if t == 0:
            term = problem._mean_grad(x, batch)
            sens = 2.0 * st.L0 / b
            prev_est, prev_tot = np.zeros(d), np.zeros(d)
        else:
            parent = start[j - 1]
            term = problem._mean_grad(x, batch) - problem._mean_grad(parent, batch)
            dist = _lq_textbook(x - parent, st.p) if distance == "realized" else float(prior[t])
            sens = 2.0 * st.L1 * dist / sizes[j]
            prev_est, prev_tot = est[j - 1], tot[j - 1]
        z = st.noise_mult * prm.noise_multiplier * sens * Zu[t] if sens > 0 else np.zeros(d)
        sens_out[t] = sens
        g = prev_est + term + z
        zt = prev_tot + z
        snapshot = x.copy()
        for jj in range(j, k + 1):
            est[jj], tot[jj], start[jj] = g, zt, snapshot
        znorm[t] = _lq_textbook(zt, q)
        if trace:
            released.append(g)
        x = (1.0 - etas[t]) * x + etas[t] * _lmo_textbook(g, q, st.fset.radius)
    return x, znorm, etas, released, sens_out


def _lq_textbook(x: np.ndarray, q: float) -> float:
    """||x||_q = m (sum_i (|x_i|/m)^q)^(1/q), m = max_i |x_i| (one temporary per operation)."""
    a = np.abs(x)
    m = a.max()
    if m == 0 or not np.isfinite(m):
        return float(m)
    return float(m * np.sum((a / m) ** q) ** (1.0 / q))


def _lmo_textbook(g: np.ndarray, q: float, radius: float) -> np.ndarray:
    """argmin_{||v||_p <= radius} <g, v> = -radius sign(g) w / ||w||_p, w = (|g|/max|g|)^(q-1)."""
    a = np.abs(g)
    m = a.max()
    if m == 0:
        out = np.zeros_like(g)
        out[0] = -radius
        return out
    w = (a / m) ** (q - 1.0)
    p = q / (q - 1.0)
    return -radius * np.where(g >= 0, 1.0, -1.0) * w / (np.sum(w**p) ** (1.0 / p))


def _result(problem: Problem, st: _Setup, out: tuple[Any, ...], distance: str, trace: bool) -> Result:
    x, znorm, etas, released, sens = out
    prm = st.params
    if prm.variant == "naive":
        ledger = PrivacyLedger()
        ledger.record_gg(prm.noise_multiplier, prm.kappa, count=prm.T + 1,
                         label="GG release of the VR gradient estimate (Spec F3 naive)")
    else:
        parts = []
        for j in range(prm.depth + 1):
            part = PrivacyLedger()
            part.record_gg(prm.noise_multiplier, prm.kappa, count=1,
                           label=f"one GG release per depth-{j} vertex batch (Spec F3 tree)")
            parts.append(part)
        ledger = PrivacyLedger.parallel(*parts, label="disjoint tree batches (Spec F3 tree)")
    w = fw_weights(etas)
    params = prm.as_dict()
    params["n"] = st.data.n
    params["distance"] = distance
    info = {
        "method": f"gg_vr_sfw_{prm.variant}",
        "spec": "F3",
        "paper": "BGN21",
        "diameter": st.D,
        "radius": st.fset.radius,
        "private_error": float(st.D * (w @ znorm)),
        "noise_norm_max": float(znorm.max()),
        "noise_multiplier_hook": st.noise_mult,
    }
    tr = None
    if trace:
        tr = {"noise_norm": znorm, "sensitivity": sens, "step_size": etas, "estimate": np.asarray(released)}
    return Result(x=x, trace=tr, params=params, ledger=ledger, info=info)


def run_gg_vr_sfw(
    problem: Problem,
    data: Dataset,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    variant: str = "naive",
    batch_size: int | None = None,
    depth: int | None = None,
    step_size: float | None = None,
    step_constant: float = 1.0,
    distance: str = "realized",
    accountant: AccountantLike = DEFAULT_ACCOUNTANT,
    trace: bool = False,
) -> Result:
    r"""Noisy variance-reduced SFW with GG noise (Spec F3; BGN21), ``(epsilon, delta)``-DP, ``1 < p <= 2``.

    See the module docstring for both variants, the sensitivities and the calibration.

    Parameters
    ----------
    problem : Problem
        Convex problem over an ``LpBall`` with ``1 < p <= 2`` (the setup exponent).
    data : Dataset
        ``n >= 4`` records inside the declared bounds.
    epsilon, delta : float
        Target, ``delta`` in (0, 1).
    rng : numpy.random.Generator
    variant : {"naive", "tree"}
    batch_size, depth, step_size, step_constant
        See :func:`gg_vr_sfw_theory_params`.
    distance : {"realized", "a_priori"}
        tree only: the realized ``||x_u - x_parent||_p`` in a right child's sensitivity (valid given the past,
        smaller) or the data-independent bound ``min(D, D sum eta_s)`` of
        :func:`~dpsco_lib.algorithms.vr_frank_wolfe.a_priori_distances` (the papers' calibration).
    accountant : {"best", "rdp", "paper"}
        The GG calibration (module docstring): ``"best"`` (default) is the tightest valid accountant (RDP for GG
        noise); ``"paper"`` the closed form (certified by the ledger\'s RDP
        accountant).
    trace : bool
        Record the per-step noise norms ``||Z_t||_q``, sensitivities, step sizes and the noisy estimates that the
        linear minimization sees (``estimate``, shape ``(steps, d)``).

    Returns
    -------
    Result
        ``x``; ``params`` (:func:`gg_vr_sfw_theory_params` ``.as_dict()`` plus ``n`` and ``distance``); ``ledger``
        (GG events; ``result.certified_epsilon(delta) <= epsilon``); ``info`` with
        ``private_error`` (``D sum_t w_t ||Z_t||_q``) and the maximal noise scale.
    """
    hyper = {"variant": variant, "batch_size": batch_size, "depth": depth, "step_size": step_size,
             "step_constant": step_constant, "distance": distance, "accountant": accountant, "trace": trace}
    st = _setup(problem, data, epsilon, delta, rng, hyper)
    if variant == "naive":
        q, radius = st.params.q, st.fset.radius
        out = _naive_loop(problem, st, rng, trace, _lq, lambda g: _lp_ball_lmo_fast(g, q, radius))
    else:
        out = _tree_loop(problem, st, rng, trace, distance)
    return _result(problem, st, out, distance, trace)


def run_gg_vr_sfw_reference(
    problem: Problem,
    data: Dataset,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    variant: str = "naive",
    batch_size: int | None = None,
    depth: int | None = None,
    step_size: float | None = None,
    step_constant: float = 1.0,
    distance: str = "realized",
    accountant: AccountantLike = DEFAULT_ACCOUNTANT,
    trace: bool = False,
) -> Result:
    """:func:`run_gg_vr_sfw` as plain loops with the textbook ``l_q`` norm and linear minimization: the readable
    reference (same signature, same output bits; the tests compare the two)."""
    hyper = {"variant": variant, "batch_size": batch_size, "depth": depth, "step_size": step_size,
             "step_constant": step_constant, "distance": distance, "accountant": accountant, "trace": trace}
    st = _setup(problem, data, epsilon, delta, rng, hyper)
    if variant == "naive":
        q, radius = st.params.q, st.fset.radius
        out = _naive_loop(problem, st, rng, trace, _lq_textbook, lambda g: _lmo_textbook(g, q, radius))
    else:
        out = _tree_loop_reference(problem, st, rng, trace, distance)
    return _result(problem, st, out, distance, trace)
