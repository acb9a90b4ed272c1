"""Gated convolutional encoder: word + position embeddings, stacked GLU convolutions, max over time."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

from sentence_lab.encoders.base import SentenceEncoder, length_mask, max_over
from sentence_lab.encoders.embedding import WordEmbedding, trim_to_longest

if TYPE_CHECKING:
    from sentence_lab.text import Vocab


class GatedConvLayer(nn.Module):
    """Temporal convolution to ``2 * out_channels`` followed by a GLU; residual when in == out."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.conv = nn.Conv1d(in_channels, 2 * out_channels, kernel_size, padding="same")
        self.residual = in_channels == out_channels

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``x`` is ``[B, C, T]``, ``mask`` ``[B, 1, T]`` (True on real tokens)."""
        x = x * mask  # padding must look exactly like the convolution's own zero padding
        out = F.glu(self.conv(self.dropout(x)), dim=1)
        if self.residual:
            out = (out + x) * math.sqrt(0.5)
        return out


class GatedConvEncoder(SentenceEncoder):
    """Stack of ``num_layers`` gated convolutions, then max over real positions; ``output_dim = channels``.

    Learned positional embeddings cover ``max_positions`` tokens; longer sentences are an error.
    """

    def __init__(
        self,
        vocab: Vocab,
        embed_dim: int,
        channels: int,
        num_layers: int,
        kernel_size: int = 3,
        max_positions: int = 256,
        embedding_init: str = "random",
        freeze_embeddings: bool = False,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"gatedconv needs num_layers >= 1, got {num_layers}")
        self.embedding = WordEmbedding(vocab, embed_dim, embedding_init, freeze_embeddings, dropout)
        self.max_positions = max_positions
        self.positions = nn.Embedding(max_positions, embed_dim)
        nn.init.normal_(self.positions.weight, std=0.1)
        self.layers = nn.ModuleList(
            GatedConvLayer(embed_dim if i == 0 else channels, channels, kernel_size, dropout)
            for i in range(num_layers)
        )
        self.output_dim = channels

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return self._blocks(tokens, lengths, every_block=False)[-1]

    def layer_vectors(self, tokens: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
        """Max over time of the input the first block reads (word + position vectors), then of each block's output."""
        return self._blocks(tokens, lengths, every_block=True)

    def _blocks(self, tokens: torch.Tensor, lengths: torch.Tensor, every_block: bool) -> list[torch.Tensor]:
        """The max-pooled output of the last block (``every_block``: of the input and of every block)."""
        longest = int(lengths.max())
        if longest > self.max_positions:
            raise ValueError(
                f"sentence of {longest} tokens exceeds the gatedconv encoder's max_positions={self.max_positions}: "
                "raise encoder.max_positions or truncate sentences"
            )
        tokens = trim_to_longest(tokens, lengths)
        positions = torch.arange(tokens.size(1), device=tokens.device)
        x = self.embedding(tokens) + self.positions(positions)[None]
        x = x.transpose(1, 2)  # [B, C, T]
        mask = length_mask(lengths, tokens.size(1)).unsqueeze(1)
        pooled = [max_over(x.masked_fill(~mask, float("-inf")), dim=2)] if every_block else []
        for layer in self.layers:
            x = layer(x, mask)
            if every_block:
                pooled.append(max_over(x.masked_fill(~mask, float("-inf")), dim=2))
        return pooled if every_block else [max_over(x.masked_fill(~mask, float("-inf")), dim=2)]
