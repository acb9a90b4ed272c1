"""GRU encoder: the final hidden state (both directions concatenated when bidirectional)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from sentence_lab.encoders.base import SentenceEncoder, masked_mean
from sentence_lab.encoders.embedding import WordEmbedding, trim_to_longest
from sentence_lab.encoders.rnn import run_rnn, run_rnn_layers

if TYPE_CHECKING:
    from sentence_lab.text import Vocab


GRU_INITS = ("default", "xavier")


def xavier_gru_(gru: nn.GRU) -> None:
    """Quick-Thoughts' GRU initialisation (Logeswaran & Lee 2018, section 4.3): weights uniform Xavier
    (per gate block), gate biases 1 (reset and update gates; the candidate's bias 0).

    PyTorch adds two biases in each gate, ``b_ih + b_hh``: the 1 goes into ``b_ih`` alone and ``b_hh`` is 0, so
    the effective gate bias is 1, not 2."""
    hidden = gru.hidden_size
    for name, param in gru.named_parameters():
        with torch.no_grad():
            if name.startswith("weight"):
                for block in param.split(hidden, dim=0):  # reset, update, new
                    nn.init.xavier_uniform_(block)
            else:
                param.zero_()
                if name.startswith("bias_ih"):
                    param[: 2 * hidden] = 1.0


class GRUEncoder(SentenceEncoder):
    """GRU (run as on packed sequences, see ``sentence_lab.encoders.rnn``);
    ``output_dim = hidden_dim * (2 if bidirectional else 1)``.

    The vector is the top layer's state after the last real token (and, when bidirectional, the
    backward state after reading back to the first token). ``packed``: as the BiLSTMs' (``None``: packed on CUDA).
    """

    def __init__(
        self,
        vocab: Vocab,
        embed_dim: int,
        hidden_dim: int,
        num_layers: int = 1,
        bidirectional: bool = False,
        embedding_init: str = "random",
        freeze_embeddings: bool = False,
        dropout: float = 0.0,
        weight_init: str = "default",
        packed: bool | None = None,
    ) -> None:
        super().__init__()
        self.packed = packed
        if weight_init not in GRU_INITS:
            raise ValueError(f"unknown encoder.weight_init {weight_init!r}: use one of {GRU_INITS}")
        self.embedding = WordEmbedding(vocab, embed_dim, embedding_init, freeze_embeddings, dropout)
        self.gru = nn.GRU(
            embed_dim,
            hidden_dim,
            num_layers=num_layers,
            bidirectional=bidirectional,
            batch_first=True,
            dropout=dropout if num_layers > 1 else 0.0,
        )
        self.num_directions = 2 if bidirectional else 1
        self.output_dim = hidden_dim * self.num_directions
        if weight_init == "xavier":
            xavier_gru_(self.gru)

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        tokens = trim_to_longest(tokens, lengths)
        _, final = run_rnn(self.gru, self.embedding(tokens), lengths, packed=self.packed)
        return final

    def layer_vectors(self, tokens: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
        """The mean of the word vectors (a last word's vector is no sentence's baseline), then each layer's last
        states."""
        words = self.embedding(trim_to_longest(tokens, lengths))
        layers = run_rnn_layers(self.gru, words, lengths, packed=self.packed)
        return [masked_mean(words, lengths)] + [final for _, final in layers]
