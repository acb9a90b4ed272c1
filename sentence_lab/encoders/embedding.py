"""The word-embedding layer every encoder starts with, plus the keyword args they all share."""
from __future__ import annotations

import logging
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from sentence_lab.text import PAD_ID
from sentence_lab.text.glove import GLOVE_DIM, glove_matrix_for

if TYPE_CHECKING:
    from sentence_lab.text import Vocab

log = logging.getLogger(__name__)

RANDOM_INIT_RANGE = 0.1


def _random_init(words: list[str], embed_dim: int) -> torch.Tensor:
    """Uniform U[-0.1, 0.1] rows."""
    return torch.empty(len(words), embed_dim).uniform_(-RANDOM_INIT_RANGE, RANDOM_INIT_RANGE)


def _glove_init(words: list[str], embed_dim: int) -> torch.Tensor:
    """Random rows, overwritten by GloVe 6B 50d for every word GloVe knows."""
    if embed_dim != GLOVE_DIM:
        raise ValueError(
            f"embedding_init=glove needs embed_dim={GLOVE_DIM} (GloVe 6B is {GLOVE_DIM}-d) but embed_dim={embed_dim}: "
            f"override encoder.embed_dim={GLOVE_DIM}"
        )
    random_rows = _random_init(words, embed_dim).numpy()
    matrix, found = glove_matrix_for(words, fallback=random_rows)
    log.info("GloVe init: %d of %d vocabulary words found in GloVe 6B %dd", found, len(words), GLOVE_DIM)
    return torch.from_numpy(matrix)


def word_keyed_rows(words: list[str], embed_dim: int, seed: int, key: str = "") -> np.ndarray:
    """U[-0.1, 0.1] rows, each drawn from ``seed``, ``key`` and its own word alone, so a word's row does not
    depend on the other words of the vocabulary or on their order."""
    salt = zlib.crc32(key.encode())
    return np.stack([np.random.default_rng([seed, salt, zlib.crc32(word.encode())])
                     .uniform(-RANDOM_INIT_RANGE, RANDOM_INIT_RANGE, embed_dim) for word in words]).astype(np.float32)


EMBEDDING_INITS: dict[str, Callable[[list[str], int], torch.Tensor]] = {
    "random": _random_init,
    "glove": _glove_init,
}


class WordEmbedding(nn.Module):
    """Token ids ``[B, T]`` -> vectors ``[B, T, embed_dim]``; the pad row is zero and never trained.

    ``embedding_init`` is ``random`` (U[-0.1, 0.1]) or ``glove`` (GloVe 6B 50d where known, needs
    ``embed_dim=50``); ``freeze_embeddings`` keeps the table fixed; ``dropout`` applies to the output.
    Only ``vocab.itos`` is read, so a vocabulary that Hydra turned into a DictConfig (which happens
    with ``instantiate(cfg, vocab=vocab)``) works too; ``instantiate(cfg, _partial_=True)(vocab=vocab)``
    avoids that slow conversion.
    """

    def __init__(
        self,
        vocab: Vocab,
        embed_dim: int,
        embedding_init: str = "random",
        freeze_embeddings: bool = False,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if embedding_init not in EMBEDDING_INITS:
            raise ValueError(
                f"unknown embedding_init {embedding_init!r}: use one of {sorted(EMBEDDING_INITS)}"
            )
        weight = EMBEDDING_INITS[embedding_init](list(vocab.itos), embed_dim).float()
        weight[PAD_ID] = 0.0
        self.embed_dim = embed_dim
        self.embedding_init = embedding_init
        self.embedding = nn.Embedding.from_pretrained(weight, freeze=freeze_embeddings, padding_idx=PAD_ID)
        self.dropout = nn.Dropout(dropout)
        # Rows for ids >= the vocabulary size, set by vocabulary expansion at encode time; never saved.
        self.register_buffer("extra_rows", torch.zeros(0, embed_dim), persistent=False)

    @property
    def weight(self) -> torch.Tensor:
        return self.embedding.weight

    def redraw_random_rows(self, words: list[str], seed: int, key: str = "") -> None:
        """Replace the rows the init drew at random (every row for ``random``, the words GloVe lacks for ``glove``)
        by ``word_keyed_rows``: an untrained encoder then gives a word the same vector whatever else its
        vocabulary holds."""
        if len(words) != self.embedding.num_embeddings:
            raise ValueError(f"{len(words)} words for a table of {self.embedding.num_embeddings} rows")
        rows = word_keyed_rows(words, self.embed_dim, seed, key)
        if self.embedding_init == "glove":
            rows, _ = glove_matrix_for(words, fallback=rows)
        rows[PAD_ID] = 0.0
        with torch.no_grad():
            self.embedding.weight.copy_(torch.from_numpy(rows))

    def set_extra_rows(self, rows: torch.Tensor) -> None:
        """Vectors for ids ``num_rows, num_rows + 1, ...`` (see ``sentence_lab.encoders.expansion``)."""
        self.extra_rows = rows.detach().to(self.weight.device, self.weight.dtype)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        n_base = self.embedding.num_embeddings
        if self.extra_rows.numel() == 0:
            return self.dropout(self.embedding(tokens))
        beyond = tokens >= n_base
        out = self.embedding(tokens.masked_fill(beyond, PAD_ID))
        if beyond.any():
            out[beyond] = self.extra_rows[tokens[beyond] - n_base]
        return self.dropout(out)


def trim_to_longest(tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Drop padding columns beyond the longest sentence in the batch."""
    return tokens[:, : int(lengths.max())] if tokens.size(1) else tokens
