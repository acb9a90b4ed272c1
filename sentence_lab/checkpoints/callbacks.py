"""Checkpoints a run leaves besides Lightning's: the model before any step (``init.ckpt``), the point to resume from
(``last.ckpt``: always the newest state the run saved) and the state at a stop or a crash (``interrupted.ckpt``)."""
from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import torch
from lightning import Callback, LightningModule, Trainer
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.utilities.exceptions import SIGTERMException

from sentence_lab.checkpoints.choice import INIT_NAME, LAST_NAME, in_folder
from sentence_lab.checkpoints.files import atomic_same_file
from sentence_lab.checkpoints.non_finite_weights import non_finite_tensors
from sentence_lab.stop_signals import Stopped

# What a stop signal raises inside ``trainer.fit``: ours (``stop_signals.stops_raise``), Lightning's own SIGTERM
# handling, and Python's Ctrl-C where no handler of ours is in place.
STOPS = (Stopped, SIGTERMException, KeyboardInterrupt)

log = logging.getLogger(__name__)


class InitialCheckpoint(Callback):
    """Saves ``<dirpath>/init.ckpt`` before the first training step: the run's "epoch 0" self, with
    the same vocabulary and embeddings as the trained model. Not rewritten when a run resumes."""

    def __init__(self, dirpath: str) -> None:
        self.dirpath = Path(dirpath)

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        # Saving is a collective call: rank 0 decides and every rank follows. A rank deciding on its own would see
        # the file rank 0 has just written when it comes late, skip the save, and leave rank 0 in its barrier.
        wanted = trainer.global_step == 0 and not (self.dirpath / INIT_NAME).exists()
        if trainer.strategy.broadcast(wanted, src=0):
            trainer.save_checkpoint(str(self.dirpath / INIT_NAME), weights_only=False)


class LastCheckpoint(Callback):
    """Rewrites ``<dirpath>/last.ckpt`` at every training-epoch end and, when ``every_n_train_steps`` is
    set, every that many steps: the point to resume from. (Lightning's ``save_last`` rewrites it only
    when the monitored metric improves.) At an epoch's end it saves before the other callbacks' epoch-end work (the
    per-epoch suite): ``save_points_first`` puts it first, so a stop during that work resumes at the epoch's end."""

    def __init__(self, dirpath: str, every_n_train_steps: int | None = None) -> None:
        self.dirpath = Path(dirpath)
        self.every_n_train_steps = every_n_train_steps

    def _save(self, trainer: Trainer) -> None:
        if not trainer.sanity_checking:
            trainer.save_checkpoint(str(self.dirpath / LAST_NAME), weights_only=False)

    def on_train_batch_end(self, trainer: Trainer, *args) -> None:
        if self.every_n_train_steps and trainer.global_step % self.every_n_train_steps == 0:
            self._save(trainer)

    def on_train_epoch_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._save(trainer)


def save_points_first(callbacks: list[Callback]) -> list[Callback]:
    """``callbacks`` with every ``LastCheckpoint`` first (the others in their order): Lightning calls an epoch-end hook
    in list order, and the run's state at the epoch's end must be on disk before the suite's minutes start."""
    return [c for c in callbacks if isinstance(c, LastCheckpoint)] + \
        [c for c in callbacks if not isinstance(c, LastCheckpoint)]


class InterruptedCheckpoint(Callback):
    """Writes ``<dirpath>/<filename>.ckpt`` when fitting stops on an exception (Ctrl-C, SIGTERM, a crash), so no
    progress is lost. Lightning's ``OnExceptionCheckpoint`` does the same, but its presence makes every fresh
    ``fit(ckpt_path=None)`` look for a "last" checkpoint to resume and warn twice that there is none.

    On a stop signal (not a crash) ``last.ckpt`` becomes the same file: the newest state the run saved, wherever the
    stop came (a training step, validation, the per-epoch suite, between them), so ``resume=true`` and
    ``ckpt_path=<run>/checkpoints/last.ckpt`` both go on from it and no step is trained twice. After a crash
    ``last.ckpt`` stays the last save point's (the state at a crash is kept apart, for the user to choose)."""

    def __init__(self, dirpath: str, filename: str = "interrupted") -> None:
        if not filename:
            raise ValueError("InterruptedCheckpoint: filename cannot be empty")
        self.path = Path(dirpath) / f"{filename}.ckpt"

    def on_exception(self, trainer: Trainer, pl_module: LightningModule, exception: BaseException) -> None:
        bad = non_finite_tensors(pl_module.state_dict())
        if bad:  # a step with a finite gradient gave non-finite weights: the run's earlier checkpoints stay the truth
            log.error("%s not written: the weights hold NaN or inf (%s); last.ckpt holds the weights of its last save",
                      self.path.name, ", ".join(bad[:3]))
            return
        trainer.save_checkpoint(str(self.path), weights_only=False)
        if isinstance(exception, STOPS) and trainer.is_global_zero:
            atomic_same_file(self.path, self.path.parent / LAST_NAME)


class BestCheckpoint(ModelCheckpoint):
    """Lightning's ``ModelCheckpoint`` (``best.ckpt``), except that a monitored value that is NaN or inf never
    becomes the best: Lightning ranks a NaN as the worst value, but still saves it when no checkpoint is kept yet.
    Its state is stored under ``ModelCheckpoint``'s key, so runs written before it resume with their best kept."""

    @property
    def state_key(self) -> str:
        return "ModelCheckpoint" + super().state_key.removeprefix(type(self).__qualname__)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """The recorded checkpoint paths are taken by file name in this run's ``checkpoints/`` (where they were
        written, wherever the folder lies now): a run folder copied to another path or machine resumes with its best
        kept, and a recorded path never leads out of the folder (a path with no such file there is dropped)."""
        if self.dirpath is None:
            super().load_state_dict(state_dict)
            return
        folder = Path(self.dirpath)

        def here(recorded: Any) -> str:
            found = in_folder(recorded, folder)
            return str(found) if found is not None else ""

        state = dict(state_dict, dirpath=self.dirpath, best_model_path=here(state_dict.get("best_model_path")),
                     kth_best_model_path=here(state_dict.get("kth_best_model_path")),
                     last_model_path=here(state_dict.get("last_model_path")))
        kept = {here(path): score for path, score in (state_dict.get("best_k_models") or {}).items()}
        state["best_k_models"] = {path: score for path, score in kept.items() if path}
        if not state["best_model_path"]:
            state["best_model_score"] = None
        super().load_state_dict(state)

    def check_monitor_top_k(self, trainer: Trainer, current: torch.Tensor | None = None) -> bool:
        if current is not None and not math.isfinite(float(current)):
            log.warning("%s = %s: not a candidate for %s", self.monitor, float(current), self.filename or "best")
            return False
        return super().check_monitor_top_k(trainer, current)
