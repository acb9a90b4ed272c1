"""Where training really runs: the devices of the parameters, of a batch and of the vectors the objective computes
from it, read inside a training step (Lightning moves the model back to the CPU when fit ends)."""
from __future__ import annotations

import torch
from lightning import Callback


class DeviceProbe(Callback):
    """Records, at the first training batch: ``parameter_devices``, ``batch_devices`` (set of device types), and
    ``vectors_device`` / ``vectors_dtype`` of the objective's sentence vectors under the step's autocast."""

    def __init__(self) -> None:
        self.parameter_devices: set[str] = set()
        self.batch_devices: set[str] = set()
        self.vectors_device: str | None = None
        self.vectors_dtype: torch.dtype | None = None

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if self.vectors_device is not None:
            return
        self.parameter_devices = {p.device.type for p in pl_module.parameters()}
        self.batch_devices = {v.device.type for v in batch.values() if isinstance(v, torch.Tensor)}
        with trainer.precision_plugin.forward_context(), torch.no_grad():
            vectors = pl_module.objective.embed(batch["tokens"], batch["lengths"])
        self.vectors_device, self.vectors_dtype = vectors.device.type, vectors.dtype
