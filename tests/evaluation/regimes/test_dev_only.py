"""Dev-only mode: model selection that never encodes or scores a test sentence."""
import dataclasses

import pytest

from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.results import ResultsWriter
from sentence_lab.evaluation.runner import load_tasks, run_tasks

FAST = ProtocolParams(kfold=2, max_epoch=6, l2_grid=(1e-3,), dev_only=True)
TASKS = ["MR", "TREC", "SST2", "Length", "SICKRelatedness", "STSBenchmarkCosine", "STS13"]


@pytest.mark.slow
def test_no_test_sentence_is_encoded_and_dev_scores_are_reported(senteval_root, hash_encoder, tmp_path):
    loaded = load_tasks(TASKS, senteval_root)
    test_only = set()
    for task in loaded:
        splits = task.data.splits
        if "test" in splits and task.spec.regime != "cosine" or task.spec.name == "STSBenchmarkCosine":
            seen_elsewhere = set().union(*(s.sentences() for k, s in splits.items() if k != "test"))
            test_only |= set(splits["test"].sentences()) - seen_elsewhere
    assert test_only
    writer = ResultsWriter(tmp_path / "r.json", {})
    doc = run_tasks(loaded, hash_encoder, FAST, writer)
    assert not test_only & set(hash_encoder.seen)  # the test splits were never read
    r = doc["results"]
    assert {t: r[t]["main_metric"] for t in r} == {
        "MR": "devacc", "TREC": "devacc", "SST2": "devacc", "Length": "devacc", "SICKRelatedness": "devpearson",
        "STSBenchmarkCosine": "dev.spearman"}
    assert all("acc" not in r[t] and "pearson" not in r[t] for t in r)
    assert "no dev split" in doc["skipped"]["STS13"] and "dev-only" in doc["dev_only"]


def test_dev_score_equals_the_normal_runs_dev_score(senteval_root, hash_encoder, tmp_path):
    """SST2's dev accuracy is the same number whether or not the test split is there."""
    normal = run_tasks(load_tasks(["SST2"], senteval_root), hash_encoder, dataclasses.replace(FAST, dev_only=False),
                       ResultsWriter(tmp_path / "a.json", {}))["results"]["SST2"]
    dev = run_tasks(load_tasks(["SST2"], senteval_root), hash_encoder, FAST,
                    ResultsWriter(tmp_path / "b.json", {}))["results"]["SST2"]
    assert dev["devacc"] == normal["devacc"] and dev["main_score"] == normal["devacc"]
