"""BiLSTM encoders: max-pooling over time, or the last forward/backward states."""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from sentence_lab.encoders.base import SentenceEncoder, length_mask, masked_max, masked_mean, max_over
from sentence_lab.encoders.embedding import WordEmbedding, trim_to_longest
from sentence_lab.encoders.rnn import run_rnn, run_rnn_layers

if TYPE_CHECKING:
    from sentence_lab.text import Vocab


class _BiLSTMEncoder(SentenceEncoder):
    """Shared part: embeddings and a bidirectional LSTM (run as on packed sequences, see ``sentence_lab.encoders.rnn``).

    ``output_dim = 2 * hidden_dim``; subclasses decide how to turn the states into one vector. ``packed``: run a
    batch packed, every layer and direction in one kernel call (``None``: on CUDA; ``true`` forces it on the CPU, where
    padded length buckets are faster: what a GPU's step dispatches can then be counted without one).
    """

    def __init__(
        self,
        vocab: Vocab,
        embed_dim: int,
        hidden_dim: int,
        num_layers: int = 1,
        embedding_init: str = "random",
        freeze_embeddings: bool = False,
        dropout: float = 0.0,
        packed: bool | None = None,
    ) -> None:
        super().__init__()
        self.packed = packed
        self.embedding = WordEmbedding(vocab, embed_dim, embedding_init, freeze_embeddings, dropout)
        self.lstm = nn.LSTM(
            embed_dim,
            hidden_dim,
            num_layers=num_layers,
            bidirectional=True,
            batch_first=True,
            dropout=dropout if num_layers > 1 else 0.0,
        )
        self.output_dim = 2 * hidden_dim

    def _run(self, tokens: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Top-layer states ``[B, T, 2H]`` and final states ``[B, 2H]``."""
        return run_rnn(self.lstm, self.embedding(tokens), lengths, packed=self.packed)

    def _run_layers(self, tokens: torch.Tensor, lengths: torch.Tensor
                    ) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]:
        """The word vectors ``[B, T, E]`` and each layer's states and final states, bottom first."""
        words = self.embedding(trim_to_longest(tokens, lengths))
        return words, run_rnn_layers(self.lstm, words, lengths, packed=self.packed)


class BiLSTMMaxEncoder(_BiLSTMEncoder):
    """BiLSTM with max-pooling over time of the top layer's states (padding masked to -inf)."""

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        tokens = trim_to_longest(tokens, lengths)
        states, _ = self._run(tokens, lengths)
        mask = length_mask(lengths, tokens.size(1)).unsqueeze(-1)
        return max_over(states.masked_fill(~mask, float("-inf")), dim=1)

    def layer_vectors(self, tokens: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
        """Max over time of the word vectors, then of each layer's states."""
        words, layers = self._run_layers(tokens, lengths)
        return [masked_max(words, lengths)] + [masked_max(states, lengths) for states, _ in layers]


class BiLSTMLastEncoder(_BiLSTMEncoder):
    """BiLSTM whose vector is [forward state at position length-1; backward state at position 0]."""

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        tokens = trim_to_longest(tokens, lengths)
        _, final = self._run(tokens, lengths)
        return final

    def layer_vectors(self, tokens: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
        """The mean of the word vectors (a last word's vector is no sentence's baseline), then each layer's last
        states."""
        words, layers = self._run_layers(tokens, lengths)
        return [masked_mean(words, lengths)] + [final for _, final in layers]
