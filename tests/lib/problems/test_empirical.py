"""Problems over the empirical distribution of user data (dpsco_lib.problems.from_data)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from dpsco_lib.algorithms import run_dp_sgd, run_poly_sfw, run_private_vr_frank_wolfe
from dpsco_lib.geometry.norms import lp_norm
from dpsco_lib.geometry.sets import L1Ball, LpBall, Simplex
from dpsco_lib.problems import (
    EmpiricalProblem,
    LogisticRegressionProblem,
    Problem,
    check_loss_constants,
    from_data,
)


def _data(n: int = 200, d: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, d))
    w = np.zeros(d)
    w[:2] = [0.8, -0.5]
    y = np.clip(X @ w + 0.1 * rng.standard_normal(n), -2.0, 2.0)
    return X, y


def _l1_min(fun, grad, d: int, radius: float) -> tuple[np.ndarray, float]:
    """Independent solver: min over the l1 ball as x = u - v, u, v >= 0, sum(u + v) <= radius (scipy SLSQP)."""
    def f(z):
        return fun(z[:d] - z[d:])

    def g(z):
        gx = grad(z[:d] - z[d:])
        return np.concatenate([gx, -gx])

    cons = [{"type": "ineq", "fun": lambda z: radius - z.sum(), "jac": lambda z: -np.ones(2 * d)}]
    res = minimize(f, np.full(2 * d, 1e-3), jac=g, bounds=[(0, None)] * (2 * d), constraints=cons,
                   method="SLSQP", options={"ftol": 1e-14, "maxiter": 1000})
    return res.x[:d] - res.x[d:], float(res.fun)


# ------------------------------------------------------------------ constants
def test_constants_of_the_builtin_losses():
    X, y = _data()
    sq = from_data(X, y, loss="squared", feature_bound=1.0, label_bound=2.0, radius=1.5)
    assert isinstance(sq, Problem) and sq.p == 1.0 and sq.q == math.inf
    assert (sq.L0, sq.L1, sq.L2) == (1.0 * (1.0 * 1.5 + 2.0), 1.0, 0.0)
    lg = from_data(X, np.sign(y) + (y == 0), loss="logistic", feature_bound=2.0, radius=1.5)
    assert (lg.L0, lg.L1) == (2.0, 1.0) and lg.L2 == pytest.approx(8.0 / (6.0 * math.sqrt(3.0)))
    hb = from_data(X, y, loss="huber", feature_bound=1.0, label_bound=2.0, radius=1.5, huber_threshold=0.5)
    assert (hb.L0, hb.L1, hb.L2) == (0.5, 1.0, math.inf)
    hb_big = from_data(X, y, loss="huber", feature_bound=1.0, label_bound=2.0, radius=1.5, huber_threshold=10.0)
    assert hb_big.L0 == 3.5  # min(tau, B_a R + B_b)
    l2 = from_data(X, y, loss="squared", feature_bound=3.0, label_bound=2.0, feasible_set=LpBall(6, 2.0, 1.0))
    assert l2.p == 2.0 and l2.L0 == 3.0 * (3.0 + 2.0)


@pytest.mark.parametrize("loss", ["squared", "logistic", "huber"])
def test_declared_constants_hold_on_the_data_at_random_feasible_points(loss):
    X, y = _data(n=300)
    y = np.where(y >= 0, 1.0, -1.0) if loss == "logistic" else y
    pr = from_data(X, y, loss=loss, feature_bound=1.0, label_bound=2.0, radius=2.0, huber_threshold=0.3)
    seen = check_loss_constants(pr, n_points=8, rng=np.random.default_rng(1))
    assert 0 < seen["L0"] <= pr.L0 and seen["L1"] <= pr.L1
    rng = np.random.default_rng(2)
    pts = pr.feasible_set.random_point(rng, size=20)
    for x, x2 in zip(pts[:-1], pts[1:], strict=True):
        G, G2 = pr.grad(x, pr.data), pr.grad(x2, pr.data)
        assert np.max(lp_norm(G, pr.q, axis=-1)) <= pr.L0 * (1 + 1e-12)
        assert np.max(lp_norm(G - G2, pr.q, axis=-1)) <= pr.L1 * float(lp_norm(x - x2, 1.0)) * (1 + 1e-9)


def test_gradients_match_finite_differences():
    X, y = _data(n=50)
    for loss in ("squared", "huber"):
        pr = from_data(X, y, loss=loss, feature_bound=1.0, label_bound=2.0, huber_threshold=0.2)
        x = pr.feasible_set.random_point(np.random.default_rng(3))
        h = 1e-6
        num = np.array([(pr.loss(x + h * e, pr.data) - pr.loss(x - h * e, pr.data)) / (2 * h) for e in np.eye(6)]).T
        np.testing.assert_allclose(pr.grad(x, pr.data), num, atol=1e-6)


# ------------------------------------------------------------------ bounds: refusal and clipping
def test_records_outside_the_declared_bounds_are_refused_naming_the_bound():
    X, y = _data()
    with pytest.raises(ValueError, match="feature_bound = 0.5 is violated"):
        from_data(X, y, feature_bound=0.5, label_bound=2.0)
    with pytest.raises(ValueError, match="label_bound = 0.1 is violated"):
        from_data(X, y, feature_bound=1.0, label_bound=0.1)
    with pytest.raises(ValueError, match="label_bound must be declared"):
        from_data(X, y, loss="squared", feature_bound=1.0)
    with pytest.raises(ValueError, match=r"y must hold labels in \{-1, \+1\}"):
        from_data(X, (y > 0).astype(float), loss="logistic", feature_bound=1.0)


def test_clip_maps_records_onto_the_bounds_and_counts_them():
    X, y = _data()
    X = X.copy()
    X[3] *= 10.0
    y = y.copy()
    y[5] = 7.0
    pr = from_data(X, y, feature_bound=1.0, label_bound=2.0, clip=True)
    assert pr.data.n_clipped == 2
    assert np.max(np.abs(pr.data.X)) <= 1.0 and np.max(np.abs(pr.data.y)) <= 2.0
    np.testing.assert_allclose(pr.data.X[3], X[3] / np.max(np.abs(X[3])))  # rescaled to ||a||_inf = 1
    assert pr.data.y[5] == 2.0
    keep = np.setdiff1d(np.arange(len(y)), [3, 5])
    np.testing.assert_array_equal(pr.data.X[keep], X[keep])  # other records untouched
    pr.validate_data(pr.data)  # the clipped records satisfy the problem's own check
    lg = from_data(X, np.where(y > 0, 1.0, 0.0), loss="logistic", feature_bound=1.0, clip=True)
    assert set(np.unique(lg.data.y)) <= {-1.0, 1.0}


def test_bounds_are_declared_not_measured():
    X, y = _data()
    a = from_data(X, y, feature_bound=1.0, label_bound=2.0)
    b = from_data(X * 0.1, y * 0.1, feature_bound=1.0, label_bound=2.0)
    assert (a.L0, a.L1) == (b.L0, b.L1)  # the constants depend on the declared bounds only


# ------------------------------------------------------------------ exact optimum
def test_squared_optimum_matches_least_squares_closed_form_when_unconstrained():
    X, y = _data(n=150, d=4)
    pr = from_data(X, y, feature_bound=2.0, label_bound=2.0, feasible_set=LpBall(4, 2.0, 100.0))
    xs, fs = pr.population_optimum()
    w = np.linalg.lstsq(X, y, rcond=None)[0]
    np.testing.assert_allclose(xs, w, atol=1e-6)
    assert fs == pytest.approx(0.5 * np.mean((X @ w - y) ** 2), abs=1e-10)
    assert pr.excess_risk(w) == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("loss", ["squared", "logistic", "huber"])
def test_optimum_on_the_l1_ball_matches_scipy(loss):
    X, y = _data(n=120, d=5)
    y = np.where(y >= 0, 1.0, -1.0) if loss == "logistic" else y
    pr = from_data(X, y, loss=loss, feature_bound=1.0, label_bound=2.0, radius=0.6, huber_threshold=0.2)
    xs, fs = pr.population_optimum()
    assert float(np.abs(xs).sum()) <= 0.6 + 1e-9
    _, f_sp = _l1_min(lambda x: float(np.mean(pr.loss(x, pr.data))), pr.population_grad, 5, 0.6)
    assert fs <= f_sp + 1e-8 and fs == pytest.approx(f_sp, abs=1e-6)
    assert pr.population_risk(xs) == fs


def test_sample_draws_records_of_the_data():
    X, y = _data(n=30)
    pr = from_data(X, y, feature_bound=1.0, label_bound=2.0)
    s = pr.sample(100, np.random.default_rng(0))
    rows = {tuple(r) for r in X}
    assert s.n == 100 and all(tuple(r) in rows for r in s.X)


# ------------------------------------------------------------------ a user loss
class PseudoHuber:
    """f = sqrt(1 + r^2) - 1, r = <a, x> - b: |phi'| <= 1 and 0 < phi'' <= 1, so L0 = B_a, L1 = B_a^2 (l1 setup)."""

    def __init__(self, feature_bound: float, lipschitz: float | None = None) -> None:
        self.lipschitz = feature_bound if lipschitz is None else lipschitz
        self.smoothness = feature_bound**2

    def value(self, x, X, y):
        r = X @ x - y
        return np.sqrt(1.0 + r * r) - 1.0

    def gradient(self, x, X, y):
        r = X @ x - y
        return (r / np.sqrt(1.0 + r * r))[:, None] * X

    def cvxpy_risk(self, var, X, y):
        import cvxpy as cp

        r = X @ var - y
        return cp.sum(cp.norm(cp.vstack([np.ones(X.shape[0]), r]), 2, axis=0)) / X.shape[0] - 1.0


def test_user_loss_through_the_protocol_runs_and_has_an_exact_optimum():
    X, y = _data(n=400, d=5)
    y = 3.0 * y  # large residuals: the pseudo-Huber loss is not the squared loss here
    pr = from_data(X, y, loss=PseudoHuber(1.0), feature_bound=1.0, label_bound=6.0, radius=1.0)
    assert isinstance(pr, EmpiricalProblem) and (pr.L0, pr.L1, pr.L2) == (1.0, 1.0, math.inf)
    xs, fs = pr.population_optimum()
    _, f_sp = _l1_min(lambda x: float(np.mean(pr.loss(x, pr.data))), lambda x: pr.population_grad(x), 5, 1.0)
    assert fs == pytest.approx(f_sp, abs=1e-6)
    res = run_poly_sfw(pr, pr.data, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0))
    assert res.certified_epsilon(1e-5) <= 1.0 + 1e-12
    assert pr.excess_risk(res.x) >= -1e-9


def test_user_loss_with_false_constants_is_rejected():
    X, y = _data(n=100, d=5)
    with pytest.raises(ValueError, match="loss declares lipschitz = 0.01"):
        from_data(X, 3 * y, loss=PseudoHuber(1.0, lipschitz=0.01), feature_bound=1.0, label_bound=6.0)

    class TooSmooth(PseudoHuber):
        def __init__(self):
            super().__init__(1.0)
            self.smoothness = 1e-4

    with pytest.raises(ValueError, match="loss declares smoothness"):
        from_data(X, 3 * y, loss=TooSmooth(), feature_bound=1.0, label_bound=6.0)


def test_user_loss_without_cvxpy_has_no_exact_optimum_but_runs():
    class NoCvx(PseudoHuber):
        cvxpy_risk = None

    X, y = _data(n=100, d=5)
    pr = from_data(X, y, loss=NoCvx(1.0), feature_bound=1.0, label_bound=6.0)
    with pytest.raises(NotImplementedError, match="cvxpy_risk"):
        pr.population_optimum()


# ------------------------------------------------------------------ inputs
class _Frame:
    """A minimal array-like (what pandas DataFrame / Series offer through __array__)."""

    def __init__(self, arr):
        self._arr = np.asarray(arr)

    def __array__(self, dtype=None, copy=None):
        return self._arr if dtype is None else self._arr.astype(dtype)


def test_array_likes_lists_and_frames_are_accepted():
    X, y = _data(n=40, d=3)
    a = from_data(_Frame(X), _Frame(y[:, None]), feature_bound=1.0, label_bound=2.0)
    b = from_data(X.tolist(), list(y), feature_bound=1.0, label_bound=2.0)
    np.testing.assert_array_equal(a.data.X, b.data.X)
    np.testing.assert_array_equal(a.data.y, b.data.y)


def test_pandas_frames_are_accepted_when_installed():
    pd = pytest.importorskip("pandas")
    X, y = _data(n=40, d=3)
    pr = from_data(pd.DataFrame(X, columns=list("abc")), pd.Series(y), feature_bound=1.0, label_bound=2.0)
    np.testing.assert_array_equal(pr.data.X, X)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"X": np.ones(5)}, "X must have shape"),
        ({"X": [["a", "b"]]}, "X must be a numeric"),
        ({"X": np.full((3, 2), np.nan)}, "X must be finite"),
        ({"y": np.ones(7)}, r"y must have shape \(n,\)"),
        ({"y": [np.inf] * 6}, "y must be finite"),
        ({"loss": "hinge"}, "loss must be one of"),
        ({"loss": object()}, "loss must be one of"),
        ({"feature_bound": -1.0}, "feature_bound"),
        ({"label_bound": math.nan}, "label_bound"),
        ({"radius": 0.0}, "radius"),
        ({"feasible_set": Simplex(3)}, "feasible_set must have dimension"),
        ({"feasible_set": "l1"}, "feasible_set must be"),
        ({"clip": "yes"}, "clip"),
        ({"loss": "huber", "huber_threshold": 0.0}, "huber_threshold"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, match):
    args = {"X": np.full((6, 2), 0.1), "y": np.zeros(6), "feature_bound": 1.0, "label_bound": 1.0}
    args.update(kwargs)
    X, y = args.pop("X"), args.pop("y")
    with pytest.raises((ValueError, TypeError), match=match):
        from_data(X, y, **args)


def test_runners_take_a_tuple_and_point_other_objects_to_from_data():
    X, y = _data(n=64, d=4)
    pr = from_data(X, y, feature_bound=1.0, label_bound=2.0, feasible_set=L1Ball(4, 1.0))
    a = run_private_vr_frank_wolfe(pr, (X, y), epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0))
    b = run_private_vr_frank_wolfe(pr, pr.data, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(a.x, b.x)
    for runner, kw in ((run_poly_sfw, {}), (run_dp_sgd, {"sampling_rate": 0.1, "steps": 2, "clip": 1.0,
                                                          "step_size": 0.1})):
        with pytest.raises(TypeError, match="from_data"):
            runner(LogisticRegressionProblem(4), (X, y), epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0), **kw)
