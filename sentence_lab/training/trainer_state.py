"""What Lightning's ``Trainer`` is given at run time by its connectors (``datamodule``, ``callbacks``,
``fast_dev_run``, ``log_every_n_steps``), read here with their types: the class declares none of them (its
connectors set them on the instance), so a type checker cannot see them on a ``Trainer``."""
from __future__ import annotations

from typing import Any

from lightning import Callback, Trainer


def datamodule_of(trainer: Trainer) -> Any:
    """The data module ``fit``, ``validate`` or ``test`` was given (None before any)."""
    return getattr(trainer, "datamodule", None)


def callbacks_of(trainer: Trainer) -> list[Callback]:
    """Every callback of the run, Lightning's own included."""
    return list(getattr(trainer, "callbacks"))  # noqa: B009 - set by Lightning's callback connector


def fast_dev_run_of(trainer: Trainer) -> int | bool:
    """``Trainer(fast_dev_run=...)``: a number of batches, or False."""
    return getattr(trainer, "fast_dev_run")  # noqa: B009 - set by Lightning's debugging connector


def log_every_n_steps_of(trainer: Trainer) -> int:
    """``Trainer(log_every_n_steps=...)``."""
    return int(getattr(trainer, "log_every_n_steps"))  # noqa: B009 - set by Lightning's logger connector
