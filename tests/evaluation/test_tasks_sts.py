"""STS: SentEval's mean and weighted mean over sub-datasets, on a hand-checked case."""
from __future__ import annotations

import numpy as np
import pytest

from evaluation.tasks import TASKS
from evaluation.tasks.execute import cosine_rows, run_cosine, sts_summary


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
    from evaluation.embedding_cache import EmbeddingCache

    data = TASKS["STS14"].loader(senteval_root)
    r = run_cosine(TASKS["STS14"], data, EmbeddingCache(hash_encoder), None)
    assert set(r) == set(data.splits) | {"all", "pooled"}
    # identical pairs (cosine 1) carry the high gold scores: correlations are positive
    assert r["all"]["spearman"]["mean"] > 0.5
