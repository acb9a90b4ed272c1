"""Two models scored on the same test items, compared item by item: the difference of a task's metric, its 95%
interval (a paired bootstrap) and a p-value (a paired permutation test), corrected for the number of tasks tested.

The per-item predictions come from the ``<results>.items.npz`` file beside each results file
(``sentence_lab.evaluation.results.read_items``): ``ids`` (a hash of each item's text), ``gold``, ``pred`` and, where
the metric needs them, ``fold`` (MR, CR, SUBJ, MPQA: SentEval's accuracy is the mean of the outer folds') and
``subset`` (STS12-16: ``all`` is a mean over sub-datasets). Resampling keeps that structure: items are drawn within
each fold or sub-dataset. Unpaired intervals (``compare``'s binomial and Fisher-z bands) ignore that both models saw
the same items; a paired test uses it, and finds smaller differences.

Several training seeds a side: a two-level bootstrap (seeds drawn with replacement, then items), its p-value the
share of resampled differences on the other side of zero, doubled.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest, false_discovery_control, pearsonr, permutation_test, spearmanr

Items = dict[str, np.ndarray]
Metric = Callable[[np.ndarray, Items, np.ndarray], float]  # (predictions, the items, rows) -> the task's metric

CONFIDENCE = 0.95
RESAMPLES = 9999


def _accuracy(pred: np.ndarray, items: Items, rows: np.ndarray) -> float:
    return 100.0 * float(np.mean(pred[rows] == items["gold"][rows]))


def _fold_accuracy(pred: np.ndarray, items: Items, rows: np.ndarray) -> float:
    """SentEval's nested-CV accuracy: the mean of the outer folds' accuracies."""
    folds = items["fold"][rows]
    right = pred[rows] == items["gold"][rows]
    return 100.0 * float(np.mean([right[folds == f].mean() for f in np.unique(folds)]))


def _correlation(kind: str) -> Callable[[np.ndarray, np.ndarray], float]:
    fn = pearsonr if kind == "pearson" else spearmanr

    def corr(x: np.ndarray, y: np.ndarray) -> float:
        if len(x) < 2 or np.all(x == x[0]) or np.all(y == y[0]):
            return 0.0  # undefined: SentEval reports 0
        return float(fn(x, y)[0])
    return corr


def metric_for(regime: str, main_metric: str) -> Metric:
    """The function that computes a task's main score from its items, as the regime computes it: accuracy (split,
    k-fold), the mean of the folds' accuracies (nested), Pearson or Spearman (relatedness), a correlation per
    sub-dataset and their plain or weighted mean (STS, ``all.<corr>.mean|wmean``) or over every pair
    (``pooled.<corr>``). Accuracies in percent, as the results files have them."""
    if regime in ("split", "kfold"):
        return _accuracy
    if regime == "nested":
        return _fold_accuracy
    parts = main_metric.split(".")
    kind = next((p for p in parts if p in ("pearson", "spearman")), None)
    if kind is None:
        raise ValueError(f"no paired test for main metric {main_metric!r} of regime {regime!r}")
    corr = _correlation(kind)
    if regime == "regression" or parts[0] in ("pooled", "test"):
        return lambda pred, items, rows: corr(pred[rows], items["gold"][rows])
    weighted = parts[-1] == "wmean"

    def per_subset(pred: np.ndarray, items: Items, rows: np.ndarray) -> float:
        subsets = items["subset"][rows]
        values, sizes = [], []
        for s in np.unique(subsets):
            inside = rows[subsets == s]
            values.append(corr(pred[inside], items["gold"][inside]))
            sizes.append(len(inside))
        return float(np.average(values, weights=sizes if weighted else None))
    return per_subset


def strata(items: Items) -> np.ndarray:
    """The group each item is resampled within: its fold, its sub-dataset, or one group."""
    for key in ("fold", "subset"):
        if key in items:
            return np.asarray(items[key])
    return np.zeros(len(items["gold"]), dtype=np.int64)


class Resampler:
    """Row indices drawn with replacement within each group (fold, sub-dataset), as many as the group has."""

    def __init__(self, groups: np.ndarray) -> None:
        self.members = [np.flatnonzero(groups == g) for g in np.unique(groups)]

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        return np.concatenate([rows[rng.integers(len(rows), size=len(rows))] for rows in self.members])


@dataclass(frozen=True)
class PairedDifference:
    """``metric(a) - metric(b)`` on the same items, its ``CONFIDENCE`` interval and the p-value of no difference."""

    difference: float
    low: float
    high: float
    p_value: float
    n_items: int
    method: str

    def as_dict(self) -> dict:
        return {"difference": self.difference, "interval": [self.low, self.high], "p_value": self.p_value,
                "n_items": self.n_items, "method": self.method}


def aligned(items_a: Items, items_b: Items, task: str = "the task") -> None:
    """Refuse items that are not the same items in the same order (another split, another version of the data)."""
    if items_a["ids"].shape != items_b["ids"].shape or not np.array_equal(items_a["ids"], items_b["ids"]):
        raise ValueError(f"{task}: the two results files scored different test items (other data or another "
                         "subsample): a paired test needs the same items; evaluate both on the same data")


def paired_difference(pred_a: np.ndarray, pred_b: np.ndarray, items: Items, metric: Metric, *,
                      resamples: int = RESAMPLES, seed: int = 0) -> PairedDifference:
    """One model's predictions against another's on ``items``: a paired bootstrap interval (items resampled within
    their fold or sub-dataset, both models on the same draw; percentile interval) and a paired permutation test (each
    item's two predictions swapped at random; scipy's ``permutation_test``, two-sided)."""
    rows = np.arange(len(items["gold"]))
    difference = metric(pred_a, items, rows) - metric(pred_b, items, rows)
    rng = np.random.default_rng(seed)
    resampler = Resampler(strata(items))
    draws = np.empty(resamples)
    for i in range(resamples):
        picked = resampler.draw(rng)
        draws[i] = metric(pred_a, items, picked) - metric(pred_b, items, picked)
    alpha = (1 - CONFIDENCE) / 2
    low, high = np.quantile(draws, [alpha, 1 - alpha])
    p = permutation_p(pred_a, pred_b, items, metric, resamples=resamples, seed=seed)
    return PairedDifference(float(difference), float(low), float(high), p, len(rows),
                            f"paired bootstrap ({resamples} draws, {CONFIDENCE:.0%} percentile interval) and paired "
                            "permutation test" + (" (exact: McNemar's)" if metric is _accuracy else ""))


def permutation_p(pred_a: np.ndarray, pred_b: np.ndarray, items: Items, metric: Metric, *,
                  resamples: int = RESAMPLES, seed: int = 0) -> float:
    """The two-sided p-value of the paired permutation test (each item's two predictions swapped at random). For a
    plain accuracy its exact distribution is the binomial of the items one model gets right and the other wrong
    (McNemar's exact test, scipy's ``binomtest``); otherwise scipy's ``permutation_test`` draws ``resamples`` swaps."""
    if np.array_equal(pred_a, pred_b):
        return 1.0  # every swap gives the same predictions
    if metric is _accuracy:
        right_a, right_b = pred_a == items["gold"], pred_b == items["gold"]
        only_a, only_b = int(np.sum(right_a & ~right_b)), int(np.sum(right_b & ~right_a))
        return 1.0 if only_a + only_b == 0 else float(binomtest(only_a, only_a + only_b, 0.5).pvalue)
    rows = np.arange(len(items["gold"]))
    test = permutation_test((pred_a, pred_b), lambda a, b: metric(a, items, rows) - metric(b, items, rows),
                            permutation_type="samples", n_resamples=resamples, alternative="two-sided",
                            vectorized=False, random_state=np.random.default_rng(seed))
    return float(test.pvalue)


def seeds_difference(preds_a: Sequence[np.ndarray], preds_b: Sequence[np.ndarray], items: Items, metric: Metric, *,
                     resamples: int = RESAMPLES, seed: int = 0) -> PairedDifference:
    """Several training seeds a side (each a prediction array on ``items``): the difference of the seeds' mean
    metric, a two-level bootstrap (each side's seeds drawn with replacement, then the items, shared by both sides)
    and its two-sided p-value (twice the share of draws beyond zero on the smaller side)."""
    rows = np.arange(len(items["gold"]))
    mean = lambda preds, picked: float(np.mean([metric(p, items, picked) for p in preds]))  # noqa: E731
    difference = mean(preds_a, rows) - mean(preds_b, rows)
    rng = np.random.default_rng(seed)
    resampler = Resampler(strata(items))
    draws = np.empty(resamples)
    for i in range(resamples):
        side_a = [preds_a[j] for j in rng.integers(len(preds_a), size=len(preds_a))]
        side_b = [preds_b[j] for j in rng.integers(len(preds_b), size=len(preds_b))]
        picked = resampler.draw(rng)
        draws[i] = mean(side_a, picked) - mean(side_b, picked)
    alpha = (1 - CONFIDENCE) / 2
    low, high = np.quantile(draws, [alpha, 1 - alpha])
    p = min(1.0, 2 * min(float(np.mean(draws <= 0)), float(np.mean(draws >= 0))))
    return PairedDifference(float(difference), float(low), float(high), p, len(rows),
                            f"two-level bootstrap ({len(preds_a)} vs {len(preds_b)} seeds, then items; {resamples} "
                            "draws)")


def corrected(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (scipy's ``false_discovery_control``): the false discovery rate over the
    tasks compared at once stays at the level a p-value is read against."""
    if not p_values:
        return []
    return [float(p) for p in false_discovery_control(np.asarray(p_values, dtype=np.float64), method="bh")]
