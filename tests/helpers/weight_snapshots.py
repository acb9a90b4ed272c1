"""A callback that keeps a copy of a decoding objective's encoder and decoder weights at each step."""
from __future__ import annotations

import torch
from lightning import Callback


def _flat(params) -> torch.Tensor:
    return torch.cat([p.detach().flatten().clone() for p in params])


class EncoderAndDecoderSnapshots(Callback):
    """``encoder`` / ``decoder``: the weights before the first optimiser step, then after each step."""

    def __init__(self) -> None:
        self.encoder: list[torch.Tensor] = []
        self.decoder: list[torch.Tensor] = []

    def _take(self, pl_module) -> None:
        self.encoder.append(_flat(pl_module.encoder_parameters()))
        self.decoder.append(_flat(pl_module.objective.decoder.parameters()))

    def on_train_start(self, trainer, pl_module) -> None:
        self._take(pl_module)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self._take(pl_module)


class AllWeightSnapshots(Callback):
    """``weights``: every parameter of the model, flattened, before the first optimiser step, then after each."""

    def __init__(self) -> None:
        self.weights: list[torch.Tensor] = []

    def on_train_start(self, trainer, pl_module) -> None:
        self.weights.append(_flat(pl_module.parameters()))

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.weights.append(_flat(pl_module.parameters()))
