"""Checkpoints a run leaves besides Lightning's: the model before any step (``init.ckpt``), and how
``evaluate.py`` finds the checkpoint to use in a run directory."""
from __future__ import annotations

from pathlib import Path

import torch
from lightning import Callback, LightningModule, Trainer

from sentence_lab.training.checkpoint_io import by_recency, checkpoint_problem, newest_readable

INIT_NAME = "init.ckpt"
BEST_NAME = "best.ckpt"
LAST_NAME = "last.ckpt"


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
    when the monitored metric improves.)"""

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


class InterruptedCheckpoint(Callback):
    """Writes ``<dirpath>/<filename>.ckpt`` when fitting stops on an exception (Ctrl-C, SIGTERM, a crash), so no
    progress is lost. Lightning's ``OnExceptionCheckpoint`` does the same, but its presence makes every fresh
    ``fit(ckpt_path=None)`` look for a "last" checkpoint to resume and warn twice that there is none."""

    def __init__(self, dirpath: str, filename: str = "interrupted") -> None:
        if not filename:
            raise ValueError("InterruptedCheckpoint: filename cannot be empty")
        self.path = Path(dirpath) / f"{filename}.ckpt"

    def on_exception(self, trainer: Trainer, pl_module: LightningModule, exception: BaseException) -> None:
        trainer.save_checkpoint(str(self.path), weights_only=False)


def _best_recorded_in(last: Path) -> Path | None:
    """The best checkpoint's path that ``ModelCheckpoint`` recorded in ``last``, when that file exists."""
    state = torch.load(last, map_location="cpu", weights_only=False).get("callbacks", {})
    for key, value in state.items():
        best = value.get("best_model_path") if isinstance(value, dict) else None
        if str(key).startswith("ModelCheckpoint") and best and Path(best).is_file():
            return Path(best)
    return None


def resolve_checkpoint(path: str | Path) -> Path:
    """A checkpoint file as it is (refused in one line when unreadable); a run directory (or its
    ``checkpoints/``) gives its best readable checkpoint: ``best.ckpt``, else the best path recorded in
    ``last.ckpt``, else ``last.ckpt``, else the newest other one. Unreadable files are skipped, saying so."""
    path = Path(path)
    if path.is_file():
        problem = checkpoint_problem(path)
        if problem:
            raise ValueError(f"ckpt_path={path}: {problem}: pass a .ckpt written by train.py or its run directory")
        return path
    if not path.is_dir():
        raise FileNotFoundError(f"checkpoint not found: {path}: pass ckpt_path=<run dir> or <run dir>/checkpoints/<file>.ckpt")
    folder = path / "checkpoints" if (path / "checkpoints").is_dir() else path
    last = folder / LAST_NAME
    candidates = [folder / BEST_NAME]
    if checkpoint_problem(last) is None:
        candidates += [p for p in [_best_recorded_in(last)] if p is not None] + [last]
    candidates += [p for p in by_recency(folder) if p not in candidates and p.name != INIT_NAME]
    found = newest_readable([p for p in dict.fromkeys(candidates) if p.is_file()], f"checkpoints of {folder}")
    if found is None:
        raise FileNotFoundError(f"no readable checkpoint in {folder}: pass ckpt_path=<run dir>/checkpoints/<file>.ckpt")
    return found
