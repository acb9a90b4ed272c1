"""How the paired test is checked: pairs of simulated "models" whose per-item correctness is drawn from one real
probe's per-item probabilities. With the same probabilities on both sides nothing differs, and a test at 0.05 must
reject about 5% of the pairs; with one side shifted by a known number of points, the share it rejects is its power
(``tests/reporting/test_paired.py``, ``benchmarks/paired_test_calibration.py``)."""
from __future__ import annotations

import numpy as np
import torch

from sentence_lab.evaluation.classifier import Group, fit_members
from sentence_lab.evaluation.encoders.baselines import BowGloveEncoder
from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.regimes.common import features, labels
from sentence_lab.evaluation.runner import load_tasks
from sentence_lab.reporting.paired import metric_for, permutation_p
from sentence_lab.tasks.registry import TASKS

SHIPPED_TASK = "Tense"  # of the probing set generated from the shipped books: 1,000 test items, always present


def real_probe_probabilities(task_name: str = SHIPPED_TASK, l2: float = 1e-4) -> tuple[np.ndarray, np.ndarray]:
    """The gold labels of a shipped probing task's test split and, per item, the probability a real probe gives its
    gold label: logistic regression (SentEval's prototype settings, one L2 value) on GloVe bag-of-words vectors."""
    (task,) = load_tasks([task_name], "/nonexistent", probing="generated")
    if task.data is None:
        raise ValueError(f"{task_name}: {task.error}")
    encoder, spec = BowGloveEncoder(), TASKS[task_name]
    X = {k: features(task.data.splits[k], encoder.encode, spec.features) for k in ("train", "dev", "test")}
    y = {k: labels(task.data.splits[k].y) for k in ("train", "dev", "test")}
    fit = fit_members(X["train"], y["train"], [Group(np.arange(len(y["train"])), np.arange(len(y["dev"])))], [l2],
                      ProtocolParams(device="cpu"), int(y["train"].max()) + 1, Xdev=X["dev"], ydev=y["dev"])
    probabilities = torch.softmax(fit.logits(X["test"]), -1).numpy()
    return y["test"], probabilities[np.arange(len(y["test"])), y["test"]]


def shifted(p: np.ndarray, points: float) -> np.ndarray:
    """``p`` raised by ``points`` (a fraction) on average, most where an item is most often wrong: ``p + points x
    (1 - p) / mean(1 - p)``, clipped to [0, 1]."""
    return np.clip(p + points * (1 - p) / (1 - p).mean(), 0.0, 1.0)


def rejection_rate(gold: np.ndarray, p_a: np.ndarray, p_b: np.ndarray, pairs: int, seed: int,
                   level: float = 0.05) -> float:
    """The share of ``pairs`` simulated pairs of models (item i right with probability ``p_a[i]``, ``p_b[i]``,
    independently; a wrong answer is another label) that the paired test calls different at ``level``."""
    rng = np.random.default_rng(seed)
    wrong = (gold + 1) % (gold.max() + 1)
    items = {"ids": np.arange(len(gold), dtype=np.uint64), "gold": gold}
    metric, rejected = metric_for("split", "acc"), 0
    for _ in range(pairs):
        pred_a = np.where(rng.random(len(gold)) < p_a, gold, wrong)
        pred_b = np.where(rng.random(len(gold)) < p_b, gold, wrong)
        rejected += permutation_p(pred_a, pred_b, items, metric) < level
    return rejected / pairs
