"""Resuming in the middle of an epoch: the batches already trained are skipped, the rest come in the same order.

The datamodule's state (saved by Lightning in every checkpoint) records the epoch and how many training
batches of it were done; on resume, the training loader skips that many batches of the epoch's order (which
every sampler here draws from ``seed + epoch``), so the rest of the run equals an uninterrupted one.
"""
from __future__ import annotations

from typing import Any

from lightning import LightningDataModule
from torch.utils.data import DataLoader


class SkippingDataLoader(DataLoader):
    """A DataLoader whose first iteration starts ``skip_batches`` batches in (a constructor argument, so that
    Lightning's re-instantiation of loaders, e.g. with a distributed sampler, keeps it)."""

    def __init__(self, *args: Any, skip_batches: int = 0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.skip_batches = int(skip_batches)

    def __iter__(self):
        iterator = super().__iter__()
        skip, self.skip_batches = self.skip_batches, 0
        for _ in range(skip):
            next(iterator)
        return iterator


class ResumableBatches(LightningDataModule):
    """Mixin for datamodules: checkpoint the position inside the epoch, and skip to it on resume."""

    _resume_at: tuple[int, int] | None = None

    def state_dict(self) -> dict[str, Any]:
        trainer = getattr(self, "trainer", None)
        if trainer is None:
            return {}
        loop = trainer.fit_loop.epoch_loop
        return {"epoch": int(trainer.current_epoch), "batches_done": int(loop.batch_progress.current.processed)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if "batches_done" in state_dict:
            self._resume_at = (int(state_dict["epoch"]), int(state_dict["batches_done"]))

    def skip_for_epoch(self, epoch: int, batches_per_epoch: int) -> int:
        """Batches of ``epoch`` already trained before a resume (0 when starting it afresh); used once."""
        if self._resume_at is None:
            return 0
        saved_epoch, done = self._resume_at
        self._resume_at = None
        return done if saved_epoch == epoch and 0 < done < batches_per_epoch else 0
