"""Bag of words: mean or sum of the word vectors of the real tokens."""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from sentence_lab.encoders.base import SentenceEncoder, length_mask
from sentence_lab.encoders.embedding import WordEmbedding, trim_to_longest

if TYPE_CHECKING:
    from sentence_lab.text import Vocab

POOLINGS = ("mean", "sum")


class BagOfWordsEncoder(SentenceEncoder):
    """Averages (``pooling=mean``) or sums (``pooling=sum``) word vectors; ``output_dim = embed_dim``."""

    def __init__(
        self,
        vocab: Vocab,
        embed_dim: int,
        pooling: str = "mean",
        embedding_init: str = "random",
        freeze_embeddings: bool = False,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"unknown pooling {pooling!r}: use one of {POOLINGS}")
        self.embedding = WordEmbedding(vocab, embed_dim, embedding_init, freeze_embeddings, dropout)
        self.pooling = pooling
        self.output_dim = embed_dim

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        tokens = trim_to_longest(tokens, lengths)
        mask = length_mask(lengths, tokens.size(1)).unsqueeze(-1)
        summed = (self.embedding(tokens) * mask).sum(dim=1)
        if self.pooling == "sum":
            return summed
        return summed / lengths.clamp(min=1).unsqueeze(-1).to(summed.dtype)

    def layer_vectors(self, tokens: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
        """One layer, the pooled word vectors: the vector itself."""
        return [self(tokens, lengths)]
