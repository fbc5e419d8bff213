"""The algorithm registry: one frozen record per algorithm of the library.

Everything that enumerates algorithms reads this table: the package exports (:mod:`dpsco_lib.algorithms`),
the benchmark suite, the API page and the contract tests (``tests/lib/algorithms/test_registry.py``, in the style of
scikit-learn's ``parametrize_with_checks``). Adding an algorithm touches its module, one record here and its tests
(see ``CONTRIBUTING.md``).

Each record carries a small valid instance (:attr:`AlgorithmRecord.example`), so a generic test can call any
runner, break one input at a time, and check that the runner refuses it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpsco_lib.algorithms.anytime_smd import alg5_theory_params, run_anytime_smd_sco
from dpsco_lib.algorithms.applications import run_alg1_query_release, run_group_blind_erm, run_group_robust_alg1
from dpsco_lib.algorithms.bias_reduced_saddle import alg3_theory_params, run_bias_reduced_smd_saddle
from dpsco_lib.algorithms.boosted_saddle import alg4_theory_params, run_boosted_saddle
from dpsco_lib.algorithms.dp_sgd import run_dp_sgd
from dpsco_lib.algorithms.gg_vr_sfw import gg_vr_sfw_theory_params, run_gg_vr_sfw
from dpsco_lib.algorithms.mwem import run_mwem
from dpsco_lib.algorithms.noisy_sgd import noisy_sgd_theory_params, run_noisy_sgd
from dpsco_lib.algorithms.nonconvex import (
    proximal_weakly_convex_theory_params,
    run_private_proximal_weakly_convex,
    run_private_vr_fw_nonconvex,
    vr_fw_nonconvex_theory_params,
)
from dpsco_lib.algorithms.poly_sfw import poly_sfw_theory_params, run_poly_sfw
from dpsco_lib.algorithms.private_smd_saddle import alg1_theory_params, run_private_smd_saddle, run_smd_saddle
from dpsco_lib.algorithms.regularized_exponential import (
    noisy_gd_theory_params,
    pure_exp_theory_params,
    regularized_exp_theory_params,
    run_noisy_gradient_descent,
    run_pure_exponential_mechanism,
    run_regularized_exponential_mechanism,
)
from dpsco_lib.algorithms.smd import run_smd, smd_theory_params
from dpsco_lib.algorithms.sparse import run_bias_reduced_dp_sgd, run_output_perturbation
from dpsco_lib.algorithms.vr_frank_wolfe import run_private_vr_frank_wolfe, vr_frank_wolfe_theory_params
from dpsco_lib.privacy.accounting.accountants import DEFAULT_ACCOUNTANT, GDP, Accountant
from dpsco_lib.privacy.accounting.events import ADD_REMOVE, REPLACE_ONE, check_relation
from dpsco_lib.problems.base import Problem, SaddleProblem
from dpsco_lib.problems.dataset import Dataset

__all__ = ["REGISTRY", "AlgorithmRecord", "Example", "Registry", "get_algorithm", "private_algorithms"]

FAMILIES = ("convex", "frank_wolfe", "saddle", "applications", "lecture")


@dataclass(frozen=True)
class Example:
    """A small valid call of a runner: ``runner(*args, rng=rng, **kwargs)`` (plus epsilon, delta if private).

    ``data_index`` is the position in ``args`` of the :class:`~dpsco_lib.problems.Dataset` (None when the runner
    takes its data another way); ``scale_out_of_bound`` multiplies the records to leave the problem's declared
    norm bound (None when the problem declares no bound).
    """

    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    data_index: int | None = 1
    scale_out_of_bound: float | None = 10.0
    epsilon: float = 1.0
    delta: float = 1e-5


@dataclass(frozen=True)
class AlgorithmRecord:
    """One algorithm: what it is, what it accepts, how it is certified, where the book checks it.

    Attributes
    ----------
    key : str
        Unique short name (``"F1 Poly-SFW"``).
    spec : str
        The theorem-catalogue ID (``"F1"``).
    name : str
        Human name.
    runner : callable
        ``run_<name>(problem, data, *, epsilon, delta, rng, **hyper) -> Result`` (or the runner's own data
        arguments, see :attr:`example`).
    theory_params : callable or None
        The public ``<runner>_theory_params`` function object (returns a frozen parameters class); None when the
        runner has none.
    problem_kinds : tuple of type
        Problem classes the runner accepts (empty: it takes no Problem).
    relation : str or None
        Neighbouring relation of its certificate (``"replace_one"`` or ``"add_remove"``; None if non-private).
    family : str
        One of :data:`FAMILIES`.
    example : callable
        ``rng -> Example``: a small valid instance.
    accountant : Accountant or None
        The accountant the runner certifies with when called with its defaults (private records;
        :data:`~dpsco_lib.privacy.accounting.accountants.DEFAULT_ACCOUNTANT` unless the mechanism is
        Gaussian-only, where :data:`~dpsco_lib.privacy.accounting.accountants.GDP` is exact).
    benchmark : str or None
        Name of its benchmark case in ``benchmarks/bench_cases.py`` (optional).

    Raises
    ------
    TypeError
        When ``runner``, ``example`` or ``theory_params`` is not callable (a theory function is referred to by its
        function object, so a misspelt name fails when the registry is imported).
    ValueError
        When ``family`` is unknown, or a private record has no relation or accountant (or a non-private one has).
    """

    key: str
    spec: str
    name: str
    runner: Callable[..., Any]
    theory_params: Callable[..., Any] | None
    problem_kinds: tuple[type, ...]
    relation: str | None
    family: str
    example: Callable[[np.random.Generator], Example]
    accountant: Accountant | None = None
    benchmark: str | None = None

    def __post_init__(self) -> None:
        for attr in ("runner", "example"):
            if not callable(getattr(self, attr)):
                raise TypeError(f"{self.key}: {attr} must be callable, got {getattr(self, attr)!r}")
        if self.theory_params is not None and not callable(self.theory_params):
            raise TypeError(f"{self.key}: theory_params must be a function or None, got {self.theory_params!r}")
        if self.family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}, got {self.family!r}")
        if self.relation is not None:
            check_relation(self.relation)
        if (self.accountant is not None) != self.private:
            raise ValueError(f"{self.key}: a private record (relation set) needs an accountant, a non-private one none")
        if self.accountant is not None and not isinstance(self.accountant, Accountant):
            raise TypeError(f"{self.key}: accountant must be an Accountant, got {self.accountant!r}")

    @property
    def private(self) -> bool:
        """Whether the runner certifies differential privacy through its ledger (it has a relation)."""
        return self.relation is not None


class Registry(Sequence[AlgorithmRecord]):
    """An immutable, ordered collection of :class:`AlgorithmRecord` with unique keys.

    The library's table is :data:`REGISTRY`; :meth:`register` returns a copy with one more record, which is how a
    new algorithm is checked before it is added to the table (``tests/lib/test_add_algorithm.py``).
    """

    def __init__(self, records: Sequence[AlgorithmRecord] = ()) -> None:
        recs = tuple(records)
        for r in recs:
            if not isinstance(r, AlgorithmRecord):
                raise TypeError(f"records must be AlgorithmRecords, got {type(r).__name__}")
        keys = [r.key for r in recs]
        dup = sorted({k for k in keys if keys.count(k) > 1})
        if dup:
            raise ValueError(f"record keys must be unique, got duplicates {dup}")
        self._records = recs

    def __getitem__(self, i):  # type: ignore[override]
        return self._records[i]

    def __len__(self) -> int:
        return len(self._records)

    def __repr__(self) -> str:
        return f"Registry({len(self)} records)"

    def register(self, record: AlgorithmRecord) -> Registry:
        """A copy of this registry with ``record`` appended (``ValueError`` if its key is taken)."""
        return Registry((*self._records, record))

    def get(self, key: str) -> AlgorithmRecord:
        """The record with this key; ``ValueError`` naming the known keys otherwise."""
        for r in self._records:
            if r.key == key:
                return r
        raise ValueError(f"key must be one of {[r.key for r in self._records]}, got {key!r}")

    def private(self) -> tuple[AlgorithmRecord, ...]:
        """The records that certify differential privacy."""
        return tuple(r for r in self._records if r.private)


# ---------------------------------------------------------------------------------------------------------------
# Small instances (module level, so records pickle)
# ---------------------------------------------------------------------------------------------------------------


def _ls(p: float, d: int, set_kind: str, n: int, rng: np.random.Generator) -> tuple[Problem, Dataset]:
    from dpsco_lib.problems.least_squares import hard_least_squares

    prob = hard_least_squares(p, d, set_kind=set_kind)
    return prob, prob.sample(n, rng)


def _ex_smd(rng: np.random.Generator) -> Example:
    return Example(_ls(1.0, 8, "simplex", 200, rng))


def _ex_l1(rng: np.random.Generator) -> Example:
    return Example(_ls(1.0, 8, "l1ball", 400, rng))


def _ex_gg(variant: str) -> Callable[[np.random.Generator], Example]:
    return _GGExample(variant)


@dataclass(frozen=True)
class _GGExample:
    variant: str

    def __call__(self, rng: np.random.Generator) -> Example:
        return Example(_ls(1.5, 8, "simplex", 800, rng), {"variant": self.variant})


def _ex_dp_sgd(rng: np.random.Generator) -> Example:
    prob, data = _ls(1.0, 8, "l1ball", 400, rng)
    return Example((prob, data), {"sampling_rate": 0.1, "steps": 20, "clip": 3.0, "step_size": 0.05})


def _ex_nonconvex(rng: np.random.Generator) -> Example:
    from dpsco_lib.problems.nonconvex import random_nonconvex_regression

    prob = random_nonconvex_regression(5, 50, np.random.default_rng(2), kind="smooth")
    return Example((prob, prob.sample(400, rng)))


def _ex_nonconvex_weak(rng: np.random.Generator) -> Example:
    from dpsco_lib.problems.nonconvex import random_nonconvex_regression

    prob = random_nonconvex_regression(4, 60, np.random.default_rng(1), kind="nonsmooth")
    return Example((prob, prob.sample(400, rng)))


def _game(rng: np.random.Generator, n: int) -> tuple[SaddleProblem, Dataset]:
    from dpsco_lib.problems.games import random_bilinear_game

    g = random_bilinear_game(5, 5, np.random.default_rng(3))
    return g, g.sample(n, rng)


def _ex_alg1(rng: np.random.Generator) -> Example:
    return Example(_game(rng, 400), {"regime": "quadratic"})


def _ex_smd_saddle(rng: np.random.Generator) -> Example:
    return Example(_game(rng, 400))


def _ex_alg3(rng: np.random.Generator) -> Example:
    return Example(_game(rng, 600))


def _ex_alg4(rng: np.random.Generator) -> Example:
    from dpsco_lib.algorithms.private_smd_saddle import run_private_smd_saddle

    return Example(_game(rng, 1400), {"k": 2, "inner": run_private_smd_saddle,
                                      "inner_kwargs": {"regime": "quadratic"}})


def _ex_alg5(rng: np.random.Generator) -> Example:
    return Example(_ls(1.0, 6, "simplex", 400, rng), {"regime": "second_order"})


def _query_game() -> Any:
    from dpsco_lib.problems.applications import LinearQueryGame

    r = np.random.default_rng(7)
    Q = (r.random((6, 8)) < 0.5).astype(np.float64)
    return LinearQueryGame(Q, r.integers(0, 8, size=300))


def _ex_query_release(rng: np.random.Generator) -> Example:
    return Example((_query_game(),), data_index=None, scale_out_of_bound=None)


def _max_of_losses(rng: np.random.Generator) -> tuple[Any, Dataset]:
    from dpsco_lib.problems.applications import MaxOfLosses

    r = np.random.default_rng(8)
    A = r.uniform(-1.0, 1.0, size=(300, 4))
    b = np.where(r.random(300) < 0.5, -1.0, 1.0)
    g = r.integers(0, 2, size=300)
    mol = MaxOfLosses(A, b, g, radius=2.0)
    return mol, mol.sample(400, rng)


def _ex_group(rng: np.random.Generator) -> Example:
    return Example(_max_of_losses(rng))


def _ex_mwem(rng: np.random.Generator) -> Example:
    r = np.random.default_rng(9)
    Q = (r.random((6, 8)) < 0.5).astype(np.float64)
    h = np.bincount(r.integers(0, 8, size=200), minlength=8).astype(np.float64)
    return Example((h, Q), {"T": 5}, data_index=None, scale_out_of_bound=None)


def _rem_problem() -> tuple[Any, Callable[..., Any]]:
    from dpsco_lib.algorithms import regularized_exponential as rem

    return rem.LogisticRegressionProblem(d=2, radius=1.0), rem.logistic_regression_data


def _ex_rem(rng: np.random.Generator) -> Example:
    prob, make = _rem_problem()
    return Example((prob, make(40, 2, rng, signal=2.0)), scale_out_of_bound=None)


def _ex_pure_em(rng: np.random.Generator) -> Example:
    prob, make = _rem_problem()
    return Example((prob, make(40, 2, rng, signal=2.0)), {"n_steps": 50}, scale_out_of_bound=None)


def _ex_noisy_gd(rng: np.random.Generator) -> Example:
    prob, make = _rem_problem()
    return Example((prob, make(40, 2, rng, signal=2.0)), {"n_steps": 20}, scale_out_of_bound=None)


def _sparse_logistic(rng: np.random.Generator) -> tuple[Any, Dataset]:
    import math

    from dpsco_lib.algorithms.sparse import SparseLogisticSampler
    from dpsco_lib.geometry.sets import L1Ball
    from dpsco_lib.problems import LogisticRegression

    w = np.zeros(10)
    w[:2] = 2.0
    prob = LogisticRegression(L1Ball(10, math.sqrt(2) / 0.4), 2.0, feature_bound=1.0,
                              sampler=SparseLogisticSampler(w, 2), population_size=500, population_seed=0)
    return prob, prob.sample(300, rng)


def _ex_output_perturbation(rng: np.random.Generator) -> Example:
    return Example(_sparse_logistic(rng), {"lam": 0.2, "sparsity": 2})


def _ex_bias_reduced_sgd(rng: np.random.Generator) -> Example:
    return Example(_sparse_logistic(rng), {"sparsity": 2, "step_size": 0.1, "eps0": 0.2, "max_steps": 50})


# ---------------------------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------------------------


def _rec(key: str, spec: str, name: str, runner: Callable[..., Any], theory: Callable[..., Any] | None,
         kinds: tuple[type, ...], relation: str | None, family: str,
         example: Callable[[np.random.Generator], Example], benchmark: str | None = None,
         accountant: Accountant | None = DEFAULT_ACCOUNTANT) -> AlgorithmRecord:
    return AlgorithmRecord(key, spec, name, runner, theory, kinds, relation, family, example,
                           accountant if relation is not None else None, benchmark)


_P, _S = (Problem,), (SaddleProblem,)
REGISTRY: Registry = Registry((
    _rec("S1 SMD", "S1", "stochastic mirror descent", run_smd, smd_theory_params, _P, None,
         "convex", _ex_smd, "smd (non-private)"),
    _rec("S2 noisy SGD", "S2", "noisy SGD (BFTT19)", run_noisy_sgd, noisy_sgd_theory_params, _P,
         REPLACE_ONE, "convex", _ex_l1, "noisy_sgd", accountant=GDP),
    _rec("D4 DP-SGD", "D4", "DP-SGD (Poisson subsampling)", run_dp_sgd, None, _P, ADD_REMOVE,
         "lecture", _ex_dp_sgd, "dp_sgd"),
    _rec("F1 Poly-SFW", "F1", "polyhedral stochastic Frank-Wolfe", run_poly_sfw,
         poly_sfw_theory_params, _P, REPLACE_ONE, "frank_wolfe",
         _ex_l1, "poly_sfw"),
    _rec("F2 tree FW", "F2", "tree-structured variance-reduced Frank-Wolfe (AFKT21)", run_private_vr_frank_wolfe,
         vr_frank_wolfe_theory_params, _P, REPLACE_ONE,
         "frank_wolfe", _ex_l1, "private_vr_frank_wolfe"),
    _rec("F3 GG-VR-SFW naive", "F3", "generalized-Gaussian VR-SFW, naive", run_gg_vr_sfw,
         gg_vr_sfw_theory_params, _P, REPLACE_ONE,
         "frank_wolfe", _ex_gg("naive"), "gg_vr_sfw_naive"),
    _rec("F3 GG-VR-SFW tree", "F3", "generalized-Gaussian VR-SFW, tree", run_gg_vr_sfw,
         gg_vr_sfw_theory_params, _P, REPLACE_ONE,
         "frank_wolfe", _ex_gg("tree"), "gg_vr_sfw_tree"),
    _rec("N1 VR-FW nonconvex", "N1", "private variance-reduced Frank-Wolfe (stationarity)",
         run_private_vr_fw_nonconvex, vr_fw_nonconvex_theory_params, _P, REPLACE_ONE,
         "frank_wolfe", _ex_nonconvex),
    _rec("N1 proximal weakly convex", "N1", "private proximal method for weakly convex losses",
         run_private_proximal_weakly_convex, proximal_weakly_convex_theory_params, _P,
         REPLACE_ONE, "frank_wolfe", _ex_nonconvex_weak, accountant=GDP),
    _rec("A1 private SMD saddle", "A1", "private stochastic mirror descent for saddle points (Algorithm 1)",
         run_private_smd_saddle, alg1_theory_params, _S, REPLACE_ONE,
         "saddle", _ex_alg1, "private_smd_saddle"),
    _rec("A1 SMD saddle (non-private)", "A1", "stochastic mirror descent for saddle points", run_smd_saddle, None,
         _S, None, "saddle", _ex_smd_saddle),
    _rec("A3 bias-reduced SMD", "A3", "bias-reduced SMD with a random stopping time (Algorithm 3)",
         run_bias_reduced_smd_saddle, alg3_theory_params, _S, REPLACE_ONE,
         "saddle", _ex_alg3, "bias_reduced_smd_saddle"),
    _rec("A4 boosted", "A4", "boosting with private selection (Algorithm 4)", run_boosted_saddle,
         alg4_theory_params, _S, REPLACE_ONE, "saddle",
         _ex_alg4, "boosted_saddle"),
    _rec("A5 anytime SMD", "A5", "anytime online-to-batch SMD (Algorithm 5)", run_anytime_smd_sco,
         alg5_theory_params, _P, REPLACE_ONE, "convex", _ex_alg5,
         "anytime_smd_sco"),
    _rec("X1 query release", "X1", "private query release by Algorithm 1", run_alg1_query_release, None, (),
         REPLACE_ONE, "applications", _ex_query_release),
    _rec("X1 MWEM", "X1", "multiplicative weights exponential mechanism (baseline)", run_mwem, None, (),
         REPLACE_ONE, "applications", _ex_mwem),
    _rec("X2 group-robust", "X2", "group-robust learning by Algorithm 1", run_group_robust_alg1, None, _S,
         REPLACE_ONE, "applications", _ex_group),
    _rec("X2 group-blind ERM", "X2", "group-blind private ERM (baseline)", run_group_blind_erm, None, _S,
         REPLACE_ONE, "applications", _ex_group),
    _rec("R2 regularized EM", "R2", "regularized exponential mechanism", run_regularized_exponential_mechanism,
         regularized_exp_theory_params, (), REPLACE_ONE,
         "lecture", _ex_rem, accountant=GDP),
    _rec("R2 pure EM", "R2", "exponential mechanism over the feasible set (pure DP)",
         run_pure_exponential_mechanism, pure_exp_theory_params, (), REPLACE_ONE,
         "lecture", _ex_pure_em),
    _rec("R2 noisy GD", "R2", "noisy gradient descent (baseline)", run_noisy_gradient_descent,
         noisy_gd_theory_params, (), REPLACE_ONE,
         "lecture", _ex_noisy_gd, accountant=GDP),
    _rec("Z2 output perturbation", "Z2", "sparse output perturbation", run_output_perturbation, None, _P,
         REPLACE_ONE, "lecture", _ex_output_perturbation, accountant=GDP),
    _rec("Z3 bias-reduced DP-SGD", "Z3", "bias-reduced DP-SGD for sparse gradients", run_bias_reduced_dp_sgd, None,
         _P, REPLACE_ONE, "lecture", _ex_bias_reduced_sgd),
))


def get_algorithm(key: str) -> AlgorithmRecord:
    """The record of :data:`REGISTRY` with this key; ``ValueError`` naming the known keys otherwise."""
    return REGISTRY.get(key)


def private_algorithms() -> tuple[AlgorithmRecord, ...]:
    """The records of :data:`REGISTRY` that certify differential privacy."""
    return REGISTRY.private()
