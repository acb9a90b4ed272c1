"""``encoder=transformer``: word vectors (GloVe projected to ``d_model``, or learnt), positions, pre-LayerNorm blocks
and a final LayerNorm, pooled into the sentence vector by the mean or the max over the real tokens, or read off a
learnt first token (``cls``, BERT's [CLS])."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
from torch import nn

from sentence_lab.encoders.base import SentenceEncoder, length_mask, masked_max, masked_mean
from sentence_lab.encoders.buckets import plan_buckets
from sentence_lab.encoders.embedding import WordEmbedding, trim_to_longest
from sentence_lab.encoders.transformer.blocks import PreNormBlock
from sentence_lab.encoders.transformer.positions import Positions

if TYPE_CHECKING:
    from sentence_lab.text import Vocab

POOLINGS = ("mean", "max", "cls")
# Sentences per length bucket: a bucket's matrix products (rows x its longest sentence) stay large.
BUCKET_ROWS = 64


class TransformerEncoder(SentenceEncoder):
    """A transformer encoder, ``output_dim = d_model``.

    Args:
        embed_dim, embedding_init, freeze_embeddings: the word vectors, as every encoder takes them (``glove`` needs
            ``embed_dim=50``); projected to ``d_model`` by a learnt linear map when ``embed_dim != d_model``.
        d_model, num_layers, num_heads, ffn_dim: the blocks' width, depth, heads and feed-forward width.
        dropout: on the input vectors and on each block's two residual branches; attention_dropout: on the attention
            weights.
        positions: ``sinusoidal`` (fixed) or ``learned``, for up to ``max_positions`` positions (``cls`` takes one).
        pooling: ``mean`` or ``max`` over the top block's states of the real tokens, or ``cls`` (the state of a
            learnt first token).
        bucket_rows: a batch of more sentences runs in length buckets of about this many (sorted by length, each
            bucket trimmed to its longest sentence: every sentence gets the vector it gets alone, at the cost of its
            real tokens); ``None``: the whole batch padded to its longest sentence.
    """

    def __init__(self, vocab: Vocab, embed_dim: int = 50, d_model: int = 256, num_layers: int = 4, num_heads: int = 4,
                 ffn_dim: int = 1024, dropout: float = 0.1, attention_dropout: float = 0.1,
                 positions: str = "sinusoidal", max_positions: int = 512, pooling: str = "mean",
                 embedding_init: str = "random", freeze_embeddings: bool = False,
                 bucket_rows: int | None = BUCKET_ROWS) -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"unknown pooling {pooling!r}: use one of {POOLINGS}")
        if num_layers < 1:
            raise ValueError(f"num_layers={num_layers}: a transformer encoder has at least one block")
        self.embedding = WordEmbedding(vocab, embed_dim, embedding_init, freeze_embeddings)
        self.projection = nn.Linear(embed_dim, d_model) if embed_dim != d_model else nn.Identity()
        self.pooling = pooling
        self.cls = nn.Parameter(torch.randn(d_model) * 0.02) if pooling == "cls" else None
        self.positions = Positions(positions, max_positions, d_model)
        self.input_dropout = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(PreNormBlock(d_model, num_heads, ffn_dim, dropout, attention_dropout)
                                    for _ in range(num_layers))
        self.final_norm = nn.LayerNorm(d_model)
        self.output_dim = d_model
        self.bucket_rows = bucket_rows

    def _inputs(self, tokens: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The blocks' input ``[B, T', D]`` (the ``cls`` token first when pooling by it), the lengths counted in it
        and the mask of the positions attention may read (a sentence of no token reads its first position)."""
        x = self.projection(self.embedding(trim_to_longest(tokens, lengths)))
        if self.cls is not None:
            x = torch.cat([self.cls.to(x.dtype).expand(x.size(0), 1, -1), x], dim=1)
            lengths = lengths + 1
        x = self.input_dropout(self.positions(x))
        keys = length_mask(lengths.clamp(min=1), x.size(1))
        return x, lengths, keys

    def _pool(self, states: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        if self.pooling == "cls":
            return states[:, 0]
        pool = masked_mean if self.pooling == "mean" else masked_max
        return pool(states, lengths)

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return self._in_buckets(lambda t, n: [self._top(t, n)], tokens, lengths)[0]

    def layer_vectors(self, tokens: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
        """Layer 0: the input vectors (word vectors with their positions) pooled as the top is (by their mean for
        ``cls``, whose own input is the same for every sentence); then each block's output pooled as the top is, the
        last one through the final LayerNorm (``forward``'s vector)."""
        return self._in_buckets(self._layers, tokens, lengths)

    def _in_buckets(self, run: Callable[[torch.Tensor, torch.Tensor], list[torch.Tensor]], tokens: torch.Tensor,
                    lengths: torch.Tensor) -> list[torch.Tensor]:
        """``run``'s vectors of the batch, computed in length buckets where they save work (``plan_buckets``)."""
        tokens = trim_to_longest(tokens, lengths)
        lengths = lengths.to(tokens.device)
        plan = plan_buckets(lengths, tokens.size(1), self.bucket_rows)
        if plan is None:
            return run(tokens, lengths)
        parts = [run(tokens[rows, :longest], lengths[rows]) for rows, longest in plan.groups]
        return [plan.restore(list(layer)) for layer in zip(*parts)]

    def _top(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        x, lengths, keys = self._inputs(tokens, lengths)
        for block in self.blocks:
            x = block(x, keys)
        return self._pool(self.final_norm(x), lengths)

    def _layers(self, tokens: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
        x, lengths, keys = self._inputs(tokens, lengths)
        out = [masked_mean(x[:, 1:], lengths - 1) if self.cls is not None else self._pool(x, lengths)]
        for k, block in enumerate(self.blocks):
            x = block(x, keys)
            out.append(self._pool(self.final_norm(x) if k == len(self.blocks) - 1 else x, lengths))
        return out
