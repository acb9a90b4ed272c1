"""Alignment and uniformity of sentence vectors (Wang and Isola 2020, "Understanding Contrastive Representation
Learning through Alignment and Uniformity on the Hypersphere", section 4.1, eq. for L_align and L_uniform), on
L2-normalised vectors ``f(x)``:

    alignment  = E_{(x, y) ~ positive pairs} ||f(x) - f(y)||_2^alpha                  (alpha = 2)
    uniformity = log E_{x, y ~ data, i.i.d.} exp(-t ||f(x) - f(y)||_2^2)                (t = 2)

lower is better for both; SimCSE (Gao et al. 2021, section 5) reads them with these settings, positive pairs the
STS-B pairs of a high gold score. The expectation of uniformity runs here over the distinct pairs of a sample.
"""
from __future__ import annotations

import numpy as np
from scipy.special import logsumexp


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def alignment(u: np.ndarray, v: np.ndarray, alpha: float = 2.0) -> float:
    """Mean ``||u_i - v_i||^alpha`` of the normalised rows of ``u`` and ``v`` (row ``i`` a positive pair)."""
    if u.shape != v.shape or u.ndim != 2 or len(u) == 0:
        raise ValueError(f"alignment takes two [n, d] arrays of positive pairs, row by row: got {u.shape}, {v.shape}")
    return float(np.mean(np.linalg.norm(_unit(u) - _unit(v), axis=1) ** alpha))


def uniformity(x: np.ndarray, t: float = 2.0) -> float:
    """``log`` of the mean of ``exp(-t ||x_i - x_j||^2)`` over the pairs ``i < j`` of the normalised rows."""
    if x.ndim != 2 or len(x) < 2:
        raise ValueError(f"uniformity needs at least two vectors [n, d]: got {x.shape}")
    z = _unit(x)
    squared = np.maximum(2.0 - 2.0 * (z @ z.T), 0.0)  # ||a - b||^2 of unit vectors
    upper = squared[np.triu_indices(len(z), k=1)]
    return float(logsumexp(-t * upper) - np.log(len(upper)))
