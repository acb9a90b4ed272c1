"""The GPU tier (``pytest -m gpu``): run on a CUDA machine by ``scripts/gpu_check.sh``; skipped without CUDA."""
from __future__ import annotations

import pytest
import torch


def pytest_collection_modifyitems(config, items) -> None:
    skip = pytest.mark.skip(reason="needs a CUDA GPU (scripts/gpu_check.sh runs this tier on one)")
    for item in items:
        if item.get_closest_marker("gpu") is not None and not torch.cuda.is_available():
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def float32_is_float32():
    """float32 means float32 in these tests: no TF32 in matrix products or cuDNN (PyTorch allows it in cuDNN by
    default), restored afterwards."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
