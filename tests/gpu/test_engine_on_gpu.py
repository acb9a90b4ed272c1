"""The evaluation engine on a GPU gives the CPU's scores on the same vectors (MR: nested cross-validation, TREC:
k-fold then test, SICK-R: the relatedness regression), within the tolerance of docs/evaluation.md ("On a GPU"), and
features kept in host memory (``device_features_gb=0``: pinned buffers, a step's rows copied at a time) give what
features on the GPU give. Each task runs through ``run_task``, as evaluate.py and the per-epoch suite run it."""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from sentence_lab.evaluation.baselines import BowGloveEncoder
from sentence_lab.evaluation.embedding_cache import EmbeddingCache
from sentence_lab.evaluation.protocol import PROTOTYPE
from sentence_lab.evaluation.runner import LoadedTask, load_tasks, run_task

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
