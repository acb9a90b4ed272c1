"""The batched classifier engine equals one-by-one training (SentEval's semantics)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from synthetic import linear_data
from torch import nn

from evaluation.classifier import Group, fit_batched, fit_sequential, init_torch_model
from evaluation.protocol import FULL, PROTOTYPE, ProtocolParams, parse_optim

_data = linear_data


def _groups(n):
    # Different sizes (ragged epochs), explicit dev sets and one 5% validation split.
    return [
        Group(np.arange(0, 160), np.arange(160, 200)),
        Group(np.arange(40, 230), np.arange(0, 40)),
        Group(np.arange(0, n)),
    ]


@pytest.mark.parametrize("optim", ["rmsprop", "adam", "sgd,lr=0.1,momentum=0.9"])
@pytest.mark.parametrize("nhid", [0, 4])
def test_batched_equals_sequential(optim, nhid):
    X, y = _data(nclasses=3)
    params = ProtocolParams(optim=optim, nhid=nhid, batch_size=32, max_epoch=24)
    l2 = [1e-5, 1e-3, 1e-1]
    a = fit_batched(X, y, _groups(len(y)), l2, params, 3)
    b = fit_sequential(X, y, _groups(len(y)), l2, params, 3)
    np.testing.assert_array_equal(a.ndev, b.ndev)
    np.testing.assert_array_equal(a.best_correct, b.best_correct)
    np.testing.assert_array_equal(a.nepoch, b.nepoch)
    for wa, wb in zip(a.weights, b.weights):
        torch.testing.assert_close(wa, wb, atol=2e-5, rtol=1e-4)
    Xq, _ = _data(n=100, nclasses=3, seed=1)
    for g in range(3):
        for l in range(3):
            np.testing.assert_array_equal(a.predict(Xq, g, l), b.predict(Xq, g, l))


def test_batched_equals_sequential_float64_tight():
    X, y = _data()
    params = ProtocolParams(optim="adam", batch_size=16, max_epoch=12, epoch_size=4)
    a = fit_batched(X, y, _groups(len(y)), [1e-4, 1e-2], params, 2, dtype=torch.float64)
    b = fit_sequential(X, y, _groups(len(y)), [1e-4, 1e-2], params, 2, dtype=torch.float64)
    for wa, wb in zip(a.weights, b.weights):
        torch.testing.assert_close(wa, wb, atol=1e-12, rtol=1e-10)


def test_per_group_l2_grid():
    X, y = _data()
    params = ProtocolParams(max_epoch=10)
    groups = _groups(len(y))[:2]
    both = fit_batched(X, y, groups, np.array([[1e-5], [1e-2]]), params, 2)
    one = fit_batched(X, y, groups[1:], [1e-2], params, 2)
    for wa, wb in zip(both.weights, one.weights):
        torch.testing.assert_close(wa[1:], wb)


def test_initial_weights_are_senteval_s():
    torch.manual_seed(1111)
    ref = nn.Linear(7, 3)
    model = init_torch_model(7, 3, 0, 0.0, 1111)
    torch.testing.assert_close(model[0].weight, ref.weight)
    torch.manual_seed(1111)
    ref1, ref2 = nn.Linear(7, 5), nn.Linear(5, 3)
    mlp = init_torch_model(7, 3, 5, 0.0, 1111)
    torch.testing.assert_close(mlp[0].weight, ref1.weight)
    torch.testing.assert_close(mlp[3].bias, ref2.bias)
    assert isinstance(mlp[2], nn.Sigmoid) and isinstance(mlp[1], nn.Dropout)


@pytest.mark.parametrize("fit", [fit_batched, fit_sequential])
def test_early_stopping_on_flat_dev_accuracy(fit):
    # Two identical dev rows with labels 0 and 1: every check scores exactly 50%.
    # Check 1 improves on -1; then non-improving checks with counter 0, 1, 2 continue and the one
    # with counter 3 (= tenacity) stops: 1 + 3 + 1 = 5 checks of epoch_size = 2 epochs.
    X, y = _data(n=100)
    Xdev, ydev = np.zeros((2, X.shape[1]), np.float32), np.array([0, 1])
    params = ProtocolParams(tenacity=3, epoch_size=2, batch_size=16)
    g = [Group(np.arange(100), np.array([0, 1]))]
    res = fit(X, y, g, [1e-4], params, 2, Xdev=Xdev, ydev=ydev)
    assert res.nepoch[0, 0] == 10
    assert res.best_correct[0, 0] == 1
    # The kept model is the one from the first check: as if trained for one round only.
    once = fit(X, y, g, [1e-4], ProtocolParams(tenacity=3, epoch_size=2, batch_size=16, max_epoch=0), 2,
               Xdev=Xdev, ydev=ydev)
    assert once.nepoch[0, 0] == 2
    for wa, wb in zip(res.weights, once.weights):
        torch.testing.assert_close(wa, wb)


@pytest.mark.parametrize("fit", [fit_batched, fit_sequential])
def test_max_epoch_bound(fit):
    # `while nepoch <= max_epoch`: with max_epoch 7 and epoch_size 2 the rounds start at 0,2,4,6.
    X, y = _data(n=60)
    Xdev, ydev = np.zeros((2, X.shape[1]), np.float32), np.array([0, 1])
    params = ProtocolParams(tenacity=100, epoch_size=2, max_epoch=7, batch_size=16)
    res = fit(X, y, [Group(np.arange(60), np.array([0, 1]))], [0.0], params, 2, Xdev=Xdev, ydev=ydev)
    assert res.nepoch[0, 0] == 8


def test_members_stop_independently():
    # A member that stops early keeps its weights while the others train on.
    X, y = _data()
    params = ProtocolParams(batch_size=32, tenacity=1, epoch_size=1, max_epoch=40)
    res = fit_batched(X, y, _groups(len(y)), [1e-5, 1.0, 10.0], params, 2)
    ref = fit_sequential(X, y, _groups(len(y)), [1e-5, 1.0, 10.0], params, 2)
    np.testing.assert_array_equal(res.nepoch, ref.nepoch)
    assert len(np.unique(res.nepoch)) > 1


def test_validation_split_is_senteval_s():
    # The held-out rows are permutation[:int(0.05 n)] of RandomState(seed): relabel exactly those
    # rows to a class no training row has, so a correct dev set scores 0 and ndev matches.
    n = 203
    X, y = _data(n=n)
    params = ProtocolParams(max_epoch=0)
    cut = int(0.05 * n)
    held = np.random.RandomState(params.seed).permutation(n)[:cut]
    y3 = y.copy()
    y3[held] = 2
    for fit in (fit_batched, fit_sequential):
        res = fit(X, y3, [Group(np.arange(n))], [1e-5], params, 3)
        assert res.ndev[0] == cut == 10
        assert res.best_correct[0, 0] == 0
        assert 2 not in res.predict(X, 0, 0)


def test_parse_optim_defaults():
    assert parse_optim("adam")[1]["lr"] == 1e-3
    assert parse_optim("rmsprop")[1]["lr"] == 1e-2
    assert parse_optim("adam,lr=0.01")[1]["lr"] == 0.01
    with pytest.raises(ValueError):
        parse_optim("sgd")
    with pytest.raises(ValueError):
        parse_optim("adam,foo=1")
    assert PROTOTYPE.optim == "rmsprop" and FULL.optim == "adam" and FULL.kfold == 10
