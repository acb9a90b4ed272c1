"""Pin the engine to SentEval's own outputs on bow_glove (tests/reference/senteval-reference-scores.json).

SentEval (facebookresearch/SentEval at 5d6dc11) was run on the same embeddings; its accuracies are
reported to 2 decimals and its correlations in full. Ours must give the same accuracy to those
decimals and the same correlations to 1e-4 (the only freedom: float summation order in the
classifiers and the regression model, which moves a correlation by ~1e-6, far below that). A quick
subset of tasks and seeds runs in CI; ``benchmarks/compare_senteval.py`` covers every task.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.senteval_reference import senteval_reference

# (task, seed): the quick ones, every regime: k-fold + test, pair features, relatedness, cosine STS.
CASES = [("TREC", "1111"), ("TREC", "1112"), ("MRPC", "1111"), ("SICKEntailment", "1113"),
         ("SICKRelatedness", "1111"), ("STS14", "1111")]


def _reference() -> dict:
    if not os.environ.get("SENTENCE_DATA"):
        pytest.skip("SENTENCE_DATA not set")
    return senteval_reference()


@pytest.mark.slow
@pytest.mark.real_data
@pytest.mark.parametrize("task,seed", CASES)
def test_bow_glove_gives_sentevals_own_scores(task, seed, tmp_path):
    reference = _reference()
    expected = reference["prototype"]["by_seed"][seed][task]
    from sentence_lab.evaluation.encoders.baselines import BowGloveEncoder
    from sentence_lab.evaluation.results import ResultsWriter
    from sentence_lab.evaluation.runner import load_tasks, params_from_config, run_tasks

    params = params_from_config({**reference["prototype"]["params"], "seed": int(seed), "name": "prototype",
                                 "classifier": {"nhid": 0}})
    writer = ResultsWriter(tmp_path / "r.json", {})
    doc = run_tasks(load_tasks([task], Path(os.environ["SENTENCE_DATA"])), BowGloveEncoder(), params, writer)
    got = doc["results"][task]
    if "acc" in expected:
        assert got["acc"] == pytest.approx(expected["acc"], abs=0.005)
        assert got["devacc"] == pytest.approx(expected["devacc"], abs=0.005)
        if "f1" in expected:
            assert got["f1"] == pytest.approx(expected["f1"], abs=0.005)
    elif "pearson" in expected:
        for key in ("devpearson", "pearson", "spearman", "mse"):
            assert got[key] == pytest.approx(expected[key], abs=1e-4), key
    else:  # STS: every sub-dataset's Pearson and Spearman
        for subset, values in expected.items():
            if subset == "all" or not isinstance(values, dict) or "pearson" not in values:
                continue
            ours = {k: (v[0] if isinstance(v, (list, tuple)) else v) for k, v in got[subset].items()}
            assert ours["pearson"] == pytest.approx(values["pearson"][0], abs=1e-4), subset
            assert ours["spearman"] == pytest.approx(values["spearman"][0], abs=1e-4), subset
