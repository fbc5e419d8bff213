r"""Private l1-constrained linear models in the scikit-learn convention: fit on arrays, get a certificate.

:class:`L1PrivateRegressor` (squared or Huber loss) and :class:`L1PrivateClassifier` (logistic loss, two classes)
minimize the empirical risk over the l1 ball :math:`\{w : \|w\|_1 \le r\}` (``radius``) with one of the library's
private algorithms, on the problem :func:`~dpsco_lib.problems.from_data` builds from the training arrays:

* ``"poly_sfw"``: Poly-SFW (Spec F1; Bassily, Guzmán and Nandi, COLT 2021), replace-one neighbours;
* ``"tree_fw"``: private variance-reduced Frank-Wolfe with tree batches (Spec F2; Asi, Feldman, Koren and Talwar,
  ICML 2021), replace-one neighbours;
* ``"dp_sgd"``: DP-SGD with Poisson subsampling (Spec D4; Abadi et al. 2016), certified under add/remove
  neighbours and converted to replace-one by group privacy (a replacement is a removal and an addition: the
  run is calibrated to :math:`(\varepsilon/2, \delta/(1 + e^{\varepsilon/2}))` under add/remove, which gives
  :math:`(\varepsilon, \delta)` under replace-one), so that every method certifies the same relation.

Declared bounds (public, never measured on the data): ``data_norm`` :math:`\ge \max_j |a_j|` (the dual norm of
the l1 constraint; the intercept column has the value ``data_norm``) and, for the regressor, ``label_bound``
(:math:`|b| \le B` or an interval ``(lo, hi)``, centred at its public midpoint). Records outside them are clipped
onto them (``clip=True``, the default, as :func:`~dpsco_lib.problems.from_data` documents) or refused
(``clip=False``: ``ValueError`` naming the parameter).

``method="auto"`` takes the method with the smallest theory bound at the run's ``n``, ``d``, ``epsilon`` and
``delta``, each computed by the library with constant 1 (:func:`choose_method`):
Poly-SFW's ``(L1 D^2 + L0 D) ln|V| ln(n/ln|V|) sqrt(ln(1/delta)) / (eps sqrt n)``
(:func:`~dpsco_lib.algorithms.poly_sfw_theory_params`), the tree's
``(L0 D + L1 D^2) sqrt(ln|V|/n) ln n + L1 D^2 (ln|V| ln^2 n ln(1/delta)/(eps n))^{2/3}``
(:func:`~dpsco_lib.algorithms.vr_frank_wolfe_theory_params`) and the l2 rate of noisy SGD
``L0_2 D_2 (1/sqrt n + sqrt(d ln(1/delta'))/(eps' n))`` at the add/remove budget ``(eps/2, delta')`` of the
conversion, with ``L0_2 = sqrt(d) L0`` and ``D_2 = 2 r`` (Spec S2,
:func:`~dpsco_lib.algorithms.noisy_sgd_theory_params`).
The rule uses public quantities only, so the choice costs no privacy; the bounds' hidden constants differ, so it
is a rule of thumb, not a guarantee that the chosen method is the most accurate.

Fitted attributes: ``coef_``, ``intercept_``, ``ledger_`` (the :class:`~dpsco_lib.privacy.accounting.PrivacyLedger`
of the run, the only certificate), ``certified_epsilon_`` (``ledger_.epsilon(delta)``), ``relation_``
(``"replace_one"``), ``method_`` (the method that ran), ``params_`` (the run's hyperparameters, all fixed by
public quantities), ``n_features_in_``. The estimator keeps no training record and none of the run's
data-dependent diagnostics, so a fitted (pickled) estimator releases only what the certificate covers.
``excess_risk(X, y)`` is a non-private diagnostic on data you pass.

scikit-learn is an optional dependency (extra ``sklearn``): it is imported by this module only.
The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

import numpy as np

try:
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
    from sklearn.utils.multiclass import check_classification_targets, type_of_target
    from sklearn.utils.validation import check_is_fitted, validate_data
except ImportError as exc:  # pragma: no cover - exercised without scikit-learn only
    raise ImportError(
        "dpsco_lib.estimators needs scikit-learn (pip install 'dpsco-lib[sklearn]'); the rest of the library does not"
    ) from exc

from dpsco_lib.algorithms.dp_sgd import dp_sgd_noise_multiplier, run_dp_sgd
from dpsco_lib.algorithms.noisy_sgd import noisy_sgd_theory_params
from dpsco_lib.algorithms.poly_sfw import poly_sfw_theory_params, run_poly_sfw
from dpsco_lib.algorithms.vr_frank_wolfe import run_private_vr_frank_wolfe, vr_frank_wolfe_theory_params
from dpsco_lib.privacy.accounting import PrivacyLedger
from dpsco_lib.privacy.accounting.events import REPLACE_ONE, to_replace_one
from dpsco_lib.problems.empirical import EmpiricalProblem, from_data

__all__ = ["METHODS", "L1PrivateClassifier", "L1PrivateRegressor", "choose_method"]

#: The private methods an estimator can run (plus ``"auto"``).
METHODS = ("poly_sfw", "tree_fw", "dp_sgd")


def _dp_sgd_budget(epsilon: float, delta: float) -> tuple[float, float]:
    """The add/remove budget whose group-of-two conversion is (epsilon, delta) under replace-one."""
    e = 0.5 * epsilon * (1.0 - 1e-9)
    return e, delta / (1.0 + math.exp(e))


def choose_method(n: int, d: int, *, epsilon: float, delta: float, L0: float, L1: float, radius: float
                  ) -> tuple[str, dict[str, float]]:
    r"""The method with the smallest theory bound for the l1 ball of radius ``radius`` in dimension ``d``.

    Returns ``(method, bounds)`` with ``bounds[m]`` the library's rate bound of each applicable method (module
    docstring; ``|V| = 2d`` vertices, ``D = 2 radius``). Poly-SFW needs ``n >= 2`` and ``n > ln(2d)``, the tree
    ``n >= 4``, DP-SGD ``delta > 0``. Ties go to the earlier of ``METHODS``.
    """
    D, nv = 2.0 * radius, 2 * d
    bounds: dict[str, float] = {}
    if n >= 2 and n > math.log(nv):
        bounds["poly_sfw"] = poly_sfw_theory_params(n, nv, epsilon, delta, L0, L1, D).rate_bound
    if n >= 4:
        bounds["tree_fw"] = vr_frank_wolfe_theory_params(n, nv, epsilon, delta, L0, L1, D).rate_bound
    if delta > 0:
        e, dl = _dp_sgd_budget(epsilon, delta)
        L0_2 = math.sqrt(d) * L0
        bounds["dp_sgd"] = noisy_sgd_theory_params(n, d=d, epsilon=e, delta=dl, L0_2=L0_2, D_2=D).rate_bound
    if not bounds:
        raise ValueError(f"n_samples = {n}: no private method applies (Poly-SFW needs n >= 2, the tree n >= 4)")
    best = min(METHODS, key=lambda m: (bounds.get(m, math.inf), METHODS.index(m)))
    return best, bounds


def _run_dp_sgd(problem: EmpiricalProblem, epsilon: float, delta: float, rng: np.random.Generator) -> tuple[Any, Any]:
    """DP-SGD at the add/remove budget of the conversion; BFTT19's steps and batch (Spec S2), clip = L0_2, the
    step size that minimizes the averaged projected-SGD bound ``D_2 G / sqrt T``; returns (result, ledger)."""
    n, d = problem.data.n, problem.d
    e, dl = _dp_sgd_budget(epsilon, delta)
    C = math.sqrt(d) * problem.L0
    D2 = float(problem.feasible_set.diameter(2.0))
    prm = noisy_sgd_theory_params(n, d=d, epsilon=e, delta=dl, L0_2=C, D_2=D2)
    q = prm.batch_size / n
    sigma = dp_sgd_noise_multiplier(e, delta=dl, sampling_rate=q, steps=prm.T, accountant="rdp")
    G = math.sqrt(C * C + d * (sigma * C / (q * n)) ** 2)
    res = run_dp_sgd(problem, problem.data, epsilon=e, delta=dl, rng=rng, sampling_rate=q, steps=prm.T, clip=C,
                     step_size=D2 / (G * math.sqrt(prm.T)), accountant="rdp")
    ledger = PrivacyLedger(relation=REPLACE_ONE)
    ledger.record(to_replace_one(*res.ledger.events))
    return res, ledger


def _check_params(est: Any) -> None:
    for name in ("epsilon", "radius", "data_norm"):
        v = getattr(est, name)
        if isinstance(v, bool) or not isinstance(v, Real) or not (0 < v < math.inf):
            raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
    if isinstance(est.delta, bool) or not isinstance(est.delta, Real) or not 0 <= est.delta < 1:
        raise ValueError(f"delta must be a number in [0, 1), got {est.delta!r}")
    if est.method not in ("auto", *METHODS):
        raise ValueError(f"method must be one of {('auto', *METHODS)}, got {est.method!r}")
    if est.method == "dp_sgd" and est.delta == 0:
        raise ValueError("delta must be > 0 for method='dp_sgd' (a Gaussian mechanism is never pure DP), got 0")
    rs = est.random_state
    if not (rs is None or isinstance(rs, np.random.Generator) or (isinstance(rs, Integral) and rs >= 0)):
        raise ValueError(f"random_state must be None, an int >= 0 or a numpy.random.Generator, got {rs!r}")
    for name in ("fit_intercept", "clip"):
        if not isinstance(getattr(est, name), bool | np.bool_):
            raise ValueError(f"{name} must be a bool, got {getattr(est, name)!r}")


def _design(est: Any, X: np.ndarray) -> np.ndarray:
    """The features, with the intercept column of value ``data_norm`` appended when ``fit_intercept``."""
    if not est.fit_intercept:
        return X
    return np.hstack([X, np.full((X.shape[0], 1), float(est.data_norm))])


def _check_data_norm(est: Any, X: np.ndarray) -> None:
    if est.clip:
        return
    worst = np.max(np.abs(X), axis=1)
    if np.any(worst > est.data_norm * (1 + 1e-9)):
        raise ValueError(
            f"data_norm = {est.data_norm} is violated: {int(np.sum(worst > est.data_norm * (1 + 1e-9)))} of "
            f"{X.shape[0]} samples have max_j |x_j| > data_norm (largest {worst.max():.6g}); declare a public bound "
            "that holds for every sample, or pass clip=True"
        )


class _L1PrivateLinear(BaseEstimator):
    """Shared fit of the two estimators (see the module docstring)."""

    _loss: str = "squared"

    def _fit_problem(self, X: np.ndarray, y: np.ndarray, label_bound: float | None) -> _L1PrivateLinear:
        _check_params(self)
        n = X.shape[0]
        if n < 2:
            raise ValueError(f"n_samples = {n}: a private fit needs at least 2 samples (Poly-SFW), 4 for the tree")
        _check_data_norm(self, X)
        problem = self._problem(X, y, label_bound)
        eps, delta = float(self.epsilon), float(self.delta)
        method = self.method
        if method == "auto":
            method, _ = choose_method(n, problem.d, epsilon=eps, delta=delta, L0=problem.L0, L1=problem.L1,
                                      radius=float(self.radius))
        rng = np.random.default_rng(self.random_state)
        if method == "poly_sfw":
            res = run_poly_sfw(problem, problem.data, epsilon=eps, delta=delta, rng=rng)
            ledger = res.ledger
        elif method == "tree_fw":
            if n < 4:
                raise ValueError(f"n_samples = {n}: method='tree_fw' needs at least 4 samples")
            res = run_private_vr_frank_wolfe(problem, problem.data, epsilon=eps, delta=delta, rng=rng)
            ledger = res.ledger
        else:
            res, ledger = _run_dp_sgd(problem, eps, delta, rng)
        w = np.asarray(res.x, dtype=np.float64)
        self.coef_ = w[: X.shape[1]].copy()
        self.intercept_ = float(w[-1] * self.data_norm) if self.fit_intercept else 0.0
        self.method_, self.params_, self.ledger_ = method, dict(res.params), ledger
        self.relation_ = ledger.relation or REPLACE_ONE
        self.certified_epsilon_ = float(ledger.epsilon(delta))
        return self

    def _weights(self, d: int, offset: float = 0.0) -> np.ndarray:
        """The point of the l1 ball the run returned, rebuilt from ``coef_`` and ``intercept_``."""
        if not self.fit_intercept:
            return self.coef_.copy()
        return np.append(self.coef_, (self.intercept_ - offset) / float(self.data_norm))[:d]

    def _decision(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False)
        return X @ self.coef_ + self.intercept_

    def _problem(self, X: Any, y: np.ndarray, label_bound: float | None) -> EmpiricalProblem:
        """The empirical problem of ``(X, y)`` with this estimator's declarations (``y`` already mapped)."""
        Z = _design(self, X)
        return from_data(Z, y, loss=getattr(self, "loss", self._loss), feature_bound=float(self.data_norm),
                         label_bound=label_bound, radius=float(self.radius), clip=bool(self.clip),
                         name=type(self).__name__)


_INIT_DOC = """
    Parameters
    ----------
    epsilon : float
        Target epsilon > 0 (replace-one neighbours).
    delta : float
        Target delta in [0, 1) (0 rules out ``"dp_sgd"``).
    radius : float
        l1 radius r of the constraint on the coefficients (and the scaled intercept).
    data_norm : float
        Declared public bound on max_j |x_j| of every sample.
    fit_intercept : bool
        Append a constant feature of value ``data_norm`` (its coefficient times ``data_norm`` is ``intercept_``).
    clip : bool
        True (default): samples outside the declared bounds are clipped onto them; False: ``ValueError``.
    method : {"auto", "poly_sfw", "tree_fw", "dp_sgd"}
        The private algorithm (module docstring; ``"auto"``: :func:`choose_method`).
    random_state : None, int or numpy.random.Generator
        Seed of the algorithm's generator (None: fresh entropy, so fits differ).
"""


class L1PrivateRegressor(RegressorMixin, _L1PrivateLinear):
    __doc__ = r"""Private linear regression over the l1 ball (squared or Huber loss), scikit-learn style.

    ``fit(X, y)`` builds the empirical problem with :func:`~dpsco_lib.problems.from_data`, runs the chosen
    private method and certifies ``(epsilon, delta)`` under replace-one neighbours (``certified_epsilon_``).
    ``predict`` returns ``X @ coef_ + intercept_``; ``score`` is R^2.
    """ + _INIT_DOC + r"""    label_bound : float or (lo, hi)
        Declared public bound on the targets: |y| <= label_bound, or lo <= y <= hi (the targets are centred at the
        public midpoint (lo + hi)/2, added back to ``intercept_``).
    loss : {"squared", "huber"}
        The per-sample loss (Huber threshold 1 in the centred units).
    """

    def __init__(self, *, epsilon: float = 1.0, delta: float = 1e-5, radius: float = 1.0, data_norm: float = 1.0,
                 label_bound: Any = 1.0, loss: str = "squared", fit_intercept: bool = True, clip: bool = True,
                 method: str = "auto", random_state: Any = None) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.radius = radius
        self.data_norm = data_norm
        self.label_bound = label_bound
        self.loss = loss
        self.fit_intercept = fit_intercept
        self.clip = clip
        self.method = method
        self.random_state = random_state

    def _label_interval(self) -> tuple[float, float]:
        lb = self.label_bound
        if isinstance(lb, tuple | list) and len(lb) == 2:
            lo, hi = float(lb[0]), float(lb[1])
        elif isinstance(lb, Real) and not isinstance(lb, bool):
            lo, hi = -float(lb), float(lb)
        else:
            raise ValueError(f"label_bound must be a number > 0 or a pair (lo, hi) with lo < hi, got {lb!r}")
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ValueError(f"label_bound must be a number > 0 or a pair (lo, hi) with lo < hi, got {lb!r}")
        return lo, hi

    def fit(self, X: Any, y: Any) -> L1PrivateRegressor:
        """Fit on samples ``X`` (n, d) and targets ``y`` (n,); returns self."""
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        if self.loss not in ("squared", "huber"):
            raise ValueError(f"loss must be 'squared' or 'huber', got {self.loss!r}")
        lo, hi = self._label_interval()
        mid, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
        yc = y - mid
        if not self.clip and np.any(np.abs(yc) > half * (1 + 1e-9)):
            raise ValueError(f"label_bound = {self.label_bound!r} is violated by {int(np.sum(np.abs(yc) > half))} "
                             "targets; declare a public bound that holds for every target, or pass clip=True")
        self._fit_problem(X, yc, half)
        self.intercept_ += mid
        return self

    def predict(self, X: Any) -> np.ndarray:
        """``X @ coef_ + intercept_``."""
        return self._decision(X)

    def excess_risk(self, X: Any, y: Any) -> float:
        """Empirical excess risk of the fitted model on ``(X, y)`` against the exact l1-constrained optimum of
        that data (cvxpy + Clarabel), in the centred units of the fit. A non-private diagnostic of the data passed:
        not covered by the certificate."""
        check_is_fitted(self, "coef_")
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64, reset=False)
        lo, hi = self._label_interval()
        problem = self._problem(X, y - 0.5 * (lo + hi), 0.5 * (hi - lo))
        return float(problem.excess_risk(problem.feasible_set.project(self._weights(problem.d, 0.5 * (lo + hi)))))

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True  # a private fit at eps = 1 on a few hundred samples
        return tags


class L1PrivateClassifier(ClassifierMixin, _L1PrivateLinear):
    __doc__ = r"""Private binary logistic regression over the l1 ball, scikit-learn style.

    ``fit(X, y)`` maps the two classes to -1, +1, builds the logistic problem with
    :func:`~dpsco_lib.problems.from_data`, runs the chosen private method and certifies ``(epsilon, delta)`` under
    replace-one neighbours (``certified_epsilon_``). ``predict_proba`` is the logistic model's; ``score`` is the
    accuracy. Fitted ``classes_`` (two labels).
    """ + _INIT_DOC

    _loss = "logistic"

    def __init__(self, *, epsilon: float = 1.0, delta: float = 1e-5, radius: float = 1.0, data_norm: float = 1.0,
                 fit_intercept: bool = True, clip: bool = True, method: str = "auto", random_state: Any = None
                 ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.radius = radius
        self.data_norm = data_norm
        self.fit_intercept = fit_intercept
        self.clip = clip
        self.method = method
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> L1PrivateClassifier:
        """Fit on samples ``X`` (n, d) and two-class labels ``y`` (n,); returns self."""
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        y_type = type_of_target(y, input_name="y", raise_unknown=True)
        if y_type != "binary":
            raise ValueError(f"Only binary classification is supported. The type of the target is {y_type}.")
        self.classes_, yi = np.unique(y, return_inverse=True)
        if self.classes_.size != 2:
            raise ValueError(f"y must hold exactly 2 classes (binary classification), got {self.classes_.size} class")
        return self._fit_problem(X, np.where(yi == 1, 1.0, -1.0), None)

    def excess_risk(self, X: Any, y: Any) -> float:
        """Empirical logistic excess risk of the fitted model on ``(X, y)`` against the exact l1-constrained optimum
        of that data (cvxpy + Clarabel). A non-private diagnostic of the data passed: not covered by the
        certificate."""
        check_is_fitted(self, "coef_")
        X, y = validate_data(self, X, y, dtype=np.float64, reset=False)
        if not np.all(np.isin(y, self.classes_)):
            raise ValueError(f"y must hold labels among classes_ = {self.classes_.tolist()}")
        problem = self._problem(X, np.where(y == self.classes_[1], 1.0, -1.0), None)
        return float(problem.excess_risk(problem.feasible_set.project(self._weights(problem.d))))

    def decision_function(self, X: Any) -> np.ndarray:
        """The margin ``X @ coef_ + intercept_`` (positive: ``classes_[1]``)."""
        return self._decision(X)

    def predict(self, X: Any) -> np.ndarray:
        """``classes_[1]`` where the margin is positive, else ``classes_[0]``."""
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(int)]

    def predict_proba(self, X: Any) -> np.ndarray:
        """Logistic probabilities ``[1 - s, s]``, ``s = 1/(1 + exp(-margin))``."""
        from scipy.special import expit

        s = expit(self.decision_function(X))
        return np.column_stack([1.0 - s, s])

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        tags.classifier_tags.multi_class = False
        return tags
