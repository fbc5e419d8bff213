"""Maurey sparsification: K-vertex estimates of a point of a polytope (Spec M1-M3, A1-A5).

For x in the simplex Delta_d, the Maurey estimate is x~ = (1/K) sum_{k<=K} e_{i_k} with
i_1, ..., i_K i.i.d. ~ Cat(x), so E x~ = x and x~ is K-sparse; for a polytope conv(V) with
barycentric weights w (x = V^T w) it is (1/K) sum_k v_{i_k}, i_k ~ Cat(w).  [GGP24, Section 2]

Sampling is exact (up to float64 rounding of the probabilities):

- probabilities are taken from weights or, with ``log_weights=True``, from log-weights as
  exp(l - logsumexp(l)) (stable for scores of any magnitude and d up to 1e7);
- ``maurey_indices`` draws by inversion: one cumulative sum (O(d)) shared by all draws, then a
  binary search per draw (O(log d)); zero-probability indices are never returned;
- ``maurey_counts`` returns the multinomial counts: for K >= V by ``rng.multinomial`` (O(V) per
  row), otherwise by inversion + bincount (O(V + K log V) per row), whichever is cheaper.

The library works in the idealized real-arithmetic model (float64, non-cryptographic RNG).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import logsumexp

from dpsco_lib._validation import check_array, check_bool, check_int, check_rng

__all__ = ["maurey_counts", "maurey_indices", "maurey_probabilities", "maurey_sample"]

_SUM_TOL = 1e-6


def maurey_probabilities(x: Any, *, log_weights: bool = False) -> np.ndarray:
    """Validate weights (or log-weights) and return the probability vector (float64, sums to 1).

    Weights must be non-negative (entries >= -1e-12 are clipped to 0) and sum to 1 within 1e-6; they
    are then renormalized.  Log-weights may be any reals or -inf (unnormalized), not all -inf.
    """
    if check_bool(log_weights, "log_weights"):
        lw = check_array(x, "x", ndim=1, finite=False)
        if np.any(np.isnan(lw)) or np.any(lw == np.inf):
            raise ValueError("log-weights x must not contain NaN or +inf")
        if np.all(np.isneginf(lw)):
            raise ValueError("log-weights x must have at least one finite entry")
        return np.exp(lw - logsumexp(lw))
    w = check_array(x, "x", ndim=1)
    if np.any(w < -1e-12):
        raise ValueError(f"weights x must be non-negative, smallest entry is {float(w.min())!r}")
    w = np.maximum(w, 0.0)
    s = float(w.sum())
    if abs(s - 1.0) > _SUM_TOL:
        raise ValueError(f"weights x must sum to 1 (a point of the simplex), got sum {s!r}")
    return w / s


def inverse_cdf_draws(prob: np.ndarray, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    cdf = np.cumsum(prob)
    cdf /= cdf[-1]
    u = rng.random(shape)
    idx = np.searchsorted(cdf, u, side="right")
    # u < 1 = cdf[last positive index], so idx never exceeds it; guard against rounding anyway
    return np.minimum(idx, prob.size - 1)


def maurey_indices(
    x: Any, K: int, rng: np.random.Generator, size: int | None = None, *, log_weights: bool = False
) -> np.ndarray:
    """K i.i.d. indices i_k ~ Cat(x): shape (K,), or (size, K) for ``size`` independent estimates."""
    rng = check_rng(rng)
    K = check_int(K, "K", lo=1)
    prob = maurey_probabilities(x, log_weights=log_weights)
    shape = (K,) if size is None else (check_int(size, "size", lo=1), K)
    return inverse_cdf_draws(prob, shape, rng)


def maurey_counts(
    x: Any, K: int, rng: np.random.Generator, size: int | None = None, *, log_weights: bool = False
) -> np.ndarray:
    """Multinomial(K, x) counts of the K draws: int64 array of shape (V,) or (size, V), rows sum to K."""
    rng = check_rng(rng)
    K = check_int(K, "K", lo=1)
    prob = maurey_probabilities(x, log_weights=log_weights)
    v = prob.size
    m = 1 if size is None else check_int(size, "size", lo=1)
    if K >= v:
        # numpy requires sum(pvals[:-1]) <= 1 exactly; putting the largest probability last makes the
        # rounding of that partial sum harmless (it is then <= 1 - max p).
        last = int(np.argmax(prob))
        order = np.concatenate([np.arange(last), np.arange(last + 1, v), [last]])
        counts = np.empty((m, v), dtype=np.int64)
        counts[:, order] = rng.multinomial(K, prob[order], size=m)
    else:
        idx = inverse_cdf_draws(prob, (m, K), rng)
        flat = (idx + v * np.arange(m)[:, None]).ravel()
        counts = np.bincount(flat, minlength=m * v).reshape(m, v)
    counts = counts.astype(np.int64, copy=False)
    return counts[0] if size is None else counts


def maurey_sample(
    x: Any,
    K: int,
    rng: np.random.Generator,
    size: int | None = None,
    *,
    vertices: Any = None,
    log_weights: bool = False,
) -> np.ndarray:
    """The Maurey estimate x~ = (1/K) sum_k v_{i_k}, i_k i.i.d. ~ Cat(x) (Spec M1, A1).

    Parameters
    ----------
    x : array (V,)
        A point of the simplex (``vertices=None``: V = d and v_i = e_i) or barycentric weights of a point
        of conv(vertices); log-weights if ``log_weights=True``.
    K : int
        Number of vertex draws.
    rng : numpy.random.Generator
    size : int, optional
        Number of independent estimates; output (size, d) instead of (d,).
    vertices : array (V, d), optional
        Vertex list of a polytope; the estimate is counts/K @ vertices.

    Returns
    -------
    ndarray of shape (d,) or (size, d), with E[x~] = x (resp. V^T x).
    """
    counts = maurey_counts(x, K, rng, size, log_weights=log_weights)
    avg = counts / float(K)
    if vertices is None:
        return avg
    vv = check_array(vertices, "vertices", ndim=2)
    if vv.shape[0] != counts.shape[-1]:
        raise ValueError(f"vertices must have {counts.shape[-1]} rows (one per weight), got shape {vv.shape}")
    return avg @ vv
