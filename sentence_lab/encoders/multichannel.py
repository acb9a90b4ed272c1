"""Several encoders over the same tokens, their vectors concatenated: MultiChannel-QT (Logeswaran & Lee
2018, section 4.3: one channel reads fixed pre-trained word vectors, the other tunable ones learnt from
scratch; with different inputs the two "discover less redundant features")."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig
from torch import nn

from sentence_lab.encoders.base import NoLayers, SentenceEncoder, layers_of
from sentence_lab.text.config_values import plain

if TYPE_CHECKING:
    from sentence_lab.text import Vocab


class MultiChannelEncoder(SentenceEncoder):
    """``channels`` maps a name to an encoder config (``_target_`` plus its arguments); every channel gets
    the model's vocabulary; ``output_dim`` is the sum of the channels' widths, in the given order."""

    def __init__(self, vocab: Vocab, channels: Mapping[str, Mapping]) -> None:
        super().__init__()
        if not channels:
            raise ValueError("a multi-channel encoder needs at least one channel: set encoder.channels")
        built = {}
        for name, channel in channels.items():
            cfg: dict[str, Any] = plain(channel) if isinstance(channel, DictConfig) else dict(channel)
            if "_target_" not in cfg:
                raise ValueError(f"encoder.channels.{name} has no _target_: give it an encoder class, "
                                 "e.g. sentence_lab.encoders.bilstm.BiLSTMMaxEncoder")
            built[name] = instantiate(cfg, _partial_=True)(vocab=vocab)
        self.channels = nn.ModuleDict(built)
        self.output_dim = sum(int(cast(SentenceEncoder, c).output_dim) for c in self.channels.values())

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return torch.cat([channel(tokens, lengths) for channel in self.channels.values()], dim=1)

    def layer_vectors(self, tokens: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
        """Layer k of every channel, concatenated in the channels' order (channels of one depth only)."""
        per_channel = [layers_of(channel, tokens, lengths) for channel in self.channels.values()]
        depths = {name: len(layers) for name, layers in zip(self.channels, per_channel)}
        if len(set(depths.values())) > 1:
            raise NoLayers(f"the channels have different depths ({depths}): layers of a multi-channel encoder are "
                           "read only when its channels have as many layers each")
        return [torch.cat(layer, dim=1) for layer in zip(*per_channel)]
