"""SentEval's early stopping, per member (:class:`EarlyStopping`)."""
from __future__ import annotations

import numpy as np


class EarlyStopping:
    """SentEval's rule per member: keep the best dev score; a check that does not improve stops training if
    ``tenacity`` non-improving checks came before it (the counter is never reset)."""

    def __init__(self, shape: tuple[int, int], tenacity: int):
        self.tenacity = tenacity
        self.best = np.full(shape, -1.0)
        self.count = np.zeros(shape, dtype=np.int64)
        self.alive = np.ones(shape, dtype=bool)
        self.nepoch = np.zeros(shape, dtype=np.int64)

    def update(self, rows: np.ndarray, scores: np.ndarray, nepoch: int) -> np.ndarray:
        """Record the scores ``[len(rows), L]`` of groups ``rows`` after ``nepoch`` epochs; return which improved."""
        alive = self.alive[rows]
        improved = alive & (scores > self.best[rows])
        worse = alive & ~improved
        self.best[rows] = np.where(improved, scores, self.best[rows])
        self.alive[rows] = alive & ~(worse & (self.count[rows] >= self.tenacity))
        self.count[rows] += worse
        self.nepoch[rows] = np.where(alive, nepoch, self.nepoch[rows])
        return improved
