"""The classifier engine's protocols run on ready features, for the benchmarks that time them apart from encoding
(``eval_speed.py``, ``compare_senteval.py``, ``gpu_engine_speed.py``)."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from sentence_lab.evaluation import regimes
from sentence_lab.evaluation.encoders.baselines import BowGloveEncoder
from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.regimes import features
from sentence_lab.evaluation.runner import load_tasks


class ProjectedBow:
    """``bow_glove`` times a fixed Gaussian matrix ``[50, dim]`` (scaled by 1/sqrt(50)), float32: the vectors of a
    ``dim``-d encoder whose encoding costs nothing, so that the classifiers are timed alone."""

    def __init__(self, dim: int = 4096, seed: int = 0):
        self.bow = BowGloveEncoder()
        self.P = (np.random.RandomState(seed).randn(50, dim) / np.sqrt(50)).astype(np.float32)

    def encode(self, sentences: list[str]) -> np.ndarray:
        return self.bow.encode(sentences) @ self.P


def loaded_tasks(names: str, data: Path) -> list[Any]:
    """The comma-separated tasks ``names`` loaded from the data root ``data``; a one-line ``SystemExit`` naming the
    ones it holds no data for."""
    loaded = [t for t in load_tasks(names.split(","), data) if t.data is not None]
    missing = sorted(set(names.split(",")) - {t.spec.name for t in loaded})
    if missing:
        raise SystemExit(f"no data for {', '.join(missing)} under {data}: set SENTENCE_DATA to the data root")
    return loaded


def task_features(task: Any, embed: Callable[[list[str]], np.ndarray]) -> tuple[dict, dict]:
    """A loaded task's features (``embed``'s vectors, paired as the task asks) and labels by split, as its regime
    reads them (regression targets as float64)."""
    spec, splits = task.spec, task.data.splits
    X = {k: features(s, embed, spec.features) for k, s in splits.items()}
    y = {k: (s.y.astype(np.float64) if spec.regime == "regression" else s.y) for k, s in splits.items()}
    return X, y


def run_regime(spec: Any, X: dict, y: dict, params: ProtocolParams, nclasses: int | None) -> dict:
    """One task's classifier protocol (``spec.regime``) on ready features ``X`` and labels ``y`` by split;
    ``nclasses``: the classes of a classification task (None for a relatedness task, regime "regression")."""
    if spec.regime == "regression":
        return regimes.relatedness(X["train"], y["train"], X["dev"], y["dev"], X["test"], y["test"], params)
    if nclasses is None:
        raise ValueError(f"{spec.name}: the {spec.regime} regime classifies: give its number of classes")
    if spec.regime == "nested":
        return regimes.nested_cv(X["all"], y["all"], params, nclasses)
    if spec.regime == "kfold":
        return regimes.kfold_then_test(X["train"], y["train"], X["test"], y["test"], params, nclasses)
    if spec.regime == "split":
        return regimes.train_dev_test(X["train"], y["train"], X["dev"], y["dev"], X["test"], y["test"], params,
                                      nclasses)
    raise ValueError(f"{spec.name}: no protocol for the regime {spec.regime!r}")
