"""Train, dev, test: SentEval's ``SplitClassifier`` (SST, SICK-E, SNLI, the probing tasks).

Each L2 value is trained on train and early-stopped on dev; the best by dev accuracy is scored on test. SNLI's
``noreg`` makes the grid ``[1e-9]``. ``params.backend == "sklearn"``: logistic regression over
``NESTED_AND_SPLIT_C`` (``NOREG_C`` for ``noreg``) instead.
"""
from __future__ import annotations

import numpy as np

from sentence_lab.evaluation.classifier import FitResult, Group, fit_members
from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.regimes.common import (
    NESTED_AND_SPLIT_C,
    NOREG_C,
    Embed,
    clean,
    features,
    fit_logistic,
    labels,
    test_items,
)
from sentence_lab.tasks.base import TaskData

DEV_SCORE = "devacc"
SPLITS = ("train", "dev", "test")


def train_dev_test(Xtr, ytr, Xdev, ydev, Xte, yte, params: ProtocolParams, nclasses: int, *,
                   noreg: bool = False, **kw) -> dict:
    """Train on train for each L2, early-stop on dev, pick by dev accuracy, report test accuracy (``Xte=None``:
    dev accuracy only). With ``params.nhid_grid`` (the probing paper's probe) every (nhid, dropout, L2) member is
    trained at once and the best on dev is scored. ``probe`` in the result names the probe and the settings chosen.

    SentEval refits the chosen L2 value from scratch on the same data with the same seed, which
    reproduces the member trained in the sweep; that member is reused.
    """
    Xtr, Xdev = np.asarray(Xtr), np.asarray(Xdev)
    ytr, ydev = labels(ytr), labels(ydev)
    if params.backend == "sklearn":
        return _sklearn(Xtr, ytr, Xdev, ydev, Xte, yte, params.seed, noreg=noreg)
    regs = [1e-9] if noreg else list(params.l2_grid)
    members = params.probe_members(regs)
    hidden = params.member_shapes(members)
    group = [Group(np.arange(len(ytr)), np.arange(len(ydev)))]
    res: FitResult = fit_members(Xtr, ytr, group, [reg for _, reg in members], params, nclasses, Xdev=Xdev,
                                 ydev=ydev, hidden=hidden, **kw)
    scores = [round(100 * res.dev_accuracy()[0, m], 2) for m in range(len(members))]
    best = int(np.argmax(scores))
    devacc = np.max(scores)
    probe = probe_record(params, *members[best])
    if Xte is None:
        return {"devacc": float(devacc), "ndev": len(Xdev), "probe": probe}
    yhat = res.predict(Xte, 0, best)
    testacc = round(100 * (1.0 * int((yhat == labels(yte)).sum()) / len(yhat)), 2)  # SentEval's clf.score
    return {"devacc": float(devacc), "acc": float(testacc), "ndev": len(Xdev), "ntest": len(Xte), "probe": probe,
            "yhat": yhat}


def probe_record(params: ProtocolParams, shape: tuple[int, float] | None, reg: float) -> dict:
    """What probe scored the task, and the settings chosen on dev (written into every result of this regime)."""
    if shape is not None:
        return {"type": "mlp", "nhid": shape[0], "dropout": shape[1], "l2": reg, "chosen_on": "dev",
                "grid": {"nhid": list(params.nhid_grid or ()),
                         "dropout": sorted({p for _, p in params.probe_shapes() or ()}), "l2": list(params.l2_grid)}}
    if params.nhid:
        return {"type": "mlp", "nhid": int(params.nhid), "dropout": float(params.dropout), "l2": reg,
                "chosen_on": "dev"}
    return {"type": "logistic", "l2": reg, "chosen_on": "dev"}


def _sklearn(Xtr: np.ndarray, ytr: np.ndarray, Xdev: np.ndarray, ydev: np.ndarray, Xte, yte, seed: int,
             noreg: bool = False) -> dict:
    """``usepytorch: False``: each C fitted on train and scored on dev; the best one scored on test."""
    grid = NOREG_C if noreg else NESTED_AND_SPLIT_C
    models = [fit_logistic(Xtr, ytr, c, seed) for c in grid]
    scores = [round(100 * clf.score(Xdev, ydev), 2) for clf in models]
    devacc = float(np.max(scores))
    if Xte is None:
        return {"devacc": devacc, "ndev": len(Xdev), "probe": {"type": "logistic (scikit-learn)",
                                                                "C": grid[int(np.argmax(scores))], "chosen_on": "dev"}}
    # SentEval refits the chosen C on the same data with the same seed: the model fitted above, reused
    clf = models[int(np.argmax(scores))]
    return {"devacc": devacc, "acc": float(round(100 * clf.score(np.asarray(Xte), np.asarray(yte)), 2)),
            "ndev": len(Xdev), "ntest": len(Xte), "probe": {"type": "logistic (scikit-learn)",
                                                             "C": grid[int(np.argmax(scores))], "chosen_on": "dev"},
            "yhat": clf.predict(np.asarray(Xte))}


def _noreg(params: ProtocolParams) -> bool:
    return params.l2_grid == (1e-9,)


def run(spec, data: TaskData, embed: Embed, params: ProtocolParams) -> dict:
    """A task's train, dev and test splits through :func:`train_dev_test`."""
    X = {k: features(data.splits[k], embed, spec.features) for k in SPLITS}
    y = {k: data.splits[k].y for k in SPLITS}
    out = clean(train_dev_test(X["train"], y["train"], X["dev"], y["dev"], X["test"], y["test"], params,
                               data.classes, noreg=_noreg(params)))
    out["items"] = test_items(data.splits["test"], out.pop("yhat"))
    return out


def run_dev(spec, data: TaskData, embed: Embed, params: ProtocolParams) -> dict:
    """Dev-only: the dev accuracy of the best L2 value."""
    X = {k: features(data.splits[k], embed, spec.features) for k in ("train", "dev")}
    y = {k: data.splits[k].y for k in ("train", "dev")}
    return train_dev_test(X["train"], y["train"], X["dev"], y["dev"], None, None, params, data.classes,
                          noreg=_noreg(params))
