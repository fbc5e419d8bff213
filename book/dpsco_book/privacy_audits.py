r"""White-box end-to-end privacy audits of the library's private algorithms (the book's audit chapter).

Each audit fixes a neighbouring pair of tiny data sets (``n`` records, a handful of steps), runs the
algorithm's runner once on it at :math:`\varepsilon = 1` to read the **certificate of the whole run** (the
ledger's :math:`\varepsilon` at the run's :math:`\delta`) and the noise the runner calibrated, then replays the
releases the privacy analysis accounts for, many runs at once, in both worlds:

* Gaussian releases (the Gaussian mechanism, noisy SGD, DP-SGD with sampling rate 1, noisy gradient descent
  and output perturbation, on linear losses): the auditor observes every noisy gradient (or the noisy output)
  :math:`g_t = \bar\nabla_t(S) + \sigma\xi_t`; the privacy loss of the pair is
  :math:`\sum_t \langle g_t - m_t, \Delta_t\rangle/\sigma^2` with :math:`\Delta_t = \bar\nabla_t(S_1) -
  \bar\nabla_t(S_0)` and :math:`m_t` their mid-point.
* DP-SGD with Poisson sampling: the canary's inclusion is the only signal; the privacy loss is
  :math:`\sum_t \ln(1 - q + q e^{(y_t - 1/2)/\sigma^2})` of the noisy sums :math:`y_t` along its gradient.
* The generalized Gaussian mechanism: the auditor observes the release; the statistic is its privacy loss.
* Poly-SFW: the analysis releases only the index selected by each report-noisy-min step (not the noisy score
  vector, which its per-step budget does not cover); the statistic is the sum over steps of the log likelihood
  ratio of the selected index, the selection laws estimated on independent reference draws.
* Algorithm 1: the runner's own vertex draws (``run_private_smd_saddle_many``); both worlds' entropic states
  are replayed at the released points for the exact likelihood ratio of the transcript.

The two samples of the statistic go to :func:`dpsco_lib.privacy.audit.tradeoff_audit` (whole trade-off curve,
simultaneous band). For Gaussian releases the pair's trade-off function is exactly :math:`G_\mu`, so the
:math:`\mu`-GDP lower bound converted to :math:`\varepsilon` at :math:`\delta` is a valid bound; for the other
mechanisms that conversion can exceed the pair's own :math:`\varepsilon` (it does for randomized response and
for the GG mechanism), so their rows report the assumption-free bound of the same band. The
half-noise variant (noise multiplier halved, or the per-step budget of a selection doubled) is defined in one
place, :func:`half_noise_variant`, and must be caught against the whole run's certificate.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from dpsco_book.privacy_rule import delta_for_n
from dpsco_lib.algorithms.dp_sgd import run_dp_sgd
from dpsco_lib.algorithms.noisy_sgd import run_noisy_sgd
from dpsco_lib.algorithms.poly_sfw import run_poly_sfw
from dpsco_lib.algorithms.private_smd_saddle import run_private_smd_saddle_many
from dpsco_lib.algorithms.registry import private_algorithms
from dpsco_lib.algorithms.regularized_exponential import run_noisy_gradient_descent
from dpsco_lib.algorithms.sparse import regularized_erm, run_output_perturbation
from dpsco_lib.privacy.accounting.gdp import gdp_epsilon
from dpsco_lib.privacy.audit import TradeoffAuditResult, tradeoff_audit
from dpsco_lib.privacy.mechanisms import (
    gaussian_epsilon_analytic,
    gaussian_mechanism,
    gaussian_sigma_analytic,
    generalized_gaussian_mechanism,
    gg_epsilon,
    gg_sigma_exact,
)
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.games import BilinearGame
from dpsco_lib.problems.hard_linear import hard_linear
from dpsco_lib.problems.lecture import LinearLossProblem

__all__ = [
    "AUDIT_KEYS",
    "AuditDesign",
    "AuditRow",
    "EPSILON",
    "audit_design",
    "audit_table",
    "design_for",
    "designs",
    "gdp_mu_of_claim",
    "half_noise_variant",
    "pair_epsilon",
    "pair_epsilons",
    "verdict_checks",
    "verdict_rows",
    "registry_coverage",
]

EPSILON = 1.0
"""The target epsilon of every audited run."""

Draw = Callable[[np.random.Generator, int, float], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class AuditDesign:
    r"""One white-box audit: the pair, what is observed, the certificate, and the sampler of the statistic.

    ``draw(rng, runs, noise_factor)`` returns the statistic on ``runs`` runs in world 0 and in world 1,
    with the calibrated noise scaled by ``noise_factor`` (1: the algorithm as certified; see
    :func:`half_noise_variant`). ``gaussian_releases``: the observations are Gaussian with a fixed mean
    shift, so the pair's trade-off function is exactly :math:`G_\mu` and the GDP conversion of the audit
    is a valid epsilon bound; otherwise only the assumption-free bound of the same band is.
    ``tight_certificate``: whether the certificate is expected to be (nearly) attained on the pair (False for
    the report-noisy-min steps of Poly-SFW, composed as pure steps, and the Renyi-certified GG mechanism).
    """

    key: str
    label: str
    gaussian_releases: bool
    n: int
    steps: int
    delta: float
    claimed_epsilon: float
    observed: str
    draw: Draw
    tight_certificate: bool = True


# ---------------------------------------------------------------------------------------------------------------
# The half-noise seam (the one place that says what "half the noise" means for each algorithm)
# ---------------------------------------------------------------------------------------------------------------
def half_noise_variant(record_key: str) -> float:
    """Noise factor of the broken variant of ``record_key``: 0.5 (Gaussian / GG noise multiplier halved;
    Laplace selection scale halved, i.e. per-step budget doubled). The draws scale the runner's calibrated
    noise by it; no runner hook is needed because the audits replay the releases at the runner's calibration.
    """
    if record_key not in _BUILDERS:
        raise ValueError(f"record_key must be one of {sorted(_BUILDERS)}, got {record_key!r}")
    return 0.5


# ---------------------------------------------------------------------------------------------------------------
# Gaussian releases
# ---------------------------------------------------------------------------------------------------------------
def _gaussian_path(means0: np.ndarray, means1: np.ndarray, sigma: np.ndarray) -> Draw:
    """Releases ``g_t = mean_t(S_b) + factor sigma_t xi_t`` (T, d); LR statistic at the certified sigma."""
    m0, m1 = np.atleast_2d(means0), np.atleast_2d(means1)
    sig = np.broadcast_to(np.asarray(sigma, dtype=np.float64), (m0.shape[0],))
    mid = (m0 + m1) / 2.0

    def draw(rng: np.random.Generator, runs: int, factor: float) -> tuple[np.ndarray, np.ndarray]:
        w = (m1 - m0) / (factor * sig[:, None]) ** 2
        out = []
        for m in (m0, m1):  # privacy loss ln p_1(g)/p_0(g) = sum_t <g_t - mid_t, Delta_t> / sigma_t^2
            noise = rng.standard_normal((runs,) + m.shape) * (factor * sig)[None, :, None]
            out.append(np.einsum("rtd,td->r", m[None] + noise - mid[None], w))
        return out[0], out[1]

    return draw


def _gaussian_mechanism_design(n: int) -> AuditDesign:
    """The Gaussian mechanism (P1) on a counting-style query of sensitivity 1, analytic calibration."""
    delta = delta_for_n(n)
    sigma = gaussian_sigma_analytic(1.0, epsilon=EPSILON, delta=delta)
    claim = gaussian_epsilon_analytic(sigma, sensitivity=1.0, delta=delta)
    v0, v1 = np.zeros(2), np.array([1.0, 0.0])

    def draw(rng: np.random.Generator, runs: int, factor: float) -> tuple[np.ndarray, np.ndarray]:
        s = factor * sigma  # privacy loss of the release z: (z_1 - 1/2) / s^2
        return tuple((gaussian_mechanism(v, sigma=s, rng=rng, size=runs)[:, 0] - 0.5) / s**2 for v in (v0, v1))

    return AuditDesign("P1 Gaussian mechanism", "Gaussian mechanism", True, n, 1, delta, claim,
                       "the release f(S) + N(0, sigma^2 I)", draw)


def _gg_mechanism_design(n: int, q: float = 3.0, d: int = 8) -> AuditDesign:
    """The GG mechanism (G1) in l_q, q = 3 (kappa = q - 1), sensitivity 1 along the diagonal (the direction
    of largest Euclidean length at unit l_q norm), calibrated by its Renyi bound (``gg_sigma_exact``)."""
    delta, kappa = delta_for_n(n), q - 1.0
    sigma = gg_sigma_exact(1.0, epsilon=EPSILON, delta=delta, kappa=kappa)
    claim = gg_epsilon(sigma, sensitivity=1.0, delta=delta, kappa=kappa)
    a0, a1 = np.zeros(d), np.full(d, float(d) ** (-1.0 / q))

    def loss(z: np.ndarray, s: float) -> np.ndarray:  # privacy loss ln p_1(z)/p_0(z) at scale s
        n0 = np.sum(np.abs(z - a0) ** q, axis=1) ** (2 / q)
        n1 = np.sum(np.abs(z - a1) ** q, axis=1) ** (2 / q)
        return (n0 - n1) / (2.0 * s * s)

    def draw(rng: np.random.Generator, runs: int, factor: float) -> tuple[np.ndarray, np.ndarray]:
        z = [generalized_gaussian_mechanism(a, q=q, sigma=factor * sigma, rng=rng, size=runs) for a in (a0, a1)]
        return loss(z[0], factor * sigma), loss(z[1], factor * sigma)

    return AuditDesign("G1 generalized Gaussian mechanism", "generalized Gaussian mechanism (q = 3, d = 8)", False,
                       n, 1, delta, claim, "the release f(S) + GG_q(sigma)", draw, tight_certificate=False)


def _linear_pair(n: int, d: int, p: float) -> tuple[object, Dataset, Dataset]:
    """Linear losses <z, x> on the unit lp ball; records alternate +-e_2 and the canary is +u vs -u."""
    prob = hard_linear(d, 0.5, radius=1.0, p=p)
    u = np.ones(d) if p == 1.0 else np.eye(d)[0]
    X = np.zeros((n, d))
    X[:, -1] = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    if p == 1.0:
        X[:, :-1] = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)[:, None]
    X[0] = u
    S0 = Dataset(X, None)
    return prob, S0, S0.replace_one(0, (-u, None))


def _noisy_sgd_design(n: int, steps: int = 4, d: int = 2) -> AuditDesign:
    """Noisy SGD (S2), full batches (one Gaussian per epoch), linear losses: the gradient is data-only."""
    delta = delta_for_n(n)
    prob, S0, S1 = _linear_pair(n, d, 2.0)
    res = run_noisy_sgd(prob, S0, epsilon=EPSILON, delta=delta, rng=np.random.default_rng(0), steps=steps,
                        batch_size=n)
    sigma = float(res.params["sigma"])
    x = np.zeros(d)
    means0 = np.tile(prob.mean_grad(x, S0), (steps, 1))
    means1 = np.tile(prob.mean_grad(x, S1), (steps, 1))
    return AuditDesign("S2 noisy SGD", "noisy SGD", True, n, steps, delta, res.certified_epsilon(delta),
                       "every noisy gradient (full batch)", _gaussian_path(means0, means1, np.full(steps, sigma)))


def _dp_sgd_design(n: int, steps: int = 4, d: int = 2, clip: float = 1.0) -> AuditDesign:
    """DP-SGD (D4) with sampling rate 1 under add/remove: S_1 = S_0 plus a canary whose gradient has norm C."""
    delta = delta_for_n(n)
    prob, S0, _ = _linear_pair(n, d, 2.0)
    S1 = Dataset(np.vstack([S0.X, np.eye(d)[:1]]), None)  # add/remove: the canary's gradient has norm C = 1
    res = run_dp_sgd(prob, S0, epsilon=EPSILON, delta=delta, rng=np.random.default_rng(0), sampling_rate=1.0,
                     steps=steps, clip=clip, step_size=0.1)
    denom, std = float(res.params["normalizer"]), float(res.params["noise_multiplier"]) * clip
    x = np.zeros(d)

    def clipped_sum(S: Dataset) -> np.ndarray:  # sum of per-record gradients clipped to l2 norm C
        g = prob.grad(x, S)
        return (g * np.minimum(1.0, clip / np.maximum(np.linalg.norm(g, axis=1), 1e-300))[:, None]).sum(axis=0)

    g0, g1 = clipped_sum(S0), clipped_sum(S1)
    means0, means1 = np.tile(g0 / denom, (steps, 1)), np.tile(g1 / denom, (steps, 1))
    return AuditDesign("D4 DP-SGD", "DP-SGD (q = 1)", True, n, steps, delta, res.certified_epsilon(delta),
                       "every noisy clipped-gradient sum", _gaussian_path(means0, means1, np.full(steps, std / denom)))


def _dp_sgd_subsampled_design(n: int, steps: int = 16, q: float = 0.25, d: int = 2) -> AuditDesign:
    """DP-SGD (D4) with Poisson sampling rate q under add/remove: every record of S_0 is 0 (its inclusion
    changes nothing), S_1 adds the canary e_1 (gradient norm C = 1), so the noisy sum of step t is
    y_t = I_t + sigma xi_t along e_1 (in units of C) with I_t ~ Bernoulli(q) in world 1 and 0 in world 0, and the
    privacy loss is sum_t ln(1 - q + q exp((y_t - 1/2) / sigma^2))."""
    delta = delta_for_n(n)
    prob = hard_linear(d, 0.5, radius=1.0, p=2.0)
    S0 = Dataset(np.zeros((n, d)), None)
    res = run_dp_sgd(prob, S0, epsilon=EPSILON, delta=delta, rng=np.random.default_rng(0), sampling_rate=q,
                     steps=steps, clip=1.0, step_size=0.1, accountant="pld")  # the tightest here; ~15 s to solve
    sigma = float(res.params["noise_multiplier"])

    def draw(rng: np.random.Generator, runs: int, factor: float) -> tuple[np.ndarray, np.ndarray]:
        s = factor * sigma
        out = []
        for world in (0, 1):
            y = rng.standard_normal((runs, steps)) * s + world * (rng.random((runs, steps)) < q)
            out.append(np.logaddexp(math.log1p(-q), math.log(q) + (y - 0.5) / s**2).sum(axis=1))
        return out[0], out[1]

    return AuditDesign("D4 DP-SGD subsampled", f"DP-SGD (q = {q:g}, {steps} steps)", False, n, steps, delta,
                       res.certified_epsilon(delta), "every noisy clipped-gradient sum", draw)


def _noisy_gd_design(n: int, steps: int = 4, d: int = 2) -> AuditDesign:
    """Noisy gradient descent (R2 baseline) on the linear loss G<z, x>, canary e_1 against -e_1: every
    step's full-batch gradient moves by the sensitivity 2G/n the calibration charges for."""
    delta = delta_for_n(n)
    prob = LinearLossProblem(d)
    X = np.zeros((n, d))
    X[0, 0] = 1.0
    X1 = X.copy()
    X1[0, 0] = -1.0
    res = run_noisy_gradient_descent(prob, X, epsilon=EPSILON, delta=delta, rng=np.random.default_rng(0),
                                     n_steps=steps)
    x = np.zeros((1, d))
    means0, means1 = (np.tile(prob.gradient(x, S)[0], (steps, 1)) for S in (X, X1))
    return AuditDesign("R2 noisy GD", "noisy gradient descent", True, n, steps, delta, res.certified_epsilon(delta),
                       "every noisy gradient", _gaussian_path(means0, means1, np.full(steps, res.params["noise_std"])))


def _output_perturbation_design(n: int, d: int = 2, lam: float = 0.5) -> AuditDesign:
    """Output perturbation (Z2), Gaussian version, on linear losses: the regularized minimizer
    -z_bar/(2 lam) moves by exactly its sensitivity L/(lam n) when the canary e_1 becomes -e_1. The analysis
    releases the noisy minimizer; its projection on the l1 ball is post-processing."""
    delta = delta_for_n(n)
    prob, S0, S1 = _linear_pair(n, d, 2.0)
    res = run_output_perturbation(prob, S0, epsilon=EPSILON, delta=delta, lam=lam, sparsity=1,
                                  rng=np.random.default_rng(0))
    means0, means1 = (regularized_erm(prob, S, lam)[0][None, :] for S in (S0, S1))
    return AuditDesign("Z2 output perturbation", "output perturbation", True, n, 1, delta,
                       res.certified_epsilon(delta), "the noisy regularized minimizer",
                       _gaussian_path(means0, means1, np.array([res.params["noise_scale"]])))


# ---------------------------------------------------------------------------------------------------------------
# Report-noisy-min selections (Poly-SFW)
# ---------------------------------------------------------------------------------------------------------------
def _vertex_scores(grads: np.ndarray, radius: float) -> np.ndarray:
    """Scores <v, nabla_t> of the 2d vertices +-r e_i of the l1 ball, shape (T, 2d)."""
    return np.hstack([radius * grads, -radius * grads])


def _selection_draw(scores0: np.ndarray, scores1: np.ndarray, scales: np.ndarray, reference: int = 100_000,
                    seed: int = 12345) -> Draw:
    """Report-noisy-min with Laplace(scale_t) noise; statistic = sum_t log P_1(j_t) / P_0(j_t).

    The per-step selection laws are estimated on ``reference`` independent draws (a fixed generator), so the
    statistic is a fixed function of the selections and the audit on fresh runs stays valid.
    """
    def select(rng: np.random.Generator, s: np.ndarray, sc: np.ndarray, runs: int) -> np.ndarray:
        noise = rng.laplace(size=(runs,) + s.shape) * sc[None, :, None]
        return np.argmin(s[None] + noise, axis=2)  # (runs, T)

    T, k = scores0.shape
    tables: dict[float, np.ndarray] = {}

    def llr(factor: float) -> np.ndarray:
        if factor not in tables:
            ref = np.random.default_rng(seed)
            probs = []
            for s in (scores0, scores1):
                j = select(ref, s, factor * scales, reference)
                probs.append(np.stack([np.bincount(j[:, t], minlength=k) for t in range(T)]) + 0.5)  # smoothing
            tables[factor] = np.log(probs[1] / probs[1].sum(1, keepdims=True)) - \
                np.log(probs[0] / probs[0].sum(1, keepdims=True))
        return tables[factor]

    def draw(rng: np.random.Generator, runs: int, factor: float) -> tuple[np.ndarray, np.ndarray]:
        table = llr(factor)
        out = [select(rng, s, factor * scales, runs) for s in (scores0, scores1)]
        return tuple(table[np.arange(T)[None, :], j].sum(axis=1) for j in out)

    return draw


def _poly_sfw_design(n: int, d: int = 10, step_size: float | None = None) -> AuditDesign:
    """Poly-SFW (F1), linear losses on the unit l1 ball in R^10 (20 vertices).

    The canary z = (1, ..., 1) against -z sits in the first batch; every other record is 0, so the
    midpoint of the two worlds' gradient estimates is 0 and the scores of the vertices +e_i and -e_i move
    by +-(1 - eta)^t L0 D / m: each step's full sensitivity s_t as long as eta <= (1 - eta)^T / m. With
    many vertices the competing minimum sits in the exponential tail of the Laplace law, where the choice
    between the two groups of vertices is a randomized response with log-odds +-eps0/2: the worst case of
    report-noisy-min, which the optimal composition of the certificate treats as tight.
    """
    delta = delta_for_n(n)
    prob = hard_linear(d, 0.5, radius=1.0, p=1.0)
    X = np.zeros((n, d))
    X[0] = 1.0
    S0 = Dataset(X, None)
    S1 = S0.replace_one(0, (-np.ones(d), None))
    m = n - n // 2
    eta = 1.0 / (2.0 * m) if step_size is None else step_size  # (1 - 1/(2m))^T / m >= 1/(2m) for T <= m
    res = run_poly_sfw(prob, S0, epsilon=EPSILON, delta=delta, rng=np.random.default_rng(0), step_size=eta,
                       trace=True)
    T, m, eta = int(res.params["T"]), int(res.params["batch_size"]), float(res.params["step_size"])
    scales = np.asarray(res.trace["laplace_scale"], dtype=np.float64)
    scores = []
    for S in (S0, S1):
        nab = S.X[:m].mean(axis=0)
        rows = [nab]
        for t in range(1, T + 1):
            nab = (1.0 - eta) * nab + eta * S.X[m + t - 1]  # linear losses: g_new - g_old = 0
            rows.append(nab)
        scores.append(_vertex_scores(np.array(rows), 1.0))
    return AuditDesign("F1 Poly-SFW", "Poly-SFW (report-noisy-min)", False, n, T + 1, delta,
                       res.certified_epsilon(delta), "every selected vertex index",
                       _selection_draw(scores[0], scores[1], scales), tight_certificate=False)


# ---------------------------------------------------------------------------------------------------------------
# Exponential-mechanism vertex draws (Algorithm 1)
# ---------------------------------------------------------------------------------------------------------------
def _log_softmax(z: np.ndarray) -> np.ndarray:
    m = z.max(axis=1, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=1, keepdims=True))


def _alg1_transcript_loss(game: BilinearGame, worlds: tuple[Dataset, Dataset], draws: tuple[np.ndarray, np.ndarray],
                          eta: float, B: int) -> np.ndarray:
    """ln p_1/p_0 of the released vertices (R, T, K) of both players: both worlds' entropic states are replayed
    at the released points (x~_t, y~_t), and every draw adds its log-probability ratio."""
    dxs, dys = draws
    R, T, K = dxs.shape
    rows = np.arange(R)[:, None]
    states = [[np.full((R, game.dx), -math.log(game.dx)), np.full((R, game.dy), -math.log(game.dy))]
              for _ in worlds]
    loss = np.zeros(R)
    for t in range(T):
        for p, dr in enumerate((dxs[:, t], dys[:, t])):
            loss += (states[1][p][rows, dr] - states[0][p][rows, dr]).sum(axis=1)
        if t == T - 1:
            break
        xt = np.stack([np.bincount(r, minlength=game.dx) for r in dxs[:, t]]) / K
        yt = np.stack([np.bincount(r, minlength=game.dy) for r in dys[:, t]]) / K
        for st, S in zip(states, worlds, strict=True):
            batch = S[t * B:(t + 1) * B]
            st[0] = _log_softmax(st[0] - eta * game.grad_x(xt, yt, batch).mean(axis=1))
            st[1] = _log_softmax(st[1] + eta * game.grad_y(xt, yt, batch).mean(axis=1))
    return loss


def _alg1_design(n: int) -> AuditDesign:
    """Algorithm 1 (A1) on the 2 x 2 game with per-record payoff u v^T (A = 0, noise 1, so L0 = 1), K = 1,
    T = n (batches of one record). The canary (u, v) = ((1, -1), (1, -1)) against (-u, v) is the first batch;
    every other record is 0. Every later draw of either player then sees its two scores move by the full
    sensitivity eta L0 / B in opposite directions. The step is the privacy cap eta = eps0 B / (4 L0), so the
    ledger's 2 K T exponential-mechanism draws certify exactly eps; the draws of step 1 carry no canary."""
    delta, T = delta_for_n(n), n
    game = BilinearGame(np.zeros((2, 2)), noise=1.0)
    X = np.zeros((n, 4))
    X[0] = [1.0, -1.0, 1.0, -1.0]
    S0 = Dataset(X, None)
    S1 = S0.replace_one(0, (np.array([-1.0, 1.0, 1.0, -1.0]), None))
    kw = {"epsilon": EPSILON, "delta": delta, "regime": "quadratic", "K": 1, "T": T}
    probe = run_private_smd_saddle_many(game, S0, n_runs=1, rng=np.random.default_rng(0), **kw)
    eta, B = float(probe["params"]["eta_cap"]), int(probe["params"]["B"])
    claim = run_private_smd_saddle_many(game, S0, n_runs=1, rng=np.random.default_rng(0), step_size=eta,
                                        **kw)["ledger"].epsilon(delta)

    def draw(rng: np.random.Generator, runs: int, factor: float) -> tuple[np.ndarray, np.ndarray]:
        e = eta / factor  # half the noise of a selection = twice the step (per-draw budget doubled)
        out = []
        for S in (S0, S1):
            res = run_private_smd_saddle_many(game, S, n_runs=runs, rng=rng, step_size=e,
                                              enforce_privacy_cap=False, **kw)
            out.append(_alg1_transcript_loss(game, (S0, S1), (res["draws_x"], res["draws_y"]), e, B))
        return out[0], out[1]

    return AuditDesign("A1 private SMD saddle", "Algorithm 1 (private SMD, vertex draws)", False, n, 2 * T, delta,
                       claim, "every drawn vertex of both players (the runner's own draws)", draw)


_BUILDERS: dict[str, Callable[[int], AuditDesign]] = {
    "P1 Gaussian mechanism": _gaussian_mechanism_design,
    "G1 generalized Gaussian mechanism": _gg_mechanism_design,
    "S2 noisy SGD": _noisy_sgd_design,
    "D4 DP-SGD": _dp_sgd_design,
    "D4 DP-SGD subsampled": _dp_sgd_subsampled_design,
    "R2 noisy GD": _noisy_gd_design,
    "Z2 output perturbation": _output_perturbation_design,
    "F1 Poly-SFW": _poly_sfw_design,
    "A1 private SMD saddle": _alg1_design,
}
AUDIT_KEYS: tuple[str, ...] = tuple(_BUILDERS)
"""Every audit design's key: registry keys, plus the two mechanisms and subsampled DP-SGD."""


def design_for(key: str, n: int = 10) -> AuditDesign:
    """The white-box audit design of ``key`` (a registry key or a mechanism key) with ``n`` records
    (built once per ``(key, n)``: the runner's certificate and the selection laws are reused)."""
    if key not in _BUILDERS:
        raise ValueError(f"key must be one of {sorted(_BUILDERS)}, got {key!r}")
    return _cached_design(key, n)


@functools.lru_cache(maxsize=64)
def _cached_design(key: str, n: int) -> AuditDesign:
    return _BUILDERS[key](n)


def designs(n: int = 10, keys: tuple[str, ...] | None = None) -> tuple[AuditDesign, ...]:
    """The audit designs of ``keys`` (default: every one, :data:`AUDIT_KEYS`)."""
    return tuple(design_for(k, n) for k in (AUDIT_KEYS if keys is None else keys))


_THROUGH = {  # registry algorithms whose every privacy release is made by an audited runner
    "X2 group-robust": "A1 private SMD saddle",  # run_private_smd_saddle on the lifted game
    "X2 group-blind ERM": "F1 Poly-SFW",  # run_poly_sfw on the pooled logistic problem
}


def registry_coverage() -> list[dict[str, object]]:
    """The registry's private algorithms: ``audited`` (a white-box audit here), ``through`` (the audited runner
    that makes all of its releases, or None)."""
    return [{"algorithm": r.key, "audited": r.key in _BUILDERS, "through": _THROUGH.get(r.key)}
            for r in private_algorithms()]


# ---------------------------------------------------------------------------------------------------------------
# Running the audits
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AuditRow:
    """One row of the verdict table.

    ``epsilon_lower_bound`` is the valid bound: the GDP conversion when the releases are Gaussian, the
    assumption-free bound otherwise (``epsilon_lower_bound_gdp`` then only shows what the Gaussian
    approximation of Nasr et al. would claim). ``quarter_noise_epsilon_lower_bound`` (a quarter of the
    noise) is audited for the rows whose certificate is not expected to be tight only (NaN otherwise).
    """

    key: str
    label: str
    gaussian_releases: bool
    tight_certificate: bool
    n: int
    steps: int
    delta: float
    claimed_epsilon: float
    runs: int
    alpha: float
    mu_lower_bound: float
    epsilon_lower_bound: float
    epsilon_lower_bound_gdp: float
    tightness: float
    half_noise_epsilon_lower_bound: float
    caught: bool
    quarter_noise_epsilon_lower_bound: float
    seconds: float
    observed: str


def _valid_bound(res: TradeoffAuditResult, gaussian: bool) -> float:
    return res.epsilon_lower_bound if gaussian else res.epsilon_lower_bound_direct


def audit_design(design: AuditDesign, runs: int, rng: np.random.Generator, *, alpha: float = 0.05
                 ) -> tuple[AuditRow, TradeoffAuditResult]:
    """Audit ``design`` as certified and its half-noise variant on ``runs`` runs per world each (and, without
    Gaussian releases, a quarter-noise variant)."""
    t0 = time.perf_counter()
    g, claim = design.gaussian_releases, design.claimed_epsilon

    def audit(factor: float) -> TradeoffAuditResult:
        return tradeoff_audit(*design.draw(rng, runs, factor), delta=design.delta, alpha=alpha,
                              claimed_epsilon=claim)

    honest, broken = audit(1.0), audit(half_noise_variant(design.key))
    quarter = math.nan if design.tight_certificate else _valid_bound(audit(0.25), g)
    lb, half = _valid_bound(honest, g), _valid_bound(broken, g)
    row = AuditRow(design.key, design.label, g, design.tight_certificate, design.n, design.steps, design.delta,
                   claim, runs, alpha, honest.mu_lower_bound, lb, honest.epsilon_lower_bound, lb / claim, half,
                   half > claim, quarter, time.perf_counter() - t0, design.observed)
    return row, honest


def audit_table(runs: int, seed: int, *, n: int = 10, alpha: float = 0.05, keys: tuple[str, ...] | None = None
                ) -> tuple[list[dict[str, object]], dict[str, TradeoffAuditResult]]:
    """Audit every design (or ``keys``); one row per algorithm and the honest audits' curves by key."""
    rng = np.random.default_rng(seed)
    rows, curves = [], {}
    for key in keys if keys is not None else AUDIT_KEYS:
        row, res = audit_design(design_for(key, n), runs, rng, alpha=alpha)
        rows.append(row.__dict__)
        curves[key] = res
    return rows, curves


def gdp_mu_of_claim(epsilon: float, delta: float) -> float:
    r"""The :math:`\mu` whose GDP curve has :math:`\varepsilon_\mu(\delta) =` ``epsilon`` (the claimed trade-off
    curve :math:`G_\mu` of a certificate that is exact for Gaussian noise; Dong, Roth and Su 2022, Cor. 2.13)."""
    return float(optimize.brentq(lambda m: gdp_epsilon(m, delta=delta) - epsilon, 1e-6, 50.0, xtol=1e-10))


def pair_epsilon(design: AuditDesign, rng: np.random.Generator, *, samples: int = 400_000,
                 noise_factor: float = 1.0) -> float:
    r"""The epsilon at ``design.delta`` of the audited pair itself (no test, no confidence): the statistics
    are the privacy loss :math:`L = \ln p_1/p_0` of the observation, so
    :math:`\delta(\varepsilon) = \mathbb E_1[(1 - e^{\varepsilon - L})_+]` (and the mirror direction with
    :math:`-L` under world 0), estimated on ``samples`` draws and inverted by bisection. What an audit with
    unlimited runs would find; the gap to the certificate is the certificate's slack on this pair.
    ``noise_factor`` scales the calibrated noise (0.5: the half-noise variant).
    """
    s0, s1 = design.draw(rng, samples, noise_factor)

    def delta_at(eps: float) -> float:
        return max(float(np.mean(-np.expm1(np.minimum(eps - loss, 0.0)))) for loss in (s1, -s0))

    if delta_at(0.0) <= design.delta:
        return 0.0
    return float(optimize.brentq(lambda e: delta_at(e) - design.delta, 0.0, 50.0, xtol=1e-4))


def pair_epsilons(n: int, rng: np.random.Generator, *, samples: int = 200_000, keys: tuple[str, ...] | None = None
                  ) -> dict[str, tuple[float, float]]:
    """``{key: (pair eps as certified, pair eps with half the noise)}`` for the designs of ``keys`` (default:
    every one), by :func:`pair_epsilon`."""
    out = {}
    for key in AUDIT_KEYS if keys is None else keys:
        d = design_for(key, n)
        out[key] = (pair_epsilon(d, rng, samples=samples),
                    pair_epsilon(d, rng, samples=samples, noise_factor=half_noise_variant(key)))
    return out


def verdict_rows(rows: list[dict[str, object]], pair: dict[str, tuple[float, float]]) -> list[dict[str, object]]:
    """The verdict table: claim, valid lower bound with its confidence, tightness, the pair's own epsilon (as
    certified and with half the noise), the half-noise lower bound and whether it is caught."""
    out = []
    for r in rows:
        conf = f"{100 * (1 - float(r['alpha'])):.0f}%"
        out.append({
            "algorithm": r["label"], "runs/world": r["runs"], "claimed eps": r["claimed_epsilon"],
            f"lower bound [{conf}]": r["epsilon_lower_bound"],
            "bound": "GDP (Gaussian releases)" if r["gaussian_releases"] else "assumption-free",
            "tightness": r["tightness"], "pair eps": pair[str(r["key"])][0],
            "half-noise lower bound": r["half_noise_epsilon_lower_bound"],
            "half-noise pair eps": pair[str(r["key"])][1], "caught?": "yes" if r["caught"] else "no",
        })
    return out


def verdict_checks(verdict: object, rows: list[dict[str, object]], pair: dict[str, tuple[float, float]], *,
                   paper: bool) -> None:
    """Record the verdict's checks on ``verdict`` (a :class:`dpsco_lib.experiments.Verdict`).

    Every row: the honest lower bound stays below the claim (negative control). Rows whose certificate is
    expected to be tight: the pair's own epsilon is at least half the claim, the audit is tight (>= 0.5 x
    claim at the paper size, >= 0.4 x claim at the smoke size) and the half-noise variant is caught. The
    other rows (slack certificate, pair eps < 0.5 claim, checked): at the paper size the audit must reach
    half the pair's own epsilon; a half-noise variant that is still private on the pair must not be flagged,
    one that is not must come within 20% of the claim (paper size); the quarter-noise variant must be caught.
    """
    for r in rows:
        key, claim = str(r["key"]), float(r["claimed_epsilon"])
        lb, half = float(r["epsilon_lower_bound"]), float(r["half_noise_epsilon_lower_bound"])
        p1, ph = pair[key]
        verdict.check_at_most(f"{key}: lower bound <= claim", lb, claim, what="negative control")
        if r["tight_certificate"]:
            verdict.check_at_least(f"{key}: pair eps", p1 / claim, 0.5, what="x claim, certificate near tight")
            need = 0.5 if paper else 0.4  # smoke: 10,000 runs a world, the band alone costs ~0.1 of mu
            verdict.check_at_least(f"{key}: tightness", lb / claim, need, what="of the whole run's claim")
            verdict.check(f"{key}: half noise caught", bool(r["caught"]), f"{half:.3g}", predicted=f"> {claim:.3g}")
            continue
        verdict.check_at_most(f"{key}: pair eps", p1 / claim, 0.5, what="the certificate's slack on the pair")
        if paper:
            verdict.check_at_least(f"{key}: tight against the pair", lb / p1, 0.5, what="lower bound / pair eps")
        if ph <= claim:
            verdict.check_at_most(f"{key}: half noise is private, not flagged", half, claim,
                                  what=f"its pair eps {ph:.3g} <= claim")
        elif paper:
            verdict.check_at_least(f"{key}: half-noise lower bound", half, 0.8 * claim,
                                   what=f"0.8 x claim; its pair eps is {ph:.3g}")
        verdict.check(f"{key}: quarter noise caught", float(r["quarter_noise_epsilon_lower_bound"]) > claim,
                      f"{float(r['quarter_noise_epsilon_lower_bound']):.3g}", predicted=f"> {claim:.3g}")
