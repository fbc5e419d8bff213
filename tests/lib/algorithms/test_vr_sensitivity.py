"""Tests of dpsco_lib.algorithms.vr_sensitivity: the sensitivities of the nonconvex VR Frank-Wolfe layout (Spec N1)."""

from __future__ import annotations

import pytest

from dpsco_lib.algorithms.vr_sensitivity import vr_sensitivities


# ---------------------------------------------------------------------------------------------------------
# VR Frank-Wolfe: parameters, privacy, determinism, convergence
# ---------------------------------------------------------------------------------------------------------
def test_sensitivities_of_the_nonconvex_layout():
    # the lemma with the nonconvex layout (m initial records, update batches of B): s_0 = L0 D/m, then the floor
    s4 = vr_sensitivities(11, init_batch=7, batch_size=4, step_size=0.2, L0=1.5, L1=2.0, D=3.0)
    assert s4[0] == pytest.approx(1.5 * 3.0 / 7)
    assert s4[-1] == pytest.approx(0.2 * 3.0 * (0.8 * 2.0 * 3.0 + 1.5) / 4)
