"""dpsco_lib: differentially private stochastic convex optimization and saddle points in
non-Euclidean (l1, polyhedral, l_p) geometry.

The library works in the idealized real-arithmetic model: noise is drawn in float64 with a
non-cryptographic RNG (numpy's PCG64). Floating-point attacks (Mironov 2012), timing and precision
side channels are out of scope. It is a research companion; never use it to release real data.
"""

from dpsco_lib._version import __version__

__all__ = ["__version__"]
