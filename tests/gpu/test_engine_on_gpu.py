"""The evaluation engine's classifiers on a GPU give the CPU's scores on the same vectors (MR: nested
cross-validation, TREC: k-fold then test, SICK-R: the relatedness regression), within the tolerance of
docs/evaluation.md ("On a GPU"), and features kept in host memory (``device_features_gb=0``: pinned buffers, a step's
rows copied at a time) give what features on the GPU give."""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest

from sentence_lab.evaluation.baselines import BowGloveEncoder
from sentence_lab.evaluation.embedding_cache import EmbeddingCache
from sentence_lab.evaluation.protocol import PROTOTYPE
from sentence_lab.evaluation.regimes import features
from sentence_lab.evaluation.runner import load_tasks
from sentence_lab.tools.benchmark import run_regime

pytestmark = [pytest.mark.gpu, pytest.mark.slow, pytest.mark.real_data]

# docs/evaluation.md, "On a GPU": the torch path on a GPU sums in another order than the CPU's kernels.
ACCURACY_TOLERANCE = 0.5  # points
CORRELATION_TOLERANCE = 0.005


@pytest.fixture(scope="module")
def embed():
    return EmbeddingCache(BowGloveEncoder(), batch_size=128).embed


def task_inputs(name: str, embed) -> tuple:
    root = os.environ.get("SENTENCE_DATA")
    if not root:
        pytest.skip("SENTENCE_DATA not set")
    (task,) = load_tasks([name], Path(root))
    if task.data is None:
        pytest.skip(f"no {name} data under {root}")
    spec = task.spec
    X = {k: features(s, embed, spec.features) for k, s in task.data.splits.items()}
    y = {k: (s.y.astype(np.float64) if spec.regime == "regression" else s.y) for k, s in task.data.splits.items()}
    return spec, X, y, task.data.nclasses


@pytest.mark.parametrize("name", ["MR", "TREC", "SICKRelatedness"])
def test_classifiers_on_the_gpu_give_the_cpus_scores(name, embed, record_property):
    spec, X, y, nclasses = task_inputs(name, embed)
    cpu = run_regime(spec, X, y, dataclasses.replace(PROTOTYPE, device="cpu"), nclasses)
    gpu = run_regime(spec, X, y, dataclasses.replace(PROTOTYPE, device="cuda"), nclasses)
    keys = ["acc", "devacc"] if "acc" in cpu else ["pearson", "spearman", "devpearson"]
    for key in keys:
        record_property(f"{key}_cpu", float(cpu[key]))
        record_property(f"{key}_gpu", float(gpu[key]))
        tolerance = ACCURACY_TOLERANCE if key.endswith("acc") else CORRELATION_TOLERANCE
        assert abs(gpu[key] - cpu[key]) <= tolerance, (key, cpu[key], gpu[key])


def test_features_in_host_memory_give_the_scores_of_features_on_the_gpu(embed):
    spec, X, y, nclasses = task_inputs("TREC", embed)
    on_device = run_regime(spec, X, y, dataclasses.replace(PROTOTYPE, device="cuda"), nclasses)
    on_host = run_regime(spec, X, y, dataclasses.replace(PROTOTYPE, device="cuda", device_features_gb=0.0), nclasses)
    assert (on_host["acc"], on_host["devacc"]) == (on_device["acc"], on_device["devacc"])
