"""The contract every sentence encoder keeps."""
from __future__ import annotations

import torch
from torch import nn


class SentenceEncoder(nn.Module):
    """Maps right-padded token ids ``[B, T]`` (pad id 0) and lengths ``[B]`` to ``[B, output_dim]``.

    Subclasses are built as ``Encoder(vocab=vocab, **config)`` and must set ``output_dim``.
    Padding must never change a sentence's vector.
    """

    output_dim: int

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:  # pragma: no cover
        raise NotImplementedError


def length_mask(lengths: torch.Tensor, max_len: int) -> torch.Tensor:
    """Boolean ``[B, T]`` mask, True on real tokens."""
    return torch.arange(max_len, device=lengths.device)[None, :] < lengths[:, None]
