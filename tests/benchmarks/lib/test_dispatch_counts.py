"""What a classifier step dispatches on the path a GPU takes (``fused_kernels=false``), counted on the CPU.

Issue 62's bound: a step of a linear probe or of the relatedness regression launches at most the forward product, the
softmax, the loss's gradient, the backward product and the update (Adam: torch's one fused kernel; RMSprop, which
torch has no fused kernel for, its five passes and the weight decay), the epoch's row gathers shared among its steps.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from lib.dispatch_counts import CountedSteps, Dispatched, HostReads, RecurrentCallsAsOne
from sentence_lab.evaluation.classifier import Group, fit_members, stacked_probe
from sentence_lab.evaluation.protocol import FULL, PROTOTYPE
from sentence_lab.evaluation.regimes.regression import tai_target
from tests.helpers.synthetic import linear_data


def _targets(y: np.ndarray, nclasses: int) -> np.ndarray:
    """Relatedness's class distributions from made-up scores in [1, nclasses]."""
    return tai_target(np.clip(y + 1 + np.random.RandomState(0).rand(len(y)), 1, nclasses), nclasses)


def _mse_dev_score(T: np.ndarray):
    T_t = torch.as_tensor(T)
    return lambda Z, idx, mask: -((Z.softmax(2) - T_t[idx].transpose(1, 2)[:, None]) ** 2).sum((2, 3)).numpy()


def _fit(X, y, groups, l2, params, nclasses, loss):
    score = _mse_dev_score(y) if loss == "softmax_mse" else None
    return fit_members(X, y, groups, l2, params, nclasses, loss=loss, dev_score=score)


def _count(params, loss="cross_entropy", nclasses=3, groups=4, l2=(1e-5, 1e-4, 1e-3)):
    X, y = linear_data(n=3000, d=20, nclasses=nclasses)
    if loss == "softmax_mse":
        y = _targets(y, nclasses)
    folds = ([Group(np.arange(len(X)))] if groups == 1 else  # k-fold training sets, or one (relatedness)
             [Group(np.setdiff1d(np.arange(len(X)), np.arange(g, len(X), groups))) for g in range(groups)])
    counter = Dispatched()
    with counter, CountedSteps(counter) as steps, HostReads() as reads:
        _fit(X, y, folds, list(l2), dataclasses.replace(params, fused_kernels=False, max_epoch=4), nclasses, loss)
    return counter, steps, reads


@pytest.mark.parametrize(("params", "update"), [(PROTOTYPE, 6), (FULL, 2)], ids=["rmsprop", "adam"])
def test_a_linear_probe_step_launches_at_most_ten_kernels(params, update):
    counter, steps, _ = _count(params)
    assert steps.steps > 100
    per_step = counter.in_steps["kernels"] / steps.steps
    # the products, the softmax and the weighted residual, the update; the epoch's gathers shared by its ~20 steps
    assert 4 + update <= per_step <= 4 + update + 0.25, counter.step_names.most_common(20)
    assert update <= steps.optimiser["kernels"] / steps.steps < update + 0.01  # + Adam's table of step counts, once
    assert per_step <= 10.25


def test_a_relatedness_step_launches_at_most_ten_kernels():
    counter, steps, _ = _count(dataclasses.replace(PROTOTYPE, optim="adam"), loss="softmax_mse", nclasses=5,
                               groups=1, l2=(0.0,))
    per_step = counter.in_steps["kernels"] / steps.steps
    # products 2, softmax 1, the softmax-MSE gradient 5 (residual, product, sum, difference, product), fused Adam 1
    assert 9 <= per_step <= 9.25, counter.step_names.most_common(20)
    assert 1 <= steps.optimiser["kernels"] / steps.steps < 1.01


def test_host_reads_stay_under_one_a_classifier_epoch():
    counter, steps, reads = _count(PROTOTYPE)
    assert steps.epochs >= 4
    assert sum(reads.counts.values()) <= steps.epochs, reads.counts


@pytest.mark.parametrize("loss", ["cross_entropy", "softmax_mse"])
def test_gathering_a_step_at_a_time_gives_the_same_probes(loss, monkeypatch):
    nclasses = 3 if loss == "cross_entropy" else 5
    X, y = linear_data(n=700, d=8, nclasses=nclasses)
    if loss == "softmax_mse":
        y = _targets(y, nclasses)
    groups = [Group(np.arange(0, 500)), Group(np.arange(100, 700))]  # ragged: the smaller group sits out steps
    params = dataclasses.replace(PROTOTYPE, fused_kernels=False, max_epoch=3)

    def fit():
        return _fit(X, y, groups, [1e-4, 1e-2], params, nclasses, loss)

    whole = fit()
    monkeypatch.setattr(stacked_probe, "GATHER_BUDGET", 1)  # one step's rows a gather
    one_by_one = fit()
    for a, b in zip(whole.weights, one_by_one.weights):
        assert torch.equal(a, b)
    np.testing.assert_array_equal(whole.nepoch, one_by_one.nepoch)


@pytest.mark.parametrize(("params", "update"), [(PROTOTYPE, 12), (FULL, 4)], ids=["rmsprop", "adam"])
def test_an_mlp_probe_step_launches_its_two_layers_and_nothing_else(params, update):
    counter, steps, _ = _count(dataclasses.replace(params, nhid=50))
    per_step = counter.in_steps["kernels"] / steps.steps
    # forward: product, sigmoid, product; softmax, weighted residual; backward: three products and the sigmoid's
    # derivative (one pass); the update of both layers (RMSprop 6 each; Adam: the decay and the fused kernel each)
    assert 9 + update <= per_step <= 9 + update + 0.3, counter.step_names.most_common(20)


def test_a_recurrent_call_counts_as_one_kernel_each_way_and_keeps_its_gradients():
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(5, 7, num_layers=2, bidirectional=True, batch_first=True)
    x, lengths = torch.randn(3, 6, 5), torch.tensor([6, 4, 2])

    def step():
        packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = lstm(packed)
        lstm.zero_grad()
        out.data.pow(2).sum().backward()
        return [p.grad.clone() for p in lstm.parameters()]

    plain, counter = Dispatched(), Dispatched()
    with plain:
        reference = step()
    with counter, RecurrentCallsAsOne(counter):
        counted = step()
    for a, b in zip(reference, counted):
        assert torch.equal(a, b)
    assert counter.names["kernels: lstm forward (one call)"] == 1
    assert counter.names["kernels: lstm backward (one call)"] == 1
    # the CPU's loop over time steps is left out: what remains is the packing, the loss and the gradients' set-up
    assert counter.kinds["kernels"] < 40 < 400 < plain.kinds["kernels"]
    assert torch._VF.lstm is torch._C._VariableFunctions.lstm  # torch's own call is back
