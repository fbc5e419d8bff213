r"""Experiments of notebook 02: composition (Spec P3), Renyi DP and subsampling (Spec P5), Gaussian DP (Spec P6).

The accountants of :mod:`dpsco_lib.privacy.accounting` are compared with each other, with exact references and
with published values:

* P3 (Dwork and Roth 2014; Dwork, Rothblum and Vadhan 2010 [DRV10]; Kairouz, Oh and Viswanath 2015 [KOV15];
  Whitehouse, Ramdas, Rogers and Wu 2023 [WRRW23]; Gonzalez, Guzman and Paquette 2024 [GGP24], Thm 3.5 and
  Cor 3.6): ``k`` adaptive ``eps0``-DP steps are ``(k eps0, 0)``-DP (basic), ``(sqrt(2 k ln(1/delta')) eps0 +
  k eps0 (e^eps0 - 1), delta')``-DP (advanced), and ``(eps, delta)``-DP iff ``delta >= delta_k(eps)``, the privacy
  curve of k-fold randomized response (optimal). The WRRW23 filter stops before the first step with
  ``sqrt(2 log(1/delta') sum eps_m^2) + sum eps_m^2 / 2 > eps``.
* P5 (Mironov 2017; Canonne, Kamath and Steinke 2020 [CKS20]; Mironov, Talwar and Zhang 2019 [MTZ19]; Abadi et
  al. 2016; Balle, Barthe and Gaboardi 2018 [BBG18]): RDP composes additively; ``(alpha, rho)``-RDP gives
  ``eps = rho + log((alpha-1)/alpha) - (log delta + log alpha)/(alpha-1)``; Poisson subsampling with rate ``q``
  turns ``(eps, delta)``-DP into ``(log(1 + q(e^eps - 1)), q delta)``-DP, and this is tight.
* P6 (Dong, Roth and Su 2022 [DRS22]; Lia24, Lemma 1): ``mu``-GDP means a trade-off function at least
  ``G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu)``, equivalently the privacy curve
  ``delta_mu(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) = max_alpha [1 - alpha e^eps - G_mu(alpha)]``;
  ``mu_i``-GDP mechanisms compose to exactly ``sqrt(sum mu_i^2)``-GDP.

The reference privacy-loss distributions (PLD) and the reference RDP accountant are those of Google's
``dp-accounting``. The sweep tasks take the generator of :func:`~dpsco_lib.experiments.sweep.run_sweep` as ``rng``
and keep the notebook's keyword names, so the grid points (and with them the task generators) are the notebook's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from dp_accounting import dp_event
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.pld.common import DifferentialPrivacyParameters
from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib
from scipy import optimize, stats

from dpsco_lib._validation import check_delta, check_epsilon, check_int, check_positive, check_probability
from dpsco_lib.experiments.analysis import Verdict
from dpsco_lib.privacy.accounting import (
    AdvancedCompositionFilter,
    PrivacyLedger,
    advanced_composition_epsilon,
    advanced_composition_epsilon_heterogeneous,
    advanced_composition_per_step_epsilon,
    amplify_by_subsampling,
    cor36_per_step_epsilon,
    filter_spend,
    gdp_delta,
    gdp_epsilon,
    gdp_tradeoff,
    kov_epsilon,
    kov_per_step_epsilon,
    max_composition_steps,
    rdp_pure,
    rdp_subsampled_gaussian,
    rdp_to_epsilon,
)

__all__ = [
    "FP",
    "MTZ19_ORACLE",
    "amplification_rows",
    "budget_filter_checks",
    "curve_checks",
    "dpsgd_rows",
    "dpsgd_summary",
    "dual_delta",
    "duality_error",
    "filter_run",
    "filter_summary",
    "gauss_curve_point",
    "gdp_checks",
    "gdp_composition_rows",
    "homogeneous_filter_rows",
    "homogeneous_table",
    "per_step_budget_rows",
    "per_step_budget_summary",
    "plot_composition_curves",
    "plot_filter",
    "plot_gdp",
    "plot_per_step_budget",
    "plot_subsampling",
    "pure_curve_point",
    "pure_curve_table",
    "subsampled_rr_epsilon",
    "subsampling_checks",
    "tradeoff_rows",
]

#: Float64 rounding allowed between two independently computed exact values.
FP = 1e-12
#: MTZ19 oracle: 50 steps of the Poisson-subsampled Gaussian (noise multiplier 2.5, rate 0.01); RDP at these orders.
MTZ19_ORACLE: dict[str, Any] = {
    "noise_multiplier": 2.5, "sampling_rate": 0.01, "steps": 50, "orders": [1.5, 2.5, 5, 50, 100],
    "rdp": [6.70579741e-4, 1.08548710e-3, 2.18075656e-3, 2.38460375e-2, 1.67416308e2],
}


def _unique(records: Sequence[Mapping[str, Any]], key: str) -> list[Any]:
    """The values of ``key`` in first-seen order."""
    return list(dict.fromkeys(r[key] for r in records))


def _nonempty(records: Sequence[Mapping[str, Any]], name: str) -> Sequence[Mapping[str, Any]]:
    if len(records) == 0:
        raise ValueError(f"{name} must contain at least one record, got none")
    return records


# ---------------------------------------------------------------------------------------------------------
# P3, P5, P6: composition curves eps(k)
# ---------------------------------------------------------------------------------------------------------
def pure_curve_point(*, rng: np.random.Generator, k: int, eps0: float, delta: float,
                     interval: float) -> dict[str, float]:
    r"""Certified epsilon of ``k`` composed ``eps0``-DP steps at ``delta`` by every accountant (P3, P5).

    Parameters
    ----------
    rng : numpy.random.Generator
        The sweep's generator; unused (the task is deterministic).
    k : int
        Number of steps (>= 1).
    eps0 : float
        Per-step pure-DP budget (> 0).
    delta : float
        Target delta in (0, 1).
    interval : float
        Discretization interval of the PLD reference (> 0); a divisor of ``eps0`` makes it exact.

    Returns
    -------
    dict
        ``basic`` = k eps0 [DR14]; ``drv`` = sqrt(2 k ln(1/delta)) eps0 + k eps0 (e^eps0 - 1) [DRV10];
        ``filter_fixed_k`` = sqrt(2 ln(1/delta) k eps0^2) + k eps0^2 / 2 [WRRW23]; ``kov``, the optimal
        composition [KOV15]; ``rdp``, the worst-case RDP of an eps0-DP step times k, converted by [CKS20];
        ``pld``, dp-accounting's PLD of the worst-case pair (privacy loss +-eps0) composed k times, which is the
        exact optimal composition up to truncated tail mass.
    """
    k = check_int(k, "k", lo=1)
    eps0 = check_epsilon(eps0, "eps0")
    delta = check_delta(delta, "delta", allow_zero=False)
    interval = check_positive(interval, "interval")
    step = pld_lib.from_privacy_parameters(DifferentialPrivacyParameters(eps0, 0.0),
                                           value_discretization_interval=interval)
    pld = {"pld": step.self_compose(k).get_epsilon_for_delta(delta)}
    return {
        "basic": k * eps0,
        "drv": advanced_composition_epsilon(eps0, k=k, delta_prime=delta),
        "filter_fixed_k": filter_spend(np.full(k, eps0), delta_prime=delta),
        "kov": kov_epsilon(eps0, k=k, delta=delta),
        "rdp": rdp_to_epsilon(k * rdp_pure(eps0), orders=None, delta=delta)[0],
        **pld,
    }


def gauss_curve_point(*, rng: np.random.Generator, k: int, sigma: float, delta: float,
                      interval: float) -> dict[str, float]:
    r"""Certified epsilon of ``k`` composed Gaussian steps (noise multiplier ``sigma``) at ``delta`` (P5, P6).

    Parameters
    ----------
    rng : numpy.random.Generator
        The sweep's generator; unused (the task is deterministic).
    k : int
        Number of steps (>= 1).
    sigma : float
        Noise multiplier m = sigma / Delta_2 (> 0).
    delta : float
        Target delta in (0, 1).
    interval : float
        Discretization interval of the PLD (> 0).

    Returns
    -------
    dict
        ``rdp``: RDP alpha k / (2 m^2) converted to (eps, delta) [Mir17, CKS20]; ``gdp``: the exact curve of
        sqrt(k)/m-GDP [DRS22]; ``pld_pess`` and ``pld_opt``: dp-accounting's pessimistic and optimistic PLDs,
        which sandwich the exact value.
    """
    k = check_int(k, "k", lo=1)
    sigma = check_positive(sigma, "sigma")
    delta = check_delta(delta, "delta", allow_zero=False)
    interval = check_positive(interval, "interval")
    led = PrivacyLedger()
    led.record_gaussian(sigma, count=k)
    pld = {}
    for name, pess in [("pld_pess", True), ("pld_opt", False)]:
        base = pld_lib.from_gaussian_mechanism(
            sigma, pessimistic_estimate=pess, value_discretization_interval=interval, use_connect_dots=False
        )
        pld[name] = base.self_compose(k).get_epsilon_for_delta(delta)
    return {"rdp": led.epsilon(delta, "rdp"), "gdp": led.epsilon(delta, "gdp"), **pld}


def pure_curve_table(records: Sequence[Mapping[str, Any]]) -> str:
    """The records of :func:`pure_curve_point` as a text table, one line per k."""
    lines = [f"{'k':>6} {'basic':>9} {'DRV':>9} {'WRRW k':>9} {'RDP':>9} {'KOV':>11} {'PLD':>11}"]
    for r in _nonempty(records, "records"):
        lines.append(f"{r['k']:>6} {r['basic']:9.4f} {r['drv']:9.4f} {r['filter_fixed_k']:9.4f} {r['rdp']:9.4f} "
                     f"{r['kov']:11.8f} {r['pld']:11.8f}")
    return "\n".join(lines)


def plot_composition_curves(axes: Sequence[Any], rec_pure: Sequence[Mapping[str, Any]],
                            rec_gauss: Sequence[Mapping[str, Any]], *, sigma: float) -> None:
    r"""Left: epsilon(k) of pure eps0-DP steps by each accountant, with the exact PLD as crosses. Right: Gaussian
    steps (noise multiplier ``sigma``): RDP, the exact sqrt(k)/m-GDP curve and the PLD sandwich (P3, P5, P6)."""
    _nonempty(rec_pure, "rec_pure")
    _nonempty(rec_gauss, "rec_gauss")
    sigma = check_positive(sigma, "sigma")
    ks = np.array([r["k"] for r in rec_pure])
    ax = axes[0]
    for key, lab, ls in [("basic", "basic", "-"), ("drv", "advanced (DRV10)", "-"),
                         ("filter_fixed_k", "WRRW23 filter, fixed k", "--"), ("rdp", "RDP (CKS20)", "-"),
                         ("kov", "optimal (KOV15)", "-")]:
        ax.plot(ks, [r[key] for r in rec_pure], ls=ls, marker="o", ms=3, label=lab)
    ax.plot(ks, [r["pld"] for r in rec_pure], "x", color="k", label="exact PLD (dp-accounting)")
    ax.set(xscale="log", yscale="log", xlabel="number of steps k",
           ylabel=r"certified $\varepsilon$ at $\delta=10^{-6}$",
           title=r"pure $\varepsilon_0$-DP steps, $\varepsilon_0=2^{-7}$")
    ax.legend(fontsize=8)
    ax = axes[1]
    kg = np.array([r["k"] for r in rec_gauss])
    ax.plot(kg, [r["rdp"] for r in rec_gauss], marker="o", ms=3, label="RDP")
    ax.plot(kg, [r["gdp"] for r in rec_gauss], marker="o", ms=3, label=r"exact $\mu$-GDP, $\mu=\sqrt{k}/m$")
    ax.fill_between(kg, [r["pld_opt"] for r in rec_gauss], [r["pld_pess"] for r in rec_gauss], color="0.6",
                    alpha=0.5, label="PLD sandwich")
    ax.set(xscale="log", yscale="log", xlabel="number of steps k", title=f"Gaussian steps, noise multiplier {sigma:g}")
    ax.legend(fontsize=8)


# ---------------------------------------------------------------------------------------------------------
# P3: per-step budget for a target (eps, delta)
# ---------------------------------------------------------------------------------------------------------
def per_step_budget_rows(k_grid: Sequence[int], *, target: float, delta: float) -> list[dict[str, Any]]:
    r"""The largest per-step eps0 for k steps to be (target, delta)-DP, per k (P3).

    ``cor36`` is the sufficient rule eps0 = target / (2 sqrt(2 k log(1/delta))) of [GGP24] Cor 3.6; ``drv`` solves
    the [DRV10] equation exactly; ``kov`` solves the optimal composition [KOV15] exactly (brentq); ``basic`` is
    target / k.
    """
    target = check_epsilon(target, "target")
    delta = check_delta(delta, "delta", allow_zero=False)
    if len(k_grid) == 0:
        raise ValueError("k_grid must contain at least one k, got none")
    rows = []
    for k in k_grid:
        k = check_int(k, "k_grid", lo=1)
        rows.append({
            "k": k,
            "cor36": cor36_per_step_epsilon(target, delta=delta, k=k),
            "drv": advanced_composition_per_step_epsilon(target, delta_total=delta, k=k),
            "kov": kov_per_step_epsilon(target, delta_total=delta, k=k),
            "basic": target / k,
        })
    return rows


def plot_per_step_budget(ax: Any, rows: Sequence[Mapping[str, Any]]) -> None:
    """Per-step eps0 against k for the four rules of :func:`per_step_budget_rows` (log-log)."""
    kb = np.array([r["k"] for r in _nonempty(rows, "rows")])
    for key, lab in [("basic", "basic"), ("cor36", "GGP24 Cor 3.6 rule"), ("drv", "DRV10 (exact solve)"),
                     ("kov", "KOV15 (exact solve)")]:
        ax.plot(kb, [r[key] for r in rows], marker="o", ms=3, label=lab)
    ax.set(xscale="log", yscale="log", xlabel="number of steps k", ylabel=r"per-step $\varepsilon_0$")
    ax.legend()


def per_step_budget_summary(rows: Sequence[Mapping[str, Any]]) -> str:
    """About five lines of :func:`per_step_budget_rows`, with the ratio KOV / Cor 3.6."""
    rows = _nonempty(rows, "rows")
    return "\n".join(f"k={r['k']:>6}: Cor3.6 {r['cor36']:.3e}  DRV {r['drv']:.3e}  KOV {r['kov']:.3e}  "
                     f"KOV/Cor3.6 = {r['kov'] / r['cor36']:.2f}" for r in rows[:: max(1, len(rows) // 5)])


# ---------------------------------------------------------------------------------------------------------
# P3: fully adaptive composition, the WRRW23 filter
# ---------------------------------------------------------------------------------------------------------
def filter_run(*, rng: np.random.Generator, base_eps: float, eps: float, delta: float,
               max_steps: int) -> dict[str, Any]:
    r"""One adaptive analyst stopped by the [WRRW23] filter at target (eps, delta) (P3, item 4).

    The analyst releases Laplace answers ``y = 0.3 + 0.01 Lap(1/b)`` and picks each budget from the previous
    output, ``b = base_eps (1 + 0.8 tanh|y|)`` (predictable: it depends on released outputs only), until the filter
    refuses a step or ``max_steps`` is reached. All randomness comes from ``rng``.

    Returns
    -------
    dict
        ``n_filter`` steps admitted, ``spent`` (the filter's running value), ``filter_prefix_ok`` (the realized
        sequence re-priced by ``filter_spend`` is <= eps), the longest prefixes basic composition (sum b <= eps)
        and heterogeneous DRV10 (sqrt(2 ln(1/delta) sum b^2) + sum b (e^b - 1) <= eps) would certify had the
        sequence been fixed in advance, ``mean_budget`` and ``drv_full`` (DRV10 of the whole sequence).
    """
    base_eps = check_epsilon(base_eps, "base_eps")
    eps = check_epsilon(eps, "eps")
    delta = check_delta(delta, "delta", allow_zero=False)
    max_steps = check_int(max_steps, "max_steps", lo=1)
    f = AdvancedCompositionFilter(eps, delta)
    budgets, y = [], 0.0
    for _ in range(max_steps):
        b = base_eps * (1.0 + 0.8 * math.tanh(abs(y)))  # predictable: depends on released outputs only
        if not f.try_spend(b):
            break
        budgets.append(b)
        y = 0.3 + rng.laplace(scale=1.0 / b) * 0.01  # the released (noisy) answer
    arr = np.array(budgets)
    n = len(arr)
    drv = np.sqrt(2 * math.log(1 / delta) * np.cumsum(arr**2)) + np.cumsum(arr * np.expm1(arr))
    return {
        "n_filter": n,
        "spent": f.spent,
        "filter_prefix_ok": bool(filter_spend(arr, delta_prime=delta) <= eps),
        "n_basic_prefix": int(np.searchsorted(np.cumsum(arr), eps, side="right")),
        "n_drv_prefix": int(np.sum(drv <= eps)),
        "mean_budget": float(arr.mean()),
        "drv_full": advanced_composition_epsilon_heterogeneous(arr, delta_prime=delta),
    }


def filter_summary(records: Sequence[Mapping[str, Any]]) -> str:
    """Per ``base_eps`` of :func:`filter_run` records: mean steps admitted, mean budget and the mean prefixes."""
    lines = []
    for b in _unique(_nonempty(records, "records"), "base_eps"):
        rs = [r for r in records if r["base_eps"] == b]
        lines.append(f"base eps {b}: filter admits {np.mean([r['n_filter'] for r in rs]):.0f} steps (mean budget "
                     f"{np.mean([r['mean_budget'] for r in rs]):.4f}); DRV would certify a prefix of "
                     f"{np.mean([r['n_drv_prefix'] for r in rs]):.0f}, basic "
                     f"{np.mean([r['n_basic_prefix'] for r in rs]):.0f}")
    return "\n".join(lines)


def homogeneous_filter_rows(eps0_grid: Sequence[float], *, epsilon: float, delta: float) -> list[dict[str, Any]]:
    r"""Steps admitted at (epsilon, delta) for a constant budget eps0 (P3): the [WRRW23] filter run step by step
    (``filter_adaptive``) against the fixed-k counts of ``max_composition_steps`` for basic, advanced [DRV10],
    the filter's fixed-k form (eps0^2/2 instead of eps0 (e^eps0 - 1)) and the optimal composition [KOV15]."""
    epsilon = check_epsilon(epsilon, "epsilon")
    delta = check_delta(delta, "delta", allow_zero=False)
    if len(eps0_grid) == 0:
        raise ValueError("eps0_grid must contain at least one budget, got none")
    rows = []
    for e0 in eps0_grid:
        check_epsilon(e0, "eps0_grid")
        f = AdvancedCompositionFilter(epsilon, delta)
        while f.try_spend(e0):
            pass
        rows.append({"eps0": e0, "filter_adaptive": f.n_steps,
                     **{m: max_composition_steps(e0, epsilon=epsilon, delta=delta, method=m)
                        for m in ["basic", "advanced", "filter", "kov"]}})
    return rows


def homogeneous_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows of :func:`homogeneous_filter_rows` as a text table."""
    lines = [f"{'eps0':>6} {'filter':>7} {'basic':>7} {'DRV':>7} {'fixed-k WRRW':>13} {'KOV':>7}"]
    lines += [f"{r['eps0']:>6} {r['filter_adaptive']:>7} {r['basic']:>7} {r['advanced']:>7} {r['filter']:>13} "
              f"{r['kov']:>7}" for r in _nonempty(rows, "rows")]
    return "\n".join(lines)


def plot_filter(ax: Any, rec_hom: Sequence[Mapping[str, Any]], rec_filter: Sequence[Mapping[str, Any]]) -> None:
    """Steps admitted against the per-step budget: the homogeneous counts as lines, the adaptive filter runs as
    dots at their mean budget (P3)."""
    e0s = np.array([r["eps0"] for r in _nonempty(rec_hom, "rec_hom")])
    for key, lab, ls in [("basic", "basic", "-"), ("advanced", "advanced (DRV10)", "-"),
                         ("filter_adaptive", "WRRW23 filter", "--"), ("kov", "optimal fixed-k (KOV15)", "-")]:
        ax.plot(e0s, [r[key] for r in rec_hom], marker="o", ls=ls, label=lab)
    for b in _unique(_nonempty(rec_filter, "rec_filter"), "base_eps"):
        rs = [r for r in rec_filter if r["base_eps"] == b]
        ax.scatter([r["mean_budget"] for r in rs], [r["n_filter"] for r in rs], s=10, color="k", alpha=0.5)
    ax.scatter([], [], s=10, color="k", label="filter, adaptive budgets (x = mean budget)")
    ax.set(xscale="log", yscale="log", xlabel=r"per-step budget $\varepsilon_0$",
           ylabel=r"steps admitted at $(1, 10^{-6})$")
    ax.legend(fontsize=8)


# ---------------------------------------------------------------------------------------------------------
# P5: subsampling and DP-SGD
# ---------------------------------------------------------------------------------------------------------
def subsampled_rr_epsilon(epsilon: float, q: float) -> float:
    r"""Exact privacy loss of Poisson-subsampled binary randomized response (add/remove-one) (P5, [BBG18]).

    The base mechanism answers "is the target record in the sample" by eps-DP randomized response:
    p_in = (e^eps, 1) / (1 + e^eps), p_out = (1, e^eps) / (1 + e^eps). With the target present it is sampled with
    probability q, so the output law is q p_in + (1 - q) p_out against p_out; the result is the largest absolute
    log-ratio, which equals log(1 + q (e^eps - 1)).
    """
    e = check_epsilon(epsilon, "epsilon")
    q = check_probability(q, "q")
    p_in = np.array([math.exp(e), 1.0]) / (1 + math.exp(e))
    p_out = np.array([1.0, math.exp(e)]) / (1 + math.exp(e))
    mix = q * p_in + (1 - q) * p_out  # target present in S, sampled with prob. q; absent in S'
    return float(max(np.max(np.log(mix / p_out)), np.max(np.log(p_out / mix))))


def amplification_rows(eps_values: Sequence[float], q_grid: Sequence[float]) -> list[dict[str, float]]:
    """Per (eps, q): the [BBG18] amplified epsilon log(1 + q(e^eps - 1)), the exact subsampled randomized response
    (:func:`subsampled_rr_epsilon`) and the linear rule q eps (P5)."""
    if len(eps_values) == 0 or len(q_grid) == 0:
        raise ValueError("eps_values and q_grid must both be non-empty")
    rows = []
    for e in eps_values:
        for q in q_grid:
            rows.append({"eps": e, "q": float(q),
                         "bbg18": amplify_by_subsampling(e, delta=0.0, sampling_rate=float(q))[0],
                         "subsampled_rr_exact": subsampled_rr_epsilon(e, float(q)), "linear_q_eps": float(q) * e})
    return rows


def dpsgd_rows(epochs: Sequence[int], *, n: int, batch: int, noise_multiplier: float, delta: float,
               interval: float = 1e-4) -> list[dict[str, Any]]:
    r"""Epsilon at ``delta`` of DP-SGD (Poisson rate q = batch/n, T = epochs * (n // batch) steps) (P5).

    ``rdp_lib``: the moments accountant of this library (RDP of the subsampled Gaussian [MTZ19], composed over T
    steps [ACGMMTZ16]); ``rdp_dp_accounting``: dp-accounting's ``RdpAccountant`` on the same event; ``pld``:
    dp-accounting's PLD (discretization ``interval``); ``amplify_then_drv``: the classical route, the exact
    per-step Gaussian (eps_s, delta_s) with T q delta_s = delta/2, amplified by [BBG18] and composed by [DRV10]
    at delta' = delta/2.
    """
    n = check_int(n, "n", lo=1)
    batch = check_int(batch, "batch", lo=1, hi=n)
    sig = check_positive(noise_multiplier, "noise_multiplier")
    delta = check_delta(delta, "delta", allow_zero=False)
    if len(epochs) == 0:
        raise ValueError("epochs must contain at least one value, got none")
    q, steps_per_epoch = batch / n, n // batch
    pld_step = pld_lib.from_gaussian_mechanism(sig, sampling_prob=q, value_discretization_interval=interval)
    rows = []
    for ep in epochs:
        t = check_int(ep, "epochs", lo=1) * steps_per_epoch
        led = PrivacyLedger()
        led.record_subsampled_gaussian(sig, q, count=t, label="dp-sgd")
        ref = rdp_lib.RdpAccountant()
        ref.compose(dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sig)), t))
        d_s = delta / (2 * t * q)  # per-step delta, so that T q d_s = delta/2
        e_s = gdp_epsilon(1 / sig, delta=d_s)  # exact per-step Gaussian (eps_s, d_s)
        e_a, _ = amplify_by_subsampling(e_s, delta=d_s, sampling_rate=q)
        rows.append({"epochs": ep, "steps": t, "rdp_lib": led.epsilon(delta, "rdp"),
                     "rdp_dp_accounting": ref.get_epsilon(delta),
                     "pld": pld_step.self_compose(t).get_epsilon_for_delta(delta),
                     "amplify_then_drv": advanced_composition_epsilon(e_a, k=t, delta_prime=delta / 2)})
    return rows


def dpsgd_summary(rows: Sequence[Mapping[str, Any]]) -> str:
    """The last row of :func:`dpsgd_rows` in one line."""
    r = _nonempty(rows, "rows")[-1]
    return (f"{r['epochs']} epochs: RDP (library) {r['rdp_lib']:.6f}, RDP (dp-accounting) {r['rdp_dp_accounting']:.6f},"
            f" PLD {r['pld']:.4f}, amplification + DRV10 {r['amplify_then_drv']:.1f}")


def plot_subsampling(axes: Sequence[Any], rec_amp: Sequence[Mapping[str, Any]],
                     rec_sgd: Sequence[Mapping[str, Any]]) -> None:
    """Left: [BBG18] amplification (lines), exact subsampled RR (dots) and q eps (dotted) per eps. Right: DP-SGD
    epsilon by epochs for the classical route, the moments accountant and the PLD (P5)."""
    ax = axes[0]
    for i, e in enumerate(_unique(_nonempty(rec_amp, "rec_amp"), "eps")):
        rs = [r for r in rec_amp if r["eps"] == e]
        c = f"C{i}"
        ax.plot([r["q"] for r in rs], [r["bbg18"] for r in rs], color=c, label=rf"$\varepsilon={e:g}$: BBG18")
        ax.plot([r["q"] for r in rs][::12], [r["subsampled_rr_exact"] for r in rs][::12], "o", color=c, ms=3)
        ax.plot([r["q"] for r in rs], [r["linear_q_eps"] for r in rs], ":", color=c)
    ax.plot([], [], "o", color="k", ms=3, label="subsampled RR (exact)")
    ax.plot([], [], ":", color="k", label=r"$q\varepsilon$ (Lemma 3.3 as stated)")
    ax.set(xlabel="sampling rate q", ylabel=r"amplified $\varepsilon$")
    ax.legend(fontsize=7)
    ax = axes[1]
    ep = [r["epochs"] for r in _nonempty(rec_sgd, "rec_sgd")]
    for key, lab in [("amplify_then_drv", "amplification + DRV10 (Kam19 Thm 3.2 route)"),
                     ("rdp_lib", "moments accountant (RDP)"), ("pld", "PLD (dp-accounting)")]:
        ax.plot(ep, [r[key] for r in rec_sgd], marker="o", ms=3, label=lab)
    ax.set(yscale="log", xlabel="epochs", ylabel=r"$\varepsilon$ at $\delta=10^{-5}$", title="DP-SGD, MNIST sizes")
    ax.legend(fontsize=8)


# ---------------------------------------------------------------------------------------------------------
# P6: Gaussian DP
# ---------------------------------------------------------------------------------------------------------
def tradeoff_rows(mus: Sequence[float], alphas: Sequence[float]) -> list[dict[str, float]]:
    """G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu) per mu and alpha (P6, [DRS22])."""
    if len(mus) == 0 or len(alphas) == 0:
        raise ValueError("mus and alphas must both be non-empty")
    for mu in mus:
        check_positive(mu, "mus")
    return [{"mu": mu, "alpha": float(a), "G": float(g)}
            for mu in mus for a, g in zip(alphas, gdp_tradeoff(mu, alpha=np.asarray(alphas)), strict=True)]


def dual_delta(mu: float, epsilon: float) -> float:
    r"""delta(eps) = max_alpha [1 - alpha e^eps - G_mu(alpha)] ([Lia24] Lemma 1, P6), maximized numerically.

    The maximum is over alpha = Phi(-z): a grid of 4001 points z in [-10, 30], then a bounded Brent search in
    [z0 - 0.01, z0 + 0.01] around the best grid point, independent of the closed form of delta_mu(eps).
    """
    mu = check_positive(mu, "mu")
    e = check_positive(epsilon, "epsilon", allow_zero=True)

    def gap(z: Any) -> Any:  # 1 - alpha e^eps - G_mu(alpha) at alpha = Phi(-z)
        return 1 - stats.norm.cdf(-z) * math.exp(e) - gdp_tradeoff(mu, alpha=stats.norm.cdf(-z))

    zs = np.linspace(-10, 30, 4001)
    z0 = zs[int(np.argmax(gap(zs)))]
    res = optimize.minimize_scalar(lambda z: -gap(z), bounds=(z0 - 0.01, z0 + 0.01), method="bounded",
                                   options={"xatol": 1e-12})
    return float(-res.fun)


def duality_error(mus: Sequence[float], eps_values: Sequence[float]) -> float:
    """max over (mu, eps) of |dual_delta(mu, eps) - gdp_delta(mu, eps)|: the duality of P6 checked numerically."""
    if len(mus) == 0 or len(eps_values) == 0:
        raise ValueError("mus and eps_values must both be non-empty")
    return max(abs(dual_delta(mu, e) - gdp_delta(mu, epsilon=e)) for mu in mus for e in eps_values)


def gdp_composition_rows(ks: Sequence[int], eps_grid: Sequence[float], *, noise_multiplier: float = 10.0,
                         interval: float = 1e-4) -> list[dict[str, float]]:
    """Per k and eps: the privacy curve of sqrt(k)/m-GDP [DRS22] and dp-accounting's PLD of k composed Gaussian
    mechanisms with noise multiplier m (P6)."""
    m = check_positive(noise_multiplier, "noise_multiplier")
    if len(ks) == 0 or len(eps_grid) == 0:
        raise ValueError("ks and eps_grid must both be non-empty")
    rows = []
    for k in ks:
        k = check_int(k, "ks", lo=1)
        pld = pld_lib.from_gaussian_mechanism(m, value_discretization_interval=interval).self_compose(k)
        mu = math.sqrt(k) / m
        for e in eps_grid:
            rows.append({"k": k, "mu": mu, "eps": float(e), "gdp": gdp_delta(mu, epsilon=float(e)),
                         "pld": pld.get_delta_for_epsilon(float(e))})
    return rows


def plot_gdp(axes: Sequence[Any], rec_tradeoff: Sequence[Mapping[str, Any]],
             rec_gdp: Sequence[Mapping[str, Any]]) -> None:
    """Left: trade-off functions G_mu against perfect privacy 1 - alpha. Right: privacy curves of k composed
    Gaussian mechanisms, GDP as lines and PLD as dots (P6)."""
    for mu in _unique(_nonempty(rec_tradeoff, "rec_tradeoff"), "mu"):
        rs = [r for r in rec_tradeoff if r["mu"] == mu]
        axes[0].plot([r["alpha"] for r in rs], [r["G"] for r in rs], label=rf"$G_{{{mu:g}}}$")
    axes[0].plot([0, 1], [1, 0], ":", color="0.5", label="perfect privacy")
    axes[0].set(xlabel=r"type I error $\alpha$", ylabel="type II error", aspect="equal")
    axes[0].legend(fontsize=8)
    for k in _unique(_nonempty(rec_gdp, "rec_gdp"), "k"):
        rs = [r for r in rec_gdp if r["k"] == k]
        line, = axes[1].plot([r["eps"] for r in rs], [r["gdp"] for r in rs],
                             label=rf"$k={k}$, $\mu={rs[0]['mu']:.1f}$")
        axes[1].plot([r["eps"] for r in rs], [r["pld"] for r in rs], "o", ms=3, color=line.get_color())
    axes[1].set(yscale="log", ylim=(1e-12, 1), xlabel=r"$\varepsilon$", ylabel=r"$\delta(\varepsilon)$")
    axes[1].legend(fontsize=8, title="lines: GDP; dots: PLD", title_fontsize=8)


# ---------------------------------------------------------------------------------------------------------
# verdict rows
# ---------------------------------------------------------------------------------------------------------
def curve_checks(verdict: Verdict, rec_pure: Sequence[Mapping[str, Any]], rec_gauss: Sequence[Mapping[str, Any]],
                 *, eps0: float, delta: float, sigma: float) -> None:
    r"""Six rows on the composition curves (P3, P5, P6): KOV15 <= min(DRV10, basic, WRRW23 fixed-k); WRRW23
    fixed-k <= DRV10 (eps0^2/2 <= eps0 (e^eps0 - 1)); DRV10 <= basic exactly when k >= k* = 2 ln(1/delta) /
    (2 - e^eps0)^2; KOV15 = exact PLD (relative 1e-6); RDP >= KOV15; exact GDP composition inside the PLD
    sandwich and <= RDP. Comparisons of two exact values allow :data:`FP`."""
    rec_pure, rec_gauss = _nonempty(rec_pure, "rec_pure"), _nonempty(rec_gauss, "rec_gauss")
    eps0 = check_epsilon(eps0, "eps0")
    delta = check_delta(delta, "delta", allow_zero=False)
    sigma = check_positive(sigma, "sigma")
    ks = [r["k"] for r in rec_pure]
    ok = all(r["kov"] <= min(r["drv"], r["basic"], r["filter_fixed_k"]) + FP for r in rec_pure)
    verdict.check("P3 KOV <= min(DRV, basic, WRRW fixed-k)", ok, f"all {len(rec_pure)} k in [{min(ks)}, {max(ks)}]")
    ok = all(r["filter_fixed_k"] <= r["drv"] + FP for r in rec_pure)
    verdict.check("P3 WRRW fixed-k <= DRV", ok, "eps0^2/2 <= eps0 (e^eps0 - 1)")
    k_star = 2 * math.log(1 / delta) / (2 - math.exp(eps0)) ** 2  # DRV <= basic  <=>  k >= k*
    ok = all((r["drv"] <= r["basic"]) == (r["k"] >= k_star) for r in rec_pure)
    verdict.check("P3 DRV <= basic exactly when k >= k*", ok, f"k* = 2 ln(1/delta)/(2 - e^eps0)^2 = {k_star:.1f}")
    worst = max(abs(r["pld"] - r["kov"]) / max(r["kov"], 1e-300) for r in rec_pure)
    verdict.check("P3 KOV closed form = exact PLD", worst < 1e-6, f"max relative difference {worst:.1e}")
    ok = all(r["rdp"] >= r["kov"] - FP for r in rec_pure)
    gap = min(r["rdp"] - r["pld"] for r in rec_pure)
    verdict.check("P5 RDP >= exact composition (KOV = PLD)", ok, f"min RDP - PLD = {gap:.1e}")
    ok = all(r["pld_opt"] - FP <= r["gdp"] <= r["pld_pess"] + FP and r["gdp"] <= r["rdp"] + FP for r in rec_gauss)
    verdict.check("P6 exact GDP composition inside PLD sandwich, <= RDP", ok, f"Gaussian m = {sigma:g}")


def budget_filter_checks(verdict: Verdict, rec_budget: Sequence[Mapping[str, Any]],
                         rec_filter: Sequence[Mapping[str, Any]], rec_hom: Sequence[Mapping[str, Any]]) -> None:
    """Four rows (P3): Cor 3.6 rule <= DRV10 solve <= KOV15 solve; the filter never overspends eps = 1 (and the
    realized sequence re-priced is within it); homogeneous filter count = its fixed-k count <= KOV15; the filter
    admits at least the DRV10 count (homogeneous and adaptive runs)."""
    rec_budget, rec_filter = _nonempty(rec_budget, "rec_budget"), _nonempty(rec_filter, "rec_filter")
    rec_hom = _nonempty(rec_hom, "rec_hom")
    ok = all(r["cor36"] <= r["drv"] <= r["kov"] for r in rec_budget)
    ratio = min(r["kov"] / r["cor36"] for r in rec_budget)
    verdict.check("P3 Cor 3.6 rule <= DRV solve <= KOV solve", ok, f"KOV/Cor3.6 >= {ratio:.2f}")
    ok = all(r["spent"] <= 1.0 and r["filter_prefix_ok"] for r in rec_filter)
    verdict.check("P3 filter never overspends", ok, f"{len(rec_filter)} adaptive runs")
    ok = all(r["filter_adaptive"] == r["filter"] <= r["kov"] for r in rec_hom)
    verdict.check("P3 filter admits fixed-k count (eps^2/2 form) <= KOV", ok,
                  "; ".join(f"{r['eps0']}: {r['filter_adaptive']}<={r['kov']}" for r in rec_hom))
    ok = all(r["advanced"] <= r["filter_adaptive"] for r in rec_hom)
    ok = ok and all(r["n_drv_prefix"] <= r["n_filter"] for r in rec_filter)
    verdict.check("P3 filter admits >= DRV10 count", ok, "homogeneous and adaptive runs")


def subsampling_checks(verdict: Verdict, rec_sgd: Sequence[Mapping[str, Any]],
                       rec_amp: Sequence[Mapping[str, Any]]) -> None:
    """Six rows (P5): the DP-SGD oracle eps = 0.724 at 15 epochs (within 1e-3); library RDP = dp-accounting's
    RdpAccountant (relative 1e-4); the MTZ19 oracle (:data:`MTZ19_ORACLE`, relative 1e-4); PLD <= moments
    accountant < amplification + DRV10; BBG18 amplification = exact subsampled RR (1e-12); BBG18 >= q eps."""
    rec_sgd, rec_amp = _nonempty(rec_sgd, "rec_sgd"), _nonempty(rec_amp, "rec_amp")
    last = rec_sgd[-1]
    verdict.check("P5 DP-SGD oracle eps = 0.724 (15 epochs)", abs(last["rdp_lib"] - 0.724) < 1e-3,
                  f"eps = {last['rdp_lib']:.6f}")
    ok = all(abs(r["rdp_lib"] / r["rdp_dp_accounting"] - 1) < 1e-4 for r in rec_sgd)
    verdict.check("P5 RDP = dp-accounting RdpAccountant", ok, f"max rel diff "
                  f"{max(abs(r['rdp_lib'] / r['rdp_dp_accounting'] - 1) for r in rec_sgd):.1e}")
    o = MTZ19_ORACLE
    mtz = o["steps"] * rdp_subsampled_gaussian(o["noise_multiplier"], sampling_rate=o["sampling_rate"],
                                               orders=o["orders"])
    ref = np.array(o["rdp"])
    verdict.check("P5 MTZ19 oracle (sigma 2.5, q 0.01, 50 steps)", np.allclose(mtz, ref, rtol=1e-4),
                  f"max rel err {np.max(np.abs(mtz / ref - 1)):.1e}")
    ok = all(r["pld"] <= r["rdp_lib"] for r in rec_sgd) and all(r["rdp_lib"] < r["amplify_then_drv"] for r in rec_sgd)
    verdict.check("P5 PLD <= moments accountant < amplification+DRV", ok,
                  f"at {last['epochs']} epochs: {last['pld']:.3f} <= {last['rdp_lib']:.3f} < "
                  f"{last['amplify_then_drv']:.1f}")
    ok = all(abs(r["subsampled_rr_exact"] - r["bbg18"]) < 1e-12 for r in rec_amp)
    verdict.check("P5 BBG18 amplification tight (subsampled RR)", ok, f"{len(rec_amp)} (eps, q) pairs")
    ok = all(r["bbg18"] >= r["linear_q_eps"] - FP for r in rec_amp)
    gap = max(r["bbg18"] - r["linear_q_eps"] for r in rec_amp)
    verdict.check("P5 exact amplification >= q eps (Lemma 3.3 as stated is optimistic)", ok, f"max excess {gap:.3f}")


def gdp_checks(verdict: Verdict, dual_err: float, rec_gdp: Sequence[Mapping[str, Any]]) -> None:
    """Three rows (P6): gdp_delta(1, 1) = 0.126937 (relative 1e-4); the trade-off / privacy-curve duality error
    ``dual_err`` (:func:`duality_error`) < 1e-9; the PLD of k composed Gaussians >= the sqrt(k)/m-GDP curve (up
    to :data:`FP`) and within 1e-3 of it."""
    if isinstance(dual_err, bool) or not isinstance(dual_err, int | float | np.floating):
        raise ValueError(f"dual_err must be a real number, got {dual_err!r}")
    rec_gdp = _nonempty(rec_gdp, "rec_gdp")
    verdict.check("P6 gdp_delta(1, 1) = 0.126937", abs(gdp_delta(1.0, epsilon=1.0) / 0.126937 - 1) < 1e-4,
                  f"{gdp_delta(1.0, epsilon=1.0):.7f}")
    verdict.check("P6 trade-off / privacy-curve duality", dual_err < 1e-9, f"max error {dual_err:.1e}")
    err = max(abs(r["pld"] - r["gdp"]) for r in rec_gdp)
    ok = all(r["pld"] >= r["gdp"] - FP for r in rec_gdp) and err < 1e-3
    verdict.check("P6 composition sqrt(k)/sigma-GDP = PLD", ok, f"max |delta_PLD - delta_GDP| = {err:.1e}")
