"""Supervised relatedness (SICK-R, STS Benchmark) as SentEval's ``tools/relatedness.py`` runs it.

Model: ``Linear(2d -> nclasses)`` then softmax, MSE (mean) against the Tai et al. target,
Adam with torch defaults and no L2, batch 64. Every 50 epochs the dev Pearson of the expected
score (classes 1..nclasses) is checked; the best model is kept; training stops at the first
non-improving check after 3 earlier ones, or once more than 1000 epochs have run.

The training loop here computes the gradient of softmax + MSE by hand and applies torch's Adam
update, avoiding autograd and ``torch.optim`` bookkeeping in the 70k-step loop;
``engine="sequential"`` runs the plain ``torch.nn`` / ``torch.optim`` reference instead.
"""
from __future__ import annotations

import copy

import numpy as np
import torch
from scipy.stats import pearsonr, spearmanr
from torch import nn

from evaluation.protocol import ProtocolParams, resolve_device

__all__ = ["tai_target", "relatedness"]

BATCH_SIZE = 64
MAX_EPOCH = 1000
CHECK_EVERY = 50
TENACITY = 3


def tai_target(scores: np.ndarray, nclasses: int = 5) -> np.ndarray:
    """SentEval's ``encode_labels`` (float32 ``[n, nclasses]``), including its edge behaviour.

    Score ``y`` with ``f = floor(y)`` puts ``y - f`` on class ``f`` (0-based) and ``f - y + 1`` on
    class ``f - 1``, each only when that class exists. So 3.6 -> [0, 0, .4, .6, 0], 5 -> e5,
    and on STS-B's 0..5 scale a score in [0, 1) keeps only ``y`` on class 0 (0 gives all zeros).
    """
    y = np.asarray(scores, dtype=np.float64).reshape(-1)
    Y = np.zeros((len(y), nclasses), dtype=np.float32)
    f = np.floor(y)
    rows = np.arange(len(y))
    hi = f.astype(np.int64)  # class index i with i + 1 == floor(y) + 1
    lo = hi - 1  # class index i with i + 1 == floor(y)
    ok = (hi >= 0) & (hi < nclasses)
    Y[rows[ok], hi[ok]] = (y - f)[ok]
    ok = (lo >= 0) & (lo < nclasses)
    Y[rows[ok], lo[ok]] = (f - y + 1)[ok]
    return Y


def _pearson(a, b) -> float:
    return float(pearsonr(a, b)[0])


def _adam_update(p, g, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    m.lerp_(g, 1 - b1)
    v.mul_(b2).addcmul_(g, g, value=1 - b2)
    step_size = lr / (1 - b1**t)
    bc2_sqrt = (1 - b2**t) ** 0.5
    denom = (v.sqrt() / bc2_sqrt).add_(eps)
    p.addcdiv_(m, denom, value=-step_size)


def _fit_fast(trainX, trainY, devX, devscores, r, rs, inputdim, nclasses, seed):
    torch_model = _init(inputdim, nclasses, seed)
    W = torch_model[0].weight.detach().t().contiguous().to(trainX.device)  # [d, C]
    b = torch_model[0].bias.detach().clone().to(trainX.device)
    state = [torch.zeros_like(W), torch.zeros_like(W), torch.zeros_like(b), torch.zeros_like(b)]
    best = (W.clone(), b.clone())
    n = len(trainX)
    t = 0
    nepoch, bestpr, count, stop = 0, -1, 0, False
    while not stop and nepoch <= MAX_EPOCH:
        for _ in range(CHECK_EVERY):
            perm = torch.as_tensor(rs.permutation(n), device=trainX.device)
            for i in range(0, n, BATCH_SIZE):
                idx = perm[i : i + BATCH_SIZE]
                Xb, Yb = trainX[idx], trainY[idx]
                P = torch.softmax(torch.addmm(b, Xb, W), dim=1)
                dP = (P - Yb).mul_(2.0 / P.numel())
                dZ = P * (dP - (P * dP).sum(1, keepdim=True))
                t += 1
                _adam_update(W, Xb.t() @ dZ, state[0], state[1], t)
                _adam_update(b, dZ.sum(0), state[2], state[3], t)
        nepoch += CHECK_EVERY
        with torch.no_grad():
            yhat = np.dot(torch.softmax(torch.addmm(b, devX, W), dim=1).cpu().numpy(), r)
        pr = _pearson(yhat, devscores)
        if pr > bestpr:
            bestpr = pr
            best = (W.clone(), b.clone())
        else:
            if count >= TENACITY:
                stop = True
            count += 1
    W, b = best
    return bestpr, lambda X: torch.softmax(torch.addmm(b, X, W), dim=1)


def _init(inputdim, nclasses, seed) -> nn.Sequential:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(inputdim, nclasses), nn.Softmax(dim=-1))


def _fit_sequential(trainX, trainY, devX, devscores, r, rs, inputdim, nclasses, seed):
    model = _init(inputdim, nclasses, seed).to(trainX.device)
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), weight_decay=0.0)
    nepoch, bestpr, count, stop = 0, -1, 0, False
    bestmodel = copy.deepcopy(model)
    n = len(trainX)
    while not stop and nepoch <= MAX_EPOCH:
        model.train()
        for _ in range(CHECK_EVERY):
            perm = torch.as_tensor(rs.permutation(n), device=trainX.device)
            for i in range(0, n, BATCH_SIZE):
                idx = perm[i : i + BATCH_SIZE]
                loss = loss_fn(model(trainX[idx]), trainY[idx])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        nepoch += CHECK_EVERY
        model.eval()
        with torch.no_grad():
            yhat = np.dot(model(devX).cpu().numpy(), r)
        pr = _pearson(yhat, devscores)
        if pr > bestpr:
            bestpr = pr
            bestmodel = copy.deepcopy(model)
        else:
            if count >= TENACITY:
                stop = True
            count += 1
    bestmodel.eval()
    return bestpr, bestmodel


def relatedness(Xtr, ytr, Xdev, ydev, Xte, yte, params: ProtocolParams, nclasses: int = 5,
                *, engine: str = "fast", dtype: torch.dtype = torch.float32) -> dict:
    """SICK-R / STS-B regime; ``y`` are raw float scores. See the module docstring.

    Returns ``{"devpearson", "pearson", "spearman", "mse", "yhat", "ndev", "ntest"}`` with the
    values SentEval's ``sick.py`` reports (NaN correlations become 0).
    """
    device = torch.device(resolve_device(params.device))
    r = np.arange(1, nclasses + 1)
    trainX = torch.as_tensor(np.asarray(Xtr), device=device).to(dtype)
    trainY = torch.as_tensor(tai_target(ytr, nclasses), device=device).to(dtype)
    devX = torch.as_tensor(np.asarray(Xdev), device=device).to(dtype)
    testX = torch.as_tensor(np.asarray(Xte), device=device).to(dtype)
    devscores = np.asarray(ydev, dtype=np.float64)
    yte = np.asarray(yte, dtype=np.float64)
    rs = np.random.RandomState(params.seed)  # SentEval reseeds numpy in the constructor
    fit = {"fast": _fit_fast, "sequential": _fit_sequential}[engine]
    devpr, model = fit(trainX, trainY, devX, devscores, r, rs, trainX.shape[1], nclasses, params.seed)
    with torch.no_grad():
        yhat = np.dot(model(testX).cpu().numpy(), r)
    pr = _pearson(yhat, yte)
    sr = float(spearmanr(yhat, yte)[0])
    pr = 0 if pr != pr else pr
    sr = 0 if sr != sr else sr
    mse = float(np.mean((yhat - yte) ** 2))
    return {"devpearson": devpr, "pearson": pr, "spearman": sr, "mse": mse, "yhat": yhat,
            "ndev": len(devscores), "ntest": len(yte)}
