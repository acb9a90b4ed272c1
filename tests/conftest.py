"""Shared fixtures: the project root on the path and a tiny ordered corpus made here."""
from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("PROJECT_ROOT", str(ROOT))

WORDS = ("the cat dog man woman saw ran walked house tree river old young red blue quickly slowly "
         "and but with under over a an is was were sat stood").split()


def write_corpus(folder: Path, n_docs: int, sentences_per_doc: int, seed: int) -> Path:
    """Documents of random short sentences, wrapped into paragraphs like the Gutenberg books."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for d in range(n_docs):
        paragraphs = []
        for _ in range(0, sentences_per_doc, 4):
            sentences = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))).capitalize() + "."
                         for _ in range(4)]
            text = " ".join(sentences)
            paragraphs.append("\n".join(text[i : i + 60] for i in range(0, len(text), 60)))
        (folder / f"doc{d:02d}.txt").write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    write_corpus(root / "train", n_docs=3, sentences_per_doc=40, seed=0)
    write_corpus(root / "valid", n_docs=1, sentences_per_doc=24, seed=1)
    return root

