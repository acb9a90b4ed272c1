"""STS: SentEval's mean and weighted mean over sub-datasets, on a hand-checked case."""
from __future__ import annotations

import numpy as np
import pytest

from sentence_lab.evaluation.regimes.cosine import cosine_rows, sts_summary
from sentence_lab.evaluation.regimes.cosine import run as run_cosine
from sentence_lab.tasks import TASKS


def test_mean_and_weighted_mean_hand_checked():
    # A: 4 pairs, system perfectly monotone with gold (pearson 1, spearman 1)
    # B: 2 pairs, anti-correlated (pearson -1, spearman -1)
    # C: 3 pairs, pearson 0.5 exactly: x=(1,2,3), y=(1,3,2) -> r = 0.5, rho = 0.5
    per = {"A": (np.array([0.1, 0.2, 0.3, 0.4]), np.array([1.0, 2.0, 3.0, 4.0])),
           "B": (np.array([0.1, 0.9]), np.array([5.0, 1.0])),
           "C": (np.array([1.0, 2.0, 3.0]), np.array([1.0, 3.0, 2.0]))}
    r = sts_summary(per)
    assert r["A"]["pearson"] == pytest.approx(1.0) and r["B"]["spearman"] == pytest.approx(-1.0)
    assert r["C"]["pearson"] == pytest.approx(0.5) and r["C"]["nsamples"] == 3
    assert r["all"]["pearson"]["mean"] == pytest.approx((1 - 1 + 0.5) / 3)
    assert r["all"]["pearson"]["wmean"] == pytest.approx((4 * 1 + 2 * -1 + 3 * 0.5) / 9)
    assert r["all"]["spearman"]["mean"] == pytest.approx(0.5 / 3)
    assert r["all"]["spearman"]["wmean"] == pytest.approx(3.5 / 9)
    assert r["pooled"]["nsamples"] == 9


def test_cosine_zero_vector_is_zero():
    u = np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0]], dtype=np.float32)
    v = np.array([[1.0, 0.0], [1.0, 0.0], [-1.0, -1.0]], dtype=np.float32)
    assert cosine_rows(u, v).tolist() == pytest.approx([1.0, 0.0, -1.0])


def test_run_cosine_on_fixture(senteval_root, hash_encoder):
    from sentence_lab.evaluation.vectors.embedding_cache import EmbeddingCache

    data = TASKS["STS14"].loader(senteval_root)
    r = run_cosine(TASKS["STS14"], data, EmbeddingCache(hash_encoder), None)
    assert set(r) == set(data.splits) | {"all", "pooled", "items"}
    items, names = r["items"], list(data.splits)
    for i, name in enumerate(names):  # each pair's cosine, its sub-dataset's index beside it
        split, rows = data.splits[name], items["subset"] == i
        np.testing.assert_array_equal(items["pred"][rows], cosine_rows(hash_encoder.encode(split.a),
                                                                       hash_encoder.encode(split.b)))
        np.testing.assert_array_equal(items["gold"][rows], split.y)
    assert len(set(items["ids"].tolist())) == len(items["ids"]) and items["ids"].dtype == np.uint64
    # identical pairs (cosine 1) carry the high gold scores: correlations are positive
    assert r["all"]["spearman"]["mean"] > 0.5


def test_cosine_protocol_scores_the_test_split_by_spearman(senteval_root):
    """SimCSE's STS-B: cosine of the test pairs, Spearman against gold, no regressor (checked by hand here)."""
    from scipy.stats import rankdata

    from sentence_lab.evaluation.protocol import ProtocolParams
    from sentence_lab.evaluation.runner import load_tasks, run_task
    from sentence_lab.evaluation.vectors.embedding_cache import EmbeddingCache

    class Fixed:
        def encode(self, sentences):
            return np.array([[len(s), s.count("e") + 1.0, 1.0] for s in sentences], dtype=np.float64)

        def describe(self):
            return {"name": "fixed"}

    (task,) = load_tasks(["STSBenchmarkCosine"], senteval_root)
    test = task.data.splits["test"]
    assert set(task.data.splits) == {"dev", "test"}  # dev is scored only in dev-only mode
    enc = Fixed()
    u, v = enc.encode(test.a), enc.encode(test.b)
    # pair by pair, as SentEval does: the fixture has exact ties, which a vectorised formula breaks by 1 ulp
    cos = np.array([a @ b / (np.linalg.norm(a) * np.linalg.norm(b)) for a, b in zip(u, v)])
    rx, ry = rankdata(cos), rankdata(test.y)
    by_hand = float(np.corrcoef(rx, ry)[0, 1])  # Spearman = Pearson of the ranks
    result = run_task(task, EmbeddingCache(enc), ProtocolParams())
    assert result["main_metric"] == "test.spearman" and "dev" not in result
    assert abs(result["main_score"] - by_hand) < 1e-9  # float64 all the way
