r"""Poly-SFW: private polyhedral stochastic Frank-Wolfe with variance reduction (Spec F1; BGN21).

Setting (spec/frank-wolfe.md). ``X = conv(V)`` for a finite vertex set ``V`` (simplex: ``d`` vertices,
l1 ball of radius ``r``: ``2d`` vertices, or an explicit :class:`~dpsco_lib.geometry.sets.Polytope`),
``f(., z)`` convex, ``L0``-Lipschitz (``||grad f||_q <= L0``) and ``L1``-smooth
(``||grad f(x) - grad f(y)||_q <= L1 ||x - y||_p``) in the problem's setup norm ``||.||_p``,
``D = max_{x, y in X} ||x - y||_p``.

Algorithm (Bassily, Guzmán and Nandi, COLT 2021, the talk "Non-Euclidean DP-SCO"). With ``n`` records:

* ``B_1`` = the first ``m = n - T`` records, ``T = floor(n/2)``; records ``z_1, ..., z_T`` = the rest,
  each used in exactly one update (single pass).
* ``x_0`` = the centre of ``X`` (data-independent), ``nabla_0 = (1/m) sum_{z in B_1} grad f(x_0, z)``.
* For ``t = 1, ..., T``: ``g_t = grad f(x_t, z_t)``, ``Delta_t = g_t - grad f(x_{t-1}, z_t)``,
  ``nabla_t = (1 - eta)(nabla_{t-1} + Delta_t) + eta g_t``.
* Every ``t = 0, ..., T``: ``v_t = argmin_{v in V} <v, nabla_t> + Lap(lambda_t)`` (report noisy min, Spec P2)
  and ``x_{t+1} = (1 - eta) x_t + eta v_t``. Output ``x_{T+1}``. That is ``K = T + 1`` private selections.
* Constant step ``eta = step_constant * ln(n / ln|V|) / T``, capped to ``(0, 1]``: the talk's choice up to the
  constant ``c``, which the theorem leaves free. The default ``step_constant="auto"`` takes the ``c`` that minimizes
  the constant-step bound model at the run's ``eps0`` (:func:`poly_sfw_auto_step_constant`; public quantities only,
  so it costs no privacy). It tends to 1/2 as ``n`` grows and is about 0.2 at ``n = 1e7``, ``eps = 2``,
  ``|V| = 200``, where it lowers the excess risk from 0.55 (``c = 1``) to 0.03 of the trivial error.
  ``step_constant=1`` is the step ``eta = ln(n/ln|V|)/T`` of the theorem as stated; the rate checks of the book
  run it.

Sensitivity lemma (derived here for this batch split; replace-one neighbours ``S ~ S'``). Condition on
the past outputs ``v_0, ..., v_{t-1}``: they determine ``x_0, ..., x_t``, so both runs share the iterates
and only the changed record can make ``nabla_t(S)`` and ``nabla_t(S')`` differ. Write
``delta_t = nabla_t(S) - nabla_t(S')``.

1. *Shift invariance.* ``argmin_v (u_v + Z_v)`` does not change if a constant is added to every score,
   so for one pair the mechanism on ``u(S')`` equals the mechanism on ``u(S') + c`` for any ``c``. The
   report-noisy-max proof (a score may rise by ``s`` while its competitors fall by ``s``) therefore
   needs only ``s_t = min_c max_v |<v, delta_t> - c| = (1/2) max_{v, w in V} <v - w, delta_t>
   <= (D/2) ||delta_t||_q`` (Hölder).
2. *Changed record in* ``B_1``: ``delta_0 = (grad f(x_0, z) - grad f(x_0, z'))/m``, so
   ``||delta_0||_q <= 2 L0 / m``; afterwards ``Delta_t`` and ``g_t`` agree, so
   ``delta_t = (1 - eta)^t delta_0``: ``s_t <= L0 D (1 - eta)^t / m``.
3. *Changed record* ``z_k`` (update ``k >= 1``): ``delta_t = 0`` for ``t < k``;
   ``||grad f(x_k, z) - grad f(x_{k-1}, z)||_q <= L1 ||x_k - x_{k-1}||_p = L1 eta ||v_{k-1} - x_{k-1}||_p
   <= L1 eta D``, so ``||delta_k||_q <= 2(1 - eta) L1 eta D + 2 eta L0`` and
   ``delta_t = (1 - eta)^{t-k} delta_k`` after: ``s_t <= eta D ((1 - eta) L1 D + L0)``.

Hence ``s_0 = L0 D / m`` and, for ``t >= 1``,

.. math:: s_t = \max\Big\{\frac{L_0 D}{m}(1-\eta)^t,\ \eta D\big((1-\eta) L_1 D + L_0\big)\Big\},

which with ``m = n/2`` is the talk's bound ``max{2 L0 D (1-eta)^t / n, 2 eta (L1 D^2 + L0 D)}`` with the
second term halved by the shift argument. The scores ``<v, nabla>`` of a polytope are *not* monotone in
the data (some rise while others fall), so the general report-noisy-min scale
``lambda_t = 2 s_t / eps0`` is used (Dwork-Roth; :func:`dpsco_lib.privacy.mechanisms.report_noisy_min`),
which makes every selection ``(eps0, 0)``-DP given the past.

Privacy budget. The ``K = T + 1`` selections are an adaptive composition of ``eps0``-DP steps; ``eps0``
is the largest per-step budget whose ``K``-fold composition meets ``(epsilon, delta)`` under the chosen
``accountant`` (:func:`~dpsco_lib.privacy.accounting.budget.per_step_epsilon`, which inverts the certificate
the run's ledger reports):

* ``accountant="best"`` (default): the tightest valid accountant for ``K`` pure steps (KOV15's optimal
  composition, hence the largest ``eps0`` and the least noise); ``"kov"``, ``"rdp"``, ``"pld"``, ``"basic"``:
  that one;
* ``accountant="advanced"``: DRV10 advanced composition (the calibration of the talk's analysis);
* ``accountant="paper"``: the talk's ``eps0 = epsilon / (2 sqrt(2 K ln(1/delta)))`` (constant 2 sqrt 2 stated
  by us), certified by DRV10 (``ValueError`` when it does not meet the target, i.e. unless
  ``epsilon e^eps0 <= 4 ln(1/delta)``).

``delta = 0`` is pure DP by basic composition, ``eps0 = epsilon / K``, for every accountant but ``"paper"``.
The returned ledger records the ``K`` pure steps (``LaplaceEvent(eps0)`` self-composed ``K`` times), and
``result.certified_epsilon(delta) <= epsilon`` certifies the run.

Rate (BGN21): ``E F(x_{T+1}) - F* = O((L1 D^2 + L0 D) ln|V| ln(n/ln|V|) sqrt(ln(1/delta)) / (eps sqrt n))``.

Implementation: scores are computed through the structure of the set, ``O(d)`` per step (simplex:
``nabla``; l1 ball: ``(r nabla, -r nabla)``); a general polytope uses ``V nabla``. A selection is
``argmin_v <v, nabla_t / lambda_t> + Z_v`` with ``Z_v`` i.i.d. ``Lap(1)`` from :func:`standard_laplace`, which is
``argmin_v <v, nabla_t> + Lap(lambda_t)`` (``lambda_t > 0``): report-noisy-min with scale ``lambda_t`` exactly. The
noise of a block of steps is drawn at once (the draws are elementwise on the generator's stream, so a block equals
its rows drawn one by one). The library works in the idealized real-arithmetic model with float64 noise from a
non-cryptographic RNG. :func:`run_poly_sfw_reference` is the same algorithm written as a plain loop (per-step
draws, allocating updates); the tests compare the two bit for bit.

The initial gradient ``nabla_0`` is the sum of per-chunk gradient sums added in order, the chunks being
``max(1, 2^18 // d)`` consecutive records counted from the first one (least squares: each chunk's sum
``(A x_0 - b) @ A`` is one BLAS matrix-vector product); its rounding therefore depends only on the records, never
on how they are stored or delivered.

Performance (``benchmarks/run.py --sizes 1e5x1e3 --algorithms poly_sfw``: ``hard_least_squares(1.0, 1000,
set_kind="l1ball")``, ``n = 10^5``, ``|V| = 2000``, ``epsilon = 1``, ``delta = 1e-6``, one thread). The floor is one
raw numpy pass forming and summing ``(A @ x - b)[:, None] * A`` over row blocks of the data. Measured on the shared
two-core machine under load (load average 6 to 12), six runs each, time / floor in one process, min-median-max:
3.4-3.9-6.1 in wall time and 3.5-3.85-4.2 in CPU time (the target is 5); the previous loop (``Generator.laplace``
noise scaled per step, per-record gradients of the initial batch) gave 6.8-8.7-10.2 and 7.9-8.6-9.2 on the same
runs, and 13.0 in wall time on the idle machine. Whole benchmark process (data generation included): CPU time
0.67 of the previous one (median of five pairs).
The run is ``n/2`` sequential steps whose cost is the ``n |V| / 2 = 10^8`` Laplace draws (about 3 ns each with
:func:`standard_laplace`, 14 ns with ``Generator.laplace``), about a dozen numpy calls on length-``d`` vectors per
step, the validation of the records and the initial gradient.

Streaming (issue "streaming data"). :func:`run_poly_sfw` also takes a
:class:`~dpsco_lib.problems.stream.DataStream` (``problem.stream(n, rng, block_size)``). Guaranteed (checked by
tests/lib/algorithms/test_poly_sfw.py):

* **bit-identity**: the result (``x``, the ledger, the trace) equals the in-memory run on the same records
  (``problem.sample(n, rng)`` for a generator in the same state) with the same algorithm ``rng``, bit for bit,
  for every block size: the records are read in order, the first ``m`` re-cut into the chunks above, the update
  records used one by one with the same float64 operations, and the noise drawn from ``rng`` alone;
* **one pass, bounded memory**: the blocks are read once and the ``n x d`` matrix is never formed; the run holds
  one or two blocks, one gradient chunk (2 MB), the noise of a block of steps (at most ``max(2^16, |V|)``
  float64 values, and as many 64-bit sign words while it is drawn) and ``O(d + |V|)`` vectors, so
  ``O(block_size d + |V|)`` memory when the stream is ``bounded_memory``, besides the per-step scalars: three
  length-``T + 1`` arrays (sensitivities, Laplace scales, selected indices: 24 bytes a step) and, while the
  sensitivities are computed at the start, about as much again (n = 10^7, d = 100, blocks of 65536: 331 MiB peak
  RSS, interpreter and imports included);
* **validation per block**: every block is checked against the declared bounds when it is read (``ValueError``
  naming the block's records; the run stops, nothing is returned), and a stream whose ``d`` is not the
  problem's is refused before any record is read.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
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
from dpsco_lib.algorithms.vr_sensitivity import vr_sensitivities
from dpsco_lib.geometry.sets import LpBall, Simplex, vertex_oracle
from dpsco_lib.privacy.accounting import PrivacyLedger
from dpsco_lib.privacy.accounting.accountants import DEFAULT_ACCOUNTANT, AccountantLike
from dpsco_lib.privacy.accounting.budget import check_accountant, per_step_epsilon
from dpsco_lib.problems.base import Problem
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.empirical import require_problem
from dpsco_lib.problems.least_squares import row_grad_oracle
from dpsco_lib.problems.stream import DataStream
from dpsco_lib.testing import noise_scale

__all__ = [
    "PolySfwParams",
    "poly_sfw_auto_step_constant",
    "poly_sfw_sensitivities",
    "poly_sfw_theory_params",
    "run_poly_sfw",
    "run_poly_sfw_reference",
    "standard_laplace",
]

# Largest number of standard-Laplace draws materialized at once (512 KB of float64: a block and its sign words stay
# in the L2 cache through the passes of standard_laplace; the draws are elementwise on the generator's stream, so
# the block size does not change any value).
_NOISE_BLOCK_ENTRIES = 65_536
# The initial gradient sums the first m records in chunks of max(1, _GRAD_CHUNK_ENTRIES // d) records counted from
# the first record (2 MB of gradients at once), whatever blocks the records arrive in: the same float64 operations
# for a Dataset and for a DataStream of any block size, so the two give the same bits.
_GRAD_CHUNK_ENTRIES = 262_144


_MANTISSA_SHIFT = np.uint64(12)
_SIGN_SHIFT = np.uint64(63)
_ONE_BITS = np.uint64(0x3FF0_0000_0000_0000)  # the bits of 1.0


def standard_laplace(rng: np.random.Generator, shape: int | tuple[int, ...]) -> np.ndarray:
    r"""Standard Laplace draws ``Z ~ Lap(1)`` (density ``e^{-|z|}/2``), the report-noisy-min noise of Spec F1.

    Inversion of one 64-bit word ``w`` of ``rng``'s bit generator per draw: its top 52 bits ``k`` give
    ``u = 1 - k 2^{-52}`` in ``(0, 1]`` (exact: ``f = 1 + k 2^{-52}`` is built from its bits and ``u = 2 - f``),
    ``E = -ln u`` is ``Exp(1)`` on that grid (``E <= 52 ln 2``, as the 53-bit uniform of
    ``Generator.laplace`` gives ``|Z| <= 53 ln 2``) and bit 0 of ``w`` is the sign: ``Z = +-E``.
    Every operation is elementwise on the words in the order the generator yields them, so drawing a block of
    rows at once gives the same float64 values as drawing the rows one after the other; and the vectorized
    logarithm makes it about three times faster than ``Generator.laplace`` (one libm call per draw), which
    dominates Poly-SFW's run time (``T |V|`` draws). tests/lib/algorithms/test_poly_sfw.py checks the law
    (Kolmogorov-Smirnov).

    Parameters
    ----------
    rng : numpy.random.Generator
        The source of randomness (its bit generator advances by one word per draw).
    shape : int or tuple of int
        Shape of the output.

    Returns
    -------
    numpy.ndarray
        float64 array of ``shape`` holding i.i.d. ``Lap(1)`` draws.
    """
    shp = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    w = rng.bit_generator.random_raw(math.prod(shp)).reshape(shp)
    sign = np.left_shift(w, _SIGN_SHIFT)
    np.right_shift(w, _MANTISSA_SHIFT, out=w)
    np.bitwise_or(w, _ONE_BITS, out=w)
    z = w.view(np.float64)
    np.subtract(2.0, z, out=z)
    np.log(z, out=z)  # ln u <= 0: its sign bit is set (ln 1 = +0)
    np.bitwise_xor(w, sign, out=w)
    return z


def _selection_epsilon(epsilon: float, delta: float, k: int, accountant: str) -> float:
    """eps0 of the ``k`` selections: the budget path (pure DP by basic composition when delta = 0)."""
    if delta == 0 and accountant != "paper":
        accountant = "basic"
    return per_step_epsilon(epsilon, delta, k, accountant=accountant, mechanism="pure").value


def poly_sfw_sensitivities(T: int, *, batch_size: int, step_size: float, L0: float, L1: float, D: float
                           ) -> np.ndarray:
    r"""Per-step score sensitivities ``s_0, ..., s_T`` of Poly-SFW (Spec F1; derivation in the module docstring).

    ``s_0 = L0 D / m`` and ``s_t = max{L0 D (1 - eta)^t / m, eta D ((1 - eta) L1 D + L0)}`` for ``t >= 1``, with
    ``m`` = ``batch_size`` the size of the initial batch and ``eta`` = ``step_size``: the lemma
    :func:`~dpsco_lib.algorithms.vr_sensitivity.vr_sensitivities` with single-record updates, as scores.
    """
    T = check_int(T, "T", lo=0)
    return vr_sensitivities(T + 1, init_batch=batch_size, batch_size=1, step_size=step_size, L0=L0, L1=L1, D=D,
                            norm="score")


@dataclass(frozen=True)
class PolySfwParams:
    """Hyperparameters of Poly-SFW fixed by the theorem (:func:`poly_sfw_theory_params`).

    Attributes
    ----------
    batch_size : int
        ``m = n - floor(n/2)``, the records of the initial gradient.
    T : int
        ``floor(n/2)`` single-record updates.
    n_selections : int
        ``K = T + 1`` private selections.
    step_size : float
        The constant step ``eta`` in (0, 1].
    step_constant : float
        ``c`` in the default ``eta = min(1, c ln(n/ln|V|)/T)`` (the resolved value when ``"auto"`` was asked; NaN
        for an explicit ``step_size`` with ``"auto"``).
    eps0 : float
        The per-selection budget.
    accountant : str
        The accountant that calibrated ``eps0`` (``"basic"`` when delta = 0).
    sensitivity_first, sensitivity_floor : float
        ``s_0`` and the update term ``eta D ((1 - eta) L1 D + L0)`` of the sensitivity profile.
    laplace_scale_first : float
        ``2 s_0 / eps0``.
    rate_bound : float
        ``(L1 D^2 + L0 D) ln|V| ln(n/ln|V|) sqrt(ln(1/delta)) / (eps sqrt n)`` (constant 1; ``ln(1/delta)``
        replaced by 1 when delta = 0).
    """

    batch_size: int
    T: int
    n_selections: int
    step_size: float
    step_constant: float
    eps0: float
    accountant: str
    sensitivity_first: float
    sensitivity_floor: float
    laplace_scale_first: float
    rate_bound: float

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (``Result.params`` of a run)."""
        return asdict(self)


def poly_sfw_auto_step_constant(n: int, num_vertices: int, eps0: float, L0: float, L1: float, D: float) -> float:
    r"""The step constant ``c`` that minimizes the constant-step Frank-Wolfe bound model of Poly-SFW (Spec F1).

    With ``eta = c l / T``, ``l = ln(n/ln|V|)``, the recursion ``h_{t+1} <= (1 - eta) h_t + eta e + eta^2 L1 D^2/2``
    (``h_t = F(x_t) - F*``, ``e`` the error of one noisy linear minimization) gives after ``T`` steps
    ``h <= e^{-c l} L0 D + eta (L1 D^2/2 + 4 D (L1 D + L0) ln|V| / eps0) + (statistical term)``: the first term is
    the contraction from ``h_0 <= L0 D``, the second the curvature and the report-noisy-min error ``2 lambda ln|V|``
    at the Laplace scale ``lambda = 2 s/eps0`` of the sensitivity floor ``s = eta D (L1 D + L0)``; the statistical
    term does not depend on ``c``. Writing the second term as ``c A``, the model ``e^{-c l} L0 D + c A`` is
    minimized at

    .. math:: c^\star = \ln\big(l L_0 D / A\big) / l, \qquad A = \frac{l}{T}\Big(\frac{L_1 D^2}{2} +
              \frac{4 D (L_1 D + L_0)\ln|V|}{\varepsilon_0}\Big),

    clipped to ``[1/l, 1]`` (at ``1/l`` the contraction is ``e^{-1}``). As ``n`` grows, ``A`` shrinks like
    ``ln n sqrt(ln(1/delta)) / (eps sqrt n)`` and ``c* -> 1/2``: the smallest constant whose contraction
    ``(ln|V|/n)^c`` stays within the theorem's ``n^{-1/2}`` rate. At laptop ``n`` and ``eps <= 2`` the privacy term
    dominates and ``c*`` is smaller (about 0.2 at ``n = 1e7``, ``|V| = 200``, ``eps = 2``). ``c*`` uses only public
    quantities (``n``, ``|V|``, the constants and ``eps0``), never the data.
    """
    n = check_int(n, "n", lo=2)
    nv = check_int(num_vertices, "num_vertices", lo=2)
    eps0 = check_positive(eps0, "eps0")
    L0, L1, D = check_positive(L0, "L0"), check_positive(L1, "L1", allow_zero=True), check_positive(D, "D")
    ell = math.log(n / math.log(nv))
    if ell <= 0:
        raise ValueError(f"n={n} is too small for the theory step with |V|={nv}: ln(n/ln|V|) = {ell:.3g} <= 0")
    T = n // 2
    A = (ell / T) * (L1 * D * D / 2.0 + 4.0 * D * (L1 * D + L0) * math.log(nv) / eps0)
    c = math.log(ell * L0 * D / A) / ell
    return float(min(1.0, max(1.0 / ell, c)))


def poly_sfw_theory_params(
    n: int,
    num_vertices: int,
    epsilon: float,
    delta: float,
    L0: float,
    L1: float,
    D: float,
    *,
    step_constant: float | str = "auto",
    step_size: float | None = None,
    accountant: AccountantLike = DEFAULT_ACCOUNTANT,
) -> PolySfwParams:
    r"""Hyperparameters of Poly-SFW fixed by the theorem (Spec F1; BGN21), and its rate bound.

    Parameters
    ----------
    n : int
        Number of records (>= 2).
    num_vertices : int
        ``|V|`` (>= 2).
    epsilon, delta : float
        Target ``(epsilon, delta)``; ``delta`` in [0, 1).
    L0, L1, D : float
        Lipschitz and smoothness constants (dual norm) and the ``p``-diameter of ``X``.
    step_constant : float or "auto"
        ``"auto"`` (default): the ``c`` of :func:`poly_sfw_auto_step_constant` (minimizes the Frank-Wolfe bound
        model at this run's ``eps0``; data independent, so it costs no privacy); or ``c > 0`` in
        ``eta = min(1, c ln(n / ln|V|) / T)`` (``c = 1``: the theorem's step as stated).
    step_size : float, optional
        Explicit ``eta`` in (0, 1] (overrides ``step_constant``).
    accountant : str
        The accountant that calibrates ``eps0`` (module docstring): ``"best"`` (default, the tightest valid
        accountant), ``"advanced"`` (DRV10), ``"kov"``, ``"rdp"``, ``"pld"``, ``"basic"`` or ``"paper"``.

    Returns
    -------
    PolySfwParams
    """
    n = check_int(n, "n", lo=2)
    nv = check_int(num_vertices, "num_vertices", lo=2)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    L0 = check_positive(L0, "L0")
    L1 = check_positive(L1, "L1", allow_zero=True)
    D = check_positive(D, "D")
    accountant = check_accountant(accountant)
    T = n // 2
    m = n - T
    log_ratio = math.log(n / math.log(nv))
    k = T + 1
    eps0 = _selection_epsilon(epsilon, delta, k, accountant)
    if step_size is None:
        if isinstance(step_constant, str):
            if step_constant != "auto":
                raise ValueError(f"step_constant must be a positive number or 'auto', got {step_constant!r}")
            step_constant = poly_sfw_auto_step_constant(n, nv, eps0, L0, L1, D) if log_ratio > 0 else 1.0
        c = check_positive(step_constant, "step_constant")
        if log_ratio <= 0:
            raise ValueError(
                f"n={n} is too small for the theory step eta = c ln(n/ln|V|)/T with |V|={nv}: ln(n/ln|V|) = "
                f"{log_ratio:.3g} <= 0 (need n > ln|V|); pass step_size explicitly"
            )
        eta = min(1.0, c * log_ratio / T)
    else:
        eta = check_in_range(step_size, "step_size", 0.0, 1.0, lo_inclusive=False)
        c = math.nan if isinstance(step_constant, str) else float(step_constant)
    s = poly_sfw_sensitivities(1, batch_size=m, step_size=eta, L0=L0, L1=L1, D=D)
    log_term = math.sqrt(math.log(1.0 / delta)) if delta > 0 else 1.0
    rate = (L1 * D * D + L0 * D) * math.log(nv) * max(log_ratio, 1.0) * log_term / (epsilon * math.sqrt(n))
    return PolySfwParams(
        batch_size=m, T=T, n_selections=k, step_size=eta, step_constant=float(c), eps0=eps0,
        accountant="basic" if delta == 0 and accountant != "paper" else accountant,
        sensitivity_first=float(s[0]), sensitivity_floor=float(eta * D * ((1.0 - eta) * L1 * D + L0)),
        laplace_scale_first=float(2.0 * s[0] / eps0), rate_bound=rate,
    )


# ---------------------------------------------------------------------------------------------------------
# the run: validation and parameters, the fast loop, the reference loop, the result
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Setup:
    data: Dataset | DataStream  # a validated Dataset, or a stream whose blocks are validated as they are read
    n_vertices: int
    scores_of: Any
    move: Any
    D: float
    params: PolySfwParams
    sens: np.ndarray
    scales: np.ndarray
    noise_mult: float


def _setup(problem: Problem, data: Dataset | DataStream, epsilon: float, delta: float, rng: Any,
           step_constant: float | str,
           step_size: float | None, accountant: str, trace: bool, noise_multiplier: float) -> _Setup:
    require_problem(problem)  # a Problem, or a TypeError saying how to build one from arrays (from_data)
    check_rng(rng)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    accountant = check_accountant(accountant)
    check_bool(trace, "trace")
    noise_mult = check_positive(noise_multiplier, "noise_scale()")
    fset = problem.feasible_set
    if not isinstance(fset, Simplex) and not (isinstance(fset, LpBall) and fset.p == 1.0) and \
            not hasattr(fset, "vertices"):
        raise ValueError(f"problem must have a polytope feasible set (Simplex, L1Ball, Polytope), got {fset!r}")
    try:
        n_vertices, scores_of, move = vertex_oracle(fset)
    except (ValueError, TypeError, NotImplementedError) as exc:
        raise ValueError(f"problem must have a polytope feasible set with a vertex oracle: {exc}") from exc
    if isinstance(data, DataStream):
        if data.d != problem.d:
            raise ValueError(f"data stream must have d = {problem.d} feature columns (the problem's), got {data.d}")
    else:
        data = problem.validate_data(data)
    if data.n < 2:
        raise ValueError(f"data must hold n >= 2 records for Poly-SFW (one batch and one update), got {data.n}")
    D = float(fset.diameter(problem.p))
    params = poly_sfw_theory_params(
        data.n, n_vertices, epsilon, delta, problem.L0, problem.L1, D,
        step_constant=step_constant, step_size=step_size, accountant=accountant,
    )
    sens = poly_sfw_sensitivities(params.T, batch_size=params.batch_size, step_size=params.step_size, L0=problem.L0,
                                  L1=problem.L1, D=D)
    scales = (2.0 / params.eps0) * noise_mult * sens
    return _Setup(data, n_vertices, scores_of, move, D, params, sens, scales, noise_mult)


def _result(problem: Problem, st: _Setup, x: np.ndarray, selected: np.ndarray, snap_t: list[int],
            snap_x: list[np.ndarray], trace: bool) -> Result:
    prm = st.params
    ledger = PrivacyLedger()
    ledger.record_pure(prm.eps0, count=prm.T + 1, label="Poly-SFW report-noisy-min over the vertices (Spec F1)")
    tr = None
    if trace:
        tr = {
            "selected": selected,
            "laplace_scale": st.scales,
            "sensitivity": st.sens,
            "t": np.asarray(snap_t, dtype=np.int64),
            "x": np.asarray(snap_x).reshape(len(snap_x), -1),
        }
    params = prm.as_dict()
    params["n"] = st.data.n
    info = {
        "method": "poly_sfw",
        "spec": "F1",
        "paper": "BGN21",
        "n_vertices": st.n_vertices,
        "diameter": st.D,
        "sensitivity_max": float(st.sens.max()),
        "sensitivity_last": float(st.sens[-1]),
        "laplace_scale_max": float(st.scales.max()),
        "noise_multiplier_hook": st.noise_mult,
        "gradient_evaluations": prm.batch_size + 2 * prm.T,
    }
    return Result(x=x, trace=tr, params=params, ledger=ledger, info=info)


def _checked_blocks(problem: Problem, stream: DataStream) -> Iterator[Dataset]:
    """The blocks of one pass over ``stream``, each checked against the problem's declared bounds when it is read."""
    lo = 0
    for block in stream:
        try:
            block = problem.validate_data(block)
        except ValueError as exc:
            raise ValueError(f"data stream block of records [{lo}, {lo + block.n}): {exc}") from exc
        lo += block.n
        yield block


def _concat(pieces: list[Dataset]) -> Dataset:
    """The records of ``pieces`` in order, as one Dataset (the piece itself when there is one)."""
    if len(pieces) == 1:
        return pieces[0]
    first = pieces[0]
    y = None if first.y is None else np.concatenate([p.y for p in pieces])
    return Dataset(np.concatenate([p.X for p in pieces]), y,
                   {k: np.concatenate([p.extras[k] for p in pieces]) for k in first.extras})


def _rechunk(blocks: Iterator[Dataset], m: int, rows: int, rest: list[Dataset]) -> Iterator[Dataset]:
    """The first ``m`` records of ``blocks`` in chunks of ``rows`` records (the last one shorter), whatever the
    block sizes; the records after them in the block holding record ``m - 1`` are appended to ``rest``."""
    pending: list[Dataset] = []
    have, left = 0, m
    while left > 0:
        block = next(blocks)
        take = min(left, block.n)
        if take < block.n:
            rest.append(block[take:])
        left -= take
        lo = 0
        while lo < take:
            k = min(rows - have, take - lo)
            pending.append(block[lo:lo + k])
            have, lo = have + k, lo + k
            if have == rows or (left == 0 and lo == take):
                yield _concat(pending)
                pending, have = [], 0


def _then(rest: list[Dataset], blocks: Iterator[Dataset]) -> Iterator[Dataset]:
    """The segments of ``rest`` (popped, so no reference keeps their block alive), then the remaining ``blocks``."""
    while rest:
        yield rest.pop(0)
    yield from blocks


def _dataset_chunks(data: Dataset, m: int) -> Iterator[Dataset]:
    """The first ``m`` records of ``data`` in chunks of ``max(1, _GRAD_CHUNK_ENTRIES // d)`` records (row views)."""
    rows = max(1, _GRAD_CHUNK_ENTRIES // data.d)
    return (data[lo:min(lo + rows, m)] for lo in range(0, m, rows))


def _initial_gradient(problem: Problem, x0: np.ndarray, chunks: Iterable[Dataset], m: int) -> np.ndarray:
    """``nabla_0 = (1/m) sum grad f(x_0; z)`` over the first ``m`` records: the chunks' sums added in order.

    A chunk's sum is ``problem._grad(x_0, chunk).sum(axis=0)``; for least squares (:func:`row_grad_oracle`) it is
    ``sum_i (<a_i, x_0> - b_i) a_i`` as two matrix-vector products on the chunk, ``(A x_0 - b) @ A``, which never
    forms the chunk's per-record gradients (one BLAS pass over the batch).
    """
    total = np.zeros_like(x0)
    least_squares = row_grad_oracle(problem) is not None
    for chunk in chunks:
        if least_squares:
            part = (chunk.X @ x0 - chunk.y) @ chunk.X
        else:
            part = problem._grad(x0, chunk).sum(axis=0)
        np.add(total, part, out=total)
    return total / m


def _records(problem: Problem, data: Dataset | DataStream, x0: np.ndarray, m: int
             ) -> tuple[np.ndarray, Iterator[Dataset]]:
    """``nabla_0`` and the update records ``z_1, ..., z_T`` as consecutive segments, in one pass over the data.

    A Dataset gives one segment (a row view); a stream is read block by block (each block validated), its first
    ``m`` records re-cut into the chunks of :func:`_dataset_chunks` (so ``nabla_0`` has the same bits), the rest
    yielded as they come (the tail of the block holding record ``m - 1``, then the following blocks).
    """
    if isinstance(data, DataStream):
        blocks = _checked_blocks(problem, data)
        rest: list[Dataset] = []
        rows = max(1, _GRAD_CHUNK_ENTRIES // data.d)
        grad = _initial_gradient(problem, x0, _rechunk(blocks, m, rows, rest), m)
        return grad, _then(rest, blocks)
    grad = _initial_gradient(problem, x0, _dataset_chunks(data, m), m)
    updates = data[m:]
    return grad, iter((updates,))


def _checkpoints(T: int, trace: bool) -> set[int]:
    return set(np.unique(np.round(np.geomspace(1, T + 1, num=40)).astype(int)).tolist()) if trace else set()


def _noise_block(rng: np.random.Generator, scales: np.ndarray, t0: int, rows: int, nv: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The noise of steps ``t0, ..., t0 + rows - 1`` (row ``t``: ``nv`` draws of :func:`standard_laplace`, the same
    values as drawing each row on its own) and the reciprocals ``1 / lambda_t`` of their Laplace scales."""
    return standard_laplace(rng, (rows, nv)), 1.0 / scales[t0:t0 + rows]


def _closed_form(fset: Any) -> tuple[str, float]:
    """``("simplex", 1)``, ``("l1", r)`` for the l1 ball of radius ``r``, or ``("", 1)`` (vertex matrix)."""
    if isinstance(fset, Simplex):
        return "simplex", 1.0
    if isinstance(fset, LpBall) and fset.p == 1.0:
        return "l1", float(fset.radius)
    return "", 1.0


def _fast_loop(problem: Problem, st: _Setup, rng: np.random.Generator, trace: bool
               ) -> tuple[np.ndarray, np.ndarray, list[int], list[np.ndarray]]:
    """The optimized loop (the float64 operations of :func:`run_poly_sfw_reference`; the tests compare bits).

    Per step: the row gradients of least squares on the raw arrays (:func:`row_grad_oracle`), the recursion in
    place, the scaled scores ``nabla_t / lambda_t`` through the set's closed form (l1 ball: ``noise_lo + r h`` and
    ``noise_hi - r h``, exactly ``noise + (r h, -r h)``; simplex: ``noise + h``) in a reused buffer, the move by
    swapping two iterate buffers; the noise of a block of steps drawn at once (:func:`standard_laplace` is
    elementwise on the generator's stream, so the values are those of per-step draws). The update records come in
    segments (one for a Dataset, the blocks of a stream), read in order and never held all at once.
    """
    fset, nv, scores_of, move = problem.feasible_set, st.n_vertices, st.scores_of, st.move
    T, m, eta = st.params.T, st.params.batch_size, st.params.step_size
    block = max(1, min(T + 1, _NOISE_BLOCK_ENTRIES // nv))
    buf = np.empty(nv)
    selected = np.empty(T + 1, dtype=np.int64)
    checkpoints = _checkpoints(T, trace)
    snap_t: list[int] = []
    snap_x: list[np.ndarray] = []
    x_prev = np.asarray(fset.center(), dtype=np.float64).copy()
    grad, segments = _records(problem, st.data, x_prev, m)
    noise, inv = _noise_block(rng, st.scales, 0, min(block, T + 1), nv)
    selected[0] = j = int(np.argmin(np.add(noise[0], scores_of(grad * inv[0]), out=buf)))
    x = x_prev.copy()
    move(x, j, eta)
    # Records validated (a stream's blocks as read), iterates feasible by construction: no re-validation per step.
    per_record_grad, row_grad = problem._grad, row_grad_oracle(problem)
    seg = next(segments)
    Xu, yu, seg_n, i = seg.X, seg.y, seg.n, -1
    eta_arr, keep_arr = np.array(eta), np.array(1.0 - eta)  # 0-d operands: the same IEEE products, less overhead
    d = fset.d
    g_new, g_old, h = np.empty(d), np.empty(d), np.empty(d)
    kind, radius = _closed_form(fset)
    l1, unit = kind == "l1", radius == 1.0  # h r = h: the product is skipped (exact)
    buf_lo, buf_hi, noise_lo, noise_hi = buf[:d], buf[d:], noise[:, :d], noise[:, d:]
    eta_pos, eta_neg = eta * radius, eta * -radius  # move_l1 adds eta r (j < d) or eta (-r); move_simplex eta
    add, sub, mul, copyto = np.add, np.subtract, np.multiply, np.copyto
    for t in range(1, T + 1):
        i += 1
        if i == seg_n:  # the next segment of update records (a stream's next block)
            seg = next(segments)
            Xu, yu, seg_n, i = seg.X, seg.y, seg.n, 0
        r = t % block
        if r == 0:
            noise, inv = _noise_block(rng, st.scales, t, min(block, T + 1 - t), nv)
            noise_lo, noise_hi = noise[:, :d], noise[:, d:]
        if row_grad is not None:
            row_grad(x, Xu, yu, i, g_new)
            row_grad(x_prev, Xu, yu, i, g_old)
        else:
            rec = seg[i: i + 1]
            g_new[:] = per_record_grad(x, rec)[0]
            g_old[:] = per_record_grad(x_prev, rec)[0]
        # nabla_t = (1 - eta)(nabla_{t-1} + g_new - g_old) + eta g_new
        sub(g_new, g_old, g_old)
        add(grad, g_old, grad)
        mul(grad, keep_arr, grad)
        mul(g_new, eta_arr, g_new)
        add(grad, g_new, grad)
        mul(grad, inv[r], h)  # h = nabla_t / lambda_t
        if l1:
            if not unit:
                mul(h, radius, h)
            add(noise_lo[r], h, buf_lo)
            sub(noise_hi[r], h, buf_hi)
        else:
            add(noise[r], scores_of(h), buf)
        selected[t] = j = int(buf.argmin())
        if kind:  # x_prev <- x, x <- (1 - eta) x + eta v_j: write into the other buffer and swap (move_l1's ops)
            mul(x, keep_arr, x_prev)
            x_prev, x = x, x_prev
            if j < d:
                x[j] += eta_pos
            else:
                x[j - d] += eta_neg
        else:
            copyto(x_prev, x)
            move(x, j, eta)
        if t in checkpoints:
            snap_t.append(t + 1)
            snap_x.append(x.copy())
    return x, selected, snap_t, snap_x


def run_poly_sfw(
    problem: Problem,
    data: Dataset | DataStream,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    step_constant: float | str = "auto",
    step_size: float | None = None,
    accountant: AccountantLike = DEFAULT_ACCOUNTANT,
    trace: bool = False,
) -> Result:
    r"""Run Poly-SFW (Spec F1; Bassily-Guzmán-Nandi 2021) on ``data``; ``(epsilon, delta)``-DP.

    See the module docstring for the algorithm, the derivation of the per-step sensitivity ``s_t`` and
    the privacy budget. Single pass: ``m = n - floor(n/2)`` records for the initial gradient, then
    ``T = floor(n/2)`` single-record variance-reduced updates; ``T + 1`` report-noisy-min selections with
    Laplace scale ``2 s_t / eps0``.

    ``data`` may be a :class:`~dpsco_lib.problems.stream.DataStream` (``problem.stream(n, rng, block_size)``):
    its blocks are read once, in order, each checked against the declared bounds when it is read, and the
    ``n x d`` matrix is never formed (memory ``O(block_size d + |V|)`` plus a few float64 per step for a
    memory-bounded stream). The output equals the in-memory run on the same records bit for bit, for every
    block size (module docstring, "Streaming").

    Parameters
    ----------
    problem : Problem
        A convex problem whose feasible set is a polytope (Simplex, L1Ball, Polytope); constants ``L0``,
        ``L1`` in its setup norm ``p``.
    data : Dataset or DataStream
        ``n >= 2`` records inside the problem's declared bounds (else ``ValueError``; for a stream, raised when
        the offending block is read, naming its records; a stream whose ``d`` is not the problem's is refused
        before any record is read).
    epsilon : float
        Target epsilon > 0.
    delta : float
        Target delta in [0, 1) (``delta = 0``: basic composition, pure DP).
    rng : numpy.random.Generator
        The only source of randomness of the algorithm (a stream's records come from the generator the stream
        was built with).
    step_constant : float or "auto"
        ``"auto"`` (default): the constant of :func:`poly_sfw_auto_step_constant`, which minimizes the
        constant-step bound model at this run's ``eps0`` (public quantities only; tends to 1/2 as ``n`` grows,
        smaller at laptop ``n``); or ``c > 0`` in ``eta = min(1, c ln(n/ln|V|)/T)`` (``c = 1``: the theorem's
        step as stated).
    step_size : float, optional
        Explicit ``eta`` in (0, 1]; overrides ``step_constant``.
    accountant : str
        The accountant that calibrates the per-step budget and certifies the run: ``"best"`` (default, the
        tightest valid accountant: KOV15 here), ``"advanced"`` (DRV10),
        ``"kov"``, ``"rdp"``, ``"pld"``, ``"basic"`` or ``"paper"`` (module docstring).
    trace : bool
        Record the selected vertex indices, the Laplace scales and the iterate at ~40 log-spaced steps.

    Returns
    -------
    Result
        ``x`` = ``x_{T+1}``; ``params`` = :func:`poly_sfw_theory_params` ``.as_dict()`` plus ``n``; ``ledger``
        with ``T + 1`` pure ``eps0`` steps (``result.certified_epsilon(delta) <= epsilon``); ``info`` with the
        sensitivity profile and the number of gradient evaluations.
    """
    st = _setup(problem, data, epsilon, delta, rng, step_constant, step_size, accountant, trace, noise_scale())
    x, selected, snap_t, snap_x = _fast_loop(problem, st, rng, trace)
    return _result(problem, st, x, selected, snap_t, snap_x, trace)


def run_poly_sfw_reference(
    problem: Problem,
    data: Dataset,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    step_constant: float | str = "auto",
    step_size: float | None = None,
    accountant: AccountantLike = DEFAULT_ACCOUNTANT,
    trace: bool = False,
) -> Result:
    """:func:`run_poly_sfw` written as a plain loop: the readable reference (same signature, same output bits).

    One :func:`standard_laplace` draw of ``|V|`` values per step, ``problem.grad`` on a one-record dataset,
    allocating updates and the vertex oracle's ``scores``/``move`` (Spec F1; BGN21); the tests compare it with the
    optimized loop bit for bit (on a Dataset and on a DataStream of the same records). ``data`` must be a Dataset
    (a stream: ``ValueError``; pass ``stream.materialize()``).
    """
    if isinstance(data, DataStream):
        raise ValueError("data must be a Dataset for the reference loop, got a DataStream (use its materialize())")
    st = _setup(problem, data, epsilon, delta, rng, step_constant, step_size, accountant, trace, noise_scale())
    T, m, eta = st.params.T, st.params.batch_size, st.params.step_size
    checkpoints = _checkpoints(T, trace)
    snap_t: list[int] = []
    snap_x: list[np.ndarray] = []
    selected = np.empty(T + 1, dtype=np.int64)
    x_prev = np.asarray(problem.feasible_set.center(), dtype=np.float64).copy()
    grad = _initial_gradient(problem, x_prev, _dataset_chunks(st.data, m), m)  # nabla_0, chunk sums in order
    # report-noisy-min: argmin_v <v, nabla_t> + lambda_t Z_v = argmin_v <v, nabla_t / lambda_t> + Z_v (lambda_t > 0)
    noise = standard_laplace(rng, st.n_vertices)
    selected[0] = j = int(np.argmin(noise + st.scores_of(grad * (1.0 / st.scales[0]))))
    x = x_prev.copy()
    st.move(x, j, eta)
    for t in range(1, T + 1):
        record = st.data[m + t - 1: m + t]
        g_new = problem.grad(x, record)[0]
        g_old = problem.grad(x_prev, record)[0]
        grad = (grad + (g_new - g_old)) * (1.0 - eta) + eta * g_new  # nabla_t
        noise = standard_laplace(rng, st.n_vertices)
        selected[t] = j = int(np.argmin(noise + st.scores_of(grad * (1.0 / st.scales[t]))))
        x_prev = x.copy()
        st.move(x, j, eta)
        if t in checkpoints:
            snap_t.append(t + 1)
            snap_x.append(x.copy())
    return _result(problem, st, x, selected, snap_t, snap_x, trace)

