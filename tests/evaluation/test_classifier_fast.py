"""The preallocated-buffer path of the batched engine (``_FastLinear``) is bit-identical to the
generic per-step path (``_grads`` + ``_Optim``), in both of its layouts, and equals sequential
training."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from synthetic import linear_data

import evaluation.classifier as clf
from evaluation.classifier import Group, fit_batched, fit_sequential
from evaluation.protocol import ProtocolParams, parse_optim

_data = linear_data


def _ragged_groups(n):
    # Different sizes (ragged epochs: masked steps), explicit dev sets and one 5% validation split.
    return [
        Group(np.arange(0, 150), np.arange(160, 200)),
        Group(np.arange(40, 230), np.arange(0, 40)),
        Group(np.arange(0, n)),
    ]


def _assert_identical(a, b):
    np.testing.assert_array_equal(a.best_correct, b.best_correct)
    np.testing.assert_array_equal(a.nepoch, b.nepoch)
    np.testing.assert_array_equal(a.ndev, b.ndev)
    for wa, wb in zip(a.weights, b.weights):
        assert torch.equal(wa, wb)


def _generic(monkeypatch):
    monkeypatch.setattr(clf._FastLinear, "supports", staticmethod(lambda method, hp, nhid: False))


@pytest.mark.parametrize("optim", ["adam", "rmsprop"])
@pytest.mark.parametrize("nclasses", [2, 3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fast_path_is_bit_identical_to_generic_path(monkeypatch, optim, nclasses, dtype):
    X, y = _data(nclasses=nclasses)
    params = ProtocolParams(optim=optim, batch_size=32, tenacity=2, epoch_size=1, max_epoch=30)
    l2 = [1e-5, 1e-2, 3.0]  # members stop at different epochs; groups stop at different epochs
    method, hp = parse_optim(optim)
    assert clf._FastLinear.supports(method, hp, 0)
    fast = fit_batched(X, y, _ragged_groups(len(y)), l2, params, nclasses, dtype=dtype)
    assert len(np.unique(fast.nepoch)) > 1
    _generic(monkeypatch)
    slow = fit_batched(X, y, _ragged_groups(len(y)), l2, params, nclasses, dtype=dtype)
    _assert_identical(fast, slow)


@pytest.mark.parametrize("optim", ["adam", "rmsprop"])
def test_flat_layout_is_bit_identical(monkeypatch, optim):
    # One group, d * L * C a multiple of 32 and a small bias: the flat (cat(W, b)) layout is used.
    X, y = _data(n=300, d=8)
    groups = [Group(np.arange(0, 300))]
    l2 = [1e-4, 1e-1]
    assert clf._FastLinear._flat_ok(8 * 2 * 2, 2 * 2, torch.float32)
    params = ProtocolParams(optim=optim, batch_size=16, tenacity=2, epoch_size=2, max_epoch=20)
    flat = fit_batched(X, y, groups, l2, params, 2)
    monkeypatch.setattr(clf._FastLinear, "_flat_ok", staticmethod(lambda nW, nb, dtype: False))
    split = fit_batched(X, y, groups, l2, params, 2)
    _assert_identical(flat, split)
    _generic(monkeypatch)
    _assert_identical(flat, fit_batched(X, y, groups, l2, params, 2))
    seq = fit_sequential(X, y, groups, l2, params, 2)
    np.testing.assert_array_equal(flat.best_correct, seq.best_correct)
    np.testing.assert_array_equal(flat.nepoch, seq.nepoch)
    for wa, wb in zip(flat.weights, seq.weights):
        torch.testing.assert_close(wa, wb, atol=2e-5, rtol=1e-4)


def test_dropped_groups_and_ragged_steps_equal_sequential():
    # Groups stop at different epochs (dropped from the batch) while ragged epochs mask steps.
    X, y = _data(nclasses=3)
    params = ProtocolParams(optim="adam", batch_size=32, tenacity=1, epoch_size=1, max_epoch=40)
    l2 = np.array([[1e-5, 1.0], [10.0, 1e-3], [1e-4, 3.0]])
    a = fit_batched(X, y, _ragged_groups(len(y)), l2, params, 3, dtype=torch.float64)
    b = fit_sequential(X, y, _ragged_groups(len(y)), l2, params, 3, dtype=torch.float64)
    np.testing.assert_array_equal(a.best_correct, b.best_correct)
    np.testing.assert_array_equal(a.nepoch, b.nepoch)
    for wa, wb in zip(a.weights, b.weights):
        torch.testing.assert_close(wa, wb, atol=1e-12, rtol=1e-10)
