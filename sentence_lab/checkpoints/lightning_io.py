"""Every checkpoint a run writes goes through ``AtomicCheckpointIO``, Lightning's writer plugin
(``conf/trainer/default.yaml``); every checkpoint it reads is read as data. The file itself, written whole or not at
all and checked before it is read, is ``sentence_lab.checkpoints.files`` (no Lightning there, for the commands that
only read checkpoints)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from lightning.pytorch.plugins.io import TorchCheckpointIO

from sentence_lab.checkpoints.files import atomic_torch_save
from sentence_lab.checkpoints.non_finite_weights import refuse_non_finite
from sentence_lab.checkpoints.received import read_checkpoint


class AtomicCheckpointIO(TorchCheckpointIO):
    """Lightning's checkpoint writer for every checkpoint of a run (``trainer.plugins``): written beside the
    target and renamed over it, so a failed write never replaces a whole checkpoint; weights holding NaN or inf
    are never written (``NonFiniteWeights``); what it reads is read as data (``read_checkpoint``)."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path: str | Path, storage_options: Any | None = None) -> None:
        if storage_options is not None:
            raise TypeError(f"{type(self).__name__} takes no storage_options (got {storage_options!r})")
        refuse_non_finite(checkpoint.get("state_dict", {}), f"checkpoint {path}")
        atomic_torch_save(checkpoint, path)

    def load_checkpoint(self, path: str | Path, map_location: Any | None = None,
                        weights_only: bool | None = None) -> dict[str, Any]:
        """What ``resume`` reads, as data whatever the caller asks (``sentence_lab.checkpoints.received``)."""
        return read_checkpoint(path)
