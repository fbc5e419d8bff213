"""The scikit-learn estimators of dpsco_lib.estimators: the estimator checks, the certificate, the method rule.

scikit-learn is an optional dependency of the library (extra ``sklearn``); these tests need it.

Checks that cannot apply to a private estimator: scikit-learn 1.9's checks fix ``random_state`` (so exact
reproducibility holds: ``check_fit_idempotent`` passes) and generate the sample-weight checks only for a ``fit`` that
takes ``sample_weight`` (ours does not: a weight would change a record's sensitivity), so none is expected to fail
and ``expected_failed_checks`` (the mechanism of scikit-learn >= 1.6, which replaced the ``_xfail_checks`` tag) is
empty. Non-reproducibility without ``random_state`` is tested below instead.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from dpsco_lib.estimators import METHODS, L1PrivateClassifier, L1PrivateRegressor, choose_method  # noqa: E402

EXPECTED_FAILED: dict[str, str] = {}


@parametrize_with_checks([L1PrivateRegressor(), L1PrivateClassifier()],
                         expected_failed_checks=lambda est: EXPECTED_FAILED)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def _regression(n: int = 400, d: int = 5, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    y = 2.0 + X[:, 0] - 0.5 * X[:, 1] + 0.1 * rng.standard_normal(n)
    return X, y


@pytest.mark.parametrize("method", METHODS)
def test_every_method_certifies_the_target_under_replace_one(method):
    X, y = _regression()
    est = L1PrivateRegressor(epsilon=1.0, delta=1e-5, radius=2.0, label_bound=(0.0, 4.0), method=method,
                             random_state=0).fit(X, y)
    assert est.method_ == method and est.relation_ == "replace_one"
    assert 0 < est.certified_epsilon_ <= 1.0 + 1e-12
    assert est.ledger_.epsilon(1e-5) == est.certified_epsilon_
    assert est.coef_.shape == (5,) and est.n_features_in_ == 5 and np.isfinite(est.intercept_)
    assert float(np.abs(est.coef_).sum()) + abs(est.intercept_ - 2.0) / est.data_norm <= 2.0 + 1e-9
    assert est.excess_risk(X, y) >= -1e-7


def test_pure_dp_runs_and_refuses_dp_sgd():
    X, y = _regression()
    est = L1PrivateRegressor(epsilon=1.0, delta=0.0, label_bound=(0.0, 4.0), random_state=0).fit(X, y)
    assert est.method_ in ("poly_sfw", "tree_fw") and est.certified_epsilon_ <= 1.0 + 1e-12
    with pytest.raises(ValueError, match="delta must be > 0 for method='dp_sgd'"):
        L1PrivateRegressor(delta=0.0, method="dp_sgd").fit(X, y)


def test_auto_takes_the_smallest_theory_bound():
    m, bounds = choose_method(10_000, 1000, epsilon=1.0, delta=1e-6, L0=1.0, L1=1.0, radius=1.0)
    assert m == min(bounds, key=bounds.get) and set(bounds) == set(METHODS)
    m0, b0 = choose_method(10_000, 1000, epsilon=1.0, delta=0.0, L0=1.0, L1=1.0, radius=1.0)
    assert "dp_sgd" not in b0 and m0 == min(b0, key=b0.get)
    # DP-SGD pays sqrt(d) L0 in l2: it loses in high dimension at small n, the Frank-Wolfe methods do not
    assert choose_method(500, 5000, epsilon=1.0, delta=1e-5, L0=1.0, L1=1.0, radius=1.0)[0] != "dp_sgd"


def test_fit_without_random_state_is_not_reproducible():
    X, y = _regression(n=200)
    a = L1PrivateRegressor(label_bound=(0.0, 4.0), method="poly_sfw").fit(X, y)
    b = clone(a).fit(X, y)
    assert not np.array_equal(a.coef_, b.coef_)


def test_declared_bounds_are_refused_without_clip_naming_the_parameter():
    X, y = _regression()
    with pytest.raises(ValueError, match="data_norm = 0.5 is violated"):
        L1PrivateRegressor(data_norm=0.5, clip=False, label_bound=(0.0, 4.0)).fit(X, y)
    with pytest.raises(ValueError, match="label_bound"):
        L1PrivateRegressor(clip=False, label_bound=1.0).fit(X, y)
    for kw, name in (({"epsilon": 0.0}, "epsilon"), ({"radius": -1.0}, "radius"), ({"method": "sgd"}, "method"),
                     ({"delta": 1.0}, "delta"), ({"label_bound": (3.0, 1.0)}, "label_bound"),
                     ({"random_state": "x"}, "random_state"), ({"loss": "hinge"}, "loss")):
        with pytest.raises(ValueError, match=name):
            L1PrivateRegressor(**kw).fit(X, y)


def test_classifier_learns_a_separable_problem_at_large_n():
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(4000, 4))
    y = np.where(X[:, 0] + 0.2 * rng.standard_normal(4000) > 0, "yes", "no")
    est = L1PrivateClassifier(epsilon=1.0, delta=1e-5, radius=4.0, random_state=0).fit(X, y)
    assert set(est.classes_) == {"no", "yes"} and est.certified_epsilon_ <= 1.0 + 1e-12
    assert est.score(X, y) > 0.8  # the trivial classifier scores about 0.5
    proba = est.predict_proba(X[:5])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_fitted_estimator_keeps_no_training_record():
    X, y = _regression(n=100)
    est = L1PrivateRegressor(label_bound=(0.0, 4.0), random_state=0).fit(X, y)
    blob = pickle.dumps(est)
    assert X[17].tobytes() not in blob and y.tobytes()[:64] not in blob
