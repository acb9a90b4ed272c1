"""Epochs recorded once and replayed (``step_graphs``): on the CPU through the call recorder, which keeps a CUDA
graph's contract (nothing runs when recording, a replay reads the buffers as they are then), so everything around a
recording is tested here; tests/gpu/test_engine_on_gpu.py runs the CUDA graphs themselves. A recorded fit must equal
the fit stepped one by one exactly, and so still equal SentEval's code."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from sentence_lab.evaluation.classifier import Group, fit_members, step_graphs
from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.regimes.regression import relatedness
from tests.evaluation.classifier.test_classifier import _compare
from tests.helpers.synthetic import linear_data

# Two groups of 150 training rows: with batch 30 every group steps at every step, so every epoch can be recorded.
EVEN_GROUPS = [Group(np.arange(0, 150), np.arange(160, 200)), Group(np.arange(40, 190), np.arange(0, 40))]


@pytest.fixture
def recorded(monkeypatch):
    """Every device records epochs (with the call recorder); returns the recordings made."""
    made = []

    def recorder(warm_up, steps):
        made.append(steps)
        return step_graphs.call_recorder(warm_up, steps)

    monkeypatch.setattr(step_graphs, "recorder_for", lambda device: recorder)
    return made


def _fit(params: ProtocolParams, groups=EVEN_GROUPS, nhid: int = 0, dtype=torch.float64, **kw):
    X, y = linear_data(nclasses=3)
    params = dataclasses.replace(params, nhid=nhid, fused_kernels=False)
    return fit_members(X.astype(np.float64) if dtype == torch.float64 else X, y, groups, [1e-5, 1e-3, 1e-1, 1.0],
                       params, 3, dtype=dtype, **kw)


def _assert_same_fit(a, b) -> None:
    for wa, wb in zip(a.weights, b.weights):
        assert torch.equal(wa, wb)
    np.testing.assert_array_equal(a.nepoch, b.nepoch)
    np.testing.assert_array_equal(a.best_score, b.best_score)


@pytest.mark.parametrize("optim", ["adam,lr=0.03", "rmsprop", "sgd,lr=0.1", "adadelta",
                                   "rmsprop,momentum=0.5,centered=1"])
@pytest.mark.parametrize("nhid", [0, 4])
def test_recorded_epochs_equal_steps_one_by_one_and_senteval(optim, nhid, recorded):
    # tenacity 1, one epoch a check and four L2 values: members stop at different epochs, and where a member has
    # stopped in both groups the model's tensors are replaced (a selection) and the next epochs recorded again.
    params = ProtocolParams(optim=optim, batch_size=30, tenacity=1, epoch_size=1, max_epoch=30)
    graphed = _fit(params, nhid=nhid)
    stepped = _fit(dataclasses.replace(params, cuda_graphs=False), nhid=nhid)
    _assert_same_fit(graphed, stepped)
    assert graphed.work["graph_epochs"] == graphed.work["steps"] // 5 > 0 and stepped.work["graph_epochs"] == 0
    assert graphed.work["graph_recordings"] == len(recorded) >= 1
    selected = graphed.work["member_rows"] < graphed.work["rows"] * 4
    assert len(recorded) > 1 if selected else len(recorded) == 1
    if (optim, nhid) == ("adam,lr=0.03", 0):
        assert selected and len(np.unique(graphed.nepoch)) > 1  # the case this test is built around
    X, y = linear_data(nclasses=3)
    _compare(graphed, X.astype(np.float64), y, EVEN_GROUPS, [1e-5, 1e-3, 1e-1, 1.0],
             dataclasses.replace(params, nhid=nhid), 3, torch.float64, atol=1e-12)


@pytest.mark.parametrize("optim", ["adamax", "adagrad", "sgd,lr=0.1,momentum=0.9"])
def test_optimisers_with_host_factors_step_one_by_one(optim, recorded):
    # Their factors follow the step count on the host (or, for momentum, the first step): never recorded.
    params = ProtocolParams(optim=optim, batch_size=30, max_epoch=6)
    res = _fit(params)
    assert res.work["graph_epochs"] == 0 and not recorded
    _assert_same_fit(res, _fit(dataclasses.replace(params, cuda_graphs=False)))


def test_epochs_where_a_group_sits_out_a_step_run_one_by_one(recorded):
    # Groups of 150 and 190 rows in batches of 30: the smaller one's epoch ends a step early, every epoch.
    groups = [Group(np.arange(0, 150), np.arange(160, 200)), Group(np.arange(40, 230), np.arange(0, 40))]
    params = ProtocolParams(optim="adam", batch_size=30, max_epoch=6)
    res = _fit(params, groups=groups)
    assert res.work["graph_epochs"] == 0 and not recorded
    _assert_same_fit(res, _fit(dataclasses.replace(params, cuda_graphs=False), groups=groups))


@pytest.mark.parametrize("lr,l2", [("0.03", [[1e-5, 1e-4], [100.0, 100.0]]), ("0.01", [[1e-5, 1e-4], [1.0, 1.0]])])
def test_recording_starts_from_the_step_count_of_the_epochs_stepped_before(lr, l2, recorded):
    # Ragged groups (150 and 190 rows) step one by one until one of them stops; the other then steps at every step
    # and its epochs are recorded, Adam's count going on from its own steps (15 or 35), not from zero.
    X, y = linear_data(nclasses=3)
    X = X.astype(np.float64)
    groups = [Group(np.arange(0, 150), np.arange(160, 200)), Group(np.arange(40, 230), np.arange(0, 40))]
    params = ProtocolParams(optim=f"adam,lr={lr}", batch_size=30, tenacity=1, epoch_size=1, max_epoch=30,
                            fused_kernels=False)
    graphed = fit_members(X, y, groups, np.array(l2), params, 3, dtype=torch.float64)
    stepped = fit_members(X, y, groups, np.array(l2), dataclasses.replace(params, cuda_graphs=False), 3,
                          dtype=torch.float64)
    assert 0 < graphed.work["graph_epochs"] < graphed.work["steps"] // 5
    _assert_same_fit(graphed, stepped)
    for g, group in enumerate(groups):
        _compare(fit_members(X, y, [group], l2[g], params, 3, dtype=torch.float64), X, y, [group], l2[g], params,
                 3, torch.float64, atol=1e-12)


def test_dropout_steps_one_by_one(recorded):
    res = _fit(ProtocolParams(optim="adam", batch_size=30, max_epoch=4, dropout=0.2), nhid=4)
    assert res.work["graph_epochs"] == 0 and not recorded


def test_a_failed_recording_leaves_the_fit_to_its_steps_one_by_one(monkeypatch, caplog):
    # A recording that fails halfway (as CUDA refuses an operation it cannot record): nothing of it ran, the steps
    # counted on the host while recording are taken back, and the fit goes on stepping, equal to a fit that never
    # recorded; a warning says so once.
    def failing(warm_up, steps):
        warm_up()
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(step_graphs, "recorder_for", lambda device: failing)
    params = ProtocolParams(optim="adam,lr=0.03", batch_size=30, tenacity=1, epoch_size=1, max_epoch=30)
    with caplog.at_level("WARNING", logger="sentence_lab.evaluation.classifier"):
        res = _fit(params)
    assert res.work["graph_epochs"] == 0 and "not permitted" in res.work["graph_failure"]
    assert [r.message.count("could not be recorded") for r in caplog.records] == [1]
    _assert_same_fit(res, _fit(dataclasses.replace(params, cuda_graphs=False)))


def test_a_recording_that_failed_once_begun_ends_recordings_in_this_process(monkeypatch):
    # CUDA's allocator may still believe such a recording is under way (torch before 2.12): no fit records again.
    def failing_once_begun(warm_up, steps):
        warm_up()
        raise step_graphs.RecordingFailed("RuntimeError: operation not permitted when stream is capturing", begun=True)

    monkeypatch.setattr(step_graphs, "_refused", None)
    monkeypatch.setattr(step_graphs, "recorder_for", lambda device: failing_once_begun)
    params = ProtocolParams(optim="adam,lr=0.03", batch_size=30, max_epoch=4)
    res = _fit(params)
    assert res.work["graph_epochs"] == 0 and "not permitted" in res.work["graph_failure"]
    refused = step_graphs._refused
    monkeypatch.undo()  # the real recorder_for; then the refusal the fit made
    monkeypatch.setattr(step_graphs, "_refused", refused)
    assert "not permitted" in refused and step_graphs.recorder_for(torch.device("cuda")) is None
    monkeypatch.setattr(step_graphs, "_refused", None)
    assert step_graphs.recorder_for(torch.device("cuda")) is not None


def test_the_cpu_records_nothing_by_default():
    assert step_graphs.recorder_for(torch.device("cpu")) is None
    cuda = step_graphs.recorder_for(torch.device("cuda", 1))
    assert cuda.func is step_graphs.cuda_graph_recorder and cuda.keywords == {"device": torch.device("cuda", 1)}
    res = _fit(ProtocolParams(optim="adam", batch_size=30, max_epoch=4))
    assert res.work["graph_epochs"] == 0 and res.work["graph_recordings"] == 0


@pytest.mark.slow
def test_the_relatedness_regression_recorded_equals_it_stepped(recorded, monkeypatch):
    # SICK-R's regime: Adam on the softmax's MSE, 50 epochs a check; float32 as the suite runs it.
    rs = np.random.RandomState(3)
    X = rs.randn(300, 8).astype(np.float32)
    y = np.clip(3 + X[:, :3].sum(1) + 0.3 * rs.randn(300), 1, 5)
    params = ProtocolParams(fused_kernels=False)
    runs = [relatedness(X[:200], y[:200], X[200:250], y[200:250], X[250:], y[250:], dataclasses.replace(
        params, cuda_graphs=graphs)) for graphs in (True, False)]
    assert runs[0]["pearson"] == runs[1]["pearson"] and runs[0]["devpearson"] == runs[1]["devpearson"]
    np.testing.assert_array_equal(runs[0]["yhat"], runs[1]["yhat"])
    assert len(recorded) == 1 and runs[0]["pearson"] > 0.5


def test_a_replay_reads_the_buffers_as_they_are_then():
    seen = []
    graph = step_graphs.EpochGraph(step_graphs.call_recorder)

    def step(s, rows, weight):
        seen.append((s, rows.tolist(), float(weight)))

    for rows, key in (([[1], [2]], (0,)), ([[3], [4]], (0,)), ([[5], [6]], (1,)), ([[7], [8], [9]], (1,))):
        graph.run(torch.tensor(rows), torch.ones(len(rows)), key, step, warm_up=lambda: None)
    assert [r for _, r, _ in seen] == [[1], [2], [3], [4], [5], [6], [7], [8], [9]]
    assert [s for s, _, _ in seen] == [0, 1, 0, 1, 0, 1, 0, 1, 2]
    assert (graph.recordings, graph.replays) == (3, 4)  # a new key, a new number of steps: recorded again
