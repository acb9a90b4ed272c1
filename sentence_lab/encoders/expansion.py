"""Vocabulary expansion (Kiros et al. 2015, section 2.2; used by skip-thought and Quick-Thoughts).

After training, a linear map ``W`` from pre-trained word vectors (GloVe 6B 50d here) into a learned
embedding space is fit by least squares on the words both know; at encode time every word the
training vocabulary lacks but GloVe knows gets ``glove(word) @ W`` instead of ``<unk>``. Each
``WordEmbedding`` of a model (f and g of Quick-Thoughts, every channel) gets its own map.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from sentence_lab.text import SPECIALS, Vocab
from sentence_lab.text.glove import glove_row, glove_words, load_glove


@dataclass
class ExpansionFit:
    """The map of one embedding table: ``W [pretrained_dim, embed_dim]``, the words it was fit on
    and the relative residual ``||XW - Y|| / ||Y||`` of that fit (0 when the table is the pre-trained one)."""

    weight: np.ndarray
    shared_words: int
    relative_residual: float


def shared_rows(vocab: Vocab, index: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """(vocabulary ids, pre-trained rows) of the non-special vocabulary words the pre-trained vectors know."""
    ids, rows = [], []
    for i, word in enumerate(vocab.itos):
        hit = None if word in SPECIALS else glove_row(index, word)
        if hit is not None:
            ids.append(i)
            rows.append(hit)
    return np.asarray(ids, dtype=np.int64), np.asarray(rows, dtype=np.int64)


def fit_linear_map(source: np.ndarray, target: np.ndarray) -> ExpansionFit:
    """Least-squares ``W`` with ``source @ W ~ target`` (no bias, un-regularised, as Kiros et al.)."""
    if len(source) < source.shape[1]:
        raise ValueError(f"vocabulary expansion needs at least {source.shape[1]} words known to both the model and "
                         f"the pre-trained vectors, found {len(source)}: train on a larger vocabulary")
    source64, target64 = source.astype(np.float64), target.astype(np.float64)
    weight, *_ = np.linalg.lstsq(source64, target64, rcond=None)
    residual = np.linalg.norm(source64 @ weight - target64) / max(np.linalg.norm(target64), 1e-12)
    return ExpansionFit(weight.astype(np.float32), len(source), float(residual))


def expanded_vocab(vocab: Vocab, pretrained_words: tuple[str, ...]) -> tuple[Vocab, list[int]]:
    """The vocabulary followed by every pre-trained word it lacks, and those words' pre-trained rows."""
    known = vocab.stoi
    extra_words, extra_rows = [], []
    for row, word in enumerate(pretrained_words):
        if word not in known:
            extra_words.append(word)
            extra_rows.append(row)
    return Vocab(list(vocab.itos) + extra_words), extra_rows


def expand_embeddings(embeddings: list, vocab: Vocab) -> tuple[Vocab, list[ExpansionFit]]:
    """Fit one map per ``WordEmbedding`` and give each the rows of the words ``vocab`` lacks.

    Returns the expanded vocabulary (ids below ``len(vocab)`` unchanged) and each table's fit.
    """
    index, vectors = load_glove()
    ids, rows = shared_rows(vocab, index)
    bigger, extra_rows = expanded_vocab(vocab, glove_words())
    source_extra = vectors[extra_rows]
    fits = []
    for embedding in embeddings:
        table = embedding.weight.detach().float().cpu().numpy()
        fit = fit_linear_map(vectors[rows], table[ids])
        extra = torch.from_numpy(source_extra @ fit.weight)
        embedding.set_extra_rows(extra.to(embedding.weight.device, embedding.weight.dtype))
        fits.append(fit)
    return bigger, fits
