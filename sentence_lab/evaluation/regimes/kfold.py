"""k-fold then test: SentEval's ``KFoldClassifier`` (TREC, MRPC).

``StratifiedKFold(k, shuffle=True, random_state=seed)`` on the training data picks the L2 value; the chosen value
is refitted on all the training data (5% held out for early stopping) and scored on the test set. MRPC adds the
F1 of those test predictions. ``params.backend == "sklearn"``: logistic regression over ``KFOLD_C`` instead.
"""
from __future__ import annotations

import numpy as np
from sklearn.metrics import f1_score
from sklearn.model_selection import StratifiedKFold

from sentence_lab.evaluation.classifier import Group, fit_members
from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.regimes.common import (
    KFOLD_C,
    Embed,
    best_of,
    clean,
    features,
    fit_logistic,
    labels,
    test_items,
)
from sentence_lab.tasks.base import TaskData

DEV_SCORE = "devacc"


def kfold_folds(y: np.ndarray, k: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``KFoldClassifier``'s ``StratifiedKFold(k, shuffle=True, random_state=seed)`` folds."""
    y = labels(y)
    skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    return list(skf.split(np.zeros((len(y), 1)), y))


def kfold_then_test(Xtrain, ytrain, Xtest, ytest, params: ProtocolParams, nclasses: int, **kw) -> dict:
    """k-fold on train to pick L2, refit on all train (5% held out), score the test set; ``Xtest=None``: the
    k-fold score only.

    Returns ``{"devacc", "acc", "ndev", "ntest", "yhat"}``; ``yhat`` are the int test predictions.
    """
    Xtrain, ytrain = np.asarray(Xtrain), labels(ytrain)
    folds = kfold_folds(ytrain, params.kfold, params.seed)
    if params.backend == "sklearn":
        return _sklearn(Xtrain, ytrain, Xtest, ytest, folds, params.seed)
    regs = list(params.l2_grid)
    res = fit_members(Xtrain, ytrain, [Group(tr, te) for tr, te in folds], regs, params, nclasses, **kw)
    acc = res.dev_accuracy()  # [fold, reg]
    scores = [round(100 * np.mean([acc[f, reg] for f in range(len(folds))]), 2) for reg in range(len(regs))]
    optreg = regs[int(np.argmax(scores))]
    devacc = np.max(scores)
    if Xtest is None:
        return {"devacc": float(devacc), "ndev": len(Xtrain)}
    ytest = labels(ytest)
    refit = fit_members(Xtrain, ytrain, [Group(np.arange(len(ytrain)), None, 0.05)], [optreg], params, nclasses, **kw)
    yhat = refit.predict(Xtest, 0, 0)
    testacc = round(100 * (1.0 * int((yhat == ytest).sum()) / len(ytest)), 2)
    return {"devacc": float(devacc), "acc": float(testacc), "ndev": len(Xtrain), "ntest": len(Xtest),
            "yhat": yhat}


def _sklearn(Xtrain: np.ndarray, ytrain: np.ndarray, Xtest, ytest, folds, seed: int) -> dict:
    """``usepytorch: False``: each C of ``KFOLD_C`` scored by k-fold, the best refitted on all the training data."""
    scores = [round(100 * np.mean([fit_logistic(Xtrain[tr], ytrain[tr], c, seed).score(Xtrain[te], ytrain[te])
                                   for tr, te in folds]), 2) for c in KFOLD_C]
    best_c, devacc = best_of(scores, KFOLD_C)
    if Xtest is None:
        return {"devacc": devacc, "ndev": len(Xtrain)}
    Xtest, ytest = np.asarray(Xtest), np.asarray(ytest)
    clf = fit_logistic(Xtrain, ytrain, best_c, seed)
    return {"devacc": devacc, "acc": float(round(100 * clf.score(Xtest, ytest), 2)), "ndev": len(Xtrain),
            "ntest": len(Xtest), "yhat": clf.predict(Xtest)}


def run(spec, data: TaskData, embed: Embed, params: ProtocolParams) -> dict:
    """A task's train and test splits through :func:`kfold_then_test`; F1 when the task reports it (MRPC)."""
    train, test = data.splits["train"], data.splits["test"]
    result = kfold_then_test(features(train, embed, spec.features), train.y, features(test, embed, spec.features),
                             test.y, params, data.classes)
    out = clean(result)
    if "f1" in spec.metrics:
        out["f1"] = round(100 * float(f1_score(test.y, np.asarray(result["yhat"]))), 2)
    out["items"] = test_items(test, result["yhat"])
    return out


def run_dev(spec, data: TaskData, embed: Embed, params: ProtocolParams) -> dict:
    """Dev-only: the k-fold accuracy on the training split."""
    split = data.splits["train"]
    return kfold_then_test(features(split, embed, spec.features), split.y, None, None, params, data.classes)
