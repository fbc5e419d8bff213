"""Loss families with their constants, data generators and exact population optima.

Convex programs (:class:`Problem`): any loss on your own records (:func:`from_data`, over the empirical
distribution), least squares with closed-form population risk (Spec S1), logistic
regression (population = a large fixed sample), a nonconvex robust regression (Spec N1).
Saddle point problems (:class:`SaddleProblem`): bilinear, quadratic and softmax games on simplices
(Spec A1), linear-query release (Spec X1) and group-robust regression (Spec X2).

The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from dpsco_lib.problems.applications import (
    QUERY_RELEASE_FAMILY,
    LinearQueryGame,
    MaxOfLosses,
    group_robust_breast_cancer,
    linear_query_game_from_sklearn,
    load_sklearn_table,
    max_of_losses_from_sklearn,
    query_release_instance,
)
from dpsco_lib.problems.base import Problem, SaddleProblem, solve_cvxpy
from dpsco_lib.problems.best_response import BestResponseProblem, best_response_problem
from dpsco_lib.problems.dataset import Dataset
from dpsco_lib.problems.empirical import (
    LOSSES,
    EmpiricalProblem,
    HuberLoss,
    LogisticLoss,
    Loss,
    SquaredLoss,
    check_loss_constants,
    from_data,
    require_problem,
)
from dpsco_lib.problems.games import (
    BilinearGame,
    QuadraticGame,
    SoftmaxGame,
    random_bilinear_game,
    random_quadratic_game,
    random_softmax_game,
)
from dpsco_lib.problems.hard_games import HiddenVertexGame, hidden_vertex_family, hidden_vertex_game
from dpsco_lib.problems.hard_linear import HardLinear, SparseHardLinear, hard_linear
from dpsco_lib.problems.hard_lp import FingerprintLinearLp, fingerprint_lower_bound, fingerprint_prior
from dpsco_lib.problems.hard_saddle import (
    PlantedLinearSCO,
    PlantedMatrixGame,
    planted_game_family,
    planted_sco_family,
)
from dpsco_lib.problems.hard_sco import PlantedCubeLinear, PlantedLpLinear, planted_cube_linear, planted_lp_linear
from dpsco_lib.problems.least_squares import (
    LeastSquares,
    hard_least_squares,
    max_feasible_norm,
    random_least_squares,
)
from dpsco_lib.problems.lecture import (
    LinearLossProblem,
    LogisticRegressionProblem,
    SparseLogisticSampler,
    linear_loss_data,
    logistic_regression_data,
)
from dpsco_lib.problems.lifted import L1LiftedSaddle, lift_max_of_losses, pooled_logistic_problem
from dpsco_lib.problems.logistic import LogisticRegression, RobustRegression, random_logistic
from dpsco_lib.problems.nonconvex import NonconvexRegression, random_nonconvex_regression
from dpsco_lib.problems.stream import BlockSampler, DataStream, IntegerDraw

__all__ = [
    "BestResponseProblem",
    "BilinearGame",
    "BlockSampler",
    "DataStream",
    "Dataset",
    "EmpiricalProblem",
    "HuberLoss",
    "LOSSES",
    "LogisticLoss",
    "Loss",
    "SquaredLoss",
    "check_loss_constants",
    "from_data",
    "require_problem",
    "HardLinear",
    "SparseHardLinear",
    "FingerprintLinearLp",
    "IntegerDraw",
    "LeastSquares",
    "LinearLossProblem",
    "LogisticRegressionProblem",
    "L1LiftedSaddle",
    "LinearQueryGame",
    "LogisticRegression",
    "MaxOfLosses",
    "NonconvexRegression",
    "PlantedCubeLinear",
    "PlantedLinearSCO",
    "PlantedLpLinear",
    "PlantedMatrixGame",
    "Problem",
    "QuadraticGame",
    "RobustRegression",
    "SaddleProblem",
    "SoftmaxGame",
    "SparseLogisticSampler",
    "best_response_problem",
    "fingerprint_lower_bound",
    "fingerprint_prior",
    "hard_least_squares",
    "hard_linear",
    "HiddenVertexGame",
    "hidden_vertex_family",
    "hidden_vertex_game",
    "lift_max_of_losses",
    "linear_loss_data",
    "linear_query_game_from_sklearn",
    "load_sklearn_table",
    "logistic_regression_data",
    "max_feasible_norm",
    "max_of_losses_from_sklearn",
    "planted_cube_linear",
    "planted_game_family",
    "planted_lp_linear",
    "planted_sco_family",
    "QUERY_RELEASE_FAMILY",
    "group_robust_breast_cancer",
    "query_release_instance",
    "pooled_logistic_problem",
    "random_bilinear_game",
    "random_least_squares",
    "random_logistic",
    "random_nonconvex_regression",
    "random_quadratic_game",
    "random_softmax_game",
    "solve_cvxpy",
]
