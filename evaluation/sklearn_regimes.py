"""SentEval's scikit-learn path (``usepytorch: False``): logistic regression over a grid of C values.

What ``senteval/tools/validation.py`` does when ``usepytorch`` is False, on the same folds as the PyTorch
path: ``LogisticRegression(C=c, random_state=seed)`` with scikit-learn's defaults, fitted on each training
part and scored with ``clf.score``; no early stopping and no 5% hold-out. The grids are SentEval's:

* nested cross-validation (MR, CR, SUBJ, MPQA) and train/dev/test (SST, SICK-E, probing): C in 2^-2 .. 2^3;
* k-fold then test (TREC, MRPC): C in 2^-1 .. 2^5;
* SNLI's ``noreg``: C = 1e9.

Scores are rounded where SentEval rounds them, so the results equal SentEval's on the same features and the
same scikit-learn. Relatedness (SICK-R, STS-B) has no scikit-learn path in SentEval: it ignores the setting.
"""
from __future__ import annotations

import numpy as np
from sklearn.linear_model import LogisticRegression

__all__ = ["NESTED_AND_SPLIT_C", "KFOLD_C", "NOREG_C", "nested_cv", "kfold_then_test", "train_dev_test"]

NESTED_AND_SPLIT_C = tuple(2.0 ** t for t in range(-2, 4))
KFOLD_C = tuple(2.0 ** t for t in range(-1, 6))
NOREG_C = (1e9,)


def _fit(X: np.ndarray, y: np.ndarray, c: float, seed: int) -> LogisticRegression:
    return LogisticRegression(C=c, random_state=seed).fit(X, y)


def _best(scores: list[float], grid: tuple[float, ...]) -> tuple[float, float]:
    """SentEval's ``regs[np.argmax(scores)]`` and ``np.max(scores)`` (the first of equal scores wins)."""
    return grid[int(np.argmax(scores))], float(np.max(scores))


def nested_cv(X: np.ndarray, y: np.ndarray, folds, seed: int) -> dict:
    """``InnerKFoldClassifier``: ``folds`` from :func:`evaluation.regimes.nested_folds`."""
    devresults, testresults = [], []
    for train_idx, test_idx, inner in folds:
        scores = [round(100 * np.mean([_fit(X[tr], y[tr], c, seed).score(X[te], y[te]) for tr, te in inner]), 2)
                  for c in NESTED_AND_SPLIT_C]
        best_c, dev = _best(scores, NESTED_AND_SPLIT_C)
        devresults.append(dev)
        clf = _fit(X[train_idx], y[train_idx], best_c, seed)
        testresults.append(round(100 * clf.score(X[test_idx], y[test_idx]), 2))
    return {"devacc": float(round(np.mean(devresults), 2)), "acc": float(round(np.mean(testresults), 2)),
            "ndev": len(X), "ntest": len(X)}


def kfold_then_test(Xtrain: np.ndarray, ytrain: np.ndarray, Xtest, ytest, folds, seed: int) -> dict:
    """``KFoldClassifier``: ``folds`` from :func:`evaluation.regimes.kfold_folds`; ``Xtest=None``: dev only."""
    scores = [round(100 * np.mean([_fit(Xtrain[tr], ytrain[tr], c, seed).score(Xtrain[te], ytrain[te])
                                   for tr, te in folds]), 2) for c in KFOLD_C]
    best_c, devacc = _best(scores, KFOLD_C)
    if Xtest is None:
        return {"devacc": devacc, "ndev": len(Xtrain)}
    Xtest, ytest = np.asarray(Xtest), np.asarray(ytest)
    clf = _fit(Xtrain, ytrain, best_c, seed)
    return {"devacc": devacc, "acc": float(round(100 * clf.score(Xtest, ytest), 2)), "ndev": len(Xtrain),
            "ntest": len(Xtest), "yhat": clf.predict(Xtest)}


def train_dev_test(Xtr: np.ndarray, ytr: np.ndarray, Xdev: np.ndarray, ydev: np.ndarray, Xte, yte, seed: int,
                   noreg: bool = False) -> dict:
    """``SplitClassifier``: each C fitted on train and scored on dev; the best one scored on test."""
    grid = NOREG_C if noreg else NESTED_AND_SPLIT_C
    models = [_fit(Xtr, ytr, c, seed) for c in grid]
    scores = [round(100 * clf.score(Xdev, ydev), 2) for clf in models]
    devacc = float(np.max(scores))
    if Xte is None:
        return {"devacc": devacc, "ndev": len(Xdev)}
    # SentEval refits the chosen C on the same data with the same seed: the model fitted above, reused
    clf = models[int(np.argmax(scores))]
    return {"devacc": devacc, "acc": float(round(100 * clf.score(np.asarray(Xte), np.asarray(yte)), 2)),
            "ndev": len(Xdev), "ntest": len(Xte)}
