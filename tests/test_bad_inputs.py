"""Regression tests for bad inputs found in review: each must raise ValueError/TypeError naming the parameter,
the value and the allowed range (one test per item; each failed on the code before the fix)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsco_lib.algorithms.smd import run_smd
from dpsco_lib.geometry import lp_norm, project_l1_ball, project_simplex
from dpsco_lib.privacy.accounting import kov_delta, kov_epsilon
from dpsco_lib.privacy.mechanisms import (
    exponential_mechanism_log_probs,
    gaussian_epsilon_analytic,
    gaussian_sigma_analytic,
    gg_epsilon,
    gg_sigma,
    gg_sigma_exact,
)
from dpsco_lib.problems import Dataset, hard_least_squares, max_of_losses_from_sklearn, solve_cvxpy


# 1 ------------------------------------------------------------------------------------------------------------
def test_lp_norm_rejects_nan() -> None:
    # returned 0.0
    with pytest.raises(ValueError, match=r"x must be finite, got 1 non-finite entries"):
        lp_norm([math.nan, 1.0], 2)


# 2-4 ----------------------------------------------------------------------------------------------------------
_KAPPA_MSG = r"kappa must lie in \[1, inf\) \(the regularity constant.*got 0\.5"


def test_gg_sigma_rejects_kappa_below_one() -> None:
    with pytest.raises(ValueError, match=_KAPPA_MSG):
        gg_sigma(1.0, epsilon=1.0, delta=1e-5, kappa=0.5)


def test_gg_sigma_exact_rejects_kappa_below_one() -> None:
    # returned 3.54, 0.7x the smallest valid sigma (kappa = 1)
    with pytest.raises(ValueError, match=_KAPPA_MSG):
        gg_sigma_exact(1.0, epsilon=1.0, delta=1e-5, kappa=0.5)


def test_gg_epsilon_rejects_kappa_below_one() -> None:
    with pytest.raises(ValueError, match=_KAPPA_MSG):
        gg_epsilon(5.0, sensitivity=1.0, delta=1e-5, kappa=0.5)


# 5-7 ----------------------------------------------------------------------------------------------------------
def test_project_simplex_rejects_negative_mass() -> None:
    # returned [0, 0]
    with pytest.raises(ValueError, match=r"z must be > 0, got -1\.0"):
        project_simplex([0.3, 0.2], -1.0)


def test_project_l1_ball_rejects_negative_radius() -> None:
    # returned [0, 0]
    with pytest.raises(ValueError, match=r"radius must be > 0, got -1\.0"):
        project_l1_ball([0.3, 0.2], -1.0)


def test_project_simplex_rejects_nan() -> None:
    # returned NaN silently
    with pytest.raises(ValueError, match=r"x must be finite, got 1 non-finite entries"):
        project_simplex([math.nan, 1.0])


# 8-9 ----------------------------------------------------------------------------------------------------------
def test_kov_delta_rejects_huge_k() -> None:
    # allocated arrays of 1e9 entries (memory exhaustion)
    with pytest.raises(ValueError, match=r"k must be an integer in \[1, 1048576\] .*got 1000000000"):
        kov_delta(0.01, k=10**9, epsilon=1.0)


def test_kov_epsilon_rejects_huge_k() -> None:
    with pytest.raises(ValueError, match=r"k must be an integer in \[1, 1048576\] .*got 1000000000"):
        kov_epsilon(0.01, k=10**9, delta=1e-5)
    # the cap itself is still evaluated exactly (same result as before the cap)
    assert kov_epsilon(1e-3, k=2**20, delta=1e-5) > 0


# 10 -----------------------------------------------------------------------------------------------------------
def test_run_smd_rejects_data_outside_declared_bound() -> None:
    problem = hard_least_squares(1.0, 8)
    data = problem.sample(50, np.random.default_rng(0))
    X = data.X.copy()
    X[3] *= 100.0  # record 3 breaks the declared feature bound, so rate_bound does not hold for this data
    bad = Dataset(X, data.y)
    with pytest.raises(ValueError, match=r"data violates the declared bounds of LeastSquares .*first: record 3"):
        run_smd(problem, bad, rng=np.random.default_rng(0))
    # valid data: unchanged behaviour
    res = run_smd(problem, data, rng=np.random.default_rng(0))
    assert np.all(np.isfinite(res.x))


# 11 -----------------------------------------------------------------------------------------------------------
def test_monotone_must_be_a_real_bool() -> None:
    # "yes" was taken as True
    with pytest.raises(TypeError, match=r"monotone must be a bool \(True or False\), got 'yes'"):
        exponential_mechanism_log_probs([0.0, 1.0], sensitivity=1.0, epsilon=1.0, monotone="yes")


# 12 -----------------------------------------------------------------------------------------------------------
def test_gaussian_helpers_are_keyword_only() -> None:
    sigma = gaussian_sigma_analytic(1.0, epsilon=1.0, delta=1e-5)
    assert gaussian_epsilon_analytic(sigma, sensitivity=1.0, delta=1e-5) <= 1.0
    # the argument order of gaussian_sigma_analytic passed to gaussian_epsilon_analytic returned 22.2 silently
    with pytest.raises(TypeError, match="positional argument"):
        gaussian_epsilon_analytic(1.0, 3.73, 1e-5)  # type: ignore[misc]


# 13 -----------------------------------------------------------------------------------------------------------
def test_solve_cvxpy_falls_back_and_raises_runtime_error() -> None:
    from scipy import optimize

    cp = pytest.importorskip("cvxpy")
    # Clarabel raised a bare cvxpy SolverError on this well-posed instance
    P = max_of_losses_from_sklearn("breast_cancer", n_groups=4, radius=3.16)
    x, y, value = P.saddle_point()
    assert np.abs(x).sum() <= 3.16 * (1 + 1e-9) and y.sum() == pytest.approx(1.0)
    # independent check: scipy SLSQP on min t s.t. L_k(u - w) <= t, sum(u + w) <= R, u, w >= 0
    d = P.dx
    cons = [
        {"type": "ineq", "fun": lambda z: z[-1] - P.group_losses(z[:d] - z[d : 2 * d])},
        {"type": "ineq", "fun": lambda z: 3.16 - z[: 2 * d].sum()},
    ]
    z0 = np.r_[np.zeros(2 * d), 1.0]
    ref = optimize.minimize(
        lambda z: z[-1], z0, jac=lambda z: np.r_[np.zeros(2 * d), 1.0], constraints=cons,
        bounds=[(0, None)] * (2 * d) + [(None, None)], method="SLSQP", options={"maxiter": 1000, "ftol": 1e-12},
    )
    assert ref.success
    assert value == pytest.approx(ref.fun, abs=1e-6)
    assert P.group_losses(x).max() == pytest.approx(ref.fun, abs=1e-6)

    # a genuinely failing solve raises the documented RuntimeError (not SolverError)
    v = cp.Variable(2)
    infeasible = cp.Problem(cp.Minimize(cp.sum(v)), [v >= 1, v <= 0])
    with pytest.raises(RuntimeError, match=r"cvxpy failed to solve the test LP .*solvers tried: CLARABEL"):
        solve_cvxpy(infeasible, "the test LP")

    class _AlwaysFails(cp.Problem):
        def solve(self, *args, **kwargs):
            raise cp.error.SolverError("solver crashed")

    broken = _AlwaysFails(cp.Minimize(cp.sum(v)), [v >= 0])
    with pytest.raises(RuntimeError, match=r"solvers tried: CLARABEL \(tight\): SolverError .*SCS: SolverError"):
        solve_cvxpy(broken, "a broken problem")
