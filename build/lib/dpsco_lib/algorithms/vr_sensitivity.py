r"""The sensitivity lemma of the variance-reduced Frank-Wolfe estimator (Spec F1, F3, N1; BGN21).

One lemma, used by Poly-SFW (:mod:`~dpsco_lib.algorithms.poly_sfw`, scores, single-record updates), the naive
GG-VR-SFW (:mod:`~dpsco_lib.algorithms.gg_vr_sfw`, dual norm, mini-batches) and the nonconvex VR Frank-Wolfe
(:mod:`~dpsco_lib.algorithms.nonconvex`, scores, mini-batches).

The estimator. ``nabla_0 = mean_{B_0} grad f(x_0; z)`` over an initial batch of ``m`` records, then for
``t >= 1`` with a fresh batch ``B_t`` of ``b`` records and a constant step ``eta``

.. math:: \nabla_t = (1 - \eta)\big(\nabla_{t-1} + \mathrm{mean}_{B_t}[\nabla f(x_t; z) - \nabla f(x_{t-1}; z)]\big)
          + \eta\, \mathrm{mean}_{B_t} \nabla f(x_t; z),

with ``x_{t+1} = (1 - eta) x_t + eta v_t`` and ``f(., z)`` ``L0``-Lipschitz, ``L1``-smooth in ``||.||_p``
(gradients in the dual norm ``||.||_q``), ``D`` the ``p``-diameter of the feasible set. Replace-one neighbours.

Lemma. Condition on the released past (it fixes every iterate up to ``x_t``); a changed record moves
``nabla_t`` by ``delta_t``:

* record in ``B_0``: ``||delta_0||_q <= 2 L0/m`` and ``delta_t = (1 - eta)^t delta_0``;
* record in ``B_k``: ``||grad f(x_k; z) - grad f(x_{k-1}; z)||_q <= L1 ||x_k - x_{k-1}||_p <= L1 eta D``, so
  ``||delta_k||_q <= (2/b)((1 - eta) eta L1 D + eta L0)``, decaying by ``(1 - eta)`` afterwards.

Hence the dual-norm sensitivity ``Delta_t = max{2 L0 (1 - eta)^t/m, 2 eta ((1 - eta) L1 D + L0)/b}``
(``Delta_0 = 2 L0/m``). For report-noisy-min over the vertex scores ``<v, nabla_t>`` the argmin is invariant to a
common shift of all scores, so the score sensitivity is ``(1/2) max_{v, w} <v - w, delta_t> <= (D/2)
||delta_t||_q``: ``s_t = max{L0 D (1 - eta)^t/m, eta D ((1 - eta) L1 D + L0)/b}``.
"""

from __future__ import annotations

import numpy as np

from dpsco_lib._validation import check_in_range, check_int, check_positive

__all__ = ["SENSITIVITY_NORMS", "vr_sensitivities"]

SENSITIVITY_NORMS = ("score", "dual")


def vr_sensitivities(
    count: int,
    *,
    init_batch: int,
    batch_size: int = 1,
    step_size: float,
    L0: float,
    L1: float,
    D: float,
    norm: str = "score",
) -> np.ndarray:
    r"""Sensitivities ``s_0, ..., s_{count-1}`` of the variance-reduced estimator (module docstring).

    Parameters
    ----------
    count : int
        Number of steps (entries), ``>= 1``.
    init_batch : int
        ``m``, the size of the initial batch ``B_0``.
    batch_size : int
        ``b``, the size of every update batch (1: single-record updates, Poly-SFW).
    step_size : float
        The constant step ``eta`` in (0, 1].
    L0, L1, D : float
        Lipschitz and smoothness constants (dual norm) and the ``p``-diameter of the feasible set.
    norm : {"score", "dual"}
        ``"score"``: the report-noisy-min score sensitivity ``s_t`` (with the shift factor ``D/2``);
        ``"dual"``: the dual-norm sensitivity ``Delta_t = (2/D) s_t`` of the estimate itself (GG noise).

    Returns
    -------
    ndarray (count,)
        ``w L0/m (1 - eta)^t`` at ``t = 0`` and ``max{w L0 (1 - eta)^t/m, eta w ((1 - eta) L1 D + L0)/b}`` after,
        with ``w = D`` (score) or ``w = 2`` (dual).
    """
    count = check_int(count, "count", lo=1)
    m = check_int(init_batch, "init_batch", lo=1)
    b = check_int(batch_size, "batch_size", lo=1)
    eta = check_in_range(step_size, "step_size", 0.0, 1.0, lo_inclusive=False)
    L0 = check_positive(L0, "L0")
    L1 = check_positive(L1, "L1", allow_zero=True)
    D = check_positive(D, "D")
    if norm not in SENSITIVITY_NORMS:
        raise ValueError(f"norm must be one of {SENSITIVITY_NORMS}, got {norm!r}")
    w = D if norm == "score" else 2.0
    t = np.arange(count, dtype=np.float64)
    first = L0 * w / m * (1.0 - eta) ** t
    s = np.maximum(first, eta * w * ((1.0 - eta) * L1 * D + L0) / b)
    s[0] = first[0]
    return s
