r"""The book's privacy rule, defined once: every private run of a theorem check uses
:math:`\delta = n^{-1.1}` (:func:`delta_for_n`) and :math:`\varepsilon \le 2`; comparisons of algorithms at one
privacy level use :data:`EPSILON` under replace-one neighbours. An algorithm certified under add/remove neighbours
(DP-SGD, Poisson subsampling) is calibrated for the replace-one target through the explicit group-of-two
conversion (:func:`replace_one_target`, :func:`replace_one_certificate`).

A :math:`\delta` of order :math:`1/n` or larger would allow releasing one record in the clear, so the exponent
:data:`DELTA_POWER` exceeds 1 and :math:`\delta < 1/n` at every :math:`n \ge 2`.
"""

from __future__ import annotations

import math
from typing import Any

from dpsco_lib._validation import check_delta, check_epsilon, check_int, check_positive
from dpsco_lib.privacy.accounting import certify_events, to_replace_one
from dpsco_lib.privacy.accounting.accountants import DEFAULT_ACCOUNTANT

__all__ = ["DELTA_POWER", "DELTA_RULE", "EPSILON", "MAX_EPSILON", "delta_for_n", "replace_one_certificate",
           "replace_one_target"]

#: Exponent of the delta rule: ``delta = n ** -DELTA_POWER``.
DELTA_POWER = 1.1
#: The delta rule as text, for tables and printed headers.
DELTA_RULE = f"n^-{DELTA_POWER:g}"
#: The epsilon at which the book compares algorithms with each other (the crossover table, the sparse checks).
EPSILON = 1.0
#: The largest epsilon of a theorem check (ablations excepted).
MAX_EPSILON = 2.0


def delta_for_n(n: int, power: float = DELTA_POWER) -> float:
    r"""The book's delta rule, :math:`\delta = n^{-\text{power}}` (default ``n^-1.1``), so :math:`\delta < 1/n`.

    Parameters
    ----------
    n : int
        Number of records (>= 2).
    power : float
        Exponent, > 1 (a delta of order 1/n or larger is not a meaningful guarantee).
    """
    n = check_int(n, "n", lo=2)
    power = check_positive(power, "power")
    if power <= 1:
        raise ValueError(f"power must exceed 1 so that delta < 1/n, got {power!r}")
    return float(math.exp(-power * math.log(n)))


def replace_one_target(epsilon: float, delta: float) -> tuple[float, float]:
    r"""The add/remove target whose group-of-two conversion is a replace-one ``(epsilon, delta)`` guarantee.

    Add/remove :math:`(e, \delta')` implies replace-one :math:`(2e, (1 + e^{e})\delta')` (a replacement is a removal
    followed by an addition), so :math:`e = \varepsilon/2`, :math:`\delta' = \delta/(1 + e^{\varepsilon/2})`.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, allow_zero=False)
    return eps / 2.0, dlt / (1.0 + math.exp(eps / 2.0))


def replace_one_certificate(result: Any, delta: float, accountant: str = DEFAULT_ACCOUNTANT.name) -> float:
    """Replace-one epsilon at ``delta`` of an add/remove run, through the explicit conversion (``to_replace_one``)."""
    if getattr(result, "relation", None) != "add_remove":
        raise ValueError(f"result must be certified under 'add_remove', got {getattr(result, 'relation', None)!r}")
    return float(certify_events((to_replace_one(*result.ledger.events),), check_delta(delta), accountant))
