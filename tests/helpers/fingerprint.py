"""What the first steps of a run did, in a form that is the same on every machine: each batch's token ids
(hashed: exact), each step's loss and each weight tensor's norm (numbers, compared with a tolerance)."""
from __future__ import annotations

import hashlib

import torch
from lightning import Callback


def ids_hash(batch: dict) -> str:
    digest = hashlib.sha256()
    for key in sorted(batch):
        value = batch[key]
        if isinstance(value, torch.Tensor):
            digest.update(key.encode())
            digest.update(value.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


class FirstSteps(Callback):
    """``batches``: a hash of each training batch; ``losses``: each step's loss."""

    def __init__(self) -> None:
        self.batches: list[str] = []
        self.losses: list[float] = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.batches.append(ids_hash(batch))
        self.losses.append(float(outputs["loss"]))
