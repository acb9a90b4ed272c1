"""Supervised relatedness (SICK-R, STS Benchmark) as SentEval's ``tools/relatedness.py`` runs it.

Model: ``Linear(2d -> nclasses)`` then softmax, MSE (mean) against the Tai et al. target, Adam with torch
defaults and no L2, batch 64. Every 50 epochs the dev Pearson of the expected score (classes
1..nclasses; NaN counts as 0) is checked and the best model kept; training stops at the first
non-improving check after 3 earlier ones, or once more than 1000 epochs have run. It is one member of the
classifier engine (:func:`sentence_lab.evaluation.classifier.fit_members` with ``loss="softmax_mse"``), so the batch
plan, optimiser step and early stopping are the classifiers' own. SentEval has no scikit-learn path for it:
``params.backend`` is ignored.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch
from scipy.stats import pearsonr, spearmanr

from sentence_lab.evaluation.classifier import Group, fit_members
from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.regimes.common import Embed, check_not_constant, clean, correlation, features, test_items
from sentence_lab.tasks.base import TaskData

DEV_SCORE = "devpearson"

# SentEval's RelatednessPytorch: batch 64, a dev check every 50 epochs, tenacity 3, up to 1000 epochs, Adam.
RELATEDNESS_SCHEDULE: dict[str, Any] = dict(batch_size=64, epoch_size=50, tenacity=3, max_epoch=1000, optim="adam",
                                            nhid=0, dropout=0.0)


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
    for cls, value in ((f.astype(np.int64), y - f), (f.astype(np.int64) - 1, f - y + 1)):
        ok = (cls >= 0) & (cls < nclasses)
        Y[rows[ok], cls[ok]] = value[ok]
    return Y


def _expected(Z: torch.Tensor, r: np.ndarray) -> np.ndarray:
    """SentEval's ``np.dot(predict_proba(X), r)`` from logits ``[n, C]``."""
    return np.dot(torch.softmax(Z, -1).cpu().numpy(), r)


def relatedness(Xtr, ytr, Xdev, ydev, Xte, yte, params: ProtocolParams, nclasses: int = 5, *,
                dtype: torch.dtype = torch.float32) -> dict:
    """SICK-R / STS-B regime; ``y`` are raw float scores. ``Xte=None``: no test split (dev-only mode).

    Returns ``{"devpearson", "pearson", "spearman", "mse", "yhat", "ndev", "ntest"}`` with the values
    SentEval's ``sick.py`` reports (NaN correlations become 0).
    """
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype must be torch.float32 or torch.float64, not {dtype}")
    r = np.arange(1, nclasses + 1)
    devscores = np.asarray(ydev, dtype=np.float64)

    def dev_pearson(Z, idx, mask):  # Z [1, 1, C, ndev]
        pr = correlation(pearsonr, _expected(Z[0, 0].T, r), devscores)
        return np.array([[0.0 if pr != pr else pr]])

    schedule = dataclasses.replace(params, **RELATEDNESS_SCHEDULE)
    fit = fit_members(Xtr, tai_target(ytr, nclasses), [Group(np.arange(len(Xtr)), np.arange(len(devscores)))],
                      [0.0], schedule, nclasses, Xdev=Xdev, ydev=devscores, loss="softmax_mse", dev_score=dev_pearson,
                      dtype=dtype)
    out = {"devpearson": float(fit.best_score[0, 0]), "ndev": len(devscores)}
    if Xte is None:
        return out
    yte = np.asarray(yte, dtype=np.float64)
    yhat = _expected(fit.logits(Xte), r)
    pr, sr = correlation(pearsonr, yhat, yte), correlation(spearmanr, yhat, yte)
    return {**out, "pearson": 0.0 if pr != pr else pr, "spearman": 0.0 if sr != sr else sr,
            "mse": float(np.mean((yhat - yte) ** 2)), "yhat": yhat, "ntest": len(yte)}


def run(spec, data: TaskData, embed: Embed, params: ProtocolParams) -> dict:
    """A task's train, dev and test pairs (raw scores) through :func:`relatedness`."""
    X = {k: features(data.splits[k], embed, spec.features) for k in ("train", "dev", "test")}
    check_not_constant(spec.name, X["train"])
    y = {k: data.splits[k].y.astype(np.float64) for k in ("train", "dev", "test")}
    out = clean(relatedness(X["train"], y["train"], X["dev"], y["dev"], X["test"], y["test"], params, nclasses=5))
    out["items"] = test_items(data.splits["test"], out["yhat"])
    for key in ("pearson", "spearman"):  # SentEval sets a NaN correlation to 0
        if key in out and out[key] != out[key]:
            out[key] = 0.0
    return out


def run_dev(spec, data: TaskData, embed: Embed, params: ProtocolParams) -> dict:
    """Dev-only: the dev Pearson of the model kept by early stopping."""
    X = {k: features(data.splits[k], embed, spec.features) for k in ("train", "dev")}
    check_not_constant(spec.name, X["train"])
    y = {k: data.splits[k].y.astype(np.float64) for k in ("train", "dev")}
    return relatedness(X["train"], y["train"], X["dev"], y["dev"], None, None, params, nclasses=5)
