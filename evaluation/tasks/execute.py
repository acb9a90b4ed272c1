"""How each regime turns a loaded task and an embedding function into SentEval's result dict.

The classifiers themselves live in ``evaluation.regimes``; this module builds their inputs
(features in SentEval's order) and computes what SentEval computes around them (MRPC's F1, STS's
cosine correlations and their means).
"""
from __future__ import annotations

import dataclasses
import warnings
from typing import Callable

import numpy as np
from scipy.stats import pearsonr, spearmanr

from .base import Split, TaskData

Embed = Callable[[list[str]], np.ndarray]


def absdiff_prod(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """SentEval's pair features for MRPC, SICK and STS-B: ``[|u - v|, u * v]``."""
    return np.concatenate([np.abs(u - v), u * v], axis=1)


def snli_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """SentEval's SNLI features: ``[u, v, u * v, |u - v|]``."""
    return np.concatenate([u, v, u * v, np.abs(u - v)], axis=1)


FEATURES = {"absdiff_prod": absdiff_prod, "snli": snli_features}


def features(split: Split, embed: Embed, kind: str | None) -> np.ndarray:
    if split.b is None:
        return embed(split.a)
    return FEATURES[kind or "absdiff_prod"](embed(split.a), embed(split.b))


def task_params(spec, params):
    """The protocol parameters for one task, with the task's overrides (e.g. WordContent: nhid=0)."""
    overrides = dict(spec.params_override)
    known = {f.name for f in dataclasses.fields(params)}
    overrides = {k: v for k, v in overrides.items() if k in known and getattr(params, k) != v}
    return dataclasses.replace(params, **overrides) if overrides else params


def _clean(result: dict) -> dict:
    """Numpy scalars as Python numbers; ``yhat`` (test predictions, as SentEval returns them) is kept: the
    runner leaves it out of the results file, the SentEval API returns it."""
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in result.items()}


def run_nested_cv(spec, data: TaskData, embed: Embed, params) -> dict:
    from evaluation import regimes

    split = data.splits["all"]
    return _clean(regimes.nested_cv(features(split, embed, spec.features), split.y, params, data.nclasses))


def run_kfold_then_test(spec, data: TaskData, embed: Embed, params) -> dict:
    from evaluation import regimes

    train, test = data.splits["train"], data.splits["test"]
    result = regimes.kfold_then_test(features(train, embed, spec.features), train.y,
                                     features(test, embed, spec.features), test.y, params, data.nclasses)
    out = _clean(result)
    if "f1" in spec.metrics:
        from sklearn.metrics import f1_score

        out["f1"] = round(100 * float(f1_score(test.y, np.asarray(result["yhat"]))), 2)
    return out


def run_train_dev_test(spec, data: TaskData, embed: Embed, params) -> dict:
    from evaluation import regimes

    X = {k: features(data.splits[k], embed, spec.features) for k in ("train", "dev", "test")}
    y = {k: data.splits[k].y for k in ("train", "dev", "test")}
    return _clean(regimes.train_dev_test(X["train"], y["train"], X["dev"], y["dev"], X["test"], y["test"],
                                         params, data.nclasses, noreg=params.l2_grid == (1e-9,)))


def check_not_constant(task: str, X: np.ndarray) -> None:
    """Constant features make every prediction equal, so a correlation is undefined (SentEval reports -1 or 0)."""
    if len(X) and not np.ptp(X, axis=0).any():
        raise ValueError(f"{task}: every pair has the same features (the encoder gives all these sentences one "
                         "vector), so no correlation can be computed: check the encoder")


def run_relatedness(spec, data: TaskData, embed: Embed, params) -> dict:
    from evaluation import regimes

    X = {k: features(data.splits[k], embed, spec.features) for k in ("train", "dev", "test")}
    check_not_constant(spec.name, X["train"])
    y = {k: data.splits[k].y.astype(np.float64) for k in ("train", "dev", "test")}
    out = _clean(regimes.relatedness(X["train"], y["train"], X["dev"], y["dev"], X["test"], y["test"], params,
                                     nclasses=5))
    for key in ("pearson", "spearman"):  # SentEval sets a NaN correlation to 0
        if key in out and out[key] != out[key]:
            out[key] = 0.0
    return out


def cosine_rows(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Per-pair cosine exactly as SentEval's STS computes it: ``nan_to_num(cosine(nan_to_num(u),
    nan_to_num(v)))`` with ``cosine = dot / (norm * norm)`` in the embeddings' own dtype, pair by pair
    (a vectorised float64 version shifts near-ties enough to move a Spearman in the 4th decimal)."""
    u, v = np.nan_to_num(u), np.nan_to_num(v)
    with np.errstate(invalid="ignore", divide="ignore"):
        sims = [np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)) for a, b in zip(u, v)]
    return np.nan_to_num(np.asarray(sims, dtype=np.float64))


def correlation(fn, x: np.ndarray, y: np.ndarray) -> float:
    """``fn(x, y)[0]`` (scipy's pearsonr or spearmanr) as a float; NaN where undefined (constant input)."""
    if len(x) < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return float("nan")  # undefined (scipy would warn and return NaN too)
    return float(fn(x, y)[0])


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
    results["pooled"] = {"pearson": correlation(pearsonr, sys_all, gold_all), "spearman": correlation(spearmanr, sys_all, gold_all),
                         "nsamples": int(len(gold_all))}
    return results


Similarity = Callable[[np.ndarray, np.ndarray], float]


def cosine_summary(splits: dict[str, Split], embed: Embed, similarity: Similarity | None = None,
                   pvalues: bool = False) -> dict:
    """STS by cosine (SentEval's default), or by ``similarity(u, v)`` applied pair by pair (SentEval's
    ``params.similarity``)."""
    def scores(split: Split) -> np.ndarray:
        if similarity is None:
            return cosine_rows(embed(split.a), embed(split.b))
        return np.asarray([similarity(u, v) for u, v in zip(embed(split.a), embed(split.b))], dtype=np.float64)

    return sts_summary({name: (scores(s), s.y.astype(np.float64)) for name, s in splits.items()}, pvalues=pvalues)


def run_cosine(spec, data: TaskData, embed: Embed, params) -> dict:
    """Every sub-dataset (STS12-16), or the test split of a task that also has a dev split (STS-B cosine)."""
    return cosine_summary({k: v for k, v in data.splits.items() if k != "dev"}, embed)


class NoDevSplit(ValueError):
    """Dev-only mode on a task without a dev split (STS12-16): skipped, not failed."""


DEV_ONLY_SCORE = {"train_dev_test": "devacc", "kfold_then_test": "devacc", "nested_cv": "devacc",
                  "relatedness": "devpearson", "cosine": "dev.spearman"}
DEV_ONLY_NOTE = ("dev-only: the test split is neither encoded nor scored; train/dev tasks report dev accuracy, "
                 "k-fold tasks (MR, CR, SUBJ, MPQA, TREC, MRPC) the k-fold CV accuracy on their training data, "
                 "relatedness the dev Pearson, STS-B/SICK-R cosine the dev Spearman; STS12-16 have no dev split")


def dev_view(spec, data: TaskData) -> TaskData:
    """The task without its test split (nested-CV tasks keep their one pool: only CV folds are scored)."""
    if spec.regime == "nested_cv":
        return data
    if "dev" not in data.splits and spec.regime in ("cosine", "train_dev_test", "relatedness"):
        raise NoDevSplit(f"{spec.name} has no dev split: nothing to score in dev-only mode")
    return TaskData(splits={k: v for k, v in data.splits.items() if k != "test"}, nclasses=data.nclasses,
                    info={**data.info, "dev_only": True})


def run_dev_only(spec, data: TaskData, embed: Embed, params) -> dict:
    """The model-selection score of a task from its training and dev data alone (``dev_view`` already dropped
    the test split, so it cannot be read)."""
    from evaluation import regimes

    if spec.regime == "cosine":
        return {"dev": cosine_summary({"dev": data.splits["dev"]}, embed)["dev"]}
    if spec.regime == "relatedness":
        X = {k: features(data.splits[k], embed, spec.features) for k in ("train", "dev")}
        check_not_constant(spec.name, X["train"])
        y = {k: data.splits[k].y.astype(np.float64) for k in ("train", "dev")}
        return regimes.relatedness(X["train"], y["train"], X["dev"], y["dev"], None, None, params, nclasses=5)
    if spec.regime == "train_dev_test":
        X = {k: features(data.splits[k], embed, spec.features) for k in ("train", "dev")}
        y = {k: data.splits[k].y for k in ("train", "dev")}
        return regimes.train_dev_test(X["train"], y["train"], X["dev"], y["dev"], None, None, params, data.nclasses,
                                      noreg=params.l2_grid == (1e-9,))
    split = data.splits["all" if spec.regime == "nested_cv" else "train"]
    X = features(split, embed, spec.features)
    return regimes.kfold_then_test(X, split.y, None, None, params, data.nclasses)


REGIMES = {
    "nested_cv": run_nested_cv,
    "kfold_then_test": run_kfold_then_test,
    "train_dev_test": run_train_dev_test,
    "relatedness": run_relatedness,
    "cosine": run_cosine,
}
