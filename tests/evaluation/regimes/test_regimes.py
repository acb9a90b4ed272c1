"""The SentEval regimes on small synthetic data, and their fold assignment."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from sklearn.model_selection import StratifiedKFold

from sentence_lab.evaluation import regimes
from sentence_lab.evaluation.classifier import Group
from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.regimes import (
    kfold_folds,
    kfold_then_test,
    nested_cv,
    nested_folds,
    relatedness,
    tai_target,
    train_dev_test,
)
from tests.helpers.senteval_transcription import RelatednessPytorch, train_member

FAST = ProtocolParams(kfold=3, max_epoch=30)




def _blobs(n, d=5, nclasses=2, sep=6.0, seed=0):
    rs = np.random.RandomState(seed)
    y = np.arange(n) % nclasses
    centers = rs.randn(nclasses, d) * sep
    return (centers[y] + rs.randn(n, d)).astype(np.float32), y


# ---------------------------------------------------------------------------- folds
def test_nested_folds_are_stratified_kfold_on_the_given_order():
    y = np.array([0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0, 0, 1, 1, 0, 1, 1, 0, 0])
    folds = nested_folds(y, 3)
    ref = list(StratifiedKFold(3, shuffle=True, random_state=1111).split(np.zeros(len(y)), y))
    assert len(folds) == 3
    for (tr, te, inner), (rtr, rte) in zip(folds, ref):
        np.testing.assert_array_equal(tr, rtr)
        np.testing.assert_array_equal(te, rte)
        rin = list(StratifiedKFold(3, shuffle=True, random_state=1111).split(np.zeros(len(rtr)), y[rtr]))
        for (itr, ite), (a, b) in zip(inner, rin):
            np.testing.assert_array_equal(itr, rtr[a])
            np.testing.assert_array_equal(ite, rtr[b])


def test_kfold_folds_use_the_seed():
    y = np.arange(30) % 3
    ref = list(StratifiedKFold(5, shuffle=True, random_state=42).split(np.zeros(30), y))
    for (a, b), (c, e) in zip(kfold_folds(y, 5, 42), ref):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, e)


# ---------------------------------------------------------------------------- Tai target
def test_tai_target_hand_computed():
    got = tai_target(np.array([3.6, 1.0, 5.0, 4.5, 2.25]))
    want = np.array([
        [0, 0, 0.4, 0.6, 0],
        [1, 0, 0, 0, 0],
        [0, 0, 0, 0, 1],
        [0, 0, 0, 0.5, 0.5],
        [0, 0.75, 0.25, 0, 0],
    ], dtype=np.float32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_tai_target_outside_range_as_senteval():
    # STS-B scores lie in 0..5: floor 0 only fills class 0 with y itself (the row sums to y).
    got = tai_target([0.0, 0.4, 0.999, 5.5, -0.5])
    np.testing.assert_allclose(got[0], [0, 0, 0, 0, 0])
    np.testing.assert_allclose(got[1], [0.4, 0, 0, 0, 0], atol=1e-6)
    np.testing.assert_allclose(got[2], [0.999, 0, 0, 0, 0], atol=1e-6)
    np.testing.assert_allclose(got[3], [0, 0, 0, 0, 0.5], atol=1e-6)
    np.testing.assert_allclose(got[4], [0, 0, 0, 0, 0])


def test_tai_target_equals_encode_labels_loop():
    scores = np.random.RandomState(3).uniform(-0.5, 5.5, size=200)
    scores[:20] = np.round(scores[:20])
    ref = np.zeros((len(scores), 5), dtype=np.float32)
    for j, y in enumerate(scores):  # SentEval's encode_labels, transcribed as a loop
        for i in range(5):
            if i + 1 == np.floor(y) + 1:
                ref[j, i] = y - np.floor(y)
            if i + 1 == np.floor(y):
                ref[j, i] = np.floor(y) - y + 1
    np.testing.assert_array_equal(tai_target(scores), ref)


# ---------------------------------------------------------------------------- regimes
def test_nested_cv_separable_and_random():
    X, y = _blobs(150)
    res = nested_cv(X, y, FAST, 2)
    assert set(res) == {"devacc", "acc", "ndev", "ntest", "yhat", "fold"}
    assert res["acc"] >= 99 and res["devacc"] >= 99
    # each item predicted once, in its outer fold; the folds' accuracies average to acc
    assert sorted(set(res["fold"].tolist())) == list(range(FAST.kfold))
    folds = [100 * np.mean(res["yhat"][res["fold"] == f] == y[res["fold"] == f]) for f in range(FAST.kfold)]
    assert res["acc"] == pytest.approx(np.mean([round(a, 2) for a in folds]), abs=0.005)
    assert res["ndev"] == res["ntest"] == 150
    yr = np.random.RandomState(1).randint(0, 2, size=150)
    res = nested_cv(np.random.RandomState(2).randn(150, 5).astype(np.float32), yr, FAST, 2)
    assert 30 <= res["acc"] <= 70


def _senteval_kfold(X, y, folds, params, nclasses):
    """``KFoldClassifier``/inner CV of ``validation.py`` with the transcribed classifier: (dev %, chosen L2)."""
    regs = list(params.l2_grid)
    scores = [round(100 * np.mean([train_member(X, y, Group(tr, te), reg, params, nclasses).score(X[te], y[te])
                                   for tr, te in folds]), 2) for reg in regs]
    return max(scores), regs[int(np.argmax(scores))]


@pytest.mark.slow
def test_nested_cv_equals_senteval():
    X, y = _blobs(90, sep=0.8, seed=4)
    p = ProtocolParams(kfold=3, max_epoch=10, batch_size=16)
    dev, test, yhat, fold = [], [], np.zeros(90, dtype=np.int64), np.zeros(90, dtype=np.int64)
    for g, (train, held, inner) in enumerate(nested_folds(y, 3)):
        devacc, reg = _senteval_kfold(X, y, inner, p, 2)
        clf = train_member(X, y, Group(train, None, 0.05), reg, p, 2)
        dev.append(devacc)
        test.append(round(100 * clf.score(X[held], y[held]), 2))
        yhat[held], fold[held] = np.asarray(clf.predict(X[held])).reshape(-1), g
    res = nested_cv(X, y, p, 2)
    np.testing.assert_array_equal(res.pop("yhat"), yhat)  # each item predicted by its outer fold's classifier
    np.testing.assert_array_equal(res.pop("fold"), fold)
    assert res == {"devacc": round(np.mean(dev), 2), "acc": round(np.mean(test), 2), "ndev": 90, "ntest": 90}


def test_kfold_then_test_multiclass():
    X, y = _blobs(180, nclasses=3)
    Xt, yt = _blobs(60, nclasses=3)
    res = kfold_then_test(X, y, Xt, yt, FAST, 3)
    assert set(res) == {"devacc", "acc", "ndev", "ntest", "yhat"}
    assert res["yhat"].shape == (60,) and res["yhat"].dtype == np.int64
    assert res["acc"] >= 99 and res["ndev"] == 180 and res["ntest"] == 60
    p = ProtocolParams(kfold=3, max_epoch=6)
    devacc, reg = _senteval_kfold(X, y, kfold_folds(y, 3, p.seed), p, 3)
    clf = train_member(X, y, Group(np.arange(len(y)), None, 0.05), reg, p, 3)
    ours = kfold_then_test(X, y, Xt, yt, p, 3)
    np.testing.assert_array_equal(ours.pop("yhat"), clf.predict(Xt).reshape(-1))
    assert ours == {"devacc": devacc, "acc": round(100 * clf.score(Xt, yt), 2), "ndev": 180, "ntest": 60}
    assert kfold_then_test(X, y, None, None, p, 3) == {"devacc": devacc, "ndev": 180}  # dev-only: no refit


def test_train_dev_test():
    X, y = _blobs(200, nclasses=2, sep=0.5, seed=5)
    args = (X[:120], y[:120], X[120:160], y[120:160], X[160:], y[160:])
    res = train_dev_test(*args, FAST, 2)
    assert set(res) == {"devacc", "acc", "ndev", "ntest", "probe", "yhat"}
    assert res["ndev"] == 40 and res["ntest"] == 40
    # SentEval: one classifier per L2 on train, early-stopped on dev; the best by dev accuracy is refit and tested.
    dev = [round(100 * train_member(args[0], args[1], Group(np.arange(120), np.arange(40)), reg, FAST, 2, args[2],
                                    args[3]).score(args[2], args[3]), 2) for reg in FAST.l2_grid]
    best = train_member(args[0], args[1], Group(np.arange(120), np.arange(40)), FAST.l2_grid[int(np.argmax(dev))],
                        FAST, 2, args[2], args[3])
    chosen = {"type": "logistic", "l2": FAST.l2_grid[int(np.argmax(dev))], "chosen_on": "dev"}
    yhat = res.pop("yhat")  # the test predictions of the model chosen on dev
    np.testing.assert_array_equal(yhat, np.asarray(best.predict(args[4])).reshape(-1))
    assert res == {"devacc": max(dev), "acc": round(100 * best.score(args[4], args[5]), 2), "ndev": 40, "ntest": 40,
                   "probe": chosen}
    assert train_dev_test(*args[:4], None, None, FAST, 2) == {"devacc": max(dev), "ndev": 40, "probe": chosen}
    noreg = train_dev_test(*args, FAST, 2, noreg=True)  # SNLI: the grid is [1e-9]
    same = train_dev_test(*args, ProtocolParams(kfold=3, max_epoch=30, l2_grid=(1e-9,)), 2)
    np.testing.assert_array_equal(noreg.pop("yhat"), same.pop("yhat"))
    assert noreg == same
    Xs, ys = _blobs(200, nclasses=2, sep=8, seed=6)
    assert train_dev_test(Xs[:120], ys[:120], Xs[120:160], ys[120:160], Xs[160:], ys[160:], FAST, 2)["acc"] == 100


@pytest.mark.slow
def test_relatedness_learns_and_matches_reference_loop():
    rs = np.random.RandomState(0)
    n, d = 160, 6
    X = rs.randn(n, d).astype(np.float32)
    scores = np.clip(3 + 1.5 * np.tanh(X[:, 0] + X[:, 1]) + 0.2 * rs.randn(n), 1, 5)
    tr, dv, te = slice(0, 100), slice(100, 130), slice(130, 160)
    res = relatedness(X[tr], scores[tr], X[dv], scores[dv], X[te], scores[te], FAST)
    assert set(res) == {"devpearson", "pearson", "spearman", "mse", "yhat", "ndev", "ntest"}
    assert res["ndev"] == 30 and res["ntest"] == 30 and res["yhat"].shape == (30,)
    assert res["pearson"] > 0.8 and res["devpearson"] > 0.8 and res["mse"] < 0.5
    ref = RelatednessPytorch({"X": X[tr], "y": tai_target(scores[tr])}, {"X": X[dv]}, {"X": X[te]}, scores[dv],
                             {"seed": FAST.seed, "nclasses": 5})
    devpr, yhat = ref.run()
    np.testing.assert_allclose(res["yhat"], yhat, atol=1e-4)
    assert abs(res["devpearson"] - devpr) < 1e-5


def test_regimes_module_exports():
    for name in ("nested_cv", "kfold_then_test", "train_dev_test", "relatedness", "tai_target"):
        assert callable(getattr(regimes, name))


def test_the_probing_papers_grid_picks_the_best_member_on_dev_as_senteval_would_one_by_one():
    """evaluation=probing_paper: every (nhid, dropout 0, L2) MLP trained; the best dev accuracy (the first of
    equals, in grid order) is the one tested, as a loop over SentEval's MLPs with those settings would pick it."""
    X, y = _blobs(240, d=6, nclasses=3, sep=1.0, seed=7)
    args = (X[:150], y[:150], X[150:195], y[150:195], X[195:], y[195:])
    params = ProtocolParams(kfold=3, max_epoch=20, nhid_grid=(3, 6), dropout_grid=(0.0,), l2_grid=(1e-4, 1e-1))
    res = train_dev_test(*args, params, 3)
    loop = []
    for nhid in (3, 6):
        for reg in params.l2_grid:
            one = dataclasses.replace(params, nhid=nhid, nhid_grid=None)
            clf = train_member(args[0], args[1], Group(np.arange(150), np.arange(45)), reg, one, 3, args[2], args[3])
            loop.append((round(100 * clf.score(args[2], args[3]), 2), nhid, reg, clf))
    dev, nhid, reg, clf = loop[int(np.argmax([d for d, *_ in loop]))]
    assert res["devacc"] == dev and res["acc"] == round(100 * clf.score(args[4], args[5]), 2)
    assert res["probe"] == {"type": "mlp", "nhid": nhid, "dropout": 0.0, "l2": reg, "chosen_on": "dev",
                            "grid": {"nhid": [3, 6], "dropout": [0.0], "l2": [1e-4, 1e-1]}}
