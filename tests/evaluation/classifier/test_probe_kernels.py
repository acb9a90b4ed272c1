"""The fused CPU kernels against autograd on the losses they differentiate."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from sentence_lab.evaluation.classifier import probe_kernels
from tests.helpers import processes

ROOT = Path(__file__).resolve().parents[3]


def _case(G, M, C, d, B, dtype, mse, augmented, seed=0):
    g = torch.Generator().manual_seed(seed)
    n = 60
    X = torch.randn(n, d, generator=g, dtype=dtype)
    if augmented:
        X = torch.cat([X, torch.ones(n, 1, dtype=dtype)], 1)
    labels = torch.randint(0, C, (n,), generator=g)
    T = torch.softmax(torch.randn(n, C, generator=g, dtype=dtype), 1) if mse else \
        torch.nn.functional.one_hot(labels, C).to(dtype)
    W = torch.randn(G, M, d + 1, generator=g, dtype=dtype)
    rows = torch.randint(0, n, (G, B), generator=g)
    count = np.array([B, B - 3, 0, 1, 5][:G])
    return X, T, W, rows, count


def _autograd(X, T, W, rows, count, scale, mse):
    """Sum over groups and members of each member's loss on its group's first ``count[g]`` rows, by autograd."""
    W = W.clone().requires_grad_(True)
    C = T.shape[1]
    total = 0
    for g, n in enumerate(count):
        if n == 0:
            continue
        x = X[rows[g, :n]]
        x = x if x.shape[1] == W.shape[2] else torch.cat([x, torch.ones(n, 1, dtype=x.dtype)], 1)
        z = (x @ W[g].T).view(n, -1, C)  # [rows, members, classes]
        t = T[rows[g, :n]].unsqueeze(1)
        if mse:  # SentEval's relatedness: MSELoss on the softmax, scale = 2 / C folded as in the engine
            total = total + scale / 2 * ((torch.softmax(z, 2) - t) ** 2).sum() / n
        else:
            total = total - (torch.log_softmax(z, 2) * t).sum() / n
    total.backward()
    return W.grad


@pytest.mark.parametrize("dtype,atol", [(torch.float64, 1e-12), (torch.float32, 2e-5)])
@pytest.mark.parametrize("mse", [False, True])
@pytest.mark.parametrize("G,M,C,d,B,augmented", [(4, 6, 3, 17, 10, True), (1, 5, 5, 33, 9, True),
                                                 (5, 4, 2, 8, 12, False), (2, 3, 1, 5, 7, True),
                                                 (3, 14, 7, 19, 11, False), (2, 24, 6, 9, 6, True),
                                                 (2, 12, 2, 10, 9, True)])
@pytest.mark.parametrize("threads", [1, 2])
def test_gradients_equal_autograd(dtype, atol, mse, G, M, C, d, B, augmented, threads, monkeypatch):
    # Odd column counts (the 2-column blocks' remainder), six-column blocks (14 = 5 + 5 + 4: short blocks repeat
    # a column; 24 = 4 x 6; six two-class members: six z1 - z0 columns), partial blocks of 4 rows, a group with no
    # rows, bias as an input column or past the inputs, one group on two threads (its rows split in two sums).
    torch.set_num_threads(threads)
    X, T, W, rows, count = _case(G, M, C, d, B, dtype, mse, augmented)
    scale = 2.0 / C if mse else 1.0
    weight = torch.tensor(scale / np.maximum(count, 1), dtype=dtype)
    grad = torch.full_like(W, float("nan"))
    monkeypatch.setattr(probe_kernels, "SPLIT_WORK", 0)  # split even these small groups between threads
    probe_kernels.linear_gradients(X.numpy(), T.numpy(), rows.numpy(), count, weight.numpy(), W.numpy(), grad.numpy(),
                                   mse)
    ref = _autograd(X, T, W, rows, count, scale, mse)
    live = torch.as_tensor(count > 0)
    torch.testing.assert_close(grad[live], ref[live], atol=atol, rtol=0)
    assert torch.all(grad[~live] == 0)


@pytest.mark.parametrize("augmented", [True, False])
@pytest.mark.parametrize("M", [3, 7, 13])
def test_logits_equal_products(augmented, M):
    X, T, W, rows, count = _case(5, M, M, 11, 13, torch.float64, False, augmented)
    Z = torch.from_numpy(probe_kernels.linear_logits(X.numpy(), rows.numpy(), count, W.numpy()))
    for g, n in enumerate(count):
        x = X[rows[g, :n]]
        ref = x @ W[g].T if augmented else x @ W[g, :, :-1].T + W[g, :, -1]
        torch.testing.assert_close(Z[g, :, :n], ref.T, atol=1e-12, rtol=0)
        assert torch.all(Z[g, :, n:] == 0)


def test_usable_only_for_cpu_linear_probes_within_the_cache_budget():
    cpu = torch.device("cpu")
    assert probe_kernels.usable(cpu, 0, 0.0, 8, 4097, 4)
    assert not probe_kernels.usable(cpu, 50, 0.0, 8, 4097, 4)  # MLP
    assert not probe_kernels.usable(cpu, 0, 0.1, 8, 4097, 4)  # dropout
    assert not probe_kernels.usable(cpu, 0, 0.0, 4000, 4097, 4)  # WordContent's 1000 classes x 4 L2 values
    assert not probe_kernels.usable(torch.device("meta"), 0, 0.0, 8, 4097, 4)


@pytest.mark.slow
def test_processes_calling_a_kernel_first_together_compile_it_once(tmp_path):
    """Without numba's cache (a fresh machine), two processes' first calls at the same moment: one compiles and
    writes the cache, the other waits for it and loads it (``compiled_once``), not both compiling."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    go = tmp_path / "go"
    procs = [processes.start([sys.executable, str(ROOT / "tests" / "helpers" / "kernel_first_call.py"), str(go)],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    go.touch()
    outcomes = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:]
        outcomes.append(out.strip())
    assert sorted(outcomes) == ["compiled", "loaded"]
