"""A step whose loss or gradient is not finite is skipped, counted and logged; too many in a row stop the run.

The policy, as fairseq and Hugging Face's Trainer have it: one NaN or inf never reaches the weights. The optimiser
step of such a batch is skipped (its gradients are dropped before clipping and the step, so SGD, Adam and their
moments do not move), the step still counts towards the planned work (the learning-rate schedule goes on), the
batch's metrics are left out of the logged means
(``sentence_lab.objectives.metrics.RunningMeans(skip_non_finite=True)``), and
``train/skipped_steps`` is logged. ``max_in_a_row`` skipped steps in a row are tolerated; one more stops the run with
``NonFiniteTraining``, one line naming the step, exit code 1, ``interrupted.ckpt`` from the last finite weights and
``run_status.json`` saying why (``sentence_lab.runs.run``). A run that skipped more than ``max_share`` of its steps in
all (never 11 in a row, but 14 of 16) ends with ``NonFiniteShare``: exit code 1, ``complete: false``.

Under ``trainer.precision=16-mixed`` the gradient scaler already skips the steps whose scaled gradients overflow and
lowers its scale: those are counted apart (``train/scaler_skipped_steps``), not towards the limit. Under data
parallelism the gradients are all-reduced before this check and the loss's verdict is reduced too, so every rank
skips the same steps and stops at the same one.
"""
from __future__ import annotations

import logging
from typing import Any

import torch
from lightning import Callback, LightningModule, Trainer

from sentence_lab.training.non_finite_checks import NonFiniteShare, NonFiniteTraining

log = logging.getLogger(__name__)

# How many skipped step numbers run_status.json lists (the count is always whole).
LISTED_STEPS = 100


def gradients_finite(optimizer: torch.optim.Optimizer) -> torch.Tensor:
    """One boolean tensor: every gradient the optimiser holds is finite (no host sync here)."""
    grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
    if not grads:
        return torch.tensor(True)
    # a NaN or inf in any gradient makes the total norm non-finite (so does a norm past float32's range, which
    # clipping could not have scaled back either)
    return torch.isfinite(torch.nn.utils.get_total_norm(grads))


def drop_gradients(optimizer: torch.optim.Optimizer) -> None:
    """The optimiser skips a parameter without a gradient: with none, its step moves nothing."""
    for group in optimizer.param_groups:
        for param in group["params"]:
            param.grad = None


def uses_gradient_scaler(trainer: Trainer) -> bool:
    """Whether Lightning's float16 gradient scaler (``16-mixed``) steps the optimiser, skipping overflows itself."""
    return getattr(trainer.precision_plugin, "scaler", None) is not None


class NonFiniteSteps(Callback):
    """Skip, count and log the optimiser steps whose loss or gradient is NaN or inf; stop after ``max_in_a_row``
    (``None``: never stop). ``max_share``: a run that skipped more than this share of its steps is not complete
    (``share_exceeded``; ``None``: any share)."""

    def __init__(self, max_in_a_row: int | None = 10, max_share: float | None = 0.1) -> None:
        if max_in_a_row is not None and max_in_a_row < 0:
            raise ValueError(f"callbacks.non_finite_steps.max_in_a_row={max_in_a_row}: use 0 or more, or null")
        if max_share is not None and not 0 <= max_share < 1:
            raise ValueError(f"callbacks.non_finite_steps.max_share={max_share}: a share from 0 to below 1, or null")
        self.max_in_a_row = max_in_a_row
        self.max_share = max_share
        self.skipped: list[int] = []  # the first LISTED_STEPS skipped steps
        self.skipped_total = 0
        self.in_a_row = 0
        self.scaler_skipped = 0
        self._loss_finite: torch.Tensor | None = None

    def on_before_backward(self, trainer: Trainer, pl_module: LightningModule, loss: torch.Tensor) -> None:
        # every micro-batch of a step counts (trainer.accumulate_grad_batches)
        finite = torch.isfinite(loss.detach()).all()
        self._loss_finite = finite if self._loss_finite is None else self._loss_finite & finite

    def on_before_optimizer_step(self, trainer: Trainer, pl_module: LightningModule,
                                 optimizer: torch.optim.Optimizer) -> None:
        loss_ok = self._loss_finite if self._loss_finite is not None else torch.tensor(True)
        self._loss_finite = None
        grads_ok = gradients_finite(optimizer)
        verdicts = torch.stack([loss_ok.to(grads_ok.device), grads_ok]).cpu().tolist()  # the step's one host sync
        loss_finite, grads_finite = bool(verdicts[0]), bool(verdicts[1])
        if trainer.world_size > 1:  # gradients are all-reduced already; the loss is each rank's own
            loss_finite = bool(trainer.strategy.reduce_boolean_decision(loss_finite, all=True))
        if loss_finite and grads_finite:
            self.in_a_row = 0
            return
        step = int(trainer.global_step)
        if loss_finite and uses_gradient_scaler(trainer):  # an overflow the scaler skips and learns from
            self.scaler_skipped += 1
            pl_module.log("train/scaler_skipped_steps", float(self.scaler_skipped), on_step=True, on_epoch=False)
            return
        drop_gradients(optimizer)
        self.skipped_total += 1
        self.in_a_row += 1
        if len(self.skipped) < LISTED_STEPS:
            self.skipped.append(step)
        cause = "gradient" if loss_finite else "loss"
        log.warning("step %d skipped: non-finite %s (%d skipped so far, %d in a row)", step, cause, self.skipped_total,
                    self.in_a_row)
        pl_module.log("train/skipped_steps", float(self.skipped_total), on_step=True, on_epoch=False)
        if self.max_in_a_row is not None and self.in_a_row > self.max_in_a_row:
            raise NonFiniteTraining(step, self.in_a_row, cause)

    def share_exceeded(self, steps_done: int) -> NonFiniteShare | None:
        """The error to end a run with when it skipped more than ``max_share`` of its ``steps_done`` steps."""
        if self.max_share is None or steps_done <= 0 or self.skipped_total / steps_done <= self.max_share:
            return None
        return NonFiniteShare(self.skipped_total, steps_done, self.max_share)

    def summary(self) -> dict[str, Any]:
        """What ``run_status.json`` records of the skipped steps."""
        return {"skipped_steps": self.skipped_total, "skipped_step_numbers": list(self.skipped),
                "scaler_skipped_steps": self.scaler_skipped}

    def state_dict(self) -> dict[str, Any]:
        return {"skipped": list(self.skipped), "skipped_total": self.skipped_total, "in_a_row": self.in_a_row,
                "scaler_skipped": self.scaler_skipped}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.skipped = list(state_dict.get("skipped", []))
        self.skipped_total = int(state_dict.get("skipped_total", 0))
        self.in_a_row = int(state_dict.get("in_a_row", 0))
        self.scaler_skipped = int(state_dict.get("scaler_skipped", 0))
