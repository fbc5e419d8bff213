r"""The crossover table: the sample size each private algorithm needs to learn, against the dimension.

Question. At :math:`\varepsilon = 1` (replace-one neighbours for every method), how many records
:math:`n_{\rm req}(d)` does each algorithm need before its **median** excess population risk (over replicates)
falls to a fixed fraction :math:`\phi` (default 1/2) of the *trivial error*, the excess risk of the start point
:math:`x = 0` (the centre of the feasible set, i.e. of learning nothing)? And how does :math:`n_{\rm req}` grow
with :math:`d`: polylogarithmically for the :math:`\ell_1` methods whose bounds depend on :math:`d` through
:math:`\ln|V|` only, polynomially for the :math:`\ell_2` methods (noisy SGD, DP-SGD) and for GG-VR-SFW, whose
bounds keep a power of :math:`d` (:data:`PREDICTED_GROWTH`)?

Shared problem (:func:`crossover_problem`). Least squares :math:`f(x; (a, b)) = (\langle a, x\rangle - b)^2/2`
over the unit :math:`\ell_1` ball with :math:`a = r_1(e_1 + r')`, :math:`r'_1 = 0`, Rademacher signs
(:math:`\|a\|_\infty = 1`) and :math:`b = 2 r_1`
(:func:`~dpsco_lib.problems.least_squares.hard_least_squares` ``(1, d, set_kind="l1ball")``). Then
:math:`F(x) = \tfrac12\|x - 2e_1\|_2^2 + \text{const}`, the minimizer is the vertex :math:`x^\star = e_1`,
:math:`F^\star = 1/2`, and the trivial error is :math:`F(0) - F^\star = 3/2`. In the :math:`\ell_1` setup the
constants do not depend on :math:`d` (:math:`L_0 = 3`, :math:`L_1 = 1`, :math:`D = 2`); in :math:`\ell_2` the
only data-independent Lipschitz bound is :math:`\|\nabla f\|_2 \le 3\sqrt d`, which is what an
:math:`\ell_2` method pays.

The six methods (registry keys of :mod:`dpsco_lib.algorithms.registry`, each with its theory defaults and
``accountant="best"``, the tightest valid accountant):

* ``F1 Poly-SFW``: :func:`~dpsco_lib.algorithms.poly_sfw.run_poly_sfw` (Bassily, Guzmán and Nandi, COLT 2021),
  fed a :class:`~dpsco_lib.problems.stream.DataStream` (one pass, memory :math:`O(\text{block}\cdot d)`);
* ``F2 tree FW``: :func:`~dpsco_lib.algorithms.vr_frank_wolfe.run_private_vr_frank_wolfe` (Asi, Feldman, Koren
  and Talwar, ICML 2021);
* ``F3 GG-VR-SFW tree``: :func:`~dpsco_lib.algorithms.gg_vr_sfw.run_gg_vr_sfw` (tree variant: variance-reduced
  Frank-Wolfe with the generalized Gaussian mechanism of Bassily, Guzmán and Nandi, COLT 2021) over the
  :math:`\ell_p` ball with :math:`p = 1 + 1/\ln d` (:func:`lp_exponent`), the same records and loss. The
  :math:`\ell_p` ball contains the :math:`\ell_1` ball and, on this instance, has the *same* minimizer
  :math:`e_1` (the KKT condition :math:`2e_1 - e_1 = (c - 1)\nabla\|e_1\|_p` holds), so its excess is measured
  on the same :math:`F` against the same :math:`F^\star`; with :math:`q = 1 + \ln d` the dual norm of a record
  is :math:`\|a\|_q = d^{1/q} \le e`, so its constants stay bounded in :math:`d` too;
* ``A5 anytime SMD``: :func:`~dpsco_lib.algorithms.anytime_smd.run_anytime_smd_sco` (Algorithm 5 of
  González, Guzmán and Paquette, COLT 2024, second-order regime, :math:`L_2 = 0` for least squares);
* ``S2 noisy SGD``: :func:`~dpsco_lib.algorithms.noisy_sgd.run_noisy_sgd` (Bassily, Feldman, Talwar and
  Thakurta, NeurIPS 2019), projected onto the :math:`\ell_1` ball in :math:`\ell_2` geometry;
* ``D4 DP-SGD``: :func:`~dpsco_lib.algorithms.dp_sgd.run_dp_sgd` (Abadi, Chu, Goodfellow, McMahan, Mironov,
  Talwar and Zhang, CCS 2016): Poisson
  subsampling, clipping at :math:`C = 3\sqrt d`, projection onto the :math:`\ell_1` ball, with the steps and
  batch size of S2 (:func:`dp_sgd_crossover_hyper`).

Privacy. :math:`\varepsilon = 1` and :math:`\delta = n^{-1.1}` at every :math:`n` (:func:`crossover_delta`).
DP-SGD is certified under add/remove neighbours; it is compared under the **replace-one** relation of the
others through the explicit group-of-two conversion (:func:`~dpsco_lib.privacy.accounting.events.to_replace_one`:
an :math:`(\varepsilon', \delta')` add/remove guarantee is :math:`(2\varepsilon', (1 + e^{\varepsilon'})\delta')`
under replace-one). It is run at :math:`\varepsilon' = 1/2`, :math:`\delta' = \delta/(1 + e^{1/2})`, and its
replace-one certificate (``eps_certified`` of :func:`crossover_task`) is 1.

Estimator (:func:`required_n`). For one (algorithm, :math:`d`) with grid :math:`n_1 < \dots < n_K` and
replicate ratios :math:`\rho = (F(\hat x) - F^\star)/(F(0) - F^\star)`, let :math:`m_k` be the median ratio at
:math:`n_k`. The grid estimate is the smallest :math:`n_k` with :math:`m_k \le \phi` (``"> n_K"`` when there is
none). Between :math:`n_{k-1}` and :math:`n_k` the crossing is interpolated linearly in :math:`\log n`,
:math:`\log n_{\rm req} = \log n_{k-1} + \frac{m_{k-1} - \phi}{m_{k-1} - m_k}\log\frac{n_k}{n_{k-1}}`, and the
percentile bootstrap (replicates resampled within every :math:`n_k`) gives its interval. The growth in
:math:`d` is the least-squares fit :math:`\log n_{\rm req} = a + b\log d` (or :math:`a + k\log\ln d`,
polylogarithmic growth), its interval from the same bootstrap draws (:func:`fit_required_n`).

Predictions (:data:`PREDICTED_GROWTH`; set each bound equal to :math:`\phi(F(0) - F^\star)` and drop absolute
constants and factors polylogarithmic in :math:`n`, with :math:`|V| = 2d`, :math:`D = 2`, :math:`L = 3\sqrt d`,
:math:`D_2 = 2`, :math:`\kappa \approx \ln d`):

* Poly-SFW, :math:`(L_1D^2 + L_0D)\ln|V|\ln(n/\ln|V|)\sqrt{\ln(1/\delta)}/(\varepsilon\sqrt n)`:
  :math:`n_{\rm req} \propto \ln^2 d`;
* tree Frank-Wolfe,
  :math:`(L_0D + L_1D^2)\sqrt{\ln|V|/n}\ln n + L_1D^2(\ln|V|\ln^2 n\ln(1/\delta)/(\varepsilon n))^{2/3}`:
  :math:`\propto \ln d`;
* GG-VR-SFW (tree), :math:`\sqrt{\kappa/n} + \kappa\sqrt d/(\varepsilon n)`: :math:`\propto \sqrt d\ln d`;
* Algorithm 5 (second order), :math:`\sqrt{\ln d/n} + \ln d/\sqrt{n\varepsilon}`: :math:`\propto \ln^2 d`;
* noisy SGD and DP-SGD, :math:`LD_2(1/\sqrt n + \sqrt{d\ln(1/\delta)}/(\varepsilon n))`: both terms give
  :math:`\propto d`.

The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpsco_lib._validation import check_in_range, check_int, check_rng

__all__ = [
    "CROSSOVER_ALGORITHMS",
    "CROSSOVER_EPSILON",
    "ALGORITHM_STYLE",
    "CrossoverEstimate",
    "PREDICTED_GROWTH",
    "PROFILE_GRIDS",
    "crossover_delta",
    "crossover_grid",
    "crossover_problem",
    "crossover_sweep",
    "crossover_table",
    "crossover_task",
    "dp_sgd_crossover_hyper",
    "exponent_bounds",
    "fit_required_n",
    "format_n",
    "geometric_n_grid",
    "lp_exponent",
    "plot_required_n",
    "required_n",
]

#: The target epsilon of every method (replace-one neighbours).
CROSSOVER_EPSILON = 1.0
#: delta = n ** -DELTA_EXPONENT at every n.
DELTA_EXPONENT = 1.1
#: The six methods, by registry key.
CROSSOVER_ALGORITHMS: tuple[str, ...] = (
    "F1 Poly-SFW", "F2 tree FW", "F3 GG-VR-SFW tree", "A5 anytime SMD", "S2 noisy SGD", "D4 DP-SGD",
)
#: Colour (Okabe-Ito) and marker of each method in the figures.
ALGORITHM_STYLE: dict[str, tuple[str, str]] = {
    "F1 Poly-SFW": ("#000000", "s"), "F2 tree FW": ("#D55E00", "o"), "F3 GG-VR-SFW tree": ("#009E73", "D"),
    "A5 anytime SMD": ("#CC79A7", "v"), "S2 noisy SGD": ("#E69F00", "P"), "D4 DP-SGD": ("#0072B2", "X"),
}
#: Label bound c of the shared instance (b = c r_1).
LABEL_C = 2.0
#: The growth of the required n in d that each theorem's bound predicts on the shared problem (absolute constants
#: and factors polylogarithmic in n dropped): ``(against, value, text)`` with ``against="log d"`` for
#: ``n_req ~ ln^value d`` and ``"d"`` for ``n_req ~ d^value`` (up to factors of ln d). Derived in the notebook.
PREDICTED_GROWTH: dict[str, tuple[str, float, str]] = {
    "F1 Poly-SFW": ("log d", 2.0, "ln^2 d"),
    "F2 tree FW": ("log d", 1.0, "ln d"),
    "F3 GG-VR-SFW tree": ("d", 0.5, "sqrt(d) ln d"),
    "A5 anytime SMD": ("log d", 2.0, "ln^2 d"),
    "S2 noisy SGD": ("d", 1.0, "d"),
    "D4 DP-SGD": ("d", 1.0, "d"),
}


def crossover_delta(n: int) -> float:
    """The delta of a run on ``n`` records: the book's rule ``n^-1.1``
    (:func:`~dpsco_lib.experiments.tables.delta_for_n`), so ``delta < 1/n`` at every ``n``."""
    from dpsco_lib.experiments.tables import delta_for_n

    return delta_for_n(check_int(n, "n", lo=2), DELTA_EXPONENT)


def lp_exponent(d: int) -> float:
    r"""``p = 1 + 1/ln d``: an :math:`\ell_p` setup next to :math:`\ell_1` whose regularity constant is
    logarithmic (``1/(p - 1) = ln d``; the library's smooth norm gives ``kappa`` of order ``ln d``) and in which a
    record of the shared problem has dual norm ``||a||_q = d^{1/q} <= e`` (``q = 1 + ln d``)."""
    d = check_int(d, "d", lo=3)
    return 1.0 + 1.0 / math.log(d)


def crossover_problem(d: int, *, geometry: str = "l1") -> Any:
    r"""The shared least-squares instance in dimension ``d`` (module docstring).

    Parameters
    ----------
    d : int
        Dimension (``>= 3``).
    geometry : {"l1", "lp"}
        ``"l1"``: the unit :math:`\ell_1` ball (every method but F3). ``"lp"``: the same records, loss and
        population risk over the unit :math:`\ell_p` ball, :math:`p =` :func:`lp_exponent` ``(d)``, setup norm
        :math:`\ell_p` with feature bound :math:`\|a\|_q = d^{1/q}` (F3); its minimizer is again :math:`e_1`.

    Returns
    -------
    LeastSquares
    """
    from dpsco_lib.geometry.norms import dual_exponent
    from dpsco_lib.geometry.sets import LpBall
    from dpsco_lib.problems.least_squares import LeastSquares, hard_least_squares

    d = check_int(d, "d", lo=3)
    base = hard_least_squares(1.0, d, c=LABEL_C, set_kind="l1ball")
    if geometry == "l1":
        return base
    if geometry != "lp":
        raise ValueError(f"geometry must be 'l1' or 'lp', got {geometry!r}")
    p = lp_exponent(d)
    x_star = np.zeros(d)
    x_star[0] = 1.0
    return LeastSquares(
        LpBall(d, p), p, feature_bound=float(d) ** (1.0 / dual_exponent(p)), label_bound=LABEL_C,
        sigma_diag=base.sigma_diag, sigma_factor=None, mu=base.mu, s2=base.s2, sampler=base.sampler,
        known_optimum=x_star, name=f"crossover_ls_p{p:.4g}_d{d}",
    )


def geometric_n_grid(n_min: int, n_max: int, per_decade: int = 3) -> tuple[int, ...]:
    """The grid points ``10^(j/k)`` (``k = per_decade``, rounded to two significant digits) in ``[n_min, n_max]``.

    Anchored on the powers of ten (``k = 3``: 1000, 2200, 4600, 10000, ...), so grids of different ranges
    share their points. Raises ``ValueError`` unless ``2 <= n_min <= n_max`` and ``per_decade >= 1``, or when no
    grid point lies in the range.
    """
    n_min = check_int(n_min, "n_min", lo=2)
    n_max = check_int(n_max, "n_max", lo=n_min)
    per_decade = check_int(per_decade, "per_decade", lo=1)
    j_lo = math.floor(per_decade * math.log10(n_min)) - 1
    j_hi = math.ceil(per_decade * math.log10(n_max)) + 1
    pts = sorted({int(float(f"{10.0 ** (j / per_decade):.2g}")) for j in range(j_lo, j_hi + 1)})
    out = tuple(n for n in pts if n_min <= n <= n_max)
    if not out:
        raise ValueError(f"no grid point 10^(j/{per_decade}) lies in [n_min, n_max] = [{n_min}, {n_max}]")
    return out


def dp_sgd_crossover_hyper(n: int, d: int) -> dict[str, Any]:
    r"""DP-SGD's arguments for a replace-one certificate of :data:`CROSSOVER_EPSILON` at :func:`crossover_delta`.

    Steps :math:`T` and batch size :math:`b` are those of S2 (BFTT19,
    :func:`~dpsco_lib.algorithms.noisy_sgd.noisy_sgd_theory_params` at the replace-one target), the Poisson
    rate is :math:`q = b/n`, the clipping norm the :math:`\ell_2` Lipschitz bound :math:`C = L_0\sqrt d`. The
    add/remove target is :math:`(\varepsilon/2, \delta/(1 + e^{\varepsilon/2}))`, so that the group-of-two
    conversion certifies :math:`(\varepsilon, \delta)` under replace-one. The step size is BFTT19's rule with
    DP-SGD's own noise, :math:`\eta = D_2/(G\sqrt T)`, :math:`G^2 = C^2 + d(\sigma C/(qn))^2` (the second
    moment of the noisy clipped gradient; ``sigma`` calibrated with ``accountant="best"``).
    """
    from dpsco_lib.algorithms.dp_sgd import dp_sgd_noise_multiplier
    from dpsco_lib.algorithms.noisy_sgd import l2_constants, noisy_sgd_theory_params

    n, d = check_int(n, "n", lo=8), check_int(d, "d", lo=3)
    delta = crossover_delta(n)
    L0_2, D_2 = l2_constants(crossover_problem(d))
    prm = noisy_sgd_theory_params(n, d=d, epsilon=CROSSOVER_EPSILON, delta=delta, L0_2=L0_2, D_2=D_2,
                                  accountant="best")
    eps_ar = CROSSOVER_EPSILON / 2.0
    delta_ar = delta / (1.0 + math.exp(eps_ar))
    q = prm.batch_size / n
    sigma = dp_sgd_noise_multiplier(eps_ar, delta=delta_ar, sampling_rate=q, steps=prm.T, accountant="best")
    G = math.sqrt(L0_2**2 + d * (sigma * L0_2 / (q * n)) ** 2)
    return {"epsilon": eps_ar, "delta": delta_ar, "sampling_rate": q, "steps": prm.T, "clip": L0_2,
            "step_size": D_2 / (G * math.sqrt(prm.T)), "accountant": "best"}


def _check_algorithm(algorithm: str) -> str:
    if algorithm not in CROSSOVER_ALGORITHMS:
        raise ValueError(f"algorithm must be one of {CROSSOVER_ALGORITHMS}, got {algorithm!r}")
    return algorithm


def _run(algorithm: str, d: int, n: int, rng: np.random.Generator, block_size: int | None) -> tuple[Any, Any]:
    """One run of ``algorithm``: (problem, Result). Data are drawn from ``rng``, then the run uses ``rng``."""
    from dpsco_lib.algorithms.registry import get_algorithm

    runner = get_algorithm(algorithm).runner
    delta = crossover_delta(n)
    prob = crossover_problem(d, geometry="lp" if algorithm.startswith("F3") else "l1")
    kw: dict[str, Any] = {"epsilon": CROSSOVER_EPSILON, "delta": delta, "accountant": "best"}
    if algorithm == "F1 Poly-SFW":
        return prob, runner(prob, prob.stream(n, rng, block_size), rng=rng, **kw)
    if algorithm == "F3 GG-VR-SFW tree":
        kw["variant"] = "tree"
    elif algorithm == "A5 anytime SMD":
        kw["regime"] = "second_order"
    elif algorithm == "D4 DP-SGD":
        kw = dp_sgd_crossover_hyper(n, d)
    return prob, runner(prob, prob.sample(n, rng), rng=rng, **kw)


def _replace_one_epsilon(res: Any, delta: float) -> float:
    """The run's certificate at ``delta`` under replace-one (explicit group-of-two conversion if add/remove)."""
    from dpsco_lib.privacy.accounting.events import ADD_REMOVE, to_replace_one
    from dpsco_lib.privacy.accounting.ledger import certify_events

    if res.relation == ADD_REMOVE:
        return float(certify_events((to_replace_one(*res.ledger.events),), delta, "best"))
    return float(res.certified_epsilon(delta, "best"))


def crossover_task(*, rng: np.random.Generator, algorithm: str, d: int, n: int,
                   block_size: int | None = None) -> dict[str, Any]:
    """One run of ``algorithm`` on ``n`` fresh records of :func:`crossover_problem` ``(d)``.

    Parameters
    ----------
    rng : numpy.random.Generator
        Draws the records, then drives the algorithm (the only randomness).
    algorithm : str
        One of :data:`CROSSOVER_ALGORITHMS`.
    d, n : int
        Dimension (``>= 3``) and records (``>= 16``).
    block_size : int, optional
        Records per block of Poly-SFW's data stream (default: 8 MiB of features).

    Returns
    -------
    dict
        ``excess`` (exact :math:`F(\\hat x) - F^\\star`), ``trivial`` (:math:`F(0) - F^\\star`), ``ratio``,
        ``seconds`` and ``cpu_seconds`` (wall and CPU time of sampling and run; the only outputs that vary
        between identical calls), ``eps_certified`` (the replace-one certificate at
        ``delta``, accountant ``"best"``), ``eps_target``, ``delta``, ``relation`` (of the certificate:
        ``"replace_one"``) and ``native_relation`` (the runner's own relation).
    """
    rng = check_rng(rng)
    algorithm = _check_algorithm(algorithm)
    d = check_int(d, "d", lo=3)
    n = check_int(n, "n", lo=16)
    if block_size is not None:
        block_size = check_int(block_size, "block_size", lo=1)
    start, cpu = time.perf_counter(), time.process_time()
    prob, res = _run(algorithm, d, n, rng, block_size)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    delta = crossover_delta(n)
    excess = float(prob.excess_risk(res.x))
    trivial = float(prob.excess_risk(np.zeros(d)))
    return {"excess": excess, "trivial": trivial, "ratio": excess / trivial, "seconds": seconds, "cpu_seconds": cpu,
            "eps_certified": _replace_one_epsilon(res, delta), "eps_target": CROSSOVER_EPSILON, "delta": delta,
            "relation": "replace_one", "native_relation": str(res.relation)}


# ---------------------------------------------------------------------------------------------------------
# The grid and the adaptive sweep
# ---------------------------------------------------------------------------------------------------------
#: Per profile: the dimensions, the geometric n grid (first n, last n, points per decade), the number of grid
#: points measured beyond the first crossing (``extra``) and, per algorithm, ``(max n d, max n)`` of one run: the
#: records held in memory (Poly-SFW streams them, so its cap bounds time only) and the superlinear costs (S2 takes
#: O(n^1.5 d) with its BFTT19 batches, DP-SGD O(n^2) Poisson draws and a PLD calibration per (n, d));
#: ``n_max_at`` lowers the last n of single (algorithm, d) pairs. Set from single-run CPU times on two cores.
PROFILE_GRIDS: dict[str, dict[str, Any]] = {
    "smoke": {"ds": (100, 1000), "n_min": 460, "n_max": 30_000, "per_decade": 3, "extra": 1, "n_max_at": {},
              "caps": {"F1 Poly-SFW": (1e6, 1e4), "F2 tree FW": (3e7, 3e4), "F3 GG-VR-SFW tree": (5e6, 3e4),
                       "A5 anytime SMD": (3e7, 3e4), "S2 noisy SGD": (5e6, 1e4), "D4 DP-SGD": (3e7, 2.5e4)}},
    "paper": {"ds": (100, 1000, 10_000), "n_min": 460, "n_max": 10_000_000, "per_decade": 3, "extra": 1,
              "n_max_at": {("F3 GG-VR-SFW tree", 10_000): 10_000},
              "caps": {"F1 Poly-SFW": (5e8, 1e7), "F2 tree FW": (2.5e8, 1e7), "F3 GG-VR-SFW tree": (2.5e8, 1e7),
                       "A5 anytime SMD": (2.5e8, 1e7), "S2 noisy SGD": (2.5e7, 5e4), "D4 DP-SGD": (1e8, 5e4)}},
    "full": {"ds": (100, 1000, 10_000, 100_000), "n_min": 460, "n_max": 10_000_000, "per_decade": 3, "extra": 2,
             "n_max_at": {},
             "caps": {"F1 Poly-SFW": (1e10, 1e7), "F2 tree FW": (1e9, 1e7), "F3 GG-VR-SFW tree": (1e9, 1e7),
                      "A5 anytime SMD": (1e9, 1e7), "S2 noisy SGD": (1e9, 5e5), "D4 DP-SGD": (1e9, 5e5)}},
}


def crossover_grid(profile: str, *, algorithms: Sequence[str] = CROSSOVER_ALGORITHMS
                   ) -> dict[tuple[str, int], tuple[int, ...]]:
    """The n grid of every (algorithm, d) of a profile (:data:`PROFILE_GRIDS`).

    The geometric grid :func:`geometric_n_grid` ``(n_min, n_max, per_decade)`` cut where ``n d`` or ``n``
    exceeds the algorithm's caps (memory and time of one run) or the pair's ``n_max_at``; a pair whose cut grid is
    empty is left out.
    """
    if profile not in PROFILE_GRIDS:
        raise ValueError(f"profile must be one of {sorted(PROFILE_GRIDS)}, got {profile!r}")
    cfg = PROFILE_GRIDS[profile]
    base = geometric_n_grid(cfg["n_min"], cfg["n_max"], cfg["per_decade"])
    out: dict[tuple[str, int], tuple[int, ...]] = {}
    for alg in algorithms:
        max_nd, max_n = cfg["caps"][_check_algorithm(alg)]
        for d in cfg["ds"]:
            top = min(max_n, cfg["n_max_at"].get((alg, d), math.inf))
            grid = tuple(n for n in base if n * d <= max_nd and n <= top)
            if grid:
                out[(alg, d)] = grid
    return out


def crossover_sweep(grids: Mapping[tuple[str, int], Sequence[int]], *, seeds: int, base_seed: int,
                    fraction: float = 0.5, extra: int = 1, n_jobs: int = 1, scheduler: Any = None,
                    progress: bool | None = None) -> list[dict[str, Any]]:
    """Walk every (algorithm, d) grid upwards in rounds of :func:`~dpsco_lib.experiments.run_sweep`, stopping a
    pair ``extra`` grid points after its first crossing (median ratio ``<= fraction``) or at its last grid point.

    Each round runs the next n of every active pair (``seeds`` replicates of :func:`crossover_task`); the
    records are those a full sweep would give at the same points (each task's generator depends only on
    ``base_seed``, its parameters and its replicate), so the result does not depend on the backend. The points
    beyond the first crossing make the bootstrap interval of :func:`required_n` finite.

    Returns
    -------
    list of dict
        The records of every task run (``algorithm``, ``d``, ``n``, ``replicate`` and the task's outputs).
    """
    from dpsco_lib.experiments.sweep import run_sweep

    fraction = check_in_range(fraction, "fraction", 0.0, 1.0, lo_inclusive=False)
    extra = check_int(extra, "extra", lo=0)
    if not grids:
        raise ValueError("grids must name at least one (algorithm, d) pair")
    state = {}
    for (alg, d), grid in grids.items():
        g = sorted({check_int(n, "n", lo=16) for n in grid})
        state[(_check_algorithm(alg), check_int(d, "d", lo=3))] = {"grid": g, "next": 0, "crossed": None}
    records: list[dict[str, Any]] = []
    rounds = 0
    while active := [k for k, s in state.items() if s["next"] < len(s["grid"])]:
        rounds += 1
        batch = [{"algorithm": a, "d": d, "n": state[(a, d)]["grid"][state[(a, d)]["next"]]} for a, d in active]
        recs = run_sweep(crossover_task, batch, seeds=seeds, base_seed=base_seed, n_jobs=n_jobs,
                         scheduler=scheduler, progress=progress, desc=f"crossover round {rounds}")
        records.extend(recs)
        for a, d in active:
            s = state[(a, d)]
            med = float(np.median([r["ratio"] for r in recs if r["algorithm"] == a and r["d"] == d]))
            if s["crossed"] is None and med <= fraction:
                s["crossed"] = s["next"]
            s["next"] += 1
            if s["crossed"] is not None and s["next"] - s["crossed"] > extra:
                s["next"] = len(s["grid"])  # done: the crossing and `extra` points beyond it are measured
    return records


# ---------------------------------------------------------------------------------------------------------
# The estimator, the fit, the table and the figure
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CrossoverEstimate:
    """The required sample size of one algorithm at one dimension (:func:`required_n`).

    Attributes
    ----------
    algorithm : str
    d : int
    fraction : float
        The target ratio ``phi`` of the median excess risk to the trivial error.
    n_grid : tuple of int
        The measured sample sizes, increasing.
    median_ratio : tuple of float
        The median ratio at each of them.
    n_required : float
        The interpolated crossing (``inf`` when no grid point reaches ``phi``; ``n_grid[0]`` when the first does,
        an upper bound).
    n_grid_required : int or None
        The smallest grid ``n`` whose median ratio is ``<= phi`` (None when there is none).
    status : {"reached", "not reached", "at first point"}
    ci_low, ci_high : float
        Percentile bootstrap interval of ``n_required`` (``inf`` where resamples do not cross on the grid).
    level : float
        Its confidence level.
    boot : numpy.ndarray
        The bootstrap draws of ``n_required`` (``inf`` for a resample that does not cross).
    """

    algorithm: str
    d: int
    fraction: float
    n_grid: tuple[int, ...]
    median_ratio: tuple[float, ...]
    n_required: float
    n_grid_required: int | None
    status: str
    ci_low: float
    ci_high: float
    level: float
    boot: np.ndarray

    @property
    def n_max(self) -> int:
        """The largest measured ``n``."""
        return self.n_grid[-1]

    def as_row(self) -> dict[str, Any]:
        """The estimate as a flat dict (one CSV row): the fields, without the bootstrap draws."""
        return {"algorithm": self.algorithm, "d": self.d, "fraction": self.fraction, "status": self.status,
                "n_required": self.n_required, "ci_low": self.ci_low, "ci_high": self.ci_high, "level": self.level,
                "n_grid_required": self.n_grid_required, "n_min": self.n_grid[0], "n_max": self.n_max,
                "median_ratios": " ".join(f"{n}:{m:.4g}" for n, m in zip(self.n_grid, self.median_ratio, strict=True))}

    def label(self) -> str:
        """``"2.3e4 [1.9e4, 2.8e4]"``, ``"> 1e5"`` (not reached) or ``"<= 300"`` (reached at the first grid point)."""
        if self.status == "not reached":
            return f"> {format_n(self.n_max)}"
        if self.status == "at first point":
            return f"<= {format_n(self.n_grid[0])}"
        return f"{format_n(self.n_required)} [{format_n(self.ci_low)}, {format_n(self.ci_high)}]"


def format_n(n: float) -> str:
    """A sample size to two significant digits: ``400``, ``2.3e4``, ``1e7``; ``inf`` as ``"inf"``."""
    if not math.isfinite(n):
        return "inf"
    m, e = f"{float(n):.1e}".split("e")
    e_int = int(e)
    if e_int < 3:
        return f"{round(float(n), 1 - e_int):.0f}"
    return f"{m.rstrip('0').rstrip('.')}e{e_int}"


def _crossing(medians: np.ndarray, log_n: np.ndarray, fraction: float) -> np.ndarray:
    """Interpolated log crossing of each row of ``medians`` (shape (B, K)); inf where no point reaches."""
    below = medians <= fraction
    k = np.argmax(below, axis=1)
    out = np.full(medians.shape[0], np.inf)
    hit = below.any(axis=1)
    first = hit & (k == 0)
    out[first] = log_n[0]
    mid = hit & (k > 0)
    rows, kk = np.flatnonzero(mid), k[mid]
    m_prev, m_here = medians[rows, kk - 1], medians[rows, kk]
    t = (m_prev - fraction) / (m_prev - m_here)
    out[mid] = log_n[kk - 1] + t * (log_n[kk] - log_n[kk - 1])
    return out


def _group(records: Iterable[Mapping[str, Any]]) -> dict[tuple[str, int], dict[int, list[float]]]:
    groups: dict[tuple[str, int], dict[int, list[float]]] = {}
    for rec in records:
        try:
            key, n, ratio = (str(rec["algorithm"]), int(rec["d"])), int(rec["n"]), float(rec["ratio"])
        except KeyError as exc:
            raise ValueError(f"records need 'algorithm', 'd', 'n' and 'ratio'; a record lacks {exc.args[0]!r}") from exc
        if not math.isfinite(ratio) or ratio < -1e-9:
            raise ValueError(f"ratio must be finite and >= 0, got {ratio!r} (algorithm {key[0]!r}, d={key[1]}, n={n})")
        groups.setdefault(key, {}).setdefault(n, []).append(ratio)
    if not groups:
        raise ValueError("records must hold at least one record")
    return groups


def required_n(records: Iterable[Mapping[str, Any]], *, fraction: float = 0.5, rng: np.random.Generator | None = None,
               n_boot: int = 0, level: float = 0.95) -> list[CrossoverEstimate]:
    r"""The smallest ``n`` at which the median excess risk falls to ``fraction`` of the trivial error.

    For every (algorithm, d) of ``records`` (each with ``algorithm``, ``d``, ``n`` and ``ratio`` = excess /
    trivial): the median ratio :math:`m_k` at each measured :math:`n_k`, the smallest :math:`n_k` with
    :math:`m_k \le \phi`, and the crossing interpolated linearly in :math:`\log n` between :math:`n_{k-1}` and
    :math:`n_k` (module docstring). With ``n_boot > 0`` the replicates at every :math:`n_k` are resampled with
    replacement ``n_boot`` times (``rng``) and the interval is the percentile interval of the resampled
    crossings (a resample that never crosses counts as :math:`+\infty`).

    Parameters
    ----------
    records : iterable of dict
    fraction : float
        :math:`\phi \in (0, 1)`.
    rng : numpy.random.Generator, optional
        Required when ``n_boot > 0``.
    n_boot : int
        Bootstrap resamples (0: no interval, ``ci_low = ci_high = n_required``; else ``>= 100``).
    level : float
        Confidence level in (0, 1).

    Returns
    -------
    list of CrossoverEstimate
        In the order of first appearance in ``records``.
    """
    fraction = check_in_range(fraction, "fraction", 0.0, 1.0, lo_inclusive=False, hi_inclusive=False)
    level = check_in_range(level, "level", 0.0, 1.0, lo_inclusive=False, hi_inclusive=False)
    n_boot = check_int(n_boot, "n_boot", lo=0)
    if 0 < n_boot < 100:
        raise ValueError(f"n_boot must be 0 (no interval) or >= 100, got {n_boot}")
    if n_boot and rng is None:
        raise ValueError("rng must be a numpy Generator when n_boot > 0, got None")
    rng = check_rng(rng) if n_boot else None
    out = []
    for (alg, d), cells in _group(records).items():
        ns = np.array(sorted(cells), dtype=float)
        log_n = np.log(ns)
        meds = np.array([[np.median(cells[int(n)]) for n in ns]])
        point = float(np.exp(_crossing(meds, log_n, fraction)[0]))
        point = next((float(n) for n in ns if abs(point - n) <= 1e-9 * n), point)  # a grid point exactly
        boot = np.full(n_boot, point)
        if n_boot:
            cols = [np.median(np.asarray(cells[int(n)])[rng.integers(0, len(cells[int(n)]), (n_boot, len(cells[int(n)]))
                                                                    )], axis=1) for n in ns]
            boot = np.exp(_crossing(np.column_stack(cols), log_n, fraction))
        lo, hi = (np.quantile(boot, [(1 - level) / 2, (1 + level) / 2], method="inverted_cdf") if n_boot
                  else (point, point))
        reached = np.flatnonzero(meds[0] <= fraction)
        status = "not reached" if reached.size == 0 else ("at first point" if reached[0] == 0 else "reached")
        out.append(CrossoverEstimate(alg, d, fraction, tuple(int(n) for n in ns), tuple(float(m) for m in meds[0]),
                                     point, int(ns[reached[0]]) if reached.size else None, status, float(lo),
                                     float(hi), level, boot))
    return out


def fit_required_n(estimates: Sequence[CrossoverEstimate], *, against: str = "d", level: float = 0.95) -> Any:
    r"""Growth of the required sample size with the dimension, for one algorithm.

    ``against="d"``: least squares :math:`\log n_{\rm req} = a + b\log d` (``slope`` = ``b``, the polynomial
    exponent; a polylogarithmic growth :math:`\ln^k d` has the local slope :math:`k/\ln d`).
    ``against="log d"``: :math:`\log n_{\rm req} = a + k\log\ln d` (``slope`` = ``k``, the polylogarithmic
    degree; a power :math:`d^b` has the local degree :math:`b\ln d`). Only the dimensions whose crossing was
    reached enter (at least two). The interval refits the bootstrap draws of every estimate jointly (draw
    ``j`` of every dimension; the dimensions are independent experiments), the resampling of
    :func:`~dpsco_lib.experiments.fit_loglog_slope` applied to the crossings rather than to raw errors;
    a draw with an infinite crossing, whose slope is undetermined, is counted at the unfavourable end of either
    side (``-inf`` for ``ci_low``, ``+inf`` for ``ci_high``).

    Returns
    -------
    SlopeFit
        ``slope``, ``intercept`` (``predict(x)`` with ``x = d``, or ``x = ln d``), the interval, ``n_points`` (the
        dimensions used) and ``n_boot``; ``statistic="median"``.
    """
    from dpsco_lib.experiments.analysis import SlopeFit

    if against not in ("d", "log d"):
        raise ValueError(f"against must be 'd' or 'log d', got {against!r}")
    level = check_in_range(level, "level", 0.0, 1.0, lo_inclusive=False, hi_inclusive=False)
    ests = [e for e in estimates if e.status == "reached"]
    if len({e.algorithm for e in estimates}) > 1:
        raise ValueError(f"estimates must be of one algorithm, got {sorted({e.algorithm for e in estimates})}")
    if len({e.d for e in ests}) < 2 or len({e.d for e in ests}) != len(ests):
        raise ValueError(f"estimates must hold reached crossings at >= 2 distinct d, got d = {[e.d for e in ests]}")
    ds = np.array([e.d for e in ests], dtype=float)
    x = np.log(ds) if against == "d" else np.log(np.log(ds))
    y = np.log([e.n_required for e in ests])
    slope, intercept = (float(v) for v in np.polyfit(x, y, 1))
    sizes = {e.boot.size for e in ests}
    if len(sizes) != 1:
        raise ValueError(f"estimates must share one number of bootstrap draws, got {sorted(sizes)}")
    n_boot = sizes.pop()
    lo = hi = slope
    if n_boot:
        w = (x - x.mean()) / float(np.sum((x - x.mean()) ** 2))
        with np.errstate(invalid="ignore"):
            draws = np.log(np.column_stack([e.boot for e in ests])) @ w
        a = (1 - level) / 2
        lo = float(np.quantile(np.where(np.isnan(draws), -np.inf, draws), a, method="inverted_cdf"))
        hi = float(np.quantile(np.where(np.isnan(draws), np.inf, draws), 1 - a, method="inverted_cdf"))
    return SlopeFit(slope, intercept, lo, hi, level, len(ests), int(n_boot), "median")


def _fit_text(fit: Any) -> str:
    if fit is None:
        return "-"
    return fit if isinstance(fit, str) else f"{fit.slope:+.2f} [{fit.ci_low:+.2f}, {fit.ci_high:+.2f}]"


def exponent_bounds(low: CrossoverEstimate, high: CrossoverEstimate) -> tuple[float, float]:
    r"""The range of exponents :math:`b` in :math:`n_{\rm req} \propto d^b` between two dimensions that the two
    estimates allow, censored crossings included.

    With :math:`n_1 \in [\ell_1, u_1]` at :math:`d_1 < d_2` and :math:`n_2 \in [\ell_2, u_2]` (the bootstrap
    interval of a reached crossing; :math:`(n_{\max}, \infty)` when not reached; :math:`(0, n_{\min}]` when reached
    at the first grid point), returns :math:`(\log(\ell_2/u_1), \log(u_2/\ell_1))/\log(d_2/d_1)`: a conservative
    interval (the union over the two intervals, no joint coverage claimed), usable where a fit is not (a crossing
    above the grid).
    """
    if low.algorithm != high.algorithm or not low.d < high.d:
        raise ValueError(f"low and high must be one algorithm at d_low < d_high, got ({low.algorithm!r}, {low.d}) "
                         f"and ({high.algorithm!r}, {high.d})")

    def interval(e: CrossoverEstimate) -> tuple[float, float]:
        if e.status == "not reached":
            return float(e.n_max), math.inf
        if e.status == "at first point":
            return 0.0, float(e.n_grid[0])
        return e.ci_low, e.ci_high

    (l1, u1), (l2, u2) = interval(low), interval(high)
    scale = math.log(high.d / low.d)
    with np.errstate(divide="ignore"):
        lo = float(np.log(l2) - np.log(u1)) / scale
        hi = float(np.log(u2) - np.log(l1)) / scale
    return lo, hi


def crossover_table(estimates: Sequence[CrossoverEstimate], *, fits_d: Mapping[str, Any] | None = None,
                    fits_log: Mapping[str, Any] | None = None,
                    algorithms: Sequence[str] | None = None) -> list[dict[str, str]]:
    """The crossover table: one row per algorithm, one column per dimension, then the growth in ``d``.

    Cells are :meth:`CrossoverEstimate.label` (required n with its bootstrap interval, ``"> n_max"`` when not
    reached, ``"-"`` when not run). The last columns: the growth :data:`PREDICTED_GROWTH` predicts, the fitted
    exponent ``b`` of ``n_req ~ d^b`` (``fits_d``) and the fitted degree ``k`` of ``n_req ~ ln^k d``
    (``fits_log``), each a SlopeFit (shown as ``slope [ci_low, ci_high]``) or a text; ``"-"`` when absent.
    """
    algs = list(dict.fromkeys(e.algorithm for e in estimates)) if algorithms is None else list(algorithms)
    ds = sorted({e.d for e in estimates})
    cell = {(e.algorithm, e.d): e.label() for e in estimates}
    rows = []
    for alg in algs:
        row = {"algorithm": alg}
        row.update({f"d = {format_n(d)}": cell.get((alg, d), "-") for d in ds})
        row["theory: n_req ~"] = PREDICTED_GROWTH[alg][2] if alg in PREDICTED_GROWTH else "-"
        row["b in d^b"] = _fit_text((fits_d or {}).get(alg))
        row["k in ln^k d"] = _fit_text((fits_log or {}).get(alg))
        rows.append(row)
    return rows


def plot_required_n(estimates: Sequence[CrossoverEstimate], ax: Any = None, *,
                    algorithms: Sequence[str] | None = None) -> Any:
    """Required n against d on log-log axes, one line per algorithm (bootstrap intervals as error bars).

    A dimension where the algorithm did not reach the fraction is drawn as an open triangle pointing up at the
    largest ``n`` run (the crossing lies above it). The methods are shifted slightly along ``d`` so that equal
    values stay visible; colours and markers are :data:`ALGORITHM_STYLE`. Returns the axes.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(8.2, 4.4))
    algs = list(dict.fromkeys(e.algorithm for e in estimates)) if algorithms is None else list(algorithms)
    for i, alg in enumerate(algs):
        col, mark = ALGORITHM_STYLE.get(alg, ("0.3", "o"))
        shift = 10.0 ** (0.025 * (i - (len(algs) - 1) / 2))
        es = sorted((e for e in estimates if e.algorithm == alg), key=lambda e: e.d)
        ok = [e for e in es if e.status != "not reached"]
        if ok:
            y = np.array([e.n_required for e in ok])
            hi = np.array([e.ci_high if math.isfinite(e.ci_high) else e.n_max for e in ok])
            yerr = np.vstack([y - np.minimum(y, [e.ci_low for e in ok]), np.maximum(hi, y) - y])
            ax.errorbar(np.array([e.d for e in ok]) * shift, y, yerr=yerr, marker=mark, ls="-", color=col, capsize=3,
                        label=alg)
        miss = [e for e in es if e.status == "not reached"]
        if miss:
            ax.plot(np.array([e.d for e in miss]) * shift, [e.n_max for e in miss], "^", mfc="none", color=col, ms=9,
                    mew=1.5, label=f"{alg} (not reached)" if not ok else None)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("dimension d")
    ax.set_ylabel("required sample size n")
    return ax
