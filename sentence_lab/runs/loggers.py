"""A resumed run's curves, one per run whatever the logger, each step drawn once.

A stop resumes from the state it saved (``last.ckpt``), so nothing is trained or logged twice; a run resumed from an
older checkpoint by hand (``ckpt_path=<run>/checkpoints/epoch_000.ckpt``) trains and logs again the steps after it.
Before its first training batch, ``ResumedCurves`` writes TensorBoard's restart marker (the event SummaryWriter's
``purge_step`` writes) at the step the run logs next, so TensorBoard hides what the earlier start logged from that step
on. ``ContinuedCSVLogger`` and ``ContinuedMLFlowLogger`` go on with the run's earlier file and MLflow run, where
Lightning's own delete the earlier ``metrics.csv`` and open a new MLflow run at every start."""
from __future__ import annotations

import csv
from typing import Any, cast

from lightning import Callback, LightningModule, Trainer
from lightning.pytorch.loggers import CSVLogger, MLFlowLogger, TensorBoardLogger
from lightning.pytorch.loggers.csv_logs import ExperimentWriter
from tensorboard.compat.proto.event_pb2 import Event, SessionLog

RUN_DIR_TAG = "sentence_lab.run_dir"  # the MLflow tag naming the run directory a run of the tracker belongs to


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


class ContinuedCSVWriter(ExperimentWriter):
    """Lightning's CSV writer, keeping a ``metrics.csv`` it finds (its columns known, the new rows appended) where
    Lightning's deletes it."""

    def _check_log_dir_exists(self) -> None:
        if not self._fs.isfile(self.metrics_file_path):
            return
        with self._fs.open(self.metrics_file_path, "r", newline="") as file:
            self.metrics_keys = sorted(csv.DictReader(file).fieldnames or [])


class ContinuedCSVLogger(CSVLogger):
    """Lightning's ``CSVLogger`` whose ``metrics.csv`` a resumed run continues (``ContinuedCSVWriter``)."""

    @property
    def experiment(self) -> ExperimentWriter:
        if self._experiment is None:
            self._fs.makedirs(self.root_dir, exist_ok=True)
            self._experiment = ContinuedCSVWriter(log_dir=self.log_dir)
        return cast(ExperimentWriter, self._experiment)


class ContinuedMLFlowLogger(MLFlowLogger):
    """Lightning's ``MLFlowLogger`` whose MLflow run is the run directory's (``run_dir``, recorded as a tag): a resumed
    run logs into the MLflow run its earlier start opened, so the tracker shows one run with one curve per metric."""

    def __init__(self, run_dir: str, tags: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(tags={**(tags or {}), RUN_DIR_TAG: str(run_dir)}, **kwargs)
        self._run_dir = str(run_dir)

    @property
    def experiment(self) -> Any:
        if not self._initialized and self._run_id is None:
            self._run_id = self._earlier_run_id()
        return super().experiment

    def _earlier_run_id(self) -> str | None:
        """The newest MLflow run of this experiment tagged with this run directory, if any."""
        found = self._mlflow_client.get_experiment_by_name(self._experiment_name)
        if found is None or found.lifecycle_stage == "deleted":
            return None
        runs = self._mlflow_client.search_runs([found.experiment_id], order_by=["attributes.start_time DESC"])
        return next((r.info.run_id for r in runs if r.data.tags.get(RUN_DIR_TAG) == self._run_dir), None)
