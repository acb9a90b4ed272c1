"""Linear centred kernel alignment (Kornblith, Norouzi, Lee and Hinton 2019, "Similarity of Neural Network
Representations Revisited", section 3 and eq. 4 with linear kernels): for the vectors ``X [n, p1]`` and ``Y [n, p2]``
of the same ``n`` inputs, each column centred,

    CKA(X, Y) = ||Y^T X||_F^2 / (||X^T X||_F ||Y^T Y||_F),

1 for the same vectors, invariant to an orthogonal transform and an isotropic scaling of either, and defined between
layers of different widths.
"""
from __future__ import annotations

import numpy as np


def linear_cka(x: np.ndarray, y: np.ndarray) -> float:
    """Linear CKA of two ``[n, d]`` arrays of the same rows (float64 throughout); NaN when either is constant."""
    if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0]:
        raise ValueError(f"linear CKA compares the vectors of the same rows: got shapes {x.shape} and {y.shape}")
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    x = x - x.mean(axis=0)
    y = y - y.mean(axis=0)
    cross = np.linalg.norm(y.T @ x) ** 2
    norms = np.linalg.norm(x.T @ x) * np.linalg.norm(y.T @ y)
    return float(cross / norms) if norms > 0 else float("nan")
