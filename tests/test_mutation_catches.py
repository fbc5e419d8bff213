"""Checks added for mutants of the mutation suite (``mutation/``) that the rest of the tests let survive.

Each test is a real check of the library's behaviour (an exact value, an ordering that a theorem guarantees, or a
statistical test with a stated false-alarm probability), never a test of source text. The mutant each one catches is
named in its docstring; ``make mutants`` runs them against it.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpsco_lib.privacy.accounting import gdp_epsilon, rdp_to_epsilon
from dpsco_lib.privacy.accounting.rdp import rdp_gaussian


@pytest.mark.parametrize("delta", [1e-5, 1e-3, 0.1])
@pytest.mark.parametrize("noise_multiplier", [0.5, 1.0, 10.0, 100.0, 300.0, 1000.0, 3000.0])
def test_rdp_certificate_never_below_the_exact_gaussian_curve(noise_multiplier, delta):
    """RDP -> (eps, delta) is an upper bound: never below the tight mu-GDP curve of the same Gaussian mechanism.

    At delta = 1e-5 the exact epsilon is positive for every multiplier here (delta(0) = 2 Phi(1/(2m)) - 1 > delta).
    Large noise multipliers make the RDP curve tiny (alpha/(2 m^2) < delta at small orders), where a wrong
    Bretagnolle-Huber shortcut (``delta`` for ``delta**2``) certifies eps = 0 (mutant ``acc-rdp-zero-guard``).
    """
    eps_rdp, _ = rdp_to_epsilon(rdp_gaussian(noise_multiplier), orders=None, delta=delta)
    eps_exact = gdp_epsilon(1.0 / noise_multiplier, delta=delta)
    assert eps_rdp >= eps_exact * (1 - 1e-9)
    assert np.isfinite(eps_rdp)
