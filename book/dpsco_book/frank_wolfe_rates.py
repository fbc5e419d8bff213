r"""Experiments of notebook 05: Poly-SFW (Spec F1), the AFKT21 tree Frank-Wolfe (Spec F2) and noisy SGD (Spec S2)
on the hard linear family (:mod:`dpsco_lib.problems.hard_linear`), checked at meaningful privacy.

What is measured. For ``f(x; z) = <z, x>`` over the unit l1 ball with ``E z = -gamma e_1`` the excess risk is
exact, ``gamma (1 - x_1)``. A theorem's rate is an upper bound over a class, so it is checked on the worst case
over the family: at every ``n`` (or ``d``) the hardness ``gamma`` runs over a grid ``mult x B(n, d)`` (capped
at 1), where ``B`` is the theorem's own bound with constant 1 (:func:`bound_terms`): the grid brackets the
scale at which the algorithm cannot tell the optimal vertex apart, which shrinks with ``n`` as in a minimax
construction. The worst case of the per-instance median (:func:`dpsco_lib.experiments.fit_loglog_slope` with
``worst_over``) is fitted on log-log axes; the predicted exponent is the local slope of the theorem's bound over
the same grid (:func:`bound_exponent`), never a formula of the code's noise.

Bounds with constants (the family has ``L0 = 1``, ``L1 = 0``, ``D = 2``, ``|V| = 2d``; l2 mapping for S2:
``L0_2 = sqrt(d)``, ``D_2 = 2``):

* F1 (BGN21): ``(L1 D^2 + L0 D) ln|V| ln(n/ln|V|) sqrt(ln(1/delta)) / (eps sqrt n)`` (privacy term only);
* F2 (AFKT21, stated for ``L0 D, L1 D^2 <= 1``; units restored with ``L0 D + L1 D^2`` on both terms):
  statistical ``(L0 D + L1 D^2) sqrt(ln|V|/n) ln n``, privacy
  ``(L0 D + L1 D^2) (ln|V| ln^2 n ln(1/delta) / (eps n))^{2/3}``;
* S2 (BFTT19): statistical ``L0_2 D_2 / sqrt n``, privacy ``L0_2 D_2 sqrt(d ln(1/delta)) / (eps n)``.

``delta = n^-1.1`` at every ``n`` (:func:`dpsco_book.privacy_rule.delta_for_n`).

S2 is checked on the lower-bound construction of the l2 setup instead (:func:`fingerprint_sgd_task`):
:class:`~dpsco_lib.problems.hard_lp.FingerprintLinearLp` at ``p = 2``, linear losses ``-<x, z>`` over the unit l2
ball (``L0 = 1``, ``D_2 = 2``), records ``d^{-1/2} xi`` with fingerprinting means, informative with probability
``alpha`` (the hardness parameter, :data:`S2_ALPHAS`). The worst case over ``alpha`` is fitted against ``d`` at fixed
``n`` and against ``n`` at fixed ``d`` (:func:`s2_grid`, :func:`s2_fits`) and checked against the range between the
local slope of the whole bound and that of its privacy term (:func:`bound_exponent_range`, :func:`check_s2`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpsco_book.lp_frank_wolfe_lower_bound import EXCESS_FLOOR, alpha_family
from dpsco_book.privacy_rule import DELTA_POWER, delta_for_n
from dpsco_lib._validation import check_epsilon, check_int, check_positive, check_rng
from dpsco_lib.algorithms.noisy_sgd import run_noisy_sgd
from dpsco_lib.algorithms.poly_sfw import poly_sfw_theory_params, run_poly_sfw
from dpsco_lib.algorithms.vr_frank_wolfe import run_private_vr_frank_wolfe
from dpsco_lib.experiments.claims import BoundClaim, RateClaim, worst_case_cells
from dpsco_lib.privacy.accounting.accountants import DEFAULT_ACCOUNTANT
from dpsco_lib.problems.hard_linear import hard_linear
from dpsco_lib.problems.hard_lp import FingerprintLinearLp, fingerprint_prior
from dpsco_lib.problems.least_squares import hard_least_squares
from dpsco_lib.testing import noise_scaled

__all__ = [
    "ALGORITHMS",
    "F1_CAP",
    "GAMMAS",
    "S2_ALPHAS",
    "claim_records",
    "f1_bound_claim",
    "f1_rate_claim",
    "f2_rate_claim",
    "lattice_grid",
    "lattice_n_needed",
    "log_factor",
    "s2_claims",
    "worst_ratio",
    "bound_exponent",
    "bound_exponent_range",
    "check_s2",
    "fingerprint_sgd_task",
    "poly_sfw_exponent_range",
    "calibration_runs",
    "fit_worst",
    "bound_terms",
    "gamma_for",
    "hard_linear_task",
    "least_squares_task",
    "n_needed",
    "rate_grid",
    "run_algorithm",
    "s2_fits",
    "s2_grid",
    "s2_table",
    "plot_s2",
    "worst_case_values",
]

#: Algorithm key -> (catalogue ID, label).
ALGORITHMS: dict[str, tuple[str, str]] = {
    "poly_sfw": ("F1", "Poly-SFW"),
    "tree_fw": ("F2", "tree Frank-Wolfe (AFKT21)"),
    "noisy_sgd": ("S2", "noisy SGD (BFTT19)"),
}

#: Hardness parameters of the S2 family (:func:`fingerprint_sgd_task`): ``alpha = 2^(-k/2)``, ``k = 0, ..., 8``.
S2_ALPHAS: tuple[float, ...] = tuple(alpha_family(4, per_octave=2))


def _check_alg(alg: str) -> str:
    if alg not in ALGORITHMS:
        raise ValueError(f"alg must be one of {sorted(ALGORITHMS)}, got {alg!r}")
    return alg


def bound_terms(alg: str, n: float, d: int, eps: float, *, L0: float = 1.0, L1: float = 0.0,
                D: float = 2.0, p: float = 1.0, log_scale: float = 1.0) -> tuple[float, float]:
    r"""(statistical, privacy) terms of the theorem's bound, constant 1, at ``delta = n^-1.1`` (module docstring).

    ``log_scale`` is the constant ``c`` inside Poly-SFW's logarithm :math:`\ln(c\,n/\ln|V|)`, which the theorem
    fixes only up to a constant factor (default 1).

    ``L0, L1, D`` are the setup's constants (the hard linear family: 1, 0, 2). For S2 on an l1 problem
    (``p = 1``) the l2 constants are ``L0_2 = sqrt(d) L0`` and ``D_2 = D`` (the l1 ball of radius ``D/2`` has
    Euclidean diameter ``D``); on the Euclidean member (``p = 2``) they are ``L0`` and ``D``.
    """
    _check_alg(alg)
    n = check_positive(n, "n")
    if n < 2:
        raise ValueError(f"n must be >= 2, got {n}")
    d = check_int(d, "d", lo=1)
    eps = check_epsilon(eps)
    log_delta = DELTA_POWER * math.log(n)
    log_v = math.log(2 * d)
    log_scale = check_positive(log_scale, "log_scale")
    if alg == "poly_sfw":
        log_n = math.log(log_scale * n / log_v)
        return 0.0, (L1 * D * D + L0 * D) * log_v * log_n * math.sqrt(log_delta) / (eps * math.sqrt(n))
    if alg == "tree_fw":
        scale = L0 * D + L1 * D * D
        return (scale * math.sqrt(log_v / n) * math.log(n),
                scale * (log_v * math.log(n) ** 2 * log_delta / (eps * n)) ** (2.0 / 3.0))
    l2 = (math.sqrt(d) if p == 1 else 1.0) * L0 * D
    return l2 / math.sqrt(n), l2 * math.sqrt(d * log_delta) / (eps * n)


def bound_exponent(alg: str, xs: Sequence[float], *, vary: str, n: float = 0.0, d: int = 0, eps: float,
                   p: float = 1.0, log_scale: float = 1.0, term: str = "total") -> float:
    """Local exponent of the theorem's bound over a grid: the OLS slope of ``log B`` against ``log x``.

    ``vary`` is ``"n"`` (``xs`` are sample sizes at dimension ``d``) or ``"d"`` (``xs`` are dimensions at ``n``);
    ``log_scale``: see :func:`bound_terms`; ``term``: ``"total"`` (the bound, statistical plus privacy term) or
    ``"privacy"`` (the privacy term alone).
    """
    if vary not in ("n", "d"):
        raise ValueError(f"vary must be 'n' or 'd', got {vary!r}")
    if term not in ("total", "privacy"):
        raise ValueError(f"term must be 'total' or 'privacy', got {term!r}")
    xs = np.asarray(xs, dtype=float)
    if xs.size < 2:
        raise ValueError(f"xs must hold at least two grid points, got {xs.size}")
    pick = sum if term == "total" else (lambda terms: terms[1])
    vals = [pick(bound_terms(alg, x, d, eps, p=p, log_scale=log_scale)) if vary == "n"
            else pick(bound_terms(alg, n, int(x), eps, p=p, log_scale=log_scale)) for x in xs]
    return float(np.polyfit(np.log(xs), np.log(vals), 1)[0])


def bound_exponent_range(alg: str, xs: Sequence[float], *, vary: str, n: float = 0.0, d: int = 0, eps: float,
                         p: float = 1.0) -> tuple[float, float]:
    r"""Predicted range of a worst-case exponent over a grid: from the local slope of the whole bound (constant 1
    on both terms) to that of its privacy term alone, in increasing order.

    The theorem's bound is a sum :math:`A(n, d) + P(n, d)` whose terms carry unknown constants, so over a finite grid
    the local slope of the error lies between the slope of the sum with equal constants and the slope of the
    dominant term. In the privacy-dominated regime (which a notebook shows by measurement) that is the privacy
    term: for S2 (BFTT19) :math:`\sqrt{d\ln(1/\delta)}/(\varepsilon n)`, slope exactly :math:`1/2` in ``d``
    and :math:`-1` plus the slope of :math:`\sqrt{1.1\ln n}` in ``n`` (:math:`\delta = n^{-1.1}`).
    """
    a = bound_exponent(alg, xs, vary=vary, n=n, d=d, eps=eps, p=p)
    b = bound_exponent(alg, xs, vary=vary, n=n, d=d, eps=eps, p=p, term="privacy")
    return min(a, b), max(a, b)


def poly_sfw_exponent_range(ns: Sequence[float], *, d: int, eps: float,
                            log_scales: Sequence[float] = (0.25, 4.0),
                            accountants: Sequence[str] = ("paper", "best")) -> tuple[float, float]:
    r"""Predicted range of Poly-SFW's worst-case exponent in ``n`` over the grid ``ns`` (Spec F1; BGN21).

    The privacy term of the bound is :math:`\ln|V|\,\ln(c\,n/\ln|V|)/(\varepsilon_0 T)` up to the setup's
    constants, with :math:`T` selections of budget :math:`\varepsilon_0` each. Under the paper's rule
    :math:`\varepsilon_0 \propto \varepsilon/\sqrt{T\ln(1/\delta)}` this is the closed form of
    :func:`bound_terms`; a run calibrated by another valid accountant has its own :math:`\varepsilon_0(T, \delta)`
    (the theorem's analysis holds for any :math:`\varepsilon_0` whose composition certifies the target), and the
    theorem fixes the constant :math:`c` inside the logarithm only up to a constant factor. Returns
    ``(-1/2, s)``: from the pure power to the shallowest local slope ``s`` of that term over the grid, over the
    given ``log_scales`` (values of :math:`c`) and ``accountants`` (with :math:`\delta = n^{-1.1}`, the
    family's constants 1, 0, 2 and :math:`|V| = 2d`).
    """
    xs = np.asarray(ns, dtype=float)
    if xs.size < 2 or np.any(xs < 2):
        raise ValueError(f"ns must hold at least two sample sizes >= 2, got {list(ns)}")
    d = check_int(d, "d", lo=1)
    eps = check_epsilon(eps)
    log_v = math.log(2 * d)
    slopes = []
    for acc in accountants:
        prm = [poly_sfw_theory_params(int(n), 2 * d, eps, delta_for_n(int(n)), 1.0, 0.0, 2.0, accountant=acc)
               for n in xs]
        scale = np.array([p.eps0 * p.T for p in prm])
        for c in log_scales:
            c = check_positive(c, "log_scales")
            term = log_v * np.log(c * xs / log_v) / scale
            slopes.append(float(np.polyfit(np.log(xs), np.log(term), 1)[0]))
    return -0.5, max(slopes)


def gamma_for(alg: str, n: int, d: int, eps: float, mult: float, *, p: float = 1.0) -> float:
    """Hardness of the family member whose excess scale (``signal``, the trivial error) is ``mult x B(n, d)`` (the
    theorem's bound), capped at ``gamma = 1``; ``p = 2``: the Euclidean member (``signal = gamma/sqrt 2``)."""
    mult = check_positive(mult, "mult")
    w1 = 1.0 if p == 1 else 1.0 / math.sqrt(2.0)
    return float(min(1.0, mult * sum(bound_terms(alg, n, d, eps, p=p)) / w1))


def rate_grid(alg: str, xs: Sequence[int], *, vary: str, n: int = 0, d: int = 0, eps: float,
              mults: Sequence[float], p: float = 1.0) -> tuple[list[dict[str, Any]], list[int]]:
    """Sweep grid over ``xs`` (sample sizes or dimensions) x the family members ``mults``, without the grid
    values at which the largest member is capped (``gamma = 1``: the worst case there may be saturated).

    Returns ``(grid, dropped)``: the task parameters of :func:`hard_linear_task` and the dropped values of ``xs``.
    """
    if vary not in ("n", "d"):
        raise ValueError(f"vary must be 'n' or 'd', got {vary!r}")
    grid, dropped = [], []
    for x in xs:
        nn, dd = (int(x), d) if vary == "n" else (n, int(x))
        if gamma_for(alg, nn, dd, eps, max(mults), p=p) >= 1.0:
            dropped.append(int(x))
            continue
        grid += [{"alg": alg, "n": nn, "d": dd, "eps": eps, "mult": float(m), "p": p} for m in mults]
    return grid, dropped


def run_algorithm(alg: str, problem: Any, data: Any, *, eps: float, delta: float, rng: np.random.Generator,
                  accountant: str = DEFAULT_ACCOUNTANT.name, step_constant: float | str = 1.0) -> Any:
    """Run one of :data:`ALGORITHMS` with its theory parameters (noisy SGD: its exact ``"gdp"`` calibration is
    the tightest one for Gaussian events, so ``"best"`` is passed as ``"gdp"``).

    ``step_constant`` is Poly-SFW's ``c`` in ``eta = c ln(n/ln|V|)/T``: 1 (here the default) is the theorem's step
    as stated, the algorithm whose rate the checks test; ``"auto"`` is the library's default (the constant that
    minimizes the bound model at the run's budget)."""
    _check_alg(alg)
    if alg == "poly_sfw":
        return run_poly_sfw(problem, data, epsilon=eps, delta=delta, rng=rng, accountant=accountant,
                            step_constant=step_constant)
    if alg == "tree_fw":
        return run_private_vr_frank_wolfe(problem, data, epsilon=eps, delta=delta, rng=rng, accountant=accountant)
    return run_noisy_sgd(problem, data, epsilon=eps, delta=delta, rng=rng, accountant=accountant)


def hard_linear_task(*, rng: np.random.Generator, alg: str, n: int, d: int, eps: float, mult: float = 0.0,
                     gamma: float = 0.0, p: float = 1.0, step_constant: float | str = 1.0) -> dict[str, Any]:
    """One run on the hard linear family: the member ``gamma`` (or ``mult x B(n, d)`` when ``gamma`` is 0);
    ``p = 2``: its Euclidean member (noisy SGD only). Poly-SFW runs the theorem's step (``step_constant = 1``)
    unless told otherwise (:func:`run_algorithm`).

    Returns the exact excess, the trivial error, their ratio, ``gamma`` (when given by ``mult``), ``capped``
    (the member asked for had ``gamma > 1``), ``delta = n^-1.1`` and the certified epsilon. The tree variant also
    returns ``excess_nonprivate``: the same run with its Laplace noise scaled by ``1e-9`` (the statistical error,
    measured). Noisy SGD also returns its steps, batch size and ``excess_nonprivate``: single-pass non-private SGD
    on the same records (``T = n/8`` steps of batch 8, step size ``D_2/sqrt T``; the statistical error, measured).
    """
    if p == 2 and alg != "noisy_sgd":
        raise ValueError(f"p = 2 (the Euclidean member) is for alg='noisy_sgd' only, got alg={alg!r}")
    g = float(gamma) if gamma > 0 else gamma_for(alg, n, d, eps, mult, p=p)
    capped = gamma <= 0 and g >= 1.0
    prob = hard_linear(d, g, p=p)
    delta = delta_for_n(n)
    data = prob.stream(n, rng, block_size=1 << 16) if alg == "poly_sfw" else prob.sample(n, rng)
    res = run_algorithm(alg, prob, data, eps=eps, delta=delta, rng=rng, step_constant=step_constant)
    excess = max(prob.excess_risk(res.x), 1e-12)  # exact 0 (every selection right) kept positive for log axes
    out = {"excess": excess, "trivial": prob.trivial_error, "ratio": excess / prob.trivial_error,
           "capped": capped, "delta": delta, "eps_certified": res.certified_epsilon(delta)}
    if gamma <= 0:  # the member was given by ``mult``: report its gamma (given ``gamma``, it is a parameter)
        out["gamma"] = prob.gamma
    if alg == "tree_fw":
        with noise_scaled(1e-9):  # the same tree on the same records without noise (the scale must be positive)
            ref = run_algorithm(alg, prob, data, eps=eps, delta=delta, rng=rng)
        out["excess_nonprivate"] = max(prob.excess_risk(ref.x), 1e-12)
    if alg == "noisy_sgd":
        out.update(steps=res.params["T"], batch_size=res.params["batch_size"],
                   excess_nonprivate=max(_nonprivate_sgd_excess(prob, data, eps, delta, rng), 1e-12))
    return out


def _nonprivate_sgd_excess(prob: Any, data: Any, eps: float, delta: float, rng: np.random.Generator) -> float:
    """Exact excess of single-pass non-private SGD on ``data`` (``T = n/8`` steps of batch 8, step ``D_2/sqrt T``):
    the statistical error, measured (``eps, delta`` only fill the unused calibration)."""
    n = data.n
    T0 = max(1, n // 8)
    with noise_scaled(0.0):  # the same iterations without noise: the non-private reference
        ref = run_noisy_sgd(prob, data, epsilon=eps, delta=delta, rng=rng, steps=T0, batch_size=min(8, n),
                            step_size=prob.feasible_set.diameter(2.0) / math.sqrt(T0))
    return float(prob.excess_risk(ref.x))


def least_squares_task(*, rng: np.random.Generator, n: int, d: int, eps: float) -> dict[str, Any]:
    """Poly-SFW with the library's defaults (step constant ``"auto"``) on the planted-vertex least squares of
    notebook 05 (``hard_least_squares(1, d, "l1ball")``), streamed in blocks (bounded memory); exact excess, trivial
    error 3/2, the bound with constant 1 and the step constant used."""
    prob = hard_least_squares(1.0, d, set_kind="l1ball")
    delta = delta_for_n(n)
    res = run_poly_sfw(prob, prob.stream(n, rng, block_size=1 << 16), epsilon=eps, delta=delta, rng=rng)
    trivial = prob.excess_risk(prob.feasible_set.center())
    excess = prob.excess_risk(res.x)
    return {"excess": excess, "trivial": trivial, "ratio": excess / trivial, "bound": res.params["rate_bound"],
            "step_constant": res.params["step_constant"], "eps_certified": res.certified_epsilon(delta)}


def n_needed(target: float, d: int, eps: float, *, L0: float, L1: float, D: float, n_max: float = 1e12) -> float:
    """Smallest ``n`` at which the F1 bound (constant 1, ``delta = n^-1.1``) is at most ``target`` (bisection in
    ``log n``; the bound decreases in ``n`` on ``[e ln|V|, n_max]``); ``inf`` if it is not reached by ``n_max``."""
    target = check_positive(target, "target")

    def bound(n: float) -> float:
        return bound_terms("poly_sfw", n, d, eps, L0=L0, L1=L1, D=D)[1]

    lo, hi = max(3.0, math.e * math.log(2 * d) * 3), float(n_max)
    if bound(hi) > target:
        return math.inf
    if bound(lo) <= target:
        return lo
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if bound(mid) > target else (lo, mid)
        if hi / lo < 1 + 1e-9:
            break
    return hi


#: The fixed hardness lattice of the hard linear family (F1, F2): ``gamma = 0.01 x 2^(k/2)``, ``k = 0, ..., 13``,
#: and ``gamma = 1``: two decades in steps of ``sqrt 2`` (a coarser lattice misses the peak of the excess in
#: ``gamma`` by up to 10%, which moves a fitted slope by several hundredths), the same at every ``n`` and ``d``
#: and independent of every bound under test.
GAMMAS: tuple[float, ...] = (*(round(0.01 * 2 ** (k / 2), 6) for k in range(14)), 1.0)

#: Stated cap on the constant of F1's bound (BGN21's proof gives no explicit constant): the worst-case excess over
#: :data:`GAMMAS` is claimed at most ``F1_CAP`` times the bound with constant 1 at every grid point.
F1_CAP = 3.0

_CITES = {"poly_sfw": "BGN21 (Poly-SFW rate)", "tree_fw": "AFKT21 (tree Frank-Wolfe rate)",
          "noisy_sgd": "BFTT19 (noisy SGD rate)"}


def lattice_grid(alg: str, xs: Sequence[int], *, vary: str, n: int = 0, d: int = 0, eps: float,
                 gammas: Sequence[float] = GAMMAS) -> list[dict[str, Any]]:
    """Sweep grid over ``xs`` (sample sizes at ``d``, or dimensions at ``n``) times the fixed lattice ``gammas``:
    the task parameters of :func:`hard_linear_task`. The lattice must span at least two decades in ``(0, 1]``."""
    _check_alg(alg)
    if vary not in ("n", "d"):
        raise ValueError(f"vary must be 'n' or 'd', got {vary!r}")
    eps = check_epsilon(eps)
    gs = sorted({float(g) for g in gammas})
    if not gs or gs[0] <= 0 or gs[-1] > 1 or gs[-1] / gs[0] < 100 - 1e-9:
        raise ValueError(f"gammas must lie in (0, 1] and span at least two decades, got {list(gammas)}")
    xs = sorted({int(x) for x in xs})
    if len(xs) < 2:
        raise ValueError(f"xs must hold at least two distinct values, got {xs}")
    points = [(x, d) if vary == "n" else (n, x) for x in xs]
    return [{"alg": alg, "n": check_int(nn, "n", lo=16), "d": check_int(dd, "d", lo=1), "eps": eps, "gamma": g}
            for nn, dd in points for g in gs]


def log_factor(alg: str, n: float, d: int) -> float:
    r"""The logarithms of the theorem's bound at ``(n, d)``, ``delta = n^-1.1``, which a rate claim divides out.

    F1 (BGN21): :math:`\ln|V|\,\ln(n/\ln|V|)\sqrt{\ln(1/\delta)}`, so that the bound is :math:`L_0 D` times it over
    :math:`\varepsilon\sqrt n`; F2 (AFKT21, privacy term): :math:`(\ln|V|\ln^2 n\ln(1/\delta))^{2/3}`, so that the
    term is :math:`(L_0 D + L_1 D^2)` times it times :math:`(\varepsilon n)^{-2/3}`. ``|V| = 2d``.
    """
    if alg not in ("poly_sfw", "tree_fw"):
        raise ValueError(f"alg must be 'poly_sfw' or 'tree_fw', got {alg!r}")
    n = check_positive(n, "n")
    d = check_int(d, "d", lo=1)
    log_v, log_delta = math.log(2 * d), DELTA_POWER * math.log(n)
    if n <= max(math.e * log_v, 2.0):
        raise ValueError(f"n must exceed e ln|V| = {math.e * log_v:.3g}, got {n}")
    if alg == "poly_sfw":
        return log_v * math.log(n / log_v) * math.sqrt(log_delta)
    return (log_v * math.log(n) ** 2 * log_delta) ** (2.0 / 3.0)


def claim_records(records: Sequence[dict[str, Any]], x: str, *, value: str = "excess", family: str = "gamma",
                  divide_logs: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The arrays a claim reads, one entry per record: ``(x, y, family, trivial)`` with ``y = record[value]`` and
    ``trivial = record["trivial"]`` (the exact excess of the output ``x = 0`` on the same instance), both divided by
    :func:`log_factor` of ``divide_logs`` (an algorithm key) when given."""
    if not records:
        raise ValueError("records must not be empty")
    scale = np.array([1.0 if divide_logs is None else log_factor(divide_logs, r["n"], r["d"]) for r in records])
    xs = np.array([float(r[x]) for r in records])
    ys = np.array([float(r[value]) for r in records]) / scale
    triv = np.array([float(r["trivial"]) for r in records]) / scale
    return xs, ys, np.array([r[family] for r in records]), triv


def _log_slope(alg: str, ns: Sequence[float], d: int) -> float:
    """Local slope of :func:`log_factor` over the sample sizes ``ns`` (OLS of the logs)."""
    xs = np.asarray(sorted({float(n) for n in ns}))
    if xs.size < 2:
        raise ValueError(f"ns must hold at least two distinct sample sizes, got {list(ns)}")
    return float(np.polyfit(np.log(xs), np.log([log_factor(alg, x, d) for x in xs]), 1)[0])


def f1_rate_claim(ns: Sequence[float], *, d: int, eps: float, tol: float = 0.08) -> RateClaim:
    r"""F1's exponent in ``n``: the worst case over :data:`GAMMAS` of the mean excess, divided by the bound's
    logarithms :math:`\ell(n)` (:func:`log_factor`), decays at an exponent in :math:`[-1/2 - s, -1/2]`, ``s`` the
    local slope of :math:`\ell` over the grid ``ns`` (the theorem bounds the logarithms from above: an error with
    all of them gives :math:`-1/2`, one with none :math:`-1/2 - s`); neighbour :math:`n^{-1/3}`, tolerance ``tol``
    (at most half the gap, 1/12)."""
    d = check_int(d, "d", lo=1)
    s = _log_slope("poly_sfw", ns, d)
    return RateClaim("F1 exponent in n", f"Poly-SFW (theorem's step), d = {d}, eps = {check_epsilon(eps):g}: "
                     "worst-case excess / logs of the bound ~ n^beta, beta in [-1/2 - s, -1/2]",
                     (-0.5 - s, -0.5), -1.0 / 3.0, tol, _CITES["poly_sfw"])


def f1_bound_claim(*, d: int, eps: float, constant: float = F1_CAP) -> BoundClaim:
    """F1's bound with a stated constant: the worst-case mean excess over :data:`GAMMAS` is at most ``constant``
    times the bound of :func:`bound_terms` (constant 1) at every sample size of the grid."""
    d, eps = check_int(d, "d", lo=1), check_epsilon(eps)
    return BoundClaim("F1 excess <= C x bound", f"Poly-SFW, d = {d}, eps = {eps:g}: worst-case excess at most "
                      f"{constant:g} x the bound (stated cap; the proof gives no constant)",
                      lambda n: bound_terms("poly_sfw", n, d, eps)[1],
                      "2 ln|V| ln(n/ln|V|) sqrt(1.1 ln n)/(eps sqrt n)", constant, _CITES["poly_sfw"])


def f2_rate_claim(ns: Sequence[float], *, d: int, eps: float, tol: float = 0.08) -> RateClaim:
    r"""F2's exponent in ``n`` where the privacy term dominates: the worst case over :data:`GAMMAS` of the mean
    excess, divided by the privacy term's logarithms :math:`\ell(n)` (:func:`log_factor`), decays at an exponent in
    :math:`[-2/3 - s, -2/3]`, ``s`` the local slope of :math:`\ell` over the grid ``ns`` (the theorem bounds the
    logarithms from above: an error that carries all of them gives :math:`-2/3`, one that carries none
    :math:`-2/3 - s`); neighbour the statistical :math:`n^{-1/2}`, tolerance ``tol`` (at most 1/12)."""
    d = check_int(d, "d", lo=1)
    slope = _log_slope("tree_fw", ns, d)
    return RateClaim("F2 exponent in n", f"tree Frank-Wolfe, d = {d}, eps = {check_epsilon(eps):g}: worst-case "
                     "excess / logs of the privacy term ~ n^beta, beta in [-2/3 - s, -2/3]",
                     (-2.0 / 3.0 - slope, -2.0 / 3.0), -0.5, tol, _CITES["tree_fw"])


def s2_claims(*, n: int, d: int, ds: Sequence[int], ns: Sequence[int], eps: float, neighbour_d: float,
              tol: float = 0.08) -> dict[str, RateClaim]:
    r"""S2's two exponents on the fingerprinting family (worst case over :data:`S2_ALPHAS`), predicted before the
    run by :func:`bound_exponent_range`: in ``d`` at ``n`` (neighbour ``neighbour_d``, the local slope in ``d`` of
    the ``ln|V|`` growth F1 pays over the same grid) and in ``n`` at ``d`` (neighbour the statistical
    :math:`n^{-1/2}`). Each tolerance is ``tol`` or half the gap to the neighbour, whichever is smaller."""
    out = {}
    for key, xs, kw, nb in (("d", ds, {"n": n}, neighbour_d), ("n", ns, {"d": d}, -0.5)):
        pred = bound_exponent_range("noisy_sgd", sorted(xs), vary=key, eps=eps, p=2, **kw)
        gap = pred[0] - nb if nb < pred[0] else nb - pred[1]
        fixed = f"n = {n}" if key == "d" else f"d = {d}"
        out[key] = RateClaim(f"S2 exponent in {key}", f"noisy SGD (b = n), {fixed}, eps = {eps:g}: worst-case "
                             f"excess ~ {key}^beta, beta from the bound", pred, nb, min(tol, gap / 2),
                             _CITES["noisy_sgd"])
    return out


def worst_ratio(records: Sequence[dict[str, Any]], x: str, *, num: str, den: str = "excess",
                family: str = "gamma") -> float:
    """Largest over the grid values ``x`` of (worst case over ``family`` of the mean ``num``) / (worst case of the
    mean ``den``): e.g. the non-private over the private error, a measured regime check."""
    out = 0.0
    for xv in sorted({r[x] for r in records}):
        recs = [r for r in records if r[x] == xv]
        members = sorted({r[family] for r in recs})
        worst = [max(float(np.mean([r[k] for r in recs if r[family] == m])) for m in members) for k in (num, den)]
        out = max(out, worst[0] / worst[1])
    return out


def lattice_n_needed(d: int, eps: float, *, like: tuple[int, int, float]) -> float:
    """Sample size at which F1's bound (constant 1, ``delta = n^-1.1``) at ``(d, eps)`` falls to its value at
    ``like = (n0, d0, eps0)``: where the worst case over :data:`GAMMAS` sits where it sits at ``(n0, d0, eps0)``
    (the hard linear family's excess at ``gamma`` depends on the run through the noise scale the bound tracks).
    :func:`n_needed` with the family's constants (1, 0, 2)."""
    n0, d0, eps0 = like
    target = bound_terms("poly_sfw", n0, d0, eps0)[1]
    return n_needed(target, d, eps, L0=1.0, L1=0.0, D=2.0)

def worst_case_values(records: Sequence[dict[str, Any]], x: str, *, value: str = "excess",
                      family: str = "mult") -> tuple[np.ndarray, list[np.ndarray], list[Any]]:
    """Per distinct ``x``: the replicate values of the family member whose median is largest (the worst case),
    for the rate figure; returns ``(xs, replicate arrays, worst member labels)``."""
    xs = sorted({r[x] for r in records})
    vals, worst = [], []
    for xv in xs:
        members = sorted({r[family] for r in records if r[x] == xv})
        cells = [np.array([r[value] for r in records if r[x] == xv and r[family] == m]) for m in members]
        k = int(np.argmax([np.median(c) for c in cells]))
        vals.append(cells[k])
        worst.append(members[k])
    return np.asarray(xs, dtype=float), vals, worst


def fit_worst(records: Sequence[dict[str, Any]], x: str, *, rng: np.random.Generator, n_boot: int,
              value: str = "excess", family: str = "mult") -> Any:
    """Log-log fit of the worst case over the family members (column ``family``: ``mult`` for the hard linear
    family, ``alpha`` for the fingerprinting family) of the per-member median of ``value`` against ``x``
    (:func:`dpsco_lib.experiments.fit_loglog_slope` with ``worst_over``), 95% bootstrap interval."""
    from dpsco_lib.experiments.analysis import fit_loglog_slope

    return fit_loglog_slope([r[x] for r in records], [r[value] for r in records], rng=rng, statistic="median",
                            n_boot=n_boot, worst_over=[r[family] for r in records])


def calibration_runs(alg: str, n: int, d: int, eps: float, rng: np.random.Generator) -> tuple[dict[str, Any], float]:
    """The same run (``hard_linear(d, 0.5)``, ``delta = n^-1.1``) calibrated by the papers' rule and by the tightest
    accountant (``"best"``): Poly-SFW's rule is ``eps0 = eps/(2 sqrt(2 K ln(1/delta)))`` (``"paper"``), the tree's is
    advanced composition per depth (``"advanced"``); Poly-SFW runs the theorem's step (``c = 1``) under both, so only
    the accountant differs. Returns ``({label: Result}, noise gain)``, the gain being the
    ratio of the per-selection budgets (root budget for the tree): the factor by which the tightest accountant
    shrinks the Laplace scale."""
    if alg not in ("poly_sfw", "tree_fw"):
        raise ValueError(f"alg must be 'poly_sfw' or 'tree_fw', got {alg!r}")
    prob = hard_linear(d, 0.5)
    data = prob.sample(n, rng)
    rule = "paper" if alg == "poly_sfw" else "advanced"
    runs = {f"paper rule ({rule})": run_algorithm(alg, prob, data, eps=eps, delta=delta_for_n(n), rng=rng,
                                                  accountant=rule),
            "tightest (best)": run_algorithm(alg, prob, data, eps=eps, delta=delta_for_n(n), rng=rng)}
    a, b = runs.values()

    def budget(res: Any) -> float:
        return float(res.params["eps0"]) if alg == "poly_sfw" else float(res.params["depth_epsilons"][0])

    return runs, budget(b) / budget(a)


def fingerprint_sgd_task(*, rng: np.random.Generator, n: int, d: int, alpha: float,
                         eps: float = 1.0) -> dict[str, Any]:
    r"""One S2 run (BFTT19) on the lower-bound construction of the l2 setup, with its measured references.

    Draws the means ``m ~ U[-1, 1]^d`` (:func:`~dpsco_lib.problems.hard_lp.fingerprint_prior`) and ``n`` records of
    :class:`~dpsco_lib.problems.hard_lp.FingerprintLinearLp` ``(p = 2, m, alpha)``: ``z = d^{-1/2} xi`` with
    probability ``alpha`` (``xi_j = +-1`` with mean ``m_j``), ``z = 0`` otherwise; loss ``-<x, z>`` over the unit l2
    ball (``L0 = 1``, ``D_2 = 2``), exact excess ``d^{-1/2} alpha (||m||_2 - <m, x>)``. With ``delta = n^-1.1`` it
    runs on the same records:

    * noisy SGD (:func:`~dpsco_lib.algorithms.noisy_sgd.run_noisy_sgd`) with BFTT19's steps
      ``T = min(n/8, n^2 eps^2/(32 d ln(1/delta)))`` and step size, and full batches ``b = n`` (the run checked):
      each step is one Gaussian mechanism of l2 sensitivity ``2/n``, composed exactly over the ``T`` steps, so the
      noise on the averaged gradient is of the order of the bound's privacy term ``sqrt(d ln(1/delta))/(eps n)``;
    * noisy SGD with BFTT19's batch size ``b = n sqrt(eps/(4T)) < n`` (the library's default): its shuffled disjoint
      batches are accounted without amplification by subsampling (replace-one neighbours), so the noise on the
      batch mean is about ``sqrt(n/b)`` times BFTT19's (an illustration, not checked);
    * single-pass non-private SGD (``T = n/8`` steps of batch 8): the statistical error, measured.

    Returns
    -------
    dict
        ``excess`` (``b = n``, exact, floored at :data:`~dpsco_book.lp_frank_wolfe_lower_bound.EXCESS_FLOOR`),
        ``trivial`` (excess of ``x = 0``), ``ratio``, ``excess_bftt19_batch``, ``excess_nonprivate``, ``steps``
        (``T``), ``batch_bftt19``, ``delta`` and ``eps_certified`` (the larger certificate of the two private runs).
    """
    rng = check_rng(rng)
    n = check_int(n, "n", lo=16)
    d = check_int(d, "d", lo=1)
    eps = check_epsilon(eps, "eps")
    delta = delta_for_n(n)
    prob = FingerprintLinearLp(2.0, fingerprint_prior(d, rng), alpha)
    data = prob.sample(n, rng)
    full = run_noisy_sgd(prob, data, epsilon=eps, delta=delta, rng=rng, batch_size=n)
    mini = run_noisy_sgd(prob, data, epsilon=eps, delta=delta, rng=rng)
    nonprivate = _nonprivate_sgd_excess(prob, data, eps, delta, rng)
    excess = max(prob.excess_risk(full.x), EXCESS_FLOOR)
    trivial = prob.trivial_excess()
    return {"excess": excess, "trivial": trivial, "ratio": excess / trivial,
            "excess_bftt19_batch": max(prob.excess_risk(mini.x), EXCESS_FLOOR),
            "excess_nonprivate": max(nonprivate, EXCESS_FLOOR), "steps": int(full.params["T"]),
            "batch_bftt19": int(mini.params["batch_size"]), "delta": delta,
            "eps_certified": max(full.certified_epsilon(delta), mini.certified_epsilon(delta))}


def s2_grid(*, n: int, ds: Sequence[int], d: int, ns: Sequence[int], eps: float = 1.0,
            alphas: Sequence[float] = S2_ALPHAS) -> list[dict[str, Any]]:
    """The S2 sweep: the dimensions ``ds`` at ``n`` and the sample sizes ``ns`` at ``d`` (a cross through the
    point ``(n, d)``, which lies on both arms and is run once), times the members ``alphas``; the task parameters of
    :func:`fingerprint_sgd_task`."""
    n = check_int(n, "n", lo=16)
    d = check_int(d, "d", lo=1)
    eps = check_epsilon(eps, "eps")
    ds = sorted({check_int(int(x), "ds", lo=1) for x in ds})
    ns = sorted({check_int(int(x), "ns", lo=16) for x in ns})
    if len(ds) < 2 or len(ns) < 2:
        raise ValueError(f"ds and ns must each hold at least two distinct values, got ds={ds}, ns={ns}")
    if d not in ds or n not in ns:
        raise ValueError(f"the cross point (n, d) = ({n}, {d}) must lie on both arms: d in ds={ds}, n in ns={ns}")
    members = sorted({float(a) for a in alphas}, reverse=True)
    if len(members) < 3 or not all(0.0 < a <= 1.0 for a in members):
        raise ValueError(f"alphas must hold at least three values in (0, 1], got {list(alphas)}")
    points = sorted({(n, x) for x in ds} | {(x, d) for x in ns})
    return [{"n": nn, "d": dd, "alpha": a, "eps": eps} for nn, dd in points for a in members]


def _arms(records: Sequence[dict[str, Any]], n: int, d: int) -> dict[str, list[dict[str, Any]]]:
    arms = {"d": [r for r in records if r["n"] == n], "n": [r for r in records if r["d"] == d]}
    for key, recs in arms.items():
        if len({r[key] for r in recs}) < 2:
            raise ValueError(f"records must hold at least two values of {key} on the arm through (n, d) = ({n}, {d})")
    return arms


def s2_fits(records: Sequence[dict[str, Any]], *, n: int, d: int, eps: float, rng: np.random.Generator,
            n_boot: int) -> dict[str, tuple[Any, tuple[float, float]]]:
    """The two S2 fits of the worst case over ``alpha`` (median excess of the ``b = n`` run) and their predicted
    ranges (:func:`bound_exponent_range`): ``{"d": (fit against d at n, range), "n": (fit against n at d, range)}``."""
    out = {}
    for key, recs in _arms(records, n, d).items():
        xs = sorted({r[key] for r in recs})
        fit = fit_worst(recs, key, rng=rng, n_boot=n_boot, family="alpha")
        kw = {"n": n} if key == "d" else {"d": d}
        out[key] = (fit, bound_exponent_range("noisy_sgd", xs, vary=key, eps=eps, p=2, **kw))
    return out


def _worst_cell(recs: Sequence[dict[str, Any]], value: str) -> tuple[float, float]:
    """(worst median of ``value`` over the members ``alpha``, the member attaining it)."""
    members = sorted({r["alpha"] for r in recs})
    meds = [float(np.median([r[value] for r in recs if r["alpha"] == a])) for a in members]
    k = int(np.argmax(meds))
    return meds[k], members[k]


def s2_table(records: Sequence[dict[str, Any]], *, eps: float = 1.0) -> list[dict[str, Any]]:
    """Per grid point ``(n, d)``: BFTT19's ``T`` and batch size, the worst member and the worst-case median excess
    of the checked run (``b = n``), the worst-case non-private error and its ratio to the private one, the worst
    case with BFTT19's batch, and the bound with constant 1 (``L0 D_2 = 2``) with the measured / bound ratio."""
    rows = []
    for nn, dd in sorted({(r["n"], r["d"]) for r in records}):
        recs = [r for r in records if r["n"] == nn and r["d"] == dd]
        worst, a = _worst_cell(recs, "excess")
        nonpriv = _worst_cell(recs, "excess_nonprivate")[0]
        bound = sum(bound_terms("noisy_sgd", nn, dd, eps, p=2))
        rows.append({"n": nn, "d": dd, "T": recs[0]["steps"], "b (BFTT19)": recs[0]["batch_bftt19"],
                     "worst alpha": a, "worst excess (b = n)": worst, "non-private": nonpriv,
                     "non-private / private": nonpriv / worst,
                     "worst excess (BFTT19 b)": _worst_cell(recs, "excess_bftt19_batch")[0],
                     "bound (constant 1)": bound, "measured / bound": worst / bound})
    return rows


def check_s2(verdict: Any, records: Sequence[dict[str, Any]], claims: dict[str, Any], *, n: int, d: int,
             f1_slope: float, rng: np.random.Generator, required: float, n_boot: int, n_resamples: int = 200,
             regime_limit: float = 0.5) -> None:
    r"""The verdict rows of S2 on the fingerprinting family (:func:`fingerprint_sgd_task`, :func:`s2_claims`).

    Claims: the exponents in ``d`` (at ``n``) and in ``n`` (at ``d``) of the worst case over ``alpha`` of the mean
    excess (:meth:`~dpsco_lib.experiments.RateClaim.evaluate`, with the output ``x = 0`` on the same records as the
    learns-nothing control). Checks: the exponent in ``d`` above ``f1_slope`` (the ``ln|V|`` slope of F1's bound
    over the same grid); the regime: the worst-case non-private error at most ``regime_limit`` times the private
    one at every grid point; the worst member strictly inside the family at every grid point (else the curve is
    capped by the family, not governed by the rate); learning: median excess at most half the trivial error at the
    largest ``d`` of the ``d`` arm, on the member with the largest signal (``alpha = 1``).
    """
    slope_d = math.nan
    for key, recs in _arms(records, n, d).items():
        x, y, fam, triv = claim_records(recs, key, family="alpha")
        out = claims[key].evaluate(x, y, family=fam, trivial=triv, rng=rng, required=required, n_boot=n_boot,
                                   n_resamples=n_resamples)
        verdict.claim(out)
        if key == "d":
            ux, cells = worst_case_cells(x, y, fam)
            worst = np.log([max(float(np.mean(c)) for c in cell) for cell in cells])
            slope_d = float(np.polyfit(np.log(ux), worst, 1)[0])
    eps = max(float(r["eps"]) for r in records)
    verdict.check_at_least("S2 exponent in d above the ln|V| slope of F1's bound (same grid)", slope_d, f1_slope)
    table = s2_table(records, eps=eps)
    verdict.check_at_most("S2 regime: worst-case non-private / private error (max over the grid)",
                          max(r["non-private / private"] for r in table), regime_limit)
    alphas = sorted({r["alpha"] for r in records})
    interior = all(alphas[0] < r["worst alpha"] < alphas[-1] for r in table)
    verdict.check("S2: worst instance inside the family (every grid point)", interior,
                  "worst alpha: " + ", ".join(f"{r['worst alpha']:.3g}" for r in table),
                  predicted=f"strictly inside [{alphas[0]:.3g}, {alphas[-1]:.3g}]")
    d_max = max(r["d"] for r in records if r["n"] == n)
    top = [r for r in records if r["n"] == n and r["d"] == d_max and r["alpha"] == alphas[-1]]
    verdict.check_at_most(f"S2 learns: median excess / trivial, n = {n}, d = {d_max}, alpha = {alphas[-1]:g}",
                          float(np.median([r["ratio"] for r in top])), 0.5)


def plot_s2(axes: Sequence[Any], records: Sequence[dict[str, Any]],
            fits: dict[str, tuple[Any, tuple[float, float]]], *, n: int, d: int) -> None:
    """The S2 figure: worst case over ``alpha`` against ``d`` at ``n`` (left) and against ``n`` at ``d`` (right) of
    the checked run (``b = n``, with its fit and the privacy term's slope), the run with BFTT19's batch and
    non-private SGD; on the left, the ``ln|V|`` growth Poly-SFW pays (dotted)."""
    from matplotlib.ticker import NullFormatter

    from dpsco_lib.plotting import plot_rate

    arms = _arms(records, n, d)
    for ax, key in zip(axes, ("d", "n"), strict=True):
        recs = arms[key]
        guide = (0.5, r"$\sqrt{d}$") if key == "d" else (-1.0, "$1/n$")
        xs, vals, _ = worst_case_values(recs, key, family="alpha")
        plot_rate(ax, xs, vals, label="noisy SGD, $b = n$ (checked)", fit=fits[key][0], guide=guide)
        for value, label, marker in (("excess_bftt19_batch", "noisy SGD, BFTT19 batch", "^"),
                                     ("excess_nonprivate", "non-private SGD", "s")):
            xv, vv, _ = worst_case_values(recs, key, value=value, family="alpha")
            plot_rate(ax, xv, vv, label=label, marker=marker)
        if key == "d":
            scale = np.median(vals[0]) / np.log(2 * xs[0])
            ax.plot(xs, scale * np.log(2 * xs), "k:", label=r"$\propto \ln|V|$ (Poly-SFW's price)")
        ax.set_xticks(xs, [f"{x:g}" for x in xs])  # a narrow log range: label the grid, not the minor ticks
        ax.xaxis.set_minor_formatter(NullFormatter())
        fixed = f"$n = {n}$" if key == "d" else f"$d = {d}$"
        ax.set(xlabel=f"${key}$", ylabel="worst-case excess risk (exact)",
               title=rf"fingerprinting family, {fixed}, $\varepsilon = 1$, $\delta = n^{{-1.1}}$")
        ax.legend(fontsize=7)
