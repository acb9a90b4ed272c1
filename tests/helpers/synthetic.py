"""Synthetic classification data shared by the classifier tests."""
from __future__ import annotations

import numpy as np


def linear_data(n: int = 240, d: int = 6, nclasses: int = 2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian features with labels from a noisy random linear model."""
    rs = np.random.RandomState(seed)
    X = rs.randn(n, d).astype(np.float32)
    w = rs.randn(d, nclasses)
    y = (X @ w + 0.7 * rs.randn(n, nclasses)).argmax(1)
    return X, y
