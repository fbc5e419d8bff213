r"""Projected noisy SGD in l2 with Gaussian noise: the DP-SGD baseline (Spec S2; BFTT19).

Problem: ``min_{x in X} F(x) = E_z f(x, z)`` over the problem's feasible set, run in the *Euclidean*
geometry whatever the problem's setup norm ``p``: Euclidean projection ``X.project``, Gaussian noise,
l2 sensitivities.

l2 constants of the problem (the "mapping to l2"). The noise must be calibrated to a data-independent
bound on ``||grad f(x, z)||_2``. From the declared ``||grad f||_q <= L0`` (q dual to p), norm equivalence
gives ``L0_2 = L0 d^{max(0, 1/2 - 1/q)}`` (``sqrt(d) L0`` for the l1 setup, q = inf), and the
Euclidean diameter is ``D_2 = X.diameter(2)`` (``2r`` for the l1 ball of radius r, ``sqrt 2`` for the
simplex). We run on ``X`` itself rather than on the l2 ball containing it (radius r for the l1 ball,
same ``D_2``): projecting onto the smaller convex set that contains the optimum never increases the
distance to it, and the outputs stay feasible, so the exact population risk applies. These constants
are what an l2 method pays on an l1 problem; with them the l2 rate
``L0_2 D_2 (1/sqrt n + sqrt(d ln(1/delta))/(eps n))`` carries the ``sqrt(d)`` (and more, through
``L0_2``) that Poly-SFW (Spec F1) avoids.

Algorithm. ``x_1`` = the centre of ``X``; for ``t = 1..T``:
``x_{t+1} = Proj_X(x_t - eta (mean_{z in B_t} grad f(x_t, z) + N(0, sigma^2 I_d)))``; output the
average ``x_bar = (1/T) sum_{t=1}^T x_{t+1}``.

Parameters (the choice of BFTT19's mini-batch noisy SGD for smooth convex losses, their Section 3):

* steps ``T = max(1, min(floor(n/8), floor(n^2 eps^2 / (32 d ln(1/delta)))))``;
* batch size ``b = min(n, max(1, floor(n sqrt(eps / (4T)))))``;
* step size ``eta = D_2 / (G sqrt T)`` with ``G^2 = L0_2^2 + d sigma^2`` (the second moment of the noisy
  gradient), which minimizes the averaged projected-SGD bound ``D_2^2/(2 eta T) + eta G^2/2 = D_2 G/sqrt T``.

Batches and privacy (replace-one neighbours). BFTT19 sample batches with replacement and use the moments
accountant; our accountant's subsampled-Gaussian RDP holds for Poisson sampling under add/remove, not
for the library's replace-one relation. So we use *shuffled disjoint batches*: each epoch draws a fresh
random permutation and cuts it into ``floor(n/b)`` batches, ``E = ceil(T / floor(n/b))`` epochs. A
record lies in at most one batch per epoch; in every other step of that epoch both neighbouring runs
compute the same update given the past, so an epoch costs one Gaussian mechanism of l2 sensitivity
``2 L0_2 / b`` (parallel composition, adaptively), and the run is the adaptive composition of ``E``
Gaussian mechanisms with noise multiplier ``nu = sigma b / (2 L0_2)``. That composition is exactly a
Gaussian mechanism with multiplier ``nu / sqrt E`` (mu-GDP, DRS22), so the smallest ``nu`` that is
``(eps, delta)``-DP is ``nu = sqrt(E) * nu_1`` with ``nu_1`` the analytic Gaussian multiplier (Balle-Wang,
exact). The noise is solved by the privacy budget path: ``calibrate`` over the ``E`` Gaussian events the
ledger records (``accountant="gdp"`` by default, which is that exact curve), so
``result.certified_epsilon(delta) <= eps`` by construction.
(Without amplification by subsampling the per-step noise std on the batch mean is
``2 L0_2 nu_1 sqrt(T) / sqrt(n b)`` with ``nu_1`` as above, larger than BFTT19's
``~ L0_2 sqrt(T ln(1/delta)) / (n eps)`` by a factor of order ``sqrt(n / b)``: no loss with full batches
``b = n``, where every step is one Gaussian mechanism of sensitivity ``2 L0_2 / n`` and the ``T`` steps compose
exactly. With BFTT19's batch ``b = n sqrt(eps / (4T))`` the error therefore does not reach Spec S2's privacy term;
notebook 05 checks S2 with ``batch_size=n`` (BFTT19's ``T`` and step size), which is cheap in the privacy-limited
regime where ``T`` is small, and shows the default batch as an illustration.)

The library works in the idealized real-arithmetic model with float64 noise from a non-cryptographic RNG.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dpsco_lib._validation import check_bool, check_delta, check_epsilon, check_int, check_positive, check_rng
from dpsco_lib.algorithms._result import Result
from dpsco_lib.geometry.norms import dual_exponent
from dpsco_lib.privacy.accounting import PrivacyLedger
from dpsco_lib.privacy.accounting.budget import check_accountant, gaussian_noise_multiplier
from dpsco_lib.problems.base import Problem
from dpsco_lib.problems.dataset import Dataset

__all__ = ["NoisySgdParams", "l2_constants", "noisy_sgd_theory_params", "run_noisy_sgd"]


def l2_constants(problem: Problem) -> tuple[float, float]:
    """``(L0_2, D_2)``: the l2 Lipschitz bound ``L0 d^max(0, 1/2 - 1/q)`` and the Euclidean diameter of X."""
    if not isinstance(problem, Problem):
        raise ValueError(f"problem must be a dpsco_lib.problems.Problem, got {type(problem).__name__}")
    q = dual_exponent(problem.p)
    inv_q = 0.0 if math.isinf(q) else 1.0 / q
    L0_2 = float(problem.L0) * float(problem.d) ** max(0.0, 0.5 - inv_q)
    return L0_2, float(problem.feasible_set.diameter(2.0))


@dataclass(frozen=True)
class NoisySgdParams:
    """Parameters of noisy SGD (Spec S2) fixed by BFTT19 and the exact noise calibration.

    Attributes
    ----------
    T : int
        Steps.
    batch_size : int
        ``b``.
    batches_per_epoch : int
        ``floor(n / b)``.
    epochs : int
        ``E = ceil(T / batches_per_epoch)``: the number of Gaussian mechanisms the ledger records.
    noise_multiplier : float
        ``nu``: the calibrated multiplier of one epoch's Gaussian mechanism (sensitivity ``2 L0_2 / b``).
    sigma : float
        Per-coordinate std of the noise on the batch-mean gradient, ``2 L0_2 nu / b``.
    step_size : float
        ``eta``.
    G, L0_2, D_2, sgd_bound, rate_bound : float
        Second moment of the noisy gradient, l2 constants, ``D_2 G / sqrt T`` and
        ``L0_2 D_2 (1/sqrt n + sqrt(d ln(1/delta))/(eps n))``.
    accountant : str
        The accountant that calibrated ``noise_multiplier``.
    """

    T: int
    batch_size: int
    batches_per_epoch: int
    epochs: int
    noise_multiplier: float
    sigma: float
    step_size: float
    G: float
    L0_2: float
    D_2: float
    sgd_bound: float
    rate_bound: float
    accountant: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def noisy_sgd_theory_params(
    n: int,
    *,
    d: int,
    epsilon: float,
    delta: float,
    L0_2: float,
    D_2: float,
    steps: int | None = None,
    batch_size: int | None = None,
    step_size: float | None = None,
    accountant: str = "gdp",
) -> NoisySgdParams:
    r"""BFTT19 parameters of noisy SGD and the exact noise calibration for disjoint batches (Spec S2).

    Parameters
    ----------
    n : int
        Records.
    d : int
        Dimension.
    epsilon, delta : float
        Target; ``delta`` in (0, 1) (a Gaussian mechanism is never pure DP).
    L0_2, D_2 : float
        l2 Lipschitz constant and Euclidean diameter (see :func:`l2_constants`).
    steps, batch_size, step_size : optional
        Overrides of ``T``, ``b`` (``1 <= b <= n``) and ``eta > 0``.
    accountant : str
        Calibrates the multiplier ``nu`` of the ``E`` Gaussian events the run records
        (:func:`~dpsco_lib.privacy.accounting.budget.gaussian_noise_multiplier`): ``"gdp"`` (default; exact
        for Gaussian events, the analytic Gaussian calibration of earlier versions), ``"best"`` (the tightest
        valid accountant, here GDP as well), ``"rdp"`` or ``"pld"``.

    Returns
    -------
    NoisySgdParams
    """
    n = check_int(n, "n", lo=1)
    d = check_int(d, "d", lo=1)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    L0_2 = check_positive(L0_2, "L0_2")
    D_2 = check_positive(D_2, "D_2")
    accountant = check_accountant(accountant)
    log_inv = math.log(1.0 / delta)
    if steps is None:
        T = max(1, min(n // 8, int(math.floor(n * n * epsilon * epsilon / (32.0 * d * log_inv)))))
    else:
        T = check_int(steps, "steps", lo=1)
    if batch_size is None:
        b = min(n, max(1, int(math.floor(n * math.sqrt(epsilon / (4.0 * T))))))
    else:
        b = check_int(batch_size, "batch_size", lo=1)
        if b > n:
            raise ValueError(f"batch_size must lie in [1, n] = [1, {n}], got {b}")
    per_epoch = n // b
    epochs = -(-T // per_epoch)
    nu = gaussian_noise_multiplier(epsilon, delta, count=epochs, accountant=accountant).value
    sigma = nu * 2.0 * L0_2 / b
    G = math.sqrt(L0_2**2 + d * sigma**2)
    eta = D_2 / (G * math.sqrt(T)) if step_size is None else check_positive(step_size, "step_size")
    return NoisySgdParams(
        T=T, batch_size=b, batches_per_epoch=per_epoch, epochs=epochs, noise_multiplier=nu, sigma=sigma,
        step_size=eta, G=G, L0_2=L0_2, D_2=D_2, sgd_bound=D_2 * G / math.sqrt(T),
        rate_bound=L0_2 * D_2 * (1.0 / math.sqrt(n) + math.sqrt(d * log_inv) / (epsilon * n)), accountant=accountant,
    )


def run_noisy_sgd(
    problem: Problem,
    data: Dataset,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    steps: int | None = None,
    batch_size: int | None = None,
    step_size: float | None = None,
    accountant: str = "gdp",
    trace: bool = False,
    _noise_multiplier: float = 1.0,
) -> Result:
    r"""Projected noisy mini-batch SGD in l2 (Spec S2; BFTT19), ``(epsilon, delta)``-DP under replace-one.

    See the module docstring for the parameters (defaults: BFTT19), the l2 constants of a non-Euclidean
    problem and the privacy argument (shuffled disjoint batches, ``E`` epochs, exact Gaussian composition).

    Parameters
    ----------
    problem : Problem
    data : Dataset
        Records inside the problem's declared bounds (else ``ValueError``).
    epsilon : float
        > 0.
    delta : float
        In (0, 1).
    rng : numpy.random.Generator
    steps, batch_size, step_size : optional
        Overrides (``1 <= batch_size <= n``, ``step_size > 0``, ``steps >= 1``).
    accountant : str
        The accountant that calibrates the noise (:func:`noisy_sgd_theory_params`): ``"gdp"`` (default, exact)
        or ``"best"`` (the tightest valid accountant; GDP for these Gaussian events), ``"rdp"``, ``"pld"``.
    trace : bool
        Record the running iterate average at the end of each epoch (``x_avg_epoch``, shape (E, d)).
    _noise_multiplier : float
        Test hook: scales the Gaussian noise actually drawn (``0``: the same iterations without noise, the
        non-private reference of notebook 05); the ledger is unchanged, so any value other than 1 voids the
        certificate.

    Returns
    -------
    Result
        ``x`` = the iterate average; ``params`` = :func:`noisy_sgd_theory_params` as a dict; ``ledger`` with ``E``
        Gaussian events of multiplier ``nu``.
    """
    if not isinstance(problem, Problem):
        raise ValueError(f"problem must be a dpsco_lib.problems.Problem, got {type(problem).__name__}")
    rng = check_rng(rng)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    accountant = check_accountant(accountant)
    trace = check_bool(trace, "trace")
    noise_mult = check_positive(_noise_multiplier, "_noise_multiplier", allow_zero=True)
    data = problem.validate_data(data)
    n, d = data.n, problem.d
    L0_2, D_2 = l2_constants(problem)
    params = noisy_sgd_theory_params(n, d=d, epsilon=epsilon, delta=delta, L0_2=L0_2, D_2=D_2, steps=steps,
                                     batch_size=batch_size, step_size=step_size, accountant=accountant)
    T, b, per_epoch = params.T, params.batch_size, params.batches_per_epoch
    sigma, eta = params.sigma * noise_mult, params.step_size
    fset = problem.feasible_set
    x = np.asarray(fset.center(), dtype=np.float64).copy()
    x_sum = np.zeros(d)
    snaps: list[np.ndarray] = []
    t = 0
    while t < T:
        perm = rng.permutation(n)
        for j in range(per_epoch):
            if t >= T:
                break
            # full batch: no copy (the order of the records does not change the mean)
            batch = data if b == n else data[np.sort(perm[j * b : (j + 1) * b])]
            g = problem._mean_grad(x, batch)  # records validated above; x feasible by projection
            if sigma > 0:
                g += rng.normal(0.0, sigma, size=d)
            x = fset.project(x - eta * g)
            x_sum += x
            t += 1
        if trace:
            snaps.append(x_sum / t)
    ledger = PrivacyLedger()
    ledger.record_gaussian(
        params.noise_multiplier,
        count=params.epochs,
        label="noisy SGD: one Gaussian per epoch (disjoint batches, sensitivity 2 L0_2 / b) (Spec S2)",
    )
    tr = {"x_avg_epoch": np.asarray(snaps)} if trace else None
    info = {"method": "noisy_sgd", "spec": "S2", "paper": "BFTT19", "gradient_evaluations": T * b}
    return Result(x=x_sum / T, trace=tr, params=dict(params.as_dict(), n=n), ledger=ledger, info=info)
