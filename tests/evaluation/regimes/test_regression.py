"""Relatedness (SICK-R, STS-B) against SentEval's ``RelatednessPytorch`` (``senteval_transcription``).

Tolerances as in ``test_classifier``: float64 runs agree to ~1e-15 (summation order only), so 1e-10 on the
predictions catches any slip in the softmax + MSE gradient or the schedule; float32 runs to ~1e-6.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import pearsonr

from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.regimes.regression import relatedness, tai_target
from tests.helpers.senteval_transcription import RelatednessPytorch


def _data(n, d, seed=0, lo=1.0):
    rs = np.random.RandomState(seed)
    X = rs.randn(n, d).astype(np.float32)
    scores = np.clip(3 + 1.5 * np.tanh(X[:, 0] - X[:, 1]) + 0.3 * rs.randn(n), lo, 5)
    return X, scores


def _senteval(X, s, tr, dv, te, seed, dtype):
    np_dtype = np.float64 if dtype == torch.float64 else np.float32
    ref = RelatednessPytorch({"X": X[tr].astype(np_dtype), "y": tai_target(s[tr]).astype(np_dtype)},
                             {"X": X[dv].astype(np_dtype)}, {"X": X[te].astype(np_dtype)}, s[dv],
                             {"seed": seed, "nclasses": 5}, dtype=dtype)
    devpr, yhat = ref.run()
    return devpr, yhat, ref.nepoch


@pytest.mark.slow
@pytest.mark.parametrize("n, d, lo", [(150, 6, 1.0),  # 2 full minibatches and one of 22
                                      (128, 4, 0.0),  # full minibatches only; STS-B's 0..5 scale
                                      (40, 3, 1.0)])  # one minibatch smaller than 64
def test_equals_senteval_in_float32(n, d, lo, probe_path):
    X, s = _data(n + 60, d, seed=n, lo=lo)
    tr, dv, te = slice(0, n), slice(n, n + 30), slice(n + 30, n + 60)
    devpr, yhat, _ = _senteval(X, s, tr, dv, te, 1111, torch.float32)
    ours = relatedness(X[tr], s[tr], X[dv], s[dv], X[te], s[te], ProtocolParams())
    np.testing.assert_allclose(ours["yhat"], yhat, rtol=0, atol=2e-5)
    assert abs(ours["devpearson"] - devpr) < 1e-6
    assert abs(ours["pearson"] - pearsonr(yhat, s[te])[0]) < 1e-5


@pytest.mark.slow
def test_equals_senteval_in_float64(probe_path):
    X, s = _data(210, 5, seed=3)
    tr, dv, te = slice(0, 150), slice(150, 180), slice(180, 210)
    devpr, yhat, nepoch = _senteval(X, s, tr, dv, te, 1111, torch.float64)
    assert nepoch >= 200  # several checks ran
    ours = relatedness(X[tr], s[tr], X[dv], s[dv], X[te], s[te], ProtocolParams(), dtype=torch.float64)
    np.testing.assert_allclose(ours["yhat"], yhat, rtol=0, atol=1e-10)
    assert abs(ours["devpearson"] - devpr) < 1e-12


def test_returned_keys_dev_only_and_argument_checks():
    X, s = _data(100, 4)
    res = relatedness(X[:60], s[:60], X[60:80], s[60:80], X[80:], s[80:], ProtocolParams())
    assert set(res) == {"devpearson", "pearson", "spearman", "mse", "yhat", "ndev", "ntest"}
    assert res["yhat"].dtype == np.float64 and res["ndev"] == 20 and res["ntest"] == 20
    dev_only = relatedness(X[:60], s[:60], X[60:80], s[60:80], None, None, ProtocolParams())
    assert dev_only == {"devpearson": res["devpearson"], "ndev": 20}
    with pytest.raises(ValueError, match="dtype"):
        relatedness(X[:60], s[:60], X[60:80], s[60:80], X[80:], s[80:], ProtocolParams(), dtype=torch.float16)


def test_constant_dev_scores_count_as_zero():
    # SentEval sets a NaN dev Pearson (constant gold scores) to 0, which improves on the initial -1 once.
    X, s = _data(100, 4)
    res = relatedness(X[:60], s[:60], X[60:80], np.full(20, 3.0), X[80:], s[80:], ProtocolParams())
    assert res["devpearson"] == 0.0
