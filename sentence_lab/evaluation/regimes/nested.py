"""Nested cross-validation: SentEval's ``InnerKFoldClassifier`` (MR, CR, SUBJ, MPQA).

Outer and inner folds are both ``StratifiedKFold(k, shuffle=True, random_state=1111)`` (hard-coded in
``validation.py``), the inner one run on the outer training part in its original order. Each outer fold picks
its L2 value by the mean inner accuracy, refits on its training part (5% held out) and scores its test fold.
``params.backend == "sklearn"``: logistic regression over ``NESTED_AND_SPLIT_C`` instead.
"""
from __future__ import annotations

import numpy as np
from sklearn.model_selection import StratifiedKFold

from sentence_lab.evaluation.classifier import Group, fit_members
from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.regimes.common import (
    NESTED_AND_SPLIT_C,
    Embed,
    best_of,
    clean,
    features,
    fit_logistic,
    labels,
    test_items,
)
from sentence_lab.evaluation.regimes.kfold import kfold_then_test
from sentence_lab.tasks.base import TaskData

NESTED_RANDOM_STATE = 1111  # validation.py hard-codes it for both outer and inner folds
DEV_SCORE = "devacc"


def nested_folds(y: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray]]]]:
    """Outer (train, test) folds and, for each, inner (train, test) folds in indices of the input.

    Both levels are ``StratifiedKFold(k, shuffle=True, random_state=1111)``, the inner one run on
    the outer training part in its original order (as ``X[train_idx]`` in SentEval).
    """
    y = labels(y)
    dummy = np.zeros((len(y), 1))
    skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=NESTED_RANDOM_STATE)
    out = []
    for train_idx, test_idx in skf.split(dummy, y):
        inner = StratifiedKFold(n_splits=k, shuffle=True, random_state=NESTED_RANDOM_STATE)
        folds = [(train_idx[a], train_idx[b]) for a, b in inner.split(dummy[train_idx], y[train_idx])]
        out.append((train_idx, test_idx, folds))
    return out


def nested_cv(X, y, params: ProtocolParams, nclasses: int, **kw) -> dict:
    """Nested cross-validation; returns ``{"devacc", "acc", "ndev", "ntest"}`` (percent)."""
    X = np.asarray(X)
    y = labels(y)
    k = params.kfold
    folds = nested_folds(y, k)
    if params.backend == "sklearn":
        return _sklearn(X, y, folds, params.seed)
    regs = list(params.l2_grid)

    # Stage 1: every (outer fold, inner fold) x every L2 value; early stopping on the inner test fold.
    groups = [Group(tr, te) for _, _, inner in folds for tr, te in inner]
    res = fit_members(X, y, groups, regs, params, nclasses, **kw)
    acc = res.dev_accuracy().reshape(k, k, len(regs))  # [outer, inner, reg]
    devresults, optregs = [], []
    for o in range(k):
        scores = [round(100 * np.mean([acc[o, i, reg] for i in range(k)]), 2) for reg in range(len(regs))]
        optregs.append(regs[int(np.argmax(scores))])
        devresults.append(np.max(scores))

    # Stage 2: refit each outer training part with its chosen L2 (5% held out), score the test fold.
    refit = fit_members(X, y, [Group(tr, None, 0.05) for tr, _, _ in folds], np.asarray(optregs)[:, None],
                        params, nclasses, **kw)
    yhat, fold = np.zeros(len(y), dtype=np.int64), np.zeros(len(y), dtype=np.int64)
    for g, (_, te, _) in enumerate(folds):
        yhat[te], fold[te] = refit.predict(X[te], g, 0), g
    testresults = [round(100 * (1.0 * int((yhat[te] == y[te]).sum()) / len(te)), 2) for _, te, _ in folds]
    return {
        "devacc": float(round(np.mean(devresults), 2)),
        "acc": float(round(np.mean(testresults), 2)),
        "ndev": len(X),
        "ntest": len(X),
        "yhat": yhat,
        "fold": fold,
    }


def _sklearn(X: np.ndarray, y: np.ndarray, folds, seed: int) -> dict:
    """``usepytorch: False``: each outer fold picks C by its inner folds, refits, scores its test fold."""
    devresults, testresults = [], []
    yhat, fold = np.zeros(len(y), dtype=np.int64), np.zeros(len(y), dtype=np.int64)
    for g, (train_idx, test_idx, inner) in enumerate(folds):
        scores = [round(100 * np.mean([fit_logistic(X[tr], y[tr], c, seed).score(X[te], y[te]) for tr, te in inner]), 2)
                  for c in NESTED_AND_SPLIT_C]
        best_c, dev = best_of(scores, NESTED_AND_SPLIT_C)
        devresults.append(dev)
        clf = fit_logistic(X[train_idx], y[train_idx], best_c, seed)
        testresults.append(round(100 * clf.score(X[test_idx], y[test_idx]), 2))
        yhat[test_idx], fold[test_idx] = clf.predict(X[test_idx]), g
    return {"devacc": float(round(np.mean(devresults), 2)), "acc": float(round(np.mean(testresults), 2)),
            "ndev": len(X), "ntest": len(X), "yhat": yhat, "fold": fold}


def run(spec, data: TaskData, embed: Embed, params: ProtocolParams) -> dict:
    """A task's one pool of examples (split ``all``) through :func:`nested_cv`."""
    split = data.splits["all"]
    out = clean(nested_cv(features(split, embed, spec.features), split.y, params, data.classes))
    out["items"] = test_items(split, out.pop("yhat"), fold=out.pop("fold"))  # each item scored in its outer fold
    return out


def run_dev(spec, data: TaskData, embed: Embed, params: ProtocolParams) -> dict:
    """Dev-only: the k-fold accuracy on the pool (only cross-validation folds are scored)."""
    split = data.splits["all"]
    return kfold_then_test(features(split, embed, spec.features), split.y, None, None, params, data.classes)
