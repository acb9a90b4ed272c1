"""Where each token is: the fixed sinusoids of Vaswani et al. 2017 (section 3.5) or a learnt vector per position."""
from __future__ import annotations

import math

import torch
from torch import nn

POSITIONS = ("sinusoidal", "learned")


def sinusoids(max_positions: int, d_model: int) -> torch.Tensor:
    """``PE[pos, 2i] = sin(pos / 10000^(2i/d))``, ``PE[pos, 2i+1] = cos(pos / 10000^(2i/d))``, ``[max_positions, d]``
    (Vaswani et al. 2017, section 3.5)."""
    position = torch.arange(max_positions, dtype=torch.float32)[:, None]
    rate = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    table = torch.zeros(max_positions, d_model)
    table[:, 0::2] = torch.sin(position * rate)
    table[:, 1::2] = torch.cos(position * rate)[:, : d_model // 2]
    return table


class Positions(nn.Module):
    """``[B, T, D]`` plus each position's vector; a sentence longer than ``max_positions`` is refused in one line."""

    def __init__(self, kind: str, max_positions: int, d_model: int) -> None:
        super().__init__()
        if kind not in POSITIONS:
            raise ValueError(f"unknown positions {kind!r}: use one of {POSITIONS}")
        self.kind, self.max_positions = kind, int(max_positions)
        if kind == "learned":
            self.table = nn.Parameter(torch.randn(self.max_positions, d_model) * 0.02)
        else:
            self.register_buffer("table", sinusoids(self.max_positions, d_model), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.size(1) > self.max_positions:
            raise ValueError(f"a sentence of {x.size(1)} positions is longer than encoder.max_positions="
                             f"{self.max_positions}: raise it, or cap the data's sentence length")
        return x + self.table[: x.size(1)].to(x.dtype)
