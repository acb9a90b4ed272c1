"""A deterministic toy text encoder for the tests: it imports only numpy, so a test's subprocess (an
``encoder=callable`` job) loads it without the made-up data's writers."""
from __future__ import annotations

import zlib

import numpy as np


class HashEncoder:
    """Deterministic toy text encoder: mean of per-word pseudo-random vectors; counts what it encodes."""

    def __init__(self, dim: int = 16) -> None:
        self.dim = dim
        self.calls: list[int] = []
        self.seen: list[str] = []

    def _word(self, w: str) -> np.ndarray:
        return np.random.default_rng(zlib.crc32(w.encode())).standard_normal(self.dim).astype(np.float32)

    def encode(self, sentences: list[str]) -> np.ndarray:
        self.calls.append(len(sentences))
        self.seen.extend(sentences)
        out = np.zeros((len(sentences), self.dim), dtype=np.float32)
        for i, s in enumerate(sentences):
            words = s.lower().split()
            if words:
                out[i] = np.mean([self._word(w) for w in words], axis=0)
        return out

    def describe(self) -> dict:
        return {"name": "hash", "dim": self.dim}
