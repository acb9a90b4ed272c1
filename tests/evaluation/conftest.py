"""Evaluation tests run on one thread, and the linear-probe tests on both probe paths (the made-up data root and the
toy encoder are in tests/helpers/senteval_tree.py, their fixtures in tests/conftest.py)."""
from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny tensors: OpenMP threads only add contention on a small shared machine."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture(params=["fused", "torch"])
def probe_path(request, monkeypatch) -> str:
    """Run a test on both paths of the linear probe: the fused CPU kernel and torch's gather-and-multiply."""
    from sentence_lab.evaluation.classifier import probe_kernels

    if request.param == "torch":
        monkeypatch.setattr(probe_kernels, "MAX_GROUP_BYTES", 0)
    return request.param
