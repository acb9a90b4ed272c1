"""Resuming in the middle of an epoch: the batches already trained are skipped, the rest come in the same order.

The datamodule's state (saved by Lightning in every checkpoint) records the epoch and how many training
batches of it were done; on resume, the training loader skips that many batches of the epoch's order (which
every sampler here draws from ``seed + epoch``), so the rest of the run equals an uninterrupted one.
"""
from __future__ import annotations

import logging
from typing import Any

import torch
from lightning import LightningDataModule
from torch.utils.data import DataLoader

log = logging.getLogger(__name__)


class SkippingDataLoader(DataLoader):
    """A DataLoader whose first iteration starts ``skip_batches`` batches in (a constructor argument, so that
    Lightning's re-instantiation of loaders, e.g. with a distributed sampler, keeps it). Batches go to pinned
    memory when a GPU is present (faster copies to it), unless ``pin_memory`` says otherwise.

    Each iteration draws its workers' base seed from the loader's own generator, never from torch's global stream:
    a run resumed mid-epoch builds its loader's iterator after its random streams came back from the checkpoint,
    where the uninterrupted run built it at the epoch's start, so a draw from the global stream would shift every
    dropout mask after a resume (nothing the workers run here is random)."""

    def __init__(self, *args: Any, skip_batches: int = 0, **kwargs: Any) -> None:
        kwargs.setdefault("pin_memory", torch.cuda.is_available())
        kwargs.setdefault("generator", torch.Generator().manual_seed(0))
        super().__init__(*args, **kwargs)
        self.skip_batches = int(skip_batches)

    def __iter__(self):
        iterator = super().__iter__()
        skip, self.skip_batches = self.skip_batches, 0
        for _ in range(skip):
            next(iterator)
        return iterator


MIN_BATCHES = 10


class ResumableBatches(LightningDataModule):
    """Mixin for datamodules: checkpoint the position inside the epoch, and skip to it on resume."""

    _resume_at: tuple[int, int] | None = None

    @staticmethod
    def warn_if_small(n_examples: int, batch_size: int, what: str, where: str) -> None:
        """A training set of fewer than ``MIN_BATCHES`` batches trains, but hardly: say so with the numbers."""
        if n_examples < MIN_BATCHES * batch_size:
            log.warning("the training %s has %d %s, fewer than %d batches of %d (%d): add data to %s or lower "
                        "data.batch_size", what.rstrip("s"), n_examples, what, MIN_BATCHES, batch_size,
                        MIN_BATCHES * batch_size, where)

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
        """Batches of ``epoch`` this rank already trained before a resume (0 when starting it afresh); used once.
        ``batches_per_epoch``: the whole epoch's, which data-parallel ranks share (each takes its ceiling share, as the
        distributed sampler pads the epoch to), so an epoch a rank had finished is not skipped whole."""
        if self._resume_at is None:
            return 0
        saved_epoch, done = self._resume_at
        self._resume_at = None
        trainer = getattr(self, "trainer", None)
        ranks = max(1, int(trainer.world_size)) if trainer is not None else 1
        per_rank = -(-batches_per_epoch // ranks)
        return done if saved_epoch == epoch and 0 < done < per_rank else 0
