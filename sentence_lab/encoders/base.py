"""The contract every sentence encoder keeps, and the one rule that says which encoders are trainable."""
from __future__ import annotations

import importlib
from typing import Protocol, runtime_checkable

import torch
import torch.nn.functional as F
from torch import nn

from sentence_lab.text import PAD_ID


class SentenceEncoder(nn.Module):
    """Maps right-padded token ids ``[B, T]`` (pad id 0) and lengths ``[B]`` to ``[B, output_dim]``.

    Subclasses are built as ``Encoder(vocab=vocab, **config)`` and must set ``output_dim``.
    Padding must never change a sentence's vector.
    """

    output_dim: int

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:  # pragma: no cover
        raise NotImplementedError


@runtime_checkable
class ReadsLayers(Protocol):
    """An encoder whose every layer can be read (the probing suite's per-layer view): ``layer_vectors(tokens,
    lengths)`` returns ``[B, d_k]`` per layer, bottom first. Layer 0 pools the word vectors the first layer reads
    (the baseline every layer is read against), each later layer pools its states as the encoder pools its top; the
    last entry is ``forward``'s vector. Runs only when asked for (``evaluation.layers=true``); training never calls
    it."""

    def layer_vectors(self, tokens: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]: ...


class NoLayers(ValueError):
    """The encoder (or a channel of it) does not expose its layers: one line naming it."""


def layers_of(encoder: nn.Module, tokens: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
    """``encoder.layer_vectors(tokens, lengths)``; :class:`NoLayers` for an encoder that has none."""
    if not isinstance(encoder, ReadsLayers):
        raise NoLayers(f"{type(encoder).__name__} does not expose its layers: evaluation.layers=true needs a "
                       "BiLSTM, GRU, GatedConvNet, BoW, transformer or multi-channel encoder of them")
    return encoder.layer_vectors(tokens, lengths)


def length_mask(lengths: torch.Tensor, max_len: int) -> torch.Tensor:
    """Boolean ``[B, T]`` mask, True on real tokens."""
    return torch.arange(max_len, device=lengths.device)[None, :] < lengths[:, None]


def max_over(x: torch.Tensor, dim: int) -> torch.Tensor:
    """The maximum along ``dim`` (max-pooling). Without autograd ``amax``, which skips the indices ``max`` computes
    (about 28x faster on a BiLSTM's [128, 18, 512] states on the CPU) and returns the same values; with autograd
    ``max``, whose gradient goes to one position of a tie (``amax`` would split it), as training always had."""
    return x.amax(dim=dim) if not torch.is_grad_enabled() else x.max(dim=dim).values


def masked_max(states: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Max over time ``[B, T, D] -> [B, D]`` of each sentence's real positions (padding read as -inf)."""
    mask = length_mask(lengths, states.size(1)).unsqueeze(-1)
    return max_over(states.masked_fill(~mask, float("-inf")), dim=1)


def masked_mean(states: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Mean over time ``[B, T, D] -> [B, D]`` of each sentence's real positions."""
    mask = length_mask(lengths, states.size(1)).unsqueeze(-1)
    summed = (states * mask).sum(dim=1)
    return summed / lengths.clamp(min=1).unsqueeze(-1).to(device=summed.device, dtype=summed.dtype)


def encode_together(encoder: nn.Module, *sides: tuple[torch.Tensor, torch.Tensor]) -> list[torch.Tensor]:
    """Each side's vectors ``encoder(tokens, lengths)``, from one pass over all their sentences (the sides' token
    ``[B_i, T_i]`` padded to the widest and stacked). The same vectors as a pass per side (an encoder reads no
    padding and nothing of another sentence), for half the passes: an NLI step's premises and hypotheses share
    the recurrent kernel's weight reads, launches and length buckets (docs/results.md, "Training against
    InferSent's own loop")."""
    width = max(tokens.size(1) for tokens, _ in sides)
    tokens = torch.cat([F.pad(tokens, (0, width - tokens.size(1)), value=PAD_ID) for tokens, _ in sides])
    lengths = torch.cat([lengths for _, lengths in sides])
    return list(encoder(tokens, lengths).split([len(side_lengths) for _, side_lengths in sides]))


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
