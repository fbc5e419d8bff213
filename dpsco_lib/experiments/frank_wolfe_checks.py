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

``delta = n^-1.1`` at every ``n`` (:func:`dpsco_lib.experiments.delta_for_n`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpsco_lib._validation import check_epsilon, check_int, check_positive
from dpsco_lib.algorithms.noisy_sgd import run_noisy_sgd
from dpsco_lib.algorithms.poly_sfw import poly_sfw_theory_params, run_poly_sfw
from dpsco_lib.algorithms.vr_frank_wolfe import run_private_vr_frank_wolfe
from dpsco_lib.experiments.tables import delta_for_n
from dpsco_lib.problems.hard_linear import hard_linear
from dpsco_lib.problems.least_squares import hard_least_squares

__all__ = [
    "ALGORITHMS",
    "bound_exponent",
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
    "worst_case_values",
]

#: Algorithm key -> (catalogue ID, label).
ALGORITHMS: dict[str, tuple[str, str]] = {
    "poly_sfw": ("F1", "Poly-SFW"),
    "tree_fw": ("F2", "tree Frank-Wolfe (AFKT21)"),
    "noisy_sgd": ("S2", "noisy SGD (BFTT19)"),
}


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
    log_delta = 1.1 * math.log(n)
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
                   p: float = 1.0, log_scale: float = 1.0) -> float:
    """Local exponent of the theorem's bound over a grid: the OLS slope of ``log B`` against ``log x``.

    ``vary`` is ``"n"`` (``xs`` are sample sizes at dimension ``d``) or ``"d"`` (``xs`` are dimensions at ``n``);
    ``log_scale``: see :func:`bound_terms`.
    """
    if vary not in ("n", "d"):
        raise ValueError(f"vary must be 'n' or 'd', got {vary!r}")
    xs = np.asarray(xs, dtype=float)
    if xs.size < 2:
        raise ValueError(f"xs must hold at least two grid points, got {xs.size}")
    vals = [sum(bound_terms(alg, x, d, eps, p=p, log_scale=log_scale)) if vary == "n"
            else sum(bound_terms(alg, n, int(x), eps, p=p, log_scale=log_scale)) for x in xs]
    return float(np.polyfit(np.log(xs), np.log(vals), 1)[0])


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
                  accountant: str = "best", step_constant: float | str = 1.0) -> Any:
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
    return run_noisy_sgd(problem, data, epsilon=eps, delta=delta, rng=rng,
                         accountant="gdp" if accountant == "best" else accountant)


def hard_linear_task(*, rng: np.random.Generator, alg: str, n: int, d: int, eps: float, mult: float = 0.0,
                     gamma: float = 0.0, p: float = 1.0, step_constant: float | str = 1.0) -> dict[str, Any]:
    """One run on the hard linear family: the member ``gamma`` (or ``mult x B(n, d)`` when ``gamma`` is 0);
    ``p = 2``: its Euclidean member (noisy SGD only). Poly-SFW runs the theorem's step (``step_constant = 1``)
    unless told otherwise (:func:`run_algorithm`).

    Returns the exact excess, the trivial error, their ratio, ``gamma``, ``capped`` (the member asked for had
    ``gamma > 1``), ``delta = n^-1.1`` and the certified epsilon. Noisy SGD also returns its steps, batch size and
    ``excess_nonprivate``: single-pass non-private SGD on the same records (``T = n/8`` steps of batch 8, step size
    ``D_2/sqrt T``; the statistical error, measured).
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
           "gamma": prob.gamma, "capped": capped, "delta": delta, "eps_certified": res.certified_epsilon(delta)}
    if alg == "noisy_sgd":
        T0 = max(1, n // 8)
        ref = run_noisy_sgd(prob, data, epsilon=eps, delta=delta, rng=rng, steps=T0, batch_size=min(8, n),
                            step_size=prob.feasible_set.diameter(2.0) / math.sqrt(T0), _noise_multiplier=0.0)
        out.update(steps=res.params["T"], batch_size=res.params["batch_size"],
                   excess_nonprivate=max(prob.excess_risk(ref.x), 1e-12))
    return out


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
              value: str = "excess") -> Any:
    """Log-log fit of the worst case over the family members (``mult``) of the per-member median of ``value``
    against ``x`` (:func:`dpsco_lib.experiments.fit_loglog_slope` with ``worst_over``), 95% bootstrap interval."""
    from dpsco_lib.experiments.analysis import fit_loglog_slope

    return fit_loglog_slope([r[x] for r in records], [r[value] for r in records], rng=rng, statistic="median",
                            n_boot=n_boot, worst_over=[r["mult"] for r in records])


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
