"""Privacy-loss distributions (dp-accounting) with every numerical error charged to delta. Spec P5.

dp-accounting (Google's DP library, Meiser-Mohammadi 2018; Koskela-Jalko-Honkela 2020 for the FFT composition)
represents a mechanism by the probability mass function of its privacy loss on a grid of spacing ``interval``.
Three approximations separate the computed curve delta_PLD(eps) from the exact one:

1. *Discretization* of the loss: with ``pessimistic_estimate=True`` (the default of the constructors used here)
   every loss is rounded up, which can only increase delta(eps).
2. *Truncation* of the mechanism's loss distribution (``log_mass_truncation_bound``) and of the tails of each
   composition (``tail_mass_truncation``): in pessimistic mode the truncated mass is moved to the infinite
   loss, i.e. charged to delta in full.
3. *Floating-point error of the FFT convolutions* that compose the PMFs. This one is not charged by
   dp-accounting. The computed probabilities carry an absolute error of order ``u * ||p||_2`` per entry
   (``u`` = 2^-53), so once delta is below a few times ``sqrt(N) * k * u * ||p||_2`` (N grid points, k
   compositions) the computed tail mass is dominated by rounding noise and can lie *below* the exact tail:
   at delta ~ 1e-12, 6059 Gaussian compositions come out 0.1 % below the exact mu-GDP curve.

Item 3 is bounded here and charged to delta. Each composition of the event tree carries an l1 bound ``err``
on the floating-point error of its PMFs: a worst-case bound (Higham 2002, Thm 24.2: a length-N FFT has
relative l2 error at most ``log2(N) * eta``, ``eta = 8 u``, propagated through convolutions and powers, with
||.||_1 <= sqrt(N) ||.||_2), and, for the FFT power of a dense self-composition, a sharper one that follows
the composed PMF's actual spread (componentwise FFT error and Parseval sums evaluated on the computed
transform; :func:`_fft_power_error`); the smaller is used. Since
delta(eps) = m_inf + sum_l (1 - e^(eps - l))_+ p_l has coefficients in [0, 1], the exact delta exceeds the
computed one by at most ``err``; :func:`pld_epsilon` therefore returns eps_PLD(delta - err) (and the float64
summation of ``get_epsilon_for_delta`` is covered by a further relative factor ``1 + 2 N u``). When ``err``
exceeds half of delta the PLD cannot certify at that delta and :func:`pld_epsilon` returns ``inf`` (the
ledger's ``"pld"`` accountant then reports the RDP certificate). In practice ``err`` is 1e-11 to 1e-9 for
thousands of compositions, so the rule changes nothing at delta >= 1e-6 beyond the fifth significant digit
and takes over below delta ~ 1e-9.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.special import logsumexp

__all__ = ["SoundPld", "pld_epsilon", "sound_pld"]

_U = 2.0**-53  # unit roundoff of float64
_ETA = 8.0 * _U  # per-butterfly-level relative error of the FFT (Higham 2002, Thm 24.2)


@dataclass(frozen=True)
class SoundPld:
    """A dp-accounting ``PrivacyLossDistribution`` and an l1 bound on the floating-point error of its PMFs.

    Attributes
    ----------
    pld : dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution
        The (pessimistically discretized) PLD as dp-accounting computes it.
    error : float
        An upper bound on ``||p_computed - p_exact_arith||_1`` for both of its PMFs (remove and add), where
        ``p_exact_arith`` is the PMF dp-accounting would return in exact arithmetic.
    """

    pld: Any
    error: float


def _norms(pmf: Any) -> tuple[float, float, int]:
    # (||p||_1, ||p||_2, N) of a PMF's finite part; |computed - exact| entries are bounded separately.
    probs = np.abs(np.asarray(pmf.to_dense_pmf()._probs, dtype=float))  # noqa: SLF001 - dp-accounting's PMF array
    return float(probs.sum()), float(np.sqrt(np.sum(probs * probs))), int(probs.size)


def _pmfs(p: Any) -> list[Any]:
    return [p._pmf_remove, p._pmf_add]  # noqa: SLF001 - the two PMFs of a dp-accounting PLD


def _fft_power_error(pmf: Any, k: int, n_out: int) -> float:
    """l1 error bound of dp-accounting's dense self-composition ``ifft(fft(p, M) ** k)`` (``common.self_convolve``).

    Componentwise, the computed transform has |Y^_j - Y_j| <= e = L eta ||p||_1 (L = log2 M + 1 levels); the k-th
    power then errs by at most k B_j^(k-1) e + 4 k u (1 + |log B_j|) B_j^k with B_j = |Y^_j| + 2 e (the second term
    bounds the rounding of the complex power), the inverse transform adds L eta ||Z||_2 / sqrt(M), and Parseval
    turns the frequency-domain l2 error into the output's. The sums over j are evaluated from the computed
    transform itself, so the bound follows the actual spread of the composed PMF instead of a worst case.
    """
    from scipy import fft as sfft

    probs = np.asarray(pmf.to_dense_pmf()._probs, dtype=float)  # noqa: SLF001 - dp-accounting's PMF array
    m = sfft.next_fast_len(max(n_out, probs.size))
    levels = math.log2(max(m, 2)) + 1.0
    e = levels * _ETA * float(np.abs(probs).sum()) * (1 + 1e-6)
    b = np.abs(sfft.fft(probs, m)) + 2.0 * e
    logb = np.log(b)
    s_km1 = math.exp(0.5 * float(logsumexp(2.0 * (k - 1) * logb)))  # sqrt(sum B^(2(k-1)))
    s_k = math.exp(0.5 * float(logsumexp(2.0 * k * logb)))  # sqrt(sum B^(2k)) >= ||Z||_2
    s_pow = math.exp(0.5 * float(logsumexp(2.0 * k * logb + 2.0 * np.log1p(np.abs(logb)))))
    freq = k * e * s_km1 + 4.0 * k * _U * s_pow
    l2 = (freq + levels * _ETA * s_k) / math.sqrt(m)
    return 1.01 * l2 * math.sqrt(n_out)


def _self_compose_error(base: SoundPld, k: int, out: Any) -> float:
    """l1 error bound of ``base.pld.self_compose(k)`` (one FFT power, or k-1 sparse FFT convolutions)."""
    from dp_accounting.pld import pld_pmf

    worst = 0.0
    for pmf, res in zip(_pmfs(base.pld), _pmfs(out), strict=True):
        n1, n2, _ = _norms(pmf)
        n_out = _norms(res)[2]
        n1 = n1 + base.error
        levels = math.log2(max(n_out, 2)) + 1.0
        grow = math.exp((k - 1) * math.log(max(n1, 1.0)))
        # input error propagated through k-fold convolution, plus the rounding of the FFTs and of the power
        fft = 3.0 * (k + 1) * grow * (levels * _ETA + 4.0 * _U) * (n2 + base.error) * math.sqrt(n_out)
        dense = isinstance(pmf, pld_pmf.DensePLDPmf) or pmf.size**k > 1000  # dp-accounting's sparse-size limit
        if dense:
            fft = min(fft, _fft_power_error(pmf, k, n_out))
        worst = max(worst, k * grow * base.error + fft)
    return worst


def _compose_error(a: SoundPld, b: SoundPld, out: Any) -> float:
    """l1 error bound of ``a.pld.compose(b.pld)`` (one FFT convolution, ``scipy.signal.fftconvolve``)."""
    worst = 0.0
    for pa, pb, res in zip(_pmfs(a.pld), _pmfs(b.pld), _pmfs(out), strict=True):
        a1, a2, _ = _norms(pa)
        b1, b2, _ = _norms(pb)
        n_out = _norms(res)[2]
        levels = math.log2(max(n_out, 2)) + 1.0
        prop = a.error * (b1 + b.error) + b.error * (a1 + a.error)
        fft = 3.0 * (levels * _ETA + _U) * max((a1 + a.error) * (b2 + b.error), (b1 + b.error) * (a2 + a.error))
        worst = max(worst, prop + fft * math.sqrt(n_out))
    return worst


@lru_cache(maxsize=128)
def sound_pld(event: Any, interval: float) -> SoundPld:
    """The PLD of a library event (:mod:`~dpsco_lib.privacy.accounting.events`) with its rounding-error bound.

    Pure eps-DP steps (Laplace, report-noisy-max, exponential mechanism) use the dominating pair of eps-DP
    (randomized response, loss +-eps); Gaussian and Poisson-subsampled Gaussian events the dp-accounting
    constructors, all with pessimistic discretization on a loss grid of spacing ``interval``.
    """
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as pld
    from dp_accounting.privacy_accountant import NeighboringRelation

    from dpsco_lib.privacy.accounting import events as ev

    if isinstance(event, ev.SelfComposedEvent):
        base = sound_pld(event.event, interval)
        if event.repetitions == 1:
            return base
        out = base.pld.self_compose(event.repetitions)
        return SoundPld(out, _self_compose_error(base, event.repetitions, out))
    if isinstance(event, ev.ComposedEvent):
        acc = SoundPld(pld.identity(value_discretization_interval=interval), 0.0)
        for e in event.events:
            nxt = sound_pld(e, interval)
            out = acc.pld.compose(nxt.pld)
            acc = SoundPld(out, _compose_error(acc, nxt, out))
        return acc
    if isinstance(event, (ev.LaplaceEvent, ev.ExponentialEvent)):
        p = pld.from_privacy_parameters(common.DifferentialPrivacyParameters(event.epsilon, 0.0),
                                        value_discretization_interval=interval)
    elif isinstance(event, ev.GaussianEvent):
        p = pld.from_gaussian_mechanism(event.noise_multiplier, value_discretization_interval=interval,
                                        pessimistic_estimate=True)
    elif isinstance(event, ev.SubsampledGaussianEvent):
        p = pld.from_gaussian_mechanism(event.noise_multiplier, sampling_prob=event.sampling_rate,
                                        value_discretization_interval=interval, pessimistic_estimate=True,
                                        neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE)
    else:
        raise ValueError(f"no PLD for {type(event).__name__}")
    # The constructors' own entries are computed from CDF differences with relative error a few u each.
    err = max(8.0 * _U * _norms(q)[0] for q in _pmfs(p))
    return SoundPld(p, err)


def pld_epsilon(events: Sequence[Any], delta: float, interval: float) -> float:
    """A sound epsilon at ``delta`` of the composition of ``events`` from their PLD, or ``inf``.

    Returns eps_PLD(delta') with delta' = (delta - err) / (1 + 2 N u), where ``err`` bounds the floating-point
    error of the composed PMFs (module docstring) and N is their length; ``inf`` when ``err > delta / 2`` (the
    PLD's rounding noise is then of the order of delta itself and cannot certify).
    The answer is a deterministic function of its arguments and is memoized: a ledger certified again (a
    fixed-point search over delta, an estimator refitted on data of the same size) costs nothing the second time.
    """
    return _pld_epsilon_memo(tuple(events), delta, interval)


@lru_cache(maxsize=4096)
def _pld_epsilon_memo(events: tuple[Any, ...], delta: float, interval: float) -> float:
    from dpsco_lib.privacy.accounting.events import ComposedEvent

    if not events:
        return 0.0
    try:
        sp = sound_pld(events[0] if len(events) == 1 else ComposedEvent(tuple(events)), interval)
        if not (sp.error <= delta / 2.0):
            return math.inf
        n = max(_norms(q)[2] for q in _pmfs(sp.pld))
        eps = sp.pld.get_epsilon_for_delta((delta - sp.error) / (1.0 + 2.0 * n * _U))
    except (OverflowError, FloatingPointError, ValueError, MemoryError):  # pragma: no cover (range-guarded)
        return math.inf
    return max(float(eps), 0.0) if math.isfinite(eps) else math.inf
