"""Classifier seeds: seed= reaches the classifiers, evaluation.seeds reports each seed with mean and sd."""
import dataclasses
import json

import numpy as np
import pytest

from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.runner import load_tasks, run_task
from sentence_lab.evaluation.vectors.embedding_cache import EmbeddingCache
from tests.evaluation.test_cli import _evaluate

FAST = ProtocolParams(kfold=2, max_epoch=6, l2_grid=(1e-3,))


def test_seeds_keep_each_run_and_report_mean_and_sd(senteval_root, hash_encoder):
    (trec,) = load_tasks(["TREC"], senteval_root)
    single = {}
    for seed in (1, 2, 3):
        cache = EmbeddingCache(hash_encoder)
        (task,) = load_tasks(["TREC"], senteval_root)
        single[seed] = run_task(task, cache, dataclasses.replace(FAST, seed=seed))["acc"]
    result = run_task(trec, EmbeddingCache(hash_encoder), dataclasses.replace(FAST, seeds=(1, 2, 3)))
    assert {int(s): r["acc"] for s, r in result["seeds"].items()} == single  # each seed = its own single run
    values = np.array(list(single.values()))
    assert result["acc"] == pytest.approx(values.mean(), abs=1e-4)
    assert result["sd"]["acc"] == pytest.approx(values.std(ddof=1), abs=1e-4)
    assert result["main_score"] == result["acc"] and result["main_score_sd"] == result["sd"]["acc"]


def test_cosine_tasks_run_once(senteval_root, hash_encoder):
    (sts,) = load_tasks(["STS13"], senteval_root)
    result = run_task(sts, EmbeddingCache(hash_encoder), dataclasses.replace(FAST, seeds=(1, 2)))
    assert "seeds" not in result


def test_protocol_rejects_what_would_fail_later():
    with pytest.raises(ValueError, match="optimizer 'adamw' not supported"):
        ProtocolParams(optim="adamw")
    with pytest.raises(ValueError, match="kfold"):
        ProtocolParams(kfold=1)


@pytest.mark.slow
def test_cli_seed_reaches_the_classifiers_and_a_bad_optimiser_stops_before_encoding(senteval_root, tmp_path):
    out = tmp_path / "r.json"
    proc = _evaluate(senteval_root, "tasks=[TREC]", "seed=7", "evaluation.kfold=2", "evaluation.max_epoch=4",
                     f"results_file={out}", cwd=tmp_path, here=True)
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert json.loads(out.read_text())["protocol"]["seed"] == 7
    bad = tmp_path / "bad.json"
    proc = _evaluate(senteval_root, "tasks=[TREC]", "evaluation.optim=adamw", f"results_file={bad}", cwd=tmp_path,
                     here=True)
    assert proc.returncode == 2 and "optimizer 'adamw' not supported" in proc.stderr
    assert not bad.exists()  # rejected before anything was encoded or written
