"""SentEval's scikit-learn path (``usepytorch: False``) against a transcription of ``senteval/tools/validation.py``.

The three classes below are SentEval's ``InnerKFoldClassifier``, ``KFoldClassifier`` and ``SplitClassifier`` at
5d6dc11 with their PyTorch branches removed, statement for statement: their own folds, grids and rounding.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold

from sentence_lab.evaluation import regimes
from sentence_lab.evaluation.protocol import PROTOTYPE, ProtocolParams


class InnerKFoldClassifier:
    def __init__(self, X, y, config):
        self.X, self.y, self.seed, self.k = X, y, config["seed"], config["kfold"]
        self.devresults, self.testresults = [], []

    def run(self):
        regs = [2**t for t in range(-2, 4, 1)]
        skf = StratifiedKFold(n_splits=self.k, shuffle=True, random_state=1111)
        innerskf = StratifiedKFold(n_splits=self.k, shuffle=True, random_state=1111)
        for train_idx, test_idx in skf.split(self.X, self.y):
            X_train, X_test = self.X[train_idx], self.X[test_idx]
            y_train, y_test = self.y[train_idx], self.y[test_idx]
            scores = []
            for reg in regs:
                regscores = []
                for inner_train_idx, inner_test_idx in innerskf.split(X_train, y_train):
                    X_in_train, X_in_test = X_train[inner_train_idx], X_train[inner_test_idx]
                    y_in_train, y_in_test = y_train[inner_train_idx], y_train[inner_test_idx]
                    clf = LogisticRegression(C=reg, random_state=self.seed)
                    clf.fit(X_in_train, y_in_train)
                    regscores.append(clf.score(X_in_test, y_in_test))
                scores.append(round(100*np.mean(regscores), 2))
            optreg = regs[np.argmax(scores)]
            self.devresults.append(np.max(scores))
            clf = LogisticRegression(C=optreg, random_state=self.seed)
            clf.fit(X_train, y_train)
            self.testresults.append(round(100*clf.score(X_test, y_test), 2))
        return round(np.mean(self.devresults), 2), round(np.mean(self.testresults), 2)


class KFoldClassifier:
    def __init__(self, train, test, config):
        self.train, self.test, self.seed, self.k = train, test, config["seed"], config["kfold"]

    def run(self):
        regs = [2**t for t in range(-1, 6, 1)]
        skf = StratifiedKFold(n_splits=self.k, shuffle=True, random_state=self.seed)
        scores = []
        for reg in regs:
            scanscores = []
            for train_idx, test_idx in skf.split(self.train['X'], self.train['y']):
                X_train, y_train = self.train['X'][train_idx], self.train['y'][train_idx]
                X_test, y_test = self.train['X'][test_idx], self.train['y'][test_idx]
                clf = LogisticRegression(C=reg, random_state=self.seed)
                clf.fit(X_train, y_train)
                scanscores.append(clf.score(X_test, y_test))
            scores.append(round(100*np.mean(scanscores), 2))
        optreg = regs[np.argmax(scores)]
        devaccuracy = np.max(scores)
        clf = LogisticRegression(C=optreg, random_state=self.seed)
        clf.fit(self.train['X'], self.train['y'])
        yhat = clf.predict(self.test['X'])
        testaccuracy = round(100*clf.score(self.test['X'], self.test['y']), 2)
        return devaccuracy, testaccuracy, yhat


class SplitClassifier:
    def __init__(self, X, y, config):
        self.X, self.y, self.seed = X, y, config["seed"]
        self.noreg = False if 'noreg' not in config else config['noreg']

    def run(self):
        regs = [2**t for t in range(-2, 4, 1)]
        if self.noreg:
            regs = [1e9]
        scores = []
        for reg in regs:
            clf = LogisticRegression(C=reg, random_state=self.seed)
            clf.fit(self.X['train'], self.y['train'])
            scores.append(round(100*clf.score(self.X['valid'], self.y['valid']), 2))
        optreg = regs[np.argmax(scores)]
        devaccuracy = np.max(scores)
        clf = LogisticRegression(C=optreg, random_state=self.seed)
        clf.fit(self.X['train'], self.y['train'])
        testaccuracy = round(100*clf.score(self.X['test'], self.y['test']), 2)
        return devaccuracy, testaccuracy


SKLEARN = dataclasses.replace(PROTOTYPE, backend="sklearn", seed=7)


def _data(n: int, nclasses: int, seed: int, dim: int = 30) -> tuple[np.ndarray, np.ndarray]:
    """Labels that the features predict only in part (so the C values score differently)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, nclasses, size=n)
    X = rng.normal(size=(n, dim)) + 0.6 * np.eye(nclasses, dim)[y]
    return X, y


@pytest.mark.slow
@pytest.mark.parametrize("nclasses", [2, 3])
def test_nested_cv_is_sentevals_inner_kfold(nclasses):
    X, y = _data(120, nclasses, 0)
    expected = InnerKFoldClassifier(X, y, {"seed": 7, "kfold": 5}).run()
    got = regimes.nested_cv(X, y, SKLEARN, nclasses)
    assert (got["devacc"], got["acc"]) == expected
    assert got["ndev"] == got["ntest"] == 120


@pytest.mark.slow
def test_kfold_then_test_is_sentevals_kfold_classifier():
    X, y = _data(150, 3, 1)
    Xt, yt = _data(60, 3, 2)
    dev, test, yhat = KFoldClassifier({"X": X, "y": y}, {"X": Xt, "y": yt}, {"seed": 7, "kfold": 4}).run()
    got = regimes.kfold_then_test(X, y, Xt, yt, dataclasses.replace(SKLEARN, kfold=4), 3)
    assert (got["devacc"], got["acc"]) == (dev, test)
    np.testing.assert_array_equal(got["yhat"], yhat)


@pytest.mark.parametrize("noreg", [False, True])
def test_train_dev_test_is_sentevals_split_classifier(noreg):
    (X, y), (Xd, yd), (Xt, yt) = _data(150, 3, 3), _data(50, 3, 4), _data(50, 3, 5)
    expected = SplitClassifier({"train": X, "valid": Xd, "test": Xt}, {"train": y, "valid": yd, "test": yt},
                               {"seed": 7, "noreg": noreg}).run()
    got = regimes.train_dev_test(X, y, Xd, yd, Xt, yt, SKLEARN, 3, noreg=noreg)
    assert (got["devacc"], got["acc"]) == expected


@pytest.mark.slow
def test_dev_only_skips_the_test_split():
    X, y = _data(120, 2, 8)
    out = regimes.kfold_then_test(X, y, None, None, SKLEARN, 2)
    assert set(out) == {"devacc", "ndev"}


def test_backend_is_validated():
    with pytest.raises(ValueError, match="backend='scikit'"):
        ProtocolParams(backend="scikit")
