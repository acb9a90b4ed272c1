"""The evaluation engine on a GPU gives the CPU's scores on the same vectors (MR: nested cross-validation, TREC:
k-fold then test, SICK-R: the relatedness regression), within the tolerance of docs/evaluation.md ("On a GPU"), and
features kept in host memory (``device_features_gb=0``: pinned buffers, a step's rows copied at a time) give what
features on the GPU give. Each task runs through ``run_task``, as evaluate.py and the per-epoch suite run it. Epochs
recorded as CUDA graphs (the default there) give what the same steps give one by one."""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from sentence_lab.evaluation.classifier import Group, fit_members, step_graphs
from sentence_lab.evaluation.encoders.baselines import BowGloveEncoder
from sentence_lab.evaluation.protocol import PROTOTYPE, ProtocolParams
from sentence_lab.evaluation.regimes.regression import relatedness
from sentence_lab.evaluation.runner import LoadedTask, load_tasks, run_task
from sentence_lab.evaluation.vectors.embedding_cache import EmbeddingCache

pytestmark = [pytest.mark.gpu, pytest.mark.slow, pytest.mark.real_data]

# docs/evaluation.md, "On a GPU": the torch path on a GPU sums in another order than the CPU's kernels.
ACCURACY_TOLERANCE = 0.5  # points
CORRELATION_TOLERANCE = 0.005


@pytest.fixture(scope="module")
def cache() -> EmbeddingCache:
    return EmbeddingCache(BowGloveEncoder(), batch_size=128)


def loaded(name: str) -> LoadedTask:
    root = os.environ.get("SENTENCE_DATA")
    if not root:
        pytest.skip("SENTENCE_DATA not set")
    (task,) = load_tasks([name], Path(root))
    if task.data is None:
        pytest.skip(f"no {name} data under {root}")
    return task


@pytest.mark.parametrize("name", ["MR", "TREC", "SICKRelatedness"])
def test_the_engine_on_the_gpu_gives_the_cpus_scores(name, cache, record_property):
    task = loaded(name)
    cpu = run_task(task, cache, dataclasses.replace(PROTOTYPE, device="cpu"))
    gpu = run_task(task, cache, dataclasses.replace(PROTOTYPE, device="cuda"))
    keys = ["acc", "devacc"] if "acc" in cpu else ["pearson", "spearman", "devpearson"]
    for key in keys:
        record_property(f"{key}_gpu_minus_cpu", abs(float(gpu[key]) - float(cpu[key])))
        tolerance = ACCURACY_TOLERANCE if key.endswith("acc") else CORRELATION_TOLERANCE
        assert abs(gpu[key] - cpu[key]) <= tolerance, (key, cpu[key], gpu[key])


def test_features_in_host_memory_give_the_scores_of_features_on_the_gpu(cache):
    task = loaded("TREC")
    on_device = run_task(task, cache, dataclasses.replace(PROTOTYPE, device="cuda"))
    on_host = run_task(task, cache, dataclasses.replace(PROTOTYPE, device="cuda", device_features_gb=0.0))
    assert (on_host["acc"], on_host["devacc"]) == (on_device["acc"], on_device["devacc"])


@pytest.mark.parametrize("optim,nhid", [("adam,lr=0.03", 0), ("rmsprop", 0), ("rmsprop", 4)])
def test_epochs_recorded_as_cuda_graphs_equal_steps_one_by_one(optim, nhid):
    # Two groups of 150 rows in batches of 30 (every group steps at every step), members stopping at different
    # epochs (their tensors replaced: recorded again). The graphs replay the kernels the steps launch.
    rs = np.random.RandomState(0)
    X = rs.randn(240, 64).astype(np.float32)
    y = (X @ rs.randn(64, 3) + 0.7 * rs.randn(240, 3)).argmax(1)
    groups = [Group(np.arange(0, 150), np.arange(160, 200)), Group(np.arange(40, 190), np.arange(0, 40))]
    params = ProtocolParams(optim=optim, nhid=nhid, batch_size=30, tenacity=1, epoch_size=1, max_epoch=30,
                            device="cuda")
    fits = [fit_members(X, y, groups, [1e-5, 1e-3, 1e-1, 1.0], dataclasses.replace(params, cuda_graphs=graphs), 3)
            for graphs in (True, False)]
    assert fits[0].work["graph_epochs"] == fits[0].work["steps"] // 5 > 0 and fits[1].work["graph_epochs"] == 0
    assert "graph_failure" not in fits[0].work
    for graphed, stepped in zip(fits[0].weights, fits[1].weights):
        assert graphed.is_cuda
        torch.testing.assert_close(graphed, stepped, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(fits[0].nepoch, fits[1].nepoch)


def test_the_relatedness_regression_recorded_equals_it_stepped_on_the_gpu(monkeypatch):
    recordings = []
    real = step_graphs.cuda_graph_recorder

    def counted(warm_up, steps, device=None):
        recordings.append(device)
        return real(warm_up, steps, device)

    monkeypatch.setattr(step_graphs, "cuda_graph_recorder", counted)
    rs = np.random.RandomState(3)
    X = rs.randn(3000, 256).astype(np.float32)
    y = np.clip(3 + X[:, :3].sum(1) + 0.3 * rs.randn(3000), 1, 5)
    runs = [relatedness(X[:2000], y[:2000], X[2000:2500], y[2000:2500], X[2500:], y[2500:],
                        dataclasses.replace(PROTOTYPE, device="cuda", cuda_graphs=graphs)) for graphs in (True, False)]
    assert len(recordings) == 1 and step_graphs._refused is None  # the recorded run recorded once, and held
    for key in ("pearson", "spearman", "devpearson"):
        assert abs(runs[0][key] - runs[1][key]) <= 1e-6, (key, runs[0][key], runs[1][key])
