"""Privacy: mechanisms (Spec P1, P2, P4, G1), accounting (P3, P5, P6) and empirical audits.

* :mod:`dpsco_lib.privacy.mechanisms`: Laplace, Gaussian (classic and analytic calibration), report noisy
  max/min, the exponential mechanism in log space, the exact generalized Gaussian sampler.
* :mod:`dpsco_lib.privacy.accounting`: :class:`~dpsco_lib.privacy.accounting.PrivacyLedger` and the
  composition theorems, RDP, mu-GDP and amplification that certify it.
* :mod:`dpsco_lib.privacy.audit`: Clopper-Pearson threshold audits, mu-GDP audits, Monte-Carlo delta(eps)
  and the canary harness for iterative algorithms.

Every guarantee holds in the idealized real-arithmetic model: noise is float64 from numpy's
non-cryptographic PCG64 generator; floating-point and timing side channels are out of scope.
"""

from dpsco_lib.privacy import accounting, audit, mechanisms
from dpsco_lib.privacy.accounting import PrivacyLedger

__all__ = ["PrivacyLedger", "accounting", "audit", "mechanisms"]
