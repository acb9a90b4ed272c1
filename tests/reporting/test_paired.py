"""Paired tests between two models on the same items: the metric recomputed from the per-item file is the task's own
score, a model against itself differs by nothing, the test rejects 5% of the time when nothing differs (simulated
from one real probe's per-item probabilities), and finds a 10-point difference on 1,000 items."""
from __future__ import annotations

import os

import numpy as np
import pytest

from lib.calibration import real_probe_probabilities, rejection_rate, shifted
from sentence_lab.evaluation.encoders.baselines import BowGloveEncoder, LengthEncoder
from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.results import items_path, read_items
from sentence_lab.evaluation.suite import EvaluationSuite
from sentence_lab.reporting.compare import main
from sentence_lab.reporting.paired import (
    corrected,
    metric_for,
    paired_difference,
    seeds_difference,
)
from tests.evaluation.test_layer_scoring import Layered
from tests.helpers.hash_encoder import HashEncoder

FAST = ProtocolParams(kfold=2, max_epoch=4, l2_grid=(1e-3,), device="cpu")
# one task of each regime: nested CV, k-fold, split, relatedness, STS by cosine (sub-datasets)
TASKS_OF_EACH_REGIME = ["MR", "TREC", "SST2", "Length", "SICKRelatedness", "STS13"]


def test_the_items_give_back_each_tasks_main_score(senteval_root, tmp_path):
    doc = EvaluationSuite(TASKS_OF_EACH_REGIME, senteval_root, FAST).run(HashEncoder(), tmp_path / "r.json")
    assert doc["items_file"] == "r.items.npz" and items_path(tmp_path / "r.json") == tmp_path / "r.items.npz"
    items = read_items(tmp_path / "r.items.npz")
    assert set(items) == set(doc["results"]) == set(TASKS_OF_EACH_REGIME)
    for task, result in doc["results"].items():
        metric = metric_for(result["regime"], result["main_metric"])
        rows = np.arange(len(items[task]["gold"]))
        value = metric(items[task]["pred"], items[task], rows)
        percent = result["main_metric"] == "acc"
        assert value == pytest.approx(result["main_score"], abs=0.01 if percent else 1e-9), task
    assert set(items["MR"]) == {"ids", "gold", "pred", "fold"} and set(items["STS13"]) == {"ids", "gold", "pred",
                                                                                              "subset"}


def test_layers_predictions_go_beside_the_tasks(senteval_root, tmp_path):
    EvaluationSuite(["TREC"], senteval_root, FAST, layers=True).run(Layered(), tmp_path / "r.json")
    items = read_items(tmp_path / "r.items.npz")["TREC"]
    assert {"layer_0/pred", "layer_1/pred", "layer_2/pred"} <= set(items)
    np.testing.assert_array_equal(items["layer_2/pred"], items["pred"])  # the top layer is the output


@pytest.mark.slow
def test_a_model_against_itself_differs_by_nothing():
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 3, 500)
    pred = np.where(rng.random(500) < 0.7, gold, (gold + 1) % 3)
    items = {"ids": np.arange(500, dtype=np.uint64), "gold": gold, "pred": pred}
    same = paired_difference(pred, pred.copy(), items, metric_for("split", "acc"), resamples=999)
    assert (same.difference, same.low, same.high, same.p_value) == (0.0, 0.0, 0.0, 1.0)
    scores = {"ids": items["ids"], "gold": rng.random(500), "subset": np.repeat([0, 1], 250)}
    noisy = scores["gold"] + rng.normal(0, 0.3, 500)
    same = paired_difference(noisy, noisy.copy(), scores, metric_for("cosine", "all.spearman.mean"), resamples=999)
    assert (same.difference, same.low, same.high, same.p_value) == (0.0, 0.0, 0.0, 1.0)


@pytest.mark.slow
def test_with_nothing_to_find_the_test_rejects_five_percent_of_the_time():
    gold, p = real_probe_probabilities()
    assert len(gold) == 1000 and 0.5 < p.mean() < 0.99  # a real probe: neither chance nor perfect
    assert 0.04 <= rejection_rate(gold, p, p, pairs=2000, seed=1) <= 0.06


@pytest.mark.slow
def test_a_ten_point_difference_on_1000_items_is_found_95_percent_of_the_time():
    gold, p = real_probe_probabilities()
    better = shifted(p, 0.10)  # model b: ten points more, taken where a is wrong most often
    assert (better - p).mean() == pytest.approx(0.10, abs=0.005)
    assert rejection_rate(gold, p, better, pairs=400, seed=2) >= 0.95


def test_several_seeds_a_side_and_the_correction_for_many_tasks():
    rng = np.random.default_rng(3)
    gold = rng.integers(0, 2, 800)
    items = {"ids": np.arange(800, dtype=np.uint64), "gold": gold}
    side = lambda accuracy: [np.where(rng.random(800) < accuracy, gold, 1 - gold) for _ in range(3)]  # noqa: E731
    metric = metric_for("split", "acc")
    far = seeds_difference(side(0.85), side(0.65), items, metric, resamples=999)
    assert far.p_value < 0.01 and 15 < far.low < far.difference < far.high < 25
    near = seeds_difference(side(0.70), side(0.70), items, metric, resamples=999)
    assert near.low < 0 < near.high and near.p_value > 0.05
    # Benjamini-Hochberg by hand: sorted p * m / rank, made monotone from the top
    assert corrected([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.0533333, 0.0533333, 0.5])


@pytest.mark.slow
@pytest.mark.real_data
def test_a_large_real_difference_is_called_significant(tmp_path, capsys):
    """GloVe bag-of-words against the sentence-length baseline on SentEval's TREC (real data): a paired test on the
    500 test questions calls it different, and the corrected p-value too."""
    if not os.environ.get("SENTENCE_DATA"):
        pytest.skip("SENTENCE_DATA not set")
    suite = EvaluationSuite(["TREC"], os.environ["SENTENCE_DATA"], ProtocolParams(device="cpu"))
    glove = suite.run(BowGloveEncoder(), tmp_path / "glove.json")
    suite.run(LengthEncoder(), tmp_path / "length.json")
    assert glove["results"]["TREC"]["main_score"] > 60  # SentEval's own bow_glove: 68.0 with these settings
    assert main([str(tmp_path / "length.json"), str(tmp_path / "glove.json"), "--resamples", "1999"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| TREC | ") and "[" in line)
    difference, interval, p, p_bh = [cell.strip() for cell in row.split("|")[2:6]]
    assert difference.endswith("✓") and float(p) < 1e-6 and float(p_bh) < 1e-6
    low, high = (float(x) for x in interval.strip("[]").split(","))
    assert 0 < low < float(difference.split()[0]) < high
