"""Translation retrieval: for each sentence, find its translation among every held-out sentence of the other language;
the error rate is the share found wrong, in each direction.

Two scores rank the candidates: the cosine, and the ratio margin of Artetxe & Schwenk (2019, "Margin-based parallel
corpus mining with multilingual sentence embeddings", section 3.1), which divides the cosine by the mean cosine of
each side's k nearest neighbours in the other language, so that a "hub" close to everything stops winning:

    margin(x, y) = cos(x, y) / ( sum_{z in NN_k(x)} cos(x, z) / 2k + sum_{v in NN_k(y)} cos(y, v) / 2k )

with k = 4 as there. Two baselines read the sentences alone: random vectors (an error of about 1 - 1/n) and
character n-gram TF-IDF vectors (cognates, names and numbers shared by the two languages find many pairs).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

MARGIN_K = 4


def cosines(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Every row of ``x`` against every row of ``y``; a zero vector's cosines are 0."""
    def unit(m: np.ndarray) -> np.ndarray:
        m = np.asarray(m, dtype=np.float64)
        norms = np.linalg.norm(m, axis=1, keepdims=True)
        return m / np.where(norms > 0, norms, 1.0)

    return unit(x) @ unit(y).T


def margins(sim: np.ndarray, k: int = MARGIN_K) -> np.ndarray:
    """The ratio margin of every pair, from their cosines (rows: one language, columns: the other)."""
    k_rows, k_cols = min(k, sim.shape[1]), min(k, sim.shape[0])
    row_knn = np.sort(sim, axis=1)[:, -k_rows:].sum(axis=1) / (2 * k_rows)
    col_knn = np.sort(sim, axis=0)[-k_cols:, :].sum(axis=0) / (2 * k_cols)
    return sim / (row_knn[:, None] + col_knn[None, :])


def error_rates(x: np.ndarray, y: np.ndarray, k: int = MARGIN_K) -> dict[str, float]:
    """Row ``i`` of ``x`` and of ``y`` are translations: ``error_rates_of`` their cosines."""
    if len(x) != len(y):
        raise ValueError(f"retrieval needs as many translations as sentences: got {len(x)} and {len(y)}")
    return error_rates_of(cosines(x, y), k)


def error_rates_of(sim: np.ndarray, k: int = MARGIN_K) -> dict[str, float]:
    """``sim[i, j]``: the cosine of sentence ``i`` of one language and ``j`` of the other, ``i`` and ``i``
    translations. Percentages of sentences whose best-scoring candidate is not their translation, each direction
    (``x->y``: the rows' sentences as queries), by cosine and by margin; a tie is an error unless the translation
    alone holds the best score."""
    if sim.ndim != 2 or sim.shape[0] != sim.shape[1] or len(sim) < 2:
        raise ValueError(f"retrieval needs a square matrix of at least 2 pairs, got shape {sim.shape}")
    gold = np.arange(len(sim))
    out = {}
    for name, scores in (("cosine", sim), ("margin", margins(sim, k))):
        for direction, s in (("x->y", scores), ("y->x", scores.T)):
            best = s.max(axis=1)
            right = (s[gold, gold] == best) & ((s == best[:, None]).sum(axis=1) == 1)
            out[f"{name} {direction}"] = 100.0 * float(1.0 - right.mean())
    return out


def char_ngram_cosines(x: Sequence[str], y: Sequence[str], ngrams: tuple[int, int] = (2, 4)) -> np.ndarray:
    """Cosines of TF-IDF vectors of character n-grams within words (case-folded), fitted on both sides' sentences
    (sparse: the n-grams of a few thousand sentences are tens of thousands of columns)."""
    vectorizer = TfidfVectorizer(analyzer="char_wb", ngram_range=ngrams, lowercase=True)  # rows of unit length
    matrix = vectorizer.fit_transform(list(x) + list(y))
    return np.asarray((matrix[:len(x)] @ matrix[len(x):].T).todense(), dtype=np.float64)


def random_vectors(n: int, dim: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two sides of ``n`` independent Gaussian vectors: the error of a model that knows nothing."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, dim)), rng.standard_normal((n, dim))
