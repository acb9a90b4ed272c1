"""A SentEval data folder as SentEval lays it out (``downstream/``, ``probing/``), written here, and a toy client."""
from __future__ import annotations

import random
import zlib
from pathlib import Path

import numpy as np
import pytest

from lib.made_up_tasks import (
    sick_rows,
    write_binary,
    write_senteval_probing,
    write_sick,
    write_sts,
    write_trec,
)
from tests.helpers.senteval_tree import FILLER, NEG, POS

STS14 = ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news")


def sentence(rng: random.Random, cue: list[str]) -> str:
    words = rng.sample(FILLER, rng.randint(1, 6)) + [rng.choice(cue)]
    rng.shuffle(words)
    return " ".join(words)




def make_task_path(root: Path, n: int = 30, seed: int = 0) -> Path:
    """MR, TREC, SICK, STS14 under ``downstream/`` and Length under ``probing/``, in SentEval's file formats."""
    rng = random.Random(seed)
    down = root / "downstream"
    positive = [sentence(rng, POS) for _ in range(n)]
    write_binary(down, "MR", positive, [sentence(rng, NEG) for _ in range(n)])
    coarse = ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]
    cues = [["abbr"], ["why"], ["what"], ["who"], ["where"], ["many"]]
    for split, size in [("train", 2 * n), ("test", n)]:
        write_trec(down, split, [(coarse[i % 6], sentence(rng, cues[i % 6])) for i in range(size)])
    for split, size in [("train", n), ("dev", n // 2), ("test", n // 2)]:
        write_sick(down, split, sick_rows(rng, size, lambda: sentence(rng, POS), lambda: sentence(rng, NEG),
                                              lambda: sentence(rng, FILLER)))
    for name in STS14:
        pairs, gold = [], []
        for i in range(9):
            a = sentence(rng, POS)
            pairs.append((a, a if i % 2 else sentence(rng, NEG)))
            gold.append("" if i == 4 else f"{(5.0 if i % 2 else 1.0) - rng.random():.2f}")
        write_sts(down, "STS14", name, pairs, gold)
    rows = []
    for split, size in [("tr", 3 * n), ("va", n), ("te", n)]:
        for _ in range(size):
            s = sentence(rng, POS)
            rows.append((split, str(len(s.split())), s))
    write_senteval_probing(root / "probing" / "sentence_length.txt", rows)
    return root


@pytest.fixture
def task_path(tmp_path) -> Path:
    return make_task_path(tmp_path / "data")


class Client:
    """A SentEval client: ``prepare`` builds a vocabulary from the samples, ``batcher`` averages per-word
    pseudo-random vectors (zeros for no known word) and records every batch it is given."""

    def __init__(self, dim: int = 8) -> None:
        self.dim = dim
        self.batches: list[list[list[str]]] = []
        self.prepared: list[tuple[str, list[list[str]]]] = []

    def prepare(self, params, samples) -> None:
        self.prepared.append((params.current_task, samples))
        params.vocab = {w for s in samples for w in s}

    def vector(self, word: str) -> np.ndarray:
        return np.random.default_rng(zlib.crc32(word.encode())).standard_normal(self.dim)

    def batcher(self, params, batch):
        self.batches.append(batch)
        rows = [np.mean([self.vector(w) for w in s if w in params.vocab], 0) if any(w in params.vocab for w in s)
                else np.zeros(self.dim) for s in batch]
        return np.vstack(rows)


@pytest.fixture
def client() -> Client:
    return Client()
