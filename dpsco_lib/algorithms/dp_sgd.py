r"""DP-SGD with Poisson subsampling and per-sample clipping, and its privacy three ways (Spec D4; seed 002).

Algorithm (:func:`run_dp_sgd`; Abadi et al. 2016, ACGMMTZ16; seed 002 Sec. 3):

.. math:: w_{t+1} = \Pi_{\mathcal W}\Big(w_t - \eta\Big(\frac{1}{qn}\sum_{j \in B_t}\mathrm{clip}_C(\nabla f_j(w_t))
          + g_t\Big)\Big), \qquad g_t \sim N\big(0, (\sigma C/(qn))^2 I\big),

where each record enters :math:`B_t` independently with probability :math:`q` (Poisson subsampling) and
:math:`\mathrm{clip}_C(v) = v\min(1, C/\|v\|_2)`. Dividing by the *expected* batch size :math:`qn` (not the
realized one) keeps the add/remove-one sensitivity of the noisy sum equal to :math:`C`, so every step is the
Poisson-subsampled Gaussian mechanism with noise multiplier :math:`\sigma` and rate :math:`q`. (The seed's
indicator :math:`\mathbf 1[\|\nabla f_j\| \le L]` is replaced by clipping, which has the same sensitivity and
no bias for :math:`L`-Lipschitz losses with :math:`C \ge L`.)

Privacy of the same run, three ways (:func:`dp_sgd_epsilons`):

* Thm 3.2 of the seed (:func:`dp_sgd_epsilon_advanced`): each step is :math:`(\varepsilon_0, \delta_0)`-DP
  w.r.t. its batch (exact Gaussian curve, Balle-Wang), amplified by subsampling to
  :math:`(\log(1 + q(e^{\varepsilon_0} - 1)), q\delta_0)` (BBG18; the seed's Lemma 3.3 writes
  :math:`q\varepsilon_0`, which is not valid in general) and composed over :math:`T` steps by advanced
  composition (DRV10) with slack :math:`\delta'`; the split :math:`\delta = Tq\delta_0 + \delta'` is
  optimized over a fixed grid (every split is a valid certificate).
* Thm 3.1 (moments accountant = RDP of the Poisson-subsampled Gaussian, Mir17 / MTZ19): the ledger's
  ``epsilon(delta, "rdp")``.
* The privacy-loss-distribution accountant of dp-accounting (:func:`dp_sgd_epsilon_pld`) as the reference
  (a numerically tight upper bound with pessimistic discretization).

The library works in the idealized real-arithmetic model with float64 noise and a non-cryptographic RNG.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.optimize import brentq

from dpsco_lib._validation import (
    check_array,
    check_delta,
    check_epsilon,
    check_int,
    check_positive,
    check_probability,
    check_rng,
)
from dpsco_lib.algorithms._result import Result
from dpsco_lib.privacy.accounting import PrivacyLedger, advanced_composition_epsilon
from dpsco_lib.privacy.mechanisms import gaussian_epsilon_analytic

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


def _check_problem(problem: Any) -> None:
    for attr in ("grad", "feasible_set", "d"):
        if not hasattr(problem, attr):
            raise ValueError(
                f"problem must provide .{attr} (a dpsco_lib.problems.Problem), got {type(problem).__name__}"
            )


def run_dp_sgd(
    problem: Any,
    data: Any,
    *,
    noise_multiplier: float,
    sampling_rate: float,
    steps: int,
    clip: float,
    lr: float,
    rng: np.random.Generator,
    x0: np.ndarray | None = None,
    average: bool = True,
    trace_every: int = 0,
    normalizer: float | None = None,
) -> Result:
    r"""DP-SGD with Poisson subsampling, per-sample clipping and projection (Spec D4; ACGMMTZ16).

    Parameters
    ----------
    problem : Problem
        Provides per-sample gradients ``problem.grad(x, batch)`` of shape ``(m, d)`` and
        ``problem.feasible_set.project``.
    data : Dataset
        The ``n`` records (``data[idx]`` selects a batch).
    noise_multiplier : float
        :math:`\sigma > 0`: the noise standard deviation is :math:`\sigma C` on the clipped sum.
    sampling_rate : float
        Poisson rate :math:`q \in (0, 1]` (expected batch size :math:`qn`).
    steps : int
        Number of steps :math:`T \ge 1`.
    clip : float
        Clipping norm :math:`C > 0`.
    lr : float
        Step size :math:`\eta > 0`.
    rng : numpy.random.Generator
    x0 : array (d,), optional
        Starting point (projected onto the feasible set); default the set's centre.
    average : bool
        Return the average of the iterates :math:`w_1, \dots, w_T` (default) or the last one.
    trace_every : int
        Record the averaged iterate every this many steps in ``trace`` (0: no trace).
    normalizer : float, optional
        The public constant dividing the noisy clipped sum; default the expected batch size :math:`qn`
        (treating ``n`` as public, as standard DP-SGD implementations do). Under add/remove-one neighbours
        with ``n`` private, pass a fixed value: then the step is exactly the subsampled Gaussian mechanism.

    Returns
    -------
    Result
        ``ledger`` holds one ``subsampled_gaussian`` event with ``count = steps``; ``info`` the realized
        batch sizes' mean and the number of clipped gradients.
    """
    _check_problem(problem)
    sigma = check_positive(noise_multiplier, "noise_multiplier")
    q = check_probability(sampling_rate, "sampling_rate", open_left=True)
    T = check_int(steps, "steps", lo=1)
    C = check_positive(clip, "clip")
    eta = check_positive(lr, "lr")
    rng = check_rng(rng)
    trace_every = check_int(trace_every, "trace_every", lo=0)
    n = int(getattr(data, "n", -1))
    if n < 1:
        raise ValueError(f"data must be a non-empty Dataset with attribute n, got {type(data).__name__}")
    d = int(problem.d)
    fset = problem.feasible_set
    if x0 is None:
        x = np.array(fset.center(), dtype=np.float64) if hasattr(fset, "center") else np.zeros(d)
    else:
        x = check_array(x0, "x0", shape=(d,))
    x = fset.project(x)
    denom = q * n if normalizer is None else check_positive(normalizer, "normalizer")
    x_sum = np.zeros(d)
    batch_sizes = np.empty(T, dtype=np.int64)
    n_clipped = 0
    tr_t, tr_x = [], []
    for t in range(T):
        mask = rng.random(n) < q
        idx = np.flatnonzero(mask)
        batch_sizes[t] = idx.size
        g_sum = np.zeros(d)
        if idx.size:
            G = np.asarray(problem.grad(x, data[idx]), dtype=np.float64)
            nrm = np.linalg.norm(G, axis=1)
            n_clipped += int(np.sum(nrm > C))
            g_sum = (G * np.minimum(1.0, C / np.maximum(nrm, 1e-300))[:, None]).sum(axis=0)
        g = (g_sum + rng.normal(0.0, sigma * C, size=d)) / denom
        x = fset.project(x - eta * g)
        x_sum += x
        if trace_every and (t + 1) % trace_every == 0:
            tr_t.append(t + 1)
            tr_x.append(x_sum / (t + 1) if average else x.copy())
    led = PrivacyLedger()
    led.record_subsampled_gaussian(sigma, q, count=T, label="DP-SGD step (D4)")
    out = x_sum / T if average else x
    trace = {"t": np.array(tr_t), "x": np.array(tr_x)} if trace_every else None
    return Result(
        x=out,
        trace=trace,
        params={"noise_multiplier": sigma, "sampling_rate": q, "steps": T, "clip": C, "lr": eta,
                "average": bool(average), "normalizer": denom},
        ledger=led,
        info={"mean_batch_size": float(batch_sizes.mean()), "n_clipped": n_clipped, "method": "dp_sgd"},
    )


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


def dp_sgd_epsilon_advanced(noise_multiplier: float, sampling_rate: float, steps: int, delta: float) -> float:
    r"""Seed 002 Thm 3.2: amplification by subsampling + advanced composition, with exact ingredients.

    For a split :math:`f \in (0, 1)`: :math:`\delta' = f\delta`, per-step :math:`\delta_0 = (1-f)\delta/(qT)`,
    :math:`\varepsilon_0 = \varepsilon_{\mathrm{Gauss}}(\sigma; \delta_0)` (Balle-Wang exact curve, sensitivity 1
    in units of :math:`C`), :math:`\varepsilon_s = \log(1 + q(e^{\varepsilon_0} - 1))` (BBG18), and
    :math:`\varepsilon = \min(T\varepsilon_s,\ \sqrt{2T\log(1/\delta')}\varepsilon_s
    + T\varepsilon_s(e^{\varepsilon_s}-1))` (DRV10). Returns the minimum over a fixed grid of splits.
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


def dp_sgd_epsilon_rdp(noise_multiplier: float, sampling_rate: float, steps: int, delta: float) -> float:
    """Seed 002 Thm 3.1 (moments accountant): RDP of the Poisson-subsampled Gaussian (MTZ19), converted to
    (eps, delta) by the ledger (CKS20)."""
    sigma, q, T, dlt = _check_sgd_privacy_args(noise_multiplier, sampling_rate, steps, delta)
    led = PrivacyLedger()
    led.record_subsampled_gaussian(sigma, q, count=T)
    return led.epsilon(dlt, "rdp")


def dp_sgd_epsilon_pld(
    noise_multiplier: float, sampling_rate: float, steps: int, delta: float, *, discretization: float = 1e-4
) -> float:
    """Reference: dp-accounting's PLD accountant on ``PoissonSampledDpEvent(q, GaussianDpEvent(sigma))``
    composed ``steps`` times (pessimistic discretization, so an upper bound up to its numerics).
    Requires the optional ``dp_accounting`` package (a test dependency)."""
    sigma, q, T, dlt = _check_sgd_privacy_args(noise_multiplier, sampling_rate, steps, delta)
    disc = check_positive(discretization, "discretization")
    import dp_accounting as dpa  # test/notebook dependency only

    acc = dpa.pld.PLDAccountant(value_discretization_interval=disc)
    acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), T)
    return float(acc.get_epsilon(dlt))


def dp_sgd_epsilons(
    noise_multiplier: float, sampling_rate: float, steps: int, delta: float, *, pld: bool = True
) -> dict[str, float]:
    """The three certificates of Spec D4: {"advanced": Thm 3.2, "rdp": Thm 3.1, "pld": dp-accounting}."""
    out = {
        "advanced": dp_sgd_epsilon_advanced(noise_multiplier, sampling_rate, steps, delta),
        "rdp": dp_sgd_epsilon_rdp(noise_multiplier, sampling_rate, steps, delta),
    }
    if pld:
        out["pld"] = dp_sgd_epsilon_pld(noise_multiplier, sampling_rate, steps, delta)
    return out


def dp_sgd_noise_multiplier(epsilon: float, delta: float, sampling_rate: float, steps: int) -> float:
    """Smallest noise multiplier (to 1e-6 relative, rounded up) whose RDP certificate is <= (epsilon, delta)."""
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, allow_zero=False)
    q = check_probability(sampling_rate, "sampling_rate", open_left=True)
    T = check_int(steps, "steps", lo=1)

    def f(log_s: float) -> float:
        return dp_sgd_epsilon_rdp(math.exp(log_s), q, T, dlt) - eps

    lo, hi = math.log(0.05), math.log(2.0)
    while f(hi) > 0:
        hi += 1.0
    while f(lo) <= 0:
        lo -= 1.0
    s = math.exp(brentq(f, lo, hi, xtol=1e-7))
    while dp_sgd_epsilon_rdp(s, q, T, dlt) > eps:
        s *= 1 + 1e-6
    return s
