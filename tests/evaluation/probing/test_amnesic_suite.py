"""evaluation.amnesic through the suite: each property removed, the other tasks scored again after it and after the
control, into the results' ``amnesic``; a bad name refused in one line; a failing property recorded alone."""
from __future__ import annotations

import numpy as np
import pytest

from sentence_lab.evaluation.probing import amnesic
from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.settings import SuiteSettings
from sentence_lab.evaluation.suite import EvaluationSuite
from tests.helpers.hash_encoder import HashEncoder

FAST = ProtocolParams(kfold=2, max_epoch=4, l2_grid=(1e-3,), device="cpu")


def test_each_property_is_removed_and_the_other_tasks_scored_after_it_and_the_control(senteval_root, tmp_path):
    suite = EvaluationSuite(["MR", "STS13"], senteval_root, FAST, amnesic=["Tense", "Length"])
    doc = suite.run(HashEncoder(), tmp_path / "results.json")
    assert set(doc["results"]) == {"MR", "STS13"}  # the properties need not be tasks of the run
    for name in ("Tense", "Length"):
        entry = doc["amnesic"][name]
        assert set(entry["tasks"]) == {"MR", "STS13"}, entry
        assert entry["directions"] >= 0 and entry["probe"]["majority"] > 0
        for task, row in entry["tasks"].items():
            assert row["before"] == doc["results"][task]["main_score"]
            assert row["drop"] == pytest.approx(row["before"] - row["after"], abs=1e-3)
            assert row["control_drop"] == pytest.approx(row["before"] - row["control"], abs=1e-3)
        if entry["directions"] == 0:  # nothing to remove: the projection is the identity, the scores unchanged
            assert all(row["after"] == pytest.approx(row["before"], abs=1e-3) for row in entry["tasks"].values())


def test_the_projection_reaches_the_scored_tasks(senteval_root, tmp_path, monkeypatch):
    """The transfer task is scored on projected vectors: with every direction removed it reads nothing."""
    def remove_everything(xtr, ytr, xdev, ydev, **_):
        dim = xtr.shape[1]
        return amnesic.Nullspace(projection=np.zeros((dim, dim)), directions=dim, iterations=1, removed=True)

    monkeypatch.setattr(amnesic, "inlp", remove_everything)
    doc = EvaluationSuite(["MR"], senteval_root, FAST, amnesic=["Tense"]).run(HashEncoder(), tmp_path / "r.json")
    row = doc["amnesic"]["Tense"]["tasks"]["MR"]
    assert row["after"] <= 60 < row["before"] or row["before"] <= 60  # zero vectors: the majority at best
    assert doc["amnesic"]["Tense"]["probe"]["after"] == pytest.approx(doc["amnesic"]["Tense"]["probe"]["majority"],
                                                                      abs=15)


def test_a_failing_property_is_recorded_and_the_next_runs(senteval_root, tmp_path, monkeypatch):
    real, calls = amnesic.inlp, []

    def fails_the_first_time(xtr, ytr, xdev, ydev, **kw):
        calls.append(1)
        if len(calls) == 1:  # Tense, the first property
            raise ValueError("broken")
        return real(xtr, ytr, xdev, ydev, **kw)

    monkeypatch.setattr(amnesic, "inlp", fails_the_first_time)
    doc = EvaluationSuite(["MR"], senteval_root, FAST, amnesic=["Tense", "Length"]).run(HashEncoder(),
                                                                                        tmp_path / "r.json")
    assert doc["amnesic"]["Tense"] == {"error": "ValueError: broken"} and "tasks" in doc["amnesic"]["Length"]


def test_only_probing_tasks_can_be_removed():
    with pytest.raises(ValueError, match=r"evaluation.amnesic=\['MR'\]: amnesic probing removes a probing task"):
        SuiteSettings.from_config({"tasks": "MR"}, {"amnesic": ["MR"]})
    assert SuiteSettings.from_config({"tasks": "MR"}, {"amnesic": ["Tense"]}).amnesic == ("Tense",)
    assert SuiteSettings.from_config({"tasks": "MR"}, {}).amnesic == ()
