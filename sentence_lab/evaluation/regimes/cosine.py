"""Unsupervised similarity: SentEval's STS12-16 (and STS-B / SICK-R scored by cosine, SimCSE's protocol).

Each pair's score is the cosine of its two vectors, computed as SentEval computes it; per sub-dataset the Pearson
and Spearman correlations with the gold scores, then their plain and weighted means (``all``). No classifier, so
the classifier seeds and ``params.backend`` change nothing.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
from scipy.stats import pearsonr, spearmanr

from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.regimes.common import Embed, correlation, test_items
from sentence_lab.tasks.base import Split, TaskData

DEV_SCORE = "dev.spearman"


def cosine_rows(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Per-pair cosine exactly as SentEval's STS computes it: ``nan_to_num(cosine(nan_to_num(u),
    nan_to_num(v)))`` with ``cosine = dot / (norm * norm)`` in the embeddings' own dtype, pair by pair
    (a vectorised float64 version shifts near-ties enough to move a Spearman in the 4th decimal)."""
    u, v = np.nan_to_num(u), np.nan_to_num(v)
    with np.errstate(invalid="ignore", divide="ignore"):
        sims = [np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)) for a, b in zip(u, v)]
    return np.nan_to_num(np.asarray(sims, dtype=np.float64))


def _with_pvalue(fn, x: np.ndarray, y: np.ndarray):
    """``fn(x, y)`` as SentEval stores it: scipy's result, ``(statistic, p-value)`` by index and by attribute
    (NaNs where the correlation is undefined, without scipy's warning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(x, y)


def sts_summary(per_dataset: dict[str, tuple[np.ndarray, np.ndarray]], pvalues: bool = False) -> dict:
    """SentEval's STS result from (system scores, gold scores) per sub-dataset.

    Per sub-dataset: Pearson, Spearman, number of pairs (``pvalues=True``: each correlation as SentEval's
    ``(statistic, p-value)`` pair). ``all``: their plain mean and their mean weighted by pair count.
    ``pooled`` (not in SentEval): the correlations over all pairs together.
    """
    results: dict = {}
    for name, (sys_scores, gold) in per_dataset.items():
        if pvalues:
            pair = {"pearson": _with_pvalue(pearsonr, sys_scores, gold),
                    "spearman": _with_pvalue(spearmanr, sys_scores, gold)}
        else:
            pair = {"pearson": correlation(pearsonr, sys_scores, gold),
                    "spearman": correlation(spearmanr, sys_scores, gold)}
        results[name] = {**pair, "nsamples": int(len(gold))}
    names = list(per_dataset)
    weights = np.array([results[n]["nsamples"] for n in names], dtype=np.float64)
    summary = {}
    for key in ("pearson", "spearman"):
        values = np.array([results[n][key][0] if pvalues else results[n][key] for n in names], dtype=np.float64)
        summary[key] = {"mean": float(np.average(values)), "wmean": float(np.average(values, weights=weights))}
    results["all"] = summary
    sys_all = np.concatenate([s for s, _ in per_dataset.values()])
    gold_all = np.concatenate([g for _, g in per_dataset.values()])
    results["pooled"] = {"pearson": correlation(pearsonr, sys_all, gold_all),
                         "spearman": correlation(spearmanr, sys_all, gold_all),
                         "nsamples": int(len(gold_all))}
    return results


Similarity = Callable[[np.ndarray, np.ndarray], float]


def pair_scores(splits: dict[str, Split], embed: Embed,
                similarity: Similarity | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per sub-dataset, (system scores, gold scores): each pair's cosine (SentEval's default), or
    ``similarity(u, v)`` applied pair by pair (SentEval's ``params.similarity``)."""
    def scores(split: Split) -> np.ndarray:
        if similarity is None:
            return cosine_rows(embed(split.a), embed(split.second))
        return np.asarray([similarity(u, v) for u, v in zip(embed(split.a), embed(split.second))], dtype=np.float64)

    return {name: (scores(s), s.y.astype(np.float64)) for name, s in splits.items()}


def cosine_summary(splits: dict[str, Split], embed: Embed, similarity: Similarity | None = None,
                   pvalues: bool = False) -> dict:
    """STS by cosine, or by ``similarity`` (:func:`pair_scores`), summarised as SentEval does (:func:`sts_summary`)."""
    return sts_summary(pair_scores(splits, embed, similarity), pvalues=pvalues)


def run(spec, data: TaskData, embed: Embed, params: ProtocolParams) -> dict:
    """Every sub-dataset (STS12-16), or the test split of a task that also has a dev split (STS-B cosine); ``items``:
    every pair's cosine, ``subset`` the index of its sub-dataset (``all`` is a mean over them)."""
    splits = {k: v for k, v in data.splits.items() if k != "dev"}
    scored = pair_scores(splits, embed)
    out = sts_summary(scored)
    parts = [test_items(split, scored[name][0], subset=np.full(len(split), i, dtype=np.int64))
             for i, (name, split) in enumerate(splits.items())]
    out["items"] = {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}
    return out


def run_dev(spec, data: TaskData, embed: Embed, params: ProtocolParams) -> dict:
    """Dev-only: the dev split's correlations."""
    return {"dev": cosine_summary({"dev": data.splits["dev"]}, embed)["dev"]}
