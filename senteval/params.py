"""SentEval's ``params`` dictionary: its defaults (``SE.__init__``, ``MLP.__init__``) and our protocol from it."""
from __future__ import annotations

import numbers
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sentence_lab.evaluation.protocol import FULL, PROTOTYPE, ProtocolParams

from .utils import dotdict

__all__ = ["ParamsError", "with_defaults", "protocol", "CLASSIFIER_DEFAULTS"]

# MLP.__init__ in senteval/tools/classifier.py: what a classifier config leaves out
CLASSIFIER_DEFAULTS = {"optim": "adam", "tenacity": 5, "epoch_size": 4, "max_epoch": 200, "dropout": 0.0,
                       "batch_size": 64}


class ParamsError(ValueError):
    """A ``params`` value SentEval would fail on later (or silently misread); one line naming the key."""


def with_defaults(params: Mapping) -> dotdict:
    """A ``dotdict`` with SentEval's defaults filled in as ``SE.__init__`` does: usepytorch True, seed 1111,
    batch_size 128, nhid 0, kfold 5, classifier {'nhid': 0}. Keys a client adds are kept."""
    if not isinstance(params, Mapping):
        raise ParamsError(f"params must be a dict (SentEval's params_senteval), not {type(params).__name__}")
    out = dotdict(params)
    for key, default in (("usepytorch", True), ("seed", 1111), ("batch_size", 128), ("nhid", 0), ("kfold", 5)):
        if key not in out:
            out[key] = default
    if not out.get("classifier"):
        out["classifier"] = {"nhid": 0}
    if not isinstance(out["classifier"], Mapping) or "nhid" not in out["classifier"]:
        raise ParamsError("params['classifier'] must be a dict with 'nhid' (0: logistic regression), "
                          "e.g. {'nhid': 0, 'optim': 'rmsprop', 'batch_size': 128, 'tenacity': 3, 'epoch_size': 2}")
    if not out.get("task_path"):
        raise ParamsError("params['task_path'] is not set: give the folder holding downstream/ and probing/ "
                          "(SentEval's data folder)")
    if not Path(str(out["task_path"])).is_dir():
        raise ParamsError(f"params['task_path']={out['task_path']!r} is not a folder: give the folder holding "
                          "downstream/ and probing/ (SentEval's data folder)")
    for key in ("batch_size", "kfold", "seed"):
        if isinstance(out[key], bool) or not isinstance(out[key], numbers.Integral):
            raise ParamsError(f"params['{key}']={out[key]!r} must be an integer")
    if out["batch_size"] < 1:
        raise ParamsError(f"params['batch_size']={out['batch_size']} must be at least 1")
    return out


def protocol(params: dotdict) -> ProtocolParams:
    """The engine's parameters for SentEval's ``params`` (the classifier's keys, ``kfold``, ``seed``,
    ``usepytorch``); named prototype or full when they are exactly one of SentEval's two sets."""
    clf = {**CLASSIFIER_DEFAULTS, **dict(params["classifier"])}
    values: dict[str, Any] = {
              "kfold": int(params["kfold"]), "optim": str(clf["optim"]), "batch_size": int(clf["batch_size"]),
              "tenacity": int(clf["tenacity"]), "epoch_size": int(clf["epoch_size"]),
              "max_epoch": int(clf["max_epoch"]), "nhid": int(clf["nhid"]), "dropout": float(clf["dropout"]),
              "seed": int(params["seed"]), "backend": "pytorch" if params["usepytorch"] else "sklearn"}
    name = next((p.name for p in (PROTOTYPE, FULL) if all(getattr(p, k) == v for k, v in values.items()
                                                          if k not in ("seed", "backend"))), "senteval-params")
    try:
        return ProtocolParams(name=name, **values)
    except ValueError as err:
        raise ParamsError(f"params['classifier']: {err}") from None
