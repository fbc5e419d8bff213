r"""Experiments of notebook 03: the rate of non-private stochastic mirror descent in :math:`\ell_p` (Spec S1).

The worst case over a family of linear losses on the unit :math:`\ell_p` ball, :math:`1 < p \le 2`
(:class:`~dpsco_lib.problems.hard_lp.FingerprintLinearLp` with all its signal on the first coordinate): a record
is :math:`z = s\xi`, :math:`\xi \in \{\pm 1\}^d`, :math:`s = d^{-1/q}` (so :math:`\|z\|_q = 1`), the loss is
:math:`f(x; z) = -\langle x, z\rangle` and :math:`\mathbb E z = \gamma e_1` (the population gradient is
:math:`-\gamma e_1`). Then :math:`F(x) - F^* = \gamma(1 - x_1)` exactly. For a fixed :math:`\gamma` the excess of
any sensible method decays faster than :math:`n^{-1/2}` once :math:`n \gg \gamma^{-2}`; the minimax rate
:math:`n^{-1/2}` is attained at :math:`\gamma \asymp n^{-1/2}` (Le Cam's two-point argument with
:math:`\pm\gamma e_1`, Nemirovski & Yudin 1983). A fixed geometric grid of :math:`\gamma` that brackets
:math:`n^{-1/2}` over the whole range of :math:`n` makes the worst case over the family trace the minimax rate.
The check of notebook 03 takes the members of Le Cam's construction themselves, :math:`\gamma = c/\sqrt n` for a
fixed grid of :math:`c` (:func:`smd_lecam_task`): the instance that is hard at sample size :math:`n`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dpsco_lib._validation import check_in_range, check_int, check_positive
from dpsco_lib.algorithms.smd import run_smd
from dpsco_lib.geometry.norms import dual_exponent
from dpsco_lib.problems.hard_linear import hard_linear
from dpsco_lib.problems.hard_lp import FingerprintLinearLp

__all__ = ["gamma_grid", "linear_member", "max_mean_over_bound", "smd_lecam_task", "smd_linear_task",
           "worst_member_values"]


def linear_member(p: float, d: int, gamma: float) -> FingerprintLinearLp:
    r"""The member :math:`\mathbb E z = \gamma e_1` of the linear family on the unit :math:`\ell_p` ball (module
    docstring); ``gamma`` must lie in :math:`(0, d^{-1/q}]` (all informative records, mean :math:`\gamma/s` on
    the first coordinate, 0 elsewhere)."""
    p = check_in_range(p, "p", 1.0, 2.0, lo_inclusive=False)
    d = check_int(d, "d", lo=2)
    s = d ** (-1.0 / dual_exponent(p))
    gamma = check_in_range(gamma, "gamma", 0.0, s, lo_inclusive=False)
    means = np.zeros(d)
    means[0] = gamma / s
    return FingerprintLinearLp(p, means, 1.0)


def gamma_grid(p: float, d: int, *, n_min: int, n_max: int, size: int = 5) -> list[float]:
    r"""A geometric grid of ``size`` values of :math:`\gamma` from the largest admissible :math:`d^{-1/q}` down to
    :math:`\tfrac14/\sqrt{n_{\max}}`: it brackets the minimax scale :math:`n^{-1/2}` at every ``n`` of the grid
    (if :math:`d^{-1/q} \ge 1/\sqrt{n_{\min}}`) and contains the large signals for which single-pass SMD with the
    worst-case step size pays its full :math:`B/(\eta n)`, the worst case for that method."""
    p = check_in_range(p, "p", 1.0, 2.0, lo_inclusive=False)
    n_min, n_max = check_int(n_min, "n_min", lo=1), check_int(n_max, "n_max", lo=1)
    size = check_int(size, "size", lo=2)
    hi = d ** (-1.0 / dual_exponent(p))
    lo = check_positive(0.25 / math.sqrt(max(n_min, n_max)), "gamma_min")
    return [float(g) for g in np.geomspace(hi, min(lo, hi), size)]


def smd_linear_task(*, rng: np.random.Generator, p: float, d: int, gamma: float, n: int) -> dict[str, Any]:
    r"""Single-pass SMD with its theory step size on ``n`` records of :func:`linear_member`; returns the exact
    excess :math:`\gamma(1 - \bar x_1)`, the theorem's bound :math:`G\sqrt{2B/n}` and the trivial excess
    :math:`\gamma` of the output :math:`x = 0`."""
    pr = linear_member(p, d, gamma)
    res = run_smd(pr, pr.sample(n, rng), rng=rng)
    return {"excess": float(pr.excess_risk(res.x)), "bound": float(res.info["rate_bound"]),
            "trivial": float(pr.trivial_excess())}



def smd_lecam_task(*, rng: np.random.Generator, p: float, d: int, c: float, n: int) -> dict[str, Any]:
    r"""Single-pass SMD at the Le Cam member :math:`\gamma = c/\sqrt n` of sample size ``n``.

    ``1 < p <= 2``: :func:`linear_member` (requires :math:`c \le d^{-1/q}\sqrt n`). ``p = 1``: the planted-vertex
    linear family on the unit :math:`\ell_1` ball (:func:`~dpsco_lib.problems.hard_linear.hard_linear`, records in
    :math:`\{\pm1\}^d`, :math:`\mathbb E z = -\gamma e_1`, excess :math:`\gamma(1 - x_1)`), run with the entropic
    map of the :math:`2d`-vertex lift. Returns the exact excess, the theorem's bound, the trivial excess and
    ``gamma``.
    """
    gamma = float(c) / math.sqrt(check_int(n, "n", lo=1))
    if p == 1.0:
        pr = hard_linear(check_int(d, "d", lo=2), gamma)
        res = run_smd(pr, pr.sample(n, rng), rng=rng)
        return {"excess": float(pr.excess_risk(res.x)), "bound": float(res.info["rate_bound"]), "trivial": gamma,
                "gamma": gamma}
    return smd_linear_task(rng=rng, p=p, d=d, gamma=gamma, n=n) | {"gamma": gamma}


def worst_member_values(records: Sequence[Mapping[str, Any]], *, key: str = "excess",
                        label: str = "gamma") -> tuple[list[float], list[list[float]]]:
    """Per n, the replicate values of ``key`` of the family member whose median is largest there (the worst
    case of :func:`~dpsco_lib.experiments.worst_case_curve`); records without ``label`` form one member."""
    ns = sorted({float(r["n"]) for r in records})
    vals = []
    for n in ns:
        cell = [r for r in records if r["n"] == n]
        members = sorted({r.get(label, 0.0) for r in cell})
        groups = [[float(r[key]) for r in cell if r.get(label, 0.0) == g] for g in members]
        vals.append(max(groups, key=lambda v: float(np.median(v))))
    return ns, vals


def max_mean_over_bound(records: Sequence[Mapping[str, Any]], *, label: str = "gamma") -> float:
    """The largest ratio, over the cells (regime, n, member), of the mean excess to the theorem's bound
    :math:`G\\sqrt{2B/n}` (which bounds the expected excess)."""
    cells: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for r in records:
        cells.setdefault((r["regime"], r["n"], r.get(label, 0.0)), []).append(r)
    return max(float(np.mean([r["excess"] for r in c])) / c[0]["bound"] for c in cells.values())
