"""The relatedness fast path (numpy, hand-written gradient and Adam) against a plain torch loop."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from scipy.stats import pearsonr
from torch import nn

from evaluation.protocol import ProtocolParams
from evaluation.relatedness import relatedness, tai_target




def _data(n, d, seed=0, lo=1.0):
    rs = np.random.RandomState(seed)
    X = rs.randn(n, d).astype(np.float32)
    scores = np.clip(3 + 1.5 * np.tanh(X[:, 0] - X[:, 1]) + 0.3 * rs.randn(n), lo, 5)
    return X, scores


def _reference(Xtr, ytr, Xdev, ydev, Xte, seed, dtype):
    """SentEval's RelatednessPytorch.run, written out with torch.nn / torch.optim (no shared code)."""
    rs = np.random.RandomState(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(Xtr.shape[1], 5), nn.Softmax(dim=-1))
    model = model.to(dtype)
    X, Y = torch.tensor(Xtr, dtype=dtype), torch.tensor(tai_target(ytr), dtype=dtype)
    loss_fn, opt = nn.MSELoss(), torch.optim.Adam(model.parameters(), weight_decay=0.0)
    r = np.arange(1, 6)
    nepoch, bestpr, count, stop, best, epochs = 0, -1, 0, False, None, 0
    while not stop and nepoch <= 1000:
        for _ in range(50):
            perm = rs.permutation(len(X))
            for i in range(0, len(X), 64):
                idx = torch.from_numpy(perm[i:i + 64]).long()
                loss = loss_fn(model(X[idx]), Y[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
            epochs += 1
        nepoch += 50
        with torch.no_grad():
            pr = pearsonr(np.dot(model(torch.tensor(Xdev, dtype=dtype)).numpy(), r), ydev)[0]
        if pr > bestpr:
            bestpr, best = pr, copy.deepcopy(model)
        else:
            if count >= 3:
                stop = True
            count += 1
    with torch.no_grad():
        return bestpr, np.dot(best(torch.tensor(Xte, dtype=dtype)).numpy(), r), epochs


@pytest.mark.parametrize("n, d, lo", [(150, 6, 1.0),  # 2 full minibatches and one of 22
                                      (128, 4, 0.0),  # full minibatches only; STS-B's 0..5 scale
                                      (40, 3, 1.0)])  # one minibatch smaller than 64
def test_fast_path_equals_plain_torch_loop(n, d, lo):
    X, s = _data(n + 60, d, seed=n, lo=lo)
    tr, dv, te = slice(0, n), slice(n, n + 30), slice(n + 30, n + 60)
    params = ProtocolParams()
    devpr, yhat, _ = _reference(X[tr], s[tr], X[dv], s[dv], X[te], params.seed, torch.float32)
    fast = relatedness(X[tr], s[tr], X[dv], s[dv], X[te], s[te], params)
    np.testing.assert_allclose(fast["yhat"], yhat, rtol=0, atol=2e-5)
    assert abs(fast["devpearson"] - devpr) < 1e-6
    assert abs(fast["pearson"] - pearsonr(yhat, s[te])[0]) < 1e-5
    seq = relatedness(X[tr], s[tr], X[dv], s[dv], X[te], s[te], params, engine="sequential")
    np.testing.assert_allclose(seq["yhat"], yhat, rtol=0, atol=1e-6)  # the same loop in the module


def test_fast_path_is_the_same_arithmetic_in_float64():
    """In float64 rounding is ~1e-16, so any algebraic slip (Adam's rescaling, the bias column, the
    last minibatch's MSE factor) would show far above the tolerance."""
    X, s = _data(210, 5, seed=3)
    tr, dv, te = slice(0, 150), slice(150, 180), slice(180, 210)
    params = ProtocolParams()
    devpr, yhat, epochs = _reference(X[tr], s[tr], X[dv], s[dv], X[te], params.seed, torch.float64)
    assert epochs >= 200  # several checks ran
    fast = relatedness(X[tr], s[tr], X[dv], s[dv], X[te], s[te], params, dtype=torch.float64)
    np.testing.assert_allclose(fast["yhat"], yhat, rtol=0, atol=1e-10)
    assert abs(fast["devpearson"] - devpr) < 1e-12


def test_returned_keys_and_argument_checks():
    X, s = _data(100, 4)
    res = relatedness(X[:60], s[:60], X[60:80], s[60:80], X[80:], s[80:], ProtocolParams())
    assert set(res) == {"devpearson", "pearson", "spearman", "mse", "yhat", "ndev", "ntest"}
    assert res["yhat"].dtype == np.float64 and res["ndev"] == 20 and res["ntest"] == 20
    with pytest.raises(ValueError, match="engine"):
        relatedness(X[:60], s[:60], X[60:80], s[60:80], X[80:], s[80:], ProtocolParams(), engine="nope")
    with pytest.raises(ValueError, match="dtype"):
        relatedness(X[:60], s[:60], X[60:80], s[60:80], X[80:], s[80:], ProtocolParams(), dtype=torch.float16)
