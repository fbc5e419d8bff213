r"""Experiments of notebook 01: the Gaussian mechanism (Spec P1), report noisy max (Spec P2) and the exponential
mechanism (Spec P4), with their privacy audits.

* P1 (Dwork and Roth 2014, Thm A.1; Balle and Wang 2018, "Improving the Gaussian mechanism for differential
  privacy"): :math:`M(S) = f(S) + Z`, :math:`Z \sim N(0, \sigma^2 I_d)`; its error is
  :math:`\mathbb E\|Z\|_2 = \sigma\sqrt2\,\Gamma(\tfrac{d+1}2)/\Gamma(\tfrac d2) = \Theta(\sigma\sqrt d)`.
* P2 (Dwork and Roth 2014, Sec. 3.3): report noisy max with Laplace noise of scale :math:`2\Delta/\varepsilon` has
  :math:`\mathbb E[\mathrm{OPT} - u_{\hat\imath}] \le \tfrac{4\Delta}{\varepsilon}(\ln J + 1)`.
* P4 (McSherry and Talwar 2007; Dwork and Roth 2014, Thm 3.10 and 3.11): the exponential mechanism
  :math:`P(\hat\imath = i) \propto \exp(\varepsilon u_i/(2\Delta))` has
  :math:`P[u_{\hat\imath} \le \mathrm{OPT} - \tfrac{2\Delta}{\varepsilon}(\ln J + t)] \le e^{-t}`.

Every sweep task here takes the generator of :func:`~dpsco_lib.experiments.sweep.run_sweep` as ``rng`` and draws
all of its randomness from it. The sensitivity is a keyword with default 1 that the notebook's grids leave out,
so the grid points (and with them the task generators) are those of the notebook.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import integrate, stats
from scipy.special import gammaln

from dpsco_lib._validation import (
    check_delta,
    check_epsilon,
    check_int,
    check_positive,
    check_probability,
    check_rng,
)
from dpsco_lib.experiments.analysis import SlopeFit, Verdict, summarize
from dpsco_lib.plotting import add_rate_guide
from dpsco_lib.privacy.audit import audit_mechanism, epsilon_lower_bound, mu_gdp_lower_bound
from dpsco_lib.privacy.mechanisms import (
    exponential_mechanism,
    gaussian_delta_analytic,
    gaussian_epsilon_analytic,
    gaussian_mechanism,
    gaussian_sigma_analytic,
    gaussian_sigma_classic,
    laplace_mechanism,
    report_noisy_max,
)

__all__ = [
    "AUDIT_ALPHA",
    "AUDIT_CANDIDATES",
    "AUDIT_MECHANISMS",
    "P2_CONTROLS",
    "audit_checks",
    "audit_task",
    "em_log_ratio",
    "em_tail_rows",
    "em_tail_task",
    "excess_slope",
    "gaussian_error_rows",
    "gaussian_error_task",
    "gaussian_expected_norm",
    "gaussian_sigma_rows",
    "noisy_max_log_ratio",
    "noisy_max_rows",
    "p1_checks",
    "p2_checks",
    "p2_power",
    "p2_rows",
    "p2_statistics",
    "p2_p4_checks",
    "plot_audits",
    "plot_em_tail",
    "plot_gaussian_error",
    "plot_gaussian_sigma",
    "plot_noisy_max",
    "rnm_excess_task",
    "rnm_exact_excess",
    "rnm_first_probability",
]

#: Failure probability of each audit (Bonferroni over the two worlds inside the audit).
AUDIT_ALPHA = 1e-3
#: Number of candidates J of the selection audits.
AUDIT_CANDIDATES = 100
#: The audited mechanisms with their axis labels in :func:`plot_audits`.
AUDIT_MECHANISMS: dict[str, str] = {"laplace": "Laplace\n(eps)", "gaussian": "Gaussian\n(eps at delta)",
                                    "gaussian_mu": "Gaussian\n(mu-GDP)", "noisy_max": "noisy max\n(eps)",
                                    "exponential": "exp. mech.\n(eps)"}
_NOISES = ("laplace", "gumbel")
#: Noise multipliers of the broken report-noisy-max controls of P2: twice and half the claimed noise.
P2_CONTROLS = (2.0, 0.5)


# ---------------------------------------------------------------------------------------------------------
# P1: Gaussian mechanism
# ---------------------------------------------------------------------------------------------------------
def gaussian_expected_norm(sigma: float, d: int) -> float:
    r"""Exact :math:`\mathbb E\|Z\|_2 = \sigma\sqrt2\,\Gamma(\tfrac{d+1}2)/\Gamma(\tfrac d2)` for
    :math:`Z \sim N(0, \sigma^2 I_d)` (a chi distribution with ``d`` degrees of freedom, Spec P1)."""
    sigma = check_positive(sigma, "sigma")
    d = check_int(d, "d", lo=1)
    return sigma * math.sqrt(2.0) * math.exp(gammaln((d + 1) / 2) - gammaln(d / 2))


def gaussian_error_task(*, rng: np.random.Generator, d: int, m: int, epsilon: float, delta: float,
                        sensitivity: float = 1.0) -> dict[str, float]:
    r"""Sweep task of Spec P1: ``m`` releases of :math:`f(S) = 0 \in \mathbb R^d` by the Gaussian mechanism with the
    analytic calibration :math:`\sigma_{\text{analytic}}(\Delta_2, \varepsilon, \delta)` (Balle and Wang 2018).

    Returns
    -------
    dict
        ``sigma``, ``err`` (mean :math:`\|Z\|_2` over the ``m`` releases) and ``exact``
        (:func:`gaussian_expected_norm`).
    """
    d = check_int(d, "d", lo=1)
    m = check_int(m, "m", lo=1)
    sigma = gaussian_sigma_analytic(sensitivity, epsilon=epsilon, delta=delta)
    z = gaussian_mechanism(np.zeros(d), sigma=sigma, rng=rng, size=m)
    return {"sigma": sigma, "err": float(np.linalg.norm(z, axis=1).mean()), "exact": gaussian_expected_norm(sigma, d)}


def gaussian_error_rows(records: Sequence[Mapping[str, Any]], m: int) -> list[dict[str, Any]]:
    r"""Per-dimension summary of :func:`gaussian_error_task` records with the exact expectation, the relative
    deviation and the :math:`z`-statistic against the exact null variance (Spec P1).

    With :math:`R` replicates of ``m`` releases each, the mean of :math:`\|Z\|_2` has variance
    :math:`(\sigma^2 d - (\mathbb E\|Z\|_2)^2)/(mR)` (since :math:`\mathbb E\|Z\|_2^2 = \sigma^2 d`), so
    :math:`z = (\overline{\|Z\|_2} - \mathbb E\|Z\|_2)/\sqrt{(\sigma^2 d - (\mathbb E\|Z\|_2)^2)/(mR)}`.
    """
    m = check_int(m, "m", lo=1)
    if not records:
        raise ValueError("records must hold at least one record, got 0")
    rows = summarize(records, by=("d",), value="err", stats=("mean", "std", "count", "q10", "q90"))
    exact = {r["d"]: r["exact"] for r in records}
    for r in rows:
        r["exact"] = exact[r["d"]]
        r["rel_dev"] = r["err_mean"] / r["exact"] - 1
        sig = next(x["sigma"] for x in records if x["d"] == r["d"])
        r["z"] = (r["err_mean"] - r["exact"]) / math.sqrt((sig**2 * r["d"] - r["exact"] ** 2) / (m * r["err_count"]))
    return rows


def plot_gaussian_error(ax: Any, rows: Sequence[Mapping[str, Any]], fit: SlopeFit, *, epsilon: float,
                        delta: float) -> None:
    r"""Measured mean :math:`\|Z\|_2` (10-90% band over replicates) against :math:`d` in log-log axes, with the exact
    expectation and a :math:`d^{1/2}` guide (Spec P1)."""
    d_arr = np.array([r["d"] for r in rows], dtype=float)
    ax.loglog(d_arr, [r["err_mean"] for r in rows], "o", label=r"measured mean $\|Z\|_2$")
    ax.fill_between(d_arr, [r["err_q10"] for r in rows], [r["err_q90"] for r in rows], alpha=0.2,
                    label="10-90% over replicates")
    ax.loglog(d_arr, [r["exact"] for r in rows], "-", lw=1,
              label=r"exact $\sigma\sqrt{2}\,\Gamma((d+1)/2)/\Gamma(d/2)$")
    add_rate_guide(ax, d_arr, 0.5, anchor=(d_arr[0], rows[0]["err_mean"] * 0.6), label=r"$d^{1/2}$")
    ax.set_xlabel("dimension $d$")
    ax.set_ylabel(r"$\mathbb{E}\|Z\|_2$")
    ax.set_title(f"Gaussian mechanism, eps={epsilon}, delta={delta:g}: {fit}")
    ax.legend()


def gaussian_sigma_rows(eps_grid: Sequence[float], *, delta: float, sensitivity: float = 1.0) -> list[dict[str, float]]:
    r"""Classic and analytic noise scales of the Gaussian mechanism over ``eps_grid`` at ``delta`` (Spec P1), with
    the Balle-Wang :math:`\delta(\varepsilon)` each one attains.

    Classic: :math:`\sigma = \Delta_2\sqrt{2\ln(1.25/\delta)}/\varepsilon`, valid only for :math:`\varepsilon < 1`
    (``nan`` elsewhere). Analytic: the smallest :math:`\sigma` with
    :math:`\Phi(-\varepsilon/\mu + \mu/2) - e^{\varepsilon}\Phi(-\varepsilon/\mu - \mu/2) \le \delta`,
    :math:`\mu = \Delta_2/\sigma`.
    """
    delta = check_delta(delta, allow_zero=False)
    rows = []
    for e in eps_grid:
        check_epsilon(e, "eps_grid")
        sa = gaussian_sigma_analytic(sensitivity, epsilon=e, delta=delta)
        sc = gaussian_sigma_classic(sensitivity, epsilon=e, delta=delta) if e < 1 else float("nan")
        rows.append({"epsilon": float(e), "sigma_analytic": sa, "sigma_classic": sc,
                     "delta_at_analytic": gaussian_delta_analytic(sa, sensitivity=sensitivity, epsilon=e),
                     "delta_at_classic": gaussian_delta_analytic(sc, sensitivity=sensitivity, epsilon=e)
                     if e < 1 else float("nan")})
    return rows


def plot_gaussian_sigma(ax: Any, rows: Sequence[Mapping[str, float]], *, delta: float) -> None:
    r""":math:`\sigma/\Delta_2` against :math:`\varepsilon` for the two calibrations of :func:`gaussian_sigma_rows`."""
    eps = [r["epsilon"] for r in rows]
    ax.loglog(eps, [r["sigma_analytic"] for r in rows], "-", label="analytic (Balle-Wang, exact)")
    ax.loglog(eps, [r["sigma_classic"] for r in rows], "--",
              label=r"classic $\sqrt{2\ln(1.25/\delta)}/\varepsilon$ ($\varepsilon<1$)")
    ax.axvline(1.0, color="0.6", lw=0.8)
    ax.set_xlabel(r"$\varepsilon$")
    ax.set_ylabel(r"$\sigma/\Delta_2$")
    ax.set_title(f"Gaussian noise scale at delta={delta:g}")
    ax.legend()


# ---------------------------------------------------------------------------------------------------------
# P2, P4: report noisy max and the exponential mechanism
# ---------------------------------------------------------------------------------------------------------
def rnm_excess_task(*, rng: np.random.Generator, J: int, noise: str, K: int, epsilon: float,
                    sensitivity: float = 1.0, noise_factor: float = 1.0) -> dict[str, float]:
    r"""Sweep task of Specs P2 and P4: mean excess :math:`\mathrm{OPT} - u_{\hat\imath}` of ``K`` runs of report noisy
    max on the near-extremal scores :math:`u = (0, -g_J, \dots, -g_J)`,
    :math:`g_J = \tfrac{2\Delta}{\varepsilon}\ln(J-1)`.

    At this gap the exponential mechanism (``noise="gumbel"``) picks candidate 0 with probability exactly 1/2, so
    its expected excess is :math:`\tfrac{\Delta}{\varepsilon}\ln(J-1)`. ``noise="laplace"`` is the P2 mechanism.
    ``noise_factor`` multiplies the noise scale (the mechanism runs at :math:`\varepsilon/\text{noise\_factor}`
    while the scores keep the gap of :math:`\varepsilon`): 1 is the mechanism, 2 and 1/2 the broken controls of
    :data:`P2_CONTROLS`.
    """
    J = check_int(J, "J", lo=2)
    K = check_int(K, "K", lo=1)
    if noise not in _NOISES:
        raise ValueError(f"noise must be one of {_NOISES}, got {noise!r}")
    noise_factor = check_positive(noise_factor, "noise_factor")
    g = 2 * sensitivity / epsilon * math.log(J - 1)
    u = np.full(J, -g)
    u[0] = 0.0
    sel = report_noisy_max(u, sensitivity=sensitivity, epsilon=epsilon / noise_factor, rng=rng, noise=noise,
                           size=K)
    return {"excess": float(-u[sel].mean())}


def noisy_max_rows(records: Sequence[Mapping[str, Any]], *, epsilon: float,
                   sensitivity: float = 1.0) -> list[dict[str, Any]]:
    r"""Per-(noise, J) summary of :func:`rnm_excess_task` records: mean excess, its standard error ``se``, the bound
    ``bound`` (:math:`\tfrac{4\Delta}{\varepsilon}(\ln J + 1)` for Laplace, P2;
    :math:`\tfrac{2\Delta}{\varepsilon}(\ln J + 1)` for Gumbel, P4) and the exponential mechanism's exact excess
    ``exact_em`` :math:`= \tfrac{\Delta}{\varepsilon}\ln(J-1)`."""
    epsilon = check_epsilon(epsilon)
    sensitivity = check_positive(sensitivity, "sensitivity")
    rows = summarize(records, by=("noise", "J"), value="excess", stats=("mean", "std", "count"))
    for r in rows:
        r["lnJ"] = math.log(r["J"])
        r["bound"] = (4 if r["noise"] == "laplace" else 2) * sensitivity / epsilon * (r["lnJ"] + 1)
        r["exact_em"] = sensitivity / epsilon * math.log(r["J"] - 1)
        r["se"] = r["excess_std"] / math.sqrt(r["excess_count"])
    return rows


def excess_slope(records: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]], noise: str, *,
                 rng: np.random.Generator, n_boot: int) -> tuple[float, float, float]:
    r"""Least-squares slope of the mean excess against :math:`\ln J` for one ``noise`` (Specs P2, P4), with a 95%
    percentile-bootstrap interval that resamples the replicates within each :math:`J`.

    Returns ``(slope, ci_low, ci_high)`` in units of :math:`\Delta/\varepsilon` when the scores are.
    """
    if noise not in _NOISES:
        raise ValueError(f"noise must be one of {_NOISES}, got {noise!r}")
    n_boot = check_int(n_boot, "n_boot", lo=1)
    sel = [r for r in rows if r["noise"] == noise]
    x = np.array([r["lnJ"] for r in sel])
    reps = [np.array([q["excess"] for q in records if q["J"] == r["J"] and q["noise"] == noise]) for r in sel]
    slope = np.polyfit(x, [v.mean() for v in reps], 1)[0]
    boots = [np.polyfit(x, [v[rng.integers(0, v.size, v.size)].mean() for v in reps], 1)[0] for _ in range(n_boot)]
    lo, hi = np.quantile(boots, [0.025, 0.975])
    return float(slope), float(lo), float(hi)


def rnm_first_probability(J: int, gap: float, scale: float, noise: str) -> float:
    r"""Exact :math:`P(\hat\imath = 0)` of report noisy max with noise of scale ``scale`` on the scores
    :math:`u = (0, -\text{gap}, \dots, -\text{gap})` of :math:`J` candidates (Specs P2, P4).

    Gumbel noise (the exponential mechanism): :math:`1/(1 + (J-1)e^{-\text{gap}/b})`. Laplace noise:
    :math:`\int p_b(z)\,F_b(z + \text{gap})^{J-1}\,dz` (candidate 0 beats the :math:`J - 1` others), by adaptive
    quadrature with the kinks of the integrand at :math:`-\text{gap}` and 0 as break points.
    """
    J = check_int(J, "J", lo=1)
    gap = check_positive(gap, "gap", allow_zero=True)
    scale = check_positive(scale, "scale")
    if noise not in _NOISES:
        raise ValueError(f"noise must be one of {_NOISES}, got {noise!r}")
    if noise == "gumbel":
        return 1.0 / (1.0 + (J - 1) * math.exp(-gap / scale))
    lap = stats.laplace(scale=scale)
    lo, hi = -gap - 60 * scale, 60 * scale
    return float(integrate.quad(lambda z: lap.pdf(z) * lap.cdf(z + gap) ** (J - 1), lo, hi,
                                points=sorted({-gap, 0.0}), limit=400, epsabs=1e-14)[0])


def rnm_exact_excess(J_grid: Sequence[int], *, epsilon: float, sensitivity: float = 1.0, noise: str = "laplace",
                     noise_factor: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    r"""Gap :math:`g_J` and exact wrong-pick probability :math:`q_J = 1 - P(\hat\imath = 0)` of
    :func:`rnm_excess_task` at every :math:`J` of ``J_grid`` (Spec P2): the excess of one run is
    :math:`g_J` with probability :math:`q_J` and 0 otherwise, so
    :math:`\mathbb E[\mathrm{OPT} - u_{\hat\imath}] = g_J q_J` exactly and the mean of :math:`N` runs is
    :math:`g_J\,\mathrm{Bin}(N, q_J)/N`. The scale is :math:`\text{noise\_factor}\cdot 2\Delta/\varepsilon`.
    """
    epsilon = check_epsilon(epsilon)
    sensitivity = check_positive(sensitivity, "sensitivity")
    scale = check_positive(noise_factor, "noise_factor") * 2 * sensitivity / epsilon
    g = np.array([2 * sensitivity / epsilon * math.log(check_int(J, "J_grid", lo=2) - 1) for J in J_grid])
    q = np.array([1.0 - rnm_first_probability(J, gj, scale, noise) for J, gj in zip(J_grid, g, strict=True)])
    return g, q


def p2_statistics(means: np.ndarray, draws: np.ndarray, J_grid: Sequence[int], g: np.ndarray,
                  q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""The two statistics of the P2 exactness test for mean excesses ``means`` (last axis: the grid
    ``J_grid``; leading axes: experiments) of ``draws`` runs each, against the claim's exact :math:`g_J q_J`.

    Per :math:`J`: :math:`z_J = (\bar e_J - g_J q_J)/s_J` with the exact null standard error
    :math:`s_J = g_J\sqrt{q_J(1-q_J)/N_J}`; returns :math:`\max_J |z_J|` (0/0 at :math:`g_J = 0` counts as 0).
    Slope: the least-squares slope :math:`\hat\beta = \sum_J c_J \bar e_J` against :math:`\ln J`
    (:math:`c_J = (\ln J - \overline{\ln J})/\sum (\ln J - \overline{\ln J})^2`) minus the exact slope
    :math:`\sum_J c_J g_J q_J`, over :math:`\sqrt{\sum_J c_J^2 s_J^2}`.
    """
    m = np.asarray(means, dtype=float)
    exact = g * q
    s = g * np.sqrt(q * (1 - q) / np.asarray(draws, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(s > 0, (m - exact) / np.where(s > 0, s, 1.0), np.where(np.abs(m - exact) > 0, np.inf, 0.0))
    lx = np.log(np.asarray(J_grid, dtype=float))
    c = (lx - lx.mean()) / float(((lx - lx.mean()) ** 2).sum())
    z_slope = ((m - exact) @ c) / math.sqrt(float((c**2 * s**2).sum()))
    return np.max(np.abs(z), axis=-1), z_slope


def p2_power(J_grid: Sequence[int], draws: Sequence[int], *, epsilon: float, noise_factor: float,
             rng: np.random.Generator, sensitivity: float = 1.0, n_sim: int = 4000,
             z_crit: float = 4.0) -> tuple[float, float]:
    r"""Probability that each P2 test (all :math:`|z_J| <` ``z_crit``; :math:`|z_{\text{slope}}| <` ``z_crit``)
    rejects report noisy max whose noise is ``noise_factor`` times the claimed one, for the run's grid and
    numbers of runs ``draws`` per :math:`J` (Spec P2).

    Exact in law: the wrong-pick counts of ``n_sim`` simulated experiments are drawn from
    :math:`\mathrm{Bin}(N_J, q_J')` with :math:`q_J'` of the variant (:func:`rnm_exact_excess`), and each is tested
    against the claim's :math:`g_J q_J` as the notebook tests its records. ``noise_factor = 1`` gives the tests'
    false-alarm probabilities. Returns ``(power_per_J, power_slope)``.
    """
    n_sim = check_int(n_sim, "n_sim", lo=100)
    z_crit = check_positive(z_crit, "z_crit")
    nd = np.array([check_int(v, "draws", lo=1) for v in draws])
    g, q = rnm_exact_excess(J_grid, epsilon=epsilon, sensitivity=sensitivity)
    _, q_var = rnm_exact_excess(J_grid, epsilon=epsilon, sensitivity=sensitivity, noise_factor=noise_factor)
    counts = check_rng(rng).binomial(nd, q_var, size=(n_sim, nd.size))
    zmax, zs = p2_statistics(g * counts / nd, nd, J_grid, g, q)
    return float(np.mean(zmax >= z_crit)), float(np.mean(np.abs(zs) >= z_crit))


def p2_rows(records: Sequence[Mapping[str, Any]], *, epsilon: float,
            sensitivity: float = 1.0) -> list[dict[str, Any]]:
    r"""Per-(noise factor, J) summary of Laplace :func:`rnm_excess_task` records (Spec P2): the mean excess over
    all ``draws`` :math:`= K \times` replicates runs, the claim's exact expectation ``exact`` :math:`= g_J q_J`,
    the variant's own exact expectation ``exact_variant`` and :math:`z_J` against the claim."""
    out = []
    for f in sorted({float(r.get("noise_factor", 1.0)) for r in records}):
        sel = [r for r in records if r["noise"] == "laplace" and float(r.get("noise_factor", 1.0)) == f]
        J_grid = sorted({int(r["J"]) for r in sel})
        g, q = rnm_exact_excess(J_grid, epsilon=epsilon, sensitivity=sensitivity)
        _, qv = rnm_exact_excess(J_grid, epsilon=epsilon, sensitivity=sensitivity, noise_factor=f)
        for i, J in enumerate(J_grid):
            rr = [r for r in sel if r["J"] == J]
            nd = sum(int(r["K"]) for r in rr)
            mean = sum(r["excess"] * r["K"] for r in rr) / nd
            se = g[i] * math.sqrt(q[i] * (1 - q[i]) / nd)
            out.append({"noise_factor": f, "J": J, "draws": nd, "excess_mean": mean, "exact": g[i] * q[i],
                        "exact_variant": g[i] * qv[i], "gap": g[i], "q": q[i],
                        "z": (mean - g[i] * q[i]) / se if se > 0 else 0.0})
    return out


def plot_noisy_max(ax: Any, rows: Sequence[Mapping[str, Any]], slopes: Mapping[str, tuple[float, float, float]], *,
                   epsilon: float, sensitivity: float) -> None:
    r"""Mean excess (two standard errors) against :math:`\ln J` for both noises, with the P2 and P4 bounds and the
    exponential mechanism's exact excess."""
    for nz, mk in (("laplace", "o"), ("gumbel", "s")):
        rr = [r for r in rows if r["noise"] == nz]
        x = [r["lnJ"] for r in rr]
        ax.errorbar(x, [r["excess_mean"] for r in rr], yerr=[2 * r["se"] for r in rr], fmt=mk,
                    label=f"RNM {nz}: measured (slope {slopes[nz][0]:.2f})")
        ax.plot(x, [r["bound"] for r in rr], "--", lw=1,
                label=("Laplace bound $4(\\ln J+1)\\Delta/\\varepsilon$" if nz == "laplace"
                       else "EM bound $2(\\ln J+1)\\Delta/\\varepsilon$ (DR Thm 3.11)"))
    rr = [r for r in rows if r["noise"] == "gumbel"]
    ax.plot([r["lnJ"] for r in rr], [r["exact_em"] for r in rr], ":", color="k",
            label=r"EM exact $\ln(J-1)\Delta/\varepsilon$")
    ax.set_xlabel(r"$\ln J$")
    ax.set_ylabel(r"$\mathbb{E}[\mathrm{OPT} - u_{\hat\imath}]$")
    ax.set_title(f"Report noisy max, eps={epsilon}, Delta={sensitivity}")
    ax.legend(fontsize=8)


def em_tail_task(*, rng: np.random.Generator, J: int, t: float, n: int, epsilon: float,
                 sensitivity: float = 1.0) -> dict[str, float]:
    r"""Sweep task of Spec P4's tail bound (Dwork and Roth 2014, Thm 3.11): ``n`` draws of the exponential mechanism
    on :math:`u = (0, -G_t, \dots, -G_t)`, :math:`G_t = \tfrac{2\Delta}{\varepsilon}(\ln J + t)`.

    Returns ``k``, the number of draws with :math:`u_{\hat\imath} \le \mathrm{OPT} - G_t`, and ``exact``, its exact
    probability :math:`p_t = w/(1 + w)`, :math:`w = (J-1)e^{-\varepsilon G_t/(2\Delta)}`.
    """
    J = check_int(J, "J", lo=2)
    n = check_int(n, "n", lo=1)
    check_positive(t, "t", allow_zero=True)
    G = 2 * sensitivity / epsilon * (math.log(J) + t)
    u = np.full(J, -G)
    u[0] = 0.0
    sel = exponential_mechanism(u, sensitivity=sensitivity, epsilon=epsilon, rng=rng, size=n)
    w = (J - 1) * math.exp(-epsilon * G / (2 * sensitivity))
    return {"k": int(np.sum(sel != 0)), "exact": w / (1 + w)}


def em_tail_rows(records: Sequence[Mapping[str, Any]], confidence: float = 0.999) -> list[dict[str, Any]]:
    r""":func:`em_tail_task` records with the estimate ``p_hat`` :math:`= k/n`, its exact Clopper-Pearson interval
    (``ci_low``, ``ci_high``) at ``confidence`` and the bound ``bound`` :math:`= e^{-t}` of Spec P4."""
    confidence = check_probability(confidence, "confidence", open_left=True, open_right=True)
    rows = []
    for rec in records:
        r = dict(rec)
        ci = stats.binomtest(r["k"], r["n"]).proportion_ci(confidence, method="exact")
        r["p_hat"], r["ci_low"], r["ci_high"], r["bound"] = r["k"] / r["n"], ci.low, ci.high, math.exp(-r["t"])
        rows.append(r)
    return rows


def plot_em_tail(ax: Any, rows: Sequence[Mapping[str, Any]]) -> None:
    r"""Measured tail probability (Clopper-Pearson bars) against :math:`t`, with the exact :math:`p_t` and the bound
    :math:`e^{-t}` (Spec P4)."""
    tt = np.array([r["t"] for r in rows])
    ax.semilogy(tt, [r["bound"] for r in rows], "--", label=r"Thm 3.11 bound $e^{-t}$")
    ax.semilogy(tt, [r["exact"] for r in rows], "-", lw=1, label="exact $p_t$")
    ax.errorbar(tt, [r["p_hat"] for r in rows],
                yerr=[[r["p_hat"] - r["ci_low"] for r in rows], [r["ci_high"] - r["p_hat"] for r in rows]],
                fmt="o", label="measured (99.9% Clopper-Pearson)")
    ax.set_xlabel("$t$")
    ax.set_ylabel(r"$P[u_{\hat\imath} \leq \mathrm{OPT} - \frac{2\Delta}{\varepsilon}(\ln J + t)]$")
    ax.set_title(f"Exponential mechanism utility tail, J = {rows[0]['J']}")
    ax.legend()


# ---------------------------------------------------------------------------------------------------------
# Audits
# ---------------------------------------------------------------------------------------------------------
def noisy_max_log_ratio(epsilon: float, n_candidates: int, sensitivity: float = 1.0) -> float:
    r"""Exact privacy loss :math:`\ln(P_{S'}(\hat\imath = 0)/P_S(\hat\imath = 0))` of report noisy max with Laplace
    noise of scale :math:`b = 2\Delta/\varepsilon` on the audit pair :math:`u(S) = 0`,
    :math:`u(S') = (\Delta, -\Delta, \dots, -\Delta)` (Spec P2).

    :math:`P_S(\hat\imath = 0) = 1/J`, and :math:`P_{S'}(\hat\imath = 0) = \int p_b(z) F_b(z + 2\Delta)^{J-1}\,dz`
    (candidate 0 beats the :math:`J - 1` others), computed by quadrature.
    """
    epsilon = check_epsilon(epsilon)
    J = check_int(n_candidates, "n_candidates", lo=1)
    lap = stats.laplace(scale=2 * sensitivity / epsilon)
    p0 = integrate.quad(lambda z: lap.pdf(z) * lap.cdf(z + 2 * sensitivity) ** (J - 1), -60 * lap.std(),
                        60 * lap.std(), points=[-2 * sensitivity, 0.0], limit=400, epsabs=1e-14)[0]
    return math.log(J * p0)


def em_log_ratio(epsilon: float, n_candidates: int, sensitivity: float = 1.0) -> float:
    r"""Exact privacy loss of the exponential mechanism on the audit pair of :func:`noisy_max_log_ratio` (Spec P4):
    with :math:`c = \varepsilon/(2\Delta)`, :math:`\ln\big(J e^{c\Delta}/(e^{c\Delta} + (J-1)e^{-c\Delta})\big)`,
    which tends to :math:`\varepsilon` as :math:`J \to \infty`."""
    epsilon = check_epsilon(epsilon)
    J = check_int(n_candidates, "n_candidates", lo=1)
    c = epsilon / (2 * sensitivity)
    return math.log(J * math.exp(c * sensitivity) / (math.exp(c * sensitivity) + (J - 1) * math.exp(-c * sensitivity)))


def _audit_gaussian(rng: np.random.Generator, mechanism: str, f: float, n: int, epsilon: float, delta: float,
                    sensitivity: float) -> dict[str, float]:
    sigma_claim = gaussian_sigma_analytic(sensitivity, epsilon=epsilon, delta=delta)
    sig = sigma_claim / f
    mech = lambda v, g, m: gaussian_mechanism(v, sigma=sig, rng=g, size=m)  # noqa: E731
    if mechanism == "gaussian":
        res = audit_mechanism(mech, 0.0, sensitivity, lambda o: o, n, AUDIT_ALPHA, rng, delta=delta,
                              claimed_epsilon=epsilon)
        return {"claimed": epsilon, "lower_bound": res.epsilon_lower_bound, "threshold": res.threshold,
                "p_S": res.p_hat[0], "p_S_prime": res.p_hat[1],
                "true": gaussian_epsilon_analytic(sig, sensitivity=sensitivity, delta=delta)}
    res = mu_gdp_lower_bound(mech, sensitivity, 0.0, lambda o: o, sensitivity / 2, n, AUDIT_ALPHA, rng,
                             claimed_mu=sensitivity / sigma_claim)
    return {"claimed": sensitivity / sigma_claim, "lower_bound": res.mu_lower_bound, "threshold": res.threshold,
            "p_S": res.counts[0] / res.trials[0], "p_S_prime": res.counts[1] / res.trials[1],
            "true": sensitivity / sig}


def _is_first(idx: Any) -> np.ndarray:
    return (np.asarray(idx) == 0).astype(float)


def audit_task(*, rng: np.random.Generator, mechanism: str, variant: str, n: int, epsilon: float = 1.0,
               delta: float = 1e-5, sensitivity: float = 1.0) -> dict[str, float]:
    r"""Sweep task of the privacy audits of Specs P1, P2 and P4: an empirical lower bound on the privacy parameter of
    one mechanism from ``n`` runs per world on its worst-case neighbouring pair, with exact Clopper-Pearson bounds
    at failure probability :data:`AUDIT_ALPHA` (Jagielski et al. 2020; Nasr et al. 2021).

    ``mechanism`` is one of :data:`AUDIT_MECHANISMS`: ``laplace`` and ``gaussian`` release :math:`f(S) = 0`,
    :math:`f(S') = \Delta` (event :math:`\{M > \tau\}`, threshold chosen on a separate split); ``gaussian_mu`` audits
    :math:`\mu`-GDP, :math:`\mu_{lb} = \Phi^{-1}(1-\mathrm{FPR}_{up}) - \Phi^{-1}(\mathrm{FNR}_{up})` at
    :math:`\tau = \Delta/2`, against :math:`\mu = \Delta/\sigma`; ``noisy_max`` and ``exponential`` use
    :math:`u(S) = 0`, :math:`u(S') = (\Delta, -\Delta, \dots, -\Delta)` over :data:`AUDIT_CANDIDATES` candidates and
    the event :math:`\{\hat\imath = 0\}`. ``variant="broken"`` adds half the noise the claim needs (the noise of
    :math:`2\varepsilon`); the claim is the same for both variants.

    Returns
    -------
    dict
        ``claimed``, ``lower_bound``, ``threshold``, the two event rates ``p_S``, ``p_S_prime`` and ``true``, the
        exact privacy parameter of the variant.
    """
    if mechanism not in AUDIT_MECHANISMS:
        raise ValueError(f"mechanism must be one of {tuple(AUDIT_MECHANISMS)}, got {mechanism!r}")
    if variant not in ("correct", "broken"):
        raise ValueError(f"variant must be 'correct' or 'broken', got {variant!r}")
    n = check_int(n, "n", lo=1)
    f = 2.0 if variant == "broken" else 1.0
    if mechanism == "laplace":
        mech = lambda v, g, m: laplace_mechanism(v, sensitivity=sensitivity, epsilon=f * epsilon, rng=g, size=m)  # noqa: E731
        res = audit_mechanism(mech, 0.0, sensitivity, lambda o: o, n, AUDIT_ALPHA, rng, claimed_epsilon=epsilon)
        return {"claimed": epsilon, "lower_bound": res.epsilon_lower_bound, "threshold": res.threshold,
                "p_S": res.p_hat[0], "p_S_prime": res.p_hat[1], "true": f * epsilon}
    if mechanism in ("gaussian", "gaussian_mu"):
        return _audit_gaussian(rng, mechanism, f, n, epsilon, delta, sensitivity)
    select = report_noisy_max if mechanism == "noisy_max" else exponential_mechanism
    mech = lambda u, g, m: select(u, sensitivity=sensitivity, epsilon=f * epsilon, rng=g, size=m)  # noqa: E731
    u_s = np.zeros(AUDIT_CANDIDATES)
    u_sp = np.full(AUDIT_CANDIDATES, -sensitivity)
    u_sp[0] = sensitivity
    res = epsilon_lower_bound(mech, u_sp, u_s, _is_first, 0.5, n, AUDIT_ALPHA, rng, claimed_epsilon=epsilon)
    exact = noisy_max_log_ratio if mechanism == "noisy_max" else em_log_ratio
    return {"claimed": epsilon, "lower_bound": res.epsilon_lower_bound, "threshold": res.threshold,
            "p_S": res.p_hat[0], "p_S_prime": res.p_hat[1], "true": exact(f * epsilon, AUDIT_CANDIDATES, sensitivity)}


def plot_audits(ax: Any, records: Sequence[Mapping[str, Any]]) -> None:
    """Audit lower bounds of the correct and broken variants next to the claimed and the true privacy parameter of
    each mechanism of :data:`AUDIT_MECHANISMS`."""
    names = list(AUDIT_MECHANISMS)
    xpos = np.arange(len(names))
    for shift, variant, mk in ((-0.12, "correct", "o"), (0.12, "broken", "X")):
        rr = {r["mechanism"]: r for r in records if r["variant"] == variant}
        ax.plot(xpos + shift, [rr[m]["lower_bound"] for m in names], mk, ms=8,
                label=f"audit lower bound, {variant}" + (" (noise / 2)" if variant == "broken" else ""))
        ax.plot(xpos + shift, [rr[m]["true"] for m in names], "_", ms=14, color="0.3")
    claimed = {r["mechanism"]: r["claimed"] for r in records}
    for i, m in enumerate(names):
        ax.hlines(claimed[m], i - 0.3, i + 0.3, color="k", lw=2, label="claimed" if i == 0 else None)
    ax.plot([], [], "_", ms=14, color="0.3", label="true value (where known)")
    ax.set_xticks(xpos, [AUDIT_MECHANISMS[m] for m in names])
    ax.set_ylabel(r"privacy parameter ($\varepsilon$ or $\mu$)")
    ax.set_title(f"Audits (confidence {1 - AUDIT_ALPHA:g}): correct <= claim < broken")
    ax.legend(fontsize=8)


# ---------------------------------------------------------------------------------------------------------
# Verdict rows
# ---------------------------------------------------------------------------------------------------------
def p1_checks(verdict: Verdict, fit: SlopeFit, error_rows: Sequence[Mapping[str, Any]],
              sigma_rows: Sequence[Mapping[str, float]], *, delta: float, slope_tol: float) -> None:
    r"""Verdict rows of Spec P1 from :func:`gaussian_error_rows` and :func:`gaussian_sigma_rows`.

    The exponent check uses the range from 1/2 to the local log-log slope of the exact
    :math:`\mathbb E\|Z\|_2 \approx \sigma\sqrt{d - 1/2}` over the grid (slightly above 1/2); the mean error must
    match the exact value with :math:`|z| < 4` at every :math:`d`; the analytic :math:`\sigma` must be below the
    classic one and both must meet :math:`\delta(\varepsilon) \le \delta`.
    """
    delta = check_delta(delta, allow_zero=False)
    slope_tol = check_positive(slope_tol, "slope_tol")
    dims = [r["d"] for r in error_rows]
    pred = (0.5, float(np.polyfit(np.log(dims), np.log([r["exact"] for r in error_rows]), 1)[0]))
    verdict.check_exponent("P1 Gaussian error slope 1/2", fit, pred, slope_tol)
    worst_z = max(abs(r["z"]) for r in error_rows)
    worst_dev = max(abs(r["rel_dev"]) for r in error_rows)
    verdict.check("P1 mean error = exact E||Z||_2", worst_z < 4.0,
                  f"max |z| = {worst_z:.2f} < 4 (max relative deviation {worst_dev:.1e})")
    ok_s = all(r["sigma_analytic"] < r["sigma_classic"] and r["delta_at_classic"] <= delta
               for r in sigma_rows if r["epsilon"] < 1)
    verdict.check("P1 analytic sigma < classic sigma, both (eps, delta)-DP", ok_s, "all eps < 1 on the grid")
    ok_a = all(r["delta_at_analytic"] <= delta for r in sigma_rows)
    worst_delta = max(r["delta_at_analytic"] for r in sigma_rows)
    verdict.check("P1 analytic sigma meets delta exactly", ok_a,
                  f"max delta(eps) at analytic sigma = {worst_delta:.6e} <= {delta:g}")


def p2_checks(verdict: Verdict, rows: Sequence[Mapping[str, Any]],
              powers: Mapping[float, tuple[float, float]], *, required: float, z_crit: float = 4.0) -> None:
    r"""Verdict rows of Spec P2's accuracy from :func:`p2_rows` and :func:`p2_power` (``powers`` maps each noise
    factor, 1 included, to its ``(power_per_J, power_slope)``).

    The claim is two-sided against the exact expectation :math:`g_J q_J` (:func:`rnm_exact_excess`): every
    :math:`|z_J| <` ``z_crit``, and the slope of the mean excess against :math:`\ln J` within ``z_crit`` standard
    errors of the exact slope. Each claim row passes only if the records meet it **and** the test rejects report
    noisy max with twice and half the noise (:data:`P2_CONTROLS`) with probability at least ``required``. One row
    per control run checks that this run's control records are rejected.
    """
    required = check_probability(required, "required", open_left=True)
    by_f: dict[float, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_f.setdefault(float(r["noise_factor"]), []).append(r)
    if 1.0 not in by_f:
        raise ValueError("rows must hold the mechanism's own records (noise_factor 1)")
    missing = [f for f in (1.0, *P2_CONTROLS) if f not in powers]
    if missing:
        raise ValueError(f"powers must hold the noise factors {(1.0, *P2_CONTROLS)}, missing {missing}")

    def stats_of(rr: Sequence[Mapping[str, Any]]) -> tuple[float, float]:
        zm, zs = p2_statistics(np.array([r["excess_mean"] for r in rr]), np.array([r["draws"] for r in rr]),
                               [r["J"] for r in rr], np.array([r["gap"] for r in rr]), np.array([r["q"] for r in rr]))
        return float(zm), float(zs)

    zmax, zs = stats_of(by_f[1.0])
    for i, (label, ok) in enumerate((("at every J", zmax < z_crit), ("slope in ln J", abs(zs) < z_crit))):
        pw = [powers[f][i] for f in P2_CONTROLS]
        ctl = ", ".join(f"noise x{f:g} {p:.3f}" for f, p in zip(P2_CONTROLS, pw, strict=True))
        stat = f"max |z_J| = {zmax:.2f}" if i == 0 else f"slope z = {zs:+.2f}"
        verdict.check(f"P2 RNM excess = exact g_J q_J, {label} (two-sided)", ok and min(pw) >= required,
                      f"{stat} (need < {z_crit:g}); power vs {ctl} (need >= {required:g}); "
                      f"false alarm {powers[1.0][i]:.4f}")
    for f in sorted(set(by_f) - {1.0}):
        zm, zsl = stats_of(by_f[f])
        verdict.check(f"P2 broken RNM (noise x{f:g}) rejected", zm >= z_crit or abs(zsl) >= z_crit,
                      f"max |z_J| = {zm:.1f}, slope z = {zsl:+.1f} (rejected at {z_crit:g})")


def p2_p4_checks(verdict: Verdict, rows: Sequence[Mapping[str, Any]], tail_rows: Sequence[Mapping[str, Any]], *,
                 epsilon: float, sensitivity: float = 1.0) -> None:
    r"""Verdict rows of Specs P2 (bound) and P4 from :func:`noisy_max_rows` and :func:`em_tail_rows`.

    P2: measured excess :math:`\le \tfrac{4\Delta}{\varepsilon}(\ln J + 1)` at every :math:`J` (the exact claim is
    :func:`p2_checks`). P4: measured excess :math:`\le \tfrac{2\Delta}{\varepsilon}(\ln J + 1)`, equal to the exact
    :math:`\tfrac{\Delta}{\varepsilon}\ln(J-1)` (:math:`|z| < 4`), the Clopper-Pearson lower bound :math:`\le e^{-t}`
    at every :math:`t` and the exact :math:`p_t` inside every interval.
    """
    epsilon = check_epsilon(epsilon)
    sensitivity = check_positive(sensitivity, "sensitivity")
    lap = [r for r in rows if r["noise"] == "laplace"]
    worst = max(r["excess_mean"] / r["bound"] for r in lap)
    verdict.check("P2 RNM excess <= 4 Delta (ln J + 1)/eps", worst <= 1.0, f"max measured/bound = {worst:.3f}")
    gum = [r for r in rows if r["noise"] == "gumbel"]
    worst = max(r["excess_mean"] / r["bound"] for r in gum)
    verdict.check("P4 EM excess <= 2 Delta (ln J + 1)/eps", worst <= 1.0, f"max measured/bound = {worst:.3f}")
    zmax = max(abs(r["excess_mean"] - r["exact_em"]) / r["se"] for r in gum)
    verdict.check("P4 EM excess = exact Delta ln(J-1)/eps", zmax < 4.0, f"max |z| = {zmax:.2f} < 4")
    ok_t = all(r["ci_low"] <= r["bound"] for r in tail_rows)
    verdict.check("P4 DR Thm 3.11 tail bound", ok_t, f"CP lower bound <= e^-t at all {len(tail_rows)} t")
    ok_te = all(r["ci_low"] <= r["exact"] <= r["ci_high"] for r in tail_rows)
    verdict.check("P4 sampler matches exact tail", ok_te, "exact p_t inside every 99.9% CP interval")


def audit_checks(verdict: Verdict, records: Sequence[Mapping[str, Any]]) -> None:
    """Verdict rows of the audits (:func:`audit_task` records): a correct mechanism's lower bound must not exceed its
    claim, a broken one's must (the bug is caught)."""
    for r in records:
        unit = "mu" if r["mechanism"] == "gaussian_mu" else "eps"
        if r["variant"] == "correct":
            verdict.check(f"audit {r['mechanism']}: lb <= claimed", r["lower_bound"] <= r["claimed"],
                          f"{unit}_lb = {r['lower_bound']:.3f} <= claimed {r['claimed']:.3f}")
        else:
            verdict.check(f"audit {r['mechanism']} broken: lb > claimed", r["lower_bound"] > r["claimed"],
                          f"{unit}_lb = {r['lower_bound']:.3f} > claimed {r['claimed']:.3f} (bug caught)")
