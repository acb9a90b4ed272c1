"""What every regime shares: SentEval's features for a task's splits, labels as class ids, correlations as
SentEval computes them, and SentEval's scikit-learn logistic regression (``usepytorch: False``)."""
from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np
from sklearn.linear_model import LogisticRegression

from sentence_lab.tasks.base import Split

Embed = Callable[[list[str]], np.ndarray]

# SentEval's C grids when ``usepytorch`` is False (``tools/validation.py``).
NESTED_AND_SPLIT_C = tuple(2.0 ** t for t in range(-2, 4))  # InnerKFoldClassifier, SplitClassifier
KFOLD_C = tuple(2.0 ** t for t in range(-1, 6))  # KFoldClassifier
NOREG_C = (1e9,)  # SNLI's ``noreg``


def labels(y) -> np.ndarray:
    """Labels as a flat int64 array of class ids."""
    return np.asarray(y).astype(np.int64).reshape(-1)


def absdiff_prod(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """SentEval's pair features for MRPC, SICK and STS-B: ``[|u - v|, u * v]``."""
    return np.concatenate([np.abs(u - v), u * v], axis=1)


def snli_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """SentEval's SNLI features: ``[u, v, u * v, |u - v|]``."""
    return np.concatenate([u, v, u * v, np.abs(u - v)], axis=1)


FEATURES = {"absdiff_prod": absdiff_prod, "snli": snli_features}


def features(split: Split, embed: Embed, kind: str | None) -> np.ndarray:
    """A split's classifier input: the sentence vectors, or the pair features ``kind`` names."""
    if split.b is None:
        return embed(split.a)
    return FEATURES[kind or "absdiff_prod"](embed(split.a), embed(split.b))


def clean(result: dict) -> dict:
    """Numpy scalars as Python numbers; ``yhat`` (test predictions, as SentEval returns them) is kept: the
    runner leaves it out of the results file, the SentEval API returns it."""
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in result.items()}


def item_ids(split: Split) -> np.ndarray:
    """Each example's identity, uint64: the first 8 bytes of BLAKE2b of its text (a pair's sentences joined by a tab).
    The same item has the same id in every results file, whatever the encoder (paired tests align on it)."""
    texts = split.a if split.b is None else [f"{a}\t{b}" for a, b in zip(split.a, split.b)]
    return np.array([int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little") for t in texts],
                    dtype=np.uint64)


def test_items(split: Split, pred, **columns) -> dict[str, np.ndarray]:
    """The per-item record of a scored split (``items`` of a regime's result, written beside the results file, never
    into it): ``ids``, ``gold``, ``pred`` (class ids, or scores), and ``columns`` (``fold``, ``subset``)."""
    return {"ids": item_ids(split), "gold": np.asarray(split.y), "pred": np.asarray(pred),
            **{k: np.asarray(v) for k, v in columns.items()}}


def correlation(fn, x: np.ndarray, y: np.ndarray) -> float:
    """``fn(x, y)[0]`` (scipy's pearsonr or spearmanr) as a float; NaN where undefined (constant input)."""
    if len(x) < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return float("nan")  # undefined (scipy would warn and return NaN too)
    return float(fn(x, y)[0])


def check_not_constant(task: str, X: np.ndarray) -> None:
    """Constant features make every prediction equal, so a correlation is undefined (SentEval reports -1 or 0)."""
    if len(X) and not np.ptp(X, axis=0).any():
        raise ValueError(f"{task}: every pair has the same features (the encoder gives all these sentences one "
                         "vector), so no correlation can be computed: check the encoder")


def fit_logistic(X: np.ndarray, y: np.ndarray, c: float, seed: int) -> LogisticRegression:
    """SentEval's scikit-learn classifier: ``LogisticRegression(C=c, random_state=seed)``, scikit-learn's
    defaults otherwise; no early stopping and no 5% hold-out."""
    return LogisticRegression(C=c, random_state=seed).fit(X, y)


def best_of(scores: list[float], grid: tuple[float, ...]) -> tuple[float, float]:
    """SentEval's ``regs[np.argmax(scores)]`` and ``np.max(scores)`` (the first of equal scores wins)."""
    return grid[int(np.argmax(scores))], float(np.max(scores))
