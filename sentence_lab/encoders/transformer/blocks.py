"""A pre-LayerNorm transformer block (Xiong et al. 2020, "On Layer Normalization in the Transformer Architecture":
``x + Attention(LN(x))``, then ``x + FFN(LN(x))``), its attention computed by ``scaled_dot_product_attention`` with
the padding masked out of the keys, so no position reads a pad and a sentence's states do not depend on its batch."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class SelfAttention(nn.Module):
    """Multi-head self-attention: one projection to queries, keys and values, ``num_heads`` heads of
    ``d_model / num_heads``, the output projected back; ``attention_dropout`` on the attention weights in training."""

    def __init__(self, d_model: int, num_heads: int, attention_dropout: float = 0.0) -> None:
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not a multiple of num_heads={num_heads}: pick d_model = "
                             "num_heads x the head size, e.g. encoder.d_model=256 encoder.num_heads=4")
        self.num_heads = num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.attention_dropout = attention_dropout

    def forward(self, x: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """``x [B, T, D]``; ``keys [B, T]`` True where a position may be attended to (a real token)."""
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.num_heads, d // self.num_heads).permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(q, k, v, attn_mask=keys[:, None, None, :],
                                                  dropout_p=self.attention_dropout if self.training else 0.0)
        return self.out(attended.transpose(1, 2).reshape(b, t, d))


class PreNormBlock(nn.Module):
    """``x + dropout(Attention(LN(x)))``, then ``x + dropout(FFN(LN(x)))`` with a GELU feed-forward of ``ffn_dim``."""

    def __init__(self, d_model: int, num_heads: int, ffn_dim: int, dropout: float = 0.0,
                 attention_dropout: float = 0.0) -> None:
        super().__init__()
        self.attention_norm = nn.LayerNorm(d_model)
        self.attention = SelfAttention(d_model, num_heads, attention_dropout)
        self.ffn_norm = nn.LayerNorm(d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, ffn_dim), nn.GELU(), nn.Linear(ffn_dim, d_model))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        x = x + self.dropout(self.attention(self.attention_norm(x), keys))
        return x + self.dropout(self.ffn(self.ffn_norm(x)))
