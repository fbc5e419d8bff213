r"""Experiments of notebook 16 (sparse gradients, Z1-Z3) at :math:`\varepsilon = 1`, :math:`\delta = n^{-1.1}`.

* Z1: the :math:`\ell_2` error of the sparse mean estimators on a two-member instance family (records whose mean
  lies inside the :math:`\ell_1` ball, and records equal to one vertex-like vector, whose mean lies on its
  boundary), and the exponent in :math:`d` predicted by the deterministic bound
  :math:`\|\hat z - \bar z\|_2 \le \min(\|\xi\|_2, 2\sqrt{L\sqrt s\,\|\xi\|_\infty})` (projection onto a convex set
  containing :math:`\bar z` never moves away from it, and the projection inequality).
* Z2: logistic regression whose :math:`s`-sparse features live on ``k0`` active coordinates of
  :math:`\mathbb R^d` (so the exact empirical optimum over the :math:`\ell_1` ball is a ``k0``-dimensional
  problem, solved here to high accuracy), output perturbation with and without projection, and DP-SGD calibrated
  for the replace-one target through the explicit add/remove conversion
  (:func:`~dpsco_book.privacy_rule.replace_one_target`).
* Z3: the bias of the bias-reduced gradient against the single-record Z1 estimator on a linear loss (Monte Carlo,
  compared by the one-sided statistic of :func:`bias_gap_z`), and full bias-reduced DP-SGD runs under the privacy
  filter (:func:`z3_run`).

Reference: Ghazi et al. (2024), "DP optimization with sparse gradients".
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from dpsco_book.mean_estimation_and_dpsgd import local_slope
from dpsco_book.privacy_rule import delta_for_n, replace_one_certificate, replace_one_target
from dpsco_lib._validation import check_int
from dpsco_lib.algorithms.dp_sgd import run_dp_sgd  # re-exported for the notebook
from dpsco_lib.algorithms.sparse import (
    bias_reduced_gradient,
    bias_reduced_second_moment,
    run_bias_reduced_dp_sgd,
    run_output_perturbation,
    sample_sparse_vectors,
    sparse_mean_estimate,
)
from dpsco_lib.geometry.sets import L1Ball, project_l1_ball
from dpsco_lib.privacy.accounting.budget import gaussian_noise_multiplier
from dpsco_lib.problems import Dataset, LogisticRegression, SparseHardLinear

__all__ = [
    "ActiveSetLogisticSampler",
    "LinearSparse",
    "Z1_FAMILY",
    "check_z3",
    "bias_and_se",
    "bias_gap_z",
    "worst_ratio_at",
    "z1_bound",
    "z1_error_task",
    "z1_exponent_range",
    "z1_records",
    "z2_excess_task",
    "z2_exponent_range",
    "z2_instance",
    "z2_optimum",
    "z3_bias_draws",
    "z3_rows",
    "z3_task",
]

Z1_FAMILY = ("interior", "boundary")


def z1_records(n: int, d: int, s: int, label: str, rng: np.random.Generator) -> sp.csr_matrix:
    r"""Z1 family member: ``"interior"`` (:func:`~dpsco_lib.algorithms.sparse.sample_sparse_vectors`, mean of norm
    about 0.7 inside the ball) or ``"boundary"`` (every record the same :math:`\pm 1/\sqrt s` vector on a random
    support, so :math:`\|\bar z\|_1 = \sqrt s`: the mean lies on the :math:`\ell_1` sphere), with :math:`L = 1`."""
    if label == "interior":
        return sample_sparse_vectors(n, d, s, 1.0, rng)
    if label != "boundary":
        raise ValueError(f"label must be one of {Z1_FAMILY}, got {label!r}")
    support = np.sort(rng.choice(d, size=s, replace=False))
    row = (2.0 * rng.integers(0, 2, size=s) - 1.0) / math.sqrt(s)
    return sp.csr_matrix((np.tile(row, n), np.tile(support, n), np.arange(0, n * s + 1, s)), shape=(n, d))


def z1_error_task(*, rng: np.random.Generator, d: int, n: int, s: int, method: str, label: str,
                  epsilon: float = 1.0) -> dict[str, float]:
    r"""One Z1 estimate (replace-one; ``"laplace"`` pure :math:`\varepsilon`, ``"gaussian"`` and ``"dense"``
    (the Gaussian release without projection) at :math:`(\varepsilon, n^{-1.1})`). Returns the error
    :math:`\|\hat z - \bar z\|_2`, the trivial error :math:`\|\bar z\|_2` (the zero estimate) and the certificate."""
    Z = z1_records(n, d, s, label, rng)
    dlt = 0.0 if method == "laplace" else delta_for_n(n)
    r = sparse_mean_estimate(Z, sparsity=s, norm_bound=1.0, epsilon=epsilon, delta=dlt, rng=rng)
    m = r.info["empirical_mean"]
    err = float(np.linalg.norm(r.x - m))
    if method == "dense":  # the same calibration released without the projection
        err = float(np.linalg.norm(rng.normal(0.0, r.params["noise_scale"], size=d)))
    elif method not in ("laplace", "gaussian"):
        raise ValueError(f"method must be 'laplace', 'gaussian' or 'dense', got {method!r}")
    return {"error": err, "trivial": float(np.linalg.norm(m)), "certified_eps": r.certified_epsilon(dlt), "delta": dlt}


def z1_bound(d: int, n: int, s: int, method: str, epsilon: float = 1.0) -> float:
    r"""The Z1 error bound with the expected noise norms (:math:`L = 1`):
    :math:`\min(\mathbb E\|\xi\|_2, 2\sqrt{\sqrt s\,\mathbb E\|\xi\|_\infty})` for the projected estimators and
    :math:`\sigma\sqrt d` for the dense release. Laplace scale :math:`b = 2\sqrt s/(n\varepsilon)`:
    :math:`\mathbb E\|\xi\|_\infty = b H_d` (harmonic number), :math:`\|\xi\|_2 \approx b\sqrt{2d}`; Gaussian:
    :math:`\mathbb E\|\xi\|_\infty \le \sigma\sqrt{2\ln(2d)}`."""
    d = check_int(d, "d", lo=1)
    if method == "laplace":
        b = 2.0 * math.sqrt(s) / (n * epsilon)
        l2, linf = b * math.sqrt(2.0 * d), b * float(np.sum(1.0 / np.arange(1, d + 1)))
    else:
        sig = (2.0 / n) * gaussian_noise_multiplier(epsilon, delta_for_n(n), accountant="gdp").value
        l2, linf = sig * math.sqrt(d), sig * math.sqrt(2.0 * math.log(2.0 * d))
        if method == "dense":
            return l2
    return min(l2, 2.0 * math.sqrt(math.sqrt(s) * linf))


def z1_exponent_range(d_grid: Sequence[int], n: int, s: int, method: str) -> tuple[float, float]:
    """Predicted exponent in d: exactly 1/2 for the dense release; for the projected estimators the range from 0
    (a d-free error) to the local slope of :func:`z1_bound` over the grid (an upper bound's exponent)."""
    if method == "dense":
        return 0.5, 0.5
    return 0.0, max(0.0, local_slope(d_grid, [z1_bound(d, n, s, method) for d in d_grid]))


# ---------------------------------------------------------------------------------------------------------
# Z2
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ActiveSetLogisticSampler:
    r"""Logistic data in :math:`\mathbb R^d` whose features have ``s`` entries :math:`\pm 1/\sqrt s` on a uniform
    random subset of the first ``k0 = w.size`` coordinates (so gradients are ``s``-sparse with norm <= 1), and
    :math:`P(y = 1) = \mathrm{sigmoid}(\langle a, w\rangle)`."""

    w: np.ndarray
    d: int
    sparsity: int

    def __call__(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        k0, s = self.w.size, self.sparsity
        X = np.zeros((n, self.d))
        cols = np.argsort(rng.random((n, k0)), axis=1)[:, :s]
        np.put_along_axis(X, cols, (2.0 * rng.integers(0, 2, size=(n, s)) - 1.0) / math.sqrt(s), axis=1)
        p = 1.0 / (1.0 + np.exp(-(X[:, :k0] @ self.w)))
        return X, np.where(rng.random(n) < p, 1.0, -1.0)


def z2_instance(d: int, n: int, *, lam: float, k0: int, s: int = 4, scale: float = 1.0,
                data_seed: int = 0) -> tuple[Any, Any]:
    """The Z2 problem (logistic loss over the l1 ball of radius sqrt(s)/(2 lam)) and one dataset of size n."""
    sampler = ActiveSetLogisticSampler(np.full(k0, scale), d, s)
    prob = LogisticRegression(L1Ball(d, math.sqrt(s) / (2.0 * lam)), 2.0, feature_bound=1.0, sampler=sampler,
                              population_size=10)
    return prob, prob.sample(n, np.random.default_rng(data_seed))


_Z2_OPTIMA: dict[tuple[str, float, int, int], float] = {}


def z2_optimum(prob: Any, data: Any, k0: int, iters: int = 4000) -> float:
    """Exact min of the empirical logistic risk over the l1 ball: the features vanish off the first k0
    coordinates, so it is the k0-dimensional problem (projected gradient with step 1/H, H = 1/4, run to
    stationarity; the returned value is within 1e-9 of the optimum on the notebook's instances).

    The value depends on ``d`` only through the data: :func:`z2_instance` draws the same first ``k0`` feature
    columns and labels for every ``d`` at one data seed, so each distinct (data, radius) pair is solved once
    per process (keyed by a hash of its bytes) and reused.
    """
    X, y = np.asarray(data.X)[:, :k0], np.asarray(data.y)
    R = float(prob.feasible_set.radius)
    key = (hashlib.sha256(np.ascontiguousarray(X).tobytes() + y.tobytes()).hexdigest(), R, int(k0), int(iters))
    if key not in _Z2_OPTIMA:
        _Z2_OPTIMA[key] = _z2_solve(X, y, R, iters)
    return _Z2_OPTIMA[key]


def _z2_solve(X: np.ndarray, y: np.ndarray, R: float, iters: int) -> float:
    """Projected gradient for :func:`z2_optimum` on the active columns ``X``."""
    k0 = X.shape[1]
    x = np.zeros(k0)
    for _ in range(iters):
        g = -(X * (y / (1.0 + np.exp(y * (X @ x))))[:, None]).mean(axis=0)
        x = project_l1_ball(x - 4.0 * g, R)
    return float(np.mean(np.logaddexp(0.0, -y * (X @ x))))


def z2_excess_task(*, rng: np.random.Generator, d: int, n: int, lam: float, k0: int, method: str,
                   f_star: float, epsilon: float = 1.0, label: str = "a") -> dict[str, float]:
    r"""One Z2 run on :func:`z2_instance` (``label`` names the data seed of the family member). ``method``:
    ``"op_l1proj"``, ``"op_noproj"`` (output perturbation, replace-one :math:`(\varepsilon, n^{-1.1})`) or
    ``"dp_sgd"`` (add/remove, calibrated for the replace-one target, re-certified through the conversion).
    Returns the excess empirical risk, the trivial excess (at 0), the distance to :math:`x_\lambda` and the
    replace-one certificate."""
    prob, data = z2_instance(d, n, lam=lam, k0=k0, data_seed=ord(label[0]))
    dlt = delta_for_n(n)

    def risk(x: np.ndarray) -> float:
        return float(np.mean(prob.loss(x, data)))

    if method == "dp_sgd":
        e_ar, d_ar = replace_one_target(epsilon, dlt)
        r = run_dp_sgd(prob, data, epsilon=e_ar, delta=d_ar, sampling_rate=0.05, steps=400, clip=1.0, step_size=0.3,
                       rng=rng, accountant="best")
        dist, cert = math.nan, replace_one_certificate(r, dlt)
    elif method in ("op_l1proj", "op_noproj"):
        r = run_output_perturbation(prob, data, epsilon=epsilon, delta=dlt, lam=lam, sparsity=prob.sampler.sparsity,
                                    rng=rng, project=method == "op_l1proj")
        dist, cert = float(np.linalg.norm(r.x - r.info["x_lambda"])), r.certified_epsilon(dlt)
    else:
        raise ValueError(f"method must be 'op_l1proj', 'op_noproj' or 'dp_sgd', got {method!r}")
    return {"excess": risk(r.x) - f_star, "trivial": risk(np.zeros(d)) - f_star, "distance": dist,
            "certified_eps": float(cert), "delta": dlt}


def z2_exponent_range(d_grid: Sequence[int], n: int, lam: float, s: int, method: str) -> tuple[float, float]:
    r"""Predicted exponent in d of :math:`\|x - x_\lambda\|_2`: 1/2 without projection (the Gaussian noise norm
    :math:`\sigma\sqrt d`, :math:`\sigma = m L/(\lambda n)`); with projection the range from 0 to the local slope of
    :math:`\min(\sigma\sqrt d, 2\sqrt{R\,\sigma\sqrt{2\ln(2d)}})`, :math:`R = \sqrt s/(2\lambda)`."""
    if method == "op_noproj":
        return 0.5, 0.5
    sig = gaussian_noise_multiplier(1.0, delta_for_n(n), accountant="gdp").value / (lam * n)
    R = math.sqrt(s) / (2.0 * lam)
    b = [min(sig * math.sqrt(d), 2.0 * math.sqrt(R * sig * math.sqrt(2.0 * math.log(2.0 * d)))) for d in d_grid]
    return 0.0, max(0.0, local_slope(d_grid, b))


def worst_ratio_at(records: Sequence[dict[str, Any]], where: dict[str, Any], y: str = "error",
                   family: str = "label") -> float:
    """Largest, over the family members, median of ``y`` divided by the member's trivial value (records matching
    ``where``): the learning ratio of the worst instance."""
    rr = [r for r in records if all(r[k] == v for k, v in where.items())]
    if not rr:
        raise ValueError(f"no record matches {dict(where)!r}")
    out = 0.0
    for g in sorted({r[family] for r in rr}):
        grp = [r for r in rr if r[family] == g]
        out = max(out, float(np.median([r[y] for r in grp])) / float(grp[0]["trivial"]))
    return out


# ---------------------------------------------------------------------------------------------------------
# Z3
# ---------------------------------------------------------------------------------------------------------
class LinearSparse:
    r"""The linear loss :math:`f(x; z) = \langle z, x\rangle` over the :math:`\ell_1` ball of radius 2 in
    :math:`\mathbb R^d`: the per-sample gradient is the record, so :math:`\nabla F_S = \bar z` exactly
    (:math:`L = 1` for unit-norm records)."""

    L0, L1, p = 1.0, 0.0, 2.0

    def __init__(self, d: int) -> None:
        self.d = check_int(d, "d", lo=1)
        self.feasible_set = L1Ball(self.d, 2.0)

    def grad(self, x: np.ndarray, data: Any) -> np.ndarray:
        """Per-sample gradients: the records themselves."""
        return np.asarray(data.X)

    def loss(self, x: np.ndarray, data: Any) -> np.ndarray:
        """Per-sample losses."""
        return np.asarray(data.X) @ x

    def mean_grad(self, x: np.ndarray, data: Any) -> np.ndarray:
        """Gradient of the empirical risk (the mean record)."""
        return np.asarray(data.X).mean(axis=0)


def bias_and_se(G: np.ndarray, target: np.ndarray) -> tuple[float, float]:
    r"""Monte-Carlo bias norm :math:`\|\bar G - t\|_2` of the draws ``G`` (one per row) and its standard error
    :math:`\|(\mathrm{sd}_j(G)/\sqrt M)_j\|_2` (population standard deviation per coordinate)."""
    G = np.asarray(G, dtype=np.float64)
    if G.ndim != 2 or G.shape[0] < 2:
        raise ValueError(f"G must be a 2-d array with at least 2 rows, got shape {G.shape}")
    b = G.mean(axis=0) - np.asarray(target, dtype=np.float64)
    se = G.std(axis=0) / math.sqrt(G.shape[0])
    return float(np.linalg.norm(b)), float(np.linalg.norm(se))


def bias_gap_z(bias_a: float, se_a: float, bias_b: float, se_b: float) -> float:
    r"""One-sided statistic :math:`z = (b_a - b_b)/\sqrt{s_a^2 + s_b^2}` for "estimator ``b`` is less biased
    than ``a``"; :math:`z \ge 3` has false-alarm probability about :math:`10^{-3}` if the biases were equal."""
    if se_a < 0 or se_b < 0 or se_a == se_b == 0:
        raise ValueError(f"standard errors must be >= 0 and not both 0, got {se_a}, {se_b}")
    return (float(bias_a) - float(bias_b)) / math.hypot(se_a, se_b)


def z3_bias_draws(n: int, d: int, s: int, *, draws: int, eps0: float, seed: int) -> dict[str, float]:
    r"""Z3 bias experiment on :class:`LinearSparse` with ``n`` random ``s``-sparse unit-norm records in
    :math:`\mathbb R^d` at :math:`x = 0`: ``draws`` bias-reduced gradients and ``draws`` single-record Z1
    estimates (Laplace, :math:`\varepsilon_0` per release). Returns both bias norms, their standard errors,
    :func:`bias_gap_z` and :math:`\|\nabla F_S\|_2`."""
    draws = check_int(draws, "draws", lo=2)
    Z = sample_sparse_vectors(n, d, s, 1.0, np.random.default_rng(seed)).toarray()
    lin, data, full = LinearSparse(d), Dataset(Z), Z.mean(axis=0)
    rng = np.random.default_rng(seed + 1)
    Gs = np.array([bias_reduced_gradient(lin, data, np.zeros(d), sparsity=s, eps0=eps0, rng=rng)[0]
                   for _ in range(draws)])
    G1 = np.array([sparse_mean_estimate(Z[[int(rng.integers(n))]], sparsity=s, norm_bound=1.0, epsilon=eps0,
                                        rng=rng).x for _ in range(draws)])
    (b_br, se_br), (b_1, se_1) = bias_and_se(Gs, full), bias_and_se(G1, full)
    return {"bias_br": b_br, "se_br": se_br, "bias_1": b_1, "se_1": se_1, "z": bias_gap_z(b_1, se_1, b_br, se_br),
            "grad_norm": float(np.linalg.norm(full)), "draws": float(draws)}


def z3_task(*, rng: np.random.Generator, n: int, eps0: float, data_seed: int, gamma: float = 1.0, d: int = 50,
            s: int = 2, epsilon: float = 1.0) -> dict[str, float]:
    r"""One bias-reduced DP-SGD run (``step_size="auto"``, filter budget :math:`(\varepsilon, n^{-1.1})`) on ``n``
    records of :class:`~dpsco_lib.problems.SparseHardLinear` (``d``, ``gamma``, sparsity ``s``, radius 1).
    Returns the steps admitted, the filter spend, the ledger certificate, whether the filter stopped the run, the
    step size, the population excess risk of the output and of the trivial output 0, and the variance part of
    projected SGD's guarantee :math:`R\hat\sigma/\sqrt T` at the run's realized :math:`T`."""
    prob = SparseHardLinear(d, gamma, sparsity=s, radius=1.0)
    data = prob.sample(n, np.random.default_rng(data_seed))
    dlt = delta_for_n(n)
    r = run_bias_reduced_dp_sgd(prob, data, epsilon=epsilon, delta=dlt, sparsity=s, step_size="auto", eps0=eps0,
                                rng=rng, max_steps=10**7)
    T = max(int(r.info["steps"]), 1)
    sig2 = bias_reduced_second_moment(n, d, sparsity=s, norm_bound=1.0, eps0=eps0)
    return {"steps": r.info["steps"], "filter_spent": r.info["filter_spent"], "ledger_eps": r.certified_epsilon(dlt),
            "stopped_by_filter": float(r.info["stopped_by_filter"]), "step_size": r.params["step_size"],
            "excess": prob.excess_risk(r.x), "trivial": prob.trivial_error, "bound": math.sqrt(sig2 / T),
            "delta": dlt}


def z3_rows(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    r"""One table row per ``n`` of :func:`z3_task` records: the admitted steps (min, median, max), the median step
    size, the median excess risk over the trivial excess, and the median variance term
    :math:`R\hat\sigma/\sqrt T` over the trivial excess."""
    rows = []
    for n in sorted({int(r["n"]) for r in records}):
        rr = [r for r in records if int(r["n"]) == n]
        if not rr:  # pragma: no cover - n is taken from the records
            continue
        st = [int(r["steps"]) for r in rr]
        triv = float(rr[0]["trivial"])
        rows.append({"n": n, "steps (min / median / max)": f"{min(st)} / {int(np.median(st))} / {max(st)}",
                     "step size (median)": f"{np.median([r['step_size'] for r in rr]):.2e}",
                     "median excess / trivial": round(float(np.median([r["excess"] for r in rr])) / triv, 3),
                     "R sigma/sqrt(T) / trivial (median)": round(float(np.median([r["bound"] for r in rr])) / triv, 3)})
    return rows


def check_z3(verdict: Any, records: Sequence[dict[str, Any]], bias: dict[str, float], *, epsilon: float) -> None:
    r"""The Z3 rows of the verdict: the one-sided bias test of :func:`z3_bias_draws` (``z >= 3``, false alarm about
    1e-3), "learns" (median excess / trivial at the largest ``n`` of :func:`z3_task` records at most 0.5), "falls with
    n" (that ratio at most 0.75 of the ratio at the smallest ``n``) and every run stopped by the filter within the
    budget ``epsilon``."""
    ns = sorted({int(r["n"]) for r in records})
    ratio = {n: worst_ratio_at(records, {"n": n}, y="excess", family="data_seed") for n in ns}
    m = int(bias["draws"])
    verdict.check_at_least(f"Z3 bias-reduced G less biased than single-record Z1 (one-sided z, M = {m})", bias["z"],
                           3.0, what="one-sided false alarm about 1e-3", fmt=".2f")
    verdict.check_at_most(f"Z3 learns at n = {ns[-1]} (median excess / trivial)", ratio[ns[-1]], 0.5,
                          what="0.5 x trivial")
    verdict.check_at_most(f"Z3 error falls with n (ratio at n = {ns[-1]} / at n = {ns[0]})",
                          ratio[ns[-1]] / ratio[ns[0]], 0.75, what="at most 0.75")
    verdict.check("Z3 every run stopped by the filter within budget",
                  all(r["stopped_by_filter"] == 1.0 and r["filter_spent"] <= epsilon for r in records),
                  f"max spend {max(r['filter_spent'] for r in records):.4f}", predicted=f"<= {epsilon}")
