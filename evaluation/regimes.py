"""SentEval's evaluation regimes (``senteval/tools/validation.py``) on the classifier engine.

* :func:`nested_cv` -- ``InnerKFoldClassifier`` (MR, CR, SUBJ, MPQA)
* :func:`kfold_then_test` -- ``KFoldClassifier`` (TREC, MRPC)
* :func:`train_dev_test` -- ``SplitClassifier`` (SST, SICK-E, SNLI, probing)
* :func:`relatedness` -- ``RelatednessPytorch`` (SICK-R, STS-B), see :mod:`evaluation.relatedness`

Inputs are numpy arrays already in SentEval's (length, label) order; labels are class ids
``0..nclasses-1``. Accuracies are percentages rounded exactly where SentEval rounds them.
All classifiers of a stage train at once as one stacked model (:func:`evaluation.classifier.fit_members`).
``params.backend == "sklearn"`` runs SentEval's scikit-learn path on the same folds instead
(:mod:`evaluation.sklearn_regimes`).
A test set of ``None`` (dev-only mode) skips what only the test score needs: the refit and the test
predictions.
"""
from __future__ import annotations

import numpy as np
from sklearn.model_selection import StratifiedKFold

from evaluation import sklearn_regimes
from evaluation.classifier import FitResult, Group, fit_members
from evaluation.protocol import ProtocolParams
from evaluation.relatedness import relatedness, tai_target

__all__ = ["nested_cv", "kfold_then_test", "train_dev_test", "relatedness", "tai_target",
           "nested_folds", "kfold_folds"]

NESTED_RANDOM_STATE = 1111  # validation.py hard-codes it for both outer and inner folds


def _labels(y) -> np.ndarray:
    return np.asarray(y).astype(np.int64).reshape(-1)


def nested_folds(y: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray]]]]:
    """Outer (train, test) folds and, for each, inner (train, test) folds in indices of the input.

    Both levels are ``StratifiedKFold(k, shuffle=True, random_state=1111)``, the inner one run on
    the outer training part in its original order (as ``X[train_idx]`` in SentEval).
    """
    y = _labels(y)
    dummy = np.zeros((len(y), 1))
    skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=NESTED_RANDOM_STATE)
    out = []
    for train_idx, test_idx in skf.split(dummy, y):
        inner = StratifiedKFold(n_splits=k, shuffle=True, random_state=NESTED_RANDOM_STATE)
        folds = [(train_idx[a], train_idx[b]) for a, b in inner.split(dummy[train_idx], y[train_idx])]
        out.append((train_idx, test_idx, folds))
    return out


def kfold_folds(y: np.ndarray, k: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``KFoldClassifier``'s ``StratifiedKFold(k, shuffle=True, random_state=seed)`` folds."""
    y = _labels(y)
    skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    return list(skf.split(np.zeros((len(y), 1)), y))


def nested_cv(X, y, params: ProtocolParams, nclasses: int, **kw) -> dict:
    """Nested cross-validation; returns ``{"devacc", "acc", "ndev", "ntest"}`` (percent)."""
    X = np.asarray(X)
    y = _labels(y)
    k = params.kfold
    folds = nested_folds(y, k)
    if params.backend == "sklearn":
        return sklearn_regimes.nested_cv(X, y, folds, params.seed)
    regs = list(params.l2_grid)

    # Stage 1: every (outer fold, inner fold) x every L2 value; early stopping on the inner test fold.
    groups = [Group(tr, te) for _, _, inner in folds for tr, te in inner]
    res = fit_members(X, y, groups, regs, params, nclasses, **kw)
    acc = res.dev_accuracy().reshape(k, k, len(regs))  # [outer, inner, reg]
    devresults, optregs = [], []
    for o in range(k):
        scores = [round(100 * np.mean([acc[o, i, l] for i in range(k)]), 2) for l in range(len(regs))]
        optregs.append(regs[int(np.argmax(scores))])
        devresults.append(np.max(scores))

    # Stage 2: refit each outer training part with its chosen L2 (5% held out), score the test fold.
    refit = fit_members(X, y, [Group(tr, None, 0.05) for tr, _, _ in folds], np.asarray(optregs)[:, None],
                        params, nclasses, **kw)
    testresults = [round(100 * refit.score(X[te], y[te], g, 0), 2) for g, (_, te, _) in enumerate(folds)]
    return {
        "devacc": float(round(np.mean(devresults), 2)),
        "acc": float(round(np.mean(testresults), 2)),
        "ndev": len(X),
        "ntest": len(X),
    }


def kfold_then_test(Xtrain, ytrain, Xtest, ytest, params: ProtocolParams, nclasses: int, **kw) -> dict:
    """k-fold on train to pick L2, refit on all train (5% held out), score the test set.

    Returns ``{"devacc", "acc", "ndev", "ntest", "yhat"}``; ``yhat`` are the int test predictions.
    """
    Xtrain, ytrain = np.asarray(Xtrain), _labels(ytrain)
    folds = kfold_folds(ytrain, params.kfold, params.seed)
    if params.backend == "sklearn":
        return sklearn_regimes.kfold_then_test(Xtrain, ytrain, Xtest, ytest, folds, params.seed)
    regs = list(params.l2_grid)
    res = fit_members(Xtrain, ytrain, [Group(tr, te) for tr, te in folds], regs, params, nclasses, **kw)
    acc = res.dev_accuracy()  # [fold, reg]
    scores = [round(100 * np.mean([acc[f, l] for f in range(len(folds))]), 2) for l in range(len(regs))]
    optreg = regs[int(np.argmax(scores))]
    devacc = np.max(scores)
    if Xtest is None:
        return {"devacc": float(devacc), "ndev": len(Xtrain)}
    ytest = _labels(ytest)
    refit = fit_members(Xtrain, ytrain, [Group(np.arange(len(ytrain)), None, 0.05)], [optreg], params, nclasses, **kw)
    yhat = refit.predict(Xtest, 0, 0)
    testacc = round(100 * (1.0 * int((yhat == ytest).sum()) / len(ytest)), 2)
    return {"devacc": float(devacc), "acc": float(testacc), "ndev": len(Xtrain), "ntest": len(Xtest),
            "yhat": yhat}


def train_dev_test(Xtr, ytr, Xdev, ydev, Xte, yte, params: ProtocolParams, nclasses: int, *,
                   noreg: bool = False, **kw) -> dict:
    """Train on train for each L2, early-stop on dev, pick by dev accuracy, report test accuracy.

    ``noreg=True`` is SentEval's ``config['noreg']`` (SNLI): the grid becomes ``[1e-9]``.

    SentEval refits the chosen L2 value from scratch on the same data with the same seed, which
    reproduces the member trained in the sweep; that member is reused.
    """
    Xtr, Xdev = np.asarray(Xtr), np.asarray(Xdev)
    ytr, ydev = _labels(ytr), _labels(ydev)
    if params.backend == "sklearn":
        return sklearn_regimes.train_dev_test(Xtr, ytr, Xdev, ydev, Xte, yte, params.seed, noreg=noreg)
    regs = [1e-9] if noreg else list(params.l2_grid)
    group = [Group(np.arange(len(ytr)), np.arange(len(ydev)))]
    res: FitResult = fit_members(Xtr, ytr, group, regs, params, nclasses, Xdev=Xdev, ydev=ydev, **kw)
    scores = [round(100 * res.dev_accuracy()[0, l], 2) for l in range(len(regs))]
    best = int(np.argmax(scores))
    devacc = np.max(scores)
    if Xte is None:
        return {"devacc": float(devacc), "ndev": len(Xdev)}
    testacc = round(100 * res.score(Xte, _labels(yte), 0, best), 2)
    return {"devacc": float(devacc), "acc": float(testacc), "ndev": len(Xdev), "ntest": len(Xte)}
