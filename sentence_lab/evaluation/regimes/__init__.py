"""SentEval's evaluation regimes, one module each, on the classifier engine.

==================  =====================  ======================================  ==========================
regime              module                 SentEval                                tasks
==================  =====================  ======================================  ==========================
``nested``          :mod:`.nested`         ``InnerKFoldClassifier``                MR, CR, SUBJ, MPQA
``kfold``           :mod:`.kfold`          ``KFoldClassifier``                     TREC, MRPC
``split``           :mod:`.split`          ``SplitClassifier``                     SST, SICK-E, SNLI, probing
``regression``      :mod:`.regression`     ``RelatednessPytorch``                  SICK-R, STS-B
``cosine``          :mod:`.cosine`         ``STSEval``                             STS12-16
==================  =====================  ======================================  ==========================

Each module holds its regime whole: the folds, the PyTorch path (all classifiers of a stage trained at once as
one stacked model, :func:`sentence_lab.evaluation.classifier.fit_members`), SentEval's scikit-learn path
(``params.backend == "sklearn"``), ``run`` (a loaded task and an embedding function -> SentEval's result dict)
and ``run_dev`` (the model-selection score without the test split). Inputs are in SentEval's (length, label)
order; accuracies are percentages rounded exactly where SentEval rounds them.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.regimes import cosine, kfold, nested, regression, split
from sentence_lab.evaluation.regimes.common import Embed, correlation, features
from sentence_lab.evaluation.regimes.cosine import cosine_rows, cosine_summary, sts_summary
from sentence_lab.evaluation.regimes.kfold import kfold_folds, kfold_then_test
from sentence_lab.evaluation.regimes.nested import nested_cv, nested_folds
from sentence_lab.evaluation.regimes.regression import relatedness, tai_target
from sentence_lab.evaluation.regimes.split import train_dev_test
from sentence_lab.tasks.base import TaskData

MODULES = {"nested": nested, "kfold": kfold, "split": split, "regression": regression,
           "cosine": cosine}

RegimeRun = Callable[..., dict]  # (spec, data, embed, params) -> SentEval's result dict
REGIMES: dict[str, RegimeRun] = {name: module.run for name, module in MODULES.items()}
DEV_ONLY_SCORE = {name: module.DEV_SCORE for name, module in MODULES.items()}
DEV_ONLY_NOTE = ("dev-only: the test split is neither encoded nor scored; train/dev tasks report dev accuracy, "
                 "k-fold tasks (MR, CR, SUBJ, MPQA, TREC, MRPC) the k-fold CV accuracy on their training data, "
                 "relatedness the dev Pearson, STS-B/SICK-R cosine the dev Spearman; STS12-16 have no dev split")


class NoDevSplit(ValueError):
    """Dev-only mode on a task without a dev split (STS12-16): skipped, not failed."""


def task_params(spec, params: ProtocolParams) -> ProtocolParams:
    """The protocol parameters for one task, with the task's overrides (e.g. WordContent: nhid=0)."""
    overrides = dict(spec.params_override)
    known = {f.name for f in dataclasses.fields(params)}
    overrides = {k: v for k, v in overrides.items() if k in known and getattr(params, k) != v}
    return dataclasses.replace(params, **overrides) if overrides else params


def dev_view(spec, data: TaskData) -> TaskData:
    """The task without its test split (nested-CV tasks keep their one pool: only CV folds are scored)."""
    if spec.regime == "nested":
        return data
    if "dev" not in data.splits and spec.regime in ("cosine", "split", "regression"):
        raise NoDevSplit(f"{spec.name} has no dev split: nothing to score in dev-only mode")
    return TaskData(splits={k: v for k, v in data.splits.items() if k != "test"}, nclasses=data.nclasses,
                    info={**data.info, "dev_only": True})


def run_dev_only(spec, data: TaskData, embed: Embed, params: ProtocolParams) -> dict:
    """The model-selection score of a task from its training and dev data alone (``dev_view`` already dropped
    the test split, so it cannot be read)."""
    return MODULES[spec.regime].run_dev(spec, data, embed, params)


__all__ = ["REGIMES", "MODULES", "DEV_ONLY_SCORE", "DEV_ONLY_NOTE", "NoDevSplit", "task_params", "dev_view",
           "run_dev_only", "nested_cv", "nested_folds", "kfold_then_test", "kfold_folds", "train_dev_test",
           "relatedness", "tai_target", "cosine_rows", "cosine_summary", "sts_summary", "correlation", "features"]
