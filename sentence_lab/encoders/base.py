"""The contract every sentence encoder keeps, and the one rule that says which encoders are trainable."""
from __future__ import annotations

import importlib

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


def max_over(x: torch.Tensor, dim: int) -> torch.Tensor:
    """The maximum along ``dim`` (max-pooling). Without autograd ``amax``, which skips the indices ``max`` computes
    (about 28x faster on a BiLSTM's [128, 18, 512] states on the CPU) and returns the same values; with autograd
    ``max``, whose gradient goes to one position of a tie (``amax`` would split it), as training always had."""
    return x.amax(dim=dim) if not torch.is_grad_enabled() else x.max(dim=dim).values


def encoder_class(target: str) -> type:
    """The class an encoder config's ``_target_`` names; one line naming it when it cannot be imported."""
    module, _, name = str(target).rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as err:
        raise ValueError(f"encoder _target_ {target!r} cannot be imported ({err}): pick one of conf/encoder/*.yaml"
                         ) from None


def is_trainable(target: str) -> bool:
    """The one rule: an encoder config is trainable when its ``_target_`` is a :class:`SentenceEncoder` (token ids
    in, vectors out, gradients through). Anything else (``bow_glove``, ``minilm``, ``precomputed``, ...) is an
    evaluation-only text encoder: ``evaluate.py`` takes it, ``train.py`` refuses it."""
    cls = encoder_class(target)
    return isinstance(cls, type) and issubclass(cls, SentenceEncoder)
