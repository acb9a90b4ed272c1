"""The helpers of SentEval's ``senteval/utils.py`` that clients use: ``dotdict`` (the ``params`` object) and
``cosine`` (the default STS similarity)."""
from __future__ import annotations

import numpy as np

__all__ = ["dotdict", "cosine"]


class dotdict(dict):  # noqa: N801 - SentEval's name, kept for clients that import it
    """A dict whose keys are also attributes; a missing attribute is None (SentEval's ``params``)."""

    __getattr__ = dict.get
    __setattr__ = dict.__setitem__
    __delattr__ = dict.__delitem__


def cosine(u: np.ndarray, v: np.ndarray) -> float:
    """``u . v / (|u| |v|)``, SentEval's ``utils.cosine``."""
    return np.dot(u, v) / (np.linalg.norm(u) * np.linalg.norm(v))
