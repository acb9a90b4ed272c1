"""Encode each distinct sentence once per run, in length-sorted batches."""
from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

import numpy as np

from sentence_lab.evaluation.encoders.text_encoders import check_output


class EmbeddingCache:
    """sentence string -> vector. ``embed`` encodes only the sentences not seen yet, sorted by
    number of tokens, in batches of ``batch_size``, and returns the rows in the order asked.

    ``seconds`` accumulates the time spent inside the encoder; ``encoded`` counts sentences encoded.
    ``forget`` drops vectors no later task needs, which bounds memory for wide encoders.
    """

    def __init__(self, encoder, batch_size: int = 128, name: str | None = None) -> None:
        self.encoder = encoder
        self.batch_size = int(batch_size)
        self.name = name or type(encoder).__name__
        self._vectors: dict[str, np.ndarray] = {}
        self.dim: int | None = None
        self.seconds = 0.0
        self.encoded = 0
        self.hits = 0

    def __len__(self) -> int:
        return len(self._vectors)

    def __contains__(self, sentence: str) -> bool:
        return sentence in self._vectors

    def embed(self, sentences: Sequence[str]) -> np.ndarray:
        sentences = list(sentences)
        missing = list(dict.fromkeys(s for s in sentences if s not in self._vectors))
        self.hits += len(sentences) - len(missing)
        if missing:
            missing.sort(key=lambda s: len(s.split()))  # stable: ties keep first-seen order
            for start in range(0, len(missing), self.batch_size):
                batch = missing[start:start + self.batch_size]
                t0 = time.perf_counter()
                out = self.encoder.encode(batch)
                self.seconds += time.perf_counter() - t0
                out = check_output(out, batch, self.dim, self.name)
                self.dim = out.shape[1]
                for sentence, vector in zip(batch, out):
                    self._vectors[sentence] = vector
                self.encoded += len(batch)
        if not sentences:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        return np.stack([self._vectors[s] for s in sentences])

    __call__ = embed

    def forget(self, sentences: Iterable[str]) -> None:
        for s in sentences:
            self._vectors.pop(s, None)
