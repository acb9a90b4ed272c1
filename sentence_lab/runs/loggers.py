"""A resumed run's TensorBoard curves without a step drawn twice. The interrupted start logged the steps between its
last checkpoint and the interruption; the resumed run trains and logs them again. Before its first training batch,
``ResumedCurves`` writes TensorBoard's restart marker (the event SummaryWriter's ``purge_step`` writes) at the step the
run logs next, so TensorBoard hides what the earlier start logged from that step on."""
from __future__ import annotations

from typing import Any

from lightning import Callback, LightningModule, Trainer
from lightning.pytorch.loggers import TensorBoardLogger
from tensorboard.compat.proto.event_pb2 import Event, SessionLog


class ResumedCurves(Callback):
    """On a resumed fit (``ckpt_path`` given), at the first training batch: every TensorBoard logger's restart marker
    at the step Lightning logs that batch with (its count of batches that stepped, as restored)."""

    def __init__(self) -> None:
        self._done = False

    def on_train_batch_start(self, trainer: Trainer, pl_module: LightningModule, batch: Any, batch_idx: int) -> None:
        if self._done:
            return
        self._done = True
        if trainer.ckpt_path is None or not trainer.is_global_zero:
            return
        step = int(trainer.fit_loop.epoch_loop._batches_that_stepped)
        for logger in trainer.loggers:
            if isinstance(logger, TensorBoardLogger):
                writer = logger.experiment._get_file_writer()  # what SummaryWriter(purge_step=...) writes to
                writer.add_event(Event(step=step, session_log=SessionLog(status=SessionLog.START)))
