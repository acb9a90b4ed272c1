"""The stacked classifier engine against SentEval's own code (``senteval_transcription``), and its pieces.

Tolerances. In float64 every operation rounds at ~1e-16; the engine and SentEval add the same numbers in
different orders (stacked products, the bias as an input column), so weights drift apart by a few 1e-16 per
step and stay below 1e-12 after the hundreds of steps here, while any slip in the maths (a missing bias
correction, weight decay on the wrong tensor, a wrong minibatch) moves them by more than 1e-4. In float32
(rounding ~6e-8) the same runs stay within 1e-4, and dev scores and stopping epochs are equal.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from sentence_lab.evaluation.classifier import (
    BatchPlan,
    EarlyStopping,
    Group,
    MaskedOptimizer,
    StackedProbe,
    features_stay_on_host,
    fit_members,
)
from sentence_lab.evaluation.protocol import FULL, PROTOTYPE, ProtocolParams, parse_optim
from tests.helpers.senteval_transcription import train_member
from tests.helpers.synthetic import linear_data

OPTIMS = ["rmsprop", "adam", "sgd,lr=0.1,momentum=0.9", "sgd,lr=0.1,momentum=0.5,dampening=0.1",
          "sgd,lr=0.1,momentum=0.9,nesterov=1", "adamax", "adagrad,lr_decay=0.01", "adadelta",
          "rmsprop,momentum=0.5,centered=1"]


def _groups(n):
    # Different sizes (ragged epochs: some groups sit out a step), explicit dev sets and one 5% validation split.
    return [Group(np.arange(0, 150), np.arange(160, 200)), Group(np.arange(40, 230), np.arange(0, 40)),
            Group(np.arange(0, n))]


def _compare(res, X, y, groups, l2, params, nclasses, dtype, atol, Xdev=None, ydev=None):
    for g, group in enumerate(groups):
        for reg_idx, reg in enumerate(l2):
            clf = train_member(X, y, group, reg, params, nclasses, Xdev, ydev, dtype)
            ref = [torch.cat([m.weight, m.bias[:, None]], 1) for m in clf.model if isinstance(m, nn.Linear)]
            for ours, theirs in zip(res.weights, ref):
                torch.testing.assert_close(ours[g, reg_idx], theirs.detach(), atol=atol, rtol=0)
            assert res.nepoch[g, reg_idx] == clf.nepoch
            Xd, yd = (X, y) if Xdev is None else (Xdev, ydev)
            dev_rows = group.dev_idx if group.dev_idx is not None else None
            if dev_rows is not None:
                assert res.dev_accuracy()[g, reg_idx] == clf.score(Xd[dev_rows], yd[dev_rows])
            np.testing.assert_array_equal(res.predict(X, g, reg_idx), clf.predict(X).reshape(-1).astype(np.int64))


@pytest.mark.parametrize("optim", OPTIMS)
@pytest.mark.parametrize("nhid", [0, 4])
def test_engine_equals_senteval_in_float64(optim, nhid, probe_path):
    if nhid and probe_path == "fused":
        pytest.skip("an MLP always takes the torch path")
    X, y = linear_data(nclasses=3)
    X = X.astype(np.float64)
    params = ProtocolParams(optim=optim, nhid=nhid, batch_size=30, max_epoch=24)  # 30: a partial block of 4 rows
    l2 = [1e-5, 1e-3, 1e-1]
    res = fit_members(X, y, _groups(len(y)), l2, params, 3, dtype=torch.float64)
    assert res.work["fused"] == (probe_path == "fused" and nhid == 0)
    _compare(res, X, y, _groups(len(y)), l2, params, 3, torch.float64, atol=1e-12)


@pytest.mark.parametrize("optim", ["rmsprop", "adam"])
def test_the_protocol_switch_forces_the_torch_path_and_still_equals_senteval(optim):
    X, y = linear_data(nclasses=3)
    X = X.astype(np.float64)
    params = ProtocolParams(optim=optim, batch_size=30, max_epoch=24, fused_kernels=False)
    l2 = [1e-5, 1e-3, 1e-1]
    res = fit_members(X, y, _groups(len(y)), l2, params, 3, dtype=torch.float64)
    assert not res.work["fused"]
    _compare(res, X, y, _groups(len(y)), l2, params, 3, torch.float64, atol=1e-12)


@pytest.mark.parametrize("nhid", [0, 4])
def test_features_kept_in_host_memory_give_the_same_probes_and_still_equal_senteval(nhid):
    # device_features_gb=0 runs the path a GPU takes for a task larger than the budget: features in host memory,
    # each step's rows gathered there and copied into the probe's buffers.
    X, y = linear_data(nclasses=3)
    X = X.astype(np.float64)
    l2 = [1e-5, 1e-3, 1e-1]
    runs = []
    for budget in (1.0, 0.0):
        params = ProtocolParams(optim="adam", nhid=nhid, batch_size=30, max_epoch=24, fused_kernels=False,
                                device_features_gb=budget)
        runs.append(fit_members(X, y, _groups(len(y)), l2, params, 3, dtype=torch.float64))
    assert [r.work["staged"] for r in runs] == [False, True]
    for ours, unstaged in zip(runs[1].weights, runs[0].weights):
        assert torch.equal(ours, unstaged)
    np.testing.assert_array_equal(runs[1].nepoch, runs[0].nepoch)
    _compare(runs[1], X, y, _groups(len(y)), l2, params, 3, torch.float64, atol=1e-12)


def test_which_features_stay_in_host_memory():
    gb = 2**30
    assert not features_stay_on_host(100 * gb, torch.device("cpu"), 1.0)  # the CPU holds them anyway
    assert features_stay_on_host(int(1.6 * gb), torch.device("cuda"), 1.0)  # 4096-d x 100k float32 sentences
    assert not features_stay_on_host(gb // 2, torch.device("cuda"), 1.0)
    assert features_stay_on_host(1, torch.device("cpu"), 0.0)
    with pytest.raises(ValueError, match="device_features_gb"):
        ProtocolParams(device_features_gb=-1)


@pytest.mark.parametrize("optim", ["rmsprop", "adam"])
def test_engine_equals_senteval_in_float32(optim, probe_path):
    X, y = linear_data(nclasses=2)
    params = ProtocolParams(optim=optim, batch_size=32, tenacity=1, epoch_size=1, max_epoch=30)
    l2 = [1e-5, 1.0, 10.0]  # members stop at different epochs, whole groups leave the batch
    res = fit_members(X, y, _groups(len(y)), l2, params, 2)
    assert res.work["fused"] == (probe_path == "fused")
    assert len(np.unique(res.nepoch)) > 1
    _compare(res, X, y, _groups(len(y)), l2, params, 2, torch.float32, atol=1e-4)


@pytest.mark.parametrize("nclasses,nhid", [(2, 0), (3, 0), (3, 4)])
def test_members_leave_the_model_when_stopped_in_every_group(nclasses, nhid, probe_path):
    # A member stopped in every live group is no longer computed; until then it steps on in the groups where it
    # is alive (two groups: the same L2 value stops at different epochs), as SentEval trains each one alone.
    if nhid and probe_path == "fused":
        pytest.skip("an MLP always takes the torch path")
    X, y = linear_data(nclasses=nclasses)
    X = X.astype(np.float64)
    params = ProtocolParams(optim="adam,lr=0.01", nhid=nhid, batch_size=30, tenacity=1, epoch_size=1, max_epoch=30)
    groups = [Group(np.arange(0, 200), np.arange(200, 240)), Group(np.arange(100, 240), np.arange(0, 40))]
    l2 = [1e-5, 1e-3, 1e-1, 1.0]
    res = fit_members(X, y, groups, l2, params, nclasses, dtype=torch.float64)
    assert (res.nepoch[0] != res.nepoch[1]).any()  # a member stopped in one group before the other
    assert res.work["member_rows"] < res.work["rows"] * len(l2)  # some steps ran without the stopped members
    _compare(res, X, y, groups, l2, params, nclasses, torch.float64, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("nclasses", [2, 3])
def test_one_group_split_between_threads_equals_senteval(nclasses, monkeypatch):
    # One group on two threads: the fused kernel splits each step's rows in two and sums the parts.
    import numba

    from sentence_lab.evaluation.classifier import probe_kernels

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here")
    monkeypatch.setattr(probe_kernels, "SPLIT_WORK", 0)
    torch.set_num_threads(2)  # the autouse fixture restores one thread
    X, y = linear_data(nclasses=nclasses)
    X = X.astype(np.float64)
    params = ProtocolParams(optim="adam", batch_size=30, max_epoch=12)
    groups = [Group(np.arange(0, 200), np.arange(200, 240))]
    res = fit_members(X, y, groups, [1e-4, 1e-2], params, nclasses, dtype=torch.float64)
    assert res.work["fused"]
    _compare(res, X, y, groups, [1e-4, 1e-2], params, nclasses, torch.float64, atol=1e-12)


def test_separate_dev_set_and_per_group_l2(probe_path):
    X, y = linear_data(n=200, nclasses=3, seed=2)
    Xdev, ydev = linear_data(n=50, nclasses=3, seed=2)
    groups = [Group(np.arange(0, 120), np.arange(0, 50)), Group(np.arange(50, 200), np.arange(10, 40))]
    l2 = np.array([[1e-5, 1e-2], [1e-1, 1e-4]])
    params = ProtocolParams(batch_size=16, max_epoch=10)
    res = fit_members(X.astype(np.float64), y, groups, l2, params, 3, Xdev=Xdev.astype(np.float64), ydev=ydev,
                      dtype=torch.float64)
    for g, group in enumerate(groups):
        _compare(fit_members(X.astype(np.float64), y, [group], l2[g], params, 3, Xdev=Xdev.astype(np.float64),
                             ydev=ydev, dtype=torch.float64),
                 X.astype(np.float64), y, [group], l2[g], params, 3, torch.float64, 1e-12, Xdev.astype(np.float64),
                 ydev)
        torch.testing.assert_close(res.weights[0][g], fit_members(
            X.astype(np.float64), y, [group], l2[g], params, 3, Xdev=Xdev.astype(np.float64), ydev=ydev,
            dtype=torch.float64).weights[0][0], atol=1e-12, rtol=0)


def test_initial_weights_are_sentevals():
    torch.manual_seed(1111)
    ref1, ref2 = nn.Linear(7, 5), nn.Linear(5, 3)
    model = StackedProbe.init(7, 3, 5, (2, 3), 1111, 0.0, torch.float32, torch.device("cpu"))
    W1, W2 = model.params
    assert W1.shape == (2, 3, 5, 8) and W2.shape == (2, 3, 3, 6)
    torch.testing.assert_close(W1[1, 2, :, :7], ref1.weight.detach())
    torch.testing.assert_close(W1[0, 0, :, 7], ref1.bias.detach())
    torch.testing.assert_close(W2[1, 0, :, 5], ref2.bias.detach())


def test_batch_plan_is_sentevals_stream():
    # Each group's minibatches are the slices of RandomState(seed).permutation(n) of its training rows, drawn per
    # epoch; a 5% validation split draws its permutation first. Weights are 1 / rows; padding weighs 0.
    train = np.arange(10, 40)
    plan = BatchPlan([Group(train, np.arange(5)), Group(np.arange(0, 41))], 7, 8, torch.device("cpu"))
    rs_a, rs_b = np.random.RandomState(7), np.random.RandomState(7)
    perm_b = rs_b.permutation(41)
    np.testing.assert_array_equal(plan.dev[1], perm_b[:2])
    for epoch in range(2):
        pa, pb = train[rs_a.permutation(30)], perm_b[2:][rs_b.permutation(39)]
        steps = list(plan.steps(epoch, np.arange(2)))
        assert len(steps) == 5  # ceil(39 / 8)
        for s, (rows, count, weight, active) in enumerate(steps):
            rows, weight = rows.numpy(), weight.view(2, 8)
            na, nb = len(pa[8 * s : 8 * s + 8]), len(pb[8 * s : 8 * s + 8])
            np.testing.assert_array_equal(rows[0, :na], pa[8 * s : 8 * s + 8])
            np.testing.assert_array_equal(rows[1, :nb], pb[8 * s : 8 * s + 8])
            np.testing.assert_allclose(weight[0, :na], 1 / max(na, 1))
            assert float(weight[0, na:].sum()) == 0 and list(count) == [na, nb]
            assert (active is None) == (na > 0) and (active is None or list(active) == [False, True])


def test_early_stopping_rule():
    # Scores 5, 5, 6, 4, 4 with tenacity 2: improve, miss (counter 0 -> 1), improve, miss (1 -> 2), then the miss
    # that finds the counter at 2 stops. SentEval never resets the counter after an improvement.
    stop = EarlyStopping((1, 1), tenacity=2)
    for i, (score, alive) in enumerate([(5, True), (5, True), (6, True), (4, True), (4, False)]):
        improved = stop.update(np.array([0]), np.array([[score]]), nepoch=i + 1)
        assert stop.alive[0, 0] == alive and improved[0, 0] == (i in (0, 2))
    assert stop.best[0, 0] == 6 and stop.nepoch[0, 0] == 5
    stop.update(np.array([0]), np.array([[9]]), nepoch=6)  # a stopped member changes no more
    assert stop.best[0, 0] == 6 and stop.nepoch[0, 0] == 5


@pytest.mark.parametrize("optim", ["adam", "sgd,lr=0.1,momentum=0.9"])
def test_masked_step_freezes_groups(optim):
    params = [torch.randn(3, 2, 4, 5, dtype=torch.float64)]
    opt = MaskedOptimizer(optim, np.full((3, 2), 1e-3), params)
    opt.step(params, [torch.randn_like(params[0])])
    before = params[0].clone(), {k: v.clone() for k, v in opt.state[0].items()}
    opt.step(params, [torch.randn_like(params[0])], np.array([True, False, True]))
    assert torch.equal(params[0][1], before[0][1]) and not torch.equal(params[0][0], before[0][0])
    for k, v in opt.state[0].items():
        assert torch.equal(v[1], before[1][k][1])
    assert opt.steps.tolist() == [2, 1, 2]


def test_early_stopping_on_flat_dev_accuracy():
    # Two identical dev rows with labels 0 and 1: every check scores exactly 50%. Check 1 improves on -1;
    # non-improving checks with counter 0, 1, 2 continue and the one with counter 3 (= tenacity) stops:
    # 1 + 3 + 1 = 5 checks of epoch_size = 2 epochs. The kept weights are those of the first check.
    X, y = linear_data(n=100)
    Xdev, ydev = np.zeros((2, X.shape[1]), np.float32), np.array([0, 1])
    g = [Group(np.arange(100), np.array([0, 1]))]
    res = fit_members(X, y, g, [1e-4], ProtocolParams(tenacity=3, batch_size=16), 2, Xdev=Xdev, ydev=ydev)
    assert res.nepoch[0, 0] == 10 and res.best_score[0, 0] == 1
    once = fit_members(X, y, g, [1e-4], ProtocolParams(tenacity=3, batch_size=16, max_epoch=0), 2, Xdev=Xdev,
                       ydev=ydev)
    assert once.nepoch[0, 0] == 2
    torch.testing.assert_close(res.weights[0], once.weights[0])


def test_max_epoch_bound():
    # `while nepoch <= max_epoch`: with max_epoch 7 and epoch_size 2 the rounds start at 0, 2, 4, 6.
    X, y = linear_data(n=60)
    params = ProtocolParams(tenacity=100, max_epoch=7, batch_size=16)
    res = fit_members(X, y, [Group(np.arange(60), np.array([0, 1]))], [0.0], params, 2,
                      Xdev=np.zeros((2, X.shape[1]), np.float32), ydev=np.array([0, 1]))
    assert res.nepoch[0, 0] == 8


def test_validation_split_rows():
    # The held-out rows are permutation[:int(0.05 n)] of RandomState(seed): relabel exactly those rows to a class
    # no training row has, so the dev set scores 0 and the class is never predicted.
    n = 203
    X, y = linear_data(n=n)
    held = np.random.RandomState(PROTOTYPE.seed).permutation(n)[: int(0.05 * n)]
    y3 = y.copy()
    y3[held] = 2
    res = fit_members(X, y3, [Group(np.arange(n))], [1e-5], ProtocolParams(max_epoch=0), 3)
    assert res.ndev[0] == 10 and res.best_score[0, 0] == 0 and 2 not in res.predict(X)


def test_dropout_is_seeded_and_trains():
    X, y = linear_data(n=200)
    params = ProtocolParams(nhid=8, dropout=0.3, batch_size=32, max_epoch=10)
    a = fit_members(X, y, [Group(np.arange(200))], [1e-4], params, 2)
    b = fit_members(X, y, [Group(np.arange(200))], [1e-4], params, 2)
    c = fit_members(X, y, [Group(np.arange(200))], [1e-4], ProtocolParams(nhid=8, batch_size=32, max_epoch=10), 2)
    assert torch.equal(a.weights[0], b.weights[0]) and not torch.equal(a.weights[0], c.weights[0])
    assert a.score(X, y) > 0.8


def test_parse_optim_defaults():
    assert parse_optim("adam")[1]["lr"] == 1e-3
    assert parse_optim("rmsprop")[1]["lr"] == 1e-2
    assert parse_optim("adadelta")[1]["lr"] == 1.0 and parse_optim("adamax")[1]["lr"] == 2e-3
    assert parse_optim("adam,lr=0.01")[1]["lr"] == 0.01
    with pytest.raises(ValueError):
        parse_optim("sgd")
    with pytest.raises(ValueError):
        parse_optim("adam,foo=1")
    with pytest.raises(ValueError, match="nesterov"):
        parse_optim("sgd,lr=0.1,nesterov=1")
    assert PROTOTYPE.optim == "rmsprop" and FULL.optim == "adam" and FULL.kfold == 10


@pytest.mark.parametrize("optim", ["rmsprop", "adam"])
def test_members_of_different_widths_each_equal_senteval_in_float64(optim):
    """The probing paper's grid trained together: each (nhid, l2) member equals SentEval's MLP of that width,
    trained alone (the narrower member's padded units never contribute nor learn)."""
    X, y = linear_data(nclasses=3)
    X = X.astype(np.float64)
    widths, l2 = [4, 7], [1e-5, 1e-2]
    hidden = [(n, 0.0) for n in widths for _ in l2]
    params = ProtocolParams(optim=optim, batch_size=30, max_epoch=16)
    res = fit_members(X, y, _groups(len(y)), [r for _ in widths for r in l2], params, 3, dtype=torch.float64,
                      hidden=hidden)
    for m, (nhid, _) in enumerate(hidden):
        for g, group in enumerate(_groups(len(y))):
            clf = train_member(X, y, group, l2[m % 2], ProtocolParams(optim=optim, batch_size=30, max_epoch=16,
                                                                     nhid=nhid), 3, dtype=torch.float64)
            first, second = [mod for mod in clf.model if isinstance(mod, nn.Linear)]
            torch.testing.assert_close(res.weights[0][g, m, :nhid], torch.cat([first.weight, first.bias[:, None]], 1)
                                       .detach(), atol=1e-12, rtol=0)
            assert not res.weights[0][g, m, nhid:].any() and not res.weights[1][g, m, :, nhid:-1].any()
            torch.testing.assert_close(res.weights[1][g, m, :, :nhid], second.weight.detach(), atol=1e-12, rtol=0)
            assert res.nepoch[g, m] == clf.nepoch
            np.testing.assert_array_equal(res.predict(X, g, m), clf.predict(X).reshape(-1).astype(np.int64))


def test_a_dropout_member_draws_masks_and_a_rate_zero_member_is_untouched():
    X, y = linear_data(n=200)
    params = ProtocolParams(batch_size=32, max_epoch=10)
    grid = fit_members(X, y, [Group(np.arange(200))], [1e-4, 1e-4], params, 2, hidden=[(8, 0.0), (8, 0.3)])
    plain = fit_members(X, y, [Group(np.arange(200))], [1e-4], ProtocolParams(nhid=8, batch_size=32, max_epoch=10), 2)
    alone = fit_members(X, y, [Group(np.arange(200))], [1e-4], ProtocolParams(nhid=8, dropout=0.3, batch_size=32,
                                                                             max_epoch=10), 2)
    torch.testing.assert_close(grid.weights[0][0, 0], plain.weights[0][0, 0])  # rate 0: no mask at all
    assert not torch.equal(grid.weights[0][0, 1], plain.weights[0][0, 0])  # rate 0.3: masks drawn
    assert grid.score(X, y, 0, 1) > 0.8 and alone.score(X, y) > 0.8


def test_each_hidden_width_trains_as_its_own_stack(monkeypatch):
    """No step computes a narrower member over a wider member's units: the paper's grid runs one stack per width."""
    X, y = linear_data(n=120)
    seen = set()
    original = StackedProbe.gradients

    def spy(self, Xb, T, weight, loss):
        seen.add((self.params[0].shape[2], self.params[0].shape[1]))  # (hidden width, members in the stack)
        return original(self, Xb, T, weight, loss)

    monkeypatch.setattr(StackedProbe, "gradients", spy)
    hidden = [(3, 0.0), (5, 0.1), (3, 0.2), (5, 0.0), (3, 0.0)]
    res = fit_members(X, y, [Group(np.arange(120))], [1e-4] * 5, ProtocolParams(batch_size=32, max_epoch=2), 2,
                      hidden=hidden)
    assert {(3, 3), (5, 2)} <= seen and all(width in (3, 5) for width, _ in seen)
    assert res.weights[0].shape[:3] == (1, 5, 5)  # merged in the members' order, padded to the widest
    for m, (nhid, _) in enumerate(hidden):
        assert res.weights[0][0, m, :nhid].any() and not res.weights[0][0, m, nhid:].any()
    with pytest.raises(ValueError, match="one hidden width"):
        StackedProbe.init_members(4, 2, [(3, 0.0), (5, 0.0)], 1, 0, torch.float32, torch.device("cpu"))
