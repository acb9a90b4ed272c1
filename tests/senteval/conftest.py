"""A SentEval data folder as SentEval lays it out (``downstream/``, ``probing/``), written here, and a toy client."""
from __future__ import annotations

import random
import zlib
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.senteval_tree import FILLER, NEG, POS, write_lines

STS14 = ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news")


def sentence(rng: random.Random, cue: list[str]) -> str:
    words = rng.sample(FILLER, rng.randint(1, 6)) + [rng.choice(cue)]
    rng.shuffle(words)
    return " ".join(words)




def make_task_path(root: Path, n: int = 30, seed: int = 0) -> Path:
    """MR, TREC, SICK, STS14 under ``downstream/`` and Length under ``probing/``, in SentEval's file formats."""
    rng = random.Random(seed)
    down = root / "downstream"
    write_lines(down / "MR" / "rt-polarity.pos", [sentence(rng, POS) for _ in range(n)], "latin-1")
    write_lines(down / "MR" / "rt-polarity.neg", [sentence(rng, NEG) for _ in range(n)], "latin-1")
    coarse = ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]
    cues = [["abbr"], ["why"], ["what"], ["who"], ["where"], ["many"]]
    for name, size in [("train_5500.label", 2 * n), ("TREC_10.label", n)]:
        write_lines(down / "TREC" / name, [f"{coarse[i % 6]}:x {sentence(rng, cues[i % 6])} ?" for i in range(size)],
                    "latin-1")
    judgments = ["CONTRADICTION", "NEUTRAL", "ENTAILMENT"]
    for name, size in [("SICK_train.txt", n), ("SICK_trial.txt", n // 2), ("SICK_test_annotated.txt", n // 2)]:
        lines = ["pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"]
        for i in range(size):
            a = sentence(rng, POS)
            b = a if i % 3 == 2 else sentence(rng, NEG if i % 3 == 0 else FILLER)
            lines.append(f"{i}\t{a}\t{b}\t{1 + 2 * (i % 3) + rng.random() * 0.9:.1f}\t{judgments[i % 3]}")
        write_lines(down / "SICK" / name, lines)
    for name in STS14:
        inputs, gold = [], []
        for i in range(9):
            a = sentence(rng, POS)
            b = a if i % 2 else sentence(rng, NEG)
            inputs.append(f"{a}\t{b}")
            gold.append("" if i == 4 else f"{(5.0 if i % 2 else 1.0) - rng.random():.2f}")
        write_lines(down / "STS" / "STS14-en-test" / f"STS.input.{name}.txt", inputs)
        write_lines(down / "STS" / "STS14-en-test" / f"STS.gs.{name}.txt", gold)
    lines = []
    for split, size in [("tr", 3 * n), ("va", n), ("te", n)]:
        for _ in range(size):
            s = sentence(rng, POS)
            lines.append(f"{split}\t{len(s.split())}\t{s}")
    write_lines(root / "probing" / "sentence_length.txt", lines)
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
