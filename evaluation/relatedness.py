"""Supervised relatedness (SICK-R, STS Benchmark) as SentEval's ``tools/relatedness.py`` runs it.

Model: ``Linear(2d -> nclasses)`` then softmax, MSE (mean) against the Tai et al. target,
Adam with torch defaults and no L2, batch 64. Every 50 epochs the dev Pearson of the expected
score (classes 1..nclasses) is checked; the best model is kept; training stops at the first
non-improving check after 3 earlier ones, or once more than 1000 epochs have run.

The default ``engine="fast"`` runs the up to ~70k minibatch steps in numpy on preallocated
buffers, with the gradient of softmax + MSE and torch's Adam update written by hand (per step
the cost is call overhead, not arithmetic: numpy's is several times smaller than torch's and
autograd's); its results equal the torch loop's up to float rounding (~1e-6 on SICK-R/STS-B
predictions in float32). ``engine="sequential"`` runs the plain ``torch.nn`` / ``torch.optim``
reference, as SentEval writes it.
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


def _softmax_rows(Z: np.ndarray) -> np.ndarray:
    """Row softmax as torch computes it (max-shifted exp, times the reciprocal of the row sum)."""
    Z = Z - Z.max(axis=1, keepdims=True)
    np.exp(Z, out=Z)
    Z *= np.reciprocal(Z.sum(axis=1, keepdims=True))
    return Z


class _LinearSoftmax:
    """``softmax(X @ W.T + b)`` from the flat augmented weight ``[W | b]`` (row-major ``[C, d + 1]``)."""

    def __init__(self, params: np.ndarray, inputdim: int, nclasses: int):
        Wa = params.reshape(nclasses, inputdim + 1)
        self.W, self.b = Wa[:, :inputdim], Wa[:, inputdim]

    def __call__(self, X: np.ndarray) -> np.ndarray:  # (a contiguous W keeps numpy's matmul on BLAS)
        return _softmax_rows(np.asarray(X, dtype=self.W.dtype) @ np.ascontiguousarray(self.W.T) + self.b)


def _fit_fast(trainX, trainY, devX, devscores, r, rs, inputdim, nclasses, seed, dtype):
    """The training loop in numpy on preallocated buffers (about 22 numpy calls a minibatch).

    * Logits are kept transposed (``[C, B]``) so the softmax reductions run over contiguous rows.
    * The bias is the last column of an augmented weight ``[W | b]`` (the inputs get a column of
      ones): one matmul gives the logits, one the whole gradient. ``[W | b]`` is one flat vector,
      so Adam is one set of elementwise calls.
    * The permutation is drawn per epoch from ``rs`` as SentEval draws it; the targets are permuted
      once per epoch, the inputs per minibatch into a small reused buffer (cheaper than permuting
      a many-MB array each epoch).
    * The MSE gradient's factor ``c = 2 / (B * C)`` is left out of the gradient ``h = g / c`` (the
      last, smaller minibatch is rescaled to the same ``c``) and Adam keeps ``u = m / ((1 - b1) c)``
      and ``w = v / ((1 - b2) c^2)``. Then ``u = b1 u + h``, ``w = b2 w + h^2``, and torch's update
      ``lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)`` is ``k_t * u / (sqrt(w) + e_t)`` with
      ``k_t = lr (1 - b1) sqrt(bc2) / (bc1 sqrt(1 - b2))`` and ``e_t = eps sqrt(bc2) / (sqrt(1 - b2) c)``.

    The arithmetic is torch's (max-shifted softmax, MSE mean gradient, Adam with its bias
    corrections and eps) up to float rounding: same model, same numbers to ~1e-6.
    """
    C, d = nclasses, inputdim
    lin = _init(d, C, seed)[0]
    n = len(trainX)
    theta = np.empty(C * (d + 1), dtype)  # augmented weight [W | b], row-major [C, d + 1]
    Wa = theta.reshape(C, d + 1)
    Wa[:, :d] = lin.weight.detach().numpy()
    Wa[:, d] = lin.bias.detach().numpy()
    h = np.zeros_like(theta)  # gradient / c
    H = h.reshape(C, d + 1)
    u, w, tmp = np.zeros_like(theta), np.zeros_like(theta), np.zeros_like(theta)
    Xa = np.ones((n, d + 1), dtype)
    Xa[:, :d] = trainX
    YT = np.ascontiguousarray(np.asarray(trainY, dtype).T)  # [C, n]
    YpT = np.empty_like(YT)  # the epoch's permuted targets
    c = 2.0 / (min(BATCH_SIZE, n) * C)  # MSE-mean gradient factor of a full minibatch
    batches = []
    for i in range(0, n, BATCH_SIZE):
        B = min(BATCH_SIZE, n - i)
        ratio = (2.0 / (B * C)) / c  # 1.0 but for a smaller last minibatch
        batches.append((i, i + B, np.empty((B, d + 1), dtype), YpT[:, i : i + B],
                        *(np.empty((C, B), dtype) for _ in range(3)), np.empty((1, B), dtype),
                        None if ratio == 1.0 else ratio))
    model = _LinearSoftmax(theta, d, C)
    mm, add_r, max_r, sub, mul, div, exp, sqrt, take = (np.matmul, np.add.reduce, np.maximum.reduce, np.subtract,
                                                        np.multiply, np.divide, np.exp, np.sqrt, np.take)
    b1, b2, lr, eps = 0.9, 0.999, 1e-3, 1e-8  # torch.optim.Adam defaults
    k0 = lr * (1 - b1) / (1 - b2) ** 0.5
    e0 = eps / ((1 - b2) ** 0.5 * c)
    t = 0
    best = theta.copy()
    nepoch, bestpr, count, stop = 0, -1, 0, False
    with np.errstate(all="ignore"):  # as torch: no floating-point warnings
        while not stop and nepoch <= MAX_EPOCH:
            for _ in range(CHECK_EVERY):
                perm = rs.permutation(n)
                take(YT, perm, axis=1, out=YpT, mode="clip")  # perm is in range; "clip" is the fast path
                for i, j, Xb, Yb, P, D, E, s, ratio in batches:
                    take(Xa, perm[i:j], axis=0, out=Xb, mode="clip")
                    # forward: P = softmax over classes (rows) of Wa @ Xb.T
                    mm(Wa, Xb.T, out=P)
                    max_r(P, 0, None, s, True)
                    P -= s
                    exp(P, out=P)
                    add_r(P, 0, None, s, True)
                    P /= s
                    # backward: dL/dP = c (P - Y); dL/dZ = P * (dP - sum_k P dP); gradient = dZ @ Xb
                    sub(P, Yb, out=D)
                    if ratio is not None:
                        D *= ratio
                    add_r(mul(P, D, out=E), 0, None, s, True)
                    D -= s
                    D *= P
                    mm(D, Xb, out=H)
                    # Adam (see the docstring for the scaling)
                    t += 1
                    u *= b1
                    u += h
                    w *= b2
                    mul(h, h, out=tmp)
                    w += tmp
                    bc2_sqrt = (1 - b2**t) ** 0.5
                    sqrt(w, out=tmp)
                    tmp += e0 * bc2_sqrt
                    div(u, tmp, out=tmp)
                    tmp *= k0 * bc2_sqrt / (1 - b1**t)
                    theta -= tmp
            nepoch += CHECK_EVERY
            pr = _pearson(np.dot(model(devX), r), devscores)
            if pr > bestpr:
                bestpr = pr
                best = theta.copy()
            else:
                if count >= TENACITY:
                    stop = True
                count += 1
    return bestpr, _LinearSoftmax(best, d, C)


def _init(inputdim, nclasses, seed) -> nn.Sequential:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(inputdim, nclasses), nn.Softmax(dim=-1))


def _fit_sequential(trainX, trainY, devX, devscores, r, rs, inputdim, nclasses, seed, dtype, device):
    """The plain ``torch.nn`` / ``torch.optim`` loop, as SentEval writes it (the reference)."""
    tdtype = torch.float64 if dtype == np.float64 else torch.float32
    trainX = torch.as_tensor(trainX, device=device).to(tdtype)
    trainY = torch.as_tensor(trainY, device=device).to(tdtype)
    devX = torch.as_tensor(devX, device=device).to(tdtype)
    model = _init(inputdim, nclasses, seed).to(device=device, dtype=tdtype)
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), weight_decay=0.0)
    nepoch, bestpr, count, stop = 0, -1, 0, False
    bestmodel = copy.deepcopy(model)
    n = len(trainX)
    while not stop and nepoch <= MAX_EPOCH:
        model.train()
        for _ in range(CHECK_EVERY):
            perm = torch.as_tensor(rs.permutation(n), device=device)
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

    def predict(X):
        with torch.no_grad():
            return bestmodel(torch.as_tensor(X, device=device).to(tdtype)).cpu().numpy()

    return bestpr, predict


def relatedness(Xtr, ytr, Xdev, ydev, Xte, yte, params: ProtocolParams, nclasses: int = 5,
                *, engine: str = "fast", dtype: torch.dtype = torch.float32) -> dict:
    """SICK-R / STS-B regime; ``y`` are raw float scores. See the module docstring.

    ``engine="fast"`` (numpy, on the CPU whatever ``params.device`` says: the model is too small
    for an accelerator to help) or ``"sequential"`` (torch on ``params.device``); ``dtype`` is
    ``torch.float32`` (SentEval's) or ``torch.float64``.

    Returns ``{"devpearson", "pearson", "spearman", "mse", "yhat", "ndev", "ntest"}`` with the
    values SentEval's ``sick.py`` reports (NaN correlations become 0).
    """
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype must be torch.float32 or torch.float64, not {dtype}")
    ndtype = np.float64 if dtype == torch.float64 else np.float32
    r = np.arange(1, nclasses + 1)
    trainX = np.asarray(Xtr, dtype=ndtype)
    trainY = tai_target(ytr, nclasses).astype(ndtype)
    devX = np.asarray(Xdev, dtype=ndtype)
    testX = np.asarray(Xte, dtype=ndtype)
    devscores = np.asarray(ydev, dtype=np.float64)
    yte = np.asarray(yte, dtype=np.float64)
    rs = np.random.RandomState(params.seed)  # SentEval reseeds numpy in the constructor
    if engine == "fast":
        devpr, predict = _fit_fast(trainX, trainY, devX, devscores, r, rs, trainX.shape[1], nclasses, params.seed,
                                   ndtype)
    elif engine == "sequential":
        devpr, predict = _fit_sequential(trainX, trainY, devX, devscores, r, rs, trainX.shape[1], nclasses,
                                         params.seed, ndtype, torch.device(resolve_device(params.device)))
    else:
        raise ValueError(f"engine must be 'fast' or 'sequential', not {engine!r}")
    yhat = np.dot(predict(testX), r)
    pr = _pearson(yhat, yte)
    sr = float(spearmanr(yhat, yte)[0])
    pr = 0 if pr != pr else pr
    sr = 0 if sr != sr else sr
    mse = float(np.mean((yhat - yte) ** 2))
    return {"devpearson": devpr, "pearson": pr, "spearman": sr, "mse": mse, "yhat": yhat,
            "ndev": len(devscores), "ntest": len(yte)}
