r"""DP-SGD with Poisson subsampling and per-sample clipping, and its privacy three ways (Spec D4).

Algorithm (:func:`run_dp_sgd`; Abadi et al. 2016, ACGMMTZ16; the lecture "additional topics in private ML", Sec. 3):

.. math:: w_{t+1} = \Pi_{\mathcal W}\Big(w_t - \eta\Big(\frac{1}{qn}\sum_{j \in B_t}\mathrm{clip}_C(\nabla f_j(w_t))
          + g_t\Big)\Big), \qquad g_t \sim N\big(0, (\sigma C/(qn))^2 I\big),

where each record enters :math:`B_t` independently with probability :math:`q` (Poisson subsampling) and
:math:`\mathrm{clip}_C(v) = v\min(1, C/\|v\|_2)`. Dividing by the *expected* batch size :math:`qn` (not the
realized one) keeps the add/remove-one sensitivity of the noisy sum equal to :math:`C`, so every step is the
Poisson-subsampled Gaussian mechanism with noise multiplier :math:`\sigma` and rate :math:`q`. (The lecture's
indicator :math:`\mathbf 1[\|\nabla f_j\| \le L]` is replaced by clipping, which has the same sensitivity and
no bias for :math:`L`-Lipschitz losses with :math:`C \ge L`.)

Privacy of the same run, three ways (:func:`dp_sgd_epsilons`):

* Thm 3.2 of the lecture (:func:`dp_sgd_epsilon_advanced`): each step is :math:`(\varepsilon_0, \delta_0)`-DP
  w.r.t. its batch (exact Gaussian curve, Balle-Wang), amplified by subsampling to
  :math:`(\log(1 + q(e^{\varepsilon_0} - 1)), q\delta_0)` (BBG18; the lecture's Lemma 3.3 writes
  :math:`q\varepsilon_0`, which is not valid in general) and composed over :math:`T` steps by advanced
  composition (DRV10) with slack :math:`\delta'`; the split :math:`\delta = Tq\delta_0 + \delta'` is
  optimized over a fixed grid (every split is a valid certificate).
* Thm 3.1 (moments accountant = RDP of the Poisson-subsampled Gaussian, Mir17 / MTZ19): the ledger's
  ``epsilon(delta, "rdp")``.
* The privacy-loss-distribution accountant of dp-accounting (:func:`dp_sgd_epsilon_pld`) as the reference
  (a numerically tight upper bound with pessimistic discretization).

Noise calibration (:func:`dp_sgd_noise_multiplier`, used by :func:`run_dp_sgd`): the smallest noise multiplier
whose certificate of the events the run records (``steps`` Poisson-subsampled Gaussian steps, add/remove
relation) is at most the target, solved by :func:`~dpsco_lib.privacy.accounting.budget.calibrate`, which
inverts the ledger's own certification. ``accountant="best"`` (default: the tightest valid accountant, here
dp-accounting's PLD; about 7 % less noise than RDP, and 5-15 s per fresh calibration instead of about 1 s,
cached per argument tuple), ``"pld"``, or ``"rdp"`` (the moments accountant of Thm 3.1, the default of earlier
versions).

The library works in the idealized real-arithmetic model with float64 noise and a non-cryptographic RNG.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from dpsco_lib._validation import (
    check_array,
    check_bool,
    check_delta,
    check_epsilon,
    check_int,
    check_positive,
    check_probability,
    check_rng,
)
from dpsco_lib.algorithms._result import Result
from dpsco_lib.privacy.accounting import PrivacyLedger, advanced_composition_epsilon
from dpsco_lib.privacy.accounting.accountants import DEFAULT_ACCOUNTANT, AccountantLike
from dpsco_lib.privacy.accounting.budget import calibrate, check_accountant
from dpsco_lib.privacy.accounting.events import DpEvent, SelfComposedEvent, SubsampledGaussianEvent
from dpsco_lib.privacy.mechanisms import gaussian_epsilon_analytic
from dpsco_lib.problems.base import Problem, SaddleProblem
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.empirical import require_problem
from dpsco_lib.testing import noise_scale

__all__ = [
    "clip_rows",
    "dp_sgd_epsilon_advanced",
    "dp_sgd_epsilon_pld",
    "dp_sgd_epsilon_rdp",
    "dp_sgd_epsilons",
    "dp_sgd_noise_multiplier",
    "run_dp_sgd",
]


def clip_rows(G: np.ndarray, clip: float) -> np.ndarray:
    r"""Per-row clipping :math:`v \mapsto v\min(1, C/\|v\|_2)` of an ``(m, d)`` array."""
    c = check_positive(clip, "clip")
    nrm = np.linalg.norm(G, axis=1)
    scale = np.minimum(1.0, c / np.maximum(nrm, 1e-300))
    return G * scale[:, None]


def _check_problem(problem: Any) -> Problem:
    if isinstance(problem, SaddleProblem):
        raise ValueError(
            f"problem must be a dpsco_lib.problems.Problem (a minimization problem), got {type(problem).__name__}"
        )
    return require_problem(problem)


def _start(problem: Problem, x0: Any) -> np.ndarray:
    d, fset = problem.d, problem.feasible_set
    if x0 is None:
        x = np.array(fset.center(), dtype=np.float64) if hasattr(fset, "center") else np.zeros(d)
    else:
        x = check_array(x0, "x0", shape=(d,))
    return fset.project(x)


def run_dp_sgd(
    problem: Problem,
    data: Dataset,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    sampling_rate: float,
    steps: int,
    clip: float,
    step_size: float,
    accountant: AccountantLike = DEFAULT_ACCOUNTANT,
    x0: np.ndarray | None = None,
    average: bool = True,
    trace: bool = False,
    trace_every: int = 1,
    normalizer: float | None = None,
) -> Result:
    r"""DP-SGD with Poisson subsampling, per-sample clipping and projection (Spec D4; ACGMMTZ16).

    ``(epsilon, delta)``-DP under the **add/remove** neighbouring relation (``result.relation``): the noise
    multiplier is :func:`dp_sgd_noise_multiplier` ``(epsilon, delta=delta, sampling_rate=q, steps=T,
    accountant=accountant)`` and the ledger records the ``T`` subsampled Gaussian steps it was calibrated for.

    Parameters
    ----------
    problem : Problem
        Provides per-sample gradients ``problem.grad(x, batch)`` of shape ``(m, d)`` and
        ``problem.feasible_set.project``.
    data : Dataset
        The ``n`` records within the problem's declared bounds (``data[idx]`` selects a batch).
    epsilon, delta : float
        Target; ``delta`` in (0, 1) (a Gaussian mechanism is never pure DP).
    rng : numpy.random.Generator
    sampling_rate : float
        Poisson rate :math:`q \in (0, 1]` (expected batch size :math:`qn`).
    steps : int
        Number of steps :math:`T \ge 1`.
    clip : float
        Clipping norm :math:`C > 0`.
    step_size : float
        Step size :math:`\eta > 0` (was ``lr``).
    accountant : str
        The accountant that calibrates the noise (``"best"``, default: the tightest valid one, dp-accounting's
        PLD; ``"pld"``; ``"rdp"``: the moments accountant). One of
        :data:`~dpsco_lib.privacy.accounting.accountants.ACCOUNTANTS` that applies to subsampled Gaussian events.
    x0 : array (d,), optional
        Starting point (projected onto the feasible set); default the set's centre.
    average : bool
        Return the average of the iterates :math:`w_1, \dots, w_T` (default) or the last one.
    trace : bool
        Record the averaged (or last) iterate every ``trace_every`` steps in ``trace`` (``t``, ``x``).
    trace_every : int
        Recording period of the trace (default every step).
    normalizer : float, optional
        The public constant dividing the noisy clipped sum; default the expected batch size :math:`qn`
        (treating ``n`` as public, as standard DP-SGD implementations do). Under add/remove-one neighbours
        with ``n`` private, pass a fixed value: then the step is exactly the subsampled Gaussian mechanism.

    Returns
    -------
    Result
        ``ledger`` holds one ``subsampled_gaussian`` event with ``count = steps``; ``params`` the calibrated
        ``noise_multiplier``; ``info`` the realized batch sizes' mean and the number of clipped gradients.
    """
    problem = _check_problem(problem)
    rng = check_rng(rng)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    accountant = check_accountant(accountant)
    q = check_probability(sampling_rate, "sampling_rate", open_left=True)
    T = check_int(steps, "steps", lo=1)
    C = check_positive(clip, "clip")
    eta = check_positive(step_size, "step_size")
    average = check_bool(average, "average")
    trace = check_bool(trace, "trace")
    trace_every = check_int(trace_every, "trace_every", lo=1)
    factor = check_positive(noise_scale(), "noise_scale()")
    data = problem.validate_data(data)
    n = data.n
    x = _start(problem, x0)
    denom = q * n if normalizer is None else check_positive(normalizer, "normalizer")
    sigma = dp_sgd_noise_multiplier(epsilon, delta=delta, sampling_rate=q, steps=T, accountant=accountant)
    x_sum, out, stats, tr = _dp_sgd_loop(problem, data, x, rng, q=q, steps=T, clip=C, step_size=eta,
                                         noise_std=sigma * C * factor, denom=denom, average=average,
                                         trace_every=trace_every if trace else 0)
    led = PrivacyLedger()
    led.record_subsampled_gaussian(sigma, q, count=T, label="DP-SGD step (D4)")
    return Result(
        x=out,
        trace=tr,
        params={"noise_multiplier": sigma, "sampling_rate": q, "steps": T, "clip": C, "step_size": eta,
                "average": average, "normalizer": denom, "accountant": accountant},
        ledger=led,
        info={"mean_batch_size": stats[0], "n_clipped": stats[1], "method": "dp_sgd",
              "noise_factor_hook": factor},
    )


def _dp_sgd_loop(problem: Problem, data: Dataset, x: np.ndarray, rng: np.random.Generator, *, q: float, steps: int,
                 clip: float, step_size: float, noise_std: float, denom: float, average: bool,
                 trace_every: int) -> tuple[np.ndarray, np.ndarray, tuple[float, int], dict[str, np.ndarray] | None]:
    """The T steps of :func:`run_dp_sgd` (arguments validated there)."""
    n, d, fset = data.n, x.size, problem.feasible_set
    x_sum = np.zeros(d)
    batch_sizes = np.empty(steps, dtype=np.int64)
    n_clipped = 0
    tr_t, tr_x = [], []
    for t in range(steps):
        mask = rng.random(n) < q
        idx = np.flatnonzero(mask)
        batch_sizes[t] = idx.size
        g_sum = np.zeros(d)
        if idx.size:
            G = np.asarray(problem.grad(x, data[idx]), dtype=np.float64)
            nrm = np.linalg.norm(G, axis=1)
            n_clipped += int(np.sum(nrm > clip))
            g_sum = (G * np.minimum(1.0, clip / np.maximum(nrm, 1e-300))[:, None]).sum(axis=0)
        g = (g_sum + rng.normal(0.0, noise_std, size=d)) / denom
        x = fset.project(x - step_size * g)
        x_sum += x
        if trace_every and (t + 1) % trace_every == 0:
            tr_t.append(t + 1)
            tr_x.append(x_sum / (t + 1) if average else x.copy())
    out = x_sum / steps if average else x
    trace = {"t": np.array(tr_t), "x": np.array(tr_x)} if trace_every else None
    return x_sum, out, (float(batch_sizes.mean()), n_clipped), trace


# ---------------------------------------------------------------------------------------------------------
# Privacy three ways
# ---------------------------------------------------------------------------------------------------------
_SPLITS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


def _check_sgd_privacy_args(noise_multiplier: float, sampling_rate: float, steps: int, delta: float):
    sigma = check_positive(noise_multiplier, "noise_multiplier")
    q = check_probability(sampling_rate, "sampling_rate", open_left=True)
    T = check_int(steps, "steps", lo=1)
    dlt = check_delta(delta, allow_zero=False)
    return sigma, q, T, dlt


def dp_sgd_epsilon_advanced(noise_multiplier: float, *, sampling_rate: float, steps: int, delta: float) -> float:
    r"""Seed 002 Thm 3.2: amplification by subsampling + advanced composition, with exact ingredients.

    For a split :math:`f \in (0, 1)`: :math:`\delta' = f\delta`, per-step :math:`\delta_0 = (1-f)\delta/(qT)`,
    :math:`\varepsilon_0 = \varepsilon_{\mathrm{Gauss}}(\sigma; \delta_0)` (Balle-Wang exact curve, sensitivity 1
    in units of :math:`C`), :math:`\varepsilon_s = \log(1 + q(e^{\varepsilon_0} - 1))` (BBG18), and
    :math:`\varepsilon = \min(T\varepsilon_s,\ \sqrt{2T\log(1/\delta')}\varepsilon_s
    + T\varepsilon_s(e^{\varepsilon_s}-1))` (DRV10). Returns the minimum over a fixed grid of splits. This is a
    comparison of theorems, not a ledger accountant: runs are certified by their ledger.
    """
    sigma, q, T, dlt = _check_sgd_privacy_args(noise_multiplier, sampling_rate, steps, delta)
    best = math.inf
    for f in _SPLITS:
        d0 = (1 - f) * dlt / (q * T)
        if d0 >= 1:
            continue
        e0 = gaussian_epsilon_analytic(sigma, sensitivity=1.0, delta=d0)
        es = math.log1p(q * math.expm1(e0))
        if es == 0:
            return 0.0
        best = min(best, T * es, advanced_composition_epsilon(es, k=T, delta_prime=f * dlt))
    return best


def _dp_sgd_event(noise_multiplier: float, sampling_rate: float, steps: int) -> DpEvent:
    """The events of one DP-SGD run: ``steps`` Poisson-subsampled Gaussian steps (add/remove relation)."""
    return SelfComposedEvent(SubsampledGaussianEvent(noise_multiplier, sampling_rate), steps)


def dp_sgd_epsilon_rdp(noise_multiplier: float, *, sampling_rate: float, steps: int, delta: float) -> float:
    """Seed 002 Thm 3.1 (moments accountant): RDP of the Poisson-subsampled Gaussian (MTZ19), converted to
    (eps, delta) by the ledger (CKS20); the value ``result.certified_epsilon(delta, "rdp")`` of a run."""
    sigma, q, T, dlt = _check_sgd_privacy_args(noise_multiplier, sampling_rate, steps, delta)
    led = PrivacyLedger()
    led.record(_dp_sgd_event(sigma, q, T))
    return led.epsilon(dlt, "rdp")


def dp_sgd_epsilon_pld(
    noise_multiplier: float, *, sampling_rate: float, steps: int, delta: float, discretization: float = 1e-4
) -> float:
    """Reference: dp-accounting's PLD accountant on ``PoissonSampledDpEvent(q, GaussianDpEvent(sigma))``
    composed ``steps`` times (pessimistic discretization, so an upper bound up to its numerics), called
    directly with its own ``discretization`` (an independent check of the ledger's ``"pld"`` accountant)."""
    sigma, q, T, dlt = _check_sgd_privacy_args(noise_multiplier, sampling_rate, steps, delta)
    disc = check_positive(discretization, "discretization")
    import dp_accounting as dpa

    acc = dpa.pld.PLDAccountant(value_discretization_interval=disc)
    acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), T)
    return float(acc.get_epsilon(dlt))


def dp_sgd_epsilons(
    noise_multiplier: float, *, sampling_rate: float, steps: int, delta: float, pld: bool = True
) -> dict[str, float]:
    """The three certificates of Spec D4: {"advanced": Thm 3.2, "rdp": Thm 3.1, "pld": dp-accounting}."""
    kw = {"sampling_rate": sampling_rate, "steps": steps, "delta": delta}
    out = {"advanced": dp_sgd_epsilon_advanced(noise_multiplier, **kw),
           "rdp": dp_sgd_epsilon_rdp(noise_multiplier, **kw)}
    if check_bool(pld, "pld"):
        out["pld"] = dp_sgd_epsilon_pld(noise_multiplier, **kw)
    return out


def dp_sgd_noise_multiplier(
    epsilon: float, *, delta: float, sampling_rate: float, steps: int, accountant: AccountantLike = DEFAULT_ACCOUNTANT
) -> float:
    """Smallest noise multiplier whose ``accountant`` certificate of the run's events is <= (epsilon, delta).

    :func:`~dpsco_lib.privacy.accounting.budget.calibrate` over ``steps`` Poisson-subsampled Gaussian events
    (the events :func:`run_dp_sgd` records), within a relative 1e-12 of the boundary on the feasible side.
    ``accountant="best"`` (default) or ``"pld"``: the tightest, dp-accounting's PLD (5-15 s, its solve bracketed
    by the RDP multiplier, an upper bound for "best"); ``"rdp"``: the moments accountant (about 1 s). Cached per
    argument tuple.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, allow_zero=False)
    q = check_probability(sampling_rate, "sampling_rate", open_left=True)
    T = check_int(steps, "steps", lo=1)
    return _calibrated_noise(eps, dlt, q, T, check_accountant(accountant))


@lru_cache(maxsize=256)
def _calibrated_noise(epsilon: float, delta: float, q: float, steps: int, accountant: str) -> float:
    def make(m: float) -> DpEvent:
        return _dp_sgd_event(m, q, steps)

    bracket = (0.5, 2.0)
    if accountant in ("best", "pld"):
        # "best" certifies at most RDP, so its multiplier is at most RDP's (cheap): bracketing the PLD solve there
        # halves its PLD evaluations (about 0.5-1 s each); "pld" alone is typically below RDP too
        upper = _calibrated_noise(epsilon, delta, q, steps, "rdp")
        bracket = (0.75 * upper, upper)
    return calibrate(make, epsilon=epsilon, delta=delta, accountant=accountant, bracket=bracket,
                     increasing=False).value
