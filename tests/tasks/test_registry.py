"""The task table: typed families and regimes, each regime a module of sentence_lab/evaluation/regimes/."""
from __future__ import annotations

import pytest

from sentence_lab.evaluation.regimes import MODULES
from sentence_lab.tasks.base import TaskData
from sentence_lab.tasks.registry import FAMILIES, GROUPS, REGIME_NAMES, TASKS, TaskSpec


def _loader(data_dir) -> TaskData:
    raise AssertionError("never loaded")


def test_every_regime_name_is_a_regime_module_and_every_task_uses_one():
    assert set(REGIME_NAMES) == set(MODULES)
    assert {spec.regime for spec in TASKS.values()} <= set(REGIME_NAMES)
    assert {spec.family for spec in TASKS.values()} == set(FAMILIES)


def test_a_family_or_regime_that_does_not_exist_is_refused_when_the_task_is_declared():
    with pytest.raises(ValueError, match="family 'sts' is not one of"):
        TaskSpec("X", "sts", _loader, "cosine", ("acc",), "acc")
    with pytest.raises(ValueError, match="regime 'nested_cv' is not one of"):
        TaskSpec("X", "transfer", _loader, "nested_cv", ("acc",), "acc")


def test_the_similarity_group_is_the_similarity_family_on_senteval_data():
    similarity = {name for name, spec in TASKS.items() if spec.family == "similarity" and not name.endswith("Cosine")}
    assert similarity == set(GROUPS["similarity"])
